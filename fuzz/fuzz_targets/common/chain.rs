//! The `chain` target: a `ScalableCuckooFilter` with any encoding and bucket size a chain can
//! be fixed to (or left to choose), any rate, tightening and limits, and operations on it
//! checked against the model of its keys (`super::drive`) and against a model of how it grows
//! (FORMAT.md §8), read from its file after every operation:
//!
//! - every level has the false-positive share the policy gives it (the first `(1 − r)·ε`, each
//!   later one `(1 − r)` of what the levels before it left), the slot width that share calls
//!   for, and a bound (its precision sum, §5.1) within the share;
//! - an insert changes the newest level only: it splits buckets when the level would pass its
//!   split load (80 % of its slots, 90 % with buckets of 8; and at most 16 more to find room),
//!   never takes a key that would take the level past its share, and otherwise starts a new
//!   level sized for a quarter of the keys, leaving the old one exactly as it was;
//! - a refused insert (`Full`) changes nothing, and happens only when a new level is forbidden:
//!   `max_levels` (or 128) reached, a file past `max_bytes`, or a share no slot width meets —
//!   the reason `growth_limit` gives;
//! - a key a level answers for is counted there as a copy (FORMAT.md §3.5, §8 "Copies"): an
//!   insert either counts it on one level (its keys and copies one more, its buckets as they
//!   were), or gives it a slot of the newest level, or starts a level — and a level is started
//!   only by a key no level answered for, or by one only older levels answered for with
//!   entries that stand for `2b` copies already (taken for a new key): copies of a key the
//!   newest level answers for never start one, so the levels follow the distinct keys;
//! - a copy refused (`TooManyCopies`) changes nothing, and happens only for a key whose
//!   answering entries stand for `2b` copies already.
//!
//! The operations drive growth: small first levels (from 2 buckets), fresh keys by the
//! thousand (so that entries run out of continuation bits and splits copy them) with copies
//! of a few hot keys mixed in among them, and copies of one key without limit, a dozen at a
//! time, which are refused past `2b`.
//!
//! Input: six setup bytes (layout, rate and tightening, growth factor and limits, kicks and
//! capacity, seed), then operations of two bytes each (see [`super::drive`]).

use super::{Input, MAX_FRESH, Model, Subject, all_keys, check_model, drive, fresh_key, spec};
use cuckoo_sst::{Config, Encoding, Error, GrowthLimit, MAX_LEVELS, Result, ScalableCuckooFilter};
use std::cell::Cell;

/// How far a run drove its chain (what `tests/fuzz_corpus.rs` holds the seeds to).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Reached {
    /// The most levels it had.
    pub levels: usize,
    /// The most buckets a level had (a first level starts from 2 to 36).
    pub buckets: u64,
    /// Whether a level held more entries than keys: splits copied entries that had no
    /// continuation bit left.
    pub copied: bool,
    /// Whether an insert was refused at the level limit, and for `max_bytes`.
    pub full_at_max_levels: bool,
    pub full_at_max_bytes: bool,
    /// Whether a copy of a key was refused (`TooManyCopies`).
    pub copies_refused: bool,
    /// Whether a level counted copies (FORMAT.md §3.5): in records, and dense.
    pub counted_records: bool,
    pub counted_dense: bool,
    /// Whether a key that older levels answered for, with entries standing for `2b` copies,
    /// was taken for a new key and started a level.
    pub past_saturated_started_level: bool,
}

thread_local! {
    static REACHED: Cell<Reached> = Cell::new(Reached::default());
}

fn note(f: impl FnOnce(&mut Reached)) {
    REACHED.with(|r| {
        let mut reached = r.get();
        f(&mut reached);
        r.set(reached);
    });
}

/// What the setup bytes chose.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Setup {
    pub encoding: Option<Encoding>,
    pub bucket_size: Option<usize>,
    pub fpr: f64,
    pub tightening: f64,
    /// Only kept in the file (FORMAT.md §4): growth is by splits and shares.
    pub growth_factor: f64,
    pub max_levels: u32,
    pub max_bytes: u64,
    pub max_kicks: u32,
    pub capacity: usize,
    pub seed: u64,
}

pub const ENCODINGS: [Option<Encoding>; 4] = [
    None,
    Some(Encoding::Plain),
    Some(Encoding::Packed),
    Some(Encoding::SemiSorted),
];
pub const BUCKET_SIZES: [Option<usize>; 4] = [None, Some(2), Some(4), Some(8)];
pub const MAX_LEVELS_CHOICES: [u32; 4] = [0, 1, 2, 3];
pub const MAX_BYTES: [u64; 4] = [0, 1024, 4096, 65536];

