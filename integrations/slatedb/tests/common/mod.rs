//! Shared by the tests: keys, a cache, a policy wrapper that counts what SlateDB asks its
//! filters, a logger that keeps this crate's warnings, and SlateDB's filter block framing.
#![allow(dead_code)] // each test binary uses part of it

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use slatedb::bytes::BufMut;
use slatedb::db_cache::{CachedEntry, CachedKey, DbCache};
use slatedb::filter_policy::{Filter, FilterBuilder, FilterPolicy, FilterQuery, FilterTarget};

/// The `i`-th key written. Present keys are even-numbered, so every absent (odd) key falls
/// between two present ones, inside every table's key range.
pub fn key(i: u64) -> String {
    format!("key{:012}", 2 * i)
}

/// A key never written, between `key(i)` and `key(i + 1)`.
pub fn absent_key(i: u64) -> String {
    format!("key{:012}", 2 * i + 1)
}

/// An unbounded in-memory cache for SlateDB's blocks, indexes, filters and stats: without
/// one (SlateDB built without its cache features), every lookup would fetch and decode every
/// table's filter again.
#[derive(Default)]
pub struct MapCache {
    entries: Mutex<HashMap<CachedKey, CachedEntry>>,
}

impl MapCache {
    fn get(&self, key: &CachedKey) -> Option<CachedEntry> {
        self.entries.lock().unwrap().get(key).cloned()
    }
}

#[async_trait::async_trait]
impl DbCache for MapCache {
    async fn get_block(&self, key: &CachedKey) -> Result<Option<CachedEntry>, slatedb::Error> {
        Ok(self.get(key))
    }
    async fn get_index(&self, key: &CachedKey) -> Result<Option<CachedEntry>, slatedb::Error> {
        Ok(self.get(key))
    }
    async fn get_filter(&self, key: &CachedKey) -> Result<Option<CachedEntry>, slatedb::Error> {
        Ok(self.get(key))
    }
    async fn get_stats(&self, key: &CachedKey) -> Result<Option<CachedEntry>, slatedb::Error> {
        Ok(self.get(key))
    }
    async fn insert(&self, key: CachedKey, value: CachedEntry) {
        self.entries.lock().unwrap().insert(key, value);
    }
    async fn remove(&self, key: &CachedKey) {
        self.entries.lock().unwrap().remove(key);
    }
    fn entry_count(&self) -> u64 {
        self.entries.lock().unwrap().len() as u64
    }
}

/// What SlateDB asked the filters of a wrapped policy.
#[derive(Debug, Default)]
pub struct ProbeCounts {
    /// Filter blocks decoded.
    pub decodes: AtomicU64,
    /// Point queries asked.
    pub points: AtomicU64,
    /// Point queries answered "maybe".
    pub point_maybes: AtomicU64,
    /// Prefix and range queries asked.
    pub others: AtomicU64,
}

impl ProbeCounts {
    pub fn get(&self) -> (u64, u64, u64) {
        (
            self.decodes.load(Ordering::Relaxed),
            self.points.load(Ordering::Relaxed),
            self.point_maybes.load(Ordering::Relaxed),
        )
    }
}

/// A policy that behaves exactly as `inner` (same name, same bytes) and counts its filters'
/// answers.
pub struct Probe {
    pub inner: Arc<dyn FilterPolicy>,
    pub counts: Arc<ProbeCounts>,
}

impl Probe {
    pub fn new(inner: Arc<dyn FilterPolicy>) -> Arc<Probe> {
        Arc::new(Probe {
            inner,
            counts: Arc::default(),
        })
    }
}

struct ProbedBuilder {
    inner: Box<dyn FilterBuilder>,
    counts: Arc<ProbeCounts>,
}

struct ProbedFilter {
    inner: Arc<dyn Filter>,
    counts: Arc<ProbeCounts>,
}

impl FilterPolicy for Probe {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn builder(&self) -> Box<dyn FilterBuilder> {
        Box::new(ProbedBuilder {
            inner: self.inner.builder(),
            counts: Arc::clone(&self.counts),
        })
    }
    fn decode(&self, data: &[u8]) -> Arc<dyn Filter> {
        self.counts.decodes.fetch_add(1, Ordering::Relaxed);
        Arc::new(ProbedFilter {
            inner: self.inner.decode(data),
            counts: Arc::clone(&self.counts),
        })
    }
    fn estimate_size(&self, num_keys: usize) -> usize {
        self.inner.estimate_size(num_keys)
    }
    fn supports_range_queries(&self) -> bool {
        self.inner.supports_range_queries()
    }
    fn supports_prefix_queries(&self) -> bool {
        self.inner.supports_prefix_queries()
    }
}

