//! `CuckooFilterPolicy`: the layout every table's filter is built with, the size estimate
//! SlateDB reserves space by, and the counters of what went wrong.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use cuckoo_sst::{Config, CuckooFilter, DEFAULT_FPR, DEFAULT_SEED, Encoding};
use slatedb::filter_policy::{Filter, FilterBuilder, FilterPolicy};

use crate::filter::{AlwaysMaybe, CuckooEntryBuilder, CuckooSstFilter};

/// The name SlateDB stores beside each filter block written by this policy, and matches against
/// when it reads one back.
///
/// It names the encoding only: the false-positive rate, layout and seed are recorded in each
/// block's header, so a policy configured differently still reads every block written under
/// this name.
///
/// ```
/// use slatedb::filter_policy::FilterPolicy;
/// let policy = cuckoo_sst_slatedb::CuckooFilterPolicy::new();
/// assert_eq!(policy.name(), cuckoo_sst_slatedb::POLICY_NAME);
/// ```
pub const POLICY_NAME: &str = "cuckoo-sst";

/// The number of keys at which [`CuckooFilterPolicy::with_bits_per_key`] measures a layout's
/// bits per key, header included: a table of 64 Ki keys. (Larger tables take slightly fewer
/// bits per key, smaller ones slightly more.)
const BITS_REFERENCE_KEYS: usize = 1 << 16;

/// Key counts at which the exact filter size is computed once, when the policy is made;
/// [`FilterPolicy::estimate_size`] interpolates between them.
const SIZE_LADDER: [usize; 5] = [0, 1 << 8, 1 << 12, BITS_REFERENCE_KEYS, 1 << 20];
/// Where [`BITS_REFERENCE_KEYS`] is on the ladder.
const REFERENCE_RUNG: usize = 3;
const _: () = assert!(SIZE_LADDER[REFERENCE_RUNG] == BITS_REFERENCE_KEYS);

/// A SlateDB filter policy that gives every SSTable a [`cuckoo_sst`] filter.
///
/// Register it with `DbBuilder::with_filter_policies`; with
/// `DbReaderBuilder::with_filter_policies` on every reader (a reader without it skips the
/// filter blocks it does not know and reads every table); and with `CompactorBuilder` /
/// `CompactionWorkerBuilder::with_filter_policies` for a compactor run on its own (otherwise
/// the tables it writes get SlateDB's default Bloom filter). Keep an `Arc` to read its
/// counters:
///
/// ```
/// use std::sync::Arc;
/// use cuckoo_sst_slatedb::CuckooFilterPolicy;
/// use slatedb::filter_policy::FilterPolicy;
///
/// let policy = Arc::new(CuckooFilterPolicy::with_false_positive_rate(0.001)?);
/// let policies: Vec<Arc<dyn FilterPolicy>> = vec![policy.clone()];
/// // Db::builder(path, store).with_filter_policies(policies) ...
/// assert_eq!(policy.damaged_filters(), 0);
/// # let _ = policies;
/// # Ok::<(), cuckoo_sst::Error>(())
/// ```
///
/// What it does with each table:
///
/// * **Build**: every entry's key (values, merge operands and tombstones alike: a lookup must
///   find a tombstone to know the key is deleted) is hashed once; duplicates (several versions
///   of a key) count once; the filter is sized for the distinct keys. Should placing them fail
///   (never seen: the builder retries with other seeds and slightly larger tables), the table
///   gets an empty block, which reads back as "maybe" — counted in
///   [`failed_builds`](Self::failed_builds) and logged with `log::error!`.
/// * **Encode**: the filter is written into the table's block in the crate's file format.
///   Should the writer run out of room (SlateDB's buffers grow, so never seen), the partial
///   block reads back as "maybe" — counted in [`failed_encodes`](Self::failed_encodes) and
///   logged with `log::error!`.
/// * **Decode**: the block is checked completely (header, every field, every checksum) and
///   copied into an owned filter. A block that fails any check becomes a filter that answers
///   "maybe" to every query, counted in [`damaged_filters`](Self::damaged_filters) and logged
///   with `log::warn!`. No key is ever reported absent on the word of unchecked bytes.
/// * **Queries**: a point lookup is answered by the filter; a prefix or range query gets
///   "maybe" (the filter holds whole keys), and
///   [`supports_prefix_queries`](FilterPolicy::supports_prefix_queries) is `false`, so prefix
///   scans do not fetch it.
#[derive(Debug)]
pub struct CuckooFilterPolicy {
    layout: Layout,
    /// `(keys, bytes)` of the filter file for each count in [`SIZE_LADDER`].
    sizes: [(usize, usize); SIZE_LADDER.len()],
    /// The layout's false-positive bound (it does not depend on the key count).
    expected_fpr: f64,
    counters: Arc<Counters>,
}