pub fn setup(input: &mut Input<'_>) -> Setup {
    let (layout, rate, growth, sizing) = (input.byte(), input.byte(), input.byte(), input.byte());
    Setup {
        encoding: ENCODINGS[layout as usize % 4],
        bucket_size: BUCKET_SIZES[layout as usize / 4 % 4],
        fpr: [0.5, 0.2, 0.05, 0.01, 1e-3, 1e-4, 1e-5, 1e-7][rate as usize % 8],
        // The default 0.2 (each level gets 80 % of the budget left) to 0.99 (1 %).
        tightening: [0.2, 0.5, 0.9, 0.99][rate as usize / 8 % 4],
        growth_factor: [1.5, 2.0, 4.0, 64.0][growth as usize % 4],
        max_levels: MAX_LEVELS_CHOICES[growth as usize / 4 % 4],
        max_bytes: MAX_BYTES[growth as usize / 16 % 4],
        max_kicks: super::ops::KICKS[sizing as usize % 4],
        // 0 to 64 items in the first level: from 2 buckets, so that it splits many times.
        capacity: (sizing as usize / 4) % 65,
        seed: input.u16() as u64,
    }
}

// The growth policy of FORMAT.md §8 and the lengths of §1 and §3, as the reader written from
// FORMAT.md (`tests/common/spec.rs`) states them, in the model's types.

/// The core of every stretch level the crate makes.
const CORE_BITS: u32 = spec::GROWTH_CORE_BITS as u32;
/// An insert splits at most this many more buckets to find room before a new level takes it.
const RETRIES: u64 = spec::GROWTH_RETRIES;
/// §5.1: precision sums count an entry of precision `T` as `2^(60 − T)`.
const PRECISION_SCALE: i32 = 60;

/// The bucket size and encoding of every level.
fn layout(s: &Setup) -> (usize, Encoding) {
    let b = s.bucket_size.unwrap_or(4);
    let e = s.encoding.unwrap_or(if b == 4 {
        Encoding::SemiSorted
    } else {
        Encoding::Packed
    });
    (b, e)
}

/// §3's code of an encoding (a level descriptor's `encoding`).
fn encoding_code(e: Encoding) -> u8 {
    match e {
        Encoding::Plain => 0,
        Encoding::Packed => 1,
        Encoding::SemiSorted => 2,
        e => panic!("{e:?}: an encoding the model does not know"),
    }
}

fn split_load(b: usize) -> f64 {
    spec::split_load(b as u64)
}

/// The slot width of a level with the false-positive share `share`; `None` when no width
/// meets it.
pub fn slot_width(b: usize, e: Encoding, share: f64) -> Option<u32> {
    spec::growth_width(b as u64, encoding_code(e), share).map(|w| w as u32)
}

/// The buckets of a new level sized for `keys` keys.
fn buckets_for(keys: u64, b: usize) -> u64 {
    spec::growth_buckets(keys, b as u64)
}

fn region_len(m: u64, b: usize, w: u32, e: Encoding) -> u64 {
    spec::region_len(m, b as u64, w as u64, encoding_code(e))
}

fn file_len(regions: impl IntoIterator<Item = u64>) -> u64 {
    spec::file_len(&regions.into_iter().collect::<Vec<_>>())
}

/// A level descriptor's fields (FORMAT.md §5), and the level's region.
#[derive(Clone, Debug, PartialEq)]
struct Level {
    /// Buckets and copies (FORMAT.md §5 `region_len`).
    region_len: u64,
    /// The copies it counts (§3.5), and their encoding.
    copies: u64,
    copies_encoding: u8,
    buckets: u64,
    /// Occupied slots: keys, and copies splits made of entries without continuation bits.
    entries: u64,
    keys: u64,
    share: f64,
    bucket_size: usize,
    width: u32,
    encoding: u8,
    core_bits: u32,
    precision: u64,
    region: Vec<u8>,
}

impl Level {
    fn slots(&self) -> u64 {
        self.buckets * self.bucket_size as u64
    }

    /// §5.1: `2^(1 − c) · P · 2^−60`, at most 1 (computed as the crate does, so that the two
    /// agree bit for bit).
    fn bound_of(&self, precision: u64) -> f64 {
        let scale = 2f64.powi(1 - self.core_bits as i32 - PRECISION_SCALE);
        (precision as f64 * scale).min(1.0)
    }

    fn bound(&self) -> f64 {
        self.bound_of(self.precision)
    }

