//! `CuckooFilter`: the owned, mutable filter — insert with bounded relocation and rollback,
//! remove, and lookups through its [`FilterRef`] view.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::format::{self, FileMeta, FileOut, LevelMeta, LevelOut, decode};
use crate::hash::{self, KeyHash, SplitMix64};
use crate::persist::Persisted;
use crate::table::{Codec, Encoding, FixedBuf, Geometry, with_codec};
use crate::view::{FilterRef, Slot, locate, locate_seeded};
use std::io::Write;
use std::path::Path;

/// A cuckoo filter (Fan et al., CoNEXT 2014) with partial-key cuckoo hashing: an approximate
/// set of byte-string keys that answers "certainly absent" or "probably present", supports
/// removal, and never gives a false negative — also after an insert fails.
///
/// Its table is kept in memory in exactly the byte layout of the file format, so saving writes
/// it and opening queries it in place.
///
/// ```
/// use cuckoo_sst::{Config, CuckooFilter};
///
/// let mut filter = CuckooFilter::new(Config::new(10_000).false_positive_rate(0.001))?;
/// filter.insert(b"user:42")?;
/// assert!(filter.contains(b"user:42"));
/// assert!(filter.remove(b"user:42"));
/// assert!(!filter.contains(b"user:42"));
/// # Ok::<(), cuckoo_sst::Error>(())
/// ```
#[derive(Clone)]
pub struct CuckooFilter {
    geo: Geometry,
    seed: u64,
    max_kicks: u32,
    len: u64,
    /// The number of items the filter was sized for (persisted; informative).
    sized_for: u64,
    /// The false-positive target it was configured with (persisted; informative).
    target_fpr: f64,
    table: FixedBuf,
    /// Scratch for the relocation walk, so a failed insert can be undone. Not part of the
    /// filter's value.
    undo: Vec<Kick>,
}

/// One relocation: `written` was put into `slot` of `bucket`, displacing another fingerprint.
#[derive(Clone, Copy, Debug)]
struct Kick {
    bucket: u32,
    slot: u32,
    written: u32,
}

