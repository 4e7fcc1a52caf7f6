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

use crate::copies::Copies;
use crate::error::Result;
use crate::hash::stretch::{self, Slots};
use crate::level::{Counts, bound_scale, fpr_bound, weight};
use crate::table::raw::Region;
use crate::table::{Codec, Geometry, Layout, TableBuf, with_codec};
use crate::view::FilterRef;

/// A stretch level: its geometry (which changes as it grows), its bytes, and its counts.
#[derive(Clone)]
pub(crate) struct StretchLevel {
    geo: Geometry,
    /// What a lookup needs of `geo`, derived from it whenever it changes.
    lookup: stretch::Lookup,
    /// The probe for `geo`'s codec ([`probe_fn`]).
    probe: Probe,
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
    /// The share of the chain's target this level was given (persisted): the bound it grows
    /// to, at most.
    target_fpr: f64,
    /// `2^(1 − c − 60)`: the bound per unit of the precision sum.
    bound_scale: f64,
    /// Which buckets have a free slot: derived from the bytes, kept as they change.
    room: Room,
    /// What undoes the splits made since the last [`keep_splits`](Self::keep_splits): not part
    /// of the level's value.
    split_log: Vec<Unsplit>,
    /// Scratch for the search: not part of the level's value.
    search: Vec<Node>,
    /// The copies its entries count beyond their slots (FORMAT.md §3.5).
    copies: Copies,
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
            && self.copies == other.copies
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
            .field("copies", &self.copies)
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

/// One bit per bucket, set when the bucket has a free slot: what an insert, a relocation and the
/// search test before they read a bucket (a full bucket is never read for room, and at 32 M keys
/// the bits are 1/64 of the table, mostly in cache). Derived from the bytes; every change to a
/// bucket's occupancy updates its bit.
#[derive(Clone, Debug, Default, PartialEq)]
struct Room {
    words: Vec<u64>,
}

impl Room {
    /// The bits of `m` buckets, each set where `free(j)`.
    fn of(m: u64, free: impl Fn(u64) -> bool) -> Room {
        let mut r = Room::default();
        r.resize(m);
        for j in 0..m {
            r.set(j, free(j));
        }
        r
    }

    /// Keeps the bits of buckets `0..m`; buckets added are full until set.
    fn resize(&mut self, m: u64) {
        self.words.resize(m.div_ceil(64) as usize, 0);
        if !m.is_multiple_of(64)
            && let Some(w) = self.words.last_mut()
        {
            *w &= (1 << (m % 64)) - 1;
        }
    }

    #[inline(always)]
    fn get(&self, j: u64) -> bool {
        self.words[(j >> 6) as usize] >> (j & 63) & 1 != 0
    }

