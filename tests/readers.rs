//! Every reader holds to one answer. For single filters in every layout, and for chains of at
//! least three levels in every encoding and bucket size, the batched lookups of
//! `CuckooFilter`, `ScalableCuckooFilter`, `FilterRef` (of an owned filter, of bytes at an odd
//! offset, of each level) and `MappedFilter` (verified on open, or on first use) equal
//! `contains_hash` key by key, for batch lengths around the group size of 16 — and
//! `contains_hash` finds every key inserted. Chains built with an explicit bucket size and
//! encoding survive `to_bytes` → `from_bytes` → `save` → `MappedFilter::open` level by level,
//! and grow on — in place, and by new levels — to the same bytes as a chain never saved.
//!
//! A chain grows in place (one stretch level grows bucket by bucket) for about a thousandfold
//! growth before it starts a new level, and copies of one key never start one (they are
//! refused with `TooManyCopies`); to have chains of several levels from a few thousand keys,
//! these tests insert distinct keys that the newest level cannot tell apart until a new level
//! starts (`common::crafted::start_new_level`, see [`chain`]).

mod common;
use common::crafted::start_new_level;
use common::spec;

use cuckoo_sst::{
    CompactFilter, Config, CuckooFilter, Encoding, Error, FilterBuilder, FilterRef, KeyHash,
    MappedFilter, ScalableCuckooFilter,
};

/// Batch lengths: empty, one, around the group of 16, and neither a multiple of 16 nor small.
const BATCH_LENS: [usize; 8] = [0, 1, 15, 16, 17, 37, 1000, 4099];

/// Keys inserted into each chain, from a first level sized for 100: with a new level started
/// after keys 399, 799 and 1199 (see [`chain`]), four levels, each holding ordinary keys.
const CHAIN_KEYS: u64 = 1500;

fn key(i: u64) -> [u8; 16] {
    let mut k = *b"readers:\0\0\0\0\0\0\0\0";
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

/// Every (encoding, bucket size) a chain can be fixed to.
fn classes() -> Vec<(Encoding, usize)> {
    let mut v = Vec::new();
    for e in [Encoding::Plain, Encoding::Packed] {
        for b in [2, 4, 8] {
            v.push((e, b));
        }
    }
    v.push((Encoding::SemiSorted, 4));
    v
}

/// 6000 hashes, half of keys `0..n` (present) and half of keys `n..2n` (absent), interleaved.
fn probes(n: u64) -> Vec<KeyHash> {
    (0..6000u64)
        .map(|i| KeyHash::of(&key(i * 7 % (2 * n))))
        .collect()
}

/// `batch` equals `single` on windows of every length in [`BATCH_LENS`] at the start, at an
/// odd offset and at the end of `hashes`, with the output pre-filled both ways (so a slot the
/// batch forgets to write is caught).
fn assert_batch_matches(
    what: &str,
    hashes: &[KeyHash],
    single: impl Fn(KeyHash) -> bool,
    batch: impl Fn(&[KeyHash], &mut [bool]),
) {
    let want: Vec<bool> = hashes.iter().map(|&h| single(h)).collect();
    for len in BATCH_LENS {
        for start in [0, 5, hashes.len() - len] {
            for fill in [false, true] {
                let mut out = vec![fill; len];
                batch(&hashes[start..start + len], &mut out);
                for (i, (&got, &w)) in out.iter().zip(&want[start..start + len]).enumerate() {
                    assert_eq!(
                        got,
                        w,
                        "{what}: batch of {len} at {start} (pre-filled {fill}), key {}",
                        start + i
                    );
                }
            }
        }
    }
}

fn tmp() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("readers.cksst");
    (dir, path)
}

/// Keys `0..CHAIN_KEYS`, with a new level started after keys 399, 799 and 1199 by distinct
/// crafted keys ([`common::crafted::start_new_level`]); the chain and those crafted keys' hashes
/// (none of them a key `key(i)`).
fn chain(e: Encoding, b: usize, target: f64, seed: u64) -> (ScalableCuckooFilter, Vec<KeyHash>) {
    let config = Config::new(100)
        .false_positive_rate(target)
        .bucket_size(b)
        .encoding(e)
        .seed(seed);
    let mut f = ScalableCuckooFilter::new(config).unwrap();
    let mut crafted = Vec::new();
    for i in 0..CHAIN_KEYS {
        f.insert(&key(i)).unwrap();
        if i % 400 == 399 {
            crafted.extend(start_new_level(&mut f));
        }
    }
    (f, crafted)
}

