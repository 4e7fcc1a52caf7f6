//! The policy inside a real SlateDB, on a local-file object store: 200 000 keys through
//! flushes, a compaction, a reopen and a reader beside the writer, and filter blocks damaged
//! on disk.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cuckoo_sst_slatedb::{CuckooFilterPolicy, POLICY_NAME};
use slatedb::config::{CompactorOptions, FlushOptions, FlushType, Settings};
use slatedb::object_store::ObjectStore;
use slatedb::object_store::local::LocalFileSystem;
use slatedb::{Db, DbReadOps, DbReaderBuilder, WriteBatch};

use common::{MapCache, Probe, absent_key, key};

/// Keys written, the 200 000.
const N: u64 = 200_000;
/// The database's root inside the object store.
const ROOT: &str = "db";

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn settings(compaction: bool) -> Settings {
    Settings {
        // Tables are written when the test flushes the memtable, not when it fills.
        l0_sst_size_bytes: 256 << 20,
        compactor_options: compaction.then(|| CompactorOptions {
            poll_interval: Duration::from_millis(100),
            ..CompactorOptions::default()
        }),
        // Nothing is deleted behind the test's back.
        garbage_collector_options: None,
        ..Settings::default()
    }
}

struct Opened {
    db: Db,
    policy: Arc<CuckooFilterPolicy>,
    probe: Arc<Probe>,
}

/// Opens the database at `ROOT` in `store` with a fresh policy, probe and cache (so every
/// filter it uses is decoded from the stored tables).
async fn open(store: &Arc<dyn ObjectStore>, compaction: bool) -> Result<Opened, slatedb::Error> {
    let policy = Arc::new(CuckooFilterPolicy::new());
    let probe = Probe::new(policy.clone());
    let db = Db::builder(ROOT, Arc::clone(store))
        .with_settings(settings(compaction))
        .with_filter_policies(vec![probe.clone()])
        .with_db_cache(Arc::new(MapCache::default()), 0)
        .build()
        .await?;
    Ok(Opened { db, policy, probe })
}

fn local_store(dir: &Path) -> Result<Arc<dyn ObjectStore>, Box<dyn std::error::Error>> {
    Ok(Arc::new(LocalFileSystem::new_with_prefix(dir)?))
}

fn value(i: u64, version: u32) -> Vec<u8> {
    format!("value {i} version {version}").into_bytes()
}

/// Writes `keys` (with their values, or tombstones where `value` gives none) and flushes the
/// memtable: one L0 table.
async fn write_table(
    db: &Db,
    keys: impl Iterator<Item = u64>,
    value: impl Fn(u64) -> Option<Vec<u8>>,
) -> Result<(), slatedb::Error> {
    let mut batch = WriteBatch::new();
    let mut in_batch = 0;
    for i in keys {
        match value(i) {
            Some(v) => batch.put(key(i), v),
            None => batch.delete(key(i)),
        }
        in_batch += 1;
        if in_batch == 1_000 {
            db.write(std::mem::take(&mut batch)).await?;
            in_batch = 0;
        }
    }
    if in_batch > 0 {
        db.write(batch).await?;
    }
    db.flush_with_options(FlushOptions {
        flush_type: FlushType::MemTable,
    })
    .await
}

/// Every present key reads back with `expected`'s value, and every absent key between them
/// reads `None`. Returns how many filter queries the absent keys made, and how many were
/// answered "maybe".
async fn check(
    db: &(impl DbReadOps + Sync),
    probe: &Probe,
    expected: impl Fn(u64) -> Option<Vec<u8>>,
) -> Result<(u64, u64), Box<dyn std::error::Error>> {
    for i in 0..N {
        let got = db.get(key(i)).await?;
        assert_eq!(got.as_deref(), expected(i).as_deref(), "{}", key(i));
    }
    let (_, points_before, maybes_before) = probe.counts.get();
    for i in 0..N {
        assert_eq!(db.get(absent_key(i)).await?, None, "{}", absent_key(i));
    }
    let (_, points, maybes) = probe.counts.get();
    let (points, maybes) = (points - points_before, maybes - maybes_before);
    // Every absent key but the last lies inside some table's range, most inside several: the
    // filters were asked about them, more than once per key on average.
    assert!(points >= N, "{points} filter queries for {N} absent keys");
    Ok((points, maybes))
}

