//! Each validation check of FORMAT.md §7 has a case here that only it rejects: a file whose
//! checksums are right (rewritten after the patch, see `common::resign`) but whose one field
//! lies. Every case asserts the exact error — variant and field — on every reader, so deleting
//! or weakening any one check fails a case. Values just inside each limit are accepted. The
//! cases run on files of every version the crate reads (`common::to_v1` writes version 1;
//! a single filter or a chain of classic levels marked version 3 is a valid version-3 file),
//! except those of fields only some versions have; the version-3 checks of stretch levels
//! run on a chain of three stretch levels. Every case is also put to the reader written from
//! FORMAT.md alone (`common::spec`), which must name the same failure.

mod common;

use common::{describe, first_region, put_packed_slot, put_u32, put_u64, resign, spec, to_v1};
use cuckoo_sst::{
    Config, CuckooFilter, Encoding, FilterRef, MAX_KICKS_LIMIT, MappedFilter, ScalableCuckooFilter,
};

const GOLDEN_V2_CHAIN: &[u8] = include_bytes!("data/golden-v2-chain.cksst");

fn key(i: u64) -> [u8; 8] {
    i.to_le_bytes()
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

/// For a chain whose failure, if any, lies in FORMAT.md §7 steps 1–7: every reader gives the
/// same answer, which is returned. The chain readers ([`chain_answer`]), and
/// `MappedFilter::from_shared`, which stops after step 7, accept a good chain; the readers of
/// single filters refuse it as growable, and name the failure of a bad one first (they read
/// the whole file before they look at its level count).
fn chain_steps_1_to_7_answer(bytes: &[u8]) -> String {
    let chain = chain_answer(bytes);
    assert_eq!(
        answer(MappedFilter::from_shared(bytes.to_vec().into())),
        chain,
        "MappedFilter::from_shared"
    );
    let single = match chain.as_str() {
        "Ok" => {
            let levels = u32::from_le_bytes(bytes[24..28].try_into().unwrap());
            format!("Growable {{ levels: {levels} }}")
        }
        failure => failure.to_string(),
    };
    assert_eq!(answer(FilterRef::from_bytes(bytes)), single, "FilterRef");
    assert_eq!(
        answer(FilterRef::from_bytes_assume_verified(bytes)),
        single,
        "FilterRef::from_bytes_assume_verified"
    );
    assert_eq!(
        answer(CuckooFilter::from_bytes(bytes)),
        single,
        "CuckooFilter"
    );
    chain
}

type Patch = fn(&mut Vec<u8>);

/// The answer of the reader written from FORMAT.md alone (`common::spec`).
fn spec_answer(bytes: &[u8]) -> String {
    spec::read(bytes).map_or_else(|e| e, |_| "Ok".into())
}

/// Applies each patch to `good`, re-signs, and checks the answer of `read` and of the reader
/// written from FORMAT.md.
fn check_cases(good: &[u8], read: fn(&[u8]) -> String, cases: &[(&str, Patch, &str)]) {
    assert_eq!(read(good), "Ok");
    assert_eq!(spec_answer(good), "Ok");
    let mut resigned = good.to_vec();
    resign(&mut resigned);
    assert_eq!(resigned, good, "resign() reproduces the writer's checksums");
    for (what, patch, want) in cases {
        let mut bad = good.to_vec();
        patch(&mut bad);
        resign(&mut bad);
        assert_ne!(bad, good, "{what}: the patch changed nothing");
        assert_eq!(&read(&bad), want, "{what}");
        assert_eq!(
            &spec_answer(&bad),
            want,
            "{what}: the reader written from FORMAT.md"
        );
    }
}

/// The same filter as the version-2 file `b`, marked version 3: a file without a stretch
/// level is a valid version-3 file (FORMAT.md §7 has no rule against it), though the crate
/// writes such files as version 2.
fn to_v3(b: &[u8]) -> Vec<u8> {
    assert_eq!(b[8], 2);
    let mut v3 = b.to_vec();
    put_u32(&mut v3, 8, 3);
    resign(&mut v3);
    v3
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
            "version 5",
            |b| put_u32(b, 8, 5),
            "UnsupportedVersion(5, 4)",
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
    for good in [good.clone(), to_v1(&good), to_v3(&good)] {
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

    // Where the versions differ. Byte 51 of a descriptor (`core_bits`) is reserved before
    // version 3; in version 3 it makes a stretch level, which only a chain may hold.
    let v1: Vec<(&str, Patch, &str)> = vec![
        (
            "core_bits in version 1",
            |b| b[179] = 5,
            "Corrupt(level 0 reserved)",
        ),
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
    let v2_only: Vec<(&str, Patch, &str)> = vec![(
        "core_bits in version 2",
        |b| b[179] = 5,
        "Corrupt(level 0 reserved)",
    )];
    check_cases(&good, single_answer, &v2_only);
    let v3_only: Vec<(&str, Patch, &str)> = vec![
        (
            "core_bits without the chain flag",
            |b| b[179] = 5,
            "Corrupt(level 0 core_bits)",
        ),
        (
            "core_bits 1 without the chain flag",
            |b| b[179] = 1,
            "Corrupt(level 0 core_bits)",
        ),
        (
            // A classic level's precision field is reserved.
            "precision of a classic level",
            |b| b[184] = 1,
            "Corrupt(level 0 reserved)",
        ),
    ];
    check_cases(&to_v3(&good), single_answer, &v3_only);
    // Versions 2 and 3.
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
    check_cases(&to_v3(&good), single_answer, &v2);
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

/// A version-3 chain of three stretch levels in packed buckets of 4 (fixed by the config, so
/// `chain_bucket_size` 4 and `chain_encoding` 2): 1 000 keys grow the first level from two
/// buckets through more than six doublings (some of its entries are copies a split made of
/// entries that had spent their six continuation bits, so it holds more entries than keys),
/// distinct keys the first level cannot tell apart start the second
/// (`common::crafted::start_new_level`; copies of one key would be refused with
/// `TooManyCopies`), 200 keys, crafted keys again start the third, 307 keys. Its last level
/// has an odd number of buckets. The keys go in with `insert_unique`, which skips the false
/// positives that `insert` would count as copies (FORMAT.md §3.5), so the file is version 3.
fn stretch_chain_file() -> Vec<u8> {
    let config = Config::new(1)
        .false_positive_rate(0.25)
        .bucket_size(4)
        .encoding(Encoding::Packed)
        .seed(3);
    let mut f = ScalableCuckooFilter::new(config).unwrap();
    let mut i = 0;
    for (round, keys) in [1000, 200].into_iter().enumerate() {
        for _ in 0..keys {
            f.insert_unique(&key(i)).unwrap();
            i += 1;
        }
        assert_eq!(f.levels(), round + 1);
        common::crafted::start_new_level(&mut f);
    }
    for _ in 0..307 {
        f.insert_unique(&key(i)).unwrap();
        i += 1;
    }
    let bytes = f.to_bytes();
    let file = spec::read(&bytes).unwrap();
    assert_eq!((file.version, file.levels.len()), (3, 3));
    assert!(file.levels.iter().all(|l| l.core_bits == 5));
    assert!(
        file.levels[0].item_count > file.levels[0].capacity,
        "copies"
    );
    assert_eq!(file.levels[2].m % 2, 1, "an odd number of buckets");
    bytes
}

/// The version-2 golden chain (four classic levels) grown by this build: stretch levels
/// after its classic ones, written as version 3.
fn mixed_chain_file() -> Vec<u8> {
    let mut f = ScalableCuckooFilter::from_bytes(GOLDEN_V2_CHAIN).unwrap();
    for i in 200..400 {
        f.insert(format!("key-{i}").as_bytes()).unwrap();
    }
    let bytes = f.to_bytes();
    let file = spec::read(&bytes).unwrap();
    assert_eq!(file.version, 3);
    let kinds: Vec<bool> = file.levels.iter().map(|l| l.core_bits != 0).collect();
    assert_eq!(kinds, [false, false, false, false, true]);
    bytes
}

/// The header's `level_count`.
fn levels(b: &[u8]) -> u32 {
    u32::from_le_bytes(b[24..28].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Descriptor `k`'s offset.
const fn desc(k: usize) -> usize {
    128 + 64 * k
}

/// The checks of a chain's header and levels that hold for chains of every version and kind
/// of level (the patches read what they need from the file: its level count, its counts).
fn chain_cases() -> Vec<(&'static str, Patch, &'static str)> {
    vec![
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
            |b| {
                let n = levels(b);
                put_u32(b, 72, n - 1)
            },
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
            // One more level than the checksum table has chunks for (version 1: see below).
            "one level more",
            |b| {
                let n = levels(b);
                put_u32(b, 24, n + 1)
            },
            "Corrupt(chunk_count)",
        ),
        (
            "item_count",
            |b| bump(b, 88, u64::MAX), // one fewer
            "Corrupt(item_count)",
        ),
        (
            "level 1 item_count above slots",
            |b| put_u64(b, desc(1) + 24, 1 << 20),
            "Corrupt(level 1 item_count)",
        ),
        (
            "level 2 region_offset",
            |b| bump(b, desc(2), 64),
            "Corrupt(level 2 region_offset)",
        ),
        (
            "level 1 target_fpr 1",
            |b| put_u64(b, desc(1) + 40, 1f64.to_bits()),
            "Corrupt(level 1 target_fpr)",
        ),
        (
            "level 2 encoding",
            |b| b[desc(2) + 50] = 7,
            "Corrupt(level 2 encoding)",
        ),
        (
            "no chain flag",
            |b| put_u32(b, 28, 0),
            "Corrupt(level_count)",
        ),
    ]
}

/// The first empty slot of level `k` of a stretch chain, its bucket's address length `ℓ`,
/// and the level's `L0` (FORMAT.md §2.2, §3.4), by the reader written from FORMAT.md.
fn empty_slot(bytes: &[u8], k: usize) -> (u64, u64, u64, u64) {
    let file = spec::read_unverified(bytes).unwrap();
    let l = &file.levels[k];
    let (i, s) = (0..l.m)
        .find_map(|i| Some((i, l.bucket(i).iter().position(|&v| v == 0)? as u64)))
        .unwrap();
    let ell = spec::Split::new(l.m).address_length(i);
    (i, s, ell, l.f - 1 - l.core_bits)
}

/// Adds `by` to the u64 field at `at`.
fn bump(b: &mut [u8], at: usize, by: u64) {
    put_u64(b, at, u64_at(b, at).wrapping_add(by));
}

/// The checks version 3 adds for stretch levels (FORMAT.md §7 steps 6 and 8), each with a
/// case only it rejects, on [`stretch_chain_file`]: level 1 has buckets of 4 slots of 10 bits
/// (core 5, `L0` = 4), level 2 an odd number of buckets.
fn stretch_cases() -> Vec<(&'static str, Patch, &'static str)> {
    vec![
        // Step 6.1: reserved bytes of a stretch level's descriptor.
        (
            "region_crc of a stretch level",
            |b| b[desc(1) + 52] = 1,
            "Corrupt(level 1 reserved)",
        ),
        (
            // A classic level has no precision: the field is reserved.
            "core_bits 0 with a precision",
            |b| b[desc(1) + 51] = 0,
            "Corrupt(level 1 reserved)",
        ),
        // Step 6.4.
        (
            "core_bits 3",
            |b| b[desc(1) + 51] = 3,
            "Corrupt(level 1 core_bits)",
        ),
        (
            "core_bits 9",
            |b| b[desc(1) + 51] = 9,
            "Corrupt(level 1 core_bits)",
        ),
        (
            "core_bits 9 and bucket_size 3: core_bits first",
            |b| {
                b[desc(1) + 51] = 9;
                b[desc(1) + 48] = 3;
            },
            "Corrupt(level 1 core_bits)",
        ),
        (
            // Step 6.3 (encoding) comes before step 6.4 (the core's range).
            "core_bits 9 and encoding 7: encoding first",
            |b| {
                b[desc(1) + 51] = 9;
                b[desc(1) + 50] = 7;
            },
            "Corrupt(level 1 encoding)",
        ),
        (
            "bucket_size 16",
            |b| b[desc(1) + 48] = 16,
            "Corrupt(level 1 bucket_size)",
        ),
        (
            "num_buckets 1",
            |b| put_u64(b, desc(2) + 16, 1),
            "Corrupt(level 2 num_buckets)",
        ),
        (
            "num_buckets 2^32 + 1",
            |b| put_u64(b, desc(2) + 16, (1 << 32) + 1),
            "Corrupt(level 2 num_buckets)",
        ),
        (
            "num_buckets 2^32",
            |b| put_u64(b, desc(2) + 16, 1 << 32),
            "Corrupt(level 2 region_len)",
        ),
        (
            // Packed slots hold 9 bits, but a core of 8 leaves no continuation bit.
            "fingerprint_bits 9 below core_bits 8 + 2",
            |b| {
                b[desc(1) + 51] = 8;
                b[desc(1) + 49] = 9;
            },
            "Corrupt(level 1 fingerprint_bits)",
        ),
        (
            // 9 ≥ 7 + 2: the width is accepted, and the region is too long for it.
            "fingerprint_bits 9 with core_bits 7",
            |b| {
                b[desc(1) + 51] = 7;
                b[desc(1) + 49] = 9;
            },
            "Corrupt(level 1 region_len)",
        ),
        (
            "fingerprint_bits 6 (no packed width)",
            |b| b[desc(1) + 49] = 6,
            "Corrupt(level 1 fingerprint_bits)",
        ),
        (
            "semi-sorted buckets of 8",
            |b| {
                b[desc(1) + 50] = 2;
                b[desc(1) + 48] = 8;
            },
            "Corrupt(level 1 fingerprint_bits)",
        ),
        // Step 6.7.
        (
            "key_count above item_count",
            |b| {
                let items = u64_at(b, desc(0) + 24);
                put_u64(b, desc(0) + 32, items + 1);
            },
            "Corrupt(level 0 key_count)",
        ),
        (
            "precision above b·2^60",
            |b| put_u64(b, desc(1) + 56, (4 << 60) + 1),
            "Corrupt(level 1 precision)",
        ),
        (
            "precision 0 with entries",
            |b| put_u64(b, desc(1) + 56, 0),
            "Corrupt(level 1 precision)",
        ),
        (
            "item_count 0 with a precision",
            |b| {
                put_u64(b, desc(2) + 24, 0);
                put_u64(b, desc(2) + 32, 0);
            },
            "Corrupt(level 2 precision)",
        ),
        // Step 6, for the file: stretch levels count their keys, not their entries.
        (
            "the header counts entries",
            |b| {
                let entries: u64 = (0..3).map(|k| u64_at(b, desc(k) + 24)).sum();
                put_u64(b, 88, entries);
            },
            "Corrupt(item_count)",
        ),
        // Step 8, after steps 1–7 accepted the file (see `stretch_checks_of_step_8`).
        (
            "precision b·2^60",
            |b| put_u64(b, desc(1) + 56, 4 << 60),
            "Corrupt(level 1 precision)",
        ),
        (
            "precision one more",
            |b| bump(b, desc(1) + 56, 1),
            "Corrupt(level 1 precision)",
        ),
        (
            // The header sums key counts, so only the count of slots finds this.
            "one entry more than the slots hold",
            |b| bump(b, desc(0) + 24, 1),
            "Corrupt(level 0 item_count)",
        ),
        (
            "an entry without a marker",
            |b| {
                let (i, s, _, l0) = empty_slot(b, 1);
                put_packed_slot(b, 1, i, s, 0b10110 << (l0 + 1));
                bump(b, desc(1) + 24, 1);
            },
            "Corrupt(level 1 buckets)",
        ),
        (
            // Slots are counted before entries are read.
            "an entry without a marker, not counted",
            |b| {
                let (i, s, _, l0) = empty_slot(b, 1);
                put_packed_slot(b, 1, i, s, 0b10110 << (l0 + 1));
            },
            "Corrupt(level 1 item_count)",
        ),
        (
            // Entries are read before their precisions are added up.
            "an entry without a marker and a precision one more",
            |b| {
                let (i, s, _, l0) = empty_slot(b, 1);
                put_packed_slot(b, 1, i, s, 0b10110 << (l0 + 1));
                bump(b, desc(1) + 24, 1);
                bump(b, desc(1) + 56, 1);
            },
            "Corrupt(level 1 buckets)",
        ),
        (
            "a valid entry more, its precision not added",
            |b| {
                let (i, s, _, l0) = empty_slot(b, 1);
                put_packed_slot(b, 1, i, s, 0b10110 << (l0 + 1) | 1);
                bump(b, desc(1) + 24, 1);
            },
            "Corrupt(level 1 precision)",
        ),
        (
            // Level by level: level 0's precision before level 1's entries.
            "level 0 precision and level 1 an entry without a marker",
            |b| {
                let (i, s, _, l0) = empty_slot(b, 1);
                put_packed_slot(b, 1, i, s, 0b10110 << (l0 + 1));
                bump(b, desc(1) + 24, 1);
                bump(b, desc(0) + 56, 1);
            },
            "Corrupt(level 0 precision)",
        ),
    ]
}

#[test]
fn every_chain_check() {
    // Four classic levels (the version-2 golden chain, and its version-1 form); five levels,
    // classic then stretch (version 3); three stretch levels (version 3).
    let classic = GOLDEN_V2_CHAIN.to_vec();
    let mixed = mixed_chain_file();
    let stretch = stretch_chain_file();
    assert_eq!(
        (stretch[96], stretch[97]),
        (4, 2),
        "chain_bucket_size 4, chain_encoding packed + 1"
    );
    let classic_only: Vec<(&str, Patch, &str)> = vec![(
        "level 1 capacity above slots",
        |b| put_u64(b, desc(1) + 32, 1 << 40),
        "Corrupt(level 1 capacity)",
    )];
    for good in [&classic, &mixed] {
        let cases: Vec<_> = chain_cases()
            .into_iter()
            .chain(classic_only.clone())
            .collect();
        check_cases(good, chain_answer, &cases);
    }
    let key_count: Vec<(&str, Patch, &str)> = vec![(
        "level 1 key_count above slots",
        |b| put_u64(b, desc(1) + 32, 1 << 40),
        "Corrupt(level 1 key_count)",
    )];
    let cases: Vec<_> = chain_cases().into_iter().chain(key_count).collect();
    check_cases(&stretch, chain_answer, &cases);
    check_cases(&stretch, chain_answer, &stretch_cases());
    // Version 1 has no checksum table: its level table ends where level 0's region starts.
    let v1_cases: Vec<(&str, Patch, &str)> = chain_cases()
        .into_iter()
        .map(|(what, patch, want)| match what {
            "one level more" => (what, patch, "Corrupt(level 0 region_offset)"),
            _ => (what, patch, want),
        })
        .chain(classic_only)
        .collect();
    check_cases(&to_v1(&classic), chain_answer, &v1_cases);
    // The fields version 3 gave a meaning are reserved before it; in version 3 a classic
    // level's precision stays reserved.
    let reserved: Vec<(&str, Patch, &str)> = vec![
        (
            "core_bits",
            |b| b[desc(1) + 51] = 5,
            "Corrupt(level 1 reserved)",
        ),
        (
            "precision",
            |b| put_u64(b, desc(1) + 56, 1 << 50),
            "Corrupt(level 1 reserved)",
        ),
    ];
    check_cases(&classic, chain_answer, &reserved);
    check_cases(&to_v1(&classic), chain_answer, &reserved);
    check_cases(&mixed, chain_answer, &reserved[1..]);

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
        ("max_levels at the levels", |b| {
            let n = levels(b);
            put_u32(b, 72, n)
        }),
        ("max_levels 128", |b| put_u32(b, 72, 128)),
        ("max_levels 0 (up to 128)", |b| put_u32(b, 72, 0)),
        ("chain_bucket_size 0 (free)", |b| b[96] = 0),
        ("chain_encoding 0 (free)", |b| b[97] = 0),
    ];
    for good in [&classic, &mixed, &stretch] {
        for (what, patch) in &accepted {
            let mut b = good.clone();
            patch(&mut b);
            resign(&mut b);
            assert_eq!(chain_answer(&b), "Ok", "{what}");
            assert_eq!(spec_answer(&b), "Ok", "{what}");
        }
    }
    // Stretch levels at their limits: every key count up to the entries (a split copies an
    // entry without its key, §8); a core of 8 with the narrowest slot it allows; an entry
    // with no continuation bit left, counted in the precision with T = ℓ.
    let stretch_accepted: Vec<(&str, Patch)> = vec![
        ("key_count = item_count", |b| {
            let (keys, items) = (u64_at(b, desc(0) + 32), u64_at(b, desc(0) + 24));
            put_u64(b, desc(0) + 32, items);
            bump(b, 88, items - keys);
        }),
        ("a bare entry more", |b| {
            let (i, s, ell, l0) = empty_slot(b, 1);
            put_packed_slot(b, 1, i, s, 0b10110 << (l0 + 1) | 1 << l0);
            bump(b, desc(1) + 24, 1);
            bump(b, desc(1) + 56, 1 << (60 - ell));
        }),
        ("a full entry more", |b| {
            let (i, s, ell, l0) = empty_slot(b, 1);
            put_packed_slot(b, 1, i, s, 0b10110 << (l0 + 1) | 1);
            bump(b, desc(1) + 24, 1);
            bump(b, desc(1) + 56, 1 << (60 - ell - l0));
        }),
    ];
    for (what, patch) in &stretch_accepted {
        let mut b = stretch.clone();
        patch(&mut b);
        resign(&mut b);
        assert_ne!(b, stretch, "{what}");
        assert_eq!(chain_answer(&b), "Ok", "{what}");
        assert_eq!(spec_answer(&b), "Ok", "{what}");
    }
    // An empty stretch level: item_count, key_count and precision all 0.
    let empty = ScalableCuckooFilter::new(Config::new(10).seed(1))
        .unwrap()
        .to_bytes();
    check_cases(
        &empty,
        chain_answer,
        &[(
            "precision of an empty level",
            |b| put_u64(b, desc(0) + 56, 1),
            "Corrupt(level 0 precision)",
        )],
    );

    // The fixed layout is read back as written: bucket sizes 2, 4 and 8 and each encoding.
    for good in [&classic, &stretch] {
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
            // Grow it by a level (distinct keys the newest level cannot tell apart; copies of
            // one key would be refused with `TooManyCopies`): the next level, a stretch level,
            // takes the fixed layout.
            let levels = chain.levels();
            common::crafted::start_new_level(&mut chain);
            let newest = chain.level(levels).unwrap();
            assert_eq!(
                (newest.bucket_size(), newest.encoding()),
                (bucket as usize, e),
                "chain_bucket_size {bucket}, chain_encoding {code}"
            );
            let bytes = chain.to_bytes();
            let file = &spec::read(&bytes).unwrap().levels[levels];
            assert_eq!(
                (file.core_bits, file.b, file.encoding),
                (5, bucket as u64, code - 1)
            );
        }
    }
}

/// Which step of FORMAT.md §7 finds each stretch-level failure: steps 1–7 read the
/// descriptors (the crate's `open_unverified`, the spec's `read_unverified`), step 8 the
/// entries. A precision above `b·2^60` or zero with entries is refused by step 6; one that
/// is in range but wrong, by step 8 alone.
#[test]
fn stretch_checks_of_step_8() {
    let good = stretch_chain_file();
    let step_8 = [
        "precision b·2^60",
        "precision one more",
        "one entry more than the slots hold",
        "an entry without a marker",
        "an entry without a marker, not counted",
        "an entry without a marker and a precision one more",
        "a valid entry more, its precision not added",
        "level 0 precision and level 1 an entry without a marker",
    ];
    for (what, patch, _) in stretch_cases() {
        let mut bad = good.clone();
        patch(&mut bad);
        resign(&mut bad);
        let crate_ok = MappedFilter::from_shared(bad.clone().into())
            .map_err(|e| describe(&e))
            .is_ok();
        let spec_ok = spec::read_unverified(&bad).is_ok();
        let want = step_8.contains(&what);
        assert_eq!((crate_ok, spec_ok), (want, want), "{what}");
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

/// The header's `target_fpr` (offset 48) as an `f64`.
fn chain_target(b: &[u8]) -> f64 {
    f64::from_bits(u64_at(b, 48))
}

/// Level `k`'s `target_fpr` (descriptor offset 40).
fn level_target(b: &[u8], k: usize) -> f64 {
    f64::from_bits(u64_at(b, desc(k) + 40))
}

/// A stretch level's `target_fpr` is its share of the chain's target: a chain read from a file
/// grows its newest level only while the level's bound stays within it (FORMAT.md §5, §8). A
/// share above the chain's own `target_fpr`, which no writer gives, is refused when the file is
/// read (§7 step 6.8), by every reader and by the reader written from FORMAT.md; a share equal
/// to the target is accepted. A classic level's `target_fpr` is informative, as versions 1
/// and 2 specified it: it is not compared with the header's.
#[test]
fn a_stretch_levels_target_fpr_is_at_most_the_chains() {
    let stretch = stretch_chain_file();
    let mixed = mixed_chain_file();
    let classic = GOLDEN_V2_CHAIN.to_vec();
    // As written, every stretch level's share is below the chain's target.
    for good in [&stretch, &mixed] {
        let file = spec::read(good).unwrap();
        for (k, level) in file.levels.iter().enumerate() {
            assert!(level_target(good, k) < chain_target(good), "level {k}");
            assert_eq!(level.target_fpr, level_target(good, k));
        }
    }
    let cases: Vec<(&str, Patch, &str)> = vec![
        (
            "level 0 target_fpr just above the chain's",
            |b| {
                let above = chain_target(b).next_up();
                put_u64(b, desc(0) + 40, above.to_bits());
            },
            "Corrupt(level 0 target_fpr)",
        ),
        (
            "level 2 target_fpr 0.99",
            |b| put_u64(b, desc(2) + 40, 0.99f64.to_bits()),
            "Corrupt(level 2 target_fpr)",
        ),
        (
            // The header passes its own check (a rate in (0, 1)); the first level whose share
            // exceeds it is named.
            "the chain's target_fpr below every level's",
            |b| {
                let least = (0..3).map(|k| level_target(b, k)).fold(1.0, f64::min);
                put_u64(b, 48, least.next_down().to_bits());
            },
            "Corrupt(level 0 target_fpr)",
        ),
    ];
    check_cases(&stretch, chain_steps_1_to_7_answer, &cases);
    // The mixed chain's stretch level is its fifth; its classic levels are not compared.
    check_cases(
        &mixed,
        chain_steps_1_to_7_answer,
        &[(
            "stretch level 4 target_fpr above the chain's",
            |b| {
                let above = chain_target(b) * 1.5;
                put_u64(b, desc(4) + 40, above.to_bits());
            },
            "Corrupt(level 4 target_fpr)",
        )],
    );

    // Accepted: a stretch level's share equal to the chain's target; a classic level's
    // target_fpr anywhere in (0, 1), in chains of every version.
    let stretch_equal: Vec<(&str, Patch)> = vec![
        ("level 0 target_fpr equal to the chain's", |b| {
            let t = chain_target(b);
            put_u64(b, desc(0) + 40, t.to_bits());
        }),
        ("every level's target_fpr equal to the chain's", |b| {
            let t = chain_target(b);
            for k in 0..3 {
                put_u64(b, desc(k) + 40, t.to_bits());
            }
        }),
    ];
    let classic_above: Vec<(&str, Patch)> =
        vec![("classic level 1 target_fpr above the chain's", |b| {
            put_u64(b, desc(1) + 40, 0.9f64.to_bits())
        })];
    let accepted = [
        (&stretch, &stretch_equal),
        (&mixed, &classic_above),
        (&classic, &classic_above),
        (&to_v1(&classic), &classic_above),
    ];
    for (good, patches) in accepted {
        for (what, patch) in patches {
            let mut b = good.clone();
            patch(&mut b);
            resign(&mut b);
            assert_ne!(&b, good, "{what}");
            assert_eq!(chain_steps_1_to_7_answer(&b), "Ok", "{what}");
            assert_eq!(spec_answer(&b), "Ok", "{what}");
        }
    }
}

/// `chain_bucket_size` and `chain_encoding` fix the layout of the levels a chain adds: a pair no
/// level can have — semi-sorted buckets (§3.3: four slots) of 2 or 8, which no `Config`
/// accepts — is refused when the file is read (FORMAT.md §7 step 4.10), by every reader and
/// for chains of every version, instead of being read and then refusing, with `Error::Full`,
/// the insert that needs a new level. Every other pair is accepted, and a chain read with it
/// adds levels of that layout.
#[test]
fn a_chain_layout_no_level_can_have_is_refused() {
    let classic = GOLDEN_V2_CHAIN.to_vec();
    let stretch = stretch_chain_file();
    let files = [
        to_v1(&classic),
        classic.clone(),
        to_v3(&classic),
        mixed_chain_file(),
        stretch.clone(),
    ];
    let cases: Vec<(&str, Patch, &str)> = vec![
        (
            "semi-sorted buckets of 2",
            |b| {
                b[96] = 2;
                b[97] = 3;
            },
            "Corrupt(chain_encoding)",
        ),
        (
            "semi-sorted buckets of 8",
            |b| {
                b[96] = 8;
                b[97] = 3;
            },
            "Corrupt(chain_encoding)",
        ),
        (
            // The bucket size's own check comes first.
            "semi-sorted buckets of 3",
            |b| {
                b[96] = 3;
                b[97] = 3;
            },
            "Corrupt(chain_bucket_size)",
        ),
        (
            // The pair is checked after the fields before it in step 4.
            "semi-sorted buckets of 2 and max_levels 129",
            |b| {
                b[96] = 2;
                b[97] = 3;
                put_u32(b, 72, 129);
            },
            "Corrupt(max_levels)",
        ),
        (
            "semi-sorted buckets of 2 and chunk_shift 11",
            |b| {
                b[96] = 2;
                b[97] = 3;
                b[98] = 11;
            },
            "Corrupt(chain_encoding)",
        ),
    ];
    for good in &files {
        let cases: Vec<_> = match good[8] {
            1 => cases[..4].to_vec(), // no chunk_shift: byte 98 is reserved
            _ => cases.clone(),
        };
        check_cases(good, chain_steps_1_to_7_answer, &cases);
    }
    // Every other pair is read, and the chain's next level takes it: the bucket size given
    // (4 if any), the encoding given (if any: semi-sorted for buckets of 4, else packed).
    for good in [&files[0], &classic, &stretch] {
        for bucket in [0u8, 2, 4, 8] {
            for code in 0u8..=3 {
                if code == 3 && bucket != 0 && bucket != 4 {
                    continue;
                }
                let mut b = good.clone();
                b[96] = bucket;
                b[97] = code;
                resign(&mut b);
                let what = format!("chain_bucket_size {bucket}, chain_encoding {code}");
                assert_eq!(chain_steps_1_to_7_answer(&b), "Ok", "{what}");
                assert_eq!(spec_answer(&b), "Ok", "{what}");
                let mut chain = ScalableCuckooFilter::from_bytes(&b).unwrap();
                let levels = chain.levels();
                common::crafted::start_new_level(&mut chain);
                let newest = chain.level(levels).unwrap();
                let want_b = if bucket == 0 { 4 } else { bucket as usize };
                let want_e = match code {
                    1 => Encoding::Plain,
                    2 => Encoding::Packed,
                    3 => Encoding::SemiSorted,
                    _ if want_b == 4 => Encoding::SemiSorted,
                    _ => Encoding::Packed,
                };
                assert_eq!(
                    (newest.bucket_size(), newest.encoding()),
                    (want_b, want_e),
                    "{what}"
                );
            }
        }
    }
}

/// Where two checks of FORMAT.md §7 share a field, the error's reason names the step that
/// failed, so a reader can tell which check it was: one case per step, each through the
/// single-filter reader (the file re-signed after the patch).
#[test]
fn checks_that_share_a_field_name_their_step() {
    let good = plain_file();
    let cases: Vec<(&str, Patch, &str, &str)> = vec![
        (
            "level_count 0",
            |b| put_u32(b, 24, 0),
            "level_count",
            "step 4.5",
        ),
        (
            "level_count 128",
            |b| put_u32(b, 24, 128),
            "level_count",
            "step 4.7",
        ),
        (
            "level_count 2",
            |b| put_u32(b, 24, 2),
            "level_count",
            "step 4.10",
        ),
        (
            "target_fpr 0",
            |b| put_u64(b, 48, 0),
            "target_fpr",
            "step 4.9",
        ),
        (
            "level target_fpr 0",
            |b| put_u64(b, 168, 0),
            "level 0 target_fpr",
            "step 6.8",
        ),
        (
            "level target_fpr differs",
            |b| put_u64(b, 168, 0.5f64.to_bits()),
            "target_fpr",
            "step 6, a single filter's level",
        ),
        (
            "region_len shorter",
            |b| put_u64(b, 136, 128),
            "level 0 region_len",
            "step 6.5",
        ),
        (
            "item_count above slots",
            |b| put_u64(b, 152, 1 << 20),
            "level 0 item_count",
            "step 6.7",
        ),
        (
            "item_count one too few",
            |b| put_u64(b, 88, 29),
            "item_count",
            "step 6, the sum",
        ),
    ];
    for (what, patch, field, step) in cases {
        let mut bad = good.clone();
        patch(&mut bad);
        resign(&mut bad);
        match FilterRef::from_bytes(&bad) {
            Err(cuckoo_sst::Error::Corrupt { field: f, reason }) => {
                assert_eq!(f, field, "{what}");
                assert!(reason.contains(&format!("(§7 {step}")), "{what}: {reason}");
            }
            other => panic!("{what}: {other:?}"),
        }
    }
    // Step 8, with the level: the occupied slots differ from a level's item_count (the
    // header's sum changed with it, so steps 1–7 pass).
    let mut bad = good.clone();
    put_u64(&mut bad, 152, 29);
    put_u64(&mut bad, 88, 29);
    resign(&mut bad);
    match FilterRef::from_bytes(&bad) {
        Err(cuckoo_sst::Error::Corrupt { field, reason }) => {
            assert_eq!(field, "level 0 item_count");
            assert!(reason.contains("(§7 step 8, level 0)"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

/// A one-level chain (version 4) whose level counts copies in records (FORMAT.md §3.5): 200
/// keys, then key 3 three times more and key 5 twice more — three and two copies counted on
/// their entries, two records.
fn records_chain_file() -> Vec<u8> {
    let mut f = ScalableCuckooFilter::new(Config::new(100).seed(7)).unwrap();
    for i in 0..200 {
        f.insert_unique(&key(i)).unwrap();
    }
    for (k, times) in [(3, 3), (5, 2)] {
        for _ in 0..times {
            f.insert(&key(k)).unwrap();
        }
    }
    let bytes = f.to_bytes();
    let file = spec::read(&bytes).unwrap();
    assert_eq!((file.version, file.levels.len()), (4, 1));
    assert_eq!(file.levels[0].copies_encoding, 1);
    assert_eq!(file.levels[0].read_copies().unwrap().len(), 2);
    bytes
}

/// A one-level chain whose level counts copies in dense fields: 100 keys, each inserted twice
/// (100 records would take 1 216 bytes, the fields of its slots fewer).
fn dense_chain_file() -> Vec<u8> {
    let mut f = ScalableCuckooFilter::new(Config::new(64).seed(8)).unwrap();
    for i in 0..100 {
        f.insert_unique(&key(i)).unwrap();
        f.insert(&key(i)).unwrap();
    }
    let bytes = f.to_bytes();
    let file = spec::read(&bytes).unwrap();
    assert_eq!((file.version, file.levels.len()), (4, 1));
    assert_eq!(file.levels[0].copies_encoding, 2);
    bytes
}

/// Where level 0's copies region starts: after its buckets (§3.5).
fn copies_at(b: &[u8]) -> usize {
    let d = desc(0);
    let (m, bs, f, e) = (
        u64_at(b, d + 16),
        b[d + 48] as u64,
        b[d + 49] as u64,
        b[d + 50],
    );
    u64_at(b, d) as usize + spec::region_len(m, bs, f, e) as usize
}

/// Record `r` of level 0's copies region: its offset.
fn record_at(b: &[u8], r: usize) -> usize {
    copies_at(b) + 8 + 12 * r
}

/// Every check FORMAT.md §7 makes of copies (steps 6.1, 6.5, 6.7, 8), on records and on dense
/// fields: each damage, re-signed so that the checksums pass, gets its specific error from the
/// crate and from the reader written from FORMAT.md.
#[test]
fn every_copies_check() {
    let records = records_chain_file();
    let cases: Vec<(&str, Patch, &str)> = vec![
        // Step 6.1: bytes 53..56 stay reserved in version 4.
        (
            "byte 53",
            |b| b[desc(0) + 53] = 1,
            "Corrupt(level 0 reserved)",
        ),
        // Step 6.5.
        (
            "copies encoding 3",
            |b| b[desc(0) + 52] = 3,
            "Corrupt(level 0 copies)",
        ),
        (
            "no copies encoding with a copies region",
            |b| b[desc(0) + 52] = 0,
            "Corrupt(level 0 region_len)",
        ),
        (
            "region_len without the copies region",
            |b| {
                let len = (copies_at(b) - u64_at(b, desc(0)) as usize) as u64;
                put_u64(b, desc(0) + 8, len);
            },
            "Corrupt(level 0 region_len)",
        ),
        // Step 6.7: at most 2b copies per slot.
        (
            "key_count past 2b per slot",
            |b| {
                let entries = u64_at(b, desc(0) + 24);
                put_u64(b, desc(0) + 32, 8 * entries + 1);
                put_u64(b, 88, 8 * entries + 1);
            },
            "Corrupt(level 0 key_count)",
        ),
        // Step 8.
        (
            "record count 0",
            |b| {
                let at = copies_at(b);
                put_u64(b, at, 0);
            },
            "Corrupt(level 0 copies)",
        ),
        (
            "record count past the region",
            |b| {
                let at = copies_at(b);
                put_u64(b, at, 6);
            },
            "Corrupt(level 0 copies)",
        ),
        (
            "a record's bucket past the level",
            |b| {
                let at = record_at(b, 1);
                put_u32(b, at, 1 << 30);
            },
            "Corrupt(level 0 copies)",
        ),
        (
            "records out of order",
            |b| {
                let (r0, r1) = (record_at(b, 0), record_at(b, 1));
                let first: Vec<u8> = b[r0..r0 + 12].to_vec();
                b.copy_within(r1..r1 + 12, r0);
                b[r1..r1 + 12].copy_from_slice(&first);
            },
            "Corrupt(level 0 copies)",
        ),
        (
            "a record's value not in its bucket",
            |b| {
                let at = record_at(b, 0) + 4;
                let v = u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
                put_u32(b, at, v ^ 0x10);
            },
            "Corrupt(level 0 copies)",
        ),
        (
            "a record of no copies",
            |b| {
                let at = record_at(b, 0) + 8;
                put_u32(b, at, 0);
            },
            "Corrupt(level 0 copies)",
        ),
        (
            "a record past 2b − 1 copies on its one slot",
            |b| {
                let at = record_at(b, 0) + 8;
                put_u32(b, at, 8);
            },
            "Corrupt(level 0 copies)",
        ),
        (
            "nonzero padding after the records",
            |b| {
                let at = record_at(b, 2) + 5;
                b[at] = 1;
            },
            "Corrupt(level 0 copies)",
        ),
        (
            "key_count past entries and copies",
            |b| {
                let keys = u64_at(b, desc(0) + 24) + 6;
                put_u64(b, desc(0) + 32, keys);
                put_u64(b, 88, keys);
            },
            "Corrupt(level 0 key_count)",
        ),
    ];
    check_cases(&records, chain_answer, &cases);

    let dense = dense_chain_file();
    let cases: Vec<(&str, Patch, &str)> = vec![
        (
            "dense fields read as records",
            |b| b[desc(0) + 52] = 1,
            "Corrupt(level 0 copies)",
        ),
        (
            "nonzero padding after the dense fields",
            |b| {
                let last = b.len() - 1;
                b[last] = 0x80;
            },
            "Corrupt(level 0 copies)",
        ),
        (
            "copies on an empty slot",
            |b| {
                // The last field of the first bucket with an empty slot: 1 copy.
                let file = spec::read_unverified(b).unwrap();
                let level = &file.levels[0];
                let j = (0..level.m)
                    .find(|&j| level.bucket(j).contains(&0))
                    .unwrap();
                let bit = (j * 4 + 3) * 3;
                let at = copies_at(b) + (bit / 8) as usize;
                let word = u16::from_le_bytes([b[at], b[at + 1]]) | 1 << (bit % 8);
                b[at..at + 2].copy_from_slice(&word.to_le_bytes());
            },
            "Corrupt(level 0 copies)",
        ),
    ];
    check_cases(&dense, chain_answer, &cases);
}
