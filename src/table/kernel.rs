//! The lookup kernel: a key's two buckets probed by its table's codec ([`codec`](super::codec):
//! SIMD compares for plain buckets, SWAR for bit-packed and semi-sorted ones), plus the plain
//! scalar probe every codec must agree with, slot by slot, in the tests.

use super::raw::Region;
use super::{Codec, Geometry, with_codec};

/// Whether `fp` is in bucket `i1` or bucket `i2`.
#[inline(always)]
pub(crate) fn contains(g: &Geometry, r: Region<'_>, i1: u64, i2: u64, fp: u32) -> bool {
    debug_assert!(
        fp <= u32::MAX >> (32 - g.fp_bits()),
        "{fp} is wider than the fingerprints"
    );
    with_codec!(g.layout(), c => c.contains(r, i1, i2, fp))
}

/// Copies of `fp` in buckets `i1` and `i2`, counting a bucket once when `i1 == i2`.
#[inline]
pub(crate) fn count(g: &Geometry, r: Region<'_>, i1: u64, i2: u64, fp: u32) -> u32 {
    debug_assert!(
        fp <= u32::MAX >> (32 - g.fp_bits()),
        "{fp} is wider than the fingerprints"
    );
    with_codec!(g.layout(), c => count_with(&c, r, i1, i2, fp))
}

/// [`count`] for a known codec.
#[inline(always)]
pub(crate) fn count_with<C: Codec>(c: &C, r: Region<'_>, i1: u64, i2: u64, fp: u32) -> u32 {
    let second = if i1 == i2 { 0 } else { c.count_in(r, i2, fp) };
    c.count_in(r, i1, fp) + second
}

/// The reference probe: slot by slot from the decoded buckets (read through checked slices),
/// no SIMD, no SWAR. Tests hold every codec to it.
#[cfg(test)]
pub(crate) fn contains_scalar(g: &Geometry, t: &[u8], i1: u64, i2: u64, fp: u32) -> bool {
    let b = g.bucket_size() as usize;
    let (a, c) = (g.layout().read(t, i1), g.layout().read(t, i2));
    a[..b].contains(&fp) || c[..b].contains(&fp)
}

/// The reference count: slot by slot, no SIMD.
#[cfg(test)]
pub(crate) fn count_scalar(g: &Geometry, t: &[u8], i1: u64, i2: u64, fp: u32) -> u32 {
    let b = g.bucket_size() as usize;
    let in_bucket = |i| {
        g.layout().read(t, i)[..b]
            .iter()
            .filter(|&&v| v == fp)
            .count() as u32
    };
    in_bucket(i1) + if i1 == i2 { 0 } else { in_bucket(i2) }
}

