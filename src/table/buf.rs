//! `TableBuf`: the owned bucket region of a filter — zeroed, 64-byte aligned, laid out exactly
//! as in the file.
//!
//! A region that grows (a stretch level, a bucket at a time) moves, once it passes
//! [`MAP_FROM`], into an anonymous memory map on Linux, which later growth extends with
//! `mremap`: the kernel moves the pages instead of copying the bytes, so no insert waits for a
//! copy of the whole table (on the heap, each of the ~20 geometric steps of a level grown to
//! 70 MB copied it, and the longest took 92 ms). Elsewhere it stays on the heap.
//!
//! (Transparent huge pages were tried for large regions — a 2 MiB-aligned anonymous map advised
//! `MADV_HUGEPAGE` — and measured against the heap in one process at 32 M keys: no difference
//! within this VM's noise, single or batched, so no advice is given.)
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicBool, Ordering};

use super::CACHE_LINE;
use crate::error::{Error, Result};

/// One 64-byte cache line: the unit of storage, so the region is cache-line-aligned in memory
/// exactly as in the file.
#[derive(Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(64))]
struct CacheLine([u8; CACHE_LINE]);

/// Regions that grow past this many bytes move to an anonymous map (Linux).
pub(crate) const MAP_FROM: usize = 1 << 20;

/// An owned, zero-initialised, 64-byte-aligned byte buffer holding a bucket region.
pub(crate) struct TableBuf(Store);

enum Store {
    Heap(Vec<CacheLine>),
    /// The region is `map[..len]`; every byte of `map[len..]` is zero (new pages of an
    /// anonymous map are, and a shrink clears what it gives up), so growing within the map
    /// only moves `len`. A map starts on a page boundary, so the region is 64-byte aligned.
    #[cfg(target_os = "linux")]
    Map {
        map: memmap2::MmapMut,
        len: usize,
    },
}

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
        Ok(TableBuf(Store::Heap(v)))
    }

    /// Shrinks the buffer to `bytes` bytes (a multiple of 64, at most its length): the bytes
    /// past it are dropped (zeroed, on a map, for a later growth). It cannot fail: nothing is
    /// allocated.
    pub(crate) fn shrink(&mut self, bytes: usize) {
        debug_assert_eq!(bytes % CACHE_LINE, 0);
        match &mut self.0 {
            Store::Heap(v) => v.truncate(bytes / CACHE_LINE),
            #[cfg(target_os = "linux")]
            Store::Map { map, len } => {
                if bytes < *len {
                    map[bytes..*len].fill(0);
                    *len = bytes;
                }
            }
        }
    }

    /// [`resize`](Self::resize), moving into a map past [`MAP_FROM`] only if `maps` (on
    /// Linux): new bytes zero, growth ahead geometrically, `OutOfMemory` instead of an abort.
    fn resize_in(&mut self, bytes: usize, maps: bool) -> Result<()> {
        debug_assert_eq!(bytes % CACHE_LINE, 0);
        if bytes <= self.bytes().len() {
            self.shrink(bytes);
            return Ok(());
        }
        let oom = || Error::OutOfMemory {
            bytes: bytes as u64,
        };
        match &mut self.0 {
            Store::Heap(v) => {
                let lines = bytes / CACHE_LINE;
                if lines > v.capacity() {
                    let ahead = lines.max(v.len() + v.len() / 2);
                    #[cfg(target_os = "linux")]
                    if maps && ahead * CACHE_LINE >= MAP_FROM {
                        let mut map =
                            memmap2::MmapMut::map_anon(ahead * CACHE_LINE).map_err(|_| oom())?;
                        let old: &[u8] = bytemuck::cast_slice(v);
                        map[..old.len()].copy_from_slice(old);
                        self.0 = Store::Map { map, len: bytes };
                        return Ok(());
                    }
                    v.try_reserve(ahead - v.len()).map_err(|_| oom())?;
                }
                v.resize(lines, CacheLine([0; CACHE_LINE]));
            }
            #[cfg(target_os = "linux")]
            Store::Map { map, len } => {
                if bytes > map.len() {
                    let ahead = bytes.max(map.len() + map.len() / 2);
                    // SAFETY: the map is anonymous and private, so no file lies behind it
                    // (memmap2's reason for `unsafe`): every byte of the larger map is backed,
                    // the new ones zero. `&mut self` holds the only references to the old
                    // address, and none outlives this call.
                    unsafe { map.remap(ahead, memmap2::RemapOptions::new().may_move(true)) }
                        .map_err(|_| oom())?;
                }
                *len = bytes;
            }
        }
        Ok(())
    }

    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        match &self.0 {
            Store::Heap(v) => bytemuck::cast_slice(v),
            #[cfg(target_os = "linux")]
            Store::Map { map, len } => &map[..*len],
        }
    }

    #[inline]
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        match &mut self.0 {
            Store::Heap(v) => bytemuck::cast_slice_mut(v),
            #[cfg(target_os = "linux")]
            Store::Map { map, len } => &mut map[..*len],
        }
    }

    /// Grows (or shrinks) the buffer to `bytes` bytes (a multiple of 64), new bytes zero;
    /// `OutOfMemory` instead of an abort. Growth reserves ahead geometrically, so a level
    /// growing a bucket at a time reallocates a logarithmic number of times; past
    /// [`MAP_FROM`] (on Linux, unless [`set_anonymous_maps`] turned maps off) a reallocation
    /// moves pages, not bytes.
    pub(crate) fn resize(&mut self, bytes: usize) -> Result<()> {
        self.resize_in(bytes, MAPS.load(Ordering::Relaxed))
    }
}

