//! Probe for issue 41: one cuckoo table whose entries are (fingerprint, run id) — a *run index*
//! — against per-table filters, for the LSM point read (one key hashed once, the runs asked
//! newest first, the first run that may hold the key read).
//!
//! ```text
//! cargo run --release -- [ROUNDS]            # every configuration below
//! cargo run --release -- 7 16                # only R = 16 runs (16 x 1 M keys)
//! ```
//!
//! Configurations: R runs x n keys, 16 M keys in all (16 x 1 M, 64 x 250 000, 256 x 62 500),
//! keys disjoint between runs and, separately, 10 % of each run's keys also in the run before
//! it (`dup`). Contenders, each hashing a key once (XXH3-64, as `KeyHash::of` does):
//! - `cuckoo-sst`: one filter per run (`FilterBuilder`, 1 %), `FilterRef::first_containing`;
//! - `sbbf`: one `sbbf-rs-safe` filter per run (11 bits per key, as in benches/peers.rs),
//!   asked newest first until one answers "maybe";
//! - `bfuse8`: one BinaryFuse8 per run, the same way;
//! - `index f=F`: one cuckoo table of buckets of 4 slots, each slot an F-bit fingerprint and
//!   a run id of ceil(log2 R) bits, bit-packed, at 95 % load; a lookup reads two buckets and
//!   answers the newest run among the matching slots;
//! - `index u16`: the same with 16-bit slots (F = 16 - ceil(log2 R)), aligned 8-byte buckets.
//!
//! Reported: absent and present point reads (million keys per second, the median of ROUNDS
//! rounds, each round timing every contender over the same keys, in an order that alternates),
//! table reads per absent key (every run a structure answers "maybe" for, counted over the
//! absent pool), bits per entry (a key in two runs is two entries everywhere), build seconds.
//! Run on an otherwise idle machine; ratios are to `sbbf` in the same run.

use cuckoo_sst::{Config, CuckooFilter, FilterBuilder, FilterRef, KeyHash};
use std::hint::black_box;
use std::time::Instant;
use xorf::{BinaryFuse8, Filter as _};
use xxhash_rust::xxh3::xxh3_64;

const PROBES: usize = 1 << 20;

/// Key `i`: 16 bytes, as benches/peers.rs makes them.
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

/// The ids of each run, oldest first: run `t` holds `t·n .. (t+1)·n`; with `dup`, its first
/// tenth is replaced by the first tenth of the run before it.
fn runs(r: u64, n: u64, dup: bool) -> Vec<Vec<u64>> {
    (0..r)
        .map(|t| {
            (0..n)
                .map(|j| {
                    if dup && t > 0 && j < n / 10 {
                        (t - 1) * n + j
                    } else {
                        t * n + j
                    }
                })
                .collect()
        })
        .collect()
}

#[inline(always)]
fn fast_range32(x: u32, n: u64) -> u64 {
    (x as u64 * n) >> 32
}

/// One cuckoo table of (fingerprint, run id) entries, bit-packed, buckets of 4.
struct Index {
    m: u64,
    f: u32,
    r: u32,
    w: u32,
    bytes: Vec<u8>,
}

impl Index {
    fn new(entries: u64, f: u32, r: u32) -> Index {
        let m = ((entries as f64 / (4.0 * 0.95)).ceil() as u64 + 1) & !1;
        let w = f + r;
        let len = (m * 4 * w as u64).div_ceil(8) as usize + 16;
        Index {
            m,
            f,
            r,
            w,
            bytes: vec![0; len],
        }
    }

    fn size_bytes(&self) -> usize {
        self.bytes.len() - 16
    }

    #[inline(always)]
    fn locate(&self, h: u64) -> (u64, u64, u32) {
        let i1 = fast_range32((h >> 32) as u32, self.m);
        let fp = (h as u32) & ((1 << self.f) - 1);
        let fp = fp + (fp == 0) as u32;
        (i1, self.alt(i1, fp), fp)
    }

