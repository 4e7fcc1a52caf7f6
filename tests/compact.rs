//! Compact blocks (FORMAT.md §11): the worked example's bytes, a reader written from §11 alone
//! (`common/spec.rs`) against the crate on blocks of every layout and size, damaged and hostile
//! blocks refused by both with the same error, and no false negatives against a model.

mod common;

use common::{describe, layouts, spec};
use cuckoo_sst::{CompactFilter, Config, FilterBuilder, KeyHash};
use proptest::prelude::*;
use std::collections::HashSet;

fn block_of(config: Config, keys: &[Vec<u8>]) -> Vec<u8> {
    let mut b = FilterBuilder::new(config);
    for k in keys {
        b.add_key(k);
    }
    b.finish_compact().expect("a compact block")
}

fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02X}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn key(i: u64, salt: &str) -> Vec<u8> {
    format!("{salt}{i:015}").into_bytes() // 16 bytes
}

#[test]
fn the_worked_example_checks_out() {
    let one = block_of(Config::new(0), &[b"".to_vec()]);
    assert_eq!(hex(&one), "C1 0A 0A 00 00 00 00 00 0C 00 00 00 00");
    let three = block_of(
        Config::new(0),
        &[b"apple".to_vec(), b"banana".to_vec(), b"cherry".to_vec()],
    );
    assert_eq!(hex(&three), "C1 0A 0A 00 1C 07 00 C0 E2 07 00 00 62");
    assert_eq!(
        spec::seeded(0x2D06800538D394C2, spec::compact_seed(0)),
        0x240F5A870BCBC9DC
    );
    assert_eq!(
        spec::classic_probes(0x240F5A870BCBC9DC, 2, 10),
        (0, 0x030, 1)
    );
    for (block, present) in [
        (&one, vec![&b""[..]]),
        (&three, vec![b"apple", b"banana", b"cherry"]),
    ] {
        let r = spec::read_compact(block).unwrap();
        assert_eq!(r.keys(), present.len() as u64);
        for k in present {
            assert!(r.contains(k) && CompactFilter::block_contains(block, k).unwrap());
        }
        for k in [&b"date"[..], b"fig"] {
            assert!(!r.contains(k) && !CompactFilter::block_contains(block, k).unwrap());
        }
    }
}

#[test]
fn the_reader_from_the_text_agrees_with_the_crate_on_every_layout_and_size() {
    let mut blocks = 0;
    for layout in layouts() {
        for n in [0u64, 1, 2, 5, 31, 40, 129, 700, 5000] {
            let present: Vec<Vec<u8>> = (0..n).map(|i| key(i, &format!("p{n}"))).collect();
            let block = block_of(common::config(0, layout), &present);
            let ours = CompactFilter::from_bytes(&block).unwrap();
            let theirs = spec::read_compact(&block).unwrap();
            assert_eq!(
                (ours.len() as u64, theirs.keys()),
                (n, n),
                "{layout:?} n={n}"
            );
            assert_eq!(ours.is_empty(), n == 0, "{layout:?} n={n}");
            assert_eq!(ours.block_len(), block.len(), "{layout:?} n={n}");
            // FORMAT.md §5's classic bound.
            let bound = spec::classic_bound(layout.0 as u64, u64::from(layout.1));
            let got = ours.expected_fpr();
            assert!(
                (got - bound).abs() <= 1e-9 * bound,
                "{layout:?}: {got} vs {bound}"
            );
            let debug = format!("{ours:?}");
            assert!(debug.starts_with("CompactFilter {"), "{debug}");
            assert!(
                debug.contains(&format!("block_len: {}, len: {n},", block.len())),
                "{debug}"
            );
            for k in &present {
                assert!(
                    theirs.contains(k),
                    "{layout:?} n={n}: the spec reader lost a key"
                );
                assert!(ours.contains(k));
            }
            for i in 0..2000 {
                let k = key(i, "a");
                let h = KeyHash::of(&k);
                let expect = theirs.contains(&k);
                assert_eq!(ours.contains_hash(h), expect, "{layout:?} n={n} {i}");
                assert_eq!(
                    CompactFilter::block_contains_hash(&block, h).unwrap(),
                    expect
                );
            }
            blocks += 1;
        }
    }
    assert_eq!(blocks, 41 * 9);
}

