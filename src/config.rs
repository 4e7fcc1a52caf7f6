//! `Config` and the sizing math: capacity and target false-positive rate → bucket count,
//! bucket size and fingerprint width.

use crate::error::{Error, Result};
use crate::format::ChainParams;
pub use crate::format::{MAX_GROWTH_FACTOR, MAX_KICKS_LIMIT, MAX_LEVELS};
use crate::table::{self, BUCKET_SIZES, Encoding, Geometry, PLAIN_WIDTHS};

/// The default target false-positive rate: 1 %.
pub const DEFAULT_FPR: f64 = 0.01;
/// The number of slots per bucket when a fingerprint width is given without one.
pub const DEFAULT_BUCKET_SIZE: usize = 4;
/// The default bound on relocations per insert (the paper's value).
pub const DEFAULT_MAX_KICKS: u32 = 500;
/// The default growth factor between the levels of a growable filter.
pub const DEFAULT_GROWTH_FACTOR: f64 = 2.0;
/// The default fraction of a growable filter's false-positive budget that each new level
/// leaves to the levels after it (see [`Config::tightening`]).
pub const DEFAULT_TIGHTENING: f64 = 0.2;
/// The default seed.
pub const DEFAULT_SEED: u64 = 0x6375_636B_6F6F_7373; // "cuckooss"