/// Whether growing regions move into anonymous maps ([`set_anonymous_maps`]).
static MAPS: AtomicBool = AtomicBool::new(true);

/// Whether a growing table moves into an anonymous memory map once it passes 1 MiB (on Linux;
/// the default) or stays on the heap. See [`crate::set_anonymous_maps`].
pub fn set_anonymous_maps(enabled: bool) {
    MAPS.store(enabled, Ordering::Relaxed);
}

/// The owned bucket region of a filter whose table never grows (a [`CuckooFilter`]'s): on the
/// heap, zeroed and 64-byte aligned like [`TableBuf`], and read without a branch on where it
/// lives — a lookup's loop then keeps the region's bounds in registers (through a
/// `TableBuf`, the branch for every key cost a lookup of a `CuckooFilter` about 8 % of its
/// instructions: issue 40).
///
/// Never empty: it holds at least one cache line (what [`Region::of_fixed`] relies on to read
/// it without a check per lookup), and its length never changes after [`FixedBuf::zeroed`].
///
/// [`CuckooFilter`]: crate::CuckooFilter
/// [`Region::of_fixed`]: super::raw::Region::of_fixed
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct FixedBuf(Vec<CacheLine>);

impl FixedBuf {
    /// A zeroed buffer of `bytes` bytes (a multiple of 64, at least 64: a smaller request gets
    /// one cache line); `OutOfMemory` instead of an abort.
    pub(crate) fn zeroed(bytes: usize) -> Result<FixedBuf> {
        debug_assert_eq!(bytes % CACHE_LINE, 0);
        // At least one line, whatever was asked: the type's invariant.
        let lines = (bytes / CACHE_LINE).max(1);
        let mut v = Vec::new();
        v.try_reserve_exact(lines).map_err(|_| Error::OutOfMemory {
            bytes: bytes as u64,
        })?;
        v.resize(lines, CacheLine([0; CACHE_LINE]));
        Ok(FixedBuf(v))
    }

    #[inline(always)]
    pub(crate) fn bytes(&self) -> &[u8] {
        bytemuck::cast_slice(&self.0)
    }

    #[inline]
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(&mut self.0)
    }
}

impl std::fmt::Debug for FixedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FixedBuf({} bytes)", self.bytes().len())
    }
}

/// A copy on the heap, whatever the original's storage (a clone does not grow, and a copy
/// costs the same either way).
impl Clone for TableBuf {
    fn clone(&self) -> TableBuf {
        match &self.0 {
            Store::Heap(v) => TableBuf(Store::Heap(v.clone())),
            #[cfg(target_os = "linux")]
            Store::Map { .. } => {
                let bytes = self.bytes();
                let mut v = vec![CacheLine([0; CACHE_LINE]); bytes.len() / CACHE_LINE];
                bytemuck::cast_slice_mut(&mut v).copy_from_slice(bytes);
                TableBuf(Store::Heap(v))
            }
        }
    }
}

impl PartialEq for TableBuf {
    fn eq(&self, other: &TableBuf) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for TableBuf {}

impl std::fmt::Debug for TableBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TableBuf({} bytes)", self.bytes().len())
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

