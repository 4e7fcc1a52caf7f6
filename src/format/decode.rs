//! The validating reader: FORMAT.md §7 steps 1–7 ([`parse`], independent of the regions' size;
//! one function per step) and step 8 ([`verify_regions`], every byte). Nothing here indexes, unwraps or does unchecked
//! arithmetic on a value read from the file (the lints below enforce it), and nothing is
//! allocated in proportion to a field before that field is checked against the file's length.
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use super::{
    ArchivedFileHeader, ArchivedLevelDesc, CHECKSUM_LEN, CHUNK_SHIFTS, ChainParams, Coverage,
    FLAG_CHAIN, FileMeta, HASH_SCHEME, HEADER_CRC_OFFSET, HEADER_LEN, LEVEL_LEN, LevelMeta, MAGIC,
    OLDEST_VERSION, VERSION, checksum_table_len, chunks_in,
};
use super::{MAX_GROWTH_FACTOR, MAX_KICKS_LIMIT, MAX_LEVELS};
use crate::copies::{Copies, CopiesEncoding};
use crate::error::{Error, Result};
use crate::table::{self, CACHE_LINE, Encoding, Geometry};

/// `N` bytes at an alignment rkyv accepts for the archived records, whatever the alignment of
/// the caller's slice (a block inside an SSTable may start anywhere). Copying 128 or 64 bytes
/// once per open is what makes any alignment work.
#[repr(C, align(16))]
struct Aligned<const N: usize>([u8; N]);

impl<const N: usize> Aligned<N> {
    fn copy_of(bytes: &[u8], what: &str) -> Result<Aligned<N>> {
        let mut out = Aligned([0u8; N]);
        let src = bytes
            .get(..N)
            .ok_or_else(|| Error::corrupt(what, "too short"))?;
        out.0.copy_from_slice(src);
        Ok(out)
    }
}

/// Compares a stored CRC with the bytes' CRC. Fuzzing builds (`--cfg fuzzing`) skip the
/// comparison so that the fuzzer reaches the checks behind it.
fn check_crc(part: impl FnOnce() -> String, stored: u32, bytes: &[u8]) -> Result<()> {
    compare_crc(part, stored, crc32fast::hash(bytes))
}

/// [`check_crc`] for a CRC already computed.
fn compare_crc(part: impl FnOnce() -> String, stored: u32, computed: u32) -> Result<()> {
    if stored != computed && !cfg!(fuzzing) {
        return Err(Error::ChecksumMismatch {
            part: part(),
            stored,
            computed,
        });
    }
    Ok(())
}

/// A false-positive rate field: a number in (0, 1).
fn check_rate(field: impl FnOnce() -> String, rate: f64) -> Result<()> {
    if rate > 0.0 && rate < 1.0 {
        Ok(())
    } else {
        Err(Error::corrupt(
            field(),
            format!("{rate} is not a rate in (0, 1)"),
        ))
    }
}

fn overflow(field: &str) -> Error {
    Error::corrupt(field, "the value overflows")
}

/// [`overflow`] in a check that shares its field with another: the reason names the step.
fn overflow_at(field: &str, step: &str) -> Error {
    Error::corrupt(field, format!("the value overflows (§7 step {step})"))
}

/// FORMAT.md §7 steps 1–7 on the whole file `bytes`: header, level table, checksum table, and
/// the consistency of every field. Reads the header, the level table and the checksum table
/// (`128 + 64·levels + 4·chunks` bytes), whatever the regions' size. Each step is one function.
pub(crate) fn parse(bytes: &[u8]) -> Result<FileMeta> {
    parse_steps(bytes, true)
}

/// Steps 1–6 only, for bytes whose integrity the caller has checked itself: the checksum
/// table is not read (nor are the regions).
pub(crate) fn parse_trusting_regions(bytes: &[u8]) -> Result<FileMeta> {
    parse_steps(bytes, false)
}

