//! The compatibility promise (README "Compatibility", FORMAT.md §9, CHANGELOG.md), file by
//! file: this build reads every file version the crate has written — single filters and
//! growable chains — through every reader, with the answers they gave when they were written;
//! it writes version 3 for a file with a stretch level (every chain it creates, and an older
//! chain once it has grown) and version 2 for every other; and it refuses a version newer than
//! it knows, by name.
//!
//! The golden files in `tests/data/` were written by the crate itself, each by the writer of
//! its version, and are never rewritten: a new version adds files beside them.
//!
//! - `golden-v1.cksst`, `golden-v2.cksst`: a single filter (capacity 64, buckets of 4, 8-bit
//!   fingerprints, seed 42, keys `key-0` … `key-49`); `tests/format.rs` pins their bytes
//!   against the writer too.
//! - `golden-v1-chain.cksst`: a growable chain written by the version-1 writer (the crate at
//!   commit 8cf8f1d, the parent of eec0cc4 which introduced version 2) with the program of
//!   [`write_golden_chain`]: `ScalableCuckooFilter::new(Config::new(16).seed(42))`, then
//!   `insert` of `key-0` … `key-199`: 4 levels.
//! - `golden-v2-chain.cksst`: the same program run by the version-2 writer (the crate at
//!   commit 05ebb53, which added this file, before stretch levels). This build still writes
//!   that chain's bytes when it reads either file and saves it unchanged, but it no longer
//!   makes classic levels: [`write_golden_chain`] now makes a stretch chain, written as
//!   version 3.
//! - `golden-v3-chain.cksst`: a chain of two stretch levels written by an earlier version-3
//!   writer (its program is kept in the docs of `golden_v3_chain_pins_the_bytes_and_answers`
//!   in `tests/format.rs`): `Config::new(1).false_positive_rate(0.1).seed(42)`, `key-0` …
//!   `key-499`, eight copies of `hot` (the eighth started the second level), `key-500` …
//!   `key-699`. The current writer makes other bytes of that program (split load 0.8, copies of
//!   one key refused with `TooManyCopies`); it writes this file back unchanged when it reads it.
//! - `golden-v3-chain-2.cksst`: a chain of two stretch levels written by the last version-3
//!   writer (its program, as it was then: `golden_v4_chain` in `tests/format.rs`, whose
//!   crafted keys were then keys the first level could not tell apart, and whose copies each
//!   took a slot): `Config::new(1).false_positive_rate(0.1).seed(40)`, `key-0` … `key-599`,
//!   eight copies of `hot` (a ninth is refused), nine crafted keys (the ninth starts the
//!   second level), `key-600` … `key-799`. There is no version-3 single filter: single filters
//!   are still written as version 2.
//! - `golden-v4-chain.cksst`: the same program under the current, version-4 writer (which pins
//!   its bytes): the copies of `hot` counted on one entry (FORMAT.md §3.5), nine distinct keys
//!   of one pair and core of the first level (the ninth starts the second level).

mod common;

use common::spec;
use cuckoo_sst::{CuckooFilter, Error, FilterRef, MappedFilter, ScalableCuckooFilter};

const SINGLE_V1: &[u8] = include_bytes!("data/golden-v1.cksst");
const SINGLE_V2: &[u8] = include_bytes!("data/golden-v2.cksst");
const CHAIN_V1: &[u8] = include_bytes!("data/golden-v1-chain.cksst");
const CHAIN_V2: &[u8] = include_bytes!("data/golden-v2-chain.cksst");
const CHAIN_V3: &[u8] = include_bytes!("data/golden-v3-chain.cksst");
const CHAIN_V3_2: &[u8] = include_bytes!("data/golden-v3-chain-2.cksst");
const CHAIN_V4: &[u8] = include_bytes!("data/golden-v4-chain.cksst");

/// A golden file: its bytes, the version it says, whether it is a chain, how many levels and
/// keys (`key-0` … `key-{n-1}`) it holds, how many keys its `len()` counts (more when a key
/// was inserted more than once), and which of `other-0` … `other-{probes-1}` (never inserted)
/// it answered "maybe" for when it was written.
struct Golden {
    name: &'static str,
    bytes: &'static [u8],
    version: u32,
    chain: bool,
    levels: usize,
    keys: usize,
    len: usize,
    probes: u32,
    false_positives: &'static [u32],
}

const SINGLE_FALSE_POSITIVES: &[u32] = &[
    53, 101, 102, 109, 115, 135, 162, 208, 288, 298, 319, 581, 601, 636, 734, 807, 874, 882, 966,
    968,
];

