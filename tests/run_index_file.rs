//! The run index's file (FORMAT.md §12): written and read back with the same answers, owned
//! and mapped; the golden file read and written byte for byte; every damage refused or
//! answered with a superset of the runs (never a false negative); truncations refused.

use cuckoo_sst::{Config, Error, KeyHash, MappedRunIndex, RunIndex};
use std::collections::HashMap;

const GOLDEN: &[u8] = include_bytes!("data/golden-run-index-v1.ckri");
const GOLDEN_STASH: &[u8] = include_bytes!("data/golden-run-index-v1-stash.ckri");

fn h(i: u64) -> KeyHash {
    KeyHash::of(&i.to_le_bytes())
}

/// An index built by flushes, a compaction and a drop, and each run's keys (by the model).
fn built(capacity: usize, per_run: u64, seed: u64) -> (RunIndex, HashMap<u64, Vec<u64>>) {
    let mut index = RunIndex::new(Config::new(capacity).seed(seed)).unwrap();
    let mut model: HashMap<u64, Vec<u64>> = HashMap::new();
    for run in 0..6u64 {
        // Each run: new keys, and a few of the previous run's again (a key in two runs).
        let mut keys: Vec<u64> = (run * per_run..(run + 1) * per_run).collect();
        if run > 0 {
            keys.extend((run - 1) * per_run..(run - 1) * per_run + per_run / 10);
        }
        let hashes: Vec<KeyHash> = keys.iter().map(|&k| h(k)).collect();
        index.add_run(100 + run, &hashes).unwrap();
        model.insert(100 + run, keys);
    }
    // Runs 101 and 102 merged into 200, dropping every third key; run 104 dropped.
    let mut kept: Vec<u64> = model[&101].iter().chain(&model[&102]).copied().collect();
    kept.sort_unstable();
    kept.dedup();
    kept.retain(|k| k % 3 != 0);
    let hashes: Vec<KeyHash> = kept.iter().map(|&k| h(k)).collect();
    index.compact(&[101, 102], 200, &hashes).unwrap();
    model.remove(&101);
    model.remove(&102);
    model.insert(200, kept);
    assert!(index.drop_run(104));
    model.remove(&104);
    assert_eq!(index.runs(), &[105, 103, 200, 100]);
    (index, model)
}

/// Every key of every run gets its run from `lookup`.
fn no_false_negative(
    model: &HashMap<u64, Vec<u64>>,
    lookup: impl Fn(KeyHash) -> Vec<u64>,
) -> Result<(), String> {
    for (run, keys) in model {
        for &k in keys {
            let got = lookup(h(k));
            if !got.contains(run) {
                return Err(format!("key {k} of run {run}: {got:?}"));
            }
        }
    }
    Ok(())
}

