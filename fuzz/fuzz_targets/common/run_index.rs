//! The `run_index` target: a `RunIndex` (FORMAT.md §12) driven by flushes, compactions, drops,
//! lookups and round trips decoded from the input, against an exact model — each run's set of
//! keys and the runs newest first — and its file fed damaged and hostile bytes.
//!
//! After every operation: the index describes the model's runs in the model's order; every
//! run that holds a key is among the key's runs (never a false negative), which are live runs
//! in newest-first order (a subsequence of [`RunIndex::runs`]); a stale index answers every
//! run. Each error is checked against what the API documents: `add_run` is refused
//! (`InvalidConfig`, the index unchanged) for a run already described or past [`MAX_RUNS`],
//! `compact` for an empty or undescribed merged list or an `into` already described, and
//! `drop_run` answers `false` for a run it does not describe. `Full` is not documented for
//! either; the target allows it, with nothing of a refused flush's run left, only where the
//! index is known to give up: a flush at a small relocation budget (below [`FEW_KICKS`], as
//! `Config::max_kicks` documents) or into a stale index; hot keys, in any number of runs, and
//! keys listed several times in one flush never make a flush fail (a key's runs past two go to
//! its stash record; a repeat is taken once — until 2026-11-28 both did, found by this target);
//! a mpaction only where it must insert (kept keys that no merged run holds, or any in an
//! index already stale). After a failed
//! compaction the index is stale and the model keeps the merged runs beside `into` (or alone,
//! when every id was in use), as `compact` documents.
//!
//! Input: a first byte `0xFF` makes the rest a run-index file as it is, `0xFE` the rest after a
//! valid magic and version with every checksum recomputed ([`hostile`]). Otherwise three setup
//! bytes (capacity, rate and kicks, seed), then operations of two bytes `(op, arg)`, some
//! reading a byte or two more; `op % 8` picks: 0–1 flush, 2 compaction, 3 drop, 4 lookup of
//! every key, 5 round trip (owned and mapped), 6 one byte damaged or the file cut short, 7 a
//! window of the file overwritten with input bytes (checksums recomputed or not).

use super::Input;
use cuckoo_sst::{Config, Error, KeyHash, MAX_RUNS, MappedRunIndex, RunIndex, Runs};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// Operations per input: enough to describe [`MAX_RUNS`] runs and compact them.
const MAX_OPS: usize = 400;

/// Fresh keys one input flushes at most, so that an iteration stays around a millisecond.
const MAX_FRESH: u32 = 3000;

/// Numbered keys (the ones flushes draw again and again, so that a key is in several runs).
const NUMBERED: u32 = 64;

const FRESH_BASE: u32 = 1 << 20;

/// The key bytes of key number `k`: 4, 8 or 12 bytes (distinct for distinct `k`).
pub fn key_bytes(k: u32) -> Vec<u8> {
    k.to_le_bytes().repeat(1 + k as usize % 3)
}

fn h(k: u32) -> KeyHash {
    // `key_bytes(k)`, without allocating: lookups are most of an input's time.
    let (b, n) = (k.to_le_bytes(), 4 * (1 + k as usize % 3));
    let mut buf = [0; 12];
    for c in buf[..n].chunks_exact_mut(4) {
        c.copy_from_slice(&b);
    }
    KeyHash::of(&buf[..n])
}

/// What an input made happen, for the seed test (`tests/fuzz_corpus.rs`).
#[derive(Clone, Debug, Default)]
pub struct Reached {
    pub flushes: usize,
    pub compactions: usize,
    pub drops: usize,
    pub round_trips: usize,
    /// Refusals the API documents (a run described twice, past `MAX_RUNS`, bad merges).
    pub refused: usize,
    /// A flush refused with `Full` at a small relocation budget.
    pub full_few_kicks: bool,
    /// A key had runs in the stash (more than two runs).
    pub stashed: bool,
    /// A key was in a full pair's worth of runs (8) or more, all taken.
    pub key_in_eight_runs: bool,
    /// A flush listed a key more than once and was taken.
    pub listed_twice: bool,
    /// The index described `MAX_RUNS` runs.
    pub max_runs: bool,
    /// A compaction with every id in use (`into` takes the first merged run's id).
    pub compact_at_max_runs: bool,
    /// A compaction failed part-way and left the index stale.
    pub stale: bool,
    /// A damaged file opened mapped and answered a superset.
    pub damaged_mapped: bool,
    /// Bytes of the bucket table at the end, against the start.
    pub grew: bool,
}