#[test]
fn single_filters_in_every_layout_answer_alike_on_every_reader() {
    let n = 3000u64;
    let hashes = probes(n);
    for layout in common::layouts() {
        let mut f = CuckooFilter::new(common::config(n as usize, layout).seed(6)).unwrap();
        for i in 0..n {
            f.insert(&key(i)).unwrap();
        }
        assert!(
            (0..n).all(|i| f.contains(&key(i))),
            "{layout:?}: a false negative"
        );
        let single = |h| f.contains_hash(h);
        let what = format!("{layout:?}");
        assert_batch_matches(&format!("{what} CuckooFilter"), &hashes, single, |h, o| {
            f.contains_batch(h, o)
        });
        let view = f.as_filter_ref();
        assert_batch_matches(&format!("{what} as_filter_ref"), &hashes, single, |h, o| {
            view.contains_batch(h, o)
        });
        // The bytes inside a larger block, at an odd offset.
        let mut block = vec![0xA5u8; 3];
        f.write_to(&mut block).unwrap();
        let from_bytes = FilterRef::from_bytes(&block[3..]).unwrap();
        assert_batch_matches(
            &format!("{what} FilterRef::from_bytes"),
            &hashes,
            single,
            |h, o| from_bytes.contains_batch(h, o),
        );
        let (_dir, path) = tmp();
        f.save(&path).unwrap();
        let mapped = MappedFilter::open(&path).unwrap();
        assert_batch_matches(&format!("{what} MappedFilter"), &hashes, single, |h, o| {
            mapped.contains_batch(h, o)
        });
        for &h in &hashes {
            assert_eq!(mapped.contains_hash(h), f.contains_hash(h), "{what}");
            assert_eq!(from_bytes.count_hash(h), f.count_hash(h), "{what}");
            assert_eq!(mapped.count_hash(h), f.count_hash(h), "{what}");
        }
    }
}

