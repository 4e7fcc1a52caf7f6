//! The run index's file (FORMAT.md §12): [`RunIndex::to_bytes`], [`RunIndex::save`] and
//! [`RunIndex::from_bytes`] (every byte checked), and [`MappedRunIndex`], which answers from a
//! mapped file with its header and run table checked at open and its bucket chunks as lookups
//! touch them (as [`MappedFilter`](crate::MappedFilter) does).
//!
//! Whatever happened to a file, a lookup never leaves out a run that may hold the key: a file
//! whose header, run table or checksum table is damaged is refused (the engine falls back to
//! its per-run filters), and a lookup whose buckets lie in a damaged chunk answers every run.

use super::{Batch, ID_BITS, MAX_RUNS, RunIndex, Runs, Source};
use crate::checks::{Checks, Health};
use crate::copies::{Copies, CopiesEncoding};
use crate::error::{Error, Result};
use crate::format::{
    self, CHUNK_SHIFT, CHUNK_SHIFTS, Coverage, FileMeta, HASH_SCHEME, LevelMeta, MAX_KICKS_LIMIT,
    checksum_table_len, chunks_in, decode,
};
use crate::hash::{self, KeyHash, stretch};
use crate::level::Counts;
use crate::mmap::FileBytes;
use crate::stretch::StretchLevel;
use crate::table::{Codec, Encoding, Geometry, with_codec};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// FORMAT.md §12.1: the first eight bytes of a run-index file.
pub(crate) const MAGIC: [u8; 8] = *b"CUCKORIX";
/// FORMAT.md §12.6: the newest run-index version this build reads and writes.
pub(crate) const VERSION: u32 = 1;
/// FORMAT.md §12.1: bytes of the header.
const HEADER_LEN: usize = 128;
/// FORMAT.md §12.2: bytes of one run record.
const RECORD_LEN: usize = 16;
/// FORMAT.md §12.3: bytes of one stash record.
const STASH_RECORD_LEN: usize = 16;
/// FORMAT.md §12.1: `flags` bit 0, the index is stale.
const FLAG_STALE: u32 = 1;
/// FORMAT.md §12.1: the bytes of the header `header_crc` covers.
const HEADER_CRC_OFFSET: usize = 124;

/// The digest of a run set, newest first (FORMAT.md §12.1 `runs_digest`): XXH3-64 of the runs'
/// little-endian bytes, one after another.
fn digest(runs: &[u64]) -> u64 {
    let bytes: Vec<u8> = runs.iter().flat_map(|r| r.to_le_bytes()).collect();
    xxhash_rust::xxh3::xxh3_64(&bytes)
}

/// Bytes of the run table of `runs` runs, padded to a cache line.
const fn run_table_len(runs: usize) -> usize {
    (RECORD_LEN * runs).next_multiple_of(64)
}

/// Bytes of the stash table of `records` records, padded to a cache line (`None` past
/// `usize`).
fn stash_table_len(records: u64) -> Option<usize> {
    let len = records.checked_mul(STASH_RECORD_LEN as u64)?;
    usize::try_from(len.checked_next_multiple_of(64)?).ok()
}

/// The ids of the stash record for seeded hash `h` among `records` (the stash table's records,
/// sorted by hash: FORMAT.md §12.3), by binary search in place; 0 when there is none.
fn stash_ids(records: &[u8], h: u64) -> u64 {
    let (mut lo, mut hi) = (0, records.len() / STASH_RECORD_LEN);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let at = mid * STASH_RECORD_LEN;
        match u64_at(records, at).cmp(&h) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return u64_at(records, at + 8),
        }
    }
    0
}

fn u32_at(b: &[u8; HEADER_LEN], at: usize) -> u32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(x)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

fn check_crc(part: &str, stored: u32, bytes: &[u8]) -> Result<()> {
    let computed = crc32fast::hash(bytes);
    if stored != computed {
        return Err(Error::ChecksumMismatch {
            part: part.into(),
            stored,
            computed,
        });
    }
    Ok(())
}

/// A run-index file after FORMAT.md §12.4 steps 1–6 (everything but the buckets).
#[derive(Clone, Debug)]
struct Parsed {
    /// The file as the filter reader's chunk checks see it: one stretch level (its bucket
    /// region), covered chunk by chunk (§6).
    meta: FileMeta,
    geo: Geometry,
    counts: Counts,
    stale: bool,
    /// The runs, newest first, and their ids.
    order: Vec<u64>,
    order_ids: Vec<u32>,
    /// The run of each id (`MAX_RUNS` of them; `None`: free).
    by_id: Vec<Option<u64>>,
    digest: u64,
    /// The stash records' bytes in the file (FORMAT.md §12.3), padding left out.
    stash: std::ops::Range<usize>,
    /// The runs the stash records name, one per bit.
    stashed: u64,
    /// The level's lookup state, derived once at open.
    lookup: crate::hash::stretch::Lookup,
}

impl Parsed {
    fn level(&self) -> &LevelMeta {
        match self.meta.levels.first() {
            Some(level) => level,
            None => unreachable!("a parsed run index has its level"),
        }
    }

    /// One bit per id of a run in the table.
    fn live(&self) -> u64 {
        self.order_ids.iter().fold(0, |m, &id| m | 1 << id)
    }
}

