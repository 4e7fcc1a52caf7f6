//! cuckoo-sst against the fastest filters of its size, in one run: `xorf`'s BinaryFuse8 (a
//! static filter, ~9 bits/key), `sbbf-rs-safe`'s split-block Bloom filter (Parquet's layout,
//! AVX2 when the CPU has it) at 11 bits/key, and the `cuckoofilter` crate. 16-byte keys; every
//! filter hashes the key bytes as its users would: cuckoo-sst and `cuckoofilter` take the
//! bytes, BinaryFuse8 and sbbf take XXH3-64 of them.
//!
//! ```text
//! cargo bench --bench peers                   # 1 M and 32 M keys (about 40 minutes)
//! cargo bench --bench peers -- /1M            # one size
//! RUSTFLAGS="-C target-cpu=native" cargo bench --bench peers
//! ```
//!
//! Groups: `absent/<n>` and `present/<n>` (lookups of keys not in / in the filter, 65 536 per
//! iteration from a pool of 4 M, so the buckets touched are not the ones cached by the last
//! iteration), `16-filters/1M` (one key against 16 filters), `grown-absent/<n>` (a growable
//! filter grown a thousandfold, from `n / 1000` keys to `n`, against a right-sized filter of the
//! same keys and sile's `scalable_cuckoo_filter` grown the same way), `grow/<n>` (inserting `n`
//! keys into a growable filter from `n / 1000`, into sile's from `n / 1000`, and into a
//! right-sized filter), `build/<n>` (from the keys to a filter, hashing included),
//! `owners-absent/1M` (each owner's single lookup as a user calls it, on keys whose length the
//! compiler does not know: `CuckooFilter::contains`, `FilterRef::contains` with the view made
//! once, `MappedFilter::contains` on the filter saved and mapped, `ScalableCuckooFilter::contains`
//! right-sized, and the compact block's one-shot `CompactFilter::block_contains` over 20 000
//! blocks of 50 keys, against BinaryFuse8 and sbbf in the same group). Before each size the
//! bench prints every contender's bits per key and false-positive rate over the absent pool.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cuckoo_sst::{
    CompactFilter, Config, CuckooFilter, Encoding, FilterBuilder, FilterRef, KeyHash, MappedFilter,
    ScalableCuckooFilter,
};
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

/// The `cuckoofilter` crate (0.5: 8-bit fingerprints, buckets of 4, power-of-two table,
/// SipHash as its users get it), sized so that `n` keys fit.
type PeerCuckoo = cuckoofilter::CuckooFilter<std::collections::hash_map::DefaultHasher>;

fn peer_cuckoo(n: u64) -> PeerCuckoo {
    let mut f = PeerCuckoo::with_capacity((n as f64 / 0.95) as usize);
    for i in 0..n {
        f.add(&key(i)).unwrap();
    }
    f
}

