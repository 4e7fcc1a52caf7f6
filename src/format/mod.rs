//! The file format of FORMAT.md in code: constants, the rkyv header and level descriptor
//! (§4, §5), the writer, and — in [`decode`] — the validating reader (§7).

pub(crate) mod decode;
mod filter_ref;

use crate::copies::CopiesEncoding;
use crate::table::Geometry;
use rkyv::rend::{f64_le, u32_le, u64_le};
use std::io::{self, Write};

// The file's limits: what a reader accepts, and so what a `Config` may ask for.

/// The largest accepted `max_kicks`. A failed insert walks that far and back, and keeps one
/// 16-byte undo record per step; beyond a few thousand steps the load gained is negligible.
pub const MAX_KICKS_LIMIT: u32 = 1 << 16;
/// The largest growth factor accepted (from a `Config` or a file): it bounds the next level a
/// chain allocates to 64 times the size of its newest.
pub const MAX_GROWTH_FACTOR: f64 = 64.0;
/// The most levels a growable filter may have (FORMAT.md §4: a file holds at most this many).
/// Every lookup probes every level, so a chain this long is already slow; it also bounds what
/// reading a chain costs (a hostile file of many tiny levels allocates at most about 60 KiB
/// of per-level state). With the default tightening the widest fingerprints run out at about
/// 60 levels anyway.
pub const MAX_LEVELS: u32 = 128;

/// FORMAT.md §4: the first eight bytes of every filter file.
pub(crate) const MAGIC: [u8; 8] = *b"CUCKOSST";
/// FORMAT.md §9: the newest format version this build reads and writes: version 4, for files
/// with a level that counts copies (§3.5). Files without one are written as version 3 if they
/// have a stretch level (§3.4), else as version 2, which readers of 0.1.0 read too.
pub(crate) const VERSION: u32 = 4;
/// FORMAT.md §9: the version of files with a stretch level and no counted copies.
pub(crate) const VERSION_STRETCH: u32 = 3;
/// FORMAT.md §9: the version of files without a stretch level.
pub(crate) const VERSION_CLASSIC: u32 = 2;
/// FORMAT.md §9: the oldest version this build reads (version 1: one CRC per region, no
/// checksum table).
pub(crate) const OLDEST_VERSION: u32 = 1;
/// FORMAT.md §4: bytes of the header.
pub(crate) const HEADER_LEN: usize = 128;
/// FORMAT.md §5: bytes of one level descriptor.
pub(crate) const LEVEL_LEN: usize = 64;
/// FORMAT.md §2: the hash scheme (XXH3-64, fmix64 with the seed, fast range).
pub(crate) const HASH_SCHEME: u32 = 1;
/// FORMAT.md §4: `flags` bit 0, the file is a growable chain.
pub(crate) const FLAG_CHAIN: u32 = 1;
/// FORMAT.md §4: the bytes of the header covered by `header_crc`.
pub(crate) const HEADER_CRC_OFFSET: usize = 124;
/// FORMAT.md §4, §6: the chunk size the writer uses, `2^16` = 64 KiB: a lookup's first touch
/// of a chunk checks this many bytes, and a 256 MiB file has a 16 KiB checksum table.
pub(crate) const CHUNK_SHIFT: u32 = 16;
/// FORMAT.md §4: the chunk sizes a reader accepts, `2^12` (4 KiB) to `2^24` (16 MiB).
pub(crate) const CHUNK_SHIFTS: std::ops::RangeInclusive<u32> = 12..=24;
/// FORMAT.md §6: bytes of one entry of the checksum table.
pub(crate) const CHECKSUM_LEN: usize = 4;