impl CuckooFilter {
    /// A filter for `config`; `Error::InvalidConfig` for impossible settings.
    ///
    /// ```
    /// use cuckoo_sst::{Config, CuckooFilter, Error};
    ///
    /// let f = CuckooFilter::new(Config::new(1_000_000))?;
    /// assert!(f.capacity() >= 1_000_000);
    /// assert!(matches!(
    ///     CuckooFilter::new(Config::new(10).false_positive_rate(0.0)),
    ///     Err(Error::InvalidConfig { .. })
    /// ));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn new(config: Config) -> Result<CuckooFilter> {
        let geo = config.geometry()?;
        Ok(CuckooFilter {
            geo,
            seed: config.seed,
            max_kicks: config.max_kicks,
            len: 0,
            sized_for: config.capacity as u64,
            target_fpr: config.target_fpr(&geo),
            table: FixedBuf::zeroed(geo.table_bytes())?,
            undo: Vec::new(),
        })
    }

    /// A filter for `capacity` items with the default settings (1 % false positives, buckets
    /// of 4, the default seed).
    ///
    /// # Panics
    /// If the table for `capacity` items cannot exist (more than 2^32 buckets) or cannot be
    /// allocated; use [`CuckooFilter::new`] to get an error instead.
    ///
    /// ```
    /// let f = cuckoo_sst::CuckooFilter::with_capacity(500);
    /// assert!(f.is_empty());
    /// ```
    pub fn with_capacity(capacity: usize) -> CuckooFilter {
        match CuckooFilter::new(Config::new(capacity)) {
            Ok(f) => f,
            Err(e) => panic!("CuckooFilter::with_capacity({capacity}): {e}"),
        }
    }

    /// The read-only view that every lookup goes through.
    ///
    /// ```
    /// let f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// assert_eq!(f.as_filter_ref().capacity(), f.capacity());
    /// ```
    #[inline(always)]
    pub fn as_filter_ref(&self) -> FilterRef<'_> {
        FilterRef::new(self.geo, self.seed, self.len, self.table.bytes())
    }

    /// The hash of `key` that this filter (and every other) uses: [`KeyHash::of`]. Hash a key
    /// once and pass it to the `*_hash` methods of any number of filters.
    ///
    /// ```
    /// let f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// assert_eq!(f.hash_key(b"k"), cuckoo_sst::KeyHash::of(b"k"));
    /// ```
    #[inline]
    pub fn hash_key(&self, key: &[u8]) -> KeyHash {
        KeyHash::of(key)
    }

    /// Adds `key`. On `Err(Error::Full)` the filter is exactly as it was before the call.
    ///
    /// A key may be inserted more than once (each copy takes a slot, and needs one `remove`);
    /// its two buckets hold at most `2 · bucket_size` copies.
    ///
    /// ```
    /// let mut f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// f.insert(b"k")?;
    /// assert!(f.contains(b"k"));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn insert(&mut self, key: &[u8]) -> Result<()> {
        self.insert_hash(KeyHash::of(key))
    }

    /// [`insert`](Self::insert) for a precomputed hash.
    ///
    /// ```
    /// let mut f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// let h = f.hash_key(b"k");
    /// f.insert_hash(h)?;
    /// assert!(f.contains(b"k"));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn insert_hash(&mut self, h: KeyHash) -> Result<()> {
        self.insert_seeded(hash::seeded(h, self.seed))
    }

    /// The geometry and the table, for the builder to place keys directly; it then accounts
    /// for them with [`add_placed`](Self::add_placed).
    pub(crate) fn table_mut(&mut self) -> (Geometry, &mut [u8]) {
        (self.geo, self.table.bytes_mut())
    }

    /// Counts `n` fingerprints the builder stored through [`table_mut`](Self::table_mut).
    pub(crate) fn add_placed(&mut self, n: u64) {
        self.len += n;
    }

    /// Inserts by the seeded hash `fmix64(key hash ^ seed)`.
    pub(crate) fn insert_seeded(&mut self, seeded: u64) -> Result<()> {
        let s = locate_seeded(&self.geo, seeded);
        self.place(s)?;
        self.len += 1;
        Ok(())
    }

    /// Adds `key` unless it is (probably) present already. `Ok(true)` when it was added,
    /// `Ok(false)` when the filter already reported it present.
    ///
    /// ```
    /// let mut f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// assert_eq!(f.insert_unique(b"k")?, true);
    /// assert_eq!(f.insert_unique(b"k")?, false);
    /// assert_eq!(f.len(), 1);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    ///
    /// "Present" includes a false positive: a new key whose fingerprint the filter already
    /// holds in one of its buckets (another key's) is skipped too, with `Ok(false)`, and not
    /// counted, so after `n` distinct keys [`len`](Self::len) may be less than `n` — by about
    /// the filter's false-positive rate at the load it had, on average. Such a key is still
    /// found (no false negative), but removing it would remove the other key's fingerprint.
    /// Redis's `CF.ADDNX` behaves the same. To count every distinct key, deduplicate them
    /// first and use [`insert`](Self::insert), or [`FilterBuilder`](crate::FilterBuilder).
    ///
    /// ```
    /// use cuckoo_sst::{Config, CuckooFilter};
    /// // Short fingerprints, so that false positives are frequent.
    /// let mut f = CuckooFilter::new(Config::new(2000).fingerprint_bits(8))?;
    /// let mut skipped = 0;
    /// for i in 0..2000u32 {
    ///     if !f.insert_unique(&i.to_le_bytes())? {
    ///         skipped += 1; // a false positive of the keys before it
    ///     }
    /// }
    /// assert!(skipped > 0);
    /// assert_eq!(f.len(), 2000 - skipped);
    /// assert!((0..2000u32).all(|i| f.contains(&i.to_le_bytes())));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn insert_unique(&mut self, key: &[u8]) -> Result<bool> {
        self.insert_unique_hash(KeyHash::of(key))
    }

    /// [`insert_unique`](Self::insert_unique) for a precomputed hash.
    ///
    /// ```
    /// let mut f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// assert!(f.insert_unique_hash(cuckoo_sst::KeyHash::of(b"k"))?);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn insert_unique_hash(&mut self, h: KeyHash) -> Result<bool> {
        if self.contains_hash(h) {
            return Ok(false);
        }
        self.insert_hash(h).map(|()| true)
    }

    /// Places a fingerprint: a free slot in either bucket, else a relocation walk.
    ///
    /// The walk is the paper's random walk with a one-step look-ahead: in the bucket it is
    /// standing on, it first looks for a resident whose alternate bucket has room and, if one
    /// exists, moves it there and takes its slot (one relocation, done). Otherwise it evicts a
    /// resident chosen by the seeded generator and carries it to its alternate bucket. After
    /// `max_kicks` evictions without success it walks back, undoing every step, so the table
    /// is byte for byte as before. With it, the load at the first failure (500 kicks, 2^16
    /// buckets, 16-bit fingerprints) is at least 87.5 %, 97 % and 99.5 % for buckets of 2, 4
    /// and 8 (`tests/load.rs`).
    fn place(&mut self, s: Slot) -> Result<()> {
        let (g, max_kicks) = (self.geo, self.max_kicks);
        let (t, undo) = (self.table.bytes_mut(), &mut self.undo);
        with_codec!(g.layout(), c => place(&c, t, g.num_buckets(), s, max_kicks, undo))
    }

    /// Whether `key` may be in the filter: `false` means certainly absent.
    ///
    /// ```
    /// let mut f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// f.insert(b"a")?;
    /// assert!(f.contains(b"a"));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    // Hashed here and probed by the view's kernel with the filter's own fields, both inlined:
    // a view made for each key (a call to `FilterRef::contains`) was a 168-byte copy per key
    // (issue 40: 0.73–0.93× the pre-version-3 build's speed).
    #[inline(always)]
    pub fn contains(&self, key: &[u8]) -> bool {
        self.contains_hash(KeyHash::of(key))
    }

    /// [`contains`](Self::contains) for a precomputed hash.
    ///
    /// ```
    /// let f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// assert!(!f.contains_hash(f.hash_key(b"a")));
    /// ```
    #[inline(always)]
    pub fn contains_hash(&self, h: KeyHash) -> bool {
        crate::view::probe_one_classic(&self.geo, self.seed, &self.table, h)
    }

    /// [`contains_hash`](Self::contains_hash) for many keys, with prefetching; see
    /// [`FilterRef::contains_batch`].
    ///
    /// ```
    /// use cuckoo_sst::{CuckooFilter, KeyHash};
    /// let mut f = CuckooFilter::with_capacity(100);
    /// f.insert(b"a")?;
    /// let mut out = [false; 1];
    /// f.contains_batch(&[KeyHash::of(b"a")], &mut out);
    /// assert_eq!(out, [true]);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn contains_batch(&self, hashes: &[KeyHash], out: &mut [bool]) {
        self.as_filter_ref().contains_batch(hashes, out)
    }

    /// [`contains`](Self::contains) for many keys, hashed as their lookups start; see
    /// [`FilterRef::contains_batch_keys`].
    ///
    /// ```
    /// let mut f = cuckoo_sst::CuckooFilter::with_capacity(100);
    /// f.insert(b"a")?;
    /// let mut out = [false; 2];
    /// f.contains_batch_keys(&["a", "b"], &mut out);
    /// assert!(out[0]);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn contains_batch_keys<K: AsRef<[u8]>>(&self, keys: &[K], out: &mut [bool]) {
        self.as_filter_ref().contains_batch_keys(keys, out)
    }

    /// How many copies of `key`'s fingerprint are stored in its two buckets.
    ///
    /// ```
    /// let mut f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// f.insert(b"a")?;
    /// f.insert(b"a")?;
    /// assert_eq!(f.count(b"a"), 2);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    #[inline]
    pub fn count(&self, key: &[u8]) -> usize {
        self.as_filter_ref().count(key)
    }

    /// [`count`](Self::count) for a precomputed hash.
    ///
    /// ```
    /// let f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// assert_eq!(f.count_hash(f.hash_key(b"a")), 0);
    /// ```
    #[inline]
    pub fn count_hash(&self, h: KeyHash) -> usize {
        self.as_filter_ref().count_hash(h)
    }

    /// Removes one copy of `key`; `true` if a copy of its fingerprint was found and removed.
    ///
    /// Only remove keys that were inserted: removing a key that never was may delete the
    /// fingerprint of another key that shares it, which then becomes a false negative.
    ///
    /// ```
    /// let mut f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// f.insert(b"a")?;
    /// assert!(f.remove(b"a"));
    /// assert!(!f.remove(b"a"));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn remove(&mut self, key: &[u8]) -> bool {
        self.remove_hash(KeyHash::of(key))
    }

    /// [`remove`](Self::remove) for a precomputed hash.
    ///
    /// ```
    /// let mut f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// let h = f.hash_key(b"a");
    /// f.insert_hash(h)?;
    /// assert!(f.remove_hash(h));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn remove_hash(&mut self, h: KeyHash) -> bool {
        let s = locate(&self.geo, self.seed, h);
        let t = self.table.bytes_mut();
        let l = self.geo.layout();
        let removed = l.remove_one(t, s.i1, s.fp) || l.remove_one(t, s.i2, s.fp);
        self.len -= removed as u64;
        removed
    }

    /// Items in the filter (each copy of a key counts).
    ///
    /// A key that [`insert_unique`](Self::insert_unique) skipped as already present (a false
    /// positive of the keys before it, at about the filter's rate) is not counted: after
    /// inserting `n` distinct keys with it, `len()` may be a little less than `n`. Each
    /// [`insert`](Self::insert) counts.
    ///
    /// On a 32-bit target a count above `usize::MAX` (a table of more than 2^32 slots) is given
    /// as `usize::MAX`, never wrapped.
    ///
    /// ```
    /// let mut f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// f.insert(b"a")?;
    /// assert_eq!(f.len(), 1);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.as_filter_ref().len()
    }

    /// Whether the filter holds no items.
    ///
    /// ```
    /// assert!(cuckoo_sst::CuckooFilter::with_capacity(10).is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.as_filter_ref().is_empty()
    }

    /// Total slots: buckets × bucket size. Inserts start failing somewhat below this (about
    /// 88 %, 97 % and 99.5 % of it for buckets of 2, 4 and 8).
    ///
    /// On a 32-bit target a count above `usize::MAX` (a table of more than 2^32 slots) is given
    /// as `usize::MAX`, never wrapped.
    ///
    /// ```
    /// let f = cuckoo_sst::CuckooFilter::with_capacity(1000);
    /// assert!(f.capacity() >= 1000);
    /// ```
    #[inline]
    pub fn capacity(&self) -> usize {
        self.as_filter_ref().capacity()
    }

    /// Number of buckets (any positive number, not rounded to a power of two).
    ///
    /// ```
    /// let f = cuckoo_sst::CuckooFilter::with_capacity(1000);
    /// assert_eq!(f.num_buckets() * f.bucket_size(), f.capacity());
    /// ```
    #[inline]
    pub fn num_buckets(&self) -> usize {
        self.as_filter_ref().num_buckets()
    }

    /// `len / capacity`.
    ///
    /// ```
    /// let mut f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// f.insert(b"a")?;
    /// assert_eq!(f.load_factor(), 1.0 / f.capacity() as f64);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    #[inline]
    pub fn load_factor(&self) -> f64 {
        self.as_filter_ref().load_factor()
    }

    /// Slots per bucket.
    ///
    /// ```
    /// assert_eq!(cuckoo_sst::CuckooFilter::with_capacity(10).bucket_size(), 4);
    /// ```
    #[inline]
    pub fn bucket_size(&self) -> usize {
        self.as_filter_ref().bucket_size()
    }

    /// Fingerprint width in bits.
    ///
    /// ```
    /// // The default 1 % target: 10-bit fingerprints.
    /// assert_eq!(cuckoo_sst::CuckooFilter::with_capacity(10).fingerprint_bits(), 10);
    /// ```
    #[inline]
    pub fn fingerprint_bits(&self) -> u32 {
        self.as_filter_ref().fingerprint_bits()
    }

    /// The bucket encoding.
    ///
    /// ```
    /// use cuckoo_sst::{CuckooFilter, Encoding};
    /// assert_eq!(CuckooFilter::with_capacity(10).encoding(), Encoding::SemiSorted);
    /// ```
    #[inline]
    pub fn encoding(&self) -> Encoding {
        self.as_filter_ref().encoding()
    }

    /// The seed mixed into key hashes and into the relocation walk.
    ///
    /// ```
    /// use cuckoo_sst::{Config, CuckooFilter};
    /// assert_eq!(CuckooFilter::new(Config::new(10).seed(3))?.seed(), 3);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    #[inline]
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The most relocations one insert may make.
    ///
    /// ```
    /// assert_eq!(cuckoo_sst::CuckooFilter::with_capacity(10).max_kicks(), 500);
    /// ```
    #[inline]
    pub fn max_kicks(&self) -> u32 {
        self.max_kicks
    }

    /// The false-positive rate bound, reached when a key's two candidate buckets are full:
    /// `1 − (1 − 1/(2^f − 1))^(2b)`. It is at most the configured target.
    ///
    /// ```
    /// use cuckoo_sst::{Config, CuckooFilter};
    /// let f = CuckooFilter::new(Config::new(10).false_positive_rate(0.001))?;
    /// assert!(f.expected_fpr() <= 0.001);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    #[inline]
    pub fn expected_fpr(&self) -> f64 {
        self.as_filter_ref().expected_fpr()
    }

    /// The false-positive rate expected at the current load (lower than
    /// [`expected_fpr`](Self::expected_fpr) until the table is full).
    ///
    /// ```
    /// let f = cuckoo_sst::CuckooFilter::with_capacity(10);
    /// assert_eq!(f.estimated_fpr(), 0.0);
    /// ```
    pub fn estimated_fpr(&self) -> f64 {
        self.as_filter_ref().estimated_fpr()
    }

    /// Every byte the filter occupies as a file: header, padding, bucket region and
    /// checksums. The in-memory table is the same bucket region.
    ///
    /// ```
    /// let f = cuckoo_sst::CuckooFilter::with_capacity(1_000_000);
    /// let bits_per_item = f.size_in_bytes() as f64 * 8.0 / 1e6;
    /// assert!(bits_per_item < 17.5);
    /// ```
    pub fn size_in_bytes(&self) -> usize {
        format::file_len([self.geo.table_bytes()])
    }

    /// The filter as a level of a file.
    pub(crate) fn level_out(&self) -> LevelOut<'_> {
        LevelOut {
            geo: self.geo,
            len: self.len,
            capacity: self.sized_for,
            target_fpr: self.target_fpr,
            precision: 0,
            table: self.table.bytes(),
            copies: Vec::new(),
            copies_encoding: crate::copies::CopiesEncoding::None,
        }
    }

    /// The filter as a compact block (FORMAT.md §11): 4 bytes of header and the bytes that
    /// hold its buckets, with no checksum, for a block its container checks. Read it with
    /// [`CompactFilter`](crate::CompactFilter). A compact block names its seed by an index
    /// from the default seed: `Err(InvalidConfig)` for a filter with another seed.
    /// [`FilterBuilder::finish_compact`](crate::FilterBuilder::finish_compact) makes smaller
    /// blocks, sized for the keys it has.
    ///
    /// ```
    /// use cuckoo_sst::{CompactFilter, CuckooFilter};
    /// let mut f = CuckooFilter::with_capacity(1000);
    /// f.insert(b"k")?;
    /// let block = f.to_compact_bytes()?;
    /// assert!(block.len() < f.size_in_bytes());
    /// assert!(CompactFilter::from_bytes(&block)?.contains(b"k"));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn to_compact_bytes(&self) -> Result<Vec<u8>> {
        let Some(k) = crate::compact::seed_index(self.seed) else {
            return Err(Error::invalid(
                "seed",
                format!(
                    "{:#x}: a compact block names its seed by an index from the default seed",
                    self.seed
                ),
            ));
        };
        Ok(crate::compact::encode(
            &self.geo,
            k,
            self.table.bytes(),
            self.len,
        ))
    }

    /// The filter's file bytes (FORMAT.md): header, level table and the bucket region exactly
    /// as held in memory. Same seed and same operations give the same bytes.
    ///
    /// ```
    /// use cuckoo_sst::CuckooFilter;
    /// let mut f = CuckooFilter::with_capacity(100);
    /// f.insert(b"k")?;
    /// let bytes = f.to_bytes();
    /// assert_eq!(bytes.len(), f.size_in_bytes());
    /// assert_eq!(CuckooFilter::from_bytes(&bytes)?, f);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        self.file_bytes()
    }

    /// Writes the bytes of [`to_bytes`](Self::to_bytes) to `w` (for a filter block inside an
    /// SSTable, say), without building them in memory first.
    ///
    /// ```
    /// use cuckoo_sst::CuckooFilter;
    /// let f = CuckooFilter::with_capacity(100);
    /// let mut block = Vec::new();
    /// f.write_to(&mut block)?;
    /// assert_eq!(block, f.to_bytes());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn write_to<W: Write>(&self, mut w: W) -> Result<()> {
        self.write_file(&mut w)
    }

    /// Saves the filter to `path`, atomically and durably: the bytes go to a temporary file in
    /// the same directory, which is fsynced and renamed over `path`, then the directory is
    /// fsynced. A crash leaves either the old file or the complete new one. An error in any
    /// step up to the rename (a failed write or fsync of the file, a full disk) returns
    /// [`Error::Io`] before the rename, leaving `path` untouched and no temporary file; only a
    /// failed fsync of the directory comes after it, as [`Error::NotDurable`]: `path` then
    /// holds the new file, but a crash may bring back the old one.
    ///
    /// On Unix the file gets the permissions of the file it replaces, or for a new file those
    /// of any file the process creates (`0o666` less the umask: `0o644` under the usual
    /// `022`), so that other users' processes read it as they read the engine's other files.
    /// On other platforms a new file's defaults apply.
    ///
    /// ```
    /// use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("000001.filter");
    /// let mut f = CuckooFilter::with_capacity(100);
    /// f.insert(b"k")?;
    /// f.save(&path)?;
    /// assert!(MappedFilter::open(&path)?.contains(b"k"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        self.save_file(path.as_ref())
    }

    /// An owned, mutable filter from file bytes (FORMAT.md), checked completely: header,
    /// every field, every checksum. The bucket region is copied; inserts and removes work as
    /// before it was saved.
    ///
    /// ```
    /// use cuckoo_sst::{CuckooFilter, Error};
    /// let mut f = CuckooFilter::with_capacity(100);
    /// f.insert(b"a")?;
    /// let mut g = CuckooFilter::from_bytes(&f.to_bytes())?;
    /// g.insert(b"b")?;
    /// assert!(g.contains(b"a") && g.contains(b"b"));
    ///
    /// let mut damaged = f.to_bytes();
    /// damaged[200] ^= 1;
    /// assert!(matches!(CuckooFilter::from_bytes(&damaged), Err(Error::ChecksumMismatch { .. })));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<CuckooFilter> {
        let (meta, level) = decode::parse_single(bytes)?;
        CuckooFilter::from_level(&meta, &level, bytes)
    }

    /// Level `level` of the checked file `bytes`, copied into an owned filter.
    pub(crate) fn from_level(meta: &FileMeta, level: &LevelMeta, bytes: &[u8]) -> Result<Self> {
        let mut table = FixedBuf::zeroed(level.geo.table_bytes())?;
        table.bytes_mut().copy_from_slice(&bytes[level.region()]);
        Ok(CuckooFilter {
            geo: level.geo,
            seed: meta.seed,
            max_kicks: meta.max_kicks,
            len: level.len,
            sized_for: level.capacity,
            target_fpr: level.target_fpr,
            table,
            undo: Vec::new(),
        })
    }
}