#[test]
fn a_saved_index_reads_back_with_the_same_answers_owned_and_mapped() {
    let (index, model) = built(3000, 400, 7);
    let bytes = index.to_bytes();
    let owned = RunIndex::from_bytes(&bytes).unwrap();
    assert_eq!(owned.to_bytes(), bytes, "written again byte for byte");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.index");
    index.save(&path).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    let mapped = MappedRunIndex::open(&path).unwrap();
    let shared = MappedRunIndex::from_shared(bytes.clone().into()).unwrap();
    assert_eq!(mapped.as_bytes(), &bytes[..]);
    for m in [&mapped, &shared] {
        assert_eq!(m.runs(), index.runs());
        assert!(m.describes(&[105, 103, 200, 100]));
        assert!(!m.describes(&[105, 103, 200]) && !m.describes(&[103, 105, 200, 100]));
        assert_eq!(m.runs_digest(), index.runs_digest());
        assert_eq!(m.len(), index.len());
        assert_eq!(m.expected_fpr(), index.expected_fpr());
        assert!(!m.is_stale());
    }
    assert!(owned.describes(index.runs()));
    // Present keys and 50 000 absent ones: the same runs, in the same order, from all four.
    let mut absent_hits = 0;
    for i in 0..60_000u64 {
        let key = if i < 10_000 { i % 2400 } else { i + (1 << 40) };
        let want: Vec<u64> = index.runs_for_hash(h(key)).collect();
        assert_eq!(owned.runs_for_hash(h(key)).collect::<Vec<_>>(), want);
        assert_eq!(mapped.runs_for_hash(h(key)).collect::<Vec<_>>(), want);
        assert_eq!(shared.runs_for_hash(h(key)).collect::<Vec<_>>(), want);
        if i >= 10_000 && !want.is_empty() {
            absent_hits += 1;
        }
    }
    // The lookups checked the chunks they read; then everything is verified.
    assert!(mapped.health().verified >= 1);
    mapped.verify().unwrap();
    assert!(mapped.is_verified() && mapped.health().is_whole());
    no_false_negative(&model, |k| mapped.runs_for_hash(k).collect()).unwrap();
    // The absent keys that got a run stay near the bound (not every run: no fallback).
    assert!(
        (absent_hits as f64) < 50_000.0 * (index.expected_fpr() * 2.0 + 0.002),
        "{absent_hits}"
    );
    // The owned index read back goes on: a flush, then the same bytes as the original's.
    let (mut a, mut b) = (index.clone(), owned);
    let more: Vec<KeyHash> = (9_000..9_500).map(h).collect();
    a.add_run(300, &more).unwrap();
    b.add_run(300, &more).unwrap();
    assert_eq!(a.to_bytes(), b.to_bytes());
}

#[test]
fn a_stale_flag_makes_every_lookup_answer_every_run() {
    let (index, _) = built(500, 50, 1);
    let mut bytes = index.to_bytes();
    bytes[24] |= 1; // flags: stale
    let crc = crc32fast::hash(&bytes[..124]);
    bytes[124..128].copy_from_slice(&crc.to_le_bytes());
    let owned = RunIndex::from_bytes(&bytes).unwrap();
    let mapped = MappedRunIndex::from_shared(bytes.clone().into()).unwrap();
    assert!(owned.is_stale() && mapped.is_stale());
    for i in 0..100u64 {
        let key = h(i + (1 << 40));
        assert_eq!(owned.runs_for_hash(key).collect::<Vec<_>>(), index.runs());
        assert_eq!(mapped.runs_for_hash(key).collect::<Vec<_>>(), index.runs());
    }
    assert_eq!(owned.to_bytes(), bytes);
}

/// Every single-byte change of a small file is refused by `from_bytes` (every byte is under
/// a checksum); mapped, it is refused at open (header, run table, checksum table) or every
/// lookup answers a superset of the right runs and `verify` names the damage.
#[test]
fn every_single_byte_change_is_refused_or_answers_a_superset() {
    let (index, model) = built(300, 40, 3);
    let bytes = index.to_bytes();
    assert!(bytes.len() <= 4096, "{} bytes", bytes.len());
    let (mut refused_at_open, mut lazily) = (0, 0);
    for at in 0..bytes.len() {
        for x in [0x01u8, 0x80, 0xFF] {
            let mut bad = bytes.clone();
            bad[at] ^= x;
            assert!(
                RunIndex::from_bytes(&bad).is_err(),
                "byte {at} ^ {x:#x} was accepted"
            );
            match MappedRunIndex::from_shared(bad.into()) {
                Err(_) => refused_at_open += 1,
                Ok(m) => {
                    lazily += 1;
                    if let Err(e) = no_false_negative(&model, |k| m.runs_for_hash(k).collect()) {
                        panic!("byte {at} ^ {x:#x}: {e}");
                    }
                    assert!(m.verify().is_err(), "byte {at} ^ {x:#x} verified");
                    assert!(m.health().damaged >= 1 || m.health().rejected);
                }
            }
        }
    }
    // Both paths were taken: damage to the header and tables, and to the buckets.
    assert!(
        refused_at_open > 0 && lazily > 0,
        "{refused_at_open} {lazily}"
    );
}