/// FORMAT.md §4. Every field has an explicit little-endian type, so the archived bytes are the
/// same whatever rkyv's feature flags and the platform; the archived struct is `#[repr(C)]`
/// with no padding (the field offsets are asserted in the tests).
#[derive(rkyv::Archive, rkyv::Serialize, Clone, Copy, Debug)]
pub(crate) struct FileHeader {
    pub(crate) magic: [u8; 8],
    pub(crate) version: u32_le,
    pub(crate) header_len: u32_le,
    pub(crate) file_len: u64_le,
    pub(crate) level_count: u32_le,
    pub(crate) flags: u32_le,
    pub(crate) hash: u32_le,
    pub(crate) max_kicks: u32_le,
    pub(crate) seed: u64_le,
    pub(crate) target_fpr: f64_le,
    pub(crate) growth_factor: f64_le,
    pub(crate) tightening: f64_le,
    pub(crate) max_levels: u32_le,
    pub(crate) reserved0: u32_le,
    pub(crate) max_bytes: u64_le,
    pub(crate) item_count: u64_le,
    pub(crate) chain_bucket_size: u8,
    pub(crate) chain_encoding: u8,
    /// Version 2: log2 of the chunk size (§6); 0 in version 1.
    pub(crate) chunk_shift: u8,
    pub(crate) reserved1: u8,
    /// Version 2: CRC-32 of the checksum table (§6); 0 in version 1.
    pub(crate) checksums_crc: u32_le,
    /// Version 2: entries in the checksum table, one per chunk (§6); 0 in version 1.
    pub(crate) chunk_count: u64_le,
    pub(crate) reserved: [u8; 8],
    pub(crate) levels_crc: u32_le,
    pub(crate) header_crc: u32_le,
}

/// FORMAT.md §5, one per level, explicitly little-endian like the header.
#[derive(rkyv::Archive, rkyv::Serialize, Clone, Copy, Debug)]
pub(crate) struct LevelDesc {
    pub(crate) region_offset: u64_le,
    pub(crate) region_len: u64_le,
    pub(crate) num_buckets: u64_le,
    pub(crate) item_count: u64_le,
    pub(crate) capacity: u64_le,
    pub(crate) target_fpr: f64_le,
    pub(crate) bucket_size: u8,
    pub(crate) fingerprint_bits: u8,
    pub(crate) encoding: u8,
    /// Version 3: a stretch level's core width `c` (§3.4); 0 for a classic level (and
    /// reserved, 0, in versions 1 and 2).
    pub(crate) core_bits: u8,
    /// Version 1: CRC-32 of the level's whole region; 0 in versions 2 and 3, whose regions are
    /// covered chunk by chunk (§6).
    pub(crate) region_crc: u32_le,
    /// Version 3: a stretch level's precision sum `Σ 2^(60 − T)` (§5.1); 0 for a classic level
    /// (reserved in versions 1 and 2).
    pub(crate) precision: u64_le,
}

/// The growth settings of a chain, stored in the header (FORMAT.md §4).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ChainParams {
    pub(crate) growth_factor: f64,
    pub(crate) tightening: f64,
    pub(crate) max_levels: u32,
    pub(crate) max_bytes: u64,
    /// The bucket size new levels must use, if the configuration fixed one.
    pub(crate) bucket_size: Option<u32>,
    /// The encoding new levels must use, if the configuration fixed one.
    pub(crate) encoding: Option<crate::Encoding>,
}

/// One level as a reader sees it: checked geometry and counts, where its region is, and
/// which chunks cover it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct LevelMeta {
    pub(crate) geo: Geometry,
    pub(crate) len: u64,
    pub(crate) capacity: u64,
    pub(crate) target_fpr: f64,
    pub(crate) offset: usize,
    /// Version 1: the region's CRC-32 (its one chunk); unused in version 2.
    pub(crate) region_crc: u32,
    /// The index of the level's first chunk among the file's (in version 1, the level's
    /// index: each level is one chunk).
    pub(crate) first_chunk: usize,
    /// A stretch level's counts (`len` is then its key count); `None` for a classic level.
    pub(crate) stretch: Option<crate::level::Counts>,
    /// Version 4: how the level's copies are encoded (§3.5), in the `copies_len` bytes after
    /// its buckets.
    pub(crate) copies: CopiesEncoding,
    pub(crate) copies_len: usize,
}

impl LevelMeta {
    /// The level's bucket region within the file's bytes.
    pub(crate) fn region(&self) -> std::ops::Range<usize> {
        self.offset..self.offset + self.geo.table_bytes()
    }

    /// The level's copies region (§3.5) within the file's bytes: right after its buckets,
    /// empty when it counts no copies.
    pub(crate) fn copies_region(&self) -> std::ops::Range<usize> {
        let start = self.offset + self.geo.table_bytes();
        start..start + self.copies_len
    }

