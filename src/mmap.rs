//! `MappedFilter`: a filter file mapped into memory and queried in place. The only place that
//! maps files (and one of the crate's two places with `unsafe`).
#![allow(unsafe_code)]

use crate::error::{Error, Result};
use crate::format::{self, FileMeta, HEADER_LEN, LevelMeta, decode};
use crate::hash::KeyHash;
use crate::view::FilterRef;
use memmap2::Mmap;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::OnceLock;

/// A filter file mapped with `mmap` and queried in place: opening does not read or copy the
/// buckets, and lookups run the same kernel as an in-memory [`CuckooFilter`](crate::CuckooFilter).
///
/// A file may hold one filter or a growable chain of several levels; lookups check every level
/// with one hash of the key.
///
/// # Files must not change while mapped
///
/// The mapping shows the file's current bytes. Files written by
/// [`CuckooFilter::save`](crate::CuckooFilter::save) are never modified in place: saving again
/// writes a new file and renames it over the old path, and a mapping keeps the old file's
/// bytes until it is dropped. Do not write into a mapped filter file by other means. If
/// another process **truncates** it, touching a page past the new end raises `SIGBUS` and the
/// process dies (a crash, never a wrong answer); if it **overwrites** bytes, lookups may return
/// wrong answers, including false negatives. `open` is safe to call under that contract, as for
/// any memory-mapped file.
///
/// ```
/// use cuckoo_sst::{CuckooFilter, MappedFilter};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("000042.filter");
/// let mut f = CuckooFilter::with_capacity(1000);
/// f.insert(b"key")?;
/// f.save(&path)?;
///
/// let mapped = MappedFilter::open(&path)?;
/// assert!(mapped.contains(b"key"));
/// assert_eq!(mapped.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct MappedFilter {
    map: Mmap,
    meta: FileMeta,
    /// Whether FORMAT.md §7 step 7 passed; set once, by `verify` or by the first lookup.
    verified: OnceLock<bool>,
}