#[test]
fn chains_in_every_layout_answer_alike_on_every_reader() {
    let hashes = probes(CHAIN_KEYS);
    // 1 % and 25 %: the second gives 7- and 8-bit fingerprints and plenty of false positives,
    // so the batches are held to the single lookups on absent keys too.
    for target in [0.01, 0.25] {
        for (e, b) in classes() {
            let (f, crafted) = chain(e, b, target, 4);
            let what = format!("{e:?} b={b} ε={target}");
            assert!(f.levels() >= 4, "{what}: {} levels", f.levels());
            assert!(
                (0..CHAIN_KEYS).all(|i| f.contains(&key(i)))
                    && crafted.iter().all(|&h| f.contains_hash(h)),
                "{what}: a false negative"
            );
            // The chain's answer is any level's answer.
            // Its count is the levels' counts and the copies counted on their entries (FORMAT.md
            // §3.5), read by the reader written from FORMAT.md.
            let levels: Vec<FilterRef<'_>> = (0..f.levels()).map(|k| f.level(k).unwrap()).collect();
            let bytes = f.to_bytes();
            let file = spec::read(&bytes).unwrap();
            for &h in &hashes {
                let any = levels.iter().any(|l| l.contains_hash(h));
                assert_eq!(f.contains_hash(h), any, "{what}");
                let seeded = spec::seeded(h.to_u64(), f.seed());
                let count: usize = levels.iter().map(|l| l.count_hash(h)).sum::<usize>()
                    + file
                        .levels
                        .iter()
                        .map(|l| l.counted_copies(seeded) as usize)
                        .sum::<usize>();
                assert_eq!(f.count_hash(h), count, "{what}");
            }
            let single = |h| f.contains_hash(h);
            assert_batch_matches(&format!("{what} chain"), &hashes, single, |h, o| {
                f.contains_batch(h, o)
            });
            for (k, l) in levels.iter().enumerate() {
                assert_batch_matches(
                    &format!("{what} level {k}"),
                    &hashes,
                    |h| l.contains_hash(h),
                    |h, o| l.contains_batch(h, o),
                );
            }
            let bytes = f.to_bytes();
            // The reader written from FORMAT.md alone answers alike.
            let file = spec::read(&bytes).unwrap();
            for &h in &hashes {
                assert_eq!(file.contains_hash(h.to_u64()), f.contains_hash(h), "{what}");
            }
            let reopened = ScalableCuckooFilter::from_bytes(&bytes).unwrap();
            assert_batch_matches(&format!("{what} from_bytes"), &hashes, single, |h, o| {
                reopened.contains_batch(h, o)
            });
            let (_dir, path) = tmp();
            f.save(&path).unwrap();
            let mapped = MappedFilter::open(&path).unwrap();
            assert_eq!(mapped.levels(), f.levels());
            assert_batch_matches(&format!("{what} MappedFilter"), &hashes, single, |h, o| {
                mapped.contains_batch(h, o)
            });
            for &h in &hashes {
                assert_eq!(mapped.contains_hash(h), f.contains_hash(h), "{what}");
                assert_eq!(mapped.count_hash(h), f.count_hash(h), "{what}");
            }
            for (k, level) in levels.iter().enumerate() {
                let l = mapped.level(k).unwrap();
                assert_batch_matches(
                    &format!("{what} mapped level {k}"),
                    &hashes,
                    |h| level.contains_hash(h),
                    |h, o| l.contains_batch(h, o),
                );
            }
            // Checked chunk by chunk as lookups touch them: the first call is a batch, whose
            // keys touch every chunk of these small levels (one each).
            let lazy = MappedFilter::open_unverified(&path).unwrap();
            let mut out = vec![false; hashes.len()];
            lazy.contains_batch(&hashes, &mut out);
            assert!(lazy.health().is_whole(), "{what}: {:?}", lazy.health());
            assert_eq!(lazy.health().chunks, levels.len() as u64);
            assert!(
                !lazy.is_verified(),
                "the contents are checked by verify() alone"
            );
            let want: Vec<bool> = hashes.iter().map(|&h| f.contains_hash(h)).collect();
            assert_eq!(out, want, "{what}: unverified MappedFilter");
        }
    }
}

#[test]
fn chains_with_a_fixed_layout_survive_saving_and_grow_on_alike() {
    let hashes = probes(CHAIN_KEYS);
    for (e, b) in classes() {
        let what = format!("{e:?} b={b}");
        let (mut never_saved, _) = chain(e, b, 0.01, 11);
        let bytes = never_saved.to_bytes();
        let reopened = ScalableCuckooFilter::from_bytes(&bytes).unwrap();
        assert_eq!(reopened, never_saved, "{what}");
        let (_dir, path) = tmp();
        reopened.save(&path).unwrap();
        let mapped = MappedFilter::open(&path).unwrap();
        assert_eq!(mapped.as_bytes(), &bytes[..], "{what}");
        assert_eq!(mapped.levels(), never_saved.levels(), "{what}");
        for k in 0..never_saved.levels() {
            let (want, got) = (never_saved.level(k).unwrap(), mapped.level(k).unwrap());
            assert_eq!(got.bucket_size(), b, "{what} level {k}");
            assert_eq!(got.encoding(), e, "{what} level {k}");
            assert_eq!(
                got.fingerprint_bits(),
                want.fingerprint_bits(),
                "{what} level {k}"
            );
            assert_eq!(got.num_buckets(), want.num_buckets(), "{what} level {k}");
            assert_eq!(got.len(), want.len(), "{what} level {k}");
            assert_eq!(got.seed(), want.seed(), "{what} level {k}");
        }
        for &h in &hashes {
            assert_eq!(
                mapped.contains_hash(h),
                never_saved.contains_hash(h),
                "{what}"
            );
        }
        // Grow the reopened chain and the one never saved by the same keys: eightfold, which
        // the newest level takes in place (more buckets, no new level), then by a new level.
        // New levels keep the fixed layout, and the bytes are the same.
        let mut grown = ScalableCuckooFilter::from_bytes(mapped.as_bytes()).unwrap();
        let (levels, buckets) = (
            grown.levels(),
            grown.level(grown.levels() - 1).unwrap().num_buckets(),
        );
        for i in CHAIN_KEYS..8 * CHAIN_KEYS {
            grown.insert(&key(i)).unwrap();
            never_saved.insert(&key(i)).unwrap();
        }
        assert_eq!(grown.levels(), levels, "{what}: grown in place");
        let newest = grown.level(levels - 1).unwrap();
        assert!(
            newest.num_buckets() > 4 * buckets,
            "{what}: {buckets} buckets, then {}",
            newest.num_buckets()
        );
        assert_eq!(
            start_new_level(&mut grown),
            start_new_level(&mut never_saved),
            "{what}"
        );
        assert_eq!(grown.levels(), levels + 1, "{what}: the chain did not grow");
        for k in 0..grown.levels() {
            let l = grown.level(k).unwrap();
            assert_eq!((l.bucket_size(), l.encoding()), (b, e), "{what} level {k}");
        }
        assert_eq!(grown.to_bytes(), never_saved.to_bytes(), "{what}");
    }
}

