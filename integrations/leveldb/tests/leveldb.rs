//! The cuckoo filter policy (cksst_leveldb.c) inside LevelDB 1.23, through LevelDB's C API:
//! reads through flushes, compactions and a reopen; damaged filters; the Bloom clone against
//! LevelDB's own Bloom filter; the policy's callbacks on their own.

use std::fs;
use std::path::{Path, PathBuf};

use cuckoo_sst_leveldb::{
    self as ck, BLOOM_NAME, Db, FALLBACK_BYTE, Kind, Options, POLICY_NAME, Policy, WriteBatch,
    table,
};

/// Keys written by the main test (16 bytes each).
const KEYS: u64 = 200_000;
/// Value length.
const VALUE_LEN: usize = 32;

/// SplitMix64's finalizer: a bijection of u64.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The `i`-th 16-byte key of a domain: distinct for distinct (domain, i) (its first 8 bytes
/// are a bijection of them), spread over the key space.
fn key_in(domain: u64, i: u64) -> [u8; 16] {
    let a = mix((domain << 56) | i);
    let b = mix(a ^ 0x5851_f42d_4c95_7f2d);
    let mut k = [0; 16];
    k[..8].copy_from_slice(&a.to_be_bytes());
    k[8..].copy_from_slice(&b.to_le_bytes());
    k
}

fn present(i: u64) -> [u8; 16] {
    key_in(1, i)
}

fn absent(i: u64) -> [u8; 16] {
    key_in(2, i)
}

/// The value of key `i` at `version`: its number and version, then filler.
fn value(i: u64, version: u32, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len + 16);
    v.extend_from_slice(&i.to_le_bytes());
    v.extend_from_slice(&version.to_le_bytes());
    let mut x = mix(i ^ (u64::from(version) << 40));
    while v.len() < len {
        v.extend_from_slice(&x.to_le_bytes());
        x = mix(x);
    }
    v.truncate(len);
    v
}

/// What became of key `i`: written at version 0; every 7th overwritten (version 1); then
/// every 11th (from 3) deleted, overwritten ones included.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fate {
    Live(u32),
    Deleted,
}

fn fate(i: u64) -> Fate {
    if i % 11 == 3 {
        Fate::Deleted
    } else if i.is_multiple_of(7) {
        Fate::Live(1)
    } else {
        Fate::Live(0)
    }
}

/// Writes keys `0..n` as [`fate`] says (batches of 1000; the first hundred overwrites and
/// deletes one at a time), then compacts everything.
fn write_dataset(db: &Db, n: u64) {
    let mut batch = WriteBatch::new();
    let flush = |batch: &mut WriteBatch, db: &Db, at_least: usize| {
        if batch.len() >= at_least {
            db.write(batch).unwrap();
            batch.clear();
        }
    };
    for i in 0..n {
        batch.put(&present(i), &value(i, 0, VALUE_LEN));
        flush(&mut batch, db, 1000);
    }
    for (j, i) in (0..n).filter(|i| i.is_multiple_of(7)).enumerate() {
        if j < 100 {
            db.put(&present(i), &value(i, 1, VALUE_LEN)).unwrap();
        } else {
            batch.put(&present(i), &value(i, 1, VALUE_LEN));
            flush(&mut batch, db, 1000);
        }
    }
    for (j, i) in (0..n).filter(|i| i % 11 == 3).enumerate() {
        if j < 100 {
            db.delete(&present(i)).unwrap();
        } else {
            batch.delete(&present(i));
            flush(&mut batch, db, 1000);
        }
    }
    flush(&mut batch, db, 1);
    db.compact_all();
}

