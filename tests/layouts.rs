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

#[test]
fn a_configuration_knows_its_file_size_and_bound_before_the_filter_exists() {
    use Encoding::*;
    let mut seen = std::collections::HashSet::new();
    for capacity in [0usize, 1, 1000, 12_345, 1 << 20] {
        for fpr in [0.2, 0.03, 0.01, 1e-3, 1e-5] {
            for (b, e) in [
                (None, None),
                (Some(2), Some(Plain)),
                (Some(4), Some(Packed)),
                (Some(8), None),
            ] {
                let mut c = Config::new(capacity).false_positive_rate(fpr);
                if let Some(b) = b {
                    c = c.bucket_size(b);
                }
                if let Some(e) = e {
                    c = c.encoding(e);
                }
                let f = match CuckooFilter::new(c.clone()) {
                    Ok(f) => f,
                    Err(Error::InvalidConfig { .. }) => {
                        // No layout meets it: the configuration says so without a filter.
                        assert!(matches!(
                            c.size_in_bytes(),
                            Err(Error::InvalidConfig { .. })
                        ));
                        assert!(matches!(c.expected_fpr(), Err(Error::InvalidConfig { .. })));
                        continue;
                    }
                    Err(e) => panic!("{c:?}: {e}"),
                };
                let what = format!("{c:?}");
                assert_eq!(c.size_in_bytes().unwrap(), f.size_in_bytes(), "{what}");
                assert_eq!(c.size_in_bytes().unwrap(), f.to_bytes().len(), "{what}");
                assert_eq!(c.expected_fpr().unwrap(), f.expected_fpr(), "{what}");
                assert!(c.expected_fpr().unwrap() <= fpr, "{what}");
                assert!(c.expected_fpr().unwrap() > 0.0, "{what}");
                seen.insert(c.size_in_bytes().unwrap());
            }
        }
    }
    assert!(
        seen.len() > 20,
        "the sizes differ with the configuration: {seen:?}"
    );
    // An explicit width may miss the rate asked for; the bound says so (7 bits in buckets of 4:
    // 1 − (1 − 1/127)^8 ≈ 6.1 %).
    let wide = Config::new(1000)
        .fingerprint_bits(7)
        .false_positive_rate(0.01);
    assert!(wide.expected_fpr().unwrap() > 0.01);
    assert_eq!(
        wide.expected_fpr().unwrap(),
        CuckooFilter::new(wide).unwrap().expected_fpr()
    );
    let bad = Config::new(1000).bucket_size(3);
    assert!(matches!(
        bad.size_in_bytes(),
        Err(Error::InvalidConfig { .. })
    ));
    assert!(matches!(
        bad.expected_fpr(),
        Err(Error::InvalidConfig { .. })
    ));
}

/// The setting a refusal names; `what` says which configuration gave anything else.
fn refused_setting<T: std::fmt::Debug>(r: Result<T, Error>, what: &str) -> &'static str {
    match r {
        Err(Error::InvalidConfig { setting, .. }) => setting,
        other => panic!("{what}: {other:?}"),
    }
}