/// Writes `v` into slot `s` of bucket `i` (semi-sorted buckets re-sort): for building tables
/// in tests.
#[cfg(test)]
pub(crate) fn set(g: &Geometry, t: &mut [u8], i: u64, s: u32, v: u32) {
    let mut slots = g.layout().read(t, i);
    slots[s as usize] = v;
    g.layout().store(t, i, s as usize, &slots);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::SplitMix64;
    use crate::table::TableBuf;
    use crate::table::tests::all_layouts;

    /// A random table: values from a small palette (small ones, the maximum, ones whose bytes
    /// differ, near misses of each other), so matches, repeats and empty slots are common.
    fn random_table(g: &Geometry, rng: &mut SplitMix64, palette: &[u32]) -> TableBuf {
        let mut buf = TableBuf::zeroed(g.table_bytes()).unwrap();
        for i in 0..g.num_buckets() {
            for s in 0..g.bucket_size() {
                let r = rng.below(palette.len() as u64 + 3) as usize;
                let v = palette.get(r).copied().unwrap_or(0);
                set(g, buf.bytes_mut(), i, s, v);
            }
        }
        buf
    }

    fn palette(f: u32) -> Vec<u32> {
        let max = if f == 32 { u32::MAX } else { (1 << f) - 1 };
        let mut p = vec![1, 2, 3, max, max - 1, 0x0101 & max, (0x8001 & max) | 1];
        // Values that share the low part or the high nibble of another (semi-sorted codecs
        // compare those separately).
        let low = f.saturating_sub(4);
        p.push((5 << low) | 1);
        p.push((5 << low) | 2);
        p.push((6 << low) | 1);
        p.iter_mut().for_each(|v| *v &= max);
        p.retain(|&v| v != 0);
        p
    }

    /// Every codec agrees with the reference on random tables, for every bucket pair (a bucket
    /// with itself and the last bucket included), every palette value and 0 (counted as the
    /// empty slots), in tables of 2 to 130 buckets, where buckets straddle cache lines and the
    /// last bucket ends at the region's slack.
    #[test]
    fn codecs_agree_with_the_scalar_reference() {
        let mut rng = SplitMix64::new(42);
        for (e, b, f) in all_layouts() {
            for m in [2u64, 4, 18, 130] {
                let g = Geometry::new(m, b, f, e).unwrap();
                let pal = palette(f);
                let buf = random_table(&g, &mut rng, &pal);
                let t = buf.bytes();
                let r = Region::new(t, &g).unwrap();
                let step = if m > 20 { 7 } else { 1 };
                let pairs = (0..m)
                    .step_by(step)
                    .flat_map(|i| (0..m).step_by(step).map(move |j| (i, j)));
                for (i1, i2) in pairs.chain([(m - 1, m - 1), (0, m - 1), (m - 1, 0)]) {
                    for &fp in &pal {
                        let what = format!("{e:?} b={b} f={f} m={m} i1={i1} i2={i2} fp={fp}");
                        assert_eq!(
                            contains(&g, r, i1, i2, fp),
                            contains_scalar(&g, t, i1, i2, fp),
                            "{what}"
                        );
                        assert_eq!(
                            count(&g, r, i1, i2, fp),
                            count_scalar(&g, t, i1, i2, fp),
                            "{what}"
                        );
                    }
                    assert_eq!(
                        count(&g, r, i1, i2, 0),
                        count_scalar(&g, t, i1, i2, 0),
                        "{e:?} b={b} f={f} empty"
                    );
                }
            }
        }
    }

    /// The same answers from a copy of the region at every misalignment (a filter block inside
    /// an SSTable may start anywhere).
    #[test]
    fn misaligned_regions_answer_alike() {
        let mut rng = SplitMix64::new(7);
        for (e, b, f) in all_layouts() {
            let g = Geometry::new(34, b, f, e).unwrap();
            let pal = palette(f);
            let buf = random_table(&g, &mut rng, &pal);
            let t = buf.bytes();
            let mut shifted = vec![0u8; t.len() + 64];
            for shift in [1, 3, 8, 31, 63] {
                shifted[shift..shift + t.len()].copy_from_slice(t);
                let r = Region::new(&shifted[shift..shift + t.len()], &g).unwrap();
                for i1 in 0..34 {
                    let i2 = 33 - i1;
                    for &fp in &pal {
                        assert_eq!(
                            contains(&g, r, i1, i2, fp),
                            contains_scalar(&g, t, i1, i2, fp)
                        );
                        assert_eq!(count(&g, r, i1, i2, fp), count_scalar(&g, t, i1, i2, fp));
                    }
                }
            }
        }
    }

    #[test]
    fn every_slot_position_is_seen_in_both_buckets() {
        for (e, b, f) in all_layouts() {
            let g = Geometry::new(6, b, f, e).unwrap();
            for (i1, i2) in [(0, 4), (4, 0), (2, 2), (5, 5), (0, 5)] {
                for target in [i1, i2] {
                    for s in 0..b {
                        let mut buf = TableBuf::zeroed(g.table_bytes()).unwrap();
                        let (v, other) = (7, 8);
                        set(&g, buf.bytes_mut(), target, s, v);
                        let r = Region::new(buf.bytes(), &g).unwrap();
                        assert!(contains(&g, r, i1, i2, v), "{e:?} b={b} f={f} slot {s}");
                        assert!(!contains(&g, r, i1, i2, other));
                        assert_eq!(count(&g, r, i1, i2, v), 1);
                    }
                }
            }
        }
    }

    #[test]
    fn empty_table_contains_nothing() {
        for (e, b, f) in all_layouts() {
            let g = Geometry::new(4, b, f, e).unwrap();
            let buf = TableBuf::zeroed(g.table_bytes()).unwrap();
            let r = Region::new(buf.bytes(), &g).unwrap();
            for fp in [1, 2, 100, u32::MAX >> (32 - f)] {
                assert!(!contains(&g, r, 0, 2, fp));
                assert!(!contains(&g, r, 3, 3, fp));
                assert_eq!(count(&g, r, 0, 2, fp), 0);
            }
            assert_eq!(count(&g, r, 0, 2, 0), 2 * b);
            assert_eq!(count(&g, r, 1, 1, 0), b);
        }
    }
}