fn parse_steps(bytes: &[u8], checksum_table: bool) -> Result<FileMeta> {
    step1_length_and_magic(bytes)?;
    let head = Aligned::<HEADER_LEN>::copy_of(bytes, "header")?;
    let h = rkyv::access::<ArchivedFileHeader, rkyv::rancor::Error>(&head.0)
        .map_err(|e| Error::corrupt("header", e.to_string()))?;
    let version = step2_version(h)?;
    step3_header_checksum(&head.0, h)?;
    let header = step4_header_fields(h, version, bytes.len() as u64)?;
    let level_table = step5_level_table(bytes, h, &header)?;
    let levels = step6_levels(level_table, &header)?;
    if checksum_table {
        step7_checksum_table(bytes, h, &header)?;
    }
    Ok(FileMeta {
        version,
        seed: h.seed.to_native(),
        max_kicks: header.max_kicks,
        target_fpr: header.target_fpr,
        chain: header.chain,
        item_count: header.item_count,
        file_len: header.file_len,
        coverage: header.coverage,
        levels,
    })
}

/// What step 4 learns from the header, for the steps after it.
struct Header {
    version: u32,
    level_count: u32,
    max_kicks: u32,
    file_len: u64,
    target_fpr: f64,
    chain: Option<ChainParams>,
    item_count: u64,
    /// Where the level table ends: the checksum table (version 2) or the first region starts
    /// there.
    table_end: u64,
    coverage: Coverage,
}

impl Header {
    /// Where the first region starts: after the level table, and the checksum table if any.
    fn regions_start(&self) -> Result<u64> {
        match self.coverage {
            Coverage::Regions => Ok(self.table_end),
            Coverage::Chunks { count, .. } => u64::try_from(checksum_table_len(count))
                .ok()
                .and_then(|t| t.checked_add(self.table_end))
                .ok_or_else(|| overflow("chunk_count")),
        }
    }
}

/// Step 1: at least a header's length, starting with the magic. A file shorter than a header
/// whose first bytes are not a prefix of the magic is `BadMagic`, not `Truncated`: it is not a
/// filter at all.
fn step1_length_and_magic(bytes: &[u8]) -> Result<()> {
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
    Ok(())
}

/// Step 2: a version this build reads (1, 2 or 3). A newer one is `UnsupportedVersion`; 0 was
/// never a version, so it is `Corrupt`.
fn step2_version(h: &ArchivedFileHeader) -> Result<u32> {
    let version = h.version.to_native();
    if version > VERSION {
        return Err(Error::UnsupportedVersion {
            found: version,
            supported: VERSION,
        });
    }
    if version < OLDEST_VERSION {
        return Err(Error::corrupt(
            "version",
            format!("{version} is not a version"),
        ));
    }
    Ok(version)
}

/// Step 3: `header_crc` over header bytes 0..124.
fn step3_header_checksum(head: &[u8], h: &ArchivedFileHeader) -> Result<()> {
    let covered = head.get(..HEADER_CRC_OFFSET).unwrap_or_default();
    check_crc(|| "header".into(), h.header_crc.to_native(), covered)
}

