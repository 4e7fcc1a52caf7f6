//! The file format: round trips, every byte flipped, every truncation, crafted files whose
//! checksums are right but whose fields lie, misaligned slices, reproducibility, and a reader
//! written from FORMAT.md alone that must agree with the crate.

use cuckoo_sst::{
    Config, CuckooFilter, Encoding, Error, FilterRef, KeyHash, MappedFilter, ScalableCuckooFilter,
};
use std::path::PathBuf;

mod common;
use common::{describe, put_u32, put_u64, resign, spec};

const GOLDEN_V1: &[u8] = include_bytes!("data/golden-v1.cksst");
const GOLDEN_V2: &[u8] = include_bytes!("data/golden-v2.cksst");
const GOLDEN_V1_CHAIN: &[u8] = include_bytes!("data/golden-v1-chain.cksst");
const GOLDEN_V2_CHAIN: &[u8] = include_bytes!("data/golden-v2-chain.cksst");
const GOLDEN_V3_CHAIN: &[u8] = include_bytes!("data/golden-v3-chain.cksst");
const GOLDEN_V3_CHAIN_2: &[u8] = include_bytes!("data/golden-v3-chain-2.cksst");
const GOLDEN_V4_CHAIN: &[u8] = include_bytes!("data/golden-v4-chain.cksst");

fn key(i: u64) -> [u8; 8] {
    i.to_le_bytes()
}

fn filled(config: Config, n: u64) -> CuckooFilter {
    let mut f = CuckooFilter::new(config).unwrap();
    for i in 0..n {
        f.insert(&key(i)).unwrap();
    }
    f
}

fn tmp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("filter.cksst");
    (dir, path)
}

/// Every way of reading the bytes must reject them, without panicking.
fn assert_rejected(bytes: &[u8], what: &str) {
    assert!(
        FilterRef::from_bytes(bytes).is_err(),
        "FilterRef::from_bytes accepted {what}"
    );
    assert!(
        CuckooFilter::from_bytes(bytes).is_err(),
        "CuckooFilter::from_bytes accepted {what}"
    );
    let (_dir, path) = tmp();
    std::fs::write(&path, bytes).unwrap();
    assert!(
        MappedFilter::open(&path).is_err(),
        "MappedFilter::open accepted {what}"
    );
    if let Ok(m) = MappedFilter::open_unverified(&path) {
        assert!(m.verify().is_err(), "verify accepted {what}");
        assert!(!m.is_verified());
        // Damaged buckets are never used to say "absent".
        assert!(m.contains(b"anything at all") && m.count(b"x") == 1 && m.level(0).is_none());
    }
    if let Ok(m) = MappedFilter::from_shared(bytes.into()) {
        assert!(
            m.verify().is_err(),
            "verify of shared bytes accepted {what}"
        );
        assert!(m.contains(b"anything at all") && m.level(0).is_none());
    }
}

#[test]
fn round_trip_gives_the_same_answers_on_every_path() {
    let n = 100_000;
    for config in [
        Config::new(n as usize),
        Config::new(n as usize)
            .bucket_size(8)
            .fingerprint_bits(8)
            .seed(3),
        Config::new(n as usize)
            .bucket_size(2)
            .fingerprint_bits(32)
            .seed(4),
    ] {
        let mut f = filled(config, n);
        for i in (0..n).step_by(10) {
            assert!(f.remove(&key(i)));
        }
        let (_dir, path) = tmp();
        f.save(&path).unwrap();
        let bytes = f.to_bytes();
        let mut written = Vec::new();
        f.write_to(&mut written).unwrap();
        assert_eq!(bytes, written);
        assert_eq!(bytes, std::fs::read(&path).unwrap());
        assert_eq!(bytes.len(), f.size_in_bytes());

        let mapped = MappedFilter::open(&path).unwrap();
        let view = FilterRef::from_bytes(&bytes).unwrap();
        let owned = CuckooFilter::from_bytes(&bytes).unwrap();
        assert_eq!(owned, f);
        assert_eq!(mapped.len(), f.len());
        assert_eq!(view.len(), f.len());
        assert_eq!(mapped.expected_fpr(), f.expected_fpr());
        assert_eq!(mapped.seed(), f.seed());
        for i in 0..2 * n {
            let h = KeyHash::of(&key(i));
            let want = f.contains_hash(h);
            assert_eq!(mapped.contains_hash(h), want, "key {i}");
            assert_eq!(view.contains_hash(h), want, "key {i}");
            assert_eq!(owned.contains_hash(h), want, "key {i}");
            assert_eq!(mapped.count_hash(h), f.count_hash(h), "key {i}");
        }
    }
}

#[test]
fn a_reopened_filter_keeps_working() {
    let mut f = filled(Config::new(10_000).seed(8), 5_000);
    let mut g = CuckooFilter::from_bytes(&f.to_bytes()).unwrap();
    for i in 5_000..9_000 {
        f.insert(&key(i)).unwrap();
        g.insert(&key(i)).unwrap();
    }
    for i in 0..3_000 {
        assert_eq!(f.remove(&key(i)), g.remove(&key(i)));
    }
    assert_eq!(f, g);
    assert_eq!(f.to_bytes(), g.to_bytes());
}

#[test]
fn same_seed_same_inserts_same_bytes() {
    let a = filled(Config::new(50_000).seed(9), 49_000).to_bytes();
    let b = filled(Config::new(50_000).seed(9), 49_000).to_bytes();
    assert_eq!(a, b);
    let c = filled(Config::new(50_000).seed(10), 49_000).to_bytes();
    assert_ne!(a, c);
}

#[test]
fn every_flipped_byte_is_rejected() {
    for config in [
        Config::new(40).fingerprint_bits(16),
        Config::new(40).fingerprint_bits(11).bucket_size(2),
        Config::new(40)
            .fingerprint_bits(9)
            .encoding(Encoding::SemiSorted),
    ] {
        let good = filled(config.seed(1), 30).to_bytes();
        assert!(good.len() > 250, "{}", good.len());
        for i in 0..good.len() {
            for mask in [0x01u8, 0x80, 0xFF] {
                let mut bad = good.clone();
                bad[i] ^= mask;
                assert_rejected(&bad, &format!("byte {i} ^ {mask:#04x}"));
            }
        }
    }
}

