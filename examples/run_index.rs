//! A run index (issue 41) built from R runs of N keys each, then asked for absent and present
//! keys: for instruction counts (callgrind) and an indicative timing.
//!
//! ```text
//! cargo run --release --example run_index -- time 16 1000000          # flush and lookup rates
//! cargo build --release --example run_index
//! valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*lookups_absent*' \
//!     target/release/examples/run_index absent 16 250000 1000000       # instructions per lookup
//! valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*flush_all*' \
//!     target/release/examples/run_index flush 16 250000                # instructions per key added
//! valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*compact_half*' \
//!     target/release/examples/run_index compact 16 250000              # ... per key retargeted
//! ```
//!
//! Modes: `absent` / `present` build the index, then ask it LOOKUPS keys (absent: keys in no
//! run; present: keys of the runs, spread over them) with `runs_for(key).next()`, an engine's
//! first run to read; `flush` builds only; `compact` builds, then compacts as `time` does;
//! `time` builds R runs of N keys (default 16), timing each flush, then times 2^20 absent and
//! present lookups against one `sbbf-rs-safe` filter per run asked newest first (medians of 5
//! interleaved rounds), and the same keys through `runs_for_batch_keys` (the batch, its
//! buckets asked for 16 keys ahead), then one compaction of the older half of the runs into
//! one, every key kept (keys retargeted a second). Keys are 16 bytes, hashed once per lookup
//! (XXH3-64), at `Config`'s default 1 %. The index is sized for one run and grows.

use cuckoo_sst::{Config, KeyHash, RunIndex};
use std::hint::black_box;
use std::time::Instant;

