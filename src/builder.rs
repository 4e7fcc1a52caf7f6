//! `FilterBuilder`: an exactly sized filter for an SSTable flush or compaction, where the key
//! count is known only at the end.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::filter::{CuckooFilter, start_bucket};
use crate::hash::{self, KeyHash, SplitMix64};
use crate::table::raw::Region;
use crate::table::{Codec, Geometry, with_codec};
use crate::view::locate_seeded;

/// Builds a [`CuckooFilter`] sized exactly for the distinct keys it was given, for an SSTable
/// written by a flush or a compaction: the key count is known only when the table is done, and
/// the table's filter should carry no growth overhead.
///
/// It keeps the 64-bit hash of every key added — **8 bytes per key** while the table is being
/// written, plus, in [`finish`](Self::finish), the filter itself — then sorts them, drops
/// duplicates (several versions of one user key count once) and places them in a filter sized
/// for the distinct count. Sorted by the filter's seeded hash, the keys come in first-bucket
/// order, so a first pass fills the table front to back (about 80 % of the keys land in their
/// first bucket, with sequential memory access; where more keys want a bucket than it holds,
/// those whose second bucket is less in demand move on); a second pass, in second-bucket
/// order, places about half of the rest; a third moves one resident aside for most of the
/// keys left, with prefetched random access; only the last percent or two take relocation
/// walks, interleaved 16 at a time. (`cargo bench --bench peers -- build` measures it.)
///
/// If placement fails at that exact size (rare: the tables are sized below the load where
/// inserts start failing), it retries deterministically with another seed, then with tables
/// 2 % larger each time, up to 12 tries, rather than failing the flush.
///
/// ```
/// use cuckoo_sst::{Config, FilterBuilder};
///
/// let mut b = FilterBuilder::new(Config::new(0).false_positive_rate(0.001));
/// for version in 0..3 {
///     for user_key in 0..10_000u32 {
///         b.add_key(&user_key.to_be_bytes()); // the same key, once per version
///     }
/// }
/// let filter = b.finish()?;
/// assert_eq!(filter.len(), 10_000);
/// assert!((0..10_000u32).all(|k| filter.contains(&k.to_be_bytes())));
/// # Ok::<(), cuckoo_sst::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct FilterBuilder {
    config: Config,
    hashes: Vec<u64>,
}

/// Deterministic retries before `finish` gives up: 4 seeds at the exact size, then 8 with
/// tables 2 % larger each time.
const TRIES: u32 = 12;
const SAME_SIZE_TRIES: u32 = 4;

impl FilterBuilder {
    /// A builder whose filter will follow `config`: its false-positive rate, layout, seed and
    /// kicks. `config`'s capacity is only a hint to reserve memory for the hashes; the filter is
    /// sized for the distinct keys actually added.
    ///
    /// ```
    /// let b = cuckoo_sst::FilterBuilder::new(cuckoo_sst::Config::new(1_000));
    /// assert!(b.is_empty());
    /// ```
    pub fn new(config: Config) -> FilterBuilder {
        let hashes = Vec::with_capacity(config.capacity.min(1 << 24));
        FilterBuilder { config, hashes }
    }

    /// Adds a key (duplicates are dropped in [`finish`](Self::finish)).
    ///
    /// ```
    /// let mut b = cuckoo_sst::FilterBuilder::new(cuckoo_sst::Config::new(0));
    /// b.add_key(b"k");
    /// assert_eq!(b.len(), 1);
    /// ```
    pub fn add_key(&mut self, key: &[u8]) {
        self.add_hash(KeyHash::of(key));
    }

