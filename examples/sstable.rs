//! Filters where they are used: an LSM tree's sorted-string tables (SSTables), written the way
//! LevelDB and RocksDB lay them out, with a cuckoo filter block inside each, and a point-lookup
//! read path that asks the filters before it reads a data block — run with and without them,
//! counting the block reads the filters avoid and timing both.
//!
//! ```text
//! cargo run --release --example sstable                   # 8 tables × 250 000 entries; ~10 s
//! cargo run --release --example sstable -- 4 100000 50000 # tables, entries per table, lookups
//! cargo run --release --example sstable -- runs           # 64 tables and one run index; ~10 s
//! cargo run --release --example sstable -- runs 64 31250 200000
//! ```
//!
//! It runs 200 000 lookups of present keys and 200 000 of absent ones, each kind with and
//! without filters. A table file, in the order it is written (integers little-endian; CRC-32
//! with `crc32fast`, which the crate already depends on):
//!
//! ```text
//! data block 0 .. data block k−1   entries sorted by key, each block ≤ 4 KiB:
//!                                    entry = key len u16, value len u16, key, value
//!                                    then the block's CRC-32 (u32) of the entries
//! index block                      block count u32, then per data block: its last key
//!                                    (len u16, bytes), offset u64, length u32 (CRC included);
//!                                    then the CRC-32 of the index
//! zero padding                     up to the next multiple of 64 bytes
//! filter block                     `CuckooFilter::to_bytes` (FORMAT.md; its own CRCs),
//!                                    at a 64-byte-aligned file offset
//! footer, 48 bytes                 index offset, index length, filter offset, filter length,
//!                                    entry count (u64 each), magic b"CKOOSST1"
//! ```
//!
//! Opening a table reads the footer, the index and the filter block into memory; a lookup then
//! costs at most one positioned read of one data block per table.
//!
//! **The keys.** Keys are 16 bytes, `key:` and 12 hex digits of a 48-bit number; values are
//! 32 to 100 bytes. The numbers of written keys and of never-written keys come from one
//! bijection of 48 bits (even and odd inputs), so absent keys are scattered among the present
//! ones and fall inside every table's key range. As in an LSM tree fed by random writes, every
//! table spans the whole key space, so the tables' smallest and largest keys rule none of them
//! out: only the filters (or a block read) can. Table `t` (0 the oldest) holds 7/8 fresh keys,
//! the ids `id` with `id % tables == t`, and 1/8 newer versions of keys of table `t − 1`
//! (table 0: of the newest table, so its copies are the older ones). A lookup reads tables newest
//! first and stops at the first holding the key, so it must return the newest version; the
//! example checks every answer, present and absent, with and without filters.
//!
//! **The run-index mode** (`runs [tables] [entries per table] [lookups]`, default 64 tables of
//! 31 250 entries, up to [`MAX_RUNS`] tables): the same tables, many and overlapping, also
//! described by one [`RunIndex`] built from each table's key hashes as it is flushed (oldest
//! first; a table's run id is its file number), saved beside them and opened mapped, as an
//! engine would after a restart. Each lookup is made twice, through the index (the tables it
//! names, newest first) and through the per-table filters (`first_containing`), and the two
//! are printed side by side: lookups/s of absent and present keys, table (data block) reads per
//! absent and per present key, and the bytes of the index and of the filters. Before timing,
//! every key of every table is asked of both, which must name its table (no false negative);
//! each absent key's table reads through the index are checked against the runs the index
//! names for it, counted separately, and every answer against the newest version.

use cuckoo_sst::{Config, FilterBuilder, FilterRef, KeyHash, MAX_RUNS, MappedRunIndex, RunIndex};
use std::cmp::Ordering;
use std::error::Error;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const BLOCK_SIZE: usize = 4096;
const MAGIC: &[u8; 8] = b"CKOOSST1";
const FOOTER_LEN: usize = 48;
const FILTER_ALIGN: u64 = 64;
const TARGET_FPR: f64 = 0.01;

/// SplitMix64: the deterministic source of every random choice here.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix64(self.0)
    }

    /// Uniform in `0..n` (the modulo bias is below 2^-40 for the ranges used here).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A bijection of 48-bit numbers (odd multipliers and xor-shifts, modulo 2^48), so that
/// distinct inputs give distinct keys.
fn mix48(mut x: u64) -> u64 {
    const MASK: u64 = (1 << 48) - 1;
    x &= MASK;
    x = x.wrapping_mul(0x9E37_79B9_7F4B) & MASK;
    x ^= x >> 24;
    x = x.wrapping_mul(0xC2B2_AE3D_27D5) & MASK;
    x ^= x >> 21;
    x
}

/// `key:` and 12 lowercase hex digits: byte order is numeric order.
fn key_of(number: u64) -> [u8; 16] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut k = *b"key:000000000000";
    for (i, b) in k[4..].iter_mut().enumerate() {
        *b = HEX[((number >> (44 - 4 * i)) & 0xF) as usize];
    }
    k
}