/// Every live key of `0..n` reads its latest value and every deleted one is not found;
/// returns how many live keys were not found (`strict`: none may be, asserted).
fn check_written(db: &Db, n: u64, strict: bool, what: &str) -> u64 {
    let mut lost = 0;
    for i in 0..n {
        let got = db.get(&present(i)).unwrap();
        match fate(i) {
            Fate::Live(v) => match got {
                Some(got) => assert_eq!(got, value(i, v, VALUE_LEN), "{what}: key {i}"),
                None if strict => panic!("{what}: live key {i} not found"),
                None => lost += 1,
            },
            Fate::Deleted => assert_eq!(got, None, "{what}: deleted key {i} found"),
        }
    }
    lost
}

/// `n` absent keys are not found, a filter was asked for about each, and it answered "maybe"
/// for fewer than `max_percent` % of them.
fn check_absent(db: &Db, policy: &Policy, n: u64, max_percent: u64, what: &str) -> ck::Stats {
    policy.reset_stats();
    for i in 0..n {
        assert_eq!(db.get(&absent(i)).unwrap(), None, "{what}: absent key {i}");
    }
    let s = policy.stats().unwrap();
    // One filter asked per table whose key range holds the key: about one per lookup once
    // everything is compacted into one level.
    assert!(s.lookups >= n * 9 / 10, "{what}: {s:?}");
    assert!(s.maybe * 100 < s.lookups * max_percent, "{what}: {s:?}");
    s
}

/// Compaction reads per level ≥ 1 from `leveldb.stats` (MB, rounded):
/// `Level Files Size(MB) Time(sec) Read(MB) Write(MB)` rows.
fn compaction_reads(stats: &str) -> f64 {
    stats
        .lines()
        .filter_map(|l| {
            let f: Vec<f64> = l
                .split_whitespace()
                .map(|x| x.parse().ok())
                .collect::<Option<_>>()?;
            (f.len() == 6 && f[0] >= 1.0).then(|| f[4])
        })
        .sum()
}

fn options(policy: Option<&Policy>) -> Options<'_> {
    Options {
        policy,
        // Small memtables and tables: many flushes and compactions.
        write_buffer_size: 256 << 10,
        max_file_size: 512 << 10,
        ..Options::default()
    }
}

fn copy_dir(from: &Path, to: &Path) -> PathBuf {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
    to.to_path_buf()
}

#[test]
fn cuckoo_policy_serves_every_read_through_compactions_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let policy = Policy::cuckoo();
    let opts = options(Some(&policy));
    let built;
    {
        let db = Db::open(&path, &opts).unwrap();
        write_dataset(&db, KEYS);
        built = policy.stats().unwrap();
        let stats = db.property("leveldb.stats").unwrap();
        assert!(
            compaction_reads(&stats) >= 1.0,
            "no compaction read anything:\n{stats}"
        );
        assert_eq!(built.build_errors, 0, "{built:?}");
        check_written(&db, KEYS, true, "written");
        // The target rate is 1 %; 3 % leaves room for LevelDB's short filters.
        let s = check_absent(&db, &policy, KEYS, 3, "written");
        assert_eq!(s.refused, 0, "{s:?}");
        eprintln!("written: {s:?}\n{stats}");
    }

    // Every table carries the policy's filter block; every filter is a sound compact block,
    // one per data block.
    let (mut tables, mut filters, mut keys) = (0, 0u64, 0u64);
    for file in table::table_files(&path).unwrap() {
        let bytes = fs::read(&file).unwrap();
        let t = table::read(&bytes).unwrap();
        assert_eq!(t.filters.len(), 1, "{}", file.display());
        let fb = &t.filters[0];
        assert_eq!(fb.policy, POLICY_NAME);
        assert_eq!(fb.base_lg, 11);
        assert!(table::crc_ok(&bytes, fb.handle));
        assert_eq!(fb.nonempty().count(), t.data_blocks.len());
        for r in fb.nonempty() {
            let block = &bytes[r.clone()];
            // Compact version 2 (FORMAT.md §11.5), the default layout's 2-byte header.
            assert_eq!((block[0], block[1] & 0x08), (0xC2, 0));
            let mut n = 0usize;
            // SAFETY: a live slice and a writable count.
            let rc =
                unsafe { cuckoo_sst_c::cksst_compact_check(block.as_ptr(), block.len(), &mut n) };
            assert_eq!(rc, 0, "{}", file.display());
            keys += n as u64;
        }
        tables += 1;
        filters += fb.nonempty().count() as u64;
    }
    let live = (0..KEYS).filter(|&i| fate(i) != Fate::Deleted).count() as u64;
    // Deleted keys may survive as tombstones; fingerprints of two keys of a block may collide.
    assert!(
        keys >= live * 99 / 100 && keys <= KEYS,
        "{keys} keys in filters"
    );
    assert!(tables > 1, "{tables} tables");
    // Flushes and compactions built each key's filter at least twice.
    assert!(
        built.filters >= filters * 3 / 2,
        "{built:?}, {filters} filters"
    );

    let opts = Options {
        create_if_missing: false,
        ..opts
    };
    let db = Db::open(&path, &opts).unwrap();
    policy.reset_stats();
    check_written(&db, KEYS, true, "reopened");
    let s = policy.stats().unwrap();
    assert!(s.lookups >= KEYS * 9 / 10, "{s:?}");
    let s = check_absent(&db, &policy, KEYS, 3, "reopened");
    assert_eq!(s.refused, 0, "{s:?}");
}

