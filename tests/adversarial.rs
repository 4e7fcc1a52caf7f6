//! Adversarial keys: keys that share both buckets and the fingerprint under one seed, found by
//! brute force with an independent implementation of FORMAT.md §2 (held to the library's
//! placements first). A filter takes `2b` of them and refuses the next with `Full`, losing
//! nothing; another seed separates them; and a growable filter flooded with keys that share
//! everything a stretch level stores of them (§2.2) — keys found for its newest level, hashes
//! crafted for any level, or colliding keys mixed with ordinary ones — counts each class's keys
//! as copies of its first (§3.5), refuses the one past `2b` as a copy, never starts a level for
//! them, and stops at its `max_bytes` with `Full`, never growing past it.
//! (The stretch-level model and its crafted hashes are in `tests/common/crafted.rs`, shared with
//! the tests that start new levels with distinct keys.)

mod common;

use common::crafted::Stretch;
use common::spec::fmix64;
use cuckoo_sst::{Config, CuckooFilter, Encoding, Error, KeyHash, ScalableCuckooFilter};

/// FORMAT.md §2, written from the document: a key hash's place in a table of `m` buckets with
/// `f`-bit fingerprints under seed `seed`.
#[derive(Clone, Copy, Debug)]
struct Table {
    seed: u64,
    m: u64,
    f: u32,
}

fn range(x: u64, n: u64) -> u64 {
    (x * n) >> 32
}

impl Table {
    /// `(i1, fp, i2)` of a key hash.
    fn place(&self, h: u64) -> (u64, u32, u64) {
        let s = fmix64(h ^ self.seed);
        let i1 = range(s >> 32, self.m);
        let fp = range(s & 0xFFFF_FFFF, (1u64 << self.f) - 1) + 1;
        let o = 2 * range(fp.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32, self.m / 2) + 1;
        let i2 = (o + self.m - i1) % self.m;
        (i1, fp as u32, i2)
    }

    /// The table of a filter's level.
    fn of(seed: u64, view: cuckoo_sst::FilterRef<'_>) -> Table {
        Table {
            seed,
            m: view.num_buckets() as u64,
            f: view.fingerprint_bits(),
        }
    }
}

/// Key `n` of family `tag`.
fn key(tag: u64, n: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&tag.to_le_bytes());
    k[8..].copy_from_slice(&n.to_le_bytes());
    k
}

/// `need` distinct keys of family `tag` with one `(i1, fp)` in `t`, by brute force: hash
/// keys, sort them by place, take the first run long enough; double the keys until one is.
fn colliding_keys(t: &Table, tag: u64, need: usize) -> Vec<[u8; 16]> {
    let mut n = 1u64 << 14;
    loop {
        let mut placed: Vec<(u64, u64)> = (0..n)
            .map(|i| {
                let (i1, fp, _) = t.place(KeyHash::of(&key(tag, i)).to_u64());
                (i1 << 32 | fp as u64, i)
            })
            .collect();
        placed.sort_unstable();
        for run in placed.chunk_by(|a, b| a.0 == b.0) {
            if run.len() >= need {
                return run[..need].iter().map(|&(_, i)| key(tag, i)).collect();
            }
        }
        n *= 2;
        assert!(n <= 1 << 24, "no {need} colliding keys in {n} for {t:?}");
    }
}