#[test]
fn every_truncation_and_any_appended_byte_is_rejected() {
    let good = filled(Config::new(40).seed(1), 30).to_bytes();
    for len in 0..good.len() {
        assert_rejected(&good[..len], &format!("the first {len} bytes"));
        // Shorter than a header: a header is expected; else the whole file.
        let want = if len < 128 { 128 } else { good.len() as u64 };
        match FilterRef::from_bytes(&good[..len]) {
            Err(Error::Truncated { expected, found }) => {
                assert_eq!((expected, found), (want, len as u64), "truncated to {len}")
            }
            other => panic!("truncated to {len}: {other:?}"),
        }
    }
    for extra in [1usize, 7, 64, 4096] {
        let mut long = good.clone();
        long.resize(good.len() + extra, 0);
        assert_rejected(&long, &format!("{extra} appended bytes"));
        match FilterRef::from_bytes(&long) {
            Err(Error::TrailingBytes { expected, found }) => {
                assert_eq!((expected, found), (good.len() as u64, long.len() as u64))
            }
            other => panic!("{extra} appended bytes: {other:?}"),
        }
    }
}

#[test]
fn specific_errors_for_specific_damage() {
    let good = filled(Config::new(40).seed(1), 30).to_bytes();
    assert!(matches!(
        FilterRef::from_bytes(&[]),
        Err(Error::Truncated {
            expected: 128,
            found: 0
        })
    ));
    assert!(matches!(
        FilterRef::from_bytes(b"hello"),
        Err(Error::BadMagic { .. })
    ));
    assert!(matches!(
        FilterRef::from_bytes(b"CUCKO"),
        Err(Error::Truncated { .. })
    ));
    let mut bad = good.clone();
    bad[0] = b'X';
    assert!(matches!(
        FilterRef::from_bytes(&bad),
        Err(Error::BadMagic { .. })
    ));
    let mut future = good.clone();
    future[8] = 5;
    match FilterRef::from_bytes(&future) {
        Err(
            e @ Error::UnsupportedVersion {
                found: 5,
                supported: 4,
            },
        ) => {
            assert!(e.to_string().contains("newer"))
        }
        other => panic!("{other:?}"),
    }
    let mut region = good.clone();
    let last = region.len() - 1;
    region[last - 70] ^= 4;
    assert!(matches!(
        FilterRef::from_bytes(&region),
        Err(Error::ChecksumMismatch { .. })
    ));

    let (_dir, path) = tmp();
    std::fs::write(&path, b"").unwrap();
    assert!(matches!(
        MappedFilter::open(&path),
        Err(Error::Truncated { .. })
    ));
    match MappedFilter::open(_dir.path().join("missing")) {
        Err(e @ Error::Io(_)) => assert!(std::error::Error::source(&e).is_some()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn slices_at_any_alignment_work() {
    let f = filled(Config::new(1000).seed(5), 900);
    let bytes = f.to_bytes();
    let mut buf = vec![0u8; bytes.len() + 64];
    for shift in 0..64 {
        buf[shift..shift + bytes.len()].copy_from_slice(&bytes);
        let view = FilterRef::from_bytes(&buf[shift..shift + bytes.len()]).unwrap();
        for i in 0..1000 {
            assert_eq!(
                view.contains(&key(i)),
                f.contains(&key(i)),
                "shift {shift} key {i}"
            );
        }
        assert_eq!(
            CuckooFilter::from_bytes(&buf[shift..shift + bytes.len()]).unwrap(),
            f
        );
    }
}

#[test]
fn unverified_open_defers_the_region_checks() {
    let f = filled(Config::new(1000).seed(5), 900);
    let (_dir, path) = tmp();
    f.save(&path).unwrap();
    let m = MappedFilter::open_unverified(&path).unwrap();
    assert!(!m.is_verified());
    assert_eq!(m.len(), 900);
    assert_eq!((m.health().chunks, m.health().verified), (1, 0));
    // The first lookup checks the chunk it reads (the file's only one); verify() the rest.
    assert!(m.contains(&key(3)));
    assert_eq!(m.health().verified, 1);
    assert!(!m.is_verified());
    m.verify().unwrap();
    assert!(m.is_verified());

    // Damage the buckets: the header still opens, verify fails, lookups say "maybe".
    let mut bytes = f.to_bytes();
    let at = bytes.len() - 100;
    bytes[at] ^= 0x10;
    std::fs::write(&path, &bytes).unwrap();
    let m = MappedFilter::open_unverified(&path).unwrap();
    assert!(matches!(m.verify(), Err(Error::ChecksumMismatch { .. })));
    assert!((0..1000).all(|i| m.contains(&key(1_000_000 + i))));
    assert!(matches!(
        MappedFilter::open(&path),
        Err(Error::ChecksumMismatch { .. })
    ));
}

#[test]
fn multi_level_bytes_are_refused_by_single_filter_readers() {
    // A chain file is built by hand from a single filter's levels (FORMAT.md §1): header, two
    // descriptors, a checksum table of two entries (one cache line), two regions.
    let f = filled(Config::new(40).seed(1), 30);
    let one = f.to_bytes();
    let region = &one[common::first_region(&one)..];
    let mut b = Vec::new();
    b.extend_from_slice(&one[..128]);
    for k in 0..2u64 {
        let mut d = one[128..192].to_vec();
        put_u64(&mut d, 0, 128 + 128 + 64 + k * region.len() as u64);
        b.extend_from_slice(&d);
    }
    b.extend_from_slice(&[0; 64]);
    b.extend_from_slice(region);
    b.extend_from_slice(region);
    put_u32(&mut b, 24, 2);
    put_u64(&mut b, 104, 2); // chunk_count
    put_u32(&mut b, 28, 1); // chain flag
    let n = b.len() as u64;
    put_u64(&mut b, 16, n);
    put_u64(&mut b, 56, 2f64.to_bits());
    put_u64(&mut b, 64, 0.5f64.to_bits());
    put_u64(&mut b, 88, 60);
    resign(&mut b);
    let (_dir, path) = tmp();
    assert!(matches!(
        FilterRef::from_bytes(&b),
        Err(Error::Growable { levels: 2 })
    ));

    assert!(matches!(
        CuckooFilter::from_bytes(&b),
        Err(Error::Growable { levels: 2 })
    ));
    // One level, but with the chain flag: still not a single filter.
    let mut one_level_chain = one.clone();
    put_u32(&mut one_level_chain, 28, 1);
    put_u64(&mut one_level_chain, 56, 2f64.to_bits());
    put_u64(&mut one_level_chain, 64, 0.5f64.to_bits());
    resign(&mut one_level_chain);
    std::fs::write(&path, &one_level_chain).unwrap();
    assert_eq!(MappedFilter::open(&path).unwrap().levels(), 1);
    assert!(matches!(
        FilterRef::from_bytes(&one_level_chain),
        Err(Error::Growable { levels: 1 })
    ));
    assert!(matches!(
        CuckooFilter::from_bytes(&one_level_chain),
        Err(Error::Growable { levels: 1 })
    ));
    std::fs::write(&path, &b).unwrap();
    let m = MappedFilter::open(&path).unwrap();
    assert_eq!(m.levels(), 2);
    assert_eq!(m.len(), 60);
    assert!((0..30).all(|i| m.contains(&key(i))));
    assert_eq!(m.count(&key(0)), 2);
}

/// What the crate says of `bytes`, checked as FORMAT.md §7 splits the work: after steps 1–7
/// (`MappedFilter::from_shared`) and after step 8 (`verify`), each `Ok` or the error named as
/// `common::spec` names it.
fn crate_steps(bytes: &[u8]) -> (String, String) {
    match MappedFilter::from_shared(bytes.into()) {
        Err(e) => (describe(&e), describe(&e)),
        Ok(m) => (
            "Ok".into(),
            m.verify().map_or_else(|e| describe(&e), |()| "Ok".into()),
        ),
    }
}

/// What the reader written from FORMAT.md says of `bytes`, in the same two steps.
fn spec_steps(bytes: &[u8]) -> (String, String) {
    let ok = |r: Result<spec::File<'_>, String>| r.map_or_else(|e| e, |_| "Ok".into());
    (ok(spec::read_unverified(bytes)), ok(spec::read(bytes)))
}

/// The chain of `config`: `n` keys, then distinct keys that the newest level cannot tell
/// apart until a new level starts (`common::crafted::start_new_level`: copies of one key no
/// longer start one), then `n / 4` more keys — so that every level holds ordinary keys, and the
/// first has grown from two buckets. Also the hashes of the crafted keys.
fn stretch_chain(config: Config, n: u64) -> (ScalableCuckooFilter, Vec<KeyHash>) {
    let mut f = ScalableCuckooFilter::new(config).unwrap();
    for i in 0..n {
        f.insert(&key(i)).unwrap();
    }
    let crafted = common::crafted::start_new_level(&mut f);
    for i in n..n + n / 4 {
        f.insert(&key(i)).unwrap();
    }
    (f, crafted)
}

/// Every (bucket size, encoding) a chain can be fixed to.
fn chain_layouts() -> Vec<(usize, Encoding)> {
    let mut v = vec![(4, Encoding::SemiSorted)];
    for e in [Encoding::Plain, Encoding::Packed] {
        v.extend([(2, e), (4, e), (8, e)]);
    }
    v
}

/// The reader written from FORMAT.md alone (`tests/common/spec.rs`) reads what the crate
/// writes and answers as the crate does, key by key: single filters in every layout (with a
/// damaged last chunk named alike), and version-3 chains of stretch levels in every layout,
/// grown from two buckets far enough that entries have spent continuation bits and splits
/// have copied bare entries (§3.4), at targets that give slots from 12 bits (the fewest the crate makes: six continuation bits) to over 20. For each
/// stretch level, the crate's view reports what the descriptor and §5.1 give: the slot width,
/// the key count, and the bound `2^(1−c)·P·2^−60` from the precisions of the entries.
#[test]
fn a_reader_written_from_format_md_agrees() {
    let layouts = [
        (2, 8, Encoding::Plain),
        (4, 16, Encoding::Plain),
        (8, 32, Encoding::Plain),
        (2, 7, Encoding::Packed),
        (4, 11, Encoding::Packed),
        (8, 27, Encoding::Packed),
        (4, 7, Encoding::SemiSorted),
        (4, 10, Encoding::SemiSorted),
        (4, 32, Encoding::SemiSorted),
    ];
    let mut chunked = false;
    for (b, bits, encoding) in layouts {
        let config = Config::new(20_000).bucket_size(b).fingerprint_bits(bits);
        let f = filled(config.encoding(encoding).seed(77), 19_000);
        let bytes = f.to_bytes();
        let file = spec::read(&bytes).unwrap();
        assert_eq!((file.version, file.chain, file.seed), (2, false, 77));
        assert_eq!(file.levels.len(), 1);
        let chunks = file.levels[0].region.len().div_ceil(1 << 16);
        chunked |= chunks > 1;
        // A flipped bit in the last chunk: the spec's checks find it where the crate does.
        let mut damaged = bytes.clone();
        let last = damaged.len() - 1;
        damaged[last] ^= 1;
        let start = common::first_region(&bytes) + (chunks - 1) * (1 << 16);
        let want = format!(
            "Checksum(level 0 chunk {} (bytes {start}..{}))",
            chunks - 1,
            bytes.len()
        );
        assert_eq!(spec_steps(&damaged), ("Ok".into(), want.clone()));
        assert_eq!(crate_steps(&damaged), ("Ok".into(), want));
        for i in 0..30_000 {
            let k = key(i);
            assert_eq!(
                file.contains(&k),
                f.contains(&k),
                "{encoding:?} b={b} f={bits} {i}"
            );
        }
    }
    assert!(chunked, "some region spans several chunks");

    let (mut spent, mut copied, mut widths) = (false, false, Vec::new());
    for (b, encoding) in chain_layouts() {
        for target in [0.7, 0.01, 0.00001] {
            let config = Config::new(1)
                .false_positive_rate(target)
                .bucket_size(b)
                .encoding(encoding)
                .seed(5);
            let (f, crafted) = stretch_chain(config, 3000);
            let what = format!("{encoding:?} b={b} ε={target}");
            let bytes = f.to_bytes();
            let file = spec::read(&bytes).unwrap();
            assert_eq!((file.chain, file.seed), (true, 5), "{what}");
            // Version 4 exactly when a level counts copies (§9): here false positives equal to
            // an entry, at the 70 % target.
            let counts = file.levels.iter().any(|l| l.copies_encoding != 0);
            assert_eq!(file.version, if counts { 4 } else { 3 }, "{what}");
            assert_eq!(file.levels.len(), f.levels(), "{what}");
            assert!(f.levels() >= 2, "{what}");
            assert_eq!(file.item_count, f.len() as u64, "{what}");
            for (k, l) in file.levels.iter().enumerate() {
                let view = f.level(k).unwrap();
                assert_eq!(l.core_bits, 5, "{what} level {k}");
                assert_eq!(l.f, view.fingerprint_bits() as u64, "{what} level {k}");
                assert_eq!(l.capacity, view.len() as u64, "{what} level {k}");
                assert_eq!((l.m, l.b), (view.num_buckets() as u64, b as u64));
                let entries = l.entries().unwrap();
                let p: u64 = entries.iter().map(|e| 1 << (60 - e.precision)).sum();
                assert_eq!(p, l.precision, "{what} level {k}");
                let bound = l.precision as f64 * 2f64.powi(1 - 5 - 60);
                assert_eq!(view.expected_fpr(), bound, "{what} level {k}");
                let l0 = l.f - 1 - l.core_bits;
                spent |= entries.iter().any(|e| e.cont < l0);
                copied |= l.item_count > l.capacity && entries.iter().any(|e| e.cont == 0);
                widths.push(l.f);
            }
            for i in (0..6000).chain([u64::MAX]) {
                let k = key(i);
                assert_eq!(file.contains(&k), f.contains(&k), "{what} key {i}");
            }
            for h in &crafted {
                assert!(f.contains_hash(*h), "{what}: the crate lost a crafted key");
                assert!(file.contains_hash(h.to_u64()), "{what}");
            }
        }
    }
    assert!(spent && copied, "entries of every kind");
    assert!(
        widths.contains(&12) && widths.iter().any(|&w| w >= 20),
        "{widths:?}"
    );
}

/// The files the reader written from FORMAT.md is held to on damage: every golden file, a
/// version-2 chain grown by this build (classic levels, then stretch levels: version 3), and
/// small stretch chains in plain and packed buckets of 2 and 8.
fn files_for_damage() -> Vec<(&'static str, Vec<u8>)> {
    let mut grown = ScalableCuckooFilter::from_bytes(GOLDEN_V2_CHAIN).unwrap();
    for i in 200..400 {
        grown.insert(format!("key-{i}").as_bytes()).unwrap();
    }
    let small = |b: usize, e: Encoding| {
        let config = Config::new(1).bucket_size(b).encoding(e).seed(2);
        stretch_chain(config.false_positive_rate(0.2), 150)
            .0
            .to_bytes()
    };
    vec![
        ("golden-v1", GOLDEN_V1.to_vec()),
        ("golden-v2", GOLDEN_V2.to_vec()),
        ("golden-v1-chain", GOLDEN_V1_CHAIN.to_vec()),
        ("golden-v2-chain", GOLDEN_V2_CHAIN.to_vec()),
        ("golden-v3-chain", GOLDEN_V3_CHAIN.to_vec()),
        ("grown v2 chain", grown.to_bytes()),
        ("plain b=8 chain", small(8, Encoding::Plain)),
        ("packed b=2 chain", small(2, Encoding::Packed)),
    ]
}

/// The reader written from FORMAT.md alone agrees with the crate on every damaged variant of
/// files of every version: each byte flipped by three masks, with the checksums left as they
/// are (a checksum names the damage) and rewritten (`common::resign`: a field check behind the
/// checksums names it, or the file is still valid). Both say the same after §7's steps 1–7
/// (`from_shared` / `read_unverified`) and after step 8 (`verify` / `read`); where both
/// accept, they answer alike for keys present and absent. Every truncation, and appended
/// bytes, are named alike too.
#[test]
fn a_reader_written_from_format_md_agrees_on_every_damaged_byte() {
    let probes: Vec<Vec<u8>> = (0..40)
        .map(|i| format!("key-{i}").into_bytes())
        .chain((0..40).map(|i| format!("other-{i}").into_bytes()))
        .collect();
    for (name, good) in files_for_damage() {
        assert_eq!(spec_steps(&good), ("Ok".into(), "Ok".into()), "{name}");
        let (mut accepted, mut errors) = (0, std::collections::BTreeSet::new());
        for i in 0..good.len() {
            for mask in [0x01u8, 0x80, 0xFF] {
                for resigned in [false, true] {
                    let mut bad = good.clone();
                    bad[i] ^= mask;
                    if resigned {
                        resign(&mut bad);
                    }
                    let what = format!("{name}: byte {i} ^ {mask:#04x}, resigned {resigned}");
                    let want = crate_steps(&bad);
                    assert_eq!(spec_steps(&bad), want, "{what}");
                    if want.1 != "Ok" {
                        errors.insert(want.1);
                        continue;
                    }
                    accepted += 1;
                    let (file, m) = (
                        spec::read(&bad).unwrap(),
                        MappedFilter::from_shared(bad.clone().into()).unwrap(),
                    );
                    for k in &probes {
                        assert_eq!(file.contains(k), m.contains(k), "{what}");
                    }
                }
            }
        }
        for len in (0..good.len()).chain([good.len() + 1, good.len() + 64]) {
            let mut cut = good.clone();
            cut.resize(len, 0);
            assert_eq!(spec_steps(&cut), crate_steps(&cut), "{name}: {len} bytes");
        }
        // Damage of every kind was met, and bytes that mean nothing to a lookup were changed.
        assert!(accepted > 0, "{name}");
        assert!(errors.len() > 20, "{name}: {errors:?}");
    }
}

/// `tests/data/golden-v2.cksst` pins the bytes the crate writes (version 2), and
/// `tests/data/golden-v1.cksst` the version-1 bytes of the same filter, which the crate still
/// reads: a filter of capacity 64, buckets of 4, 8-bit fingerprints, seed 42, holding the keys
/// `key-0` … `key-49`. Any change to the hash, the layout or the header fails here; such a
/// change needs a new version (FORMAT.md §9). Both files give the same answers through every
/// reader.
#[test]
fn golden_file_pins_the_bytes_and_answers() {
    let golden_v1: &[u8] = include_bytes!("data/golden-v1.cksst");
    let golden_v2: &[u8] = include_bytes!("data/golden-v2.cksst");
    let mut f =
        CuckooFilter::new(Config::new(64).fingerprint_bits(8).bucket_size(4).seed(42)).unwrap();
    for i in 0..50 {
        f.insert(format!("key-{i}").as_bytes()).unwrap();
    }
    assert_eq!(f.to_bytes(), golden_v2, "the writer's bytes changed");
    assert_eq!(
        common::to_v1(golden_v2),
        golden_v1,
        "version 1 holds the same header fields and regions"
    );
    let (_dir, path) = tmp();
    for golden in [golden_v1, golden_v2] {
        let view = FilterRef::from_bytes(golden).unwrap();
        assert_eq!(view.len(), 50);
        assert_eq!(view.num_buckets(), 24);
        assert!((0..50).all(|i| view.contains(format!("key-{i}").as_bytes())));
        // The absent keys among `other-0` … `other-999` that the golden filter reports present.
        let false_positives: Vec<u32> = (0..1000)
            .filter(|i| view.contains(format!("other-{i}").as_bytes()))
            .collect();
        assert_eq!(
            false_positives, GOLDEN_FALSE_POSITIVES,
            "the reader's answers changed"
        );
        assert_eq!(CuckooFilter::from_bytes(golden).unwrap(), f);
        std::fs::write(&path, golden).unwrap();
        let lazy = MappedFilter::open_unverified(&path).unwrap();
        let answers: Vec<bool> = (0..1000)
            .map(|i| lazy.contains(format!("other-{i}").as_bytes()))
            .collect();
        assert_eq!(
            answers,
            (0..1000)
                .map(|i| view.contains(format!("other-{i}").as_bytes()))
                .collect::<Vec<_>>()
        );
        assert!(lazy.health().is_whole());
        lazy.verify().unwrap();
    }
}

const GOLDEN_FALSE_POSITIVES: &[u32] = &[
    53, 101, 102, 109, 115, 135, 162, 208, 288, 298, 319, 581, 601, 636, 734, 807, 874, 882, 966,
    968,
];

/// `tests/data/golden-v3-chain.cksst` pins the bytes of a version-3 file written by an earlier
/// version-3 writer, and its answers: every key, the copies of `hot`, and the false positives
/// among `other-0` … `other-1999`, from the crate (`MappedFilter`, and
/// `ScalableCuckooFilter::from_bytes`, which writes the same bytes back) and from the reader
/// written from FORMAT.md. What the golden file holds is checked from its bytes by that
/// reader: two stretch levels of core 5, entries that have spent continuation bits, bare
/// entries that a split copied into a bucket and its image (so the level holds more entries
/// than keys), and precision sums that bound the levels' rates as §5.1 says.
///
/// It was written by this program, with the writer of that time (split load 0.9 for buckets of
/// 4; eight copies of one key could start a level): a chain at a 10 % target, seed 42;
/// `key-0` … `key-499` grew the first level from 2 buckets to 142 (509 entries / (4 · 0.9) =
/// 141.4), far enough that its oldest entries had spent all their continuation bits and splits
/// had copied some of them into two buckets (§3.4, §8); then eight copies of `hot` (the eighth
/// found its two buckets full and started the second level); then `key-500` … `key-699`.
///
/// ```text
/// let mut f = ScalableCuckooFilter::new(Config::new(1).false_positive_rate(0.1).seed(42))?;
/// for i in 0..500 { f.insert(format!("key-{i}").as_bytes())?; }
/// for _ in 0..8 { f.insert(b"hot")?; }
/// for i in 500..700 { f.insert(format!("key-{i}").as_bytes())?; }
/// ```
///
/// The current writer no longer makes this file (its split load for buckets of 4 is 0.8, and
/// copies of one key are refused with `TooManyCopies` rather than given a level), so the
/// program is not run; [`golden_v3_chain_2_pins_the_bytes_and_answers`] pins the current
/// writer's bytes. This file stays byte for byte as it is: a reader must read it forever
/// (FORMAT.md §10).
#[test]
fn golden_v3_chain_pins_the_bytes_and_answers() {
    let back = ScalableCuckooFilter::from_bytes(GOLDEN_V3_CHAIN).unwrap();
    assert_eq!(back.to_bytes(), GOLDEN_V3_CHAIN, "read and written back");
    let file = spec::read(GOLDEN_V3_CHAIN).unwrap();
    assert_eq!((file.version, file.chain, file.seed), (3, true, 42));
    assert_eq!(file.item_count, 708);
    let shape: Vec<_> = file
        .levels
        .iter()
        .map(|l| {
            (
                l.core_bits,
                l.m,
                l.b,
                l.f,
                l.encoding,
                l.capacity,
                l.item_count,
            )
        })
        .collect();
    assert_eq!(
        shape,
        [(5, 142, 4, 12, 2, 507, 509), (5, 56, 4, 12, 2, 201, 201)]
    );
    let first = &file.levels[0];
    let (split, l0) = (spec::Split::new(first.m), first.f - 1 - first.core_bits);
    assert_eq!((split.k, split.s), (7, 14));
    let entries = first.entries().unwrap();
    assert!(entries.iter().any(|e| 0 < e.cont && e.cont < l0));
    // A bare entry of split bucket j < s, and the same value in its image j + 2^K.
    let copied = entries.iter().filter(|e| {
        e.cont == 0
            && e.bucket < split.s
            && first.bucket(e.bucket + (1 << split.k)).contains(&e.value)
    });
    assert!(copied.count() > 0);
    for (k, l) in file.levels.iter().enumerate() {
        let bound = l.precision as f64 * 2f64.powi(1 - 5 - 60);
        assert_eq!(back.level(k).unwrap().expected_fpr(), bound, "level {k}");
    }

    let m = MappedFilter::from_shared(GOLDEN_V3_CHAIN.into()).unwrap();
    m.verify().unwrap();
    golden_chain_answers(&m, &file, &back, 700, 708, GOLDEN_V3_FALSE_POSITIVES);
}

/// What both version-3 golden chains answer, alike from the mapped file, the reader written
/// from FORMAT.md and the filter read back: `key-0` … `key-{keys - 1}` and `hot` present, `hot`
/// counted 8 times among `len` keys, and exactly `false_positives` among `other-0` …
/// `other-1999`.
fn golden_chain_answers(
    m: &MappedFilter,
    file: &spec::File<'_>,
    back: &ScalableCuckooFilter,
    keys: u32,
    len: usize,
    false_positives: &[u32],
) {
    for i in 0..keys {
        let k = format!("key-{i}");
        assert!(
            m.contains(k.as_bytes()) && file.contains(k.as_bytes()) && back.contains(k.as_bytes()),
            "{k}"
        );
    }
    assert!(m.contains(b"hot") && file.contains(b"hot") && back.contains(b"hot"));
    assert_eq!((m.count(b"hot"), m.len()), (8, len));
    assert_eq!((back.count(b"hot"), back.len()), (8, len));
    for contains in [
        &(|k: &[u8]| m.contains(k)) as &dyn Fn(&[u8]) -> bool,
        &|k: &[u8]| file.contains(k),
        &|k: &[u8]| back.contains(k),
    ] {
        let found: Vec<u32> = (0..2000)
            .filter(|i| contains(format!("other-{i}").as_bytes()))
            .collect();
        assert_eq!(found, false_positives);
    }
}

/// The false positives of `golden-v3-chain.cksst` among `other-0` … `other-1999` (a 10 %
/// target: the levels' bounds add up to 4.3 %).
const GOLDEN_V3_FALSE_POSITIVES: &[u32] = &[
    38, 49, 109, 216, 221, 330, 677, 709, 752, 989, 1063, 1082, 1108, 1191, 1233, 1239, 1270, 1410,
    1419, 1549, 1588, 1610, 1706, 1758, 1797, 1805, 1830, 1849, 1877, 1999,
];

/// The program that wrote `tests/data/golden-v3-chain-2.cksst` under the version-3 writer and
/// writes `tests/data/golden-v4-chain.cksst` under this build's (version 4: the copies of
/// `hot` are counted, FORMAT.md §3.5), and the hashes of the distinct keys it inserts: a chain
/// of two stretch levels at a 10 % target, seed 40. `key-0` … `key-599` grow the first level
/// from 2 buckets to 191, far enough that some of its oldest entries have spent their six
/// continuation bits and splits have copied them into a bucket and its image (§3.4, §8); then
/// eight copies of `hot` — one slot, seven copies counted on it — and a ninth, refused with
/// `TooManyCopies` with nothing changed; then distinct keys of one pair and core of the first
/// level that answer for none of each other (`common::crafted::start_new_level`), eight of
/// which fill their two buckets and the ninth of which starts the second level; then
/// `key-600` … `key-799`.
fn golden_v4_chain() -> (ScalableCuckooFilter, Vec<KeyHash>) {
    let config = Config::new(1).false_positive_rate(0.1).seed(40);
    let mut f = ScalableCuckooFilter::new(config).unwrap();
    for i in 0..600 {
        f.insert(format!("key-{i}").as_bytes()).unwrap();
    }
    for copy in 1..=8 {
        f.insert(b"hot").unwrap();
        assert_eq!(f.levels(), 1, "copy {copy}");
    }
    let before = f.clone();
    assert!(matches!(f.insert(b"hot"), Err(Error::TooManyCopies)));
    assert_eq!(f, before, "a refused copy changed the chain");
    assert_eq!(f.to_bytes(), before.to_bytes());
    let distinct = common::crafted::start_new_level(&mut f);
    assert_eq!(distinct.len(), 9, "2b + 1 distinct keys");
    for i in 600..800 {
        f.insert(format!("key-{i}").as_bytes()).unwrap();
    }
    (f, distinct)
}

/// Writes `tests/data/golden-v4-chain.cksst` from [`golden_v4_chain`] (run by hand, once per
/// deliberate change of the version-4 writer before version 4 is released:
/// `cargo test --release --test format write_golden_v4_chain -- --ignored`).
#[test]
#[ignore]
fn write_golden_v4_chain() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/golden-v4-chain.cksst"
    );
    std::fs::write(path, golden_v4_chain().0.to_bytes()).unwrap();
}

/// `⌈n / (b · λ)⌉` for buckets of 4 and the split load λ = 0.8 (FORMAT.md §8 gives the rule;
/// the crate keeps buckets of 4 at 0.8): `⌈10·n / 32⌉`, in integers.
fn buckets_at_split_load(n: u64) -> u64 {
    (10 * n).div_ceil(32)
}

/// FORMAT.md §8: the slot width of a new level with semi-sorted buckets of 4 and the share
/// `share`.
fn width_for_share(share: f64) -> u64 {
    spec::growth_width(4, 2, share).unwrap()
}

/// The shape §8 gives both files of [`golden_v4_chain`]'s program, checked from their bytes
/// by the reader written from FORMAT.md: each level has `⌈entries / (4 · 0.8)⌉` buckets (it
/// split whenever one more entry would have passed 80 % of its slots), the second level at
/// least the `⌈154 / 3.2⌉ = 49` it started with (a quarter of the 616 keys before it); widths
/// from the levels' shares; entries whose continuation splits have spent, copied into a bucket
/// and its image. `keys` are the levels' key counts. Returns the levels' bounds.
fn golden_chain_shape(file: &spec::File<'_>, keys: (u64, u64)) -> Vec<f64> {
    assert_eq!((file.chain, file.seed), (true, 40));
    // 600 keys, 8 copies of hot, 9 distinct keys, 200 keys.
    assert_eq!(file.item_count, 817);
    assert_eq!(file.levels.len(), 2);
    let (first, second) = (&file.levels[0], &file.levels[1]);
    for l in [first, second] {
        assert_eq!((l.core_bits, l.b, l.encoding), (5, 4, 2));
    }
    assert_eq!((first.capacity, second.capacity), keys);
    assert_eq!(first.m, buckets_at_split_load(first.item_count));
    assert_eq!(second.m, buckets_at_split_load(second.item_count).max(49));
    // Widths: the first level's share is 10 % · (1 − 0.2); the second's is what the first
    // left, (10 % − its bound) · (1 − 0.2) (FORMAT.md §8).
    let bound = |l: &spec::Level<'_>| l.precision as f64 * 2f64.powi(1 - 5 - 60);
    assert_eq!(first.f, width_for_share(0.1 * 0.8));
    assert_eq!(second.f, width_for_share((0.1 - bound(first)) * 0.8));
    assert!(bound(first) <= 0.1 * 0.8 && bound(second) <= (0.1 - bound(first)) * 0.8);
    let (split, l0) = (spec::Split::new(first.m), first.f - 1 - first.core_bits);
    let entries = first.entries().unwrap();
    assert!(entries.iter().any(|e| 0 < e.cont && e.cont < l0));
    // A bare entry of split bucket j < s, and the same value in its image j + 2^K.
    let copied = entries.iter().filter(|e| {
        e.cont == 0
            && e.bucket < split.s
            && first.bucket(e.bucket + (1 << split.k)).contains(&e.value)
    });
    assert!(copied.count() > 0);
    file.levels.iter().map(bound).collect()
}

/// `tests/data/golden-v4-chain.cksst` pins the bytes the current writer makes (see
/// [`golden_v4_chain`]), and the file's answers: every key, the eight copies of `hot`, the
/// distinct keys, and the false positives among `other-0` … `other-1999`, from the crate
/// (`MappedFilter`, `from_bytes`) and from the reader written from FORMAT.md; its shape by
/// [`golden_chain_shape`]. `hot` holds one slot of its pair in the first level, which counts
/// its seven other copies (§3.5); the distinct keys' pair in the first level is full of entries
/// of their core, none answering for the ninth: why it went on to the second level.
#[test]
fn golden_v4_chain_pins_the_bytes_and_answers() {
    let (f, distinct) = golden_v4_chain();
    assert_eq!(f.to_bytes(), GOLDEN_V4_CHAIN, "the writer's bytes changed");
    assert!(
        GOLDEN_V4_CHAIN.len() < 4096,
        "{} bytes",
        GOLDEN_V4_CHAIN.len()
    );
    let file = spec::read(GOLDEN_V4_CHAIN).unwrap();
    assert_eq!(file.version, 4);
    // Key counts: the first level took 600 keys, 8 copies and 8 distinct keys, and two of the
    // last 200, counted as copies on entries of its that answer for them (false positives:
    // §8, "Copies"); the second the ninth distinct key and the other 198 keys.
    let bounds = golden_chain_shape(&file, (619, 198));
    assert_eq!(file.levels[1].item_count, 198);
    let first = &file.levels[0];
    let hot = spec::seeded(KeyHash::of(b"hot").to_u64(), 40);
    let answering: Vec<(u64, u64)> = first
        .probes(hot)
        .into_iter()
        .flat_map(|(i, q)| {
            first
                .bucket(i)
                .into_iter()
                .filter(move |&v| spec::answers(v, q, first.f))
                .map(move |v| (i, v))
        })
        .collect();
    assert_eq!(answering.len(), 1, "one slot for hot");
    let copies = first.read_copies().unwrap();
    assert_eq!(copies.get(&answering[0]), Some(&7));
    assert_eq!(first.counted_copies(hot), 7);
    let last = spec::seeded(distinct[8].to_u64(), 40);
    for (i, q) in first.probes(last) {
        let bucket = first.bucket(i);
        assert!(
            bucket
                .iter()
                .all(|&v| v != 0 && !spec::answers(v, q, first.f)),
            "{bucket:x?}"
        );
    }

    let m = MappedFilter::from_shared(GOLDEN_V4_CHAIN.into()).unwrap();
    m.verify().unwrap();
    let back = ScalableCuckooFilter::from_bytes(GOLDEN_V4_CHAIN).unwrap();
    assert_eq!(back, f);
    assert_eq!(back.to_bytes(), GOLDEN_V4_CHAIN);
    for (k, &b) in bounds.iter().enumerate() {
        assert_eq!(back.level(k).unwrap().expected_fpr(), b, "level {k}");
    }
    golden_chain_answers(&m, &file, &back, 800, 817, GOLDEN_V4_FALSE_POSITIVES);
    for &h in &distinct {
        assert!(file.contains_hash(h.to_u64()));
        assert!(m.count_hash(h) >= 1 && back.count_hash(h) == m.count_hash(h));
    }
}

/// The false positives of `golden-v4-chain.cksst` among `other-0` … `other-1999` (a 10 %
/// target; the same from the crate and from the reader written from FORMAT.md, and the same
/// as the version-3 file's: the keys that differ between the two answer for none of these).
const GOLDEN_V4_FALSE_POSITIVES: &[u32] = GOLDEN_V3_2_FALSE_POSITIVES;

/// `tests/data/golden-v3-chain-2.cksst`, written by the version-3 writer from the program of
/// [`golden_v4_chain`] as it was then — its crafted keys shared everything the first level
/// stores of them (`common::crafted::Stretch::crafted`), and each copy of `hot` took a slot —
/// is read by every later reader with its answers: every key, the eight copies of `hot`, the
/// crafted keys, the false positives among `other-0` … `other-1999`, from the crate and from
/// the reader written from FORMAT.md; read back and written again, it is the same bytes (a
/// chain without counted copies is written as version 3). Its shape by [`golden_chain_shape`];
/// `hot`'s two buckets and the crafted keys' in the first level are full of entries that
/// answer for them.
#[test]
fn golden_v3_chain_2_reads_with_its_answers() {
    let file = spec::read(GOLDEN_V3_CHAIN_2).unwrap();
    assert_eq!(file.version, 3);
    // Key counts: the first level took 600 keys, 8 copies and 8 crafted keys; the second the
    // ninth crafted key and 200 keys.
    let bounds = golden_chain_shape(&file, (616, 201));
    assert_eq!(file.levels[1].item_count, 201);
    let first = &file.levels[0];
    assert!(
        first.item_count > first.capacity,
        "bare entries copied by splits"
    );
    // The crafted keys of the version-3 program: 608 keys when the level was started, and
    // the first level's shape, which it kept from then on.
    let base = KeyHash::of(b"start_new_level: 1 levels, 608 keys");
    let stretch = common::crafted::Stretch {
        seed: 40,
        m: first.m,
        w: first.f as u32,
        c: 5,
    };
    let crafted = stretch.crafted(base.to_u64(), 9);
    for h in [KeyHash::of(b"hot"), crafted[0]] {
        let probes = first.probes(spec::seeded(h.to_u64(), 40));
        for (i, q) in probes {
            let bucket = first.bucket(i);
            assert!(
                bucket.iter().all(|&v| spec::answers(v, q, first.f)),
                "{h:?}"
            );
        }
    }
    let m = MappedFilter::from_shared(GOLDEN_V3_CHAIN_2.into()).unwrap();
    m.verify().unwrap();
    let back = ScalableCuckooFilter::from_bytes(GOLDEN_V3_CHAIN_2).unwrap();
    assert_eq!(back.to_bytes(), GOLDEN_V3_CHAIN_2);
    for (k, &b) in bounds.iter().enumerate() {
        assert_eq!(back.level(k).unwrap().expected_fpr(), b, "level {k}");
    }
    golden_chain_answers(&m, &file, &back, 800, 817, GOLDEN_V3_2_FALSE_POSITIVES);
    // The crafted keys are one place in both levels (they differ only in hash bits no level
    // under 2^24 buckets reads): each is answered by the first level's 8 and the second's 1.
    for &h in &crafted {
        assert!(file.contains_hash(h.to_u64()));
        assert_eq!(m.count_hash(h), 9);
        assert_eq!(back.level(0).unwrap().count_hash(h), 8);
        assert_eq!(back.level(1).unwrap().count_hash(h), 1);
    }
}

/// The false positives of `golden-v3-chain-2.cksst` among `other-0` … `other-1999` (a 10 %
/// target; the same from the crate and from the reader written from FORMAT.md).
const GOLDEN_V3_2_FALSE_POSITIVES: &[u32] = &[
    10, 113, 195, 196, 209, 226, 267, 299, 346, 372, 379, 400, 574, 591, 625, 649, 651, 668, 679,
    706, 793, 829, 832, 855, 860, 944, 950, 1212, 1310, 1370, 1373, 1422, 1467, 1468, 1526, 1628,
    1737, 1761, 1804, 1808, 1902,
];

/// FORMAT.md §2.2's worked example, number by number, by the reader written from FORMAT.md;
/// then through the crate, on files crafted from a stretch level of 1000 packed buckets of
/// four 14-bit slots, core 5, seed 0 (as the example's), emptied and given one entry: the
/// empty key is present exactly when the entry answers the example's `q1` in bucket 6 or its
/// `q2` in bucket 465. Each file's `precision` is the entry's `2^(60 − T)` with `T` from
/// §3.4, which `verify` checks.
#[test]
fn the_stretch_worked_example_of_format_md_holds() {
    let h = spec::seeded(xxhash_rust::xxh3::xxh3_64(b""), 0);
    assert_eq!(h, 0x0E9EBEFF1EBD5806);
    let split = spec::Split::new(1000);
    assert_eq!((split.k, split.s), (9, 488));
    assert_eq!(h >> 59, 1, "core");
    assert_eq!(spec::partner(1), 0xD30B054265133DD7);
    assert_eq!(h ^ spec::partner(1), 0xDD95BBBD7BAE65D1);
    assert_eq!(split.bucket(h), (6, 10));
    assert_eq!(split.bucket(h ^ spec::partner(1)), (465, 10));
    assert_eq!(
        spec::stretch_probes(h, 1000, 5, 14),
        [(6, 10, 0x2D5), (465, 10, 0x333)]
    );
    assert_eq!((0x2D5 >> 1) & 0xFF, 0b01101010);
    assert_eq!((0x333 >> 1) & 0xFF, 0b10011001);
    assert!(spec::answers(0x2D5, 0x2D5, 14));
    assert!(spec::answers(0x2E0, 0x2D5, 14));
    assert!(!spec::answers(0x240, 0x2D5, 14));

    // A first level of 1000 buckets: ⌈capacity / (b · λ)⌉ buckets (FORMAT.md §8) with buckets
    // of 4 and the split load λ = 0.8 the crate keeps buckets of 4 at (it was 0.9, and this
    // capacity 3600): 3200 / (4 · 0.8) = 1000. Slots of 14 bits: the 1 % default target and
    // tightening 0.2 give the share 0.008, and 1 + ⌈log2(2 · 4 · 0.8 · 8.5 / 0.008)⌉ =
    // 1 + ⌈12.73⌉ = 14.
    let config = Config::new(3200).encoding(Encoding::Packed).seed(0);
    let template = ScalableCuckooFilter::new(config).unwrap().to_bytes();
    let d = 128; // the level's descriptor
    assert_eq!(template[d + 16..d + 24], 1000u64.to_le_bytes());
    assert_eq!(
        (template[d + 48], template[d + 49], template[d + 51]),
        (4, 14, 5)
    );
    // (bucket, slot, value, continuation bits L, whether the empty key is present)
    let cases = [
        (6, 0, 0x2D5, 8, true),
        (6, 3, 0x2D5, 8, true),
        (6, 1, 0x2E0, 3, true),
        (6, 2, 0x240, 2, false),
        (465, 0, 0x333, 8, true),
        (465, 1, 0x330, 4, true),
        (465, 2, 0x2D5, 8, false),
        (7, 0, 0x2D5, 8, false),
        (464, 3, 0x333, 8, false),
        (6, 0, 0x4D5, 8, false), // q1's continuation and marker with core 2
    ];
    for (bucket, slot, value, cont, present) in cases {
        let mut b = template.clone();
        let region = common::first_region(&b);
        let bit = region * 8 + (bucket * 4 + slot) * 14;
        for j in 0..14 {
            b[(bit + j) / 8] |= (((value >> j) & 1) << ((bit + j) % 8)) as u8;
        }
        put_u64(&mut b, d + 24, 1); // item_count
        put_u64(&mut b, d + 32, 1); // key_count
        put_u64(&mut b, d + 56, 1 << (60 - 10 - cont)); // 2^(60 − T), ℓ = 10
        put_u64(&mut b, 88, 1);
        resign(&mut b);
        let what = format!("{value:#x} in bucket {bucket} slot {slot}");
        let file = spec::read(&b).unwrap();
        assert_eq!(file.levels[0].entries().unwrap()[0].cont, cont, "{what}");
        assert_eq!(file.contains(b""), present, "{what}");
        let f = ScalableCuckooFilter::from_bytes(&b).unwrap();
        assert_eq!(f.contains(b""), present, "{what}");
        assert_eq!(f.count(b""), present as usize, "{what}");
        let m = MappedFilter::from_shared(b.into()).unwrap();
        m.verify().unwrap();
        assert_eq!(m.contains(b""), present, "{what}");
    }
}