    /// The crate's reflection: `(o - i) mod m`, `o` odd from the fingerprint.
    #[inline(always)]
    fn alt(&self, i: u64, fp: u32) -> u64 {
        let mixed = ((fp as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32;
        let o = 2 * fast_range32(mixed, self.m / 2) + 1;
        let d = o.wrapping_sub(i);
        if o >= i { d } else { d.wrapping_add(self.m) }
    }

    /// Bucket `i`'s bits, its slot 0 lowest.
    #[inline(always)]
    fn bucket(&self, i: u64) -> u128 {
        let bit = i * 4 * self.w as u64;
        let at = (bit / 8) as usize;
        let raw = u128::from_le_bytes(self.bytes[at..at + 16].try_into().unwrap());
        raw >> (bit % 8)
    }

    fn slot(&self, i: u64, k: u32) -> u32 {
        ((self.bucket(i) >> (k * self.w)) as u32) & ((1 << self.w) - 1)
    }

    fn set(&mut self, i: u64, k: u32, v: u32) {
        let bit = i * 4 * self.w as u64 + (k * self.w) as u64;
        let at = (bit / 8) as usize;
        let sh = bit % 8;
        let mut raw = u64::from_le_bytes(self.bytes[at..at + 8].try_into().unwrap());
        let mask = ((1u64 << self.w) - 1) << sh;
        raw = (raw & !mask) | ((v as u64) << sh);
        self.bytes[at..at + 8].copy_from_slice(&raw.to_le_bytes());
    }

    fn free(&self, i: u64) -> Option<u32> {
        (0..4).find(|&k| self.slot(i, k) == 0)
    }

    /// Inserts the entry; false if the walk gave up.
    fn insert(&mut self, h: u64, run: u32, rng: &mut XorShift) -> bool {
        let (i1, i2, fp) = self.locate(h);
        let mut v = fp << self.r | run;
        for i in [i1, i2] {
            if let Some(k) = self.free(i) {
                self.set(i, k, v);
                return true;
            }
        }
        let mut i = if rng.next() & 1 == 0 { i1 } else { i2 };
        for _ in 0..2000 {
            let k = (rng.next() % 4) as u32;
            let out = self.slot(i, k);
            self.set(i, k, v);
            v = out;
            i = self.alt(i, v >> self.r);
            if let Some(k) = self.free(i) {
                self.set(i, k, v);
                return true;
            }
        }
        false
    }

    /// The newest run (highest id) among the entries matching in bucket `x`, plus one; 0 if none.
    #[inline(always)]
    fn best(&self, x: u128, fp: u32) -> u32 {
        let wm = (1u32 << self.w) - 1;
        let rm = (1u32 << self.r) - 1;
        let mut best = 0;
        for k in 0..4 {
            let v = (x >> (k * self.w)) as u32 & wm;
            let hit = (v >> self.r) == fp;
            best = best.max(if hit { (v & rm) + 1 } else { 0 });
        }
        best
    }

    /// The first run (newest) that may hold the key, plus one; 0 if none.
    #[inline(always)]
    fn first(&self, h: u64) -> u32 {
        let (i1, i2, fp) = self.locate(h);
        self.best(self.bucket(i1), fp).max(self.best(self.bucket(i2), fp))
    }

    /// Distinct runs the index answers "maybe" for.
    fn runs_of(&self, h: u64) -> usize {
        let (i1, i2, fp) = self.locate(h);
        let mut seen = Vec::new();
        for i in if i1 == i2 { vec![i1] } else { vec![i1, i2] } {
            for k in 0..4 {
                let v = self.slot(i, k);
                if v != 0 && v >> self.r == fp && !seen.contains(&(v & ((1 << self.r) - 1))) {
                    seen.push(v & ((1 << self.r) - 1));
                }
            }
        }
        seen.len()
    }
}

/// An index of 16-bit slots: buckets of 8 aligned bytes.
struct Index16 {
    m: u64,
    r: u32,
    slots: Vec<u64>,
}

impl Index16 {
    fn from(ix: &Index) -> Index16 {
        assert_eq!(ix.w, 16);
        Index16 {
            m: ix.m,
            r: ix.r,
            slots: (0..ix.m)
                .map(|i| (ix.bucket(i) & u64::MAX as u128) as u64)
                .collect(),
        }
    }

    /// The newest matching run plus one, 0 if none: SWAR over the four 16-bit slots.
    #[inline(always)]
    fn best(&self, x: u64, fp: u32) -> u32 {
        let rm = (1u64 << self.r) - 1;
        let spread = 0x0001_0001_0001_0001u64;
        // Each slot's fingerprint part XOR the key's: zero where it matches.
        let diff = (x >> self.r) & ((0xFFFFu64 >> self.r) * spread) ^ (fp as u64 * spread);
        let mut best = 0;
        for k in 0..4 {
            let d = (diff >> (16 * k)) & 0xFFFF;
            let run = ((x >> (16 * k)) & rm) as u32 + 1;
            best = best.max(if d == 0 { run } else { 0 });
        }
        best
    }

    #[inline(always)]
    fn first(&self, ix: &Index, h: u64) -> u32 {
        let (i1, i2, fp) = ix.locate(h);
        let _ = self.m;
        self.best(self.slots[i1 as usize], fp)
            .max(self.best(self.slots[i2 as usize], fp))
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

type Read<'a> = Box<dyn Fn(&[[u8; 16]]) -> usize + 'a>;

/// Times every contender over `keys`, `rounds` times, alternating the order: median M keys/s.
fn time(contenders: &[(String, Read<'_>)], keys: &[[u8; 16]], rounds: usize) -> Vec<f64> {
    let mut rates = vec![Vec::new(); contenders.len()];
    for round in 0..rounds {
        let order: Vec<usize> = if round % 2 == 0 {
            (0..contenders.len()).collect()
        } else {
            (0..contenders.len()).rev().collect()
        };
        for c in order {
            let t = Instant::now();
            black_box((contenders[c].1)(keys));
            rates[c].push(keys.len() as f64 / t.elapsed().as_secs_f64() / 1e6);
        }
    }
    rates.into_iter().map(median).collect()
}

fn config(r: u64, n: u64, dup: bool, rounds: usize) {
    let runs = runs(r, n, dup);
    let entries = r * n;
    let rbits = 64 - (r - 1).leading_zeros();
    println!(
        "\n## {r} runs x {n} keys{} ({entries} entries)",
        if dup { ", 10 % of each run's keys also in the run before" } else { ", disjoint" }
    );
    let hashes: Vec<Vec<u64>> = runs
        .iter()
        .map(|ids| ids.iter().map(|&i| xxh3_64(&key(i))).collect())
        .collect();

    // Per-table filters, newest first.
    let t = Instant::now();
    let cks: Vec<CuckooFilter> = hashes
        .iter()
        .rev()
        .enumerate()
        .map(|(t, hs)| {
            let mut b = FilterBuilder::new(Config::new(hs.len()).seed(t as u64));
            for &h in hs {
                b.add_hash(KeyHash::from_u64(h));
            }
            b.finish().unwrap()
        })
        .collect();
    let ck_build = t.elapsed().as_secs_f64();
    let views: Vec<FilterRef<'_>> = cks.iter().map(|f| f.as_filter_ref()).collect();
    let t = Instant::now();
    let sbbfs: Vec<sbbf_rs_safe::Filter> = hashes
        .iter()
        .rev()
        .map(|hs| {
            let mut f = sbbf_rs_safe::Filter::new(11, hs.len());
            for &h in hs {
                f.insert_hash(h);
            }
            f
        })
        .collect();
    let sbbf_build = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let fuses: Vec<BinaryFuse8> = hashes
        .iter()
        .rev()
        .map(|hs| {
            let mut hs = hs.clone();
            hs.sort_unstable();
            hs.dedup();
            BinaryFuse8::try_from(&hs).unwrap()
        })
        .collect();
    let fuse_build = t.elapsed().as_secs_f64();

    // Run indexes.
    let mut indexes = Vec::new();
    for f in [9u32, 10, 16 - rbits] {
        if f < 8 || indexes.iter().any(|(g, ..): &(u32, Index, f64)| *g == f) {
            continue;
        }
        let t = Instant::now();
        let mut grow = 0;
        let ix = loop {
            let mut ix = Index::new(entries + grow, f, rbits);
            let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
            let ok = hashes
                .iter()
                .enumerate()
                .all(|(run, hs)| hs.iter().all(|&h| ix.insert(h, run as u32, &mut rng)));
            if ok {
                break ix;
            }
            grow += entries / 100;
        };
        indexes.push((f, ix, t.elapsed().as_secs_f64()));
    }
    let i16 = indexes
        .iter()
        .find(|(_, ix, _)| ix.w == 16)
        .map(|(_, ix, _)| (Index16::from(ix), ix));

    // Pools: absent ids past every run; present ids drawn from the runs (their newest run is
    // the answer).
    let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
    let absent: Vec<[u8; 16]> = (0..PROBES)
        .map(|_| key(entries + rng.next() % entries))
        .collect();
    let present: Vec<[u8; 16]> = (0..PROBES)
        .map(|_| {
            let t = (rng.next() % r) as usize;
            key(runs[t][(rng.next() % n) as usize])
        })
        .collect();

    // No false negative anywhere: every present key's newest run is found (or a newer one).
    for (t, ids) in runs.iter().enumerate() {
        for &i in ids.iter().step_by(97) {
            let h = xxh3_64(&key(i));
            for (f, ix, _) in &indexes {
                assert!(ix.first(h) as usize > t, "index f={f} lost run {t}'s key {i}");
            }
        }
    }

    let mut contenders: Vec<(String, Read<'_>)> = vec![
        (
            "cuckoo-sst first_containing".into(),
            Box::new(|keys: &[[u8; 16]]| {
                keys.iter()
                    .filter(|k| {
                        FilterRef::first_containing(&views, KeyHash::of(black_box(&k[..])))
                            .is_some()
                    })
                    .count()
            }),
        ),
        (
            "sbbf per table".into(),
            Box::new(|keys: &[[u8; 16]]| {
                keys.iter()
                    .filter(|k| {
                        let h = xxh3_64(black_box(&k[..]));
                        sbbfs.iter().any(|f| f.contains_hash(h))
                    })
                    .count()
            }),
        ),
        (
            "bfuse8 per table".into(),
            Box::new(|keys: &[[u8; 16]]| {
                keys.iter()
                    .filter(|k| {
                        let h = xxh3_64(black_box(&k[..]));
                        fuses.iter().any(|f| f.contains(&h))
                    })
                    .count()
            }),
        ),
    ];
    for (f, ix, _) in &indexes {
        contenders.push((
            format!("index f={f} (packed {} bits)", ix.w),
            Box::new(move |keys: &[[u8; 16]]| {
                keys.iter()
                    .filter(|k| ix.first(xxh3_64(black_box(&k[..]))) != 0)
                    .count()
            }),
        ));
    }
    if let Some((ix16, ix)) = &i16 {
        contenders.push((
            format!("index u16 (f={})", 16 - rbits),
            Box::new(move |keys: &[[u8; 16]]| {
                keys.iter()
                    .filter(|k| ix16.first(ix, xxh3_64(black_box(&k[..]))) != 0)
                    .count()
            }),
        ));
    }

    // Table reads per absent key, counted.
    let mut reads = vec![0usize; contenders.len()];
    let mut each = vec![false; views.len()];
    for k in &absent {
        let h = xxh3_64(k);
        FilterRef::contains_hash_each(&views, KeyHash::from_u64(h), &mut each);
        reads[0] += each.iter().filter(|&&x| x).count();
        reads[1] += sbbfs.iter().filter(|f| f.contains_hash(h)).count();
        reads[2] += fuses.iter().filter(|f| f.contains(&h)).count();
        for (j, (_, ix, _)) in indexes.iter().enumerate() {
            reads[3 + j] += ix.runs_of(h);
        }
        if i16.is_some() {
            let j = 3 + indexes.len();
            reads[j] += indexes.iter().find(|(_, ix, _)| ix.w == 16).unwrap().1.runs_of(h);
        }
    }
    let mut bits = vec![
        cks.iter().map(|f| f.size_in_bytes()).sum::<usize>(),
        sbbfs.iter().map(|f| f.as_bytes().len()).sum::<usize>(),
        fuses.iter().map(|f| f.fingerprints.len()).sum::<usize>(),
    ];
    let mut builds = vec![ck_build, sbbf_build, fuse_build];
    for (_, ix, b) in &indexes {
        bits.push(ix.size_bytes());
        builds.push(*b);
    }
    if let Some((_, ix)) = &i16 {
        bits.push(ix.size_bytes());
        builds.push(indexes.iter().find(|(_, x, _)| x.w == 16).unwrap().2);
    }

    let abs = time(&contenders, &absent, rounds);
    let pre = time(&contenders, &present, rounds);
    let sbbf = (abs[1], pre[1]);
    println!(
        "| contender | absent M/s | × sbbf | present M/s | × sbbf | table reads per absent key | bits per entry | build s |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (j, (name, _)) in contenders.iter().enumerate() {
        println!(
            "| {name} | {:.2} | {:.2} | {:.2} | {:.2} | {:.4} | {:.2} | {:.2} |",
            abs[j],
            abs[j] / sbbf.0,
            pre[j],
            pre[j] / sbbf.1,
            reads[j] as f64 / absent.len() as f64,
            bits[j] as f64 * 8.0 / entries as f64,
            builds[j]
        );
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().map(|a| a.parse().unwrap()).unwrap_or(7);
    let only: Option<u64> = args.next().map(|a| a.parse().unwrap());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    println!("# run-index probe: {cpu}; {rounds} rounds of {PROBES} keys");
    for (r, n) in [(16u64, 1_000_000u64), (64, 250_000), (256, 62_500)] {
        if only.is_some_and(|o| o != r) {
            continue;
        }
        for dup in [false, true] {
            config(r, n, dup, rounds);
        }
    }
}
