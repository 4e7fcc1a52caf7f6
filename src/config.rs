//! `Config` and the sizing math: capacity and target false-positive rate → bucket count,
//! bucket size and fingerprint width.

use crate::error::{Error, Result};
use crate::table::{self, Encoding, Geometry, PLAIN_WIDTHS};

/// The default target false-positive rate: 1 %.
pub const DEFAULT_FPR: f64 = 0.01;
/// The default number of slots per bucket.
pub const DEFAULT_BUCKET_SIZE: usize = 4;
/// The default bound on relocations per insert (the paper's value).
pub const DEFAULT_MAX_KICKS: u32 = 500;
/// The default seed.
pub const DEFAULT_SEED: u64 = 0x6375_636B_6F6F_7373; // "cuckooss"

/// The occupancy a table is sized for, per bucket size: `capacity` items need
/// `capacity / (b · load)` buckets. It sits below the load at which inserts first fail in large
/// tables (about 87 %, 97 % and 99.5 % with 16-bit fingerprints, 86 %, 96 % and 99 % with 8-bit
/// ones, at 500 kicks; `tests/load.rs`).
pub(crate) const fn sizing_load(bucket_size: u32) -> f64 {
    match bucket_size {
        2 => 0.84,
        4 => 0.95,
        _ => 0.98,
    }
}

/// Spare buckets on top of the load-based count `m0`: `c·√m0 + k`. Small tables fill less
/// evenly than large ones (the spread of the load at the first failure shrinks like `1/√m`),
/// so without spares inserting `capacity` keys into a table of a few hundred buckets fails now
/// and then. At a million items the spares cost 0.5 %, 0.2 % and 0.1 % of the table.
const fn spare(bucket_size: u32) -> (f64, f64) {
    match bucket_size {
        2 => (4.0, 4.0),
        4 => (1.0, 2.0),
        _ => (0.5, 1.0),
    }
}

/// Settings for a filter: how many items it must hold, how wrong it may be, and how it is laid
/// out. Everything but `capacity` has a default.
///
/// Either give a target false-positive rate and let the crate choose the fingerprint width, or
/// set the width yourself with [`fingerprint_bits`](Config::fingerprint_bits).
///
/// ```
/// use cuckoo_sst::{Config, CuckooFilter};
///
/// let f = CuckooFilter::new(
///     Config::new(1_000_000).false_positive_rate(0.001).bucket_size(4).seed(7),
/// )?;
/// assert!(f.expected_fpr() <= 0.001);
/// assert_eq!(f.bucket_size(), 4);
/// # Ok::<(), cuckoo_sst::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub(crate) capacity: usize,
    pub(crate) fpr: f64,
    pub(crate) bucket_size: usize,
    pub(crate) fingerprint_bits: Option<u32>,
    pub(crate) seed: u64,
    pub(crate) max_kicks: u32,
}

impl Config {
    /// A configuration for `capacity` items, the expected number of keys: inserting that many
    /// distinct keys does not fail.
    ///
    /// ```
    /// use cuckoo_sst::{Config, CuckooFilter};
    /// let f = CuckooFilter::new(Config::new(1000))?;
    /// assert!(f.capacity() >= 1000);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn new(capacity: usize) -> Config {
        Config {
            capacity,
            fpr: DEFAULT_FPR,
            bucket_size: DEFAULT_BUCKET_SIZE,
            fingerprint_bits: None,
            seed: DEFAULT_SEED,
            max_kicks: DEFAULT_MAX_KICKS,
        }
    }

    /// The target false-positive rate, in `(0, 1)`; default 1 %. The crate picks the narrowest
    /// fingerprint whose rate, with both candidate buckets full, is at most this.
    ///
    /// ```
    /// use cuckoo_sst::{Config, CuckooFilter};
    /// let f = CuckooFilter::new(Config::new(1000).false_positive_rate(0.2))?;
    /// assert_eq!(f.fingerprint_bits(), 8);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn false_positive_rate(mut self, fpr: f64) -> Config {
        self.fpr = fpr;
        self
    }

    /// Slots per bucket: 2, 4 (default) or 8. Larger buckets reach higher occupancy but need
    /// one more fingerprint bit for the same false-positive rate.
    ///
    /// ```
    /// use cuckoo_sst::{Config, CuckooFilter};
    /// let f = CuckooFilter::new(Config::new(1000).bucket_size(8))?;
    /// assert_eq!(f.bucket_size(), 8);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn bucket_size(mut self, bucket_size: usize) -> Config {
        self.bucket_size = bucket_size;
        self
    }

    /// An explicit fingerprint width (8, 16 or 32 bits); overrides the choice made from the
    /// false-positive rate.
    ///
    /// ```
    /// use cuckoo_sst::{Config, CuckooFilter};
    /// let f = CuckooFilter::new(Config::new(1000).fingerprint_bits(32))?;
    /// assert_eq!(f.fingerprint_bits(), 32);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn fingerprint_bits(mut self, bits: u32) -> Config {
        self.fingerprint_bits = Some(bits);
        self
    }

    /// The seed mixed into every key's hash and into the relocation walk. The same seed and
    /// the same operations give the same table, byte for byte.
    ///
    /// ```
    /// use cuckoo_sst::{Config, CuckooFilter};
    /// let f = CuckooFilter::new(Config::new(1000).seed(99))?;
    /// assert_eq!(f.seed(), 99);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn seed(mut self, seed: u64) -> Config {
        self.seed = seed;
        self
    }

    /// The most relocations one insert may make before it gives up with
    /// [`Error::Full`](crate::Error::Full); default 500.
    ///
    /// ```
    /// use cuckoo_sst::{Config, CuckooFilter};
    /// let f = CuckooFilter::new(Config::new(1000).max_kicks(1000))?;
    /// assert_eq!(f.max_kicks(), 1000);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn max_kicks(mut self, max_kicks: u32) -> Config {
        self.max_kicks = max_kicks;
        self
    }

    /// Checks every setting and derives the table geometry.
    pub(crate) fn geometry(&self) -> Result<Geometry> {
        let b = match self.bucket_size {
            2 | 4 | 8 => self.bucket_size as u32,
            other => {
                return Err(Error::invalid(
                    "bucket_size",
                    format!("{other} is not supported; use 2, 4 or 8"),
                ));
            }
        };
        let fp_bits = match self.fingerprint_bits {
            Some(bits) => bits,
            None => width_for_fpr(b, self.fpr)?,
        };
        Geometry::new(buckets_for(self.capacity, b)?, b, fp_bits, Encoding::Plain)
    }
}

