//! Each validation check of FORMAT.md §7 has a case here that only it rejects: a file whose
//! checksums are right (rewritten after the patch, see `common::resign`) but whose one field
//! lies. Every case asserts the exact error — variant and field — on every reader, so deleting
//! or weakening any one check fails a case. Values just inside each limit are accepted. The
//! cases run on files of both versions the crate reads (`common::to_v1` writes version 1),
//! except those of fields only one version has.

mod common;

use common::{first_region, put_u32, put_u64, resign, to_v1};
use cuckoo_sst::{
    Config, CuckooFilter, Encoding, Error, FilterRef, MAX_KICKS_LIMIT, MappedFilter,
    ScalableCuckooFilter,
};

fn key(i: u64) -> [u8; 8] {
    i.to_le_bytes()
}

/// The error as `Variant(field)`, with the values that locate it.
fn describe(e: &Error) -> String {
    match e {
        Error::Corrupt { field, .. } => format!("Corrupt({field})"),
        Error::ChecksumMismatch { part, .. } => format!("Checksum({part})"),
        Error::Truncated { expected, found } => format!("Truncated({expected}, {found})"),
        Error::TrailingBytes { expected, found } => format!("TrailingBytes({expected}, {found})"),
        Error::UnsupportedVersion { found, supported } => {
            format!("UnsupportedVersion({found}, {supported})")
        }
        Error::BadMagic { .. } => "BadMagic".into(),
        other => format!("{other:?}"),
    }
}

/// How one reader answers the bytes: `Ok` or the described error.
fn answer<T>(r: cuckoo_sst::Result<T>) -> String {
    match r {
        Ok(_) => "Ok".into(),
        Err(e) => describe(&e),
    }
}

/// Every reader of single filters gives the same answer; it is returned.
fn single_answer(bytes: &[u8]) -> String {
    let view = answer(FilterRef::from_bytes(bytes));
    assert_eq!(answer(CuckooFilter::from_bytes(bytes)), view);
    assert_eq!(mapped_answer(bytes), view);
    view
}

/// `MappedFilter::open`, and `open_unverified` + `verify` agree.
fn mapped_answer(bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.cksst");
    std::fs::write(&path, bytes).unwrap();
    let open = answer(MappedFilter::open(&path));
    let lazy = match MappedFilter::open_unverified(&path) {
        Ok(m) => {
            let v = answer(m.verify());
            if v != "Ok" {
                // Bytes that fail verification never say "absent" (these small files are one
                // chunk per level, so every lookup reads the damage) and hand out no level.
                assert!(m.contains(b"any key") && m.level(0).is_none());
                assert!(m.damage().is_some());
            }
            v
        }
        Err(e) => describe(&e),
    };
    assert_eq!(lazy, open, "open and open_unverified + verify disagree");
    open
}

/// Chain readers agree; their answer is returned.
fn chain_answer(bytes: &[u8]) -> String {
    let chain = answer(ScalableCuckooFilter::from_bytes(bytes));
    assert_eq!(mapped_answer(bytes), chain);
    chain
}

type Patch = fn(&mut Vec<u8>);

/// Applies each patch to `good`, re-signs, and checks the answer of `read`.
fn check_cases(good: &[u8], read: fn(&[u8]) -> String, cases: &[(&str, Patch, &str)]) {
    assert_eq!(read(good), "Ok");
    let mut resigned = good.to_vec();
    resign(&mut resigned);
    assert_eq!(resigned, good, "resign() reproduces the writer's checksums");
    for (what, patch, want) in cases {
        let mut bad = good.to_vec();
        patch(&mut bad);
        resign(&mut bad);
        assert_ne!(bad, good, "{what}: the patch changed nothing");
        assert_eq!(&read(&bad), want, "{what}");
    }
}

/// Plain 16-bit buckets of 4: 128 bytes of header, one 64-byte descriptor at 128, a checksum
/// table of one entry at 192, the region from 256 (192 in version 1).
fn plain_file() -> Vec<u8> {
    let mut f = CuckooFilter::new(Config::new(40).fingerprint_bits(16).seed(1)).unwrap();
    for i in 0..30 {
        f.insert(&key(i)).unwrap();
    }
    f.to_bytes()
}