/// The check of a version-2 block of `len` bytes whose first bytes are `b0`, `b1` and whose
/// layout is the default (FORMAT.md §11.5).
fn v2_check(len: usize, b0: u8, b1: u8) -> u8 {
    let mut x = (len as u64).rotate_left(32) ^ (u64::from(b0) | u64::from(b1 & 0x0F) << 8);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    (x >> 60) as u8
}

/// Damages filters of the tables of `dir`: in every other table, zeroes the buckets of every
/// fourth filter (from the first) and sets the magic byte of every fourth (from the second)
/// to 0 (`buckets`), or flips the magic byte (0xC2 ^ 0xF0), a bit of the check (byte 1 ^ 0x10)
/// and the seed index (byte 1 ^ 0x01, where the check then disagrees: in 1 filter of 16 it
/// agrees by chance, and that filter is left alone) of every sixth filter in every table
/// (`!buckets`). Returns the number of filters damaged.
fn damage(dir: &Path, buckets: bool) -> usize {
    let mut damaged = 0;
    for (t, file) in table::table_files(dir).unwrap().into_iter().enumerate() {
        if buckets && t % 2 == 1 {
            continue;
        }
        let mut bytes = fs::read(&file).unwrap();
        let fb = table::read(&bytes).unwrap().filters.remove(0);
        assert!(table::crc_ok(&bytes, fb.handle));
        let filters: Vec<_> = fb.nonempty().cloned().collect();
        for (j, r) in filters.into_iter().enumerate() {
            assert_eq!((bytes[r.start], bytes[r.start + 1] & 0x08), (0xC2, 0));
            let (b0, b1, len) = (bytes[r.start], bytes[r.start + 1], r.len());
            match (buckets, j % 12) {
                (true, 0 | 4 | 8) => bytes[r.start + 2..r.end].fill(0),
                (true, 1 | 5 | 9) => bytes[r.start] = 0,
                (false, 0 | 6) => bytes[r.start] ^= 0xF0,
                (false, 3 | 9) => bytes[r.start + 1] ^= 0x10,
                (false, 1 | 7) if v2_check(len, b0, b1 ^ 0x01) != b1 >> 4 => {
                    bytes[r.start + 1] ^= 0x01
                }
                _ => continue,
            }
            damaged += 1;
        }
        // LevelDB's CRC-32C of the filter block no longer matches.
        assert!(!table::crc_ok(&bytes, fb.handle));
        fs::write(&file, &bytes).unwrap();
    }
    damaged
}