    /// The bound with one more entry of the least precision a new key gets: its bucket's
    /// address length `K = ⌊log2 m⌋` plus every continuation bit, `L0 = w − 1 − c`.
    fn bound_after_insert(&self) -> f64 {
        let k = 63 - self.buckets.leading_zeros() as i32;
        let l0 = self.width as i32 - 1 - self.core_bits as i32;
        self.bound_of(self.precision + (1u64 << (PRECISION_SCALE - k - l0)))
    }

    /// Whether `entries` occupied slots pass the split load.
    fn over_load(&self, entries: u64) -> bool {
        entries as f64 > split_load(self.bucket_size) * self.slots() as f64
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn f64_at(b: &[u8], at: usize) -> f64 {
    f64::from_bits(u64_at(b, at))
}

/// A chain's file, as the model reads it: the header and every level.
#[derive(Debug)]
struct File {
    len: usize,
    header: Vec<u8>,
    levels: Vec<Level>,
}

impl File {
    /// The chain's file, read by the reader written from FORMAT.md: its header and level table,
    /// checked by §7's steps 1–7 (checking every region's checksums too, after every
    /// operation, made the target five times slower).
    fn of(c: &ScalableCuckooFilter) -> File {
        let bytes = c.to_bytes();
        let file = spec::read_unverified(&bytes)
            .unwrap_or_else(|e| panic!("the reader written from FORMAT.md refuses the file: {e}"));
        let levels = file
            .levels
            .iter()
            .map(|l| Level {
                region_len: l.whole.len() as u64,
                copies: l
                    .read_copies()
                    .expect("a level's copies, as §3.5 says")
                    .values()
                    .sum(),
                copies_encoding: l.copies_encoding,
                buckets: l.m,
                entries: l.item_count,
                keys: l.capacity,
                share: l.target_fpr,
                bucket_size: l.b as usize,
                width: l.f as u32,
                encoding: l.encoding,
                core_bits: l.core_bits as u32,
                precision: l.precision,
                region: l.region.to_vec(),
            })
            .collect();
        File {
            len: bytes.len(),
            header: bytes[..128].to_vec(),
            levels,
        }
    }
}

/// A chain with the settings it was made with, and what the model expects of its levels.
#[derive(Clone, Debug, PartialEq)]
pub struct Chain {
    pub c: ScalableCuckooFilter,
    pub setup: Setup,
    /// The false-positive share the policy gives each level, computed when it was added.
    pub shares: Vec<f64>,
    /// The file's length when the chain was made.
    pub first_len: usize,
    /// In the `roundtrip` target, after the round trip: the chain read back from `c`'s bytes,
    /// which takes every insert and remove `c` takes and must answer and stay as `c` does
    /// (see [`Chain::follow`]).
    pub read_back: Option<Box<ScalableCuckooFilter>>,
}

impl Chain {
    /// The chain for `s`, or `None` when it is refused (`InvalidConfig`): for semi-sorted
    /// buckets of other than 4 slots, a first level's share no slot width meets, or a
    /// `max_bytes` the first level's file passes.
    pub fn new(s: &Setup) -> Option<Chain> {
        let mut config = Config::new(s.capacity)
            .false_positive_rate(s.fpr)
            .tightening(s.tightening)
            .growth_factor(s.growth_factor)
            .max_levels(s.max_levels)
            .max_bytes(s.max_bytes)
            .max_kicks(s.max_kicks)
            .seed(s.seed);
        if let Some(e) = s.encoding {
            config = config.encoding(e);
        }
        if let Some(b) = s.bucket_size {
            config = config.bucket_size(b);
        }
        let bad_layout =
            s.encoding == Some(Encoding::SemiSorted) && s.bucket_size.is_some_and(|b| b != 4);
        let (b, e) = layout(s);
        // No levels before it: the whole target is left.
        let share = s.fpr * (1.0 - s.tightening);
        let width = slot_width(b, e, share);
        let first_len = width.map(|w| {
            let m = buckets_for(s.capacity as u64, b);
            file_len([region_len(m, b, w, e)])
        });
        let too_large = s.max_bytes != 0 && first_len.is_some_and(|len| len > s.max_bytes);
        match ScalableCuckooFilter::new(config) {
            Ok(c) => {
                assert!(
                    !bad_layout,
                    "semi-sorted buckets of {:?} accepted",
                    s.bucket_size
                );
                assert!(width.is_some(), "{s:?}: a share of {share} met");
                assert!(!too_large, "{s:?}: a first level past max_bytes accepted");
                assert_eq!(Some(c.size_in_bytes() as u64), first_len, "{s:?}");
                assert_eq!((c.levels(), c.seed(), c.len()), (1, s.seed, 0));
                let first = c.level(0).unwrap();
                assert_eq!(
                    (first.num_buckets() as u64, first.fingerprint_bits()),
                    (buckets_for(s.capacity as u64, b), width.unwrap()),
                    "{s:?}: the first level"
                );
                let first_len = c.size_in_bytes();
                let chain = Chain {
                    c,
                    setup: *s,
                    shares: vec![share],
                    first_len,
                    read_back: None,
                };
                chain.check(&[]);
                Some(chain)
            }
            Err(Error::InvalidConfig { .. }) if bad_layout || width.is_none() => None,
            Err(Error::InvalidConfig { setting, .. }) if too_large => {
                assert_eq!(setting, "max_bytes", "{s:?}");
                None
            }
            Err(e) => panic!("{s:?}: {e}"),
        }
    }

    /// Which levels report `key`.
    fn holders(&self, key: &[u8]) -> usize {
        (0..self.c.levels())
            .filter(|&k| {
                self.c
                    .level(k)
                    .expect("a level below levels()")
                    .contains(key)
            })
            .count()
    }

    /// The share a level added now gets: `(1 − r)` of what the levels' bounds leave of the
    /// target (summed oldest first, as the crate does).
    fn next_share(&self) -> f64 {
        let used: f64 = (0..self.c.levels())
            .map(|k| self.c.level(k).unwrap().expected_fpr())
            .sum();
        (self.setup.fpr - used) * (1.0 - self.setup.tightening)
    }

    /// The most levels the chain may have.
    fn level_limit(&self) -> usize {
        match self.setup.max_levels {
            0 => MAX_LEVELS as usize,
            n => n as usize,
        }
    }

    /// Per level: keys and buckets (what an insert of a fresh key is checked by).
    fn shape(&self) -> Vec<(usize, usize)> {
        (0..self.c.levels())
            .map(|k| {
                let l = self.c.level(k).unwrap();
                (l.len(), l.num_buckets())
            })
            .collect()
    }

    /// Inserts `key` with `insert`, recording the share of a level the insert adds.
    fn insert_with(
        &mut self,
        key: &[u8],
        insert: impl Fn(&mut ScalableCuckooFilter) -> Result<bool>,
    ) -> Result<bool> {
        let (share, levels) = (self.next_share(), self.c.levels());
        let r = insert(&mut self.c);
        if let Some(mut copy) = self.read_back.take() {
            let was = copy.clone();
            let answer = insert(&mut copy);
            self.follow(key, (was, copy), &r, &answer);
        }
        if self.c.levels() > levels {
            self.shares.push(share);
        }
        r
    }

    /// The chain read back, `copy`, took the insert of `key` that `c` took (`c` answered `r`,
    /// the copy `answer`): it must have answered the same and be equal to `c` — everything an
    /// insert decides by is in the file (copies included, FORMAT.md §3.5).
    fn follow(
        &mut self,
        _key: &[u8],
        (_was, copy): (Box<ScalableCuckooFilter>, Box<ScalableCuckooFilter>),
        r: &Result<bool>,
        answer: &Result<bool>,
    ) {
        match (r, answer) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "the chain read back answered otherwise"),
            (Err(Error::Full), Err(Error::Full))
            | (Err(Error::TooManyCopies), Err(Error::TooManyCopies)) => {}
            _ => {
                panic!("the chain read back answered {answer:?} where the original answered {r:?}")
            }
        }
        assert_eq!(
            self.c, *copy,
            "the chain read back diverged from the original"
        );
        self.read_back = Some(copy);
    }

