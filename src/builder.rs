//! `FilterBuilder`: an exactly sized filter for an SSTable flush or compaction, where the key
//! count is known only at the end.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::filter::CuckooFilter;
use crate::hash::{self, KeyHash};

/// Builds a [`CuckooFilter`] sized exactly for the distinct keys it was given, for an SSTable
/// written by a flush or a compaction: the key count is known only when the table is done, and
/// the table's filter should carry no growth overhead.
///
/// It keeps the 64-bit hash of every key added — **8 bytes per key** while the table is being
/// written, plus, in [`finish`](Self::finish), the filter itself — then sorts them, drops
/// duplicates (several versions of one user key count once) and places them in a filter sized
/// for the distinct count. Sorted by the filter's seeded hash, the keys come in first-bucket
/// order, so a first pass fills the table front to back (about 80 % of the keys land in their
/// first bucket, with sequential memory access); only the rest are inserted with random
/// access and relocations. (`cargo bench --bench filter -- build` compares it with inserting
/// the keys one by one into a filter of the same size.)
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
                seed = try_seed;
            }
            if attempt > 0 {
                self.hashes.sort_unstable(); // the first pass reordered them
            }
            let config = self.config.clone().capacity(capacity).seed(seed);
            let mut f = CuckooFilter::new(config)?;
            let left = first_pass(&mut f, &mut self.hashes);
            // Second pass: the rest, with relocations.
            match self.hashes[..left]
                .iter()
                .try_for_each(|&s| f.insert_seeded(s))
            {
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

/// The first pass, in bucket order: puts every key whose first bucket has room. The keys left
/// over move to the front of `seeded` (all of them stay in it for a retry); returns how many.
fn first_pass(f: &mut CuckooFilter, seeded: &mut [u64]) -> usize {
    let mut left = 0;
    for i in 0..seeded.len() {
        if !f.try_put_first(seeded[i]) {
            seeded.swap(left, i);
            left += 1;
        }
    }
    left
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
    #[test]
    fn the_first_pass_places_about_80_percent() {
        let n = 200_000u64;
        let config = Config::new(n as usize).seed(3);
        let mut f = CuckooFilter::new(config.clone()).unwrap();
        let mut hashes: Vec<u64> = (0..n)
            .map(|i| KeyHash::of(&i.to_le_bytes()).to_u64())
            .collect();
        seeded_in_place(&mut hashes, config.seed);
        hashes.sort_unstable();
        let left = first_pass(&mut f, &mut hashes);
        let placed = 1.0 - left as f64 / n as f64;
        assert!((0.80..0.85).contains(&placed), "{placed}");
        assert_eq!(f.len() as u64, n - left as u64);
        // A key left over found its first bucket full, and buckets only fill up.
        for &s in &hashes[..left] {
            assert!(
                !f.try_put_first(s),
                "a key left over has room in its first bucket"
            );
        }
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
        // With two relocations allowed, 1000 keys do not fit at the exact size with the first
        // seed; the retries find a seed and size where they do, deterministically.
        let build = || {
            let mut b = FilterBuilder::new(Config::new(0).max_kicks(2).seed(5));
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
