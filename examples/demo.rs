//! The main job: build filters from a few million keys and report what they cost and how
//! well they answer — size, bits per item, measured false-positive rate, throughput.
//!
//! ```text
//! cargo run --release --example demo            # 4 M keys
//! cargo run --release --example demo -- 1000000 # another key count
//! ```

use cuckoo_sst::{Config, CuckooFilter, KeyHash};
use std::time::Instant;

fn key(i: u64) -> [u8; 16] {
    // Keys shaped like an SSTable's: a prefix and a big-endian id.
    let mut k = *b"user:\0\0\0\0\0\0\0\0\0\0\0";
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

fn mops(n: u64, secs: f64) -> f64 {
    n as f64 / secs / 1e6
}

fn main() -> Result<(), cuckoo_sst::Error> {
    let n: u64 = match std::env::args().nth(1) {
        Some(s) => s.parse().expect("the argument is the number of keys"),
        None => 4_000_000,
    };
    println!("cuckoo-sst demo: {n} keys per filter, {n} absent keys probed\n");
    println!(
        "{:>8} {:>3} {:>5} {:>9} {:>9} {:>11} {:>11} {:>9} {:>9} {:>9}",
        "target", "b", "bits", "MiB", "bits/key", "FPR", "bound", "insert", "hit", "miss"
    );
    println!("{:>90}", "(Mops/s)");
    for (fpr, b) in [(0.03, 4), (0.01, 4), (0.001, 8), (0.0001, 4), (1e-6, 4)] {
        let mut f = CuckooFilter::new(
            Config::new(n as usize)
                .false_positive_rate(fpr)
                .bucket_size(b),
        )?;

        let t = Instant::now();
        for i in 0..n {
            f.insert(&key(i))?;
        }
        let insert = mops(n, t.elapsed().as_secs_f64());

        let t = Instant::now();
        let found = (0..n).filter(|&i| f.contains(&key(i))).count() as u64;
        let hit = mops(n, t.elapsed().as_secs_f64());
        assert_eq!(found, n, "a false negative: this must never happen");

        let t = Instant::now();
        let fp = (n..2 * n).filter(|&i| f.contains(&key(i))).count() as u64;
        let miss = mops(n, t.elapsed().as_secs_f64());

        println!(
            "{:>8} {:>3} {:>5} {:>9.1} {:>9.2} {:>11.3e} {:>11.3e} {:>9.1} {:>9.1} {:>9.1}",
            format!("{}%", fpr * 100.0),
            f.bucket_size(),
            f.fingerprint_bits(),
            f.size_in_bytes() as f64 / (1 << 20) as f64,
            f.size_in_bytes() as f64 * 8.0 / n as f64,
            fp as f64 / n as f64,
            f.expected_fpr(),
            insert,
            hit,
            miss,
        );
    }

    // Hash once, probe many: a store checks every SSTable's filter with one hash per key.
    let tables: Vec<CuckooFilter> = (0..8)
        .map(|t| {
            let mut f = CuckooFilter::new(Config::new(100_000).seed(t))?;
            for i in 0..100_000 {
                f.insert(&key(t * 1_000_000 + i))?;
            }
            Ok(f)
        })
        .collect::<Result<_, cuckoo_sst::Error>>()?;
    let h = KeyHash::of(&key(3 * 1_000_000 + 42));
    let holders: Vec<usize> = tables
        .iter()
        .enumerate()
        .filter(|(_, f)| f.contains_hash(h))
        .map(|(i, _)| i)
        .collect();
    println!("\none hash, 8 SSTable filters: the key may be in tables {holders:?} (it is in 3)");
    Ok(())
}
