//! The run index through the C functions (issue 41), from Rust: flushes, compactions and drops
//! against an exact model, saves and maps on the way; hostile bytes (random, flipped, cut, and
//! headers with valid checksums but impossible fields) never panic across the boundary and never
//! lose a key; a key in more runs than its buckets hold; a stale index.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::path::Path;
use std::ptr;

use cuckoo_sst_c::*;

fn last_error() -> String {
    // SAFETY: the library's message, NUL-terminated, valid until the next failing call.
    unsafe { CStr::from_ptr(cksst_last_error()) }
        .to_string_lossy()
        .into_owned()
}

fn key(i: u64) -> [u8; 16] {
    format!("k{i:015}").into_bytes().try_into().unwrap()
}

fn hash(i: u64) -> u64 {
    let k = key(i);
    // SAFETY: a live 16-byte key.
    unsafe { cksst_hash(k.as_ptr(), k.len()) }
}

fn c_path(p: &Path) -> CString {
    CString::new(p.to_str().unwrap()).unwrap()
}

/// A deterministic generator (SplitMix64).
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
        self.next() % n
    }
}

/// What one of the lookup functions answered: its result and the runs.
fn answer(f: impl FnOnce(*mut u64, usize, *mut usize) -> i32) -> (i32, Vec<u64>) {
    let mut runs = [0u64; CKSST_RUN_INDEX_MAX_RUNS];
    let mut count = usize::MAX;
    let rc = f(runs.as_mut_ptr(), runs.len(), &mut count);
    assert!(count <= runs.len(), "count {count}, rc {rc}");
    (rc, runs[..count].to_vec())
}

/// The runs the owned index answers for key `i` (by key and by hash, which must agree).
///
/// # Safety
/// `x` is a live run index.
unsafe fn runs_for(x: *const cksst_run_index, i: u64) -> (i32, Vec<u64>) {
    let k = key(i);
    // SAFETY: the caller's index; live buffers.
    let by_key = answer(|o, c, n| unsafe { cksst_run_index_runs_for(x, k.as_ptr(), 16, o, c, n) });
    // SAFETY: as above.
    let by_hash = answer(|o, c, n| unsafe { cksst_run_index_runs_for_hash(x, hash(i), o, c, n) });
    assert_eq!(by_key, by_hash, "key {i}");
    by_key
}

/// As [`runs_for`], of a mapped index.
///
/// # Safety
/// `m` is a live mapped run index.
unsafe fn mapped_runs_for(m: *const cksst_mapped_run_index, i: u64) -> (i32, Vec<u64>) {
    let k = key(i);
    // SAFETY: the caller's index; live buffers.
    let by_key =
        answer(|o, c, n| unsafe { cksst_mapped_run_index_runs_for(m, k.as_ptr(), 16, o, c, n) });
    // SAFETY: as above.
    let by_hash =
        answer(|o, c, n| unsafe { cksst_mapped_run_index_runs_for_hash(m, hash(i), o, c, n) });
    assert_eq!(by_key, by_hash, "key {i}");
    by_key
}

/// The runs an index describes.
///
/// # Safety
/// `x` is a live run index.
unsafe fn runs_of(x: *const cksst_run_index) -> Vec<u64> {
    // SAFETY: the caller's index; live buffers.
    let (rc, runs) = answer(|o, c, n| unsafe { cksst_run_index_runs(x, o, c, n) });
    assert_eq!(rc, CKSST_OK);
    runs
}

/// Every key of every run in `model` is answered with its run, and every answer is in the
/// order of `order` (newest first): by `ask`, a lookup of the owned or the mapped index.
fn check_model(
    model: &HashMap<u64, Vec<u64>>,
    order: &[u64],
    ask: impl Fn(u64) -> (i32, Vec<u64>),
    what: &str,
) {
    for (run, keys) in model {
        for &k in keys {
            let (rc, got) = ask(k);
            assert_eq!(rc, 1, "{what}: key {k} of run {run}: {}", last_error());
            assert!(got.contains(run), "{what}: key {k} of run {run}: {got:?}");
            let pos: Vec<usize> = got
                .iter()
                .map(|r| order.iter().position(|o| o == r).expect("a described run"))
                .collect();
            assert!(pos.windows(2).all(|w| w[0] < w[1]), "{what}: {got:?}");
        }
    }
}