/// A SplitMix64 seeded from the input, to draw keys.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
}

/// The model: each live run's keys, and the runs newest first.
#[derive(Default)]
struct Model {
    order: Vec<u64>,
    keys: HashMap<u64, BTreeSet<u32>>,
    next_run: u64,
    next_fresh: u32,
    /// A compaction failed part-way: the index answers every run.
    stale: bool,
    steps: usize,
    /// The relocation budget: below [`FEW_KICKS`], an insert may give up (`Full`, as
    /// `Config::max_kicks` documents) where its buckets and their neighbours are full.
    kicks: u32,
}

/// Budgets from which a flush must place its keys.
const FEW_KICKS: u32 = 50;

impl Model {
    /// The most runs one key is in (a numbered key: fresh keys are flushed once).
    fn hottest(&self) -> usize {
        let mut runs = [0usize; NUMBERED as usize];
        for keys in self.keys.values() {
            for &k in keys.range(..NUMBERED) {
                runs[k as usize] += 1;
            }
        }
        runs.into_iter().max().unwrap_or(0)
    }

    /// The merged runs of a compaction replaced by `into`, at the newest one's place.
    fn compact(&mut self, merged: &[u64], into: u64, kept: &BTreeSet<u32>) {
        let pos = self
            .order
            .iter()
            .position(|r| merged.contains(r))
            .expect("a merged run");
        self.order.insert(pos, into);
        self.order.retain(|r| !merged.contains(r));
        for r in merged {
            self.keys.remove(r);
        }
        self.keys.insert(into, kept.clone());
    }
}

/// Whether `got` is a subsequence of `runs` (live runs, newest first, none twice).
fn in_order(got: impl Iterator<Item = u64>, runs: &[u64]) -> bool {
    let mut at = runs.iter();
    got.into_iter().all(|g| at.any(|&r| r == g))
}

/// The model's checks through `lookup` (an owned or a mapped index): every key of every run
/// (with `all`, else the keys of one number class in sixteen, a different one each step) gets
/// its run, and every answer, a few absent keys' too, is a subsequence of `runs`.
fn check<'a>(model: &Model, runs: &[u64], lookup: &dyn Fn(KeyHash) -> Runs<'a>, all: bool) {
    assert_eq!(runs, &model.order[..], "the index describes other runs");
    let class = (model.steps % 16) as u32;
    for (&run, keys) in &model.keys {
        for &k in keys {
            if !all && k % 16 != class {
                continue;
            }
            let got = lookup(h(k));
            let all_got = || got.clone().collect::<Vec<_>>();
            assert!(
                got.clone().any(|r| r == run),
                "false negative: key {k} of run {run}, got {:?}",
                all_got()
            );
            assert!(
                in_order(got.clone(), runs),
                "key {k}: {:?} not in {runs:?}",
                all_got()
            );
            if model.stale {
                assert!(
                    got.clone().eq(runs.iter().copied()),
                    "a stale index answers every run, not {:?}",
                    all_got()
                );
            }
        }
    }
    for a in 0..4u32 {
        let got = lookup(h(0xF000_0000 + a + 4 * model.steps as u32));
        assert!(
            in_order(got.clone(), runs),
            "absent key: {:?}",
            got.collect::<Vec<_>>()
        );
    }
}

fn lookup_owned<'a>(index: &'a RunIndex) -> impl Fn(KeyHash) -> Runs<'a> + 'a {
    |k| index.runs_for_hash(k)
}

fn lookup_mapped<'a>(index: &'a MappedRunIndex) -> impl Fn(KeyHash) -> Runs<'a> + 'a {
    |k| index.runs_for_hash(k)
}

pub fn run(data: &[u8]) {
    run_reached(data);
}

