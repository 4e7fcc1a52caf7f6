//! Absent-key lookups in SlateDB against the same data with (a) no filter, (b) SlateDB's own
//! Bloom filter at its default 10 bits per key, (c) cuckoo-sst at 1 % and (d) cuckoo-sst at
//! the Bloom filter's memory: object reads per lookup, filter bytes per key, measured
//! false-positive rate and lookups per second.
//!
//! ```sh
//! cargo run --release -p cuckoo-sst-slatedb --example bloom_vs_cuckoo [KEYS [LOOKUPS]]
//! ```
//!
//! Each setup gets its own in-memory object store and writes the same keys, in the same
//! order, into the same 8 L0 tables (one memtable flush each, key `i` in table `i mod 8`, so
//! every table spans the whole key range; no compaction). The database is then closed and
//! reopened, so the filters used are decoded from the stored tables, with a metadata cache
//! (index and filter blocks, as any deployment keeps) and no data-block cache: every data
//! block a lookup needs is an object-store read. After a warm-up that loads each table's index
//! and filter, LOOKUPS absent keys are looked up one after another, each between two present
//! keys, so every table's range holds it and SlateDB asks every table's filter.
//!
//! What is counted, and how:
//! * SST reads: `get` requests for `.sst` objects, counted by a wrapper around the object
//!   store, during the measured lookups only.
//! * Filter bytes per key: the filter blocks' stored length (`SsTableInfo::filter_len`: the
//!   policy's bytes plus SlateDB's name, length and CRC framing), summed over the tables,
//!   over the keys.
//! * Measured FPR: the filters' "maybe" answers over the questions asked, counted by a
//!   pass-through wrapper around the policy. Every key asked about is absent, so every
//!   "maybe" is a false positive, and each costs one data-block read: the example checks that
//!   the reads counted equal the "maybe"s.

#[path = "../tests/common/mod.rs"]
mod common;

use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use cuckoo_sst::CuckooFilter;
use cuckoo_sst_slatedb::{CuckooFilterPolicy, POLICY_NAME};
use futures::stream::BoxStream;
use slatedb::bytes::Bytes;
use slatedb::config::{FlushOptions, FlushType, Settings};
use slatedb::db_cache::SplitCache;
use slatedb::filter_policy::{BloomFilterPolicy, FilterPolicy};
use slatedb::object_store::memory::InMemory;
use slatedb::object_store::path::Path;
use slatedb::object_store::{
    self, CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
};
use slatedb::{Db, WriteBatch};

use common::{MapCache, Probe, absent_key, key};

const TABLES: u64 = 8;
const ROOT: &str = "bench";
/// Absent lookups before counting, enough to load every table's index and filter.
const WARM_UP: u64 = 1_000;
/// SlateDB's default Bloom filter: `BloomFilterPolicy::new(10)`.
const BLOOM_BITS_PER_KEY: u32 = 10;

type Result<T, E = Box<dyn std::error::Error>> = std::result::Result<T, E>;

/// An object store that counts the `get` requests made for SSTable objects.
#[derive(Debug)]
struct Counting {
    inner: InMemory,
    sst_gets: AtomicU64,
}

impl fmt::Display for Counting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Counting({})", self.inner)
    }
}

impl Counting {
    fn count(&self, location: &Path) {
        if location.as_ref().ends_with(".sst") {
            self.sst_gets.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[async_trait::async_trait]
impl ObjectStore for Counting {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }
    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }
    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        if !options.head {
            self.count(location);
        }
        self.inner.get_opts(location, options).await
    }
    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        self.count(location);
        self.inner.get_ranges(location, ranges).await
    }
    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }
    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }
    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }
    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
    async fn rename_opts(
        &self,
        from: &Path,
        to: &Path,
        options: RenameOptions,
    ) -> object_store::Result<()> {
        self.inner.rename_opts(from, to, options).await
    }
}

/// One setup's results.
struct Row {
    setup: String,
    layout: String,
    filter_bytes: u64,
    keys: u64,
    /// Filter questions and "maybe" answers during the measured lookups.
    asked: u64,
    maybes: u64,
    /// The rate the layout should give: cuckoo-sst's bound (both buckets full), the textbook
    /// rate for the Bloom filter.
    expected: Option<f64>,
    sst_gets: u64,
    lookups: u64,
    seconds: f64,
}

impl Row {
    fn bytes_per_key(&self) -> f64 {
        self.filter_bytes as f64 / self.keys as f64
    }
    fn fpr(&self) -> Option<f64> {
        (self.asked > 0).then(|| self.maybes as f64 / self.asked as f64)
    }
}

