//! A growable filter grown a thousandfold, against the growable peer (sile's
//! `scalable_cuckoo_filter`) and a filter sized for the keys: the insert rate over the whole
//! growth, the longest single insert (the pause a writer sees), space and false positives, and
//! what one hot key does to it.
//!
//! ```text
//! cargo run --release --example growth                 # 32 M keys from 32 000 (about 3 minutes)
//! cargo run --release --example growth -- 1000000      # 1 M keys from 1 000
//! cargo run --release --example growth -- 1000000 10   # from 10 keys
//! ```
//!
//! The three filters are filled in lockstep, a chunk of 50 000 keys at a time each, in a
//! rotating order, so that a drift of this machine's speed (±15 % between runs on a shared
//! VM) reaches all three alike: the rates are comparable within the run.

use cuckoo_sst::{Config, CuckooFilter, Error, ScalableCuckooFilter};
use std::time::{Duration, Instant};

type Sile = scalable_cuckoo_filter::ScalableCuckooFilter<[u8; 16]>;

/// Key `i`: 16 bytes, shaped like an SSTable's (as in the benches).
fn key(i: u64) -> [u8; 16] {
    let mut k = *b"key:\0\0\0\0\0\0\0\0\0\0\0\0";
    k[8..].copy_from_slice(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
    k
}

fn absent_rate(n: u64, contains: impl Fn(&[u8; 16]) -> bool) -> f64 {
    let probes = 1_000_000;
    let hits = (0..probes).filter(|i| contains(&key(n + i))).count();
    hits as f64 / probes as f64
}

fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args
        .next()
        .map(|a| a.parse().expect("a number of keys"))
        .unwrap_or(32_000_000);
    let from: u64 = args
        .next()
        .map(|a| a.parse().expect("a starting capacity"))
        .unwrap_or((n / 1000).max(1));
    println!("{n} keys of 16 bytes, 1 % target; growable filters from {from}");

    let mut grown = ScalableCuckooFilter::new(Config::new(from as usize))?;
    let mut sile = Sile::new(from as usize, 0.01);
    let mut right = CuckooFilter::new(Config::new(n as usize))?;
    let mut spent = [Duration::ZERO; 3];
    const CHUNK: u64 = 50_000;
    for (c, start) in (0..n).step_by(CHUNK as usize).enumerate() {
        let end = (start + CHUNK).min(n);
        for turn in 0..3 {
            let t = Instant::now();
            match (c + turn) % 3 {
                0 => (start..end).for_each(|i| grown.insert(&key(i)).expect("no limit is set")),
                1 => (start..end).for_each(|i| sile.insert(&key(i))),
                _ => (start..end).for_each(|i| right.insert(&key(i)).expect("sized for them")),
            }
            spent[(c + turn) % 3] += t.elapsed();
        }
    }
    let rate = |d: Duration| n as f64 / d.as_secs_f64() / 1e6;
    let [g, s, r] = spent.map(rate);
    println!(
        "inserts, M/s: grown {g:.2}, scalable_cuckoo_filter {s:.2}, right-sized {r:.2}; \
         grown / scalable_cuckoo_filter {:.2}, grown / right-sized {:.2}",
        g / s,
        g / r
    );

    // The pauses a writer sees: every insert timed, in a second filter grown the same way.
    let mut again = ScalableCuckooFilter::new(Config::new(from as usize))?;
    let mut each: Vec<Duration> = (0..n)
        .map(|i| {
            let k = key(i);
            let t = Instant::now();
            again.insert(&k).expect("no limit is set");
            t.elapsed()
        })
        .collect();
    each.sort_unstable();
    let at = |q: f64| each[((each.len() - 1) as f64 * q) as usize];
    let over = |d: Duration| each.iter().rev().take_while(|&&e| e > d).count();
    println!(
        "grown, per insert: median {:?}, 99.99 % {:?}, longest {:?}; {} over 100 µs, {} over 1 ms",
        at(0.5),
        at(0.9999),
        each[each.len() - 1],
        over(Duration::from_micros(100)),
        over(Duration::from_millis(1)),
    );
    drop((again, each));

    assert!((0..n).all(|i| grown.contains(&key(i))), "a false negative");
    let bits = |bytes: f64| bytes * 8.0 / n as f64;
    println!(
        "right-sized: {:.2} bits/key, FPR {:.3e} (bound {:.3e})",
        bits(right.size_in_bytes() as f64),
        absent_rate(n, |k| right.contains(k)),
        right.expected_fpr()
    );
    println!(
        "      grown: {:.2} bits/key, FPR {:.3e} (bound {:.3e}), {} level(s)",
        bits(grown.size_in_bytes() as f64),
        absent_rate(n, |k| grown.contains(k)),
        grown.expected_fpr(),
        grown.levels()
    );
    println!(
        "   scalable_cuckoo_filter: {:.2} bits/key, FPR {:.3e}",
        bits(sile.bits() as f64 / 8.0),
        absent_rate(n, |k| sile.contains(k)),
    );
    for k in 0..grown.levels() {
        let l = grown.level(k).expect("a level");
        println!(
            "   level {k}: {} keys in {} buckets of {} × {} bits, bound {:.3e}",
            l.len(),
            l.num_buckets(),
            l.bucket_size(),
            l.fingerprint_bits(),
            l.expected_fpr()
        );
    }

    // One hot key: a thousand inserts of it. Its two buckets take 2b copies; the rest are
    // refused, and the filter neither grows nor slows.
    let (levels, bytes) = (grown.levels(), grown.size_in_bytes());
    let (mut taken, mut refused) = (0, 0);
    let t = Instant::now();
    for _ in 0..1000 {
        match grown.insert(b"a hot key") {
            Ok(()) => taken += 1,
            Err(Error::TooManyCopies) => refused += 1,
            Err(e) => return Err(e),
        }
    }
    let per = t.elapsed() / 1000;
    println!(
        "hot key, 1 000 inserts: {taken} taken, {refused} refused (TooManyCopies), {per:?} each; \
         levels {levels} -> {}, bytes {bytes} -> {}",
        grown.levels(),
        grown.size_in_bytes()
    );
    assert_eq!((grown.levels(), taken), (levels, 8));
    Ok(())
}