    /// Bytes of the level's whole region (§5 `region_len`): buckets, then copies.
    pub(crate) fn region_len(&self) -> usize {
        self.geo.table_bytes() + self.copies_len
    }
}

/// How a file's bucket regions are covered by checksums (FORMAT.md §6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Coverage {
    /// Version 1: one CRC-32 per region, in its level descriptor.
    Regions,
    /// Version 2: one CRC-32 per chunk of `2^shift` bytes, in the checksum table at `table`
    /// (a byte offset in the file), `count` entries.
    Chunks {
        shift: u32,
        count: usize,
        table: usize,
    },
}

/// A parsed file: header fields and levels, after FORMAT.md §7 steps 1–7.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FileMeta {
    pub(crate) version: u32,
    pub(crate) seed: u64,
    pub(crate) max_kicks: u32,
    pub(crate) target_fpr: f64,
    pub(crate) chain: Option<ChainParams>,
    pub(crate) item_count: u64,
    pub(crate) file_len: u64,
    pub(crate) coverage: Coverage,
    pub(crate) levels: Vec<LevelMeta>,
}

impl FileMeta {
    /// Chunks in the file (FORMAT.md §6): the checksum table's entries, or one per level in
    /// version 1.
    pub(crate) fn chunk_count(&self) -> usize {
        match self.coverage {
            Coverage::Regions => self.levels.len(),
            Coverage::Chunks { count, .. } => count,
        }
    }

    /// Chunks of `level`'s region.
    pub(crate) fn chunks_of(&self, level: &LevelMeta) -> usize {
        match self.coverage {
            Coverage::Regions => 1,
            Coverage::Chunks { shift, .. } => chunks_in(level.region_len(), shift),
        }
    }

    /// The chunk of `level`'s region that holds the region's byte `at` (0 is the region's
    /// first byte), as an index among the level's chunks.
    #[inline]
    pub(crate) fn chunk_at(&self, at: usize) -> usize {
        match self.coverage {
            Coverage::Regions => 0,
            Coverage::Chunks { shift, .. } => at >> shift,
        }
    }

    /// Chunk `j` of `level` (an index among the level's chunks) as a range of the file's bytes.
    pub(crate) fn chunk_bytes(&self, level: &LevelMeta, j: usize) -> std::ops::Range<usize> {
        let region = level.offset..level.offset + level.region_len();
        match self.coverage {
            Coverage::Regions => region,
            Coverage::Chunks { shift, .. } => {
                let start = region.start + (j << shift);
                start..(start + (1 << shift)).min(region.end)
            }
        }
    }

    /// Where the CRC-32 of chunk `j` of `level` is stored, and how the chunk's own CRC-32 is
    /// computed from the file's `bytes`: `(stored, computed)`. `None` if `bytes` is not the
    /// file this was parsed from.
    pub(crate) fn chunk_crcs(
        &self,
        bytes: &[u8],
        level: &LevelMeta,
        j: usize,
    ) -> Option<(u32, u32)> {
        let range = self.chunk_bytes(level, j);
        let chunk = bytes.get(range.clone())?;
        match self.coverage {
            Coverage::Regions => Some((level.region_crc, crc32fast::hash(chunk))),
            Coverage::Chunks { table, .. } => {
                let at = table + CHECKSUM_LEN * (level.first_chunk + j);
                let stored = u32::from_le_bytes(bytes.get(at..at + CHECKSUM_LEN)?.try_into().ok()?);
                Some((stored, chunk_crc(range.start as u64, chunk)))
            }
        }
    }
}

/// The number of chunks of `2^shift` bytes that cover `len` bytes (at least one: a region is
/// never empty).
pub(crate) fn chunks_in(len: usize, shift: u32) -> usize {
    len.div_ceil(1 << shift).max(1)
}

/// FORMAT.md §6: the CRC-32 of a chunk that starts at byte `offset` of the file: of the
/// offset's eight little-endian bytes, then the chunk's bytes (so a chunk written in the wrong
/// place does not check).
pub(crate) fn chunk_crc(offset: u64, chunk: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&offset.to_le_bytes());
    h.update(chunk);
    h.finalize()
}