    /// Adds a key by its hash ([`KeyHash::of`]).
    ///
    /// ```
    /// let mut b = cuckoo_sst::FilterBuilder::new(cuckoo_sst::Config::new(0));
    /// b.add_hash(cuckoo_sst::KeyHash::of(b"k"));
    /// assert!(b.finish()?.contains(b"k"));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn add_hash(&mut self, h: KeyHash) {
        self.hashes.push(h.to_u64());
    }

    /// Keys added so far, duplicates included.
    ///
    /// ```
    /// let mut b = cuckoo_sst::FilterBuilder::new(cuckoo_sst::Config::new(0));
    /// b.add_key(b"k");
    /// b.add_key(b"k");
    /// assert_eq!(b.len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    /// Whether no key was added.
    ///
    /// ```
    /// assert!(cuckoo_sst::FilterBuilder::new(cuckoo_sst::Config::new(0)).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// The filter, sized for the distinct keys added. `Err` for an invalid configuration, or
    /// [`Error::Full`] if every retry failed to place them (not seen in testing).
    ///
    /// ```
    /// use cuckoo_sst::{Config, CuckooFilter, FilterBuilder};
    /// let mut b = FilterBuilder::new(Config::new(0));
    /// for k in 0..50_000u32 {
    ///     b.add_key(&k.to_le_bytes());
    /// }
    /// let built = b.finish()?;
    /// // The same size as a filter configured for exactly 50 000 keys.
    /// assert_eq!(built.size_in_bytes(), CuckooFilter::new(Config::new(50_000))?.size_in_bytes());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn finish(mut self) -> Result<CuckooFilter> {
        // Work on the seeded hashes (a bijection of the key hashes): sorted, they are in
        // first-bucket order for the filter's seed, and equal keys are adjacent.
        let mut seed = self.config.seed;
        seeded_in_place(&mut self.hashes, seed);
        self.hashes.sort_unstable();
        self.hashes.dedup();
        let distinct = self.hashes.len();
        let mut last_error = None;
        for attempt in 0..TRIES {
            let grow = attempt.saturating_sub(SAME_SIZE_TRIES - 1) as f64 * 0.02;
            let capacity = (distinct as f64 * (1.0 + grow)).ceil() as usize;
            let try_seed = self
                .config
                .seed
                .wrapping_add((attempt as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            if try_seed != seed {
                reseed_in_place(&mut self.hashes, seed, try_seed);
                self.hashes.sort_unstable();
                seed = try_seed;
            }
            let config = self.config.clone().capacity(capacity).seed(seed);
            let mut f = CuckooFilter::new(config)?;
            match place_all(&mut f, &self.hashes) {
                Ok(()) => {
                    debug_assert_eq!(f.len(), distinct);
                    return Ok(f);
                }
                Err(e @ Error::Full) => last_error = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last_error.unwrap_or(Error::Full))
    }
}

/// Places the keys with the sorted, distinct seeded hashes `seeded` in the empty filter `f`, in
/// four passes. The first two read and write the table in bucket order, the third prefetches
/// what it reads; only the keys left after them (a fraction of a percent) are inserted with
/// the relocation walk, each waiting on memory at every step.
///
/// 1. Keys sorted by seeded hash come in first-bucket order. Each bucket takes `b` of the keys
///    whose first bucket it is: when more want it, those whose second bucket fewer keys want
///    first move on, the others stay.
/// 2. The keys that moved on, sorted by second bucket, fill the room left there.
/// 3. For each key left (both its buckets full), one resident of its buckets moves to its own
///    other bucket if that has room, and the key takes its slot. The buckets are prefetched two
///    steps ahead: first the key's, then its residents' other buckets.
/// 4. The rest are inserted one by one, with the relocation walk of
///    [`CuckooFilter::insert`].
fn place_all(f: &mut CuckooFilter, seeded: &[u64]) -> Result<()> {
    let max_kicks = f.max_kicks();
    let (geo, t) = f.table_mut();
    let placed = with_codec!(geo.layout(), c => {
        let rest = two_passes(&c, &geo, t, seeded);
        // Moving a resident is a relocation: none are allowed with `max_kicks` 0.
        let stuck = if max_kicks == 0 {
            rest
        } else {
            one_move(&c, &geo, t, &rest)
        };
        walks(&c, &geo, t, &stuck, max_kicks)
    });
    f.add_placed(seeded.len() as u64);
    placed
}

/// Whether bucket `i` of the table `t` has an empty slot: the lookup kernel's count of zeros,
/// cheaper than decoding the bucket.
#[inline(always)]
fn has_room<C: Codec>(c: &C, geo: &Geometry, t: &[u8], i: u64) -> bool {
    Region::new(t, geo).is_some_and(|r| c.count_in(r, i, 0) > 0)
}

/// Pass 4 of [`place_all`]: the relocation walk of [`CuckooFilter::insert`] for every key of
/// `keys`, 16 walks at a time, interleaved step by step so that each walk's next buckets are
/// prefetched while the others step. A walk that gives up after `max_kicks` evictions fails the
/// whole placement (nothing is rolled back: the builder starts over with another seed).
fn walks<C: Codec>(
    c: &C,
    geo: &Geometry,
    t: &mut [u8],
    keys: &[u64],
    max_kicks: u32,
) -> Result<()> {
    const WALKS: usize = 16;
    let m = geo.num_buckets();
    let b = c.slots();
    let prefetch = |t: &[u8], i: u64| crate::prefetch::prefetch(t, c.bucket_byte(i));
    /// What a walk does next.
    #[derive(Clone, Copy, PartialEq)]
    enum Phase {
        /// Choose the bucket to start from (both prefetched).
        Start,
        /// Prefetch the other buckets of the residents of `bucket` (prefetched).
        LookAhead,
        /// Move a resident to its other bucket, else evict one and carry it on.
        Step,
        Done,
    }
    #[derive(Clone, Copy)]
    struct Walk {
        phase: Phase,
        i1: u64,
        i2: u64,
        bucket: u64,
        homeless: u32,
        kicks: u32,
        rng: SplitMix64,
    }
    let idle = Walk {
        phase: Phase::Done,
        i1: 0,
        i2: 0,
        bucket: 0,
        homeless: 0,
        kicks: 0,
        rng: SplitMix64::new(0),
    };
    let mut walks = [idle; WALKS];
    let mut next = keys.iter();
    let mut active = 0;
    loop {
        for w in walks.iter_mut() {
            if w.phase == Phase::Done {
                let Some(&seeded) = next.next() else { continue };
                let s = locate_seeded(geo, seeded);
                prefetch(t, s.i1);
                prefetch(t, s.i2);
                *w = Walk {
                    phase: Phase::Start,
                    i1: s.i1,
                    i2: s.i2,
                    bucket: 0,
                    homeless: s.fp,
                    kicks: 0,
                    rng: SplitMix64::new(seeded),
                };
                active += 1;
                continue;
            }
            match w.phase {
                Phase::Start => {
                    // No `try_put` first: the keys given have both buckets full (the earlier
                    // passes left them for that reason), and a walk never empties a slot.
                    w.bucket = start_bucket(&mut w.rng, w.i1, w.i2);
                    w.phase = Phase::LookAhead;
                }
                Phase::LookAhead => {
                    let residents = c.read(t, w.bucket);
                    for &r in &residents[..b] {
                        prefetch(t, hash::alt_bucket(w.bucket, r, m));
                    }
                    w.phase = Phase::Step;
                }
                Phase::Step => {
                    if w.kicks == max_kicks {
                        return Err(Error::Full);
                    }
                    let mut residents = c.read(t, w.bucket);
                    let moved = (0..b).find(|&slot| {
                        let r = residents[slot];
                        let alt = hash::alt_bucket(w.bucket, r, m);
                        has_room(c, geo, t, alt) && c.try_put(t, alt, alt, r)
                    });
                    if let Some(slot) = moved {
                        residents[slot] = w.homeless;
                        c.store(t, w.bucket, slot, &residents);
                        w.phase = Phase::Done;
                        active -= 1;
                        continue;
                    }
                    let slot = w.rng.below(b as u64) as usize;
                    let victim = residents[slot];
                    residents[slot] = w.homeless;
                    c.store(t, w.bucket, slot, &residents);
                    w.homeless = victim;
                    // The victim's other bucket is full: the search above found no resident,
                    // the victim included, whose other bucket had room. The next step looks
                    // one move ahead from there.
                    w.bucket = hash::alt_bucket(w.bucket, victim, m);
                    w.kicks += 1;
                    prefetch(t, w.bucket);
                    w.phase = Phase::LookAhead;
                }
                Phase::Done => {}
            }
        }
        if active == 0 && next.len() == 0 {
            return Ok(());
        }
    }
}

/// Prefetches for [`one_move`] at key `k` of `keys`: two steps ahead the buckets of key
/// `k + 2·AHEAD`, one step ahead the other buckets of the residents of key `k + AHEAD`'s
/// buckets (by then in cache). Speed only: nothing is written.
fn prefetch_one_move_ahead<C: Codec>(c: &C, geo: &Geometry, t: &[u8], keys: &[u64], k: usize) {
    const AHEAD: usize = 8;
    let m = geo.num_buckets();
    let prefetch = |i: u64| crate::prefetch::prefetch(t, c.bucket_byte(i));
    let slot_of = |k: usize| keys.get(k).map(|&s| locate_seeded(geo, s));
    if let Some(s) = slot_of(k + 2 * AHEAD) {
        prefetch(s.i1);
        prefetch(s.i2);
    }
    if let Some(s) = slot_of(k + AHEAD) {
        for i in [s.i1, s.i2] {
            let residents = c.read(t, i);
            for &r in &residents[..c.slots()] {
                prefetch(hash::alt_bucket(i, r, m));
            }
        }
    }
}

/// Pass 3 of [`place_all`]: places each key of `keys` by moving one resident of its buckets to
/// the resident's other bucket, where there is room; returns the keys it could not place.
fn one_move<C: Codec>(c: &C, geo: &Geometry, t: &mut [u8], keys: &[u64]) -> Vec<u64> {
    let m = geo.num_buckets();
    let b = c.slots();
    let mut stuck = Vec::new();
    for (k, &key) in keys.iter().enumerate() {
        prefetch_one_move_ahead(c, geo, t, keys, k);
        let s = locate_seeded(geo, key);
        let mut placed = c.try_put(t, s.i1, s.i2, s.fp);
        'buckets: for i in [s.i1, s.i2] {
            if placed {
                break;
            }
            let mut residents = c.read(t, i);
            for slot in 0..b {
                let r = residents[slot];
                let alt = hash::alt_bucket(i, r, m);
                if has_room(c, geo, t, alt) && c.try_put(t, alt, alt, r) {
                    residents[slot] = s.fp;
                    c.store(t, i, slot, &residents);
                    placed = true;
                    break 'buckets;
                }
            }
        }
        if !placed {
            stuck.push(key);
        }
    }
    stuck
}