fn goldens() -> [Golden; 7] {
    [
        Golden {
            name: "golden-v1.cksst",
            bytes: SINGLE_V1,
            version: 1,
            chain: false,
            levels: 1,
            keys: 50,
            len: 50,
            probes: 1000,
            false_positives: SINGLE_FALSE_POSITIVES,
        },
        Golden {
            name: "golden-v2.cksst",
            bytes: SINGLE_V2,
            version: 2,
            chain: false,
            levels: 1,
            keys: 50,
            len: 50,
            probes: 1000,
            false_positives: SINGLE_FALSE_POSITIVES,
        },
        Golden {
            name: "golden-v1-chain.cksst",
            bytes: CHAIN_V1,
            version: 1,
            chain: true,
            levels: 4,
            keys: 200,
            len: 200,
            probes: 20_000,
            false_positives: CHAIN_FALSE_POSITIVES,
        },
        Golden {
            name: "golden-v2-chain.cksst",
            bytes: CHAIN_V2,
            version: 2,
            chain: true,
            levels: 4,
            keys: 200,
            len: 200,
            probes: 20_000,
            false_positives: CHAIN_FALSE_POSITIVES,
        },
        Golden {
            name: "golden-v3-chain.cksst",
            bytes: CHAIN_V3,
            version: 3,
            chain: true,
            levels: 2,
            keys: 700,
            len: 708, // and eight copies of `hot`
            probes: 2000,
            false_positives: CHAIN_V3_FALSE_POSITIVES,
        },
        Golden {
            name: "golden-v3-chain-2.cksst",
            bytes: CHAIN_V3_2,
            version: 3,
            chain: true,
            levels: 2,
            keys: 800,
            len: 817, // and eight copies of `hot`, nine crafted keys
            probes: 2000,
            false_positives: CHAIN_V3_2_FALSE_POSITIVES,
        },
        Golden {
            name: "golden-v4-chain.cksst",
            bytes: CHAIN_V4,
            version: 4,
            chain: true,
            levels: 2,
            keys: 800,
            len: 817, // and eight copies of `hot`, nine distinct keys
            probes: 2000,
            // The same as the version-3 file's (tests/format.rs).
            false_positives: CHAIN_V3_2_FALSE_POSITIVES,
        },
    ]
}

fn version_of(bytes: &[u8]) -> u32 {
    u32::from_le_bytes(bytes[8..12].try_into().unwrap())
}

/// The answers a reader gives for `other-0` … `other-{probes-1}`: the indices it says "maybe"
/// for.
fn false_positives(probes: u32, contains: impl Fn(&[u8]) -> bool) -> Vec<u32> {
    (0..probes)
        .filter(|i| contains(format!("other-{i}").as_bytes()))
        .collect()
}

fn all_keys_present(g: &Golden, contains: impl Fn(&[u8]) -> bool) {
    for i in 0..g.keys {
        assert!(
            contains(format!("key-{i}").as_bytes()),
            "{}: key-{i}",
            g.name
        );
    }
}

/// Every file version the crate has written is read by this build, by every reader that
/// takes its kind of file, with the keys and the false positives it had when written.
#[test]
fn every_version_written_is_read_with_its_answers() {
    let dir = tempfile::tempdir().unwrap();
    for g in goldens() {
        assert_eq!(version_of(g.bytes), g.version, "{}", g.name);
        let path = dir.path().join(g.name);
        std::fs::write(&path, g.bytes).unwrap();
        let readers = [
            ("open", MappedFilter::open(&path).unwrap()),
            (
                "open_unverified",
                MappedFilter::open_unverified(&path).unwrap(),
            ),
            ("read", MappedFilter::read(&path).unwrap()),
            (
                "from_shared",
                MappedFilter::from_shared(g.bytes.into()).unwrap(),
            ),
        ];
        for (how, m) in readers {
            let what = format!("{} through MappedFilter::{how}", g.name);
            assert_eq!(m.levels(), g.levels, "{what}");
            assert_eq!(m.len(), g.len, "{what}");
            all_keys_present(&g, |k| m.contains(k));
            assert_eq!(
                false_positives(g.probes, |k| m.contains(k)),
                g.false_positives,
                "{what}"
            );
            m.verify().unwrap();
            assert!(m.health().is_whole(), "{what}");
        }
        if g.chain {
            let f = ScalableCuckooFilter::from_bytes(g.bytes).unwrap();
            assert_eq!((f.levels(), f.len()), (g.levels, g.len), "{}", g.name);
            all_keys_present(&g, |k| f.contains(k));
            assert_eq!(
                false_positives(g.probes, |k| f.contains(k)),
                g.false_positives
            );
            // Single-filter readers say what the file is rather than misreading it.
            assert!(matches!(
                CuckooFilter::from_bytes(g.bytes),
                Err(Error::Growable { levels }) if levels as usize == g.levels
            ));
            assert!(matches!(
                FilterRef::from_bytes(g.bytes),
                Err(Error::Growable { .. })
            ));
        } else {
            let f = CuckooFilter::from_bytes(g.bytes).unwrap();
            let v = FilterRef::from_bytes(g.bytes).unwrap();
            assert_eq!((f.len(), v.len()), (g.keys, g.keys), "{}", g.name);
            all_keys_present(&g, |k| f.contains(k) && v.contains(k));
            assert_eq!(
                false_positives(g.probes, |k| f.contains(k)),
                g.false_positives
            );
            assert_eq!(
                false_positives(g.probes, |k| v.contains(k)),
                g.false_positives
            );
            assert!(matches!(
                ScalableCuckooFilter::from_bytes(g.bytes),
                Err(Error::NotGrowable)
            ));
        }
    }
}

