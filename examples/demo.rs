//! The main job: build filters from a few million keys the way a storage engine would, and
//! report what they cost and how well they answer — size, bits per item, measured
//! false-positive rate, throughput — then save one, map it, and query it in place.
//!
//! ```text
//! cargo run --release --example demo            # 4 M keys
//! cargo run --release --example demo -- 1000000 # another key count
//! ```

use cuckoo_sst::{
    Config, CuckooFilter, Encoding, FilterBuilder, KeyHash, MappedFilter, ScalableCuckooFilter,
};
use std::time::Instant;

fn key(i: u64) -> [u8; 16] {
    // Keys shaped like an SSTable's: a prefix and a big-endian id.
    let mut k = *b"user:\0\0\0\0\0\0\0\0\0\0\0";
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

fn mops(n: u64, t: Instant) -> f64 {
    n as f64 / t.elapsed().as_secs_f64() / 1e6
}

/// Measured FPR over `n` absent keys and the lookup rate for them.
fn probe_absent(n: u64, contains: impl Fn(&[u8]) -> bool) -> (f64, f64) {
    let t = Instant::now();
    let fp = (n..2 * n).filter(|&i| contains(&key(i))).count() as u64;
    (fp as f64 / n as f64, mops(n, t))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = match std::env::args().nth(1) {
        Some(s) => s.parse()?,
        None => 4_000_000,
    };
    println!("cuckoo-sst demo: {n} keys per filter, {n} absent keys probed\n");
    println!(
        "{:>8} {:>11} {:>3} {:>4} {:>7} {:>8} {:>10} {:>10} {:>7} {:>7} {:>7}",
        "target", "encoding", "b", "f", "MiB", "bits/key", "FPR", "bound", "insert", "hit", "miss"
    );
    println!("{:>97}", "(M/s)");
    let rows = [
        (0.01, None),
        (0.01, Some(Encoding::Plain)),
        (0.001, None),
        (0.0001, None),
        (0.00001, None),
    ];
    for (fpr, encoding) in rows {
        let mut config = Config::new(n as usize).false_positive_rate(fpr);
        if let Some(e) = encoding {
            config = config.encoding(e);
        }
        let mut f = CuckooFilter::new(config)?;
        let t = Instant::now();
        for i in 0..n {
            f.insert(&key(i))?;
        }
        let insert = mops(n, t);
        let t = Instant::now();
        let found = (0..n).filter(|&i| f.contains(&key(i))).count() as u64;
        let hit = mops(n, t);
        assert_eq!(found, n, "a false negative: this must never happen");
        let (measured, miss) = probe_absent(n, |k| f.contains(k));
        println!(
            "{:>8} {:>11} {:>3} {:>4} {:>7.1} {:>8.2} {:>10.3e} {:>10.3e} {:>7.1} {:>7.1} {:>7.1}",
            format!("{}%", fpr * 100.0),
            f.encoding().to_string(),
            f.bucket_size(),
            f.fingerprint_bits(),
            f.size_in_bytes() as f64 / (1 << 20) as f64,
            f.size_in_bytes() as f64 * 8.0 / n as f64,
            measured,
            f.expected_fpr(),
            insert,
            hit,
            miss,
        );
    }

    // An SSTable flush: the builder sees every version of every key, sizes the filter for
    // the distinct ones, and the filter is saved beside the table and mapped back.
    let t = Instant::now();
    let mut builder = FilterBuilder::new(Config::new(0).false_positive_rate(0.01));
    for version in 0..2 {
        for i in 0..n {
            let _ = version; // two versions of every user key
            builder.add_key(&key(i));
        }
    }
    let filter = builder.finish()?;
    let built = t.elapsed();
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("000042.filter");
    let t = Instant::now();
    filter.save(&path)?;
    let saved = t.elapsed();
    let t = Instant::now();
    let mapped = MappedFilter::open(&path)?;
    let opened = t.elapsed();
    let t = Instant::now();
    let unverified = MappedFilter::open_unverified(&path)?;
    let opened_unverified = t.elapsed();
    let (measured, miss) = probe_absent(n, |k| mapped.contains(k));
    assert!(unverified.contains(&key(0)));
    println!(
        "\nflush: {} keys added, {} distinct, built in {built:.2?} ({:.2} bits/key); saved in \
         {saved:.2?} (atomic, fsynced); open {opened:.2?} (all checksums), open_unverified \
         {opened_unverified:.2?}; mapped: FPR {measured:.3e}, {miss:.1} M absent lookups/s",
        2 * n,
        mapped.len(),
        mapped.size_in_bytes() as f64 * 8.0 / mapped.len() as f64,
    );

    // A memtable whose size is unknown: the filter grows in place and keeps its bound.
    let right_sized_miss = miss;
    let mut chain = ScalableCuckooFilter::new(Config::new(10_000).false_positive_rate(0.01))?;
    let mut longest = std::time::Duration::ZERO;
    let t = Instant::now();
    for i in 0..n {
        let one = Instant::now();
        chain.insert(&key(i))?;
        longest = longest.max(one.elapsed());
    }
    let insert = mops(n, t);
    let (measured, grown_miss) = probe_absent(n, |k| chain.contains(k));
    println!(
        "growable: from 10 000 to {n} keys in {} level(s), {insert:.1} M inserts/s (longest \
         insert {longest:.2?}), FPR {measured:.3e} (bound {:.3e}), {:.2} bits/key, \
         {grown_miss:.1} M absent lookups/s ({:.2}x the flushed filter's)",
        chain.levels(),
        chain.expected_fpr(),
        chain.size_in_bytes() as f64 * 8.0 / n as f64,
        grown_miss / right_sized_miss,
    );

    // Hash once, probe many: a point lookup checks every SSTable's filter with one hash.
    let tables: Vec<CuckooFilter> = (0..8)
        .map(|t| {
            let mut b = FilterBuilder::new(Config::new(0).seed(t));
            for i in 0..100_000 {
                b.add_key(&key(t * 1_000_000 + i));
            }
            b.finish()
        })
        .collect::<Result<_, _>>()?;
    let h = KeyHash::of(&key(3 * 1_000_000 + 42));
    let holders: Vec<usize> = tables
        .iter()
        .enumerate()
        .filter(|(_, f)| f.contains_hash(h))
        .map(|(i, _)| i)
        .collect();
    println!("one hash, 8 SSTable filters: the key may be in tables {holders:?} (it is in 3)");
    Ok(())
}
