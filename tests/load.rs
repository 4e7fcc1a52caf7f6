//! Load factor at the first failed insert (paper §5.1), over 10 seeds, with 2^16 buckets and
//! 16-bit fingerprints: every seed reaches the paper's 84 %, 95 % and 98 % for buckets of 2, 4
//! and 8, and the crate's documented "about 88 %, 97 % and 99.5 %" — within 87.5–89 %,
//! 97–98 % and 99.5–100 %.

use cuckoo_sst::{Config, CuckooFilter, Error};

fn load_at_first_failure(b: usize, bits: u32, buckets: usize, seed: u64) -> (f64, usize) {
    // Size so that the table has at least `buckets` buckets.
    let capacity = buckets * b;
    let mut f = CuckooFilter::new(
        Config::new(capacity)
            .bucket_size(b)
            .fingerprint_bits(bits)
            .seed(seed),
    )
    .unwrap();
    assert!(f.num_buckets() >= buckets);
    let mut i = 0u64;
    loop {
        match f.insert(&[&seed.to_le_bytes()[..], &i.to_le_bytes()[..]].concat()) {
            Ok(()) => i += 1,
            Err(Error::Full) => return (f.load_factor(), f.num_buckets()),
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn load_factor_at_first_failure_meets_the_paper_and_the_docs() {
    for (b, paper, docs) in [
        (2usize, 0.84, 0.875..=0.89),
        (4, 0.95, 0.97..=0.98),
        (8, 0.98, 0.995..=1.0),
    ] {
        let loads: Vec<f64> = (0..10)
            .map(|seed| load_at_first_failure(b, 16, 1 << 16, seed).0)
            .collect();
        println!("b={b}: load at first failure over 10 seeds: {loads:.4?}");
        for load in loads {
            assert!(load >= paper, "b={b}: load {load} < the paper's {paper}");
            assert!(docs.contains(&load), "b={b}: load {load} outside {docs:?}");
        }
    }
}

/// 8-bit fingerprints give each bucket only 255 alternates; the table still fills well past
/// the load it is sized for.
#[test]
fn narrow_fingerprints_still_fill_past_the_sizing_load() {
    for (b, sized_for) in [(2usize, 0.84), (4, 0.95), (8, 0.98)] {
        for seed in 0..3 {
            let (load, _) = load_at_first_failure(b, 8, 1 << 18, seed);
            assert!(
                load > sized_for + 0.005,
                "b={b} seed={seed}: first failure at {load}"
            );
        }
    }
}