#[test]
fn every_header_and_level_check_of_a_single_filter() {
    let good = plain_file();
    let cases: Vec<(&str, Patch, &str)> = vec![
        ("version 0", |b| put_u32(b, 8, 0), "Corrupt(version)"),
        (
            "version 3",
            |b| put_u32(b, 8, 3),
            "UnsupportedVersion(3, 2)",
        ),
        ("header_len", |b| put_u32(b, 12, 64), "Corrupt(header_len)"),
        ("hash scheme 0", |b| put_u32(b, 32, 0), "Corrupt(hash)"),
        ("hash scheme 2", |b| put_u32(b, 32, 2), "Corrupt(hash)"),
        ("reserved0", |b| b[79] = 1, "Corrupt(reserved)"),
        ("last reserved byte", |b| b[119] = 0x80, "Corrupt(reserved)"),
        ("unknown flag", |b| put_u32(b, 28, 2), "Corrupt(flags)"),
        ("top flag", |b| put_u32(b, 28, 1 << 31), "Corrupt(flags)"),
        (
            "level_count 0",
            |b| put_u32(b, 24, 0),
            "Corrupt(level_count)",
        ),
        (
            "level_count huge",
            |b| put_u32(b, 24, u32::MAX),
            "Corrupt(level_count)",
        ),
        (
            "level_count 2 without the chain flag",
            |b| put_u32(b, 24, 2),
            "Corrupt(level_count)",
        ),
        (
            "max_kicks above the limit",
            |b| put_u32(b, 36, MAX_KICKS_LIMIT + 1),
            "Corrupt(max_kicks)",
        ),
        (
            "max_kicks huge",
            |b| put_u32(b, 36, u32::MAX),
            "Corrupt(max_kicks)",
        ),
        (
            "target_fpr NaN",
            |b| put_u64(b, 48, f64::NAN.to_bits()),
            "Corrupt(target_fpr)",
        ),
        ("target_fpr 0", |b| put_u64(b, 48, 0), "Corrupt(target_fpr)"),
        (
            "target_fpr 1",
            |b| put_u64(b, 48, 1f64.to_bits()),
            "Corrupt(target_fpr)",
        ),
        (
            "target_fpr -0.5",
            |b| put_u64(b, 48, (-0.5f64).to_bits()),
            "Corrupt(target_fpr)",
        ),
        (
            "growth_factor without the chain flag",
            |b| put_u64(b, 56, 2f64.to_bits()),
            "Corrupt(chain fields)",
        ),
        (
            "growth_factor -0.0 without the chain flag",
            |b| put_u64(b, 56, (-0.0f64).to_bits()),
            "Corrupt(chain fields)",
        ),
        (
            "tightening without the chain flag",
            |b| put_u64(b, 64, 0.5f64.to_bits()),
            "Corrupt(chain fields)",
        ),
        (
            "max_levels without the chain flag",
            |b| put_u32(b, 72, 3),
            "Corrupt(chain fields)",
        ),
        (
            "max_bytes without the chain flag",
            |b| put_u64(b, 80, 1),
            "Corrupt(chain fields)",
        ),
        (
            "chain_bucket_size without the chain flag",
            |b| b[96] = 4,
            "Corrupt(chain fields)",
        ),
        (
            "chain_encoding without the chain flag",
            |b| b[97] = 1,
            "Corrupt(chain fields)",
        ),
        (
            "item_count one too few",
            |b| put_u64(b, 88, 29),
            "Corrupt(item_count)",
        ),
        (
            "item_count one too many",
            |b| put_u64(b, 88, 31),
            "Corrupt(item_count)",
        ),
        (
            "region_offset",
            |b| put_u64(b, 128, 320),
            "Corrupt(level 0 region_offset)",
        ),
        (
            "region_len shorter",
            |b| put_u64(b, 136, 128),
            "Corrupt(level 0 region_len)",
        ),
        (
            "region_len longer",
            |b| put_u64(b, 136, 256),
            "Corrupt(level 0 region_len)",
        ),
        (
            "num_buckets odd",
            |b| put_u64(b, 144, 13),
            "Corrupt(level 0 num_buckets)",
        ),
        (
            "num_buckets 0",
            |b| put_u64(b, 144, 0),
            "Corrupt(level 0 num_buckets)",
        ),
        (
            "num_buckets 2^32 + 2",
            |b| put_u64(b, 144, (1 << 32) + 2),
            "Corrupt(level 0 num_buckets)",
        ),
        (
            "num_buckets 2^32",
            |b| put_u64(b, 144, 1 << 32),
            "Corrupt(level 0 region_len)",
        ),
        (
            "num_buckets u64::MAX − 1",
            |b| put_u64(b, 144, u64::MAX - 1),
            "Corrupt(level 0 num_buckets)",
        ),
        (
            "item_count above slots",
            |b| put_u64(b, 152, 1 << 20),
            "Corrupt(level 0 item_count)",
        ),
        (
            "capacity above slots",
            |b| put_u64(b, 160, 1 << 40),
            "Corrupt(level 0 capacity)",
        ),
        (
            "level target_fpr 2",
            |b| put_u64(b, 168, 2f64.to_bits()),
            "Corrupt(level 0 target_fpr)",
        ),
        (
            "level target_fpr 0",
            |b| put_u64(b, 168, 0),
            "Corrupt(level 0 target_fpr)",
        ),
        (
            "level target_fpr differs from the header's",
            |b| put_u64(b, 168, 0.5f64.to_bits()),
            "Corrupt(target_fpr)",
        ),
        (
            "bucket_size 3",
            |b| b[176] = 3,
            "Corrupt(level 0 bucket_size)",
        ),
        (
            "bucket_size 0",
            |b| b[176] = 0,
            "Corrupt(level 0 bucket_size)",
        ),
        (
            "bucket_size 16",
            |b| b[176] = 16,
            "Corrupt(level 0 bucket_size)",
        ),
        (
            "fingerprint_bits 12 in plain slots",
            |b| b[177] = 12,
            "Corrupt(level 0 fingerprint_bits)",
        ),
        (
            "fingerprint_bits 0",
            |b| b[177] = 0,
            "Corrupt(level 0 fingerprint_bits)",
        ),
        ("encoding 3", |b| b[178] = 3, "Corrupt(level 0 encoding)"),
        (
            // Semi-sorted 16-bit buckets take 60 bits, so 18 of them fit the same 192 bytes
            // as plain ones: the region length agrees, the plain bytes are no semi-sorted code.
            "semi-sorted buckets of 4 × 16 bits",
            |b| b[178] = 2,
            "Corrupt(level 0 buckets)",
        ),
        (
            "reserved level byte",
            |b| b[179] = 1,
            "Corrupt(level 0 reserved)",
        ),
        (
            "last reserved level byte",
            |b| b[191] = 1,
            "Corrupt(level 0 reserved)",
        ),
        (
            "level item_count vs occupied slots",
            |b| {
                put_u64(b, 152, 29);
                put_u64(b, 88, 29);
            },
            "Corrupt(level 0 item_count)",
        ),
        (
            "nonzero padding",
            |b| {
                let last = b.len() - 1;
                b[last] = 1;
                put_u64(b, 152, 31);
                put_u64(b, 88, 31);
            },
            "Corrupt(level 0 buckets)",
        ),
        (
            "file_len too large",
            |b| {
                let n = b.len() as u64;
                put_u64(b, 16, n + 64)
            },
            "Truncated",
        ),
        (
            "file_len too small",
            |b| {
                let n = b.len() as u64;
                put_u64(b, 16, n - 64)
            },
            "TrailingBytes",
        ),
        ("file_len huge", |b| put_u64(b, 16, u64::MAX), "Truncated"),
        (
            // The level table (two descriptors, to byte 256) does not fit in file_len (200),
            // though the bytes are longer still.
            "level table past file_len",
            |b| {
                put_u32(b, 24, 2);
                put_u64(b, 16, 200);
            },
            "Corrupt(level_count)",
        ),
        (
            // Room for one cache line of buckets, where the level needs more.
            "no room for the region",
            |b| {
                let end = first_region(b) + 64;
                b.truncate(end);
                put_u64(b, 16, end as u64);
            },
            "Corrupt(level 0 region_len)",
        ),
    ];
    // The length errors carry the lengths: fill them in, for each version's length.
    for good in [good.clone(), to_v1(&good)] {
        let n = good.len() as u64;
        let cases: Vec<(&str, Patch, String)> = cases
            .iter()
            .map(|&(what, p, want)| {
                let want = match (what, want) {
                    ("file_len too large", _) => format!("Truncated({}, {n})", n + 64),
                    ("file_len too small", _) => format!("TrailingBytes({}, {n})", n - 64),
                    ("file_len huge", _) => format!("Truncated({}, {n})", u64::MAX),
                    (_, w) => w.to_string(),
                };
                (what, p, want)
            })
            .collect();
        let cases: Vec<(&str, Patch, &str)> =
            cases.iter().map(|(w, p, s)| (*w, *p, s.as_str())).collect();
        check_cases(&good, single_answer, &cases);
    }

    // Where the versions differ.
    let v1: Vec<(&str, Patch, &str)> = vec![
        ("first reserved byte", |b| b[98] = 1, "Corrupt(reserved)"),
        (
            "a chunk_count in version 1",
            |b| put_u64(b, 104, 1),
            "Corrupt(reserved)",
        ),
        (
            // A file that ends with its level table: no level has room for even one cache
            // line of buckets, so the level count is refused before any level is read.
            "no room for any region",
            |b| {
                b.truncate(192);
                put_u64(b, 16, 192);
            },
            "Corrupt(level_count)",
        ),
    ];
    check_cases(&to_v1(&good), single_answer, &v1);
    let v2: Vec<(&str, Patch, &str)> = vec![
        ("chunk_shift 0", |b| b[98] = 0, "Corrupt(chunk_shift)"),
        ("chunk_shift 11", |b| b[98] = 11, "Corrupt(chunk_shift)"),
        ("chunk_shift 25", |b| b[98] = 25, "Corrupt(chunk_shift)"),
        ("reserved1", |b| b[99] = 1, "Corrupt(reserved)"),
        ("first reserved byte", |b| b[112] = 1, "Corrupt(reserved)"),
        (
            "chunk_count 0",
            |b| put_u64(b, 104, 0),
            "Corrupt(chunk_count)",
        ),
        (
            // Room in the file for a second chunk, but the region has one.
            "chunk_count 2",
            |b| put_u64(b, 104, 2),
            "Corrupt(chunk_count)",
        ),
        (
            // The checksum table (four bytes, padded to 64) and a cache line of buckets per
            // chunk do not fit in the file.
            "chunk_count too many for the file",
            |b| put_u64(b, 104, 64),
            "Corrupt(chunk_count)",
        ),
        (
            "chunk_count huge",
            |b| put_u64(b, 104, u64::MAX),
            "Corrupt(chunk_count)",
        ),
        (
            "checksum table padding",
            |b| b[255] = 1,
            "Corrupt(checksum table)",
        ),
        (
            "region_crc set in version 2",
            |b| b[180] = 1,
            "Corrupt(level 0 reserved)",
        ),
        (
            // A file that ends with its checksum table: its one chunk has no room.
            "no room for any region",
            |b| {
                b.truncate(256);
                put_u64(b, 16, 256);
            },
            "Corrupt(chunk_count)",
        ),
    ];
    check_cases(&good, single_answer, &v2);
}