/// A level to write.
pub(crate) struct LevelOut<'a> {
    pub(crate) geo: Geometry,
    /// Occupied slots (`item_count`).
    pub(crate) len: u64,
    /// A classic level's capacity; a stretch level's key count.
    pub(crate) capacity: u64,
    pub(crate) target_fpr: f64,
    /// A stretch level's precision sum; 0 for a classic level.
    pub(crate) precision: u64,
    pub(crate) table: &'a [u8],
    /// Version 4: the level's copies region (§3.5), and its encoding (empty and `None` for a
    /// level that counts no copies).
    pub(crate) copies: Vec<u8>,
    pub(crate) copies_encoding: CopiesEncoding,
}

impl LevelOut<'_> {
    /// Bytes of the level's region: buckets, then copies.
    fn region_len(&self) -> usize {
        self.table.len() + self.copies.len()
    }

    /// The CRC-32 of each chunk of the level's region, whose first byte is at `offset`
    /// (FORMAT.md §6): chunks run over the buckets and on into the copies.
    fn chunk_crcs(&self, offset: usize, mut each: impl FnMut(u32)) {
        let chunk = 1 << CHUNK_SHIFT;
        let len = self.region_len();
        let mut at = 0;
        while at < len {
            let end = (at + chunk).min(len);
            let mut h = crc32fast::Hasher::new();
            h.update(&((offset + at) as u64).to_le_bytes());
            let t = self.table.len();
            if at < t {
                h.update(&self.table[at..end.min(t)]);
            }
            if end > t {
                h.update(&self.copies[at.max(t) - t..end - t]);
            }
            each(h.finalize());
            at = end;
        }
    }
}

impl LevelOut<'_> {
    /// The keys the level answers for: a stretch level's key count, a classic level's items.
    fn keys(&self) -> u64 {
        match self.geo.core_bits() {
            0 => self.len,
            _ => self.capacity,
        }
    }
}

/// A file to write.
pub(crate) struct FileOut<'a> {
    pub(crate) seed: u64,
    pub(crate) max_kicks: u32,
    pub(crate) target_fpr: f64,
    pub(crate) chain: Option<ChainParams>,
    pub(crate) levels: &'a [LevelOut<'a>],
}

/// Bytes of a file whose levels' bucket regions have the given lengths (FORMAT.md §1): the
/// header, the level table, the checksum table and the regions.
pub(crate) fn file_len(region_lens: impl IntoIterator<Item = usize>) -> usize {
    let mut levels = 0;
    let mut chunks = 0;
    let mut regions = 0;
    for len in region_lens {
        levels += 1;
        chunks += chunks_in(len, CHUNK_SHIFT);
        regions += len;
    }
    HEADER_LEN + LEVEL_LEN * levels + checksum_table_len(chunks) + regions
}

/// FORMAT.md §6: bytes of the checksum table of `chunks` chunks, padded to a cache line.
pub(crate) const fn checksum_table_len(chunks: usize) -> usize {
    (CHECKSUM_LEN * chunks).next_multiple_of(64)
}

/// The false-positive rate of a lookup that checks independent filters with rates `rates`:
/// `1 − Π(1 − r)`, which is at most their sum.
pub(crate) fn combined_fpr(rates: impl IntoIterator<Item = f64>) -> f64 {
    // acc ⊕ r = 1 − (1 − acc)(1 − r), written so that one level gives exactly its own rate.
    rates.into_iter().fold(0.0, |acc, r| acc + r - acc * r)
}

/// Serialises an rkyv value whose archive has a fixed size `N`.
fn archive<T, const N: usize>(value: &T) -> [u8; N]
where
    T: for<'a> rkyv::Serialize<
            rkyv::api::high::HighSerializer<
                rkyv::util::AlignedVec,
                rkyv::ser::allocator::ArenaHandle<'a>,
                rkyv::rancor::Error,
            >,
        >,
{
    let bytes = match rkyv::to_bytes::<rkyv::rancor::Error>(value) {
        Ok(b) => b,
        // Serialising plain little-endian fields into memory has no failure mode.
        Err(e) => unreachable!("archiving a fixed-size record failed: {e}"),
    };
    let mut out = [0u8; N];
    out.copy_from_slice(&bytes);
    out
}