/// Passes 1 and 2 of [`place_all`] for a known codec; returns the keys they could not place.
fn two_passes<C: Codec>(c: &C, geo: &Geometry, t: &mut [u8], seeded: &[u64]) -> Vec<u64> {
    let second = first_pass(c, geo, t, seeded);
    second_pass(c, geo, t, second)
}

/// Pass 1 of [`place_all`]; returns the keys it moves on, with their second bucket.
fn first_pass<C: Codec>(c: &C, geo: &Geometry, t: &mut [u8], seeded: &[u64]) -> Vec<(u32, u64)> {
    let b = c.slots();
    let m = geo.num_buckets();
    let first = |s: u64| hash::first_bucket(s, m);
    // How many keys have each bucket as their first (saturating): a bucket that many keys
    // want first has little room for keys that want it second.
    let mut demand = vec![0u8; m as usize];
    for &s in seeded {
        let d = &mut demand[first(s) as usize];
        *d = d.saturating_add(1);
    }
    // Pass 1: runs of keys that share a first bucket. A run longer than the bucket keeps the
    // keys whose second bucket is most in demand and leaves the others to pass 2.
    let mut second: Vec<(u32, u64)> = Vec::new();
    // A key of an overfull run as one number that orders like (demand of its second bucket,
    // fingerprint, seeded hash): within a run the second bucket is a function of the
    // fingerprint, so no more is needed to rank the keys, and distinct keys never tie.
    let mut run: Vec<u128> = Vec::new();
    let mut at = 0;
    while at < seeded.len() {
        let i1 = first(seeded[at]);
        let len = seeded[at..]
            .iter()
            .position(|&s| first(s) != i1)
            .unwrap_or(seeded.len() - at);
        let keys = &seeded[at..at + len];
        at += len;
        let mut slots = [0u32; 8];
        if len <= b {
            for (slot, &s) in slots.iter_mut().zip(keys) {
                *slot = hash::fingerprint(s, geo.fp_bits());
            }
        } else {
            run.clear();
            run.extend(keys.iter().map(|&s| {
                let fp = hash::fingerprint(s, geo.fp_bits());
                let i2 = hash::alt_bucket(i1, fp, m);
                (demand[i2 as usize] as u128) << 96 | (fp as u128) << 64 | s as u128
            }));
            run.sort_unstable_by(|x, y| y.cmp(x));
            for (slot, &k) in slots.iter_mut().zip(&run[..b]) {
                *slot = (k >> 64) as u32;
            }
            for &k in &run[b..] {
                let fp = (k >> 64) as u32;
                second.push((hash::alt_bucket(i1, fp, m) as u32, k as u64));
            }
        }
        c.store_all(t, i1, &slots);
    }
    second
}