/// The model agrees with the library: the same key inserted `2b` times into an empty table
/// fills exactly buckets `i1` and `i2` with `fp` (read from the file bytes, FORMAT.md §3), for
/// plain and packed widths, odd and power-of-two bucket counts, several seeds.
#[test]
fn the_model_places_keys_where_the_library_does() {
    let mut checked = 0;
    for (b, f, e, capacity) in [
        (4, 8, Encoding::Plain, 1000),
        (2, 16, Encoding::Plain, 333),
        (8, 32, Encoding::Plain, 100),
        (4, 7, Encoding::Packed, 777),
        (2, 13, Encoding::Packed, 50),
        (8, 20, Encoding::Packed, 5000),
    ] {
        for seed in [0, 1, 0xDEAD_BEEF, u64::MAX] {
            let config = Config::new(capacity)
                .bucket_size(b)
                .fingerprint_bits(f)
                .encoding(e)
                .seed(seed);
            let empty = CuckooFilter::new(config).unwrap();
            let t = Table::of(seed, empty.as_filter_ref());
            assert_eq!(t.m, empty.num_buckets() as u64);
            for i in 0..60 {
                let k = key(0x6d6f64656c, i);
                let (i1, fp, i2) = t.place(KeyHash::of(&k).to_u64());
                assert_ne!(i1, i2);
                let mut filter = empty.clone();
                for _ in 0..2 * b {
                    filter.insert(&k).unwrap();
                }
                assert!(matches!(filter.insert(&k), Err(Error::Full)));
                let bytes = filter.to_bytes();
                // Level 0's region_offset (FORMAT.md §5): after the level table and, from
                // version 2 on, the checksum table.
                let offset = u64::from_le_bytes(bytes[128..136].try_into().unwrap()) as usize;
                let region = &bytes[offset..];
                let slot = |bucket: u64, s: usize| -> u32 {
                    let bit = (bucket as usize * b + s) * f as usize;
                    let mut v = 0u64;
                    for j in 0..f as usize {
                        let p = bit + j;
                        v |= ((region[p / 8] >> (p % 8)) as u64 & 1) << j;
                    }
                    v as u32
                };
                for bucket in 0..t.m {
                    for s in 0..b {
                        let want = if bucket == i1 || bucket == i2 { fp } else { 0 };
                        assert_eq!(
                            slot(bucket, s),
                            want,
                            "b={b} f={f} {e:?} seed {seed}: bucket {bucket}"
                        );
                    }
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 6 * 4 * 60);
}

/// Half-full filters in several layouts: `2b` colliding keys go in, the next is refused with
/// `Full` and changes no byte, every key inserted before is still found; under another seed
/// the same keys all go in.
#[test]
fn a_bucket_pair_takes_2b_copies_then_full_with_nothing_lost() {
    for (b, f, e) in [
        (2, 8, Encoding::Plain),
        (4, 8, Encoding::Plain),
        (8, 8, Encoding::Plain),
        (4, 7, Encoding::Packed),
        (4, 7, Encoding::SemiSorted),
    ] {
        let config = |seed| {
            Config::new(1000)
                .bucket_size(b)
                .fingerprint_bits(f)
                .encoding(e)
                .seed(seed)
        };
        let what = format!("b={b} f={f} {e:?}");
        let mut filter = CuckooFilter::new(config(7)).unwrap();
        let t = Table::of(7, filter.as_filter_ref());
        let bad = colliding_keys(&t, 0xBAD, 2 * b + 1);
        // They collide for the library too: one of them makes all the others "present".
        let mut one = CuckooFilter::new(config(7)).unwrap();
        one.insert(&bad[0]).unwrap();
        assert!(bad.iter().all(|k| one.count(k) == 1), "{what}");

        let ordinary: Vec<[u8; 16]> = (0..500).map(|i| key(0x600D, i)).collect();
        for k in &ordinary {
            filter.insert(k).unwrap();
        }
        for k in &bad[..2 * b] {
            filter.insert(k).unwrap();
        }
        let before = filter.clone();
        let bytes = filter.to_bytes();
        assert!(
            matches!(filter.insert(&bad[2 * b]), Err(Error::Full)),
            "{what}"
        );
        assert_eq!(filter, before, "{what}");
        assert_eq!(filter.to_bytes(), bytes, "{what}");
        assert_eq!(filter.len(), 500 + 2 * b, "{what}");
        assert!(ordinary.iter().all(|k| filter.contains(k)), "{what}");
        assert!(bad.iter().all(|k| filter.count(k) >= 2 * b), "{what}");
        // Refused again, and `insert_unique` sees it as present (a false positive).
        assert!(
            matches!(filter.insert(&bad[2 * b]), Err(Error::Full)),
            "{what}"
        );
        assert!(!filter.insert_unique(&bad[2 * b]).unwrap(), "{what}");

        // Another seed scatters them.
        let mut other = CuckooFilter::new(config(8)).unwrap();
        for k in ordinary.iter().chain(&bad) {
            other.insert(k).unwrap();
        }
        let t8 = Table::of(8, other.as_filter_ref());
        let mut places: Vec<(u64, u32)> = bad
            .iter()
            .map(|k| {
                let (i1, fp, _) = t8.place(KeyHash::of(k).to_u64());
                (i1, fp)
            })
            .collect();
        places.sort_unstable();
        places.dedup();
        assert_eq!(places.len(), bad.len(), "{what}");
        assert!(bad.iter().all(|k| other.count(k) < 2 * b), "{what}");
    }
}

/// `need` distinct keys of family `tag` with one place in the stretch level `t`, by brute
/// force, as [`colliding_keys`] does for a classic table.
fn stretch_colliding_keys(t: &Stretch, tag: u64, need: usize) -> Vec<[u8; 16]> {
    let mut n = 1u64 << 16;
    loop {
        let mut placed: Vec<((u64, u32, u64, u32), u64)> = (0..n)
            .map(|i| (t.place(KeyHash::of(&key(tag, i)).to_u64()), i))
            .collect();
        placed.sort_unstable();
        for run in placed.chunk_by(|a, b| a.0 == b.0) {
            if run.len() >= need {
                return run[..need].iter().map(|&(_, i)| key(tag, i)).collect();
            }
        }
        n *= 2;
        assert!(n <= 1 << 24, "no {need} colliding keys in {n} for {t:?}");
    }
}

/// The model agrees with the library: keys of one place are all "present" once one is in, and
/// the level cannot tell them apart, so it counts the next `2b − 1` as copies of the first
/// (FORMAT.md §3.5: no slot, no level) and refuses the one after with `TooManyCopies`,
/// changing nothing — found anyway.
#[test]
fn the_stretch_model_predicts_the_library() {
    for seed in [0, 21, u64::MAX] {
        let mut f = ScalableCuckooFilter::new(Config::new(100).seed(seed)).unwrap();
        for i in 0..500 {
            f.insert(&key(0x600D, i)).unwrap();
        }
        let t = Stretch::of(seed, f.level(0).unwrap());
        let hashes = t.crafted(seed.wrapping_mul(7), 9);
        let levels = f.levels();
        f.insert_hash(hashes[0]).unwrap();
        assert!(hashes.iter().all(|&h| f.count_hash(h) == 1), "seed {seed}");
        let one_slot = f.size_in_bytes();
        for &h in &hashes[1..8] {
            f.insert_hash(h).unwrap();
        }
        let before = f.clone();
        assert!(
            matches!(f.insert_hash(hashes[8]), Err(Error::TooManyCopies)),
            "seed {seed}"
        );
        assert_eq!(f, before);
        assert!(hashes.iter().all(|&h| f.count_hash(h) == 8), "seed {seed}");
        assert!(hashes.iter().all(|&h| f.contains_hash(h)), "seed {seed}");
        assert_eq!(f.levels(), levels, "seed {seed}");
        // One slot and one record of copies: a line of records at most.
        assert!(f.size_in_bytes() <= one_slot + 64, "seed {seed}");
        let keys = stretch_colliding_keys(&t, seed, 3);
        let mut g = ScalableCuckooFilter::new(Config::new(100).seed(seed)).unwrap();
        for i in 0..500 {
            g.insert(&key(0x600D, i)).unwrap();
        }
        g.insert(&keys[0]).unwrap();
        assert!(keys.iter().all(|k| g.count(k) == 1), "seed {seed}");
    }
}

/// How an adversary feeds a growable filter.
#[derive(Clone, Copy, Debug)]
enum Flood {
    /// Byte keys found by brute force for the newest level: classes of `2b + 1` that share
    /// everything the level stores of them.
    NewestLevelKeys,
    /// Hashes crafted for the newest level, whatever its size.
    NewestLevelHashes,
    /// Keys colliding in the first level only, then ordinary keys (which grow the newest level
    /// in place).
    FirstLevelThenOrdinary,
}

/// Floods `config`'s filter with `rounds` batches, or until it refuses an insert with `Full`;
/// returns the filter and the classes' copies refused, checking on the way that a refusal
/// changed nothing and that every hash, accepted or refused as a copy, is found.
fn flood(config: Config, how: Flood, rounds: u64) -> (ScalableCuckooFilter, usize) {
    let seed = 21;
    let mut f = ScalableCuckooFilter::new(config.seed(seed)).unwrap();
    let mut accepted: Vec<KeyHash> = Vec::new();
    let mut copies = 0;
    let mut insert = |f: &mut ScalableCuckooFilter, h: KeyHash| -> bool {
        let before = f.clone();
        match f.insert_hash(h) {
            Ok(()) => {
                accepted.push(h);
                true
            }
            Err(Error::TooManyCopies) => {
                assert_eq!(*f, before, "{how:?}: a refused copy changed the filter");
                assert!(f.contains_hash(h), "{how:?}: a refused copy is not found");
                copies += 1;
                true
            }
            Err(Error::Full) => {
                assert_eq!(*f, before, "{how:?}: a refused insert changed the filter");
                false
            }
            Err(e) => panic!("{how:?}: {e}"),
        }
    };
    'flood: for round in 1..=rounds {
        let newest = f.level(f.levels() - 1).unwrap();
        let t = Stretch::of(seed, newest);
        let b = newest.bucket_size();
        let batch: Vec<KeyHash> = match how {
            Flood::NewestLevelKeys => stretch_colliding_keys(&t, round, 2 * b + 1)
                .iter()
                .map(|k| KeyHash::of(k))
                .collect(),
            Flood::NewestLevelHashes => t.crafted(round.wrapping_mul(0x9E37_79B9), 2 * b + 1),
            Flood::FirstLevelThenOrdinary if round == 1 => stretch_colliding_keys(&t, 0, 2 * b + 1)
                .iter()
                .map(|k| KeyHash::of(k))
                .collect(),
            Flood::FirstLevelThenOrdinary => (0..64).map(|i| KeyHash::of(&key(round, i))).collect(),
        };
        for h in batch {
            if !insert(&mut f, h) {
                break 'flood;
            }
        }
    }
    println!(
        "{how:?}: {} inserts taken, {copies} refused as copies, {} levels, {} bytes",
        accepted.len(),
        f.levels(),
        f.size_in_bytes()
    );
    assert!(accepted.iter().all(|&h| f.contains_hash(h)), "{how:?}");
    assert_eq!(f.len(), accepted.len(), "{how:?}");
    (f, copies)
}

/// Classes of `2b + 1` keys the level cannot tell apart never start a level: each takes one
/// slot and counts `2b − 1` copies, and its last is refused as a copy.
#[test]
fn a_flooded_chain_keeps_one_level() {
    for how in [Flood::NewestLevelKeys, Flood::NewestLevelHashes] {
        let rounds = match how {
            Flood::NewestLevelKeys => 40,
            _ => 300,
        };
        let (f, copies) = flood(Config::new(16).max_levels(6), how, rounds);
        assert_eq!(f.levels(), 1, "{how:?}");
        // Most classes' last key is refused as a copy; a class whose buckets split while it
        // goes in is told apart from there on, and may be taken whole.
        assert!(copies as u64 > rounds / 2, "{how:?}: {copies} refused");
    }
}

/// Flooded to its `max_bytes`, a chain refuses the insert that would pass it (`Full`). (Byte
/// keys found by brute force reach the cap as crafted hashes do, a slot and a record per class,
/// but a search per class makes that minutes: `a_flooded_chain_keeps_one_level` feeds them.)
#[test]
fn a_flooded_chain_stops_at_max_bytes() {
    for how in [Flood::NewestLevelHashes, Flood::FirstLevelThenOrdinary] {
        for max_bytes in [2048, 8192] {
            let (f, _) = flood(Config::new(16).max_bytes(max_bytes), how, 10_000);
            assert!(
                f.size_in_bytes() as u64 <= max_bytes,
                "{how:?}: {} bytes",
                f.size_in_bytes()
            );
            // It stopped for the limit, not before: within a level's smallest region (one
            // cache line, a descriptor and a checksum line), or a line of records, of the cap.
            assert!(
                f.size_in_bytes() as u64 + 3 * 64 + 64 > max_bytes || f.levels() > 1,
                "{how:?}: stopped at {} bytes",
                f.size_in_bytes()
            );
        }
    }
}

/// Without limits, crafted classes cost the filter what ordinary keys do, and a record of
/// copies each: a thousand classes of `2b + 1` crafted hashes leave one level, a slot and a
/// 12-byte record per class.
#[test]
fn without_limits_crafted_classes_add_no_level() {
    let seed = 33;
    let mut f = ScalableCuckooFilter::new(Config::new(16).seed(seed)).unwrap();
    let (mut taken, mut refused) = (0, 0);
    for round in 0..1000u64 {
        let newest = f.level(f.levels() - 1).unwrap();
        let t = Stretch::of(seed, newest);
        for h in t.crafted(round, 2 * newest.bucket_size() + 1) {
            match f.insert_hash(h) {
                Ok(()) => taken += 1,
                Err(Error::TooManyCopies) => refused += 1,
                Err(e) => panic!("{e}"),
            }
        }
    }
    assert_eq!(f.levels(), 1);
    assert_eq!(taken + refused, 9000);
    assert!(refused >= 1000, "{refused} refused");
    assert_eq!(f.len(), taken);
    // A slot per class (about 2 kB at 16 bits a slot and 80 % load) and a record of copies
    // (12 bytes), or fields of 3 bits per slot once those are smaller.
    assert!(
        f.size_in_bytes() < 4_000 + 12_000 + 1024,
        "{} bytes",
        f.size_in_bytes()
    );
}
