//! The lookup kernel: compare a fingerprint against every slot of both candidate buckets in one
//! SIMD compare (`wide`), plus the plain scalar probe it must agree with bit for bit.
//!
//! Plain buckets are copied side by side into one vector-sized array (zero-padded: a padding
//! lane is 0 and never equals a fingerprint, which is never 0); lanes hold the stored
//! little-endian bytes as they are and the needle is converted the same way (`to_le`), so the
//! compare is right on either endianness. Packed and semi-sorted buckets are first decoded
//! into `2b` 32-bit lanes. Either way one lane-wise equality against the splatted fingerprint
//! gives a bit mask: lanes `0..b` are the first bucket, lanes `b..2b` the second.

use super::{Geometry, Kind, bits};
use bits::Word;
use wide::{u8x16, u16x8, u16x16, u32x4, u32x8, u32x16};

macro_rules! eq_mask {
    ($name:ident, $vec:ty, $lane:ty, $bytes:expr) => {
        #[inline(always)]
        fn $name(buf: [u8; $bytes], fp: u32) -> u32 {
            let v: $vec = bytemuck::cast(buf);
            v.simd_eq(<$vec>::splat((fp as $lane).to_le())).to_bitmask()
        }
    };
}

eq_mask!(mask_u8x16, u8x16, u8, 16);
eq_mask!(mask_u16x8, u16x8, u16, 16);
eq_mask!(mask_u16x16, u16x16, u16, 32);
eq_mask!(mask_u32x4, u32x4, u32, 16);
eq_mask!(mask_u32x8, u32x8, u32, 32);
eq_mask!(mask_u32x16, u32x16, u32, 64);

/// Copies bucket `i1` and bucket `i2` (each `BB` bytes) into the front of a zeroed `[u8; V]`.
#[inline(always)]
fn gather<const BB: usize, const V: usize>(t: &[u8], i1: usize, i2: usize) -> [u8; V] {
    let mut buf = [0u8; V];
    buf[..BB].copy_from_slice(&t[i1 * BB..][..BB]);
    buf[BB..2 * BB].copy_from_slice(&t[i2 * BB..][..BB]);
    buf
}

/// Decodes `B` packed slots of bucket `i` into `lanes[at..at + B]`.
#[inline(always)]
fn packed_lanes<const B: usize>(g: &Geometry, t: &[u8], i: u64, lanes: &mut [u32], at: usize) {
    let f = g.fp_bits();
    let pos = i * g.bucket_bits();
    let width = g.bucket_bits() as u32;
    if width <= bits::NARROW_BITS {
        slots_of::<B>(bits::read_narrow(t, pos, width), f, &mut lanes[at..at + B]);
    } else if width <= bits::WIDE_BITS {
        slots_of::<B>(bits::read_wide(t, pos, width), f, &mut lanes[at..at + B]);
    } else {
        for s in 0..B {
            lanes[at + s] = bits::read(t, pos + (s as u64) * f as u64, f) as u32;
        }
    }
}

/// The `B` slots of a packed bucket read into one word.
#[inline(always)]
fn slots_of<const B: usize>(w: impl Word, f: u32, out: &mut [u32]) {
    for (s, o) in out.iter_mut().enumerate().take(B) {
        *o = w.field(s as u32 * f, f);
    }
}

/// Both packed buckets as `2B` lanes, compared in one vector.
#[inline(always)]
fn packed_mask<const B: usize>(g: &Geometry, t: &[u8], i1: u64, i2: u64, fp: u32) -> u32 {
    let mut lanes = [0u32; 16];
    packed_lanes::<B>(g, t, i1, &mut lanes, 0);
    packed_lanes::<B>(g, t, i2, &mut lanes, B);
    lanes_mask::<B>(lanes, fp)
}

/// `lanes[..2B]` compared with `fp` in one `u32x4`, `u32x8` or `u32x16`.
#[inline(always)]
fn lanes_mask<const B: usize>(lanes: [u32; 16], fp: u32) -> u32 {
    match B {
        2 => u32x4::new([lanes[0], lanes[1], lanes[2], lanes[3]])
            .simd_eq(u32x4::splat(fp))
            .to_bitmask(),
        4 => u32x8::new(lanes[..8].try_into().unwrap_or_default())
            .simd_eq(u32x8::splat(fp))
            .to_bitmask(),
        _ => u32x16::new(lanes).simd_eq(u32x16::splat(fp)).to_bitmask(),
    }
}

/// The match mask of `fp` over buckets `i1` (bits `0..b`) and `i2` (bits `b..2b`).
#[inline]
pub(crate) fn match_mask(g: &Geometry, t: &[u8], i1: u64, i2: u64, fp: u32) -> u32 {
    let (j1, j2) = (i1 as usize, i2 as usize);
    match g.kind() {
        Kind::P8x2 => mask_u8x16(gather::<2, 16>(t, j1, j2), fp),
        Kind::P8x4 => mask_u8x16(gather::<4, 16>(t, j1, j2), fp),
        Kind::P8x8 => mask_u8x16(gather::<8, 16>(t, j1, j2), fp),
        Kind::P16x2 => mask_u16x8(gather::<4, 16>(t, j1, j2), fp),
        Kind::P16x4 => mask_u16x8(gather::<8, 16>(t, j1, j2), fp),
        Kind::P16x8 => mask_u16x16(gather::<16, 32>(t, j1, j2), fp),
        Kind::P32x2 => mask_u32x4(gather::<8, 16>(t, j1, j2), fp),
        Kind::P32x4 => mask_u32x8(gather::<16, 32>(t, j1, j2), fp),
        Kind::P32x8 => mask_u32x16(gather::<32, 64>(t, j1, j2), fp),
        Kind::Packed2 => packed_mask::<2>(g, t, i1, i2, fp),
        Kind::Packed4 => packed_mask::<4>(g, t, i1, i2, fp),
        Kind::Packed8 => packed_mask::<8>(g, t, i1, i2, fp),
        Kind::Semi4 => {
            crate::prefetch::prefetch(t, g.bucket_offset(i2));
            let (a, b) = (g.semi_bucket(t, i1), g.semi_bucket(t, i2));
            let lanes = [
                a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3], 0, 0, 0, 0, 0, 0, 0, 0,
            ];
            lanes_mask::<4>(lanes, fp)
        }
    }
}