/// The bucket a relocation walk evicts from first: either candidate, with equal chance (the
/// paper's "randomly pick i1 or i2"), so that walks do not all pile into the first buckets.
#[inline]
pub(crate) fn start_bucket(rng: &mut SplitMix64, i1: u64, i2: u64) -> u64 {
    if rng.next_u64() & 1 == 0 { i1 } else { i2 }
}

/// [`CuckooFilter::place`] for a known codec: the walk is monomorphic.
fn place<C: Codec>(
    c: &C,
    t: &mut [u8],
    m: u64,
    s: Slot,
    max_kicks: u32,
    undo: &mut Vec<Kick>,
) -> Result<()> {
    if c.try_put(t, s.i1, s.i2, s.fp) {
        return Ok(());
    }
    let b = c.slots();
    let mut rng = SplitMix64::new(s.seeded);
    let mut bucket = start_bucket(&mut rng, s.i1, s.i2);
    let mut homeless = s.fp;
    undo.clear();
    for _ in 0..max_kicks {
        let mut residents = c.read(t, bucket);
        for slot in 0..b {
            let resident = residents[slot];
            let alt = hash::alt_bucket(bucket, resident, m);
            if c.try_put(t, alt, alt, resident) {
                residents[slot] = homeless;
                c.store(t, bucket, slot, &residents);
                return Ok(());
            }
        }
        let slot = rng.below(b as u64) as usize;
        let victim = residents[slot];
        residents[slot] = homeless;
        c.store(t, bucket, slot, &residents);
        undo.push(Kick {
            bucket: bucket as u32, // m ≤ 2^32, so an index fits
            slot: slot as u32,
            written: homeless,
        });
        homeless = victim;
        bucket = hash::alt_bucket(bucket, homeless, m);
        if c.try_put(t, bucket, bucket, homeless) {
            return Ok(());
        }
    }
    // Walk back: each step puts the fingerprint it displaced back in place of the one it
    // wrote (in the same slot: plain and packed bytes come back exactly, and a semi-sorted
    // bucket is canonical).
    for k in undo.iter().rev() {
        let restored = c.replace(t, k.bucket as u64, k.slot as usize, k.written, homeless);
        debug_assert!(restored, "the walk's bucket lost what it wrote");
        homeless = k.written;
    }
    debug_assert_eq!(homeless, s.fp);
    Err(Error::Full)
}