impl MappedFilter {
    /// Maps `path` and checks all of it: header, level table, every checksum (FORMAT.md §7).
    /// Reads the whole file once, at the speed of CRC-32.
    ///
    /// ```
    /// use cuckoo_sst::{Error, MappedFilter};
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("not-a-filter");
    /// std::fs::write(&path, b"hello, world")?;
    /// assert!(matches!(MappedFilter::open(&path), Err(Error::BadMagic { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<MappedFilter> {
        let m = MappedFilter::open_unverified(path)?;
        m.verify()?;
        Ok(m)
    }

    /// Maps `path` and checks only the header and level table (FORMAT.md §7 steps 1–6): constant
    /// time, whatever the file's size. The checksums of the buckets are checked by
    /// [`verify`](Self::verify) or, at the latest, by the first lookup; until they have passed,
    /// nothing is answered from the buckets, and if they fail every lookup answers "maybe
    /// present" (never a false negative from damaged bytes).
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # CuckooFilter::with_capacity(10).save(&path)?;
    /// let m = MappedFilter::open_unverified(&path)?;
    /// assert!(!m.is_verified());
    /// m.verify()?;
    /// assert!(m.is_verified());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_unverified(path: impl AsRef<Path>) -> Result<MappedFilter> {
        let file = File::open(path.as_ref())?;
        let len = file.metadata()?.len();
        if len < HEADER_LEN as u64 {
            // Too short to map usefully (and empty files cannot be mapped everywhere): read the
            // few bytes there are, and let the decoder say what is wrong with them.
            let mut bytes = Vec::new();
            file.take(HEADER_LEN as u64).read_to_end(&mut bytes)?;
            return Err(match decode::parse(&bytes) {
                Err(e) => e,
                Ok(_) => Error::Truncated {
                    expected: HEADER_LEN as u64,
                    found: len,
                },
            });
        }
        // SAFETY: `Mmap::map` is unsafe because the mapped bytes change if the file is modified
        // while mapped, which would break the immutability of the `&[u8]` we hand out. This
        // crate never writes into an existing filter file (saving renames a new file over the
        // path; the mapping keeps the old inode), and the type's documentation states the
        // contract for other writers. All reads go through slices bounded by the mapping's
        // length, validated by the decoder before use.
        let map = unsafe { Mmap::map(&file)? };
        let meta = decode::parse(&map)?;
        Ok(MappedFilter {
            map,
            meta,
            verified: OnceLock::new(),
        })
    }

    /// Checks every bucket region (checksum, zero padding, item count); `Ok` once they pass.
    /// Lookups do this on first use if it has not been done.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # CuckooFilter::with_capacity(10).save(&path)?;
    /// MappedFilter::open_unverified(&path)?.verify()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn verify(&self) -> Result<()> {
        if self.verified.get() == Some(&true) {
            return Ok(());
        }
        let result = decode::verify_regions(&self.map, &self.meta);
        // A racing lookup may have set it already; the check is deterministic, so it agrees.
        let _ = self.verified.set(result.is_ok());
        result
    }

    /// Whether the bucket regions have been checked and passed.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # CuckooFilter::with_capacity(10).save(&path)?;
    /// assert!(MappedFilter::open(&path)?.is_verified());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_verified(&self) -> bool {
        self.verified.get() == Some(&true)
    }

    /// True once the regions are verified (verifying them now if nobody has).
    #[inline]
    fn checked(&self) -> bool {
        *self
            .verified
            .get_or_init(|| decode::verify_regions(&self.map, &self.meta).is_ok())
    }

    /// The view of level `k` (0 is the oldest), or `None` when `k` is out of range or the file
    /// failed verification.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # CuckooFilter::with_capacity(10).save(&path)?;
    /// let m = MappedFilter::open(&path)?;
    /// assert_eq!(m.level(0).unwrap().bucket_size(), 4);
    /// assert!(m.level(1).is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn level(&self, k: usize) -> Option<FilterRef<'_>> {
        if !self.checked() {
            return None;
        }
        Some(self.view(self.meta.levels.get(k)?))
    }

    /// Every level's view, newest (largest) first. Only for a file that passed verification.
    fn views(&self) -> impl Iterator<Item = FilterRef<'_>> {
        self.meta.levels.iter().rev().map(|level| self.view(level))
    }

    /// The view of `level` (one of this file's, checked by the decoder to lie in the map).
    #[inline]
    fn view(&self, level: &LevelMeta) -> FilterRef<'_> {
        FilterRef::new(
            level.geo,
            self.meta.seed,
            level.len,
            &self.map[level.region()],
        )
    }

    /// Whether `key` may be in the filter: `false` means certainly absent.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # let mut f = CuckooFilter::with_capacity(10);
    /// # f.insert(b"a")?;
    /// # f.save(&path)?;
    /// assert!(MappedFilter::open(&path)?.contains(b"a"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn contains(&self, key: &[u8]) -> bool {
        self.contains_hash(KeyHash::of(key))
    }

    /// [`contains`](Self::contains) for a precomputed hash.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, KeyHash, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # let mut f = CuckooFilter::with_capacity(10);
    /// # f.insert(b"a")?;
    /// # f.save(&path)?;
    /// assert!(MappedFilter::open(&path)?.contains_hash(KeyHash::of(b"a")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn contains_hash(&self, h: KeyHash) -> bool {
        if !self.checked() {
            return true; // damaged file: maybe present, never a false negative
        }
        if let [level] = self.meta.levels.as_slice() {
            return self.view(level).contains_hash(h);
        }
        let mut any = false;
        crate::view::probe_each(self.views(), h, |_, found| {
            any = found;
            !found
        });
        any
    }

    /// [`contains_hash`](Self::contains_hash) for many keys, with prefetching (see
    /// [`FilterRef::contains_batch`]).
    ///
    /// # Panics
    /// If `hashes` and `out` differ in length.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, KeyHash, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # let mut f = CuckooFilter::with_capacity(10);
    /// # f.insert(b"a")?;
    /// # f.save(&path)?;
    /// let m = MappedFilter::open(&path)?;
    /// let mut out = [false];
    /// m.contains_batch(&[KeyHash::of(b"a")], &mut out);
    /// assert_eq!(out, [true]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn contains_batch(&self, hashes: &[KeyHash], out: &mut [bool]) {
        assert_eq!(
            hashes.len(),
            out.len(),
            "contains_batch: one output per hash"
        );
        if let Some(views) = self.batch_views(out) {
            crate::view::contains_batch_any(&views, hashes, out);
        }
    }

    /// [`contains`](Self::contains) for many keys, hashed as their lookups start (see
    /// [`FilterRef::contains_batch_keys`]).
    ///
    /// # Panics
    /// If `keys` and `out` differ in length.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # let mut f = CuckooFilter::with_capacity(10);
    /// # f.insert(b"a")?;
    /// # f.save(&path)?;
    /// let m = MappedFilter::open(&path)?;
    /// let mut out = [false];
    /// m.contains_batch_keys(&[b"a"], &mut out);
    /// assert_eq!(out, [true]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn contains_batch_keys<K: AsRef<[u8]>>(&self, keys: &[K], out: &mut [bool]) {
        assert_eq!(
            keys.len(),
            out.len(),
            "contains_batch_keys: one output per key"
        );
        if let Some(views) = self.batch_views(out) {
            crate::view::contains_batch_keys_any(&views, keys, out);
        }
    }

    /// The views a batch probes, newest first; `None`, with every answer "maybe present", for
    /// a file that failed verification (never a false negative).
    fn batch_views(&self, out: &mut [bool]) -> Option<Vec<FilterRef<'_>>> {
        if !self.checked() {
            out.fill(true);
            return None;
        }
        Some(self.views().collect())
    }

    /// Copies of `key`'s fingerprint across all levels. A file that failed verification
    /// counts 1 for every key ("maybe present").
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # let mut f = CuckooFilter::with_capacity(10);
    /// # f.insert(b"a")?; f.insert(b"a")?;
    /// # f.save(&path)?;
    /// assert_eq!(MappedFilter::open(&path)?.count(b"a"), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn count(&self, key: &[u8]) -> usize {
        self.count_hash(KeyHash::of(key))
    }

    /// [`count`](Self::count) for a precomputed hash.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, KeyHash, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # CuckooFilter::with_capacity(10).save(&path)?;
    /// assert_eq!(MappedFilter::open(&path)?.count_hash(KeyHash::of(b"a")), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn count_hash(&self, h: KeyHash) -> usize {
        if !self.checked() {
            return 1;
        }
        self.views().map(|v| v.count_hash(h)).sum()
    }

    /// Items in the filter (all levels), from the header.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # CuckooFilter::with_capacity(10).save(&path)?;
    /// assert_eq!(MappedFilter::open(&path)?.len(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        self.meta.item_count as usize
    }

    /// Whether the filter holds no items.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # CuckooFilter::with_capacity(10).save(&path)?;
    /// assert!(MappedFilter::open(&path)?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.meta.item_count == 0
    }

    /// Number of levels: 1 for a single filter, more for a grown chain.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # CuckooFilter::with_capacity(10).save(&path)?;
    /// assert_eq!(MappedFilter::open(&path)?.levels(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn levels(&self) -> usize {
        self.meta.levels.len()
    }

    /// The false-positive rate bound over all levels: `1 − Π(1 − εₖ)` where `εₖ` is level `k`'s
    /// full-bucket bound.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// let f = CuckooFilter::with_capacity(10);
    /// f.save(&path)?;
    /// assert_eq!(MappedFilter::open(&path)?.expected_fpr(), f.expected_fpr());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn expected_fpr(&self) -> f64 {
        format::combined_fpr(self.meta.levels.iter().map(|l| l.geo.fpr_bound()))
    }

    /// The seed of the file's hashes.
    ///
    /// ```
    /// # use cuckoo_sst::{Config, CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// CuckooFilter::new(Config::new(10).seed(77))?.save(&path)?;
    /// assert_eq!(MappedFilter::open(&path)?.seed(), 77);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn seed(&self) -> u64 {
        self.meta.seed
    }

    /// The file's length in bytes.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// let f = CuckooFilter::with_capacity(10);
    /// f.save(&path)?;
    /// assert_eq!(MappedFilter::open(&path)?.size_in_bytes(), f.size_in_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn size_in_bytes(&self) -> usize {
        self.map.len()
    }

    /// The mapped bytes: the file exactly.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// let f = CuckooFilter::with_capacity(10);
    /// f.save(&path)?;
    /// assert_eq!(MappedFilter::open(&path)?.as_bytes(), &f.to_bytes()[..]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn as_bytes(&self) -> &[u8] {
        &self.map
    }
}

impl std::fmt::Debug for MappedFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedFilter")
            .field("bytes", &self.map.len())
            .field("levels", &self.meta.levels.len())
            .field("len", &self.meta.item_count)
            .field("verified", &self.verified.get())
            .finish()
    }
}
