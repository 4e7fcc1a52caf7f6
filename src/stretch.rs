//! `StretchLevel`: a cuckoo filter level that grows one bucket at a time (linear hashing)
//! without its keys, so that a growable filter answers from one table instead of a chain of
//! them (FORMAT.md §3.4).
//!
//! Each entry keeps, besides a fixed core, the next bits of its key's address string after the
//! bits its bucket's position already gives ("continuation" bits, first one highest, ended by a
//! marker bit). When bucket `s` is split into `s` and `s + 2^K`, each of its entries gives its
//! first continuation bit up as an address bit and moves to the bucket that bit picks; an entry
//! with none left is kept in both. Lookups read two buckets however far the level has grown.
//!
//! An entry's *precision* `T` — its bucket's address length plus its continuation bits — never
//! grows; entries inserted early, when addresses were short, are the least precise. The level
//! keeps `Σ 2^(60 − T)` over its entries exactly, which bounds its false-positive rate
//! ([`StretchLevel::fpr_bound`]); the chain stops growing a level before the bound passes the
//! level's share of the target.

use crate::error::{Error, Result};
use crate::hash::stretch::{self, PRECISION_SCALE, Slots};
use crate::table::raw::Region;
use crate::table::{Codec, Geometry, TableBuf, with_codec};
use crate::view::FilterRef;

/// A stretch level: its geometry (which changes as it grows), its bytes, and its counts.
#[derive(Clone)]
pub(crate) struct StretchLevel {
    geo: Geometry,
    table: TableBuf,
    seed: u64,
    /// Bounds the breadth-first search for a free slot: at most this many buckets examined.
    max_kicks: u32,
    /// Keys inserted and not removed (what `len` reports).
    keys: u64,
    /// Occupied slots: the keys' entries, and the copies splits made of bare entries.
    entries: u64,
    /// `Σ 2^(60 − T)` over the entries (FORMAT.md §5.1).
    precision: u64,
    /// The share of the chain's target this level was given (persisted; informative).
    target_fpr: f64,
    /// Scratch for the search: not part of the level's value.
    search: Vec<Node>,
    seen: Seen,
}

impl PartialEq for StretchLevel {
    fn eq(&self, other: &Self) -> bool {
        self.geo == other.geo
            && self.seed == other.seed
            && self.max_kicks == other.max_kicks
            && self.keys == other.keys
            && self.entries == other.entries
            && self.precision == other.precision
            && self.target_fpr.to_bits() == other.target_fpr.to_bits()
            && self.table.bytes() == other.table.bytes()
    }
}

impl std::fmt::Debug for StretchLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StretchLevel")
            .field("num_buckets", &self.geo.num_buckets())
            .field("slot_bits", &self.geo.fp_bits())
            .field("core_bits", &self.geo.core_bits())
            .field("keys", &self.keys)
            .field("entries", &self.entries)
            .field("precision", &self.precision)
            .finish()
    }
}

/// A node of the search: a bucket, and how it was reached (the node it came from, and the
/// entry of that node's bucket that would move here).
#[derive(Clone, Copy, Debug)]
struct Node {
    bucket: u64,
    parent: u32,
    /// The entry's value in the parent's bucket (a root: the key's own value here).
    value: u32,
}

const ROOT: u32 = u32::MAX;

/// The buckets a search has reached: an open-addressing set of bucket numbers + 1 (0 marks a
/// free cell), at most half full; the cells a search filled are cleared after it, so a search
/// costs what it reaches, not the set's size.
#[derive(Clone, Debug, Default)]
struct Seen {
    cells: Vec<u64>,
    used: Vec<usize>,
}

impl Seen {
    /// Makes room for `n` buckets (the set is empty between searches).
    fn reserve(&mut self, n: usize) {
        let size = (2 * n + 2).next_power_of_two();
        if self.cells.len() < size {
            self.cells.resize(size, 0);
        }
    }

    /// Adds `bucket`; false if it was there already (or the set is full, which a search within
    /// its budget never makes it).
    fn insert(&mut self, bucket: u64) -> bool {
        let mask = self.cells.len() - 1;
        let mut at = (crate::hash::fmix64(bucket) as usize) & mask;
        for _ in 0..self.cells.len() {
            match self.cells[at] {
                0 => {
                    self.cells[at] = bucket + 1;
                    self.used.push(at);
                    return true;
                }
                c if c == bucket + 1 => return false,
                _ => at = (at + 1) & mask,
            }
        }
        false
    }

