//! `MappedFilter`: a filter file mapped into memory (or read into it) and queried in place. The
//! only place that maps files (and one of the crate's two places with `unsafe`).
//!
//! Mappings get no access advice: `MADV_RANDOM` and `MADV_WILLNEED` were measured on a
//! 32 M-key file in the page cache (first million lookups after mapping, then steady single
//! and batched lookups) and changed nothing beyond this VM's noise — the kernel maps file
//! pages around each fault, so a cold mapping costs about as much as a warm one.
#![allow(unsafe_code)]

use crate::checks::{Checks, Health};
use crate::error::{Error, Result};
use crate::format::{self, FileMeta, HEADER_LEN, LevelMeta, decode};
use crate::hash::KeyHash;
use crate::table::raw::Region;
use crate::table::{Codec, TableBuf, with_codec};
use crate::view::{FilterRef, saturating_usize};
use memmap2::{Mmap, MmapOptions};
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;

/// A filter file mapped with `mmap` and queried in place: opening does not read or copy the
/// buckets, and lookups run the same kernel as an in-memory [`CuckooFilter`](crate::CuckooFilter).
///
/// A file may hold one filter or a growable chain of several levels; lookups check every level
/// with one hash of the key.
///
/// # Files must not change while mapped
///
/// The mapping shows the file's current bytes. Files written by
/// [`CuckooFilter::save`](crate::CuckooFilter::save) are never modified in place: saving again
/// writes a new file and renames it over the old path, and a mapping keeps the old file's
/// bytes until it is dropped. Nothing else may write into or truncate a file while it is
/// mapped, by [`open`](Self::open), [`open_unverified`](Self::open_unverified) or the
/// `open_range` pair: the filter hands its mapped bytes to the lookup code as a `&[u8]`, which
/// Rust assumes does not change, so a change made to the file by another process (or by this
/// one through another handle) is **undefined behaviour**, although these constructors are safe
/// functions: keeping the file unchanged is the caller's part of the contract. In practice a
/// truncation makes the next access past the new end raise `SIGBUS`, which kills the process,
/// and overwritten bytes give wrong answers, false negatives included; but undefined behaviour
/// promises neither.
///
/// An engine that cannot rule this out (files on a shared or network file system, other
/// tools that write or compact files in place) opens with [`read`](Self::read) instead: it
/// copies the file into memory once, checks it exactly as `open` does and answers through the
/// same code, and nothing done to the file afterwards reaches it.
///
/// ```
/// use cuckoo_sst::{CuckooFilter, MappedFilter};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("000042.filter");
/// let mut f = CuckooFilter::with_capacity(1000);
/// f.insert(b"key")?;
/// f.save(&path)?;
///
/// let mapped = MappedFilter::open(&path)?;
/// assert!(mapped.contains(b"key"));
/// assert_eq!(mapped.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct MappedFilter {
    bytes: Bytes,
    meta: FileMeta,
    /// Which chunks have been checked, by `verify` or by the lookups that touched them. Boxed:
    /// its atomics, held inline, would make a `&MappedFilter` one whose fields may change under
    /// a lookup as far as the compiler knows, and a loop of lookups would reload more of them
    /// for every key (issue 40: 4 of a lookup's 182 instructions).
    checks: Box<Checks>,
}

/// Where a file's bytes are held.
enum Bytes {
    /// Mapped from the file ([`MappedFilter::open`]), or from a range of it
    /// ([`MappedFilter::open_range`]).
    Mapped(Mmap),
    /// Read into a 64-byte-aligned heap buffer ([`MappedFilter::read`]): the first `len` bytes
    /// are the file, the rest pads it to whole cache lines.
    Read { buf: TableBuf, len: usize },
    /// Shared with the caller ([`MappedFilter::from_shared`]): a block cache's buffer, say.
    Shared(Arc<[u8]>),
}

impl Bytes {
    #[inline]
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Mapped(map) => map,
            Bytes::Read { buf, len } => &buf.bytes()[..*len],
            Bytes::Shared(bytes) => bytes,
        }
    }
}

/// `path` opened for reading, and its length; anything but a regular file (a directory, a
/// device, a pipe) is refused with an `Io` error of kind `IsADirectory` or `InvalidInput`.
fn open_regular(path: &Path) -> Result<(File, u64)> {
    let file = File::open(path)?;
    let len = regular_len(&file)?;
    Ok((file, len))
}

/// Reads exactly `buf.len()` bytes of `file` from byte `offset` (without moving its cursor,
/// where the platform allows).
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(not(unix))]
    {
        use std::io::Seek;
        let mut f = file;
        f.seek(io::SeekFrom::Start(offset))?;
        f.read_exact(buf)
    }
}