    /// `c.remove(key)`, on the chain read back too, which must answer the same.
    fn remove(&mut self, key: &[u8]) -> bool {
        let removed = self.c.remove(key);
        if let Some(copy) = &mut self.read_back {
            assert_eq!(
                copy.remove(key),
                removed,
                "the chain read back removed otherwise"
            );
            assert_eq!(
                self.c, **copy,
                "the chain read back diverged from the original"
            );
        }
        removed
    }

    /// An insert into `before` was refused: a new level was forbidden, by the level limit, by
    /// `max_bytes` (the level it would get does not fit), or because no width meets its share.
    fn check_refusal(&self, before: &Chain) {
        let s = &self.setup;
        let was = File::of(&before.c);
        let (b, e) = layout(s);
        let at_limit = was.levels.len() >= self.level_limit();
        let width = slot_width(b, e, before.next_share());
        let too_large = width.is_some_and(|w| {
            let m = buckets_for((before.c.len() as u64 / 4).max(64), b);
            let regions = was.levels.iter().map(|l| l.region_len);
            s.max_bytes != 0 && file_len(regions.chain([region_len(m, b, w, e)])) > s.max_bytes
        });
        note(|r| {
            r.full_at_max_levels |= at_limit;
            r.full_at_max_bytes |= !at_limit && too_large;
        });
        assert!(
            at_limit || too_large || width.is_none(),
            "an insert was refused at {} levels ({} keys) with a new level allowed",
            was.levels.len(),
            before.c.len()
        );
        // The chain names the limit it met: the first of the three that holds.
        let limit = before.c.growth_limit();
        match limit {
            Some(GrowthLimit::MaxLevels { levels }) => {
                assert!(at_limit && levels as usize == was.levels.len(), "{limit:?}")
            }
            Some(GrowthLimit::MaxBytes { needed, max_bytes }) => {
                assert!(!at_limit && too_large && needed > max_bytes, "{limit:?}");
                assert_eq!(max_bytes, s.max_bytes);
            }
            Some(GrowthLimit::FprBudget { .. }) => assert!(!at_limit, "{limit:?}"),
            other => panic!("an insert was refused, and growth_limit says {other:?}"),
        }
    }