/// SlateDB may keep the filter it just built (in its cache) rather than decode it again.
impl FilterBuilder for ProbedBuilder {
    fn add_entry(&mut self, entry: &slatedb::RowEntry) {
        self.inner.add_entry(entry)
    }
    fn build(&mut self) -> Arc<dyn Filter> {
        Arc::new(ProbedFilter {
            inner: self.inner.build(),
            counts: Arc::clone(&self.counts),
        })
    }
}

impl Filter for ProbedFilter {
    fn might_match(&self, query: &FilterQuery) -> bool {
        let answer = self.inner.might_match(query);
        if let FilterTarget::Point(_) = query.target {
            self.counts.points.fetch_add(1, Ordering::Relaxed);
            if answer {
                self.counts.point_maybes.fetch_add(1, Ordering::Relaxed);
            }
        } else {
            self.counts.others.fetch_add(1, Ordering::Relaxed);
        }
        answer
    }
    fn encode(&self, writer: &mut dyn BufMut) {
        self.inner.encode(writer)
    }
    fn size(&self) -> usize {
        self.inner.size()
    }
    fn clamp_allocated_size(&self) -> Arc<dyn Filter> {
        Arc::new(ProbedFilter {
            inner: self.inner.clamp_allocated_size(),
            counts: Arc::clone(&self.counts),
        })
    }
}

/// Keeps the messages this crate logs at warning level or above.
struct Capture(Mutex<Vec<String>>);

static CAPTURE: Capture = Capture(Mutex::new(Vec::new()));

impl log::Log for Capture {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Warn && metadata.target().starts_with("cuckoo_sst_slatedb")
    }
    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            self.0.lock().unwrap().push(record.args().to_string());
        }
    }
    fn flush(&self) {}
}

/// Installs the capturing logger (once per test binary).
pub fn capture_logs() {
    if log::set_logger(&CAPTURE).is_ok() {
        log::set_max_level(log::LevelFilter::Warn);
    }
}

/// The messages captured so far.
pub fn logged() -> Vec<String> {
    CAPTURE.0.lock().unwrap().clone()
}

/// One filter inside SlateDB's composite filter block (SlateDB 0.18, `format/sst.rs`):
/// `[count: u16] ([name_len: u16][name][data_len: u64][data])*`, big-endian, then a CRC-32 of
/// all of it (big-endian u32).
#[derive(Debug)]
pub struct FramedFilter {
    pub name: String,
    /// Where the filter's bytes are, relative to the start of the block.
    pub data: std::ops::Range<usize>,
}

/// The filters framed in `block` (the bytes at `filter_offset..filter_offset + filter_len`),
/// after checking its CRC.
pub fn parse_filter_block(block: &[u8]) -> Vec<FramedFilter> {
    let (body, crc) = block.split_at(block.len() - 4);
    assert_eq!(
        crc32fast::hash(body),
        u32::from_be_bytes(crc.try_into().unwrap()),
        "the filter block's checksum"
    );
    let count = u16::from_be_bytes([body[0], body[1]]) as usize;
    let mut at = 2;
    let mut filters = Vec::new();
    for _ in 0..count {
        let name_len = u16::from_be_bytes([body[at], body[at + 1]]) as usize;
        at += 2;
        let name = String::from_utf8(body[at..at + name_len].to_vec()).unwrap();
        at += name_len;
        let data_len = u64::from_be_bytes(body[at..at + 8].try_into().unwrap()) as usize;
        at += 8;
        filters.push(FramedFilter {
            name,
            data: at..at + data_len,
        });
        at += data_len;
    }
    assert_eq!(at, body.len(), "the block holds exactly its filters");
    filters
}

/// Recomputes the CRC at the end of a filter block whose body was changed, as if the damage
/// had happened before SlateDB checksummed it: the block then reaches the policy's `decode`.
pub fn reseal_filter_block(block: &mut [u8]) {
    let n = block.len() - 4;
    let crc = crc32fast::hash(&block[..n]);
    block[n..].copy_from_slice(&crc.to_be_bytes());
}