/// The key written for id `id`.
fn present_key(id: u64) -> [u8; 16] {
    key_of(mix48(2 * id))
}

/// A key never written (odd inputs of the bijection; written keys come from even ones).
fn absent_key(x: u64) -> [u8; 16] {
    key_of(mix48(2 * x + 1))
}

/// The value that table `table` stores for id `id`: 32 to 100 bytes, naming both, so a lookup
/// that returns an older version is caught.
fn value_of(id: u64, table: usize, out: &mut Vec<u8>) {
    out.clear();
    let h = mix64(id ^ ((table as u64) << 56));
    let len = 32 + (h % 69) as usize;
    write!(out, "id {id} table {table} ").expect("writing to a Vec");
    let mut filler = SplitMix64(h);
    while out.len() < len {
        out.push(b'a' + (filler.next() % 26) as u8);
    }
    out.truncate(len);
}

/// How the key ids are spread over the tables (module doc, "The keys").
#[derive(Clone, Copy)]
struct Layout {
    tables: usize,
    /// Fresh keys per table: ids `j * tables + t` for `j` in `0..fresh`.
    fresh: u64,
    /// Keys of the previous table rewritten: ids with `j = 7 * m`, `m` in `0..rewritten`.
    rewritten: u64,
}

impl Layout {
    fn new(tables: usize, entries: u64) -> Layout {
        let rewritten = entries / 8;
        Layout {
            tables,
            fresh: entries - rewritten,
            rewritten,
        }
    }

    /// Every distinct id written: `0..ids()`.
    fn ids(&self) -> u64 {
        self.fresh * self.tables as u64
    }

    /// The ids table `t` holds, unsorted.
    fn table_ids(&self, t: usize) -> impl Iterator<Item = u64> + '_ {
        let n = self.tables as u64;
        let prev = ((t + self.tables - 1) % self.tables) as u64;
        let fresh = (0..self.fresh).map(move |j| j * n + t as u64);
        let rewrites = (0..self.rewritten).map(move |m| 7 * m * n + prev);
        fresh.chain(rewrites)
    }

    /// The table holding the newest version of `id`.
    fn newest(&self, id: u64) -> usize {
        let n = self.tables as u64;
        let (j, class) = (id / n, (id % n) as usize);
        let rewritten = j % 7 == 0 && j / 7 < self.rewritten;
        if rewritten && class + 1 < self.tables {
            class + 1
        } else {
            class
        }
    }
}

/// Writes table `t` of `layout` to `path`; returns the file size.
fn write_table(path: &Path, layout: &Layout, t: usize) -> Result<u64> {
    let mut entries: Vec<([u8; 16], u64)> = layout
        .table_ids(t)
        .map(|id| (present_key(id), id))
        .collect();
    entries.sort_unstable(); // by key: keys are distinct

    let file = File::create(path).map_err(|e| format!("create {}: {e}", path.display()))?;
    let mut out = BufWriter::with_capacity(1 << 16, file);
    let mut offset = 0u64;
    let mut emit = |out: &mut BufWriter<File>, bytes: &[u8]| -> Result<u64> {
        out.write_all(bytes)
            .map_err(|e| format!("write {}: {e}", path.display()))?;
        let at = offset;
        offset += bytes.len() as u64;
        Ok(at)
    };

    let mut builder = FilterBuilder::new(Config::new(0).false_positive_rate(TARGET_FPR));
    let mut index = Vec::new(); // the index block's entries, without the count and CRC
    let mut blocks = 0u32;
    let mut block = Vec::with_capacity(BLOCK_SIZE);
    let mut value = Vec::new();
    let mut flush = |out: &mut BufWriter<File>, block: &mut Vec<u8>, last: &[u8]| -> Result<()> {
        block.extend_from_slice(&crc32fast::hash(block).to_le_bytes());
        let at = emit(out, block)?;
        index.extend_from_slice(&(last.len() as u16).to_le_bytes());
        index.extend_from_slice(last);
        index.extend_from_slice(&at.to_le_bytes());
        index.extend_from_slice(&(block.len() as u32).to_le_bytes());
        blocks += 1;
        block.clear();
        Ok(())
    };
    for (i, (key, id)) in entries.iter().enumerate() {
        builder.add_key(key);
        value_of(*id, t, &mut value);
        let entry_len = 4 + key.len() + value.len();
        if !block.is_empty() && block.len() + entry_len + 4 > BLOCK_SIZE {
            flush(&mut out, &mut block, &entries[i - 1].0)?;
        }
        block.extend_from_slice(&(key.len() as u16).to_le_bytes());
        block.extend_from_slice(&(value.len() as u16).to_le_bytes());
        block.extend_from_slice(key);
        block.extend_from_slice(&value);
    }
    if let Some((last, _)) = entries.last() {
        flush(&mut out, &mut block, last)?;
    }

    let mut index_block = blocks.to_le_bytes().to_vec();
    index_block.extend_from_slice(&index);
    index_block.extend_from_slice(&crc32fast::hash(&index_block).to_le_bytes());
    let index_at = emit(&mut out, &index_block)?;
    let end = index_at + index_block.len() as u64;
    let pad = end.next_multiple_of(FILTER_ALIGN) - end;
    emit(&mut out, &vec![0; pad as usize])?;
    let filter = builder.finish()?.to_bytes();
    let filter_at = emit(&mut out, &filter)?;
    assert_eq!(filter_at % FILTER_ALIGN, 0);

    let mut footer = Vec::with_capacity(FOOTER_LEN);
    for field in [
        index_at,
        index_block.len() as u64,
        filter_at,
        filter.len() as u64,
        entries.len() as u64,
    ] {
        footer.extend_from_slice(&field.to_le_bytes());
    }
    footer.extend_from_slice(MAGIC);
    let footer_at = emit(&mut out, &footer)?;
    out.flush()
        .map_err(|e| format!("write {}: {e}", path.display()))?;
    Ok(footer_at + FOOTER_LEN as u64)
}

