//! Opening filter files of 1 MiB and 256 MiB: `open_unverified` must not grow with the size;
//! `open` (every checksum, every slot counted) should run at memory/CRC speed.
//!
//! ```text
//! cargo bench --bench open
//! ```
//!
//! The files are in the page cache (they were just written), so this measures the CPU cost of
//! opening, not the disk. The 256 MiB filter is empty — verification reads every byte whatever
//! they hold — which keeps the set-up fast.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cuckoo_sst::{Config, CuckooFilter, FilterRef, MappedFilter};

fn open(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut g = c.benchmark_group("open");
    g.sample_size(20);
    // Capacities whose plain 16-bit tables take about 1 MiB and 256 MiB.
    for (name, capacity, fill) in [("1MiB", 498_000usize, true), ("256MiB", 127_500_000, false)] {
        let mut f = CuckooFilter::new(Config::new(capacity).fingerprint_bits(16)).unwrap();
        if fill {
            for i in 0..capacity as u64 {
                f.insert(&i.to_le_bytes()).unwrap();
            }
        }
        let path = dir.path().join(name);
        f.save(&path).unwrap();
        let bytes = f.to_bytes();
        eprintln!("{name}: {} bytes", bytes.len());
        drop(f);
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function(BenchmarkId::new("open_unverified", name), |b| {
            b.iter(|| MappedFilter::open_unverified(&path).unwrap())
        });
        g.bench_function(BenchmarkId::new("open", name), |b| {
            b.iter(|| MappedFilter::open(&path).unwrap())
        });
        g.bench_function(BenchmarkId::new("FilterRef::from_bytes", name), |b| {
            b.iter(|| FilterRef::from_bytes(&bytes).unwrap().len())
        });
        g.bench_function(BenchmarkId::new("crc32fast", name), |b| {
            b.iter(|| crc32fast::hash(&bytes))
        });
    }
    g.finish();
}

criterion_group!(benches, open);
criterion_main!(benches);