/// Occupied slots of bucket `i`.
#[inline]
pub(crate) fn occupied(g: &Geometry, t: &[u8], i: u64) -> u32 {
    g.bucket_size() - (match_mask(g, t, i, i, 0) & ((1 << g.bucket_size()) - 1)).count_ones()
}

/// Whether `fp` is in bucket `i1` or bucket `i2`: one SIMD compare.
#[inline]
pub(crate) fn contains(g: &Geometry, t: &[u8], i1: u64, i2: u64, fp: u32) -> bool {
    match_mask(g, t, i1, i2, fp) != 0
}

/// Copies of `fp` in buckets `i1` and `i2`, counting a bucket once when `i1 == i2`.
#[inline]
pub(crate) fn count(g: &Geometry, t: &[u8], i1: u64, i2: u64, fp: u32) -> u32 {
    let b = g.bucket_size();
    let m = match_mask(g, t, i1, i2, fp);
    let low = (1u32 << b) - 1;
    let second = if i1 == i2 { 0 } else { (m >> b) & low };
    (m & low).count_ones() + second.count_ones()
}

/// The reference probe: slot by slot, no SIMD. Tests hold the kernel to it.
#[cfg(test)]
pub(crate) fn contains_scalar(g: &Geometry, t: &[u8], i1: u64, i2: u64, fp: u32) -> bool {
    (0..g.bucket_size()).any(|s| g.get(t, i1, s) == fp || g.get(t, i2, s) == fp)
}

/// The reference count: slot by slot, no SIMD.
#[cfg(test)]
pub(crate) fn count_scalar(g: &Geometry, t: &[u8], i1: u64, i2: u64, fp: u32) -> u32 {
    let in_bucket = |i| {
        (0..g.bucket_size())
            .filter(|&s| g.get(t, i, s) == fp)
            .count() as u32
    };
    in_bucket(i1) + if i1 == i2 { 0 } else { in_bucket(i2) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::SplitMix64;
    use crate::table::TableBuf;
    use crate::table::tests::all_layouts;

    /// Random tables with few distinct values, so that matches, repeats and empty slots are all
    /// common; every bucket pair, including a bucket with itself and the last bucket.
    #[test]
    fn simd_agrees_with_scalar_on_random_tables() {
        let mut rng = SplitMix64::new(42);
        for (e, b, f) in all_layouts() {
            {
                for m in [2u64, 4, 18, 64] {
                    let g = Geometry::new(m, b, f, e).unwrap();
                    let mut buf = TableBuf::zeroed(g.table_bytes()).unwrap();
                    let max = if f == 32 { u32::MAX } else { (1 << f) - 1 };
                    // A palette of values: small ones, the maximum, and ones whose bytes differ.
                    let palette = [1, 2, 3, max, max - 1, 0x0101 & max, (0x8001 & max) | 1];
                    for i in 0..m {
                        for s in 0..b {
                            let r = rng.below(10) as usize;
                            let v = if r >= palette.len() { 0 } else { palette[r] };
                            g.set(buf.bytes_mut(), i, s, v);
                        }
                    }
                    let t = buf.bytes();
                    for i1 in 0..m {
                        for i2 in 0..m {
                            for &fp in &palette {
                                assert_eq!(
                                    contains(&g, t, i1, i2, fp),
                                    contains_scalar(&g, t, i1, i2, fp),
                                    "{e:?} b={b} f={f} m={m} i1={i1} i2={i2} fp={fp}"
                                );
                                assert_eq!(
                                    count(&g, t, i1, i2, fp),
                                    count_scalar(&g, t, i1, i2, fp),
                                    "{e:?} b={b} f={f} m={m} i1={i1} i2={i2} fp={fp}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn every_slot_position_is_seen_in_both_buckets() {
        for (e, b, f) in all_layouts() {
            {
                let g = Geometry::new(6, b, f, e).unwrap();
                for (i1, i2) in [(0, 4), (4, 0), (2, 2)] {
                    for target in [i1, i2] {
                        for s in 0..b {
                            let mut buf = TableBuf::zeroed(g.table_bytes()).unwrap();
                            let (v, other) = (7, 8);
                            g.set(buf.bytes_mut(), target, s, v);
                            let t = buf.bytes();
                            assert!(contains(&g, t, i1, i2, v), "{e:?} b={b} f={f} slot {s}");
                            assert_eq!(contains(&g, t, i1, i2, other), other == v);
                            assert_eq!(count(&g, t, i1, i2, v), 1);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn empty_table_contains_nothing() {
        for (e, b, f) in all_layouts() {
            {
                let g = Geometry::new(4, b, f, e).unwrap();
                let buf = TableBuf::zeroed(g.table_bytes()).unwrap();
                for fp in [1, 2, 255] {
                    assert!(!contains(&g, buf.bytes(), 0, 2, fp));
                    assert_eq!(count(&g, buf.bytes(), 0, 2, fp), 0);
                }
            }
        }
    }
}