/// One data block's entry in the in-memory index.
struct BlockHandle {
    last_key: Box<[u8]>,
    offset: u64,
    len: u32,
}

/// An open table: the file, its index and its filter block in memory.
struct Table {
    name: String,
    file: File,
    file_len: u64,
    entries: u64,
    index: Vec<BlockHandle>,
    /// The filter block as read; [`FilterRef::from_bytes`] checks it and views it in place.
    filter: Vec<u8>,
}

fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
}

fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b[..4].try_into().expect("4 bytes"))
}

fn le_u16(b: &[u8]) -> usize {
    u16::from_le_bytes(b[..2].try_into().expect("2 bytes")).into()
}

/// Splits `block` into its contents and checks their trailing CRC-32.
fn check_crc<'b>(block: &'b [u8], what: &str) -> Result<&'b [u8]> {
    let Some(split) = block.len().checked_sub(4) else {
        return Err(format!("{what}: {} bytes, too short", block.len()).into());
    };
    let (body, crc) = block.split_at(split);
    if crc32fast::hash(body) != le_u32(crc) {
        return Err(format!("{what}: CRC mismatch").into());
    }
    Ok(body)
}

impl Table {
    fn open(path: &Path) -> Result<Table> {
        let name = path.display().to_string();
        let file = File::open(path).map_err(|e| format!("open {name}: {e}"))?;
        let file_len = file
            .metadata()
            .map_err(|e| format!("stat {name}: {e}"))?
            .len();
        let read = |at: u64, len: u64| -> Result<Vec<u8>> {
            if at.checked_add(len).is_none_or(|end| end > file_len) {
                return Err(format!("{name}: {len} bytes at {at} overrun the file").into());
            }
            let mut buf = vec![0; len as usize];
            file.read_exact_at(&mut buf, at)
                .map_err(|e| format!("read {name} at {at}: {e}"))?;
            Ok(buf)
        };
        let footer = read(
            file_len.saturating_sub(FOOTER_LEN as u64),
            FOOTER_LEN as u64,
        )?;
        if &footer[40..] != MAGIC {
            return Err(format!("{name}: not a table (bad magic)").into());
        }
        let field = |i: usize| le_u64(&footer[8 * i..]);
        let (index_at, index_len, filter_at, filter_len) = (field(0), field(1), field(2), field(3));
        let index_block = read(index_at, index_len)?;
        let mut rest = check_crc(&index_block, &format!("{name}: index block"))?;
        let corrupt = || format!("{name}: index block malformed");
        let count = le_u32(rest.get(..4).ok_or_else(corrupt)?);
        rest = &rest[4..];
        let mut index = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let key_len = le_u16(rest.get(..2).ok_or_else(corrupt)?);
            let entry = rest.get(2..2 + key_len + 12).ok_or_else(corrupt)?;
            index.push(BlockHandle {
                last_key: entry[..key_len].into(),
                offset: le_u64(&entry[key_len..]),
                len: le_u32(&entry[key_len + 8..]),
            });
            rest = &rest[2 + key_len + 12..];
        }
        if filter_at % FILTER_ALIGN != 0 {
            return Err(format!("{name}: filter block at {filter_at}, not 64-byte aligned").into());
        }
        let filter = read(filter_at, filter_len)?;
        FilterRef::from_bytes(&filter).map_err(|e| format!("{name}: filter block: {e}"))?;
        Ok(Table {
            name,
            file,
            file_len,
            entries: field(4),
            index,
            filter,
        })
    }

    /// Looks `key` up without the filter: the index names the one data block that may hold
    /// it, which is read from the file into `buf` and searched. `Ok(None)` if the key is past
    /// the table's last key (no read) or not in the block (one read, counted in `stats`).
    fn search(
        &self,
        key: &[u8],
        buf: &mut Vec<u8>,
        stats: &mut Stats,
    ) -> Result<Option<Range<usize>>> {
        let i = self.index.partition_point(|b| &*b.last_key < key);
        let Some(handle) = self.index.get(i) else {
            stats.index_skips += 1;
            return Ok(None);
        };
        buf.resize(handle.len as usize, 0);
        self.file
            .read_exact_at(buf, handle.offset)
            .map_err(|e| format!("read {} at {}: {e}", self.name, handle.offset))?;
        stats.block_reads += 1;
        let mut rest = check_crc(buf, &format!("{}: data block {i}", self.name))?;
        let mut at = 0;
        // Entries are sorted: scan until the key, or a larger one.
        while !rest.is_empty() {
            let entry = rest.get(..4).and_then(|lens| {
                let (key_len, value_len) = (le_u16(lens), le_u16(&lens[2..]));
                Some((key_len, rest.get(..4 + key_len + value_len)?))
            });
            let Some((key_len, entry)) = entry else {
                return Err(format!("{}: data block {i} malformed", self.name).into());
            };
            match entry[4..4 + key_len].cmp(key) {
                Ordering::Less => {}
                Ordering::Equal => return Ok(Some(at + 4 + key_len..at + entry.len())),
                Ordering::Greater => return Ok(None),
            }
            at += entry.len();
            rest = &rest[entry.len()..];
        }
        Ok(None)
    }
}