fn level_desc(level: &LevelOut<'_>, offset: usize) -> [u8; LEVEL_LEN] {
    let g = &level.geo;
    archive(&LevelDesc {
        region_offset: u64_le::from_native(offset as u64),
        region_len: u64_le::from_native(level.region_len() as u64),
        num_buckets: u64_le::from_native(g.num_buckets()),
        item_count: u64_le::from_native(level.len),
        capacity: u64_le::from_native(level.capacity),
        target_fpr: f64_le::from_native(level.target_fpr),
        bucket_size: g.bucket_size() as u8,
        fingerprint_bits: g.fp_bits() as u8,
        encoding: g.encoding().code(),
        core_bits: g.core_bits() as u8,
        region_crc: u32_le::from_native(u32::from(level.copies_encoding.code())),
        precision: u64_le::from_native(level.precision),
    })
}

/// Header, level table and checksum table of `file` (FORMAT.md §4–§6); the regions follow
/// them unchanged.
pub(crate) fn encode_head(file: &FileOut<'_>) -> Vec<u8> {
    let levels = file.levels;
    let total = file_len(levels.iter().map(LevelOut::region_len));
    let chunks: usize = levels
        .iter()
        .map(|l| chunks_in(l.region_len(), CHUNK_SHIFT))
        .sum();
    let mut table = Vec::with_capacity(LEVEL_LEN * levels.len());
    let mut checksums = Vec::with_capacity(checksum_table_len(chunks));
    let mut offset = HEADER_LEN + LEVEL_LEN * levels.len() + checksum_table_len(chunks);
    for level in levels {
        debug_assert_eq!(level.table.len(), level.geo.table_bytes());
        table.extend_from_slice(&level_desc(level, offset));
        level.chunk_crcs(offset, |crc| {
            checksums.extend_from_slice(&crc.to_le_bytes())
        });
        offset += level.region_len();
    }
    checksums.resize(checksum_table_len(chunks), 0);
    let chain = file.chain.unwrap_or(ChainParams {
        growth_factor: 0.0,
        tightening: 0.0,
        max_levels: 0,
        max_bytes: 0,
        bucket_size: None,
        encoding: None,
    });
    let stretch = levels.iter().any(|l| l.geo.core_bits() != 0);
    let copies = levels.iter().any(|l| !l.copies.is_empty());
    let version = match (copies, stretch) {
        (true, _) => VERSION,
        (false, true) => VERSION_STRETCH,
        (false, false) => VERSION_CLASSIC,
    };
    let mut head: [u8; HEADER_LEN] = archive(&FileHeader {
        magic: MAGIC,
        version: u32_le::from_native(version),
        header_len: u32_le::from_native(HEADER_LEN as u32),
        file_len: u64_le::from_native(total as u64),
        level_count: u32_le::from_native(levels.len() as u32),
        flags: u32_le::from_native(if file.chain.is_some() { FLAG_CHAIN } else { 0 }),
        hash: u32_le::from_native(HASH_SCHEME),
        max_kicks: u32_le::from_native(file.max_kicks),
        seed: u64_le::from_native(file.seed),
        target_fpr: f64_le::from_native(file.target_fpr),
        growth_factor: f64_le::from_native(chain.growth_factor),
        tightening: f64_le::from_native(chain.tightening),
        max_levels: u32_le::from_native(chain.max_levels),
        reserved0: u32_le::from_native(0),
        max_bytes: u64_le::from_native(chain.max_bytes),
        item_count: u64_le::from_native(levels.iter().map(LevelOut::keys).sum()),
        chain_bucket_size: chain.bucket_size.unwrap_or(0) as u8,
        chain_encoding: chain.encoding.map_or(0, |e| e.code() + 1),
        chunk_shift: CHUNK_SHIFT as u8,
        reserved1: 0,
        checksums_crc: u32_le::from_native(crc32fast::hash(&checksums)),
        chunk_count: u64_le::from_native(chunks as u64),
        reserved: [0; 8],
        levels_crc: u32_le::from_native(crc32fast::hash(&table)),
        header_crc: u32_le::from_native(0),
    });
    let crc = crc32fast::hash(&head[..HEADER_CRC_OFFSET]);
    head[HEADER_CRC_OFFSET..].copy_from_slice(&crc.to_le_bytes());
    let mut out = Vec::with_capacity(HEADER_LEN + table.len() + checksums.len());
    out.extend_from_slice(&head);
    out.extend_from_slice(&table);
    out.extend_from_slice(&checksums);
    out
}

