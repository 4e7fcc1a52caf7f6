//! The validating reader: FORMAT.md §7 steps 1–6 ([`parse`], independent of the regions' size)
//! and step 7 ([`verify_regions`], every byte). Nothing here indexes, unwraps or does unchecked
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
    ArchivedFileHeader, ArchivedLevelDesc, ChainParams, FLAG_CHAIN, FileMeta, HASH_SCHEME,
    HEADER_CRC_OFFSET, HEADER_LEN, LEVEL_LEN, LevelMeta, MAGIC, VERSION,
};
use crate::config::MAX_GROWTH_FACTOR;
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
    let computed = crc32fast::hash(bytes);
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

/// FORMAT.md §7 steps 1–6 on the whole file `bytes`: header, level table, and the consistency
/// of every field. Reads `128 + 64·levels` bytes, whatever the regions' size.
pub(crate) fn parse(bytes: &[u8]) -> Result<FileMeta> {
    let actual = bytes.len() as u64;

    // 1. Length and magic.
    if let Some(magic) = bytes.get(..MAGIC.len()) {
        if magic != MAGIC {
            let mut found = [0u8; 8];
            found.copy_from_slice(magic);
            return Err(Error::BadMagic { found });
        }
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
            found: actual,
        });
    }
    let head = Aligned::<HEADER_LEN>::copy_of(bytes, "header")?;
    let h = rkyv::access::<ArchivedFileHeader, rkyv::rancor::Error>(&head.0)
        .map_err(|e| Error::corrupt("header", e.to_string()))?;

    // 2. Version.
    let version = h.version.to_native();
    if version > VERSION {
        return Err(Error::UnsupportedVersion {
            found: version,
            supported: VERSION,
        });
    }
    if version != VERSION {
        return Err(Error::corrupt(
            "version",
            format!("{version} is not a version"),
        ));
    }

    // 3. Header checksum.
    let covered = head.0.get(..HEADER_CRC_OFFSET).unwrap_or_default();
    check_crc(|| "header".into(), h.header_crc.to_native(), covered)?;

    // 4. Header fields.
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
    if h.reserved0.to_native() != 0 || h.reserved != [0; 22] {
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
    if level_count == 0 {
        return Err(Error::corrupt(
            "level_count",
            "a file holds at least one level",
        ));
    }
    let max_kicks = h.max_kicks.to_native();
    if max_kicks > crate::config::MAX_KICKS_LIMIT {
        return Err(Error::corrupt(
            "max_kicks",
            format!(
                "{max_kicks} is more than {}",
                crate::config::MAX_KICKS_LIMIT
            ),
        ));
    }
    let file_len = h.file_len.to_native();
    let table_end = (level_count as u64)
        .checked_mul(LEVEL_LEN as u64)
        .and_then(|t| t.checked_add(HEADER_LEN as u64))
        .ok_or_else(|| overflow("level_count"))?;
    // Every level takes its descriptor and a bucket region of at least one cache line, so
    // a level count that claims more than the file can hold is refused before anything is
    // allocated per level.
    let least = (level_count as u64)
        .checked_mul(CACHE_LINE as u64)
        .and_then(|r| r.checked_add(table_end))
        .ok_or_else(|| overflow("level_count"))?;
    if least > file_len {
        return Err(Error::corrupt(
            "level_count",
            format!(
                "{level_count} levels do not fit in a file of {file_len} bytes (each takes \
                 {LEVEL_LEN} bytes of level table and at least {CACHE_LINE} of buckets)"
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
    check_rate(|| "target_fpr".into(), target_fpr)?;
    let growth_factor = h.growth_factor.to_native();
    let tightening = h.tightening.to_native();
    let max_levels = h.max_levels.to_native();
    let max_bytes = h.max_bytes.to_native();
    let chain = if flags & FLAG_CHAIN != 0 {
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
        if max_levels != 0 && level_count > max_levels {
            return Err(Error::corrupt(
                "max_levels",
                format!("{max_levels}, but the file holds {level_count} levels"),
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
        let encoding =
            match h.chain_encoding {
                0 => None,
                code => Some(Encoding::from_code(code.wrapping_sub(1)).ok_or_else(|| {
                    Error::corrupt("chain_encoding", format!("unknown code {code}"))
                })?),
            };
        Some(ChainParams {
            growth_factor,
            tightening,
            max_levels,
            max_bytes,
            bucket_size,
            encoding,
        })
    } else {
        if level_count != 1 {
            return Err(Error::corrupt(
                "level_count",
                format!("{level_count} levels in a file without the chain flag"),
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
        None
    };

    // 5. Level table checksum.
    let table_end = usize::try_from(table_end).map_err(|_| overflow("level_count"))?;
    let level_table = bytes
        .get(HEADER_LEN..table_end)
        .ok_or_else(|| overflow("level_count"))?;
    check_crc(
        || "level table".into(),
        h.levels_crc.to_native(),
        level_table,
    )?;

    // 6. Levels. The list grows as descriptors pass, so a level count that lies costs only
    // the levels parsed before the first bad one (a chain rarely has more than 64).
    let mut levels = Vec::with_capacity(level_count.min(64) as usize);
    let mut offset = table_end as u64;
    let mut items: u64 = 0;
    for (k, desc) in level_table.chunks_exact(LEVEL_LEN).enumerate() {
        let level = parse_level(k, desc, offset)?;
        offset = offset
            .checked_add(level.geo.table_bytes() as u64)
            .ok_or_else(|| overflow("region_len"))?;
        if offset > file_len {
            return Err(Error::corrupt(
                format!("level {k} region_len"),
                format!("the region ends at {offset}, past the end of the file ({file_len})"),
            ));
        }
        items = items
            .checked_add(level.len)
            .ok_or_else(|| overflow("item_count"))?;
        levels.push(level);
    }
    if offset != file_len {
        return Err(Error::corrupt(
            "file_len",
            format!("the regions end at {offset}, the file at {file_len}"),
        ));
    }
    if chain.is_none() {
        if let Some(level) = levels.first() {
            if level.target_fpr.to_bits() != target_fpr.to_bits() {
                return Err(Error::corrupt(
                    "target_fpr",
                    format!(
                        "{target_fpr}, but the filter's level says {}",
                        level.target_fpr
                    ),
                ));
            }
        }
    }
    let item_count = h.item_count.to_native();
    if items != item_count {
        return Err(Error::corrupt(
            "item_count",
            format!("{item_count}, but the levels hold {items}"),
        ));
    }
    Ok(FileMeta {
        seed: h.seed.to_native(),
        max_kicks,
        target_fpr,
        chain,
        item_count,
        file_len,
        levels,
    })
}

/// FORMAT.md §7 step 6 for descriptor `k`, whose region must start at `offset`.
fn parse_level(k: usize, desc: &[u8], offset: u64) -> Result<LevelMeta> {
    let field = |name: &str| format!("level {k} {name}");
    let buf = Aligned::<LEVEL_LEN>::copy_of(desc, "level descriptor")?;
    let d = rkyv::access::<ArchivedLevelDesc, rkyv::rancor::Error>(&buf.0)
        .map_err(|e| Error::corrupt(field("descriptor"), e.to_string()))?;
    if d.reserved0 != 0 || d.reserved.to_native() != 0 {
        return Err(Error::corrupt(
            field("reserved"),
            "reserved bytes are not zero",
        ));
    }
    let encoding = Encoding::from_code(d.encoding).ok_or_else(|| {
        Error::corrupt(
            field("encoding"),
            format!("unknown encoding {}", d.encoding),
        )
    })?;
    let geo = Geometry::new(
        d.num_buckets.to_native(),
        d.bucket_size as u32,
        d.fingerprint_bits as u32,
        encoding,
    )
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
    let region_len = d.region_len.to_native();
    if region_len != geo.table_bytes() as u64 {
        return Err(Error::corrupt(
            field("region_len"),
            format!(
                "{region_len}, but the level's buckets take {}",
                geo.table_bytes()
            ),
        ));
    }
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
            format!("{len} items in {} slots", geo.slots()),
        ));
    }
    // A level is sized for fewer items than it has slots. This also bounds what a chain grown
    // from a hostile file allocates: the next level is sized from this field.
    let capacity = d.capacity.to_native();
    if capacity > geo.slots() {
        return Err(Error::corrupt(
            field("capacity"),
            format!("{capacity} items sized into {} slots", geo.slots()),
        ));
    }
    let target_fpr = d.target_fpr.to_native();
    check_rate(|| field("target_fpr"), target_fpr)?;
    Ok(LevelMeta {
        geo,
        len,
        capacity,
        target_fpr,
        offset: usize::try_from(offset).map_err(|_| overflow("region_offset"))?,
        region_crc: d.region_crc.to_native(),
    })
}

/// FORMAT.md §7 step 7: every region's checksum, zero padding, well-formed buckets, and
/// occupied-slot count.
/// `meta` must come from [`parse`] of the same `bytes`.
pub(crate) fn verify_regions(bytes: &[u8], meta: &FileMeta) -> Result<()> {
    for (k, level) in meta.levels.iter().enumerate() {
        let region = bytes
            .get(level.region())
            .ok_or_else(|| overflow("region_offset"))?;
        check_crc(|| format!("level {k} buckets"), level.region_crc, region)?;
        let occupied = table::scan(&level.geo, region)
            .map_err(|reason| Error::corrupt(format!("level {k} buckets"), reason))?;
        if occupied != level.len {
            return Err(Error::corrupt(
                format!("level {k} item_count"),
                format!("{}, but {occupied} slots are occupied", level.len),
            ));
        }
    }
    Ok(())
}

/// A whole single-filter file (no chain flag), checked completely (steps 1–7): its metadata and
/// its level.
pub(crate) fn parse_single(bytes: &[u8]) -> Result<(FileMeta, LevelMeta)> {
    let meta = parse(bytes)?;
    let level = match meta.levels.as_slice() {
        [level] if meta.chain.is_none() => *level,
        levels => {
            return Err(Error::Growable {
                levels: levels.len() as u32,
            });
        }
    };
    verify_regions(bytes, &meta)?;
    Ok((meta, level))
}
