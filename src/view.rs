//! `FilterRef`: the borrowed, read-only view every lookup path ends in.

use crate::hash::{self, KeyHash};
use crate::table::raw::Region;
use crate::table::{Codec, Encoding, FixedBuf, Geometry, kernel, with_codec};

/// A read-only view of a filter's table: the one place lookups happen.
///
/// An owned [`CuckooFilter`](crate::CuckooFilter) hands one out with
/// [`as_filter_ref`](crate::CuckooFilter::as_filter_ref); every other read path (a mapped file,
/// a block inside an SSTable) ends in the same view, so there is one lookup kernel to optimise
/// and to test. It is `Copy` and small: the derived geometry, the seed, the item count and a
/// borrowed byte slice.
///
/// ```
/// use cuckoo_sst::CuckooFilter;
///
/// let mut f = CuckooFilter::with_capacity(1000);
/// f.insert(b"key").unwrap();
/// let view = f.as_filter_ref();
/// assert!(view.contains(b"key"));
/// assert_eq!(view.len(), 1);
/// ```
///
/// # Views of stretch levels
///
/// A level of a growable filter that grows in place is a *stretch level* (FORMAT.md §2.2,
/// §3.4): [`ScalableCuckooFilter::level`](crate::ScalableCuckooFilter::level) gives one for
/// every level the crate creates, and [`MappedFilter::level`](crate::MappedFilter::level) for
/// every stretch level of a version-3 file. (Single filters are classic, and so are the levels
/// of version-1 and -2 chains, which a chain read from such a file keeps ahead of the stretch
/// levels it adds.) Its slots hold entries that keep a varying number
/// of their key's hash bits, not fixed-width fingerprints, and it grows one bucket at a time,
/// so some methods mean something else for it, as each says: [`len`](Self::len) counts keys,
/// not occupied slots; [`capacity`](Self::capacity) and [`num_buckets`](Self::num_buckets) are
/// the level's size now; [`fingerprint_bits`](Self::fingerprint_bits) is the slot width;
/// [`expected_fpr`](Self::expected_fpr) is the bound from the level's precision sum; and
/// [`count`](Self::count) counts the entries that answer for a key.
#[derive(Clone, Copy)]
pub struct FilterRef<'a> {
    pub(crate) geo: Geometry,
    seed: u64,
    len: u64,
    /// A stretch level's precision sum (FORMAT.md §5.1); 0 for a classic level.
    precision: u64,
    pub(crate) region: Region<'a>,
}

#[cold]
#[inline(never)]
fn wrong_length(found: usize, expected: usize) -> ! {
    panic!("a view of {found} bytes for a table of {expected} bytes")
}

pub(crate) use crate::hash::Slot;

/// `n` as a `usize`, or `usize::MAX` where it does not fit (above 2^32 on a 32-bit target):
/// the public counts, kept as `u64`, saturate rather than wrap when they are handed out.
#[inline]
pub(crate) fn saturating_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// Derives a key's candidate buckets and fingerprint for a table.
#[inline]
pub(crate) fn locate(geo: &Geometry, seed: u64, h: KeyHash) -> Slot {
    locate_seeded(geo, hash::seeded(h, seed))
}

/// [`FilterRef::contains_seeded`] of a stretch level, out of line so that a classic filter's
/// lookup carries none of its code. It takes the parts of the view it reads, by value: a
/// `&FilterRef` would make every caller keep its view in memory (a 168-byte copy per key
/// where an owner makes the view for each lookup; issue 40), where the classic probe keeps it
/// in registers.
#[inline(never)]
fn contains_stretch(
    layout: crate::table::Layout,
    split: hash::stretch::Split,
    slots: hash::stretch::Slots,
    region: Region<'_>,
    seeded: u64,
) -> bool {
    let (i1, q1, i2, q2) = hash::stretch::Lookup::of(split, slots).locate(seeded);
    with_codec!(layout, c => c.contains_prefix(region, i1, q1, i2, q2))
}

/// The lookup of the key with seeded hash `seeded` in the level of geometry `geo` whose
/// bucket region is `region`: every lookup through a view ends here
/// ([`FilterRef::contains_seeded`]).
#[inline(always)]
pub(crate) fn probe_seeded(geo: &Geometry, region: Region<'_>, seeded: u64) -> bool {
    match geo.stretch_slots() {
        None => {
            let s = locate_seeded(geo, seeded);
            kernel::contains(geo, region, s.i1, s.i2, s.fp)
        }
        Some(slots) => contains_stretch(geo.layout(), geo.split(), slots, region, seeded),
    }
}

/// The lookup of the key hashed `h` in a classic level (a
/// [`CuckooFilter`](crate::CuckooFilter)'s, which is never a stretch level) of geometry `geo`,
/// seed `seed` and bucket region `table`, for an owner that holds those: [`probe_seeded`]'s
/// kernel without the test for a stretch level, so that a loop of lookups carries none of
/// that path, and without a length check ([`Region::of_fixed`]).
#[inline(always)]
pub(crate) fn probe_one_classic(geo: &Geometry, seed: u64, table: &FixedBuf, h: KeyHash) -> bool {
    debug_assert!(geo.stretch_slots().is_none());
    let region = Region::of_fixed(table, geo);
    let s = locate_seeded(geo, hash::seeded(h, seed));
    kernel::contains(geo, region, s.i1, s.i2, s.fp)
}

/// [`locate`] from the seeded hash.
#[inline]
pub(crate) fn locate_seeded(geo: &Geometry, seeded: u64) -> Slot {
    hash::locate(seeded, geo.num_buckets(), geo.fp_bits())
}

