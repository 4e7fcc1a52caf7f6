//! The space/speed trade-off per layout at 1 M items: lookups (present, absent) and inserts
//! for plain, packed and semi-sorted buckets, in one run so the numbers compare.
//!
//! ```text
//! cargo bench --bench layouts
//! ```
//!
//! Each contender's bits per item and cache lines per lookup are printed before its numbers.

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cuckoo_sst::{Config, CuckooFilter, Encoding};
use std::cell::Cell;
use std::hint::black_box;

const N: u64 = 1_000_000;
const PROBES: usize = 4096;
const POOL: usize = 1 << 20;

const LAYOUTS: [(&str, usize, u32, Encoding); 10] = [
    ("plain-b4-f8", 4, 8, Encoding::Plain),
    ("plain-b4-f16", 4, 16, Encoding::Plain),
    ("plain-b8-f16", 8, 16, Encoding::Plain),
    ("packed-b2-f9", 2, 9, Encoding::Packed),
    ("packed-b4-f10", 4, 10, Encoding::Packed),
    ("packed-b8-f11", 8, 11, Encoding::Packed),
    ("packed-b4-f13", 4, 13, Encoding::Packed),
    ("semi-b4-f10", 4, 10, Encoding::SemiSorted),
    ("semi-b4-f13", 4, 13, Encoding::SemiSorted),
    ("semi-b4-f17", 4, 17, Encoding::SemiSorted),
];

fn key(i: u64) -> [u8; 8] {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes()
}

fn config(b: usize, bits: u32, e: Encoding) -> Config {
    Config::new(N as usize)
        .bucket_size(b)
        .fingerprint_bits(bits)
        .encoding(e)
}

fn pool(present: bool) -> Vec<[u8; 8]> {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    (0..POOL)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            key(x % N + if present { 0 } else { N })
        })
        .collect()
}

fn lookups(c: &mut Criterion) {
    let pools = [("lookup_hit", pool(true)), ("lookup_miss", pool(false))];
    for (name, b, bits, e) in LAYOUTS {
        let mut f = CuckooFilter::new(config(b, bits, e)).unwrap();
        for i in 0..N {
            f.insert(&key(i)).unwrap();
        }
        eprintln!(
            "{name}: {:.2} bits/item, {:.3} cache lines per lookup, FPR bound {:.2e}",
            f.size_in_bytes() as f64 * 8.0 / N as f64,
            f.as_filter_ref().cache_lines_per_lookup(),
            f.expected_fpr()
        );
        for (group, keys) in &pools {
            let at = Cell::new(0);
            let mut g = c.benchmark_group(*group);
            g.throughput(Throughput::Elements(PROBES as u64));
            g.bench_function(BenchmarkId::new(name, "1M"), |bench| {
                bench.iter(|| {
                    at.set((at.get() + PROBES) % POOL);
                    let w = &keys[at.get()..at.get() + PROBES];
                    w.iter().filter(|k| f.contains(black_box(&k[..]))).count()
                })
            });
            g.finish();
        }
    }
}

fn inserts(c: &mut Criterion) {
    let mut g = c.benchmark_group("insert");
    g.sample_size(10);
    g.throughput(Throughput::Elements(N));
    for (name, b, bits, e) in LAYOUTS {
        g.bench_function(BenchmarkId::new(name, "1M"), |bench| {
            bench.iter_batched(
                || CuckooFilter::new(config(b, bits, e)).unwrap(),
                |mut f| {
                    for i in 0..N {
                        f.insert(&key(i)).unwrap();
                    }
                    f
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, lookups, inserts);
criterion_main!(benches);
