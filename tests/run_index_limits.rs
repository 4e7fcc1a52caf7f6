//! Hot keys and repeated keys in a run index (issue 41). The `run_index` fuzz target found
//! on 2026-11-28 that one key's entries, one per run that holds it, all live in the key's two
//! buckets, where no split parts them: a key in `2b` = 8 runs filled its pair and a ninth flush
//! of it was refused (`Full`), hot keys in fewer runs each closed clusters of buckets that the
//! level's in-order splits did not reach in time, and a flush listing a key several times (a
//! table's versions of it) took a slot per copy. Now a key listed again in one flush is taken
//! once, and a key gets level entries for two of its runs, its other runs going to a stash
//! record (one per key, a bit per run). These tests hold the index to that: flushes of hot keys
//! are taken, whatever their number of runs, no key of any run is lost, and the stash follows
//! compactions, drops and round trips.

use cuckoo_sst::{Config, KeyHash, RunIndex};

fn h(k: u64) -> KeyHash {
    KeyHash::of(&k.to_le_bytes())
}

/// Every key of every run the model holds gets its run; the index describes the model's runs.
fn no_false_negative(index: &RunIndex, model: &[(u64, Vec<u64>)]) {
    let order: Vec<u64> = model.iter().rev().map(|r| r.0).collect();
    assert_eq!(index.runs(), &order[..]);
    for (run, keys) in model {
        for &k in keys {
            let got: Vec<u64> = index.runs_for_hash(h(k)).collect();
            assert!(got.contains(run), "key {k} of run {run}: {got:?}");
        }
    }
}

/// Runs 0 to 63 each hold the hot key and 20 keys of their own: every flush is taken (the
/// hot key's level entries stop at two runs, the stash holds the rest), the hot key answers all
/// 64 runs newest first, owned, read back and mapped; compactions and drops keep every answer,
/// including drops that take the hot key's level entries (a stash run moves to the level).
#[test]
fn a_key_in_every_run_is_indexed_and_follows_compactions_and_drops() {
    use cuckoo_sst::{MAX_RUNS, MappedRunIndex};
    let hot = 1 << 40;
    let mut index = RunIndex::new(Config::new(1_000).seed(1)).unwrap();
    let mut model: Vec<(u64, Vec<u64>)> = Vec::new();
    for run in 0..MAX_RUNS as u64 {
        let mut keys: Vec<u64> = (run * 20..run * 20 + 20).collect();
        keys.push(hot);
        let hashes: Vec<KeyHash> = keys.iter().map(|&k| h(k)).collect();
        index.add_run(run, &hashes).unwrap();
        model.push((run, keys));
        no_false_negative(&index, &model);
    }
    let all: Vec<u64> = (0..MAX_RUNS as u64).rev().collect();
    assert_eq!(index.runs_for_hash(h(hot)).collect::<Vec<_>>(), all);
    assert_eq!(index.stashed_keys(), 1);
    assert_eq!(index.len(), MAX_RUNS * 21);
    let bytes = index.to_bytes();
    let back = RunIndex::from_bytes(&bytes).unwrap();
    assert_eq!(back.to_bytes(), bytes);
    let mapped = MappedRunIndex::from_shared(bytes.into()).unwrap();
    mapped.verify().unwrap();
    assert_eq!(mapped.len(), index.len());
    assert_eq!(back.runs_for_hash(h(hot)).collect::<Vec<_>>(), all);
    assert_eq!(mapped.runs_for_hash(h(hot)).collect::<Vec<_>>(), all);
    // The oldest runs are the ones whose level entries the hot key has: dropping them moves
    // one of its stash runs into the level.
    for run in [0, 1] {
        assert!(index.drop_run(run));
        model.retain(|r| r.0 != run);
        no_false_negative(&index, &model);
        assert!(!index.is_stale());
    }
    // Ten runs merged into one, the hot key dropped by the compaction, then kept by another.
    let merged: Vec<u64> = (10..20).collect();
    let kept: Vec<u64> = model
        .iter()
        .filter(|r| merged.contains(&r.0))
        .flat_map(|r| r.1.iter().copied().filter(|&k| k != hot))
        .collect();
    index
        .compact(
            &merged,
            100,
            &kept.iter().map(|&k| h(k)).collect::<Vec<_>>(),
        )
        .unwrap();
    let at = model.iter().position(|r| merged.contains(&r.0)).unwrap();
    model.retain(|r| !merged.contains(&r.0));
    model.insert(at, (100, kept));
    no_false_negative(&index, &model);
    assert!(!index.runs_for_hash(h(hot)).any(|r| r == 100));
    let merged: Vec<u64> = (30..50).collect();
    let mut kept: Vec<u64> = model
        .iter()
        .filter(|r| merged.contains(&r.0))
        .flat_map(|r| r.1.clone())
        .collect();
    kept.sort_unstable();
    kept.dedup();
    index
        .compact(
            &merged,
            101,
            &kept.iter().map(|&k| h(k)).collect::<Vec<_>>(),
        )
        .unwrap();
    let at = model.iter().position(|r| merged.contains(&r.0)).unwrap();
    model.retain(|r| !merged.contains(&r.0));
    model.insert(at, (101, kept));
    no_false_negative(&index, &model);
    let entries: usize = model.iter().map(|r| r.1.len()).sum();
    assert!(index.len() <= entries, "{} for {entries}", index.len());
    // Every run but the last dropped: the hot key ends in one run, found there.
    let left: Vec<u64> = index.runs().to_vec();
    for &run in &left[1..] {
        assert!(index.drop_run(run));
        model.retain(|r| r.0 != run);
        no_false_negative(&index, &model);
    }
    assert_eq!(index.stashed_keys(), 0);
    let bytes = index.to_bytes();
    let mapped = MappedRunIndex::from_shared(bytes.into()).unwrap();
    mapped.verify().unwrap();
    assert_eq!(
        mapped.runs_for_hash(h(hot)).collect::<Vec<_>>(),
        index.runs_for_hash(h(hot)).collect::<Vec<_>>()
    );
}

