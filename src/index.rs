//! `RunIndex`: one cuckoo table for every sorted run of an LSM-tree (issue 41). Each entry is a
//! key's fingerprint and the id of the run that holds it, so a point read asks one structure,
//! two buckets, whatever the number of runs, and gets the runs that may hold the key, newest
//! first; per-run filters ask every run's filter in turn and add up their false positives.
//!
//! The table is a stretch level (the growable filter's: it grows in place, one bucket at a
//! time, its entries keeping the hash bits later buckets need) whose slots carry the run id
//! above the core (`probes/run-index/README.md` measures it against a chain of classic
//! tables: as few bits on average, one probe, no key moved). A compaction gives the keys it
//! keeps the new run's id in place and sweeps out what is left of the merged runs; a dropped
//! run is swept out.
//!
//! A key has level entries for at most [`LEVEL_RUNS_PER_KEY`] of its runs: its entries all live
//! in its two buckets, which no split parts, so a hot key's entries would crowd them and the
//! keys that share them until flushes failed. Its other runs are bits of its stash record, an
//! exact map from the key's seeded hash to a run mask, asked only when the level answers for
//! the key with two runs or more (so an absent key, or a key in one run, never pays for it).
//!
//! Its file is FORMAT.md §12 (`index/file.rs`: `to_bytes`, `save`, `from_bytes`,
//! [`MappedRunIndex`]); its C ABI is `capi`'s `cksst_run_index_*`.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::hash::{self, KeyHash};
use crate::stretch::{Refused, StretchLevel};
use crate::table::{Encoding, Geometry};
use std::collections::BTreeMap;

mod file;
pub use file::MappedRunIndex;

/// The most runs an index describes at once: run ids are 6 bits.
pub const MAX_RUNS: usize = 64;

const ID_BITS: u32 = 6;

/// How many keys ahead a flush asks for a key's buckets ([`RunIndex::add_run`]): the probe's
/// distance (16 keys: enough misses in flight to cover one to memory).
const FLUSH_AHEAD: usize = 16;
const CORE_BITS: u32 = crate::chain::CORE_BITS;

/// The most runs a key has entries for in the level. All of a key's entries live in its two
/// buckets (`2b` slots), and no split parts them: a key in more runs (a hot key, updated in
/// many flushes) would crowd its pair and the keys that share it until flushes failed. Its
/// further runs go to the stash instead ([`RunIndex`]'s `stash`): one record per key, with one
/// bit per run, asked only when the level answers for the key.
pub(crate) const LEVEL_RUNS_PER_KEY: u32 = 2;

/// The runs that may hold a key, newest first ([`RunIndex::runs_for`]): an iterator over the
/// index's runs, borrowing it, that allocates nothing.
#[derive(Clone, Debug)]
pub struct Runs<'a> {
    order: &'a [u64],
    ids: &'a [u32],
    /// The run of each id (`MAX_RUNS` of them; `None`: free).
    by_id: &'a [Option<u64>],
    /// One bit per id that may hold the key (live ids only).
    mask: u64,
    /// The bits of `mask` not yet returned: the iterator ends when none is left, without
    /// walking the rest of the order (an absent key's iterator ends at once).
    left: u64,
    at: usize,
}

impl Runs<'_> {
    /// Whether no run may hold the key: it is certainly absent from the tree.
    ///
    /// ```
    /// let index = cuckoo_sst::RunIndex::new(cuckoo_sst::Config::new(10))?;
    /// assert!(index.runs_for(b"k").is_empty());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.mask == 0
    }
}

impl Iterator for Runs<'_> {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        // One run left (a present key's usual answer): its id names it, with no walk of the
        // order (`left` holds live ids only).
        if self.left != 0
            && self.left & (self.left - 1) == 0
            && let Some(&Some(run)) = self.by_id.get(self.left.trailing_zeros() as usize)
        {
            self.left = 0;
            return Some(run);
        }
        while self.left != 0 && self.at < self.order.len() {
            let k = self.at;
            self.at += 1;
            let bit = 1u64 << (self.ids[k] & 63);
            if self.left & bit != 0 {
                self.left &= !bit;
                return Some(self.order[k]);
            }
        }
        None
    }
}

/// How many keys ahead a batch lookup ([`RunIndex::runs_for_batch`]) asks for a key's
/// buckets: as the filters' batches over semi-sorted buckets do.
pub(crate) const BATCH_AHEAD: usize = 16;

/// What a batch asks: an owned index or a mapped one.
#[derive(Clone, Copy)]
enum Source<'a> {
    Owned(&'a RunIndex),
    Mapped(&'a MappedRunIndex),
}

impl<'a> Source<'a> {
    #[inline]
    fn seeded(self, h: KeyHash) -> u64 {
        match self {
            Source::Owned(x) => hash::seeded(h, x.seed),
            Source::Mapped(m) => m.seeded(h),
        }
    }

    #[inline]
    fn prefetch(self, s: u64) {
        match self {
            Source::Owned(x) => {
                crate::stretch::prefetch_lookup(&x.level.geometry(), x.level.table(), s)
            }
            Source::Mapped(m) => m.prefetch(s),
        }
    }

    #[inline]
    fn runs(self, s: u64) -> Runs<'a> {
        match self {
            Source::Owned(x) => x.runs_for_seeded(s),
            Source::Mapped(m) => m.runs_for_seeded(s),
        }
    }
}

/// The iterator of a batch lookup: the seeded hashes of the next [`BATCH_AHEAD`] keys, their
/// buckets asked for, in a ring.
struct Batch<'a, F> {
    src: Source<'a>,
    len: usize,
    hash_at: F,
    at: usize,
    ring: [u64; BATCH_AHEAD],
}