/// Step 4: every header field, in the order FORMAT.md lists them.
fn step4_header_fields(h: &ArchivedFileHeader, version: u32, actual: u64) -> Result<Header> {
    let header_len = h.header_len.to_native();
    if header_len as usize != HEADER_LEN {
        return Err(Error::corrupt(
            "header_len",
            format!("{header_len}, expected {HEADER_LEN}"),
        ));
    }
    let hash = h.hash.to_native();
    if hash != HASH_SCHEME {
        return Err(Error::corrupt(
            "hash",
            format!("unknown hash scheme {hash}"),
        ));
    }
    // Version 1 reserves bytes 98..120, which version 2 gives a meaning.
    let v1_fields_zero =
        h.chunk_shift == 0 && h.checksums_crc.to_native() == 0 && h.chunk_count.to_native() == 0;
    if h.reserved0.to_native() != 0
        || h.reserved1 != 0
        || h.reserved != [0; 8]
        || (version == 1 && !v1_fields_zero)
    {
        return Err(Error::corrupt(
            "reserved",
            "reserved header bytes are not zero",
        ));
    }
    let flags = h.flags.to_native();
    if flags & !FLAG_CHAIN != 0 {
        return Err(Error::corrupt("flags", format!("unknown flags {flags:#x}")));
    }
    let level_count = h.level_count.to_native();
    if level_count == 0 || level_count > MAX_LEVELS {
        return Err(Error::corrupt(
            "level_count",
            format!("{level_count}: a file holds 1 to {MAX_LEVELS} levels (§7 step 4.5)"),
        ));
    }
    let max_kicks = h.max_kicks.to_native();
    if max_kicks > MAX_KICKS_LIMIT {
        return Err(Error::corrupt(
            "max_kicks",
            format!("{max_kicks} is more than {}", MAX_KICKS_LIMIT),
        ));
    }
    let file_len = h.file_len.to_native();
    let table_end = (level_count as u64)
        .checked_mul(LEVEL_LEN as u64)
        .and_then(|t| t.checked_add(HEADER_LEN as u64))
        .ok_or_else(|| overflow_at("level_count", "4.7"))?;
    // Every level takes its descriptor and a bucket region of at least one cache line, so a
    // level count that claims more than the file can hold is refused before anything is
    // allocated per level.
    let least = (level_count as u64)
        .checked_mul(CACHE_LINE as u64)
        .and_then(|r| r.checked_add(table_end))
        .ok_or_else(|| overflow_at("level_count", "4.7"))?;
    if least > file_len {
        return Err(Error::corrupt(
            "level_count",
            format!(
                "{level_count} levels do not fit in a file of {file_len} bytes: each takes \
                 {LEVEL_LEN} bytes of level table and at least {CACHE_LINE} of buckets (§7 step \
                 4.7)"
            ),
        ));
    }
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
    let target_fpr = h.target_fpr.to_native();
    check_rate(|| "target_fpr".into(), target_fpr).map_err(|e| e.at_step("4.9"))?;
    let chain = chain_fields(h, flags, level_count)?;
    let coverage = if version == 1 {
        Coverage::Regions
    } else {
        chunk_fields(h, level_count, table_end, file_len)?
    };
    Ok(Header {
        version,
        level_count,
        max_kicks,
        file_len,
        target_fpr,
        chain,
        item_count: h.item_count.to_native(),
        table_end,
        coverage,
    })
}

/// The chunk fields of step 4 (version 2): a chunk size in range, at least one chunk per level,
/// and room in the file for every chunk's checksum entry and at least a cache line of buckets
/// (so the per-chunk state a reader keeps is bounded by the file's length).
fn chunk_fields(
    h: &ArchivedFileHeader,
    level_count: u32,
    table_end: u64,
    file_len: u64,
) -> Result<Coverage> {
    let shift = h.chunk_shift as u32;
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
    let count = h.chunk_count.to_native();
    if count < level_count as u64 {
        return Err(Error::corrupt(
            "chunk_count",
            format!(
                "{count} chunks for {level_count} levels: each has at least one (§7 step 4.11)"
            ),
        ));
    }
    let entries = count
        .checked_mul(CHECKSUM_LEN as u64)
        .and_then(|c| c.checked_next_multiple_of(CACHE_LINE as u64));
    let least = count
        .checked_mul(CACHE_LINE as u64)
        .zip(entries)
        .and_then(|(buckets, entries)| buckets.checked_add(entries))
        .and_then(|c| c.checked_add(table_end));
    if least.is_none_or(|least| least > file_len) {
        return Err(Error::corrupt(
            "chunk_count",
            format!(
                "{count} chunks do not fit in a file of {file_len} bytes: each takes \
                 {CHECKSUM_LEN} bytes of checksum table and at least {CACHE_LINE} of buckets \
                 (§7 step 4.11)"
            ),
        ));
    }
    Ok(Coverage::Chunks {
        shift,
        count: usize::try_from(count).map_err(|_| overflow_at("chunk_count", "4.11"))?,
        table: usize::try_from(table_end).map_err(|_| overflow_at("level_count", "4.7"))?,
    })
}