    #[inline(always)]
    fn set(&mut self, j: u64, free: bool) {
        let w = &mut self.words[(j >> 6) as usize];
        let bit = 1 << (j & 63);
        *w = if free { *w | bit } else { *w & !bit };
    }
}

/// A level's lookup for one codec: monomorphic, chosen when the geometry changes, so that a
/// lookup is a call through a pointer to a small function, not a `match` over every codec
/// inside one large function (issue 40: that function's prologue and the codec's fields
/// cost 30 instructions per key).
type Probe = fn(&StretchLevel, u64) -> bool;

/// The probe for layout `layout`.
fn probe_fn(layout: Layout) -> Probe {
    macro_rules! arms {
        ($($v:ident),*) => {
            match layout {
                $(Layout::$v(_) => |l: &StretchLevel, h: u64| {
                    let Layout::$v(c) = l.geo.layout() else {
                        unreachable!("a level's probe is its layout's")
                    };
                    l.probe_with(c, h)
                },)*
            }
        };
    }
    arms!(
        P8x2, P8x4, P8x8, P16x2, P16x4, P16x8, P32x2, P32x4, P32x8, Packed2, Packed4, Packed8,
        Semi8, Semi9, Semi10, Semi11, Semi12, Semi13, Semi14, Semi15, Semi
    )
}

/// The payloads of the entries that answer for the key of seeded hash `h` in `table`, the
/// bucket region of a stretch level of geometry `geo` whose lookup state is `lookup`
/// ([`lookup_of`]): the one kernel a run index's lookups go through, owned
/// ([`StretchLevel::payloads_of`]) or read from a file in place. Every payload (`u64::MAX`)
/// where `table` is not the geometry's length: "every run may hold it", never a false
/// negative.
#[inline]
pub(crate) fn payloads_in(geo: &Geometry, lookup: &stretch::Lookup, table: &[u8], h: u64) -> u64 {
    match geo.layout() {
        Layout::Semi(c) => payloads_with(c, geo, lookup, table, h),
        _ => payloads_in_any(geo, lookup, table, h),
    }
}

/// [`payloads_in`] in the layouts other than the semi-sorted one, out of line.
#[inline(never)]
fn payloads_in_any(geo: &Geometry, lookup: &stretch::Lookup, table: &[u8], h: u64) -> u64 {
    with_codec!(geo.layout(), c => payloads_with(c, geo, lookup, table, h))
}

/// [`payloads_in`] with the level's codec `c`.
#[inline(always)]
fn payloads_with<C: Codec>(
    c: C,
    geo: &Geometry,
    lookup: &stretch::Lookup,
    table: &[u8],
    h: u64,
) -> u64 {
    let Some(region) = Region::new(table, geo) else {
        return u64::MAX;
    };
    let (i1, q1, i2, q2) = lookup.locate(h);
    c.payloads_prefix(region, i1, q1, i2, q2, lookup.payload_shift())
}

/// Asks the CPU for the lines of the two buckets a lookup of seeded hash `h` reads in `table`
/// (a stretch level of geometry `geo`): a run index's batch, one key ahead of the lookups.
#[inline]
pub(crate) fn prefetch_lookup(geo: &Geometry, table: &[u8], h: u64) {
    let Some(slots) = geo.stretch_slots() else {
        return;
    };
    let [i1, i2] = stretch::buckets(geo.split(), slots, h);
    if let Some(r) = Region::new(table, geo) {
        with_codec!(geo.layout(), c => {
            c.prefetch(r, i1);
            c.prefetch(r, i2);
        });
    }
}

/// The lookup state of a level of stretch geometry `geo`.
pub(crate) fn lookup_of(geo: &Geometry) -> stretch::Lookup {
    match geo.stretch_slots() {
        Some(slots) => stretch::Lookup::of(geo.split(), slots),
        None => unreachable!("a stretch level has a stretch geometry"),
    }
}

impl StretchLevel {
    /// An empty level of geometry `geo` (a stretch geometry).
    pub(crate) fn new(geo: Geometry, seed: u64, max_kicks: u32, target_fpr: f64) -> Result<Self> {
        debug_assert!(geo.stretch_slots().is_some());
        Ok(StretchLevel {
            table: TableBuf::zeroed(geo.table_bytes())?,
            geo,
            lookup: lookup_of(&geo),
            probe: probe_fn(geo.layout()),
            seed,
            max_kicks,
            keys: 0,
            entries: 0,
            precision: 0,
            target_fpr,
            bound_scale: bound_scale(geo.core_bits()),
            room: Room::of(geo.num_buckets(), |_| true),
            split_log: Vec::new(),
            search: Vec::new(),
            copies: Copies::default(),
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
        copies: Copies,
    ) -> Result<Self> {
        let mut level = StretchLevel::new(geo, seed, max_kicks, target_fpr)?;
        level.copies = copies;
        level.table.bytes_mut().copy_from_slice(region);
        level.keys = counts.keys;
        level.entries = counts.entries;
        level.precision = counts.precision;
        let b = geo.bucket_size() as usize;
        let t = level.table.bytes();
        level.room = with_codec!(geo.layout(), c => Room::of(geo.num_buckets(), |j| {
            c.read(t, j)[..b].contains(&0)
        }));
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
    #[inline(always)]
    pub(crate) fn view(&self) -> FilterRef<'_> {
        FilterRef::new_stretch(
            self.geo,
            self.seed,
            self.keys,
            self.precision,
            self.table.bytes(),
        )
    }

    /// The lookup of the key with seeded hash `seeded` (what [`view`](Self::view)'s
    /// `contains_seeded` answers): a call through the level's [`Probe`], which reads the
    /// level's own fields. An owner asking one level per key passes a pointer instead of
    /// building a 168-byte view per key (issue 40: the view, rebuilt in the caller's loop,
    /// cost more than the probe's hashing), and the probe is the codec's alone.
    #[inline(always)]
    pub(crate) fn contains_seeded(&self, seeded: u64) -> bool {
        (self.probe)(self, seeded)
    }

    /// [`contains_seeded`](Self::contains_seeded) with the level's codec `c`.
    #[inline(always)]
    fn probe_with<C: Codec>(&self, c: C, seeded: u64) -> bool {
        let Some(region) = Region::new(self.table.bytes(), &self.geo) else {
            unreachable!("a stretch level's table has its geometry's length")
        };
        let (i1, q1, i2, q2) = self.lookup.locate(seeded);
        c.contains_prefix(region, i1, q1, i2, q2)
    }

    /// Changes the level's geometry, and what its lookups derive from it.
    fn set_geo(&mut self, geo: Geometry) {
        self.geo = geo;
        self.lookup = lookup_of(&geo);
        self.probe = probe_fn(geo.layout());
    }

    /// The level's seed.
    #[inline(always)]
    pub(crate) fn seed(&self) -> u64 {
        self.seed
    }

    pub(crate) fn geometry(&self) -> Geometry {
        self.geo
    }

    pub(crate) fn table(&self) -> &[u8] {
        self.table.bytes()
    }

    /// The copies its entries count.
    pub(crate) fn copies(&self) -> &Copies {
        &self.copies
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
    #[inline]
    pub(crate) fn room_for_one_more(&self, share: f64) -> bool {
        let k = self.geo.split().k;
        self.within(
            self.precision.saturating_add(weight(k + self.slots().l0)),
            share,
        )
    }

    /// Whether a precision sum of `precision` keeps the level's bound within `share` (the
    /// bound of [`fpr_bound`], computed with the level's scale).
    #[inline]
    fn within(&self, precision: u64, share: f64) -> bool {
        (precision as f64 * self.bound_scale).min(1.0) <= share
    }

    /// Asks the CPU for the lines of the key's two buckets (with seeded hash `h`) and of their
    /// room bits, so that an insert finds them in cache, or on their way.
    #[inline]
    pub(crate) fn prefetch_seeded(&self, h: u64) {
        let [i1, i2] = stretch::buckets(self.geo.split(), self.slots(), h);
        let words: &[u8] = bytemuck::cast_slice(&self.room.words);
        crate::prefetch::prefetch(words, (i1 >> 3) as usize);
        crate::prefetch::prefetch(words, (i2 >> 3) as usize);
        if let Some(r) = Region::new(self.table.bytes(), &self.geo) {
            with_codec!(self.geo.layout(), c => {
                c.prefetch(r, i1);
                c.prefetch(r, i2);
            });
        }
    }

    /// Inserts the key with seeded hash `h`, moving entries along the shortest path to a free
    /// slot (breadth-first, at most `max_kicks` buckets examined). Refused, with nothing
    /// changed, when there is none within reach, when the moves would take the level past its
    /// share, or when both of the key's buckets are full of entries answering for it.
    #[cfg(test)]
    pub(crate) fn insert_seeded(&mut self, h: u64) -> std::result::Result<(), Refused> {
        self.insert_seeded_within(h, self.max_kicks)
    }

    /// [`insert_seeded`](Self::insert_seeded) examining at most `budget` buckets.
    pub(crate) fn insert_seeded_within(
        &mut self,
        h: u64,
        budget: u32,
    ) -> std::result::Result<(), Refused> {
        self.insert_payload_within(h, 0, budget)
    }

    /// [`insert_seeded_within`](Self::insert_seeded_within) of an entry carrying `payload`
    /// (below `2^p`; 0 in a level without payload): a run index's entry for a key of run
    /// `payload`. An entry with the same payload that answers for the key is the key's copy,
    /// as in a filter; one with another payload is another run's, and the key gets its own.
    pub(crate) fn insert_payload_within(
        &mut self,
        h: u64,
        payload: u32,
        budget: u32,
    ) -> std::result::Result<(), Refused> {
        let (split, slots) = (self.geo.split(), self.slots());
        debug_assert!(payload < 1 << slots.payload_bits);
        let mut p = stretch::locate(split, slots, h);
        p.q1 = slots.with_payload(p.q1, payload);
        p.q2 = slots.with_payload(p.q2, payload);
        // A split bucket first: unsplit ones carry twice the demand (their address covers
        // twice the hashes), so their free slots are the scarce ones; and there the key's
        // entry is the more precise.
        let (first, second) = if p.l2 > p.l1 {
            ((p.i2, p.q2, p.l2), (p.i1, p.q1, p.l1))
        } else {
            ((p.i1, p.q1, p.l1), (p.i2, p.q2, p.l2))
        };
        let near = with_codec!(self.geo.layout(), c => place_near(
            &c,
            split,
            slots,
            self.table.bytes_mut(),
            &mut self.room,
            [first, second],
        ));
        let gained = match near {
            Near::Placed { gained, moved } => {
                if let Some((from, v, to, w)) = moved {
                    self.follow(from, v, to, w);
                }
                gained
            }
            Near::Copies => return Err(Refused::Copies),
            Near::Search => {
                match self.place_by_search([(p.i1, p.q1, p.l1), (p.i2, p.q2, p.l2)], budget) {
                    Ok(gained) => gained,
                    // Every bucket the key's entries could reach is full of entries that cannot
                    // leave them: if the level already answers for the key, it is as present as
                    // it can be (the chain counts it as a copy). If not, a split of one of
                    // those buckets may make room.
                    Err(Refused::Closed) if self.answering(&p) != 0 => {
                        return Err(Refused::Copies);
                    }
                    Err(Refused::Closed) => return Err(Refused::NoRoom),
                    Err(r) => return Err(r),
                }
            }
        };
        // One move of `place_near` never passes the bound `room_for_one_more` checked (its
        // dropped bit costs what the key's more precise entry saves); a longer path can.
        debug_assert!(
            self.within(self.precision + gained, self.target_fpr)
                || !self.within(self.precision + weight(split.k + slots.l0), self.target_fpr)
        );
        self.precision += gained;
        self.entries += 1;
        self.keys += 1;
        Ok(())
    }

    /// Which slots of the key's pair (its lower bucket's first, one bit each) hold an entry
    /// answering for it.
    fn answering(&self, p: &stretch::Probe) -> u32 {
        let t = self.table.bytes();
        let b = self.geo.bucket_size() as usize;
        let mut pair = [(p.i1, p.q1), (p.i2, p.q2)];
        pair.sort_unstable();
        with_codec!(self.geo.layout(), c => {
            let mut mask = 0;
            for (n, &(i, q)) in pair.iter().enumerate() {
                let s = c.read(t, i);
                for (k, &v) in s[..b].iter().enumerate() {
                    mask |= u32::from(stretch::matches(v, q)) << (n * b + k);
                }
            }
            mask
        })
    }

    /// The payloads of the entries that may be the key's (seeded hash `h`), one bit each
    /// (payloads of at most 6 bits): a run index's runs that may hold the key.
    ///
    /// The key's buckets and slot values come from the lookup state kept per geometry (as
    /// [`contains_seeded`](Self::contains_seeded)'s do), and the codec tests the slots where
    /// they lie ([`Codec::payloads_prefix`]); a run index's layout (semi-sorted, the one it
    /// always takes) is matched first, so its kernel is inlined here rather than reached
    /// through every codec's arm.
    #[inline]
    pub(crate) fn payloads_of(&self, h: u64) -> u64 {
        match self.geo.layout() {
            Layout::Semi(c) => self.payloads_with(c, h),
            _ => self.payloads_of_any(h),
        }
    }

    /// [`payloads_of`](Self::payloads_of) in the other layouts: one function for all of them,
    /// out of line, so that the semi-sorted path stays small.
    #[inline(never)]
    fn payloads_of_any(&self, h: u64) -> u64 {
        with_codec!(self.geo.layout(), c => self.payloads_with(c, h))
    }

    /// [`payloads_of`](Self::payloads_of) with the level's codec `c`.
    #[inline(always)]
    fn payloads_with<C: Codec>(&self, c: C, h: u64) -> u64 {
        payloads_with(c, &self.geo, &self.lookup, self.table.bytes(), h)
    }

    /// [`payloads_of`](Self::payloads_of) through decoded buckets, slot by slot: the
    /// reference the kernels are tested against.
    #[cfg(test)]
    pub(crate) fn payloads_of_decoded(&self, h: u64) -> u64 {
        let slots = self.slots();
        debug_assert!(slots.payload_bits <= 6);
        let p = stretch::locate(self.geo.split(), slots, h);
        let below = ((1u64 << slots.payload_shift()) - 1) as u32;
        let (t, b) = (self.table.bytes(), self.geo.bucket_size() as usize);
        let mut found = 0u64;
        with_codec!(self.geo.layout(), c => {
            for (i, q) in [(p.i1, p.q1), (p.i2, p.q2)] {
                for &v in &c.read(t, i)[..b] {
                    let hit = v != 0 && stretch::matches(v & below, q);
                    found |= u64::from(hit) << (slots.payload(v) & 63);
                }
            }
        });
        found
    }

    /// A run index's compaction moving a kept key (seeded hash `h`) to the run that replaces
    /// the merged ones, in one pass over its two buckets: `None` when an entry with payload
    /// `to` answers for the key already (nothing changes); `Some(true)` when the most precise
    /// entry answering for the key whose payload `from` accepts was given the payload `to` in
    /// place (it keeps its bucket, its bits and its precision); `Some(false)` when no such
    /// entry answers for the key.
    pub(crate) fn retarget(&mut self, h: u64, from: impl Fn(u32) -> bool, to: u32) -> Option<bool> {
        debug_assert!(
            self.copies.is_empty(),
            "a level with payloads counts no copies"
        );
        if let Layout::Semi(c) = self.geo.layout()
            && Region::new(self.table.bytes(), &self.geo).is_some()
        {
            return self.retarget_semi(c, h, from, to);
        }
        self.retarget_decoded(h, from, to)
    }

    /// [`retarget`](Self::retarget) through decoded buckets, in any layout: the reference the
    /// semi-sorted path is tested against.
    pub(crate) fn retarget_decoded(
        &mut self,
        h: u64,
        from: impl Fn(u32) -> bool,
        to: u32,
    ) -> Option<bool> {
        let slots = self.slots();
        let split = self.geo.split();
        let p = stretch::locate(split, slots, h);
        let below = ((1u64 << slots.payload_shift()) - 1) as u32;
        let b = self.geo.bucket_size() as usize;
        let layout = self.geo.layout();
        // The best entry: its bucket, slot, precision, and the bucket's decoded slots.
        let mut best: Option<(u64, usize, u32, [u32; 8])> = None;
        for (i, q) in [(p.i1, p.q1), (p.i2, p.q2)] {
            let s = with_codec!(layout, c => c.read(self.table.bytes(), i));
            for (k, &v) in s[..b].iter().enumerate() {
                if v == 0 || !stretch::matches(v & below, q) {
                    continue;
                }
                let payload = slots.payload(v);
                if payload == to {
                    return None;
                }
                if from(payload) {
                    let t = split.address_len(i) + slots.len(v);
                    if best.is_none_or(|(_, _, bt, _)| t > bt) {
                        best = Some((i, k, t, s));
                    }
                }
            }
        }
        let Some((i, k, _, mut s)) = best else {
            return Some(false);
        };
        s[k] = slots.with_payload(s[k] & below, to);
        let t = self.table.bytes_mut();
        with_codec!(layout, c => c.store(t, i, k, &s));
        Some(true)
    }

    /// [`retarget`](Self::retarget) in the semi-sorted layout a run index takes: the key's
    /// entries found from the buckets' flags ([`Semi::payload_flags`], each flagged slot's
    /// value confirmed) instead of two decoded buckets, and only the bucket that changes
    /// decoded and stored: 1 020 → 959 instructions a key retargeted (callgrind,
    /// `examples/run_index`'s compact mode, 16 × 250 000). The same answers and changes as the
    /// decoded path ([`retarget_decoded`](Self::retarget_decoded), which a test holds it to).
    fn retarget_semi(
        &mut self,
        c: crate::table::semi::Semi,
        h: u64,
        from: impl Fn(u32) -> bool,
        to: u32,
    ) -> Option<bool> {
        let slots = self.slots();
        let split = self.geo.split();
        let shift = slots.payload_shift();
        let below = ((1u64 << shift) - 1) as u32;
        let (i1, q1, i2, q2) = self.lookup.locate(h);
        // The best entry: its bucket, slot and precision.
        let mut best: Option<(u64, usize, u32)> = None;
        {
            let Some(r) = Region::new(self.table.bytes(), &self.geo) else {
                unreachable!("retarget checked the region")
            };
            for (i, q) in [(i1, q1), (i2, q2)] {
                let mut flags = c.payload_flags(r, i, q, shift);
                while flags != 0 {
                    let k = flags.trailing_zeros();
                    flags &= flags - 1;
                    let v = c.slot_value(r, i, k);
                    if !stretch::matches(v & below, q) {
                        continue;
                    }
                    let payload = slots.payload(v);
                    if payload == to {
                        return None;
                    }
                    if from(payload) {
                        let t = split.address_len(i) + slots.len(v);
                        if best.is_none_or(|(_, _, bt)| t > bt) {
                            best = Some((i, k as usize, t));
                        }
                    }
                }
            }
        }
        let Some((i, k, _)) = best else {
            return Some(false);
        };
        let t = self.table.bytes_mut();
        let mut s = c.read(t, i);
        s[k] = slots.with_payload(s[k] & below, to);
        c.store(t, i, k, &s);
        Some(true)
    }

    /// Removes every entry whose payload `drop` accepts (a run index dropping runs): one
    /// pass over the buckets; the entries removed.
    pub(crate) fn remove_payloads(&mut self, drop: impl Fn(u32) -> bool) -> u64 {
        debug_assert!(
            self.copies.is_empty(),
            "a level with payloads counts no copies"
        );
        let (slots, split) = (self.slots(), self.geo.split());
        let b = self.geo.bucket_size() as usize;
        let layout = self.geo.layout();
        let mut removed = 0;
        for i in 0..self.geo.num_buckets() {
            let t = self.table.bytes_mut();
            let mut s = with_codec!(layout, c => c.read(t, i));
            let mut changed = false;
            for v in s[..b].iter_mut() {
                if *v != 0 && drop(slots.payload(*v)) {
                    self.precision -= weight(split.address_len(i) + slots.len(*v));
                    *v = 0;
                    changed = true;
                    removed += 1;
                }
            }
            if changed {
                with_codec!(layout, c => c.store_all(t, i, &s));
                self.room.set(i, true);
            }
        }
        self.entries -= removed;
        self.keys = self.keys.saturating_sub(removed);
        removed
    }

    /// After the level could not place the key with seeded hash `h` however it grew:
    /// `Copies` when it finds the key (an entry answers for it), `None` when it does not (a
    /// new level must take it).
    pub(crate) fn refusal_of_found(&self, h: u64) -> Option<Refused> {
        let p = stretch::locate(self.geo.split(), self.slots(), h);
        (self.answering(&p) != 0).then_some(Refused::Copies)
    }

    /// The search of [`insert_seeded`](Self::insert_seeded): what the precision sum gains (the
    /// new entry's weight, and what moves that dropped a continuation bit add).
    fn place_by_search(
        &mut self,
        roots: [(u64, u32, u32); 2],
        budget: u32,
    ) -> std::result::Result<u64, Refused> {
        let mut nodes = std::mem::take(&mut self.search);
        let found = with_codec!(self.geo.layout(), c => search(
            &c,
            &self.geo,
            self.table.bytes(),
            &self.room,
            roots,
            budget.max(2) as usize,
            &mut nodes,
        ));
        let result = match found {
            Some(at) => {
                let gained = self.path_gain(&nodes, at);
                if self.within(self.precision + gained, self.target_fpr) {
                    self.apply_path(&nodes, at);
                    Ok(gained)
                } else {
                    Err(Refused::Share)
                }
            }
            None if nodes.len() < budget.max(2) as usize => Err(Refused::Closed),
            None => Err(Refused::NoRoom),
        };
        self.search = nodes;
        result
    }

    /// What the precision sum gains when the key goes in along the path ending at node `last`:
    /// the key's entry in the root's bucket, and each moved entry that drops its last
    /// continuation bit (its weight doubles).
    fn path_gain(&self, nodes: &[Node], last: usize) -> u64 {
        let (split, slots) = (self.geo.split(), self.slots());
        let mut gained = 0;
        let mut at = last;
        loop {
            let node = nodes[at];
            if node.parent == ROOT {
                return gained + weight(split.address_len(node.bucket) + slots.l0);
            }
            let from = nodes[node.parent as usize].bucket;
            if let Some((_, _, true)) = stretch::relocate(split, slots, node.value, from) {
                gained += weight(split.address_len(from) + slots.len(node.value));
            }
            at = node.parent as usize;
        }
    }

    /// Moves the entries of the path ending at node `last` (whose bucket has a free slot),
    /// last first, and puts the key into the root's bucket: each bucket of the path is read
    /// and written once (it gives up one entry and takes the one before it). The buckets of a
    /// path are distinct and every one but the last is full, so every move finds what the
    /// search saw.
    fn apply_path(&mut self, nodes: &[Node], last: usize) {
        let (split, slots) = (self.geo.split(), self.slots());
        let b = self.geo.bucket_size() as usize;
        let t = self.table.bytes_mut();
        // The entry that leaves the bucket being written (none leaves the last).
        let mut leaving = 0;
        let mut at = last;
        let mut moves: Vec<(u64, u32, u64, u32)> = Vec::new();
        loop {
            let node = nodes[at];
            let (bucket, incoming) = if node.parent == ROOT {
                (node.bucket, node.value)
            } else {
                let from = nodes[node.parent as usize].bucket;
                let Some((target, moved, _)) = stretch::relocate(split, slots, node.value, from)
                else {
                    unreachable!("the search only follows movable entries")
                };
                debug_assert_eq!(target, node.bucket);
                (target, moved)
            };
            with_codec!(self.geo.layout(), c => {
                let mut s = c.read(t, bucket);
                let Some(k) = s[..b].iter().position(|&v| v == leaving) else {
                    unreachable!("the path's buckets are as the search saw them")
                };
                s[k] = incoming;
                c.store(t, bucket, k, &s);
                if at == last {
                    self.room.set(bucket, s[..b].contains(&0));
                }
            });
            if node.parent == ROOT {
                break;
            }
            if !self.copies.is_empty() {
                moves.push((
                    nodes[node.parent as usize].bucket,
                    node.value,
                    bucket,
                    incoming,
                ));
            }
            leaving = node.value;
            at = node.parent as usize;
        }
        // The moved entries' copies go with them, from the key's bucket outward: a bucket's
        // entry that arrived first, then the one that left it.
        for &(from, v, to, w) in moves.iter().rev() {
            self.follow(from, v, to, w);
        }
    }

    /// After an entry `v` of bucket `from` moved to bucket `to` as `w`: the copies it counted
    /// go with it, but for what the slots of `from` still holding `v` can count
    /// (FORMAT.md §3.5: at most `2b − 1` each), which stay.
    fn follow(&mut self, from: u64, v: u32, to: u64, w: u32) {
        let e = self.copies.get(from, v);
        if e == 0 {
            return;
        }
        let b = self.geo.bucket_size();
        let left = with_codec!(self.geo.layout(), c => {
            c.read(self.table.bytes(), from)[..b as usize].iter().filter(|&&x| x == v).count()
        }) as u32;
        let keep = e.min(left * crate::copies::per_slot(b));
        self.copies.set(from, v, keep);
        self.copies.add(to, w, e - keep);
    }

    /// The copies the entries answering for the key with seeded hash `h` stand for (their
    /// slots and the copies they count), the most precise of them (bucket, value,
    /// precision), and one equal to the key's own value in its bucket (bucket, value), if any.
    fn copies_of(&self, h: u64) -> Answering {
        let (split, slots) = (self.geo.split(), self.slots());
        let p = stretch::locate(split, slots, h);
        let t = self.table.bytes();
        let b = self.geo.bucket_size() as usize;
        let mut a = Answering::default();
        for (bucket, q, l) in [(p.i1, p.q1, p.l1), (p.i2, p.q2, p.l2)] {
            let entries = with_codec!(self.geo.layout(), c => c.read(t, bucket));
            for (k, &v) in entries[..b].iter().enumerate() {
                if !stretch::matches(v, q) {
                    continue;
                }
                a.copies += 1;
                if !entries[..k].contains(&v) {
                    a.copies += u64::from(self.copies.get(bucket, v));
                }
                let precision = l + slots.len(v);
                if a.best.is_none_or(|(_, _, p)| precision > p) {
                    a.best = Some((bucket, v, precision));
                }
                if v == q {
                    a.equal = Some((bucket, v));
                }
            }
        }
        a
    }

    /// The copies the entries answering for the key with seeded hash `h` count beyond their
    /// slots (what [`count`](crate::ScalableCuckooFilter::count) adds to the view's count).
    pub(crate) fn counted_copies(&self, h: u64) -> u64 {
        if self.copies.is_empty() {
            return 0;
        }
        crate::copies::answering_sum(&self.geo, self.table.bytes(), h, |j, v| {
            self.copies.get(j, v)
        })
    }

    /// What the level does with a key one of its entries equals (FORMAT.md §8, "Copies"): the
    /// key is a copy as far as the level can tell — [`Copy::Count`] it, or [`Copy::Full`] when
    /// the entries answering for it stand for `2b` copies already. `None` when no entry of
    /// its buckets equals its value.
    pub(crate) fn equal_copy(&self, h: u64) -> Option<Copy> {
        let a = self.copies_of(h);
        a.equal?;
        Some(if a.copies >= self.most_copies() {
            Copy::Full
        } else {
            Copy::Count
        })
    }

    /// What the newest level does with a key its entries answer for but none equals (FORMAT.md
    /// §8, "Copies"): [`Copy::Full`] when they stand for `2b` copies already (a key whose
    /// entry a split or a move changed must not take a slot per change: its slots would fill
    /// its pair again); [`Copy::Count`] it on the most precise when that one counts copies
    /// already or the level's copies are dense (a count costs nothing more there); else
    /// [`Copy::Slot`]: it may be a distinct key (a false positive), and a slot answers for
    /// fewer keys and costs less than a record. `None` when no entry answers.
    pub(crate) fn inexact_copy(&self, h: u64) -> Option<Copy> {
        let a = self.copies_of(h);
        let (j, v, _) = a.best?;
        if a.copies >= self.most_copies() {
            return Some(Copy::Full);
        }
        let counting = self.copies.get(j, v) > 0
            || self.copies.encoding(&self.geo) == crate::copies::CopiesEncoding::Dense;
        Some(if counting { Copy::Count } else { Copy::Slot })
    }

    /// `2b`: the copies a key's answering entries may stand for.
    fn most_copies(&self) -> u64 {
        2 * u64::from(self.geo.bucket_size())
    }

    /// Counts one more copy of the key with seeded hash `h` on the entry equal to its value,
    /// or else on the most precise entry answering for it; `false` (nothing changed) when no
    /// entry answers or they stand for `2b` copies already.
    pub(crate) fn count_copy(&mut self, h: u64) -> bool {
        let a = self.copies_of(h);
        let Some((j, v)) = a.equal.or(a.best.map(|(j, v, _)| (j, v))) else {
            return false;
        };
        if a.copies >= self.most_copies() {
            return false;
        }
        self.copies.add(j, v, 1);
        self.keys += 1;
        true
    }

    /// [`split`](Self::split), logged: [`undo_splits`](Self::undo_splits) undoes it.
    pub(crate) fn split_logged(&mut self) -> Result<()> {
        let undo = self.split()?;
        self.split_log.push(undo);
        Ok(())
    }

    /// Keeps the logged splits (an insert that made them succeeded).
    pub(crate) fn keep_splits(&mut self) {
        self.split_log.clear();
    }

    /// Undoes the logged splits, newest first. It cannot fail.
    pub(crate) fn undo_splits(&mut self) {
        while let Some(undo) = self.split_log.pop() {
            self.unsplit(undo);
        }
    }

    /// Splits the next bucket (linear hashing): the level has one bucket more. Each entry of
    /// bucket `s` moves to `s` or `s + 2^K` by its first continuation bit; an entry with none
    /// left goes to both. `InvalidConfig` at 2^32 buckets; `OutOfMemory` if the bytes cannot
    /// grow.
    pub(crate) fn split(&mut self) -> Result<Unsplit> {
        let m = self.geo.num_buckets();
        let old_geo = self.geo;
        let grown = self.geo.with_buckets(m + 1)?;
        if grown.table_bytes() != self.geo.table_bytes() {
            self.table.resize(grown.table_bytes())?;
        }
        self.room.resize(m + 1);
        let old = self.geo.split();
        let (low, high) = (old.s, old.s + (1 << old.k));
        debug_assert_eq!(high, m);
        self.set_geo(grown);
        let slots = self.slots();
        let entries = self.entries;
        let b = grown.bucket_size() as usize;
        // The copies the split bucket's entries count: taken, and given back where the
        // entries go below.
        let mut counted = Vec::new();
        if !self.copies.is_empty() {
            let before = with_codec!(grown.layout(), c => c.read(self.table.bytes(), low));
            for (k, &v) in before[..b].iter().enumerate() {
                if v != 0 && !before[..k].contains(&v) {
                    let e = self.copies.take(low, v);
                    if e > 0 {
                        counted.push((v, e));
                    }
                }
            }
        }
        let t = self.table.bytes_mut();
        let bucket = with_codec!(grown.layout(), c => {
            let before = c.read(t, low);
            let (mut lo, mut hi) = ([0u32; 8], [0u32; 8]);
            let (mut nl, mut nh) = (0, 0);
            let (fm, bare, first) = (slots.field_mask(), slots.bare(), 1 << slots.l0);
            for &v in &before[..b] {
                // The first continuation bit becomes address bit K: 0 keeps the entry in
                // `low`, 1 moves it to `high`; a bare entry is kept in both (precision T + 1
                // twice: the sum stays). Without branches: the bits are coin tosses. A slot
                // written for an entry that does not go there is written 0, or over by the next.
                let field = v & fm;
                let is_bare = field == bare;
                let up = field & first != 0;
                let w = if is_bare { v } else { (v & !fm) | ((field << 1) & fm) };
                let occupied = v != 0;
                let (to_low, to_high) = (occupied && (is_bare || !up), occupied && (is_bare || up));
                lo[nl] = w & (to_low as u32).wrapping_neg();
                hi[nh] = w & (to_high as u32).wrapping_neg();
                nl += to_low as usize;
                nh += to_high as usize;
                self.entries += (occupied && is_bare) as u64;
            }
            c.store_all(t, low, &lo);
            c.store_all(t, high, &hi);
            self.room.set(low, nl < b);
            self.room.set(high, nh < b);
            before
        });
        for &(v, e) in &counted {
            // As the entry went (see above): the first continuation bit picks the bucket; a
            // bare entry is in both, and each counts its copies.
            let (fm, bare, first) = (slots.field_mask(), slots.bare(), 1 << slots.l0);
            let field = v & fm;
            if field == bare {
                self.copies.add(low, v, e);
                self.copies.add(high, v, e);
            } else {
                let w = (v & !fm) | ((field << 1) & fm);
                self.copies
                    .add(if field & first != 0 { high } else { low }, w, e);
            }
        }
        Ok(Unsplit {
            bucket,
            entries,
            geo: old_geo,
            counted,
        })
    }

    /// Undoes the last [`split`](Self::split), which `undo` came from: the bytes and counts
    /// are again exactly what they were before it.
    pub(crate) fn unsplit(&mut self, undo: Unsplit) {
        // The geometry first (the one the split started from, kept in `undo`: nothing to
        // derive, so nothing can fail), then the bytes; shrinking the table cannot fail.
        let m = self.geo.num_buckets();
        let shrunk = undo.geo;
        debug_assert_eq!(shrunk.num_buckets() + 1, m);
        if !self.copies.is_empty() || !undo.counted.is_empty() {
            // The halves' copies go back to the bucket they came from.
            let b = self.geo.bucket_size() as usize;
            for j in [shrunk.split().s, m - 1] {
                let values = with_codec!(self.geo.layout(), c => c.read(self.table.bytes(), j));
                for &v in &values[..b] {
                    self.copies.take(j, v);
                }
            }
            for &(v, e) in &undo.counted {
                self.copies.add(shrunk.split().s, v, e);
            }
        }
        self.set_geo(shrunk);
        let before = shrunk.split();
        let t = self.table.bytes_mut();
        let b = shrunk.bucket_size() as usize;
        with_codec!(shrunk.layout(), c => {
            c.store_all(t, m - 1, &[0; 8]);
            c.store_all(t, before.s, &undo.bucket);
        });
        self.table.shrink(shrunk.table_bytes());
        self.room.resize(m - 1);
        self.room.set(before.s, undo.bucket[..b].contains(&0));
        self.entries = undo.entries;
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
        // A copy it counts goes first: the entry stays for the others.
        let e = self.copies.get(bucket, v);
        if e > 0 {
            self.copies.set(bucket, v, e - 1);
            self.keys = self.keys.saturating_sub(1);
            return true;
        }
        let t = self.table.bytes_mut();
        let removed = self.geo.layout().remove_one(t, bucket, v);
        debug_assert!(removed);
        self.room.set(bucket, true);
        self.precision -= weight(precision);
        self.entries -= 1;
        self.keys = self.keys.saturating_sub(1);
        true
    }
}

/// What [`StretchLevel::unsplit`] needs to undo a split: the split bucket as it was, and the
/// entry count.
#[derive(Clone, Debug)]
pub(crate) struct Unsplit {
    bucket: crate::table::codec::Slots,
    entries: u64,
    /// The level's geometry before the split.
    geo: Geometry,
    /// The copies the split bucket's entries counted (value, copies).
    counted: Vec<(u32, u32)>,
}

/// The entries answering for a key in its pair ([`StretchLevel::copies_of`]).
#[derive(Clone, Copy, Debug, Default)]
struct Answering {
    /// The copies they stand for: their slots and the copies they count.
    copies: u64,
    /// The most precise: bucket, value, precision.
    best: Option<(u64, u32, u32)>,
    /// One equal to the key's value in its bucket: bucket, value.
    equal: Option<(u64, u32)>,
}

/// What a level does with a key it answers for ([`StretchLevel::equal_copy`],
/// [`StretchLevel::inexact_copy`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Copy {
    /// Count it on an answering entry.
    Count,
    /// Try a slot of its own in the newest level first (it may be a distinct key); count it
    /// if none is found and its answering entries stand for fewer than `2b` copies, else
    /// refuse it.
    Slot,
    /// Refuse it: its answering entries stand for `2b` copies.
    Full,
}

/// Why a level did not take a key; the level is exactly as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// No free slot within the search's reach.
    NoRoom,
    /// The only path found drops continuation bits that would take the level past its share.
    Share,
    /// The level finds the key but cannot place it — its pair is [`closed`] to it, or every
    /// bucket its entries reach is — and nothing says another key filled its pair (see
    /// [`Saturated`]): what copies of the key do.
    Copies,
    /// The search reached every bucket it could without finding room (an internal step of
    /// the insert; never returned).
    Closed,
}

/// What [`place_near`] did.
enum Near {
    /// The key is in, and the precision sum gains `gained`.
    Placed {
        gained: u64,
        /// The entry that moved to make room: its bucket and value, and where it went as
        /// what (its copies go with it).
        moved: Option<(u64, u32, u64, u32)>,
    },
    /// The key's pair is closed to it and holds it.
    Copies,
    /// Neither bucket has room, and no entry of theirs can move to a bucket with room: a
    /// search must go further.
    Search,
}

/// Whether the pair `pair` (bucket, the key's value there, its address length), whose slots
/// are `buckets`, is closed to the key and holds it: both buckets full, some entry answering
/// for the key, and every entry unable to leave the pair — its other bucket is the pair's
/// other one, or it has no bit left to get there. Then no move ever frees a slot of the pair,
/// and the key, already found, is as present as the level can make it: what copies of one key
/// do to their buckets (together with entries of other keys that share its core, whose other
/// bucket is the same). An entry that answers for the key always is such an entry.
fn closed(
    b: usize,
    split: stretch::Split,
    slots: Slots,
    pair: [(u64, u32, u32); 2],
    buckets: &[crate::table::codec::Slots; 2],
) -> bool {
    let mut answers = false;
    for (n, &(i, q, l)) in pair.iter().enumerate() {
        let other = pair[1 - n].0;
        for &v in &buckets[n][..b] {
            if v == 0 {
                return false;
            }
            answers |= stretch::matches(v, q);
            if stretch::target(split, slots, v, i, l).is_some_and(|t| t != other) {
                return false;
            }
        }
    }
    answers
}

/// Places the key in one of its buckets `roots` (bucket, the key's value there, its address
/// length; the preferred one first) if one has room, else by moving one entry of one of them
/// to that entry's other bucket if that has room. A loop monomorphic in the codec; the
/// buckets' room is read from `room`, not from the table.
#[inline(always)]
fn place_near<C: Codec>(
    c: &C,
    split: stretch::Split,
    slots: Slots,
    t: &mut [u8],
    room: &mut Room,
    roots: [(u64, u32, u32); 2],
) -> Near {
    let b = c.slots();
    for (i, q, l) in roots {
        if room.get(i) {
            let mut s = c.read(t, i);
            let Some(k) = s[..b].iter().position(|&v| v == 0) else {
                unreachable!("a bucket with room has a free slot")
            };
            s[k] = q;
            c.store(t, i, k, &s);
            room.set(i, s[..b].contains(&0));
            return Near::Placed {
                gained: weight(l + slots.l0),
                moved: None,
            };
        }
    }
    let mut full = [[0; 8]; 2];
    for (n, (root, q, l)) in roots.into_iter().enumerate() {
        let mut s = c.read(t, root);
        full[n] = s;
        for k in 0..b {
            let v = s[k];
            let Some(target) = stretch::target(split, slots, v, root, l) else {
                continue;
            };
            if !room.get(target) {
                continue;
            }
            let Some((target, moved, dropped)) = stretch::relocate(split, slots, v, root) else {
                unreachable!("an entry with a target can move there")
            };
            let mut d = c.read(t, target);
            let Some(free) = d[..b].iter().position(|&x| x == 0) else {
                unreachable!("a bucket with room has a free slot")
            };
            d[free] = moved;
            c.store(t, target, free, &d);
            room.set(target, d[..b].contains(&0));
            s[k] = q;
            c.store(t, root, k, &s);
            let mut gained = weight(l + slots.l0);
            if dropped {
                // Its precision fell by one: its weight doubled.
                gained += weight(l + slots.len(v));
            }
            return Near::Placed {
                gained,
                moved: Some((root, v, target, moved)),
            };
        }
    }
    // No entry of either can move in one step. If none can ever leave the pair, no search
    // will find room either.
    if closed(b, split, slots, roots, &full) {
        return Near::Copies;
    }
    Near::Search
}

/// Breadth-first search from the key's two (full) buckets for a bucket with a free slot: the
/// index in `nodes` of the node whose bucket has room. A node is expanded only while fewer than
/// `budget` are pushed (so at most `budget + b − 1` are). Room is read from `room`; a bucket is
/// pushed once it is known full, with its lines asked for, as it will be read when expanded. A
/// path never visits a bucket twice (each node is checked against its ancestors), so its moves
/// do not interfere. A loop monomorphic in the codec.
fn search<C: Codec>(
    c: &C,
    geo: &Geometry,
    t: &[u8],
    room: &Room,
    roots: [(u64, u32, u32); 2],
    budget: usize,
    nodes: &mut Vec<Node>,
) -> Option<usize> {
    let (Some(slots), Some(region)) = (geo.stretch_slots(), Region::new(t, geo)) else {
        return None;
    };
    let split = geo.split();
    let b = geo.bucket_size() as usize;
    nodes.clear();
    for (bucket, value, _) in roots {
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
            if on_path(nodes, head, target) {
                continue;
            }
            nodes.push(Node {
                bucket: target,
                parent: head as u32,
                value: v,
            });
            if room.get(target) {
                return Some(nodes.len() - 1);
            }
            c.prefetch(region, target);
        }
        head += 1;
    }
    None
}

/// Whether `bucket` is that of node `at` or of one of its ancestors.
fn on_path(nodes: &[Node], mut at: usize, bucket: u64) -> bool {
    loop {
        let node = nodes[at];
        if node.bucket == bucket {
            return true;
        }
        if node.parent == ROOT {
            return false;
        }
        at = node.parent as usize;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::{KeyHash, SplitMix64, seeded};
    use crate::level::scan;
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
            assert_room_is_the_bytes(&f);
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
                assert_room_is_the_bytes(&f);
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

    /// The owner's probe ([`StretchLevel::contains_seeded`]: the codec's own function, chosen
    /// when the geometry changes, over the lookup state derived then) answers as the view
    /// does, in every layout, as the level grows by splits and as the splits are undone: the
    /// probe and its state follow every change of the geometry.
    #[test]
    fn the_owners_probe_follows_every_geometry_change() {
        use crate::table::tests::all_layouts;
        for (e, b, w) in all_layouts() {
            if w < 2 + 5 {
                continue;
            }
            let geo = Geometry::stretch(3, b, w, e, 5).unwrap();
            let mut f = StretchLevel::new(geo, 7, 500, 0.01).unwrap();
            let agree = |f: &StretchLevel, what: &str| {
                for i in 0..300 {
                    let (q, v) = (f.contains_seeded(h(i)), f.view().contains_seeded(h(i)));
                    assert_eq!(q, v, "{e:?} b={b} w={w} {what}: key {i}");
                }
            };
            let mut i = 0;
            for _ in 0..40 {
                while f.entries() < f.geometry().num_buckets() * b as u64 / 2 {
                    let _ = f.insert_seeded(h(i));
                    i += 1;
                }
                agree(&f, "grown");
                f.split_logged().unwrap();
            }
            for k in 0..i {
                assert!(f.contains_seeded(h(k)), "{e:?} b={b} w={w}: key {k} lost");
            }
            f.undo_splits();
            agree(&f, "splits undone");
        }
    }

    /// Entries with a payload (a run index's run ids): every key inserted with its run is
    /// found with that run however the level grows (splits, moves and searches keep the
    /// payload), in every encoding; an absent key gets a run at most at the level's bound.
    #[test]
    fn payloads_survive_growth_and_moves() {
        for (e, w) in [
            (Encoding::SemiSorted, 18),
            (Encoding::Packed, 17),
            (Encoding::Plain, 16),
        ] {
            let geo = Geometry::stretch_with_payload(8, 4, w, e, 5, 4).unwrap();
            let mut f = StretchLevel::new(geo, 7, 500, 0.05).unwrap();
            let mut model: Vec<(u64, u32)> = Vec::new();
            let mut rng = SplitMix64::new(5);
            for i in 0..20_000u64 {
                while f.entries() + 1 > (f.geometry().slots() as f64 * 0.8) as u64 {
                    f.split_logged().unwrap();
                    f.keep_splits();
                }
                let run = (rng.next_u64() % 16) as u32;
                // A tenth of the keys in a second run too (a key updated in a later run).
                let runs = if i % 10 == 0 {
                    vec![run, (run + 1) % 16]
                } else {
                    vec![run]
                };
                for r in runs {
                    f.insert_payload_within(h(i), r, 500).unwrap();
                    model.push((i, r));
                }
            }
            for &(i, r) in &model {
                let found = f.payloads_of(h(i));
                assert!(
                    found >> r & 1 == 1,
                    "{e:?}: key {i} of run {r} lost: {found:#x}"
                );
            }
            let absent = (0..100_000u64)
                .filter(|&i| f.payloads_of(h(i + (1 << 40))) != 0)
                .count();
            let rate = absent as f64 / 100_000.0;
            assert!(
                rate <= f.fpr_bound() * 1.2,
                "{e:?}: {rate} against {}",
                f.fpr_bound()
            );
        }
    }

    /// A compaction's retarget through the semi-sorted flags ([`StretchLevel::retarget`])
    /// answers and changes the level exactly as the decoded path does
    /// ([`StretchLevel::retarget_decoded`]): semi-sorted buckets of 4 with the run index's
    /// 6-bit payloads and with 3-bit ones, slots of 15 to 32 bits, levels grown by splits from
    /// 2 buckets; keys with one entry, with entries of several runs (so that one of `to`'s
    /// makes it a no-op, or several merged ones compete on precision), absent keys and keys
    /// one bit from a present one; `from` masks and `to` drawn at random; the two levels'
    /// bytes compared after every call.
    #[test]
    fn retarget_through_flags_agrees_with_the_decoded_path() {
        let (mut calls, mut moved, mut noop, mut none) = (0u64, 0u64, 0u64, 0u64);
        for w in [15u32, 18, 20, 21, 24, 28, 32] {
            for p in [6u32, 3] {
                if w < 5 + p + 7 {
                    continue;
                }
                let geo =
                    Geometry::stretch_with_payload(2, 4, w, Encoding::SemiSorted, 5, p).unwrap();
                let mut f = StretchLevel::new(geo, 7, 500, 1.0).unwrap();
                let mut rng = SplitMix64::new(u64::from(w * 10 + p));
                let mut keys: Vec<u64> = Vec::new();
                while keys.len() < 3000 && f.geometry().num_buckets() < 1 << 12 {
                    // A new key, or (one in four) a key again with another payload.
                    let key = match keys.len() {
                        n if n > 0 && rng.next_u64().is_multiple_of(4) => {
                            keys[rng.next_u64() as usize % n]
                        }
                        _ => rng.next_u64(),
                    };
                    let pay = (rng.next_u64() % (1 << p)) as u32;
                    while f.entries() + 1 > (f.geometry().slots() as f64 * 0.8) as u64 {
                        f.split_logged().unwrap();
                        f.keep_splits();
                    }
                    if f.insert_payload_within(key, pay, 500).is_ok() {
                        keys.push(key);
                    }
                }
                for round in 0..4000 {
                    let h = match round % 4 {
                        0 | 1 => keys[rng.next_u64() as usize % keys.len()],
                        2 => {
                            keys[rng.next_u64() as usize % keys.len()] ^ 1 << (rng.next_u64() % 64)
                        }
                        _ => rng.next_u64(),
                    };
                    let mask = rng.next_u64() & (u64::MAX >> (64 - (1 << p)));
                    let to = (rng.next_u64() % (1 << p)) as u32;
                    let from = |q: u32| mask >> q & 1 == 1;
                    let mut g = f.clone();
                    let got = f.retarget(h, from, to);
                    let want = g.retarget_decoded(h, from, to);
                    assert_eq!(got, want, "w={w} p={p} round {round} h={h:#x}");
                    assert!(
                        f.table.bytes() == g.table.bytes(),
                        "w={w} p={p} round {round}: the levels differ"
                    );
                    calls += 1;
                    match got {
                        Some(true) => moved += 1,
                        Some(false) => none += 1,
                        None => noop += 1,
                    }
                }
            }
        }
        // Every outcome came up, many times.
        assert!(
            calls >= 40_000 && moved > 1000 && none > 1000 && noop > 100,
            "{moved} {none} {noop}"
        );
    }

    /// The payload kernels ([`StretchLevel::payloads_of`]: the codec's test of the slots
    /// where they lie) answer exactly as the decoded path does, slot by slot: in every layout
    /// (encoding, bucket size, slot width) with the run index's 6-bit payloads — among them
    /// the semi-sorted buckets of 4 with slots of 18 to 32 bits the index takes, whose low
    /// parts fit one word up to 20 bits and take two words above — and with 3-bit payloads
    /// (where the semi-sorted kernel needs its general test, and the high nibble holds core
    /// bits); in levels grown by splits from the smallest table (2 buckets, one cache line),
    /// checked at every stage; for present keys, absent ones, keys one bit away from a
    /// present one (partial matches), and keys whose bucket is the last.
    #[test]
    fn payload_kernels_agree_with_the_decoded_path() {
        use crate::table::tests::all_layouts;
        let (mut layouts, mut hits, mut near_hits, mut last, mut many) = (0, 0u64, 0u64, 0, 0);
        let mut skipped = 0u64;
        let mut index_widths = HashSet::new();
        for (e, b, w) in all_layouts() {
            for p in [6, 3] {
                // At least 6 continuation bits, as the crate's levels have: with fewer, the
                // bare entries splits copy fill the buckets.
                if w < 5 + p + 7 {
                    continue;
                }
                let geo = Geometry::stretch_with_payload(2, b, w, e, 5, p).unwrap();
                layouts += 1;
                if e == Encoding::SemiSorted && b == 4 && p == 6 {
                    index_widths.insert(w);
                }
                let mut f = StretchLevel::new(geo, 7, 500, 1.0).unwrap();
                let mut rng = SplitMix64::new(u64::from(w * 100 + b * 10 + p));
                let mut keys: Vec<u64> = Vec::new();
                let agree = |f: &StretchLevel, h: u64, what: &str| {
                    let (got, want) = (f.payloads_of(h), f.payloads_of_decoded(h));
                    assert_eq!(got, want, "{e:?} b={b} w={w} p={p} {what} h={h:#x}");
                    want
                };
                for stage in 0..6 {
                    // Grow: up to 4x the keys, splitting past 80 % and when a key finds no room.
                    let target = 8u64 << (2 * stage);
                    while (keys.len() as u64) < target && f.geometry().num_buckets() < 1 << 14 {
                        let key = rng.next_u64();
                        let pay = (rng.next_u64() % (1 << p)) as u32;
                        while f.entries() + 1 > (f.geometry().slots() as f64 * 0.8) as u64 {
                            f.split_logged().unwrap();
                            f.keep_splits();
                        }
                        // A key that finds no room after a few splits (narrow slots, whose
                        // bare entries fill their buckets) is left out.
                        let placed = (0..8).any(|_| {
                            let r = f.insert_payload_within(key, pay, 500);
                            if r.is_err() {
                                f.split_logged().unwrap();
                                f.keep_splits();
                            }
                            r.is_ok()
                        });
                        skipped += u64::from(!placed);
                        if placed {
                            keys.push(key);
                        }
                    }
                    let m = f.geometry().num_buckets();
                    let what = format!("stage {stage}, {m} buckets");
                    for &k in &keys {
                        let got = agree(&f, k, &what);
                        assert_ne!(got, 0, "{e:?} b={b} w={w} p={p} {what}: a key lost");
                        hits += 1;
                        many += u64::from(got.count_ones() > 1);
                        // One bit away: in the bucket bits, the core or the continuation.
                        let near = k ^ 1 << rng.below(64);
                        near_hits += u64::from(agree(&f, near, &what) != 0);
                    }
                    let (split, slots) = (f.geometry().split(), f.slots());
                    for _ in 0..500 {
                        let h = rng.next_u64();
                        agree(&f, h, &what);
                        let p = stretch::locate(split, slots, h);
                        last += usize::from(p.i1 == m - 1 || p.i2 == m - 1);
                    }
                }
            }
        }
        assert!(layouts >= 30, "{layouts} layouts");
        assert!(skipped * 100 <= hits, "{skipped} keys left out");
        let want: HashSet<u32> = (18..=32).collect();
        assert_eq!(index_widths, want, "the run index's layouts");
        assert!(last >= 1000, "{last} keys at the last bucket");
        assert!(
            many >= 1000,
            "{many} keys answered with two payloads or more"
        );
        assert!(
            near_hits * 20 >= hits,
            "{near_hits} of {hits} near keys answered"
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
                f.unsplit(undo);
                assert_eq!(f, before, "{e:?}");
                assert_eq!(f.room, before.room, "{e:?}");
            }
            assert_room_is_the_bytes(&f);
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
                Err(r) => {
                    assert_eq!(r, Refused::NoRoom);
                    assert_eq!(f, before);
                    assert_room_is_the_bytes(&f);
                    break;
                }
            }
        }
        assert!(i >= 6, "2 buckets of 4 took only {i}");
    }