/// FORMAT.md §12.4 steps 1–6: header, lengths, run table, stash table and checksum table;
/// reads `128 + 16·R + 16·S + 4·C` bytes (padded), whatever the bucket region's size, and
/// allocates nothing in proportion to any field but the run table's (at most 64 records).
fn parse(bytes: &[u8]) -> Result<Parsed> {
    // Step 1: magic and length.
    if let Some(magic) = bytes.get(..MAGIC.len())
        && magic != MAGIC
    {
        let mut found = [0u8; 8];
        found.copy_from_slice(magic);
        return Err(Error::BadMagic { found });
    }
    if bytes.len() < HEADER_LEN {
        let mut found = [0u8; 8];
        for (f, b) in found.iter_mut().zip(bytes) {
            *f = *b;
        }
        if bytes.iter().zip(MAGIC).any(|(a, b)| *a != b) {
            return Err(Error::BadMagic { found });
        }
        return Err(Error::Truncated {
            expected: HEADER_LEN as u64,
            found: bytes.len() as u64,
        });
    }
    let mut h = [0u8; HEADER_LEN];
    h.copy_from_slice(&bytes[..HEADER_LEN]);
    // Step 2: version.
    let version = u32_at(&h, 8);
    if version > VERSION {
        return Err(Error::UnsupportedVersion {
            found: version,
            supported: VERSION,
        });
    }
    if version == 0 {
        return Err(Error::corrupt("version", "0 is not a version"));
    }
    // Step 3: the header's checksum.
    check_crc(
        "header",
        u32_at(&h, HEADER_CRC_OFFSET),
        &h[..HEADER_CRC_OFFSET],
    )?;
    // Step 4: the header's fields.
    let header_len = u32_at(&h, 12);
    if header_len as usize != HEADER_LEN {
        return Err(Error::corrupt(
            "header_len",
            format!("{header_len}, expected {HEADER_LEN}"),
        ));
    }
    let hash = u32_at(&h, 28);
    if hash != HASH_SCHEME {
        return Err(Error::corrupt(
            "hash",
            format!("unknown hash scheme {hash}"),
        ));
    }
    if h[70..72] != [0; 2] {
        return Err(Error::corrupt(
            "reserved",
            "reserved header bytes are not zero",
        ));
    }
    let flags = u32_at(&h, 24);
    if flags & !FLAG_STALE != 0 {
        return Err(Error::corrupt("flags", format!("unknown flags {flags:#x}")));
    }
    let max_kicks = u32_at(&h, 48);
    if max_kicks > MAX_KICKS_LIMIT {
        return Err(Error::corrupt(
            "max_kicks",
            format!("{max_kicks} is more than {MAX_KICKS_LIMIT}"),
        ));
    }
    let target_fpr = f64::from_bits(u64_at(&h, 40));
    if !(target_fpr > 0.0 && target_fpr < 1.0) {
        return Err(Error::corrupt(
            "target_fpr",
            format!("{target_fpr} is not a rate in (0, 1)"),
        ));
    }
    let run_count = u32_at(&h, 52);
    if run_count as usize > MAX_RUNS {
        return Err(Error::corrupt(
            "run_count",
            format!("{run_count} runs: an index describes at most {MAX_RUNS}"),
        ));
    }
    let payload_bits = h[68] as u32;
    if payload_bits != ID_BITS {
        return Err(Error::corrupt(
            "payload_bits",
            format!("{payload_bits}, expected {ID_BITS}"),
        ));
    }
    let shift = h[69] as u32;
    if !CHUNK_SHIFTS.contains(&shift) {
        return Err(Error::corrupt(
            "chunk_shift",
            format!(
                "{shift} is not in {}..={}",
                CHUNK_SHIFTS.start(),
                CHUNK_SHIFTS.end()
            ),
        ));
    }
    let encoding = Encoding::from_code(h[66])
        .ok_or_else(|| Error::corrupt("encoding", format!("unknown encoding {}", h[66])))?;
    let geo = Geometry::stretch_with_payload(
        u64_at(&h, 56),
        h[64] as u32,
        h[65] as u32,
        encoding,
        h[67] as u32,
        payload_bits,
    )
    .map_err(|e| match e {
        Error::InvalidConfig { setting, reason } => {
            let name = match setting {
                "capacity" => "num_buckets",
                "fingerprint_bits" => "slot_bits",
                other => other,
            };
            Error::corrupt(name, reason)
        }
        other => other,
    })?;
    let region_len = geo.table_bytes();
    let chunks = chunks_in(region_len, shift);
    let chunk_count = u32_at(&h, 104);
    if chunk_count as usize != chunks {
        return Err(Error::corrupt(
            "chunk_count",
            format!("{chunk_count}, but the bucket region has {chunks} chunks"),
        ));
    }
    let runs_len = run_table_len(run_count as usize);
    let stash_count = u32_at(&h, 116);
    let stash_at = HEADER_LEN + runs_len;
    let file_len = u64_at(&h, 16);
    let lengths = stash_table_len(u64::from(stash_count)).and_then(|stash_len| {
        let table = stash_at.checked_add(stash_len)?;
        let region_start = table.checked_add(checksum_table_len(chunks))?;
        Some((table, region_start))
    });
    let expected = lengths.and_then(|(_, start)| (start as u64).checked_add(region_len as u64));
    let Some((table, region_start)) = lengths.filter(|_| expected == Some(file_len)) else {
        return Err(Error::corrupt(
            "file_len",
            format!(
                "{file_len}, but the header, run table, {stash_count} stash records, checksum \
                 table and buckets take more or less"
            ),
        ));
    };
    let actual = bytes.len() as u64;
    if actual < file_len {
        return Err(Error::Truncated {
            expected: file_len,
            found: actual,
        });
    }
    if actual > file_len {
        return Err(Error::TrailingBytes {
            expected: file_len,
            found: actual,
        });
    }
    let counts = Counts {
        keys: u64_at(&h, 72),
        entries: u64_at(&h, 80),
        precision: u64_at(&h, 88),
    };
    if counts.entries > geo.slots() {
        return Err(Error::corrupt(
            "entry_count",
            format!("{} entries in {} slots", counts.entries, geo.slots()),
        ));
    }
    if counts.keys > counts.entries {
        return Err(Error::corrupt(
            "key_count",
            format!("{} keys, but {} entries", counts.keys, counts.entries),
        ));
    }
    let most = (geo.bucket_size() as u64) << stretch::PRECISION_SCALE;
    if counts.precision > most || (counts.precision == 0) != (counts.entries == 0) {
        return Err(Error::corrupt(
            "precision",
            format!("{} for {} entries", counts.precision, counts.entries),
        ));
    }
    // Step 5: the run table.
    let runs = &bytes[HEADER_LEN..stash_at];
    check_crc("run table", u32_at(&h, 112), runs)?;
    let mut order = Vec::with_capacity(run_count as usize);
    let mut order_ids = Vec::with_capacity(run_count as usize);
    let mut seen = 0u64;
    for (k, record) in runs.chunks_exact(RECORD_LEN).enumerate() {
        if k >= run_count as usize {
            if record.iter().any(|&b| b != 0) {
                return Err(Error::corrupt(
                    "run table",
                    "the padding after the last record is not zero",
                ));
            }
            continue;
        }
        let run = u64_at(record, 0);
        let id = record[8] as u32;
        if record[9..].iter().any(|&b| b != 0) {
            return Err(Error::corrupt(
                "run table",
                format!("record {k}: reserved bytes are not zero"),
            ));
        }
        if id >= 1 << payload_bits || seen >> id & 1 == 1 {
            return Err(Error::corrupt(
                "run table",
                format!("record {k}: id {id} is out of range or given twice"),
            ));
        }
        if order.contains(&run) {
            return Err(Error::corrupt(
                "run table",
                format!("record {k}: run {run} is listed twice"),
            ));
        }
        seen |= 1 << id;
        order.push(run);
        order_ids.push(id);
    }
    let stored_digest = u64_at(&h, 96);
    let digest = digest(&order);
    if stored_digest != digest {
        return Err(Error::corrupt(
            "runs_digest",
            format!("{stored_digest:#x}, but the run table's runs give {digest:#x}"),
        ));
    }
    // Step 5, the stash table: sorted by hash, each record naming runs of the run table.
    let stash = &bytes[stash_at..table];
    check_crc("stash table", u32_at(&h, 120), stash)?;
    let records = stash_count as usize * STASH_RECORD_LEN;
    if stash[records..].iter().any(|&b| b != 0) {
        return Err(Error::corrupt(
            "stash table",
            "the padding after the last record is not zero",
        ));
    }
    let mut last = None;
    let mut stashed = 0u64;
    for (k, record) in stash[..records].chunks_exact(STASH_RECORD_LEN).enumerate() {
        let (key, ids) = (u64_at(record, 0), u64_at(record, 8));
        if last.is_some_and(|l| l >= key) {
            return Err(Error::corrupt(
                "stash table",
                format!("record {k}: hashes are not in increasing order"),
            ));
        }
        if ids == 0 || ids & !seen != 0 {
            return Err(Error::corrupt(
                "stash table",
                format!("record {k}: ids {ids:#x} are none, or name no run of the run table"),
            ));
        }
        last = Some(key);
        stashed += u64::from(ids.count_ones());
    }
    // Step 6: the checksum table.
    let checksums = &bytes[table..region_start];
    check_crc("checksum table", u32_at(&h, 108), checksums)?;
    if checksums[4 * chunks..].iter().any(|&b| b != 0) {
        return Err(Error::corrupt(
            "checksum table",
            "the padding after the last entry is not zero",
        ));
    }
    let level = LevelMeta {
        geo,
        len: counts.keys,
        capacity: counts.keys,
        target_fpr,
        offset: region_start,
        region_crc: 0,
        first_chunk: 0,
        stretch: Some(counts),
        copies: CopiesEncoding::None,
        copies_len: 0,
    };
    Ok(Parsed {
        meta: FileMeta {
            version: format::VERSION_STRETCH,
            seed: u64_at(&h, 32),
            max_kicks,
            target_fpr,
            chain: None,
            item_count: counts.keys,
            file_len,
            coverage: Coverage::Chunks {
                shift,
                count: chunks,
                table,
            },
            levels: vec![level],
        },
        lookup: crate::stretch::lookup_of(&geo),
        geo,
        counts,
        stale: flags & FLAG_STALE != 0,
        by_id: {
            let mut by_id = vec![None; MAX_RUNS];
            for (&run, &id) in order.iter().zip(&order_ids) {
                by_id[id as usize] = Some(run);
            }
            by_id
        },
        order,
        order_ids,
        digest,
        stash: stash_at..stash_at + records,
        stashed,
    })
}

