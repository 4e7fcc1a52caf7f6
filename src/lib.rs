//! Persisted cuckoo filters for LSM-tree SSTables.
//!
//! A cuckoo filter (Fan, Andersen, Kaminsky, Mitzenmacher, *Cuckoo Filter: Practically Better
//! Than Bloom*, CoNEXT 2014) is an approximate set: asked about a key it answers "certainly
//! absent" or "probably present". A storage engine keeps one per SSTable so that a point lookup
//! skips the disk read of every table that certainly does not hold the key. Unlike a Bloom
//! filter it supports removal and counting, and below about 3 % false positives it is smaller.
//!
//! Build a filter when an SSTable is written, save it beside the table, and map it when the
//! table is opened:
//!
//! ```
//! use cuckoo_sst::{Config, CuckooFilter, KeyHash, MappedFilter};
//!
//! // Flush: size for the table's keys, at 0.1 % false positives.
//! let mut filter = CuckooFilter::new(Config::new(100_000).false_positive_rate(0.001))?;
//! for i in 0..100_000u32 {
//!     filter.insert(&i.to_be_bytes())?;
//! }
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("000123.filter");
//! filter.save(&path)?; // atomic: old file or new file, never a torn one
//!
//! // Open: map the file, check it, query it in place.
//! let mapped = MappedFilter::open(&path)?;
//! assert!((0..100_000u32).all(|i| mapped.contains(&i.to_be_bytes()))); // no false negatives
//!
//! // A point lookup hashes the key once and asks every table's filter.
//! let h = KeyHash::of(&7u32.to_be_bytes());
//! assert!(mapped.contains_hash(h));
//! assert!(mapped.expected_fpr() <= 0.001);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The same bytes can live inside another file: [`CuckooFilter::write_to`] appends them to an
//! SSTable, and [`FilterRef::from_bytes`] checks and queries them in place, at any alignment.
//! The byte layout is specified in `FORMAT.md`.
//!
//! # Space and false positives
//!
//! Each key stores an `f`-bit fingerprint in one of two candidate buckets of `b` slots. A
//! lookup of an absent key compares against at most `2b` fingerprints, so the false-positive
//! rate is at most `1 − (1 − 1/(2^f − 1))^(2b) ≈ 2b / 2^f`. Tables fill to about 88 %, 97 % and
//! 99.5 % of their slots before inserts start failing for `b` = 2, 4, 8, and are sized for
//! 84 %, 95 % and 98 %. Fingerprints of any width from 7 to 32 bits are bit-packed, and buckets
//! of 4 can be *semi-sorted* (Fan et al. §5.2), saving one more bit per item;
//! [`Config::false_positive_rate`] picks the layout with the fewest bits per item:
//!
//! | target ε | layout chosen | bits per item (1 M items) | measured FPR | space-optimal Bloom |
//! |---|---|---|---|---|
//! | 1 %     | semi-sorted, b = 4, f = 10 | 9.49  | 0.74 %   | 9.57  |
//! | 0.1 %   | semi-sorted, b = 4, f = 13 | 12.66 | 0.093 %  | 14.35 |
//! | 0.01 %  | semi-sorted, b = 4, f = 17 | 16.88 | 0.0058 % | 19.13 |
//! | 0.001 % | semi-sorted, b = 4, f = 20 | 20.04 | 0.00078 % | 23.92 |
//!
//! (Measured by `cargo run --release --example space`; the README's "Space" section has every
//! layout.)
//!
//! [`Encoding::Plain`] (8-, 16- or 32-bit slots) trades space for the fastest lookups.
//!
//! # Guarantees
//!
//! * **No false negatives.** A key that was inserted and not removed is always found. A failed
//!   insert returns [`Error::Full`] and leaves the table exactly as it was.
//! * **Stable hashing.** Keys are hashed with XXH3-64 (see [`KeyHash`]), never with
//!   `std::hash`, so a stored filter answers the same in every release and on every platform.
//! * **Any size.** Tables have exactly as many buckets as the capacity needs; the alternate
//!   bucket is `(offset(fp) − i) mod m`, an involution for every `m`.
//! * **Deterministic.** The same seed and the same operations give byte-identical tables and
//!   files.
//! * **Hard to break.** Every header field is checked against the file's length, every byte is
//!   covered by a CRC-32, and a damaged file gives a specific [`Error`] — never a panic, and
//!   never an "absent" answer from bytes that were not checked.
#![deny(missing_docs)]
#![deny(unsafe_code)]

mod builder;
mod chain;
mod checks;
mod compact;
mod config;
mod copies;
mod error;
mod filter;
mod format;
mod hash;
mod index;
mod level;
mod mmap;
mod persist;
mod prefetch;
mod radix;
mod stretch;
mod table;
mod view;

pub use builder::FilterBuilder;
pub use chain::{GrowthLimit, ScalableCuckooFilter};
pub use checks::Health;
pub use compact::CompactFilter;
pub use config::{
    Config, DEFAULT_BUCKET_SIZE, DEFAULT_FPR, DEFAULT_GROWTH_FACTOR, DEFAULT_MAX_KICKS,
    DEFAULT_SEED, DEFAULT_TIGHTENING, MAX_GROWTH_FACTOR, MAX_KICKS_LIMIT, MAX_LEVELS,
};
pub use error::{Error, Result};
pub use filter::CuckooFilter;
pub use hash::KeyHash;
pub use index::{MAX_RUNS, MappedRunIndex, RunIndex, Runs};
pub use mmap::MappedFilter;
pub use table::Encoding;
pub use view::FilterRef;

/// Whether a growing table (a [`ScalableCuckooFilter`]'s newest level, a [`RunIndex`]'s) moves
/// into an anonymous memory map once it passes 1 MiB, as it does by default on Linux, or stays
/// on the heap.
///
/// In a map, growth extends the map with `mremap`: the kernel moves pages and no insert waits
/// for a copy of the table. On the heap, each geometric step of the growth copies the table,
/// but every byte goes through the global allocator — what an embedder that accounts for
/// memory through its allocator needs (the Redis module turns maps off so that `used_memory`
/// and `maxmemory` see its filters). The setting is process-wide and applies to growth from
/// then on; a table already in a map stays there. Answers never depend on it.
///
/// ```
/// use cuckoo_sst::{Config, ScalableCuckooFilter};
/// cuckoo_sst::set_anonymous_maps(false);
/// let mut f = ScalableCuckooFilter::new(Config::new(1_000))?;
/// for i in 0..300_000u32 {
///     f.insert(&i.to_le_bytes())?; // past 1 MiB, on the heap
/// }
/// assert!((0..300_000u32).all(|i| f.contains(&i.to_le_bytes())));
/// cuckoo_sst::set_anonymous_maps(true); // the default again
/// # Ok::<(), cuckoo_sst::Error>(())
/// ```
pub fn set_anonymous_maps(enabled: bool) {
    table::set_anonymous_maps(enabled);
}

/// The README's example runs as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