/// `save` replaces the file by rename: a mapping made before keeps the old file's bytes and
/// answers, and a new mapping sees the new file.
#[test]
fn a_mapping_keeps_the_old_bytes_after_save() {
    let (_dir, path) = tmp();
    let mut old = CuckooFilter::new(Config::new(1000).seed(1)).unwrap();
    for i in 0..1000 {
        old.insert(&key(i)).unwrap();
    }
    old.save(&path).unwrap();
    let mapped = MappedFilter::open(&path).unwrap();
    let mut new = CuckooFilter::new(Config::new(1000).seed(2)).unwrap();
    for i in 1000..2000 {
        new.insert(&key(i)).unwrap();
    }
    new.save(&path).unwrap();
    assert_eq!(mapped.as_bytes(), &old.to_bytes()[..]);
    assert!((0..1000).all(|i| mapped.contains(&key(i))));
    let absent_old = (1000..2000).filter(|&i| !mapped.contains(&key(i))).count();
    assert!(absent_old > 950, "the old mapping answers for the new keys");
    let remapped = MappedFilter::open(&path).unwrap();
    assert_eq!(remapped.as_bytes(), &new.to_bytes()[..]);
    assert!((1000..2000).all(|i| remapped.contains(&key(i))));
}

/// One key against many filters — every layout, different seeds and sizes, more filters than
/// the group of 32 that is prefetched together, classic filters alone (the path that knows
/// nothing of stretch levels) and mixed with stretch levels: each answer is the filter's own,
/// and the first "maybe" is the first filter that answers so.
#[test]
fn one_key_probes_many_filters_alike() {
    let layouts = common::layouts();
    let tables: Vec<CuckooFilter> = (0..70u64)
        .map(|t| {
            let layout = layouts[t as usize % layouts.len()];
            let n = 200 + 37 * t;
            let mut f = CuckooFilter::new(common::config(n as usize, layout).seed(t)).unwrap();
            for i in 0..n {
                f.insert(&key(i * 70 + t)).unwrap();
            }
            f
        })
        .collect();
    let classic: Vec<FilterRef<'_>> = tables.iter().map(|f| f.as_filter_ref()).collect();
    // Stretch levels, grown from 100 keys to 3 000 (keys 700 000 + 70 i + t), in place of the
    // classic filters 0, 33 and 69.
    let grown: Vec<ScalableCuckooFilter> = [0u64, 33, 69]
        .iter()
        .map(|&t| {
            let mut f = ScalableCuckooFilter::new(Config::new(100).seed(t)).unwrap();
            for i in 0..3000 {
                f.insert(&key(700_000 + i * 70 + t)).unwrap();
            }
            assert_eq!(f.levels(), 1);
            f
        })
        .collect();
    let mut mixed = classic.clone();
    for (f, t) in grown.iter().zip([0, 33, 69]) {
        mixed[t] = f.level(0).unwrap();
    }
    let stretch_keys = (0..3000u64).flat_map(|i| [0, 33, 69].map(|t| 700_000 + i * 70 + t));
    for i in stretch_keys {
        let h = KeyHash::of(&key(i));
        let t = (i % 70) as usize;
        assert!(mixed[t].contains_hash(h), "key {i} lost");
        assert_eq!(
            FilterRef::first_containing(&mixed, h).map(|f| f <= t),
            Some(true)
        );
    }
    let stretch: &[usize] = &[0, 33, 69];
    for (filters, n, stretch) in [0, 1, 31, 32, 33, 70]
        .iter()
        .flat_map(|&n| [(&classic, n, &[][..]), (&mixed, n, stretch)])
    {
        let filters = &filters[..n];
        for i in 0..3000u64 {
            let h = KeyHash::of(&key(i));
            let want: Vec<bool> = filters.iter().map(|f| f.contains_hash(h)).collect();
            for fill in [false, true] {
                let mut out = vec![fill; n];
                FilterRef::contains_hash_each(filters, h, &mut out);
                assert_eq!(out, want, "{n} filters, key {i}");
            }
            assert_eq!(
                FilterRef::first_containing(filters, h),
                want.iter().position(|&x| x),
                "{n} filters, key {i}"
            );
            // The key's own classic table (i mod 70) always answers "maybe".
            let own = (i % 70) as usize;
            if own < n && !stretch.contains(&own) && i / 70 < 200 + 37 * (i % 70) {
                assert!(want[(i % 70) as usize], "key {i} lost");
            }
        }
    }
}