#[test]
fn limits_are_inclusive_where_format_md_says_so() {
    let good = plain_file();
    // max_kicks at the limit, target rates just inside (0, 1).
    let accepted: Vec<(&str, Patch)> = vec![
        ("max_kicks at the limit", |b| {
            put_u32(b, 36, MAX_KICKS_LIMIT)
        }),
        ("max_kicks 0", |b| put_u32(b, 36, 0)),
        ("target_fpr just above 0", |b| {
            put_u64(b, 48, f64::MIN_POSITIVE.to_bits());
            put_u64(b, 168, f64::MIN_POSITIVE.to_bits());
        }),
        ("target_fpr just below 1", |b| {
            let r = 1.0 - f64::EPSILON;
            put_u64(b, 48, r.to_bits());
            put_u64(b, 168, r.to_bits());
        }),
        ("capacity at slots", |b| {
            let slots = u64::from_le_bytes(b[144..152].try_into().unwrap()) * 4;
            put_u64(b, 160, slots);
        }),
        ("seed", |b| put_u64(b, 40, 12345)),
    ];
    for (what, patch) in &accepted {
        for version in [2, 1] {
            let mut b = if version == 2 {
                good.clone()
            } else {
                to_v1(&good)
            };
            patch(&mut b);
            resign(&mut b);
            assert_eq!(single_answer(&b), "Ok", "{what}, version {version}");
        }
    }
    // Chunk sizes from 4 KiB to 16 MiB (this region is one chunk of any of them).
    let chunk_sizes: Vec<(&str, Patch)> = vec![
        ("chunk_shift 12", |b| b[98] = 12),
        ("chunk_shift 24", |b| b[98] = 24),
    ];
    for (what, patch) in chunk_sizes {
        let mut b = good.clone();
        patch(&mut b);
        resign(&mut b);
        assert_eq!(single_answer(&b), "Ok", "{what}");
    }
}

