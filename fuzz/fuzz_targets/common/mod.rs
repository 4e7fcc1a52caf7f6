//! The checks of every fuzz target, as plain functions of the input bytes. The cargo-fuzz
//! targets call them, and `tests/fuzz_corpus.rs` in the library replays the committed corpora
//! (and inputs from a fixed-seed generator) through them under plain `cargo test`, on stable,
//! so that the checks run on every CI run and not only where cargo-fuzz is installed.
//!
//! Operation sequences are checked against a model, the multiset of keys inserted: no false
//! negative, `count` at least the model's, `len` exact, and a refused insert changes nothing.
//! A chain also takes fresh keys in bulk (thousands of them, so that it grows far: see
//! [`drive`]), which the model holds as well.

pub mod chain;
pub mod compact;
pub mod from_bytes;
pub mod ops;
pub mod roundtrip;
pub mod run_index;
/// The reader written from FORMAT.md alone, and FORMAT.md §8's growth policy, shared with the
/// library's tests.
#[path = "../../../tests/common/spec.rs"]
pub mod spec;

use cuckoo_sst::{Error, Result};

/// The input, read from the front. Past its end every byte reads as 0, so that every input,
/// the empty one included, describes a complete setup.
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Input<'a> {
        Input { data }
    }

    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    /// Two bytes, little-endian.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }

    /// The next operation, `(op, key number)`, while two bytes are left.
    pub fn op(&mut self) -> Option<(u8, u8)> {
        match *self.data {
            [op, k, ..] => {
                self.data = &self.data[2..];
                Some((op, k))
            }
            _ => None,
        }
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        self.data
    }
}

/// Key number `k`: the byte `k` repeated 1, 5, 9, 13 or 17 times, so that keys of several
/// lengths (XXH3 hashes each length class differently) are used; distinct for distinct `k`.
pub fn key(k: u8) -> Vec<u8> {
    vec![k; 1 + 4 * (k as usize % 5)]
}

/// All 256 keys, indexed by key number: what operations name, and what readers are probed with
/// (present and absent ones).
pub fn all_keys() -> Vec<Vec<u8>> {
    (0..=255).map(key).collect()
}

/// Fresh key `j`: `b"bulk"` and `j`, 8 bytes (a length no numbered key has, so distinct from
/// them). A subject that takes fresh keys ([`Subject::insert_fresh`]) gets each once, in order.
pub fn fresh_key(j: usize) -> Vec<u8> {
    let mut k = b"bulk".to_vec();
    k.extend_from_slice(&(j as u32).to_le_bytes());
    k
}

/// The most fresh keys one input inserts: enough for a level to grow from 2 buckets past 512
/// (at the default 1 % its first keys' entries then have no continuation bits left, and
/// splits copy them), few enough that thousands of inputs replay in seconds.
pub const MAX_FRESH: usize = 2048;

/// The multiset of keys inserted and not removed: copies of each numbered key, and which fresh
/// keys are held (each was inserted once).
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    counts: [usize; 256],
    total: usize,
    fresh: Vec<bool>,
    fresh_held: usize,
    /// Operations run: which fresh keys [`check_model`] looks up after each (a sixteenth).
    steps: usize,
}

impl Default for Model {
    fn default() -> Model {
        Model {
            counts: [0; 256],
            total: 0,
            fresh: Vec::new(),
            fresh_held: 0,
            steps: 0,
        }
    }
}

impl Model {
    pub fn count(&self, k: u8) -> usize {
        self.counts[k as usize]
    }

    /// Keys held, copies counted: numbered and fresh.
    pub fn total(&self) -> usize {
        self.total + self.fresh_held
    }

    /// Fresh keys inserted so far (held or removed since): the next one is `fresh_key` of it.
    pub fn fresh_len(&self) -> usize {
        self.fresh.len()
    }

    pub fn fresh_held(&self, j: usize) -> bool {
        self.fresh[j]
    }

    pub fn add_fresh(&mut self) {
        self.fresh.push(true);
        self.fresh_held += 1;
    }

    /// Fresh key `fresh_len()` was offered and refused: the next one is offered next.
    pub fn skip_fresh(&mut self) {
        self.fresh.push(false);
    }

    fn take_fresh(&mut self, j: usize) {
        assert!(self.fresh[j]);
        self.fresh[j] = false;
        self.fresh_held -= 1;
    }

    /// Whether every numbered key was inserted at most once.
    pub fn all_distinct(&self) -> bool {
        self.counts.iter().all(|&n| n <= 1)
    }