/// What goes into every table's `Config` apart from its capacity.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    fpr: f64,
    bucket_size: Option<usize>,
    fingerprint_bits: Option<u32>,
    encoding: Option<Encoding>,
    seed: u64,
}

impl Layout {
    /// The configuration for a filter of `capacity` keys.
    pub(crate) fn config(&self, capacity: usize) -> Config {
        let mut c = Config::new(capacity)
            .false_positive_rate(self.fpr)
            .seed(self.seed);
        if let Some(b) = self.bucket_size {
            c = c.bucket_size(b);
        }
        if let Some(f) = self.fingerprint_bits {
            c = c.fingerprint_bits(f);
        }
        if let Some(e) = self.encoding {
            c = c.encoding(e);
        }
        c
    }
}

/// What went wrong, shared by the policy and its builders.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) damaged: AtomicU64,
    pub(crate) failed_builds: AtomicU64,
    pub(crate) failed_encodes: AtomicU64,
}

impl Default for CuckooFilterPolicy {
    /// [`CuckooFilterPolicy::new`].
    fn default() -> Self {
        CuckooFilterPolicy::new()
    }
}

impl CuckooFilterPolicy {
    /// A policy for filters with at most 1 % false positives ([`cuckoo_sst::DEFAULT_FPR`]):
    /// semi-sorted buckets of 4 with 10-bit fingerprints, about 9.5 bits per key.
    ///
    /// ```
    /// let policy = cuckoo_sst_slatedb::CuckooFilterPolicy::new();
    /// assert!(policy.expected_fpr() <= 0.01);
    /// assert!(policy.bits_per_key() < 10.0);
    /// ```
    pub fn new() -> CuckooFilterPolicy {
        CuckooFilterPolicy::with_false_positive_rate(DEFAULT_FPR)
            .expect("the default false-positive rate is valid")
    }