/// The filters ruled absent keys out at the configured rate (1 %) or better.
fn assert_rate((points, maybes): (u64, u64)) {
    let fpr = maybes as f64 / points as f64;
    assert!(
        fpr <= 0.01,
        "measured false-positive rate {fpr} ({maybes}/{points})"
    );
}

/// Where a table's bytes are in the local store.
fn sst_path(dir: &Path, id: impl std::fmt::Display) -> PathBuf {
    dir.join(ROOT).join("compacted").join(format!("{id}.sst"))
}

/// A table in the manifest.
struct Table {
    path: PathBuf,
    /// Where its filter block is in the file.
    filter: std::ops::Range<usize>,
    first_key: Vec<u8>,
    last_key: Vec<u8>,
}

impl Table {
    /// Whether SlateDB asks this table's filter about `key` (it skips a table whose key range
    /// excludes the key).
    fn covers(&self, key: &str) -> bool {
        (&self.first_key[..]..=&self.last_key[..]).contains(&key.as_bytes())
    }
}

/// Every table in the manifest.
fn tables(db: &Db, dir: &Path) -> Vec<Table> {
    let manifest = db.manifest();
    let l0 = manifest.l0().iter();
    let runs = manifest.compacted().iter().flat_map(|run| run.sst_views());
    l0.chain(runs)
        .map(|view| {
            let info = &view.sst.info;
            let start = info.filter_offset as usize;
            Table {
                path: sst_path(dir, view.sst.id.value()),
                filter: start..start + info.filter_len as usize,
                first_key: info.first_entry.clone().unwrap_or_default().to_vec(),
                last_key: info.last_entry.clone().unwrap_or_default().to_vec(),
            }
        })
        .collect()
}