    fn add(&mut self, k: u8) {
        self.counts[k as usize] += 1;
        self.total += 1;
    }

    fn take(&mut self, k: u8) {
        self.counts[k as usize] -= 1;
        self.total -= 1;
    }

    /// `(key number, copies)` of every key held.
    pub fn held(&self) -> impl Iterator<Item = (u8, usize)> + '_ {
        (0..=255u8)
            .map(|k| (k, self.count(k)))
            .filter(|&(_, n)| n > 0)
    }
}

/// A filter under test: a single [`cuckoo_sst::CuckooFilter`] or a chain, with the settings
/// it was made with (which decide when it may refuse an insert or a removal).
pub trait Subject: Clone + PartialEq + std::fmt::Debug {
    fn insert(&mut self, key: &[u8]) -> Result<()>;
    fn insert_unique(&mut self, key: &[u8]) -> Result<bool>;
    fn contains(&self, key: &[u8]) -> bool;
    fn count(&self, key: &[u8]) -> usize;
    fn contains_batch_keys(&self, keys: &[Vec<u8>], out: &mut [bool]);
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool;
    fn to_bytes(&self) -> Vec<u8>;
    /// The filter read back from `bytes`, with this one's settings.
    fn reopen(&self, bytes: &[u8]) -> Result<Self>;
    /// Whether the target inserts key `k` once more (a chain forced to grow by copies of one
    /// key would grow without bound, so copies are capped where no limit bounds its memory).
    fn may_insert(&self, model: &Model, k: u8) -> bool;
    /// After an insert of `key` (not held by the model more than `model` says) into `before`
    /// gave `Ok` (`full == false`) or `Err(Full)`: whether it was allowed to.
    fn check_insert(&self, before: &Self, key: &[u8], model: &Model, full: bool);
    /// After an insert of `key` into `self` (unchanged by it) gave `Err(TooManyCopies)`:
    /// whether it was allowed to (a single filter never returns it).
    fn check_copies(&self, key: &[u8]) {
        panic!("TooManyCopies from a filter that never refuses copies: {key:?}");
    }
    /// Removes `key`, which the model holds, checking when the removal may be refused; whether
    /// a copy was removed.
    fn remove_inserted(&mut self, key: &[u8]) -> bool;
    /// Removes `key`, which the model does not hold and which the filter reports absent.
    fn remove_absent(&mut self, key: &[u8]) -> bool;
    /// Invariants of the filter's own, beyond the model's; `held` are the numbered keys the
    /// model holds.
    fn check(&self, held: &[&[u8]]);
    /// Whether it takes fresh keys in bulk ([`insert_fresh`](Self::insert_fresh)).
    fn takes_fresh_keys(&self) -> bool {
        false
    }
    /// Inserts up to `n` fresh keys (`fresh_key(model.fresh_len())` on), each checked and
    /// added to the model, stopping at the first refusal or at [`MAX_FRESH`].
    fn insert_fresh(&mut self, _model: &mut Model, _n: usize) {
        unreachable!("only a subject that takes fresh keys is given them")
    }
}