/// The version-1 writer and the version-2 writer made the same chain from the same operations:
/// the v2 file without its checksum table, with one CRC per region, is the v1 file byte for
/// byte (so version 2 changed how a file is checked, not what it holds).
#[test]
fn the_two_chain_files_hold_the_same_filter() {
    assert_eq!(common::to_v1(CHAIN_V2), CHAIN_V1);
    assert_eq!(common::to_v1(SINGLE_V2), SINGLE_V1);
}

/// A chain read from an older version's file grows on: its classic levels stay as they were,
/// byte for byte, stretch levels are added after them (FORMAT.md §8), and what it writes
/// then is version 3, holding every key.
#[test]
fn an_old_chain_grows_on_with_stretch_levels_and_is_written_as_version_3() {
    for bytes in [CHAIN_V1, CHAIN_V2] {
        let mut f = ScalableCuckooFilter::from_bytes(bytes).unwrap();
        for i in 200..2000 {
            f.insert(format!("key-{i}").as_bytes()).unwrap();
        }
        assert!(f.levels() > 4, "{} levels", f.levels());
        let written = f.to_bytes();
        assert_eq!(version_of(&written), 3);
        let (old, new) = (spec::read(bytes).unwrap(), spec::read(&written).unwrap());
        for (k, level) in new.levels.iter().enumerate() {
            match old.levels.get(k) {
                Some(was) => {
                    assert_eq!(level.core_bits, 0, "level {k} is classic");
                    assert_eq!(level.region, was.region, "level {k} unchanged");
                }
                None => assert_eq!(level.core_bits, 5, "level {k} is a stretch level"),
            }
        }
        let back = ScalableCuckooFilter::from_bytes(&written).unwrap();
        assert_eq!(back.len(), 2000);
        assert!((0..2000).all(|i| back.contains(format!("key-{i}").as_bytes())));
    }
}

/// This build writes version 3 for a file with a stretch level and version 2 for any other,
/// and offers no way to write another: single filters and chains of classic levels (read from
/// version-1 and -2 files) are version 2 — the version-2 golden files' bytes — so a reader
/// that knows only versions 1 and 2 reads them; every chain it creates has a stretch level,
/// from its first insert on (even empty), and is version 3.
#[test]
fn the_writer_writes_version_2_without_a_stretch_level_and_3_with_one() {
    let single = CuckooFilter::from_bytes(SINGLE_V1).unwrap();
    assert_eq!(version_of(&single.to_bytes()), 2);
    assert_eq!(
        single.to_bytes(),
        SINGLE_V2,
        "a v1 file read and written again is v2"
    );
    let classic = ScalableCuckooFilter::from_bytes(CHAIN_V1).unwrap();
    assert_eq!(
        classic.to_bytes(),
        CHAIN_V2,
        "a v1 chain read and written again is the v2 chain"
    );
    let created = ScalableCuckooFilter::new(cuckoo_sst::Config::new(16).seed(42)).unwrap();
    assert_eq!(version_of(&created.to_bytes()), 3);
    let stretch = ScalableCuckooFilter::from_bytes(CHAIN_V3).unwrap();
    assert_eq!(stretch.to_bytes(), CHAIN_V3);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("saved");
    for (what, save, version) in [
        (
            "single",
            &|p: &std::path::Path| single.save(p) as Result<(), Error>,
            2,
        ),
        ("classic chain", &|p: &std::path::Path| classic.save(p), 2),
        ("created chain", &|p: &std::path::Path| created.save(p), 3),
        ("stretch chain", &|p: &std::path::Path| stretch.save(p), 3),
    ]
        as [(&str, &dyn Fn(&std::path::Path) -> Result<(), Error>, u32); 4]
    {
        save(&path).unwrap();
        assert_eq!(
            version_of(&std::fs::read(&path).unwrap()),
            version,
            "{what}"
        );
    }
}