#[test]
fn damaged_filters_lose_no_key_with_paranoid_checks() {
    const N: u64 = 60_000;
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("db");
    let policy = Policy::cuckoo();
    let opts = options(Some(&policy));
    {
        let db = Db::open(&original, &opts).unwrap();
        write_dataset(&db, N);
    }
    let tables = table::table_files(&original).unwrap().len();
    assert!(tables >= 3, "{tables} tables");
    let reopen = |path: &Path, paranoid: bool| {
        let o = Options {
            create_if_missing: false,
            paranoid_checks: paranoid,
            ..opts
        };
        Db::open(path, &o).unwrap()
    };

    // (i) bucket bytes and (ii) magic bytes damaged. With paranoid_checks LevelDB verifies
    // each filter block's CRC-32C when it opens the table, and reads a table whose filter
    // block is damaged without a filter: every key is found, and no damaged filter is ever
    // asked (none refused), while the sound tables' filters still answer.
    let a = copy_dir(&original, &dir.path().join("a"));
    assert!(damage(&a, true) >= 6);
    let a2 = copy_dir(&a, &dir.path().join("a2"));
    {
        let db = reopen(&a, true);
        policy.reset_stats();
        check_written(&db, N, true, "paranoid, buckets and magic damaged");
        let s = policy.stats().unwrap();
        assert_eq!(s.refused, 0, "{s:?}");
        assert!(s.lookups > 0, "{s:?}");
    }
    // Without paranoid_checks LevelDB does not check the filter block (table.cc, ReadFilter:
    // `if (rep_->options.paranoid_checks) opt.verify_checksums = true;` — nothing else sets
    // it): the damaged magic bytes are refused ("maybe"), but the zeroed buckets are read as
    // they are and answer "absent" for keys that are there. Any filter policy loses keys to
    // damaged filter bytes this way, LevelDB's Bloom filter included (a zeroed bit answers
    // "absent" just the same); the cure is paranoid_checks, not the filter.
    {
        let db = reopen(&a2, false);
        policy.reset_stats();
        let lost = check_written(&db, N, false, "buckets and magic damaged");
        let s = policy.stats().unwrap();
        eprintln!("paranoid_checks off, zeroed buckets: {lost} live keys lost; {s:?}");
        assert!(lost > 0, "zeroed buckets lost no key");
        assert!(s.refused > 0, "{s:?}");
    }

    // (ii) only: magic, check and seed index bytes damaged. Without paranoid_checks the
    // damaged filters are used, and the reader refuses their headers: "maybe", every key found.
    // (Before issue 40 a seed index of 16 or more was read with the wrong seed, and lost keys.)
    let b = copy_dir(&original, &dir.path().join("b"));
    assert!(damage(&b, false) >= 6);
    let b2 = copy_dir(&b, &dir.path().join("b2"));
    {
        let db = reopen(&b, false);
        policy.reset_stats();
        check_written(&db, N, true, "magic and layout damaged");
        let s = policy.stats().unwrap();
        assert!(s.refused > 0, "{s:?}");
        // Half the filters answer "maybe" for every key; the others still filter.
        let s = check_absent(&db, &policy, N, 65, "magic and layout damaged");
        assert!(s.refused > 0, "{s:?}");
    }
    // And with paranoid_checks the damaged blocks are dropped: every key found, none refused.
    {
        let db = reopen(&b2, true);
        policy.reset_stats();
        check_written(&db, N, true, "paranoid, magic and layout damaged");
        let s = policy.stats().unwrap();
        assert_eq!(s.refused, 0, "{s:?}");
    }
}

/// Keys of 0 to 40 bytes, high bytes included, for the Bloom clone's hash tail.
fn odd_key(i: u64) -> Vec<u8> {
    let mut k = i.to_string().into_bytes();
    let tail = key_in(3, i);
    let extra = (mix(i) % 25) as usize;
    k.extend_from_slice(&tail[..extra.min(16)]);
    k.extend(std::iter::repeat_n(0xFF, extra.saturating_sub(16)));
    if i == 0 {
        k.clear(); // the empty key
    }
    k
}