    /// A policy for filters whose false-positive rate is at most `fpr`, in `(0, 1)`; the crate
    /// picks the layout with the fewest bits per key that meets it
    /// ([`Config::false_positive_rate`]). `Err` if no layout reaches `fpr`.
    ///
    /// ```
    /// use cuckoo_sst_slatedb::CuckooFilterPolicy;
    /// let policy = CuckooFilterPolicy::with_false_positive_rate(0.001)?;
    /// assert!(policy.expected_fpr() <= 0.001);
    /// assert!(CuckooFilterPolicy::with_false_positive_rate(1.5).is_err());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn with_false_positive_rate(fpr: f64) -> cuckoo_sst::Result<CuckooFilterPolicy> {
        CuckooFilterPolicy::with_layout(Layout {
            fpr,
            bucket_size: None,
            fingerprint_bits: None,
            encoding: None,
            seed: DEFAULT_SEED,
        })
    }

    /// A policy for the layout with the lowest false-positive rate whose filters take at most
    /// `bits` bits per key (measured on a table of 64 Ki keys, header included): the policy
    /// to use in place of SlateDB's `BloomFilterPolicy::new(bits_per_key)` at the same memory.
    /// `Err` if no layout is that small (the smallest take about 6.4 bits per key).
    ///
    /// ```
    /// use cuckoo_sst_slatedb::CuckooFilterPolicy;
    /// // SlateDB's default Bloom filter takes 10 bits per key.
    /// let policy = CuckooFilterPolicy::with_bits_per_key(10.0)?;
    /// assert!(policy.bits_per_key() <= 10.0);
    /// assert!(policy.expected_fpr() < 0.01);
    /// assert!(CuckooFilterPolicy::with_bits_per_key(4.0).is_err());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn with_bits_per_key(bits: f64) -> cuckoo_sst::Result<CuckooFilterPolicy> {
        let mut best: Option<(f64, usize, Layout)> = None;
        for bucket_size in [2, 4, 8] {
            for fingerprint_bits in 7..=32 {
                for encoding in [Encoding::Plain, Encoding::Packed, Encoding::SemiSorted] {
                    let layout = Layout {
                        fpr: DEFAULT_FPR,
                        bucket_size: Some(bucket_size),
                        fingerprint_bits: Some(fingerprint_bits),
                        encoding: Some(encoding),
                        seed: DEFAULT_SEED,
                    };
                    // Combinations the crate does not offer are refused; skip them.
                    let config = layout.config(BITS_REFERENCE_KEYS);
                    let (Ok(size), Ok(fpr)) = (config.size_in_bytes(), config.expected_fpr())
                    else {
                        continue;
                    };
                    if (size * 8) as f64 > bits * BITS_REFERENCE_KEYS as f64 {
                        continue;
                    }
                    if best
                        .as_ref()
                        .is_none_or(|&(b_fpr, b_size, _)| (fpr, size) < (b_fpr, b_size))
                    {
                        best = Some((fpr, size, layout));
                    }
                }
            }
        }
        match best {
            Some((_, _, layout)) => CuckooFilterPolicy::with_layout(layout),
            None => Err(cuckoo_sst::Error::InvalidConfig {
                setting: "bits_per_key",
                reason: format!("no layout takes at most {bits} bits per key"),
            }),
        }
    }

    /// The same policy with filters seeded with `seed` (default [`cuckoo_sst::DEFAULT_SEED`]).
    /// Each block records its seed, so tables written with different seeds read back alike.
    ///
    /// ```
    /// use cuckoo_sst_slatedb::CuckooFilterPolicy;
    /// use slatedb::bytes::Bytes;
    /// use slatedb::filter_policy::{FilterPolicy, FilterQuery};
    /// use slatedb::{RowEntry, ValueDeletable};
    ///
    /// let mut builder = CuckooFilterPolicy::new().with_seed(7).builder();
    /// builder.add_entry(&RowEntry {
    ///     key: Bytes::from_static(b"k"),
    ///     value: ValueDeletable::Tombstone,
    ///     seq: 1,
    ///     create_ts: None,
    ///     expire_ts: None,
    /// });
    /// let mut block = Vec::new();
    /// builder.build().encode(&mut block);
    ///
    /// // A reader with the default seed reads the block, and the seed it records.
    /// let reader = CuckooFilterPolicy::new();
    /// let filter = reader.decode(&block);
    /// assert!(filter.might_match(&FilterQuery::point(Bytes::from_static(b"k"))));
    /// assert_eq!(reader.damaged_filters(), 0);
    /// assert_eq!(cuckoo_sst::CuckooFilter::from_bytes(&block)?.seed(), 7);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn with_seed(mut self, seed: u64) -> CuckooFilterPolicy {
        self.layout.seed = seed;
        self
    }

    fn with_layout(layout: Layout) -> cuckoo_sst::Result<CuckooFilterPolicy> {
        let mut sizes = [(0, 0); SIZE_LADDER.len()];
        let mut expected_fpr = 0.0;
        for (slot, keys) in sizes.iter_mut().zip(SIZE_LADDER) {
            let config = layout.config(keys);
            *slot = (keys, config.size_in_bytes()?);
            expected_fpr = config.expected_fpr()?;
        }
        Ok(CuckooFilterPolicy {
            layout,
            sizes,
            expected_fpr,
            counters: Arc::default(),
        })
    }

    /// The false-positive rate bound of this policy's filters: the rate of a lookup whose two
    /// candidate buckets are full, which full tables approach (they are sized to about 95 %).
    ///
    /// ```
    /// let policy = cuckoo_sst_slatedb::CuckooFilterPolicy::new();
    /// assert!(policy.expected_fpr() > 0.005 && policy.expected_fpr() <= 0.01);
    /// ```
    pub fn expected_fpr(&self) -> f64 {
        self.expected_fpr
    }

    /// Bits per key of this policy's filter for a table of 64 Ki distinct keys, the block's
    /// header included.
    ///
    /// ```
    /// let policy = cuckoo_sst_slatedb::CuckooFilterPolicy::new();
    /// assert!((9.4..9.7).contains(&policy.bits_per_key()));
    /// ```
    pub fn bits_per_key(&self) -> f64 {
        let (keys, bytes) = self.sizes[REFERENCE_RUNG];
        (bytes * 8) as f64 / keys as f64
    }

    /// How many filter blocks this policy has decoded to an always-"maybe" filter because they
    /// did not check out: damaged, truncated, foreign, or left empty by a failed build. Each is
    /// also logged with `log::warn!`. (SlateDB decodes a table's block each time it reads it
    /// unless a cache holds the decoded filter, so one damaged block may count more than once.)
    ///
    /// ```
    /// use cuckoo_sst_slatedb::CuckooFilterPolicy;
    /// use slatedb::bytes::Bytes;
    /// use slatedb::filter_policy::{FilterPolicy, FilterQuery};
    ///
    /// let policy = CuckooFilterPolicy::new();
    /// let filter = policy.decode(b"not a cuckoo-sst filter");
    /// assert!(filter.might_match(&FilterQuery::point(Bytes::from_static(b"any key"))));
    /// assert_eq!(policy.damaged_filters(), 1);
    /// ```
    pub fn damaged_filters(&self) -> u64 {
        self.counters.damaged.load(Ordering::Relaxed)
    }

    /// How many tables got no filter because placing their keys failed (every retry included;
    /// not seen in testing). Each is also logged with `log::error!`.
    ///
    /// ```
    /// assert_eq!(cuckoo_sst_slatedb::CuckooFilterPolicy::new().failed_builds(), 0);
    /// ```
    pub fn failed_builds(&self) -> u64 {
        self.counters.failed_builds.load(Ordering::Relaxed)
    }

    /// How many filters of this policy could not be written into their table's block: the
    /// writer SlateDB handed to `encode` ran out of room (never seen: SlateDB's buffers grow).
    /// The block is then incomplete and reads back as "maybe" for every key, like a damaged
    /// one. Each is also logged with `log::error!`.
    ///
    /// ```
    /// use cuckoo_sst_slatedb::CuckooFilterPolicy;
    /// use slatedb::bytes::Bytes;
    /// use slatedb::filter_policy::FilterPolicy;
    /// use slatedb::{RowEntry, ValueDeletable};
    ///
    /// let policy = CuckooFilterPolicy::new();
    /// let mut builder = policy.builder();
    /// builder.add_entry(&RowEntry {
    ///     key: Bytes::from_static(b"k"),
    ///     value: ValueDeletable::Tombstone,
    ///     seq: 1,
    ///     create_ts: None,
    ///     expire_ts: None,
    /// });
    /// let filter = builder.build();
    /// let mut room = [0u8; 100]; // a filter block takes more
    /// filter.encode(&mut &mut room[..]);
    /// assert_eq!(policy.failed_encodes(), 1);
    /// let mut block = Vec::new();
    /// filter.encode(&mut block);
    /// assert_eq!(policy.failed_encodes(), 1);
    /// assert_eq!(block.len(), filter.size());
    /// ```
    pub fn failed_encodes(&self) -> u64 {
        self.counters.failed_encodes.load(Ordering::Relaxed)
    }

    /// The estimated file size for `keys` keys: exact at the ladder's counts, linear between
    /// them and beyond the last (where the spare buckets' share only shrinks, so it errs high);
    /// within 1 % or one 64-byte cache line of the exact size (tested).
    fn estimate(&self, keys: usize) -> usize {
        let upper = self
            .sizes
            .iter()
            .position(|&(k, _)| k >= keys)
            .unwrap_or(self.sizes.len() - 1)
            .max(1);
        let (k0, s0) = self.sizes[upper - 1];
        let (k1, s1) = self.sizes[upper];
        let slope = (s1 - s0) as f64 / (k1 - k0) as f64;
        s0 + ((keys - k0) as f64 * slope).ceil() as usize
    }
}

