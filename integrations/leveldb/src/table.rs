//! A reader of LevelDB's table (`.ldb`) format, enough to find each table's data blocks and
//! filters: the footer, the index and metaindex blocks, the filter block (LevelDB's
//! doc/table_format.md, table/format.cc, table/block_builder.cc, table/filter_block.cc).
//!
//! ```text
//! table:   data blocks … | filter block | metaindex block | index block | footer (48 bytes)
//! block:   contents | type (1 byte: 0 none, 1 Snappy) | masked CRC-32C of contents+type (4)
//! footer:  metaindex handle | index handle (varint64 offset, varint64 size each),
//!          zero padding to 40 bytes, magic 0xdb4775248b80fb57 (fixed64, little-endian)
//! block contents: entries (varint32 shared, varint32 unshared, varint32 value length,
//!          key bytes after the shared prefix, value), restart offsets (fixed32 each),
//!          number of restarts (fixed32)
//! metaindex: "filter.<policy name>" → the filter block's handle
//! filter block: filters …, their offsets (fixed32 each), the offset of that array
//!          (fixed32), base_lg (1 byte, 11): filter i is for the data blocks that start in
//!          [i << base_lg, (i + 1) << base_lg); it ends where filter i + 1 (or the array)
//!          starts
//! ```

use std::fs;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// The footer's magic number.
pub const MAGIC: u64 = 0xdb47_7524_8b80_fb57;
/// The footer's length.
pub const FOOTER_LEN: usize = 48;
/// A block's trailer: type and CRC.
pub const TRAILER_LEN: usize = 5;

/// Where a block's contents are in the file (its trailer follows them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHandle {
    /// Offset of the contents.
    pub offset: u64,
    /// Length of the contents, trailer excluded.
    pub size: u64,
}

impl BlockHandle {
    /// The contents' byte range in the file.
    pub fn range(&self) -> Range<usize> {
        self.offset as usize..(self.offset + self.size) as usize
    }

    /// Decodes a handle from the start of `bytes`; returns it and the bytes after it.
    pub fn decode(bytes: &[u8]) -> Result<(BlockHandle, &[u8]), String> {
        let (offset, rest) = varint(bytes)?;
        let (size, rest) = varint(rest)?;
        Ok((BlockHandle { offset, size }, rest))
    }
}

/// A table's filter block.
#[derive(Clone, Debug)]
pub struct FilterBlock {
    /// The policy's name (the metaindex key after `filter.`).
    pub policy: String,
    /// The block's contents in the file.
    pub handle: BlockHandle,
    /// log2 of the data-block offset window each filter covers (LevelDB: 11, 2 KiB).
    pub base_lg: u8,
    /// Each filter's bytes, as a range of file offsets; empty ones included (the windows in
    /// which no data block starts).
    pub filters: Vec<Range<usize>>,
}

impl FilterBlock {
    /// The filters that hold bytes (one per data block).
    pub fn nonempty(&self) -> impl Iterator<Item = &Range<usize>> {
        self.filters.iter().filter(|r| !r.is_empty())
    }
}

/// What [`read`] finds in a table.
#[derive(Clone, Debug)]
pub struct Table {
    /// The metaindex block.
    pub metaindex: BlockHandle,
    /// The index block.
    pub index: BlockHandle,
    /// The data blocks, in order.
    pub data_blocks: Vec<BlockHandle>,
    /// The filter blocks (LevelDB writes at most one).
    pub filters: Vec<FilterBlock>,
}

/// Reads the structure of the table whose bytes are `file`.
pub fn read(file: &[u8]) -> Result<Table, String> {
    if file.len() < FOOTER_LEN {
        return Err("shorter than a footer".into());
    }
    let footer = &file[file.len() - FOOTER_LEN..];
    let magic = u64::from_le_bytes(footer[40..].try_into().expect("8 bytes"));
    if magic != MAGIC {
        return Err(format!("bad magic {magic:#x}"));
    }
    let (metaindex, rest) = BlockHandle::decode(&footer[..40])?;
    let (index, _) = BlockHandle::decode(rest)?;

    let mut data_blocks = Vec::new();
    for (_, value) in entries(contents(file, index)?)? {
        data_blocks.push(BlockHandle::decode(&value)?.0);
    }
    let mut filters = Vec::new();
    for (key, value) in entries(contents(file, metaindex)?)? {
        let Some(policy) = key.strip_prefix(b"filter.") else {
            continue;
        };
        let (handle, _) = BlockHandle::decode(&value)?;
        filters.push(filter_block(
            file,
            String::from_utf8_lossy(policy).into_owned(),
            handle,
        )?);
    }
    Ok(Table {
        metaindex,
        index,
        data_blocks,
        filters,
    })
}

/// The contents of an uncompressed block.
pub fn contents(file: &[u8], handle: BlockHandle) -> Result<&[u8], String> {
    let r = handle.range();
    if r.end
        .checked_add(TRAILER_LEN)
        .is_none_or(|end| end > file.len())
    {
        return Err(format!("block {handle:?} runs past the file"));
    }
    match file[r.end] {
        0 => Ok(&file[r]),
        t => Err(format!(
            "block {handle:?} is compressed (type {t}): write with compression off"
        )),
    }
}

