//! Probe for issue 41, updates: how fast a run index takes a flushed run's keys and a
//! compaction's retargets, at the sizes the issue names (16 runs × 1 M keys, 16 M entries).
//!
//! ```text
//! cargo run --release --bin updates -- [ROUNDS] [LOAD]
//! ```
//!
//! The index is the probe's classic one (`src/main.rs`): buckets of 4 slots, each a 9-bit
//! fingerprint and a 4-bit run id, bit-packed, sized for every entry at LOAD (default 0.95;
//! the right-sized case: the index made for the tree it will hold). Measured, one thread:
//! - **flush**: the 16 runs added one after the other, each 1 M key hashes, by
//!   - `walk`: a random-walk insert per key, in the run's order (the first probe's build);
//!   - `bfs`: a breadth-first search for a free slot per key (at most 1 000 buckets), in order;
//!   - `sorted bfs`: the run's hashes sorted by first bucket first (an SSTable's keys come in
//!     key order, their hashes in random order: the sort is part of the time), then `bfs`;
//!   - `batched bfs`: in order, prefetching the buckets of the key 16 ahead;
//!
//!   rates reported for the first run (an empty table), the last (filled to 95 %) and all 16;
//! - **compaction**: runs 0..8 (8 M keys) merged into a new run: each kept key's entry found
//!   in its two buckets (a slot with its fingerprint and a run id among the merged ones) and
//!   given the new run's id, in the keys' order and batched with prefetch; then a sweep that
//!   clears every slot still naming a merged run (the entries of keys the compaction dropped,
//!   which the engine need not list);
//! - **drop**: a run's entries cleared by one sweep.
//!
//! After every step the index is checked against the model: every key of every live run is
//! found with its run.

use std::time::Instant;
use xxhash_rust::xxh3::xxh3_64;