/// Random flushes (from keys or from hashes, some keys of older runs again), compactions
/// (from keys or hashes, dropping some keys) and drops through the C functions, against an
/// exact model: after each step the index describes the model's runs, newest first, and every
/// key of every run is answered with its run; every few steps it is saved, mapped, written to
/// bytes and read back, and each answers every key as the index does.
#[test]
fn flushes_compactions_and_drops_against_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let path = c_path(&dir.path().join("model.index"));
    let mut rng = Rng(41);
    let mut model: HashMap<u64, Vec<u64>> = HashMap::new();
    let mut order: Vec<u64> = Vec::new();
    let (mut next_run, mut next_key) = (100u64, 0u64);
    // SAFETY: one index made here, used by this thread only, freed once; every buffer is live.
    unsafe {
        let mut cfg = std::mem::zeroed();
        assert_eq!(cksst_config_init(&mut cfg, 500), CKSST_OK);
        cfg.seed = 7;
        let mut x = ptr::null_mut();
        assert_eq!(cksst_run_index_new(&cfg, &mut x), CKSST_OK);
        for step in 0..120 {
            match rng.below(10) {
                0..6 if order.len() < CKSST_RUN_INDEX_MAX_RUNS => {
                    let n = rng.below(300) + 1;
                    let mut keys: Vec<u64> = (next_key..next_key + n).collect();
                    next_key += n;
                    let old: Vec<u64> = model.values().flatten().copied().collect();
                    for _ in 0..rng.below(10) {
                        if !old.is_empty() {
                            keys.push(old[rng.below(old.len() as u64) as usize]);
                        }
                    }
                    keys.sort_unstable();
                    keys.dedup();
                    let rc = if rng.below(2) == 0 {
                        let bytes: Vec<[u8; 16]> = keys.iter().map(|&k| key(k)).collect();
                        let ptrs: Vec<*const u8> = bytes.iter().map(|b| b.as_ptr()).collect();
                        let lens = vec![16usize; keys.len()];
                        cksst_run_index_add_run(
                            x,
                            next_run,
                            ptrs.as_ptr(),
                            lens.as_ptr(),
                            keys.len(),
                        )
                    } else {
                        let hashes: Vec<u64> = keys.iter().map(|&k| hash(k)).collect();
                        cksst_run_index_add_run_hashes(x, next_run, hashes.as_ptr(), hashes.len())
                    };
                    assert_eq!(rc, CKSST_OK, "step {step}: {}", last_error());
                    model.insert(next_run, keys);
                    order.insert(0, next_run);
                    next_run += 1;
                }
                6..9 if order.len() >= 2 => {
                    let k = (rng.below(3) + 2).min(order.len() as u64) as usize;
                    let at = rng.below((order.len() - k + 1) as u64) as usize;
                    let merged: Vec<u64> = order[at..at + k].to_vec();
                    let mut keys: Vec<u64> = merged.iter().flat_map(|r| model[r].clone()).collect();
                    keys.sort_unstable();
                    keys.dedup();
                    keys.retain(|_| rng.below(8) != 0);
                    let rc = if rng.below(2) == 0 {
                        let bytes: Vec<[u8; 16]> = keys.iter().map(|&k| key(k)).collect();
                        let ptrs: Vec<*const u8> = bytes.iter().map(|b| b.as_ptr()).collect();
                        let lens = vec![16usize; keys.len()];
                        cksst_run_index_compact(
                            x,
                            merged.as_ptr(),
                            merged.len(),
                            next_run,
                            ptrs.as_ptr(),
                            lens.as_ptr(),
                            keys.len(),
                        )
                    } else {
                        let hashes: Vec<u64> = keys.iter().map(|&k| hash(k)).collect();
                        cksst_run_index_compact_hashes(
                            x,
                            merged.as_ptr(),
                            merged.len(),
                            next_run,
                            hashes.as_ptr(),
                            hashes.len(),
                        )
                    };
                    assert_eq!(rc, CKSST_OK, "step {step}: {}", last_error());
                    for r in &merged {
                        model.remove(r);
                    }
                    model.insert(next_run, keys);
                    order.splice(at..at + k, [next_run]);
                    next_run += 1;
                }
                _ if !order.is_empty() => {
                    let r = order.remove(rng.below(order.len() as u64) as usize);
                    assert_eq!(cksst_run_index_drop_run(x, r), 1);
                    assert_eq!(cksst_run_index_drop_run(x, r), 0);
                    model.remove(&r);
                }
                _ => {}
            }
            assert_eq!(runs_of(x), order, "step {step}");
            assert_eq!(cksst_run_index_describes(x, order.as_ptr(), order.len()), 1);
            assert_eq!(cksst_run_index_is_stale(x), 0);
            let entries: usize = model.values().map(Vec::len).sum();
            assert!(cksst_run_index_len(x) <= entries, "step {step}");
            check_model(&model, &order, |k| runs_for(x, k), "owned");
            // No answer names a run the index does not describe (a dropped or merged run).
            for k in 0..next_key {
                let (rc, got) = runs_for(x, k);
                assert!(rc == 0 || rc == 1, "key {k}: {rc}");
                assert!(got.iter().all(|r| order.contains(r)), "key {k}: {got:?}");
            }
            if step % 15 == 14 {
                assert_eq!(cksst_run_index_save(x, path.as_ptr()), CKSST_OK);
                let mut m = ptr::null_mut();
                assert_eq!(cksst_mapped_run_index_open(path.as_ptr(), &mut m), CKSST_OK);
                assert_eq!(
                    cksst_mapped_run_index_describes(m, order.as_ptr(), order.len()),
                    1
                );
                assert_eq!(cksst_mapped_run_index_len(m), cksst_run_index_len(x));
                let (mut d1, mut d2) = (0, 1);
                assert_eq!(cksst_run_index_runs_digest(x, &mut d1), CKSST_OK);
                assert_eq!(cksst_mapped_run_index_runs_digest(m, &mut d2), CKSST_OK);
                assert_eq!(d1, d2);
                let (mut bytes, mut len) = (ptr::null_mut(), 0);
                assert_eq!(cksst_run_index_to_bytes(x, &mut bytes, &mut len), CKSST_OK);
                let mut back = ptr::null_mut();
                assert_eq!(cksst_run_index_from_bytes(bytes, len, &mut back), CKSST_OK);
                cksst_bytes_free(bytes, len);
                for k in 0..next_key + 1000 {
                    let owned = runs_for(x, k);
                    assert_eq!(mapped_runs_for(m, k), owned, "step {step}: key {k}, mapped");
                    assert_eq!(runs_for(back, k), owned, "step {step}: key {k}, from bytes");
                }
                assert_eq!(cksst_mapped_run_index_verify(m), CKSST_OK);
                cksst_mapped_run_index_free(m);
                // The copy read back goes on as the index: x is dropped, back replaces it.
                cksst_run_index_free(x);
                x = back;
            }
        }
        assert!(next_run > 150, "{next_run} runs made");
        cksst_run_index_free(x);
    }
}