fn settings() -> Settings {
    Settings {
        // Tables are written when the example flushes the memtable.
        l0_sst_size_bytes: 512 << 20,
        l0_max_ssts: 2 * TABLES as usize,
        l0_max_ssts_per_key: 2 * TABLES as usize,
        compactor_options: None,
        garbage_collector_options: None,
        ..Settings::default()
    }
}

async fn open(store: &Arc<Counting>, policy: Option<Arc<Probe>>) -> Result<Db, slatedb::Error> {
    let policies: Vec<Arc<dyn FilterPolicy>> = policy
        .into_iter()
        .map(|p| p as Arc<dyn FilterPolicy>)
        .collect();
    // Index and filter blocks cached, as in any deployment; data blocks are not, so each one a
    // lookup needs is an object-store read.
    let meta = Arc::new(MapCache::default());
    let cache = SplitCache::new().with_meta_cache(Some(meta)).build();
    Db::builder(ROOT, Arc::clone(store) as Arc<dyn ObjectStore>)
        .with_settings(settings())
        .with_filter_policies(policies)
        .with_db_cache(Arc::new(cache), 0)
        .build()
        .await
}

/// The probes per key of SlateDB's Bloom filter (`optimal_num_probes` in its `filter.rs`).
fn bloom_probes() -> u32 {
    (BLOOM_BITS_PER_KEY as f32 * 0.69) as u32
}

/// The textbook false-positive rate of a Bloom filter of `m/n` bits per key and `k` probes:
/// `(1 − e^(−k·n/m))^k`.
fn bloom_expected_fpr(bits_per_key: f64, k: u32) -> f64 {
    (1.0 - (-(k as f64) / bits_per_key).exp()).powi(k as i32)
}

fn value(i: u64) -> Vec<u8> {
    format!("{i:>064}").into_bytes()
}

/// The absent key of the `n`-th lookup: pseudo-random, always between two present keys and
/// inside every table's range.
fn lookup_key(n: u64, keys: u64) -> String {
    let mut x = n.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    absent_key(TABLES + x % (keys - 2 * TABLES))
}