/// The chain fields of step 4: set and in range for a chain, all zero (bit for bit: `-0.0` is
/// not zero) and one level for a single filter.
fn chain_fields(
    h: &ArchivedFileHeader,
    flags: u32,
    level_count: u32,
) -> Result<Option<ChainParams>> {
    let growth_factor = h.growth_factor.to_native();
    let tightening = h.tightening.to_native();
    let max_levels = h.max_levels.to_native();
    let max_bytes = h.max_bytes.to_native();
    if flags & FLAG_CHAIN == 0 {
        if level_count != 1 {
            return Err(Error::corrupt(
                "level_count",
                format!("{level_count} levels in a file without the chain flag (§7 step 4.10)"),
            ));
        }
        if growth_factor.to_bits() != 0
            || tightening.to_bits() != 0
            || max_levels != 0
            || max_bytes != 0
            || h.chain_bucket_size != 0
            || h.chain_encoding != 0
        {
            return Err(Error::corrupt(
                "chain fields",
                "set in a file without the chain flag",
            ));
        }
        return Ok(None);
    }
    if !(growth_factor > 1.0 && growth_factor <= MAX_GROWTH_FACTOR) {
        return Err(Error::corrupt(
            "growth_factor",
            format!("{growth_factor} is not in (1, {MAX_GROWTH_FACTOR}]"),
        ));
    }
    if !(tightening > 0.0 && tightening < 1.0) {
        return Err(Error::corrupt(
            "tightening",
            format!("{tightening} is not in (0, 1)"),
        ));
    }
    if max_levels > MAX_LEVELS || (max_levels != 0 && level_count > max_levels) {
        return Err(Error::corrupt(
            "max_levels",
            format!("{max_levels}: not 0 or {level_count} (the file's levels) to {MAX_LEVELS}"),
        ));
    }
    let bucket_size = match h.chain_bucket_size {
        0 => None,
        b @ (2 | 4 | 8) => Some(b as u32),
        b => {
            return Err(Error::corrupt(
                "chain_bucket_size",
                format!("{b} is not 0, 2, 4 or 8"),
            ));
        }
    };
    let encoding = match h.chain_encoding {
        0 => None,
        code => Some(
            Encoding::from_code(code.wrapping_sub(1))
                .ok_or_else(|| Error::corrupt("chain_encoding", format!("unknown code {code}")))?,
        ),
    };
    // The two fix the layout of every level the chain adds: a pair no level can have (semi-
    // sorted buckets of other than 4 slots) would be read, and then refuse as `Full` the first
    // insert that needs a new level. No `Config` gives one.
    if let (Some(b), Some(e)) = (bucket_size, encoding)
        && e.widths(b).next().is_none()
    {
        return Err(Error::corrupt(
            "chain_encoding",
            format!("no {e} bucket has {b} slots (chain_bucket_size {b})"),
        ));
    }
    Ok(Some(ChainParams {
        growth_factor,
        tightening,
        max_levels,
        max_bytes,
        bucket_size,
        encoding,
    }))
}

/// Step 5: `levels_crc` over the level table; the table's bytes.
fn step5_level_table<'a>(
    bytes: &'a [u8],
    h: &ArchivedFileHeader,
    header: &Header,
) -> Result<&'a [u8]> {
    let table_end =
        usize::try_from(header.table_end).map_err(|_| overflow_at("level_count", "5"))?;
    let level_table = bytes
        .get(HEADER_LEN..table_end)
        .ok_or_else(|| overflow_at("level_count", "5"))?;
    check_crc(
        || "level table".into(),
        h.levels_crc.to_native(),
        level_table,
    )?;
    Ok(level_table)
}