    /// An insert of `key` was refused as a copy: a level's entries answering for it stand for
    /// `2b` copies already.
    fn check_copies_refused(&self, key: &[u8]) {
        let b = layout(&self.setup).0;
        assert!(
            self.c.count(key) >= 2 * b,
            "a key refused as a copy whose entries stand for {} copies",
            self.c.count(key)
        );
        note(|r| r.copies_refused = true);
    }

    /// A successful insert of `key` into `before` gave `self`: one level counted it as a copy
    /// (its keys and copies one more, its buckets and entries as they were: FORMAT.md §8,
    /// "Copies"), or only the newest level changed, as the policy says; or the newest level is
    /// exactly as it was and a new level took the key — one that no level answered for, or
    /// one past an older level's saturated entries.
    fn check_growth(&self, before: &Chain, key: &[u8]) {
        let (was, now) = (File::of(&before.c), File::of(&self.c));
        let (k0, k1) = (was.levels.len(), now.levels.len());
        assert!(k1 == k0 || k1 == k0 + 1, "{k0} levels became {k1}");
        let counted: Vec<usize> = (0..k0)
            .filter(|&k| now.levels[k].copies == was.levels[k].copies + 1)
            .collect();
        let changed: Vec<usize> = (0..k0)
            .filter(|&k| was.levels[k] != now.levels[k])
            .collect();
        // Counted: one level's copies one more, and no slot, no split, the bound as it was. (A
        // key placed in the newest level can add a copy too, with its buckets changed: a split
        // keeps a bare entry in both halves, each counting the copies it counted — FORMAT.md
        // §8 "Copies" — so a bare entry counting one copy adds one. That is a placement,
        // checked below.)
        let same_buckets = |k: usize| {
            let (old, new) = (&was.levels[k], &now.levels[k]);
            (new.buckets, new.entries, new.precision, &new.region)
                == (old.buckets, old.entries, old.precision, &old.region)
        };
        if k1 == k0 && counted.len() == 1 && changed == counted && same_buckets(counted[0]) {
            let (old, new) = (&was.levels[counted[0]], &now.levels[counted[0]]);
            assert!(
                before.c.level(counted[0]).unwrap().contains(key),
                "a copy counted on a level that did not answer for it"
            );
            assert_eq!(new.keys, old.keys + 1, "a counted copy's keys");
            return;
        }
        for k in 0..k0 - 1 {
            assert!(
                was.levels[k] == now.levels[k],
                "an insert changed level {k} of {k0}"
            );
        }
        let (old, new) = (&was.levels[k0 - 1], &now.levels[k0 - 1]);
        if k1 == k0 + 1 {
            // The newest level could not take the key: whatever it split for it is undone.
            assert!(old == new, "the level closed for a key was changed");
            // A level is started by a key no level answered for, or by one only older levels
            // answered for with entries that already stand for `2b` copies: such a key is
            // taken for a new one (FORMAT.md §8, "Copies"; docs/guarantees.md). The newest
            // level answering, the key is counted there or refused, never given a level.
            if before.c.contains(key) {
                let b = layout(&self.setup).0;
                assert!(
                    !before.c.level(k0 - 1).unwrap().contains(key),
                    "a key the newest level answered for started a level"
                );
                assert!(
                    before.c.count(key) >= 2 * b,
                    "a key the chain answered for with {} copies started a level",
                    before.c.count(key)
                );
                note(|r| r.past_saturated_started_level = true);
            }
            let added = &now.levels[k0];
            let (b, e) = layout(&self.setup);
            let want = buckets_for((before.c.len() as u64 / 4).max(64), b);
            assert_eq!(added.buckets, want, "a new level's buckets");
            assert_eq!((added.keys, added.entries), (1, 1), "a new level's keys");
            assert_eq!(added.width, slot_width(b, e, self.shares[k0]).unwrap());
        } else {
            assert!(
                old.bound_after_insert() <= old.share,
                "a level took a key past its share: bound {} after it, share {}",
                old.bound_after_insert(),
                old.share
            );
            assert_eq!(new.keys, old.keys + 1, "the newest level's keys");
            assert!(new.buckets >= old.buckets, "a level shrank");
            let grown = new.buckets - old.buckets;
            if !old.over_load(old.entries + 1) {
                // No split was needed for the load: only those to find room.
                assert!(
                    grown <= RETRIES,
                    "{grown} buckets split for one key below the split load"
                );
            } else if self.setup.max_bytes == 0 {
                assert!(grown > 0, "the level passed its split load without a split");
            }
        }
    }
}

