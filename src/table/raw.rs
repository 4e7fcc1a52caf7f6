//! `Region`: a bucket region whose length was checked once, read without bounds checks. The
//! only place in the table code with `unsafe`.
//!
//! Every lookup kernel reads through these loads. Each one clamps its offset to the last
//! position a load of its size can start at (one compare and a conditional move, no branch),
//! so a load is in bounds whatever offset it is given: soundness does not depend on the callers'
//! arithmetic. The callers' offsets are in range anyway (a bucket index is below the bucket
//! count, and the region is checked to hold every bucket and its slack when the view is made);
//! `debug_assert!`s check that in tests, and the scalar reference in `kernel`, which reads with
//! checked slices, holds every kernel to the same answers.
#![allow(unsafe_code)]

use super::{FixedBuf, Geometry};

/// A bucket region of at least 64 bytes (every region is a whole number of cache lines, and
/// an empty-looking one still has its first line), holding every bucket of its geometry.
#[derive(Clone, Copy)]
pub(crate) struct Region<'a> {
    bytes: &'a [u8],
}

/// The smallest region: one cache line. Loads of up to 64 bytes fit in it.
const MIN_LEN: usize = 64;

impl<'a> Region<'a> {
    /// The region `bytes` for geometry `geo`, or `None` unless it holds exactly
    /// `geo.table_bytes()` bytes (at least 64, and with the slack every load needs).
    #[inline]
    pub(crate) fn new(bytes: &'a [u8], geo: &Geometry) -> Option<Region<'a>> {
        (bytes.len() == geo.table_bytes() && bytes.len() >= MIN_LEN).then_some(Region { bytes })
    }

    /// The region of an owner's [`FixedBuf`], which the owner made for `geo`
    /// (`geo.table_bytes()` long), without a check: a `FixedBuf` holds at least one cache line
    /// by its type's invariant (its only constructor, [`FixedBuf::zeroed`], allocates one at
    /// least, and its length never changes), which is all the loads below need. Checking the
    /// length here, per key, kept the codec's dispatch from leaving a lookup loop: 10 of a
    /// `CuckooFilter::contains`'s 129 instructions (issue 40).
    #[inline(always)]
    pub(crate) fn of_fixed(buf: &'a FixedBuf, geo: &Geometry) -> Region<'a> {
        let bytes = buf.bytes();
        debug_assert!(bytes.len() >= MIN_LEN);
        debug_assert_eq!(bytes.len(), geo.table_bytes());
        Region { bytes }
    }

    /// The bytes of the region.
    #[inline]
    pub(crate) fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The `N` bytes at `at`, or at the last offset they fit at if `at` is past it.
    #[inline(always)]
    fn array<const N: usize>(&self, at: usize) -> [u8; N] {
        const { assert!(N <= MIN_LEN) };
        let last = self.bytes.len() - N; // no underflow: len ≥ MIN_LEN ≥ N
        debug_assert!(
            at <= last,
            "a load of {N} bytes at {at} in {} bytes",
            self.bytes.len()
        );
        let at = at.min(last);
        // SAFETY: `at + N ≤ len` by the `min` above, so the `N` bytes read lie inside the
        // slice; `[u8; N]` has alignment 1, so any address is aligned for the read, and every
        // bit pattern is a valid `[u8; N]`.
        unsafe {
            self.bytes
                .as_ptr()
                .add(at)
                .cast::<[u8; N]>()
                .read_unaligned()
        }
    }

    /// The little-endian `u64` at byte `at`.
    #[inline(always)]
    pub(crate) fn u64_le(&self, at: usize) -> u64 {
        u64::from_le_bytes(self.array(at))
    }

    /// The little-endian `u32` at byte `at`.
    #[inline(always)]
    pub(crate) fn u32_le(&self, at: usize) -> u32 {
        u32::from_le_bytes(self.array(at))
    }

    /// The little-endian `u16` at byte `at`.
    #[inline(always)]
    pub(crate) fn u16_le(&self, at: usize) -> u16 {
        u16::from_le_bytes(self.array(at))
    }

    /// The 16 bytes at `at`.
    #[inline(always)]
    pub(crate) fn bytes16(&self, at: usize) -> [u8; 16] {
        self.array(at)
    }

    /// The 32 bytes at `at`.
    #[inline(always)]
    pub(crate) fn bytes32(&self, at: usize) -> [u8; 32] {
        self.array(at)
    }

    /// The 57 or more bits from bit `pos` on, in the low bits of the result: one 8-byte load at
    /// the byte holding bit `pos`, shifted by `pos mod 8`.
    #[inline(always)]
    pub(crate) fn window(&self, pos: u64) -> u64 {
        self.u64_le((pos >> 3) as usize) >> (pos & 7)
    }

    /// Asks the CPU to bring the line holding byte `at` into cache (a hint: never faults).
    #[inline(always)]
    pub(crate) fn prefetch(&self, at: usize) {
        crate::prefetch::prefetch(self.bytes, at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{Encoding, TableBuf};

    /// Loads at the first byte, the last offset each size fits at, and misaligned offsets read
    /// exactly the slice's bytes; the region of the smallest table is one cache line.
    #[test]
    fn loads_read_the_bytes_at_every_edge() {
        let geo = Geometry::new(2, 2, 8, Encoding::Plain).unwrap();
        assert_eq!(geo.table_bytes(), 64);
        let mut buf = TableBuf::zeroed(64).unwrap();
        for (i, b) in buf.bytes_mut().iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37).wrapping_add(11);
        }
        let t = buf.bytes();
        let r = Region::new(t, &geo).unwrap();
        for at in 0..=56 {
            assert_eq!(
                r.u64_le(at),
                u64::from_le_bytes(t[at..at + 8].try_into().unwrap())
            );
        }
        for at in 0..=60 {
            assert_eq!(
                r.u32_le(at),
                u32::from_le_bytes(t[at..at + 4].try_into().unwrap())
            );
        }
        for at in 0..=62 {
            assert_eq!(
                r.u16_le(at),
                u16::from_le_bytes(t[at..at + 2].try_into().unwrap())
            );
        }
        for at in 0..=48 {
            assert_eq!(&r.bytes16(at)[..], &t[at..at + 16]);
        }
        for at in 0..=32 {
            assert_eq!(&r.bytes32(at)[..], &t[at..at + 32]);
        }
        // A misaligned region: the same bytes one further, read at every offset.
        let mut big = [0u8; 65];
        big[1..].copy_from_slice(t);
        let r = Region::new(&big[1..], &geo).unwrap();
        for at in 0..=56 {
            assert_eq!(
                r.u64_le(at),
                u64::from_le_bytes(t[at..at + 8].try_into().unwrap())
            );
        }
        assert_eq!(&r.bytes32(32)[..], &t[32..]);
    }

    /// A `FixedBuf`'s region, made without a check: even a buffer asked for no bytes holds a
    /// cache line, and its loads read its bytes at the first and the last offsets.
    #[test]
    fn fixed_regions_hold_a_line_and_read_at_the_edges() {
        let geo = Geometry::new(2, 2, 8, Encoding::Plain).unwrap();
        assert_eq!(FixedBuf::zeroed(0).unwrap().bytes().len(), 64);
        let mut buf = FixedBuf::zeroed(64).unwrap();
        for (i, b) in buf.bytes_mut().iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(29).wrapping_add(3);
        }
        let r = Region::of_fixed(&buf, &geo);
        let t = buf.bytes();
        assert_eq!(r.bytes().len(), 64);
        for at in [0, 1, 7, 55, 56] {
            assert_eq!(
                r.u64_le(at),
                u64::from_le_bytes(t[at..at + 8].try_into().unwrap())
            );
        }
        assert_eq!(r.u16_le(62), u16::from_le_bytes([t[62], t[63]]));
        assert_eq!(&r.bytes32(32)[..], &t[32..]);
        // The smallest filter answers through it for keys in its last bucket as in its first.
        let mut f = crate::CuckooFilter::new(crate::Config::new(1)).unwrap();
        let keys: Vec<[u8; 8]> = (0..4u64).map(u64::to_le_bytes).collect();
        for k in &keys {
            f.insert(k).unwrap();
        }
        assert!(keys.iter().all(|k| f.contains(k)));
        let v = f.as_filter_ref();
        let last = v.num_buckets() as u64 - 1;
        let hits = (0..10_000u64)
            .map(u64::to_le_bytes)
            .filter(|k| {
                let (i1, i2) =
                    v.buckets_seeded(crate::hash::seeded(crate::KeyHash::of(k), v.seed()));
                (i1 == last || i2 == last) && f.contains(k) != v.contains(k)
            })
            .count();
        assert_eq!(hits, 0);
    }

    #[test]
    fn regions_of_the_wrong_length_are_refused() {
        let geo = Geometry::new(1000, 4, 10, Encoding::SemiSorted).unwrap();
        let v = vec![0u8; geo.table_bytes() + 64];
        assert!(Region::new(&v[..geo.table_bytes()], &geo).is_some());
        assert!(Region::new(&v[..geo.table_bytes() - 1], &geo).is_none());
        assert!(Region::new(&v, &geo).is_none());
        assert!(Region::new(&[], &geo).is_none());
    }

    /// Out-of-range offsets (a caller's bug) are clamped, never read outside the slice; debug
    /// builds stop at them instead.
    #[test]
    #[cfg(not(debug_assertions))]
    fn out_of_range_offsets_stay_inside() {
        let geo = Geometry::new(2, 2, 8, Encoding::Plain).unwrap();
        let v: Vec<u8> = (0..64u8).collect();
        let r = Region::new(&v, &geo).unwrap();
        assert_eq!(
            r.u64_le(usize::MAX),
            u64::from_le_bytes(v[56..].try_into().unwrap())
        );
        assert_eq!(&r.bytes32(40)[..], &v[32..]);
    }

    #[test]
    fn window_reads_fields_at_every_offset() {
        let mut v = vec![0u8; 128];
        for (i, b) in v.iter_mut().enumerate() {
            *b = (i as u32 * 101 % 251) as u8;
        }
        let geo128 = Geometry::new(64, 2, 8, Encoding::Plain).unwrap();
        assert_eq!(geo128.table_bytes(), 128);
        let r = Region::new(&v, &geo128).unwrap();
        for width in [1u32, 7, 12, 33, 57] {
            for pos in 0..(121 * 8) as u64 {
                let want = (0..width as u64).fold(0u64, |acc, j| {
                    let p = pos + j;
                    acc | (((v[(p / 8) as usize] >> (p % 8)) & 1) as u64) << j
                });
                let got = r.window(pos) & ((1u64 << width) - 1);
                assert_eq!(got, want, "width {width} pos {pos}");
            }
        }
    }
}
