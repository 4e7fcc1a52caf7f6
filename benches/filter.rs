//! Insert and lookup throughput at 1 M and 16 M items, cuckoo-sst against the `cuckoofilter`
//! crate (the most used Rust cuckoo filter: 8-bit fingerprints, buckets of 4, power-of-two
//! tables, SipHash) in the same run.
//!
//! ```text
//! cargo bench --bench filter                      # everything (about 10 minutes)
//! cargo bench --bench filter -- lookup_miss/1M    # one group and size
//! RUSTFLAGS="-C target-cpu=native" cargo bench --bench filter
//! ```
//!
//! Contenders:
//! * `sst-f16`: plain 16-bit fingerprints, buckets of 4.
//! * `sst-f16-batch`: the same filter through `contains_batch` (hash, prefetch, probe).
//! * `sst-f8`: 8-bit fingerprints, buckets of 4 — the same layout as `cuckoofilter`.
//! * `sst-default`: `Config::new(n)`: 1 % target, 10-bit semi-sorted buckets of 4.
//! * `cuckoofilter`: sized with `with_capacity(n / 0.95)` so that `n` items fit (its table is
//!   rounded up to a power of two).

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cuckoo_sst::{Config, CuckooFilter, FilterBuilder, KeyHash};
use std::hint::black_box;

const SIZES: [(&str, u64); 2] = [("1M", 1_000_000), ("16M", 16_000_000)];
/// Keys probed per iteration; each iteration takes the next window of a pool of `POOL` keys,
/// so that the buckets touched are not the same ones, already cached, every time.
const PROBES: usize = 4096;
const POOL: usize = 1 << 20;

fn key(i: u64) -> [u8; 8] {
    // Spread the ids so that neighbouring keys share nothing.
    (i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_le_bytes()
}

/// `bits`: an explicit plain width, or `None` for the default configuration (1 %: 10-bit
/// semi-sorted buckets of 4).
fn config(n: u64, bits: Option<u32>) -> Config {
    match bits {
        Some(bits) => Config::new(n as usize).fingerprint_bits(bits),
        None => Config::new(n as usize),
    }
}

fn sst(n: u64, bits: Option<u32>) -> CuckooFilter {
    let mut f = CuckooFilter::new(config(n, bits)).unwrap();
    for i in 0..n {
        f.insert(&key(i)).unwrap();
    }
    f
}

fn peer(n: u64) -> cuckoofilter::CuckooFilter<std::collections::hash_map::DefaultHasher> {
    let mut f = cuckoofilter::CuckooFilter::with_capacity((n as f64 / 0.95) as usize);
    for i in 0..n {
        f.add(&key(i)).unwrap();
    }
    f
}

/// Probe keys: `POOL` pseudo-random ids from `0..n` (present) or from `n..2n` (absent).
fn probes(n: u64, present: bool) -> Vec<[u8; 8]> {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    (0..POOL)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            key(x % n + if present { 0 } else { n })
        })
        .collect()
}

fn insert(c: &mut Criterion) {
    let mut g = c.benchmark_group("insert");
    g.sample_size(10);
    for (name, n) in SIZES {
        g.throughput(Throughput::Elements(n));
        for (id, bits) in [
            ("sst-f16", Some(16)),
            ("sst-f8", Some(8)),
            ("sst-default", None),
        ] {
            g.bench_function(BenchmarkId::new(id, name), |b| {
                b.iter_batched(
                    || CuckooFilter::new(config(n, bits)).unwrap(),
                    |mut f| {
                        for i in 0..n {
                            f.insert(&key(i)).unwrap();
                        }
                        f
                    },
                    BatchSize::PerIteration,
                )
            });
        }
        g.bench_function(BenchmarkId::new("cuckoofilter", name), |b| {
            b.iter_batched(
                || cuckoofilter::CuckooFilter::with_capacity((n as f64 / 0.95) as usize),
                |mut f: cuckoofilter::CuckooFilter<std::collections::hash_map::DefaultHasher>| {
                    for i in 0..n {
                        f.add(&key(i)).unwrap();
                    }
                    f
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

/// Building an SSTable's filter from all its keys: `FilterBuilder` (sort, then place in bucket
/// order) against inserting the same keys one by one into a filter of the same size.
fn build(c: &mut Criterion) {
    let mut g = c.benchmark_group("build");
    g.sample_size(10);
    for (name, n) in SIZES {
        g.throughput(Throughput::Elements(n));
        g.bench_function(BenchmarkId::new("sst-builder", name), |b| {
            b.iter(|| {
                let mut builder = FilterBuilder::new(Config::new(n as usize));
                for i in 0..n {
                    builder.add_key(&key(i));
                }
                builder.finish().unwrap()
            })
        });
        g.bench_function(BenchmarkId::new("sst-one-by-one", name), |b| {
            b.iter(|| {
                let mut f = CuckooFilter::new(Config::new(n as usize)).unwrap();
                for i in 0..n {
                    f.insert(&key(i)).unwrap();
                }
                f
            })
        });
    }
    g.finish();
}

fn lookups(c: &mut Criterion) {
    for (name, n) in SIZES {
        let f16 = sst(n, Some(16));
        let f8 = sst(n, Some(8));
        let def = sst(n, None);
        let cf = peer(n);
        let bits = |bytes: usize| bytes as f64 * 8.0 / n as f64;
        eprintln!(
            "{name}: bits/item: sst-f16 {:.2}, sst-f8 {:.2}, sst-default {:.2}, cuckoofilter {:.2}",
            bits(f16.size_in_bytes()),
            bits(f8.size_in_bytes()),
            bits(def.size_in_bytes()),
            bits(cf.memory_usage()),
        );
        for (group, present) in [("lookup_hit", true), ("lookup_miss", false)] {
            let pool = probes(n, present);
            let at = std::cell::Cell::new(0);
            let window = || {
                at.set((at.get() + PROBES) % POOL);
                &pool[at.get()..at.get() + PROBES]
            };
            let mut g = c.benchmark_group(group);
            g.throughput(Throughput::Elements(PROBES as u64));
            g.bench_function(BenchmarkId::new("sst-f16", name), |b| {
                b.iter(|| {
                    window()
                        .iter()
                        .filter(|k| f16.contains(black_box(&k[..])))
                        .count()
                })
            });
            let mut hashes = vec![KeyHash::of(b""); PROBES];
            let mut out = vec![false; PROBES];
            g.bench_function(BenchmarkId::new("sst-f16-batch", name), |b| {
                b.iter(|| {
                    for (h, k) in hashes.iter_mut().zip(window()) {
                        *h = KeyHash::of(black_box(&k[..]));
                    }
                    f16.contains_batch(&hashes, &mut out);
                    out.iter().filter(|&&x| x).count()
                })
            });
            g.bench_function(BenchmarkId::new("sst-default", name), |b| {
                b.iter(|| {
                    window()
                        .iter()
                        .filter(|k| def.contains(black_box(&k[..])))
                        .count()
                })
            });
            g.bench_function(BenchmarkId::new("sst-f8", name), |b| {
                b.iter(|| {
                    window()
                        .iter()
                        .filter(|k| f8.contains(black_box(&k[..])))
                        .count()
                })
            });
            g.bench_function(BenchmarkId::new("cuckoofilter", name), |b| {
                b.iter(|| {
                    window()
                        .iter()
                        .filter(|k| cf.contains(black_box(*k)))
                        .count()
                })
            });
            g.finish();
        }
    }
}

criterion_group!(benches, lookups, insert, build);
criterion_main!(benches);
