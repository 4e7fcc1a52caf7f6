//! `FilterBuilder`: an exactly sized filter for an SSTable flush or compaction, where the key
//! count is known only at the end.

use crate::compact;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::filter::{CuckooFilter, start_bucket};
use crate::hash::{self, KeyHash, SplitMix64};
use crate::radix;
use crate::table::{Codec, Encoding, Geometry, with_codec};
use crate::view::Slot;

/// Builds a [`CuckooFilter`] sized exactly for the distinct keys it was given, for an SSTable
/// written by a flush or a compaction: the key count is known only when the table is done, and
/// the table's filter should carry no growth overhead.
///
/// It keeps the 64-bit hash of every key added — **8 bytes per key** while the table is being
/// written — then sorts them, drops duplicates (several versions of one user key count once) and
/// places them in a filter sized for the distinct count. [`finish`](Self::finish) needs more memory
/// for a while: the radix sort scatters the hashes into a scratch buffer of **another 8 bytes per
/// key**, freed before the filter is allocated; placing the keys then takes the filter itself plus
/// about 3 bytes per key (the keys that move on to their second bucket, with a scratch buffer to
/// sort them, and a byte and a bit per bucket). Sorted by the filter's seeded hash, the keys come
/// in first-bucket order, so a first pass fills the table front to back (about 80 % of the keys
/// land in their first bucket, with sequential memory access; where more keys want a bucket than it
/// holds, those whose second bucket is less in demand move on); a second pass, in second-bucket
/// order, places about half of the rest; a third moves one resident aside for most of the keys
/// left, with prefetched random access; only the last percent or two take relocation walks,
/// interleaved 16 at a time. The last two look up which buckets have room in a bitmap that stays in
/// cache, and touch the table only where there is. (`cargo bench --bench peers -- build` measures
/// it.)
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
    /// The configuration's layout, kept from the first compact block (choosing it again
    /// cost a thread-local lookup a block).
    layout: Option<(u32, u32, Encoding)>,
}

/// Deterministic retries before `finish` gives up: 4 seeds at the exact size, then 8 with
/// tables 2 % larger each time.
const TRIES: u32 = 12;
const SAME_SIZE_TRIES: u32 = 4;

/// The most hashes [`FilterBuilder::new`] reserves room for (1 GiB), whatever the capacity
/// hint: the room is only address space until keys are added, but a wrong hint should not
/// take more than any SSTable needs.
const RESERVE_MAX: usize = 1 << 27;

/// The fewest hashes [`FilterBuilder::new`] reserves room for (512 bytes), whatever the
/// capacity hint: a filter policy's builder, made with no hint for a block of a few dozen keys,
/// would otherwise grow its vector five times.
const RESERVE_MIN: usize = 64;

/// Up to this many hashes (the most a compact block places exactly), [`sort_hashes`] sorts
/// without the radix sort's scratch: by comparisons below [`BUCKET_SORT`], by [`bucket_sort`]
/// from there.
const SMALL_SORT: usize = compact::EXACT_MAX;

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
        let mut hashes = Vec::new();
        // Where even that address space cannot be had, the hashes start small and grow.
        let _ = hashes.try_reserve_exact(config.capacity.clamp(RESERVE_MIN, RESERVE_MAX));
        FilterBuilder {
            config,
            hashes,
            layout: None,
        }
    }

    /// Adds a key (duplicates are dropped in [`finish`](Self::finish)).
    ///
    /// ```
    /// let mut b = cuckoo_sst::FilterBuilder::new(cuckoo_sst::Config::new(0));
    /// b.add_key(b"k");
    /// assert_eq!(b.len(), 1);
    /// ```
    #[inline]
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
    #[inline]
    pub fn add_hash(&mut self, h: KeyHash) {
        self.hashes.push(h.to_u64());
    }

    /// Reserves room for `additional` more keys, or [`Error::OutOfMemory`] (nothing reserved)
    /// where it cannot be had: for a caller that must not abort when memory runs out, before
    /// [`add_key`](Self::add_key) or [`add_hash`](Self::add_hash), which then allocate nothing
    /// for those keys.
    ///
    /// ```
    /// let mut b = cuckoo_sst::FilterBuilder::new(cuckoo_sst::Config::new(0));
    /// b.try_reserve(1_000)?;
    /// assert!(b.try_reserve(usize::MAX / 4).is_err());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    #[inline]
    pub fn try_reserve(&mut self, additional: usize) -> Result<()> {
        self.hashes
            .try_reserve(additional)
            .map_err(|_| Error::OutOfMemory {
                bytes: (additional as u64).saturating_mul(8),
            })
    }

    /// Drops the keys added so far, keeping the configuration and the memory.
    ///
    /// ```
    /// let mut b = cuckoo_sst::FilterBuilder::new(cuckoo_sst::Config::new(0));
    /// b.add_key(b"k");
    /// b.clear();
    /// assert!(b.is_empty());
    /// ```
    #[inline]
    pub fn clear(&mut self) {
        self.hashes.clear();
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

    /// The filter as a compact block (FORMAT.md §11, version 2: §11.5): 2 bytes of header at
    /// the default layout and exactly its buckets, for a block whose integrity its container
    /// checks — the filter of one data block in LevelDB, say. Up to 4096 distinct keys, the
    /// keys are placed by an exact matching in the fewest buckets (any count) that hold
    /// them, about `bucket_bits / bucket_size` bits a key (9 at the default 1 %); more keys are placed as
    /// [`finish`](Self::finish) places them. Read it with [`CompactFilter`](crate::CompactFilter).
    ///
    /// Compact blocks name their seed by an index (the default seed and the builder's retries
    /// from it): `Err(InvalidConfig)` for a configured seed other than the default.
    ///
    /// ```
    /// use cuckoo_sst::{CompactFilter, Config, FilterBuilder};
    /// let mut b = FilterBuilder::new(Config::new(0));
    /// for k in 0..100u32 {
    ///     b.add_key(&k.to_le_bytes());
    /// }
    /// let block = b.finish_compact()?;
    /// assert_eq!(block.len(), 2 + 25 * 36 / 8 + 1); // 25 buckets of 4 × 9 bits: 9.2 bits a key
    /// assert!(CompactFilter::block_contains(&block, &42u32.to_le_bytes())?);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn finish_compact(mut self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.build_compact_into(&mut out)?;
        Ok(out)
    }

    /// [`finish_compact`](Self::finish_compact) into `out` (cleared first), after which the
    /// builder is empty, with its configuration and memory kept for the next block — whether
    /// the block was built or not. For a filter policy that builds thousands of small blocks
    /// on one thread: with one builder and one output vector kept between blocks, a block
    /// costs no allocation (the same bytes as `finish_compact`).
    ///
    /// ```
    /// use cuckoo_sst::{CompactFilter, Config, FilterBuilder};
    /// let mut b = FilterBuilder::new(Config::new(0));
    /// let mut block = Vec::new();
    /// for table in 0..3u32 {
    ///     for k in 0..40u32 {
    ///         b.add_key(&(table * 1000 + k).to_le_bytes());
    ///     }
    ///     b.build_compact_into(&mut block)?;
    ///     assert!(b.is_empty());
    ///     assert!(CompactFilter::block_contains(&block, &(table * 1000 + 7).to_le_bytes())?);
    /// }
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn build_compact_into(&mut self, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        let built = self.compact_into(out);
        self.hashes.clear();
        built
    }

    /// [`build_compact_into`](Self::build_compact_into) but for emptying the builder.
    fn compact_into(&mut self, out: &mut Vec<u8>) -> Result<()> {
        if self.config.seed != crate::config::DEFAULT_SEED {
            return Err(Error::invalid(
                "seed",
                format!(
                    "{:#x}: a compact block names its seed by an index from the default seed; \
                     leave the seed at its default",
                    self.config.seed
                ),
            ));
        }
        // In order, duplicates dropped: the exact placement's keys.
        sort_dedup(&mut self.hashes)?;
        let layout = match self.layout {
            Some(layout) => layout,
            None => *self.layout.insert(self.config.layout()?),
        };
        if compact::build_exact_into(layout, &self.hashes, out)? {
            return Ok(());
        }
        // Above the exact placement's limit: the filter `finish` builds, as a compact block.
        let all = FilterBuilder {
            config: self.config.clone(),
            hashes: std::mem::take(&mut self.hashes),
            layout: self.layout,
        };
        let block = all.finish()?.to_compact_bytes()?;
        out.extend_from_slice(&block);
        Ok(())
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
        sort_hashes(&mut self.hashes)?;
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
                sort_hashes(&mut self.hashes)?;
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
        let mut room = Room::all(geo.num_buckets())?;
        let rest = two_passes(&c, &geo, t, &mut room, seeded)?;
        // Moving a resident is a relocation: none are allowed with `max_kicks` 0.
        let stuck = if max_kicks == 0 {
            rest
        } else {
            one_move(&c, &geo, t, &mut room, &rest)
        };
        walks(&c, &geo, t, &mut room, &stuck, max_kicks)
    });
    f.add_placed(seeded.len() as u64);
    placed
}

