//! The space/speed trade-off per layout at 1 M keys: lookups of absent and present keys, one
//! at a time and batched, and inserts, for plain, packed and semi-sorted buckets, in one run so
//! the numbers compare. 16-byte keys.
//!
//! ```text
//! cargo bench --bench layouts
//! ```
//!
//! Each contender's bits per key and cache lines per lookup are printed before its numbers.

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cuckoo_sst::{Config, CuckooFilter, Encoding, FilterBuilder};
use std::cell::Cell;
use std::hint::black_box;

const N: u64 = 1_000_000;
const PROBES: usize = 1 << 16;
const POOL: usize = 1 << 22;

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

fn key(i: u64) -> [u8; 16] {
    let mut k = *b"key:\0\0\0\0\0\0\0\0\0\0\0\0";
    k[8..].copy_from_slice(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
    k
}

fn config(b: usize, bits: u32, e: Encoding) -> Config {
    Config::new(N as usize)
        .bucket_size(b)
        .fingerprint_bits(bits)
        .encoding(e)
}

fn pool(present: bool) -> Vec<[u8; 16]> {
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
    let pools = [("absent", pool(false)), ("present", pool(true))];
    for (name, b, bits, e) in LAYOUTS {
        let mut builder = FilterBuilder::new(config(b, bits, e));
        for i in 0..N {
            builder.add_key(&key(i));
        }
        let f = builder.finish().unwrap();
        eprintln!(
            "{name}: {:.2} bits/key, {:.3} cache lines per lookup, FPR bound {:.2e}",
            f.size_in_bytes() as f64 * 8.0 / N as f64,
            f.as_filter_ref().cache_lines_per_lookup(),
            f.expected_fpr()
        );
        for (group, keys) in &pools {
            let at = Cell::new(0);
            let window = || {
                at.set((at.get() + PROBES) % POOL);
                &keys[at.get()..at.get() + PROBES]
            };
            let mut g = c.benchmark_group(format!("layout-{group}/1M"));
            g.throughput(Throughput::Elements(PROBES as u64));
            g.bench_function(BenchmarkId::from_parameter(name), |bench| {
                bench.iter(|| {
                    window()
                        .iter()
                        .filter(|k| f.contains(black_box(&k[..])))
                        .count()
                })
            });
            let mut out = vec![false; PROBES];
            g.bench_function(
                BenchmarkId::from_parameter(format!("{name}-batch")),
                |bench| {
                    bench.iter(|| {
                        f.contains_batch_keys(black_box(window()), &mut out);
                        out.iter().filter(|&&x| x).count()
                    })
                },
            );
            g.finish();
        }
    }
}

fn inserts(c: &mut Criterion) {
    let mut g = c.benchmark_group("layout-insert/1M");
    g.sample_size(10);
    g.throughput(Throughput::Elements(N));
    for (name, b, bits, e) in LAYOUTS {
        g.bench_function(BenchmarkId::from_parameter(name), |bench| {
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
