//! `FilterBuilder` in every layout: every distinct key is found, the count is exact, the bytes
//! verify (the decoder recounts the occupied slots), and the same keys in another order give
//! the same bytes.

mod common;

use cuckoo_sst::{CuckooFilter, FilterBuilder};

fn key(i: u64) -> [u8; 16] {
    let mut k = *b"builder:\0\0\0\0\0\0\0\0";
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

#[test]
fn builds_every_layout_exactly() {
    for layout in common::layouts() {
        for n in [0u64, 1, 7, 1000, 20_000] {
            let build = |reverse: bool| {
                let mut b = FilterBuilder::new(common::config(n as usize, layout).seed(n));
                let ids: Vec<u64> = if reverse {
                    (0..n).rev().collect()
                } else {
                    (0..n).collect()
                };
                for &i in &ids {
                    b.add_key(&key(i));
                    if i % 3 == 0 {
                        b.add_key(&key(i)); // another version of the same key
                    }
                }
                b.finish()
                    .unwrap_or_else(|e| panic!("{layout:?} n={n}: {e}"))
            };
            let f = build(false);
            assert_eq!(f.len() as u64, n, "{layout:?}");
            assert!(
                (0..n).all(|i| f.contains(&key(i))),
                "{layout:?} n={n}: a key lost"
            );
            let bytes = f.to_bytes();
            assert_eq!(
                CuckooFilter::from_bytes(&bytes).unwrap(),
                f,
                "{layout:?} n={n}"
            );
            assert_eq!(
                build(true).to_bytes(),
                bytes,
                "{layout:?} n={n}: order changed the bytes"
            );
            // The builder's filter takes inserts like any other.
            let mut g = f.clone();
            let extra = key(u64::MAX);
            if g.insert(&extra).is_ok() {
                assert!(g.contains(&extra));
            }
        }
    }
}

#[test]
fn len_counts_keys_added_duplicates_included() {
    let mut b = FilterBuilder::new(cuckoo_sst::Config::new(0));
    assert!(b.is_empty());
    assert_eq!(b.len(), 0);
    b.add_key(&key(1));
    assert!(!b.is_empty());
    for i in 0..10 {
        b.add_key(&key(i)); // key 1 a second time
        b.add_hash(cuckoo_sst::KeyHash::of(&key(i)));
    }
    assert_eq!(b.len(), 21);
    let f = b.finish().unwrap();
    assert_eq!(f.len(), 10, "duplicates count once in the filter");
}

/// At the sizes where every pass of the builder has work (the radix sort's top-bits pass,
/// overfull runs, second buckets, one-move placements and relocation walks run side by side),
/// in a plain, a packed and a semi-sorted layout: every key is found, the count is exact, the
/// decoder recounts the same occupied slots, the keys given in another order (and with
/// duplicates) give the same bytes, and absent keys pass at no more than the layout's bound.
#[test]
fn large_builds_lose_nothing_and_repeat_exactly() {
    use cuckoo_sst::{Config, Encoding};
    let n: u64 = 1_500_000;
    let layouts = [
        Config::new(0).encoding(Encoding::Plain),
        Config::new(0)
            .encoding(Encoding::Packed)
            .fingerprint_bits(10),
        Config::new(0), // semi-sorted b=4 f=10
    ];
    for config in layouts {
        let build = |ids: &mut dyn Iterator<Item = u64>| {
            let mut b = FilterBuilder::new(config.clone());
            for i in ids {
                b.add_key(&key(i));
            }
            b.finish().unwrap()
        };
        let f = build(&mut (0..n));
        assert_eq!(f.len() as u64, n, "{config:?}");
        let lost = (0..n).filter(|&i| !f.contains(&key(i))).count();
        assert_eq!(lost, 0, "{config:?}: keys lost");
        let bytes = f.to_bytes();
        assert_eq!(CuckooFilter::from_bytes(&bytes).unwrap(), f, "{config:?}");
        // Reversed, every tenth key twice: the same distinct keys, the same bytes.
        let again = build(&mut (0..n).rev().flat_map(|i| {
            let copies = if i % 10 == 0 { 2 } else { 1 };
            std::iter::repeat_n(i, copies)
        }));
        assert!(
            again.to_bytes() == bytes,
            "{config:?}: order changed the bytes"
        );
        let absent = 200_000u64;
        let passed = (n..n + absent).filter(|&i| f.contains(&key(i))).count();
        // The bound assumes full buckets; 5σ of binomial noise on top.
        let bound = f.expected_fpr() * absent as f64;
        assert!(
            (passed as f64) <= bound + 5.0 * bound.sqrt(),
            "{config:?}: {passed} of {absent} absent keys passed, bound {bound:.0}"
        );
    }
}