/// What a run of lookups did, summed over its lookups.
#[derive(Default)]
struct Stats {
    /// (key, table) pairs considered: tables newer than the one that answered, and that one.
    probes: u64,
    /// Probes the filter answered "certainly absent": block reads avoided.
    filter_skips: u64,
    /// Probes where the key was past the table's last key (no block to read).
    index_skips: u64,
    /// Data blocks read from the files.
    block_reads: u64,
    found: u64,
    time: Duration,
}

/// The read path: tables newest first, with their filters viewed in place.
struct Lsm<'a> {
    /// Newest first.
    tables: Vec<&'a Table>,
    /// `filters[i]` is the filter of `tables[i]`, checked once when the view was made.
    filters: Vec<FilterRef<'a>>,
}

impl<'a> Lsm<'a> {
    fn new(oldest_first: &'a [Table]) -> Result<Lsm<'a>> {
        let tables: Vec<&Table> = oldest_first.iter().rev().collect();
        let filters = tables
            .iter()
            .map(|t| FilterRef::from_bytes(&t.filter))
            .collect::<cuckoo_sst::Result<_>>()?;
        Ok(Lsm { tables, filters })
    }

    /// The newest value of `key`, copied from `buf`: each table newest first, each skipped if
    /// `use_filters` and its filter rules the key out, else searched with one block read.
    fn get<'b>(
        &self,
        key: &[u8],
        use_filters: bool,
        buf: &'b mut Vec<u8>,
        stats: &mut Stats,
    ) -> Result<Option<&'b [u8]>> {
        let h = KeyHash::of(key); // once per lookup, for every table's filter
        let mut next = 0;
        while next < self.tables.len() {
            let i = if use_filters {
                // Prefetches the remaining tables' buckets, then probes newest first.
                match FilterRef::first_containing(&self.filters[next..], h) {
                    Some(k) => next + k,
                    None => {
                        let skipped = (self.tables.len() - next) as u64;
                        stats.probes += skipped;
                        stats.filter_skips += skipped;
                        return Ok(None);
                    }
                }
            } else {
                next
            };
            stats.probes += (i - next + 1) as u64;
            stats.filter_skips += (i - next) as u64;
            if let Some(value) = self.tables[i].search(key, buf, stats)? {
                stats.found += 1;
                return Ok(Some(&buf[value]));
            }
            next = i + 1;
        }
        Ok(None)
    }
}

fn per_sec(n: u64, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64()
}

/// `1234567` as `1 234 567`.
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

fn arg(i: usize, default: u64) -> Result<u64> {
    match std::env::args().nth(i) {
        Some(s) => Ok(s
            .replace('_', "")
            .parse()
            .map_err(|e| format!("argument {i} ({s:?}): {e}"))?),
        None => Ok(default),
    }
}

/// A filter's layout as the `cuckoo-sst` tool names it (`info`, `build`): `semi-sorted b=4
/// f=10`, from the encoding's `Display`.
fn layout_name(filter: &FilterRef<'_>) -> String {
    format!(
        "{} b={} f={}",
        filter.encoding(),
        filter.bucket_size(),
        filter.fingerprint_bits()
    )
}

