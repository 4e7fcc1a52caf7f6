//! The file format: round trips, every byte flipped, every truncation, crafted files whose
//! checksums are right but whose fields lie, misaligned slices, reproducibility, and a reader
//! written from FORMAT.md alone that must agree with the crate.

use cuckoo_sst::{Config, CuckooFilter, Encoding, Error, FilterRef, KeyHash, MappedFilter};
use std::path::PathBuf;

mod common;
use common::{put_u32, put_u64, resign};

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
    future[8] = 3;
    match FilterRef::from_bytes(&future) {
        Err(
            e @ Error::UnsupportedVersion {
                found: 3,
                supported: 2,
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

/// A reader written from FORMAT.md alone (it uses the crate for nothing but the bytes).
mod spec {
    pub struct Level<'a> {
        pub m: u64,
        pub b: u64,
        pub f: u64,
        pub encoding: u8,
        pub region: &'a [u8],
    }

    pub fn levels(file: &[u8]) -> (u64, Vec<Level<'_>>) {
        let u64_at = |o: usize| u64::from_le_bytes(file[o..o + 8].try_into().unwrap());
        let count = u32::from_le_bytes(file[24..28].try_into().unwrap()) as usize;
        let levels = (0..count)
            .map(|k| {
                let d = 128 + 64 * k;
                let (off, len) = (u64_at(d) as usize, u64_at(d + 8) as usize);
                Level {
                    m: u64_at(d + 16),
                    b: file[d + 48] as u64,
                    f: file[d + 49] as u64,
                    encoding: file[d + 50],
                    region: &file[off..off + len],
                }
            })
            .collect();
        (u64_at(40), levels)
    }

    /// Every checksum of §6, computed from the text alone: the header's, the level table's,
    /// the checksum table's, and each chunk's entry. The number of chunks checked.
    pub fn verify(file: &[u8]) -> Result<usize, String> {
        let u32_at = |o: usize| u32::from_le_bytes(file[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_le_bytes(file[o..o + 8].try_into().unwrap());
        let crc = crc32fast::hash;
        if crc(&file[..124]) != u32_at(124) {
            return Err("header".into());
        }
        let l = u32_at(24) as usize;
        let table = 128 + 64 * l;
        if crc(&file[128..table]) != u32_at(120) {
            return Err("level table".into());
        }
        let (c, count) = (1usize << file[98], u64_at(104) as usize);
        let table_len = (4 * count).div_ceil(64) * 64;
        if crc(&file[table..table + table_len]) != u32_at(100) {
            return Err("checksum table".into());
        }
        let mut entry = table;
        for k in 0..l {
            let d = 128 + 64 * k;
            let (r, n) = (u64_at(d) as usize, u64_at(d + 8) as usize);
            for j in 0..n.div_ceil(c) {
                let start = r + j * c;
                let mut covered = (start as u64).to_le_bytes().to_vec();
                covered.extend_from_slice(&file[start..(start + c).min(r + n)]);
                if crc(&covered) != u32_at(entry) {
                    return Err(format!("level {k} chunk {j}"));
                }
                entry += 4;
            }
        }
        assert_eq!(entry, table + 4 * count, "chunk_count");
        Ok(count)
    }

    fn fmix64(mut x: u64) -> u64 {
        x ^= x >> 33;
        x = x.wrapping_mul(0xFF51AFD7ED558CCD);
        x ^= x >> 33;
        x = x.wrapping_mul(0xC4CEB9FE1A85EC53);
        x ^ (x >> 33)
    }

    fn range(x: u64, n: u64) -> u64 {
        ((x & 0xFFFF_FFFF) * n) >> 32
    }

    /// The `w`-bit field at bit `p`, bit by bit (§3).
    fn field(region: &[u8], p: u64, w: u64) -> u64 {
        (0..w).fold(0, |acc, j| {
            let bit = (region[((p + j) / 8) as usize] >> ((p + j) % 8)) & 1;
            acc | (bit as u64) << j
        })
    }

    /// The nibbles whose rank (§3.3) is `index`, by search.
    fn unrank(index: u64) -> [u64; 4] {
        for a in 0..16u64 {
            for b in a..16 {
                for c in b..16 {
                    for d in c..16 {
                        let (c0, c1, c2, c3) = (a, b + 1, c + 2, d + 3);
                        let r = c0
                            + c1 * (c1 - 1) / 2
                            + c2 * (c2 - 1) * (c2 - 2) / 6
                            + c3 * (c3 - 1) * (c3 - 2) * (c3 - 3) / 24;
                        if r == index {
                            return [a, b, c, d];
                        }
                    }
                }
            }
        }
        panic!("index {index} is invalid")
    }

    /// The fingerprints of bucket `i`.
    fn bucket(l: &Level<'_>, i: u64) -> Vec<u64> {
        match l.encoding {
            0 => {
                let w = (l.f / 8) as usize;
                (0..l.b as usize)
                    .map(|s| {
                        let at = i as usize * l.b as usize * w + s * w;
                        let mut v = [0u8; 8];
                        v[..w].copy_from_slice(&l.region[at..at + w]);
                        u64::from_le_bytes(v)
                    })
                    .collect()
            }
            1 => (0..l.b)
                .map(|s| field(l.region, (i * l.b + s) * l.f, l.f))
                .collect(),
            2 => {
                let p = i * (4 * l.f - 4);
                let n = unrank(field(l.region, p, 12));
                (0..4)
                    .map(|k| {
                        let low = field(l.region, p + 12 + k * (l.f - 4), l.f - 4);
                        (n[k as usize] << (l.f - 4)) + low
                    })
                    .collect()
            }
            e => panic!("unknown encoding {e}"),
        }
    }

    pub fn contains(seed: u64, level: &Level<'_>, key: &[u8]) -> bool {
        let h = fmix64(xxhash_rust::xxh3::xxh3_64(key) ^ seed);
        let m = level.m;
        let i1 = range(h >> 32, m);
        let fp = range(h & 0xFFFF_FFFF, (1u64 << level.f) - 1) + 1;
        let o = 2 * range((fp.wrapping_mul(0x9E3779B97F4A7C15)) >> 32, m / 2) + 1;
        let i2 = (o + m - i1) % m;
        bucket(level, i1).contains(&fp) || bucket(level, i2).contains(&fp)
    }
}

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
        let (seed, levels) = spec::levels(&bytes);
        assert_eq!(seed, 77);
        assert_eq!(levels.len(), 1);
        let chunks = spec::verify(&bytes).unwrap();
        assert_eq!(chunks, levels[0].region.len().div_ceil(1 << 16));
        chunked |= chunks > 1;
        // A flipped bit in the last chunk: the spec's checks find it where the crate does.
        let mut damaged = bytes.clone();
        let last = damaged.len() - 1;
        damaged[last] ^= 1;
        let found = spec::verify(&damaged).unwrap_err();
        assert_eq!(found, format!("level 0 chunk {}", chunks - 1));
        match FilterRef::from_bytes(&damaged) {
            Err(Error::ChecksumMismatch { part, .. }) => assert!(part.starts_with(&found)),
            other => panic!("{other:?}"),
        }
        for i in 0..30_000 {
            let k = key(i);
            let want = f.contains(&k);
            assert_eq!(
                spec::contains(seed, &levels[0], &k),
                want,
                "{encoding:?} b={b} f={bits} {i}"
            );
        }
    }
    assert!(chunked, "some region spans several chunks");
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