#[test]
fn bloom_clone_writes_the_builtin_blooms_bytes() {
    const N: u64 = 40_000;
    let dir = tempfile::tempdir().unwrap();
    for bits in [10, 4] {
        let builtin = Policy::new(Kind::BuiltinBloom(bits));
        let clone = Policy::new(Kind::BloomClone(bits));
        let mut tables = Vec::new();
        for (name, policy) in [("builtin", &builtin), ("clone", &clone)] {
            let path = dir.path().join(format!("{name}-{bits}"));
            // One memtable for everything: one flush, the same tables whatever the timing of
            // LevelDB's background thread.
            let opts = Options {
                policy: Some(policy),
                write_buffer_size: 64 << 20,
                ..Options::default()
            };
            let db = Db::open(&path, &opts).unwrap();
            let mut batch = WriteBatch::new();
            for i in 0..N {
                batch.put(&odd_key(i), &value(i, 0, 24));
                if batch.len() == 1000 {
                    db.write(&mut batch).unwrap();
                    batch.clear();
                }
            }
            db.write(&mut batch).unwrap();
            db.compact_all();
            drop(db);
            let files: Vec<Vec<u8>> = table::table_files(&path)
                .unwrap()
                .iter()
                .map(|f| fs::read(f).unwrap())
                .collect();
            assert!(!files.is_empty());
            for f in &files {
                let t = table::read(f).unwrap();
                assert_eq!(t.filters.len(), 1);
                assert_eq!(t.filters[0].policy, BLOOM_NAME);
                assert_eq!(t.filters[0].nonempty().count(), t.data_blocks.len());
            }
            tables.push((path, files));
        }
        assert!(
            tables[0].1 == tables[1].1,
            "bits {bits}: the clone's tables differ from the built-in Bloom filter's"
        );
        let s = clone.stats().unwrap();
        assert_eq!(s.build_errors, 0);
        assert!(s.filters > 0);

        // Each reads the other's tables (the same name, the same bytes).
        for (path, policy) in [(&tables[0].0, &clone), (&tables[1].0, &builtin)] {
            let opts = Options {
                policy: Some(policy),
                create_if_missing: false,
                ..Options::default()
            };
            let db = Db::open(path, &opts).unwrap();
            for i in 0..N {
                assert!(db.get(&odd_key(i)).unwrap().is_some(), "key {i}");
            }
        }
        let db = Db::open(
            &tables[0].0,
            &Options {
                policy: Some(&clone),
                create_if_missing: false,
                ..Options::default()
            },
        )
        .unwrap();
        clone.reset_stats();
        for i in 0..N {
            // Absent keys inside the tables' key range (decimal prefixes too), so that each
            // lookup asks a filter.
            let mut k = odd_key(N + i);
            k.push(0xA5);
            assert_eq!(db.get(&k).unwrap(), None, "absent key {i}");
        }
        let s = clone.stats().unwrap();
        assert!(s.lookups >= N * 9 / 10, "{s:?}");
        // Bloom at 10 bits a key: about 1 %; at 4 bits (2 probes): about 15 %.
        let bound = if bits == 10 { 3 } else { 25 };
        assert!(s.maybe * 100 < s.lookups * bound, "bits {bits}: {s:?}");
    }
}