impl FilterPolicy for CuckooFilterPolicy {
    fn name(&self) -> &str {
        POLICY_NAME
    }

    fn builder(&self) -> Box<dyn FilterBuilder> {
        Box::new(CuckooEntryBuilder::new(
            self.layout.clone(),
            Arc::clone(&self.counters),
        ))
    }

    fn decode(&self, data: &[u8]) -> Arc<dyn Filter> {
        match CuckooFilter::from_bytes(data) {
            Ok(filter) => Arc::new(CuckooSstFilter::new(filter, Arc::clone(&self.counters))),
            Err(e) => {
                self.counters.damaged.fetch_add(1, Ordering::Relaxed);
                log::warn!(
                    "cuckoo-sst: a filter block of {} bytes did not check out ({e}); its SSTable \
                     will be read as if it had no filter",
                    data.len()
                );
                Arc::new(AlwaysMaybe)
            }
        }
    }

    fn estimate_size(&self, num_keys: usize) -> usize {
        self.estimate(num_keys)
    }

    fn supports_prefix_queries(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_size_is_within_a_percent_or_a_cache_line_of_the_filter_built() {
        for fpr in [0.2, 0.01, 1e-4] {
            let policy = CuckooFilterPolicy::with_false_positive_rate(fpr).unwrap();
            for keys in [
                0,
                1,
                7,
                100,
                255,
                256,
                257,
                1000,
                4096,
                12_345,
                65_536,
                100_000,
                1 << 20,
                3_000_000,
            ] {
                let exact = CuckooFilter::new(policy.layout.config(keys))
                    .unwrap()
                    .size_in_bytes();
                let estimate = policy.estimate_size(keys);
                // Tables are whole cache lines, so small ones grow in steps of 64 bytes.
                assert!(
                    estimate.abs_diff(exact) <= (exact / 100).max(64),
                    "fpr {fpr}, {keys} keys: estimate {estimate}, exact {exact}"
                );
                if keys > 1 << 20 {
                    assert!(estimate >= exact, "{keys} keys: {estimate} < {exact}");
                }
            }
        }
    }

    #[test]
    fn bits_per_key_budget_picks_the_lowest_rate_that_fits() {
        let mut last_fpr = 1.0;
        for bits in [7.0, 8.0, 9.5, 10.0, 11.0, 13.0, 17.0, 21.0] {
            let policy = CuckooFilterPolicy::with_bits_per_key(bits).unwrap();
            assert!(policy.bits_per_key() <= bits, "{bits}: {policy:?}");
            // More bits never buy a worse rate.
            assert!(policy.expected_fpr() <= last_fpr, "{bits}: {policy:?}");
            last_fpr = policy.expected_fpr();
            // And the rate-driven layout for that rate is no smaller: none is better than
            // the one chosen within the budget.
            let by_rate =
                CuckooFilterPolicy::with_false_positive_rate(policy.expected_fpr()).unwrap();
            assert!(by_rate.bits_per_key() >= policy.bits_per_key() - 1e-9);
        }
    }
}