/// The occupancy a table is sized for, per bucket size: `capacity` items need
/// `capacity / (b · load)` buckets. It sits below the load at which inserts first fail in large
/// tables (about 88 %, 97 % and 99.5 % with 16-bit fingerprints, 86 %, 96 % and 99 % with 8-bit
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
/// Either give a target false-positive rate and let the crate choose the layout — the bucket
/// size, fingerprint width and [`Encoding`] that meet it in the fewest bits per item — or fix
/// any of them yourself; the crate then chooses among what is left.
///
/// ```
/// use cuckoo_sst::{Config, CuckooFilter, Encoding};
///
/// let f = CuckooFilter::new(Config::new(1_000_000).false_positive_rate(0.001).seed(7))?;
/// assert!(f.expected_fpr() <= 0.001);
/// assert_eq!(f.bucket_size(), 4);
/// assert_eq!((f.fingerprint_bits(), f.encoding()), (13, Encoding::SemiSorted));
///
/// // The fastest lookups: whole-byte slots.
/// let plain = Config::new(1_000_000).false_positive_rate(0.001).encoding(Encoding::Plain);
/// let g = CuckooFilter::new(plain)?;
/// assert_eq!((g.bucket_size(), g.fingerprint_bits()), (8, 16));
/// # Ok::<(), cuckoo_sst::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub(crate) capacity: usize,
    pub(crate) fpr: f64,
    pub(crate) bucket_size: Option<usize>,
    pub(crate) fingerprint_bits: Option<u32>,
    pub(crate) encoding: Option<Encoding>,
    pub(crate) seed: u64,
    pub(crate) max_kicks: u32,
    pub(crate) growth_factor: f64,
    pub(crate) tightening: f64,
    pub(crate) max_levels: u32,
    pub(crate) max_bytes: u64,
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
            bucket_size: None,
            fingerprint_bits: None,
            encoding: None,
            seed: DEFAULT_SEED,
            max_kicks: DEFAULT_MAX_KICKS,
            growth_factor: DEFAULT_GROWTH_FACTOR,
            tightening: DEFAULT_TIGHTENING,
            max_levels: 0,
            max_bytes: 0,
        }
    }

    /// The target false-positive rate, in `(0, 1)`; default 1 %. The crate picks the layout
    /// with the fewest bits per item whose rate, with both candidate buckets full, is at most
    /// this (see the table in the crate documentation).
    ///
    /// ```
    /// use cuckoo_sst::{Config, CuckooFilter};
    /// let f = CuckooFilter::new(Config::new(1000).false_positive_rate(0.2))?;
    /// assert!(f.expected_fpr() <= 0.2);
    /// assert!(f.fingerprint_bits() < 8);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn false_positive_rate(mut self, fpr: f64) -> Config {
        self.fpr = fpr;
        self
    }

    /// Slots per bucket: 2, 4 or 8 (by default chosen with the rest of the layout; 4 when only
    /// a width is given). Larger buckets reach higher occupancy but need one more fingerprint
    /// bit for the same false-positive rate.
    ///
    /// ```
    /// use cuckoo_sst::{Config, CuckooFilter};
    /// let f = CuckooFilter::new(Config::new(1000).bucket_size(8))?;
    /// assert_eq!(f.bucket_size(), 8);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn bucket_size(mut self, bucket_size: usize) -> Config {
        self.bucket_size = Some(bucket_size);
        self
    }

    /// The bucket encoding. By default it is chosen with the rest of the layout; with an
    /// explicit width, 8/16/32-bit fingerprints are [`Encoding::Plain`] and other widths
    /// [`Encoding::Packed`].
    ///
    /// ```
    /// use cuckoo_sst::{Config, CuckooFilter, Encoding};
    /// let c = Config::new(1000).fingerprint_bits(12).encoding(Encoding::SemiSorted);
    /// let f = CuckooFilter::new(c)?;
    /// assert_eq!((f.encoding(), f.fingerprint_bits(), f.bucket_size()), (Encoding::SemiSorted, 12, 4));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn encoding(mut self, encoding: Encoding) -> Config {
        self.encoding = Some(encoding);
        self
    }

    /// An explicit fingerprint width, 7 to 32 bits (8, 16 or 32 with the plain encoding);
    /// overrides the choice made from the false-positive rate. Narrower fingerprints are
    /// refused: they leave each bucket so few possible alternates that large tables could not
    /// be filled to the load they are sized for.
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
    /// [`Error::Full`](crate::Error::Full); default 500, at most [`MAX_KICKS_LIMIT`]. A
    /// [`ScalableCuckooFilter`](crate::ScalableCuckooFilter) searches for a free slot
    /// breadth-first, examining at most this many buckets (and eight times as many once a
    /// few searches for the same key have failed).
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

    /// For the chains of files written by cuckoo-sst 0.1 (format version 2 and older), whose
    /// levels each had a fixed size: how much larger each new level was than the one before
    /// (default 2; more than 1, at most [`MAX_GROWTH_FACTOR`]). It is checked and kept in the
    /// file, but a [`ScalableCuckooFilter`](crate::ScalableCuckooFilter) now grows its level
    /// one bucket at a time, and starts a new level only when the growing one has used its
    /// false-positive share, so it does not change how a filter grows.
    ///
    /// ```
    /// use cuckoo_sst::{Config, ScalableCuckooFilter};
    /// let mut f = ScalableCuckooFilter::new(Config::new(100).growth_factor(4.0))?;
    /// for i in 0..1000u32 {
    ///     f.insert(&i.to_le_bytes())?;
    /// }
    /// assert_eq!(f.levels(), 1); // grown tenfold in place
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn growth_factor(mut self, factor: f64) -> Config {
        self.growth_factor = factor;
        self
    }

    /// For a [`ScalableCuckooFilter`](crate::ScalableCuckooFilter): the fraction `r` of the
    /// false-positive budget each level leaves to the levels after it (default 0.2, in
    /// (0, 1)). The first level may grow until its bound reaches `ε·(1 − r)`; a later level
    /// gets `1 − r` of what the levels before it left. The shares of any number of levels add
    /// up to less than `ε`. A larger `r` gives the first level less of the budget: wider slots,
    /// and a later second level.
    ///
    /// ```
    /// use cuckoo_sst::{Config, ScalableCuckooFilter};
    /// let f = ScalableCuckooFilter::new(Config::new(1000).tightening(0.5))?;
    /// assert!(f.level(0).unwrap().fingerprint_bits() > 14); // 14 at the default 0.2
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn tightening(mut self, ratio: f64) -> Config {
        self.tightening = ratio;
        self
    }

    /// For a [`ScalableCuckooFilter`](crate::ScalableCuckooFilter): the most levels it may
    /// have, at most [`MAX_LEVELS`] (0, the default: as many as the widest slots allow, up to
    /// [`MAX_LEVELS`]). A level grows in place until its share of the false-positive target
    /// is used (about a thousandfold at the default rate), or until it cannot place a key;
    /// an insert that would then need one more level returns
    /// [`Error::Full`](crate::Error::Full) and changes nothing, and
    /// [`growth_limit`](crate::ScalableCuckooFilter::growth_limit) says why.
    ///
    /// ```
    /// use cuckoo_sst::{Config, Error, GrowthLimit, ScalableCuckooFilter};
    /// // A share that lasts a few doublings: 1 % of a 10 % target.
    /// let config = Config::new(100).false_positive_rate(0.1).tightening(0.99);
    /// let mut f = ScalableCuckooFilter::new(config.max_levels(1))?;
    /// let mut i = 0u32;
    /// while f.insert(&i.to_le_bytes()).is_ok() {
    ///     i += 1; // grows in place
    /// }
    /// let before = f.clone();
    /// assert!(matches!(f.insert(&i.to_le_bytes()), Err(Error::Full)));
    /// assert_eq!((f.levels(), &f), (1, &before));
    /// assert_eq!(f.growth_limit(), Some(GrowthLimit::MaxLevels { levels: 1 }));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn max_levels(mut self, levels: u32) -> Config {
        self.max_levels = levels;
        self
    }

    /// For a [`ScalableCuckooFilter`](crate::ScalableCuckooFilter): the most bytes
    /// ([`size_in_bytes`](crate::ScalableCuckooFilter::size_in_bytes)) it may grow to (0, the
    /// default: no cap). An insert that would need a level past the cap returns
    /// [`Error::Full`](crate::Error::Full).
    ///
    /// ```
    /// use cuckoo_sst::{Config, ScalableCuckooFilter};
    /// let f = ScalableCuckooFilter::new(Config::new(1000).max_bytes(1 << 20))?;
    /// assert!(f.size_in_bytes() <= 1 << 20);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn max_bytes(mut self, bytes: u64) -> Config {
        self.max_bytes = bytes;
        self
    }

    /// The same configuration for `capacity` items: a template (rate, layout, seed) applied to
    /// tables of different sizes.
    ///
    /// ```
    /// use cuckoo_sst::{Config, CuckooFilter};
    /// let template = Config::new(0).false_positive_rate(0.001).seed(7);
    /// let f = CuckooFilter::new(template.clone().capacity(5000))?;
    /// assert!(f.capacity() >= 5000 && f.seed() == 7);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn capacity(mut self, capacity: usize) -> Config {
        self.capacity = capacity;
        self
    }

    /// The bytes of the file (FORMAT.md) a [`CuckooFilter`](crate::CuckooFilter) of this
    /// configuration takes — its in-memory table is the same size, less the header, level
    /// table and checksum table — computed without building it: for sizing buffers and
    /// reserving space ahead of a flush. `Err` for a configuration
    /// [`CuckooFilter::new`](crate::CuckooFilter::new) would refuse.
    ///
    /// ```
    /// use cuckoo_sst::{Config, CuckooFilter};
    /// let c = Config::new(100_000);
    /// assert_eq!(c.size_in_bytes()?, CuckooFilter::new(c)?.size_in_bytes());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn size_in_bytes(&self) -> Result<usize> {
        Ok(crate::format::file_len([self.geometry()?.table_bytes()]))
    }

    /// The false-positive bound of the layout this configuration chooses (both candidate
    /// buckets full, `1 − (1 − 1/(2^f − 1))^(2b)`), computed without building a filter; at
    /// most the configured rate unless the fingerprint width was set explicitly.
    ///
    /// ```
    /// use cuckoo_sst::{Config, CuckooFilter};
    /// let c = Config::new(1000).false_positive_rate(0.001);
    /// assert!(c.expected_fpr()? <= 0.001);
    /// assert_eq!(c.expected_fpr()?, CuckooFilter::new(c)?.expected_fpr());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn expected_fpr(&self) -> Result<f64> {
        Ok(self.geometry()?.fpr_bound())
    }

    /// The chain settings, checked.
    pub(crate) fn chain_params(&self) -> Result<ChainParams> {
        let fpr = self.fpr;
        if !(fpr > 0.0 && fpr < 1.0) {
            return Err(Error::invalid(
                "false_positive_rate",
                format!("{fpr} is not a rate in (0, 1); use e.g. 0.01 for 1 %"),
            ));
        }
        let g = self.growth_factor;
        if !(g > 1.0 && g <= MAX_GROWTH_FACTOR) {
            return Err(Error::invalid(
                "growth_factor",
                format!("{g} is not in (1, {MAX_GROWTH_FACTOR}]"),
            ));
        }
        let r = self.tightening;
        if !(r > 0.0 && r < 1.0) {
            return Err(Error::invalid(
                "tightening",
                format!("{r} is not in (0, 1)"),
            ));
        }
        if self.fingerprint_bits.is_some() {
            return Err(Error::invalid(
                "fingerprint_bits",
                "a growable filter widens the fingerprints of new levels to keep its false-positive \
                 bound; set false_positive_rate instead",
            ));
        }
        if self.max_levels > MAX_LEVELS {
            return Err(Error::invalid(
                "max_levels",
                format!(
                    "{} is more than {MAX_LEVELS}, the most a file holds (0 means up to \
                     {MAX_LEVELS})",
                    self.max_levels
                ),
            ));
        }
        Ok(ChainParams {
            growth_factor: g,
            tightening: r,
            max_levels: self.max_levels,
            max_bytes: self.max_bytes,
            bucket_size: self.bucket_size.map(|b| b as u32),
            encoding: self.encoding,
        })
    }

    /// Checks every setting and derives the table geometry.
    pub(crate) fn geometry(&self) -> Result<Geometry> {
        if self.max_kicks > MAX_KICKS_LIMIT {
            return Err(Error::invalid(
                "max_kicks",
                format!("{} is more than {MAX_KICKS_LIMIT}", self.max_kicks),
            ));
        }
        let (b, f, encoding) = self.layout()?;
        Geometry::new(buckets_for(self.capacity, b)?, b, f, encoding)
    }

    /// The bucket size, width and encoding: the ones set, and for the rest the choice with the
    /// fewest bits per item that meets the false-positive target.
    pub(crate) fn layout(&self) -> Result<(u32, u32, Encoding)> {
        let bucket_size = match self.bucket_size {
            None => None,
            Some(b @ (2 | 4 | 8)) => Some(b as u32),
            Some(other) => {
                return Err(Error::invalid(
                    "bucket_size",
                    format!("{other} is not supported; use 2, 4 or 8"),
                ));
            }
        };
        if let Some(f) = self.fingerprint_bits {
            let b = bucket_size.unwrap_or(DEFAULT_BUCKET_SIZE as u32);
            let e = self.encoding.unwrap_or(if PLAIN_WIDTHS.contains(&f) {
                Encoding::Plain
            } else {
                Encoding::Packed
            });
            return Ok((b, f, e));
        }
        let fpr = self.fpr;
        if !(fpr > 0.0 && fpr < 1.0) {
            return Err(Error::invalid(
                "false_positive_rate",
                format!("{fpr} is not a rate in (0, 1); use e.g. 0.01 for 1 %"),
            ));
        }
        choose_layout_cached(fpr, bucket_size, self.encoding).ok_or_else(|| {
            Error::invalid(
                "false_positive_rate",
                format!(
                    "{fpr} cannot be reached with the layouts allowed (32-bit fingerprints reach \
                     {:.3e} with buckets of 2); allow a wider choice or a higher rate",
                    table::fpr_bound(2, 32)
                ),
            )
        })
    }

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