pub fn run_reached(data: &[u8]) -> Reached {
    let mut reached = Reached::default();
    match data.first() {
        Some(0xFF) => {
            hostile(&data[1..]);
            return reached;
        }
        Some(0xFE) => {
            let mut file = b"CUCKORIX\x01\x00\x00\x00".to_vec();
            file.extend_from_slice(&data[1..]);
            resign(&mut file);
            hostile(&file);
            return reached;
        }
        _ => {}
    }
    let mut input = Input::new(data);
    let capacity = 4 * input.byte() as usize;
    let settings = input.byte();
    let fpr = [0.01, 0.001, 0.1, 0.3, 1e-5, 1e-9][settings as usize % 6];
    let kicks = [500, 50, 4, 1, 0][(settings as usize / 6) % 5];
    let seed = u64::from(input.byte());
    let config = Config::new(capacity)
        .false_positive_rate(fpr)
        .max_kicks(kicks)
        .seed(seed);
    let mut index = match RunIndex::new(config) {
        Ok(index) => index,
        // A rate whose slots, with the run ids, would be wider than 32 bits.
        Err(Error::InvalidConfig { .. }) if fpr < 1e-6 => return reached,
        Err(e) => panic!("RunIndex::new({capacity}, {fpr}, {kicks}): {e}"),
    };
    let first_size = index.size_in_bytes();
    let mut model = Model {
        kicks,
        ..Model::default()
    };
    for _ in 0..MAX_OPS {
        let Some((op, arg)) = input.op() else { break };
        model.steps += 1;
        let mut rng = Rng(u64::from(op) << 8 | u64::from(arg) | (model.steps as u64) << 16);
        match op % 8 {
            0 | 1 => flush(&mut index, &mut model, &mut reached, &mut rng, op, arg),
            2 => compact(
                &mut index,
                &mut model,
                &mut reached,
                &mut rng,
                op,
                arg,
                &mut input,
            ),
            3 => {
                if op & 0x08 != 0 || model.order.is_empty() {
                    let before = index.to_bytes();
                    assert!(!index.drop_run(model.next_run + 1000), "dropped no run");
                    assert_eq!(index.to_bytes(), before, "a refused drop changed the index");
                } else {
                    let r = model.order.remove(arg as usize % model.order.len());
                    assert!(index.drop_run(r), "run {r} is described");
                    model.keys.remove(&r);
                    reached.drops += 1;
                }
            }
            4 => {
                // Every key; and the key's bytes ask as its hash does.
                check(&model, index.runs(), &lookup_owned(&index), true);
                for k in (0..NUMBERED).chain([FRESH_BASE, FRESH_BASE + u32::from(arg)]) {
                    assert!(index.runs_for(&key_bytes(k)).eq(index.runs_for_hash(h(k))));
                }
            }
            5 => {
                reached.round_trips += 1;
                let back = round_trip(&index, &model);
                if op & 0x08 != 0 {
                    // Go on with the index read back: it must behave as the original.
                    index = back;
                }
            }
            6 => damage(&index, &model, &mut reached, op, arg, &mut input),
            _ => {
                let mut bytes = index.to_bytes();
                let at = input.u16() as usize % bytes.len();
                for (i, b) in (0..arg % 32).map(|_| input.byte()).enumerate() {
                    if let Some(x) = bytes.get_mut(at + i) {
                        *x = b;
                    }
                }
                if op & 0x08 != 0 {
                    resign(&mut bytes);
                }
                hostile(&bytes);
            }
        }
        check(&model, index.runs(), &lookup_owned(&index), false);
        assert_eq!(index.is_stale(), model.stale);
        if model.order.is_empty() {
            // Every id's entries swept out, the stash's too. (With runs, entries may
            // outnumber the model's: a split copies an entry that has no continuation bit
            // left into both halves, and a compaction with every id in use leaves the dropped
            // keys of its first run under `into`'s id.)
            assert_eq!(index.len(), 0, "entries left with no run");
        }
    }
    check(&model, index.runs(), &lookup_owned(&index), true);
    round_trip(&index, &model);
    reached.grew = index.size_in_bytes() > first_size;
    reached
}

