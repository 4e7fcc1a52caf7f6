//! The cost of growth: lookups in a `ScalableCuckooFilter` of about 1 M items held in 1, 4 or
//! 10 levels, present and absent keys. An absent key probes every level.
//!
//! ```text
//! cargo bench --bench chain
//! ```

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cuckoo_sst::{Config, ScalableCuckooFilter};
use std::cell::Cell;
use std::hint::black_box;

const N: u64 = 1_000_000;
const PROBES: usize = 4096;
const POOL: usize = 1 << 20;

fn key(i: u64) -> [u8; 8] {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes()
}

fn chain(levels: u32) -> ScalableCuckooFilter {
    // With growth factor 2, levels hold c, 2c, 4c, …: c·(2^L − 1) items fill L levels.
    let first = (N as f64 / (2f64.powi(levels as i32) - 1.0)).ceil() as usize;
    let mut f = ScalableCuckooFilter::new(Config::new(first)).unwrap();
    for i in 0..N {
        f.insert(&key(i)).unwrap();
    }
    assert_eq!(f.levels(), levels as usize);
    f
}

fn lookups(c: &mut Criterion) {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut draw = |present: bool| -> Vec<[u8; 8]> {
        (0..POOL)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                key(x % N + if present { 0 } else { N })
            })
            .collect()
    };
    let pools = [("chain_hit", draw(true)), ("chain_miss", draw(false))];
    for levels in [1, 4, 10] {
        let f = chain(levels);
        eprintln!(
            "{levels} levels: {:.2} bits/item, FPR bound {:.2e}",
            f.size_in_bytes() as f64 * 8.0 / N as f64,
            f.expected_fpr()
        );
        for (group, keys) in &pools {
            let at = Cell::new(0);
            let mut g = c.benchmark_group(*group);
            g.throughput(Throughput::Elements(PROBES as u64));
            g.bench_function(BenchmarkId::new("levels", levels), |b| {
                b.iter(|| {
                    at.set((at.get() + PROBES) % POOL);
                    let w = &keys[at.get()..at.get() + PROBES];
                    w.iter().filter(|k| f.contains(black_box(&k[..]))).count()
                })
            });
            g.finish();
        }
    }
}

criterion_group!(benches, lookups);
criterion_main!(benches);