    /// Empties the set.
    fn clear(&mut self) {
        for at in self.used.drain(..) {
            self.cells[at] = 0;
        }
    }
}

/// `2^(60 − t)`: one entry of precision `t` in the precision sum.
#[inline]
pub(crate) const fn weight(t: u32) -> u64 {
    1 << (PRECISION_SCALE - t)
}

impl StretchLevel {
    /// An empty level of geometry `geo` (a stretch geometry).
    pub(crate) fn new(geo: Geometry, seed: u64, max_kicks: u32, target_fpr: f64) -> Result<Self> {
        debug_assert!(geo.stretch_slots().is_some());
        Ok(StretchLevel {
            table: TableBuf::zeroed(geo.table_bytes())?,
            geo,
            seed,
            max_kicks,
            keys: 0,
            entries: 0,
            precision: 0,
            target_fpr,
            search: Vec::new(),
            seen: Seen::default(),
        })
    }

    /// A level from checked file parts: its bytes are copied.
    pub(crate) fn from_parts(
        geo: Geometry,
        seed: u64,
        max_kicks: u32,
        counts: Counts,
        target_fpr: f64,
        region: &[u8],
    ) -> Result<Self> {
        let mut level = StretchLevel::new(geo, seed, max_kicks, target_fpr)?;
        level.table.bytes_mut().copy_from_slice(region);
        level.keys = counts.keys;
        level.entries = counts.entries;
        level.precision = counts.precision;
        Ok(level)
    }

    #[inline]
    fn slots(&self) -> Slots {
        match self.geo.stretch_slots() {
            Some(s) => s,
            None => unreachable!("a stretch level has a stretch geometry"),
        }
    }