/// Step 6: every level descriptor in order ([`parse_level`]), then what they must add up to.
/// The list grows as descriptors pass, so a level count that lies costs only the levels parsed
/// before the first bad one.
fn step6_levels(level_table: &[u8], header: &Header) -> Result<Vec<LevelMeta>> {
    let mut levels = Vec::with_capacity(header.level_count.min(64) as usize);
    let mut offset = header.regions_start()?;
    let mut items: u64 = 0;
    let mut chunks: usize = 0;
    for (k, desc) in level_table.chunks_exact(LEVEL_LEN).enumerate() {
        let level = parse_level(k, desc, offset, header, chunks)?;
        offset = offset
            .checked_add(level.region_len() as u64)
            .ok_or_else(|| overflow_at("region_len", "6.9"))?;
        if offset > header.file_len {
            return Err(Error::corrupt(
                format!("level {k} region_len"),
                format!(
                    "the region ends at {offset}, past the end of the file ({}; §7 step 6.9)",
                    header.file_len
                ),
            ));
        }
        items = items
            .checked_add(level.len)
            .ok_or_else(|| overflow_at("item_count", "6, the sum"))?;
        chunks = chunks
            .checked_add(match header.coverage {
                Coverage::Regions => 1,
                Coverage::Chunks { shift, .. } => chunks_in(level.region_len(), shift),
            })
            .ok_or_else(|| overflow_at("chunk_count", "6, the sum"))?;
        levels.push(level);
    }
    if let Coverage::Chunks { count, .. } = header.coverage
        && chunks != count
    {
        return Err(Error::corrupt(
            "chunk_count",
            format!("{count}, but the regions have {chunks} chunks (§7 step 6, the sum)"),
        ));
    }
    if offset != header.file_len {
        return Err(Error::corrupt(
            "file_len",
            format!(
                "the regions end at {offset}, the file at {}",
                header.file_len
            ),
        ));
    }
    if header.chain.is_none()
        && let Some(level) = levels.first()
        && level.target_fpr.to_bits() != header.target_fpr.to_bits()
    {
        return Err(Error::corrupt(
            "target_fpr",
            format!(
                "{}, but the filter's level says {} (§7 step 6, a single filter's level)",
                header.target_fpr, level.target_fpr
            ),
        ));
    }
    if items != header.item_count {
        return Err(Error::corrupt(
            "item_count",
            format!(
                "{}, but the levels hold {items} (§7 step 6, the sum)",
                header.item_count
            ),
        ));
    }
    Ok(levels)
}

/// Step 7 (version 2): `checksums_crc` over the checksum table, and zeros after its last entry.
fn step7_checksum_table(bytes: &[u8], h: &ArchivedFileHeader, header: &Header) -> Result<()> {
    let Coverage::Chunks { count, table, .. } = header.coverage else {
        return Ok(());
    };
    let end = table
        .checked_add(checksum_table_len(count))
        .ok_or_else(|| overflow("chunk_count"))?;
    let entries = count
        .checked_mul(CHECKSUM_LEN)
        .and_then(|n| n.checked_add(table))
        .ok_or_else(|| overflow("chunk_count"))?;
    let all = bytes
        .get(table..end)
        .ok_or_else(|| overflow("chunk_count"))?;
    check_crc(|| "checksum table".into(), h.checksums_crc.to_native(), all)?;
    let padding = bytes.get(entries..end).unwrap_or_default();
    if padding.iter().any(|&b| b != 0) {
        return Err(Error::corrupt(
            "checksum table",
            "the padding after the last entry is not zero",
        ));
    }
    Ok(())
}