/// What a reader reports about itself, against values worked out here from the layout — for
/// the owned filter, its borrowed view, and a view of its bytes — and the batched byte-key
/// lookup of a view against the single one.
#[test]
fn every_reader_reports_its_shape_and_statistics() {
    let n = 2000u64;
    for layout in common::layouts() {
        let (b, bits, encoding) = layout;
        let mut f = CuckooFilter::new(common::config(n as usize, layout).seed(6)).unwrap();
        let empty = f.to_bytes();
        for i in 0..n {
            f.insert(&key(i)).unwrap();
        }
        // Key 0 three times in all (a bucket pair holds 2b ≥ 4 copies).
        f.insert(&key(0)).unwrap();
        f.insert(&key(0)).unwrap();
        let bytes = f.to_bytes();
        let what = format!("{layout:?}");
        let view = f.as_filter_ref();
        let from_bytes = FilterRef::from_bytes(&bytes).unwrap();
        assert!(FilterRef::from_bytes(&empty).unwrap().is_empty(), "{what}");
        for r in [view, from_bytes] {
            let len = n as usize + 2;
            assert_eq!((r.len(), r.is_empty()), (len, false), "{what}");
            assert_eq!(r.seed(), 6, "{what}");
            assert_eq!(r.fingerprint_bits(), bits, "{what}");
            assert_eq!((r.bucket_size(), r.encoding()), (b, encoding), "{what}");
            assert_eq!(r.capacity(), r.num_buckets() * b, "{what}");
            assert!(r.capacity() >= len, "{what}");
            assert_eq!(r.load_factor(), len as f64 / r.capacity() as f64, "{what}");
            // 1 − (1 − 1/(2^f − 1))^(2·b·load): each of 2b slots, full with probability `load`,
            // matches an absent key's fingerprint with probability 1/(2^f − 1).
            // (`powf` of a base this close to 1 is good to about 1e-8 relative.)
            let values = 2f64.powi(bits as i32) - 1.0;
            let want = 1.0 - (1.0 - 1.0 / values).powf(2.0 * b as f64 * r.load_factor());
            let got = r.estimated_fpr();
            assert!((got - want).abs() <= 1e-6 * want, "{what}: {got} vs {want}");
            // Plain buckets are one line each; bit-packed ones average more, never two each.
            let lines = r.cache_lines_per_lookup();
            if encoding == Encoding::Plain {
                assert_eq!(lines, 2.0, "{what}");
            } else {
                assert!(lines > 2.0 && lines < 4.0, "{what}: {lines}");
            }
            assert_eq!(r.count(&key(0)), 3, "{what}");
            assert_eq!(r.count(&key(1)), 1, "{what}");
            assert_eq!(r.count_hash(KeyHash::of(&key(0))), 3, "{what}");
            let debug = format!("{r:?}");
            assert!(debug.starts_with("FilterRef {"), "{debug}");
            assert!(debug.contains(&format!("len: {len}")), "{debug}");
            // Byte keys, batched: the same answers as one by one.
            let keys: Vec<[u8; 16]> = (n - 500..n + 500).map(key).collect();
            let mut out = vec![false; keys.len()];
            r.contains_batch_keys(&keys, &mut out);
            for (k, &o) in keys.iter().zip(&out) {
                assert_eq!(o, r.contains(k), "{what}");
            }
            assert!(out[..500].iter().all(|&o| o), "{what}: a false negative");
        }
        assert_eq!(f.count(&key(0)), 3, "{what}");
        assert_eq!(f.estimated_fpr(), from_bytes.estimated_fpr(), "{what}");
        assert_eq!(f.load_factor(), from_bytes.load_factor(), "{what}");
        // The owned filter's own answers: its configuration, and FORMAT.md §5's classic bound
        // `1 − (1 − 1/(2^f − 1))^(2b)`, which does not count the load.
        assert_eq!((f.seed(), f.fingerprint_bits()), (6, bits), "{what}");
        let bound = spec::classic_bound(b as u64, u64::from(bits));
        let got = f.expected_fpr();
        assert!(
            (got - bound).abs() <= 1e-9 * bound,
            "{what}: {got} vs {bound}"
        );
        // A compact block names its seed by an index from the default one: refused for seed 6;
        // with the default seed, the same filter as a block answers as it does.
        assert!(
            matches!(f.to_compact_bytes(), Err(Error::InvalidConfig { .. })),
            "{what}"
        );
        let mut d = CuckooFilter::new(common::config(n as usize, layout)).unwrap();
        for i in 0..n {
            d.insert(&key(i)).unwrap();
        }
        let block = d.to_compact_bytes().unwrap();
        let c = CompactFilter::from_bytes(&block).unwrap();
        assert_eq!((c.len(), c.block_len()), (d.len(), block.len()), "{what}");
        for i in 0..2 * n {
            assert_eq!(c.contains(&key(i)), d.contains(&key(i)), "{what}: key {i}");
        }
    }
    // By hand: packed b=4 f=10 buckets span 1 + 7/64 lines on average (table/mod.rs).
    let f = CuckooFilter::new(common::config(1000, (4, 10, Encoding::Packed))).unwrap();
    assert_eq!(
        f.as_filter_ref().cache_lines_per_lookup(),
        2.0 * (1.0 + 7.0 / 64.0)
    );
}