impl RunIndex {
    /// The index's file (FORMAT.md §12): its geometry, counts and seed, the runs it describes
    /// (newest first, with their ids and their digest), whether it is stale, and its buckets,
    /// every byte under a checksum. Given the same operations, the same bytes.
    ///
    /// ```
    /// use cuckoo_sst::{Config, KeyHash, RunIndex};
    /// let mut index = RunIndex::new(Config::new(100))?;
    /// index.add_run(7, &[KeyHash::of(b"a")])?;
    /// let bytes = index.to_bytes();
    /// assert_eq!(&bytes[..8], b"CUCKORIX");
    /// assert_eq!(RunIndex::from_bytes(&bytes)?.to_bytes(), bytes);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.head();
        out.extend_from_slice(self.level.table());
        out
    }

    /// Writes the bytes of [`to_bytes`](Self::to_bytes) to `w`, the buckets straight from
    /// memory.
    ///
    /// ```
    /// let index = cuckoo_sst::RunIndex::new(cuckoo_sst::Config::new(10))?;
    /// let mut out = Vec::new();
    /// index.write_to(&mut out)?;
    /// assert_eq!(out, index.to_bytes());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn write_to<W: Write>(&self, mut w: W) -> Result<()> {
        w.write_all(&self.head())?;
        w.write_all(self.level.table())?;
        Ok(())
    }

    /// Saves the index to `path` atomically and durably, as
    /// [`CuckooFilter::save`](crate::CuckooFilter::save) saves a filter: a temporary file in
    /// the same directory, fsynced, renamed over `path`, then the directory fsynced. A crash
    /// leaves the old file or the new one whole; an error before the rename leaves `path` as
    /// it was.
    ///
    /// ```
    /// use cuckoo_sst::{Config, KeyHash, MappedRunIndex, RunIndex};
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("runs.index");
    /// let mut index = RunIndex::new(Config::new(100))?;
    /// index.add_run(3, &[KeyHash::of(b"k")])?;
    /// index.save(&path)?;
    /// let mapped = MappedRunIndex::open(&path)?;
    /// assert_eq!(mapped.runs_for(b"k").collect::<Vec<_>>(), [3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        crate::persist::save_atomic(path.as_ref(), |w| {
            w.write_all(&self.head())?;
            w.write_all(self.level.table())
        })
    }

    /// An owned index from the bytes of a run-index file (FORMAT.md §12), checked completely:
    /// header, run table, every checksum and the buckets' contents. Anything else is an
    /// `Error` — never a panic, and nothing is allocated beyond the input's length before the
    /// lengths have been checked against it. It answers, grows and is updated as the index that
    /// was saved.
    ///
    /// ```
    /// use cuckoo_sst::{Config, Error, KeyHash, RunIndex};
    /// let mut index = RunIndex::new(Config::new(100))?;
    /// index.add_run(1, &[KeyHash::of(b"a")])?;
    /// let mut bytes = index.to_bytes();
    /// assert_eq!(RunIndex::from_bytes(&bytes)?.runs_for(b"a").collect::<Vec<_>>(), [1]);
    /// let last = bytes.len() - 1;
    /// bytes[last] ^= 1;
    /// assert!(matches!(RunIndex::from_bytes(&bytes), Err(Error::ChecksumMismatch { .. })));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<RunIndex> {
        let p = parse(bytes)?;
        decode::verify_regions(bytes, &p.meta)?;
        let region = bytes.get(p.level().region()).unwrap_or_default();
        let level = StretchLevel::from_parts(
            p.geo,
            p.meta.seed,
            p.meta.max_kicks,
            p.counts,
            p.meta.target_fpr,
            region,
            Copies::default(),
        )?;
        let mut ids = vec![None; MAX_RUNS];
        for (&run, &id) in p.order.iter().zip(&p.order_ids) {
            ids[id as usize] = Some(run);
        }
        let stash = bytes[p.stash.clone()]
            .chunks_exact(STASH_RECORD_LEN)
            .map(|r| (u64_at(r, 0), u64_at(r, 8)))
            .collect();
        Ok(RunIndex {
            level,
            ids,
            live: p.live(),
            stale: p.stale,
            seed: p.meta.seed,
            max_kicks: p.meta.max_kicks,
            order: p.order,
            order_ids: p.order_ids,
            stash,
        })
    }

    /// Whether the index describes exactly the runs `runs`, newest first: what an engine asks
    /// of an index it read, with its manifest's live runs, before trusting its answers. If
    /// not, the index is stale (a flush, compaction or drop did not reach it) and the engine
    /// asks its per-run filters instead.
    ///
    /// ```
    /// use cuckoo_sst::{Config, RunIndex};
    /// let mut index = RunIndex::new(Config::new(10))?;
    /// index.add_run(1, &[])?;
    /// index.add_run(2, &[])?;
    /// assert!(index.describes(&[2, 1]));
    /// assert!(!index.describes(&[3, 2, 1]));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn describes(&self, runs: &[u64]) -> bool {
        self.order == runs
    }

    /// Whether a compaction failed part-way ([`compact`](Self::compact) returned an error):
    /// every lookup then answers every run, saved and read back included.
    ///
    /// ```
    /// let index = cuckoo_sst::RunIndex::new(cuckoo_sst::Config::new(10))?;
    /// assert!(!index.is_stale());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn is_stale(&self) -> bool {
        self.stale
    }

    /// The digest of the runs the index describes, newest first (FORMAT.md §12.1
    /// `runs_digest`): [`runs_digest_of`](Self::runs_digest_of) of [`runs`](Self::runs). An
    /// engine may keep it in its manifest beside the index file's name.
    ///
    /// ```
    /// use cuckoo_sst::{Config, RunIndex};
    /// let mut index = RunIndex::new(Config::new(10))?;
    /// index.add_run(5, &[])?;
    /// assert_eq!(index.runs_digest(), RunIndex::runs_digest_of(&[5]));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn runs_digest(&self) -> u64 {
        digest(&self.order)
    }

    /// The digest of a run set given newest first: XXH3-64 (seed 0) of the runs' eight
    /// little-endian bytes each, one after another (FORMAT.md §12.1).
    ///
    /// ```
    /// use cuckoo_sst::RunIndex;
    /// assert_eq!(RunIndex::runs_digest_of(&[]), 0x2D06800538D394C2);
    /// assert_ne!(RunIndex::runs_digest_of(&[1, 2]), RunIndex::runs_digest_of(&[2, 1]));
    /// ```
    pub fn runs_digest_of(runs: &[u64]) -> u64 {
        digest(runs)
    }

    /// Header, run table, stash table and checksum table (FORMAT.md §12.1–§12.3); the
    /// buckets follow.
    fn head(&self) -> Vec<u8> {
        let geo = self.level.geometry();
        let table = self.level.table();
        let counts = self.level.counts();
        let runs = self.order.len();
        let chunks = chunks_in(table.len(), CHUNK_SHIFT);
        let stash_at = HEADER_LEN + run_table_len(runs);
        let stash_len = (STASH_RECORD_LEN * self.stash.len()).next_multiple_of(64);
        let checksums_at = stash_at + stash_len;
        let region_start = checksums_at + checksum_table_len(chunks);
        let mut out = vec![0u8; region_start];
        for (k, (&run, &id)) in self.order.iter().zip(&self.order_ids).enumerate() {
            let at = HEADER_LEN + RECORD_LEN * k;
            out[at..at + 8].copy_from_slice(&run.to_le_bytes());
            out[at + 8] = id as u8;
        }
        // BTreeMap order: increasing hashes, as §12.3 has them.
        for (k, (&s, &ids)) in self.stash.iter().enumerate() {
            let at = stash_at + STASH_RECORD_LEN * k;
            out[at..at + 8].copy_from_slice(&s.to_le_bytes());
            out[at + 8..at + 16].copy_from_slice(&ids.to_le_bytes());
        }
        let z = 1usize << CHUNK_SHIFT;
        for (j, chunk) in table.chunks(z).enumerate() {
            let crc = format::chunk_crc((region_start + j * z) as u64, chunk);
            let at = checksums_at + 4 * j;
            out[at..at + 4].copy_from_slice(&crc.to_le_bytes());
        }
        let runs_crc = crc32fast::hash(&out[HEADER_LEN..stash_at]);
        let stash_crc = crc32fast::hash(&out[stash_at..checksums_at]);
        let checksums_crc = crc32fast::hash(&out[checksums_at..region_start]);
        let slots = geo.stretch_slots();
        let h = &mut out[..HEADER_LEN];
        let mut put = |at: usize, bytes: &[u8]| h[at..at + bytes.len()].copy_from_slice(bytes);
        put(0, &MAGIC);
        put(8, &VERSION.to_le_bytes());
        put(12, &(HEADER_LEN as u32).to_le_bytes());
        put(16, &((region_start + table.len()) as u64).to_le_bytes());
        put(24, &(if self.stale { FLAG_STALE } else { 0 }).to_le_bytes());
        put(28, &HASH_SCHEME.to_le_bytes());
        put(32, &self.seed.to_le_bytes());
        put(40, &self.level.target_fpr().to_le_bytes());
        put(48, &self.max_kicks.to_le_bytes());
        put(52, &(runs as u32).to_le_bytes());
        put(56, &geo.num_buckets().to_le_bytes());
        put(
            64,
            &[
                geo.bucket_size() as u8,
                geo.fp_bits() as u8,
                geo.encoding().code(),
                geo.core_bits() as u8,
                slots.map_or(0, |s| s.payload_bits as u8),
                CHUNK_SHIFT as u8,
            ],
        );
        put(72, &counts.keys.to_le_bytes());
        put(80, &counts.entries.to_le_bytes());
        put(88, &counts.precision.to_le_bytes());
        put(96, &digest(&self.order).to_le_bytes());
        put(104, &(chunks as u32).to_le_bytes());
        put(108, &checksums_crc.to_le_bytes());
        put(112, &runs_crc.to_le_bytes());
        put(116, &(self.stash.len() as u32).to_le_bytes());
        put(120, &stash_crc.to_le_bytes());
        let crc = crc32fast::hash(&out[..HEADER_CRC_OFFSET]);
        out[HEADER_CRC_OFFSET..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
        out
    }
}