impl<'a, F: Fn(usize) -> KeyHash> Batch<'a, F> {
    fn new(src: Source<'a>, len: usize, hash_at: F) -> Self {
        let mut ring = [0; BATCH_AHEAD];
        for (j, slot) in ring.iter_mut().enumerate().take(len) {
            *slot = src.seeded(hash_at(j));
            src.prefetch(*slot);
        }
        Batch {
            src,
            len,
            hash_at,
            at: 0,
            ring,
        }
    }
}

impl<'a, F: Fn(usize) -> KeyHash> Iterator for Batch<'a, F> {
    type Item = Runs<'a>;

    #[inline]
    fn next(&mut self) -> Option<Runs<'a>> {
        if self.at >= self.len {
            return None;
        }
        let slot = self.at % BATCH_AHEAD;
        let s = self.ring[slot];
        let ahead = self.at + BATCH_AHEAD;
        if ahead < self.len {
            let t = self.src.seeded((self.hash_at)(ahead));
            self.src.prefetch(t);
            self.ring[slot] = t;
        }
        self.at += 1;
        Some(self.src.runs(s))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.len - self.at;
        (left, Some(left))
    }
}

impl<F: Fn(usize) -> KeyHash> ExactSizeIterator for Batch<'_, F> {}

/// One cuckoo table mapping each key to the sorted runs that may hold it (see the module
/// docs): built from runs as they are flushed, updated by compactions and dropped runs.
///
/// ```
/// use cuckoo_sst::{Config, KeyHash, RunIndex};
///
/// let mut index = RunIndex::new(Config::new(1_000))?;
/// let run_a: Vec<KeyHash> = (0..500u32).map(|i| KeyHash::of(&i.to_le_bytes())).collect();
/// let run_b: Vec<KeyHash> = (500..900u32).map(|i| KeyHash::of(&i.to_le_bytes())).collect();
/// index.add_run(10, &run_a)?;
/// index.add_run(11, &run_b)?; // newer
/// assert!(index.runs_for(&7u32.to_le_bytes()).any(|r| r == 10));
/// // Both merged into run 12, every key kept:
/// let kept: Vec<KeyHash> = run_a.iter().chain(&run_b).copied().collect();
/// index.compact(&[10, 11], 12, &kept)?;
/// assert_eq!(index.runs(), &[12]);
/// assert!(index.runs_for(&600u32.to_le_bytes()).any(|r| r == 12));
/// # Ok::<(), cuckoo_sst::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct RunIndex {
    level: StretchLevel,
    /// The engine's run of each id (`None`: the id is free).
    ids: Vec<Option<u64>>,
    /// The engine's runs, newest first.
    order: Vec<u64>,
    /// Their ids, in the same order.
    order_ids: Vec<u32>,
    /// One bit per id in use.
    live: u64,
    /// A compaction failed part-way: every lookup answers every run.
    stale: bool,
    seed: u64,
    max_kicks: u32,
    /// The runs of keys in more than [`LEVEL_RUNS_PER_KEY`] runs beyond those their level
    /// entries name: seeded hash → one bit per id (nonzero, live ids only). The level answers
    /// every key here with at least `LEVEL_RUNS_PER_KEY` ids, so a lookup asks the stash only
    /// where it does (an absent key almost never, a key in one run never;
    /// [`restore_stash`](Self::restore_stash) keeps it so).
    stash: BTreeMap<u64, u64>,
}