/// Whether the block's stored CRC matches its bytes (what LevelDB checks with
/// `verify_checksums`).
pub fn crc_ok(file: &[u8], handle: BlockHandle) -> bool {
    let r = handle.range();
    let Some(trailer) = file.get(r.end..r.end + TRAILER_LEN) else {
        return false;
    };
    let stored = u32::from_le_bytes(trailer[1..].try_into().expect("4 bytes"));
    let crc = crc32c(crc32c(0, &file[r]), &trailer[..1]);
    unmask(stored) == crc
}

fn filter_block(file: &[u8], policy: String, handle: BlockHandle) -> Result<FilterBlock, String> {
    let block = contents(file, handle)?;
    let n = block.len();
    if n < 5 {
        return Err("filter block shorter than 5 bytes".into());
    }
    let base_lg = block[n - 1];
    let array = fixed32(&block[n - 5..]) as usize;
    if array > n - 5 || !(n - 5 - array).is_multiple_of(4) {
        return Err(format!("filter offset array at {array} in a block of {n}"));
    }
    let count = (n - 5 - array) / 4;
    let starts: Vec<usize> = (0..count)
        .map(|i| fixed32(&block[array + 4 * i..]) as usize)
        .chain(std::iter::once(array))
        .collect();
    let base = handle.offset as usize;
    let mut filters = Vec::with_capacity(count);
    for w in starts.windows(2) {
        if w[0] > w[1] {
            return Err(format!("filter offsets out of order: {} > {}", w[0], w[1]));
        }
        filters.push(base + w[0]..base + w[1]);
    }
    Ok(FilterBlock {
        policy,
        handle,
        base_lg,
        filters,
    })
}

/// A block entry: key and value.
pub type Entry = (Vec<u8>, Vec<u8>);

/// The entries of a block's contents, prefix compression undone.
pub fn entries(block: &[u8]) -> Result<Vec<Entry>, String> {
    if block.len() < 4 {
        return Err("block shorter than its restart count".into());
    }
    let restarts = fixed32(&block[block.len() - 4..]) as usize;
    let end = restarts
        .checked_mul(4)
        .and_then(|r| block.len().checked_sub(4 + r))
        .ok_or("restart array longer than the block")?;
    let mut out = Vec::new();
    let mut key: Vec<u8> = Vec::new();
    let mut rest = &block[..end];
    while !rest.is_empty() {
        let (shared, r) = varint(rest)?;
        let (unshared, r) = varint(r)?;
        let (value_len, r) = varint(r)?;
        let (shared, unshared, value_len) =
            (shared as usize, unshared as usize, value_len as usize);
        if shared > key.len() || r.len() < unshared + value_len {
            return Err("block entry runs past the block".into());
        }
        key.truncate(shared);
        key.extend_from_slice(&r[..unshared]);
        out.push((key.clone(), r[unshared..unshared + value_len].to_vec()));
        rest = &r[unshared + value_len..];
    }
    Ok(out)
}

/// The table files (`*.ldb`) of the database at `dir`, in file-number order.
pub fn table_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut files: Vec<(u64, PathBuf)> = fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "ldb"))
        .map(|p| {
            let number = p
                .file_stem()
                .and_then(|s| s.to_str())
                .and_then(|s| s.parse().ok())
                .unwrap_or(u64::MAX);
            (number, p)
        })
        .collect();
    files.sort();
    Ok(files.into_iter().map(|(_, p)| p).collect())
}

/// The total size of the table files of the database at `dir`.
pub fn table_bytes(dir: &Path) -> io::Result<u64> {
    let mut total = 0;
    for f in table_files(dir)? {
        total += fs::metadata(f)?.len();
    }
    Ok(total)
}

fn fixed32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b[..4].try_into().expect("4 bytes"))
}

fn varint(bytes: &[u8]) -> Result<(u64, &[u8]), String> {
    let mut v = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((v, &bytes[i + 1..]));
        }
    }
    Err("bad varint".into())
}

/// LevelDB's CRC mask (util/crc32c.h): stored = rotr15(crc) + 0xa282ead8.
fn unmask(masked: u32) -> u32 {
    let rot = masked.wrapping_sub(0xa282_ead8);
    rot.rotate_left(15)
}

/// CRC-32C (Castagnoli), continuing from `crc`.
fn crc32c(crc: u32, bytes: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut t = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    (c >> 1) ^ 0x82f6_3b78
                } else {
                    c >> 1
                };
                k += 1;
            }
            t[i] = c;
            i += 1;
        }
        t
    };
    let mut c = !crc;
    for &b in bytes {
        c = TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_matches_the_standard_check_value() {
        assert_eq!(crc32c(0, b"123456789"), 0xe306_9283);
        // Continuing gives the CRC of the concatenation.
        assert_eq!(crc32c(crc32c(0, b"1234"), b"56789"), 0xe306_9283);
    }

    #[test]
    fn unmask_inverts_leveldbs_mask() {
        let crc = 0x1234_5678u32;
        let masked = crc.rotate_right(15).wrapping_add(0xa282_ead8);
        assert_eq!(unmask(masked), crc);
    }

    #[test]
    fn block_entries_undo_prefix_compression() {
        // Two entries, "filter.a" → [1] and "filter.b" → [2, 3] (7 bytes shared), one restart.
        let mut b = vec![0, 8, 1];
        b.extend_from_slice(b"filter.a");
        b.push(1);
        b.extend_from_slice(&[7, 1, 2, b'b', 2, 3]);
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
        let e = entries(&b).unwrap();
        assert_eq!(
            e,
            vec![
                (b"filter.a".to_vec(), vec![1]),
                (b"filter.b".to_vec(), vec![2, 3])
            ]
        );
    }
}