/// FORMAT.md §7 step 6 for descriptor `k` of the file `header` describes, whose region must
/// start at `offset` and whose first chunk is chunk `first_chunk` of the file.
fn parse_level(
    k: usize,
    desc: &[u8],
    offset: u64,
    header: &Header,
    first_chunk: usize,
) -> Result<LevelMeta> {
    let (version, chain) = (header.version, header.chain.is_some());
    let field = |name: &str| format!("level {k} {name}");
    let buf = Aligned::<LEVEL_LEN>::copy_of(desc, "level descriptor")?;
    let d = rkyv::access::<ArchivedLevelDesc, rkyv::rancor::Error>(&buf.0)
        .map_err(|e| Error::corrupt(field("descriptor"), e.to_string()))?;
    // Version 2 covers regions chunk by chunk: its descriptors' `region_crc` is reserved, and
    // version 4 gives its first byte to a stretch level's copies encoding (checked below).
    // Versions 1 and 2 reserve `core_bits` and `precision`, which version 3 gives stretch
    // levels; a classic level of version 3 has both zero.
    let word = d.region_crc.to_native();
    let unused_crc = match version {
        1 => false,
        4 => word > 0xFF || (d.core_bits == 0 && word != 0),
        _ => word != 0,
    };
    let core_bits = d.core_bits as u32;
    let precision = d.precision.to_native();
    let stretch_fields = core_bits != 0 || precision != 0;
    if unused_crc || (version < 3 && stretch_fields) || (core_bits == 0 && precision != 0) {
        return Err(Error::corrupt(
            field("reserved"),
            "reserved bytes are not zero",
        ));
    }
    if core_bits != 0 && !chain {
        return Err(Error::corrupt(
            field("core_bits"),
            "a stretch level in a file without the chain flag",
        ));
    }
    let encoding = Encoding::from_code(d.encoding).ok_or_else(|| {
        Error::corrupt(
            field("encoding"),
            format!("unknown encoding {}", d.encoding),
        )
    })?;
    let (m, b, f) = (
        d.num_buckets.to_native(),
        d.bucket_size as u32,
        d.fingerprint_bits as u32,
    );
    let geo = match core_bits {
        0 => Geometry::new(m, b, f, encoding),
        c => Geometry::stretch(m, b, f, encoding, c),
    }
    .map_err(|e| match e {
        Error::InvalidConfig { setting, reason } => {
            let name = if setting == "capacity" {
                "num_buckets"
            } else {
                setting
            };
            Error::corrupt(field(name), reason)
        }
        other => other,
    })?;
    let copies = match version {
        4 => CopiesEncoding::from_code(word as u8).ok_or_else(|| {
            Error::corrupt(field("copies"), format!("unknown copies encoding {word}"))
        })?,
        _ => CopiesEncoding::None,
    };
    let region_len = d.region_len.to_native();
    let buckets = geo.table_bytes() as u64;
    // The copies region (§3.5) after the buckets: none, one of a dense field per slot, or at
    // least a line of records, a whole number of lines.
    let copies_len = region_len.checked_sub(buckets).filter(|&c| match copies {
        CopiesEncoding::None => c == 0,
        CopiesEncoding::Dense => c == crate::copies::dense_len(&geo) as u64,
        CopiesEncoding::Records => c >= CACHE_LINE as u64 && c.is_multiple_of(CACHE_LINE as u64),
    });
    let Some(copies_len) = copies_len else {
        return Err(Error::corrupt(
            field("region_len"),
            format!(
                "{region_len}, but the level's buckets take {buckets} and its copies ({copies:?}) \
                 do not take the rest (§7 step 6.5)"
            ),
        ));
    };
    let region_offset = d.region_offset.to_native();
    if region_offset != offset {
        return Err(Error::corrupt(
            field("region_offset"),
            format!("{region_offset}, but the region must start at {offset}"),
        ));
    }
    let len = d.item_count.to_native();
    if len > geo.slots() {
        return Err(Error::corrupt(
            field("item_count"),
            format!("{len} items in {} slots (§7 step 6.7)", geo.slots()),
        ));
    }
    // A level is sized for fewer items than it has slots. This also bounds what a chain grown
    // from a hostile file allocates: the next level is sized from this field. A stretch level
    // keeps its key count there: every key has an entry of its own.
    let capacity = d.capacity.to_native();
    if core_bits == 0 && capacity > geo.slots() {
        return Err(Error::corrupt(
            field("capacity"),
            format!("{capacity} items sized into {} slots", geo.slots()),
        ));
    }
    let stretch = match core_bits {
        0 => None,
        _ => Some(stretch_counts(
            &geo,
            len,
            capacity,
            precision,
            copies != CopiesEncoding::None,
            &field,
        )?),
    };
    let target_fpr = d.target_fpr.to_native();
    check_rate(|| field("target_fpr"), target_fpr).map_err(|e| e.at_step("6.8"))?;
    // A stretch level's target is the share of the chain's target it may grow to (a chain read
    // from the file grows its newest level while the level's bound stays within it): a share
    // is a fraction of the chain's target, never more. A classic level's is informative (it
    // never grows), and versions 1 and 2 did not require it.
    if core_bits != 0 && target_fpr > header.target_fpr {
        return Err(Error::corrupt(
            field("target_fpr"),
            format!(
                "{target_fpr} is more than the chain's target_fpr {}: a level's share is a \
                 fraction of it (§7 step 6.8)",
                header.target_fpr
            ),
        ));
    }
    Ok(LevelMeta {
        geo,
        len: if stretch.is_some() { capacity } else { len },
        stretch,
        capacity,
        target_fpr,
        offset: usize::try_from(offset).map_err(|_| overflow("region_offset"))?,
        region_crc: if version == 1 { word } else { 0 },
        first_chunk: if version == 1 { k } else { first_chunk },
        copies,
        copies_len: usize::try_from(copies_len).map_err(|_| overflow("region_len"))?,
    })
}