#[test]
fn checksums_are_checked_where_they_cover() {
    let good = plain_file();
    let end = good.len();
    let region = format!("Checksum(level 0 chunk 0 (bytes 256..{end}))");
    let cases = [
        ("header", 40, "Checksum(header)"),
        ("header crc itself", 125, "Checksum(header)"),
        ("level table", 160, "Checksum(level table)"),
        ("checksum table", 193, "Checksum(checksum table)"),
        ("checksum table padding", 250, "Checksum(checksum table)"),
        ("checksums_crc", 101, "Checksum(header)"),
        ("region", 300, region.as_str()),
    ];
    for (what, at, want) in cases {
        let mut bad = good.clone();
        bad[at] ^= 0x04;
        assert_eq!(single_answer(&bad), want, "{what}");
    }
    let v1 = to_v1(&good);
    for (what, at, want) in [
        ("header", 40, "Checksum(header)"),
        ("level table", 160, "Checksum(level table)"),
        ("region", 200, "Checksum(level 0 buckets)"),
    ] {
        let mut bad = v1.clone();
        bad[at] ^= 0x04;
        assert_eq!(single_answer(&bad), want, "version 1: {what}");
    }
}

#[test]
fn malformed_buckets_are_rejected() {
    // Semi-sorted, 9-bit fingerprints: buckets of 12 + 4 × 5 = 32 bits from the region's start.
    let mut f = CuckooFilter::new(
        Config::new(40)
            .fingerprint_bits(9)
            .encoding(Encoding::SemiSorted)
            .seed(1),
    )
    .unwrap();
    f.insert(b"k").unwrap();
    let good = f.to_bytes();
    let region = first_region(&good);
    let empty_bucket = (0..f.num_buckets())
        .find(|&i| good[region + 4 * i..][..4] == [0; 4])
        .unwrap();
    let at = region + 4 * empty_bucket;
    let mut bad_index = good.clone();
    // Index 3876: one past the last valid index (3875), no fingerprints.
    bad_index[at..at + 2].copy_from_slice(&3876u16.to_le_bytes());
    resign(&mut bad_index);
    assert_eq!(single_answer(&bad_index), "Corrupt(level 0 buckets)");
    let mut max_index = good.clone();
    // Index 3875 (nibbles 15, 15, 15, 15) with zero low parts: four fingerprints 480, sorted.
    max_index[at..at + 2].copy_from_slice(&3875u16.to_le_bytes());
    put_u64(&mut max_index, 152, 5);
    put_u64(&mut max_index, 88, 5);
    resign(&mut max_index);
    assert_eq!(single_answer(&max_index), "Ok");
    // Index 3875 with low parts 5, 4, 0, 0: not sorted.
    let mut unsorted = max_index.clone();
    let word = 3875u32 | 5 << 12 | 4 << 17;
    unsorted[at..at + 4].copy_from_slice(&word.to_le_bytes());
    resign(&mut unsorted);
    assert_eq!(single_answer(&unsorted), "Corrupt(level 0 buckets)");
    // Low parts 4, 5, 0, 0 would be unsorted too (4 ≤ 5 but 5 > 0); 0, 0, 4, 5 is sorted.
    let mut sorted = max_index.clone();
    let word = 3875u32 | 4 << 22 | 5 << 27;
    sorted[at..at + 4].copy_from_slice(&word.to_le_bytes());
    resign(&mut sorted);
    assert_eq!(single_answer(&sorted), "Ok");

    // Packed 7-bit buckets of 2 (14 bits each): a partial last byte whose spare bits are set.
    let mut f =
        CuckooFilter::new(Config::new(7).bucket_size(2).fingerprint_bits(7).seed(1)).unwrap();
    f.insert(b"k").unwrap();
    let m = f.num_buckets();
    let good = f.to_bytes();
    let used_bits = m * 14;
    assert_ne!(used_bits % 8, 0, "the layout has a partial last byte");
    let last = first_region(&good) + used_bits / 8;
    let mut spare = good.clone();
    spare[last] |= 1 << (used_bits % 8);
    resign(&mut spare);
    assert_eq!(single_answer(&spare), "Corrupt(level 0 buckets)");
}