    /// The read-only view every lookup goes through.
    #[inline]
    pub(crate) fn view(&self) -> FilterRef<'_> {
        FilterRef::new_stretch(
            self.geo,
            self.seed,
            self.keys,
            self.precision,
            self.table.bytes(),
        )
    }

    pub(crate) fn geometry(&self) -> Geometry {
        self.geo
    }

    pub(crate) fn table(&self) -> &[u8] {
        self.table.bytes()
    }

    pub(crate) fn counts(&self) -> Counts {
        Counts {
            keys: self.keys,
            entries: self.entries,
            precision: self.precision,
        }
    }

    pub(crate) fn target_fpr(&self) -> f64 {
        self.target_fpr
    }

    /// Keys in the level.
    pub(crate) fn len(&self) -> u64 {
        self.keys
    }

    /// Occupied slots.
    pub(crate) fn entries(&self) -> u64 {
        self.entries
    }

    /// The bound on the level's false-positive rate: an absent key's address string lands in
    /// the bucket of an entry of precision `T` with probability `2^−(its address length)` and
    /// then agrees with the entry's core and continuation with probability `2^−(c + L)`, so
    /// the level answers "maybe" with probability at most `2 · 2^−c · Σ 2^−T` (two strings).
    pub(crate) fn fpr_bound(&self) -> f64 {
        fpr_bound(self.geo.core_bits(), self.precision)
    }

    /// Whether one more entry of the least precision a new key gets (its bucket's address
    /// length `K` plus every continuation bit) keeps the level's bound within `share`.
    pub(crate) fn room_for_one_more(&self, share: f64) -> bool {
        let k = self.geo.split().k;
        let after = self.precision.saturating_add(weight(k + self.slots().l0));
        fpr_bound(self.geo.core_bits(), after) <= share
    }

    /// Inserts the key with seeded hash `h`, moving entries along the shortest path to a free
    /// slot (breadth-first, at most `max_kicks` buckets examined, each once). `Full` when there
    /// is none within reach, with nothing changed.
    #[cfg(test)]
    pub(crate) fn insert_seeded(&mut self, h: u64) -> Result<()> {
        self.insert_seeded_within(h, self.max_kicks)
    }

    /// [`insert_seeded`](Self::insert_seeded) examining at most `budget` buckets.
    pub(crate) fn insert_seeded_within(&mut self, h: u64, budget: u32) -> Result<()> {
        let (split, slots) = (self.geo.split(), self.slots());
        let p = stretch::locate(split, slots, h);
        let t = self.table.bytes_mut();
        // A split bucket first: unsplit ones carry twice the demand (their address covers
        // twice the hashes), so their free slots are the scarce ones.
        let (first, second) = if p.l2 > p.l1 {
            ((p.i2, p.q2, p.l2), (p.i1, p.q1, p.l1))
        } else {
            ((p.i1, p.q1, p.l1), (p.i2, p.q2, p.l2))
        };
        let placed = with_codec!(self.geo.layout(), c => {
            if c.try_put(t, first.0, first.0, first.1) {
                Some(first.2)
            } else if c.try_put(t, second.0, second.0, second.1) {
                Some(second.2)
            } else {
                None
            }
        });
        let gained = match placed {
            Some(l) => weight(l + slots.l0),
            None => self.place_by_search([(p.i1, p.q1, p.l1), (p.i2, p.q2, p.l2)], budget)?,
        };
        self.precision += gained;
        self.entries += 1;
        self.keys += 1;
        Ok(())
    }

    /// The search of [`insert_seeded`](Self::insert_seeded); returns what the precision sum
    /// gains (the new entry's weight, and what moves that dropped a continuation bit add).
    fn place_by_search(&mut self, roots: [(u64, u32, u32); 2], budget: u32) -> Result<u64> {
        let mut nodes = std::mem::take(&mut self.search);
        let mut seen = std::mem::take(&mut self.seen);
        let found = with_codec!(self.geo.layout(), c => search(
            &c,
            &self.geo,
            self.table.bytes(),
            roots,
            budget.max(2) as usize,
            &mut nodes,
            &mut seen,
        ));
        let result = match found {
            Some(at) => Ok(self.apply_path(&nodes, at)),
            None => Err(Error::Full),
        };
        self.search = nodes;
        seen.clear();
        self.seen = seen;
        result
    }

    /// Moves the entries of the path ending at node `at` (whose bucket has a free slot), last
    /// first, then puts the key into the root's bucket. The buckets of a path are distinct, so
    /// every move finds what the search saw.
    fn apply_path(&mut self, nodes: &[Node], mut at: usize) -> u64 {
        let (split, slots) = (self.geo.split(), self.slots());
        let t = self.table.bytes_mut();
        let mut gained = 0;
        loop {
            let node = nodes[at];
            if node.parent == ROOT {
                let done = with_codec!(self.geo.layout(), c => c.try_put(t, node.bucket, node.bucket, node.value));
                debug_assert!(done, "the root's bucket has a free slot");
                return gained + weight(split.address_len(node.bucket) + slots.l0);
            }
            let from = nodes[node.parent as usize].bucket;
            let Some((target, moved, dropped)) = stretch::relocate(split, slots, node.value, from)
            else {
                unreachable!("the search only follows movable entries")
            };
            debug_assert_eq!(target, node.bucket);
            with_codec!(self.geo.layout(), c => {
                let done = c.try_put(t, target, target, moved);
                debug_assert!(done, "the path's last bucket has a free slot");
                let done = c.remove_one(t, from, node.value);
                debug_assert!(done, "the moved entry was in its bucket");
            });
            if dropped {
                // Its precision fell by one: its weight doubled.
                gained += weight(split.address_len(from) + slots.len(node.value));
            }
            at = node.parent as usize;
        }
    }

    /// Splits the next bucket (linear hashing): the level has one bucket more. Each entry of
    /// bucket `s` moves to `s` or `s + 2^K` by its first continuation bit; an entry with none
    /// left goes to both. `InvalidConfig` at 2^32 buckets; `OutOfMemory` if the bytes cannot
    /// grow.
    pub(crate) fn split(&mut self) -> Result<Unsplit> {
        let m = self.geo.num_buckets();
        let grown = self.geo.with_buckets(m + 1)?;
        self.table.resize(grown.table_bytes())?;
        let old = self.geo.split();
        let undo = Unsplit {
            bucket: with_codec!(self.geo.layout(), c => c.read(self.table.bytes(), old.s)),
            entries: self.entries,
        };
        self.geo = grown;
        let (new, slots) = (grown.split(), self.slots());
        let (low, high) = (old.s, old.s + (1 << old.k));
        debug_assert_eq!(high, m);
        let t = self.table.bytes_mut();
        let b = grown.bucket_size() as usize;
        with_codec!(grown.layout(), c => {
            let entries = c.read(t, low);
            let (mut lo, mut hi) = ([0u32; 8], [0u32; 8]);
            let (mut nl, mut nh) = (0, 0);
            let core_mask = !slots.field_mask();
            for &v in &entries[..b] {
                if v == 0 {
                    continue;
                }
                match stretch::retarget(new, slots, low, old.k, v & slots.field_mask()) {
                    Some((target, field, _)) => {
                        let v = (v & core_mask) | field;
                        if target == low {
                            lo[nl] = v;
                            nl += 1;
                        } else {
                            hi[nh] = v;
                            nh += 1;
                        }
                    }
                    None => {
                        // Bare: kept in both halves (precision T + 1 twice: the sum stays).
                        lo[nl] = v;
                        hi[nh] = v;
                        nl += 1;
                        nh += 1;
                        self.entries += 1;
                    }
                }
            }
            c.store_all(t, low, &lo);
            c.store_all(t, high, &hi);
        });
        Ok(undo)
    }

    /// Undoes the last [`split`](Self::split), which `undo` came from: the bytes and counts
    /// are again exactly what they were before it.
    pub(crate) fn unsplit(&mut self, undo: Unsplit) -> Result<()> {
        let m = self.geo.num_buckets();
        let shrunk = self.geo.with_buckets(m - 1)?;
        let before = shrunk.split();
        let t = self.table.bytes_mut();
        with_codec!(self.geo.layout(), c => {
            c.store_all(t, m - 1, &[0; 8]);
            c.store_all(t, before.s, &undo.bucket);
        });
        self.table.resize(shrunk.table_bytes())?;
        self.geo = shrunk;
        self.entries = undo.entries;
        Ok(())
    }

    /// The key's matches in its two buckets: how many, and the most precise one (bucket,
    /// value, precision).
    fn matches(&self, h: u64) -> (u32, Option<(u64, u32, u32)>) {
        let (split, slots) = (self.geo.split(), self.slots());
        let p = stretch::locate(split, slots, h);
        let t = self.table.bytes();
        let b = self.geo.bucket_size() as usize;
        let mut n = 0;
        let mut best: Option<(u64, u32, u32)> = None;
        for (bucket, q, l) in [(p.i1, p.q1, p.l1), (p.i2, p.q2, p.l2)] {
            let entries = with_codec!(self.geo.layout(), c => c.read(t, bucket));
            for &v in &entries[..b] {
                if stretch::matches(v, q) {
                    n += 1;
                    let precision = l + slots.len(v);
                    if best.is_none_or(|(_, _, p)| precision > p) {
                        best = Some((bucket, v, precision));
                    }
                }
            }
        }
        (n, best)
    }

    /// Removes the most precise entry answering for the key: if the key was inserted, its own
    /// entry answers, and any other entry answering is either as precise as another key's own
    /// (then the two answer for the same keys) or less precise (and answers for every key the
    /// removed one did), so no other key can lose its last answer.
    pub(crate) fn remove_seeded(&mut self, h: u64) -> bool {
        let Some((bucket, v, precision)) = self.matches(h).1 else {
            return false;
        };
        let t = self.table.bytes_mut();
        let removed = self.geo.layout().remove_one(t, bucket, v);
        debug_assert!(removed);
        self.precision -= weight(precision);
        self.entries -= 1;
        self.keys = self.keys.saturating_sub(1);
        true
    }
}