    /// The room bits say, for every bucket, whether it has a free slot.
    fn assert_room_is_the_bytes(f: &StretchLevel) {
        let b = f.geo.bucket_size() as usize;
        let m = f.geo.num_buckets();
        assert_eq!(f.room.words.len() as u64, m.div_ceil(64));
        for j in 0..m {
            let free = f.geo.layout().read(f.table(), j)[..b].contains(&0);
            assert_eq!(f.room.get(j), free, "bucket {j} of {m}");
        }
        // No bit past the last bucket.
        if !m.is_multiple_of(64) {
            assert_eq!(f.room.words[(m / 64) as usize] >> (m % 64), 0);
        }
    }

    /// `Room::resize` keeps the bits of the buckets that stay, clears those it drops (so that
    /// growing back gives full buckets until set), across word boundaries.
    #[test]
    fn room_bits_resize_and_keep_their_buckets() {
        let mut r = Room::of(130, |j| j % 3 == 0);
        for j in 0..130 {
            assert_eq!(r.get(j), j % 3 == 0, "{j}");
        }
        r.resize(65);
        assert_eq!(r.words.len(), 2);
        assert_eq!(r.words[1] >> 1, 0, "bits past bucket 64 kept");
        r.resize(130);
        for j in 0..130 {
            assert_eq!(r.get(j), j < 65 && j % 3 == 0, "{j}");
        }
        r.set(129, true);
        r.set(0, false);
        assert!(r.get(129) && !r.get(0) && r.get(3));
        r.resize(64);
        assert_eq!(r.words.len(), 1);
        assert_eq!(Room::of(0, |_| true).words.len(), 0);
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

    /// Whether the key with seeded hash `h` could go in by one move: an entry of one of its
    /// buckets has another bucket with room.
    fn one_move_away(f: &StretchLevel, h: u64) -> bool {
        let (split, slots) = (f.geo.split(), f.slots());
        let p = stretch::locate(split, slots, h);
        let b = f.geo.bucket_size() as usize;
        [p.i1, p.i2].iter().any(|&i| {
            let l = split.address_len(i);
            f.geo.layout().read(f.table(), i)[..b]
                .iter()
                .any(|&v| stretch::target(split, slots, v, i, l).is_some_and(|t| f.room.get(t)))
        })
    }

    /// The search reaches at most `budget` buckets: with 2 (the key's own) a key is placed
    /// only into a bucket of its own with room or by one move, and otherwise refused with
    /// nothing changed; with the level's budget, most keys refused so find room by moving
    /// entries further.
    #[test]
    fn the_search_keeps_to_its_budget() {
        let mut f = level(600, 14, 5);
        let (mut refused, mut moved) = (0, 0);
        let mut i = 0;
        while (f.entries() as f64) < 0.9 * f.geo.slots() as f64 && i < 10_000 {
            let key = h(i);
            i += 1;
            let before = f.clone();
            let near = has_room(&f, key) || one_move_away(&f, key);
            match f.insert_seeded_within(key, 2) {
                Ok(()) => assert!(near, "key {i} placed beyond one move with a budget of 2"),
                Err(r) => {
                    assert_eq!(r, Refused::NoRoom);
                    assert!(!near, "key {i} refused with room one move away");
                    assert_eq!(f, before);
                    refused += 1;
                    if f.insert_seeded_within(key, 500).is_ok() {
                        moved += 1;
                    }
                }
            }
            assert_room_is_the_bytes(&f);
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

    /// A key's seeded hash with bit 50 flipped: in a level of under 2^20 buckets neither its
    /// buckets, its core nor its continuation read that bit, so the two keys share everything
    /// the level stores of them.
    /// Whether the key's pair is [`closed`] to it and holds it.
    fn pair_is_closed(f: &StretchLevel, p: &stretch::Probe) -> bool {
        let t = f.table.bytes();
        let (split, slots) = (f.geo.split(), f.slots());
        let pair = [(p.i1, p.q1, p.l1), (p.i2, p.q2, p.l2)];
        with_codec!(f.geo.layout(), c => {
            let buckets = pair.map(|(i, _, _)| c.read(t, i));
            closed(c.slots(), split, slots, pair, &buckets)
        })
    }

    /// Copies of one key fill its two buckets, then are refused (`Copies`) with nothing
    /// changed, however often; the refusal is made before any search.
    #[test]
    fn copies_past_a_full_pair_are_refused() {
        let mut f = level(64, 14, 5);
        for i in 0..100 {
            f.insert_seeded(h(i)).unwrap();
        }
        let hot = h(1 << 30);
        for copy in 0..8 {
            f.insert_seeded(hot)
                .unwrap_or_else(|r| panic!("copy {copy}: {r:?}"));
        }
        assert_eq!(f.matches(hot).0, 8);
        for _ in 0..3 {
            let before = f.clone();
            assert_eq!(f.insert_seeded_within(hot, 1 << 20), Err(Refused::Copies));
            assert_eq!(f, before);
        }
        // After one copy is removed the pair takes one copy again.
        assert!(f.remove_seeded(hot));
        f.insert_seeded(hot).unwrap();
        assert_eq!(f.insert_seeded(hot), Err(Refused::Copies));
    }

    /// A level never takes a key that would take its bound past its share: with the share set
    /// to the bound after one more key of the least precision (what the chain checks before an
    /// insert), every insert the level takes keeps the bound within it, however many entries
    /// the search's moves make less precise; and inserts that would pass it are refused with
    /// `Share`, changing nothing.
    #[test]
    fn the_moves_of_a_search_never_take_a_level_past_its_share() {
        // Mid-way through a doubling: moves from split buckets to unsplit ones drop bits.
        let mut f = level(768, 14, 5);
        let (mut share_refusals, mut searched) = (0, 0);
        for i in 0..3000u64 {
            let (split, slots) = (f.geo.split(), f.slots());
            let tight = fpr_bound(5, f.precision + weight(split.k + slots.l0));
            let mut g = f.clone();
            g.target_fpr = tight;
            assert!(g.room_for_one_more(tight));
            let near = has_room(&g, h(i)) || one_move_away(&g, h(i));
            match g.insert_seeded(h(i)) {
                Ok(()) => assert!(
                    g.fpr_bound() <= tight,
                    "key {i}: {} > {tight}",
                    g.fpr_bound()
                ),
                Err(Refused::Share) => {
                    share_refusals += 1;
                    g.target_fpr = f.target_fpr;
                    assert_eq!(g, f, "key {i}");
                }
                Err(_) => {}
            }
            searched += u32::from(!near);
            if f.insert_seeded(h(i)).is_err() {
                break;
            }
        }
        assert!(searched >= 50, "{searched} searches");
        assert!(
            share_refusals >= 1,
            "no search passed the share: the test shows nothing"
        );
    }

    /// In a level full to its last slot, a search for room ends having examined every bucket
    /// it can reach, below any large budget: a key the level finds is then refused as a copy
    /// (`Copies`), whether its pair is closed or not, and nothing changes. When the budget ends
    /// the search first (2: the key's own buckets), the same key, at a pair that is not closed,
    /// is refused for want of room (`NoRoom`: a split may make some).
    #[test]
    fn a_found_key_is_a_copy_only_when_the_search_ran_out_of_buckets() {
        let mut f = level(4, 14, 5);
        let mut present = Vec::new();
        for i in 0..10_000 {
            if f.entries() == f.geo.slots() {
                break;
            }
            if f.insert_seeded_within(h(i), 1 << 20).is_ok() {
                present.push(h(i));
            }
        }
        assert_eq!(f.entries(), f.geo.slots(), "the level did not fill");
        let mut open = 0;
        for &k in &present {
            let p = stretch::locate(f.geo.split(), f.slots(), k);
            let before = f.clone();
            assert_eq!(f.insert_seeded_within(k, 1 << 20), Err(Refused::Copies));
            assert_eq!(f, before);
            if !pair_is_closed(&f, &p) {
                open += 1;
                assert_eq!(f.insert_seeded_within(k, 2), Err(Refused::NoRoom));
                assert_eq!(f, before);
            }
        }
        assert!(
            open >= 4,
            "{open} of {} keys at an open pair",
            present.len()
        );
    }

    /// The search expands a node only while fewer than `budget` nodes are pushed, so it ends
    /// with at most `budget + b − 1`; it stops at the first bucket with room; and no path visits
    /// a bucket twice. Checked from keys whose buckets are both full, in levels of 4 to 64
    /// buckets filled to their last slot or near it, with budgets from 2 to 40.
    #[test]
    fn a_search_keeps_to_its_budget_and_never_revisits_a_bucket_on_a_path() {
        let (mut tight, mut found, mut revisits_possible) = (0, 0, 0);
        for (m, keys) in [(4, 10_000), (16, 60), (64, 245), (64, 10_000)] {
            let mut f = level(m, 14, 5);
            for i in 0..keys {
                if f.entries() == f.geo.slots() {
                    break;
                }
                let _ = f.insert_seeded_within(h(i), 1 << 20);
            }
            let b = f.geo.bucket_size() as usize;
            let (split, slots) = (f.geo.split(), f.slots());
            let mut nodes = Vec::new();
            for j in 0..400u64 {
                let p = stretch::locate(split, slots, h(1 << 40 | j));
                if f.room.get(p.i1) || f.room.get(p.i2) || p.i1 == p.i2 {
                    continue;
                }
                let roots = [(p.i1, p.q1, p.l1), (p.i2, p.q2, p.l2)];
                for budget in 2..=40 {
                    let at = with_codec!(f.geo.layout(), c => search(
                        &c, &f.geo, f.table.bytes(), &f.room, roots, budget, &mut nodes,
                    ));
                    let what = format!("m {m}, key {j}, budget {budget}: {nodes:?}");
                    assert!(nodes.len() < budget + b, "{what}");
                    tight += usize::from(nodes.len() == budget + b - 1);
                    for (n, node) in nodes.iter().enumerate() {
                        let room = f.room.get(node.bucket);
                        assert_eq!(room, at == Some(n), "{what}");
                        if n < 2 {
                            assert_eq!(node.parent, ROOT, "{what}");
                            continue;
                        }
                        let mut up = node.parent as usize;
                        assert!(up < n, "{what}");
                        loop {
                            assert_ne!(nodes[up].bucket, node.bucket, "{what}");
                            if nodes[up].parent == ROOT {
                                break;
                            }
                            up = nodes[up].parent as usize;
                        }
                    }
                    if let Some(n) = at {
                        assert_eq!(n, nodes.len() - 1, "{what}");
                        found += 1;
                    }
                    // Nodes with an entry whose other bucket is a root's: pushed as a child,
                    // it would revisit that root on its path.
                    revisits_possible += nodes
                        .iter()
                        .filter(|node| {
                            let l = split.address_len(node.bucket);
                            let s = f.geo.layout().read(f.table.bytes(), node.bucket);
                            s[..b].iter().any(|&v| {
                                stretch::target(split, slots, v, node.bucket, l)
                                    .is_some_and(|t| t == roots[0].0 || t == roots[1].0)
                            })
                        })
                        .count();
                }
            }
        }
        assert!(tight >= 1000, "the bound was reached {tight} times");
        assert!(found >= 1000, "room was found {found} times");
        assert!(revisits_possible >= 1000, "{revisits_possible}");
    }
}
