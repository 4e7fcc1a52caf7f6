//! Opening filter files of 1 MiB and 256 MiB: `open_unverified` must not grow with the size,
//! nor must its first lookup (which checks only the chunks it reads); `open` (every checksum,
//! every slot counted) should run at memory/CRC speed. Then the price of first-touch checking
//! once every chunk has passed: lookups in a mapped file against the same lookups through a
//! `FilterRef` over the same bytes, which checks nothing.
//!
//! ```text
//! cargo bench --bench open
//! ```
//!
//! The files are in the page cache (they were just written), so this measures the CPU cost of
//! opening, not the disk. The 256 MiB filter is empty — verification reads every byte whatever
//! they hold — which keeps the set-up fast. Before the criterion groups, the bench prints the
//! best of 50 runs of `open_unverified` plus one lookup for each size.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cuckoo_sst::{Config, CuckooFilter, FilterBuilder, FilterRef, KeyHash, MappedFilter};
use std::hint::black_box;
use std::time::{Duration, Instant};

fn files(dir: &std::path::Path) -> Vec<(&'static str, std::path::PathBuf, Vec<u8>)> {
    // Capacities whose plain 16-bit tables take about 1 MiB and 256 MiB.
    [("1MiB", 498_000usize, true), ("256MiB", 127_500_000, false)]
        .into_iter()
        .map(|(name, capacity, fill)| {
            let mut f = CuckooFilter::new(Config::new(capacity).fingerprint_bits(16)).unwrap();
            if fill {
                for i in 0..capacity as u64 {
                    f.insert(&i.to_le_bytes()).unwrap();
                }
            }
            let path = dir.join(name);
            f.save(&path).unwrap();
            (name, path, f.to_bytes())
        })
        .collect()
}

/// `open_unverified` and one lookup, best of 50 (each opens the file anew: a new mapping, no
/// chunk checked).
fn first_lookup_best_of_50(path: &std::path::Path) -> Duration {
    (0..50)
        .map(|i: u64| {
            let t = Instant::now();
            let m = MappedFilter::open_unverified(path).unwrap();
            black_box(m.contains(&(i * 7919).to_le_bytes()));
            t.elapsed()
        })
        .min()
        .unwrap()
}

fn open(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let files = files(dir.path());
    let best: Vec<Duration> = files
        .iter()
        .map(|(_, path, _)| first_lookup_best_of_50(path))
        .collect();
    for ((name, _, bytes), best) in files.iter().zip(&best) {
        eprintln!(
            "{name} ({} bytes): open_unverified + one lookup, best of 50: {best:?}",
            bytes.len()
        );
    }
    eprintln!(
        "256 MiB / 1 MiB: {:.2}",
        best[1].as_secs_f64() / best[0].as_secs_f64()
    );
    let mut g = c.benchmark_group("open");
    g.sample_size(20);
    for (name, path, bytes) in &files {
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function(BenchmarkId::new("open_unverified", name), |b| {
            b.iter(|| MappedFilter::open_unverified(path).unwrap())
        });
        let mut i = 0u64;
        g.bench_function(BenchmarkId::new("open_unverified+lookup", name), |b| {
            b.iter(|| {
                i += 1;
                let m = MappedFilter::open_unverified(path).unwrap();
                m.contains(&(i * 7919).to_le_bytes())
            })
        });
        g.bench_function(BenchmarkId::new("open", name), |b| {
            b.iter(|| MappedFilter::open(path).unwrap())
        });
        g.bench_function(BenchmarkId::new("FilterRef::from_bytes", name), |b| {
            b.iter(|| FilterRef::from_bytes(bytes).unwrap().len())
        });
        g.bench_function(
            BenchmarkId::new("FilterRef::from_bytes_assume_verified", name),
            |b| b.iter(|| FilterRef::from_bytes_assume_verified(bytes).unwrap().len()),
        );
        g.bench_function(BenchmarkId::new("crc32fast", name), |b| {
            b.iter(|| crc32fast::hash(bytes))
        });
    }
    g.finish();
}

/// Lookups once every chunk has passed: a mapped file (one relaxed load and a branch more per
/// lookup) against a `FilterRef` over the same bytes, single and batched, 1 M keys (default
/// layout), 65 536 absent keys per iteration.
fn checked_lookups(c: &mut Criterion) {
    const N: u64 = 1_000_000;
    let key = |i: u64| {
        let mut k = *b"key:\0\0\0\0\0\0\0\0\0\0\0\0";
        k[8..].copy_from_slice(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
        k
    };
    let mut b = FilterBuilder::new(Config::new(N as usize));
    for i in 0..N {
        b.add_key(&key(i));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("1M");
    b.finish().unwrap().save(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let view = FilterRef::from_bytes(&bytes).unwrap();
    let mapped = MappedFilter::open_unverified(&path).unwrap();
    mapped.verify().unwrap();
    assert!(mapped.health().is_whole());
    let keys: Vec<[u8; 16]> = (N..N + (1 << 16)).map(key).collect();
    let hashes: Vec<KeyHash> = keys.iter().map(|k| KeyHash::of(k)).collect();
    let mut out = vec![false; keys.len()];
    let mut g = c.benchmark_group("checked-lookups/1M");
    g.throughput(Throughput::Elements(keys.len() as u64));
    g.bench_function("FilterRef", |b| {
        b.iter(|| {
            keys.iter()
                .filter(|k| view.contains(black_box(&k[..])))
                .count()
        })
    });
    g.bench_function("MappedFilter", |b| {
        b.iter(|| {
            keys.iter()
                .filter(|k| mapped.contains(black_box(&k[..])))
                .count()
        })
    });
    g.bench_function("FilterRef-batch", |b| {
        b.iter(|| {
            view.contains_batch(black_box(&hashes), &mut out);
            out.iter().filter(|&&x| x).count()
        })
    });
    g.bench_function("MappedFilter-batch", |b| {
        b.iter(|| {
            mapped.contains_batch(black_box(&hashes), &mut out);
            out.iter().filter(|&&x| x).count()
        })
    });
    g.finish();
}

criterion_group!(benches, open, checked_lookups);
criterion_main!(benches);