/// Which buckets of the table have an empty slot, one bit per bucket (1 MiB for 32 M keys,
/// where the table has 38 MiB): passes 3 and 4 look up the other buckets of a bucket's
/// residents here, in cache, and read or write the table only where there is room. The passes
/// that write the table keep it up to date.
struct Room(Vec<u64>);

impl Room {
    /// Every one of `m` buckets has room: an empty table. `OutOfMemory` instead of an abort.
    fn all(m: u64) -> Result<Room> {
        filled(m.div_ceil(64), u64::MAX).map(Room)
    }

    /// Whether bucket `i` has an empty slot.
    #[inline(always)]
    fn has(&self, i: u64) -> bool {
        self.0[(i / 64) as usize] >> (i % 64) & 1 != 0
    }

    /// Records that bucket `i` is full.
    #[inline(always)]
    fn full(&mut self, i: u64) {
        self.0[(i / 64) as usize] &= !(1 << (i % 64));
    }

    /// Puts `fp` into the first empty slot of bucket `i`, as [`Codec::try_put`] does, if
    /// `i` has one; false if it is full.
    #[inline(always)]
    fn put<C: Codec>(&mut self, c: &C, t: &mut [u8], i: u64, fp: u32) -> bool {
        if !self.has(i) {
            return false;
        }
        let mut slots = c.read(t, i);
        let b = c.slots();
        let Some(at) = slots[..b].iter().position(|&v| v == 0) else {
            unreachable!("bucket {i} is marked as having room but is full")
        };
        slots[at] = fp;
        c.store(t, i, at, &slots);
        if !slots[..b].contains(&0) {
            self.full(i);
        }
        true
    }
}