/// A run-index file (FORMAT.md §12) mapped into memory and asked in place: opening checks the
/// header, the run table and the checksum table (microseconds, whatever the file's size) and
/// copies nothing; the buckets are checked chunk by chunk as lookups touch them, as
/// [`MappedFilter::open_unverified`](crate::MappedFilter::open_unverified) does. A lookup
/// whose buckets lie in a damaged chunk answers every run the index describes (never a false
/// negative); [`verify`](Self::verify) checks every byte and names the damage.
///
/// Like a [`MappedFilter`](crate::MappedFilter), the file must not change while it is mapped
/// (files written by [`RunIndex::save`] never are: a save renames a new file over the path).
///
/// ```
/// use cuckoo_sst::{Config, KeyHash, MappedRunIndex, RunIndex};
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("runs.index");
/// let mut index = RunIndex::new(Config::new(1000))?;
/// index.add_run(10, &[KeyHash::of(b"old")])?;
/// index.add_run(11, &[KeyHash::of(b"new"), KeyHash::of(b"old")])?;
/// index.save(&path)?;
///
/// let mapped = MappedRunIndex::open(&path)?;
/// if mapped.describes(&[11, 10]) {
///     assert_eq!(mapped.runs_for(b"old").collect::<Vec<_>>(), [11, 10]);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct MappedRunIndex {
    bytes: FileBytes,
    parsed: Parsed,
    live: u64,
    checks: Box<Checks>,
}