impl<'a> FilterRef<'a> {
    /// A view over `table`, which the caller has checked holds `geo.table_bytes()` bytes (the
    /// one length check of the lookup path).
    ///
    /// # Panics
    /// If it does not: a bug in the caller.
    #[inline(always)]
    pub(crate) fn new(geo: Geometry, seed: u64, len: u64, table: &'a [u8]) -> FilterRef<'a> {
        let Some(region) = Region::new(table, &geo) else {
            wrong_length(table.len(), geo.table_bytes())
        };
        FilterRef {
            geo,
            seed,
            len,
            precision: 0,
            region,
        }
    }

    /// A view of a stretch level (`geo` a stretch geometry) with `len` keys and precision sum
    /// `precision`.
    ///
    /// # Panics
    /// If `table` is not `geo.table_bytes()` long: a bug in the caller.
    #[inline(always)]
    pub(crate) fn new_stretch(
        geo: Geometry,
        seed: u64,
        len: u64,
        precision: u64,
        table: &'a [u8],
    ) -> FilterRef<'a> {
        FilterRef {
            precision,
            ..FilterRef::new(geo, seed, len, table)
        }
    }

    /// Whether this view is of a stretch level (FORMAT.md §3.4).
    #[inline(always)]
    pub(crate) fn is_stretch(&self) -> bool {
        self.geo.stretch_slots().is_some()
    }

    /// [`contains_hash`](Self::contains_hash) from the seeded hash. A classic level's probe is
    /// inlined into the caller; a stretch level's is a call, so that a classic filter's lookup
    /// carries none of its code.
    #[inline(always)]
    pub(crate) fn contains_seeded(&self, seeded: u64) -> bool {
        probe_seeded(&self.geo, self.region, seeded)
    }

    /// The probe of a classic level for the key at `s`.
    #[inline(always)]
    fn contains_classic(&self, s: Slot) -> bool {
        kernel::contains(&self.geo, self.region, s.i1, s.i2, s.fp)
    }

    /// The two buckets a lookup of the seeded hash reads.
    #[inline(always)]
    pub(crate) fn buckets_seeded(&self, seeded: u64) -> (u64, u64) {
        match self.geo.stretch_slots() {
            None => {
                let s = locate_seeded(&self.geo, seeded);
                (s.i1, s.i2)
            }
            Some(slots) => {
                let p = hash::stretch::locate(self.geo.split(), slots, seeded);
                (p.i1, p.i2)
            }
        }
    }

    /// Whether `key` may be in the filter: `false` means certainly absent.
    ///
    /// ```
    /// # let mut f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// # f.insert(b"a").unwrap();
    /// assert!(f.as_filter_ref().contains(b"a"));
    /// ```
    // Always inlined, as `contains_hash` is: out of line, the probe's dispatch on the layout
    // is made for every key instead of once for a caller's loop (and the view is passed
    // through memory), 0.93× the pre-version-3 build's speed as measured (issue 40).
    #[inline(always)]
    pub fn contains(&self, key: &[u8]) -> bool {
        self.contains_hash(KeyHash::of(key))
    }

    /// [`contains`](Self::contains) for a key hashed once with [`KeyHash::of`].
    ///
    /// ```
    /// # let mut f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// # f.insert(b"a").unwrap();
    /// assert!(f.as_filter_ref().contains_hash(cuckoo_sst::KeyHash::of(b"a")));
    /// ```
    #[inline(always)]
    pub fn contains_hash(&self, h: KeyHash) -> bool {
        self.contains_seeded(hash::seeded(h, self.seed))
    }