/// Pass 2 of [`place_all`]; returns the keys it could not place.
fn second_pass<C: Codec>(
    c: &C,
    geo: &Geometry,
    t: &mut [u8],
    mut second: Vec<(u32, u64)>,
) -> Vec<u64> {
    let b = c.slots();
    let mut rest = Vec::new();
    // In second-bucket order (ties by hash, so the order is the same on every run).
    second.sort_unstable();
    let mut keys = second.iter().peekable();
    while let Some(&(i2, s)) = keys.next() {
        let bucket = i2 as u64;
        let mut slots = c.read(t, bucket);
        let mut changed = false;
        let mut put = |s: u64| match slots[..b].iter().position(|&v| v == 0) {
            Some(at) => {
                slots[at] = locate_seeded(geo, s).fp;
                changed = true;
            }
            None => rest.push(s),
        };
        put(s);
        while let Some(&(_, s)) = keys.next_if(|&&(next, _)| next == i2) {
            put(s);
        }
        if changed {
            c.store_all(t, bucket, &slots);
        }
    }
    rest
}

/// Replaces every key hash `h` with the filter's seeded hash `fmix64(h ^ seed)`.
fn seeded_in_place(hashes: &mut [u64], seed: u64) {
    for h in hashes {
        *h = hash::seeded(KeyHash::from_u64(*h), seed);
    }
}