fn main() -> Result<()> {
    if std::env::args().nth(1).as_deref() == Some("runs") {
        let tables = arg(2, 64)? as usize;
        let entries = arg(3, 31_250)?;
        let lookups = arg(4, 200_000)?;
        if !(2..=MAX_RUNS).contains(&tables) || !(8..=100_000_000).contains(&entries) {
            return Err(format!(
                "usage: sstable runs [tables 2..={MAX_RUNS}] [entries per table ≥ 8] [lookups]"
            )
            .into());
        }
        runs_mode(tables, entries, lookups, true)?;
        return Ok(());
    }
    let tables = arg(1, 8)? as usize;
    let entries = arg(2, 250_000)?;
    let lookups = arg(3, 200_000)?;
    if !(2..=1000).contains(&tables) || !(8..=100_000_000).contains(&entries) {
        return Err("usage: sstable [tables 2..=1000] [entries per table ≥ 8] [lookups]".into());
    }
    let layout = Layout::new(tables, entries);
    println!(
        "cuckoo-sst sstable: {tables} tables × {} entries (16-byte keys, 32–100-byte values, \
         4 KiB data blocks, filters at {}% target FPR)",
        thousands(entries),
        TARGET_FPR * 100.0
    );

    let dir = tempfile::tempdir()?;
    let t = Instant::now();
    let mut written = 0;
    for t in 0..tables {
        written += write_table(&dir.path().join(format!("{:06}.sst", t + 1)), &layout, t)?;
    }
    let write_time = t.elapsed();
    let t = Instant::now();
    let opened = (0..tables)
        .map(|t| Table::open(&dir.path().join(format!("{:06}.sst", t + 1))))
        .collect::<Result<Vec<_>>>()?;
    let open_time = t.elapsed();
    println!(
        "written to {} in {write_time:.2?} ({:.1} MiB), opened (footer, index, filter checked) \
         in {open_time:.2?}\n",
        dir.path().display(),
        written as f64 / (1 << 20) as f64
    );

    let lsm = Lsm::new(&opened)?;
    println!(
        "{:<10} {:>9} {:>7} {:>9} {:>11} {:>9} {:>20} {:>10}",
        "table",
        "entries",
        "blocks",
        "file MiB",
        "filter KiB",
        "bits/key",
        "filter layout",
        "FPR bound"
    );
    let (mut filter_bytes, mut file_bytes) = (0, 0);
    for (table, filter) in lsm.tables.iter().zip(&lsm.filters) {
        let name = Path::new(&table.name)
            .file_name()
            .map_or(table.name.clone(), |n| n.to_string_lossy().into_owned());
        filter_bytes += table.filter.len() as u64;
        file_bytes += table.file_len;
        println!(
            "{name:<10} {:>9} {:>7} {:>9.2} {:>11.1} {:>9.2} {:>20} {:>10.2e}",
            thousands(table.entries),
            table.index.len(),
            table.file_len as f64 / (1 << 20) as f64,
            table.filter.len() as f64 / 1024.0,
            table.filter.len() as f64 * 8.0 / table.entries as f64,
            layout_name(filter),
            filter.expected_fpr(),
        );
    }
    println!(
        "{:<10} {:>9} {:>7} {:>9.2} {:>11.1} {:>9.2}   (filters: {:.2} % of the bytes)\n",
        "all",
        thousands(entries * tables as u64),
        thousands(lsm.tables.iter().map(|t| t.index.len() as u64).sum()),
        file_bytes as f64 / (1 << 20) as f64,
        filter_bytes as f64 / 1024.0,
        filter_bytes as f64 * 8.0 / (entries * tables as u64) as f64,
        filter_bytes as f64 * 100.0 / file_bytes as f64,
    );

    // The same keys for the runs with and without filters.
    let mut rng = SplitMix64(0x5353_5441_424C_4531);
    let present: Vec<u64> = (0..lookups).map(|_| rng.below(layout.ids())).collect();
    let absent: Vec<u64> = (0..lookups).map(|_| rng.below(1 << 47)).collect();

    let mut buf = Vec::with_capacity(BLOCK_SIZE);
    let mut expected = Vec::new();
    let mut run = |present_keys: bool, use_filters: bool| -> Result<Stats> {
        let mut stats = Stats::default();
        let start = Instant::now();
        if present_keys {
            for &id in &present {
                let key = present_key(id);
                let got = lsm.get(&key, use_filters, &mut buf, &mut stats)?;
                value_of(id, layout.newest(id), &mut expected);
                assert_eq!(got, Some(&expected[..]), "id {id}: wrong or missing value");
            }
        } else {
            for &x in &absent {
                let got = lsm.get(&absent_key(x), use_filters, &mut buf, &mut stats)?;
                assert_eq!(got, None, "absent key {x} found");
            }
        }
        stats.time = start.elapsed();
        Ok(stats)
    };
    let absent_plain = run(false, false)?;
    let absent_filtered = run(false, true)?;
    let present_plain = run(true, false)?;
    let present_filtered = run(true, true)?;
    assert_eq!(present_plain.found, lookups);
    assert_eq!(present_filtered.found, lookups);

    println!(
        "{} point lookups of each kind, tables newest first, stopping at the first holding the \
         key;\nfiles in the page cache, so a block read is a syscall and a CRC check; on disk \
         each avoided read saves a seek.\n",
        thousands(lookups)
    );
    println!(
        "{:<17} {:>10} {:>11} {:>13} {:>12} {:>12} {:>11}",
        "keys, filters",
        "probes",
        "block reads",
        "reads avoided",
        "reads/lookup",
        "lookups/s",
        "time"
    );
    let rows = [
        ("absent, off", &absent_plain),
        ("absent, on", &absent_filtered),
        ("present, off", &present_plain),
        ("present, on", &present_filtered),
    ];
    for (label, s) in rows {
        println!(
            "{label:<17} {:>10} {:>11} {:>13} {:>12.3} {:>12} {:>11.2?}",
            thousands(s.probes),
            thousands(s.block_reads),
            thousands(s.filter_skips),
            s.block_reads as f64 / lookups as f64,
            thousands(per_sec(lookups, s.time) as u64),
            s.time,
        );
    }
    println!(
        "(probes: (key, table) pairs visited, newest table first; reads avoided: probes whose \
         filter said \"absent\")"
    );

    // Every absent lookup probes every table; a filter "maybe" there is a false positive, and
    // each one (within the table's key range) costs a block read.
    let pairs = absent_plain.probes;
    let false_positives = absent_filtered.probes - absent_filtered.filter_skips;
    let fpr = false_positives as f64 / pairs as f64;
    let bound = lsm.filters.iter().map(|f| f.expected_fpr()).sum::<f64>() / tables as f64;
    println!(
        "\nabsent keys: {} false positives in {} (key, table) pairs: measured FPR {fpr:.3e} \
         (mean bound {bound:.2e});\n  reads avoided {} ≈ (1 − FPR) × reads without filters = {};\n  \
         {} reads issued instead of {} ({:.1}× fewer)",
        thousands(false_positives),
        thousands(pairs),
        thousands(absent_filtered.filter_skips),
        thousands(((1.0 - fpr) * absent_plain.block_reads as f64).round() as u64),
        thousands(absent_filtered.block_reads),
        thousands(absent_plain.block_reads),
        absent_plain.block_reads as f64 / absent_filtered.block_reads.max(1) as f64,
    );
    println!(
        "present keys: {} wasted reads without filters (tables newer than the holder), {} with \
         them\n  (false positives): {:.3} reads per lookup instead of {:.3}",
        thousands(present_plain.block_reads - lookups),
        thousands(present_filtered.block_reads - lookups),
        present_filtered.block_reads as f64 / lookups as f64,
        present_plain.block_reads as f64 / lookups as f64,
    );
    println!(
        "speed-up from filters: absent keys {:.1}×, present keys {:.1}×\n  (every answer \
         checked: present keys give their newest version, absent ones nothing)",
        absent_plain.time.as_secs_f64() / absent_filtered.time.as_secs_f64(),
        present_plain.time.as_secs_f64() / present_filtered.time.as_secs_f64(),
    );
    Ok(())
}