impl MappedRunIndex {
    /// Maps `path` and checks its header, run table and checksum table (FORMAT.md §12.4 steps
    /// 1–6), in time independent of the file's size; the buckets are checked as lookups touch
    /// them. A file whose checked parts are damaged, or that is not a run index, is an
    /// `Error`: the engine then reads through its per-run filters.
    ///
    /// ```
    /// use cuckoo_sst::{Error, MappedRunIndex};
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("not-an-index");
    /// std::fs::write(&path, b"hello, world")?;
    /// assert!(matches!(MappedRunIndex::open(&path), Err(Error::BadMagic { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<MappedRunIndex> {
        MappedRunIndex::parsed(crate::mmap::map_file(path.as_ref(), HEADER_LEN as u64)?)
    }

    /// An index over bytes the caller shares (a cache's copy of the file), checked as
    /// [`open`](Self::open) checks a file.
    ///
    /// ```
    /// use cuckoo_sst::{Config, KeyHash, MappedRunIndex, RunIndex};
    /// let mut index = RunIndex::new(Config::new(100))?;
    /// index.add_run(1, &[KeyHash::of(b"k")])?;
    /// let m = MappedRunIndex::from_shared(index.to_bytes().into())?;
    /// assert_eq!(m.runs_for(b"k").collect::<Vec<_>>(), [1]);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn from_shared(bytes: Arc<[u8]>) -> Result<MappedRunIndex> {
        MappedRunIndex::parsed(FileBytes::Shared(bytes))
    }

    fn parsed(bytes: FileBytes) -> Result<MappedRunIndex> {
        let parsed = parse(bytes.as_slice())?;
        Ok(MappedRunIndex {
            checks: Box::new(Checks::new(&parsed.meta)),
            live: parsed.live(),
            parsed,
            bytes,
        })
    }

    /// Checks every bucket chunk not checked yet, then the buckets' contents (FORMAT.md §12.4
    /// step 7); the first damage found, if any. Lookups go on meanwhile.
    ///
    /// ```
    /// use cuckoo_sst::{Config, MappedRunIndex, RunIndex};
    /// let mut bytes = RunIndex::new(Config::new(10))?.to_bytes();
    /// let m = MappedRunIndex::from_shared(bytes.clone().into())?;
    /// m.verify()?;
    /// let last = bytes.len() - 1;
    /// bytes[last] ^= 1; // the buckets' last byte
    /// assert!(MappedRunIndex::from_shared(bytes.into())?.verify().is_err());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn verify(&self) -> Result<()> {
        self.checks.verify(self.bytes.as_slice(), &self.parsed.meta)
    }

    /// Whether [`verify`](Self::verify) has passed.
    ///
    /// ```
    /// use cuckoo_sst::{Config, MappedRunIndex, RunIndex};
    /// let m = MappedRunIndex::from_shared(RunIndex::new(Config::new(10))?.to_bytes().into())?;
    /// assert!(!m.is_verified());
    /// m.verify()?;
    /// assert!(m.is_verified());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn is_verified(&self) -> bool {
        self.checks.verified()
    }

    /// What is known of the bucket chunks so far: how many, how many checked whole, how many
    /// damaged.
    ///
    /// ```
    /// use cuckoo_sst::{Config, MappedRunIndex, RunIndex};
    /// let m = MappedRunIndex::from_shared(RunIndex::new(Config::new(10))?.to_bytes().into())?;
    /// assert_eq!((m.health().chunks, m.health().verified), (1, 0));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn health(&self) -> Health {
        self.checks.health()
    }

    /// The runs the index describes, newest first.
    ///
    /// ```
    /// use cuckoo_sst::{Config, MappedRunIndex, RunIndex};
    /// let mut index = RunIndex::new(Config::new(10))?;
    /// index.add_run(4, &[])?;
    /// assert_eq!(MappedRunIndex::from_shared(index.to_bytes().into())?.runs(), &[4]);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn runs(&self) -> &[u64] {
        &self.parsed.order
    }

    /// Whether the index describes exactly `runs`, newest first (see
    /// [`RunIndex::describes`]): if not, the engine asks its per-run filters instead.
    ///
    /// ```
    /// use cuckoo_sst::{Config, MappedRunIndex, RunIndex};
    /// let mut index = RunIndex::new(Config::new(10))?;
    /// index.add_run(4, &[])?;
    /// let m = MappedRunIndex::from_shared(index.to_bytes().into())?;
    /// assert!(m.describes(&[4]) && !m.describes(&[5, 4]));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn describes(&self, runs: &[u64]) -> bool {
        self.parsed.order == runs
    }

    /// The digest of the runs the file describes (FORMAT.md §12.1 `runs_digest`), checked
    /// against its run table at open.
    ///
    /// ```
    /// use cuckoo_sst::{Config, MappedRunIndex, RunIndex};
    /// let mut index = RunIndex::new(Config::new(10))?;
    /// index.add_run(4, &[])?;
    /// let m = MappedRunIndex::from_shared(index.to_bytes().into())?;
    /// assert_eq!(m.runs_digest(), RunIndex::runs_digest_of(&[4]));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn runs_digest(&self) -> u64 {
        self.parsed.digest
    }

    /// Whether the file says the index is stale (every lookup answers every run).
    ///
    /// ```
    /// use cuckoo_sst::{Config, MappedRunIndex, RunIndex};
    /// let m = MappedRunIndex::from_shared(RunIndex::new(Config::new(10))?.to_bytes().into())?;
    /// assert!(!m.is_stale());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn is_stale(&self) -> bool {
        self.parsed.stale
    }

    /// Entries in the index, from the header and the stash table (one per run a stash record
    /// names), as [`RunIndex::len`] counts them.
    ///
    /// ```
    /// use cuckoo_sst::{Config, KeyHash, MappedRunIndex, RunIndex};
    /// let mut index = RunIndex::new(Config::new(10))?;
    /// index.add_run(1, &[KeyHash::of(b"a"), KeyHash::of(b"b")])?;
    /// assert_eq!(MappedRunIndex::from_shared(index.to_bytes().into())?.len(), index.len());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        crate::view::saturating_usize(
            self.parsed
                .counts
                .entries
                .saturating_add(self.parsed.stashed),
        )
    }

    /// Whether the index holds no entry.
    ///
    /// ```
    /// use cuckoo_sst::{Config, MappedRunIndex, RunIndex};
    /// let m = MappedRunIndex::from_shared(RunIndex::new(Config::new(10))?.to_bytes().into())?;
    /// assert!(m.is_empty());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.parsed.counts.entries == 0
    }

    /// The bound on the rate at which an absent key gets a run (FORMAT.md §5.1), as
    /// [`RunIndex::expected_fpr`].
    ///
    /// ```
    /// use cuckoo_sst::{Config, MappedRunIndex, RunIndex};
    /// let index = RunIndex::new(Config::new(10))?;
    /// let m = MappedRunIndex::from_shared(index.to_bytes().into())?;
    /// assert_eq!(m.expected_fpr(), index.expected_fpr());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn expected_fpr(&self) -> f64 {
        crate::level::fpr_bound(self.parsed.geo.core_bits(), self.parsed.counts.precision)
    }

    /// The file's bytes exactly.
    ///
    /// ```
    /// use cuckoo_sst::{Config, MappedRunIndex, RunIndex};
    /// let bytes = RunIndex::new(Config::new(10))?.to_bytes();
    /// let m = MappedRunIndex::from_shared(bytes.clone().into())?;
    /// assert_eq!(m.as_bytes(), &bytes[..]);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    /// The runs that may hold `key`, newest first, as [`RunIndex::runs_for`] answers; every
    /// run when the file is stale or a chunk the lookup reads is damaged.
    ///
    /// ```
    /// use cuckoo_sst::{Config, KeyHash, MappedRunIndex, RunIndex};
    /// let mut index = RunIndex::new(Config::new(100))?;
    /// index.add_run(4, &[KeyHash::of(b"a")])?;
    /// index.add_run(5, &[KeyHash::of(b"a")])?;
    /// let m = MappedRunIndex::from_shared(index.to_bytes().into())?;
    /// assert_eq!(m.runs_for(b"a").collect::<Vec<_>>(), [5, 4]);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn runs_for(&self, key: &[u8]) -> Runs<'_> {
        self.runs_for_hash(KeyHash::of(key))
    }

    /// [`runs_for`](Self::runs_for) for a precomputed hash.
    ///
    /// ```
    /// use cuckoo_sst::{Config, KeyHash, MappedRunIndex, RunIndex};
    /// let m = MappedRunIndex::from_shared(RunIndex::new(Config::new(10))?.to_bytes().into())?;
    /// assert!(m.runs_for_hash(KeyHash::of(b"k")).is_empty());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn runs_for_hash(&self, h: KeyHash) -> Runs<'_> {
        self.runs_for_seeded(self.seeded(h))
    }

    /// [`RunIndex::runs_for_batch`] of a mapped index: the runs for many keys, in order, each
    /// key's buckets asked for 16 keys ahead (their
    /// chunks are checked as single lookups check them).
    ///
    /// ```
    /// use cuckoo_sst::{Config, KeyHash, MappedRunIndex, RunIndex};
    /// let mut index = RunIndex::new(Config::new(100))?;
    /// index.add_run(3, &[KeyHash::of(b"a")])?;
    /// let m = MappedRunIndex::from_shared(index.to_bytes().into())?;
    /// let hashes = [KeyHash::of(b"a"), KeyHash::of(b"zz")];
    /// let firsts: Vec<Option<u64>> = m.runs_for_batch(&hashes).map(|mut r| r.next()).collect();
    /// assert_eq!(firsts[0], Some(3));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn runs_for_batch<'a>(
        &'a self,
        hashes: &'a [KeyHash],
    ) -> impl ExactSizeIterator<Item = Runs<'a>> + 'a {
        Batch::new(Source::Mapped(self), hashes.len(), move |i| hashes[i])
    }

    /// [`runs_for_batch`](Self::runs_for_batch) for keys, each hashed once.
    ///
    /// ```
    /// use cuckoo_sst::{Config, KeyHash, MappedRunIndex, RunIndex};
    /// let mut index = RunIndex::new(Config::new(100))?;
    /// index.add_run(3, &[KeyHash::of(b"a")])?;
    /// let m = MappedRunIndex::from_shared(index.to_bytes().into())?;
    /// assert_eq!(m.runs_for_batch_keys(&["a"]).next().unwrap().next(), Some(3));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn runs_for_batch_keys<'a, K: AsRef<[u8]>>(
        &'a self,
        keys: &'a [K],
    ) -> impl ExactSizeIterator<Item = Runs<'a>> + 'a {
        Batch::new(Source::Mapped(self), keys.len(), move |i| {
            KeyHash::of(keys[i].as_ref())
        })
    }

    /// The key's seeded hash in this file.
    #[inline]
    pub(super) fn seeded(&self, h: KeyHash) -> u64 {
        hash::seeded(h, self.parsed.meta.seed)
    }

    /// Asks for the lines of the buckets a lookup of seeded hash `s` reads.
    #[inline]
    pub(super) fn prefetch(&self, s: u64) {
        crate::stretch::prefetch_lookup(&self.parsed.geo, self.region(), s);
    }

    /// [`runs_for_hash`](Self::runs_for_hash) for a seeded hash.
    pub(super) fn runs_for_seeded(&self, seeded: u64) -> Runs<'_> {
        let p = &self.parsed;
        // Stale, rejected, or a chunk the lookup reads damaged: every run may hold the key.
        let unknown = p.stale
            || self.checks.rejected()
            || (!self.checks.all_good() && !self.touched_whole(seeded));
        let found = if unknown {
            u64::MAX
        } else {
            let found = crate::stretch::payloads_in(&p.geo, &p.lookup, self.region(), seeded);
            if found.count_ones() < 2 || p.stash.is_empty() {
                found
            } else {
                // The stash is asked only where the level answers with two ids or more
                // (FORMAT.md §12.3).
                found | stash_ids(&self.bytes.as_slice()[p.stash.clone()], seeded)
            }
        };
        let mask = found & self.live;
        Runs {
            order: &p.order,
            ids: &p.order_ids,
            by_id: &p.by_id,
            mask,
            left: mask,
            at: 0,
        }
    }

    /// The bucket region.
    fn region(&self) -> &[u8] {
        self.bytes
            .as_slice()
            .get(self.parsed.level().region())
            .unwrap_or_default()
    }

    /// Whether the chunks a lookup of seeded hash `h` reads are whole, checking them the first
    /// time (the chunks of the first and last byte of each of its two buckets' loads).
    fn touched_whole(&self, h: u64) -> bool {
        let p = &self.parsed;
        let geo = &p.geo;
        let Some(slots) = geo.stretch_slots() else {
            return false;
        };
        let probe = stretch::locate(geo.split(), slots, h);
        let last = geo.table_bytes() - 1;
        let spans =
            with_codec!(geo.layout(), c => [c.prefetch_at(probe.i1), c.prefetch_at(probe.i2)]);
        let bytes = self.bytes.as_slice();
        spans.into_iter().flatten().all(|at| {
            let j = p.meta.chunk_at(at.min(last));
            self.checks
                .ensure(j, || decode::check_chunk(bytes, &p.meta, 0, j))
        })
    }
}

