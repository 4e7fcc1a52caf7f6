//! `ScalableCuckooFilter`: a cuckoo filter that grows without limit while its false-positive
//! rate stays below the configured target. It grows in place — one bucket at a time, in a
//! [`StretchLevel`] — and only starts a new level when the growing one has used its share of
//! the false-positive budget, so that a lookup reads two buckets of one level, or of very few.
//! Files of earlier versions, whose chains have a level per doubling (after Scalable Bloom
//! Filters, Almeida et al. 2007), open and answer as before; they grow with stretch levels.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::filter::CuckooFilter;
use crate::format::{self, ChainParams, FileOut, LevelOut, decode};
use crate::hash::{self, KeyHash};
use crate::persist::Persisted;
use crate::stretch::{Copy, Refused, StretchLevel};
use crate::table::{Encoding, Geometry, PLAIN_WIDTHS};
use crate::view::FilterRef;
use std::io::Write;
use std::path::Path;

/// The core width of the stretch levels the crate creates (FORMAT.md §3.4): 32 alternate
/// offsets per bucket keep a large table's relocations mixing (at 4 bits the searches for a
/// free slot grow several-fold), and the other bits of a slot stay continuation bits, which
/// an entry needs once per doubling.
pub(crate) const CORE_BITS: u32 = 5;

/// The load a stretch level with buckets of `b` is kept at: it splits a bucket whenever an
/// insert would pass it. It trades space for insert speed. In linear hashing the buckets not
/// yet split in the current doubling carry twice the demand of the others and fill first, so a
/// level at its split load has few buckets with room: with buckets of 4, at 90 % two inserts
/// in three find both of their buckets full and search (about 30 buckets reached, 10 read);
/// at 80 %, two in five, and one move almost always suffices. Buckets of 4 are kept at 80 %
/// (16.3 bits per key grown a thousandfold at 1 %, against 14.5 at 90 %, and inserts 2.4 times
/// as fast; README, "Growable filters"); buckets of 2 stop taking keys at 83–85 % and are kept
/// at 80 %; buckets of 8 search rarely and are kept at 90 %.
pub(crate) const fn split_load(b: u32) -> f64 {
    match b {
        8 => 0.9,
        _ => 0.8,
    }
}

/// The fewest continuation bits a new level's slots hold. An entry with none left is copied
/// into both halves each time its bucket splits; with fewer than 6, so many entries run out
/// within a level's growth that the copies take a large part of the slots (about
/// `(doublings − L0) / 2^L0` of the keys), and with 1 or 2 they make splits add entries as
/// fast as slots.
pub(crate) const MIN_CONTINUATION: u32 = 6;

/// The most buckets one insert splits to bring the level under its split load. A level whose
/// entries have run out of continuation bits (a crafted file's may) gains an entry for each
/// slot a split adds; past this many, the insert goes on as if the level could not grow.
const MAX_SPLITS_PER_INSERT: u32 = 64;

/// How many doublings a new level is given the width for: its bound after growing
/// `2^DESIGN_DOUBLINGS`-fold is about its share. Each doubling adds about ¾ of a full
/// table's rate, so widths are `log2(2b · load · (1 + ¾ · DESIGN_DOUBLINGS) / share)`.
pub(crate) const DESIGN_DOUBLINGS: f64 = 10.0;

/// The most buckets a large level splits at once when an insert would pass its split load
/// (a level of `m` buckets splits `min(16, m / 1024)`, at least one).
const SPLIT_RUN: u64 = 16;

/// How many times an insert into a stretch level splits a bucket and searches again before
/// it gives up on the level.
const RETRIES: u32 = 16;

/// Why a growable filter cannot start another level: what an insert that returned
/// [`Error::Full`] ran into ([`ScalableCuckooFilter::growth_limit`]). A key its newest level
/// cannot take is refused only when a new level is forbidden.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum GrowthLimit {
    /// The chain has `levels` levels, the most [`Config::max_levels`] allows (or
    /// [`MAX_LEVELS`](crate::MAX_LEVELS)).
    MaxLevels {
        /// Levels in the chain.
        levels: u32,
    },
    /// A new level would make the file `needed` bytes long, past [`Config::max_bytes`].
    MaxBytes {
        /// The file's length with the new level.
        needed: u64,
        /// The configured cap.
        max_bytes: u64,
    },
    /// What the levels leave of the false-positive target gives a new level the share
    /// `share`, which no slot width up to 32 bits meets for even one key: the chain has used
    /// its budget (after about 100 levels at the default tightening).
    FprBudget {
        /// The share a new level would get.
        share: f64,
    },
}