/// Pass 4 of [`place_all`]: the relocation walk of [`CuckooFilter::insert`] for every key of
/// `keys` ([`moved`] keys), 16 walks at a time, interleaved step by step so that each walk's next buckets are
/// prefetched while the others step. A walk that gives up after `max_kicks` evictions fails the
/// whole placement (nothing is rolled back: the builder starts over with another seed).
fn walks<C: Codec>(
    c: &C,
    geo: &Geometry,
    t: &mut [u8],
    room: &mut Room,
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
        /// Find a resident of `bucket` (prefetched) whose other bucket has room, and prefetch
        /// that bucket; else evict one and carry it on.
        Step,
        /// Move the resident in `slot` to its other bucket `alt` (prefetched), and put the
        /// homeless fingerprint in its place.
        Move,
        Done,
    }
    #[derive(Clone, Copy)]
    struct Walk {
        phase: Phase,
        i1: u64,
        i2: u64,
        bucket: u64,
        slot: usize,
        alt: u64,
        homeless: u32,
        kicks: u32,
        rng: SplitMix64,
    }
    let idle = Walk {
        phase: Phase::Done,
        i1: 0,
        i2: 0,
        bucket: 0,
        slot: 0,
        alt: 0,
        homeless: 0,
        kicks: 0,
        rng: SplitMix64::new(0),
    };
    let mut walks = [idle; WALKS];
    let mut next = keys.iter();
    let mut active = 0;
    loop {
        for w in walks.iter_mut() {
            match w.phase {
                Phase::Done => {
                    let Some(&key) = next.next() else { continue };
                    let s = locate_moved(geo, key);
                    prefetch(t, s.i1);
                    prefetch(t, s.i2);
                    *w = Walk {
                        phase: Phase::Start,
                        i1: s.i1,
                        i2: s.i2,
                        homeless: s.fp,
                        rng: SplitMix64::new(key),
                        ..idle
                    };
                    active += 1;
                }
                Phase::Start => {
                    // No `try_put` first: the keys given have both buckets full (the earlier
                    // passes left them for that reason), and a walk never empties a slot.
                    w.bucket = start_bucket(&mut w.rng, w.i1, w.i2);
                    w.phase = Phase::Step;
                }
                Phase::Step => {
                    if w.kicks == max_kicks {
                        return Err(Error::Full);
                    }
                    let mut residents = c.read(t, w.bucket);
                    let movable = (0..b).find_map(|slot| {
                        let alt = hash::alt_bucket(w.bucket, residents[slot], m);
                        room.has(alt).then_some((slot, alt))
                    });
                    if let Some((slot, alt)) = movable {
                        prefetch(t, alt);
                        (w.slot, w.alt) = (slot, alt);
                        w.phase = Phase::Move;
                        continue;
                    }
                    let slot = w.rng.below(b as u64) as usize;
                    let victim = residents[slot];
                    residents[slot] = w.homeless;
                    c.store(t, w.bucket, slot, &residents);
                    w.homeless = victim;
                    // The victim's other bucket is full: the search above found no resident,
                    // the victim included, whose other bucket had room.
                    w.bucket = hash::alt_bucket(w.bucket, victim, m);
                    w.kicks += 1;
                    prefetch(t, w.bucket);
                }
                Phase::Move => {
                    // Other walks stepped since: the resident may have been evicted, or the
                    // room taken. Then the search starts over (no kick is counted).
                    let mut residents = c.read(t, w.bucket);
                    let r = residents[w.slot];
                    if hash::alt_bucket(w.bucket, r, m) == w.alt && room.put(c, t, w.alt, r) {
                        residents[w.slot] = w.homeless;
                        c.store(t, w.bucket, w.slot, &residents);
                        w.phase = Phase::Done;
                        active -= 1;
                    } else {
                        w.phase = Phase::Step;
                    }
                }
            }
        }
        if active == 0 && next.len() == 0 {
            return Ok(());
        }
    }
}

/// Prefetches for [`one_move`] at key `k` of `keys`: two steps ahead the buckets of key
/// `k + 2·AHEAD`, one step ahead those other buckets of the residents of key `k + AHEAD`'s
/// buckets (by then in cache) that have room, the only ones `one_move` reads. Speed only:
/// nothing is written.
fn prefetch_one_move_ahead<C: Codec>(
    c: &C,
    geo: &Geometry,
    t: &[u8],
    room: &Room,
    keys: &[u64],
    k: usize,
) {
    const AHEAD: usize = 8;
    let m = geo.num_buckets();
    let prefetch = |i: u64| crate::prefetch::prefetch(t, c.bucket_byte(i));
    let slot_of = |k: usize| keys.get(k).map(|&p| locate_moved(geo, p));
    if let Some(s) = slot_of(k + 2 * AHEAD) {
        prefetch(s.i1);
        prefetch(s.i2);
    }
    if let Some(s) = slot_of(k + AHEAD) {
        for i in [s.i1, s.i2] {
            let residents = c.read(t, i);
            for &r in &residents[..c.slots()] {
                let alt = hash::alt_bucket(i, r, m);
                if room.has(alt) {
                    prefetch(alt);
                }
            }
        }
    }
}

