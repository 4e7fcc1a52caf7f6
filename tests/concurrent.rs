//! Concurrent readers: eight threads query one `MappedFilter`, opened unverified so that their
//! first lookups race with its verification, and one `FilterRef`, while another thread calls
//! `verify()` over and over. Every answer equals a single-threaded reference's, for present and
//! absent keys, through every lookup method; nothing panics. A file with a damaged chunk answers
//! "maybe" to every lookup that touches it, in every thread, and fails every `verify()`.

mod common;

use cuckoo_sst::{Config, CuckooFilter, FilterRef, KeyHash, MappedFilter, ScalableCuckooFilter};
use std::path::Path;
use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering};

const READERS: usize = 8;
const KEYS: u64 = 4000;
const ROUNDS: usize = 12;

fn key(i: u64) -> [u8; 8] {
    i.to_le_bytes()
}

/// A reader's answers to every key: `contains` and `count`.
#[derive(Debug, PartialEq)]
struct Answers {
    contains: Vec<bool>,
    count: Vec<usize>,
}

/// Everything a thread asks: single lookups by key and by hash, batches of both kinds in
/// chunks that start at `offset`, counts. Panics on any disagreement among them.
fn ask(
    contains: impl Fn(&[u8]) -> bool,
    contains_hash: impl Fn(KeyHash) -> bool,
    batch_keys: impl Fn(&[[u8; 8]], &mut [bool]),
    batch: impl Fn(&[KeyHash], &mut [bool]),
    count: impl Fn(&[u8]) -> usize,
    offset: usize,
) -> Answers {
    let keys: Vec<[u8; 8]> = (0..2 * KEYS).map(key).collect();
    let hashes: Vec<KeyHash> = keys.iter().map(|k| KeyHash::of(k)).collect();
    let n = keys.len();
    let mut a = Answers {
        contains: vec![false; n],
        count: vec![0; n],
    };
    // Single lookups, in an order that differs between threads.
    for j in 0..n {
        let i = (j + offset * 997) % n;
        a.contains[i] = contains(&keys[i]);
        assert_eq!(contains_hash(hashes[i]), a.contains[i], "key {i}");
        a.count[i] = count(&keys[i]);
    }
    // Batches, in chunks of a thread-dependent length.
    let chunk = 17 + offset * 13;
    let mut out = vec![false; n];
    for (ks, o) in keys.chunks(chunk).zip(out.chunks_mut(chunk)) {
        batch_keys(ks, o);
    }
    assert_eq!(out, a.contains);
    out.fill(false);
    for (hs, o) in hashes.chunks(chunk).zip(out.chunks_mut(chunk)) {
        batch(hs, o);
    }
    assert_eq!(out, a.contains);
    a
}

fn ask_mapped(m: &MappedFilter, offset: usize) -> Answers {
    ask(
        |k| m.contains(k),
        |h| m.contains_hash(h),
        |ks, o| m.contains_batch_keys(ks, o),
        |hs, o| m.contains_batch(hs, o),
        |k| m.count(k),
        offset,
    )
}

fn ask_ref(f: &FilterRef<'_>, offset: usize) -> Answers {
    ask(
        |k| f.contains(k),
        |h| f.contains_hash(h),
        |ks, o| f.contains_batch_keys(ks, o),
        |hs, o| f.contains_batch(hs, o),
        |k| f.count(k),
        offset,
    )
}

/// `READERS` threads ask `mapped` (fresh from `open_unverified`) and `view` everything while
/// one more calls `verify()` until they are done; every thread's answers must be `want_*`.
/// Returns how many `verify()` calls were made and how many succeeded.
fn race(
    mapped: &MappedFilter,
    view: &FilterRef<'_>,
    want_mapped: &Answers,
    want_view: &Answers,
) -> (usize, usize) {
    let start = Barrier::new(READERS + 1);
    let done = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let verifier = s.spawn(|| {
            start.wait();
            let (mut calls, mut ok) = (0, 0);
            loop {
                calls += 1;
                ok += mapped.verify().is_ok() as usize;
                if done.load(Ordering::Acquire) == READERS {
                    break;
                }
            }
            (calls, ok)
        });
        let readers: Vec<_> = (0..READERS)
            .map(|t| {
                let (start, done) = (&start, &done);
                s.spawn(move || {
                    // Half the threads start with the mapped file (racing the verifier for
                    // its first lookup), half with the view.
                    start.wait();
                    let (m, v) = if t % 2 == 0 {
                        let m = ask_mapped(mapped, t);
                        (m, ask_ref(view, t))
                    } else {
                        let v = ask_ref(view, t);
                        (ask_mapped(mapped, t), v)
                    };
                    done.fetch_add(1, Ordering::Release);
                    (m, v)
                })
            })
            .collect();
        for (t, r) in readers.into_iter().enumerate() {
            let (m, v) = r.join().unwrap();
            assert!(
                m == *want_mapped,
                "thread {t}: the mapped file answered otherwise"
            );
            assert!(v == *want_view, "thread {t}: the view answered otherwise");
        }
        verifier.join().unwrap()
    })
}