impl Subject for Chain {
    fn insert(&mut self, key: &[u8]) -> Result<()> {
        self.insert_with(key, |c| c.insert(key).map(|()| true))
            .map(|_| ())
    }

    fn insert_unique(&mut self, key: &[u8]) -> Result<bool> {
        self.insert_with(key, |c| c.insert_unique(key))
    }

    fn contains(&self, key: &[u8]) -> bool {
        self.c.contains(key)
    }

    fn count(&self, key: &[u8]) -> usize {
        self.c.count(key)
    }

    fn contains_batch_keys(&self, keys: &[Vec<u8>], out: &mut [bool]) {
        self.c.contains_batch_keys(keys, out)
    }

    fn len(&self) -> usize {
        self.c.len()
    }

    fn is_empty(&self) -> bool {
        self.c.is_empty()
    }

    fn to_bytes(&self) -> Vec<u8> {
        self.c.to_bytes()
    }

    fn reopen(&self, bytes: &[u8]) -> Result<Chain> {
        // The chain read back is read again too: neither remembers a pair now (see `follow`).
        let read_back = match self.read_back {
            Some(_) => Some(Box::new(ScalableCuckooFilter::from_bytes(bytes)?)),
            None => None,
        };
        Ok(Chain {
            c: ScalableCuckooFilter::from_bytes(bytes)?,
            read_back,
            ..self.clone()
        })
    }

    fn may_insert(&self, _: &Model, _: u8) -> bool {
        // Copies of one key without limit: past the `2b` its buckets hold they are refused,
        // and the chain does not grow.
        true
    }

    fn check_copies(&self, key: &[u8]) {
        self.check_copies_refused(key);
    }

    fn check_insert(&self, before: &Chain, key: &[u8], _: &Model, full: bool) {
        if full {
            self.check_refusal(before);
        } else {
            self.check_growth(before, key);
        }
    }

    fn remove_inserted(&mut self, key: &[u8]) -> bool {
        // The documented refusal: when several levels match, nothing is removed.
        let holders = self.holders(key);
        let before = self.clone();
        let removed = self.remove(key);
        assert_eq!(
            removed,
            holders == 1,
            "remove gave {removed} with {holders} levels matching"
        );
        if removed {
            assert_eq!(self.c.count(key), before.c.count(key) - 1);
            // One key of one level: no level grows or shrinks.
            let (was, now) = (before.shape(), self.shape());
            assert_eq!(was.len(), now.len());
            let changed = was.iter().zip(&now).filter(|(a, b)| a != b).count();
            assert!(changed <= 1, "a remove changed {changed} levels");
            for ((keys, m), (keys_now, m_now)) in was.into_iter().zip(now) {
                assert_eq!(m, m_now, "a remove changed a level's buckets");
                assert!(keys_now == keys || keys_now + 1 == keys);
            }
        } else {
            assert_eq!(*self, before, "a refused removal changed the chain");
        }
        removed
    }

    fn remove_absent(&mut self, key: &[u8]) -> bool {
        self.remove(key)
    }

