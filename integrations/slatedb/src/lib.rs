//! A [SlateDB](https://slatedb.io) filter policy backed by [`cuckoo_sst`]: one exactly sized
//! cuckoo filter per SSTable, smaller than SlateDB's Bloom filter at the same false-positive
//! rate, checked when it is read back.
//!
//! SlateDB keeps its SSTables in an object store; before it reads a table's index and data
//! blocks for a point lookup, it asks the table's filters whether the key may be there.
//! [`CuckooFilterPolicy`] implements SlateDB's
//! [`FilterPolicy`](slatedb::filter_policy::FilterPolicy):
//!
//! * its builder hashes each entry's key once ([`cuckoo_sst::KeyHash`], XXH3-64) and, when the
//!   table is done, places the distinct keys in a filter sized exactly for them
//!   ([`cuckoo_sst::FilterBuilder`]);
//! * the filter block is the crate's file format (`FORMAT.md`): header, layout, checksums;
//! * reading a table back checks every byte of the block ([`cuckoo_sst::CuckooFilter::from_bytes`])
//!   and answers point lookups with `contains_hash`. SlateDB's `decode` cannot fail, so a block
//!   that does not check out — damaged, truncated, written by something else — becomes a filter
//!   that answers "maybe" to everything: the table is read as if it had no filter, never
//!   skipped. Such blocks are counted ([`CuckooFilterPolicy::damaged_filters`]) and logged
//!   (`log::warn!`).
//!
//! The filter holds whole keys, so it answers point lookups only; prefix and range queries get
//! "maybe", and the policy tells SlateDB not to fetch it for prefix scans.
//!
//! ```
//! use std::sync::Arc;
//! use cuckoo_sst_slatedb::CuckooFilterPolicy;
//! use slatedb::Db;
//! use slatedb::config::{FlushOptions, FlushType};
//! use slatedb::object_store::{ObjectStore, memory::InMemory};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let policy = Arc::new(CuckooFilterPolicy::new()); // 1 % false positives
//! let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
//! let db = Db::builder("db", store)
//!     .with_filter_policies(vec![policy.clone()])
//!     .build()
//!     .await?;
//! for i in 0..2_000u32 {
//!     db.put(format!("key{i:06}"), b"value").await?;
//! }
//! // Write the memtable out as an SSTable with a cuckoo filter block.
//! db.flush_with_options(FlushOptions { flush_type: FlushType::MemTable }).await?;
//! assert_eq!(db.get("key001234").await?.as_deref(), Some(&b"value"[..]));
//! assert_eq!(db.get("key001234x").await?, None);
//! assert_eq!(policy.damaged_filters(), 0);
//! db.close().await?;
//! # Ok(())
//! # }
//! ```
//!
//! SlateDB 0.18 decodes a table's filters each time it reads them unless a cache holds them
//! (its default build brings the `foyer` cache; built without default features, pass one with
//! `DbBuilder::with_db_cache`). Decoding checks the whole block's CRC-32, about 10 GiB/s.
#![deny(missing_docs)]
#![deny(unsafe_code)]

mod filter;
mod policy;

pub use policy::{CuckooFilterPolicy, POLICY_NAME};