    /// [`contains_hash`](Self::contains_hash) for many keys: `out[i]` is the answer for
    /// `hashes[i]`. Each key's buckets are derived and prefetched 16 keys before the key is
    /// probed, so the memory latencies of 16 lookups overlap — worth it once the table is
    /// larger than the CPU caches, and no slower in cache: the layout is resolved once per
    /// call, not per key.
    ///
    /// # Panics
    /// If `hashes` and `out` differ in length.
    ///
    /// ```
    /// use cuckoo_sst::{CuckooFilter, KeyHash};
    /// let mut f = CuckooFilter::with_capacity(100);
    /// f.insert(b"a")?;
    /// let hashes = [KeyHash::of(b"a"), KeyHash::of(b"b")];
    /// let mut out = [false; 2];
    /// f.as_filter_ref().contains_batch(&hashes, &mut out);
    /// assert!(out[0]);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn contains_batch(&self, hashes: &[KeyHash], out: &mut [bool]) {
        contains_batch_any(std::slice::from_ref(self), hashes, out);
    }

    /// [`contains_batch`](Self::contains_batch) for keys: hashes each key as its lookup is
    /// started, so no buffer of hashes is needed.
    ///
    /// # Panics
    /// If `keys` and `out` differ in length.
    ///
    /// ```
    /// use cuckoo_sst::CuckooFilter;
    /// let mut f = CuckooFilter::with_capacity(100);
    /// f.insert(b"a")?;
    /// let mut out = [false; 2];
    /// f.as_filter_ref().contains_batch_keys(&[b"a", b"b"], &mut out);
    /// assert!(out[0]);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn contains_batch_keys<K: AsRef<[u8]>>(&self, keys: &[K], out: &mut [bool]) {
        contains_batch_keys_any(std::slice::from_ref(self), keys, out);
    }

    /// Asks every filter of `filters` about one key: `out[i]` is
    /// `filters[i].contains_hash(h)`. This is the lookup of an LSM point read, which asks the
    /// filter of every SSTable that may hold the key: the key is hashed once (by the caller),
    /// and every filter's two buckets are prefetched before any is probed, so the filters'
    /// cache misses overlap instead of adding up.
    ///
    /// # Panics
    /// If `filters` and `out` differ in length.
    ///
    /// ```
    /// use cuckoo_sst::{CuckooFilter, FilterRef, KeyHash};
    /// let tables: Vec<CuckooFilter> = (0..3u32)
    ///     .map(|t| {
    ///         let mut f = CuckooFilter::with_capacity(100);
    ///         f.insert(&t.to_le_bytes()).unwrap();
    ///         f
    ///     })
    ///     .collect();
    /// let filters: Vec<FilterRef<'_>> = tables.iter().map(|f| f.as_filter_ref()).collect();
    /// let mut out = [false; 3];
    /// FilterRef::contains_hash_each(&filters, KeyHash::of(&1u32.to_le_bytes()), &mut out);
    /// assert!(out[1]);
    /// ```
    pub fn contains_hash_each(filters: &[FilterRef<'_>], h: KeyHash, out: &mut [bool]) {
        assert_eq!(
            filters.len(),
            out.len(),
            "contains_hash_each: one output per filter"
        );
        probe_slice(filters, h, |i, found| {
            out[i] = found;
            true
        });
    }

    /// The first filter of `filters` that may hold the key hashed `h`, or `None` if none may:
    /// the read path of an LSM tree, newest table first. Like
    /// [`contains_hash_each`](Self::contains_hash_each), it prefetches the buckets of up to
    /// 32 filters before probing them in order, and stops at the first that answers "maybe".
    ///
    /// ```
    /// use cuckoo_sst::{CuckooFilter, FilterRef, KeyHash};
    /// let mut newer = CuckooFilter::with_capacity(100);
    /// let mut older = CuckooFilter::with_capacity(100);
    /// older.insert(b"k")?;
    /// let filters = [newer.as_filter_ref(), older.as_filter_ref()];
    /// assert_eq!(FilterRef::first_containing(&filters, KeyHash::of(b"k")), Some(1));
    /// newer.insert(b"k")?;
    /// let filters = [newer.as_filter_ref(), older.as_filter_ref()];
    /// assert_eq!(FilterRef::first_containing(&filters, KeyHash::of(b"k")), Some(0));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn first_containing(filters: &[FilterRef<'_>], h: KeyHash) -> Option<usize> {
        let mut first = None;
        probe_slice(filters, h, |i, found| {
            if found {
                first = Some(i);
            }
            !found
        });
        first
    }

    /// Prefetches the two buckets of a key hash, so that a later lookup of it (in this filter)
    /// finds them in cache. A chain of filters prefetches every level first and then probes
    /// them, so the levels' memory latencies overlap instead of adding up.
    ///
    /// ```
    /// use cuckoo_sst::{CuckooFilter, KeyHash};
    /// let f = CuckooFilter::with_capacity(100);
    /// let h = KeyHash::of(b"a");
    /// f.as_filter_ref().prefetch_hash(h);
    /// assert!(!f.contains_hash(h));
    /// ```
    #[inline]
    pub fn prefetch_hash(&self, h: KeyHash) {
        let (i1, i2) = self.buckets_seeded(hash::seeded(h, self.seed));
        with_codec!(self.geo.layout(), c => {
            c.prefetch(self.region, i1);
            c.prefetch(self.region, i2);
        });
    }

    /// How many copies of `key`'s fingerprint its two buckets hold (at least the number of
    /// times it was inserted and not removed; more on a fingerprint collision).
    ///
    /// Of a [stretch level](Self#views-of-stretch-levels): how many entries of the key's two
    /// buckets answer for it — those of its first bucket that agree with its first query value
    /// on every bit above their marker, and those of its second bucket with its second
    /// (FORMAT.md §2.2: `i1`, `q1`, `i2`, `q2`). That is at least the number of slots the key's
    /// inserts took; the copies a level counts on its entries instead of slots (FORMAT.md
    /// §3.5: a key inserted again, once the level answers for it) are in the owner's count,
    /// [`ScalableCuckooFilter::count`](crate::ScalableCuckooFilter::count) or
    /// [`MappedFilter::count`](crate::MappedFilter::count), not the view's. A split that puts an entry with no
    /// continuation bit left into both halves of its bucket adds nothing: the key's address
    /// maps to one of the halves, and only the copy there answers for it. Other keys' entries
    /// count too where they agree on every bit they keep — more often the fewer they keep,
    /// as entries inserted while the level was small do.
    ///
    /// ```
    /// # let mut f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// # f.insert(b"a").unwrap(); f.insert(b"a").unwrap();
    /// assert_eq!(f.as_filter_ref().count(b"a"), 2);
    /// ```
    ///
    /// A stretch level, grown tenfold after a key was inserted three times: one slot, and two
    /// copies counted on it, which the chain's count adds:
    ///
    /// ```
    /// use cuckoo_sst::{Config, ScalableCuckooFilter};
    /// let mut f = ScalableCuckooFilter::new(Config::new(1000))?;
    /// for _ in 0..3 {
    ///     f.insert(b"twin")?;
    /// }
    /// for i in 0..10_000u32 {
    ///     f.insert(&i.to_le_bytes())?;
    /// }
    /// assert_eq!(f.level(0).unwrap().count(b"twin"), 1);
    /// assert_eq!(f.count(b"twin"), 3);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    #[inline]
    pub fn count(&self, key: &[u8]) -> usize {
        self.count_hash(KeyHash::of(key))
    }

    /// [`count`](Self::count) for a precomputed hash.
    ///
    /// ```
    /// # let f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// assert_eq!(f.as_filter_ref().count_hash(cuckoo_sst::KeyHash::of(b"a")), 0);
    /// ```
    #[inline]
    pub fn count_hash(&self, h: KeyHash) -> usize {
        let seeded = hash::seeded(h, self.seed);
        match self.geo.stretch_slots() {
            None => {
                let s = locate_seeded(&self.geo, seeded);
                kernel::count(&self.geo, self.region, s.i1, s.i2, s.fp) as usize
            }
            Some(slots) => {
                let p = hash::stretch::locate(self.geo.split(), slots, seeded);
                let n = with_codec!(self.geo.layout(), c => {
                    c.count_prefix_in(self.region, p.i1, p.q1) + c.count_prefix_in(self.region, p.i2, p.q2)
                });
                n as usize
            }
        }
    }

    /// Items in the filter.
    ///
    /// Of a [stretch level](Self#views-of-stretch-levels): the keys inserted into the level and
    /// not removed (its `key_count`, FORMAT.md §5), which may be fewer than its occupied slots:
    /// a split puts an entry that has no continuation bit left into both halves of its bucket.
    ///
    /// On a 32-bit target a count above `usize::MAX` (a table of more than 2^32 slots) is given
    /// as `usize::MAX`, never wrapped.
    ///
    /// ```
    /// # let f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// assert_eq!(f.as_filter_ref().len(), 0);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        saturating_usize(self.len)
    }

    /// Whether the filter holds no items (of a stretch level: no keys, as [`len`](Self::len)
    /// counts them).
    ///
    /// ```
    /// # let f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// assert!(f.as_filter_ref().is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Total slots (buckets × bucket size).
    ///
    /// Of a [stretch level](Self#views-of-stretch-levels): its slots as it is now,
    /// [`num_buckets`](Self::num_buckets) × [`bucket_size`](Self::bucket_size); the level gains
    /// a bucket's worth with each split. Its occupied slots (keys, and the copies splits made)
    /// may be more than [`len`](Self::len).
    ///
    /// On a 32-bit target a count above `usize::MAX` (a table of more than 2^32 slots) is given
    /// as `usize::MAX`, never wrapped.
    ///
    /// ```
    /// # let f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// assert_eq!(f.as_filter_ref().capacity(), f.capacity());
    /// ```
    #[inline]
    pub fn capacity(&self) -> usize {
        saturating_usize(self.geo.slots())
    }

    /// Number of buckets.
    ///
    /// Of a [stretch level](Self#views-of-stretch-levels): `m` as it is now (FORMAT.md §2.2),
    /// any number from 2 up, odd ones included; each split adds one.
    ///
    /// ```
    /// # let f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// let v = f.as_filter_ref();
    /// assert_eq!(v.num_buckets() * v.bucket_size(), v.capacity());
    /// ```
    #[inline]
    pub fn num_buckets(&self) -> usize {
        saturating_usize(self.geo.num_buckets())
    }

    /// Slots per bucket.
    ///
    /// ```
    /// # let f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// assert_eq!(f.as_filter_ref().bucket_size(), 4);
    /// ```
    #[inline]
    pub fn bucket_size(&self) -> usize {
        self.geo.bucket_size() as usize
    }

    /// Fingerprint width in bits.
    ///
    /// Of a [stretch level](Self#views-of-stretch-levels): the slot width `w` (FORMAT.md §3.4),
    /// not a fingerprint's. A slot holds, from the top, a core of `c` bits (5 in the levels the
    /// crate creates), up to `w − c − 1` continuation bits, and a marker bit; an entry keeps
    /// fewer continuation bits as its bucket splits, so a lookup compares between `c` and
    /// `w − 1` bits of it. Its rate is [`expected_fpr`](Self::expected_fpr), not a function of
    /// this width alone.
    ///
    /// ```
    /// # let f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// assert_eq!(f.as_filter_ref().fingerprint_bits(), 10);
    /// ```
    ///
    /// A stretch level at the default 1 % target: its share, 0.8 %, gives slots of 14 bits (a
    /// core of 5, 8 continuation bits and the marker); it grows from 313 buckets, splitting
    /// one at a time while its keys pass 80 % of its slots (runs of `m / 1024`, at most 16,
    /// from 2 048 buckets on, so it may stand a few buckets past the load):
    ///
    /// ```
    /// use cuckoo_sst::{Config, ScalableCuckooFilter};
    /// let mut f = ScalableCuckooFilter::new(Config::new(1000))?;
    /// assert_eq!(f.level(0).unwrap().num_buckets(), 313); // ⌈1000 / (4 · 0.8)⌉
    /// for i in 0..10_000u32 {
    ///     f.insert(&i.to_le_bytes())?;
    /// }
    /// let level = f.level(0).unwrap();
    /// assert_eq!((f.levels(), level.fingerprint_bits()), (1, 14));
    /// assert_eq!(level.len(), 10_000); // keys
    /// assert_eq!(level.num_buckets(), 3126); // ⌈10 000 / (4 · 0.8)⌉ = 3125, in runs of 2
    /// assert_eq!(level.capacity(), 3126 * 4);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    #[inline]
    pub fn fingerprint_bits(&self) -> u32 {
        self.geo.fp_bits()
    }

    /// The bucket encoding.
    ///
    /// ```
    /// # let f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// assert_eq!(f.as_filter_ref().encoding(), cuckoo_sst::Encoding::SemiSorted);
    /// ```
    #[inline]
    pub fn encoding(&self) -> Encoding {
        self.geo.encoding()
    }

    /// The seed mixed into key hashes.
    ///
    /// ```
    /// # let f = cuckoo_sst::CuckooFilter::new(cuckoo_sst::Config::new(10).seed(5)).unwrap();
    /// assert_eq!(f.as_filter_ref().seed(), 5);
    /// ```
    #[inline]
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// `len / capacity`. Of a [stretch level](Self#views-of-stretch-levels): keys per slot,
    /// which is below the share of occupied slots where splits have copied entries.
    ///
    /// ```
    /// # let f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// assert_eq!(f.as_filter_ref().load_factor(), 0.0);
    /// ```
    #[inline]
    pub fn load_factor(&self) -> f64 {
        self.len as f64 / self.geo.slots() as f64
    }

    /// The false-positive rate bound: the probability that an absent key is reported present
    /// when both of its candidate buckets are full, `1 − (1 − 1/(2^f − 1))^(2b)`. A less full
    /// table does better: see [`estimated_fpr`](Self::estimated_fpr).
    ///
    /// Of a [stretch level](Self#views-of-stretch-levels): the level's bound from its
    /// precision sum `P` (FORMAT.md §5.1), `min(1, 2^(1 − c) · P · 2^−60)` with `c` the core
    /// width. It counts the entries the level holds — each by how many of its key's hash bits
    /// it keeps — not full buckets, so it grows as keys are inserted, most for keys inserted
    /// while the level was small; removals lower it. A
    /// [`ScalableCuckooFilter`](crate::ScalableCuckooFilter) grows a level only while this stays
    /// within the level's share of the target.
    ///
    /// ```
    /// # let f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// assert!(f.as_filter_ref().expected_fpr() < 0.01);
    /// ```
    ///
    /// A stretch level, grown tenfold at the default 1 % target (its share is 0.8 %):
    ///
    /// ```
    /// use cuckoo_sst::{Config, ScalableCuckooFilter};
    /// let mut f = ScalableCuckooFilter::new(Config::new(1000))?;
    /// let empty = f.level(0).unwrap().expected_fpr();
    /// for i in 0..10_000u32 {
    ///     f.insert(&i.to_le_bytes())?;
    /// }
    /// let level = f.level(0).unwrap();
    /// assert_eq!(empty, 0.0);
    /// assert!(level.expected_fpr() > 0.0 && level.expected_fpr() <= 0.008);
    /// assert_eq!(level.expected_fpr(), f.expected_fpr()); // one level: the chain's bound
    /// assert_eq!(level.estimated_fpr(), level.expected_fpr());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    #[inline]
    pub fn expected_fpr(&self) -> f64 {
        match self.is_stretch() {
            false => self.geo.fpr_bound(),
            true => crate::level::fpr_bound(self.geo.core_bits(), self.precision),
        }
    }

    /// The average number of distinct 64-byte cache lines one lookup reads (both buckets),
    /// with the region starting on a cache line, as a mapped file's does. Plain buckets never
    /// straddle a line, so it is exactly 2; bit-packed buckets sometimes do.
    ///
    /// ```
    /// use cuckoo_sst::{Config, CuckooFilter, Encoding};
    /// let plain = CuckooFilter::new(Config::new(1000).encoding(Encoding::Plain))?;
    /// assert_eq!(plain.as_filter_ref().cache_lines_per_lookup(), 2.0);
    /// let semi = CuckooFilter::new(Config::new(1000).encoding(Encoding::SemiSorted))?;
    /// assert!(semi.as_filter_ref().cache_lines_per_lookup() < 2.3);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn cache_lines_per_lookup(&self) -> f64 {
        2.0 * self.geo.lines_per_bucket()
    }

    /// The false-positive rate expected at the current load `α`:
    /// `1 − (1 − 1/(2^f − 1))^(2bα)`. Of a [stretch level](Self#views-of-stretch-levels):
    /// [`expected_fpr`](Self::expected_fpr), which already counts only the entries there are.
    ///
    /// ```
    /// # let f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// assert_eq!(f.as_filter_ref().estimated_fpr(), 0.0);
    /// ```
    pub fn estimated_fpr(&self) -> f64 {
        if self.is_stretch() {
            // The stretch bound already counts only the entries there are.
            return self.expected_fpr();
        }
        let values = 2f64.powi(self.geo.fp_bits() as i32) - 1.0;
        let probes = 2.0 * self.geo.bucket_size() as f64 * self.load_factor();
        -f64::exp_m1(probes * f64::ln_1p(-1.0 / values))
    }
}