fn files(dir: &Path) -> (std::path::PathBuf, Vec<u8>) {
    let (path, single, _) = files_and_chain(dir);
    (path, single)
}

/// A chain of three levels and a single filter, both holding keys `0..KEYS`. A stretch level
/// grows a thousandfold before its share of the target makes a new one, and copies of one key
/// never start one (they are refused with `TooManyCopies`), so after each third of the keys the
/// chain's newest level is closed by distinct keys it cannot tell apart
/// (`common::crafted::start_new_level`): every level holds keys of its own. The chain also
/// holds those crafted keys, which are not among the keys `0..2 * KEYS` asked about.
fn files_and_chain(dir: &Path) -> (std::path::PathBuf, Vec<u8>, ScalableCuckooFilter) {
    const LEVELS: u64 = 3;
    let mut chain = ScalableCuckooFilter::new(Config::new(500).seed(4)).unwrap();
    let mut single = CuckooFilter::new(Config::new(KEYS as usize).seed(5)).unwrap();
    for i in 0..KEYS {
        chain.insert(&key(i)).unwrap();
        single.insert(&key(i)).unwrap();
        if (i + 1) % (KEYS / LEVELS) == 0 && (chain.levels() as u64) < LEVELS {
            common::crafted::start_new_level(&mut chain);
        }
    }
    assert_eq!(chain.levels() as u64, LEVELS);
    for k in 0..chain.levels() {
        let level = chain.level(k).unwrap();
        let own = (0..KEYS).filter(|&i| level.contains(&key(i))).count() as u64;
        assert!(own > KEYS / LEVELS / 2, "level {k} holds {own} keys");
    }
    let path = dir.join("chain.filter");
    chain.save(&path).unwrap();
    (path, single.to_bytes(), chain)
}

#[test]
fn readers_racing_verification_answer_as_one_thread_does() {
    let dir = tempfile::tempdir().unwrap();
    let (path, single) = files(dir.path());
    let view = FilterRef::from_bytes(&single).unwrap();
    let reference = MappedFilter::open(&path).unwrap();
    let want_mapped = ask_mapped(&reference, 0);
    let want_view = ask_ref(&view, 0);
    // No false negatives, and the absent keys are mostly absent: the reference is a filter.
    let k = KEYS as usize;
    assert!(want_mapped.contains[..k].iter().all(|&x| x));
    assert!(want_view.contains[..k].iter().all(|&x| x));
    assert!(want_mapped.contains[k..].iter().filter(|&&x| x).count() < k / 20);
    assert!(want_view.contains[k..].iter().filter(|&&x| x).count() < k / 20);
    for round in 0..ROUNDS {
        let mapped = MappedFilter::open_unverified(&path).unwrap();
        assert!(!mapped.is_verified());
        let (calls, ok) = race(&mapped, &view, &want_mapped, &want_view);
        // (How many calls land during the lookups is up to the scheduler.)
        println!("round {round}: {calls} verify() calls");
        assert_eq!(ok, calls, "round {round}: verify() failed");
        assert!(mapped.is_verified());
    }
}

/// A region damaged on disk: the newest level's one chunk (its region is under 64 KiB), which
/// every lookup reads. Every thread gets "maybe present" for every key; a count is 1 for the
/// damaged level plus the copies in the others; the damaged level has no view, the others do;
/// and every `verify()` fails, however the first lookups and the verifier interleave.
#[test]
fn readers_of_a_damaged_file_answer_maybe_in_every_thread() {
    let dir = tempfile::tempdir().unwrap();
    let (path, single, chain) = files_and_chain(dir.path());
    let newest = chain.levels() - 1;
    assert!(chain.level(newest).unwrap().capacity() * 4 < 1 << 16);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 100;
    bytes[last] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let view = FilterRef::from_bytes(&single).unwrap();
    let want_view = ask_ref(&view, 0);
    let n = 2 * KEYS as usize;
    // An older level counts a key's slots and the copies counted on them (FORMAT.md §3.5).
    let saved = chain.to_bytes();
    let file = common::spec::read(&saved).unwrap();
    let older = |i: u64| -> usize {
        let h = common::spec::seeded(KeyHash::of(&key(i)).to_u64(), chain.seed());
        (0..newest)
            .map(|k| {
                chain.level(k).unwrap().count(&key(i)) + file.levels[k].counted_copies(h) as usize
            })
            .sum()
    };
    let want_mapped = Answers {
        contains: vec![true; n],
        count: (0..n as u64).map(|i| 1 + older(i)).collect(),
    };
    // The keys of the older levels (the first two thirds) count their copies there too.
    let older_keys = (2 * KEYS / 3) as usize;
    assert!(want_mapped.count[..older_keys].iter().all(|&c| c > 1));
    for round in 0..ROUNDS / 3 {
        let mapped = MappedFilter::open_unverified(&path).unwrap();
        let (_, ok) = race(&mapped, &view, &want_mapped, &want_view);
        assert_eq!(ok, 0, "round {round}: a damaged file verified");
        assert!(!mapped.is_verified());
        assert!(mapped.level(newest).is_none());
        assert!(mapped.level(0).is_some());
        assert_eq!(mapped.health().damaged, 1);
    }
}