/// Whether one key, at the least precision a key gets, keeps an empty level of geometry `geo`
/// within `share`.
fn one_key_fits(geo: &Geometry, share: f64) -> bool {
    let Some(slots) = geo.stretch_slots() else {
        return false;
    };
    let weight = crate::level::weight(geo.split().k + slots.l0);
    crate::level::fpr_bound(geo.core_bits(), weight) <= share
}

/// What an insert into the newest level did.
enum Newest {
    Placed,
    /// It cannot take the key (its share would be passed, or it cannot grow or find room): a
    /// new level may.
    NoRoom,
    /// It cannot place the key, and answers for it already: no level is started for it (the
    /// chain counts it as a copy, or refuses it).
    Copies,
}

/// A level of the chain: a classic cuckoo filter (from files of versions 1 and 2), or a
/// stretch level.
#[derive(Clone, Debug, PartialEq)]
enum Level {
    Classic(CuckooFilter),
    Stretch(StretchLevel),
}

impl Level {
    #[inline(always)]
    fn view(&self) -> FilterRef<'_> {
        match self {
            Level::Classic(f) => f.as_filter_ref(),
            Level::Stretch(l) => l.view(),
        }
    }

    /// Keys in the level.
    fn len(&self) -> u64 {
        match self {
            Level::Classic(f) => f.len() as u64,
            Level::Stretch(l) => l.len(),
        }
    }

    /// The level's bound on its false-positive rate.
    fn fpr_bound(&self) -> f64 {
        match self {
            Level::Classic(f) => f.expected_fpr(),
            Level::Stretch(l) => l.fpr_bound(),
        }
    }

    /// Bytes of the level's region in a file: its buckets, and a stretch level's copies.
    fn region_bytes(&self) -> usize {
        match self {
            Level::Classic(f) => f.level_out().table.len(),
            Level::Stretch(l) => l.table().len() + l.copies().encoded_len(&l.geometry()),
        }
    }

    fn level_out(&self) -> LevelOut<'_> {
        match self {
            Level::Classic(f) => f.level_out(),
            Level::Stretch(l) => {
                let counts = l.counts();
                let geo = l.geometry();
                LevelOut {
                    geo,
                    len: counts.entries,
                    capacity: counts.keys,
                    target_fpr: l.target_fpr(),
                    precision: counts.precision,
                    table: l.table(),
                    copies: l.copies().encode(&geo, l.table()),
                    copies_encoding: l.copies().encoding(&geo),
                }
            }
        }
    }
}

/// A growable cuckoo filter, for sets whose size is not known in advance (a memtable, a
/// store-wide key filter, a stream).
///
/// It starts with one level sized for the configured capacity and grows it in place, one
/// bucket at a time (linear hashing): each entry keeps the hash bits its later buckets need,
/// so growing moves entries without their keys, and a lookup reads two buckets however far the
/// filter has grown. An insert never fails for lack of room — unless [`Config::max_levels`] or
/// [`Config::max_bytes`] forbid growing further, and then it returns [`Error::Full`] with
/// nothing lost ([`growth_limit`](Self::growth_limit) says which limit).
///
/// Copies take no slot. A key the filter already answers for is a copy as far as it can tell:
/// it is counted on an entry that answers for it (FORMAT.md §3.5) — one a hot key's first
/// insert made, say — so a key inserted again and again holds one slot, never fills its pair
/// against other keys, and does not start a level (one exception: a key only an older level
/// answers for, with imprecise entries that already stand for `2b` copies, is taken for a new
/// key — old entries answer for many — and placed as one; its copies are counted on that new
/// entry after): a skewed stream (hot keys among new keys, as
/// a memtable sees) keeps the levels and about the bytes its distinct keys would
/// (docs/guarantees.md, "Copies and skew"). `count` and `remove` see the copies; a file keeps
/// them (format version 4). A key fits `2b` times (`b` the bucket size): one more copy returns
/// [`Error::TooManyCopies`] and changes nothing. A distinct key that entries answer for (a
/// false positive) is counted the same way where an entry equals its value; otherwise it gets
/// a slot of its own when the newest level has room for it, as any new key does.
///
/// The false-positive rate stays bounded however far it grows. Entries inserted early, when
/// the level was small, answer for more keys than later ones; the level keeps the exact sum
/// that bounds its rate, and when growing further would take it past the level's share of the
/// target, a new level with wider slots takes the new keys. The first level gets
/// `1 − r` of the target `ε` ([`tightening`](Config::tightening) `r`), each later one `1 − r`
/// of what the levels before it left, so the bounds add up to less than `ε`. At the default
/// 1 % target one level covers growth of more than a thousandfold.
///
/// ```
/// use cuckoo_sst::{Config, ScalableCuckooFilter};
///
/// let mut f = ScalableCuckooFilter::new(Config::new(1_000).false_positive_rate(0.01))?;
/// for i in 0..100_000u32 {
///     f.insert(&i.to_le_bytes())?; // never fails for lack of room
/// }
/// assert_eq!(f.levels(), 1); // grown 100-fold in place
/// assert!((0..100_000u32).all(|i| f.contains(&i.to_le_bytes())));
/// assert!(f.expected_fpr() <= 0.01);
/// # Ok::<(), cuckoo_sst::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ScalableCuckooFilter {
    /// Oldest first; never empty.
    levels: Vec<Level>,
    /// The bound on the whole chain's false-positive rate.
    target_fpr: f64,
    chain: ChainParams,
    seed: u64,
    max_kicks: u32,
}

