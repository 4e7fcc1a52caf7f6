//! The `chain` target: a `ScalableCuckooFilter` with any encoding and bucket size a chain can
//! be fixed to (or left to choose), any growth settings and limits, and operations on it
//! checked against the model.
//!
//! Input: six setup bytes (layout, rate and tightening, growth and limits, kicks and capacity,
//! seed), then operations of two bytes each (see [`super::drive`]).

use super::{Input, Model, Subject, all_keys, check_model, drive};
use cuckoo_sst::{Config, Encoding, Error, Result, ScalableCuckooFilter};

/// What the setup bytes chose.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Setup {
    pub encoding: Option<Encoding>,
    pub bucket_size: Option<usize>,
    pub fpr: f64,
    pub tightening: f64,
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
pub const MAX_LEVELS: [u32; 4] = [0, 1, 2, 3];
pub const MAX_BYTES: [u64; 4] = [0, 1024, 4096, 65536];

pub fn setup(input: &mut Input<'_>) -> Setup {
    let (layout, rate, growth, sizing) = (input.byte(), input.byte(), input.byte(), input.byte());
    Setup {
        encoding: ENCODINGS[layout as usize % 4],
        bucket_size: BUCKET_SIZES[layout as usize / 4 % 4],
        fpr: [0.5, 0.2, 0.05, 0.01, 1e-3, 1e-4, 1e-5, 1e-7][rate as usize % 8],
        tightening: [0.5, 0.8, 0.9, 0.99][rate as usize / 8 % 4],
        growth_factor: [1.5, 2.0, 4.0, 64.0][growth as usize % 4],
        max_levels: MAX_LEVELS[growth as usize / 4 % 4],
        max_bytes: MAX_BYTES[growth as usize / 16 % 4],
        max_kicks: super::ops::KICKS[sizing as usize % 4],
        // 0 to 64 items in the first level: small levels, which fill and make the chain grow.
        capacity: (sizing as usize / 4) % 65,
        seed: input.u16() as u64,
    }
}

/// A chain with the settings it was made with.
#[derive(Clone, Debug, PartialEq)]
pub struct Chain {
    pub c: ScalableCuckooFilter,
    pub setup: Setup,
}

impl Chain {
    /// The chain for `s`, or `None` when it is refused: for semi-sorted buckets of other than
    /// 4 slots, or a first level's false-positive share that may be out of reach.
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
        let out_of_reach = share(s, 0) < REACHABLE_SHARE;
        match ScalableCuckooFilter::new(config) {
            Ok(c) => {
                assert!(
                    !bad_layout,
                    "semi-sorted buckets of {:?} accepted",
                    s.bucket_size
                );
                assert_eq!((c.levels(), c.seed(), c.len()), (1, s.seed, 0));
                Some(Chain { c, setup: *s })
            }
            Err(Error::InvalidConfig { .. }) if bad_layout || out_of_reach => None,
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
}

/// The false-positive share of level `k`: `ε·(1 − r)·rᵏ`.
fn share(s: &Setup, k: usize) -> f64 {
    s.fpr * (1.0 - s.tightening) * s.tightening.powi(k as i32)
}

/// Above the largest full-bucket bound of 32-bit fingerprints (buckets of 8:
/// `1 − (1 − 1/(2³² − 1))¹⁶ ≈ 3.73e-9`): a level's share at least this is reachable in every
/// layout a chain can be fixed to.
const REACHABLE_SHARE: f64 = 4e-9;

impl Subject for Chain {
    fn insert(&mut self, key: &[u8]) -> Result<()> {
        self.c.insert(key)
    }

    fn insert_unique(&mut self, key: &[u8]) -> Result<bool> {
        self.c.insert_unique(key)
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
        Ok(Chain {
            c: ScalableCuckooFilter::from_bytes(bytes)?,
            setup: self.setup,
        })
    }

    fn may_insert(&self, model: &Model, k: u8) -> bool {
        // Every 2b copies of one key force a new level, each `growth_factor` times larger: with
        // no limit on levels or bytes, that would exhaust memory, so copies are capped there.
        let bounded = self.setup.max_levels != 0 || self.setup.max_bytes != 0;
        bounded || model.count(k) < 2
    }

    fn check_insert(&self, before: &Chain, _: &[u8], _: &Model, full: bool) {
        if full {
            // An insert fails only when the next level is forbidden: by a limit, or because
            // no fingerprint reaches its false-positive share.
            let k = before.c.levels();
            let s = &self.setup;
            let at_max_levels = s.max_levels != 0 && k >= s.max_levels as usize;
            assert!(
                at_max_levels || s.max_bytes != 0 || share(s, k) < REACHABLE_SHARE,
                "the chain refused an insert at {k} levels with no limit reached"
            );
        }
    }

    fn remove_inserted(&mut self, key: &[u8]) -> bool {
        // The documented refusal: when several levels match, nothing is removed.
        let holders = self.holders(key);
        let before = self.clone();
        let removed = self.c.remove(key);
        assert_eq!(
            removed,
            holders == 1,
            "remove gave {removed} with {holders} levels matching"
        );
        if removed {
            assert_eq!(self.c.count(key), before.c.count(key) - 1);
        } else {
            assert_eq!(*self, before, "a refused removal changed the chain");
        }
        removed
    }

    fn remove_absent(&mut self, key: &[u8]) -> bool {
        self.c.remove(key)
    }

    fn check(&self, _: &[&[u8]]) {
        let s = &self.setup;
        let levels = self.c.levels();
        if s.max_levels != 0 {
            assert!(
                levels <= s.max_levels as usize,
                "{levels} levels, past the limit"
            );
        }
        if s.max_bytes != 0 && levels > 1 {
            // The first level is made whatever its size; every level added respects the cap.
            assert!(
                self.c.size_in_bytes() as u64 <= s.max_bytes,
                "grew past max_bytes"
            );
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
}

pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let setup = setup(&mut input);
    let Some(mut s) = Chain::new(&setup) else {
        return;
    };
    let keys = all_keys();
    let mut model = Model::default();
    check_model(&s, &model, &keys);
    drive(&mut s, &mut model, &mut input, &keys, usize::MAX);
}