/// Step 6 for a stretch level's counts: its key count at most its occupied slots (each key has
/// an entry of its own) — or, when it counts copies, `2b` times as many (an entry stands for
/// at most `2b` copies per slot, §3.5) — and a precision sum no larger than full buckets of
/// entries with no continuation bit left give (`b · 2^60`), zero exactly when the level is
/// empty.
fn stretch_counts(
    geo: &Geometry,
    entries: u64,
    keys: u64,
    precision: u64,
    counts_copies: bool,
    field: &impl Fn(&str) -> String,
) -> Result<crate::level::Counts> {
    let per_slot = if counts_copies {
        (geo.bucket_size() as u64).saturating_mul(2)
    } else {
        1
    };
    if keys > entries.saturating_mul(per_slot) {
        return Err(Error::corrupt(
            field("key_count"),
            format!("{keys} keys, but {entries} occupied slots (§7 step 6.7)"),
        ));
    }
    let most = (geo.bucket_size() as u64)
        .checked_mul(1 << crate::hash::stretch::PRECISION_SCALE)
        .ok_or_else(|| overflow("precision"))?;
    if precision > most || (precision == 0) != (entries == 0) {
        return Err(Error::corrupt(
            field("precision"),
            format!("{precision} for {entries} occupied slots (§7 step 6.7)"),
        ));
    }
    Ok(crate::level::Counts {
        keys,
        entries,
        precision,
    })
}

/// FORMAT.md §7 step 8: every chunk's checksum in file order ([`check_chunk`]), then every
/// level's contents ([`check_contents`]). `meta` must come from [`parse`] of the same `bytes`.
pub(crate) fn verify_regions(bytes: &[u8], meta: &FileMeta) -> Result<()> {
    for (k, level) in meta.levels.iter().enumerate() {
        for j in 0..meta.chunks_of(level) {
            check_chunk(bytes, meta, k, j)?;
        }
    }
    for k in 0..meta.levels.len() {
        check_contents(bytes, meta, k)?;
    }
    Ok(())
}