/// A flush: a new run (or, with bit 3, a run id that may be described already) of fresh keys
/// (`arg % 16`, or with bit 6 `16·(1 + arg % 32)`), numbered keys drawn again (bits 4–5: 0, 1,
/// 3 or 8 of them) and, with bit 7, its first hashes listed twice.
fn flush(
    index: &mut RunIndex,
    model: &mut Model,
    reached: &mut Reached,
    rng: &mut Rng,
    op: u8,
    arg: u8,
) {
    let run = if op & 0x08 != 0 {
        u64::from(arg) % (model.next_run + 1)
    } else {
        model.next_run
    };
    let mut fresh = if op & 0x40 != 0 {
        16 * (1 + u32::from(arg) % 32)
    } else {
        u32::from(arg) % 16
    };
    fresh = fresh.min(MAX_FRESH - model.next_fresh);
    let mut keys: Vec<u32> = (0..fresh)
        .map(|j| FRESH_BASE + model.next_fresh + j)
        .collect();
    for _ in 0..[0, 1, 3, 8][(op as usize >> 4) & 3] {
        keys.push(rng.below(u64::from(NUMBERED)) as u32);
    }
    let mut hashes: Vec<KeyHash> = keys.iter().map(|&k| h(k)).collect();
    if op & 0x80 != 0 {
        let again: Vec<KeyHash> = hashes.iter().take(5).copied().collect();
        hashes.extend(again);
    }
    let described = model.keys.contains_key(&run);
    // The bytes, to compare after a refusal (only where one is expected: writing them costs a
    // pass over the index).
    let listed_twice = op & 0x80 != 0 && !hashes.is_empty() || {
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        sorted.windows(2).any(|w| w[0] == w[1])
    };
    let before = (described || model.order.len() == MAX_RUNS).then(|| index.to_bytes());
    match index.add_run(run, &hashes) {
        Ok(()) => {
            assert!(!described, "run {run} added twice");
            reached.listed_twice |= listed_twice;
            assert!(model.order.len() < MAX_RUNS, "more than MAX_RUNS runs");
            model.order.insert(0, run);
            model.keys.insert(run, keys.into_iter().collect());
            model.next_fresh += fresh;
            if run == model.next_run {
                model.next_run += 1;
            }
            reached.flushes += 1;
            reached.max_runs |= model.order.len() == MAX_RUNS;
            reached.stashed |= index.stashed_keys() > 0;
            reached.key_in_eight_runs |= model.hottest() >= 8;
        }
        Err(Error::InvalidConfig { .. }) => {
            assert!(
                described || model.order.len() == MAX_RUNS,
                "add_run({run}) refused with {} runs",
                model.order.len()
            );
            assert_eq!(
                Some(index.to_bytes()),
                before,
                "a refused flush changed the index"
            );
            reached.refused += 1;
        }
        Err(Error::Full) => {
            assert!(!described && model.order.len() < MAX_RUNS);
            // Allowed where the relocation budget is small (`Config::max_kicks` documents
            // `Full`), or where the index is stale and its lookups cannot show what it holds.
            // Not for hot keys nor keys listed twice. Nothing of the run stays: the checks
            // after the operation find the model's runs, the run not among them.
            assert!(
                model.stale || model.kicks < FEW_KICKS,
                "add_run({run}) of {} keys (hottest in {} runs, listed twice: {listed_twice}): \
                 Full at {} kicks",
                keys.len(),
                model.hottest(),
                model.kicks
            );
            reached.full_few_kicks |= model.kicks < FEW_KICKS;
            if run == model.next_run {
                model.next_run += 1;
            }
        }
        Err(e) => panic!("add_run({run}): {e}"),
    }
}