impl ScalableCuckooFilter {
    /// A filter whose first level holds `config`'s capacity. The growth settings are
    /// [`Config::tightening`], [`Config::max_levels`] and [`Config::max_bytes`]; the slot width
    /// of each level is chosen from its false-positive share (a fixed
    /// [`Config::fingerprint_bits`] is refused: it would let the rate grow), and
    /// [`Config::bucket_size`] and [`Config::encoding`], if set, fix the layout of every level.
    ///
    /// ```
    /// use cuckoo_sst::{Config, ScalableCuckooFilter};
    /// let f = ScalableCuckooFilter::new(Config::new(1000))?;
    /// assert_eq!(f.levels(), 1);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn new(config: Config) -> Result<ScalableCuckooFilter> {
        let (mut f, geo, share) = Self::plan(&config)?;
        let level = StretchLevel::new(geo, f.seed, f.max_kicks, share)?;
        f.levels.push(Level::Stretch(level));
        Ok(f)
    }

    /// The bytes of the file [`new`](Self::new) makes for `config` (its first level, sized for
    /// the capacity; [`size_in_bytes`](Self::size_in_bytes) of the new filter), computed
    /// without building it: for refusing a filter too large before its memory is touched, as
    /// [`Config::size_in_bytes`] does for a [`CuckooFilter`](crate::CuckooFilter). `Err` for a
    /// configuration [`new`](Self::new) refuses.
    ///
    /// ```
    /// use cuckoo_sst::{Config, ScalableCuckooFilter};
    /// let c = Config::new(100_000);
    /// let made = ScalableCuckooFilter::new(c.clone())?;
    /// assert_eq!(ScalableCuckooFilter::size_for(&c)?, made.size_in_bytes());
    /// assert!(ScalableCuckooFilter::size_for(&c.max_bytes(4096)).is_err());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn size_for(config: &Config) -> Result<usize> {
        let (f, geo, _) = Self::plan(config)?;
        Ok(f.file_len_with(0, geo.table_bytes()))
    }

    /// A chain of no levels for `config` and the geometry and share of its first level, or the
    /// error [`new`](Self::new) returns; nothing is allocated.
    fn plan(config: &Config) -> Result<(ScalableCuckooFilter, Geometry, f64)> {
        let chain = config.chain_params()?;
        config.geometry()?; // every setting checked as for a single filter
        let f = ScalableCuckooFilter {
            levels: Vec::new(),
            target_fpr: config.fpr,
            chain,
            seed: config.seed,
            max_kicks: config.max_kicks,
        };
        let (geo, share) = match f.next_level(config.capacity as u64) {
            Ok(next) => next,
            Err(GrowthLimit::FprBudget { .. }) => {
                return Err(Error::invalid(
                    "false_positive_rate",
                    format!(
                        "{} with tightening {} leaves the first level a share no slot of up \
                         to 32 bits meets",
                        config.fpr, config.tightening
                    ),
                ));
            }
            Err(GrowthLimit::MaxBytes { needed, max_bytes }) => {
                return Err(Error::invalid(
                    "max_bytes",
                    format!(
                        "{max_bytes} bytes cannot hold the first level: a filter for {} keys \
                         takes {needed}; raise max_bytes or lower the capacity",
                        config.capacity
                    ),
                ));
            }
            Err(GrowthLimit::MaxLevels { .. }) => unreachable!("no level yet"),
        };
        Ok((f, geo, share))
    }

    /// The bucket size and encoding of new levels.
    fn layout(&self) -> (u32, Encoding) {
        let b = self.chain.bucket_size.unwrap_or(4);
        let e = self.chain.encoding.unwrap_or(if b == 4 {
            Encoding::SemiSorted
        } else {
            Encoding::Packed
        });
        (b, e)
    }

    /// The geometry and false-positive share of a new stretch level sized for `capacity` keys
    /// (the share is `1 − r` of what the existing levels leave), or the limit that forbids it:
    /// `max_levels`, `max_bytes`, or a share that no slot width up to 32 bits meets (or that
    /// one key would pass). Nothing is allocated.
    fn next_level(&self, capacity: u64) -> std::result::Result<(Geometry, f64), GrowthLimit> {
        let limit = match self.chain.max_levels {
            0 => crate::config::MAX_LEVELS,
            n => n,
        };
        if self.levels.len() >= limit as usize {
            return Err(GrowthLimit::MaxLevels {
                levels: self.levels.len() as u32,
            });
        }
        let used: f64 = self.levels.iter().map(Level::fpr_bound).sum();
        let share = (self.target_fpr - used) * (1.0 - self.chain.tightening);
        let (b, encoding) = self.layout();
        let buckets = (capacity as f64 / (b as f64 * split_load(b)))
            .ceil()
            .clamp(2.0, crate::table::MAX_BUCKETS as f64);
        // Every setting was checked when the chain was made (`Config::geometry`): a geometry
        // is refused here only for its width.
        let geo = slot_width(b, encoding, share)
            .and_then(|w| Geometry::stretch(buckets as u64, b, w, encoding, CORE_BITS).ok())
            .filter(|geo| one_key_fits(geo, share))
            .ok_or(GrowthLimit::FprBudget { share })?;
        let needed = self.file_len_with(self.levels.len(), geo.table_bytes()) as u64;
        if self.chain.max_bytes != 0 && needed > self.chain.max_bytes {
            return Err(GrowthLimit::MaxBytes {
                needed,
                max_bytes: self.chain.max_bytes,
            });
        }
        Ok((geo, share))
    }

    /// The length of a file of these levels with level `k`'s region `bytes` long instead (or
    /// one more level, of `bytes`, when `k` is the number of levels).
    fn file_len_with(&self, k: usize, bytes: usize) -> usize {
        let lens = self
            .levels
            .iter()
            .enumerate()
            .map(|(i, l)| if i == k { bytes } else { l.region_bytes() });
        format::file_len(lens.chain((k == self.levels.len()).then_some(bytes)))
    }

    /// Whether a file of these levels, with level `k`'s region `bytes` long instead, stays
    /// within `max_bytes`.
    fn fits(&self, k: usize, bytes: usize) -> bool {
        self.chain.max_bytes == 0 || self.file_len_with(k, bytes) as u64 <= self.chain.max_bytes
    }

    /// Why the chain cannot start another level now, or `None` when it can. After an insert
    /// returned [`Error::Full`], this is the limit that refused it: a growable filter refuses
    /// a key only when its newest level cannot take it and a new level is forbidden.
    ///
    /// ```
    /// use cuckoo_sst::{Config, GrowthLimit, ScalableCuckooFilter};
    /// let f = ScalableCuckooFilter::new(Config::new(1000))?;
    /// assert_eq!(f.growth_limit(), None);
    /// let f = ScalableCuckooFilter::new(Config::new(1000).max_levels(1))?;
    /// assert_eq!(f.growth_limit(), Some(GrowthLimit::MaxLevels { levels: 1 }));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn growth_limit(&self) -> Option<GrowthLimit> {
        self.next_level(self.next_capacity()).err()
    }

    /// The keys a new level is sized for: a quarter of the keys so far, at least 64.
    fn next_capacity(&self) -> u64 {
        (self.len() as u64 / 4).max(64)
    }

    /// Starts a new level for the keys to come, or `Full` when a limit forbids it.
    fn add_level(&mut self) -> Result<()> {
        let (geo, share) = self
            .next_level(self.next_capacity())
            .map_err(|_| Error::Full)?;
        let level = StretchLevel::new(geo, self.seed, self.max_kicks, share)?;
        self.levels.push(Level::Stretch(level));
        Ok(())
    }

    /// Splits a bucket of the newest level if the limits allow, logging what undoes it:
    /// `Ok(false)` when they do not (2^32 buckets, or `max_bytes`).
    fn split_newest(&mut self) -> Result<bool> {
        let k = self.levels.len() - 1;
        let Some(Level::Stretch(level)) = self.levels.last() else {
            return Ok(false);
        };
        let geo = level.geometry();
        if geo.num_buckets() >= crate::table::MAX_BUCKETS {
            return Ok(false);
        }
        if self.chain.max_bytes != 0 {
            let Ok(grown) = geo.with_buckets(geo.num_buckets() + 1) else {
                return Ok(false);
            };
            // A split of entries with no continuation bit left copies their counts too.
            let copies = level
                .copies()
                .encoded_len_with(grown.bucket_size() as usize, &grown);
            if !self.fits(k, grown.table_bytes() + copies) {
                return Ok(false);
            }
        }
        let Some(Level::Stretch(level)) = self.levels.last_mut() else {
            return Ok(false);
        };
        level.split_logged()?;
        Ok(true)
    }

    /// Inserts into the newest level, growing it as needed; when it does not take the key,
    /// nothing is changed (splits made for the key are undone).
    fn insert_newest(&mut self, seeded: u64) -> Result<Newest> {
        let placed = self.grow_and_insert(seeded);
        if let Some(Level::Stretch(level)) = self.levels.last_mut() {
            match placed {
                Ok(Newest::Placed) => level.keep_splits(),
                _ => level.undo_splits(),
            }
        }
        placed
    }

    /// [`insert_newest`](Self::insert_newest) without the undo.
    fn grow_and_insert(&mut self, seeded: u64) -> Result<Newest> {
        let Some(Level::Stretch(level)) = self.levels.last() else {
            return Ok(Newest::NoRoom);
        };
        if !level.room_for_one_more(level.target_fpr()) {
            return Ok(Newest::NoRoom);
        }
        // The key's buckets come into cache while buckets are split.
        level.prefetch_seeded(seeded);
        let mut splits = 0;
        while splits < MAX_SPLITS_PER_INSERT {
            let Some(Level::Stretch(level)) = self.levels.last() else {
                return Ok(Newest::NoRoom);
            };
            let geo = level.geometry();
            let load = split_load(geo.bucket_size());
            if (level.entries() + 1) as f64 <= load * geo.slots() as f64 {
                break;
            }
            // A large level splits a run of buckets at once (a sixteenth of a percent of its
            // load, at most 16): the same splits, fewer times.
            let run = (geo.num_buckets() >> 10)
                .clamp(1, SPLIT_RUN)
                .min(u64::from(MAX_SPLITS_PER_INSERT - splits));
            let mut split = false;
            for _ in 0..run {
                if !self.split_newest()? {
                    break;
                }
                split = true;
                splits += 1;
            }
            if !split {
                break;
            }
        }
        // At the split load the search for a free slot fails for a few keys in a thousand;
        // each failure splits one more bucket, and after a few the search may reach further.
        // Past that the level is jammed and a new level takes the key.
        for attempt in 0..RETRIES {
            let Some(Level::Stretch(level)) = self.levels.last_mut() else {
                return Ok(Newest::NoRoom);
            };
            let budget = match attempt {
                0..4 => self.max_kicks,
                _ => self.max_kicks.saturating_mul(8),
            };
            match level.insert_seeded_within(seeded, budget) {
                Ok(()) => return Ok(Newest::Placed),
                Err(Refused::Copies) => return Ok(Newest::Copies),
                Err(Refused::NoRoom | Refused::Share | Refused::Closed) => {
                    if !self.split_newest()? {
                        break;
                    }
                }
            }
        }
        // The level cannot take the key. If it finds it already, the key is a copy as far as
        // it can tell, and no level is started for it.
        match self.levels.last() {
            Some(Level::Stretch(level)) => match level.refusal_of_found(seeded) {
                Some(Refused::Copies) => Ok(Newest::Copies),
                _ => Ok(Newest::NoRoom),
            },
            _ => Ok(Newest::NoRoom),
        }
    }

    /// Adds `key`. A key a level already answers for is counted there as a copy (it takes no
    /// slot; see the type's docs); a new key goes into the newest level, which grows, and a
    /// new level when it cannot take it. Fails, with the chain unchanged, only when a
    /// configured limit forbids growing ([`Error::Full`]) or when the entries that answer for
    /// the key already stand for `2b` copies ([`Error::TooManyCopies`]; the key is found
    /// either way).
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
        let seeded = hash::seeded(h, self.seed);
        // A key a stretch level answers for may be a copy there (FORMAT.md §8, "Copies"):
        // counted on an answering entry, not given a slot of its own, so that copies never
        // fill a pair and never start a level. First where an entry equals the key's value
        // (its own entry, as far as the level can tell), in any level; then where the newest
        // level answers for it otherwise; then where an older one does, unless its answering
        // entries stand for `2b` copies already (old entries of little precision answer for
        // many keys: a key past them is taken for a new one).
        for k in (0..self.levels.len()).rev() {
            if let Level::Stretch(level) = &self.levels[k] {
                match level.equal_copy(seeded) {
                    None => continue,
                    Some(Copy::Full) => return Err(Error::TooManyCopies),
                    Some(_) => return self.count_copy(k, seeded),
                }
            }
        }
        let newest = self.levels.len() - 1;
        for k in (0..self.levels.len()).rev() {
            let Level::Stretch(level) = &self.levels[k] else {
                continue;
            };
            match level.inexact_copy(seeded) {
                None => {}
                Some(Copy::Full) if k == newest => return Err(Error::TooManyCopies),
                Some(Copy::Full) => {}
                Some(Copy::Slot) if k == newest => {
                    // A slot of its own if the level places it, else a count.
                    return match self.insert_newest(seeded)? {
                        Newest::Placed => Ok(()),
                        _ => self.count_copy(newest, seeded),
                    };
                }
                Some(_) => return self.count_copy(k, seeded),
            }
        }
        match self.insert_newest(seeded)? {
            Newest::Placed => return Ok(()),
            Newest::Copies => return Err(Error::TooManyCopies),
            Newest::NoRoom => {}
        }
        let before = self.levels.len();
        self.add_level()?;
        if let Newest::Placed = self.insert_newest(seeded)? {
            return Ok(());
        }
        // A new, empty level that cannot take a key: its share is too small for any width.
        self.levels.truncate(before);
        Err(Error::Full)
    }

    /// Counts a copy of the key with seeded hash `h` on an entry of level `k` that answers for
    /// it (FORMAT.md §3.5): `TooManyCopies` when its answering entries stand for `2b` copies
    /// already, `Full` when the count would take the file past `max_bytes`.
    fn count_copy(&mut self, k: usize, h: u64) -> Result<()> {
        let Level::Stretch(level) = &self.levels[k] else {
            unreachable!("copies are counted in stretch levels")
        };
        let region = level.table().len() + level.copies().encoded_len_with(1, &level.geometry());
        if !self.fits(k, region) {
            return Err(Error::Full);
        }
        let Level::Stretch(level) = &mut self.levels[k] else {
            unreachable!("copies are counted in stretch levels")
        };
        if level.count_copy(h) {
            Ok(())
        } else {
            Err(Error::TooManyCopies)
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
    #[inline(always)]
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
    // The one-level probe inlined into the caller (see `FilterRef::contains`); many levels out
    // of line.
    #[inline(always)]
    pub fn contains_hash(&self, h: KeyHash) -> bool {
        match self.levels.as_slice() {
            [Level::Stretch(l)] => l.contains_seeded(crate::hash::seeded(h, l.seed())),
            [level] => level.view().contains_hash(h),
            _ => self.contains_hash_levels(h),
        }
    }

    /// [`contains_hash`](Self::contains_hash) of a chain of several levels.
    #[inline(never)]
    fn contains_hash_levels(&self, h: KeyHash) -> bool {
        let mut any = false;
        let levels = self.levels.iter().rev().map(Level::view);
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
    /// assert!(out.iter().all(|&found| found));
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
        self.levels.iter().rev().map(Level::view).collect()
    }

    /// Entries answering for `key` across all levels, and the copies counted on them: at least
    /// the copies of it inserted (and not removed); other keys' entries that answer for it
    /// add to it.
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
        let seeded = hash::seeded(h, self.seed);
        let counted: u64 = self
            .levels
            .iter()
            .map(|l| match l {
                Level::Stretch(s) => s.counted_copies(seeded),
                Level::Classic(_) => 0,
            })
            .sum();
        let slots: usize = self.levels.iter().map(|l| l.view().count_hash(h)).sum();
        slots.saturating_add(crate::view::saturating_usize(counted))
    }

    /// Removes one copy of `key` from the level that holds it; `true` if one was removed.
    ///
    /// A copy counted on the most precise entry that answers for it goes first; the entry
    /// goes with the last. Only remove keys that were inserted. When more than one level
    /// matches the key — another level holds a colliding entry (about the chain's
    /// false-positive rate), or a copy of a key whose entry in an older level had changed
    /// (by splits) took a slot of the newest — the chain cannot tell which match is the key's,
    /// and removing the wrong one would make another key a false negative. It then removes
    /// nothing and returns `false`: the key stays as a false positive.
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
            .filter(|(_, l)| l.view().contains_hash(h));
        match (holders.next(), holders.next()) {
            (Some((k, _)), None) => match &mut self.levels[k] {
                Level::Classic(f) => f.remove_hash(h),
                Level::Stretch(l) => l.remove_seeded(hash::seeded(h, self.seed)),
            },
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
        crate::view::saturating_usize(self.levels.iter().map(Level::len).sum())
    }

    /// Whether the filter holds no items.
    ///
    /// ```
    /// assert!(cuckoo_sst::ScalableCuckooFilter::new(cuckoo_sst::Config::new(10))?.is_empty());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.levels.iter().all(|l| l.len() == 0)
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
        self.levels.get(k).map(Level::view)
    }

    /// Total slots in all levels.
    ///
    /// ```
    /// let f = cuckoo_sst::ScalableCuckooFilter::new(cuckoo_sst::Config::new(1000))?;
    /// assert!(f.capacity() >= 1000);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn capacity(&self) -> usize {
        let slots = self.levels.iter().map(|l| l.view().geo.slots()).sum();
        crate::view::saturating_usize(slots)
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
        format::combined_fpr(self.levels.iter().map(Level::fpr_bound))
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
        format::file_len(self.levels.iter().map(Level::region_bytes))
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
        self.file_bytes()
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
        self.write_file(&mut w)
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
        self.save_file(path.as_ref())
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
    /// assert!(g.contains(b"a") && g.capacity() > 10 * f.capacity());
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
        // Reserved exactly: collected from `Result`s, the vector would grow by doubling, and
        // its peak (the old buffer and the new) would be twice the levels' structs.
        let mut levels = Vec::with_capacity(meta.levels.len());
        for (k, level) in meta.levels.iter().enumerate() {
            levels.push(match level.stretch {
                None => Level::Classic(CuckooFilter::from_level(&meta, level, bytes)?),
                Some(counts) => Level::Stretch(StretchLevel::from_parts(
                    level.geo,
                    meta.seed,
                    meta.max_kicks,
                    counts,
                    level.target_fpr,
                    &bytes[level.region()],
                    decode::level_copies(bytes, level, k)?,
                )?),
            });
        }
        Ok(ScalableCuckooFilter {
            levels,
            target_fpr: meta.target_fpr,
            chain,
            seed: meta.seed,
            max_kicks: meta.max_kicks,
        })
    }
}