impl Config {
    /// The false-positive target recorded with a filter of geometry `geo` built from this
    /// configuration: the configured rate, or the width's bound when the width was set
    /// explicitly.
    pub(crate) fn target_fpr(&self, geo: &Geometry) -> f64 {
        match self.fingerprint_bits {
            Some(_) => geo.fpr_bound(),
            None => self.fpr,
        }
    }
}

/// The narrowest plain fingerprint width whose full-bucket false-positive rate is at most
/// `fpr`.
fn width_for_fpr(bucket_size: u32, fpr: f64) -> Result<u32> {
    if !(fpr > 0.0 && fpr < 1.0) {
        return Err(Error::invalid(
            "false_positive_rate",
            format!("{fpr} is not a rate in (0, 1); use e.g. 0.01 for 1 %"),
        ));
    }
    PLAIN_WIDTHS
        .into_iter()
        .find(|&f| table::fpr_bound(bucket_size, f) <= fpr)
        .ok_or_else(|| {
            Error::invalid(
                "false_positive_rate",
                format!(
                    "{fpr} is below what 32-bit fingerprints reach with {bucket_size}-slot buckets \
                 ({:.3e})",
                    table::fpr_bound(bucket_size, 32)
                ),
            )
        })
}

/// Buckets for `capacity` items at the sizing load of `bucket_size`, plus spares.
pub(crate) fn buckets_for(capacity: usize, bucket_size: u32) -> Result<u64> {
    let m0 = (capacity as f64 / (bucket_size as f64 * sizing_load(bucket_size))).ceil();
    let (c, k) = spare(bucket_size);
    let n = m0 + (c * m0.sqrt()).ceil() + k;
    let n = n + n % 2.0; // even: see `hash::alt_bucket`
    if n > table::MAX_BUCKETS as f64 {
        return Err(Error::invalid(
            "capacity",
            format!(
                "{capacity} items need {n} buckets of {bucket_size}; at most 2^32 buckets are \
                 supported"
            ),
        ));
    }
    Ok(n as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_settings_are_refused_not_panicked() {
        let bad = [
            Config::new(10).bucket_size(0),
            Config::new(10).bucket_size(3),
            Config::new(10).bucket_size(16),
            Config::new(10).false_positive_rate(0.0),
            Config::new(10).false_positive_rate(1.0),
            Config::new(10).false_positive_rate(1.5),
            Config::new(10).false_positive_rate(-0.1),
            Config::new(10).false_positive_rate(f64::NAN),
            Config::new(10).false_positive_rate(f64::INFINITY),
            Config::new(10).false_positive_rate(1e-30),
            Config::new(10).fingerprint_bits(0),
            Config::new(10).fingerprint_bits(33),
            Config::new(10).fingerprint_bits(u32::MAX),
            Config::new(usize::MAX),
        ];
        for c in bad {
            match c.geometry() {
                Err(Error::InvalidConfig { .. }) => {}
                other => panic!("{c:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn width_follows_the_fpr() {
        assert_eq!(width_for_fpr(4, 0.5).unwrap(), 8);
        // b=4, f=8 reaches 1 − (254/255)^8 ≈ 3.09 %.
        assert_eq!(width_for_fpr(4, 0.031).unwrap(), 8);
        assert_eq!(width_for_fpr(4, 0.030).unwrap(), 16);
        assert_eq!(width_for_fpr(4, 0.01).unwrap(), 16);
        // b=4, f=16 reaches ≈ 1.22e-4.
        assert_eq!(width_for_fpr(4, 1.3e-4).unwrap(), 16);
        assert_eq!(width_for_fpr(4, 1.2e-4).unwrap(), 32);
        assert_eq!(width_for_fpr(2, 0.016).unwrap(), 8);
        assert_eq!(width_for_fpr(2, 0.015).unwrap(), 16);
    }

    #[test]
    fn buckets_grow_linearly_with_capacity() {
        // 1.5 M items take about 1.5x the buckets of 1 M: no power-of-two rounding.
        for b in [2, 4, 8] {
            let a = buckets_for(1_000_000, b).unwrap() as f64;
            let c = buckets_for(1_500_000, b).unwrap() as f64;
            assert!((c / a - 1.5).abs() < 0.01, "b={b}: {a} -> {c}");
        }
        assert!(buckets_for(0, 4).unwrap() >= 1);
    }
}