fn lookups(c: &mut Criterion) {
    for (size, n) in SIZES {
        let default = sst(n, None);
        let plain = sst(n, Some(Encoding::Plain));
        let bloom = sbbf(n);
        let fuse = bfuse8(n);
        let cuckoo = peer_cuckoo(n);
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
        eprintln!(
            "  cuckoofilter: {:.2} · {:.3e}",
            bits(cuckoo.memory_usage()),
            rate(&|k| cuckoo.contains(k))
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
            g.bench_function(BenchmarkId::from_parameter("cuckoofilter"), |b| {
                b.iter(|| {
                    window()
                        .iter()
                        .filter(|k| cuckoo.contains(black_box(*k)))
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

/// One key against 16 SSTable filters of 1 M keys each (an LSM point read): one call that
/// prefetches every filter's buckets first, against 16 `contains_hash` calls in a row. Absent
/// keys, so every filter is probed; throughput in keys (each probing 16 filters).
fn many_filters(c: &mut Criterion) {
    const TABLES: u64 = 16;
    const N: u64 = 1_000_000;
    let tables: Vec<CuckooFilter> = (0..TABLES)
        .map(|t| {
            let mut b = FilterBuilder::new(Config::new(N as usize).seed(t));
            for i in 0..N {
                b.add_key(&key(i * TABLES + t));
            }
            b.finish().unwrap()
        })
        .collect();
    let filters: Vec<FilterRef<'_>> = tables.iter().map(|f| f.as_filter_ref()).collect();
    let keys = pool(N * TABLES, false);
    let at = Cell::new(0);
    let window = || {
        at.set((at.get() + PROBES) % POOL);
        &keys[at.get()..at.get() + PROBES]
    };
    let mut g = c.benchmark_group("16-filters/1M");
    g.throughput(Throughput::Elements(PROBES as u64));
    let mut out = [false; TABLES as usize];
    g.bench_function(BenchmarkId::from_parameter("contains_hash_each"), |b| {
        b.iter(|| {
            let mut hits = 0;
            for k in window() {
                FilterRef::contains_hash_each(&filters, KeyHash::of(black_box(k)), &mut out);
                hits += out.iter().filter(|&&x| x).count();
            }
            hits
        })
    });
    g.bench_function(BenchmarkId::from_parameter("16x-contains_hash"), |b| {
        b.iter(|| {
            let mut hits = 0;
            for k in window() {
                let h = KeyHash::of(black_box(k));
                hits += filters.iter().filter(|f| f.contains_hash(h)).count();
            }
            hits
        })
    });
    g.finish();
}

/// sile's `scalable_cuckoo_filter` (0.5: a chain of cuckoo filters, SipHash-1-3 over the key
/// bytes as its users get it), at 1 %.
type SileChain = scalable_cuckoo_filter::ScalableCuckooFilter<[u8; 16]>;

/// A growable filter grown a thousandfold, from `n / 1000` keys to `n` (the default
/// configuration, 1 %), against a right-sized filter of the same keys (`FilterBuilder`) and
/// sile's chain grown the same way: absent keys one at a time, and batched where the filter has
/// a batch.
fn grown(c: &mut Criterion) {
    for (size, n) in SIZES {
        let right = sst(n, None);
        let from = (n / 1000) as usize;
        let mut grown = ScalableCuckooFilter::new(Config::new(from)).unwrap();
        let mut sile = SileChain::new(from, 0.01);
        for i in 0..n {
            grown.insert(&key(i)).unwrap();
            sile.insert(&key(i));
        }
        let keys = pool(n, false);
        let rate = |f: &dyn Fn(&[u8; 16]) -> bool| {
            keys.iter().filter(|k| f(k)).count() as f64 / POOL as f64
        };
        let bits = |bytes: f64| bytes * 8.0 / n as f64;
        eprintln!("{size} grown from {from}: bits/key · FPR · levels");
        eprintln!(
            "  right-sized: {:.2} · {:.3e}",
            bits(right.size_in_bytes() as f64),
            rate(&|k| right.contains(k))
        );
        eprintln!(
            "  grown: {:.2} · {:.3e} (bound {:.3e}) · {}",
            bits(grown.size_in_bytes() as f64),
            rate(&|k| grown.contains(k)),
            grown.expected_fpr(),
            grown.levels()
        );
        eprintln!(
            "  scalable_cuckoo_filter: {:.2} · {:.3e}",
            bits(sile.bits() as f64 / 8.0),
            rate(&|k| sile.contains(k))
        );
        let mut g = c.benchmark_group(format!("grown-absent/{size}"));
        g.throughput(Throughput::Elements(PROBES as u64));
        let at = Cell::new(0);
        let window = || {
            at.set((at.get() + PROBES) % POOL);
            &keys[at.get()..at.get() + PROBES]
        };
        let mut out = vec![false; PROBES];
        g.bench_function(BenchmarkId::from_parameter("right-sized"), |b| {
            b.iter(|| {
                window()
                    .iter()
                    .filter(|k| right.contains(black_box(&k[..])))
                    .count()
            })
        });
        g.bench_function(BenchmarkId::from_parameter("right-sized-batch"), |b| {
            b.iter(|| {
                right.contains_batch_keys(black_box(window()), &mut out);
                out.iter().filter(|&&x| x).count()
            })
        });
        g.bench_function(BenchmarkId::from_parameter("grown"), |b| {
            b.iter(|| {
                window()
                    .iter()
                    .filter(|k| grown.contains(black_box(&k[..])))
                    .count()
            })
        });
        g.bench_function(BenchmarkId::from_parameter("grown-batch"), |b| {
            b.iter(|| {
                grown.contains_batch_keys(black_box(window()), &mut out);
                out.iter().filter(|&&x| x).count()
            })
        });
        g.bench_function(BenchmarkId::from_parameter("scalable_cuckoo_filter"), |b| {
            b.iter(|| {
                window()
                    .iter()
                    .filter(|&k| sile.contains(black_box(k)))
                    .count()
            })
        });
        g.finish();
    }
}

/// Inserting `n` keys (1 M and 32 M): into a growable filter from `n / 1000` keys (a
/// thousandfold growth), into sile's chain from `n / 1000`, and into a filter sized for them.
fn grow(c: &mut Criterion) {
    for (size, n) in SIZES {
        let from = (n / 1000) as usize;
        let mut g = c.benchmark_group(format!("grow/{size}"));
        g.throughput(Throughput::Elements(n));
        g.sample_size(10);
        g.bench_function(BenchmarkId::from_parameter("grown"), |b| {
            b.iter(|| {
                let mut f = ScalableCuckooFilter::new(Config::new(from)).unwrap();
                for i in 0..n {
                    f.insert(black_box(&key(i))).unwrap();
                }
                f.len()
            })
        });
        g.bench_function(BenchmarkId::from_parameter("scalable_cuckoo_filter"), |b| {
            b.iter(|| {
                let mut f = SileChain::new(from, 0.01);
                for i in 0..n {
                    f.insert(black_box(&key(i)));
                }
                f.len()
            })
        });
        g.bench_function(BenchmarkId::from_parameter("right-sized"), |b| {
            b.iter(|| {
                let mut f = CuckooFilter::new(Config::new(n as usize)).unwrap();
                for i in 0..n {
                    f.insert(black_box(&key(i))).unwrap();
                }
                f.len()
            })
        });
        g.finish();
    }
}

/// Each owner's single lookup as a user calls it: the key a `&[u8]` of a length the compiler
/// does not know (read through `black_box`), the owner as users hold it.
fn owners(c: &mut Criterion) {
    let n = 1_000_000;
    let owned = sst(n, None);
    let dir = std::env::temp_dir().join(format!("cuckoo-sst-peers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("owners.cksst");
    owned.save(&path).unwrap();
    let mapped = MappedFilter::open(&path).unwrap();
    let mut scalable = ScalableCuckooFilter::new(Config::new(n as usize)).unwrap();
    for i in 0..n {
        scalable.insert(&key(i)).unwrap();
    }
    // 20 000 compact blocks of 50 keys each (a LevelDB table's filters), the one a key would
    // be asked of picked by the key.
    let blocks: Vec<Vec<u8>> = (0..20_000u64)
        .map(|b| {
            let mut builder = FilterBuilder::new(Config::new(0));
            for i in 0..50 {
                builder.add_key(&key(b * 50 + i));
            }
            builder.finish_compact().unwrap()
        })
        .collect();
    let bloom = sbbf(n);
    let fuse = bfuse8(n);
    let keys = pool(n, false);
    let at = Cell::new(0);
    let window = || {
        at.set((at.get() + PROBES) % POOL);
        &keys[at.get()..at.get() + PROBES]
    };
    let len = black_box(16);
    let mut g = c.benchmark_group("owners-absent/1M");
    g.throughput(Throughput::Elements(PROBES as u64));
    type Lookup<'a> = &'a dyn Fn(&[u8]) -> bool;
    let cases: [(&str, Lookup<'_>); 4] = [
        ("CuckooFilter::contains", &|k| owned.contains(k)),
        ("MappedFilter::contains", &|k| mapped.contains(k)),
        ("ScalableCuckooFilter::contains", &|k| scalable.contains(k)),
        ("bfuse8", &|k| fuse.contains(&xxh3_64(k))),
    ];
    for (name, f) in cases {
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| window().iter().filter(|k| f(&k[..len])).count())
        });
    }
    // Monomorphic loops for the two whose calls inline into them (as a user's loop does).
    g.bench_function(
        BenchmarkId::from_parameter("CuckooFilter::contains-inline"),
        |b| {
            b.iter(|| {
                window()
                    .iter()
                    .filter(|k| owned.contains(&k[..len]))
                    .count()
            })
        },
    );
    let view = owned.as_filter_ref();
    g.bench_function(
        BenchmarkId::from_parameter("FilterRef::contains-inline"),
        |b| b.iter(|| window().iter().filter(|k| view.contains(&k[..len])).count()),
    );
    g.bench_function(BenchmarkId::from_parameter("bfuse8-inline"), |b| {
        b.iter(|| {
            window()
                .iter()
                .filter(|k| fuse.contains(&xxh3_64(&k[..len])))
                .count()
        })
    });
    g.bench_function(BenchmarkId::from_parameter("sbbf-inline"), |b| {
        b.iter(|| {
            window()
                .iter()
                .filter(|k| bloom.contains_hash(xxh3_64(&k[..len])))
                .count()
        })
    });
    g.bench_function(
        BenchmarkId::from_parameter("CompactFilter::block_contains"),
        |b| {
            b.iter(|| {
                window()
                    .iter()
                    .filter(|k| {
                        let block = &blocks[(k[15] as usize * 256 + k[14] as usize) % blocks.len()];
                        CompactFilter::block_contains(block, &k[..len]).unwrap_or(true)
                    })
                    .count()
            })
        },
    );
    g.finish();
    drop(mapped);
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, lookups, many_filters, grown, grow, build, owners);
criterion_main!(benches);