/// What [`StretchLevel::unsplit`] needs to undo a split: the split bucket as it was, and the
/// entry count.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Unsplit {
    bucket: crate::table::codec::Slots,
    entries: u64,
}

/// Breadth-first search from the key's two (full) buckets for a bucket with a free slot,
/// examining at most `budget` buckets, each once; the index in `nodes` of the node whose bucket
/// has room. A loop monomorphic in the codec.
fn search<C: Codec>(
    c: &C,
    geo: &Geometry,
    t: &[u8],
    roots: [(u64, u32, u32); 2],
    budget: usize,
    nodes: &mut Vec<Node>,
    seen: &mut Seen,
) -> Option<usize> {
    let (Some(slots), Some(region)) = (geo.stretch_slots(), Region::new(t, geo)) else {
        return None;
    };
    let split = geo.split();
    let b = geo.bucket_size() as usize;
    nodes.clear();
    seen.reserve(budget);
    for (bucket, value, _) in roots {
        seen.insert(bucket);
        nodes.push(Node {
            bucket,
            parent: ROOT,
            value,
        });
    }
    let mut head = 0;
    while head < nodes.len() && nodes.len() < budget {
        let node = nodes[head];
        let entries = c.read(t, node.bucket);
        let l = split.address_len(node.bucket);
        for &v in &entries[..b] {
            let Some(target) = stretch::target(split, slots, v, node.bucket, l) else {
                continue;
            };
            // A bucket with room ends the search (it is not on the path: only full buckets are
            // expanded).
            if c.count_in(region, target, 0) > 0 {
                nodes.push(Node {
                    bucket: target,
                    parent: head as u32,
                    value: v,
                });
                return Some(nodes.len() - 1);
            }
            // Each full bucket once: a path then visits a bucket once (so its moves do not
            // interfere), and the budget goes to buckets not yet seen.
            if seen.insert(target) {
                nodes.push(Node {
                    bucket: target,
                    parent: head as u32,
                    value: v,
                });
            }
        }
        head += 1;
    }
    None
}