    /// With maps off ([`set_anonymous_maps`]), a region grown past [`MAP_FROM`] stays on the
    /// heap, its bytes kept and its new bytes zero, across several reallocations.
    #[test]
    fn with_maps_off_a_growing_region_stays_on_the_heap() {
        let mut t = TableBuf::zeroed(64).unwrap();
        t.bytes_mut()[0] = 7;
        let mut at = 64;
        while at < 3 * MAP_FROM {
            at += 64 * 97;
            t.resize_in(at, false).unwrap();
            let b = t.bytes_mut();
            assert_eq!(b.len(), at);
            assert_eq!(b.as_ptr() as usize % CACHE_LINE, 0);
            assert_eq!(b[at - 1], 0);
            b[at - 1] = 1;
        }
        assert!(matches!(t.0, Store::Heap(_)));
        assert_eq!(t.bytes()[0], 7);
        assert_eq!(
            t.bytes().iter().filter(|&&x| x == 1).count(),
            (at - 64) / (64 * 97)
        );
    }

    /// A region grown a line at a time from 64 bytes to past [`MAP_FROM`] (into the map on
    /// Linux, and through several remaps): every byte written stays, every new byte is zero,
    /// the region stays aligned; a shrink forgets its tail (the map keeps those pages, so it
    /// must clear them), and clones are equal and independent.
    #[test]
    fn growing_past_the_map_threshold_keeps_bytes_and_zeroes_new_ones() {
        let pattern = |i: usize| (i % 251) as u8 + 1;
        let mut t = TableBuf::zeroed(64).unwrap();
        let top = 3 * MAP_FROM + 64 * 7;
        let mut at = 0;
        let mut addresses = std::collections::HashSet::new();
        while at < top {
            let next = at + 64;
            t.resize(next).unwrap();
            let b = t.bytes_mut();
            assert_eq!(b.len(), next);
            assert_eq!(b.as_ptr() as usize % CACHE_LINE, 0);
            assert!(
                b[at..].iter().all(|&x| x == 0),
                "new bytes at {at} not zero"
            );
            for (i, x) in b[at..].iter_mut().enumerate() {
                *x = pattern(at + i);
            }
            addresses.insert(b.as_ptr() as usize);
            at = next;
        }
        assert!(t.bytes().iter().enumerate().all(|(i, &x)| x == pattern(i)));
        // Reallocated a logarithmic number of times, not once per line.
        assert!(addresses.len() < 40, "{} reallocations", addresses.len());
        #[cfg(target_os = "linux")]
        assert!(matches!(t.0, Store::Map { .. }));

        // Shrink below the threshold and across a page, then grow again: zeros, not the old
        // bytes.
        let keep = MAP_FROM / 2 + 64 * 3;
        t.resize(keep).unwrap();
        assert_eq!(t.bytes().len(), keep);
        assert!(t.bytes().iter().enumerate().all(|(i, &x)| x == pattern(i)));
        t.resize(top).unwrap();
        assert!(t.bytes()[keep..].iter().all(|&x| x == 0));
        assert!(
            t.bytes()[..keep]
                .iter()
                .enumerate()
                .all(|(i, &x)| x == pattern(i))
        );

        // The last byte is writable; a clone is equal, then independent.
        t.bytes_mut()[top - 1] = 9;
        let mut c = t.clone();
        assert_eq!(c, t);
        assert_eq!(c.bytes().as_ptr() as usize % CACHE_LINE, 0);
        c.bytes_mut()[top - 1] = 8;
        assert_ne!(c, t);
        assert_eq!(t.bytes()[top - 1], 9);
        // A clone grows as the original does.
        c.resize(top + 64).unwrap();
        assert_eq!(c.bytes()[top..], [0; 64]);
    }

