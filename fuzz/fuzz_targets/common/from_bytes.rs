//! The `from_bytes` target: arbitrary bytes into every reader. Whatever opens is queried, and
//! must write itself back byte for byte. `cargo fuzz` builds with `--cfg fuzzing`, which makes
//! the decoder skip checksum comparisons, so mutated inputs reach the field checks behind them;
//! the CRC fields are therefore left out of the round-trip comparison. (Replayed by
//! `cargo test`, without that cfg, damaged inputs stop at the checksums.)

use cuckoo_sst::{CuckooFilter, FilterRef, KeyHash, ScalableCuckooFilter};

/// The bytes with the CRC fields (FORMAT.md §4, §5) zeroed.
fn without_crcs(bytes: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    if b.len() >= 128 {
        b[120..128].fill(0);
        let levels = u32::from_le_bytes(b[24..28].try_into().unwrap()) as usize;
        for k in 0..levels {
            let at = 128 + 64 * k + 52;
            if let Some(crc) = b.get_mut(at..at + 4) {
                crc.fill(0);
            }
        }
    }
    b
}

pub fn run(data: &[u8]) {
    if let Ok(view) = FilterRef::from_bytes(data) {
        // Every reader answers alike: single lookups, counts and batches.
        let hashes: Vec<KeyHash> = (0u64..64)
            .map(|i| KeyHash::from_u64(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
            .collect();
        let mut batch = vec![false; hashes.len()];
        view.contains_batch(&hashes, &mut batch);
        for (&h, &b) in hashes.iter().zip(&batch) {
            let found = view.contains_hash(h);
            let count = view.count_hash(h);
            assert_eq!(found, count > 0);
            assert_eq!(found, b);
            assert!(count <= 2 * view.bucket_size());
        }
        assert!(view.len() <= view.capacity());
        let mut owned = CuckooFilter::from_bytes(data).expect("FilterRef accepted these bytes");
        assert_eq!(without_crcs(&owned.to_bytes()), without_crcs(data));
        // The reopened filter is usable: inserting and removing keeps its invariants.
        let before = owned.len();
        if owned.insert(b"fuzz").is_ok() {
            assert!(owned.contains(b"fuzz"));
            assert!(owned.remove(b"fuzz"));
            assert_eq!(owned.len(), before);
        }
    } else {
        assert!(CuckooFilter::from_bytes(data).is_err());
    }
    // Chains: whatever opens is queried, writes itself back, and grows.
    if let Ok(mut chain) = ScalableCuckooFilter::from_bytes(data) {
        assert!(chain.levels() >= 1);
        assert_eq!(without_crcs(&chain.to_bytes()), without_crcs(data));
        let before = chain.len();
        let mut added = 0;
        for i in 0u32..64 {
            match chain.insert(&i.to_le_bytes()) {
                Ok(()) => added += 1,
                Err(cuckoo_sst::Error::Full) => break,
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(chain.len(), before + added);
        assert!((0..added as u32).all(|i| chain.contains(&i.to_le_bytes())));
    }
}