    fn check(&self, _: &[&[u8]]) {
        let s = &self.setup;
        let f = File::of(&self.c);
        let levels = self.c.levels();
        assert_eq!(f.levels.len(), levels);
        assert!(
            levels <= self.level_limit(),
            "{levels} levels, past the limit"
        );
        assert_eq!(self.shares.len(), levels, "levels added unseen");
        if s.max_bytes != 0 {
            assert!(
                f.len as u64 <= s.max_bytes,
                "grew to {} bytes, past max_bytes {} (from {})",
                f.len,
                s.max_bytes,
                self.first_len
            );
        }
        // The header keeps the settings (FORMAT.md §4), growth_factor included.
        let h = &f.header;
        let counts = f.levels.iter().any(|l| l.copies_encoding != 0);
        assert_eq!(
            u32_at(h, 8),
            if counts { 4 } else { 3 },
            "a chain of stretch levels is version 3, 4 when a level counts copies"
        );
        assert_eq!(f64_at(h, 48).to_bits(), s.fpr.to_bits());
        assert_eq!(f64_at(h, 56).to_bits(), s.growth_factor.to_bits());
        assert_eq!(f64_at(h, 64).to_bits(), s.tightening.to_bits());
        assert_eq!((u32_at(h, 72), u64_at(h, 80)), (s.max_levels, s.max_bytes));
        assert_eq!(h[96] as usize, s.bucket_size.unwrap_or(0));
        // `chain_encoding`: 0 for the default, else the encoding's code plus one.
        assert_eq!(h[97], s.encoding.map_or(0, |e| encoding_code(e) + 1));
        assert_eq!(u64_at(h, 88), self.c.len() as u64, "item_count");
        assert_eq!(
            file_len(f.levels.iter().map(|l| l.region_len)),
            f.len as u64,
            "the file's length"
        );
        let (b, e) = layout(s);
        for (k, l) in f.levels.iter().enumerate() {
            let view = self.c.level(k).unwrap();
            assert_eq!(
                l.share.to_bits(),
                self.shares[k].to_bits(),
                "level {k}'s share"
            );
            assert_eq!(
                (l.bucket_size, l.encoding, l.core_bits),
                (b, encoding_code(e), CORE_BITS),
                "level {k}'s layout"
            );
            assert_eq!(
                l.width,
                slot_width(b, e, l.share).unwrap(),
                "level {k}'s width"
            );
            let copies_len = match l.copies_encoding {
                0 => 0,
                1 => spec::records_copies_len(l.region_len / 12).min(l.region_len),
                _ => spec::dense_copies_len(l.buckets, b as u64),
            };
            let buckets_len = region_len(l.buckets, b, l.width, e);
            match l.copies_encoding {
                1 => assert!(l.region_len > buckets_len, "level {k}: no records"),
                _ => assert_eq!(l.region_len, buckets_len + copies_len, "level {k}"),
            }
            assert_eq!(l.copies == 0, l.copies_encoding == 0, "level {k}'s copies");
            assert_eq!(
                (l.keys, l.buckets),
                (view.len() as u64, view.num_buckets() as u64),
                "level {k}: the file and the view"
            );
            assert!(
                l.keys <= l.entries + l.copies,
                "level {k}: more keys than entries and copies"
            );
            note(|r| {
                r.levels = r.levels.max(levels);
                r.buckets = r.buckets.max(l.buckets);
                r.copied |= l.keys < l.entries + l.copies;
                r.counted_records |= l.copies_encoding == 1;
                r.counted_dense |= l.copies_encoding == 2;
            });
            assert_eq!(
                l.bound().to_bits(),
                view.expected_fpr().to_bits(),
                "level {k}'s bound is not its precision sum's"
            );
            assert!(
                l.bound() <= l.share,
                "level {k}'s bound {} past its share {}",
                l.bound(),
                l.share
            );
            if s.max_bytes == 0 {
                // Before each insert the level splits to below the split load; the splits that
                // find room (up to 16) may copy entries, a tenth of a bucket each at most.
                let slack = (RETRIES as usize * b) as f64 / 10.0;
                assert!(
                    l.entries as f64 <= split_load(b) * l.slots() as f64 + slack,
                    "level {k}: {} entries in {} slots",
                    l.entries,
                    l.slots()
                );
            }
        }
        assert!(
            self.c.expected_fpr() <= s.fpr,
            "FPR bound {} above the target {}",
            self.c.expected_fpr(),
            s.fpr
        );
        let per_level: usize = (0..levels).map(|k| self.c.level(k).unwrap().len()).sum();
        assert_eq!(per_level, self.c.len(), "len is not the levels' sum");
    }

    fn takes_fresh_keys(&self) -> bool {
        true
    }

