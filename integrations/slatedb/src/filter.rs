//! SlateDB's `FilterBuilder` and `Filter` over cuckoo-sst: the builder fed by a table's
//! entries, the checked filter that answers point lookups, and the always-"maybe" stand-in for
//! a block that did not check out.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use cuckoo_sst::{CuckooFilter, KeyHash};
use slatedb::RowEntry;
use slatedb::bytes::BufMut;
use slatedb::filter_policy::{Filter, FilterBuilder, FilterQuery, FilterTarget};

use crate::policy::{Counters, Layout};

/// Collects the hashes of one table's keys (8 bytes per entry) until the table is done.
pub(crate) struct CuckooEntryBuilder {
    layout: Layout,
    keys: cuckoo_sst::FilterBuilder,
    counters: Arc<Counters>,
}

impl CuckooEntryBuilder {
    pub(crate) fn new(layout: Layout, counters: Arc<Counters>) -> CuckooEntryBuilder {
        // The capacity is only a hint to reserve hashes; the table's size is not known yet.
        let keys = cuckoo_sst::FilterBuilder::new(layout.config(0));
        CuckooEntryBuilder {
            layout,
            keys,
            counters,
        }
    }
}

impl FilterBuilder for CuckooEntryBuilder {
    fn add_entry(&mut self, entry: &RowEntry) {
        // Every kind of entry: a tombstone or a merge operand must be found as much as a value.
        self.keys.add_key(&entry.key);
    }

    fn build(&mut self) -> Arc<dyn Filter> {
        let fresh = cuckoo_sst::FilterBuilder::new(self.layout.config(0));
        let keys = std::mem::replace(&mut self.keys, fresh);
        let added = keys.len();
        match keys.finish() {
            Ok(filter) => Arc::new(CuckooSstFilter::new(filter, Arc::clone(&self.counters))),
            Err(e) => {
                self.counters.failed_builds.fetch_add(1, Ordering::Relaxed);
                log::error!(
                    "cuckoo-sst: no filter for an SSTable of {added} entries ({e}); it is \
                     written with an empty filter block and read as if it had none"
                );
                Arc::new(AlwaysMaybe)
            }
        }
    }
}

/// A checked cuckoo filter: "no" for a point key it does not hold, "maybe" otherwise.
pub(crate) struct CuckooSstFilter {
    /// Shared, so that `clamp_allocated_size` (the table is exactly sized already) is free.
    filter: Arc<CuckooFilter>,
    /// The policy's counters, where a failed `encode` is counted.
    counters: Arc<Counters>,
}

impl CuckooSstFilter {
    pub(crate) fn new(filter: CuckooFilter, counters: Arc<Counters>) -> CuckooSstFilter {
        CuckooSstFilter {
            filter: Arc::new(filter),
            counters,
        }
    }
}

impl Filter for CuckooSstFilter {
    fn might_match(&self, query: &FilterQuery) -> bool {
        match &query.target {
            FilterTarget::Point(key) => self.filter.contains_hash(KeyHash::of(key)),
            // Whole keys only: a prefix or a range cannot be ruled out.
            FilterTarget::Prefix(_) | FilterTarget::Range { .. } => true,
        }
    }

    fn encode(&self, writer: &mut dyn BufMut) {
        // The file format (FORMAT.md), streamed. Writing to a `BufMut` fails only when it is
        // out of room (SlateDB writes to a growable buffer); whatever was written then does
        // not check out when read, so the table is read without its filter, never wrongly
        // skipped. Counted, like a failed build.
        if let Err(e) = self.filter.write_to(writer.writer()) {
            self.counters.failed_encodes.fetch_add(1, Ordering::Relaxed);
            log::error!("cuckoo-sst: writing a filter block failed ({e}); it will not check out");
        }
    }

    fn size(&self) -> usize {
        self.filter.size_in_bytes()
    }

    fn clamp_allocated_size(&self) -> Arc<dyn Filter> {
        Arc::new(CuckooSstFilter {
            filter: Arc::clone(&self.filter),
            counters: Arc::clone(&self.counters),
        })
    }
}

/// The filter of a table whose block did not check out (or could not be built): it rules
/// nothing out, so the table is read as if it had no filter.
pub(crate) struct AlwaysMaybe;

impl Filter for AlwaysMaybe {
    fn might_match(&self, _query: &FilterQuery) -> bool {
        true
    }

    fn encode(&self, _writer: &mut dyn BufMut) {
        // An empty block: it reads back as another `AlwaysMaybe`.
    }

    fn size(&self) -> usize {
        0
    }

    fn clamp_allocated_size(&self) -> Arc<dyn Filter> {
        Arc::new(AlwaysMaybe)
    }
}