/// What a mapped file reports — length, levels, seed, size, bytes, rates, counts, each level —
/// against the chain it was saved from; verification state before and after `verify`; a
/// damaged region answers "maybe present" everywhere, from every lookup.
#[test]
fn a_mapped_file_reports_what_it_holds() {
    let (_dir, path) = tmp();
    let (mut c, _) = chain(Encoding::Packed, 4, 0.01, 9);
    for _ in 0..2 {
        c.insert(&key(7)).unwrap(); // key 7 three times
    }
    c.save(&path).unwrap();
    let bytes = c.to_bytes();
    let levels = c.levels();
    assert!(levels >= 4);
    for (mapped, verified) in [
        (MappedFilter::open(&path).unwrap(), true),
        (MappedFilter::open_unverified(&path).unwrap(), false),
    ] {
        assert_eq!((mapped.len(), mapped.is_empty()), (c.len(), false));
        assert_eq!(mapped.levels(), levels);
        assert_eq!(mapped.seed(), 9);
        assert_eq!(mapped.expected_fpr(), c.expected_fpr());
        assert_eq!(mapped.size_in_bytes(), bytes.len());
        assert_eq!(mapped.as_bytes(), &bytes[..]);
        assert_eq!(mapped.count(&key(7)), 3);
        assert_eq!(mapped.count_hash(KeyHash::of(&key(8))), 1);
        assert_eq!(
            mapped.count(&key(CHAIN_KEYS + 1)),
            c.count(&key(CHAIN_KEYS + 1))
        );
        let debug = format!("{mapped:?}");
        assert!(debug.starts_with("MappedFilter {"), "{debug}");
        // Level k of the file is level k of the chain, and what its descriptor says
        // (FORMAT.md §5, read by the reader written from it): a stretch level's key count,
        // slot width, bucket count, and the bound §5.1 derives from its precision sum.
        let file = spec::read(&bytes).unwrap();
        for k in 0..levels {
            let (got, want) = (mapped.level(k).unwrap(), c.level(k).unwrap());
            assert_eq!(got.len(), want.len(), "level {k}");
            assert_eq!(got.num_buckets(), want.num_buckets(), "level {k}");
            assert_eq!(got.fingerprint_bits(), want.fingerprint_bits(), "level {k}");
            assert_eq!(got.expected_fpr(), want.expected_fpr(), "level {k}");
            let l = &file.levels[k];
            assert_eq!(l.core_bits, 5, "level {k}");
            assert_eq!(
                (l.capacity, l.f, l.m),
                (
                    got.len() as u64,
                    got.fingerprint_bits() as u64,
                    got.num_buckets() as u64
                ),
                "level {k}"
            );
            let bound = l.precision as f64 * 2f64.powi(1 - 5 - 60);
            assert_eq!(got.expected_fpr(), bound, "level {k}");
        }
        assert!(mapped.level(levels).is_none());
        assert_eq!(mapped.is_verified(), verified);
        assert!(
            mapped.health().is_whole(),
            "every level handed out was checked"
        );
        mapped.verify().unwrap();
        assert!(mapped.is_verified());
        let keys: Vec<[u8; 16]> = (CHAIN_KEYS - 300..CHAIN_KEYS + 300).map(key).collect();
        let mut out = vec![false; keys.len()];
        mapped.contains_batch_keys(&keys, &mut out);
        for (k, &o) in keys.iter().zip(&out) {
            assert_eq!(o, c.contains(k));
        }
    }
    let unverified = MappedFilter::open_unverified(&path).unwrap();
    assert!(!unverified.is_verified());
    unverified.verify().unwrap();
    assert!(unverified.is_verified());

    // An empty filter maps as empty.
    let empty = CuckooFilter::new(Config::new(10)).unwrap();
    empty.save(&path).unwrap();
    let mapped = MappedFilter::open(&path).unwrap();
    assert_eq!(
        (mapped.len(), mapped.is_empty(), mapped.levels()),
        (0, true, 1)
    );

    // A flipped byte in the last level's region, one chunk (under 64 KiB) that every lookup
    // reads: the header opens, the damaged chunk fails to verify, and every lookup answers
    // "maybe present" (never a false negative); that level is not handed out, the others are.
    assert!(c.level(levels - 1).unwrap().capacity() * 4 < 1 << 16);
    let mut damaged = bytes.clone();
    let at = damaged.len() - 100;
    damaged[at] ^= 0x40;
    std::fs::write(&path, &damaged).unwrap();
    let mapped = MappedFilter::open_unverified(&path).unwrap();
    assert!(mapped.verify().is_err());
    assert!(!mapped.is_verified());
    assert!(mapped.level(levels - 1).is_none());
    assert!(mapped.level(0).is_some());
    assert_eq!(
        (mapped.health().chunks, mapped.health().damaged),
        (levels as u64, 1)
    );
    let absent: Vec<KeyHash> = (0..100)
        .map(|i| KeyHash::of(&key(10 * CHAIN_KEYS + i)))
        .collect();
    assert!(absent.iter().all(|&h| mapped.contains_hash(h)));
    let mut out = vec![false; absent.len()];
    mapped.contains_batch(&absent, &mut out);
    assert!(out.iter().all(|&o| o));
    let keys: Vec<[u8; 16]> = (0..100).map(|i| key(10 * CHAIN_KEYS + i)).collect();
    let mut out = vec![false; keys.len()];
    mapped.contains_batch_keys(&keys, &mut out);
    assert!(out.iter().all(|&o| o));
}