impl RunIndex {
    /// An empty index sized for `config`'s capacity (entries: a key in two runs is two), whose
    /// lookups answer "maybe" for an absent key at about `config`'s false-positive rate (the
    /// level's bound, [`expected_fpr`](Self::expected_fpr), as it grows). It grows past the
    /// capacity in place.
    ///
    /// ```
    /// let index = cuckoo_sst::RunIndex::new(cuckoo_sst::Config::new(1_000))?;
    /// assert!(index.runs().is_empty());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn new(config: Config) -> Result<RunIndex> {
        config.geometry()?; // every setting checked as for a single filter
        let (b, encoding) = (4, Encoding::SemiSorted);
        let w = crate::chain::slot_width(b, encoding, config.fpr)
            .map(|w| w + ID_BITS)
            .filter(|&w| w <= 32)
            .ok_or_else(|| {
                Error::invalid(
                    "false_positive_rate",
                    format!("{} needs slots wider than 32 bits with run ids", config.fpr),
                )
            })?;
        let load = crate::chain::split_load(b);
        let buckets = (config.capacity as f64 / (b as f64 * load))
            .ceil()
            .clamp(2.0, crate::table::MAX_BUCKETS as f64) as u64;
        let geo = Geometry::stretch_with_payload(buckets, b, w, encoding, CORE_BITS, ID_BITS)?;
        Ok(RunIndex {
            level: StretchLevel::new(geo, config.seed, config.max_kicks, config.fpr)?,
            ids: vec![None; MAX_RUNS],
            order: Vec::new(),
            order_ids: Vec::new(),
            live: 0,
            stale: false,
            seed: config.seed,
            max_kicks: config.max_kicks,
            stash: BTreeMap::new(),
        })
    }

    /// The runs the index describes, newest first.
    ///
    /// ```
    /// let mut index = cuckoo_sst::RunIndex::new(cuckoo_sst::Config::new(10))?;
    /// index.add_run(7, &[])?;
    /// assert_eq!(index.runs(), &[7]);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn runs(&self) -> &[u64] {
        &self.order
    }

    /// Entries in the index (a key in two runs counts twice): the level's, and one per run a
    /// stash record names.
    ///
    /// ```
    /// let index = cuckoo_sst::RunIndex::new(cuckoo_sst::Config::new(10))?;
    /// assert_eq!(index.len(), 0);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        let stashed: u64 = self.stash.values().map(|v| u64::from(v.count_ones())).sum();
        (self.level.entries() + stashed) as usize
    }

    /// Keys whose further runs the stash holds (keys in more than two runs, see
    /// [`add_run`](Self::add_run)).
    ///
    /// ```
    /// use cuckoo_sst::{Config, KeyHash, RunIndex};
    /// let mut index = RunIndex::new(Config::new(100))?;
    /// for run in 0..5 {
    ///     index.add_run(run, &[KeyHash::of(b"hot")])?;
    /// }
    /// assert_eq!(index.stashed_keys(), 1);
    /// assert_eq!(index.runs_for(b"hot").count(), 5);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn stashed_keys(&self) -> usize {
        self.stash.len()
    }

    /// Whether the index holds no entry.
    ///
    /// ```
    /// assert!(cuckoo_sst::RunIndex::new(cuckoo_sst::Config::new(10))?.is_empty());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bound on the rate at which an absent key gets a run.
    ///
    /// ```
    /// let index = cuckoo_sst::RunIndex::new(cuckoo_sst::Config::new(10))?;
    /// assert!(index.expected_fpr() <= 0.01);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn expected_fpr(&self) -> f64 {
        self.level.fpr_bound()
    }

    /// Bytes of the bucket table and the stash (16 a record, as in its file).
    ///
    /// ```
    /// let index = cuckoo_sst::RunIndex::new(cuckoo_sst::Config::new(1000))?;
    /// assert!(index.size_in_bytes() > 0);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn size_in_bytes(&self) -> usize {
        self.level.table().len() + 16 * self.stash.len()
    }

    /// Adds a run, newer than every run the index describes, with the hashes of its keys
    /// (what its `FilterBuilder` was given: a key listed several times, as a table's versions
    /// of it are, is taken once). `InvalidConfig` if `run` is already described or
    /// [`MAX_RUNS`] are; nothing changes then.
    ///
    /// A key may be in every run: the level holds entries for two of its runs, and a stash
    /// record (one per key, a bit per run) the others, so hot keys updated in every flush
    /// neither crowd the level nor get a flush refused.
    ///
    /// ```
    /// use cuckoo_sst::{Config, KeyHash, RunIndex};
    /// let mut index = RunIndex::new(Config::new(100))?;
    /// index.add_run(1, &[KeyHash::of(b"k")])?;
    /// assert_eq!(index.runs_for(b"k").collect::<Vec<_>>(), [1]);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn add_run(&mut self, run: u64, hashes: &[KeyHash]) -> Result<()> {
        let id = self.free_id(run)?;
        if let Err(e) = self.insert_run(hashes, id) {
            // Nothing of the run stays: its id is free again. (The splits made for it stay:
            // a split keeps every entry answering for its keys.)
            self.level.remove_payloads(|p| p == id);
            self.unstash(1 << id);
            if self.restore_stash().is_err() {
                self.stale = true;
            }
            return Err(e);
        }
        self.ids[id as usize] = Some(run);
        self.order.insert(0, run);
        self.order_ids.insert(0, id);
        self.live |= 1 << id;
        Ok(())
    }

    /// A compaction: the runs `merged` (each described by the index) are replaced by `into`,
    /// which holds the keys `kept` (each in one of the merged runs). Each kept key's entry is
    /// given `into`'s id in place; what is left of the merged runs (the keys the compaction
    /// dropped) is swept out. `into` takes the place of the newest merged run in the order.
    /// `InvalidConfig` if a merged run is not described, none is given or `into` is described;
    /// nothing changes then. A compaction that must insert a key (one `kept` names that no
    /// merged run holds) may fail part-way (`Full`): the index is then stale
    /// ([`is_stale`](Self::is_stale)) and describes `into` beside the merged runs — or, when
    /// every id was in use, the merged runs alone.
    ///
    /// ```
    /// use cuckoo_sst::{Config, KeyHash, RunIndex};
    /// let mut index = RunIndex::new(Config::new(100))?;
    /// index.add_run(1, &[KeyHash::of(b"a"), KeyHash::of(b"b")])?;
    /// index.add_run(2, &[KeyHash::of(b"c")])?;
    /// index.compact(&[1, 2], 3, &[KeyHash::of(b"a"), KeyHash::of(b"c")])?; // "b" deleted
    /// assert_eq!(index.runs_for(b"a").collect::<Vec<_>>(), [3]);
    /// assert_eq!(index.runs(), &[3]);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn compact(&mut self, merged: &[u64], into: u64, kept: &[KeyHash]) -> Result<()> {
        let mut from = [false; MAX_RUNS];
        for r in merged {
            match self.id_of(*r) {
                Some(id) => from[id as usize] = true,
                None => {
                    return Err(Error::invalid(
                        "merged",
                        format!("run {r} is not described by the index"),
                    ));
                }
            }
        }
        if self.id_of(into).is_some() {
            return Err(Error::invalid(
                "into",
                format!("run {into} is already described by the index"),
            ));
        }
        // The new run's id: a free one, so that every merged id is swept; with none free (the
        // index describes MAX_RUNS runs), the first merged run's, whose dropped keys then stay
        // under it (false positives, never a lost key) until it is merged again.
        let Some(&first) = merged.first() else {
            return Err(Error::invalid("merged", "no run to merge".to_string()));
        };
        let (to, shared) = match self.ids.iter().position(Option::is_none) {
            Some(free) => (free as u32, false),
            None => (self.id_of(first).unwrap_or(0), true),
        };
        // The new run is described first, beside the merged ones, so that a key moved to it
        // is found there at every point; the merged runs go once their keys have moved.
        let pos = self
            .order
            .iter()
            .position(|r| merged.contains(r))
            .unwrap_or(0);
        self.ids[to as usize] = Some(into);
        self.live |= 1 << to;
        self.order.insert(pos, into);
        self.order_ids.insert(pos, to);
        let from_mask = from
            .iter()
            .enumerate()
            .fold(0u64, |m, (k, &f)| m | u64::from(f) << k)
            & !(1 << to);
        let mut missing = Vec::new();
        let seed = self.seed;
        for (j, &h) in kept.iter().enumerate() {
            // The buckets of the key FLUSH_AHEAD places on asked for, as a flush does.
            if let Some(&ahead) = kept.get(j + FLUSH_AHEAD) {
                self.level.prefetch_seeded(hash::seeded(ahead, seed));
            }
            let s = hash::seeded(h, seed);
            // An entry under the new id answers already (the key listed twice, or its entry
            // shared with a key moved before it): nothing to move. Else a level entry of a
            // merged run takes the new id in place.
            match self.level.retarget(s, |p| from_mask >> p & 1 == 1, to) {
                None | Some(true) => continue,
                Some(false) => {}
            }
            // Failing that (the key's merged runs are all in its stash record), the record
            // gets the new id.
            if let Some(ids) = self.stash.get_mut(&s)
                && (*ids >> to & 1 == 1 || *ids & from_mask != 0)
            {
                *ids |= 1 << to;
                continue;
            }
            // In no merged run (the engine's list says otherwise): given an entry below.
            missing.push(s);
        }
        for s in missing {
            if let Err(e) = self.place(s, to) {
                // The key may be in no run the index names: until it is rebuilt, it names
                // every run.
                self.stale = true;
                if shared {
                    // `into` has no id of its own to be described with beside the merged runs
                    // (at most MAX_RUNS, with distinct ids): the id names the first merged run
                    // again, and `into` is not described.
                    self.ids[to as usize] = Some(first);
                    self.order.remove(pos);
                    self.order_ids.remove(pos);
                }
                return Err(e);
            }
        }
        self.level.remove_payloads(|p| from_mask >> p & 1 == 1);
        self.unstash(from_mask);
        if let Err(e) = self.restore_stash() {
            self.stale = true;
            return Err(e);
        }
        for &r in merged {
            if let Some(id) = self.id_of(r)
                && id != to
            {
                self.ids[id as usize] = None;
                self.live &= !(1 << id);
            }
        }
        self.order.retain(|r| !merged.contains(r));
        self.order_ids = self.order.iter().map(|&r| self.id_of(r).unwrap()).collect();
        Ok(())
    }

    /// Drops a run: its entries are swept out. `false` if the index does not describe it.
    /// (Should a stashed key's level entries all be of the dropped run, one of its other runs
    /// moves from the stash to the level; were that to fail, the index would be stale.)
    ///
    /// ```
    /// use cuckoo_sst::{Config, KeyHash, RunIndex};
    /// let mut index = RunIndex::new(Config::new(100))?;
    /// index.add_run(1, &[KeyHash::of(b"a")])?;
    /// assert!(index.drop_run(1));
    /// assert!(index.runs_for(b"a").is_empty());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn drop_run(&mut self, run: u64) -> bool {
        let Some(id) = self.id_of(run) else {
            return false;
        };
        self.level.remove_payloads(|p| p == id);
        self.unstash(1 << id);
        if self.restore_stash().is_err() {
            // A key of the stash could not be given its level entry back: the index no longer
            // knows where it is (never seen: the level has just lost entries).
            self.stale = true;
        }
        self.ids[id as usize] = None;
        self.live &= !(1 << id);
        self.order.retain(|&r| r != run);
        self.order_ids.retain(|&i| i != id);
        true
    }

    /// The runs that may hold `key`, newest first; empty means the key is in no run. After a
    /// compaction that failed part-way ([`compact`](Self::compact) returned an error), every
    /// run the index describes: it no longer knows which.
    ///
    /// ```
    /// use cuckoo_sst::{Config, KeyHash, RunIndex};
    /// let mut index = RunIndex::new(Config::new(100))?;
    /// index.add_run(4, &[KeyHash::of(b"a")])?;
    /// index.add_run(5, &[KeyHash::of(b"a")])?;
    /// assert_eq!(index.runs_for(b"a").collect::<Vec<_>>(), [5, 4]);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn runs_for(&self, key: &[u8]) -> Runs<'_> {
        self.runs_for_hash(KeyHash::of(key))
    }

    /// [`runs_for`](Self::runs_for) for a precomputed hash.
    ///
    /// ```
    /// let index = cuckoo_sst::RunIndex::new(cuckoo_sst::Config::new(10))?;
    /// assert!(index.runs_for_hash(cuckoo_sst::KeyHash::of(b"k")).is_empty());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn runs_for_hash(&self, h: KeyHash) -> Runs<'_> {
        self.runs_for_seeded(hash::seeded(h, self.seed))
    }

    /// [`runs_for_hash`](Self::runs_for_hash) for many keys, in order: while it answers one
    /// key it asks the CPU for the buckets of the key 16 places on, so that the
    /// batch's cache misses overlap instead of adding up (a point read's keys, or a multi-get).
    /// Allocates nothing.
    ///
    /// ```
    /// use cuckoo_sst::{Config, KeyHash, RunIndex};
    /// let mut index = RunIndex::new(Config::new(100))?;
    /// index.add_run(1, &[KeyHash::of(b"a")])?;
    /// index.add_run(2, &[KeyHash::of(b"a"), KeyHash::of(b"b")])?;
    /// let hashes = [KeyHash::of(b"a"), KeyHash::of(b"b"), KeyHash::of(b"c")];
    /// let runs: Vec<Vec<u64>> = index.runs_for_batch(&hashes).map(|r| r.collect()).collect();
    /// assert_eq!(runs[0], [2, 1]);
    /// assert!(runs[1].contains(&2));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn runs_for_batch<'a>(
        &'a self,
        hashes: &'a [KeyHash],
    ) -> impl ExactSizeIterator<Item = Runs<'a>> + 'a {
        Batch::new(Source::Owned(self), hashes.len(), move |i| hashes[i])
    }

    /// [`runs_for_batch`](Self::runs_for_batch) for keys, each hashed once as the batch asks
    /// for its buckets.
    ///
    /// ```
    /// use cuckoo_sst::{Config, KeyHash, RunIndex};
    /// let mut index = RunIndex::new(Config::new(100))?;
    /// index.add_run(1, &[KeyHash::of(b"a")])?;
    /// let firsts: Vec<Option<u64>> =
    ///     index.runs_for_batch_keys(&["a", "b"]).map(|mut r| r.next()).collect();
    /// assert_eq!(firsts[0], Some(1));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn runs_for_batch_keys<'a, K: AsRef<[u8]>>(
        &'a self,
        keys: &'a [K],
    ) -> impl ExactSizeIterator<Item = Runs<'a>> + 'a {
        Batch::new(Source::Owned(self), keys.len(), move |i| {
            KeyHash::of(keys[i].as_ref())
        })
    }

    /// [`runs_for_hash`](Self::runs_for_hash) for a seeded hash.
    #[inline]
    fn runs_for_seeded(&self, s: u64) -> Runs<'_> {
        let found = if self.stale { u64::MAX } else { self.found(s) };
        let mask = found & self.live;
        Runs {
            order: &self.order,
            ids: &self.order_ids,
            by_id: &self.ids,
            mask,
            left: mask,
            at: 0,
        }
    }

    fn id_of(&self, run: u64) -> Option<u32> {
        self.ids
            .iter()
            .position(|&r| r == Some(run))
            .map(|i| i as u32)
    }

    fn free_id(&self, run: u64) -> Result<u32> {
        if self.id_of(run).is_some() {
            return Err(Error::invalid(
                "run",
                format!("run {run} is already described by the index"),
            ));
        }
        self.ids
            .iter()
            .position(Option::is_none)
            .map(|i| i as u32)
            .ok_or_else(|| {
                Error::invalid(
                    "run",
                    format!("the index describes {MAX_RUNS} runs, the most it can"),
                )
            })
    }

    /// The ids that may hold the key with seeded hash `s`: its level entries', and when the
    /// level answers for it with [`LEVEL_RUNS_PER_KEY`] ids or more (as it does for every
    /// stashed key), its stash record's.
    #[inline]
    fn found(&self, s: u64) -> u64 {
        let found = self.level.payloads_of(s);
        if found.count_ones() < LEVEL_RUNS_PER_KEY || self.stash.is_empty() {
            found
        } else {
            found | self.stash.get(&s).copied().unwrap_or(0)
        }
    }

    /// Clears the ids of `mask` from every stash record, removing the records left empty.
    fn unstash(&mut self, mask: u64) {
        if !self.stash.is_empty() {
            self.stash.retain(|_, ids| {
                *ids &= !mask;
                *ids != 0
            });
        }
    }

    /// After entries were swept out (or moved to another id): a stashed key the level answers
    /// with fewer than [`LEVEL_RUNS_PER_KEY`] ids gets its stash runs back as level entries,
    /// one at a time, until it has that many or its record is empty, so that lookups, which
    /// ask the stash only where the level answers with that many ids, still find it.
    fn restore_stash(&mut self) -> Result<()> {
        let short: Vec<u64> = self
            .stash
            .keys()
            .copied()
            .filter(|&s| self.level.payloads_of(s).count_ones() < LEVEL_RUNS_PER_KEY)
            .collect();
        for s in short {
            while self.level.payloads_of(s).count_ones() < LEVEL_RUNS_PER_KEY {
                let Some(&ids) = self.stash.get(&s) else {
                    break;
                };
                self.insert(s, ids.trailing_zeros())?;
                if ids & (ids - 1) == 0 {
                    self.stash.remove(&s);
                } else {
                    self.stash.insert(s, ids & (ids - 1));
                }
            }
        }
        Ok(())
    }

    /// Gives the key with seeded hash `s` the run `id`: nothing when an entry of the run
    /// answers for it already (the key listed twice, or a key sharing its entry); its stash
    /// record when the level holds [`LEVEL_RUNS_PER_KEY`] runs for it; else a level entry.
    fn place(&mut self, s: u64, id: u32) -> Result<()> {
        let found = self.found(s);
        if found >> id & 1 == 1 {
            return Ok(());
        }
        if found.count_ones() >= LEVEL_RUNS_PER_KEY {
            *self.stash.entry(s).or_insert(0) |= 1 << id;
            return Ok(());
        }
        self.insert(s, id)
    }

    /// Inserts the entries (payload `id`) of a run's keys, as a flush does, breadth-first as
    /// the probe's batched flush does (`probes/run-index`, `src/bin/updates.rs`): the level is
    /// grown first to hold them all at its split load (one pass of splits, not one check per
    /// key), then each key placed while the buckets of the key [`FLUSH_AHEAD`] places on are
    /// asked for, so that their misses overlap. A key the search does not place goes through
    /// [`insert`](Self::insert), which splits further. An error leaves the entries placed so
    /// far (the caller sweeps them out).
    fn insert_run(&mut self, hashes: &[KeyHash], id: u32) -> Result<()> {
        let load = crate::chain::split_load(self.level.geometry().bucket_size());
        let want = self.level.entries().saturating_add(hashes.len() as u64) as f64;
        while want > load * self.level.geometry().slots() as f64 {
            self.level.split()?;
        }
        let seed = self.seed;
        for (j, &h) in hashes.iter().enumerate() {
            if let Some(&ahead) = hashes.get(j + FLUSH_AHEAD) {
                self.level.prefetch_seeded(hash::seeded(ahead, seed));
            }
            let s = hash::seeded(h, seed);
            if self.level.payloads_of(s) != 0 {
                // The key is in the level already (an older run's, or listed twice here), or
                // shares an entry's bits: `place` decides (nothing, the stash, or an entry).
                self.place(s, id)?;
                continue;
            }
            match self.level.insert_payload_within(s, id, self.max_kicks) {
                // An equal entry (same run) answers for the key already.
                Ok(()) | Err(Refused::Copies) => {}
                Err(_) => self.insert(s, id)?,
            }
        }
        Ok(())
    }

    /// Inserts the entry (seeded hash `s`, payload `id`), splitting buckets while the level
    /// is past its load and as long as the search for a free slot fails.
    fn insert(&mut self, s: u64, id: u32) -> Result<()> {
        let load = crate::chain::split_load(self.level.geometry().bucket_size());
        while (self.level.entries() + 1) as f64 > load * self.level.geometry().slots() as f64 {
            self.level.split_logged()?;
        }
        self.level.keep_splits();
        for attempt in 0..64 {
            let budget = if attempt < 4 {
                self.max_kicks
            } else {
                self.max_kicks.saturating_mul(8)
            };
            match self.level.insert_payload_within(s, id, budget) {
                // An equal entry (same run) answers for the key already.
                Ok(()) | Err(Refused::Copies) => return Ok(()),
                Err(_) => {
                    self.level.split_logged()?;
                    self.level.keep_splits();
                }
            }
        }
        Err(Error::Full)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::SplitMix64;
    use std::collections::HashMap;

    fn h(i: u64) -> KeyHash {
        KeyHash::of(&i.to_le_bytes())
    }

    /// Flushes into a level filled to its split load: the flush grows the level for its keys
    /// first, then places them (prefetching ahead), and every key of every run is found with
    /// its run, newest first — a run of many keys, one of a single key, one that repeats keys
    /// of older runs and its own, and one large enough to quadruple the level — and the level is
    /// back within its load after each flush. Also with a search budget of 8 (a key that
    /// finds no room at once goes through the splitting insert).
    #[test]
    fn flushes_into_a_full_level_keep_every_key() {
        for kicks in [500, 8] {
            let mut index = RunIndex::new(Config::new(1_000).seed(5).max_kicks(kicks)).unwrap();
            let load = crate::chain::split_load(4);
            let full =
                |index: &RunIndex| index.len() as f64 / index.level.geometry().slots() as f64;
            // Fill to the split load with one run (the flush needs no split for it).
            let mut runs: Vec<(u64, Vec<u64>)> = Vec::new();
            let n = (load * index.level.geometry().slots() as f64) as u64;
            let first: Vec<u64> = (0..n).collect();
            index
                .add_run(0, &first.iter().map(|&k| h(k)).collect::<Vec<_>>())
                .unwrap();
            runs.push((0, first.clone()));
            // (With a budget of 8 some of its keys may find no room and split buckets.)
            let least = if kicks == 8 { load - 0.1 } else { load - 0.01 };
            assert!(full(&index) > least, "kicks {kicks}: {}", full(&index));
            let buckets = index.level.geometry().num_buckets();
            let mut next = 1 << 20;
            let mut fresh = |n: u64| {
                let v: Vec<u64> = (next..next + n).collect();
                next += n;
                v
            };
            let mut repeated = fresh(300);
            repeated.extend(first.iter().step_by(3).copied());
            repeated.extend(repeated.clone().iter().take(50));
            for (run, keys) in [
                (1, fresh(2_000)),
                (2, fresh(1)),
                (3, repeated),
                (4, fresh(3 * buckets * 4)),
            ] {
                let hashes: Vec<KeyHash> = keys.iter().map(|&k| h(k)).collect();
                index.add_run(run, &hashes).unwrap();
                runs.push((run, keys));
                assert!(full(&index) <= load + 1e-9, "kicks {kicks} run {run}");
                let order: Vec<u64> = runs.iter().rev().map(|r| r.0).collect();
                assert_eq!(index.runs(), &order[..]);
                for (r, keys) in &runs {
                    for &k in keys {
                        let got: Vec<u64> = index.runs_for_hash(h(k)).collect();
                        assert!(
                            got.contains(r),
                            "kicks {kicks}: key {k} of run {r}: {got:?}"
                        );
                        assert!(got.windows(2).all(|w| w[0] > w[1]), "{got:?}");
                    }
                }
            }
            assert!(index.level.geometry().num_buckets() >= 4 * buckets);
        }
    }

    /// Batches answer as single lookups do, key by key and in order, owned and mapped, by hash
    /// and by key: empty, shorter than the ring, its length, one more, and long batches; hot
    /// keys with stash records among them; a stale index (every run) and a mapped file with a
    /// damaged chunk (every run for the keys whose buckets lie there).
    #[test]
    fn batches_answer_as_single_lookups() {
        let mut index = RunIndex::new(Config::new(20_000).seed(4)).unwrap();
        for run in 0..12u64 {
            let mut keys: Vec<KeyHash> = (run * 3_000..run * 3_000 + 3_000).map(h).collect();
            keys.extend((0..10).map(|j| h((1 << 40) + j)));
            index.add_run(run, &keys).unwrap();
        }
        assert!(index.stashed_keys() >= 10);
        let queries: Vec<u64> = (0..40_000u64)
            .step_by(7)
            .chain((1 << 40)..(1 << 40) + 10)
            .chain((1 << 50)..(1 << 50) + 500)
            .collect();
        let hashes: Vec<KeyHash> = queries.iter().map(|&k| h(k)).collect();
        let keys: Vec<[u8; 8]> = queries.iter().map(|k| k.to_le_bytes()).collect();
        let mut bytes = index.to_bytes();
        let check = |index: &RunIndex, bytes: &[u8]| {
            let m = MappedRunIndex::from_shared(bytes.to_vec().into()).unwrap();
            for n in [
                0,
                1,
                BATCH_AHEAD - 1,
                BATCH_AHEAD,
                BATCH_AHEAD + 1,
                hashes.len(),
            ] {
                let owned = index.runs_for_batch(&hashes[..n]);
                assert_eq!(owned.len(), n);
                let by_key = index.runs_for_batch_keys(&keys[..n]);
                let mapped = m.runs_for_batch(&hashes[..n]);
                let mapped_keys = m.runs_for_batch_keys(&keys[..n]);
                let all = owned.zip(by_key).zip(mapped.zip(mapped_keys));
                let mut count = 0;
                for (i, ((a, b), (c, d))) in all.enumerate() {
                    let one: Vec<u64> = index.runs_for_hash(hashes[i]).collect();
                    let one_mapped: Vec<u64> = m.runs_for_hash(hashes[i]).collect();
                    assert_eq!(a.collect::<Vec<_>>(), one, "key {}", queries[i]);
                    assert_eq!(b.collect::<Vec<_>>(), one);
                    assert_eq!(c.collect::<Vec<_>>(), one_mapped);
                    assert_eq!(d.collect::<Vec<_>>(), one_mapped);
                    count += 1;
                }
                assert_eq!(count, n);
            }
        };
        check(&index, &bytes);
        // A damaged chunk in the middle of the buckets: the mapped batch answers every run
        // where single lookups do.
        let at = bytes.len() - index.level.table().len() / 2;
        bytes[at] ^= 0x10;
        check(&index, &bytes);
        index.stale = true;
        check(&index, &index.to_bytes());
    }

    /// Hashes of `n` distinct keys that share one bucket pair however far the level grows
    /// within its doubling, and the bits a split parts keys by, but not their entries (they
    /// differ in continuation bits the entries keep): only `2b` of them fit, and no split makes
    /// room for a ninth.
    fn crowding(index: &RunIndex, n: u64) -> Vec<KeyHash> {
        let split = index.level.geometry().split();
        let k = split.k;
        assert!(
            split.s + 256 < (1 << k) - 1,
            "the pair's bucket is split too soon"
        );
        (0..n)
            .map(|j| {
                let s = 3u64 << 59 | j << (k + 3) | ((1 << k) - 1);
                KeyHash::from_u64(crate::hash::fmix64_inverse(s) ^ index.seed)
            })
            .collect()
    }

    /// Keys the level cannot tell apart (every bit its entries and addresses use is the same;
    /// they differ in bit 50 only) share entries: key 1's flush into run 12 finds the ids of
    /// runs 10 (its own) and 11 (key 2's entry), so run 12 goes to its stash record. When run
    /// 11 is dropped, key 1 is answered with one id only, and lookups would no longer ask its
    /// record: the sweep gives the record's run back to the level. Then every run of key 1 is
    /// found, through drops and a compaction, owned and from its file.
    #[test]
    fn a_stash_record_outlives_the_entries_that_put_it_there() {
        let mut index = RunIndex::new(Config::new(1_000).seed(6)).unwrap();
        let twin = |bit: u64| {
            let s = 0x1234_5678_9ABC_DEF0u64 & !(1 << 50) | bit << 50;
            KeyHash::from_u64(crate::hash::fmix64_inverse(s) ^ index.seed)
        };
        let (k1, k2) = (twin(0), twin(1));
        index.add_run(10, &[k1, h(1)]).unwrap();
        index.add_run(11, &[k2, h(2)]).unwrap();
        assert_eq!(index.runs_for_hash(k1).collect::<Vec<_>>(), [11, 10]);
        index.add_run(12, &[k1, h(3)]).unwrap();
        assert_eq!(index.stashed_keys(), 1);
        assert_eq!(index.runs_for_hash(k1).collect::<Vec<_>>(), [12, 11, 10]);
        assert!(index.drop_run(11));
        assert_eq!(index.stashed_keys(), 0);
        assert_eq!(index.runs_for_hash(k1).collect::<Vec<_>>(), [12, 10]);
        index.add_run(13, &[k1, k2]).unwrap();
        index.add_run(14, &[k1]).unwrap();
        let mapped = crate::MappedRunIndex::from_shared(index.to_bytes().into()).unwrap();
        for x in [&index, &RunIndex::from_bytes(&index.to_bytes()).unwrap()] {
            assert_eq!(x.runs_for_hash(k1).collect::<Vec<_>>(), [14, 13, 12, 10]);
        }
        assert_eq!(
            mapped.runs_for_hash(k1).collect::<Vec<_>>(),
            [14, 13, 12, 10]
        );
        // Runs 13 and 14 merged into 15, keeping key 1 only; run 10 dropped.
        index.compact(&[14, 13], 15, &[k1]).unwrap();
        assert!(index.drop_run(10));
        assert_eq!(index.runs_for_hash(k1).collect::<Vec<_>>(), [15, 12]);
    }

    /// A compaction that fails part-way (`Full`: the engine's list names keys no merged run
    /// holds, more of them than their crowded pair takes) while the index describes `MAX_RUNS`
    /// runs, so that `into` took the first merged run's id: the index is stale and answers
    /// every run it describes, of which there are at most `MAX_RUNS` with distinct ids, and its
    /// file reads back. (The fuzz target found it on 2026-11-28: the index described 65 runs,
    /// two with one id, and its lookups left the first merged run out — a false negative.)
    #[test]
    fn a_compaction_failing_with_every_id_in_use_leaves_a_stale_index_that_answers_every_run() {
        let mut index = RunIndex::new(Config::new(8_000).seed(2)).unwrap();
        let mut model: Vec<(u64, Vec<KeyHash>)> = Vec::new();
        for run in 0..MAX_RUNS as u64 {
            let keys: Vec<KeyHash> = (run * 30..run * 30 + 30).map(h).collect();
            index.add_run(run, &keys).unwrap();
            model.push((run, keys));
        }
        let mut kept: Vec<KeyHash> = model[40].1.iter().chain(&model[41].1).copied().collect();
        kept.extend(crowding(&index, 20));
        assert!(matches!(
            index.compact(&[40, 41], 100, &kept),
            Err(Error::Full)
        ));
        assert!(index.is_stale());
        let runs = index.runs().to_vec();
        assert!(runs.len() <= MAX_RUNS, "{} runs", runs.len());
        for (run, keys) in &model {
            assert!(runs.contains(run), "run {run} no longer described");
            for &k in keys {
                assert_eq!(index.runs_for_hash(k).collect::<Vec<_>>(), runs);
            }
        }
        let bytes = index.to_bytes();
        let back = RunIndex::from_bytes(&bytes).unwrap();
        let mapped = crate::MappedRunIndex::from_shared(bytes.into()).unwrap();
        assert!(back.is_stale() && mapped.is_stale());
        assert_eq!((back.runs(), mapped.runs()), (&runs[..], &runs[..]));
        assert_eq!(back.runs_for_hash(h(7)).collect::<Vec<_>>(), runs);
        assert_eq!(mapped.runs_for_hash(h(7)).collect::<Vec<_>>(), runs);
    }

    /// Flushes, compactions (keeping most keys, dropping some), drops and lookups against an
    /// exact model: every key of every live run is answered with its run, newest first; the
    /// index's runs are the model's.
    #[test]
    fn flushes_compactions_and_drops_against_a_model() {
        let mut index = RunIndex::new(Config::new(2_000).seed(3)).unwrap();
        // run → its keys; order newest first.
        let mut model: HashMap<u64, Vec<u64>> = HashMap::new();
        let mut order: Vec<u64> = Vec::new();
        let mut rng = SplitMix64::new(9);
        let (mut next_run, mut next_key) = (0u64, 0u64);
        let mut stashed = false;
        for step in 0..300 {
            match rng.below(10) {
                0..6 => {
                    // A flush: new keys, and some updates of keys in older runs.
                    let n = rng.below(400) + 1;
                    let mut keys: Vec<u64> = (next_key..next_key + n).collect();
                    next_key += n;
                    let old: Vec<u64> = model.values().flatten().copied().collect();
                    for _ in 0..rng.below(20) {
                        if !old.is_empty() {
                            keys.push(old[rng.below(old.len() as u64) as usize]);
                        }
                    }
                    // Hot keys, in most runs: their runs past two go to the stash.
                    for _ in 0..rng.below(8) {
                        keys.push((1 << 50) + rng.below(12));
                    }
                    keys.sort_unstable();
                    keys.dedup();
                    if order.len() == MAX_RUNS {
                        continue;
                    }
                    let hashes: Vec<KeyHash> = keys.iter().map(|&k| h(k)).collect();
                    index.add_run(next_run, &hashes).unwrap();
                    model.insert(next_run, keys);
                    order.insert(0, next_run);
                    next_run += 1;
                }
                6..9 if order.len() >= 2 => {
                    // A compaction of 2..4 adjacent runs, dropping a tenth of their keys.
                    let k = (rng.below(3) + 2).min(order.len() as u64) as usize;
                    let at = rng.below((order.len() - k + 1) as u64) as usize;
                    let merged: Vec<u64> = order[at..at + k].to_vec();
                    let mut keys: Vec<u64> = merged.iter().flat_map(|r| model[r].clone()).collect();
                    keys.sort_unstable();
                    keys.dedup();
                    keys.retain(|_| rng.below(10) != 0);
                    let hashes: Vec<KeyHash> = keys.iter().map(|&k| h(k)).collect();
                    index.compact(&merged, next_run, &hashes).unwrap();
                    for r in &merged {
                        model.remove(r);
                    }
                    model.insert(next_run, keys);
                    order.splice(at..at + k, [next_run]);
                    next_run += 1;
                }
                _ if !order.is_empty() => {
                    let r = order.remove(rng.below(order.len() as u64) as usize);
                    assert!(index.drop_run(r));
                    model.remove(&r);
                }
                _ => {}
            }
            assert_eq!(index.runs(), &order[..], "step {step}");
            stashed |= index.stashed_keys() > 0;
            if step % 50 == 0 {
                // The file reads back as the same index, mapped too.
                let bytes = index.to_bytes();
                assert_eq!(RunIndex::from_bytes(&bytes).unwrap().to_bytes(), bytes);
                let mapped = crate::MappedRunIndex::from_shared(bytes.into()).unwrap();
                for k in (0..next_key).chain((1 << 50)..(1 << 50) + 12) {
                    assert!(
                        mapped.runs_for_hash(h(k)).eq(index.runs_for_hash(h(k))),
                        "step {step}: key {k}"
                    );
                }
            }
            // What compactions dropped and drops removed is swept out: no more entries than
            // the model's (keys sharing an entry make fewer).
            let entries: usize = model.values().map(Vec::len).sum();
            assert!(
                index.len() <= entries,
                "step {step}: {} entries for {entries}",
                index.len()
            );
            for (r, keys) in &model {
                for &k in keys {
                    let got: Vec<u64> = index.runs_for_hash(h(k)).collect();
                    assert!(
                        got.contains(r),
                        "step {step}: key {k} of run {r} not found: {got:?}"
                    );
                    // Newest first.
                    let pos: Vec<usize> = got
                        .iter()
                        .map(|x| order.iter().position(|y| y == x).unwrap())
                        .collect();
                    assert!(pos.windows(2).all(|w| w[0] < w[1]), "step {step}: {pos:?}");
                }
            }
        }
        assert!(stashed, "no hot key reached the stash");
        // Absent keys get a run at most at about the bound.
        let absent = (0..20_000u64)
            .filter(|&i| !index.runs_for_hash(h(i + (1 << 40))).is_empty())
            .count();
        let rate = absent as f64 / 20_000.0;
        assert!(
            rate <= index.expected_fpr() * 1.5 + 0.001,
            "{rate} against {}",
            index.expected_fpr()
        );
    }
}