/// Key `i`: 16 bytes, shaped like an SSTable's (as in the benches).
fn key(i: u64) -> [u8; 16] {
    let mut k = *b"key:\0\0\0\0\0\0\0\0\0\0\0\0";
    k[8..].copy_from_slice(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
    k
}

/// The hashes of run `r`'s keys (`n` each).
fn run_hashes(r: u64, n: u64) -> Vec<KeyHash> {
    (r * n..(r + 1) * n).map(|i| KeyHash::of(&key(i))).collect()
}

/// Adds runs `0..runs` of `n` keys each; the seconds each flush took.
#[inline(never)]
fn flush_all(index: &mut RunIndex, runs: &[Vec<KeyHash>]) -> Vec<f64> {
    let mut secs = Vec::new();
    for (r, hashes) in runs.iter().enumerate() {
        let t = Instant::now();
        index.add_run(r as u64, hashes).unwrap();
        secs.push(t.elapsed().as_secs_f64());
    }
    secs
}

/// Asks keys `from..from + count` (`stride` apart), each for its first run; how many got one.
#[inline(never)]
fn lookups_absent(index: &RunIndex, from: u64, count: u64) -> u64 {
    let mut found = 0;
    for i in from..from + count {
        found += index.runs_for(&key(black_box(i))).next().is_some() as u64;
    }
    found
}

/// [`lookups_absent`] for present keys: key `i · stride mod total`, spread over every run.
#[inline(never)]
fn lookups_present(index: &RunIndex, total: u64, count: u64) -> u64 {
    let mut found = 0;
    for i in 0..count {
        let k = i.wrapping_mul(0x9E37_79B9) % total;
        found += index.runs_for(&key(black_box(k))).next().is_some() as u64;
    }
    found
}

/// A compaction of the older half of the runs into one (id `runs.len()`), every key kept: each
/// kept key's entry retargeted in place, the merged runs' ids swept. Runs merged, keys kept,
/// seconds.
#[inline(never)]
fn compact_half(index: &mut RunIndex, runs: &[Vec<KeyHash>]) -> (usize, usize, f64) {
    let half = runs.len() / 2;
    let merged: Vec<u64> = (0..half as u64).collect();
    let kept: Vec<KeyHash> = runs[..half].concat();
    let t = Instant::now();
    index.compact(&merged, runs.len() as u64, &kept).unwrap();
    (half, kept.len(), t.elapsed().as_secs_f64())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map_or("time", String::as_str);
    let arg = |i: usize, d: u64| args.get(i).map_or(d, |a| a.parse().unwrap());
    let (r, n) = (arg(2, 16), arg(3, 1_000_000));
    let lookups = arg(4, 1 << 20);
    let hashes: Vec<Vec<KeyHash>> = (0..r).map(|t| run_hashes(t, n)).collect();
    let mut index = RunIndex::new(Config::new(n as usize)).unwrap();
    let secs = flush_all(&mut index, &hashes);
    let total = r * n;
    let all: f64 = secs.iter().sum();
    let bits = index.size_in_bytes() as f64 * 8.0 / index.len() as f64;
    match mode {
        "flush" => println!("{} entries, {bits:.2} bits each", index.len()),
        "compact" => {
            let (runs, keys, secs) = compact_half(&mut index, &hashes);
            println!("{runs} runs, {keys} keys kept, {secs:.3} s");
        }
        "absent" => println!("{}", lookups_absent(&index, total + (1 << 40), lookups)),
        "present" => {
            let got = lookups_present(&index, total, lookups);
            assert_eq!(got, lookups, "a present key got no run");
            println!("{got}");
        }
        _ => {
            println!(
                "flush: {r} runs x {n} keys: {:.2} M keys/s in all, first run {:.2}, last {:.2} \
                 ({} entries, {bits:.2} bits each)",
                total as f64 / all / 1e6,
                n as f64 / secs[0] / 1e6,
                n as f64 / secs[secs.len() - 1] / 1e6,
                index.len(),
            );
            // One sbbf-rs-safe filter per run (11 bits a key, as benches/peers.rs), asked
            // newest first until one answers: the per-table read the issue compares with.
            let sbbfs: Vec<sbbf_rs_safe::Filter> = hashes
                .iter()
                .rev()
                .map(|hs| {
                    let mut f = sbbf_rs_safe::Filter::new(11, hs.len());
                    hs.iter().for_each(|h| {
                        f.insert_hash(h.to_u64());
                    });
                    f
                })
                .collect();
            let sbbf = |from: u64, count: u64, present: bool| {
                (0..count)
                    .filter(|&i| {
                        let k = if present {
                            i.wrapping_mul(0x9E37_79B9) % total
                        } else {
                            from + i
                        };
                        let h = KeyHash::of(&key(black_box(k))).to_u64();
                        sbbfs.iter().any(|f| f.contains_hash(h))
                    })
                    .count() as u64
            };
            let rate = |f: &dyn Fn() -> u64| {
                let t = Instant::now();
                black_box(f());
                lookups as f64 / t.elapsed().as_secs_f64() / 1e6
            };
            // The same keys for the batch (runs_for_batch_keys), laid out before timing.
            let absent_keys: Vec<[u8; 16]> =
                (0..lookups).map(|i| key(total + (1 << 40) + i)).collect();
            let present_keys: Vec<[u8; 16]> = (0..lookups)
                .map(|i| key(i.wrapping_mul(0x9E37_79B9) % total))
                .collect();
            let batch = |keys: &[[u8; 16]]| {
                index
                    .runs_for_batch_keys(black_box(keys))
                    .filter_map(|mut runs| runs.next())
                    .count() as u64
            };
            // Five rounds, the contenders interleaved; medians.
            let mut rounds: [Vec<f64>; 6] = Default::default();
            for _ in 0..5 {
                rounds[0].push(rate(&|| lookups_absent(&index, total + (1 << 40), lookups)));
                rounds[1].push(rate(&|| sbbf(total + (1 << 40), lookups, false)));
                rounds[2].push(rate(&|| lookups_present(&index, total, lookups)));
                rounds[3].push(rate(&|| sbbf(0, lookups, true)));
                rounds[4].push(rate(&|| batch(&absent_keys)));
                rounds[5].push(rate(&|| batch(&present_keys)));
            }
            let [a, sa, p, sp, ba, bp] = rounds.map(|mut v| {
                v.sort_by(f64::total_cmp);
                v[2]
            });
            println!(
                "lookups (M/s, medians of 5): absent {a:.2} (sbbf per table {sa:.2}, x{:.2}), \
                 present {p:.2} (sbbf {sp:.2}, x{:.2}); batched: absent {ba:.2} (x{:.2}), \
                 present {bp:.2} (x{:.2})",
                a / sa,
                p / sp,
                ba / sa,
                bp / sp
            );
            let (runs, keys, secs) = compact_half(&mut index, &hashes);
            println!(
                "compaction of {runs} runs, {keys} keys kept: {:.2} M keys/s",
                keys as f64 / secs / 1e6
            );
        }
    }
}