/// Writes `file` to `w`: header, level table, then every region as it is in memory.
pub(crate) fn write(file: &FileOut<'_>, w: &mut dyn Write) -> io::Result<()> {
    w.write_all(&encode_head(file))?;
    for level in file.levels {
        w.write_all(level.table)?;
        w.write_all(&level.copies)?;
    }
    Ok(())
}

/// The whole file in memory.
pub(crate) fn to_bytes(file: &FileOut<'_>) -> Vec<u8> {
    let mut out = encode_head(file);
    out.reserve_exact(file.levels.iter().map(LevelOut::region_len).sum());
    for level in file.levels {
        out.extend_from_slice(level.table);
        out.extend_from_slice(&level.copies);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn archived_layouts_match_format_md() {
        assert_eq!(size_of::<ArchivedFileHeader>(), HEADER_LEN);
        assert_eq!(offset_of!(ArchivedFileHeader, version), 8);
        assert_eq!(offset_of!(ArchivedFileHeader, header_len), 12);
        assert_eq!(offset_of!(ArchivedFileHeader, file_len), 16);
        assert_eq!(offset_of!(ArchivedFileHeader, level_count), 24);
        assert_eq!(offset_of!(ArchivedFileHeader, flags), 28);
        assert_eq!(offset_of!(ArchivedFileHeader, hash), 32);
        assert_eq!(offset_of!(ArchivedFileHeader, max_kicks), 36);
        assert_eq!(offset_of!(ArchivedFileHeader, seed), 40);
        assert_eq!(offset_of!(ArchivedFileHeader, target_fpr), 48);
        assert_eq!(offset_of!(ArchivedFileHeader, growth_factor), 56);
        assert_eq!(offset_of!(ArchivedFileHeader, tightening), 64);
        assert_eq!(offset_of!(ArchivedFileHeader, max_levels), 72);
        assert_eq!(offset_of!(ArchivedFileHeader, reserved0), 76);
        assert_eq!(offset_of!(ArchivedFileHeader, max_bytes), 80);
        assert_eq!(offset_of!(ArchivedFileHeader, item_count), 88);
        assert_eq!(offset_of!(ArchivedFileHeader, chain_bucket_size), 96);
        assert_eq!(offset_of!(ArchivedFileHeader, chain_encoding), 97);
        assert_eq!(offset_of!(ArchivedFileHeader, chunk_shift), 98);
        assert_eq!(offset_of!(ArchivedFileHeader, reserved1), 99);
        assert_eq!(offset_of!(ArchivedFileHeader, checksums_crc), 100);
        assert_eq!(offset_of!(ArchivedFileHeader, chunk_count), 104);
        assert_eq!(offset_of!(ArchivedFileHeader, reserved), 112);
        assert_eq!(offset_of!(ArchivedFileHeader, levels_crc), 120);
        assert_eq!(
            offset_of!(ArchivedFileHeader, header_crc),
            HEADER_CRC_OFFSET
        );

        assert_eq!(size_of::<ArchivedLevelDesc>(), LEVEL_LEN);
        assert_eq!(offset_of!(ArchivedLevelDesc, region_len), 8);
        assert_eq!(offset_of!(ArchivedLevelDesc, num_buckets), 16);
        assert_eq!(offset_of!(ArchivedLevelDesc, item_count), 24);
        assert_eq!(offset_of!(ArchivedLevelDesc, capacity), 32);
        assert_eq!(offset_of!(ArchivedLevelDesc, target_fpr), 40);
        assert_eq!(offset_of!(ArchivedLevelDesc, bucket_size), 48);
        assert_eq!(offset_of!(ArchivedLevelDesc, fingerprint_bits), 49);
        assert_eq!(offset_of!(ArchivedLevelDesc, encoding), 50);
        assert_eq!(offset_of!(ArchivedLevelDesc, core_bits), 51);
        assert_eq!(offset_of!(ArchivedLevelDesc, region_crc), 52);
        assert_eq!(offset_of!(ArchivedLevelDesc, precision), 56);
    }

    #[test]
    fn combined_fpr_is_one_minus_the_product_of_the_misses() {
        assert_eq!(combined_fpr([]), 0.0);
        assert_eq!(combined_fpr([0.25]), 0.25);
        assert_eq!(combined_fpr([0.5, 0.5]), 0.75);
        let want = 1.0 - 0.9 * 0.8 * 0.7;
        assert!((combined_fpr([0.1, 0.2, 0.3]) - want).abs() < 1e-15);
    }

    #[test]
    fn crc32_is_the_iso_hdlc_crc() {
        // The check value FORMAT.md gives.
        assert_eq!(crc32fast::hash(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn header_fields_are_little_endian_at_their_offsets() {
        let geo = Geometry::new(2, 4, 16, crate::Encoding::Plain).unwrap();
        let table = vec![0u8; geo.table_bytes()];
        let level = LevelOut {
            geo,
            len: 0,
            capacity: 7,
            target_fpr: 0.01,
            precision: 0,
            table: &table,
            copies: Vec::new(),
            copies_encoding: CopiesEncoding::None,
        };
        let file = FileOut {
            seed: 0x0102_0304_0506_0708,
            max_kicks: 500,
            target_fpr: 0.01,
            chain: None,
            levels: std::slice::from_ref(&level),
        };
        let b = to_bytes(&file);
        assert_eq!(b.len(), 128 + 64 + 64 + 64);
        assert_eq!(&b[0..8], b"CUCKOSST");
        assert_eq!(&b[8..12], &[2, 0, 0, 0]);
        assert_eq!(&b[12..16], &[128, 0, 0, 0]);
        assert_eq!(&b[16..24], &320u64.to_le_bytes());
        assert_eq!(&b[24..28], &[1, 0, 0, 0]);
        assert_eq!(&b[36..40], &500u32.to_le_bytes());
        assert_eq!(&b[40..48], &[8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(&b[48..56], &0.01f64.to_le_bytes());
        assert_eq!(b[98], 16, "chunk_shift");
        assert_eq!(&b[100..104], &crc32fast::hash(&b[192..256]).to_le_bytes());
        assert_eq!(&b[104..112], &1u64.to_le_bytes(), "chunk_count");
        assert_eq!(&b[120..124], &crc32fast::hash(&b[128..192]).to_le_bytes());
        assert_eq!(&b[124..128], &crc32fast::hash(&b[..124]).to_le_bytes());
        // Level 0: region right after the checksum table, 64 bytes, 2 buckets of 4 x 16 bits.
        assert_eq!(&b[128..136], &256u64.to_le_bytes());
        assert_eq!(&b[136..144], &64u64.to_le_bytes());
        assert_eq!(&b[144..152], &2u64.to_le_bytes());
        assert_eq!(&b[160..168], &7u64.to_le_bytes());
        assert_eq!(&b[176..179], &[4, 16, 0]);
        assert_eq!(&b[180..184], &[0; 4], "no region_crc in version 2");
        // The checksum table: the CRC of the region's offset, then its bytes; zero padding.
        let mut covered = 256u64.to_le_bytes().to_vec();
        covered.extend_from_slice(&[0u8; 64]);
        assert_eq!(&b[192..196], &crc32fast::hash(&covered).to_le_bytes());
        assert!(b[196..256].iter().all(|&x| x == 0));
    }

    #[test]
    fn chunks_split_regions_at_their_size() {
        assert_eq!(chunks_in(64, 16), 1);
        assert_eq!(chunks_in(1 << 16, 16), 1);
        assert_eq!(chunks_in((1 << 16) + 64, 16), 2);
        assert_eq!(checksum_table_len(1), 64);
        assert_eq!(checksum_table_len(16), 64);
        assert_eq!(checksum_table_len(17), 128);
        assert_eq!(
            file_len([(1 << 17) + 64, 64]),
            128 + 2 * 64 + 64 + (1 << 17) + 128
        );
    }
}