    /// Shrinking to nothing and growing back, in the map and on the heap, to the size it had
    /// and past it; and a region that starts empty.
    #[test]
    fn empty_regions_grow_back_to_zeros() {
        for first in [64, 2 * MAP_FROM] {
            let mut t = TableBuf::zeroed(64).unwrap();
            t.resize(first).unwrap();
            t.bytes_mut().fill(0xAB);
            t.resize(0).unwrap();
            assert!(t.bytes().is_empty());
            t.resize(first).unwrap();
            assert!(t.bytes().iter().all(|&x| x == 0), "first {first}");
            t.resize(0).unwrap();
            t.resize(4 * first).unwrap();
            assert_eq!(t.bytes().len(), 4 * first);
            assert!(t.bytes().iter().all(|&x| x == 0), "first {first}, grown");
        }
        for bytes in [64, 4096, 2 * MAP_FROM] {
            let mut t = TableBuf::zeroed(0).unwrap();
            assert!(t.bytes().is_empty());
            t.resize(bytes).unwrap();
            assert_eq!(t.bytes().len(), bytes);
            assert!(t.bytes().iter().all(|&x| x == 0), "from empty to {bytes}");
            t.bytes_mut()[bytes - 1] = 1;
        }
    }

    /// Small regions stay on the heap: a map costs a page at least and one of the process's
    /// limited mappings (`vm.max_map_count`, 65 530 by default), and a process may hold many
    /// small tables (every level of every filter). A region grown a line at a time to 2/3 of
    /// [`MAP_FROM`] (where the half again of its length that a reallocation reserves ahead
    /// stays below it) has not moved into a map; nor has a region resized to the size it has,
    /// which does not move or copy it, whatever its size.
    #[test]
    fn small_regions_and_unchanged_sizes_stay_on_the_heap() {
        let mut t = TableBuf::zeroed(64).unwrap();
        while t.bytes().len() < 2 * MAP_FROM / 3 - 64 {
            let next = t.bytes().len() + 64;
            t.resize(next).unwrap();
            assert!(matches!(t.0, Store::Heap(_)), "mapped at {next} bytes");
        }
        for bytes in [64, 4096, MAP_FROM, 2 * MAP_FROM] {
            let mut t = TableBuf::zeroed(bytes).unwrap();
            t.bytes_mut()[bytes - 1] = 5;
            let at = t.bytes().as_ptr();
            t.resize(bytes).unwrap();
            assert!(matches!(t.0, Store::Heap(_)), "{bytes} bytes mapped");
            assert_eq!(t.bytes().as_ptr(), at, "{bytes} bytes moved");
            assert_eq!(t.bytes()[bytes - 1], 5);
        }
    }

    /// A growth the machine cannot hold is `OutOfMemory`, not an abort: from the heap (small,
    /// and at two thirds of `MAP_FROM`, where a growth reserves past it) and from a map. The
    /// region keeps its length and its bytes, and grows as asked afterwards.
    #[test]
    fn a_growth_too_large_is_out_of_memory_and_changes_nothing() {
        let huge = 1usize << 52;
        for start in [64, 4096, (2 * MAP_FROM / 3) & !63, 2 * MAP_FROM] {
            let mut t = TableBuf::zeroed(64).unwrap();
            t.resize(start).unwrap();
            t.bytes_mut()[start - 1] = 9;
            match t.resize(huge) {
                Err(Error::OutOfMemory { bytes }) => assert_eq!(bytes, huge as u64),
                other => panic!("from {start} bytes: {other:?}"),
            }
            assert_eq!(t.bytes().len(), start);
            assert_eq!(t.bytes()[start - 1], 9);
            t.resize(start + 64).unwrap();
            assert_eq!(t.bytes()[start - 1], 9);
            assert!(t.bytes()[start..].iter().all(|&x| x == 0));
        }
    }

    /// A heap region shrunk and grown back to no more than it held stays where it is, on the
    /// heap, past the map threshold too: the lines it holds are not copied, and a growth
    /// reserves ahead only when it needs more than it holds.
    #[test]
    fn growing_back_within_what_it_holds_moves_nothing() {
        for bytes in [64 * 1000, 2 * MAP_FROM] {
            let mut t = TableBuf::zeroed(bytes).unwrap();
            t.bytes_mut()[0] = 3;
            let at = t.bytes().as_ptr();
            for back in [bytes * 9 / 10 / 64 * 64, bytes] {
                t.resize(bytes / 2).unwrap();
                t.resize(back).unwrap();
                assert!(matches!(t.0, Store::Heap(_)), "{bytes} bytes mapped");
                assert_eq!(t.bytes().as_ptr(), at, "{bytes} bytes moved");
                assert_eq!(t.bytes()[0], 3);
                assert!(t.bytes()[bytes / 2..].iter().all(|&x| x == 0));
            }
        }
    }
}
