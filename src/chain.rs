//! `ScalableCuckooFilter`: a chain of cuckoo filters that grows without limit while its
//! false-positive rate stays below the configured target (after Scalable Bloom Filters,
//! Almeida et al. 2007).

use crate::config::Config;
use crate::error::{Error, Result};
use crate::filter::CuckooFilter;
use crate::format::{self, ChainParams, FileOut, LevelOut, decode};
use crate::hash::KeyHash;
use crate::persist;
use crate::view::FilterRef;
use std::io::Write;
use std::path::Path;

/// A growable cuckoo filter: a chain of [`CuckooFilter`] levels, for sets whose size is not
/// known in advance (a memtable, a write-ahead dedup set).
///
/// It starts with one level sized for the configured capacity. When the newest level holds
/// as many items as it was sized for (or an insert into it fails), a level
/// [`growth_factor`](Config::growth_factor) times larger is added and takes new inserts, so
/// an insert never fails for lack of room — unless [`Config::max_levels`] or
/// [`Config::max_bytes`] forbid the next level, and then it returns [`Error::Full`] with
/// nothing lost.
///
/// The false-positive rate stays bounded however far it grows: level `i` gets the share
/// `ε·(1 − r)·rⁱ` of the target `ε` ([`tightening`](Config::tightening) `r`), and so slightly
/// longer fingerprints, and the shares of all levels add up to less than `ε`.
///
/// Lookups hash the key once and probe every level, newest (largest) first, with the same
/// kernel, after prefetching every level's buckets (so their cache misses overlap); an absent
/// key costs one probe per level.
///
/// ```
/// use cuckoo_sst::{Config, ScalableCuckooFilter};
///
/// let mut f = ScalableCuckooFilter::new(Config::new(1_000).false_positive_rate(0.01))?;
/// for i in 0..100_000u32 {
///     f.insert(&i.to_le_bytes())?; // never fails for lack of room
/// }
/// assert!(f.levels() > 1);
/// assert!((0..100_000u32).all(|i| f.contains(&i.to_le_bytes())));
/// assert!(f.expected_fpr() <= 0.01);
/// # Ok::<(), cuckoo_sst::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ScalableCuckooFilter {
    /// Oldest first; never empty.
    levels: Vec<CuckooFilter>,
    /// The bound on the whole chain's false-positive rate.
    target_fpr: f64,
    chain: ChainParams,
    seed: u64,
    max_kicks: u32,
}