/// Writes `keys` keys into `TABLES` tables, reopens, warms up and measures `lookups` absent
/// lookups with `policy` (or none).
async fn run(
    setup: &str,
    policy: Option<Arc<dyn FilterPolicy>>,
    expected: Option<f64>,
    keys: u64,
    lookups: u64,
) -> Result<Row> {
    let store = Arc::new(Counting {
        inner: InMemory::new(),
        sst_gets: AtomicU64::new(0),
    });
    let db = open(&store, policy.clone().map(Probe::new)).await?;
    for table in 0..TABLES {
        let in_table: Vec<u64> = (table..keys).step_by(TABLES as usize).collect();
        for chunk in in_table.chunks(1_000) {
            let mut batch = WriteBatch::new();
            for &i in chunk {
                batch.put(key(i), value(i));
            }
            db.write(batch).await?;
        }
        db.flush_with_options(FlushOptions {
            flush_type: FlushType::MemTable,
        })
        .await?;
    }
    db.close().await?;

    // Reopened: the filters are decoded from the stored tables.
    let probe = policy.map(Probe::new);
    let db = open(&store, probe.clone()).await?;
    let manifest = db.manifest();
    let tables: Vec<_> = manifest.l0().iter().map(|v| v.sst.clone()).collect();
    assert_eq!(tables.len() as u64, TABLES);
    let filter_bytes = tables.iter().map(|t| t.info.filter_len).sum();
    let layout = match probe.as_ref().map(|p| p.inner.name().to_string()) {
        None => "—".to_string(),
        Some(name) if name == POLICY_NAME => {
            let t = &tables[0];
            let path = Path::from(format!("{ROOT}/compacted/{}.sst", t.id.value()));
            let start = t.info.filter_offset;
            let block = store
                .get_range(&path, start..start + t.info.filter_len)
                .await?;
            let framed = common::parse_filter_block(&block);
            let f = CuckooFilter::from_bytes(&block[framed[0].data.clone()])?;
            format!(
                "{:?} b={} f={}",
                f.encoding(),
                f.bucket_size(),
                f.fingerprint_bits()
            )
        }
        Some(_) => format!("{BLOOM_BITS_PER_KEY} bits/key, {} probes", bloom_probes()),
    };

    // Present keys read back (a sample), then the warm-up.
    for n in 0..1_000 {
        let i = n * (keys / 1_000);
        assert_eq!(db.get(key(i)).await?.as_deref(), Some(&value(i)[..]));
    }
    for n in 0..WARM_UP {
        assert_eq!(db.get(lookup_key(lookups + n, keys)).await?, None);
    }

    let counts = probe.as_ref().map(|p| Arc::clone(&p.counts));
    let asked_before = counts.as_ref().map_or((0, 0, 0), |c| c.get());
    let gets_before = store.sst_gets.load(Ordering::Relaxed);
    let start = Instant::now();
    for n in 0..lookups {
        let k = lookup_key(n, keys);
        assert_eq!(db.get(&k).await?, None, "{k}");
    }
    let seconds = start.elapsed().as_secs_f64();
    let sst_gets = store.sst_gets.load(Ordering::Relaxed) - gets_before;
    let (_, asked, maybes) = counts.as_ref().map_or((0, 0, 0), |c| c.get());
    let (asked, maybes) = (asked - asked_before.1, maybes - asked_before.2);
    db.close().await?;

    let row = Row {
        setup: setup.to_string(),
        layout,
        filter_bytes,
        keys,
        asked,
        maybes,
        expected,
        sst_gets,
        lookups,
        seconds,
    };
    if probe.is_some() {
        // Every lookup asked all 8 filters; each "maybe" cost exactly one data-block read.
        assert_eq!(asked, TABLES * lookups, "{setup}: filters asked");
        assert_eq!(sst_gets, maybes, "{setup}: reads against false positives");
    } else {
        assert_eq!(
            sst_gets,
            TABLES * lookups,
            "{setup}: one block read per table"
        );
    }
    eprintln!(
        "{setup}: {:.1} s, {sst_gets} SST reads, {maybes} of {asked} filter answers \"maybe\"",
        seconds
    );
    Ok(row)
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u64>());
    let keys = args.next().transpose()?.unwrap_or(1_000_000);
    let lookups = args.next().transpose()?.unwrap_or(400_000);
    assert!(keys >= 100 * TABLES, "at least {} keys", 100 * TABLES);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut rows = Vec::new();
        rows.push(run("(a) no filter", None, None, keys, lookups).await?);
        let bloom: Arc<dyn FilterPolicy> = Arc::new(BloomFilterPolicy::new(BLOOM_BITS_PER_KEY));
        let expected = bloom_expected_fpr(BLOOM_BITS_PER_KEY.into(), bloom_probes());
        let bloom_row = run(
            "(b) SlateDB Bloom, default",
            Some(bloom),
            Some(expected),
            keys,
            lookups,
        )
        .await?;
        let bloom_bits = 8.0 * bloom_row.bytes_per_key();
        rows.push(bloom_row);
        let one_percent = Arc::new(CuckooFilterPolicy::new());
        let bound = Some(one_percent.expected_fpr());
        rows.push(
            run(
                "(c) cuckoo-sst, 1 %",
                Some(one_percent),
                bound,
                keys,
                lookups,
            )
            .await?,
        );
        // The lowest-rate layout whose filters fit in the Bloom filter's measured bits per key.
        let same_memory = Arc::new(CuckooFilterPolicy::with_bits_per_key(bloom_bits)?);
        let bound = Some(same_memory.expected_fpr());
        let setup = format!("(d) cuckoo-sst, ≤ {bloom_bits:.2} bits/key");
        rows.push(run(&setup, Some(same_memory), bound, keys, lookups).await?);
        print_table(&rows, keys, lookups);
        Ok(())
    })
}

fn print_table(rows: &[Row], keys: u64, lookups: u64) {
    println!(
        "{keys} keys in {TABLES} L0 tables, {lookups} absent-key gets (each inside every \
         table's range)\n"
    );
    println!(
        "| setup | filter | filter bytes/key | measured FPR (maybe / asked) | expected FPR | \
         SST reads per absent get | absent gets/s |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in rows {
        let fpr = match r.fpr() {
            Some(fpr) => format!("{:.3} % ({} / {})", 100.0 * fpr, r.maybes, r.asked),
            None => "—".to_string(),
        };
        let expected = r
            .expected
            .map_or("—".to_string(), |e| format!("{:.3} %", 100.0 * e));
        println!(
            "| {} | {} | {:.4} | {fpr} | {expected} | {:.4} | {:.0} |",
            r.setup,
            r.layout,
            r.bytes_per_key(),
            r.sst_gets as f64 / r.lookups as f64,
            r.lookups as f64 / r.seconds,
        );
    }
}