/// CRC-32 (IEEE, reflected), as FORMAT.md's checksums are: to forge a header whose checksum
/// holds over impossible fields.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Hostile bytes never panic across the boundary (`CKSST_ERR_INTERNAL`) and never lose a key:
/// random bytes, a valid file with one byte flipped, cut short or lengthened, and headers whose
/// checksum holds over random field values. Whatever opens of the damaged files answers every
/// key of its runs with its run, or an error that says "read every run"; what the owned reader
/// accepts is the file unchanged. (A forged header is a different file, not damage: only the
/// absence of a panic is asked of it.)
#[test]
fn hostile_bytes_never_panic_across_the_boundary_nor_lose_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let good_path = dir.path().join("good.index");
    let bad_path = dir.path().join("bad.index");
    let bad = c_path(&bad_path);
    let mut rng = Rng(7);
    // SAFETY: handles made here and freed once; every buffer is live for its call.
    unsafe {
        let mut x = ptr::null_mut();
        assert_eq!(cksst_run_index_new(ptr::null(), &mut x), CKSST_OK);
        let runs: [(u64, std::ops::Range<u64>); 3] = [(1, 0..300), (2, 200..500), (3, 500..520)];
        for (run, keys) in &runs {
            let hashes: Vec<u64> = keys.clone().map(hash).collect();
            assert_eq!(
                cksst_run_index_add_run_hashes(x, *run, hashes.as_ptr(), hashes.len()),
                CKSST_OK
            );
        }
        assert_eq!(
            cksst_run_index_save(x, c_path(&good_path).as_ptr()),
            CKSST_OK
        );
        cksst_run_index_free(x);
        let good = std::fs::read(&good_path).unwrap();
        assert!(good.len() > 256);

        // Opens `bytes` both ways; whatever opens answers every key of every run, unless the
        // header was forged (`forged`: its checksum recomputed over changed fields, which is
        // not damage but a different file — a changed seed answers for other keys — so only
        // the absence of a panic is checked).
        let mut opened = 0;
        let mut try_bytes = |bytes: &[u8], what: &str, forged: bool| {
            let mut back = ptr::null_mut();
            let rc = cksst_run_index_from_bytes(bytes.as_ptr(), bytes.len(), &mut back);
            assert_ne!(rc, CKSST_ERR_INTERNAL, "{what}: {}", last_error());
            if rc == CKSST_OK {
                assert!(
                    forged || bytes == &good[..],
                    "{what}: accepted damaged bytes"
                );
                cksst_run_index_free(back);
            } else {
                assert!(rc < 0 && back.is_null(), "{what}: {rc}");
            }
            std::fs::write(&bad_path, bytes).unwrap();
            let mut m = ptr::null_mut();
            let rc = cksst_mapped_run_index_open(bad.as_ptr(), &mut m);
            assert_ne!(rc, CKSST_ERR_INTERNAL, "{what}: {}", last_error());
            if rc != CKSST_OK {
                assert!(rc < 0 && m.is_null(), "{what}: {rc}");
                return;
            }
            opened += 1;
            for round in 0..2 {
                for (run, keys) in &runs {
                    for k in keys.clone() {
                        let (rc, got) = mapped_runs_for(m, k);
                        assert_ne!(rc, CKSST_ERR_INTERNAL, "{what}: {}", last_error());
                        assert!(
                            forged || rc < 0 || got.contains(run),
                            "{what}: key {k} of run {run} lost: {rc} {got:?}"
                        );
                    }
                }
                if round == 0 {
                    let v = cksst_mapped_run_index_verify(m);
                    assert_ne!(v, CKSST_ERR_INTERNAL, "{what}: {}", last_error());
                    assert!(
                        forged || (v == CKSST_OK) == (bytes == &good[..]),
                        "{what}: verify {v}"
                    );
                }
            }
            let mut d = 0;
            assert_ne!(
                cksst_mapped_run_index_runs_digest(m, &mut d),
                CKSST_ERR_INTERNAL
            );
            cksst_mapped_run_index_free(m);
        };

        try_bytes(&good, "the good file", false);
        for n in [0usize, 1, 7, 8, 64, 127, 128, 129, 300, 1000] {
            let junk: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            try_bytes(&junk, &format!("{n} random bytes"), false);
            let mut magic = b"CUCKORIX".to_vec();
            magic.extend(&junk);
            try_bytes(&magic, &format!("the magic and {n} random bytes"), false);
        }
        for at in 0..good.len() {
            // Every byte of the header, run table and checksum table; every 7th of the buckets.
            if at >= 256 && at % 7 != 0 {
                continue;
            }
            let mut b = good.clone();
            b[at] ^= 1 << (rng.below(8) as u32);
            try_bytes(&b, &format!("byte {at} flipped"), false);
        }
        for cut in [0, 8, 127, 128, 200, 256, good.len() / 2, good.len() - 1] {
            try_bytes(&good[..cut], &format!("cut to {cut}"), false);
        }
        let mut longer = good.clone();
        longer.extend_from_slice(&[0; 64]);
        try_bytes(&longer, "64 bytes appended", false);
        // Headers with a valid checksum over random values of one field of 1, 2, 4 or 8 bytes.
        for round in 0..400 {
            let mut b = good.clone();
            let width = [1usize, 2, 4, 8][rng.below(4) as usize];
            let at = rng.below((124 - width) as u64 + 1) as usize;
            for byte in &mut b[at..at + width] {
                *byte = rng.next() as u8;
            }
            let crc = crc32(&b[..124]);
            b[124..128].copy_from_slice(&crc.to_le_bytes());
            try_bytes(
                &b,
                &format!("round {round}: {width} bytes at {at}, checksum forged"),
                true,
            );
        }
        // The good file, the bucket flips and the forged headers that change nothing opened.
        assert!(opened > 10, "{opened} opened");
    }
}