/// Pass 3 of [`place_all`]: places each key of `keys` ([`moved`] keys) by moving one resident
/// of its buckets to the resident's other bucket, where there is room; returns the keys it
/// could not place.
fn one_move<C: Codec>(
    c: &C,
    geo: &Geometry,
    t: &mut [u8],
    room: &mut Room,
    keys: &[u64],
) -> Vec<u64> {
    let m = geo.num_buckets();
    let b = c.slots();
    let mut stuck = Vec::new();
    for (k, &key) in keys.iter().enumerate() {
        prefetch_one_move_ahead(c, geo, t, room, keys, k);
        let s = locate_moved(geo, key);
        let mut placed = room.put(c, t, s.i1, s.fp) || room.put(c, t, s.i2, s.fp);
        'buckets: for i in [s.i1, s.i2] {
            if placed {
                break;
            }
            let mut residents = c.read(t, i);
            for slot in 0..b {
                let r = residents[slot];
                let alt = hash::alt_bucket(i, r, m);
                if room.put(c, t, alt, r) {
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
fn two_passes<C: Codec>(
    c: &C,
    geo: &Geometry,
    t: &mut [u8],
    room: &mut Room,
    seeded: &[u64],
) -> Result<Vec<u64>> {
    let second = first_pass(c, geo, t, room, seeded)?;
    second_pass(c, t, room, second)
}

/// How many keys a bucket is the first bucket of, for each bucket of the table (saturating at
/// 255): a bucket that many keys want first has little room for keys that want it second.
/// `OutOfMemory` instead of an abort.
fn first_demand(geo: &Geometry, seeded: &[u64]) -> Result<Vec<u8>> {
    let m = geo.num_buckets();
    let mut demand = filled(m, 0u8)?;
    for &s in seeded {
        let d = &mut demand[hash::first_bucket(s, m) as usize];
        *d = d.saturating_add(1);
    }
    Ok(demand)
}

/// A vector of `n` copies of `value`, or [`Error::OutOfMemory`] where `vec!` would abort: the
/// builder's per-bucket arrays are as large as the table's bucket count (a byte and a bit per
/// bucket), allocated, like the table, when `finish` knows the count.
fn filled<T: Copy>(n: u64, value: T) -> Result<Vec<T>> {
    let bytes = n.saturating_mul(size_of::<T>() as u64);
    let out_of_memory = || Error::OutOfMemory { bytes };
    let n = usize::try_from(n).map_err(|_| out_of_memory())?;
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| out_of_memory())?;
    v.resize(n, value);
    Ok(v)
}

/// The second bucket of the key with seeded hash `s`.
#[inline(always)]
fn second_bucket(geo: &Geometry, s: u64) -> u64 {
    let m = geo.num_buckets();
    hash::alt_bucket(
        hash::first_bucket(s, m),
        hash::fingerprint(s, geo.fp_bits()),
        m,
    )
}

/// A key that pass 1 moves on, as one number: its second bucket `i2` above its fingerprint
/// `fp`. That is all the later passes need of it (its first bucket is `alt_bucket(i2, fp)`),
/// and sorted, these numbers come in second-bucket order.
#[inline(always)]
fn moved(i2: u64, fp: u32) -> u64 {
    i2 << 32 | fp as u64
}

/// The buckets and fingerprint of a [`moved`] key `key`; its `seeded` field is `key` itself,
/// which seeds its relocation walk.
#[inline(always)]
fn locate_moved(geo: &Geometry, key: u64) -> Slot {
    let (i2, fp) = (key >> 32, key as u32);
    Slot {
        i1: hash::alt_bucket(i2, fp, geo.num_buckets()),
        i2,
        fp,
        seeded: key,
    }
}

/// The number of keys from `seeded[at]` on whose first bucket is `i1`, where `seeded[at..]`
/// starts with the keys of bucket `i1`, if any: `demand[i1]`, unless it saturated.
#[inline(always)]
fn run_len(geo: &Geometry, seeded: &[u64], at: usize, i1: u64, demand: &[u8]) -> usize {
    match demand[i1 as usize] {
        u8::MAX => {
            let m = geo.num_buckets();
            let rest = &seeded[at..];
            rest.iter()
                .position(|&s| hash::first_bucket(s, m) != i1)
                .unwrap_or(rest.len())
        }
        d => d as usize,
    }
}

/// Pass 1 of [`place_all`]; returns the keys it moves on, as [`moved`] keys.
///
/// It goes through the buckets in order, each with its run of keys (those whose first bucket
/// it is; the keys are sorted, so the runs come in bucket order). A run longer than the
/// bucket keeps the keys whose second bucket is most in demand and leaves the others to pass
/// 2.
fn first_pass<C: Codec>(
    c: &C,
    geo: &Geometry,
    t: &mut [u8],
    room: &mut Room,
    seeded: &[u64],
) -> Result<Vec<u64>> {
    /// Buckets ahead of the current one whose keys have the demand of their second bucket
    /// prefetched (if the run is overfull): a random byte of a table-sized array each.
    const AHEAD: u64 = 8;
    let b = c.slots();
    let m = geo.num_buckets();
    let demand = first_demand(geo, seeded)?;
    let mut second: Vec<u64> = Vec::new();
    let mut ranks: Vec<u64> = Vec::new();
    // Where the keys of buckets `i1` and `i1 + AHEAD` start.
    let (mut at, mut ahead_at) = (0, 0);
    for i in 0..AHEAD.min(m) {
        ahead_at += run_len(geo, seeded, ahead_at, i, &demand);
    }
    for i1 in 0..m {
        if i1 + AHEAD < m {
            let i = i1 + AHEAD;
            let len = run_len(geo, seeded, ahead_at, i, &demand);
            if len > b {
                for &s in &seeded[ahead_at..ahead_at + len] {
                    crate::prefetch::prefetch(&demand, second_bucket(geo, s) as usize);
                }
            }
            ahead_at += len;
        }
        let len = run_len(geo, seeded, at, i1, &demand);
        if len == 0 {
            continue;
        }
        let keys = &seeded[at..at + len];
        at += len;
        let mut slots = [0u32; 8];
        if len <= b {
            for (slot, &s) in slots.iter_mut().zip(keys) {
                *slot = hash::fingerprint(s, geo.fp_bits());
            }
        } else {
            keep_best(
                geo,
                &demand,
                i1,
                keys,
                &mut slots[..b],
                &mut ranks,
                &mut second,
            );
        }
        c.store_all(t, i1, &slots);
        if len >= b {
            room.full(i1);
        }
    }
    Ok(second)
}

/// Pass 1 for the overfull run `keys` (ascending seeded hashes whose first bucket is `i1`):
/// puts the fingerprints of the keys to keep in `slots`, best first, and appends the others
/// to `second`, as [`moved`] keys. The best keys are those whose second bucket is most in demand,
/// then those with the greater fingerprint, then those with the greater hash (within a run the
/// second bucket is a function of the fingerprint, and distinct keys never tie). `ranks` is
/// room to work in.
fn keep_best(
    geo: &Geometry,
    demand: &[u8],
    i1: u64,
    keys: &[u64],
    slots: &mut [u32],
    ranks: &mut Vec<u64>,
    second: &mut Vec<u64>,
) {
    /// Longest run ranked by counting, in `O(len²)` compares; longer ones (only ever seen
    /// from crafted hashes) are sorted.
    const COUNTED: usize = 256;
    let m = geo.num_buckets();
    let rank = |s: u64| {
        let fp = hash::fingerprint(s, geo.fp_bits());
        let i2 = hash::alt_bucket(i1, fp, m);
        (demand[i2 as usize] as u64) << 32 | fp as u64
    };
    let move_on = |s: u64| {
        let fp = hash::fingerprint(s, geo.fp_bits());
        moved(hash::alt_bucket(i1, fp, m), fp)
    };
    if keys.len() > COUNTED {
        keep_best_sorted(keys, slots, second, rank, move_on);
        return;
    }
    // (demand, fingerprint, position in the run) in one number: the keys are ascending, so
    // the position orders ties as the hash does.
    ranks.clear();
    ranks.extend(
        keys.iter()
            .enumerate()
            .map(|(k, &s)| rank(s) << 8 | k as u64),
    );
    for (&s, &r) in keys.iter().zip(ranks.iter()) {
        let above = ranks.iter().filter(|&&q| q > r).count();
        match slots.get_mut(above) {
            Some(slot) => *slot = (r >> 8) as u32,
            None => second.push(move_on(s)),
        }
    }
}

/// [`keep_best`] for a long run, by sorting it: `rank` gives a key's (demand of its second
/// bucket, fingerprint) as one number, `move_on` the [`moved`] key of a key moved on.
fn keep_best_sorted(
    keys: &[u64],
    slots: &mut [u32],
    second: &mut Vec<u64>,
    rank: impl Fn(u64) -> u64,
    move_on: impl Fn(u64) -> u64,
) {
    let mut run: Vec<u128> = keys
        .iter()
        .map(|&s| (rank(s) as u128) << 64 | s as u128)
        .collect();
    run.sort_unstable_by(|x, y| y.cmp(x));
    for (slot, &k) in slots.iter_mut().zip(&run) {
        *slot = (k >> 64) as u32;
    }
    second.extend(run[slots.len()..].iter().map(|&k| move_on(k as u64)));
}

/// Pass 2 of [`place_all`]: places the keys of `second` ([`moved`] keys) in their second
/// buckets, in bucket order; returns the keys it could not place.
fn second_pass<C: Codec>(
    c: &C,
    t: &mut [u8],
    room: &mut Room,
    mut second: Vec<u64>,
) -> Result<Vec<u64>> {
    let b = c.slots();
    let mut rest = Vec::new();
    // Sorted, they are in second-bucket order, and in the same order on every run.
    sort_hashes(&mut second)?;
    let mut keys = second.iter().map(|&k| (k >> 32, k)).peekable();
    while let Some((bucket, k)) = keys.next() {
        let mut slots = c.read(t, bucket);
        let mut changed = false;
        let mut put = |k: u64| match slots[..b].iter().position(|&v| v == 0) {
            Some(at) => {
                slots[at] = k as u32;
                changed = true;
            }
            None => rest.push(k),
        };
        put(k);
        while let Some((_, k)) = keys.next_if(|&(next, _)| next == bucket) {
            put(k);
        }
        if changed {
            c.store_all(t, bucket, &slots);
            if !slots[..b].contains(&0) {
                room.full(bucket);
            }
        }
    }
    Ok(rest)
}

/// Sorts `hashes` with [`radix::sort`], in a scratch buffer as long as they are that lives only
/// for the sort.
fn sort_hashes(hashes: &mut [u64]) -> Result<()> {
    // A block's few keys: the radix sort's scratch buffer and counters (16 KiB, zeroed for
    // each digit) cost more than comparisons (about 100 000 instructions a sort at 71 keys
    // against 4 000).
    if hashes.len() < BUCKET_SORT {
        hashes.sort_unstable();
        return Ok(());
    }
    if hashes.len() <= SMALL_SORT {
        bucket_sort(hashes);
        return Ok(());
    }
    let mut scratch = radix::Scratch::new(hashes.len())?;
    radix::sort(hashes, scratch.as_mut_slice());
    Ok(())
}

/// Adds keys by their hashes ([`KeyHash::of`]), as [`add_hash`](FilterBuilder::add_hash) does
/// one by one: for a caller with the hashes of a whole block at hand, in one pass that
/// reserves room once (an iterator of known length, a slice's, say).
///
/// ```
/// use cuckoo_sst::{Config, FilterBuilder, KeyHash};
/// let mut b = FilterBuilder::new(Config::new(0));
/// b.extend([b"a", b"b", b"a"].map(|k| KeyHash::of(k)));
/// assert_eq!(b.len(), 3);
/// assert_eq!(b.finish()?.len(), 2);
/// # Ok::<(), cuckoo_sst::Error>(())
/// ```
impl Extend<KeyHash> for FilterBuilder {
    #[inline]
    fn extend<I: IntoIterator<Item = KeyHash>>(&mut self, hashes: I) {
        self.hashes.extend(hashes.into_iter().map(KeyHash::to_u64));
    }
}

/// Sorts `hashes` and drops the duplicates, as `sort_hashes` and `dedup` do: the few keys of
/// a compact block by [`probe_sort_dedup`], more as [`sort_hashes`] sorts them.
fn sort_dedup(hashes: &mut Vec<u64>) -> Result<()> {
    if (2..=PROBE_SORT_MAX).contains(&hashes.len())
        && let Some(distinct) = probe_sort_dedup(hashes)
    {
        hashes.truncate(distinct);
        return Ok(());
    }
    sort_hashes(hashes)?;
    hashes.dedup();
    Ok(())
}

/// The most hashes [`probe_sort_dedup`] sorts: its table has 1.5 to 3 slots a hash, and the
/// runs may go past its last slot by at most as many as there are hashes, which
/// [`PROBE_SLOTS`] holds.
const PROBE_SORT_MAX: usize = 512;

/// The slots of [`probe_sort_dedup`]'s arrays: a power of two, so that a mask stands for the
/// bounds check (it changes no index).
const PROBE_SLOTS: usize = 2048;

/// The scratch of [`probe_sort_dedup`], kept a thread between blocks.
struct ProbeScratch {
    /// The ordered table: all zeros between calls (each scan clears what it reads).
    table: Box<[u64; PROBE_SLOTS]>,
    /// The scan's output.
    out: Box<[u64; PROBE_SLOTS]>,
}

/// [`sort_dedup`] for 2 to [`PROBE_SORT_MAX`] hashes, the keys of a compact block, by an
/// ordered hash table: each hash goes to the slot its top bits name in a table of 1.5 to 3
/// slots a hash, or past it, to the first slot holding a larger hash or none, the run of
/// hashes from there moving one slot on. Every hash then sits at or past its own slot and
/// the table is in order (a hash at a slot below another's own slot is smaller), so a scan
/// gives the hashes sorted, and a duplicate is met where it would go. The sorted, distinct
/// hashes end in `hashes[..distinct]`; `None` (`hashes` unchanged) if the thread's table is
/// in use, or when hashes that share their top bits (chosen so) would make the runs long.
/// Through LevelDB's C API (callgrind), about half the instructions of `sort_unstable` (or
/// [`bucket_sort`]) and `dedup` at 19 to 140 keys.
fn probe_sort_dedup(hashes: &mut [u64]) -> Option<usize> {
    const MASK: usize = PROBE_SLOTS - 1;
    thread_local! {
        static SCRATCH: std::cell::RefCell<Option<ProbeScratch>> =
            const { std::cell::RefCell::new(None) };
    }
    SCRATCH
        .try_with(|scratch| {
            let mut guard = scratch.try_borrow_mut().ok()?;
            let ProbeScratch { table, out } = guard.get_or_insert_with(|| ProbeScratch {
                table: Box::new([0; PROBE_SLOTS]),
                out: Box::new([0; PROBE_SLOTS]),
            });
            let (t, out): (&mut [u64; PROBE_SLOTS], &mut [u64; PROBE_SLOTS]) = (table, out);
            let n = hashes.len();
            // 2^bits slots, 1.5 to 3 a hash; the runs may go past the last, by at most n − 1.
            let bits = (n + n / 2).next_power_of_two().trailing_zeros();
            let shift = 64 - bits;
            // 0 marks an empty slot: a hash of 0, the smallest, is noted apart.
            let mut zero = false;
            // One past the last slot a run reached.
            let mut end = 1usize << bits;
            let mut budget = 8 * n;
            for &h in hashes.iter() {
                if h == 0 {
                    zero = true;
                    continue;
                }
                let home = (h >> shift) as usize;
                let mut at = home;
                let mut here = t[at & MASK];
                if here == 0 {
                    t[at & MASK] = h;
                    continue;
                }
                while here != 0 && here < h {
                    at += 1;
                    here = t[at & MASK];
                }
                if here != h {
                    // Move the run from `at` on one slot up, to the first empty slot.
                    let mut carry = h;
                    while carry != 0 {
                        (t[at & MASK], carry) = (carry, t[at & MASK]);
                        at += 1;
                    }
                    end = end.max(at);
                }
                let Some(left) = budget.checked_sub(at - home) else {
                    t[..end].fill(0);
                    return None;
                };
                budget = left;
            }
            // Every slot read is cleared for the next call; the hashes are gathered at the
            // front of `out` with no branch on which slots are empty (`w` stays below `end`).
            out[0] = 0;
            let mut w = usize::from(zero);
            for slot in t[..end].iter_mut() {
                let h = std::mem::take(slot);
                out[w & MASK] = h;
                w += usize::from(h != 0);
            }
            hashes[..w].copy_from_slice(&out[..w]);
            Some(w)
        })
        .ok()
        .flatten()
}

/// From this many hashes up to [`SMALL_SORT`], [`sort_hashes`] sorts by [`bucket_sort`]:
/// below it, `sort_unstable` takes fewer instructions (callgrind, through LevelDB's C API:
/// at 36 keys the same, at 71 and 140 keys 13 and 12 fewer a key with the bucket sort).
const BUCKET_SORT: usize = 48;

/// Sorts hashes — uniform 64-bit values, at most [`SMALL_SORT`] — by their top bits into
/// about as many groups as hashes, then by insertion, which has only each group's few hashes
/// to order. The scratch space is kept a thread between blocks.
fn bucket_sort(hashes: &mut [u64]) {
    thread_local! {
        static SCRATCH: std::cell::RefCell<(Vec<u32>, Vec<u64>)> = std::cell::RefCell::default();
    }
    let sorted = SCRATCH.try_with(|scratch| {
        let Ok(mut guard) = scratch.try_borrow_mut() else {
            return false;
        };
        let (starts, out) = &mut *guard;
        let bits = hashes.len().next_power_of_two().trailing_zeros();
        let shift = 64 - bits;
        // Sized for the largest block so far: only the counters in use are zeroed, and the
        // output is written before it is read.
        let groups = (1 << bits) + 1;
        if starts.len() < groups {
            starts.resize(groups, 0);
        }
        if out.len() < hashes.len() {
            out.resize(hashes.len(), 0);
        }
        let (starts, out) = (&mut starts[..groups], &mut out[..hashes.len()]);
        starts.fill(0);
        for &h in hashes.iter() {
            starts[(h >> shift) as usize + 1] += 1;
        }
        let mut sum = 0;
        for s in starts.iter_mut() {
            sum += *s;
            *s = sum;
        }
        for &h in hashes.iter() {
            let g = &mut starts[(h >> shift) as usize];
            out[*g as usize] = h;
            *g += 1;
        }
        hashes.copy_from_slice(out);
        // Each hash is now in its group, the groups in order: insertion moves a hash only
        // past the few of its own group — unless the keys were chosen to share their top
        // bits, which would make it quadratic: past a budget of moves, the comparison sort
        // finishes the job.
        let mut budget = 4 * hashes.len();
        for i in 1..hashes.len() {
            let x = hashes[i];
            let mut j = i;
            while j > 0 && hashes[j - 1] > x {
                hashes[j] = hashes[j - 1];
                j -= 1;
            }
            hashes[j] = x;
            budget = budget.saturating_sub(i - j);
            if budget == 0 {
                return false;
            }
        }
        true
    });
    if sorted != Ok(true) {
        hashes.sort_unstable();
    }
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
    use crate::view::locate_seeded;

    /// The bucket sort sorts as `sort_unstable` does: random hashes of every size it takes,
    /// duplicates, hashes that share their top bits (the insertion's budget runs out and the
    /// comparison sort finishes), already sorted and reversed ones.
    #[test]
    fn the_bucket_sort_sorts() {
        let mut rng = crate::hash::SplitMix64::new(43);
        for n in (BUCKET_SORT..=SMALL_SORT)
            .step_by(97)
            .chain([BUCKET_SORT, SMALL_SORT])
        {
            let random: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
            let mut dups = random.clone();
            dups[n / 2..].copy_from_slice(&random[..n - n / 2]);
            let shared: Vec<u64> = random.iter().map(|h| h >> 20).collect();
            let mut sorted = random.clone();
            sorted.sort_unstable();
            let reversed: Vec<u64> = sorted.iter().rev().copied().collect();
            for input in [random, dups, shared, sorted, reversed] {
                let (mut ours, mut want) = (input.clone(), input);
                bucket_sort(&mut ours);
                want.sort_unstable();
                assert_eq!(ours, want, "n={n}");
            }
        }
    }

    /// The compact path's sort drops duplicates and sorts as `sort_unstable` and `dedup` do:
    /// every size from 2 to 300 and a few up to its limit, random hashes, duplicates (all of
    /// one hash, too), hashes of 0 and `u64::MAX`, hashes that share their top bits, already
    /// sorted and reversed ones; and hashes chosen to share their top bits run out of its
    /// budget (`None`, unchanged), which `sort_dedup` then sorts another way.
    #[test]
    fn the_compact_sort_sorts_and_drops_duplicates() {
        let mut rng = crate::hash::SplitMix64::new(44);
        for n in (2..300).chain([511, 512, 513, 1000, 2049, SMALL_SORT]) {
            let random: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
            let mut dups = random.clone();
            dups[n / 2..].copy_from_slice(&random[..n - n / 2]);
            let shared: Vec<u64> = random.iter().map(|h| h >> 20).collect();
            let mut sorted = random.clone();
            sorted.sort_unstable();
            let reversed: Vec<u64> = sorted.iter().rev().copied().collect();
            let same = vec![random[0]; n];
            let extremes: Vec<u64> = (0..n as u64)
                .map(|i| [0, u64::MAX, i, random[0]][i as usize % 4])
                .collect();
            for input in [random, dups, shared, sorted, reversed, same, extremes] {
                let mut want = input.clone();
                want.sort_unstable();
                want.dedup();
                let mut ours = input.clone();
                if n <= PROBE_SORT_MAX {
                    match probe_sort_dedup(&mut ours) {
                        Some(d) => assert_eq!(ours[..d], want[..], "n={n}"),
                        None => assert_eq!(ours, input, "n={n}: changed, then given up"),
                    }
                }
                let mut ours = input;
                sort_dedup(&mut ours).unwrap();
                assert_eq!(ours, want, "n={n}");
            }
        }
        let mut shared: Vec<u64> = (1..=500u64).rev().collect();
        assert_eq!(probe_sort_dedup(&mut shared), None);
        sort_dedup(&mut shared).unwrap();
        assert_eq!(shared, (1..=500u64).collect::<Vec<_>>());
    }

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

    /// The per-bucket arrays of `finish` are allocated fallibly: a size no allocator can give
    /// is `OutOfMemory` with the bytes asked for, not an abort; a size it can is filled.
    #[test]
    fn per_bucket_arrays_report_out_of_memory() {
        for (n, bytes) in [(u64::MAX / 8, u64::MAX / 8 * 8), (u64::MAX, u64::MAX)] {
            match filled(n, u64::MAX) {
                Err(Error::OutOfMemory { bytes: b }) => assert_eq!(b, bytes, "{n}"),
                other => panic!("{n}: {other:?}"),
            }
        }
        match filled(isize::MAX as u64, 0u8) {
            Err(Error::OutOfMemory { bytes }) => assert_eq!(bytes, isize::MAX as u64),
            other => panic!("{other:?}"),
        }
        assert_eq!(filled(3, 7u8).unwrap(), [7, 7, 7]);
        assert_eq!(Room::all(130).unwrap().0, [u64::MAX; 3]);
    }

    /// An empty default-layout filter for `n` keys (of ids `0..n`) with seed `seed`, and the
    /// keys' seeded hashes sorted, as `finish` hands them to the passes.
    fn default_filter_and_keys(n: u64, seed: u64) -> (CuckooFilter, Vec<u64>) {
        let f = CuckooFilter::new(Config::new(n as usize).seed(seed)).unwrap();
        let mut hashes: Vec<u64> = (0..n)
            .map(|i| KeyHash::of(&i.to_le_bytes()).to_u64())
            .collect();
        seeded_in_place(&mut hashes, seed);
        hashes.sort_unstable();
        (f, hashes)
    }

    /// The codec of the default layout (semi-sorted, 10 bits).
    fn default_codec(geo: &Geometry) -> crate::table::semi::SemiFast<10> {
        match geo.layout() {
            crate::table::Layout::Semi10(c) => c,
            other => panic!("the default layout is {other:?}"),
        }
    }

    /// The type's docs say about 80 % of the keys land in their first bucket: at 95 % load a
    /// bucket's share of keys is about Poisson(3.8), of which it keeps at most 4, about 82 %.
    /// Each later pass places some of the rest, and together they place every key.
    #[test]
    fn each_pass_places_what_it_should() {
        let n = 200_000u64;
        let (mut f, hashes) = default_filter_and_keys(n, 3);
        let (geo, t) = f.table_mut();
        let c = default_codec(&geo);
        let mut room = Room::all(geo.num_buckets()).unwrap();
        let second = first_pass(&c, &geo, t, &mut room, &hashes).unwrap();
        let placed = 1.0 - second.len() as f64 / n as f64;
        assert!((0.80..0.85).contains(&placed), "{placed}");
        // A key moved on is one of the keys, and found its first bucket full (buckets only
        // fill up).
        let r = crate::table::raw::Region::new(t, &geo).unwrap();
        let keys: std::collections::HashSet<u64> = hashes
            .iter()
            .map(|&s| {
                let k = locate_seeded(&geo, s);
                moved(k.i2, k.fp)
            })
            .collect();
        for &key in &second {
            assert!(keys.contains(&key), "{key:#x} is no key's");
            let k = locate_moved(&geo, key);
            assert_eq!(
                c.count_in(r, k.i1, 0),
                0,
                "a key moved on from a bucket with room"
            );
        }
        let moved = second.len();
        let rest = second_pass(&c, t, &mut room, second).unwrap();
        assert!(
            rest.len() < moved / 2,
            "{} of {moved} left after pass 2",
            rest.len()
        );
        let stuck = one_move(&c, &geo, t, &mut room, &rest);
        assert!(
            stuck.len() < rest.len(),
            "{} of {} stuck",
            stuck.len(),
            rest.len()
        );
        walks(&c, &geo, t, &mut room, &stuck, 500).unwrap();
        f.add_placed(n);
        let (geo, t) = f.table_mut();
        assert_eq!(crate::table::scan(&geo, t), Ok(n));
        assert!((0..n).all(|i| f.contains(&i.to_le_bytes())));
    }

    /// Pass 4's walks start at either of a key's buckets with equal chance, as those of
    /// `CuckooFilter::insert` do (each walk's coin is seeded by its own key, not shared): a
    /// walk leaves its key in the bucket it starts from, whether it moves a resident out or
    /// evicts one, so the walked keys split evenly between their first and second buckets.
    #[test]
    fn walks_start_at_either_bucket_evenly() {
        let n = 200_000u64;
        let (mut f, hashes) = default_filter_and_keys(n, 5);
        let (geo, t) = f.table_mut();
        let c = default_codec(&geo);
        let mut room = Room::all(geo.num_buckets()).unwrap();
        let rest = two_passes(&c, &geo, t, &mut room, &hashes).unwrap();
        let stuck = one_move(&c, &geo, t, &mut room, &rest);
        walks(&c, &geo, t, &mut room, &stuck, 500).unwrap();
        let r = crate::table::raw::Region::new(t, &geo).unwrap();
        let (mut first, mut walked) = (0u32, 0u32);
        for &key in &stuck {
            let k = locate_moved(&geo, key);
            match (c.count_in(r, k.i1, k.fp) > 0, c.count_in(r, k.i2, k.fp) > 0) {
                (true, true) => {} // the fingerprint is in both: undecided
                (in_first, in_second) => {
                    assert!(in_first || in_second, "a walked key was lost");
                    first += in_first as u32;
                    walked += 1;
                }
            }
        }
        assert!(walked >= 500, "only {walked} keys walked");
        // Binomial(walked, 1/2): σ = √walked / 2, so this allows 5σ.
        let off = (first as f64 - walked as f64 / 2.0).abs();
        assert!(
            off < 2.5 * (walked as f64).sqrt(),
            "{first} of {walked} walked keys in their first bucket"
        );
    }

    /// Pass 3 on its own, given keys whose buckets have room (the builder only gives it keys
    /// whose buckets are both full): each key takes one slot, in one of its own buckets.
    #[test]
    fn one_move_places_each_key_once() {
        let mut f = CuckooFilter::new(Config::new(10_000).seed(2)).unwrap();
        let (geo, t) = f.table_mut();
        let c = match geo.layout() {
            crate::table::Layout::Semi10(c) => c,
            other => panic!("the default layout is {other:?}"),
        };
        let mut rng = SplitMix64::new(8);
        let keys: Vec<u64> = (0..2_000)
            .map(|_| {
                let k = locate_seeded(&geo, rng.next_u64());
                moved(k.i2, k.fp)
            })
            .collect();
        let mut room = Room::all(geo.num_buckets()).unwrap();
        assert_eq!(one_move(&c, &geo, t, &mut room, &keys), Vec::<u64>::new());
        assert_eq!(crate::table::scan(&geo, t), Ok(keys.len() as u64));
        let r = crate::table::raw::Region::new(t, &geo).unwrap();
        for &key in &keys {
            let k = locate_moved(&geo, key);
            assert!(c.count_in(r, k.i1, k.fp) + c.count_in(r, k.i2, k.fp) > 0);
        }
    }

    /// Ranking a run by counting and by sorting keep the same keys in the same slots and move
    /// the same keys on.
    #[test]
    fn counting_and_sorting_rank_runs_alike() {
        let mut f = CuckooFilter::new(Config::new(10_000)).unwrap();
        let geo = f.table_mut().0;
        let m = geo.num_buckets();
        let mut rng = SplitMix64::new(11);
        // Few distinct demands and narrow fingerprints, so that ranks often tie.
        let demand: Vec<u8> = (0..m).map(|_| rng.below(3) as u8).collect();
        for len in [5, 6, 9, 17, 40, 256] {
            let i1 = rng.below(m);
            let mut keys: Vec<u64> = (0..len)
                .map(|_| (rng.next_u64() & !(0x3FF << 8)) | (rng.below(4) << 8))
                .collect();
            keys.sort_unstable();
            keys.dedup();
            let rank = |s: u64| {
                let fp = hash::fingerprint(s, geo.fp_bits());
                (demand[hash::alt_bucket(i1, fp, m) as usize] as u64) << 32 | fp as u64
            };
            let (mut counted, mut sorted) = ([0u32; 4], [0u32; 4]);
            let (mut moved_counted, mut moved_sorted) = (vec![], vec![]);
            keep_best(
                &geo,
                &demand,
                i1,
                &keys,
                &mut counted,
                &mut vec![],
                &mut moved_counted,
            );
            let move_on = |s: u64| {
                let fp = hash::fingerprint(s, geo.fp_bits());
                moved(hash::alt_bucket(i1, fp, m), fp)
            };
            keep_best_sorted(&keys, &mut sorted, &mut moved_sorted, rank, move_on);
            assert_eq!(counted, sorted, "len {len}");
            // The same keys moved on (pass 2 sorts them).
            assert_eq!(
                moved_counted.len(),
                keys.len().saturating_sub(4),
                "len {len}"
            );
            moved_counted.sort_unstable();
            moved_sorted.sort_unstable();
            assert_eq!(moved_counted, moved_sorted, "len {len}");
        }
    }

    /// Hashes crafted so that 600 keys share a first bucket: the run is ranked by sorting, and
    /// every key is found (most of them far from their first bucket).
    #[test]
    fn a_run_too_long_to_count_is_sorted() {
        let seed = 9;
        let mut b = FilterBuilder::new(Config::new(0).seed(seed));
        let mut rng = SplitMix64::new(5);
        let hashes: Vec<KeyHash> = (0..20_000)
            .map(|k| {
                // The seeded hash `fmix64(h ^ seed)` of the first 600 has the same top 32 bits.
                let low = rng.next_u64() & 0xFFFF_FFFF;
                let seeded = if k < 600 {
                    0x1234_5678 << 32 | low
                } else {
                    rng.next_u64()
                };
                KeyHash::from_u64(hash::fmix64_inverse(seeded) ^ seed)
            })
            .collect();
        for &h in &hashes {
            b.add_hash(h);
        }
        let f = b.finish().unwrap();
        assert_eq!(f.len(), 20_000);
        assert!(hashes.iter().all(|&h| f.contains_hash(h)));
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
        // Try `a` uses seed `5 + a·φ` (wrapping): the eighth try (a = 7, the fourth with a
        // larger table) is the first that succeeds. Under overflow checks this also runs the
        // seed arithmetic of tries 2 and up, which once overflowed.
        let tries: Vec<u64> = (0..TRIES as u64)
            .map(|a| 5u64.wrapping_add(a.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
            .collect();
        assert_eq!(tries.iter().position(|&s| s == f.seed()), Some(7));
        let exact = CuckooFilter::new(Config::new(1000)).unwrap();
        assert!(
            f.capacity() > exact.capacity(),
            "tries 4 and up grow the table"
        );
        assert!((0..1000u32).all(|k| f.contains(&k.to_le_bytes())));
        assert_eq!(build(), f);
    }
}