/// Turns hashes seeded with `old` into hashes seeded with `new`.
fn reseed_in_place(hashes: &mut [u64], old: u64, new: u64) {
    for h in hashes {
        *h = hash::fmix64(hash::fmix64_inverse(*h) ^ old ^ new);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reseeding_equals_seeding_from_scratch() {
        let keys: Vec<u64> = (0..1000u64)
            .map(|i| i.wrapping_mul(0x1234_5678_9ABC_DEF1))
            .collect();
        let mut a = keys.clone();
        seeded_in_place(&mut a, 1);
        reseed_in_place(&mut a, 1, 99);
        let mut b = keys;
        seeded_in_place(&mut b, 99);
        assert_eq!(a, b);
    }

    /// The type's docs say about 80 % of the keys land in their first bucket: at 95 % load a
    /// bucket's share of keys is about Poisson(3.8), of which it keeps at most 4, about 82 %.
    /// Each later pass places some of the rest, and together they place every key.
    #[test]
    fn each_pass_places_what_it_should() {
        let n = 200_000u64;
        let config = Config::new(n as usize).seed(3);
        let mut f = CuckooFilter::new(config.clone()).unwrap();
        let mut hashes: Vec<u64> = (0..n)
            .map(|i| KeyHash::of(&i.to_le_bytes()).to_u64())
            .collect();
        seeded_in_place(&mut hashes, config.seed);
        hashes.sort_unstable();
        let (geo, t) = f.table_mut();
        let c = match geo.layout() {
            crate::table::Layout::Semi10(c) => c,
            other => panic!("the default layout is {other:?}"),
        };
        let second = first_pass(&c, &geo, t, &hashes);
        let placed = 1.0 - second.len() as f64 / n as f64;
        assert!((0.80..0.85).contains(&placed), "{placed}");
        // A key moved on found its first bucket full, and buckets only fill up.
        let r = Region::new(t, &geo).unwrap();
        for &(i2, s) in &second {
            let k = locate_seeded(&geo, s);
            assert_eq!(k.i2, i2 as u64);
            assert_eq!(
                c.count_in(r, k.i1, 0),
                0,
                "a key moved on from a bucket with room"
            );
        }
        let moved = second.len();
        let rest = second_pass(&c, &geo, t, second);
        assert!(
            rest.len() < moved / 2,
            "{} of {moved} left after pass 2",
            rest.len()
        );
        let stuck = one_move(&c, &geo, t, &rest);
        assert!(
            stuck.len() < rest.len(),
            "{} of {} stuck",
            stuck.len(),
            rest.len()
        );
        walks(&c, &geo, t, &stuck, 500).unwrap();
        f.add_placed(n);
        let (geo, t) = f.table_mut();
        assert_eq!(crate::table::scan(&geo, t), Ok(n));
        assert!((0..n).all(|i| f.contains(&i.to_le_bytes())));
    }

    #[test]
    fn an_empty_builder_gives_an_empty_filter() {
        let f = FilterBuilder::new(Config::new(0)).finish().unwrap();
        assert!(f.is_empty());
        assert!(!f.contains(b"x"));
    }

    #[test]
    fn invalid_configs_surface_in_finish() {
        let mut b = FilterBuilder::new(Config::new(10).bucket_size(3));
        b.add_key(b"k");
        assert!(matches!(b.finish(), Err(Error::InvalidConfig { .. })));
    }

    #[test]
    fn a_failing_size_is_retried_with_other_seeds_and_sizes() {
        // With one relocation allowed per key, 1000 keys do not fit at the exact size; the
        // retries find a seed and size where they do, deterministically.
        let build = || {
            let mut b = FilterBuilder::new(Config::new(0).max_kicks(1).seed(5));
            for k in 0..1000u32 {
                b.add_key(&k.to_le_bytes());
            }
            b.finish().unwrap()
        };
        let f = build();
        assert_eq!(f.len(), 1000);
        // Try `a` uses seed `5 + a·φ` (wrapping): the seventh try (a = 6, the third with a
        // larger table) is the first that succeeds. Under overflow checks this also runs the
        // seed arithmetic of tries 2 and up, which once overflowed.
        let tries: Vec<u64> = (0..TRIES as u64)
            .map(|a| 5u64.wrapping_add(a.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
            .collect();
        assert_eq!(tries.iter().position(|&s| s == f.seed()), Some(6));
        let exact = CuckooFilter::new(Config::new(1000)).unwrap();
        assert!(
            f.capacity() > exact.capacity(),
            "tries 4 and up grow the table"
        );
        assert!((0..1000u32).all(|k| f.contains(&k.to_le_bytes())));
        assert_eq!(build(), f);
    }
}