#[test]
fn compact_callbacks_build_blocks_and_refuse_what_is_not_one() {
    // No keys: the empty compact block, which answers "absent" for every key.
    let (empty, built) = ck::compact_build(&[]);
    assert!(built);
    assert_eq!(empty, [0xC2, 0x80]);
    assert_eq!(ck::compact_may_match(b"x", &empty), (false, false));

    // FORMAT.md §11.5's worked example (§11.4's buckets), byte for byte.
    let (fruit, built) = ck::compact_build(&[b"apple", b"banana", b"cherry"]);
    assert!(built);
    assert_eq!(
        fruit,
        [
            0xC2, 0x40, 0x1C, 0x07, 0x00, 0xC0, 0xE2, 0x07, 0x00, 0x00, 0x62
        ]
    );
    for k in [&b"apple"[..], b"banana", b"cherry"] {
        assert_eq!(ck::compact_may_match(k, &fruit), (true, false));
    }
    for k in [&b"date"[..], b"fig"] {
        assert_eq!(ck::compact_may_match(k, &fruit), (false, false));
    }

    // A data block's worth of keys, duplicates among them (LevelDB passes every version).
    let keys: Vec<[u8; 16]> = (0..40).map(|i| present(i % 35)).collect();
    let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    let (block, built) = ck::compact_build(&refs);
    assert!(built);
    let mut n = 0usize;
    // SAFETY: a live slice and a writable count.
    let rc = unsafe { cuckoo_sst_c::cksst_compact_check(block.as_ptr(), block.len(), &mut n) };
    assert_eq!((rc, n), (0, 35));
    for k in &keys {
        assert_eq!(ck::compact_may_match(k, &block), (true, false));
    }
    let maybe = (0..10_000)
        .filter(|&i| ck::compact_may_match(&absent(i), &block).0)
        .count();
    assert!(maybe < 300, "{maybe} of 10 000 absent keys maybe");

    // What is not a compact block answers "maybe", refused: the fallback byte, an empty
    // filter, a damaged magic byte, a damaged check (compact version 2, FORMAT.md §11.5), a
    // block cut short (to a length that holds no whole number of buckets, or shorter than a
    // header).
    assert_eq!((block[0], block[1] & 0x08), (0xC2, 0));
    let mut magic = block.clone();
    magic[0] ^= 0xF0;
    let mut check = block.clone();
    check[1] ^= 0x10;
    let cut = &block[..block.len() - 3];
    for bad in [
        &[FALLBACK_BYTE][..],
        &[][..],
        &magic[..],
        &check[..],
        cut,
        &block[..1],
    ] {
        for k in &keys[..5] {
            assert_eq!(ck::compact_may_match(k, bad), (true, true), "{bad:02x?}");
        }
        assert_eq!(ck::compact_may_match(&absent(0), bad), (true, true));
    }
    // What version 1 could not see and version 2's check refuses, unless the 4-bit check
    // agrees by chance (1 in 16): the header alone (version 1 read it as the empty filter) and
    // a seed index changed to another (read as that seed's block, losing keys).
    let header_alone = &block[..2];
    assert_ne!(v2_check(2, block[0], block[1]), block[1] >> 4);
    assert_eq!(ck::compact_may_match(&keys[0], header_alone), (true, true));
    let (mut refused, mut lost_somewhere) = (0, 0);
    for k in (0..8u8).filter(|&k| k != block[1] & 7) {
        let mut other = block.clone();
        other[1] = (other[1] & !7) | k;
        if v2_check(other.len(), other[0], other[1]) != other[1] >> 4 {
            assert!(
                keys.iter()
                    .all(|key| ck::compact_may_match(key, &other) == (true, true))
            );
            refused += 1;
        } else {
            let lost = keys
                .iter()
                .filter(|key| !ck::compact_may_match(&key[..], &other).0)
                .count();
            assert!(lost > 20, "{lost} of 40 keys lost to seed index {k}");
            lost_somewhere += 1;
        }
    }
    assert_eq!(refused + lost_somewhere, 7);
    assert!(refused >= 6, "{refused} of 7 other seed indices refused");
}

/// Issue 40, finding 9: the header's advice keeps the policy's name (LevelDB finds a table's
/// filter by it, so a new name would drop every existing table's filters) and says what a
/// comparator that equates different bytes needs.
#[test]
fn the_header_keeps_the_name_and_warns_about_comparators() {
    let header =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("cksst_leveldb.h")).unwrap();
    assert!(!header.contains("must take a new name"));
    assert!(header.contains("the name stays as it is for good"));
    assert!(header.contains(&format!("\"{POLICY_NAME}\"")));
    assert!(header.contains("comparator that treats\n * different bytes as the same key"));
}
