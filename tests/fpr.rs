//! Measured false-positive rates, with fixed seeds, over millions of absent keys: for every
//! layout, the count of false positives is what `estimated_fpr()` (the rate at the measured
//! load) predicts, within a range that holds with probability 1 − 2·10⁻⁷, and not above what
//! `expected_fpr()` (the full-bucket bound) allows. And space: at 1 M items the layout chosen
//! for ε ∈ {1 %, 0.1 %, 0.01 %, 0.001 %} measures at most ε and takes fewer bits per item than
//! a space-optimal Bloom filter, 1.44·log2(1/ε).

mod common;

use cuckoo_sst::{Config, CuckooFilter};

/// Absent keys reported present, out of `trials`.
fn measured_rate(f: &CuckooFilter, trials: u64) -> f64 {
    let hits = (0..trials)
        .filter(|i| f.contains(&(i + (1 << 40)).to_le_bytes()))
        .count();
    hits as f64 / trials as f64
}

fn filled(config: Config, n: u64) -> CuckooFilter {
    let mut f = CuckooFilter::new(config).unwrap();
    for i in 0..n {
        f.insert(&i.to_le_bytes()).unwrap();
    }
    f
}

/// The range `lo..=hi` that a Poisson count with mean `lambda` falls outside of with
/// probability below `tail` on each side: exact sums up to a mean of 1000, the normal
/// approximation (±5.3σ for 1e-7) above.
fn poisson_range(lambda: f64, tail: f64) -> (u64, u64) {
    if lambda > 1000.0 {
        let z = 5.3;
        assert!(tail >= 1e-7, "the normal branch is set for tails of 1e-7");
        let s = lambda.sqrt();
        return (
            (lambda - z * s).floor().max(0.0) as u64,
            (lambda + z * s).ceil() as u64,
        );
    }
    // pmf(k) from pmf(0) = e^-λ, in log space so that λ up to 1000 does not underflow.
    let mut log_p = -lambda;
    let mut below = 0.0; // P(X < k)
    let mut lo = 0;
    let mut k = 0u64;
    loop {
        let p = log_p.exp();
        if below + p >= tail && lo == 0 && below < tail {
            lo = k;
        }
        below += p;
        if 1.0 - below < tail && k as f64 >= lambda {
            return (lo, k);
        }
        k += 1;
        log_p += lambda.ln() - (k as f64).ln();
    }
}

/// Fill a filter to its configured capacity, then probe two million absent keys: the count
/// of false positives is a Poisson (binomial) draw whose mean is `estimated_fpr()` (the rate at
/// the reached load) times the trials, and must fall in the range that holds it with
/// probability 1 − 2·10⁻⁷; nor may it exceed the range of `expected_fpr()`, the full-bucket
/// bound. With 24- and 32-bit fingerprints the mean is below one hit, and the range says so
/// (at most two or three hits).
#[test]
fn measured_fpr_matches_the_estimate_for_every_layout() {
    const TRIALS: u64 = 2_000_000;
    for layout in common::layouts() {
        let f = filled(common::config(200_000, layout).seed(2024), 200_000);
        let (est, bound) = (f.estimated_fpr(), f.expected_fpr());
        assert!(
            est <= bound,
            "{layout:?}: estimate {est} above the bound {bound}"
        );
        let hits = (measured_rate(&f, TRIALS) * TRIALS as f64).round() as u64;
        let (lo, hi) = poisson_range(est * TRIALS as f64, 1e-7);
        let (_, bound_hi) = poisson_range(bound * TRIALS as f64, 1e-7);
        println!(
            "{layout:?}: {hits} false positives in {TRIALS} (expected {lo}..={hi} at load \
             {:.3}: estimate {est:.3e}, bound {bound:.3e})",
            f.load_factor(),
        );
        assert!(
            (lo..=hi).contains(&hits),
            "{layout:?}: {hits} hits, expected {lo}..={hi} (estimate {est})"
        );
        assert!(
            hits <= bound_hi,
            "{layout:?}: {hits} hits above the bound's {bound_hi}"
        );
    }
}

#[test]
fn poisson_ranges_are_right() {
    // λ = 0.45: P(X ≥ 6) ≈ 7.9e-6, P(X ≥ 7) ≈ 4.9e-7, P(X ≥ 8) ≈ 2.8e-8.
    assert_eq!(poisson_range(0.45, 1e-7), (0, 7));
    assert_eq!(poisson_range(0.45, 1e-5), (0, 5));
    // λ = 100: about ±5σ, the left tail of a Poisson being the thinner one.
    assert_eq!(poisson_range(100.0, 1e-7), (53, 156));
    // λ = 14.4: P(X = 0) = e^-14.4 ≈ 5.6e-7 is above the tail, so 0 is inside the range.
    assert_eq!(poisson_range(14.4, 1e-7).0, 0);
    assert_eq!(poisson_range(1e6, 1e-7), (994_700, 1_005_300));
}

#[test]
fn fpr_choice_meets_the_target() {
    for target in [0.05, 0.01, 0.001, 0.0001] {
        let f = filled(Config::new(100_000).false_positive_rate(target), 100_000);
        let rate = measured_rate(&f, 2_000_000);
        assert!(f.expected_fpr() <= target);
        assert!(rate <= target, "target {target}: measured {rate}");
    }
}

/// The paper's promise (§5–6) at 1 M items: smaller than a space-optimal Bloom filter at every
/// rate from 1 % to 0.001 %, and within 1 % of the paper's semi-sorted cost with whole-bit
/// fingerprints, `(f − 1) / 0.955` with `f = ceil(log2(2b/ε))`. (The paper's continuous
/// `(log2(1/ε) + 2) / 0.955` is printed for reference; rounding `f` up costs up to a bit.)
#[test]
fn beats_a_space_optimal_bloom_filter_from_1_percent_to_0_001_percent() {
    let n = 1_000_000u64;
    for eps in [0.01, 0.001, 0.0001, 0.00001] {
        let f = filled(Config::new(n as usize).false_positive_rate(eps).seed(5), n);
        // Enough absent keys to see 200 false positives at rate ε.
        let trials = ((200.0 / eps) as u64).max(1_000_000);
        let rate = measured_rate(&f, trials);
        let bits_per_item = f.size_in_bytes() as f64 * 8.0 / f.len() as f64;
        let bloom = 1.44 * (1.0 / eps).log2();
        let paper = ((1.0 / eps).log2() + 2.0) / 0.955;
        let paper_whole_bits = ((8.0 / eps).log2().ceil() - 1.0) / 0.955;
        println!(
            "ε = {eps}: {:?} b={} f={}: FPR {rate:.3e} over {trials} keys; {bits_per_item:.3} \
             bits/item (Bloom {bloom:.3}, paper {paper:.3}, with whole bits {paper_whole_bits:.3})",
            f.encoding(),
            f.bucket_size(),
            f.fingerprint_bits(),
        );
        assert!(rate <= eps, "ε = {eps}: measured {rate}");
        assert!(
            bits_per_item < bloom,
            "ε = {eps}: {bits_per_item} bits/item ≥ Bloom {bloom}"
        );
        assert!(
            bits_per_item < paper_whole_bits * 1.01,
            "ε = {eps}: {bits_per_item} vs the paper's {paper_whole_bits}"
        );
    }
}
