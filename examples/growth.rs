//! A growable filter grown from 1 000 keys to many, against a filter sized for them: the
//! insert rate over the whole growth, the longest single insert (the pause a writer sees),
//! space and false positives.
//!
//! ```text
//! cargo run --release --example growth                # 32 M keys (about a minute)
//! cargo run --release --example growth -- 1000000     # 1 M keys
//! ```

use cuckoo_sst::{Config, CuckooFilter, ScalableCuckooFilter};
use std::time::{Duration, Instant};

/// Key `i`: 16 bytes, shaped like an SSTable's (as in the benches).
fn key(i: u64) -> [u8; 16] {
    let mut k = *b"key:\0\0\0\0\0\0\0\0\0\0\0\0";
    k[8..].copy_from_slice(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
    k
}

/// The time each insert of `n` keys took, sorted, and the total.
fn timed(n: u64, mut insert: impl FnMut(&[u8; 16])) -> (Vec<Duration>, Duration) {
    let mut each = Vec::with_capacity(n as usize);
    let start = Instant::now();
    for i in 0..n {
        let k = key(i);
        let t = Instant::now();
        insert(&k);
        each.push(t.elapsed());
    }
    let total = start.elapsed();
    each.sort_unstable();
    (each, total)
}

fn report(name: &str, n: u64, each: &[Duration], total: Duration) -> f64 {
    let rate = n as f64 / total.as_secs_f64() / 1e6;
    let at = |q: f64| each[((each.len() - 1) as f64 * q) as usize];
    let over = |d: Duration| each.iter().rev().take_while(|&&e| e > d).count();
    println!(
        "{name:>12}: {rate:6.2} M inserts/s; per insert: median {:?}, 99.99 % {:?}, longest \
         {:?}; {} over 100 µs, {} over 1 ms",
        at(0.5),
        at(0.9999),
        each[each.len() - 1],
        over(Duration::from_micros(100)),
        over(Duration::from_millis(1)),
    );
    rate
}

fn absent_rate(n: u64, contains: impl Fn(&[u8; 16]) -> bool) -> f64 {
    let probes = 1_000_000;
    let hits = (0..probes).filter(|i| contains(&key(n + i))).count();
    hits as f64 / probes as f64
}

fn main() -> Result<(), cuckoo_sst::Error> {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("a number of keys"))
        .unwrap_or(32_000_000);
    println!("{n} keys of 16 bytes, 1 % target");

    let mut right = CuckooFilter::new(Config::new(n as usize))?;
    let (each, total) = timed(n, |k| right.insert(k).expect("sized for the keys"));
    let right_rate = report("right-sized", n, &each, total);
    drop(each);

    let mut grown = ScalableCuckooFilter::new(Config::new(1_000))?;
    let (each, total) = timed(n, |k| grown.insert(k).expect("no limit is set"));
    let grown_rate = report("grown", n, &each, total);
    println!(
        "grown / right-sized insert rate: {:.2}",
        grown_rate / right_rate
    );

    assert!((0..n).all(|i| grown.contains(&key(i))), "a false negative");
    let bits = |bytes: usize| bytes as f64 * 8.0 / n as f64;
    println!(
        "right-sized: {:.2} bits/key, FPR {:.3e} (bound {:.3e})",
        bits(right.size_in_bytes()),
        absent_rate(n, |k| right.contains(k)),
        right.expected_fpr()
    );
    println!(
        "      grown: {:.2} bits/key, FPR {:.3e} (bound {:.3e}), {} level(s)",
        bits(grown.size_in_bytes()),
        absent_rate(n, |k| grown.contains(k)),
        grown.expected_fpr(),
        grown.levels()
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
    Ok(())
}
