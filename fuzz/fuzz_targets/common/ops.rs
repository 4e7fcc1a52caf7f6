//! The `ops` target: one `CuckooFilter` in any layout the crate offers, small enough to fill,
//! and operations on it checked against the model.
//!
//! Input: five setup bytes (layout, kicks and capacity, seed), then operations of two bytes
//! each (see [`super::drive`]).

use super::{Input, Model, Subject, all_keys, check_model, drive};
use cuckoo_sst::{Config, CuckooFilter, DEFAULT_MAX_KICKS, Encoding, Result};

/// What the setup bytes chose.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Setup {
    pub encoding: Encoding,
    pub bucket_size: usize,
    pub bits: u32,
    pub max_kicks: u32,
    pub capacity: usize,
    pub seed: u64,
}

pub const KICKS: [u32; 4] = [0, 1, 10, 500];

pub fn setup(input: &mut Input<'_>) -> Setup {
    let (family, shape, sizing) = (input.byte(), input.byte(), input.byte());
    let b = [2, 4, 8][shape as usize % 3];
    let (encoding, bucket_size, bits) = match family % 3 {
        0 => (Encoding::Plain, b, [8, 16, 32][shape as usize / 3 % 3]),
        1 => (Encoding::Packed, b, 7 + (shape as u32 / 3) % 26),
        _ => (Encoding::SemiSorted, 4, 7 + shape as u32 % 26),
    };
    Setup {
        encoding,
        bucket_size,
        bits,
        max_kicks: KICKS[sizing as usize % 4],
        // 8 to 64 items: tables of a few buckets, which fill, relocate and roll back.
        capacity: 8 + (sizing as usize / 4) % 57,
        seed: input.u16() as u64,
    }
}

/// A filter with the capacity it was configured for.
#[derive(Clone, Debug, PartialEq)]
pub struct Single {
    pub f: CuckooFilter,
    pub capacity: usize,
}

impl Single {
    pub fn new(s: &Setup) -> Single {
        let config = Config::new(s.capacity)
            .encoding(s.encoding)
            .bucket_size(s.bucket_size)
            .fingerprint_bits(s.bits)
            .max_kicks(s.max_kicks)
            .seed(s.seed);
        let f = CuckooFilter::new(config).expect("every layout offered can be configured");
        assert_eq!(
            (f.encoding(), f.bucket_size(), f.fingerprint_bits()),
            (s.encoding, s.bucket_size, s.bits),
            "the filter has another layout than configured"
        );
        assert_eq!((f.max_kicks(), f.seed()), (s.max_kicks, s.seed));
        assert!(
            f.capacity() >= s.capacity,
            "fewer slots than items sized for"
        );
        Single {
            f,
            capacity: s.capacity,
        }
    }
}

impl Subject for Single {
    fn insert(&mut self, key: &[u8]) -> Result<()> {
        self.f.insert(key)
    }

    fn insert_unique(&mut self, key: &[u8]) -> Result<bool> {
        self.f.insert_unique(key)
    }

    fn contains(&self, key: &[u8]) -> bool {
        self.f.contains(key)
    }

    fn count(&self, key: &[u8]) -> usize {
        self.f.count(key)
    }

    fn contains_batch_keys(&self, keys: &[Vec<u8>], out: &mut [bool]) {
        self.f.contains_batch_keys(keys, out)
    }

    fn len(&self) -> usize {
        self.f.len()
    }

    fn is_empty(&self) -> bool {
        self.f.is_empty()
    }

    fn to_bytes(&self) -> Vec<u8> {
        self.f.to_bytes()
    }

    fn reopen(&self, bytes: &[u8]) -> Result<Single> {
        Ok(Single {
            f: CuckooFilter::from_bytes(bytes)?,
            capacity: self.capacity,
        })
    }

    fn may_insert(&self, _: &Model, _: u8) -> bool {
        true
    }

    fn check_insert(&self, before: &Single, key: &[u8], model: &Model, full: bool) {
        let b = before.f.bucket_size();
        if full {
            // `Config::new(capacity)`: inserting that many distinct keys does not fail (with
            // the default walk length; shorter walks are not promised anything).
            let promised = before.f.max_kicks() == DEFAULT_MAX_KICKS
                && model.all_distinct()
                && before.f.count(key) == 0
                && model.total() < before.capacity;
            assert!(
                !promised,
                "insert of a new distinct key failed at {} of {} items sized for",
                model.total(),
                before.capacity
            );
        } else {
            // Its two buckets hold at most 2b copies: with 2b there, no insert can succeed.
            assert!(
                before.f.count(key) < 2 * b,
                "an insert succeeded with both buckets full of the key"
            );
        }
    }

    fn remove_inserted(&mut self, key: &[u8]) -> bool {
        let before = self.f.count(key);
        assert!(self.f.remove(key), "removing an inserted key failed");
        assert_eq!(
            self.f.count(key),
            before - 1,
            "remove took other than one copy"
        );
        true
    }

    fn remove_absent(&mut self, key: &[u8]) -> bool {
        self.f.remove(key)
    }

    fn check(&self, held: &[&[u8]]) {
        let b = self.f.bucket_size();
        for key in held {
            assert!(
                self.f.count(key) <= 2 * b,
                "more than 2b copies in two buckets"
            );
        }
        assert!(self.f.len() <= self.f.capacity(), "more items than slots");
    }
}

pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let setup = setup(&mut input);
    let mut s = Single::new(&setup);
    let keys = all_keys();
    let mut model = Model::default();
    check_model(&s, &model, &keys, true);
    drive(&mut s, &mut model, &mut input, &keys, usize::MAX);
}