/// The read path through a run index: the tables the index names for a key, newest first,
/// each searched with one block read, stopping at the first holding the key.
struct IndexedLsm<'a> {
    /// Oldest first: table `t` is run `t + 1`.
    tables: &'a [Table],
    index: &'a MappedRunIndex,
}

impl IndexedLsm<'_> {
    /// The newest value of `key`, copied from `buf`. `stats.probes` counts the tables the
    /// index named and that were searched (each a block read, or an index skip).
    fn get<'b>(
        &self,
        key: &[u8],
        buf: &'b mut Vec<u8>,
        stats: &mut Stats,
    ) -> Result<Option<&'b [u8]>> {
        for run in self.index.runs_for_hash(KeyHash::of(key)) {
            stats.probes += 1;
            let table = &self.tables[(run - 1) as usize];
            if let Some(value) = table.search(key, buf, stats)? {
                stats.found += 1;
                return Ok(Some(&buf[value]));
            }
        }
        Ok(None)
    }
}

/// What the run-index mode measured, per path: absent and present lookups.
struct RunsReport {
    filters: [Stats; 2],
    index: [Stats; 2],
    filter_bytes: u64,
    index_bytes: u64,
}

/// The run-index mode (module doc): `tables` tables of `entries`, read through one run index
/// and through the per-table filters, `lookups` absent and `lookups` present keys each.
fn runs_mode(tables: usize, entries: u64, lookups: u64, print: bool) -> Result<RunsReport> {
    let layout = Layout::new(tables, entries);
    let total = entries * tables as u64;
    if print {
        println!(
            "cuckoo-sst sstable, run-index mode: {tables} overlapping tables × {} entries (each \
             spans the key space;\n1/8 of a table's keys are newer versions of the previous \
             table's), one run index and per-table filters, both at {}% target FPR",
            thousands(entries),
            TARGET_FPR * 100.0
        );
    }
    let dir = tempfile::tempdir()?;
    let path = |t: usize| dir.path().join(format!("{:06}.sst", t + 1));
    let mut index = RunIndex::new(Config::new(total as usize).false_positive_rate(TARGET_FPR))?;
    let (mut write_time, mut index_time) = (Duration::ZERO, Duration::ZERO);
    for t in 0..tables {
        let start = Instant::now();
        write_table(&path(t), &layout, t)?;
        write_time += start.elapsed();
        // The flush also gives the index the hashes of its keys (table `t` is run `t + 1`).
        let start = Instant::now();
        let hashes: Vec<KeyHash> = layout
            .table_ids(t)
            .map(|id| KeyHash::of(&present_key(id)))
            .collect();
        index.add_run(t as u64 + 1, &hashes)?;
        index_time += start.elapsed();
    }
    let index_path = dir.path().join("runs.index");
    index.save(&index_path)?;
    drop(index);
    let opened = (0..tables)
        .map(|t| Table::open(&path(t)))
        .collect::<Result<Vec<_>>>()?;
    // After a restart: the index mapped, its bytes checked, and compared with the tables the
    // engine has, newest first (a stale index would send the reads to the filters).
    let mapped = MappedRunIndex::open(&index_path)?;
    mapped.verify()?;
    let newest_first: Vec<u64> = (1..=tables as u64).rev().collect();
    if !mapped.describes(&newest_first) {
        return Err("the run index does not describe the tables".into());
    }
    let lsm = Lsm::new(&opened)?;
    let indexed = IndexedLsm {
        tables: &opened,
        index: &mapped,
    };
    let filter_bytes: u64 = opened.iter().map(|t| t.filter.len() as u64).sum();
    let index_bytes = mapped.as_bytes().len() as u64;

    // No false negative: every key of every table is given its table by the index and by the
    // table's filter.
    for t in 0..tables {
        let filter = &lsm.filters[tables - 1 - t];
        for id in layout.table_ids(t) {
            let h = KeyHash::of(&present_key(id));
            assert!(
                mapped.runs_for_hash(h).any(|r| r == t as u64 + 1),
                "id {id} of table {t}: the run index does not name it"
            );
            assert!(filter.contains_hash(h), "id {id}: table {t}'s filter");
        }
    }

    let mut rng = SplitMix64(0x5353_5441_424C_4531);
    let present: Vec<u64> = (0..lookups).map(|_| rng.below(layout.ids())).collect();
    let absent: Vec<u64> = (0..lookups).map(|_| rng.below(1 << 47)).collect();
    // The tables the index names for the absent keys, counted apart from the read path.
    let named: u64 = absent
        .iter()
        .map(|&x| mapped.runs_for_hash(KeyHash::of(&absent_key(x))).count() as u64)
        .sum();

    let mut buf = Vec::with_capacity(BLOCK_SIZE);
    let mut expected = Vec::new();
    let mut run = |present_keys: bool, through_index: bool| -> Result<Stats> {
        let mut stats = Stats::default();
        let start = Instant::now();
        if present_keys {
            for &id in &present {
                let key = present_key(id);
                let got = if through_index {
                    indexed.get(&key, &mut buf, &mut stats)?
                } else {
                    lsm.get(&key, true, &mut buf, &mut stats)?
                };
                value_of(id, layout.newest(id), &mut expected);
                assert_eq!(got, Some(&expected[..]), "id {id}: wrong or missing value");
            }
        } else {
            for &x in &absent {
                let key = absent_key(x);
                let got = if through_index {
                    indexed.get(&key, &mut buf, &mut stats)?
                } else {
                    lsm.get(&key, true, &mut buf, &mut stats)?
                };
                assert_eq!(got, None, "absent key {x} found");
            }
        }
        stats.time = start.elapsed();
        Ok(stats)
    };
    let absent_filters = run(false, false)?;
    let absent_index = run(false, true)?;
    let present_filters = run(true, false)?;
    let present_index = run(true, true)?;
    for s in [&present_filters, &present_index] {
        assert_eq!(s.found, lookups, "a present key not found");
    }
    // Honest counts: through the index, an absent key costs one table search per run the index
    // names (a block read, or none where the key is past the table's last key); through the
    // filters, one per table whose filter says "maybe".
    assert_eq!(absent_index.probes, named, "tables the index named");
    assert_eq!(absent_index.block_reads + absent_index.index_skips, named);
    assert_eq!(
        absent_filters.block_reads + absent_filters.index_skips,
        absent_filters.probes - absent_filters.filter_skips
    );
    assert_eq!(absent_filters.probes, tables as u64 * lookups);

    let report = RunsReport {
        filters: [absent_filters, present_filters],
        index: [absent_index, present_index],
        filter_bytes,
        index_bytes,
    };
    if print {
        print_runs(
            &report, tables, total, lookups, write_time, index_time, &mapped,
        );
    }
    Ok(report)
}