impl std::fmt::Debug for MappedRunIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedRunIndex")
            .field("bytes", &self.bytes.as_slice().len())
            .field("storage", &self.bytes.storage())
            .field("runs", &self.parsed.order)
            .field("stale", &self.parsed.stale)
            .field("entries", &self.parsed.counts.entries)
            .field("health", &self.checks.health())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    fn worked_example() -> RunIndex {
        let mut index = RunIndex::new(Config::new(8).seed(0)).unwrap();
        index
            .add_run(7, &[KeyHash::of(b"apple"), KeyHash::of(b"banana")])
            .unwrap();
        index
            .add_run(9, &[KeyHash::of(b"cherry"), KeyHash::of(b"apple")])
            .unwrap();
        index
    }

    /// FORMAT.md §12.5's worked example, byte for byte.
    const WORKED: &str = "\
        43 55 43 4B 4F 52 49 58 01 00 00 00 80 00 00 00 40 01 00 00 00 00 00 00 00 00 00 00 \
        01 00 00 00 00 00 00 00 00 00 00 00 7B 14 AE 47 E1 7A 84 3F F4 01 00 00 02 00 00 00 \
        03 00 00 00 00 00 00 00 04 14 02 05 06 10 00 00 04 00 00 00 00 00 00 00 04 00 00 00 \
        00 00 00 00 00 00 00 00 00 00 10 00 9D 1F BA 3C 35 2D EE 13 01 00 00 00 CD A2 74 C2 \
        4E A2 B7 F5 00 00 00 00 00 00 00 00 9D F8 15 98";

    #[test]
    fn the_worked_example_checks_out() {
        let index = worked_example();
        let bytes = index.to_bytes();
        assert_eq!(bytes.len(), 320);
        let head: Vec<u8> = WORKED
            .split_whitespace()
            .map(|x| u8::from_str_radix(x, 16).unwrap())
            .collect();
        assert_eq!(&bytes[..128], &head[..]);
        // The run table: run 9 (id 1), then run 7 (id 0); the checksum entry; the buckets.
        assert_eq!(&bytes[128..137], &[9, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(&bytes[144..153], &[7, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert!(
            bytes[137..144]
                .iter()
                .chain(&bytes[153..192])
                .all(|&b| b == 0)
        );
        assert_eq!(&bytes[192..196], &[0x65, 0x42, 0x4F, 0x63]);
        let mut covered = 256u64.to_le_bytes().to_vec();
        covered.extend_from_slice(&bytes[256..320]);
        assert_eq!(crc32fast::hash(&covered), 0x634F_4265);
        assert_eq!(
            &bytes[256..266],
            &[0x00, 0x00, 0x00, 0xD0, 0x0F, 0xF2, 0x0F, 0xF2, 0x0F, 0x06]
        );
        assert_eq!(&bytes[282..285], &[0x70, 0x4C, 0x05]);
        assert!(bytes[266..282].iter().chain(&bytes[285..]).all(|&b| b == 0));
        // The derivation of "apple" and "date".
        let geo = index.level.geometry();
        let slots = geo.stretch_slots().unwrap();
        let s = hash::seeded(KeyHash::of(b"apple"), 0);
        assert_eq!(s, 0x83DD_4DBF_CE2F_53F8);
        let p = stretch::locate(geo.split(), slots, s);
        assert_eq!(
            (s >> 59, p.i1, p.q1, p.i2, p.q2),
            (16, 0, 0x20FF, 1, 0x216D)
        );
        with_codec!(geo.layout(), c => {
            assert_eq!(c.read(index.level.table(), 0)[..4], [0, 0x20FD, 0x20FF, 0x60FF]);
            assert_eq!(c.read(index.level.table(), 2)[..4], [0, 0, 0, 0x54C7]);
        });
        assert_eq!(
            crate::stretch::payloads_in(
                &geo,
                &crate::stretch::lookup_of(&geo),
                index.level.table(),
                s
            ),
            0b11
        );
        assert_eq!(index.runs_for(b"apple").collect::<Vec<_>>(), [9, 7]);
        assert_eq!(index.runs_for(b"banana").collect::<Vec<_>>(), [7]);
        assert_eq!(index.runs_for(b"cherry").collect::<Vec<_>>(), [9]);
        let s = hash::seeded(KeyHash::of(b"date"), 0);
        let p = stretch::locate(geo.split(), slots, s);
        assert_eq!(
            (s >> 59, p.i1, p.q1, p.i2, p.q2),
            (10, 2, 0x1485, 1, 0x14F7)
        );
        assert!(index.runs_for(b"date").is_empty());
        assert_eq!(RunIndex::runs_digest_of(&[9, 7]), 0x13EE_2D35_3CBA_1F9D);
    }

    /// FORMAT.md §12.2's stash example: `hot` flushed in runs 1, 2 and 3 of
    /// `RunIndex::new(Config::new(8).seed(0))`: its bucket entries name runs 1 and 2 (ids 0
    /// and 1), and the stash record at offset 192 names run 3 (id 2).
    #[test]
    fn the_stash_example_checks_out() {
        let mut index = RunIndex::new(Config::new(8).seed(0)).unwrap();
        for run in 1..=3 {
            index.add_run(run, &[KeyHash::of(b"hot")]).unwrap();
        }
        let bytes = index.to_bytes();
        let h = hash::seeded(KeyHash::of(b"hot"), 0);
        assert_eq!(h, 0x7A08_5C04_3194_DBF6, "{h:#018X}");
        assert_eq!(u32_at(bytes[..HEADER_LEN].try_into().unwrap(), 116), 1);
        assert_eq!(
            u32_at(bytes[..HEADER_LEN].try_into().unwrap(), 120),
            crc32fast::hash(&bytes[192..256])
        );
        assert_eq!(&bytes[192..200], &h.to_le_bytes());
        assert_eq!(u64_at(&bytes, 200), 0b100);
        assert!(bytes[208..256].iter().all(|&b| b == 0));
        assert_eq!(index.runs_for(b"hot").collect::<Vec<_>>(), [3, 2, 1]);
        assert_eq!(index.len(), 3);
        let m = MappedRunIndex::from_shared(bytes.clone().into()).unwrap();
        assert_eq!(m.runs_for(b"hot").collect::<Vec<_>>(), [3, 2, 1]);
        // A record out of order, naming no run, or with no id is refused (re-signed).
        for (at, value) in [(200, 0u64), (200, 1 << 5)] {
            let mut bad = bytes.clone();
            bad[at..at + 8].copy_from_slice(&value.to_le_bytes());
            let crc = crc32fast::hash(&bad[192..256]);
            bad[120..124].copy_from_slice(&crc.to_le_bytes());
            let crc = crc32fast::hash(&bad[..HEADER_CRC_OFFSET]);
            bad[HEADER_CRC_OFFSET..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
            assert!(
                matches!(RunIndex::from_bytes(&bad), Err(Error::Corrupt { .. })),
                "{value:#x}"
            );
            assert!(MappedRunIndex::from_shared(bad.into()).is_err());
        }
    }

    /// A stale index (a compaction failed part-way) is written with the flag, and read back
    /// stale: every lookup answers every run, owned and mapped.
    #[test]
    fn a_stale_index_is_written_stale() {
        let mut index = worked_example();
        index.stale = true;
        let bytes = index.to_bytes();
        assert_eq!(bytes[24], 1);
        let read = RunIndex::from_bytes(&bytes).unwrap();
        assert!(read.is_stale());
        let mapped = MappedRunIndex::from_shared(bytes.into()).unwrap();
        for key in [&b"apple"[..], b"date", b"fig"] {
            assert_eq!(read.runs_for(key).collect::<Vec<_>>(), [9, 7]);
            assert_eq!(mapped.runs_for(key).collect::<Vec<_>>(), [9, 7]);
        }
    }
}