/// Runs up to `max_ops` operations from `input` on `s`, checking each against `model`.
///
/// An operation is `(op, k)`: by `op % 8`, 0 to 2 insert numbered key `k` (bit 5 of `op`:
/// 12 times in a row, a hot key), 3 inserts it unless present, 4 and 5 remove it, 6 looks up
/// a batch of `k` keys, 7 writes the filter and reads it back. For a subject that takes fresh
/// keys, bit 6 of `op` makes 6 insert `4·(k + 1)` fresh keys, and 4 and 5 remove fresh key
/// `k/256` of the way through those inserted so far.
pub fn drive<S: Subject>(
    s: &mut S,
    model: &mut Model,
    input: &mut Input<'_>,
    keys: &[Vec<u8>],
    max_ops: usize,
) {
    for _ in 0..max_ops {
        let Some((op, k)) = input.op() else { break };
        model.steps += 1;
        let key = &keys[k as usize];
        let fresh = op & 0x40 != 0 && s.takes_fresh_keys();
        match op % 8 {
            6 if fresh => {
                s.insert_fresh(model, 4 * (k as usize + 1));
            }
            4 | 5 if fresh && model.fresh_len() > 0 => {
                let j = k as usize * model.fresh_len() / 256;
                let key = fresh_key(j);
                if model.fresh_held(j) {
                    if s.remove_inserted(&key) {
                        model.take_fresh(j);
                    }
                } else if !s.contains(&key) {
                    let before = s.clone();
                    assert!(!s.remove_absent(&key), "removed an absent fresh key");
                    assert_eq!(*s, before, "removing an absent key changed the filter");
                }
            }
            0..=2 => {
                let times = if op & 0x20 != 0 { 12 } else { 1 };
                for _ in 0..times {
                    if !s.may_insert(model, k) {
                        break;
                    }
                    let before = s.clone();
                    match s.insert(key) {
                        Ok(()) => {
                            s.check_insert(&before, key, model, false);
                            model.add(k);
                        }
                        Err(Error::Full) => {
                            assert_eq!(*s, before, "a refused insert changed the filter");
                            s.check_insert(&before, key, model, true);
                        }
                        Err(Error::TooManyCopies) => {
                            assert_eq!(*s, before, "a refused copy changed the filter");
                            s.check_copies(key);
                        }
                        Err(e) => panic!("insert: {e}"),
                    }
                }
            }
            3 => {
                if !s.may_insert(model, k) {
                    continue;
                }
                let before = s.clone();
                let present = s.contains(key);
                // A key the model holds is present, so it is never added twice.
                assert!(present || model.count(k) == 0, "false negative");
                match s.insert_unique(key) {
                    Ok(true) => {
                        assert!(!present, "insert_unique added a key already present");
                        s.check_insert(&before, key, model, false);
                        model.add(k);
                    }
                    Ok(false) => {
                        assert!(present, "insert_unique refused an absent key");
                        assert_eq!(*s, before, "insert_unique(present key) changed the filter");
                    }
                    Err(Error::Full) => {
                        assert!(!present, "insert_unique(present key) tried to insert");
                        assert_eq!(*s, before, "a refused insert changed the filter");
                        s.check_insert(&before, key, model, true);
                    }
                    // An absent key's buckets are never full of entries answering for it.
                    Err(e) => panic!("insert_unique: {e}"),
                }
            }
            4 | 5 => {
                if model.count(k) > 0 {
                    if s.remove_inserted(key) {
                        model.take(k);
                    }
                } else if !s.contains(key) {
                    let before = s.clone();
                    assert!(!s.remove_absent(key), "removed an absent key");
                    assert_eq!(*s, before, "removing an absent key changed the filter");
                }
                // Else a false positive: removing a key never inserted may delete another
                // key's fingerprint (documented misuse), so it is not done.
            }
            6 => {
                // A batch of `k` keys (around and across the batch group of 16) answers as
                // single lookups do.
                let batch = &keys[..k as usize];
                let mut out = vec![op & 0x80 != 0; batch.len()];
                s.contains_batch_keys(batch, &mut out);
                for (key, &found) in batch.iter().zip(&out) {
                    assert_eq!(found, s.contains(key), "batch and single lookup differ");
                }
            }
            _ => {
                let bytes = s.to_bytes();
                let back = s.reopen(&bytes).expect("a filter's own bytes read back");
                assert_eq!(back, *s, "from_bytes(to_bytes) differs");
                assert_eq!(
                    back.to_bytes(),
                    bytes,
                    "the bytes read back write back unchanged"
                );
                // Carry on with the copy read back: it must behave as the original.
                *s = back;
            }
        }
        check_model(s, model, keys, false);
    }
    check_model(s, model, keys, true);
}

/// No false negative, `count` at least the model's, `len` exact. Every numbered key the model
/// holds is looked up; fresh keys all of them with `all_fresh` (after the last operation),
/// else a sixteenth, a different one after each operation.
pub fn check_model<S: Subject>(s: &S, model: &Model, keys: &[Vec<u8>], all_fresh: bool) {
    assert_eq!(s.len(), model.total(), "len differs from the model");
    assert_eq!(s.is_empty(), model.total() == 0);
    let mut held = Vec::new();
    for (k, n) in model.held() {
        let key = &keys[k as usize];
        assert!(s.contains(key), "false negative: key {k} ({n} copies)");
        let c = s.count(key);
        assert!(c >= n, "count {c} of key {k} below the {n} copies inserted");
        held.push(key.as_slice());
    }
    let start = if all_fresh { 0 } else { model.steps % 16 };
    let step = if all_fresh { 1 } else { 16 };
    for j in (start..model.fresh_len()).step_by(step) {
        if model.fresh_held(j) {
            assert!(s.contains(&fresh_key(j)), "false negative: fresh key {j}");
        }
    }
    s.check(&held);
}