fn key(i: u64) -> [u8; 16] {
    let mut k = *b"key:\0\0\0\0\0\0\0\0\0\0\0\0";
    k[8..].copy_from_slice(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
    k
}

struct XorShift(u64);
impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[inline(always)]
fn fast_range32(x: u32, n: u64) -> u64 {
    (x as u64 * n) >> 32
}

const B: u64 = 4;
const F: u32 = 9;
const R: u32 = 4;
const W: u32 = F + R;

#[derive(Clone)]
struct Index {
    m: u64,
    bytes: Vec<u8>,
    entries: u64,
}

impl Index {
    fn new(entries: u64, load: f64) -> Index {
        let m = ((entries as f64 / (B as f64 * load)).ceil() as u64 + 1) & !1;
        let len = (m * B * W as u64).div_ceil(8) as usize + 16;
        Index {
            m,
            bytes: vec![0; len],
            entries: 0,
        }
    }

    #[inline(always)]
    fn locate(&self, h: u64) -> (u64, u64, u32) {
        let i1 = fast_range32((h >> 32) as u32, self.m);
        let fp = (h as u32) & ((1 << F) - 1);
        let fp = fp + (fp == 0) as u32;
        (i1, self.alt(i1, fp), fp)
    }

    #[inline(always)]
    fn alt(&self, i: u64, fp: u32) -> u64 {
        let mixed = ((fp as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32;
        let o = 2 * fast_range32(mixed, self.m / 2) + 1;
        let d = o.wrapping_sub(i);
        if o >= i { d } else { d.wrapping_add(self.m) }
    }

    #[inline(always)]
    fn at(i: u64, k: u64) -> (usize, u32) {
        let bit = (i * B + k) * W as u64;
        ((bit / 8) as usize, (bit % 8) as u32)
    }

    #[inline(always)]
    fn slot(&self, i: u64, k: u64) -> u32 {
        let (at, sh) = Index::at(i, k);
        let raw = u32::from_le_bytes(self.bytes[at..at + 4].try_into().unwrap());
        (raw >> sh) & ((1 << W) - 1)
    }

    #[inline(always)]
    fn set(&mut self, i: u64, k: u64, v: u32) {
        let (at, sh) = Index::at(i, k);
        let mut raw = u32::from_le_bytes(self.bytes[at..at + 4].try_into().unwrap());
        let mask = ((1u32 << W) - 1) << sh;
        raw = (raw & !mask) | (v << sh);
        self.bytes[at..at + 4].copy_from_slice(&raw.to_le_bytes());
    }

    fn prefetch(&self, i: u64) {
        let (at, _) = Index::at(i, 0);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch is a hint: it never faults, whatever the address.
        unsafe {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            _mm_prefetch(self.bytes.as_ptr().wrapping_add(at) as *const i8, _MM_HINT_T0);
        }
    }

    fn free(&self, i: u64) -> Option<u64> {
        (0..B).find(|&k| self.slot(i, k) == 0)
    }

    fn insert_walk(&mut self, h: u64, run: u32, rng: &mut XorShift) -> bool {
        let (i1, i2, fp) = self.locate(h);
        let mut v = fp << R | run;
        for i in [i1, i2] {
            if let Some(k) = self.free(i) {
                self.set(i, k, v);
                self.entries += 1;
                return true;
            }
        }
        let mut i = if rng.next() & 1 == 0 { i1 } else { i2 };
        for _ in 0..2000 {
            let k = rng.next() % B;
            let out = self.slot(i, k);
            self.set(i, k, v);
            v = out;
            i = self.alt(i, v >> R);
            if let Some(k) = self.free(i) {
                self.set(i, k, v);
                self.entries += 1;
                return true;
            }
        }
        false
    }

    /// Breadth-first search from both buckets for a bucket with a free slot (at most `limit`
    /// buckets), then the entries moved back along the path.
    fn insert_bfs(&mut self, h: u64, run: u32, queue: &mut Vec<(u64, u32, u32)>) -> bool {
        let (i1, i2, fp) = self.locate(h);
        let v = fp << R | run;
        for i in [i1, i2] {
            if let Some(k) = self.free(i) {
                self.set(i, k, v);
                self.entries += 1;
                return true;
            }
        }
        // (bucket, parent index, slot in the parent moved here)
        queue.clear();
        queue.push((i1, u32::MAX, 0));
        queue.push((i2, u32::MAX, 0));
        let mut head = 0;
        while head < queue.len() && queue.len() < 4000 {
            let (i, _, _) = queue[head];
            for k in 0..B {
                let e = self.slot(i, k);
                let j = self.alt(i, e >> R);
                queue.push((j, head as u32, k as u32));
                if let Some(free) = self.free(j) {
                    // Move along the path: the entry of each parent slot into its child.
                    let mut child = queue.len() - 1;
                    let mut dst = (j, free);
                    loop {
                        let (_, parent, k) = queue[child];
                        if parent == u32::MAX {
                            break;
                        }
                        let pi = queue[parent as usize].0;
                        let e = self.slot(pi, k as u64);
                        self.set(dst.0, dst.1, e);
                        dst = (pi, k as u64);
                        child = parent as usize;
                    }
                    self.set(dst.0, dst.1, v);
                    self.entries += 1;
                    return true;
                }
            }
            head += 1;
        }
        false
    }

    /// The run ids of the entries that may be the key's, newest (highest) first.
    fn runs_of(&self, h: u64) -> Vec<u32> {
        let (i1, i2, fp) = self.locate(h);
        let mut out = Vec::new();
        for i in [i1, i2] {
            for k in 0..B {
                let e = self.slot(i, k);
                if e != 0 && e >> R == fp && !out.contains(&(e & ((1 << R) - 1))) {
                    out.push(e & ((1 << R) - 1));
                }
            }
        }
        out.sort_unstable_by(|a, b| b.cmp(a));
        out
    }

    /// The key's entry naming a run in `merged` (a bit per run id) given run `to`.
    #[inline(always)]
    fn retarget(&mut self, h: u64, merged: u32, to: u32) -> bool {
        let (i1, i2, fp) = self.locate(h);
        for i in [i1, i2] {
            for k in 0..B {
                let e = self.slot(i, k);
                if e != 0 && e >> R == fp && merged >> (e & ((1 << R) - 1)) & 1 == 1 {
                    self.set(i, k, fp << R | to);
                    return true;
                }
            }
        }
        false
    }

    /// Clears every slot naming a run in `runs` (a bit per run id); the slots cleared.
    fn sweep(&mut self, runs: u32) -> u64 {
        let mut n = 0;
        for i in 0..self.m {
            for k in 0..B {
                let e = self.slot(i, k);
                if e != 0 && runs >> (e & ((1 << R) - 1)) & 1 == 1 {
                    self.set(i, k, 0);
                    n += 1;
                }
            }
        }
        self.entries -= n;
        n
    }
}

fn hashes_of(run: u64, n: u64) -> Vec<u64> {
    (run * n..(run + 1) * n).map(|i| xxh3_64(&key(i))).collect()
}

/// Every key of every live run (`live[t]` = the run id the model says it has) is found.
fn check(ix: &Index, runs: &[(Vec<u64>, u32)]) {
    for (hs, id) in runs {
        for &h in hs.iter().step_by(13) {
            assert!(ix.runs_of(h).contains(id), "a key of run {id} lost");
        }
    }
}

fn rate(n: usize, secs: f64) -> f64 {
    n as f64 / secs / 1e6
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().unwrap())
        .unwrap_or(3);
    let load: f64 = std::env::args()
        .nth(2)
        .map(|a| a.parse().unwrap())
        .unwrap_or(0.95);
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    let (runs, n) = (16u64, 1_000_000u64);
    let hashes: Vec<Vec<u64>> = (0..runs).map(|t| hashes_of(t, n)).collect();
    println!(
        "# run-index updates: {cpu}; 16 runs x 1 M keys, f=9, 4-bit run ids, sized for {:.0} % load; medians of {rounds} rounds",
        load * 100.0
    );
    println!("| method | first run M keys/s | last run M keys/s | all 16 M keys/s |");
    println!("|---|---:|---:|---:|");
    type Add = fn(&mut Index, &[u64], u32, &mut XorShift, &mut Vec<(u64, u32, u32)>) -> bool;
    let methods: [(&str, Add); 4] = [
        ("walk", |ix, hs, run, rng, _| hs.iter().all(|&h| ix.insert_walk(h, run, rng))),
        ("bfs", |ix, hs, run, _, q| hs.iter().all(|&h| ix.insert_bfs(h, run, q))),
        ("sorted bfs", |ix, hs, run, _, q| {
            let mut s: Vec<(u64, u64)> = hs.iter().map(|&h| (ix.locate(h).0, h)).collect();
            s.sort_unstable_by_key(|p| p.0);
            s.iter().all(|&(_, h)| ix.insert_bfs(h, run, q))
        }),
        ("batched bfs", |ix, hs, run, _, q| {
            const AHEAD: usize = 16;
            (0..hs.len()).all(|j| {
                if let Some(&a) = hs.get(j + AHEAD) {
                    let (i1, i2, _) = ix.locate(a);
                    ix.prefetch(i1);
                    ix.prefetch(i2);
                }
                ix.insert_bfs(hs[j], run, q)
            })
        }),
    ];
    let mut full = None;
    for (name, add) in methods {
        let (mut first, mut last, mut all) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            let mut ix = Index::new(runs * n, load);
            let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
            let mut q = Vec::new();
            let t0 = Instant::now();
            for (t, hs) in hashes.iter().enumerate() {
                let s = Instant::now();
                assert!(add(&mut ix, hs, t as u32, &mut rng, &mut q), "{name}: run {t} did not fit");
                let secs = s.elapsed().as_secs_f64();
                if t == 0 {
                    first.push(rate(hs.len(), secs));
                }
                if t as u64 == runs - 1 {
                    last.push(rate(hs.len(), secs));
                }
            }
            all.push(rate((runs * n) as usize, t0.elapsed().as_secs_f64()));
            full = Some(ix);
        }
        let med = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        println!("| {name} | {:.2} | {:.2} | {:.2} |", med(first), med(last), med(all));
    }
    let ix = full.unwrap();
    let live: Vec<(Vec<u64>, u32)> = hashes.iter().cloned().zip(0..).collect();
    check(&ix, &live);

    // Compaction: runs 0..8 into a new run, which takes id 0 (an engine maps ids to runs; the
    // new run's id must name no other live run, and 0 names none once its keys are in the new
    // run). Every merged key is kept here; the sweep still finds entries, where two kept keys
    // had equal entries (same bucket, same fingerprint) and one retarget took the entry the
    // other had already moved: one entry then answers for both, as a cuckoo filter's may.
    let merged: u32 = 0xFF; // runs 0..8
    let kept: Vec<u64> = hashes[..8].iter().flatten().copied().collect();
    let (mut inorder, mut batched, mut sweeps) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        for batch in [false, true] {
            let mut ix = ix.clone();
            let s = Instant::now();
            if batch {
                const AHEAD: usize = 16;
                for j in 0..kept.len() {
                    if let Some(&a) = kept.get(j + AHEAD) {
                        let (i1, i2, _) = ix.locate(a);
                        ix.prefetch(i1);
                        ix.prefetch(i2);
                    }
                    assert!(ix.retarget(kept[j], merged, 0));
                }
            } else {
                for &h in &kept {
                    assert!(ix.retarget(h, merged, 0));
                }
            }
            let secs = s.elapsed().as_secs_f64();
            if batch { batched.push(rate(kept.len(), secs)) } else { inorder.push(rate(kept.len(), secs)) }
            let s = Instant::now();
            let cleared = ix.sweep(merged & !1);
            sweeps.push(s.elapsed().as_secs_f64() * 1e3);
            if round == 0 && batch {
                println!(
                    "sweep after the retarget cleared {cleared} entries: keys whose retarget found \
                     an equal entry (same bucket and fingerprint, a merged run) already moved"
                );
            }
            if round == 0 && batch {
                let mut live: Vec<(Vec<u64>, u32)> = vec![(kept.clone(), 0)];
                live.extend(hashes[8..].iter().cloned().zip(8..));
                check(&ix, &live);
                // Drop run 15.
                let s = Instant::now();
                let cleared = ix.sweep(1 << 15);
                println!(
                    "\ndrop (one sweep of the 16 M slots): {:.1} ms, {cleared} entries cleared",
                    s.elapsed().as_secs_f64() * 1e3
                );
                live.pop();
                check(&ix, &live);
            }
        }
    }
    let med = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "compaction of 8 M kept keys: retarget in order {:.2} M keys/s, batched (prefetch 16 ahead) {:.2} M keys/s; sweep {:.1} ms",
        med(inorder),
        med(batched),
        med(sweeps)
    );
    println!(
        "bits per entry: {:.2}",
        ix.bytes.len() as f64 * 8.0 / ix.entries as f64
    );
}