#[test]
fn every_truncation_and_extension_is_refused() {
    let (index, _) = built(300, 40, 3);
    let bytes = index.to_bytes();
    for len in 0..bytes.len() {
        let cut = &bytes[..len];
        let e = RunIndex::from_bytes(cut).unwrap_err();
        assert!(
            matches!(e, Error::Truncated { .. }),
            "{len} bytes: {e:?} (a prefix of the magic is truncated, not a bad magic)"
        );
        assert!(MappedRunIndex::from_shared(cut.to_vec().into()).is_err());
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(
        RunIndex::from_bytes(&longer),
        Err(Error::TrailingBytes { .. })
    ));
    // A filter file is not an index, nor an index a filter.
    assert!(matches!(
        RunIndex::from_bytes(&cuckoo_sst::CuckooFilter::with_capacity(10).to_bytes()),
        Err(Error::BadMagic { .. })
    ));
    assert!(matches!(
        cuckoo_sst::CuckooFilter::from_bytes(&bytes),
        Err(Error::BadMagic { .. })
    ));
    assert!(matches!(
        cuckoo_sst::ScalableCuckooFilter::from_bytes(&bytes),
        Err(Error::BadMagic { .. })
    ));
}

/// A file from a newer writer is refused by name; one whose header says another number of
/// buckets than its bytes hold (checksums recomputed) is refused before anything is allocated
/// for it (`tests/decode_alloc.rs` measures that).
#[test]
fn newer_versions_and_lying_lengths_are_refused() {
    let (index, _) = built(300, 40, 3);
    let bytes = index.to_bytes();
    let with = |at: usize, value: &[u8]| {
        let mut b = bytes.clone();
        b[at..at + value.len()].copy_from_slice(value);
        let crc = crc32fast::hash(&b[..124]);
        b[124..128].copy_from_slice(&crc.to_le_bytes());
        b
    };
    match RunIndex::from_bytes(&with(8, &2u32.to_le_bytes())) {
        Err(Error::UnsupportedVersion { found, supported }) => {
            assert_eq!((found, supported), (2, 1))
        }
        other => panic!("{other:?}"),
    }
    for m in [3u64, 1 << 20, 1 << 32, (1 << 32) + 1, u64::MAX] {
        let e = RunIndex::from_bytes(&with(56, &m.to_le_bytes())).unwrap_err();
        assert!(matches!(e, Error::Corrupt { .. }), "{m} buckets: {e:?}");
    }
    // The file_len field matching a lying bucket count: the file is too short.
    let mut b = with(56, &(1u64 << 32).to_le_bytes());
    let e = RunIndex::from_bytes(&b).unwrap_err();
    assert!(
        e.to_string().contains("file_len") || e.to_string().contains("chunk"),
        "{e}"
    );
    // Semi-sorted buckets of 4 (the index's layout): 4w − 4 bits a bucket, 16 bytes of slack.
    assert_eq!((bytes[64], bytes[66]), (4, 2));
    let bucket_bits = 4 * u64::from(bytes[65]) - 4;
    let region = (((1u64 << 32) * bucket_bits).div_ceil(8) + 16).next_multiple_of(64);
    let chunks = region.div_ceil(1 << 16);
    b[104..108].copy_from_slice(&(chunks as u32).to_le_bytes());
    let runs_len = u32::from_le_bytes(bytes[52..56].try_into().unwrap()) as u64 * 16;
    let len = 128 + runs_len.next_multiple_of(64) + (4 * chunks).next_multiple_of(64) + region;
    b[16..24].copy_from_slice(&len.to_le_bytes());
    let crc = crc32fast::hash(&b[..124]);
    b[124..128].copy_from_slice(&crc.to_le_bytes());
    match RunIndex::from_bytes(&b) {
        Err(Error::Truncated { expected, found }) => {
            assert_eq!((expected, found), (len, bytes.len() as u64))
        }
        other => panic!("{other:?}"),
    }
}