/// The length of `file`, a regular file; anything else (a directory, a device, a pipe) is
/// refused with an `Io` error of kind `IsADirectory` or `InvalidInput`.
fn regular_len(file: &File) -> Result<u64> {
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "a filter file was expected, the path names a directory",
        )
        .into());
    }
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a filter file was expected, the path names a device, pipe or socket",
        )
        .into());
    }
    Ok(meta.len())
}

/// Fills `buf` from `file` as far as the file goes (retrying a read a signal interrupted);
/// the number of bytes read.
fn read_up_to(file: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Reads the rest of a file whose first `HEADER_LEN` bytes `bytes` already holds, to the end
/// of `bytes` (the file's length when it was opened); `Truncated` if the file ends sooner (it
/// shrank while it was read).
fn read_rest(file: &mut impl Read, bytes: &mut [u8]) -> Result<()> {
    let got = HEADER_LEN + read_up_to(file, &mut bytes[HEADER_LEN..])?;
    if got < bytes.len() {
        return Err(Error::Truncated {
            expected: bytes.len() as u64,
            found: got as u64,
        });
    }
    Ok(())
}

/// The error for a file of `len` bytes whose first bytes are `head`, shorter than a header:
/// what the decoder says about them.
fn short_file(head: &[u8], len: u64) -> Error {
    match decode::parse(head) {
        Err(e) => e,
        Ok(_) => Error::Truncated {
            expected: HEADER_LEN as u64,
            found: len,
        },
    }
}

/// The bytes of a file of another kind than a filter (a run index, FORMAT.md §12), for a
/// reader that checks them itself: mapped, as [`MappedFilter::open_unverified`] maps a filter
/// (the same contract: the file must not change while it is mapped), or held by the caller.
pub(crate) enum FileBytes {
    /// Mapped from a file ([`map_file`]).
    Mapped(Mmap),
    /// Read, for a file too short to be worth mapping (an empty file cannot be mapped
    /// everywhere).
    Read(Vec<u8>),
    /// Shared with the caller.
    Shared(Arc<[u8]>),
}

impl FileBytes {
    /// The bytes.
    #[inline]
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            FileBytes::Mapped(map) => map,
            FileBytes::Read(bytes) => bytes,
            FileBytes::Shared(bytes) => bytes,
        }
    }

    /// How they are held, for `Debug`.
    pub(crate) fn storage(&self) -> &'static str {
        match self {
            FileBytes::Mapped(_) => "mapped",
            FileBytes::Read(_) => "read",
            FileBytes::Shared(_) => "shared",
        }
    }
}

/// Maps the whole regular file at `path` (a directory, device or pipe is refused as by
/// [`MappedFilter::open`]); a file shorter than `min` bytes is read instead.
pub(crate) fn map_file(path: &Path, min: u64) -> Result<FileBytes> {
    let (mut file, len) = open_regular(path)?;
    if len < min {
        let mut bytes = vec![0u8; len as usize];
        let got = read_up_to(&mut file, &mut bytes)?;
        bytes.truncate(got);
        return Ok(FileBytes::Read(bytes));
    }
    // SAFETY: as in `MappedFilter::open_unverified`: the crate never writes into an existing
    // file it saved (saving renames a new file over the path; the mapping keeps the old inode),
    // and the callers' types document the contract for other writers (a change made under the
    // mapping is undefined behaviour). Every read goes through slices bounded by the mapping's
    // length, checked by the caller's decoder before use.
    let map = unsafe { Mmap::map(&file)? };
    Ok(FileBytes::Mapped(map))
}

