//! cuckoo-sst against the fastest filters of its size, in one run: `xorf`'s BinaryFuse8 (a
//! static filter, ~9 bits/key) and `sbbf-rs-safe`'s split-block Bloom filter (Parquet's
//! layout, AVX2 when the CPU has it) at 11 bits/key. 16-byte keys; every filter hashes the key
//! bytes as its users would: cuckoo-sst takes the bytes, the peers take XXH3-64 of them.
//!
//! ```text
//! cargo bench --bench peers                   # 1 M and 32 M keys (about 25 minutes)
//! cargo bench --bench peers -- /1M            # one size
//! RUSTFLAGS="-C target-cpu=native" cargo bench --bench peers
//! ```
//!
//! Groups: `absent/<n>` and `present/<n>` (lookups of keys not in / in the filter, 65 536 per
//! iteration from a pool of 4 M, so the buckets touched are not the ones cached by the last
//! iteration), `build/<n>` (from the keys to a filter, hashing included). Before each size the
//! bench prints every contender's bits per key and false-positive rate over the absent pool.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cuckoo_sst::{Config, CuckooFilter, Encoding, FilterBuilder};
use std::cell::Cell;
use std::hint::black_box;
use xorf::{BinaryFuse8, Filter as _};
use xxhash_rust::xxh3::xxh3_64;

const SIZES: [(&str, u64); 2] = [("1M", 1_000_000), ("32M", 32_000_000)];
const PROBES: usize = 1 << 16;
const POOL: usize = 1 << 22;

/// Key `i`: 16 bytes, shaped like an SSTable's (a prefix, then a big-endian id).
fn key(i: u64) -> [u8; 16] {
    let mut k = *b"key:\0\0\0\0\0\0\0\0\0\0\0\0";
    k[8..].copy_from_slice(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
    k
}

/// `POOL` keys drawn from ids `0..n` (present) or `n..2n` (absent).
fn pool(n: u64, present: bool) -> Vec<[u8; 16]> {
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

fn sst(n: u64, encoding: Option<Encoding>) -> CuckooFilter {
    let mut config = Config::new(n as usize);
    if let Some(e) = encoding {
        config = config.encoding(e);
    }
    let mut b = FilterBuilder::new(config);
    for i in 0..n {
        b.add_key(&key(i));
    }
    b.finish().unwrap()
}

fn sbbf(n: u64) -> sbbf_rs_safe::Filter {
    let mut f = sbbf_rs_safe::Filter::new(11, n as usize);
    for i in 0..n {
        f.insert_hash(xxh3_64(&key(i)));
    }
    f
}

fn bfuse8(n: u64) -> BinaryFuse8 {
    let hashes: Vec<u64> = (0..n).map(|i| xxh3_64(&key(i))).collect();
    BinaryFuse8::try_from(&hashes).unwrap()
}

fn lookups(c: &mut Criterion) {
    for (size, n) in SIZES {
        let default = sst(n, None);
        let plain = sst(n, Some(Encoding::Plain));
        let bloom = sbbf(n);
        let fuse = bfuse8(n);
        let pools = [("absent", pool(n, false)), ("present", pool(n, true))];
        let rate = |f: &dyn Fn(&[u8; 16]) -> bool| {
            pools[0].1.iter().filter(|k| f(k)).count() as f64 / POOL as f64
        };
        let bits = |bytes: usize| bytes as f64 * 8.0 / n as f64;
        eprintln!("{size}: bits/key · FPR");
        eprintln!(
            "  sst-default ({:?} b={} f={}): {:.2} · {:.3e}",
            default.encoding(),
            default.bucket_size(),
            default.fingerprint_bits(),
            bits(default.size_in_bytes()),
            rate(&|k| default.contains(k))
        );
        eprintln!(
            "  sst-plain ({:?} b={} f={}): {:.2} · {:.3e}",
            plain.encoding(),
            plain.bucket_size(),
            plain.fingerprint_bits(),
            bits(plain.size_in_bytes()),
            rate(&|k| plain.contains(k))
        );
        eprintln!(
            "  sbbf: {:.2} · {:.3e}",
            bits(bloom.as_bytes().len()),
            rate(&|k| bloom.contains_hash(xxh3_64(k)))
        );
        eprintln!(
            "  bfuse8: {:.2} · {:.3e}",
            bits(fuse.fingerprints.len()),
            rate(&|k| fuse.contains(&xxh3_64(k)))
        );
        for (group, keys) in &pools {
            let at = Cell::new(0);
            let window = || {
                at.set((at.get() + PROBES) % POOL);
                &keys[at.get()..at.get() + PROBES]
            };
            let mut g = c.benchmark_group(format!("{group}/{size}"));
            g.throughput(Throughput::Elements(PROBES as u64));
            let mut out = vec![false; PROBES];
            for (name, f) in [("sst-default", &default), ("sst-plain", &plain)] {
                g.bench_function(BenchmarkId::from_parameter(name), |b| {
                    b.iter(|| {
                        window()
                            .iter()
                            .filter(|k| f.contains(black_box(&k[..])))
                            .count()
                    })
                });
                g.bench_function(BenchmarkId::from_parameter(format!("{name}-batch")), |b| {
                    b.iter(|| {
                        f.contains_batch_keys(black_box(window()), &mut out);
                        out.iter().filter(|&&x| x).count()
                    })
                });
            }
            g.bench_function(BenchmarkId::from_parameter("sbbf"), |b| {
                b.iter(|| {
                    window()
                        .iter()
                        .filter(|k| bloom.contains_hash(xxh3_64(black_box(&k[..]))))
                        .count()
                })
            });
            g.bench_function(BenchmarkId::from_parameter("bfuse8"), |b| {
                b.iter(|| {
                    window()
                        .iter()
                        .filter(|k| fuse.contains(&xxh3_64(black_box(&k[..]))))
                        .count()
                })
            });
            g.finish();
        }
    }
}

fn build(c: &mut Criterion) {
    for (size, n) in SIZES {
        let mut g = c.benchmark_group(format!("build/{size}"));
        g.sample_size(10);
        g.throughput(Throughput::Elements(n));
        g.bench_function(BenchmarkId::from_parameter("sst-builder"), |b| {
            b.iter(|| sst(n, None))
        });
        g.bench_function(BenchmarkId::from_parameter("sbbf"), |b| b.iter(|| sbbf(n)));
        g.bench_function(BenchmarkId::from_parameter("bfuse8"), |b| {
            b.iter(|| bfuse8(n))
        });
        g.finish();
    }
}

criterion_group!(benches, lookups, build);
criterion_main!(benches);