/// Each table's filter block holds exactly one filter, this policy's.
fn assert_cuckoo_filter_blocks(db: &Db, dir: &Path) -> TestResult {
    let tables = tables(db, dir);
    assert!(!tables.is_empty());
    for table in tables {
        let bytes = std::fs::read(&table.path)?;
        let filters = common::parse_filter_block(&bytes[table.filter]);
        let names: Vec<&str> = filters.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, [POLICY_NAME], "{}", table.path.display());
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_key_reads_back_after_flushes_a_compaction_a_reopen_and_in_a_reader() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = local_store(dir.path())?;
    let opened = open(&store, true).await?;
    let db = &opened.db;

    // Five L0 tables, each spanning the whole key range.
    for table in 0..5 {
        write_table(db, (0..N).filter(|i| i % 5 == table), |i| Some(value(i, 0))).await?;
    }
    // Four or more L0 tables make the size-tiered scheduler compact them into a sorted run.
    let deadline = Instant::now() + Duration::from_secs(120);
    while db.manifest().compacted().is_empty() {
        assert!(Instant::now() < deadline, "no compaction within 120 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // A newer table over the sorted run: new versions of every tenth key, tombstones for
    // every tenth from 5. A lookup must find both in the newer table's filter.
    write_table(db, (0..N).filter(|i| i % 5 == 0), |i| {
        (i % 10 == 0).then(|| value(i, 1))
    })
    .await?;
    let expected = |i: u64| match i % 10 {
        0 => Some(value(i, 1)),
        5 => None,
        _ => Some(value(i, 0)),
    };

    let manifest = db.manifest();
    assert!(!manifest.l0().is_empty() && !manifest.compacted().is_empty());
    assert_cuckoo_filter_blocks(db, dir.path())?;
    assert_rate(check(db, &opened.probe, expected).await?);
    assert_eq!(opened.policy.damaged_filters(), 0);
    assert_eq!(opened.policy.failed_builds(), 0);
    assert_eq!(opened.policy.failed_encodes(), 0);
    db.close().await?;

    // Reopened: the filters are decoded from the stored tables.
    let reopened = open(&store, false).await?;
    assert_rate(check(&reopened.db, &reopened.probe, expected).await?);
    let (decodes, _, _) = reopened.probe.counts.get();
    assert!(
        decodes >= 2,
        "{decodes} filter blocks decoded after the reopen"
    );
    assert_eq!(reopened.policy.damaged_filters(), 0);

    // A reader beside the writer (another machine, say), on the same object store.
    let policy = Arc::new(CuckooFilterPolicy::new());
    let probe = Probe::new(policy.clone());
    let reader = DbReaderBuilder::new(ROOT, Arc::clone(&store))
        .with_filter_policies(vec![probe.clone()])
        .with_db_cache(Arc::new(MapCache::default()), 0)
        .build()
        .await?;
    assert_rate(check(&reader, &probe, expected).await?);
    assert!(probe.counts.get().0 >= 2, "the reader decoded the filters");
    assert_eq!(policy.damaged_filters(), 0);
    reader.close().await?;
    reopened.db.close().await?;
    Ok(())
}

/// Damages the filter data at `data` inside `block` in one of three ways.
fn damage(block: &mut [u8], data: std::ops::Range<usize>, how: usize) -> &'static str {
    let filter = &mut block[data];
    match how {
        0 => {
            let middle = filter.len() / 2;
            filter[middle] ^= 0x10;
            "one bit of the bucket table flipped"
        }
        1 => {
            filter[..8].copy_from_slice(b"NOTCUCKO");
            "a foreign magic number"
        }
        2 => {
            filter.fill(0);
            "zeroed"
        }
        _ => unreachable!(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_filter_block_loses_no_key() -> TestResult {
    common::capture_logs();
    let dir = tempfile::tempdir()?;
    let store = local_store(dir.path())?;
    let opened = open(&store, false).await?;
    for table in 0..4 {
        write_table(&opened.db, (0..N).filter(|i| i % 4 == table), |i| {
            Some(value(i, 0))
        })
        .await?;
    }
    let tables = tables(&opened.db, dir.path());
    assert_eq!(tables.len(), 4);
    opened.db.close().await?;

    // Damage three tables' filters as if before SlateDB checksummed the block (a bad write,
    // bad memory, a foreign writer): the damaged bytes reach the policy's decode. The fourth
    // table keeps its filter.
    let damaged = 3;
    for (how, table) in tables.iter().take(damaged).enumerate() {
        let mut bytes = std::fs::read(&table.path)?;
        let block = &mut bytes[table.filter.clone()];
        let filters = common::parse_filter_block(block);
        let what = damage(block, filters[0].data.clone(), how);
        common::reseal_filter_block(block);
        std::fs::write(&table.path, &bytes)?;
        println!("{}: {what}", table.path.display());
    }

    let reopened = open(&store, false).await?;
    let (points, maybes) = check(&reopened.db, &reopened.probe, |i| Some(value(i, 0))).await?;
    assert!(
        reopened.policy.damaged_filters() >= damaged as u64,
        "{} damaged blocks counted",
        reopened.policy.damaged_filters()
    );
    let warnings = common::logged();
    let logged = warnings
        .iter()
        .filter(|m| m.contains("did not check out"))
        .count();
    assert!(logged >= damaged, "{warnings:?}");
    // Every absent key asked the filter of each table whose range holds it; the three
    // damaged ones answered "maybe" each time, only the intact one ruled keys out, at its
    // usual rate.
    let asked = |t: &Table| (0..N).filter(|&i| t.covers(&absent_key(i))).count() as u64;
    assert_eq!(points, tables.iter().map(asked).sum::<u64>());
    let intact = asked(&tables[damaged]);
    let ruled_out = points - maybes;
    assert!(
        ruled_out <= intact && ruled_out >= intact * 99 / 100,
        "{ruled_out} of {intact} queries to the intact filter ruled out"
    );
    reopened.db.close().await?;
    Ok(())
}