/// The golden file (FORMAT.md §12.5): written by [`write_golden`], read by every later
/// version of the crate with the same runs and answers, and written again byte for byte.
#[test]
fn the_golden_run_index_reads_with_its_answers_and_writes_byte_for_byte() {
    let index = RunIndex::from_bytes(GOLDEN).unwrap();
    assert_eq!(index.to_bytes(), GOLDEN);
    assert_eq!(index.runs(), &[15, 13, 10]);
    assert_eq!(index.runs_digest(), RunIndex::runs_digest_of(&[15, 13, 10]));
    let mapped = MappedRunIndex::from_shared(GOLDEN.into()).unwrap();
    mapped.verify().unwrap();
    let key = |i: u32| format!("gri-{i:05}");
    // Run 10: keys 0..40; run 11 (dropped): 40..60; run 13, the compaction of runs 12
    // (60..90 and 0..5 again) and 14 (90..100), keeps 60..80 and 90..100; run 15: 100..120.
    let want = |i: u32| -> Vec<u64> {
        let mut runs = Vec::new();
        if (100..120).contains(&i) {
            runs.push(15);
        }
        if (60..80).contains(&i) || (90..100).contains(&i) {
            runs.push(13);
        }
        if i < 40 {
            runs.push(10);
        }
        runs
    };
    for i in 0..120u32 {
        let k = key(i);
        let got: Vec<u64> = index.runs_for(k.as_bytes()).collect();
        for r in want(i) {
            assert!(got.contains(&r), "{k}: {got:?}");
        }
        assert!(got.iter().all(|r| [15, 13, 10].contains(r)), "{k}: {got:?}");
        assert_eq!(mapped.runs_for(k.as_bytes()).collect::<Vec<_>>(), got);
    }
    let fp = (0..10_000u32)
        .filter(|i| !index.runs_for(format!("absent-{i}").as_bytes()).is_empty())
        .count();
    assert!(fp < 300, "{fp}");
}

/// The program that wrote `tests/data/golden-run-index-v1.ckri` (to cargo's scratch
/// directory, never over the golden file): `cargo test --test run_index_file -- --ignored
/// --nocapture write_golden` prints where.
#[test]
#[ignore]
fn write_golden() {
    let key = |i: u32| KeyHash::of(format!("gri-{i:05}").as_bytes());
    let mut index = RunIndex::new(Config::new(64).seed(2026)).unwrap();
    index
        .add_run(10, &(0..40).map(key).collect::<Vec<_>>())
        .unwrap();
    index
        .add_run(11, &(40..60).map(key).collect::<Vec<_>>())
        .unwrap();
    let twelve: Vec<KeyHash> = (60..90).chain(0..5).map(key).collect();
    index.add_run(12, &twelve).unwrap();
    index
        .add_run(14, &(90..100).map(key).collect::<Vec<_>>())
        .unwrap();
    assert!(index.drop_run(11));
    let kept: Vec<KeyHash> = (60..80).chain(90..100).map(key).collect();
    index.compact(&[12, 14], 13, &kept).unwrap();
    index
        .add_run(15, &(100..120).map(key).collect::<Vec<_>>())
        .unwrap();
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("golden-run-index-v1.ckri");
    index.save(&path).unwrap();
    println!("{}", path.display());
}

/// The runs of the stash golden file ([`write_golden_stash`]): runs 20 to 25 flushed, each
/// with the hot keys 0..3 and 30 keys of its own (keys of run `r`: `r·100 .. r·100 + 30`), run
/// 22 dropped, runs 23 and 24 compacted into 26 keeping everything; newest first.
fn stash_golden_runs() -> (Vec<u64>, Vec<(u64, Vec<u32>)>) {
    let order = vec![25, 26, 21, 20];
    let own = |r: u32| (r * 100..r * 100 + 30).collect::<Vec<u32>>();
    let mut holds = vec![];
    for (run, from) in [
        (25u64, vec![25]),
        (26, vec![23, 24]),
        (21, vec![21]),
        (20, vec![20]),
    ] {
        let mut keys: Vec<u32> = (0..3).collect();
        for r in from {
            keys.extend(own(r));
        }
        holds.push((run, keys));
    }
    (order, holds)
}