fn print_runs(
    r: &RunsReport,
    tables: usize,
    total: u64,
    lookups: u64,
    write_time: Duration,
    index_time: Duration,
    mapped: &MappedRunIndex,
) {
    println!(
        "tables written in {write_time:.2?}; the run index built as they were flushed in \
         {index_time:.2?} ({} entries, {} runs), saved, mapped and verified\n",
        thousands(mapped.len() as u64),
        mapped.runs().len(),
    );
    println!(
        "{} point lookups of each kind, tables newest first, stopping at the first holding the \
         key; every\nkey of every table was named by both first (no false negative), and every \
         answer is checked.\n",
        thousands(lookups)
    );
    let bits = |bytes: u64| bytes as f64 * 8.0 / total as f64;
    let row = |label: &str, filters: String, index: String| {
        println!("{label:<30} {filters:>20} {index:>20}");
    };
    row("", "per-table filters".into(), "run index".into());
    let per_sec_of = |s: &Stats| thousands(per_sec(lookups, s.time) as u64);
    let reads = |s: &Stats| format!("{:.4}", s.block_reads as f64 / lookups as f64);
    row(
        "absent keys: lookups/s",
        per_sec_of(&r.filters[0]),
        per_sec_of(&r.index[0]),
    );
    row(
        "  table reads per key",
        reads(&r.filters[0]),
        reads(&r.index[0]),
    );
    row(
        "present keys: lookups/s",
        per_sec_of(&r.filters[1]),
        per_sec_of(&r.index[1]),
    );
    row(
        "  table reads per key",
        reads(&r.filters[1]),
        reads(&r.index[1]),
    );
    row(
        "structures asked per lookup",
        format!("{tables} filters"),
        "1 index".into(),
    );
    row(
        "bytes",
        format!("{} KiB", thousands(r.filter_bytes / 1024)),
        format!("{} KiB", thousands(r.index_bytes / 1024)),
    );
    row(
        "  bits per entry",
        format!("{:.2}", bits(r.filter_bytes)),
        format!("{:.2}", bits(r.index_bytes)),
    );
    println!(
        "(table reads: data blocks read from the files, counted as they are read. An absent key \
         costs a read only\n on a false positive: the index's bound {:.2e} for the whole \
         lookup; the filters' {:.2e} measured per filter,\n {tables} filters asked)",
        mapped.expected_fpr(),
        r.filters[0]
            .probes
            .saturating_sub(r.filters[0].filter_skips) as f64
            / r.filters[0].probes.max(1) as f64,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuckoo_sst::{CuckooFilter, Encoding};

    /// The table names layouts as the CLI does (`cli/tests/cli.rs` checks `info` prints
    /// `semi-sorted b=4 f=10` for the default filter), not by their `Debug` names
    /// (`SemiSorted`).
    #[test]
    fn layouts_are_named_as_the_cli_names_them() {
        let name = |config: Config| {
            let f = CuckooFilter::new(config).unwrap();
            layout_name(&f.as_filter_ref())
        };
        assert_eq!(
            name(Config::new(1000).false_positive_rate(TARGET_FPR)),
            "semi-sorted b=4 f=10"
        );
        assert_eq!(
            name(Config::new(1000).encoding(Encoding::Plain)),
            "plain b=8 f=16"
        );
        assert_eq!(
            name(Config::new(1000).encoding(Encoding::Packed)),
            "packed b=4 f=10"
        );
    }

    /// The run-index mode on 64 small tables: both paths find every present key (the mode
    /// asserts it, and that the index's reads of absent keys are the runs it names), and the
    /// index reads far fewer tables per absent key than 64 filters' false positives send.
    #[test]
    fn the_run_index_mode_finds_every_key_and_reads_fewer_tables() {
        let lookups = 4_000;
        let r = runs_mode(64, 400, lookups, false).unwrap();
        for s in r.filters.iter().chain(&r.index) {
            assert!(s.time > Duration::ZERO);
        }
        assert_eq!((r.filters[1].found, r.index[1].found), (lookups, lookups));
        // 64 filters at about 0.7 % each: about 0.45 reads per absent key; the index, one.
        let (filters, index) = (r.filters[0].block_reads, r.index[0].block_reads);
        assert!(filters > lookups / 4, "{filters}");
        assert!(index * 5 < filters, "index {index}, filters {filters}");
        // Present keys: at least one read each, the holder's.
        assert!(r.index[1].block_reads >= lookups && r.filters[1].block_reads >= lookups);
        assert!(r.index_bytes > 0 && r.filter_bytes > 0);
    }
}