    fn insert_fresh(&mut self, model: &mut Model, n: usize) {
        // Checked by what the views show (a file per insert would be slow); a refusal against
        // this operation's inserts replayed on the chain as it was. After every other fresh
        // key, a copy of one of three numbered keys (hot keys among new keys, as a memtable's
        // filter sees them: issue 40): counted where a level answers for them, and never the
        // start of a level.
        let start = self.clone();
        let mut done: Vec<Vec<u8>> = Vec::new();
        let hot = |i: usize| (n % 61 + i % 3) as u8;
        for i in 0..2 * n {
            let copy = i % 2 == 1;
            let (key, k) = if copy {
                (super::key(hot(i / 2)), Some(hot(i / 2)))
            } else {
                let j = model.fresh_len();
                if j >= MAX_FRESH {
                    break;
                }
                (fresh_key(j), None)
            };
            let was = self.shape();
            let (len, answered) = (self.c.len(), self.c.contains(&key));
            // What a key the chain answers for may start a level by (see `check_growth`).
            let newest_answered = self
                .c
                .level(self.c.levels() - 1)
                .is_some_and(|l| l.contains(&key));
            let counted = self.c.count(&key);
            done.push(key.clone());
            match Subject::insert(self, &key) {
                Ok(()) => {
                    match k {
                        Some(k) => model.add(k),
                        None => model.add_fresh(),
                    }
                    let now = self.shape();
                    if now.len() == was.len() + 1 {
                        if answered {
                            let b = layout(&self.setup).0;
                            assert!(
                                !newest_answered && counted >= 2 * b,
                                "a key the chain answered for ({counted} copies, the newest \
                                 level answering: {newest_answered}) started a level"
                            );
                            note(|r| r.past_saturated_started_level = true);
                        }
                        assert_eq!(was[..], now[..was.len()], "a closed level changed");
                        let (b, e) = layout(&self.setup);
                        let added = self.c.level(was.len()).unwrap();
                        assert_eq!(
                            (added.len(), added.num_buckets() as u64),
                            (1, buckets_for((len as u64 / 4).max(64), b))
                        );
                        let share = *self.shares.last().unwrap();
                        assert_eq!(added.fingerprint_bits(), slot_width(b, e, share).unwrap());
                    } else {
                        assert_eq!(now.len(), was.len(), "levels added at once");
                        let newest = was.len() - 1;
                        let grew: Vec<usize> =
                            (0..was.len()).filter(|&l| now[l] != was[l]).collect();
                        match grew.as_slice() {
                            // Counted, or a slot of the newest level (which may split).
                            [l] => {
                                assert_eq!(now[*l].0, was[*l].0 + 1, "level {l}'s keys");
                                assert!(
                                    now[*l].1 == was[*l].1
                                        || (*l == newest && now[*l].1 > was[*l].1),
                                    "level {l}'s buckets"
                                );
                                assert!(answered || *l == newest, "an old level took a new key");
                            }
                            other => panic!("an insert changed levels {other:?}"),
                        }
                    }
                }
                Err(Error::TooManyCopies) => {
                    // Its answering entries stand for `2b` copies: refused, unchanged, found.
                    assert_eq!(self.shape(), was, "a refused copy changed the chain");
                    assert_eq!(self.c.len(), len);
                    self.check_copies_refused(&key);
                    if k.is_none() {
                        model.skip_fresh();
                    }
                }
                Err(Error::Full) => {
                    let mut replay = start.clone();
                    for key in &done[..done.len() - 1] {
                        match Subject::insert(&mut replay, key) {
                            Ok(()) | Err(Error::TooManyCopies) => {}
                            Err(e) => panic!("replayed insert: {e}"),
                        }
                    }
                    assert_eq!(*self, replay, "a refused insert changed the chain");
                    self.check_refusal(&replay);
                    break;
                }
                Err(e) => panic!("insert: {e}"),
            }
        }
    }
}

pub fn run(data: &[u8]) {
    run_reached(data);
}

/// What the runs of chains within `f` reached.
pub fn reached_by(f: impl FnOnce()) -> Reached {
    REACHED.with(|r| r.set(Reached::default()));
    f();
    REACHED.with(Cell::get)
}

/// [`run`], returning how far the chain grew.
pub fn run_reached(data: &[u8]) -> Reached {
    reached_by(|| run_chain(data))
}

fn run_chain(data: &[u8]) {
    let mut input = Input::new(data);
    let setup = setup(&mut input);
    if let Some(mut s) = Chain::new(&setup) {
        let keys = all_keys();
        let mut model = Model::default();
        check_model(&s, &model, &keys, true);
        drive(&mut s, &mut model, &mut input, &keys, usize::MAX);
    }
}