/// The stash golden file (FORMAT.md §12.2's stash table, with records): read by every later
/// version with the same runs and answers (the hot keys in every run, newest first), and
/// written again byte for byte.
#[test]
fn the_stash_golden_run_index_reads_with_its_answers_and_writes_byte_for_byte() {
    let index = RunIndex::from_bytes(GOLDEN_STASH).unwrap();
    assert_eq!(index.to_bytes(), GOLDEN_STASH);
    assert!(index.stashed_keys() >= 3, "{}", index.stashed_keys());
    let (order, holds) = stash_golden_runs();
    assert_eq!(index.runs(), &order[..]);
    let mapped = MappedRunIndex::from_shared(GOLDEN_STASH.into()).unwrap();
    mapped.verify().unwrap();
    let key = |i: u32| format!("grs-{i:05}");
    for hot in 0..3 {
        let k = key(hot);
        assert_eq!(
            index.runs_for(k.as_bytes()).collect::<Vec<_>>(),
            order,
            "{k}"
        );
        assert_eq!(
            mapped.runs_for(k.as_bytes()).collect::<Vec<_>>(),
            order,
            "{k}"
        );
    }
    for (run, keys) in &holds {
        for &i in keys {
            let k = key(i);
            let got: Vec<u64> = index.runs_for(k.as_bytes()).collect();
            assert!(got.contains(run), "{k}: {got:?}");
            assert_eq!(mapped.runs_for(k.as_bytes()).collect::<Vec<_>>(), got);
        }
    }
}

/// The program that wrote `tests/data/golden-run-index-v1-stash.ckri` (to cargo's scratch
/// directory): `cargo test --test run_index_file -- --ignored --nocapture write_golden_stash`.
#[test]
#[ignore]
fn write_golden_stash() {
    let key = |i: u32| KeyHash::of(format!("grs-{i:05}").as_bytes());
    let mut index = RunIndex::new(Config::new(64).seed(2027)).unwrap();
    for r in 20..26u32 {
        let keys: Vec<KeyHash> = (0..3).chain(r * 100..r * 100 + 30).map(key).collect();
        index.add_run(u64::from(r), &keys).unwrap();
    }
    assert!(index.drop_run(22));
    let kept: Vec<KeyHash> = (0..3)
        .chain(2300..2330)
        .chain(2400..2430)
        .map(key)
        .collect();
    index.compact(&[23, 24], 26, &kept).unwrap();
    let path =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("golden-run-index-v1-stash.ckri");
    index.save(&path).unwrap();
    println!("{}", path.display());
}

/// A mapped index of several chunks opens without reading its buckets; a lookup checks the
/// chunks it reads the first time; damage in one chunk makes the lookups that read it answer
/// every run, while the others answer exactly as the owned index does.
#[test]
fn a_damaged_chunk_answers_every_run_and_the_others_answer_exactly() {
    let mut index = RunIndex::new(Config::new(200_000).seed(5)).unwrap();
    let mut model: HashMap<u64, Vec<u64>> = HashMap::new();
    for run in 0..3u64 {
        let keys: Vec<u64> = (run * 50_000..run * 50_000 + 50_000).collect();
        let hashes: Vec<KeyHash> = keys.iter().map(|&k| h(k)).collect();
        index.add_run(run, &hashes).unwrap();
        model.insert(run, keys);
    }
    let mut bytes = index.to_bytes();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.index");
    let m = MappedRunIndex::open({
        std::fs::write(&path, &bytes).unwrap();
        &path
    })
    .unwrap();
    let chunks = m.health().chunks;
    assert!(chunks >= 4, "{chunks} chunks");
    assert_eq!((m.health().verified, m.health().damaged), (0, 0));
    assert!(!m.runs_for_hash(h(7)).is_empty());
    assert!(m.health().verified >= 1 && m.health().verified <= 4);
    drop(m);

    // Damage a nonzero byte (so that some entry changes) inside chunk 2 of the bucket region,
    // which starts after the run table and the checksum table (FORMAT.md §12).
    let field = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let (runs, count) = (field(52), field(104));
    assert_eq!(count as u64, chunks);
    let region = 128 + (16 * runs).next_multiple_of(64) + (4 * count).next_multiple_of(64);
    let mut at = region + 2 * (1 << 16) + 1000;
    while bytes[at] == 0 {
        at += 1;
    }
    bytes[at] ^= 0xFF;
    std::fs::write(&path, &bytes).unwrap();
    let m = MappedRunIndex::open(&path).unwrap();
    let all = index.runs().to_vec();
    let (mut exact, mut every) = (0, 0);
    for (run, keys) in &model {
        for &k in keys {
            let got: Vec<u64> = m.runs_for_hash(h(k)).collect();
            assert!(got.contains(run), "key {k} of run {run}: {got:?}");
            let want: Vec<u64> = index.runs_for_hash(h(k)).collect();
            if got == want {
                exact += 1;
            } else {
                assert_eq!(got, all, "key {k}");
                every += 1;
            }
        }
    }
    assert!(
        every > 0 && exact > every * 3,
        "{exact} exact, {every} every run"
    );
    let health = m.health();
    assert_eq!((health.chunks, health.damaged), (chunks, 1));
    assert_eq!(health.verified, chunks - 1);
    let e = m.verify().unwrap_err();
    assert!(e.to_string().contains("chunk 2"), "{e}");
    assert!(RunIndex::from_bytes(&bytes).is_err());
}