impl FilterRef<'_> {
    /// The fields a filter's `Debug` shows: its count, its geometry and its seed (the owners'
    /// `Debug` add their own after these).
    pub(crate) fn debug_fields<'d, 'a, 'b>(
        &self,
        d: &'d mut std::fmt::DebugStruct<'a, 'b>,
    ) -> &'d mut std::fmt::DebugStruct<'a, 'b> {
        d.field("len", &self.len)
            .field("num_buckets", &self.geo.num_buckets())
            .field("bucket_size", &self.geo.bucket_size())
            .field("fingerprint_bits", &self.geo.fp_bits())
            .field("encoding", &self.geo.encoding())
            .field("seed", &self.seed)
    }
}

impl std::fmt::Debug for FilterRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.debug_fields(&mut f.debug_struct("FilterRef")).finish()
    }
}

/// [`probe_each`] of a slice of filters: those of classic levels only (every SSTable filter
/// a builder makes) take [`probe_classic`], which knows nothing of stretch levels.
#[inline]
fn probe_slice(filters: &[FilterRef<'_>], h: KeyHash, visit: impl FnMut(usize, bool) -> bool) {
    if filters.iter().any(FilterRef::is_stretch) {
        probe_each(filters.iter().copied(), h, visit)
    } else {
        probe_classic(filters, h, visit)
    }
}

/// [`probe_each`] of filters all of classic levels: each key's buckets and fingerprint are
/// derived once per filter, for the prefetch and the probe.
#[inline]
fn probe_classic(
    filters: &[FilterRef<'_>],
    h: KeyHash,
    mut visit: impl FnMut(usize, bool) -> bool,
) {
    const GROUP: usize = 32;
    let mut slots = [Slot::default(); GROUP];
    for (g, group) in filters.chunks(GROUP).enumerate() {
        for (s, f) in slots.iter_mut().zip(group) {
            *s = locate(&f.geo, f.seed, h);
            with_codec!(f.geo.layout(), c => {
                c.prefetch(f.region, s.i1);
                c.prefetch(f.region, s.i2);
            });
        }
        for (k, (f, s)) in group.iter().zip(&slots).enumerate() {
            if !visit(g * GROUP + k, f.contains_classic(*s)) {
                return;
            }
        }
    }
}

/// Probes every filter of `filters` for `h`, in groups of up to 32 whose buckets are all
/// prefetched first; `visit(i, found)` gets each answer in order and returns whether to go on.
#[inline]
pub(crate) fn probe_each<'a>(
    filters: impl IntoIterator<Item = FilterRef<'a>>,
    h: KeyHash,
    mut visit: impl FnMut(usize, bool) -> bool,
) {
    const GROUP: usize = 32;
    let mut filters = filters.into_iter();
    let mut group: [Option<(FilterRef<'a>, u64)>; GROUP] = [None; GROUP];
    let mut base = 0;
    loop {
        let mut n = 0;
        for (entry, f) in group.iter_mut().zip(filters.by_ref()) {
            let seeded = hash::seeded(h, f.seed);
            let (i1, i2) = f.buckets_seeded(seeded);
            with_codec!(f.geo.layout(), c => {
                c.prefetch(f.region, i1);
                c.prefetch(f.region, i2);
            });
            *entry = Some((f, seeded));
            n += 1;
        }
        for (k, entry) in group[..n].iter().enumerate() {
            if let Some((f, seeded)) = entry {
                let found = f.contains_seeded(*seeded);
                if !visit(base + k, found) {
                    return;
                }
            }
        }
        if n < GROUP {
            return;
        }
        base += GROUP;
    }
}

/// `out[i]`: whether any of `views` may hold the `i`th key of `hashes` (which yields at least
/// `out.len()` hashes) — the batched lookup of a single filter (one view) and of several (a
/// chain's levels, newest first). A single view prefetches each key's buckets
/// [`Codec::BATCH_AHEAD`] keys
/// before probing it, in a loop monomorphic in its codec. Several views work through blocks of
/// 64 keys level by level: each key hashed once, each level's buckets for the block prefetched
/// (when the level is larger than the caches) and then probed, one codec dispatch per level
/// and block. Where the CPU has AVX2, semi-sorted levels of 11 to 15-bit fingerprints (a
/// chain's usual ones) are probed four keys at a time in vectors ([`crate::table::avx2`]).
pub(crate) fn contains_batch_with(
    views: &[FilterRef<'_>],
    hashes: impl Iterator<Item = KeyHash>,
    out: &mut [bool],
) {
    if let [v] = views {
        if v.is_stretch() {
            return with_codec!(v.geo.layout(), c => stretch_batch_one(&c, v, hashes, out));
        }
        return with_codec!(v.geo.layout(), c => batch_one(&c, v, hashes, out));
    }
    // Several views: blocks of keys, level by level. Each key is hashed once (and, when the
    // views share a seed, as a chain's levels do, seeded once); each level then derives and
    // prefetches the block's buckets, and probes them, in a loop monomorphic in its codec.
    const BLOCK: usize = 64;
    #[cfg(target_arch = "x86_64")]
    const {
        assert!(BLOCK <= crate::table::avx2::BLOCK)
    };
    #[cfg(target_arch = "x86_64")]
    let mut scratch = crate::table::avx2::Scratch::default();
    let shared_seed = views.iter().all(|v| v.seed == views[0].seed);
    let mut hashes = hashes;
    let mut block = [0u64; BLOCK];
    let mut pending = [Pending {
        i1: 0,
        i2: 0,
        fp: 0,
    }; BLOCK];
    let mut stretch_pending = [StretchPending::default(); BLOCK];
    for out in out.chunks_mut(BLOCK) {
        for (b, h) in block.iter_mut().zip(hashes.by_ref()) {
            *b = h.to_u64();
        }
        let keys = &mut block[..out.len()];
        if shared_seed {
            for k in keys.iter_mut() {
                *k = hash::seeded(KeyHash::from_u64(*k), views[0].seed);
            }
        }
        out.fill(false);
        for v in views {
            let seeded = |k: u64| {
                if shared_seed {
                    k
                } else {
                    hash::seeded(KeyHash::from_u64(k), v.seed)
                }
            };
            let prefetch = v.region.bytes().len() >= PREFETCH_FROM;
            // The vector probe takes the seeded hashes, which `keys` holds when the seed is
            // shared.
            if v.is_stretch() {
                with_codec!(v.geo.layout(), c => stretch_level_block(&c, v, keys, seeded, prefetch, &mut stretch_pending, out));
                continue;
            }
            #[cfg(target_arch = "x86_64")]
            if shared_seed
                && crate::table::avx2::semi_level(
                    &v.geo,
                    v.region,
                    keys,
                    out,
                    prefetch,
                    &mut scratch,
                )
            {
                continue;
            }
            with_codec!(v.geo.layout(), c => level_block(&c, v, keys, seeded, prefetch, &mut pending, out));
        }
    }
}

/// One level of a block in [`contains_batch_with`]: derives and prefetches every key's buckets,
/// then probes them, or-ing the answers into `out`. A function of its own per codec, as
/// [`batch_one`] is.
#[inline(never)]
fn level_block<C: Codec>(
    c: &C,
    v: &FilterRef<'_>,
    keys: &[u64],
    seeded: impl Fn(u64) -> u64,
    prefetch: bool,
    pending: &mut [Pending],
    out: &mut [bool],
) {
    debug_assert!(!v.is_stretch(), "the classic probe of a stretch level");
    for (p, &k) in pending.iter_mut().zip(keys) {
        let s = locate_seeded(&v.geo, seeded(k));
        if prefetch {
            c.prefetch(v.region, s.i1);
            c.prefetch(v.region, s.i2);
        }
        *p = Pending {
            i1: s.i1 as u32,
            i2: s.i2 as u32,
            fp: s.fp,
        };
    }
    for (o, p) in out.iter_mut().zip(pending.iter()) {
        *o |= c.contains(v.region, p.i1 as u64, p.i2 as u64, p.fp);
    }
}

/// [`level_block`] for a stretch level.
#[inline(never)]
fn stretch_level_block<C: Codec>(
    c: &C,
    v: &FilterRef<'_>,
    keys: &[u64],
    seeded: impl Fn(u64) -> u64,
    prefetch: bool,
    pending: &mut [StretchPending],
    out: &mut [bool],
) {
    let Some(slots) = v.geo.stretch_slots() else {
        return;
    };
    let split = v.geo.split();
    for (p, &k) in pending.iter_mut().zip(keys) {
        let s = hash::stretch::locate(split, slots, seeded(k));
        if prefetch {
            c.prefetch(v.region, s.i1);
            c.prefetch(v.region, s.i2);
        }
        *p = StretchPending::of(&s);
    }
    for (o, p) in out.iter_mut().zip(pending.iter()) {
        *o |= p.probe(c, v);
    }
}

/// [`batch_one`] for a stretch level.
#[inline(never)]
fn stretch_batch_one<C: Codec>(
    c: &C,
    v: &FilterRef<'_>,
    hashes: impl Iterator<Item = KeyHash>,
    out: &mut [bool],
) {
    let Some(slots) = v.geo.stretch_slots() else {
        return;
    };
    let split = v.geo.split();
    let start = |h: KeyHash| {
        let s = hash::stretch::locate(split, slots, hash::seeded(h, v.seed));
        c.prefetch(v.region, s.i1);
        c.prefetch(v.region, s.i2);
        StretchPending::of(&s)
    };
    let mut pending = hashes.map(start);
    let mut ring = [StretchPending::default(); 32];
    let ring = &mut ring[..C::BATCH_AHEAD];
    for slot in ring.iter_mut() {
        match pending.next() {
            Some(p) => *slot = p,
            None => break,
        }
    }
    for (i, o) in out.iter_mut().enumerate() {
        let p = ring[i % C::BATCH_AHEAD];
        if let Some(next) = pending.next() {
            ring[i % C::BATCH_AHEAD] = next;
        }
        *o = p.probe(c, v);
    }
}

/// A stretch lookup's buckets and slot values, kept while its lines are fetched.
#[derive(Clone, Copy, Default)]
struct StretchPending {
    i1: u32,
    i2: u32,
    q1: u32,
    q2: u32,
}

impl StretchPending {
    #[inline(always)]
    fn of(p: &hash::stretch::Probe) -> StretchPending {
        StretchPending {
            i1: p.i1 as u32,
            i2: p.i2 as u32,
            q1: p.q1,
            q2: p.q2,
        }
    }

    #[inline(always)]
    fn probe<C: Codec>(&self, c: &C, v: &FilterRef<'_>) -> bool {
        c.contains_prefix(v.region, self.i1 as u64, self.q1, self.i2 as u64, self.q2)
    }
}

/// Tables from this size on are prefetched in batches; smaller ones stay in the CPU's caches,
/// where a prefetch only costs instructions.
const PREFETCH_FROM: usize = 262_144; // 256 KiB

/// Where a lookup probes, kept while its lines are fetched: both buckets and the fingerprint
/// (bucket indexes are below 2^32).
#[derive(Clone, Copy)]
struct Pending {
    i1: u32,
    i2: u32,
    fp: u32,
}

/// [`contains_batch_with`] for one view whose codec is `C`: a monomorphic loop, compiled as
/// a function of its own for each codec (inlined into the dispatch of all 21, some codecs'
/// loops came out slower than their single lookups).
#[inline(never)]
fn batch_one<C: Codec>(
    c: &C,
    v: &FilterRef<'_>,
    hashes: impl Iterator<Item = KeyHash>,
    out: &mut [bool],
) {
    debug_assert!(!v.is_stretch(), "the classic batch of a stretch level");
    let start = |h: KeyHash| {
        let s = locate(&v.geo, v.seed, h);
        c.prefetch(v.region, s.i1);
        c.prefetch(v.region, s.i2);
        Pending {
            i1: s.i1 as u32,
            i2: s.i2 as u32,
            fp: s.fp,
        }
    };
    let mut pending = hashes.map(start);
    let mut ring = [Pending {
        i1: 0,
        i2: 0,
        fp: 0,
    }; 32];
    const { assert!(C::BATCH_AHEAD <= 32 && C::BATCH_AHEAD.is_power_of_two()) };
    let ring = &mut ring[..C::BATCH_AHEAD];
    for slot in ring.iter_mut() {
        match pending.next() {
            Some(p) => *slot = p,
            None => break,
        }
    }
    for (i, o) in out.iter_mut().enumerate() {
        let p = ring[i % C::BATCH_AHEAD];
        if let Some(next) = pending.next() {
            ring[i % C::BATCH_AHEAD] = next;
        }
        *o = c.contains(v.region, p.i1 as u64, p.i2 as u64, p.fp);
    }
}

/// [`contains_batch_with`] for keys, hashed as they are started.
///
/// # Panics
/// If `keys` and `out` differ in length.
pub(crate) fn contains_batch_keys_any<K: AsRef<[u8]>>(
    views: &[FilterRef<'_>],
    keys: &[K],
    out: &mut [bool],
) {
    assert_eq!(
        keys.len(),
        out.len(),
        "contains_batch_keys: one output per key"
    );
    contains_batch_with(views, keys.iter().map(|k| KeyHash::of(k.as_ref())), out);
}

/// [`contains_batch_with`] for precomputed hashes.
///
/// # Panics
/// If `hashes` and `out` differ in length.
pub(crate) fn contains_batch_any(views: &[FilterRef<'_>], hashes: &[KeyHash], out: &mut [bool]) {
    assert_eq!(
        hashes.len(),
        out.len(),
        "contains_batch: one output per hash"
    );
    contains_batch_with(views, hashes.iter().copied(), out);
}

#[cfg(test)]
mod tests {
    use super::{FilterRef, contains_batch_any, saturating_usize};
    use crate::{Config, CuckooFilter, Encoding, FilterBuilder, KeyHash};

    /// Filter `t` of a set: keys `t·1000 .. t·1000 + 700`, classic (single filters are).
    fn classic(t: u64, config: Config) -> CuckooFilter {
        let mut b = FilterBuilder::new(config);
        for i in t * 1000..t * 1000 + 700 {
            b.add_key(&i.to_le_bytes());
        }
        b.finish().unwrap()
    }

    /// The batch over several classic views (a version-1 or -2 chain's levels, newest first):
    /// each key's answer is whether any view holds it, as single lookups say — for views that
    /// share a seed (seeded once for all) and views that do not, in every encoding (semi-sorted
    /// levels of 11 to 15-bit fingerprints go through the AVX2 probe where the CPU has it, the
    /// others through `level_block`), in blocks of 64 keys and a partial block.
    #[test]
    fn a_batch_over_several_classic_levels_answers_as_single_lookups() {
        let layouts = [
            (Encoding::SemiSorted, 12),
            (Encoding::Plain, 16),
            (Encoding::Packed, 10),
        ];
        for (encoding, bits) in layouts {
            for shared in [true, false] {
                let filters: Vec<CuckooFilter> = (0..3)
                    .map(|t| {
                        let seed = if shared { 7 } else { 7 + t };
                        let config = Config::new(700)
                            .encoding(encoding)
                            .fingerprint_bits(bits)
                            .seed(seed);
                        classic(t, config)
                    })
                    .collect();
                let views: Vec<FilterRef<'_>> = filters.iter().map(|f| f.as_filter_ref()).collect();
                assert!(views.iter().all(|v| !v.is_stretch()));
                // present keys of each filter, and absent ones, interleaved; 2 500 is not a
                // multiple of 64
                let hashes: Vec<KeyHash> = (0..2500u64)
                    .map(|i| {
                        let k = if i % 2 == 0 {
                            (i / 2 % 3) * 1000 + i / 6
                        } else {
                            50_000 + i
                        };
                        KeyHash::of(&k.to_le_bytes())
                    })
                    .collect();
                let mut out = vec![false; hashes.len()];
                contains_batch_any(&views, &hashes, &mut out);
                let what = format!("{encoding:?} {bits} bits, shared seed {shared}");
                for (i, (h, got)) in hashes.iter().zip(&out).enumerate() {
                    let want = views.iter().any(|v| v.contains_hash(*h));
                    assert_eq!(*got, want, "{what}: key {i}");
                }
                assert!(
                    out.iter().step_by(2).all(|&x| x),
                    "{what}: a present key missed"
                );
            }
        }
    }

    /// Counts above `usize::MAX` saturate; `as usize` would keep their low bits (2^40 + 5 would
    /// be 5 on a 32-bit target).
    #[test]
    fn counts_saturate_instead_of_wrapping() {
        assert_eq!(saturating_usize(0), 0);
        assert_eq!(saturating_usize(u32::MAX as u64), u32::MAX as usize);
        assert_eq!(saturating_usize(u64::MAX), usize::MAX);
        #[cfg(target_pointer_width = "64")]
        assert_eq!(saturating_usize((1 << 40) + 5), (1 << 40) + 5);
        #[cfg(target_pointer_width = "32")]
        assert_eq!(saturating_usize((1 << 40) + 5), usize::MAX);
    }
}