/// Two filters are equal exactly when every persisted field and every table byte is: each
/// field changed on its own makes them differ, and a round trip through bytes changes nothing.
#[test]
fn filters_are_equal_only_field_for_field() {
    let build = |config: Config, keys: std::ops::Range<u64>| {
        let mut f = CuckooFilter::new(config).unwrap();
        for i in keys {
            f.insert(&key(i)).unwrap();
        }
        f
    };
    let config = || Config::new(1000).seed(3);
    let base = build(config(), 0..500);
    assert_eq!(base, build(config(), 0..500));
    assert_eq!(base, CuckooFilter::from_bytes(&base.to_bytes()).unwrap());
    assert_eq!(base.size_in_bytes(), base.to_bytes().len());
    assert_eq!(base.max_kicks(), 500, "the default");
    assert_eq!(base.hash_key(b"x"), KeyHash::of(b"x"));
    assert_eq!(
        base.num_buckets() * base.bucket_size(),
        base.capacity(),
        "capacity"
    );
    // Sized for 1001 items: the same table (checked), another persisted size.
    let sized = build(Config::new(1001).seed(3), 0..500);
    assert_eq!(sized.num_buckets(), base.num_buckets());
    let others = [
        ("seed", build(config().seed(4), 0..500)),
        ("max_kicks", build(config().max_kicks(499), 0..500)),
        ("len and table", build(config(), 0..501)),
        ("table", build(config(), 1..501)),
        ("sized_for", sized),
        (
            "target",
            build(config().false_positive_rate(0.0101), 0..500),
        ),
        (
            "geometry",
            build(config().encoding(Encoding::Plain), 0..500),
        ),
    ];
    for (what, other) in &others {
        assert_ne!(&base, other, "{what}");
        // Each differs in the one field it names (the geometry and the length stay).
        let shape = |f: &CuckooFilter| (f.num_buckets(), f.fingerprint_bits(), f.encoding());
        if !what.contains("len") && *what != "geometry" {
            assert_eq!((shape(other), other.len()), (shape(&base), 500), "{what}");
        }
    }
    // Inserting a key and removing it again restores the bytes and the length.
    let mut again = base.clone();
    again.insert(&key(0)).unwrap();
    assert!(again.remove(&key(0)));
    assert_eq!(again, base);
    let debug = format!("{base:?}");
    assert!(
        debug.starts_with("CuckooFilter {") && debug.contains("len: 500"),
        "{debug}"
    );
}