/// Every state of a random sequence of flushes, compactions and drops is written, read back
/// (owned and mapped) byte for byte and with the same answers, and never loses a key; an
/// index read back goes on as the original does (the same bytes after the same operations).
#[test]
fn every_state_of_a_random_history_reads_back() {
    let mut index = RunIndex::new(Config::new(1000).seed(11)).unwrap();
    let mut model: HashMap<u64, Vec<u64>> = HashMap::new();
    let mut order: Vec<u64> = Vec::new();
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut below = |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let (mut next_run, mut next_key) = (1u64, 0u64);
    for step in 0..120 {
        match below(10) {
            0..6 if order.len() < 64 => {
                let n = below(300) + 1;
                let keys: Vec<u64> = (next_key..next_key + n).collect();
                next_key += n;
                let hashes: Vec<KeyHash> = keys.iter().map(|&k| h(k)).collect();
                index.add_run(next_run, &hashes).unwrap();
                model.insert(next_run, keys);
                order.insert(0, next_run);
                next_run += 1;
            }
            6..9 if order.len() >= 2 => {
                let at = below(order.len() as u64 - 1) as usize;
                let merged = order[at..at + 2].to_vec();
                let mut keys: Vec<u64> = merged.iter().flat_map(|r| model[r].clone()).collect();
                keys.retain(|k| k % 5 != 0);
                let hashes: Vec<KeyHash> = keys.iter().map(|&k| h(k)).collect();
                index.compact(&merged, next_run, &hashes).unwrap();
                for r in &merged {
                    model.remove(r);
                }
                model.insert(next_run, keys);
                order.splice(at..at + 2, [next_run]);
                next_run += 1;
            }
            _ if !order.is_empty() => {
                let r = order.remove(below(order.len() as u64) as usize);
                assert!(index.drop_run(r));
                model.remove(&r);
            }
            _ => {}
        }
        let bytes = index.to_bytes();
        let read = RunIndex::from_bytes(&bytes).unwrap_or_else(|e| panic!("step {step}: {e}"));
        assert_eq!(read.to_bytes(), bytes, "step {step}");
        let mapped = MappedRunIndex::from_shared(bytes.into()).unwrap();
        mapped.verify().unwrap();
        assert!(
            read.describes(&order) && mapped.describes(&order),
            "step {step}"
        );
        no_false_negative(&model, |k| mapped.runs_for_hash(k).collect()).unwrap();
        for i in 0..300 {
            let k = h(below(next_key + 1000));
            let want: Vec<u64> = index.runs_for_hash(k).collect();
            assert_eq!(
                read.runs_for_hash(k).collect::<Vec<_>>(),
                want,
                "step {step} {i}"
            );
            assert_eq!(
                mapped.runs_for_hash(k).collect::<Vec<_>>(),
                want,
                "step {step} {i}"
            );
        }
        if step % 20 == 19 {
            // The copy read back goes on as the original.
            index = read;
        }
    }
    fn send_sync<T: Send + Sync>() {}
    send_sync::<MappedRunIndex>();
}