#[test]
fn damaged_and_hostile_blocks_get_the_readers_error_or_its_answers() {
    let mut rng = 0x1234_5678_9ABC_DEF0u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let (mut refused, mut read) = (0, 0);
    for layout in layouts() {
        for n in [0u64, 3, 40, 300] {
            let present: Vec<Vec<u8>> = (0..n).map(|i| key(i, "d")).collect();
            let good = block_of(common::config(0, layout), &present);
            for trial in 0..60 {
                let mut bad = good.clone();
                match trial % 4 {
                    0 => {
                        let at = (next() % bad.len() as u64) as usize;
                        bad[at] ^= 1 << (next() % 8);
                    }
                    1 => bad.truncate((next() % (bad.len() as u64 + 1)) as usize),
                    2 => bad.extend((0..1 + next() % 9).map(|_| next() as u8)),
                    _ => {
                        let at = (next() % 4) as usize;
                        bad[at] = next() as u8;
                    }
                }
                let ours = CompactFilter::from_bytes(&bad);
                let theirs = spec::read_compact(&bad);
                match (&ours, &theirs) {
                    (Err(e), Err(s)) => {
                        assert_eq!(&describe(e), s, "{layout:?} n={n} trial {trial}");
                        refused += 1;
                    }
                    (Ok(f), Ok(r)) => {
                        assert_eq!(f.len() as u64, r.keys());
                        for i in 0..200 {
                            let k = key(i, if i % 2 == 0 { "d" } else { "x" });
                            assert_eq!(f.contains(&k), r.contains(&k));
                        }
                        read += 1;
                    }
                    _ => panic!(
                        "{layout:?} n={n} trial {trial}: the crate says {:?}, the reader {:?}",
                        ours.as_ref().map(|f| f.len()).map_err(describe),
                        theirs.as_ref().map(|r| r.keys())
                    ),
                }
                // The one-shot lookup checks steps 1–5 only, as the unverified reader does.
                let one = CompactFilter::block_contains(&bad, b"k");
                let unverified = spec::read_compact_unverified(&bad);
                assert_eq!(
                    one.as_ref().err().map(describe),
                    unverified.as_ref().err().cloned(),
                    "{layout:?} n={n} trial {trial}"
                );
            }
        }
    }
    // Both outcomes occur: flips in the buckets often leave a well-formed block.
    assert!(
        refused > 1000 && read > 500,
        "refused {refused}, read {read}"
    );
}

#[test]
fn random_bytes_never_fault_and_are_refused_or_read_alike() {
    let mut rng = 7u64;
    for len in 0..300usize {
        for _ in 0..20 {
            let mut bytes: Vec<u8> = (0..len)
                .map(|_| {
                    rng = rng
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (rng >> 56) as u8
                })
                .collect();
            if len > 0 && rng.is_multiple_of(2) {
                bytes[0] = 0xC1; // past the magic, into the layout checks
            }
            let ours = CompactFilter::from_bytes(&bytes);
            let theirs = spec::read_compact(&bytes);
            assert_eq!(
                ours.as_ref().err().map(describe),
                theirs.as_ref().err().cloned()
            );
            let _ = CompactFilter::block_contains(&bytes, b"any key");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// No false negatives, whatever the keys (duplicates included), against a `HashSet`.
    #[test]
    fn every_key_added_is_found(keys in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..24), 0..600)) {
        let model: HashSet<Vec<u8>> = keys.iter().cloned().collect();
        let block = block_of(Config::new(0), &keys);
        let f = CompactFilter::from_bytes(&block).unwrap();
        prop_assert_eq!(f.len(), model.len());
        for k in &model {
            prop_assert!(f.contains(k));
            prop_assert!(CompactFilter::block_contains(&block, k).unwrap());
        }
    }
}

/// The golden block of compact version 1 (`tests/data/golden-compact-v1.bin`: the 1000 keys
/// `gc-0000000000000` …, written by the crate that introduced the form) reads in every later
/// version of the crate with the same keys and the same answers, through the crate and through
/// the reader written from FORMAT.md.
#[test]
fn the_golden_block_of_compact_version_1_reads_with_its_answers() {
    let block = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden-compact-v1.bin"),
    )
    .unwrap();
    assert_eq!((block.len(), block[0]), (1156, 0xC1));
    let ours = CompactFilter::from_bytes(&block).unwrap();
    let theirs = spec::read_compact(&block).unwrap();
    assert_eq!((ours.len(), theirs.keys()), (1000, 1000));
    for i in 0..1000 {
        let k = format!("gc-{i:013}");
        assert!(ours.contains(k.as_bytes()) && theirs.contains(k.as_bytes()));
        assert!(CompactFilter::block_contains(&block, k.as_bytes()).unwrap());
    }
    let false_positives = (0..100_000)
        .filter(|i| {
            let k = format!("ga-{i:013}");
            let answer = ours.contains(k.as_bytes());
            assert_eq!(answer, theirs.contains(k.as_bytes()));
            answer
        })
        .count();
    assert_eq!(false_positives, 751);
}