/// A file of a version newer than this build knows is refused by every reader, with an error
/// naming the version found and the newest one this build reads — never read by guesswork.
#[test]
fn a_newer_version_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    for (bytes, chain) in [(SINGLE_V2, false), (CHAIN_V2, true), (CHAIN_V3, true)] {
        let mut newer = bytes.to_vec();
        newer[8..12].copy_from_slice(&1000u32.to_le_bytes());
        common::resign(&mut newer);
        let path = dir.path().join("newer");
        std::fs::write(&path, &newer).unwrap();
        let check = |r: Result<(), Error>, how: &str| match r {
            Err(
                e @ Error::UnsupportedVersion {
                    found: 1000,
                    supported,
                },
            ) => {
                assert!(supported >= 3, "{how}: {supported}");
                let text = e.to_string();
                assert!(
                    text.contains("version 1000") && text.contains(&format!("up to {supported}")),
                    "{how}: {text}"
                );
            }
            other => panic!("{how}: {other:?}"),
        };
        check(MappedFilter::open(&path).map(drop), "open");
        check(
            MappedFilter::open_unverified(&path).map(drop),
            "open_unverified",
        );
        check(MappedFilter::read(&path).map(drop), "read");
        check(
            MappedFilter::from_shared(newer.clone().into()).map(drop),
            "from_shared",
        );
        check(FilterRef::from_bytes(&newer).map(drop), "FilterRef");
        if chain {
            check(ScalableCuckooFilter::from_bytes(&newer).map(drop), "chain");
        } else {
            check(CuckooFilter::from_bytes(&newer).map(drop), "single");
        }
    }
}

/// The program that wrote the version-1 and -2 chain golden files (run by each version's
/// writer; see the module docs; this build's writer makes a stretch chain of it), writing to
/// cargo's scratch directory for tests, never over a golden file:
/// `cargo test --test compat -- --ignored --nocapture write_golden_chain` prints where.
#[test]
#[ignore]
fn write_golden_chain() {
    let mut f = ScalableCuckooFilter::new(cuckoo_sst::Config::new(16).seed(42)).unwrap();
    for i in 0..200 {
        f.insert(format!("key-{i}").as_bytes()).unwrap();
    }
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("golden-chain.cksst");
    std::fs::write(&path, f.to_bytes()).unwrap();
    println!("wrote {}", path.display());
}

/// Both chain files (the same filter: see `the_two_chain_files_hold_the_same_filter`).
const CHAIN_FALSE_POSITIVES: &[u32] = &[
    820, 1200, 1422, 1704, 1890, 2075, 2899, 3040, 3046, 3174, 3388, 3556, 3829, 4054, 4230, 4929,
    5012, 6086, 7398, 7744, 7835, 7925, 8222, 9094, 9931, 10267, 11099, 11338, 11521, 11757, 11997,
    12041, 12100, 12195, 12363, 12460, 12526, 12865, 13535, 13728, 14046, 14198, 14245, 15818,
    16840, 16903, 18396, 18678, 18684, 19592, 19978,
];

/// `golden-v3-chain.cksst`'s false positives among `other-0` … `other-1999`, as pinned by
/// `tests/format.rs` when it was written.
const CHAIN_V3_FALSE_POSITIVES: &[u32] = &[
    38, 49, 109, 216, 221, 330, 677, 709, 752, 989, 1063, 1082, 1108, 1191, 1233, 1239, 1270, 1410,
    1419, 1549, 1588, 1610, 1706, 1758, 1797, 1805, 1830, 1849, 1877, 1999,
];

/// `golden-v3-chain-2.cksst`'s false positives among `other-0` … `other-1999`, as pinned by
/// `tests/format.rs` when it was written.
const CHAIN_V3_2_FALSE_POSITIVES: &[u32] = &[
    10, 113, 195, 196, 209, 226, 267, 299, 346, 372, 379, 400, 574, 591, 625, 649, 651, 668, 679,
    706, 793, 829, 832, 855, 860, 944, 950, 1212, 1310, 1370, 1373, 1422, 1467, 1468, 1526, 1628,
    1737, 1761, 1804, 1808, 1902,
];