#[test]
fn a_key_in_sixteen_runs_is_indexed() {
    let mut index = RunIndex::new(Config::new(1_000).seed(1)).unwrap();
    for run in 0..16u64 {
        index.add_run(run, &[h(1 << 40), h(run)]).unwrap();
    }
    assert_eq!(index.runs_for_hash(h(1 << 40)).count(), 16);
}

/// Hot keys: flushes of 8 keys drawn from 64, and 14 keys of their own, at the default
/// relocation budget, into an index sized for 8 entries (a flush was refused here while no key
/// was in 8 runs, before the stash): every flush is taken and no key is lost.
#[test]
fn hot_keys_drawn_from_sixty_four_never_refuse_a_flush() {
    let mut index = RunIndex::new(Config::new(8).seed(17)).unwrap();
    let mut model: Vec<(u64, Vec<u64>)> = Vec::new();
    let mut state = 41u64;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for run in 0..60u64 {
        let mut keys: Vec<u64> = (0..14).map(|j| (1 << 32) + run * 14 + j).collect();
        keys.extend((0..8).map(|_| next() % 64));
        keys.sort_unstable();
        keys.dedup();
        let hashes: Vec<KeyHash> = keys.iter().map(|&k| h(k)).collect();
        index
            .add_run(run, &hashes)
            .unwrap_or_else(|e| panic!("run {run}: {e}"));
        model.push((run, keys));
        no_false_negative(&index, &model);
    }
    assert!(index.stashed_keys() > 0);
}

/// Flushes whose hash lists name five keys five times each — what a `FilterBuilder` is given
/// when a table holds several versions of a key — take the keys once: the index holds as many
/// entries as one given each key once, and answers the same. (Each copy took a slot before,
/// and the 19th flush was refused: found by the run_index fuzz target, `seed-v4-be62edccd1b9`.)
#[test]
fn flushes_listing_keys_several_times_are_taken_as_if_listed_once() {
    let mut index = RunIndex::new(Config::new(1_000).seed(1)).unwrap();
    let mut once = RunIndex::new(Config::new(1_000).seed(1)).unwrap();
    let mut model: Vec<(u64, Vec<u64>)> = Vec::new();
    for run in 0..40u64 {
        let keys: Vec<u64> = (run * 50..run * 50 + 50).collect();
        let unique: Vec<KeyHash> = keys.iter().map(|&k| h(k)).collect();
        once.add_run(run, &unique).unwrap();
        let mut hashes = unique.clone();
        for _ in 1..5 {
            hashes.extend(keys[..5].iter().map(|&k| h(k)));
        }
        index.add_run(run, &hashes).unwrap();
        model.push((run, keys));
        no_false_negative(&index, &model);
        assert_eq!(index.len(), once.len(), "run {run}");
    }
}
