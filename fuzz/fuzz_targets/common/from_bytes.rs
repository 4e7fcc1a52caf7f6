//! The `from_bytes` target: arbitrary bytes into every reader. Whatever opens is queried, and
//! must write itself back byte for byte. `cargo fuzz` builds with `--cfg fuzzing`, which makes
//! the decoder skip checksum comparisons, so mutated inputs reach the field checks behind them;
//! the checksums are therefore left out of the round-trip comparison. The crate writes version
//! 3 for a file with a stretch level and 2 for any other, whatever version it read, so a file is
//! compared with its rewrite in what the versions share: header fields, level descriptors and
//! bucket regions. (Replayed by `cargo test`, without that cfg, damaged inputs stop at the
//! checksums.)

use cuckoo_sst::{CuckooFilter, FilterRef, KeyHash, MappedFilter, ScalableCuckooFilter};

/// What a file says whatever its version (FORMAT.md §4, §5, §9): the header with its version,
/// file length, checksums and version-2 chunk fields zeroed; each level descriptor with its
/// region offset and CRC zeroed; then every region's bytes.
fn canonical(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes[..128].to_vec();
    out[8..12].fill(0); // version
    out[16..24].fill(0); // file_len
    out[98..128].fill(0); // chunk fields, reserved, levels_crc, header_crc
    let levels = u32::from_le_bytes(bytes[24..28].try_into().unwrap()) as usize;
    for k in 0..levels {
        let d = &bytes[128 + 64 * k..128 + 64 * (k + 1)];
        let mut desc = d.to_vec();
        desc[..8].fill(0); // region_offset
        desc[52..56].fill(0); // region_crc
        out.extend_from_slice(&desc);
        let off = u64::from_le_bytes(d[..8].try_into().unwrap()) as usize;
        let len = u64::from_le_bytes(d[8..16].try_into().unwrap()) as usize;
        out.extend_from_slice(&bytes[off..off + len]);
    }
    out
}

/// The lazily checked readers over `data`: header, level table and checksum table checked
/// when made, chunks as lookups touch them. Whatever they accept answers without panicking;
/// where the whole file checks (`whole`: what the fully checking readers answered for each
/// hash), they answer exactly that, and `verify` passes exactly when those readers accepted.
fn lazy_readers(data: &[u8], hashes: &[KeyHash], whole: Option<&[bool]>) {
    if let Ok(view) = FilterRef::from_bytes_assume_verified(data) {
        for &h in hashes {
            let _ = view.contains_hash(h);
        }
    }
    let Ok(m) = MappedFilter::from_shared(data.into()) else {
        assert!(
            whole.is_none(),
            "from_shared refused a file the other readers accept"
        );
        return;
    };
    let answers: Vec<bool> = hashes.iter().map(|&h| m.contains_hash(h)).collect();
    let mut batch = vec![false; hashes.len()];
    m.contains_batch(hashes, &mut batch);
    assert_eq!(answers, batch);
    let health = m.health();
    assert!(health.verified + health.damaged <= health.chunks);
    match whole {
        Some(want) => {
            assert_eq!(answers, want);
            assert_eq!(health.damaged, 0);
            m.verify()
                .expect("the fully checking readers accepted these bytes");
            assert!(m.health().is_whole() && m.is_verified());
        }
        None => {
            // Something is wrong with the regions: verify says so, and the damage it found
            // is kept.
            assert!(m.verify().is_err());
            assert!(m.damage().is_some() || m.health().rejected);
        }
    }
}

pub fn run(data: &[u8]) {
    let hashes: Vec<KeyHash> = (0u64..64)
        .map(|i| KeyHash::from_u64(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
        .collect();
    let mut whole = None;
    if let Ok(view) = FilterRef::from_bytes(data) {
        whole = Some(
            hashes
                .iter()
                .map(|&h| view.contains_hash(h))
                .collect::<Vec<_>>(),
        );
    } else if let Ok(chain) = ScalableCuckooFilter::from_bytes(data) {
        whole = Some(hashes.iter().map(|&h| chain.contains_hash(h)).collect());
    }
    lazy_readers(data, &hashes, whole.as_deref());
    if let Ok(view) = FilterRef::from_bytes(data) {
        // Every reader answers alike: single lookups, counts and batches.
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
        assert_eq!(canonical(&owned.to_bytes()), canonical(data));
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
        assert_eq!(canonical(&chain.to_bytes()), canonical(data));
        let before = chain.len();
        let mut added = Vec::new();
        for i in 0u32..64 {
            let key = i.to_le_bytes();
            match chain.insert(&key) {
                Ok(()) => added.push(key),
                Err(cuckoo_sst::Error::Full) => break,
                // Its buckets are full of entries answering for it (a crafted file's may be):
                // refused, and found.
                Err(cuckoo_sst::Error::TooManyCopies) => assert!(chain.contains(&key)),
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(chain.len(), before + added.len());
        assert!(added.iter().all(|k| chain.contains(k)));
    }
}