/// A refused configuration names the setting at fault, as spelled by its `Config` method — the
/// one to change — for a single filter and for a growable one, each checked on its own (a
/// setting that only a growable filter refuses is fine for a single one).
#[test]
fn a_refused_setting_is_named_by_its_method() {
    use cuckoo_sst::ScalableCuckooFilter;
    let c = || Config::new(10);
    const FPR: &str = "false_positive_rate";
    let single = [
        (c().bucket_size(0), "bucket_size"),
        (c().bucket_size(3), "bucket_size"),
        (c().bucket_size(16), "bucket_size"),
        (c().false_positive_rate(0.0), FPR),
        (c().false_positive_rate(1.0), FPR),
        (c().false_positive_rate(-0.1), FPR),
        (c().false_positive_rate(f64::NAN), FPR),
        (c().false_positive_rate(f64::INFINITY), FPR),
        (c().false_positive_rate(1e-30), FPR),
        (c().fingerprint_bits(0), "fingerprint_bits"),
        (c().fingerprint_bits(33), "fingerprint_bits"),
        (c().max_kicks(u32::MAX), "max_kicks"),
        (Config::new(usize::MAX), "capacity"),
    ];
    for (config, setting) in single {
        let what = format!("{config:?}");
        let named = |r: Result<(), Error>| refused_setting(r, &what);
        assert_eq!(
            named(CuckooFilter::new(config.clone()).map(drop)),
            setting,
            "{what}"
        );
        assert_eq!(named(config.size_in_bytes().map(drop)), setting, "{what}");
        assert_eq!(named(config.expected_fpr().map(drop)), setting, "{what}");
        assert_eq!(
            named(ScalableCuckooFilter::new(config).map(drop)),
            setting,
            "{what} (growable)"
        );
    }
    // A rate outside (0, 1) is told so; one inside that no layout reaches is told that.
    for (fpr, says) in [
        (0.0, "not a rate in (0, 1)"),
        (1.0, "not a rate in (0, 1)"),
        (f64::NAN, "not a rate in (0, 1)"),
        (1e-30, "cannot be reached"),
    ] {
        for r in [
            CuckooFilter::new(c().false_positive_rate(fpr)).map(drop),
            ScalableCuckooFilter::new(c().false_positive_rate(fpr)).map(drop),
        ] {
            match r {
                Err(Error::InvalidConfig { reason, .. }) => {
                    assert!(reason.contains(says), "{fpr}: {reason}")
                }
                other => panic!("{fpr}: {other:?}"),
            }
        }
    }
    let growable = [
        (c().growth_factor(1.0), "growth_factor"),
        (c().growth_factor(0.5), "growth_factor"),
        (c().growth_factor(f64::NAN), "growth_factor"),
        (c().growth_factor(f64::INFINITY), "growth_factor"),
        (c().growth_factor(65.0), "growth_factor"),
        (c().tightening(0.0), "tightening"),
        (c().tightening(1.0), "tightening"),
        (c().tightening(f64::NAN), "tightening"),
        (c().fingerprint_bits(16), "fingerprint_bits"),
        (c().max_levels(u32::MAX), "max_levels"),
        (c().false_positive_rate(1e-9), FPR),
        (c().false_positive_rate(1e-7).tightening(0.8), FPR),
        (c().max_bytes(64), "max_bytes"),
    ];
    for (config, setting) in growable {
        let what = format!("{config:?}");
        let s = refused_setting(ScalableCuckooFilter::new(config.clone()).map(drop), &what);
        assert_eq!(s, setting, "{what}");
        // Only a growable filter refuses them.
        assert!(CuckooFilter::new(config.clone()).is_ok(), "{config:?}");
    }
}

/// The limits are inclusive: the largest kick count, level count and table a configuration may
/// ask for are accepted, one more is refused.
#[test]
fn every_limit_is_accepted_and_one_past_it_refused() {
    use cuckoo_sst::{MAX_KICKS_LIMIT, MAX_LEVELS, ScalableCuckooFilter};
    let refused = |r: Result<(), Error>, setting: &str| {
        assert_eq!(refused_setting(r, setting), setting);
    };
    let kicks = Config::new(100).max_kicks(MAX_KICKS_LIMIT);
    CuckooFilter::new(kicks.clone()).unwrap();
    ScalableCuckooFilter::new(kicks).unwrap();
    let kicks = Config::new(100).max_kicks(MAX_KICKS_LIMIT + 1);
    refused(CuckooFilter::new(kicks.clone()).map(drop), "max_kicks");
    refused(ScalableCuckooFilter::new(kicks).map(drop), "max_kicks");
    ScalableCuckooFilter::new(Config::new(100).max_levels(MAX_LEVELS)).unwrap();
    refused(
        ScalableCuckooFilter::new(Config::new(100).max_levels(MAX_LEVELS + 1)).map(drop),
        "max_levels",
    );
    // A table holds at most 2^32 buckets. The smallest capacity refused (found without
    // building anything) is the first that needs more: 2^32 + 2, as counts are even and one
    // more item adds at most two buckets.
    for b in [2, 4, 8] {
        let config = |capacity| Config::new(capacity).bucket_size(b);
        let (mut ok, mut too_big) = (1usize, usize::MAX);
        assert!(config(ok).size_in_bytes().is_ok());
        while too_big - ok > 1 {
            let mid = ok + (too_big - ok) / 2;
            match config(mid).size_in_bytes() {
                Ok(_) => ok = mid,
                Err(_) => too_big = mid,
            }
        }
        let reason = match config(too_big).size_in_bytes() {
            Err(Error::InvalidConfig {
                setting: "capacity",
                reason,
            }) => reason,
            other => panic!("b={b}: {other:?}"),
        };
        let needs = format!("{too_big} items need {} buckets", (1u64 << 32) + 2);
        assert!(reason.starts_with(&needs), "b={b}: {reason}");
    }
}

/// Two encodings with the same bits per item tie (plain and packed slots of 8, 16 or 32 bits
/// in buckets of 2 or 8): the simpler one, plain, is chosen.
#[test]
fn a_tie_goes_to_the_simpler_encoding() {
    for b in [2, 8] {
        for bits in [8, 16, 32] {
            let exact = Config::new(1000)
                .bucket_size(b)
                .fingerprint_bits(bits)
                .expected_fpr()
                .unwrap();
            let f = CuckooFilter::new(Config::new(1000).bucket_size(b).false_positive_rate(exact))
                .unwrap();
            let what = format!("b={b}, {bits} bits");
            assert_eq!(f.fingerprint_bits(), bits, "{what}");
            assert_eq!(f.encoding(), Encoding::Plain, "{what}");
        }
    }
}