impl MappedFilter {
    /// Maps `path` and checks all of it: header, level table, every checksum (FORMAT.md §7).
    /// Reads the whole file once, at the speed of CRC-32.
    ///
    /// The file must not change while it is mapped ([undefined behaviour
    /// otherwise](#files-must-not-change-while-mapped)); use [`read`](Self::read) for a file that
    /// may.
    ///
    /// ```
    /// use cuckoo_sst::{Error, MappedFilter};
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("not-a-filter");
    /// std::fs::write(&path, b"hello, world")?;
    /// assert!(matches!(MappedFilter::open(&path), Err(Error::BadMagic { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<MappedFilter> {
        let m = MappedFilter::open_unverified(path)?;
        m.verify()?;
        Ok(m)
    }

    /// Maps `path` and checks only the header, the level table and the checksum table
    /// (FORMAT.md §7 steps 1–7): microseconds, whatever the file's size. The buckets are
    /// checked chunk by chunk as lookups touch them: a lookup whose buckets lie in chunks not
    /// yet checked first checks those chunks (64 KiB each), so the first lookup in a file of
    /// any size costs microseconds and no answer ever comes from bytes whose checksum has not
    /// matched. A lookup that touches a damaged chunk answers "maybe present" (never a false
    /// negative); the damage is kept, counted in [`health`](Self::health) and returned by
    /// [`verify`](Self::verify), which checks everything (while other threads keep
    /// answering).
    ///
    /// A version-1 file has one checksum per level: its first lookup checks a whole level.
    ///
    /// The file must not change while it is mapped ([undefined behaviour
    /// otherwise](#files-must-not-change-while-mapped)); use [`read`](Self::read) for a file that
    /// may.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # let mut f = CuckooFilter::with_capacity(10);
    /// # f.insert(b"a")?;
    /// # f.save(&path)?;
    /// let m = MappedFilter::open_unverified(&path)?;
    /// assert!(!m.is_verified());
    /// assert!(m.contains(b"a")); // checks the chunk(s) this lookup reads
    /// assert_eq!(m.health().verified, 1);
    /// m.verify()?;
    /// assert!(m.is_verified());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_unverified(path: impl AsRef<Path>) -> Result<MappedFilter> {
        let (mut file, len) = open_regular(path.as_ref())?;
        if len < HEADER_LEN as u64 {
            // Too short to map usefully (and empty files cannot be mapped everywhere): read the
            // few bytes there are, and let the decoder say what is wrong with them.
            let mut head = [0u8; HEADER_LEN];
            let got = read_up_to(&mut file, &mut head)?;
            return Err(short_file(&head[..got], len));
        }
        // SAFETY: `Mmap::map` is unsafe because the mapped bytes change if the file is modified
        // while mapped, which would break the immutability of the `&[u8]` we hand out. This
        // crate never writes into an existing filter file (saving renames a new file over the
        // path; the mapping keeps the old inode), and the type's documentation states the
        // contract for other writers: a change made under the mapping is undefined behaviour,
        // and `MappedFilter::read` is the constructor for files that may change. All reads go through slices bounded by the mapping's
        // length, validated by the decoder before use.
        let map = unsafe { Mmap::map(&file)? };
        MappedFilter::parsed(Bytes::Mapped(map))
    }

    /// Maps the filter block of `len` bytes at byte `offset` of `file` — a filter inside an
    /// SSTable, say — and checks all of it, as [`open`](Self::open) does. `offset` may be any
    /// value (the block need not be aligned; lookups read unaligned bytes alike). The file's
    /// other bytes are neither read nor checked. The block must not change while it is mapped
    /// ([undefined behaviour otherwise](#files-must-not-change-while-mapped)).
    ///
    /// ```
    /// use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// use std::io::Write;
    /// let mut f = CuckooFilter::with_capacity(1000);
    /// f.insert(b"key")?;
    /// let block = f.to_bytes();
    /// let mut table = tempfile::tempfile()?;
    /// table.write_all(b"...data blocks...")?; // 17 bytes
    /// table.write_all(&block)?;
    /// table.write_all(b"footer")?;
    /// let m = MappedFilter::open_range(&table, 17, block.len() as u64)?;
    /// assert!(m.contains(b"key"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_range(file: &File, offset: u64, len: u64) -> Result<MappedFilter> {
        let m = MappedFilter::open_range_unverified(file, offset, len)?;
        m.verify()?;
        Ok(m)
    }

    /// [`open_range`](Self::open_range), checking only the header, level table and checksum
    /// table; the buckets are checked as lookups touch them, as with
    /// [`open_unverified`](Self::open_unverified). A range that reaches past the end of the
    /// file is refused (`Io`, kind `UnexpectedEof`) rather than mapped.
    ///
    /// ```
    /// use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// use std::io::Write;
    /// let block = CuckooFilter::with_capacity(10).to_bytes();
    /// let mut table = tempfile::tempfile()?;
    /// table.write_all(&[0; 3])?;
    /// table.write_all(&block)?;
    /// let m = MappedFilter::open_range_unverified(&table, 3, block.len() as u64)?;
    /// assert!(!m.contains(b"absent"));
    /// assert!(MappedFilter::open_range_unverified(&table, 4, block.len() as u64).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_range_unverified(file: &File, offset: u64, len: u64) -> Result<MappedFilter> {
        let size = regular_len(file)?;
        let end = offset.checked_add(len);
        if end.is_none_or(|end| end > size) {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "the filter block at {offset}..{} lies past the end of the file ({size} \
                     bytes)",
                    offset as u128 + len as u128
                ),
            )
            .into());
        }
        if len < HEADER_LEN as u64 {
            let mut head = [0u8; HEADER_LEN];
            let head = &mut head[..len as usize];
            read_exact_at(file, head, offset)?;
            return Err(short_file(head, len));
        }
        let map_len = usize::try_from(len).map_err(|_| Error::OutOfMemory { bytes: len })?;
        // SAFETY: as in `open_unverified`: the crate never writes into a filter file, and the
        // contract for other writers is documented on the type. The range lies inside the file
        // (checked above), so no page of the mapping is past its end; memmap2 aligns the
        // mapping's start to a page and hands out exactly the `len` bytes from `offset`.
        let map = unsafe { MmapOptions::new().offset(offset).len(map_len).map(file)? };
        MappedFilter::parsed(Bytes::Mapped(map))
    }

    /// A filter over bytes the caller shares — a block cache's copy of a filter block — with
    /// the header, level table and checksum table checked now and the buckets as lookups
    /// touch them (as with [`open_unverified`](Self::open_unverified)). The bytes may start at
    /// any address.
    ///
    /// ```
    /// use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// use std::sync::Arc;
    /// let mut f = CuckooFilter::with_capacity(100);
    /// f.insert(b"k")?;
    /// let cached: Arc<[u8]> = f.to_bytes().into();
    /// let m = MappedFilter::from_shared(cached.clone())?;
    /// assert!(m.contains(b"k"));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn from_shared(bytes: Arc<[u8]>) -> Result<MappedFilter> {
        MappedFilter::parsed(Bytes::Shared(bytes))
    }

    /// A filter over shared bytes **that the caller has already verified** — with its own block
    /// checksum, say: only the header and the level table are checked (FORMAT.md §7 steps
    /// 1–6), and lookups read every bucket without checking a checksum first.
    ///
    /// Bytes damaged since the caller checked them give wrong answers, false negatives
    /// included: use [`from_shared`](Self::from_shared) unless the bytes really were checked.
    /// (Memory safety does not depend on it: any bytes are read safely.)
    /// [`verify`](Self::verify) still checks everything on request.
    ///
    /// ```
    /// use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// let mut f = CuckooFilter::with_capacity(100);
    /// f.insert(b"k")?;
    /// let m = MappedFilter::from_shared_assume_verified(f.to_bytes().into())?;
    /// assert!(m.contains(b"k") && !m.is_verified());
    /// m.verify()?;
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn from_shared_assume_verified(bytes: Arc<[u8]>) -> Result<MappedFilter> {
        let meta = decode::parse_trusting_regions(&bytes)?;
        Ok(MappedFilter {
            checks: Box::new(Checks::trusted(&meta)),
            bytes: Bytes::Shared(bytes),
            meta,
        })
    }

    /// Reads `path` into memory — a 64-byte-aligned heap buffer, no mapping — and checks all of
    /// it as [`open`](Self::open) does; lookups then run the same code as on a mapped file.
    ///
    /// Named after [`std::fs::read`]: the whole file is read once, and nothing that happens to
    /// the file afterwards (truncation, overwriting, deletion) can reach the filter, at the cost
    /// of memory for the file's size and of reading it now rather than as pages are touched. The
    /// header is read and checked first, so a file that is not a filter, or whose header gives
    /// another length than the file has, is refused after reading 128 bytes, whatever its size.
    /// Errors are the ones `open` gives for the same file.
    ///
    /// ```
    /// use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("000042.filter");
    /// let mut f = CuckooFilter::with_capacity(1000);
    /// f.insert(b"key")?;
    /// f.save(&path)?;
    ///
    /// let read = MappedFilter::read(&path)?;
    /// std::fs::File::options().write(true).open(&path)?.set_len(0)?; // no harm done
    /// assert!(read.is_verified() && read.contains(b"key"));
    /// assert_eq!(read.as_bytes(), &f.to_bytes()[..]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read(path: impl AsRef<Path>) -> Result<MappedFilter> {
        let (mut file, len) = open_regular(path.as_ref())?;
        let mut head = [0u8; HEADER_LEN];
        let got = read_up_to(&mut file, &mut head)?;
        if got < HEADER_LEN {
            return Err(short_file(&head[..got], len));
        }
        // Steps 1–4 of FORMAT.md §7 need only the header: a header that passes them says how
        // long the file is, and the decoder stops at that length check ("truncated" for a
        // header alone). Anything else it finds, or another length than the file's, is the
        // error `open` would give, found before allocating the file's size.
        match decode::parse(&head) {
            Err(Error::Truncated { expected, .. }) if expected == len => {}
            Err(Error::Truncated { expected, .. }) if expected > len => {
                return Err(Error::Truncated {
                    expected,
                    found: len,
                });
            }
            Err(Error::Truncated { expected, .. }) => {
                return Err(Error::TrailingBytes {
                    expected,
                    found: len,
                });
            }
            Err(e) => return Err(e),
            Ok(_) => {} // no file is a header alone; the full parse below says so
        }
        let too_big = || Error::OutOfMemory { bytes: len };
        let n = usize::try_from(len).map_err(|_| too_big())?;
        let mut buf = TableBuf::zeroed(n.checked_next_multiple_of(64).ok_or_else(too_big)?)?;
        let bytes = &mut buf.bytes_mut()[..n];
        bytes[..HEADER_LEN].copy_from_slice(&head);
        read_rest(&mut file, bytes)?;
        let m = MappedFilter::parsed(Bytes::Read { buf, len: n })?;
        m.verify()?;
        Ok(m)
    }

    /// Steps 1–7 of FORMAT.md §7 on `bytes`; the buckets are not checked yet.
    fn parsed(bytes: Bytes) -> Result<MappedFilter> {
        let meta = decode::parse(bytes.as_slice())?;
        Ok(MappedFilter {
            checks: Box::new(Checks::new(&meta)),
            bytes,
            meta,
        })
    }

    /// Checks every bucket chunk not checked yet, then the contents of every level (zero
    /// padding, well-formed buckets, item counts: FORMAT.md §7 step 8); `Ok` once all pass.
    /// Lookups on other threads go on meanwhile. The error names the first damage: for a
    /// damaged chunk, its level, index and byte range (`Error::ChecksumMismatch`).
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # CuckooFilter::with_capacity(10).save(&path)?;
    /// MappedFilter::open_unverified(&path)?.verify()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn verify(&self) -> Result<()> {
        self.checks.verify(self.bytes.as_slice(), &self.meta)
    }

    /// Whether [`verify`](Self::verify) has passed (as it has for a file [`open`](Self::open)ed
    /// or [`read`](Self::read)).
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # CuckooFilter::with_capacity(10).save(&path)?;
    /// assert!(MappedFilter::open(&path)?.is_verified());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_verified(&self) -> bool {
        self.checks.verified()
    }

    /// What is known of the file's chunks so far: how many there are, how many have been
    /// checked and found whole, how many damaged. Cheap (a few atomic loads): an engine can
    /// poll it, or log it when a lookup path sees "maybe" more often than expected.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # CuckooFilter::with_capacity(10).save(&path)?;
    /// let mut bytes = std::fs::read(&path)?;
    /// let last = bytes.len() - 1;
    /// bytes[last] ^= 1; // damage the buckets (the region's last byte)
    /// std::fs::write(&path, &bytes)?;
    /// let m = MappedFilter::open_unverified(&path)?;
    /// assert!(m.verify().is_err());
    /// assert_eq!((m.health().chunks, m.health().damaged), (1, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn health(&self) -> Health {
        self.checks.health()
    }

    /// The first damage lookups or [`verify`](Self::verify) have found, if any.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # CuckooFilter::with_capacity(10).save(&path)?;
    /// assert!(MappedFilter::open(&path)?.damage().is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn damage(&self) -> Option<Error> {
        self.checks.damage()
    }

    /// Whether every chunk of level `k` is whole, checking those not checked yet.
    fn level_whole(&self, k: usize) -> bool {
        let Some(level) = self.meta.levels.get(k) else {
            return false;
        };
        !self.checks.rejected()
            && (0..self.meta.chunks_of(level)).all(|j| self.chunk_whole(k, level, j))
    }

    /// Whether chunk `j` of level `k` is whole, checking it the first time.
    #[inline]
    fn chunk_whole(&self, k: usize, level: &LevelMeta, j: usize) -> bool {
        self.checks.ensure(level.first_chunk + j, || {
            decode::check_chunk(self.bytes.as_slice(), &self.meta, k, j)
        })
    }

    /// Whether the chunks that a lookup of `h` reads in level `k` are whole, checking them the
    /// first time: the chunks holding the first and the last byte of each candidate bucket's
    /// loads (a bucket's loads span at most two lines, and a chunk is whole lines).
    fn touched_whole(&self, k: usize, level: &LevelMeta, h: KeyHash) -> bool {
        let (i1, i2) = self
            .view(level)
            .buckets_seeded(crate::hash::seeded(h, self.meta.seed));
        let last = level.geo.table_bytes() - 1;
        let spans = with_codec!(level.geo.layout(), c => [c.prefetch_at(i1), c.prefetch_at(i2)]);
        spans.into_iter().flatten().all(|at| {
            let j = self.meta.chunk_at(at.min(last));
            self.chunk_whole(k, level, j)
        })
    }

    /// The view of level `k` (0 is the oldest), or `None` when `k` is out of range, one of
    /// the level's chunks is damaged or the file was rejected. The level's chunks not checked
    /// yet are checked first (a view reads any bucket).
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # CuckooFilter::with_capacity(10).save(&path)?;
    /// let m = MappedFilter::open(&path)?;
    /// assert_eq!(m.level(0).unwrap().bucket_size(), 4);
    /// assert!(m.level(1).is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn level(&self, k: usize) -> Option<FilterRef<'_>> {
        if !self.checks.all_good() && !self.level_whole(k) {
            return None;
        }
        Some(self.view(self.meta.levels.get(k)?))
    }

    /// Every level's view, newest (largest) first. Only for a file whose chunks are all whole.
    fn views(&self) -> impl Iterator<Item = FilterRef<'_>> {
        self.meta.levels.iter().rev().map(|level| self.view(level))
    }

    /// [`contains_hash`](Self::contains_hash) while some chunks are unchecked or damaged: level
    /// by level, newest first, the chunks the lookup reads are checked first; a damaged one
    /// answers "maybe present".
    #[cold]
    fn contains_hash_checking(&self, h: KeyHash) -> bool {
        if self.checks.rejected() {
            return true;
        }
        self.meta
            .levels
            .iter()
            .enumerate()
            .rev()
            .any(|(k, level)| !self.touched_whole(k, level, h) || self.view(level).contains_hash(h))
    }

    /// The bucket region of `level` (one of this file's, checked by the decoder to lie in the
    /// map and to be its geometry's length).
    #[inline(always)]
    fn region(&self, level: &LevelMeta) -> Region<'_> {
        let table = self.bytes.as_slice().get(level.region()).unwrap_or(&[]);
        match Region::new(table, &level.geo) {
            Some(region) => region,
            None => unreachable!("the decoder checked every level's region"),
        }
    }

    /// The view of `level` (one of this file's, checked by the decoder to lie in the map).
    #[inline(always)]
    fn view(&self, level: &LevelMeta) -> FilterRef<'_> {
        let region = &self.bytes.as_slice()[level.region()];
        match level.stretch {
            None => FilterRef::new(level.geo, self.meta.seed, level.len, region),
            Some(counts) => FilterRef::new_stretch(
                level.geo,
                self.meta.seed,
                counts.keys,
                counts.precision,
                region,
            ),
        }
    }

    /// Whether `key` may be in the filter: `false` means certainly absent.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # let mut f = CuckooFilter::with_capacity(10);
    /// # f.insert(b"a")?;
    /// # f.save(&path)?;
    /// assert!(MappedFilter::open(&path)?.contains(b"a"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline(always)]
    pub fn contains(&self, key: &[u8]) -> bool {
        self.contains_hash(KeyHash::of(key))
    }

    /// [`contains`](Self::contains) for a precomputed hash.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, KeyHash, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # let mut f = CuckooFilter::with_capacity(10);
    /// # f.insert(b"a")?;
    /// # f.save(&path)?;
    /// assert!(MappedFilter::open(&path)?.contains_hash(KeyHash::of(b"a")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    // The one-level probe inlined into the caller (see `FilterRef::contains`); the checking
    // and many-level paths out of line.
    #[inline(always)]
    pub fn contains_hash(&self, h: KeyHash) -> bool {
        if !self.checks.all_good() {
            return self.contains_hash_checking(h);
        }
        if let [level] = self.meta.levels.as_slice() {
            // The view's kernel with the level's geometry by reference: a view made per key
            // is a 168-byte copy per key (issue 40).
            return crate::view::probe_seeded(
                &level.geo,
                self.region(level),
                crate::hash::seeded(h, self.meta.seed),
            );
        }
        self.contains_hash_levels(h)
    }

    /// [`contains_hash`](Self::contains_hash) of a whole file of several levels.
    #[inline(never)]
    fn contains_hash_levels(&self, h: KeyHash) -> bool {
        let mut any = false;
        crate::view::probe_each(self.views(), h, |_, found| {
            any = found;
            !found
        });
        any
    }

    /// [`contains_hash`](Self::contains_hash) for many keys, with prefetching (see
    /// [`FilterRef::contains_batch`]).
    ///
    /// # Panics
    /// If `hashes` and `out` differ in length.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, KeyHash, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # let mut f = CuckooFilter::with_capacity(10);
    /// # f.insert(b"a")?;
    /// # f.save(&path)?;
    /// let m = MappedFilter::open(&path)?;
    /// let mut out = [false];
    /// m.contains_batch(&[KeyHash::of(b"a")], &mut out);
    /// assert_eq!(out, [true]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn contains_batch(&self, hashes: &[KeyHash], out: &mut [bool]) {
        assert_eq!(
            hashes.len(),
            out.len(),
            "contains_batch: one output per hash"
        );
        if !self.checks.all_good() {
            for (o, &h) in out.iter_mut().zip(hashes) {
                *o = self.contains_hash_checking(h);
            }
            return;
        }
        crate::view::contains_batch_any(&self.views().collect::<Vec<_>>(), hashes, out);
    }

    /// [`contains`](Self::contains) for many keys, hashed as their lookups start (see
    /// [`FilterRef::contains_batch_keys`]).
    ///
    /// # Panics
    /// If `keys` and `out` differ in length.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # let mut f = CuckooFilter::with_capacity(10);
    /// # f.insert(b"a")?;
    /// # f.save(&path)?;
    /// let m = MappedFilter::open(&path)?;
    /// let mut out = [false];
    /// m.contains_batch_keys(&[b"a"], &mut out);
    /// assert_eq!(out, [true]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn contains_batch_keys<K: AsRef<[u8]>>(&self, keys: &[K], out: &mut [bool]) {
        assert_eq!(
            keys.len(),
            out.len(),
            "contains_batch_keys: one output per key"
        );
        if !self.checks.all_good() {
            for (o, k) in out.iter_mut().zip(keys) {
                *o = self.contains_hash_checking(KeyHash::of(k.as_ref()));
            }
            return;
        }
        crate::view::contains_batch_keys_any(&self.views().collect::<Vec<_>>(), keys, out);
    }

    /// Copies of `key`'s fingerprint across all levels. A level whose buckets for the key are
    /// damaged counts 1 ("maybe present"), as does every key of a rejected file.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # let mut f = CuckooFilter::with_capacity(10);
    /// # f.insert(b"a")?; f.insert(b"a")?;
    /// # f.save(&path)?;
    /// assert_eq!(MappedFilter::open(&path)?.count(b"a"), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn count(&self, key: &[u8]) -> usize {
        self.count_hash(KeyHash::of(key))
    }

    /// [`count`](Self::count) for a precomputed hash.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, KeyHash, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # CuckooFilter::with_capacity(10).save(&path)?;
    /// assert_eq!(MappedFilter::open(&path)?.count_hash(KeyHash::of(b"a")), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn count_hash(&self, h: KeyHash) -> usize {
        if self.checks.rejected() {
            return 1;
        }
        let all_good = self.checks.all_good();
        let levels = self.meta.levels.iter().enumerate();
        levels
            .map(
                |(k, level)| match all_good || self.touched_whole(k, level, h) {
                    true => self
                        .view(level)
                        .count_hash(h)
                        .saturating_add(self.counted(k, level, h)),
                    false => 1,
                },
            )
            .fold(0usize, usize::saturating_add)
    }

    /// The copies the entries of level `k` answering for `h` count (FORMAT.md §3.5), read
    /// from its copies region in place once the region's chunks are whole (else 1: "maybe").
    fn counted(&self, k: usize, level: &LevelMeta, h: KeyHash) -> usize {
        if level.copies == crate::copies::CopiesEncoding::None {
            return 0;
        }
        let copies = level.copies_region();
        let first = self.meta.chunk_at(copies.start - level.offset);
        let last = self.meta.chunk_at(copies.end - 1 - level.offset);
        if !(first..=last).all(|j| self.chunk_whole(k, level, j)) {
            return 1;
        }
        let bytes = self.bytes.as_slice();
        let (table, copies) = (&bytes[level.region()], &bytes[copies]);
        let seeded = crate::hash::seeded(h, self.meta.seed);
        let n = crate::copies::answering_sum(&level.geo, table, seeded, |j, v| {
            crate::copies::counted_in(&level.geo, table, level.copies, copies, j, v)
        });
        saturating_usize(n)
    }

    /// Items in the filter (all levels), from the header.
    ///
    /// On a 32-bit target a count above `usize::MAX` (a table of more than 2^32 slots) is given
    /// as `usize::MAX`, never wrapped.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # CuckooFilter::with_capacity(10).save(&path)?;
    /// assert_eq!(MappedFilter::open(&path)?.len(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        saturating_usize(self.meta.item_count)
    }

    /// Whether the filter holds no items.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # CuckooFilter::with_capacity(10).save(&path)?;
    /// assert!(MappedFilter::open(&path)?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.meta.item_count == 0
    }

    /// Number of levels: 1 for a single filter, more for a grown chain.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # CuckooFilter::with_capacity(10).save(&path)?;
    /// assert_eq!(MappedFilter::open(&path)?.levels(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn levels(&self) -> usize {
        self.meta.levels.len()
    }

    /// The false-positive rate bound over all levels: `1 − Π(1 − εₖ)` where `εₖ` is level `k`'s
    /// bound (a classic level's full-bucket bound, a stretch level's bound from its precision
    /// sum).
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// let f = CuckooFilter::with_capacity(10);
    /// f.save(&path)?;
    /// assert_eq!(MappedFilter::open(&path)?.expected_fpr(), f.expected_fpr());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn expected_fpr(&self) -> f64 {
        format::combined_fpr(self.meta.levels.iter().map(|l| self.view(l).expected_fpr()))
    }

    /// The seed of the file's hashes.
    ///
    /// ```
    /// # use cuckoo_sst::{Config, CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// CuckooFilter::new(Config::new(10).seed(77))?.save(&path)?;
    /// assert_eq!(MappedFilter::open(&path)?.seed(), 77);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn seed(&self) -> u64 {
        self.meta.seed
    }

    /// The file's length in bytes.
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// let f = CuckooFilter::with_capacity(10);
    /// f.save(&path)?;
    /// assert_eq!(MappedFilter::open(&path)?.size_in_bytes(), f.size_in_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn size_in_bytes(&self) -> usize {
        self.bytes.as_slice().len()
    }

    /// The file's bytes exactly (mapped, or read by [`read`](Self::read)).
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// let f = CuckooFilter::with_capacity(10);
    /// f.save(&path)?;
    /// assert_eq!(MappedFilter::open(&path)?.as_bytes(), &f.to_bytes()[..]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }
}