/// A chain of three levels (20, 40 and 80 items) with a fixed bucket size and encoding.
fn chain_file() -> (Vec<u8>, usize) {
    let config = Config::new(20)
        .bucket_size(4)
        .encoding(Encoding::Packed)
        .seed(3);
    let mut f = ScalableCuckooFilter::new(config).unwrap();
    for i in 0..100 {
        f.insert(&key(i)).unwrap();
    }
    assert_eq!(f.levels(), 3);
    (f.to_bytes(), f.levels())
}

#[test]
fn every_chain_check() {
    let (good, levels) = chain_file();
    assert_eq!(
        (good[96], good[97]),
        (4, 2),
        "chain_bucket_size 4, chain_encoding packed + 1"
    );
    let cases: Vec<(&str, Patch, &str)> = vec![
        (
            "growth_factor 1",
            |b| put_u64(b, 56, 1f64.to_bits()),
            "Corrupt(growth_factor)",
        ),
        (
            "growth_factor 0.5",
            |b| put_u64(b, 56, 0.5f64.to_bits()),
            "Corrupt(growth_factor)",
        ),
        (
            "growth_factor above 64",
            |b| put_u64(b, 56, 64.5f64.to_bits()),
            "Corrupt(growth_factor)",
        ),
        (
            "growth_factor NaN",
            |b| put_u64(b, 56, f64::NAN.to_bits()),
            "Corrupt(growth_factor)",
        ),
        (
            "growth_factor ∞",
            |b| put_u64(b, 56, f64::INFINITY.to_bits()),
            "Corrupt(growth_factor)",
        ),
        ("tightening 0", |b| put_u64(b, 64, 0), "Corrupt(tightening)"),
        (
            "tightening 1",
            |b| put_u64(b, 64, 1f64.to_bits()),
            "Corrupt(tightening)",
        ),
        (
            "tightening NaN",
            |b| put_u64(b, 64, f64::NAN.to_bits()),
            "Corrupt(tightening)",
        ),
        (
            "tightening −0.5",
            |b| put_u64(b, 64, (-0.5f64).to_bits()),
            "Corrupt(tightening)",
        ),
        (
            "max_levels below the levels",
            |b| put_u32(b, 72, 2),
            "Corrupt(max_levels)",
        ),
        ("max_levels 1", |b| put_u32(b, 72, 1), "Corrupt(max_levels)"),
        (
            "max_levels 129",
            |b| put_u32(b, 72, 129),
            "Corrupt(max_levels)",
        ),
        (
            "chain_bucket_size 3",
            |b| b[96] = 3,
            "Corrupt(chain_bucket_size)",
        ),
        (
            "chain_bucket_size 1",
            |b| b[96] = 1,
            "Corrupt(chain_bucket_size)",
        ),
        (
            "chain_bucket_size 16",
            |b| b[96] = 16,
            "Corrupt(chain_bucket_size)",
        ),
        ("chain_encoding 4", |b| b[97] = 4, "Corrupt(chain_encoding)"),
        (
            "chain_encoding 255",
            |b| b[97] = 255,
            "Corrupt(chain_encoding)",
        ),
        (
            "level_count 0",
            |b| put_u32(b, 24, 0),
            "Corrupt(level_count)",
        ),
        (
            // One more level than the checksum table has chunks for.
            "level_count 4",
            |b| put_u32(b, 24, 4),
            "Corrupt(chunk_count)",
        ),
        ("item_count", |b| put_u64(b, 88, 99), "Corrupt(item_count)"),
        (
            "level 1 item_count above slots",
            |b| put_u64(b, 128 + 64 + 24, 1 << 20),
            "Corrupt(level 1 item_count)",
        ),
        (
            "level 2 region_offset",
            |b| {
                let at = 128 + 128;
                let off = u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
                put_u64(b, at, off + 64)
            },
            "Corrupt(level 2 region_offset)",
        ),
        (
            "level 1 capacity above slots",
            |b| put_u64(b, 128 + 64 + 32, 1 << 40),
            "Corrupt(level 1 capacity)",
        ),
        (
            "level 1 target_fpr 1",
            |b| put_u64(b, 128 + 64 + 40, 1f64.to_bits()),
            "Corrupt(level 1 target_fpr)",
        ),
        (
            "level 2 encoding",
            |b| b[128 + 128 + 50] = 7,
            "Corrupt(level 2 encoding)",
        ),
        (
            "no chain flag",
            |b| put_u32(b, 28, 0),
            "Corrupt(level_count)",
        ),
    ];
    check_cases(&good, chain_answer, &cases);
    // Version 1 has no checksum table: its level table ends where level 0's region starts.
    let v1: Vec<(&str, Patch, &str)> = vec![(
        "level_count 4",
        |b| put_u32(b, 24, 4),
        "Corrupt(level 0 region_offset)",
    )];
    let v1_cases: Vec<(&str, Patch, &str)> = cases
        .iter()
        .filter(|(what, _, _)| *what != "level_count 4")
        .copied()
        .chain(v1)
        .collect();
    check_cases(&to_v1(&good), chain_answer, &v1_cases);
    // Values at the limits are accepted.
    let accepted: Vec<(&str, Patch)> = vec![
        ("growth_factor 64", |b| put_u64(b, 56, 64f64.to_bits())),
        ("growth_factor just above 1", |b| {
            put_u64(b, 56, (1.0 + f64::EPSILON).to_bits())
        }),
        ("tightening just below 1", |b| {
            put_u64(b, 64, (1.0 - f64::EPSILON).to_bits())
        }),
        ("tightening just above 0", |b| {
            put_u64(b, 64, f64::MIN_POSITIVE.to_bits())
        }),
        ("max_levels at the levels", |b| put_u32(b, 72, 3)),
        ("max_levels 128", |b| put_u32(b, 72, 128)),
        ("max_levels 0 (up to 128)", |b| put_u32(b, 72, 0)),
        ("chain_bucket_size 0 (free)", |b| b[96] = 0),
        ("chain_encoding 0 (free)", |b| b[97] = 0),
    ];
    for (what, patch) in accepted {
        let mut b = good.clone();
        patch(&mut b);
        resign(&mut b);
        assert_eq!(chain_answer(&b), "Ok", "{what}");
    }
    // The fixed layout is read back as written: bucket sizes 2, 4 and 8 and each encoding.
    for (bucket, code, e) in [
        (2u8, 1u8, Encoding::Plain),
        (8, 2, Encoding::Packed),
        (4, 3, Encoding::SemiSorted),
    ] {
        let mut b = good.clone();
        b[96] = bucket;
        b[97] = code;
        resign(&mut b);
        let mut chain = ScalableCuckooFilter::from_bytes(&b).unwrap();
        // Grow it: the next level takes the fixed layout.
        let mut i = 1000;
        while chain.levels() == levels {
            chain.insert(&key(i)).unwrap();
            i += 1;
        }
        let newest = chain.level(levels).unwrap();
        assert_eq!(
            (newest.bucket_size(), newest.encoding()),
            (bucket as usize, e),
            "chain_bucket_size {bucket}, chain_encoding {code}"
        );
    }
}

/// A level may be completely full: `item_count == slots` is valid (one more is not).
#[test]
fn a_completely_full_table_is_valid() {
    let mut f = CuckooFilter::new(Config::new(1).fingerprint_bits(16).seed(2)).unwrap();
    let slots = f.capacity();
    let mut i = 0;
    while f.len() < slots {
        let _ = f.insert(&key(i)); // a key that finds no room changes nothing
        i += 1;
        assert!(
            i < 100_000,
            "the {slots}-slot table never filled: {}",
            f.len()
        );
    }
    for good in [f.to_bytes(), to_v1(&f.to_bytes())] {
        assert_eq!(single_answer(&good), "Ok");
        let mut over = good.clone();
        put_u64(&mut over, 152, slots as u64 + 1);
        put_u64(&mut over, 88, slots as u64 + 1);
        resign(&mut over);
        assert_eq!(single_answer(&over), "Corrupt(level 0 item_count)");
    }
}