impl ScalableCuckooFilter {
    /// A chain whose first level holds `config`'s capacity. The growth settings are
    /// [`Config::growth_factor`], [`Config::tightening`], [`Config::max_levels`] and
    /// [`Config::max_bytes`]; the layout of each level is chosen from its false-positive share
    /// (a fixed [`Config::fingerprint_bits`] is refused: it would let the rate grow).
    ///
    /// ```
    /// use cuckoo_sst::{Config, ScalableCuckooFilter};
    /// let f = ScalableCuckooFilter::new(Config::new(1000))?;
    /// assert_eq!(f.levels(), 1);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn new(config: Config) -> Result<ScalableCuckooFilter> {
        let chain = config.chain_params()?;
        let mut f = ScalableCuckooFilter {
            levels: Vec::new(),
            target_fpr: config.fpr,
            chain,
            seed: config.seed,
            max_kicks: config.max_kicks,
        };
        let first = f.level_config(0, config.capacity);
        f.levels.push(CuckooFilter::new(first)?);
        Ok(f)
    }

    /// The configuration of level `k`, sized for `capacity` items.
    fn level_config(&self, k: usize, capacity: usize) -> Config {
        let r = self.chain.tightening;
        let share = self.target_fpr * (1.0 - r) * r.powi(k as i32);
        let mut c = Config::new(capacity)
            .false_positive_rate(share)
            .seed(self.seed)
            .max_kicks(self.max_kicks);
        if let Some(b) = self.chain.bucket_size {
            c = c.bucket_size(b as usize);
        }
        if let Some(e) = self.chain.encoding {
            c = c.encoding(e);
        }
        c
    }

    fn newest(&mut self) -> &mut CuckooFilter {
        let last = self.levels.len() - 1;
        &mut self.levels[last]
    }

    /// Appends the next level, or `Full` when a limit forbids it or it cannot exist (more than
    /// 2^32 buckets, or a share no 32-bit fingerprint reaches).
    fn grow(&mut self) -> Result<()> {
        let k = self.levels.len();
        let limit = match self.chain.max_levels {
            0 => crate::config::MAX_LEVELS,
            n => n,
        };
        if k >= limit as usize {
            return Err(Error::Full);
        }
        let last = self.levels[k - 1].sized_for() as f64;
        // At least one more item than the last level (which may be sized for none). Finite: a
        // level has at most 2^35 slots and the factor is at most 64; a size past what a level
        // can hold (2^32 buckets) saturates `as usize` and is refused by `geometry`, below.
        let capacity = (last * self.chain.growth_factor).ceil().max(last + 1.0);
        let config = self.level_config(k, capacity as usize);
        let geo = match config.geometry() {
            Ok(g) => g,
            Err(Error::InvalidConfig { .. }) => return Err(Error::Full),
            Err(e) => return Err(e),
        };
        let grown = format::file_len(
            self.levels
                .iter()
                .map(|l| l.level_out().table.len())
                .chain([geo.table_bytes()]),
        ) as u64;
        if self.chain.max_bytes != 0 && grown > self.chain.max_bytes {
            return Err(Error::Full);
        }
        let level = CuckooFilter::new(config)?;
        self.levels.push(level);
        Ok(())
    }

    /// Adds `key`. Grows the chain when the newest level is full; fails only when a
    /// configured limit forbids growing, with [`Error::Full`] and the chain unchanged.
    ///
    /// ```
    /// let mut f = cuckoo_sst::ScalableCuckooFilter::new(cuckoo_sst::Config::new(10))?;
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
    /// use cuckoo_sst::{Config, KeyHash, ScalableCuckooFilter};
    /// let mut f = ScalableCuckooFilter::new(Config::new(10))?;
    /// f.insert_hash(KeyHash::of(b"k"))?;
    /// assert!(f.contains(b"k"));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn insert_hash(&mut self, h: KeyHash) -> Result<()> {
        let newest = self.newest();
        if newest.len() as u64 >= newest.sized_for() {
            self.grow()?;
        }
        match self.newest().insert_hash(h) {
            Err(Error::Full) => {
                self.grow()?;
                match self.newest().insert_hash(h) {
                    Err(Error::Full) => Err(Error::Full),
                    other => other,
                }
            }
            other => other,
        }
    }

    /// Adds `key` unless it is (probably) present in some level; `Ok(true)` when added. A new
    /// key that is a false positive of the keys before it is skipped and not counted in
    /// [`len`](Self::len), as with [`CuckooFilter::insert_unique`].
    ///
    /// ```
    /// let mut f = cuckoo_sst::ScalableCuckooFilter::new(cuckoo_sst::Config::new(10))?;
    /// assert!(f.insert_unique(b"k")?);
    /// assert!(!f.insert_unique(b"k")?);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn insert_unique(&mut self, key: &[u8]) -> Result<bool> {
        self.insert_unique_hash(KeyHash::of(key))
    }

    /// [`insert_unique`](Self::insert_unique) for a precomputed hash.
    ///
    /// ```
    /// use cuckoo_sst::{Config, KeyHash, ScalableCuckooFilter};
    /// let mut f = ScalableCuckooFilter::new(Config::new(10))?;
    /// assert!(f.insert_unique_hash(KeyHash::of(b"k"))?);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn insert_unique_hash(&mut self, h: KeyHash) -> Result<bool> {
        if self.contains_hash(h) {
            return Ok(false);
        }
        self.insert_hash(h).map(|()| true)
    }

    /// Whether `key` may be in the filter: `false` means certainly absent.
    ///
    /// ```
    /// let f = cuckoo_sst::ScalableCuckooFilter::new(cuckoo_sst::Config::new(10))?;
    /// assert!(!f.contains(b"k"));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    #[inline]
    pub fn contains(&self, key: &[u8]) -> bool {
        self.contains_hash(KeyHash::of(key))
    }

    /// [`contains`](Self::contains) for a precomputed hash: one probe per level, newest first,
    /// after prefetching every level's buckets so that their cache misses overlap.
    ///
    /// ```
    /// use cuckoo_sst::{Config, KeyHash, ScalableCuckooFilter};
    /// let f = ScalableCuckooFilter::new(Config::new(10))?;
    /// assert!(!f.contains_hash(KeyHash::of(b"k")));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    #[inline]
    pub fn contains_hash(&self, h: KeyHash) -> bool {
        if let [level] = self.levels.as_slice() {
            return level.contains_hash(h);
        }
        let mut any = false;
        let levels = self.levels.iter().rev().map(|l| l.as_filter_ref());
        crate::view::probe_each(levels, h, |_, found| {
            any = found;
            !found
        });
        any
    }

    /// [`contains_hash`](Self::contains_hash) for many keys: `out[i]` is the answer for
    /// `hashes[i]`. Every level's buckets for a key are prefetched 16 keys before the key is
    /// probed (see [`FilterRef::contains_batch`]).
    ///
    /// # Panics
    /// If `hashes` and `out` differ in length.
    ///
    /// ```
    /// use cuckoo_sst::{Config, KeyHash, ScalableCuckooFilter};
    /// let mut f = ScalableCuckooFilter::new(Config::new(10))?;
    /// for i in 0..100u32 {
    ///     f.insert(&i.to_le_bytes())?;
    /// }
    /// let hashes: Vec<KeyHash> = (0..100u32).map(|i| KeyHash::of(&i.to_le_bytes())).collect();
    /// let mut out = vec![false; hashes.len()];
    /// f.contains_batch(&hashes, &mut out);
    /// assert!(f.levels() > 1 && out.iter().all(|&found| found));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn contains_batch(&self, hashes: &[KeyHash], out: &mut [bool]) {
        crate::view::contains_batch_any(&self.views(), hashes, out);
    }

    /// [`contains`](Self::contains) for many keys, hashed as their lookups start.
    ///
    /// # Panics
    /// If `keys` and `out` differ in length.
    ///
    /// ```
    /// let mut f = cuckoo_sst::ScalableCuckooFilter::new(cuckoo_sst::Config::new(10))?;
    /// f.insert(b"a")?;
    /// let mut out = [false; 2];
    /// f.contains_batch_keys(&["a", "b"], &mut out);
    /// assert!(out[0]);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn contains_batch_keys<K: AsRef<[u8]>>(&self, keys: &[K], out: &mut [bool]) {
        crate::view::contains_batch_keys_any(&self.views(), keys, out);
    }

    /// Every level's view, newest (largest) first.
    fn views(&self) -> Vec<FilterRef<'_>> {
        self.levels
            .iter()
            .rev()
            .map(|l| l.as_filter_ref())
            .collect()
    }

    /// Copies of `key`'s fingerprint across all levels.
    ///
    /// ```
    /// let mut f = cuckoo_sst::ScalableCuckooFilter::new(cuckoo_sst::Config::new(10))?;
    /// f.insert(b"k")?;
    /// f.insert(b"k")?;
    /// assert_eq!(f.count(b"k"), 2);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn count(&self, key: &[u8]) -> usize {
        self.count_hash(KeyHash::of(key))
    }

    /// [`count`](Self::count) for a precomputed hash.
    ///
    /// ```
    /// use cuckoo_sst::{Config, KeyHash, ScalableCuckooFilter};
    /// let f = ScalableCuckooFilter::new(Config::new(10))?;
    /// assert_eq!(f.count_hash(KeyHash::of(b"k")), 0);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn count_hash(&self, h: KeyHash) -> usize {
        self.levels.iter().map(|l| l.count_hash(h)).sum()
    }

    /// Removes one copy of `key` from the level that holds it; `true` if one was removed.
    ///
    /// Only remove keys that were inserted. When more than one level matches the key —
    /// because it was inserted more than once, or because another level holds a colliding
    /// fingerprint (about the chain's false-positive rate) — the chain cannot tell which
    /// match is the key's, and removing the wrong one would make another key a false negative.
    /// It then removes nothing and returns `false`: the key stays as a false positive.
    ///
    /// ```
    /// let mut f = cuckoo_sst::ScalableCuckooFilter::new(cuckoo_sst::Config::new(10))?;
    /// f.insert(b"k")?;
    /// assert!(f.remove(b"k"));
    /// assert!(!f.contains(b"k"));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn remove(&mut self, key: &[u8]) -> bool {
        self.remove_hash(KeyHash::of(key))
    }

    /// [`remove`](Self::remove) for a precomputed hash.
    ///
    /// ```
    /// use cuckoo_sst::{Config, KeyHash, ScalableCuckooFilter};
    /// let mut f = ScalableCuckooFilter::new(Config::new(10))?;
    /// let h = KeyHash::of(b"k");
    /// f.insert_hash(h)?;
    /// assert!(f.remove_hash(h));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn remove_hash(&mut self, h: KeyHash) -> bool {
        let mut holders = self
            .levels
            .iter()
            .enumerate()
            .filter(|(_, l)| l.contains_hash(h));
        match (holders.next(), holders.next()) {
            (Some((k, _)), None) => self.levels[k].remove_hash(h),
            _ => false,
        }
    }

    /// Items in all levels.
    ///
    /// ```
    /// let mut f = cuckoo_sst::ScalableCuckooFilter::new(cuckoo_sst::Config::new(10))?;
    /// f.insert(b"k")?;
    /// assert_eq!(f.len(), 1);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.levels.iter().map(|l| l.len()).sum()
    }

    /// Whether the filter holds no items.
    ///
    /// ```
    /// assert!(cuckoo_sst::ScalableCuckooFilter::new(cuckoo_sst::Config::new(10))?.is_empty());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.levels.iter().all(|l| l.is_empty())
    }

    /// Number of levels.
    ///
    /// ```
    /// assert_eq!(cuckoo_sst::ScalableCuckooFilter::new(cuckoo_sst::Config::new(10))?.levels(), 1);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn levels(&self) -> usize {
        self.levels.len()
    }

    /// The view of level `k` (0 is the oldest and smallest).
    ///
    /// ```
    /// let f = cuckoo_sst::ScalableCuckooFilter::new(cuckoo_sst::Config::new(10))?;
    /// assert!(f.level(0).is_some() && f.level(1).is_none());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn level(&self, k: usize) -> Option<FilterRef<'_>> {
        self.levels.get(k).map(|l| l.as_filter_ref())
    }

    /// Total slots in all levels.
    ///
    /// ```
    /// let f = cuckoo_sst::ScalableCuckooFilter::new(cuckoo_sst::Config::new(1000))?;
    /// assert!(f.capacity() >= 1000);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn capacity(&self) -> usize {
        self.levels.iter().map(|l| l.capacity()).sum()
    }

    /// The false-positive rate bound of the chain as it is: `1 − Π(1 − εₖ)` over its levels'
    /// full-bucket bounds, which is below the configured target however many levels there are.
    ///
    /// ```
    /// use cuckoo_sst::{Config, ScalableCuckooFilter};
    /// let f = ScalableCuckooFilter::new(Config::new(10).false_positive_rate(0.001))?;
    /// assert!(f.expected_fpr() <= 0.001);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn expected_fpr(&self) -> f64 {
        format::combined_fpr(self.levels.iter().map(|l| l.expected_fpr()))
    }

    /// The seed shared by every level.
    ///
    /// ```
    /// use cuckoo_sst::{Config, ScalableCuckooFilter};
    /// assert_eq!(ScalableCuckooFilter::new(Config::new(10).seed(4))?.seed(), 4);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The hash of `key` used by every level: [`KeyHash::of`].
    ///
    /// ```
    /// let f = cuckoo_sst::ScalableCuckooFilter::new(cuckoo_sst::Config::new(10))?;
    /// assert_eq!(f.hash_key(b"k"), cuckoo_sst::KeyHash::of(b"k"));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn hash_key(&self, key: &[u8]) -> KeyHash {
        KeyHash::of(key)
    }

    /// Every byte the chain occupies as a file: header, one descriptor per level, regions.
    ///
    /// ```
    /// let f = cuckoo_sst::ScalableCuckooFilter::new(cuckoo_sst::Config::new(10))?;
    /// assert_eq!(f.size_in_bytes(), f.to_bytes().len());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn size_in_bytes(&self) -> usize {
        format::file_len(self.levels.iter().map(|l| l.level_out().table.len()))
    }

    fn with_file<R>(&self, f: impl FnOnce(&FileOut<'_>) -> R) -> R {
        let levels: Vec<LevelOut<'_>> = self.levels.iter().map(|l| l.level_out()).collect();
        f(&FileOut {
            seed: self.seed,
            max_kicks: self.max_kicks,
            target_fpr: self.target_fpr,
            chain: Some(self.chain),
            levels: &levels,
        })
    }

    /// The chain's file bytes (FORMAT.md): every level, in one file.
    ///
    /// ```
    /// use cuckoo_sst::{Config, ScalableCuckooFilter};
    /// let mut f = ScalableCuckooFilter::new(Config::new(10))?;
    /// f.insert(b"k")?;
    /// assert_eq!(ScalableCuckooFilter::from_bytes(&f.to_bytes())?, f);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        self.with_file(format::to_bytes)
    }

    /// Writes the bytes of [`to_bytes`](Self::to_bytes) to `w`.
    ///
    /// ```
    /// let f = cuckoo_sst::ScalableCuckooFilter::new(cuckoo_sst::Config::new(10))?;
    /// let mut out = Vec::new();
    /// f.write_to(&mut out)?;
    /// assert_eq!(out, f.to_bytes());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn write_to<W: Write>(&self, mut w: W) -> Result<()> {
        self.with_file(|file| format::write(file, &mut w))?;
        Ok(())
    }

    /// Saves the chain to `path`, atomically and durably, like [`CuckooFilter::save`].
    /// [`MappedFilter::open`](crate::MappedFilter::open) reads it like a single filter.
    ///
    /// ```
    /// use cuckoo_sst::{Config, MappedFilter, ScalableCuckooFilter};
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("memtable.filter");
    /// let mut f = ScalableCuckooFilter::new(Config::new(10))?;
    /// for i in 0..100u32 {
    ///     f.insert(&i.to_le_bytes())?;
    /// }
    /// f.save(&path)?;
    /// let m = MappedFilter::open(&path)?;
    /// assert_eq!(m.levels(), f.levels());
    /// assert!((0..100u32).all(|i| m.contains(&i.to_le_bytes())));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        persist::save_atomic(path.as_ref(), |w| {
            self.with_file(|file| format::write(file, w))
        })
    }

    /// A mutable chain from file bytes, checked completely; it can grow further with the
    /// settings it was created with. Single-filter bytes give [`Error::NotGrowable`].
    ///
    /// ```
    /// use cuckoo_sst::{Config, CuckooFilter, Error, ScalableCuckooFilter};
    /// let mut f = ScalableCuckooFilter::new(Config::new(10))?;
    /// f.insert(b"a")?;
    /// let mut g = ScalableCuckooFilter::from_bytes(&f.to_bytes())?;
    /// for i in 0..1000u32 {
    ///     g.insert(&i.to_le_bytes())?;
    /// }
    /// assert!(g.contains(b"a") && g.levels() > f.levels());
    ///
    /// let single = CuckooFilter::with_capacity(10).to_bytes();
    /// assert!(matches!(ScalableCuckooFilter::from_bytes(&single), Err(Error::NotGrowable)));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<ScalableCuckooFilter> {
        let meta = decode::parse(bytes)?;
        let Some(chain) = meta.chain else {
            return Err(Error::NotGrowable);
        };
        decode::verify_regions(bytes, &meta)?;
        let levels = meta
            .levels
            .iter()
            .map(|level| CuckooFilter::from_level(&meta, level, bytes))
            .collect::<Result<Vec<_>>>()?;
        Ok(ScalableCuckooFilter {
            levels,
            target_fpr: meta.target_fpr,
            chain,
            seed: meta.seed,
            max_kicks: meta.max_kicks,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_to_less_than_the_target() {
        let f = ScalableCuckooFilter::new(Config::new(10).false_positive_rate(0.01)).unwrap();
        let mut sum = 0.0;
        for k in 0..200 {
            let c = f.level_config(k, 10);
            sum += c.fpr;
        }
        assert!(sum < 0.01 && sum > 0.0099);
    }

    #[test]
    fn growth_stops_at_the_limits_with_nothing_lost() {
        // With tightening close to 1 the fingerprints widen slowly, and one-item levels grow
        // by one item each: without a max_levels the chain stops at MAX_LEVELS.
        let endless = Config::new(1).growth_factor(1.001).tightening(0.999);
        for config in [
            Config::new(50).max_levels(3),
            Config::new(50).max_bytes(4096),
            endless,
        ] {
            let mut f = ScalableCuckooFilter::new(config.clone()).unwrap();
            let mut i = 0u32;
            loop {
                let before = f.clone();
                match f.insert(&i.to_le_bytes()) {
                    Ok(()) => i += 1,
                    Err(Error::Full) => {
                        assert_eq!(f, before, "{config:?}");
                        break;
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            assert!((0..i).all(|k| f.contains(&k.to_le_bytes())));
            if config.max_bytes != 0 {
                assert!(f.size_in_bytes() <= 4096);
            } else if config.max_levels != 0 {
                assert_eq!(f.levels(), 3);
            } else {
                assert_eq!(f.levels(), crate::config::MAX_LEVELS as usize);
                assert!(ScalableCuckooFilter::from_bytes(&f.to_bytes()).is_ok());
            }
        }
    }

    #[test]
    fn invalid_growth_settings_are_refused() {
        for c in [
            Config::new(10).growth_factor(1.0),
            Config::new(10).growth_factor(f64::NAN),
            Config::new(10).growth_factor(f64::INFINITY),
            Config::new(10).growth_factor(65.0),
            Config::new(10).tightening(0.0),
            Config::new(10).tightening(1.0),
            Config::new(10).fingerprint_bits(16),
            Config::new(10).false_positive_rate(2.0),
            Config::new(10).max_levels(crate::config::MAX_LEVELS + 1),
        ] {
            assert!(
                matches!(
                    ScalableCuckooFilter::new(c.clone()),
                    Err(Error::InvalidConfig { .. })
                ),
                "{c:?}"
            );
        }
    }
}