/// A key in every run is taken (its runs past two in its stash record) and answered with all
/// of them, newest first, saved and mapped too, and a key listed several times in one flush is
/// taken once. And a file marked stale (what a compaction that failed part-way leaves) answers
/// every run for every key, read or mapped, and says so.
#[test]
fn a_key_in_every_run_is_taken_and_a_stale_file_answers_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = c_path(&dir.path().join("stale.index"));
    // SAFETY: handles made here and freed once; every buffer is live for its call.
    unsafe {
        let mut x = ptr::null_mut();
        assert_eq!(cksst_run_index_new(ptr::null(), &mut x), CKSST_OK);
        let h = hash(0);
        let runs = 40u64;
        for run in 0..runs {
            let listed = [h, h, hash(run + 1000), h];
            let rc = cksst_run_index_add_run_hashes(x, run, listed.as_ptr(), listed.len());
            assert_eq!(rc, CKSST_OK, "run {run}: {}", last_error());
        }
        assert_eq!(cksst_run_index_len(x), 2 * runs as usize);
        let order: Vec<u64> = (0..runs).rev().collect();
        assert_eq!(runs_of(x), order);
        assert_eq!(runs_for(x, 0), (1, order.clone()));
        for run in 0..runs {
            assert!(runs_for(x, run + 1000).1.contains(&run), "run {run}");
        }
        assert_eq!(cksst_run_index_save(x, path.as_ptr()), CKSST_OK);
        let mut m = ptr::null_mut();
        assert_eq!(cksst_mapped_run_index_open(path.as_ptr(), &mut m), CKSST_OK);
        assert_eq!(mapped_runs_for(m, 0), (1, order.clone()));
        assert_eq!(cksst_mapped_run_index_len(m), 2 * runs as usize);
        cksst_mapped_run_index_free(m);
        // The file marked stale (FORMAT.md §12.1 flags bit 0, the header re-signed), as a
        // compaction that failed part-way leaves it (`index::tests` makes one with hashes
        // that crowd a pair): every lookup answers every run, owned and mapped.
        let mut bytes = std::fs::read(dir.path().join("stale.index")).unwrap();
        bytes[24] |= 1;
        let crc = crc32fast::hash(&bytes[..124]);
        bytes[124..128].copy_from_slice(&crc.to_le_bytes());
        std::fs::write(dir.path().join("stale.index"), &bytes).unwrap();
        let mut back = ptr::null_mut();
        assert_eq!(
            cksst_run_index_from_bytes(bytes.as_ptr(), bytes.len(), &mut back),
            CKSST_OK
        );
        assert_eq!(cksst_run_index_is_stale(back), 1);
        assert_eq!(cksst_mapped_run_index_open(path.as_ptr(), &mut m), CKSST_OK);
        assert_eq!(cksst_mapped_run_index_is_stale(m), 1);
        for k in [0, 1, 2, 12_345] {
            assert_eq!(runs_for(back, k), (1, order.clone()), "key {k}");
            assert_eq!(mapped_runs_for(m, k), (1, order.clone()), "key {k}");
        }
        cksst_run_index_free(back);
        cksst_mapped_run_index_free(m);
        cksst_run_index_free(x);
    }
}