/// A compaction of `1 + arg % 4` runs from position `byte % (len - k + 1)` of the order
/// (adjacent, or with bit 7 every other run; bit 3 lists them oldest first), dropping a share
/// of their keys (bits 4–5: none, an eighth, half, all). With bit 6, by `arg / 4 % 4`: an
/// undescribed run among the merged, an `into` already described (both refused), kept keys no
/// merged run holds, or kept keys listed twice.
#[allow(clippy::too_many_arguments)]
fn compact(
    index: &mut RunIndex,
    model: &mut Model,
    reached: &mut Reached,
    rng: &mut Rng,
    op: u8,
    arg: u8,
    input: &mut Input<'_>,
) {
    let into = model.next_run;
    if model.order.is_empty() {
        let before = index.to_bytes();
        let refused = index.compact(&[], into, &[]);
        assert!(
            matches!(refused, Err(Error::InvalidConfig { .. })),
            "{refused:?}"
        );
        assert_eq!(
            index.to_bytes(),
            before,
            "a refused compaction changed the index"
        );
        return;
    }
    let len = model.order.len();
    let k = (1 + arg as usize % 4).min(len);
    let at = input.byte() as usize % (len - k + 1);
    let mut merged: Vec<u64> = if op & 0x80 != 0 {
        model.order[at..]
            .iter()
            .step_by(2)
            .take(k)
            .copied()
            .collect()
    } else {
        model.order[at..at + k].to_vec()
    };
    if op & 0x08 != 0 {
        merged.reverse();
    }
    let drop_share = [0, 8, 2, 1][(op as usize >> 4) & 3];
    let mut kept: BTreeSet<u32> = BTreeSet::new();
    for r in &merged {
        for &key in &model.keys[r] {
            if drop_share == 0 || rng.below(drop_share) != 0 {
                kept.insert(key);
            }
        }
    }
    let variant = if op & 0x40 != 0 { arg / 4 % 4 } else { 4 };
    let mut into = into;
    let mut foreign = false;
    let mut listed: Vec<u32> = kept.iter().copied().collect();
    match variant {
        0 => merged.push(model.next_run + 1000),
        1 => into = model.order[rng.below(len as u64) as usize],
        2 => {
            // Keys of runs not merged, or of none: the engine's list says the new run has
            // them, so the index must answer it for them.
            for _ in 0..1 + rng.below(4) {
                let key = rng.below(u64::from(NUMBERED) + 8) as u32;
                let held = merged.iter().any(|r| model.keys[r].contains(&key));
                foreign |= !held;
                if kept.insert(key) {
                    listed.push(key);
                }
            }
        }
        3 => {
            let again: Vec<u32> = listed.iter().step_by(3).copied().collect();
            listed.extend(again);
            merged.push(merged[0]);
        }
        _ => {}
    }
    let hashes: Vec<KeyHash> = listed.iter().map(|&k| h(k)).collect();
    let at_max = model.order.len() == MAX_RUNS;
    let before = (variant <= 1).then(|| index.to_bytes());
    match index.compact(&merged, into, &hashes) {
        Ok(()) => {
            assert!(variant > 1, "compact({merged:?}, {into}) accepted");
            model.compact(&merged, into, &kept);
            model.next_run += 1;
            reached.compactions += 1;
            if at_max {
                reached.compact_at_max_runs = true;
            }
        }
        Err(Error::InvalidConfig { .. }) => {
            assert!(variant <= 1, "compact({merged:?}, {into}) refused");
            assert_eq!(
                Some(index.to_bytes()),
                before,
                "a refused compaction changed the index"
            );
            reached.refused += 1;
        }
        Err(Error::Full) => {
            // Only the keys no merged run holds are inserted: keys the engine lists wrongly, or,
            // in an index already stale, keys an earlier failed compaction moved away from the
            // merged runs. The index is stale and describes `into` beside the merged runs, at
            // the newest one's place (with every id in use, the merged runs alone).
            assert!(
                foreign || model.stale,
                "compact({merged:?}, {into}): Full, every key moved in place"
            );
            // With every id in use, `into` had none of its own: the merged runs stay alone.
            if !at_max {
                let pos = model.order.iter().position(|r| merged.contains(r)).unwrap();
                model.order.insert(pos, into);
                model.keys.insert(into, kept);
            }
            model.next_run += 1;
            model.stale = true;
            reached.stale = true;
        }
        Err(e) => panic!("compact({merged:?}, {into}): {e}"),
    }
}