/// A stretch level's counts, as persisted (FORMAT.md §5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Counts {
    pub(crate) keys: u64,
    pub(crate) entries: u64,
    pub(crate) precision: u64,
}

/// `2 · 2^−c · precision · 2^−60`, at most 1.
pub(crate) fn fpr_bound(core_bits: u32, precision: u64) -> f64 {
    let p = precision as f64 * 2f64.powi(1 - core_bits as i32 - PRECISION_SCALE as i32);
    p.min(1.0)
}

/// Scans a stretch level's region: every slot empty or a valid entry, and the level's counts
/// (occupied slots, precision sum; `keys` is left 0, the bytes do not tell it). Used when a
/// file is verified.
pub(crate) fn scan(geo: &Geometry, region: &[u8]) -> std::result::Result<Counts, String> {
    let slots = geo.stretch_slots().ok_or("not a stretch level")?;
    let split = geo.split();
    let b = geo.bucket_size() as usize;
    let mut counts = Counts::default();
    with_codec!(geo.layout(), c => {
        for j in 0..geo.num_buckets() {
            let entries = c.read(region, j);
            for &v in &entries[..b] {
                if v == 0 {
                    continue;
                }
                if !slots.valid(v) {
                    return Err(format!("bucket {j} holds {v:#x}, an entry without a marker"));
                }
                counts.entries += 1;
                let t = split.address_len(j) + slots.len(v);
                counts.precision = counts
                    .precision
                    .checked_add(weight(t))
                    .ok_or("the precision sum overflows")?;
            }
        }
        Ok::<(), String>(())
    })?;
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::{KeyHash, SplitMix64, seeded};
    use crate::table::Encoding;
    use std::collections::HashSet;

    fn level(m: u64, w: u32, c: u32) -> StretchLevel {
        let geo = Geometry::stretch(m, 4, w, Encoding::SemiSorted, c).unwrap();
        StretchLevel::new(geo, 7, 500, 0.01).unwrap()
    }

    fn h(i: u64) -> u64 {
        seeded(KeyHash::of(&i.to_le_bytes()), 7)
    }

    /// Growing by splits at 90 % load from 10 buckets to many: every key inserted stays
    /// present, the counts match a scan of the bytes, and the bound is the measured rate's
    /// ceiling.
    #[test]
    fn grows_without_losing_a_key_and_keeps_exact_counts() {
        for (w, c) in [(14, 5), (9, 4), (20, 8), (12, 6)] {
            let mut f = level(10, w, c);
            let n = 60_000u64;
            for i in 0..n {
                while (f.entries() + 1) as f64 > 0.9 * f.geo.slots() as f64 {
                    let _ = f.split().unwrap();
                }
                while f.insert_seeded(h(i)).is_err() {
                    let _ = f.split().unwrap();
                }
            }
            assert_eq!(f.len(), n);
            for i in 0..n {
                assert!(f.view().contains_seeded(h(i)), "w={w} c={c}: key {i} lost");
            }
            let counts = scan(&f.geo, f.table()).unwrap();
            assert_eq!(Counts { keys: n, ..counts }, f.counts(), "w={w} c={c}");
            let probes = 200_000u64;
            let fp = (0..probes)
                .filter(|&i| f.view().contains_seeded(h(i + (1 << 40))))
                .count();
            let rate = fp as f64 / probes as f64;
            let bound = f.fpr_bound();
            // The bound is an upper bound (union over entries); 4σ of slack for the sample.
            let sigma = (bound / probes as f64).sqrt();
            assert!(rate <= bound + 4.0 * sigma, "w={w} c={c}: {rate} > {bound}");
            assert!(rate >= bound * 0.5, "w={w} c={c}: {rate} far below {bound}");
        }
    }

    /// Removes against a model: a removed key stays findable only when it was inserted twice
    /// or collides; every key still in the model is present.
    #[test]
    fn removes_never_lose_another_key() {
        let mut f = level(4, 10, 4);
        let mut model: Vec<u64> = Vec::new();
        let mut rng = SplitMix64::new(3);
        for step in 0..40_000u64 {
            if rng.below(3) == 0 && !model.is_empty() {
                let k = model.swap_remove(rng.below(model.len() as u64) as usize);
                assert!(
                    f.remove_seeded(h(k)),
                    "step {step}: inserted key {k} not removable"
                );
            } else {
                let k = rng.below(20_000);
                while (f.entries() + 1) as f64 > 0.9 * f.geo.slots() as f64 {
                    let _ = f.split().unwrap();
                }
                while f.insert_seeded(h(k)).is_err() {
                    let _ = f.split().unwrap();
                }
                model.push(k);
            }
            if step % 4096 == 0 {
                for &k in &model {
                    assert!(f.view().contains_seeded(h(k)), "step {step}: key {k} lost");
                }
            }
        }
        let distinct: HashSet<u64> = model.iter().copied().collect();
        for k in distinct {
            assert!(f.view().contains_seeded(h(k)));
        }
        assert_eq!(f.len(), model.len() as u64);
        let counts = scan(&f.geo, f.table()).unwrap();
        assert_eq!(
            Counts {
                keys: f.len(),
                ..counts
            },
            f.counts()
        );
    }

    /// Splits undone in reverse give back the exact bytes and counts, in every encoding (a
    /// plain or packed bucket keeps its slot order), across a round boundary.
    #[test]
    fn unsplit_restores_the_exact_level() {
        for (e, w) in [
            (Encoding::SemiSorted, 8),
            (Encoding::Packed, 9),
            (Encoding::Plain, 8),
        ] {
            let geo = Geometry::stretch(5, 4, w, e, 5).unwrap();
            let mut f = StretchLevel::new(geo, 7, 500, 0.01).unwrap();
            let mut i = 0;
            while f.entries() < 18 {
                let _ = f.insert_seeded(h(i));
                i += 1;
            }
            // Grow until entries run out of continuation bits (duplicated by splits).
            let mut history = Vec::new();
            for _ in 0..60 {
                history.push((f.clone(), f.split().unwrap()));
            }
            assert!(f.entries() > 18, "{e:?}: no entry was duplicated");
            while let Some((before, undo)) = history.pop() {
                f.unsplit(undo).unwrap();
                assert_eq!(f, before, "{e:?}");
            }
        }
    }

    /// A full level refuses with nothing changed, bytes and counts alike.
    #[test]
    fn a_failed_insert_changes_nothing() {
        let mut f = level(2, 14, 5);
        let mut i = 0;
        loop {
            let before = f.clone();
            match f.insert_seeded(h(i)) {
                Ok(()) => i += 1,
                Err(Error::Full) => {
                    assert_eq!(f, before);
                    break;
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert!(i >= 6, "2 buckets of 4 took only {i}");
    }

    /// The search's set of buckets: each bucket goes in once (bucket 0 too), a bucket already
    /// in is refused, a full set refuses every new one, and `clear` empties it for the next
    /// search. After `reserve(n)` the set holds `n` buckets at most half full.
    #[test]
    fn seen_holds_each_bucket_once_until_cleared() {
        let mut seen = Seen::default();
        for n in [2usize, 3, 65, 500] {
            seen.reserve(n);
            let cap = seen.cells.len() as u64;
            assert!(cap >= 2 * n as u64, "reserve({n}) gave {cap} cells");
            for round in 0..2 {
                let half = cap / 2;
                for b in 0..half {
                    assert!(seen.insert(3 * b), "n={n} round {round}: {b} refused");
                }
                for b in 0..half {
                    assert!(!seen.insert(3 * b), "n={n} round {round}: {b} taken twice");
                }
                // Every cell filled: the probes wrap around the end of the cells.
                for b in half..cap {
                    assert!(seen.insert(3 * b), "n={n} round {round}: {b} refused");
                }
                assert!(!seen.insert(3 * cap), "n={n}: a full set took one more");
                for b in 0..cap {
                    assert!(!seen.insert(3 * b), "n={n} round {round}: {b} taken twice");
                }
                seen.clear();
                assert!(seen.cells.iter().all(|&c| c == 0), "n={n}: not cleared");
            }
        }
    }

    /// Two levels are equal only when every persisted part is: a difference in any one of
    /// them alone makes them differ.
    #[test]
    fn levels_differ_when_any_part_differs() {
        let geo = |c| Geometry::stretch(10, 4, 14, Encoding::SemiSorted, c).unwrap();
        assert_eq!(geo(5).table_bytes(), geo(6).table_bytes());
        let base = StretchLevel::new(geo(5), 7, 500, 0.01).unwrap();
        assert_eq!(base, base.clone());
        let changed = |change: &dyn Fn(&mut StretchLevel)| {
            let mut f = base.clone();
            change(&mut f);
            f
        };
        let others = [
            // The geometry alone: the same number of (zero) bytes.
            StretchLevel::new(geo(6), 7, 500, 0.01).unwrap(),
            StretchLevel::new(geo(5), 8, 500, 0.01).unwrap(),
            StretchLevel::new(geo(5), 7, 501, 0.01).unwrap(),
            changed(&|f| f.keys += 1),
            changed(&|f| f.entries += 1),
            changed(&|f| f.precision += 1),
            StretchLevel::new(geo(5), 7, 500, 0.02).unwrap(),
            changed(&|f| f.table.bytes_mut()[0] = 1),
        ];
        for (i, other) in others.iter().enumerate() {
            assert_ne!(&base, other, "part {i}");
            assert_ne!(other, &base, "part {i}");
        }
    }

    #[test]
    fn debug_names_the_shape_and_counts() {
        let mut f = level(10, 14, 5);
        f.insert_seeded(h(1)).unwrap();
        let s = format!("{f:?}");
        for part in [
            "StretchLevel",
            "num_buckets: 10",
            "slot_bits: 14",
            "core_bits: 5",
            "keys: 1",
            "entries: 1",
        ] {
            assert!(s.contains(part), "{s} lacks {part}");
        }
    }

    /// `room_for_one_more(share)` is whether the bound after one more entry of the least
    /// precision a new key gets stays within `share`. In a level of 2^K buckets (none split)
    /// every new key's entry has that precision, so the bound after each insert is exactly
    /// the share at which the answer turns.
    #[test]
    fn room_for_one_more_is_the_bound_after_one_more_key() {
        let mut f = level(16, 14, 5);
        for i in 0..48 {
            let before = f.clone();
            f.insert_seeded(h(i)).unwrap();
            let after = f.fpr_bound();
            assert!(after > before.fpr_bound(), "key {i}");
            assert!(before.room_for_one_more(after), "key {i}");
            assert!(!before.room_for_one_more(after * (1.0 - 1e-9)), "key {i}");
        }
    }

    /// Whether the key with seeded hash `h` has a free slot in one of its two buckets.
    fn has_room(f: &StretchLevel, h: u64) -> bool {
        let p = stretch::locate(f.geo.split(), f.slots(), h);
        let b = f.geo.bucket_size() as usize;
        [p.i1, p.i2]
            .iter()
            .any(|&i| f.geo.layout().read(f.table(), i)[..b].contains(&0))
    }

    /// Without a split, moving entries along the search's paths fills a level to 90 % and
    /// more (placing each key in one of its own buckets only fails far earlier), in a level of
    /// 2^K buckets and in one mid-way through a doubling; no key is lost, the counts stay
    /// exact.
    #[test]
    fn the_search_fills_a_level_without_splits() {
        for m in [256, 200] {
            let mut f = level(m, 14, 5);
            let mut n = 0;
            let mut searched = 0;
            loop {
                let room = has_room(&f, h(n));
                if f.insert_seeded(h(n)).is_err() {
                    break;
                }
                searched += u64::from(!room);
                n += 1;
            }
            let slots = f.geo.slots();
            assert!(
                n as f64 >= 0.9 * slots as f64,
                "m={m}: {n} keys in {slots} slots"
            );
            assert!(searched > 0, "m={m}");
            for i in 0..n {
                assert!(f.view().contains_seeded(h(i)), "m={m}: key {i} lost");
            }
            let counts = scan(&f.geo, f.table()).unwrap();
            assert_eq!(Counts { keys: n, ..counts }, f.counts(), "m={m}");
        }
    }

    /// The search examines at most `budget` buckets: with 2 (the key's own buckets) a key
    /// whose two buckets are full is refused with nothing changed, and a key with room is
    /// placed; with the level's budget, most keys refused so find room by moving entries.
    #[test]
    fn the_search_keeps_to_its_budget() {
        let mut f = level(200, 14, 5);
        let (mut refused, mut moved) = (0, 0);
        let mut i = 0;
        while (f.entries() as f64) < 0.85 * f.geo.slots() as f64 && i < 10_000 {
            let key = h(i);
            i += 1;
            let before = f.clone();
            let room = has_room(&f, key);
            match f.insert_seeded_within(key, 2) {
                Ok(()) => assert!(room, "key {i} placed beyond its buckets with a budget of 2"),
                Err(Error::Full) => {
                    assert!(!room, "key {i} refused with room in its buckets");
                    assert_eq!(f, before);
                    refused += 1;
                    if f.insert_seeded_within(key, 500).is_ok() {
                        moved += 1;
                    }
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert!(
            refused >= 20 && moved * 10 >= refused * 9,
            "{moved} of {refused}"
        );
    }

    /// `scan` counts a level's entries and precision sum from its bytes alone, and refuses a
    /// slot that holds a core without a marker.
    #[test]
    fn scan_counts_entries_and_refuses_one_without_a_marker() {
        let geo = Geometry::stretch(10, 4, 16, Encoding::Plain, 5).unwrap();
        let mut f = StretchLevel::new(geo, 7, 500, 0.01).unwrap();
        assert_eq!(scan(&geo, f.table()), Ok(Counts::default()));
        for i in 0..20 {
            f.insert_seeded(h(i)).unwrap();
        }
        let counts = scan(&geo, f.table()).unwrap();
        assert_eq!(Counts { keys: 20, ..counts }, f.counts());
        let (layout, b) = (geo.layout(), geo.bucket_size() as usize);
        let mut t = f.table().to_vec();
        let j = (0..10)
            .find(|&j| layout.read(&t, j)[..b].contains(&0))
            .unwrap();
        let mut s = layout.read(&t, j);
        let free = s[..b].iter().position(|&v| v == 0).unwrap();
        // Core 3, and nothing in the continuation field: no marker.
        s[free] = 3 << (f.slots().l0 + 1);
        layout.store(&mut t, j, free, &s);
        let e = scan(&geo, &t).unwrap_err();
        assert!(e.contains("without a marker"), "{e}");
    }

    /// A key with room in both of its buckets goes to the one of the longer address (a split
    /// bucket or its image), where its entry is the more precise: the precision sum gains
    /// that entry's weight.
    #[test]
    fn a_key_takes_the_more_precise_of_two_free_buckets() {
        let mut f = level(200, 14, 5);
        let (split, slots) = (f.geo.split(), f.slots());
        let free = |f: &StretchLevel, j| f.geo.layout().read(f.table(), j)[..4].contains(&0);
        let mut uneven = 0;
        for i in 0..300 {
            let p = stretch::locate(split, slots, h(i));
            let both = free(&f, p.i1) && free(&f, p.i2);
            let before = f.counts().precision;
            f.insert_seeded(h(i)).unwrap();
            if both {
                let gained = f.counts().precision - before;
                assert_eq!(gained, weight(p.l1.max(p.l2) + slots.l0), "key {i}");
                uneven += u32::from(p.l1 != p.l2);
            }
        }
        assert!(uneven >= 50, "{uneven}");
    }
}
