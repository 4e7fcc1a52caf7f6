//! One-shot lookups in compact blocks (FORMAT.md §11.2): `CompactFilter::block_contains` —
//! what `cksst_compact_contains` and the LevelDB policy call for every read — must cost the same
//! on a block of any size, since it reads the key's two buckets where they lie. Blocks of 13
//! bytes (one key), about 1 MiB and about 100 MiB, default layout (semi-sorted, `f` = 10);
//! beside it the owned `CompactFilter::contains` over the same block (copied into a padded
//! table once, outside the timing), which pays the same cache misses on a large block.
//!
//! ```text
//! cargo bench --bench compact
//! ```
//!
//! Two key streams of 16-byte keys: `hot`, the same 64 keys over and over, so that their
//! buckets stay in cache and only the call's own work is timed; `cold`, 1 M different keys,
//! which on a large block miss the caches and the TLB as every reader of that block does. The
//! large blocks repeat the buckets of a block built from 4 096 keys (1 046 buckets, 4 707
//! bytes): valid blocks whose buckets are as full as a built one's, made in a moment.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use cuckoo_sst::{CompactFilter, Config, FilterBuilder};
use std::hint::black_box;
use std::time::Duration;

fn key(i: u64, salt: &str) -> Vec<u8> {
    format!("{salt}{i:015}").into_bytes() // 16 bytes
}

/// The block of `keys` keys, default configuration.
fn built(keys: u64) -> Vec<u8> {
    let mut b = FilterBuilder::new(Config::new(0));
    for i in 0..keys {
        b.add_key(&key(i, "p"));
    }
    b.finish_compact().unwrap()
}

/// A block whose buckets are those of `unit` (an even number of buckets that ends on a byte)
/// repeated `times` times.
fn repeated(unit: &[u8], times: usize) -> Vec<u8> {
    let mut block = unit[..4].to_vec();
    for _ in 0..times {
        block.extend_from_slice(&unit[4..]);
    }
    block
}

fn one_shot(c: &mut Criterion) {
    let unit = built(4096);
    assert_eq!(unit.len(), 4 + 4707);
    let blocks = [
        ("13B", built(1)),
        ("1MiB", repeated(&unit, (1 << 20) / 4707)),
        ("100MiB", repeated(&unit, (100 << 20) / 4707)),
    ];
    let hot: Vec<Vec<u8>> = (0..64).map(|i| key(i, "a")).collect();
    let cold: Vec<Vec<u8>> = (0..1 << 20).map(|i| key(i, "a")).collect();
    let mut g = c.benchmark_group("compact-one-shot");
    g.warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for (name, block) in &blocks {
        let owned = CompactFilter::from_bytes(block).unwrap();
        for (stream, keys) in [("hot", &hot), ("cold", &cold)] {
            let mask = keys.len() - 1;
            let id = |what: &str| BenchmarkId::new(format!("{what}/{stream}"), name);
            let mut i = 0;
            g.bench_function(id("block_contains"), |b| {
                b.iter(|| {
                    i = (i + 1) & mask;
                    CompactFilter::block_contains(black_box(block), &keys[i]).unwrap()
                })
            });
            g.bench_function(id("CompactFilter::contains"), |b| {
                b.iter(|| {
                    i = (i + 1) & mask;
                    black_box(&owned).contains(&keys[i])
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, one_shot);
criterion_main!(benches);
