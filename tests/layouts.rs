//! The encodings are three layouts of the same filter: with equal fingerprints they answer
//! alike.
//!
//! A key's buckets and fingerprint depend only on the seed, the bucket count and the width, so
//! plain, packed and semi-sorted tables of the same width, bucket size and capacity give every
//! key the same fingerprint and buckets. Packed slots keep their positions like plain ones, so
//! the two evolve identically — relocations included. Semi-sorted buckets renumber their slots
//! when they re-sort, so a relocation may pick another victim; without relocations they hold
//! the same fingerprints in the same buckets as plain ones.

use cuckoo_sst::{Config, CuckooFilter, Encoding, Error, KeyHash};

fn key(i: u64) -> [u8; 8] {
    i.to_le_bytes()
}

fn build(
    capacity: usize,
    b: usize,
    bits: u32,
    e: Encoding,
    kicks: u32,
    n: u64,
) -> (CuckooFilter, Vec<bool>) {
    let config = Config::new(capacity)
        .bucket_size(b)
        .fingerprint_bits(bits)
        .encoding(e);
    let mut f = CuckooFilter::new(config.max_kicks(kicks).seed(12)).unwrap();
    let placed = (0..n)
        .map(|i| match f.insert(&key(i)) {
            Ok(()) => true,
            Err(Error::Full) => false,
            Err(e) => panic!("{e}"),
        })
        .collect();
    (f, placed)
}

fn assert_same_answers(a: &CuckooFilter, b: &CuckooFilter, what: &str) {
    assert_eq!(a.num_buckets(), b.num_buckets());
    assert_eq!(a.len(), b.len(), "{what}");
    for i in 0..400_000u64 {
        let h = KeyHash::of(&key(i));
        assert_eq!(a.contains_hash(h), b.contains_hash(h), "{what}: key {i}");
        assert_eq!(a.count_hash(h), b.count_hash(h), "{what}: key {i}");
    }
}

#[test]
fn plain_and_packed_agree_with_relocations_up_to_full() {
    for (b, bits) in [(2, 8), (4, 8), (8, 8), (4, 16), (8, 16), (2, 32), (4, 32)] {
        // 20 % more keys than the capacity: relocations, then failed inserts.
        let (plain, p1) = build(50_000, b, bits, Encoding::Plain, 500, 60_000);
        let (packed, p2) = build(50_000, b, bits, Encoding::Packed, 500, 60_000);
        assert_eq!(p1, p2, "b={b} f={bits}: inserts failed at different keys");
        assert!(p1.iter().any(|&ok| !ok), "the tables were meant to fill up");
        assert_same_answers(&plain, &packed, &format!("b={b} f={bits}"));
    }
}

#[test]
fn semi_sorted_and_plain_agree_without_relocations() {
    for bits in [8, 16, 32] {
        // No relocations: each key goes to the first free slot of its first bucket, else its
        // second, or fails; the decision depends only on the buckets' contents.
        let (plain, p1) = build(50_000, 4, bits, Encoding::Plain, 0, 50_000);
        let (semi, p2) = build(50_000, 4, bits, Encoding::SemiSorted, 0, 50_000);
        assert_eq!(p1, p2, "f={bits}: inserts failed at different keys");
        assert_same_answers(&plain, &semi, &format!("f={bits}"));
        // And after removing a third of the keys that went in.
        let (mut plain, mut semi) = (plain, semi);
        for i in (0..50_000).step_by(3).filter(|&i| p1[i as usize]) {
            assert!(plain.remove(&key(i)));
            assert!(semi.remove(&key(i)));
        }
        assert_same_answers(&plain, &semi, &format!("f={bits} after removes"));
    }
}

#[test]
fn semi_sorted_and_packed_agree_without_relocations_at_every_width() {
    for bits in 7..=32 {
        let (packed, p1) = build(5_000, 4, bits, Encoding::Packed, 0, 5_000);
        let (semi, p2) = build(5_000, 4, bits, Encoding::SemiSorted, 0, 5_000);
        assert_eq!(p1, p2, "f={bits}");
        assert_same_answers(&packed, &semi, &format!("f={bits}"));
    }
}
