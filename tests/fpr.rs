//! Measured false-positive rates, with fixed seeds, over at least a million absent keys: at or
//! below `expected_fpr()` (the full-bucket bound) for every bucket size and width, and within
//! five standard deviations of `estimated_fpr()` (the rate at the measured load).

use cuckoo_sst::{Config, CuckooFilter};

struct Measured {
    rate: f64,
    trials: u64,
}

/// Fill a filter to its configured capacity with keys `0..n`, then probe absent keys: at least
/// a million, and enough that the bound is four standard deviations above the rate expected
/// at the reached load (near full, the bound is only a few percent above it). With 32-bit
/// fingerprints the rate (~1e-9) is too small to measure: a million keys expect 0.001 hits.
fn measure(b: usize, bits: u32, n: usize) -> (CuckooFilter, Measured) {
    let mut f = CuckooFilter::new(
        Config::new(n)
            .bucket_size(b)
            .fingerprint_bits(bits)
            .seed(2024),
    )
    .unwrap();
    for i in 0..n as u64 {
        f.insert(&i.to_le_bytes()).unwrap();
    }
    let (est, bound) = (f.estimated_fpr(), f.expected_fpr());
    let trials = if bound * 1e6 < 1.0 {
        1_000_000
    } else {
        (16.0 * est / (bound - est).powi(2)).clamp(1e6, 2e8) as u64
    };
    let absent = (0..trials)
        .filter(|i| f.contains(&(i + (1 << 40)).to_le_bytes()))
        .count();
    (
        f,
        Measured {
            rate: absent as f64 / trials as f64,
            trials,
        },
    )
}

#[test]
fn measured_fpr_is_within_the_bound_for_every_layout() {
    for b in [2usize, 4, 8] {
        for bits in [8u32, 16, 32] {
            let (f, m) = measure(b, bits, 200_000);
            let est = f.estimated_fpr();
            let sigma = (est * (1.0 - est) / m.trials as f64).sqrt();
            println!(
                "b={b} f={bits}: measured {:.3e} over {} keys, estimated {est:.3e} at load {:.3}, \
                 bound {:.3e}",
                m.rate,
                m.trials,
                f.load_factor(),
                f.expected_fpr()
            );
            assert!(
                m.rate <= f.expected_fpr(),
                "b={b} f={bits}: {} > bound",
                m.rate
            );
            assert!(
                (m.rate - est).abs() <= 5.0 * sigma + 1.0 / m.trials as f64,
                "b={b} f={bits}: measured {} vs estimated {est} (sigma {sigma})",
                m.rate
            );
        }
    }
}

#[test]
fn fpr_choice_meets_the_target() {
    for target in [0.05, 0.01, 0.001, 0.0001] {
        let mut f = CuckooFilter::new(Config::new(100_000).false_positive_rate(target)).unwrap();
        for i in 0..100_000u64 {
            f.insert(&i.to_le_bytes()).unwrap();
        }
        let trials = 2_000_000u64;
        let hits = (0..trials)
            .filter(|i| f.contains(&(i + (1 << 40)).to_le_bytes()))
            .count();
        let rate = hits as f64 / trials as f64;
        assert!(f.expected_fpr() <= target);
        assert!(rate <= target, "target {target}: measured {rate}");
    }
}
