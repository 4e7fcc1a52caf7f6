//! Persisted cuckoo filters for LSM-tree SSTables.
//!
//! A cuckoo filter (Fan, Andersen, Kaminsky, Mitzenmacher, *Cuckoo Filter: Practically Better
//! Than Bloom*, CoNEXT 2014) is an approximate set: asked about a key it answers "certainly
//! absent" or "probably present". A storage engine keeps one per SSTable so that a point lookup
//! skips the disk read of every table that certainly does not hold the key. Unlike a Bloom
//! filter it supports removal and counting, and below about 3 % false positives it is smaller.
//!
//! ```
//! use cuckoo_sst::{Config, CuckooFilter, KeyHash};
//!
//! // Size for the keys of one SSTable, at 0.1 % false positives.
//! let mut filter = CuckooFilter::new(Config::new(100_000).false_positive_rate(0.001))?;
//! for i in 0..100_000u32 {
//!     filter.insert(&i.to_be_bytes())?;
//! }
//! // No false negatives, ever.
//! assert!((0..100_000u32).all(|i| filter.contains(&i.to_be_bytes())));
//!
//! // Hash a key once, probe any number of filters.
//! let h = KeyHash::of(&7u32.to_be_bytes());
//! assert!(filter.contains_hash(h));
//! assert!(filter.expected_fpr() <= 0.001);
//! # Ok::<(), cuckoo_sst::Error>(())
//! ```
//!
//! # Space and false positives
//!
//! Each key stores an `f`-bit fingerprint in one of two candidate buckets of `b` slots. A
//! lookup of an absent key compares against at most `2b` fingerprints, so the false-positive
//! rate is at most `1 − (1 − 1/(2^f − 1))^(2b) ≈ 2b / 2^f`, and a table holds about 84 %, 95 %
//! or 98 % of its slots before inserts start failing for `b` = 2, 4, 8.
//!
//! | bucket size | fingerprint | false-positive bound | table sized for | bits per item |
//! |---|---|---|---|---|
//! | 4 | 8 bits  | 3.1 %    | 94 % load | 8.5  |
//! | 4 | 16 bits | 0.012 %  | 94 % load | 17.0 |
//! | 8 | 16 bits | 0.024 %  | 97 % load | 16.5 |
//! | 2 | 16 bits | 0.0061 % | 80 % load | 20.0 |
//! | 4 | 32 bits | 1.9e-9   | 94 % load | 34.0 |
//!
//! # Guarantees
//!
//! * **No false negatives.** A key that was inserted and not removed is always found. A failed
//!   insert returns [`Error::Full`] and leaves the table exactly as it was.
//! * **Stable hashing.** Keys are hashed with XXH3-64 (see [`KeyHash`]), never with
//!   `std::hash`, so a stored filter answers the same in every release and on every platform.
//! * **Any size.** Tables have exactly as many buckets as the capacity needs; the alternate
//!   bucket is `(offset(fp) − i) mod m`, an involution for every `m`.
//! * **Deterministic.** The same seed and the same operations give byte-identical tables.
#![deny(missing_docs)]
#![deny(unsafe_code)]

mod config;
mod error;
mod filter;
mod format;
mod hash;
mod mmap;
mod persist;
mod prefetch;
mod table;
mod view;

pub use config::{Config, DEFAULT_BUCKET_SIZE, DEFAULT_FPR, DEFAULT_MAX_KICKS, DEFAULT_SEED};
pub use error::{Error, Result};
pub use filter::CuckooFilter;
pub use hash::KeyHash;
pub use mmap::MappedFilter;
pub use table::Encoding;
pub use view::FilterRef;

/// The README's example runs as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
