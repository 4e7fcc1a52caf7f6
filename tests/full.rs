//! A failed insert changes nothing; duplicates fit 2b times; `capacity` distinct keys always fit;
//! the same seed and operations give the same table.

mod common;

use cuckoo_sst::{Config, CuckooFilter, Encoding, Error};

fn key(seed: u64, i: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&seed.to_le_bytes());
    k[8..].copy_from_slice(&i.to_le_bytes());
    k
}

/// Fill until full, then keep trying new keys: thousands of failed inserts, each leaving the
/// filter equal (bytes and `len`) to what it was, and every earlier key still found.
#[test]
fn failed_inserts_change_nothing() {
    for layout in common::layouts() {
        let mut f = CuckooFilter::new(common::config(4000, layout).seed(11)).unwrap();
        let mut inserted = Vec::new();
        let mut failures = 0;
        let mut i = 0u64;
        while failures < 1000 {
            let k = key(layout.1 as u64, i);
            i += 1;
            let before = f.clone();
            match f.insert(&k) {
                Ok(()) => inserted.push(k),
                Err(Error::Full) => {
                    failures += 1;
                    assert!(f == before, "{layout:?}: failed insert changed the filter");
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(f.len(), inserted.len());
        for k in &inserted {
            assert!(
                f.contains(k),
                "{layout:?}: false negative after failed inserts"
            );
        }
        // The table is nearly full when inserts fail.
        assert!(
            f.load_factor() > 0.8,
            "{layout:?}: load {}",
            f.load_factor()
        );
    }
}

/// A key fits at most 2b times (its two buckets); the next insert fails and loses nothing. It
/// fits fewer times when other keys are confined to the same two buckets (their fingerprints
/// have the same alternate-bucket offset, about one resident in `m/2`), so each layout uses
/// the first of a few candidate keys that fits 2b times, and every candidate fits at most 2b.
#[test]
fn a_key_fits_two_buckets_worth_of_copies() {
    for layout in common::layouts() {
        let b = layout.0;
        let mut f = CuckooFilter::new(common::config(1000, layout)).unwrap();
        for other in 0..300u64 {
            f.insert(&key(1, other)).unwrap();
        }
        let copies = |f: &mut CuckooFilter, dup: &[u8]| -> usize {
            (0..=2 * b).take_while(|_| f.insert(dup).is_ok()).count()
        };
        let mut dup = None;
        for candidate in 0..10u64 {
            let k = key(2, candidate);
            let fitted = copies(&mut f.clone(), &k);
            assert!(fitted <= 2 * b, "{layout:?}: {fitted} copies fit");
            if fitted == 2 * b {
                dup = Some(k);
                break;
            }
        }
        let dup = dup.unwrap_or_else(|| panic!("{layout:?}: no candidate fits 2b copies"));
        for n in 1..=2 * b {
            f.insert(&dup).unwrap();
            assert!(f.count(&dup) >= n);
        }
        let before = f.clone();
        for _ in 0..3 {
            let full = matches!(f.insert(&dup), Err(Error::Full));
            assert!(full, "{layout:?}");
            assert!(f == before);
        }
        for other in 0..300u64 {
            assert!(f.contains(&key(1, other)));
        }
        for n in (0..2 * b).rev() {
            assert!(f.remove(&dup));
            assert!(f.count(&dup) >= n);
        }
        assert_eq!(f.len(), 300);
    }
}

/// Inserting `capacity` distinct keys never fails: every layout, many sizes from tiny to
/// 100 000, several seeds; and a million keys in the default layout.
#[test]
fn capacity_distinct_keys_always_fit() {
    let mut sizes: Vec<usize> = (0..200).collect();
    sizes.extend((200..5000).step_by(97));
    sizes.extend([10_000, 65_536, 100_000]);
    for layout in common::layouts() {
        for &n in &sizes {
            let seeds = if n <= 5000 { 4 } else { 1 };
            for seed in 0..seeds {
                let mut f = CuckooFilter::new(common::config(n, layout).seed(seed)).unwrap();
                for i in 0..n as u64 {
                    if let Err(e) = f.insert(&key(seed ^ ((n as u64) << 32), i)) {
                        panic!("{layout:?} n={n} seed={seed}: insert {i} failed: {e}");
                    }
                }
            }
        }
    }
    let mut f = CuckooFilter::new(Config::new(1_000_000)).unwrap();
    for i in 0..1_000_000 {
        f.insert(&key(7, i)).unwrap();
    }
    let load = f.load_factor();
    assert!(load > 0.94, "a 1 M filter is sized tightly: {load}");
}

/// Same seed, same operations: equal tables, also when relocations and failures happen.
#[test]
fn same_seed_same_table() {
    let build = |seed| {
        let mut f = CuckooFilter::new(Config::new(3000).seed(seed)).unwrap();
        for i in 0..4000u64 {
            let _ = f.insert(&key(0, i));
            if i % 7 == 0 {
                f.remove(&key(0, i / 2));
            }
        }
        f
    };
    assert!(build(5) == build(5));
    assert!(build(5) != build(6));
}

#[test]
fn sizes_are_not_rounded_to_powers_of_two() {
    let one = CuckooFilter::with_capacity(1_000_000);
    let one_and_half = CuckooFilter::with_capacity(1_500_000);
    let ratio = one_and_half.size_in_bytes() as f64 / one.size_in_bytes() as f64;
    assert!((ratio - 1.5).abs() < 0.01, "ratio {ratio}");
    // The default layout (1 %): semi-sorted buckets of 4, 10-bit fingerprints stored in 9 bits
    // each, sized for 95 % occupancy; spares and the header add at most 0.5 % at 1 M items.
    assert_eq!(
        (one.encoding(), one.bucket_size(), one.fingerprint_bits()),
        (Encoding::SemiSorted, 4, 10)
    );
    let bits_per_item = one.size_in_bytes() as f64 * 8.0 / 1e6;
    let at_sizing_load = 9.0 / 0.95;
    assert!(
        bits_per_item > at_sizing_load && bits_per_item < at_sizing_load * 1.005,
        "{bits_per_item} bits/item, {at_sizing_load} at the sizing load"
    );
}

#[test]
fn invalid_configs_are_errors() {
    let bad = [
        Config::new(10).bucket_size(0),
        Config::new(10).bucket_size(3),
        Config::new(10).bucket_size(16),
        Config::new(10).false_positive_rate(0.0),
        Config::new(10).false_positive_rate(1.0),
        Config::new(10).false_positive_rate(-0.5),
        Config::new(10).false_positive_rate(f64::NAN),
        Config::new(10).fingerprint_bits(0),
        Config::new(10).fingerprint_bits(64),
        Config::new(usize::MAX),
    ];
    for c in bad {
        match CuckooFilter::new(c.clone()) {
            Err(e @ Error::InvalidConfig { .. }) => assert!(!e.to_string().is_empty()),
            other => panic!("{c:?}: {other:?}"),
        }
    }
}

/// The batched lookup gives exactly the answers of one-at-a-time lookups, for any batch length.
#[test]
fn contains_batch_matches_contains() {
    use cuckoo_sst::KeyHash;
    let mut f = CuckooFilter::new(Config::new(5000).fingerprint_bits(8).seed(4)).unwrap();
    for i in 0..5000 {
        f.insert(&key(9, i)).unwrap();
    }
    // Present and absent keys interleaved; 8-bit fingerprints give plenty of false positives.
    let hashes: Vec<KeyHash> = (0..10_000)
        .map(|i| KeyHash::of(&key(9, i * 7 % 10_007)))
        .collect();
    for len in [0, 1, 15, 16, 17, 33, 1000, 10_000] {
        let mut out = vec![false; len];
        f.contains_batch(&hashes[..len], &mut out);
        for (h, got) in hashes[..len].iter().zip(&out) {
            assert_eq!(*got, f.contains_hash(*h));
        }
    }
}

/// A table larger than the machine can hold is `Error::OutOfMemory`, not an abort: 2^32 buckets
/// of 8 × 32 bits take 128 GiB. It runs where Linux refuses a single allocation larger than RAM
/// and swap together (overcommit modes 0 and 2) and the machine has less than that; elsewhere the
/// allocation could succeed and zeroing it would exhaust memory, so it says so and returns.
#[test]
fn a_table_larger_than_memory_is_out_of_memory() {
    let proc = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let mode = proc("/proc/sys/vm/overcommit_memory");
    let kib = |field: &str| -> u64 {
        proc("/proc/meminfo")
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(u64::MAX / 4)
    };
    let table = 128u64 << 30;
    if !matches!(mode.trim(), "0" | "2") || (kib("MemTotal:") + kib("SwapTotal:")) * 1024 >= table {
        println!("skipped: overcommit mode {mode:?} or memory too large to be sure of a refusal");
        return;
    }
    let config = Config::new(33_000_000_000)
        .bucket_size(8)
        .fingerprint_bits(32);
    match CuckooFilter::new(config) {
        Err(e @ Error::OutOfMemory { bytes }) => {
            // About 2^32 buckets of 32 bytes (the sizing leaves a few unused).
            assert!(bytes > table / 100 * 97 && bytes <= table, "{bytes}");
            assert!(e.to_string().contains(&format!("{bytes} bytes")), "{e}");
        }
        other => panic!("{other:?}"),
    }
}