/// The index written and read back, owned and mapped: the same runs, counts and answers, the
/// same bytes written again, every byte verified. The owned copy, for the caller to go on with.
fn round_trip(index: &RunIndex, model: &Model) -> RunIndex {
    let bytes = index.to_bytes();
    let back = RunIndex::from_bytes(&bytes).expect("an index's own bytes read back");
    assert_eq!(
        back.to_bytes(),
        bytes,
        "read back, written again: other bytes"
    );
    let mapped = MappedRunIndex::from_shared(Arc::from(bytes.as_slice()))
        .expect("an index's own bytes open mapped");
    assert_eq!(back.runs(), index.runs());
    assert_eq!(mapped.runs(), index.runs());
    assert!(back.describes(&model.order) && mapped.describes(&model.order));
    assert_eq!((back.len(), mapped.len()), (index.len(), index.len()));
    assert_eq!(
        (back.is_stale(), mapped.is_stale()),
        (model.stale, model.stale)
    );
    assert_eq!(back.runs_digest(), index.runs_digest());
    assert_eq!(mapped.runs_digest(), RunIndex::runs_digest_of(&model.order));
    assert_eq!(back.expected_fpr(), index.expected_fpr());
    let keys = model.keys.values().flatten().copied();
    for k in keys
        .chain(0..NUMBERED + 8)
        .chain([0xF000_0000, 0xF000_0001])
    {
        let key = h(k);
        let want = index.runs_for_hash(key);
        assert!(
            want.clone().eq(back.runs_for_hash(key)),
            "key {k}: read back"
        );
        assert!(want.eq(mapped.runs_for_hash(key)), "key {k}: mapped");
    }
    mapped.verify().expect("an index's own bytes verify");
    assert!(mapped.is_verified() && mapped.health().is_whole());
    check(model, mapped.runs(), &lookup_mapped(&mapped), true);
    back
}

/// One byte of the index's file changed (by the nonzero `arg`, at an offset from the input),
/// or with bit 3 the file cut short there. Every byte is under a checksum, so the owned reader
/// refuses it; mapped, it is refused at open or answers a superset of the runs (never a false
/// negative) and `verify` names the damage. (Not in a fuzzing build, which skips checksums:
/// there the damaged file goes through [`hostile`]'s checks.)
fn damage(
    index: &RunIndex,
    model: &Model,
    reached: &mut Reached,
    op: u8,
    arg: u8,
    input: &mut Input<'_>,
) {
    let mut bytes = index.to_bytes();
    let at = input.u16() as usize % bytes.len();
    if op & 0x08 != 0 {
        bytes.truncate(at);
        assert!(RunIndex::from_bytes(&bytes).is_err(), "cut at {at}: read");
        assert!(
            MappedRunIndex::from_shared(bytes.into()).is_err(),
            "cut at {at}: opened"
        );
        return;
    }
    bytes[at] ^= arg.max(1);
    if cfg!(fuzzing) {
        // The fuzzing build's decoder skips checksum comparisons (so that the fuzzer reaches
        // the field checks behind them): damage is then what hostile bytes are.
        return hostile(&bytes);
    }
    assert!(
        RunIndex::from_bytes(&bytes).is_err(),
        "byte {at} changed: read"
    );
    if let Ok(mapped) = MappedRunIndex::from_shared(bytes.into()) {
        // The header, run table and checksum table checked at open: the damage is in the
        // buckets, and the runs are the model's.
        assert!(mapped.describes(&model.order), "byte {at}: other runs");
        check(model, mapped.runs(), &lookup_mapped(&mapped), true);
        assert!(mapped.verify().is_err(), "byte {at} changed: verified");
        // Once verify has failed, every lookup that reads the damaged chunk answers every run:
        // all of them, in a file of one chunk.
        for k in (0..NUMBERED).filter(|_| mapped.health().chunks == 1) {
            assert!(mapped.runs_for_hash(h(k)).eq(mapped.runs().iter().copied()));
        }
        reached.damaged_mapped = true;
    }
}

