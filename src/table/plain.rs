//! Plain buckets: `B` slots of 8, 16 or 32 bits, each fingerprint in its own little-endian
//! slot (FORMAT.md §3.1). A bucket is `B·w` bytes (2 to 32), a power of two, so with a
//! 64-byte-aligned region no bucket straddles a cache line. A lookup compares the fingerprint
//! with both buckets in one vector compare: for buckets of up to 8 bytes the two are loaded as
//! integers and placed side by side in one 16-byte vector (the lanes past them are zero, and a
//! fingerprint is never zero); larger buckets are compared 16 or 32 bytes at a time.

use super::codec::{Codec, Slots};
use super::raw::Region;
use std::marker::PhantomData;
use wide::{u8x16, u16x8, u16x16, u32x4, u32x8};

/// A slot type: `u8`, `u16` or `u32`.
pub(crate) trait Slot: Copy + std::fmt::Debug + PartialEq + 'static {
    /// Bytes per slot.
    const BYTES: usize;
    /// One bit per lane of `chunk` (16 little-endian bytes) equal to `fp`.
    fn eq16(chunk: [u8; 16], fp: u32) -> u32;
    /// One bit per lane of `chunk` (32 little-endian bytes) equal to `fp`.
    fn eq32(chunk: [u8; 32], fp: u32) -> u32;
    /// Whether any lane of `a` or of `b` (16 little-endian bytes each) equals `fp`: the two
    /// compares or-ed, then one mask test.
    fn any16(a: [u8; 16], b: [u8; 16], fp: u32) -> bool;
    /// [`any16`](Slot::any16) for 32-byte chunks.
    fn any32(a: [u8; 32], b: [u8; 32], fp: u32) -> bool;
}

// Lanes hold the stored little-endian bytes as they are, and the needle is converted the same
// way (`to_le`), so the compare is right on either endianness.
macro_rules! slot {
    ($t:ty, $v16:ty, $v32:ty) => {
        impl Slot for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn eq16(chunk: [u8; 16], fp: u32) -> u32 {
                let v: $v16 = bytemuck::cast(chunk);
                v.simd_eq(<$v16>::splat((fp as $t).to_le())).to_bitmask() as u32
            }
            #[inline(always)]
            fn eq32(chunk: [u8; 32], fp: u32) -> u32 {
                let v: $v32 = bytemuck::cast(chunk);
                v.simd_eq(<$v32>::splat((fp as $t).to_le())).to_bitmask() as u32
            }
            #[inline(always)]
            fn any16(a: [u8; 16], b: [u8; 16], fp: u32) -> bool {
                let needle = <$v16>::splat((fp as $t).to_le());
                let (a, b): ($v16, $v16) = (bytemuck::cast(a), bytemuck::cast(b));
                (a.simd_eq(needle) | b.simd_eq(needle)).any()
            }
            #[inline(always)]
            fn any32(a: [u8; 32], b: [u8; 32], fp: u32) -> bool {
                let needle = <$v32>::splat((fp as $t).to_le());
                let (a, b): ($v32, $v32) = (bytemuck::cast(a), bytemuck::cast(b));
                (a.simd_eq(needle) | b.simd_eq(needle)).any()
            }
        }
    };
}

slot!(u8, u8x16, wide::u8x32);
slot!(u16, u16x8, u16x16);
slot!(u32, u32x4, u32x8);

/// Buckets of `B` slots of type `T`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plain<T, const B: usize>(PhantomData<T>);

impl<T, const B: usize> Default for Plain<T, B> {
    fn default() -> Self {
        Plain(PhantomData)
    }
}

impl<T: Slot, const B: usize> Plain<T, B> {
    /// Bytes per bucket.
    const BUCKET: usize = B * T::BYTES;

    /// Bucket `i` (of at most 8 bytes) as an integer of its little-endian bytes.
    #[inline(always)]
    fn small(r: Region<'_>, i: u64) -> u64 {
        let at = i as usize * Self::BUCKET;
        match Self::BUCKET {
            2 => r.u16_le(at) as u64,
            4 => r.u32_le(at) as u64,
            _ => r.u64_le(at),
        }
    }

    /// Lane mask of `fp` in bucket `i` alone.
    #[inline(always)]
    fn mask(r: Region<'_>, i: u64, fp: u32) -> u32 {
        let at = i as usize * Self::BUCKET;
        match Self::BUCKET {
            ..=8 => T::eq16(pair(Self::small(r, i), 0, 0), fp),
            16 => T::eq16(r.bytes16(at), fp),
            _ => T::eq32(r.bytes32(at), fp),
        }
    }
}