/// A filter from the builder counts the keys it placed, reads them back on every reader, and
/// is the filter that inserting the same keys one by one into the same configuration makes.
#[test]
fn a_built_filter_counts_and_finds_its_keys() {
    let n = 5000u64;
    let mut b = FilterBuilder::new(Config::new(n as usize).seed(8));
    for i in 0..n {
        b.add_key(&key(i));
    }
    let built = b.finish().unwrap();
    assert_eq!(built.len(), n as usize);
    assert_eq!(built.as_filter_ref().len(), n as usize);
    assert!((0..n).all(|i| built.contains(&key(i))));
    let back = CuckooFilter::from_bytes(&built.to_bytes()).unwrap();
    assert_eq!(back.len(), n as usize);
    assert!(!built.is_empty());
    // Byte keys, batched, answer as one by one; most absent keys are absent.
    let keys: Vec<[u8; 16]> = (n - 1000..n + 1000).map(key).collect();
    let mut out = vec![false; keys.len()];
    built.contains_batch_keys(&keys, &mut out);
    assert!(keys.iter().zip(&out).all(|(k, &o)| o == built.contains(k)));
    assert!(out[..1000].iter().all(|&o| o));
    let absent_hits = out[1000..].iter().filter(|&&o| o).count();
    // A 1 % target: about 10 expected (σ ≈ 3).
    assert!(absent_hits < 30, "{absent_hits} of 1000 absent keys found");
    // Removing every key empties it.
    let mut emptied = built.clone();
    assert!((0..n).all(|i| emptied.remove(&key(i))));
    assert!(emptied.is_empty());
}