/// The single filter's file: one classic level (FORMAT.md).
impl Persisted for CuckooFilter {
    fn with_file<R>(&self, f: impl FnOnce(&FileOut<'_>) -> R) -> R {
        let level = self.level_out();
        f(&FileOut {
            seed: self.seed,
            max_kicks: self.max_kicks,
            target_fpr: self.target_fpr,
            chain: None,
            levels: std::slice::from_ref(&level),
        })
    }
}

impl PartialEq for CuckooFilter {
    fn eq(&self, other: &Self) -> bool {
        self.geo == other.geo
            && self.seed == other.seed
            && self.max_kicks == other.max_kicks
            && self.len == other.len
            && self.sized_for == other.sized_for
            && self.target_fpr.to_bits() == other.target_fpr.to_bits()
            && self.table == other.table
    }
}

impl Eq for CuckooFilter {}

impl std::fmt::Debug for CuckooFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_filter_ref()
            .debug_fields(&mut f.debug_struct("CuckooFilter"))
            .field("max_kicks", &self.max_kicks)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u64) -> [u8; 8] {
        i.to_le_bytes()
    }

    #[test]
    fn cuckoo_filter_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<CuckooFilter>();
        check::<FilterRef<'static>>();
    }

    #[test]
    fn table_matches_len_after_mixed_operations() {
        let mut f = CuckooFilter::new(Config::new(5000).seed(1)).unwrap();
        for i in 0..5000 {
            f.insert(&key(i)).unwrap();
        }
        for i in (0..5000).step_by(3) {
            assert!(f.remove(&key(i)));
        }
        assert_eq!(crate::table::scan(&f.geo, f.table.bytes()), Ok(f.len));
    }

    #[test]
    fn failed_walk_restores_the_exact_bytes() {
        for (encoding, bits) in [
            (Encoding::Plain, 16),
            (Encoding::Packed, 11),
            (Encoding::SemiSorted, 9),
        ] {
            let c = Config::new(2000)
                .seed(3)
                .encoding(encoding)
                .fingerprint_bits(bits);
            fill_until_failures(CuckooFilter::new(c).unwrap());
        }
    }

    #[test]
    fn walks_start_at_either_bucket_evenly() {
        let (mut first, n) = (0u32, 4000u32);
        for seeded in 0..n as u64 {
            let s = Slot {
                i1: 7,
                i2: 11,
                fp: 1,
                seeded: seeded.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            };
            match start_bucket(&mut SplitMix64::new(s.seeded), s.i1, s.i2) {
                7 => first += 1,
                11 => {}
                other => panic!("walk started at bucket {other}"),
            }
        }
        // Binomial(4000, 1/2): σ ≈ 31.6, so ±200 is more than 6σ.
        assert!(
            (first as i64 - 2000).abs() < 200,
            "{first} of {n} from the first bucket"
        );
    }

    fn fill_until_failures(mut f: CuckooFilter) {
        let mut i = 0;
        let mut failures = 0;
        while failures < 50 {
            let before = f.table.clone();
            match f.insert(&key(i)) {
                Ok(()) => {}
                Err(Error::Full) => {
                    assert!(f.table == before, "bytes changed by failed insert of {i}");
                    failures += 1;
                }
                Err(e) => panic!("{e}"),
            }
            i += 1;
        }
    }
}