/// Bytes that claim to be a run-index file: the owned reader and the mapped one never panic,
/// agree (the owned reader accepts exactly what opens mapped and verifies), and answer alike.
/// (A file rewritten with its checksums recomputed may say anything: no model holds for it.)
fn hostile(bytes: &[u8]) {
    let owned = RunIndex::from_bytes(bytes);
    let mapped = MappedRunIndex::from_shared(Arc::from(bytes));
    let probe: Vec<u32> = (0..NUMBERED + 8).chain([0xF000_0000, FRESH_BASE]).collect();
    if let Ok(m) = &mapped {
        // Lookups before the full check: live runs only, in order.
        for &k in &probe {
            let got: Vec<u64> = m.runs_for_hash(h(k)).collect();
            assert!(
                in_order(got.iter().copied(), m.runs()),
                "{got:?} not in {:?}",
                m.runs()
            );
        }
        let verified = m.verify();
        assert_eq!(
            verified.is_ok(),
            owned.is_ok(),
            "mapped verify {verified:?}, owned {:?}",
            owned.as_ref().err()
        );
        for &k in &probe {
            let got: Vec<u64> = m.runs_for_hash(h(k)).collect();
            assert!(
                in_order(got.iter().copied(), m.runs()),
                "{got:?} not in {:?}",
                m.runs()
            );
            if verified.is_err() && m.health().chunks == 1 {
                assert_eq!(got, m.runs(), "a damaged chunk answers every run");
            }
        }
    } else {
        assert!(
            owned.is_err(),
            "read owned, refused mapped: {:?}",
            mapped.err()
        );
    }
    if let (Ok(o), Ok(m)) = (&owned, &mapped) {
        assert_eq!(o.runs(), m.runs());
        assert_eq!((o.len(), o.is_stale()), (m.len(), m.is_stale()));
        for &k in &probe {
            assert!(o.runs_for_hash(h(k)).eq(m.runs_for_hash(h(k))), "key {k}");
        }
        // What the crate accepted, it writes in a form it reads back, with the same answers.
        let again = RunIndex::from_bytes(&o.to_bytes()).expect("an accepted index reads back");
        for &k in &probe {
            assert!(
                o.runs_for_hash(h(k)).eq(again.runs_for_hash(h(k))),
                "key {k}"
            );
        }
    }
}

fn u32_at(b: &[u8], at: usize) -> usize {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize
}

/// Recomputes a run-index file's checksums (FORMAT.md §12.1, §6) after bytes were changed, so
/// that the field checks behind them are what must refuse it: every chunk's entry of the
/// checksum table, `checksums_crc`, `runs_crc`, `runs_digest` and `header_crc`. Fields that
/// point outside the file are left as they are.
pub fn resign(b: &mut [u8]) {
    if b.len() < 128 {
        return;
    }
    let runs = u32_at(b, 52);
    let chunks = u32_at(b, 104);
    let shift = u32::from(b[69]);
    if runs <= 64 && chunks <= b.len() / 4 {
        let run_table = 64 * runs.div_ceil(4);
        let check_table = 64 * chunks.div_ceil(16);
        let table_at = 128 + run_table;
        let region = table_at + check_table;
        if region <= b.len() {
            if (12..=24).contains(&shift) {
                let z = 1usize << shift;
                for j in 0..chunks {
                    let o = region + j * z;
                    if o >= b.len() {
                        break;
                    }
                    let mut crc = crc32fast::Hasher::new();
                    crc.update(&(o as u64).to_le_bytes());
                    crc.update(&b[o..(o + z).min(b.len())]);
                    let e = table_at + 4 * j;
                    b[e..e + 4].copy_from_slice(&crc.finalize().to_le_bytes());
                }
            }
            let crc = crc32fast::hash(&b[table_at..region]);
            b[108..112].copy_from_slice(&crc.to_le_bytes());
            let crc = if runs == 0 {
                0
            } else {
                crc32fast::hash(&b[128..table_at])
            };
            b[112..116].copy_from_slice(&crc.to_le_bytes());
            let ids: Vec<u8> = (0..runs)
                .flat_map(|k| b[128 + 16 * k..136 + 16 * k].to_vec())
                .collect();
            let digest = xxhash_rust::xxh3::xxh3_64(&ids);
            b[96..104].copy_from_slice(&digest.to_le_bytes());
        }
    }
    let crc = crc32fast::hash(&b[..124]);
    b[124..128].copy_from_slice(&crc.to_le_bytes());
}