/// Step 8, first part, for chunk `j` of level `k`: its CRC-32 matches the one stored for it.
pub(crate) fn check_chunk(bytes: &[u8], meta: &FileMeta, k: usize, j: usize) -> Result<()> {
    let level = meta.levels.get(k).ok_or_else(|| overflow("level"))?;
    let (stored, computed) = meta
        .chunk_crcs(bytes, level, j)
        .ok_or_else(|| overflow("region_offset"))?;
    let part = || match meta.coverage {
        Coverage::Regions => format!("level {k} buckets"),
        Coverage::Chunks { .. } => {
            let r = meta.chunk_bytes(level, j);
            format!("level {k} chunk {j} (bytes {}..{})", r.start, r.end)
        }
    };
    compare_crc(part, stored, computed)
}

/// Step 8, second part, for level `k`: zero padding, well-formed buckets, and as many occupied
/// slots as the level's `item_count`.
pub(crate) fn check_contents(bytes: &[u8], meta: &FileMeta, k: usize) -> Result<()> {
    let level = meta.levels.get(k).ok_or_else(|| overflow("level"))?;
    let region = bytes
        .get(level.region())
        .ok_or_else(|| overflow("region_offset"))?;
    let occupied = table::scan(&level.geo, region)
        .map_err(|reason| Error::corrupt(format!("level {k} buckets"), reason))?;
    let Some(counts) = level.stretch else {
        if occupied != level.len {
            return Err(Error::corrupt(
                format!("level {k} item_count"),
                format!(
                    "{}, but {occupied} slots are occupied (§7 step 8, level {k})",
                    level.len
                ),
            ));
        }
        return Ok(());
    };
    if occupied != counts.entries {
        return Err(Error::corrupt(
            format!("level {k} item_count"),
            format!(
                "{}, but {occupied} slots are occupied (§7 step 8, level {k})",
                counts.entries
            ),
        ));
    }
    let found = crate::level::scan(&level.geo, region)
        .map_err(|reason| Error::corrupt(format!("level {k} buckets"), reason))?;
    if found.precision != counts.precision {
        return Err(Error::corrupt(
            format!("level {k} precision"),
            format!(
                "{}, but the entries' precisions add up to {} (§7 step 8, level {k})",
                counts.precision, found.precision
            ),
        ));
    }
    let copies = level_copies(bytes, level, k)?;
    if counts.keys > counts.entries.saturating_add(copies.total()) {
        return Err(Error::corrupt(
            format!("level {k} key_count"),
            format!(
                "{} keys, but {} occupied slots count {} copies more (§7 step 8, level {k})",
                counts.keys,
                counts.entries,
                copies.total()
            ),
        ));
    }
    Ok(())
}

/// Step 8 for the copies region of level `k` (§3.5), whose buckets have been checked: its
/// copies.
pub(crate) fn level_copies(bytes: &[u8], level: &LevelMeta, k: usize) -> Result<Copies> {
    let (region, copies) = bytes
        .get(level.region())
        .zip(bytes.get(level.copies_region()))
        .ok_or_else(|| overflow("region_offset"))?;
    Copies::decode(&level.geo, region, level.copies, copies)
        .map_err(|reason| Error::corrupt(format!("level {k} copies"), reason))
}

/// A whole single-filter file (no chain flag), checked completely (steps 1–7): its metadata and
/// its level.
pub(crate) fn parse_single(bytes: &[u8]) -> Result<(FileMeta, LevelMeta)> {
    let meta = parse(bytes)?;
    let level = single_level(&meta)?;
    verify_regions(bytes, &meta)?;
    Ok((meta, level))
}

/// The one level of a single-filter file; `Growable` for a chain.
pub(crate) fn single_level(meta: &FileMeta) -> Result<LevelMeta> {
    match meta.levels.as_slice() {
        [level] if meta.chain.is_none() => Ok(*level),
        levels => Err(Error::Growable {
            levels: levels.len() as u32,
        }),
    }
}
