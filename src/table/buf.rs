//! `TableBuf`: the owned bucket region of a filter — zeroed, 64-byte aligned, laid out exactly
//! as in the file.
//!
//! (Transparent huge pages were tried for large regions — a 2 MiB-aligned anonymous map advised
//! `MADV_HUGEPAGE` — and measured against the heap in one process at 32 M keys: no difference
//! within this VM's noise, single or batched, so the heap it is.)

use super::CACHE_LINE;
use crate::error::{Error, Result};

/// One 64-byte cache line: the unit of storage, so the region is cache-line-aligned in memory
/// exactly as in the file.
#[derive(Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(64))]
struct CacheLine([u8; CACHE_LINE]);

/// An owned, zero-initialised, 64-byte-aligned byte buffer holding a bucket region.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct TableBuf(Vec<CacheLine>);

impl TableBuf {
    /// A zeroed buffer of `bytes` bytes (a multiple of 64); `OutOfMemory` instead of an abort.
    pub(crate) fn zeroed(bytes: usize) -> Result<TableBuf> {
        debug_assert_eq!(bytes % CACHE_LINE, 0);
        let lines = bytes / CACHE_LINE;
        let mut v = Vec::new();
        v.try_reserve_exact(lines).map_err(|_| Error::OutOfMemory {
            bytes: bytes as u64,
        })?;
        v.resize(lines, CacheLine([0; CACHE_LINE]));
        Ok(TableBuf(v))
    }

    /// Grows (or shrinks) the buffer to `bytes` bytes (a multiple of 64), new bytes zero;
    /// `OutOfMemory` instead of an abort. Growth reserves ahead geometrically, so a level
    /// growing a bucket at a time copies its bytes a logarithmic number of times.
    pub(crate) fn resize(&mut self, bytes: usize) -> Result<()> {
        debug_assert_eq!(bytes % CACHE_LINE, 0);
        let lines = bytes / CACHE_LINE;
        if lines > self.0.capacity() {
            let extra = (lines - self.0.len()).max(self.0.len() / 2);
            self.0.try_reserve(extra).map_err(|_| Error::OutOfMemory {
                bytes: bytes as u64,
            })?;
        }
        self.0.resize(lines, CacheLine([0; CACHE_LINE]));
        Ok(())
    }

    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        bytemuck::cast_slice(&self.0)
    }

    #[inline]
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(&mut self.0)
    }
}

impl std::fmt::Debug for TableBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TableBuf({} bytes)", self.0.len() * CACHE_LINE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_the_size_not_the_bytes() {
        let t = TableBuf::zeroed(4096).unwrap();
        assert_eq!(format!("{t:?}"), "TableBuf(4096 bytes)");
    }

    #[test]
    fn buffers_are_zeroed_aligned_and_writable_to_the_end() {
        for bytes in [64, 4096, 1 << 20] {
            let mut t = TableBuf::zeroed(bytes).unwrap();
            assert_eq!(t.bytes().len(), bytes);
            assert!(t.bytes().iter().all(|&b| b == 0));
            assert_eq!(t.bytes().as_ptr() as usize % CACHE_LINE, 0);
            t.bytes_mut()[bytes - 1] = 7;
            let mut c = t.clone();
            assert_eq!(c, t);
            c.bytes_mut()[0] = 1;
            assert_ne!(c, t);
        }
    }
}