/// The chain's file: every level (FORMAT.md).
impl Persisted for ScalableCuckooFilter {
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
}

/// The slot width of a stretch level with buckets of `b` and the false-positive share
/// `share`: `1 + ⌈log2(2b · split_load(b) · (1 + ¾ · DESIGN_DOUBLINGS) / share)⌉`, at least
/// what the core, [`MIN_CONTINUATION`] continuation bits and the marker need; a plain encoding
/// rounds up to 8, 16 or 32 bits. `None` past 32 bits.
pub(crate) fn slot_width(b: u32, encoding: Encoding, share: f64) -> Option<u32> {
    if share.is_nan() || share <= 0.0 {
        return None;
    }
    let rate = 2.0 * b as f64 * split_load(b) * (1.0 + 0.75 * DESIGN_DOUBLINGS) / share;
    let precision = rate.log2().ceil().max(1.0);
    if precision > 31.0 {
        return None;
    }
    let w = (precision as u32 + 1).max(CORE_BITS + 1 + MIN_CONTINUATION);
    match encoding {
        Encoding::Plain => PLAIN_WIDTHS.into_iter().find(|&p| p >= w),
        _ => Some(w),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DEFAULT_TIGHTENING;

    /// The widths the rule gives: 14 bits at the default 1 % (13 of precision: the bound of a
    /// level grown a thousandfold is about 0.75 %), two more bits for a quarter of the share,
    /// plain widths rounded up, nothing past 32 bits.
    #[test]
    fn slot_widths_follow_the_share() {
        assert_eq!(slot_width(4, Encoding::SemiSorted, 0.008), Some(14));
        assert_eq!(slot_width(4, Encoding::SemiSorted, 0.002), Some(16));
        assert_eq!(slot_width(4, Encoding::Plain, 0.008), Some(16));
        assert_eq!(slot_width(4, Encoding::Plain, 0.00001), Some(32));
        assert_eq!(
            slot_width(2, Encoding::Packed, 0.5),
            Some(CORE_BITS + 1 + MIN_CONTINUATION)
        );
        assert_eq!(slot_width(4, Encoding::Packed, 1e-12), None);
        assert_eq!(slot_width(4, Encoding::Packed, 0.0), None);
        assert_eq!(slot_width(4, Encoding::Packed, f64::NAN), None);
        // Either side of a step: 2b · λ · 8.5 / share = 2^13 at share 54.4 / 8192 (b = 4,
        // λ = 0.8), so a slightly larger share needs 13 bits of precision and a slightly
        // smaller one 14; and 2^31 at 54.4 / 2^31, the widest precision there is (32-bit slots).
        let step = 54.4 / 8192.0;
        assert_eq!(slot_width(4, Encoding::Packed, step * 1.001), Some(14));
        assert_eq!(slot_width(4, Encoding::Packed, step * 0.999), Some(15));
        let widest = 54.4 / 2f64.powi(31);
        assert_eq!(slot_width(4, Encoding::Packed, widest * 1.001), Some(32));
        assert_eq!(slot_width(4, Encoding::Packed, widest * 0.999), None);
    }

    /// Inserting until a limit refuses: every key still present, the bound under the target,
    /// the limit kept, and a refused insert changes nothing (splits it made undone).
    #[test]
    fn growth_stops_at_the_limits_with_nothing_lost() {
        for config in [
            Config::new(50).max_levels(1),
            Config::new(50).max_bytes(4096),
            Config::new(1)
                .max_levels(2)
                .max_bytes(1 << 18)
                .false_positive_rate(0.5)
                .tightening(0.99),
        ] {
            let mut f = ScalableCuckooFilter::new(config.clone()).unwrap();
            let mut i = 0u32;
            while f.insert(&i.to_le_bytes()).is_ok() {
                i += 1;
                assert!(i < 5_000_000, "{config:?} never stopped");
            }
            for retry in [i, i, i] {
                let before = f.clone();
                assert!(matches!(f.insert(&retry.to_le_bytes()), Err(Error::Full)));
                assert_eq!(f, before, "{config:?}: a refused insert changed the filter");
            }
            assert!(i >= 50 || config.capacity < 50, "{config:?}: only {i} keys");
            assert!((0..i).all(|k| f.contains(&k.to_le_bytes())));
            assert!(f.expected_fpr() <= config.fpr, "{config:?}");
            if config.max_bytes != 0 {
                assert!(f.size_in_bytes() as u64 <= config.max_bytes, "{config:?}");
            }
            if config.max_levels != 0 {
                assert!(f.levels() <= config.max_levels as usize, "{config:?}");
            }
            if config.max_levels == 1 {
                // Stopped by the bound: one more key would pass the level's share.
                assert!(f.expected_fpr() > 0.9 * (1.0 - DEFAULT_TIGHTENING) * config.fpr);
            }
            assert_eq!(ScalableCuckooFilter::from_bytes(&f.to_bytes()).unwrap(), f);
        }
    }

    /// A level whose slots hold one continuation bit (the format allows it; a crafted file may
    /// have one): its entries run out after a doubling, and every split then copies them, so
    /// splitting no longer lowers the load. Inserts still end, lose nothing, and soon go to a
    /// new level of the crate's own width.
    #[test]
    fn a_level_of_one_continuation_bit_cannot_make_inserts_run_away() {
        let mut f = ScalableCuckooFilter::new(Config::new(8)).unwrap();
        let geo = Geometry::stretch(2, 4, CORE_BITS + 2, Encoding::Packed, CORE_BITS).unwrap();
        let level = StretchLevel::new(geo, f.seed, f.max_kicks, 0.008).unwrap();
        f.levels = vec![Level::Stretch(level)];
        let n = 20_000u32;
        for i in 0..n {
            f.insert(&i.to_le_bytes()).unwrap();
        }
        assert!((0..n).all(|i| f.contains(&i.to_le_bytes())));
        assert!(f.levels() >= 2, "the narrow level was never left");
        let first = f.level(0).unwrap();
        assert!(
            first.capacity() < 64 * n as usize,
            "{} slots",
            first.capacity()
        );
        assert!(f.level(1).unwrap().fingerprint_bits() >= CORE_BITS + 1 + MIN_CONTINUATION);
        assert!(f.expected_fpr() <= 0.01);
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
            Config::new(10)
                .bucket_size(2)
                .encoding(Encoding::SemiSorted),
            Config::new(10).max_kicks(crate::config::MAX_KICKS_LIMIT + 1),
            Config::new(10).false_positive_rate(1e-9),
            Config::new(10).false_positive_rate(1e-7).tightening(0.8),
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