impl std::fmt::Debug for MappedFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedFilter")
            .field("bytes", &self.bytes.as_slice().len())
            .field(
                "storage",
                &match self.bytes {
                    Bytes::Mapped(_) => "mapped",
                    Bytes::Read { .. } => "read",
                    Bytes::Shared(_) => "shared",
                },
            )
            .field("levels", &self.meta.levels.len())
            .field("len", &self.meta.item_count)
            .field("verified", &self.checks.verified())
            .field("health", &self.checks.health())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Yields `data` a few bytes per call, a scripted error first where asked, and counts
    /// the calls.
    struct Scripted<'a> {
        data: &'a [u8],
        step: usize,
        errors: Vec<io::ErrorKind>,
        calls: usize,
    }

    impl Read for Scripted<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.calls += 1;
            if let Some(kind) = self.errors.pop() {
                return Err(io::Error::from(kind));
            }
            let n = buf.len().min(self.step).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn scripted<'a>(data: &'a [u8], step: usize, errors: &[io::ErrorKind]) -> Scripted<'a> {
        Scripted {
            data,
            step,
            errors: errors.to_vec(),
            calls: 0,
        }
    }

    #[test]
    fn reads_retry_interruptions_and_stop_at_the_end() {
        let data: Vec<u8> = (0..20).collect();
        // Three bytes a call, one interruption first: 7 reads fill 20 bytes, and no read is
        // made once the buffer is full.
        let mut r = scripted(&data, 3, &[io::ErrorKind::Interrupted]);
        let mut buf = [0u8; 20];
        assert_eq!(read_up_to(&mut r, &mut buf).unwrap(), 20);
        assert_eq!(buf[..], data[..]);
        assert_eq!(r.calls, 8);
        // A source shorter than the buffer: what there is, after one read that returns 0.
        let mut r = scripted(&data[..5], 3, &[]);
        let mut buf = [0u8; 20];
        assert_eq!(read_up_to(&mut r, &mut buf).unwrap(), 5);
        assert_eq!(buf[..5], data[..5]);
        assert_eq!(r.calls, 3);
        // Any other error is returned.
        let mut r = scripted(&data, 3, &[io::ErrorKind::PermissionDenied]);
        let e = read_up_to(&mut r, &mut [0u8; 4]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
    }

    #[test]
    fn a_file_that_shrinks_while_it_is_read_is_truncated() {
        let data = vec![7u8; 300];
        let mut bytes = vec![0u8; 400];
        let mut r = scripted(&data[HEADER_LEN..], 64, &[]);
        match read_rest(&mut r, &mut bytes) {
            Err(Error::Truncated { expected, found }) => assert_eq!((expected, found), (400, 300)),
            other => panic!("{other:?}"),
        }
        let mut bytes = vec![0u8; 300];
        let mut r = scripted(&data[HEADER_LEN..], 64, &[]);
        read_rest(&mut r, &mut bytes).unwrap();
        assert!(bytes[HEADER_LEN..].iter().all(|&b| b == 7));
    }
}