/// Two buckets of `bytes ≤ 8` bytes side by side in 16 bytes, the rest zero.
#[inline(always)]
fn pair(a: u64, b: u64, bytes: usize) -> [u8; 16] {
    let (lo, hi) = if bytes == 8 {
        (a, b)
    } else {
        // bytes ≤ 4: both fit in the low word (a shift of 16 or 32).
        (a | b << (8 * bytes), 0)
    };
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&lo.to_le_bytes());
    out[8..].copy_from_slice(&hi.to_le_bytes());
    out
}

impl<T: Slot, const B: usize> Codec for Plain<T, B> {
    const BATCH_AHEAD: usize = 32;

    #[inline(always)]
    fn slots(&self) -> usize {
        B
    }

    #[inline(always)]
    fn contains(&self, r: Region<'_>, i1: u64, i2: u64, fp: u32) -> bool {
        let b = Self::BUCKET;
        match b {
            ..=8 => T::eq16(pair(Self::small(r, i1), Self::small(r, i2), b), fp) != 0,
            16 => T::any16(r.bytes16(i1 as usize * 16), r.bytes16(i2 as usize * 16), fp),
            _ => T::any32(r.bytes32(i1 as usize * 32), r.bytes32(i2 as usize * 32), fp),
        }
    }

    #[inline(always)]
    fn count_in(&self, r: Region<'_>, i: u64, fp: u32) -> u32 {
        // Only the bucket's own lanes: with fp = 0 the zero lanes past it must not count.
        let lanes = if B == 32 { u32::MAX } else { (1u32 << B) - 1 };
        (Self::mask(r, i, fp) & lanes).count_ones()
    }

    #[inline(always)]
    fn bucket_byte(&self, i: u64) -> usize {
        i as usize * Self::BUCKET
    }

    #[inline(always)]
    fn prefetch_at(&self, i: u64) -> [usize; 2] {
        // A plain bucket never crosses a line (with the region aligned to one).
        [self.bucket_byte(i); 2]
    }

    #[inline(always)]
    fn prefetch(&self, r: Region<'_>, i: u64) {
        r.prefetch(self.prefetch_at(i)[0]);
    }

    fn loads(&self, i: u64, out: &mut Vec<(usize, usize)>) {
        out.push((i as usize * Self::BUCKET, Self::BUCKET));
    }

    fn read(&self, t: &[u8], i: u64) -> Slots {
        let mut s = [0u32; 8];
        let base = i as usize * Self::BUCKET;
        for (k, v) in s.iter_mut().enumerate().take(B) {
            let at = base + k * T::BYTES;
            let mut le = [0u8; 4];
            le[..T::BYTES].copy_from_slice(&t[at..at + T::BYTES]);
            *v = u32::from_le_bytes(le);
        }
        s
    }

    fn store(&self, t: &mut [u8], i: u64, changed: usize, slots: &Slots) {
        let at = i as usize * Self::BUCKET + changed * T::BYTES;
        t[at..at + T::BYTES].copy_from_slice(&slots[changed].to_le_bytes()[..T::BYTES]);
    }

    fn scan(&self, r: Region<'_>, num_buckets: u64) -> Result<u64, String> {
        // Every slot of the region, padding included (zero: it counts nothing), 64 bytes at a
        // time; the padding's slots are then taken off the empty count.
        let bytes = r.bytes();
        let mut empty = 0u64;
        for line in bytes.chunks_exact(64) {
            for half in line.chunks_exact(32) {
                let mut chunk = [0u8; 32];
                chunk.copy_from_slice(half);
                empty += T::eq32(chunk, 0).count_ones() as u64;
            }
        }
        let all = (bytes.len() / T::BYTES) as u64;
        let slots = num_buckets * B as u64;
        Ok(slots - (empty - (all - slots)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_sit_side_by_side() {
        let p = pair(0x0201, 0x0403, 2);
        assert_eq!(&p[..4], &[1, 2, 3, 4]);
        assert!(p[4..].iter().all(|&b| b == 0));
        let p = pair(0x0807_0605_0403_0201, 0x100F_0E0D_0C0B_0A09, 8);
        assert_eq!(p, std::array::from_fn(|k| k as u8 + 1));
        let p = pair(0x0403_0201, 0x0807_0605, 4);
        assert_eq!(&p[..8], &[1, 2, 3, 4, 5, 6, 7, 8]);
    }
}