/// [`choose_layout`], remembered a thread for the last arguments it was asked: a filter
/// policy builds a block for every few dozen keys from one configuration, and the choice
/// (a few dozen `exp`s and `ln`s) cost as much as placing the block's keys.
fn choose_layout_cached(
    fpr: f64,
    bucket_size: Option<u32>,
    encoding: Option<Encoding>,
) -> Option<(u32, u32, Encoding)> {
    type Args = (u64, Option<u32>, Option<Encoding>);
    type Memo = Option<(Args, Option<(u32, u32, Encoding)>)>;
    thread_local! {
        static LAST: std::cell::Cell<Memo> = const { std::cell::Cell::new(None) };
    }
    let args = (fpr.to_bits(), bucket_size, encoding);
    LAST.with(|last| match last.get() {
        Some((a, layout)) if a == args => layout,
        _ => {
            let layout = choose_layout(fpr, bucket_size, encoding);
            last.set(Some((args, layout)));
            layout
        }
    })
}

/// The layout with the fewest bits per item (at the sizing load) whose full-bucket
/// false-positive bound is at most `fpr`, among the bucket sizes and encodings allowed. Ties go
/// to buckets of 4, then to the simpler encoding.
pub(crate) fn choose_layout(
    fpr: f64,
    bucket_size: Option<u32>,
    encoding: Option<Encoding>,
) -> Option<(u32, u32, Encoding)> {
    let mut best: Option<(f64, (u32, u32, Encoding))> = None;
    for b in [4, 8, 2]
        .into_iter()
        .filter(|&b| bucket_size.is_none_or(|x| x == b))
    {
        for e in Encoding::ALL
            .into_iter()
            .filter(|&e| encoding.is_none_or(|x| x == e))
        {
            let width = e.widths(b).find(|&f| table::fpr_bound(b, f) <= fpr);
            if let Some(f) = width {
                let bits = e.bucket_bits(b, f) as f64 / b as f64 / sizing_load(b);
                if best.is_none_or(|(cost, _)| bits < cost) {
                    best = Some((bits, (b, f, e)));
                }
            }
        }
    }
    debug_assert!(best.is_none_or(|(_, (b, _, _))| BUCKET_SIZES.contains(&b)));
    best.map(|(_, layout)| layout)
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
            Config::new(10).max_kicks(MAX_KICKS_LIMIT + 1),
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
    fn the_remembered_layout_is_the_one_asked_for() {
        // Alternating arguments: a memo keyed on less than all of them would answer one with
        // the other's layout.
        let asks = [
            (0.01, None, None),
            (0.01, Some(8), None),
            (0.01, None, Some(Encoding::Plain)),
            (0.001, None, None),
            (0.01, Some(2), Some(Encoding::Packed)),
            (0.3, None, None),
        ];
        for _ in 0..3 {
            for &(fpr, b, e) in &asks {
                assert_eq!(choose_layout_cached(fpr, b, e), choose_layout(fpr, b, e));
            }
        }
        assert_ne!(
            choose_layout_cached(0.01, None, None),
            choose_layout_cached(0.001, None, None)
        );
    }

    #[test]
    fn layout_follows_the_fpr() {
        use Encoding::*;
        // The paper's sweet spot: semi-sorted buckets of 4, f = ceil(log2(2b/ε)) or so.
        assert_eq!(choose_layout(0.01, None, None), Some((4, 10, SemiSorted)));
        assert_eq!(choose_layout(0.001, None, None), Some((4, 13, SemiSorted)));
        assert_eq!(choose_layout(1e-4, None, None), Some((4, 17, SemiSorted)));
        assert_eq!(choose_layout(1e-5, None, None), Some((4, 20, SemiSorted)));
        // Plain: the narrowest byte width. b=4, f=8 reaches 1 − (254/255)^8 ≈ 3.09 %.
        assert_eq!(
            choose_layout(0.031, Some(4), Some(Plain)),
            Some((4, 8, Plain))
        );
        assert_eq!(
            choose_layout(0.030, Some(4), Some(Plain)),
            Some((4, 16, Plain))
        );
        assert_eq!(
            choose_layout(1.3e-4, Some(4), Some(Plain)),
            Some((4, 16, Plain))
        );
        assert_eq!(
            choose_layout(1.2e-4, Some(4), Some(Plain)),
            Some((4, 32, Plain))
        );
        assert_eq!(
            choose_layout(0.016, Some(2), Some(Plain)),
            Some((2, 8, Plain))
        );
        // A fixed bucket size or encoding restricts the choice.
        assert_eq!(choose_layout(0.01, Some(8), None), Some((8, 11, Packed)));
        assert_eq!(
            choose_layout(0.01, None, Some(Packed)),
            Some((4, 10, Packed))
        );
        assert_eq!(choose_layout(0.01, Some(2), Some(SemiSorted)), None);
        assert_eq!(choose_layout(1e-12, None, None), None);
        // Every choice meets its target.
        for &fpr in &[0.5, 0.2, 0.05, 0.01, 1e-3, 1e-4, 1e-6, 1e-8] {
            let (b, f, _) = choose_layout(fpr, None, None).unwrap();
            assert!(table::fpr_bound(b, f) <= fpr);
            assert!(f >= table::MIN_FP_BITS);
        }
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
