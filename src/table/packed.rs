//! Bit-packed buckets: `B` fingerprints of any width `f` from 7 to 32 bits, back to back,
//! bucket after bucket (FORMAT.md §3.2).
//!
//! A probe reads a bucket with one unaligned 8-byte load wherever the bucket fits in one
//! (`B·f ≤ 57` bits: buckets of 4 up to 14 bits, buckets of 2 up to 28) and compares the
//! fingerprint with all its fields at once ([`Fields::equal`]); wider buckets are read in
//! chunks of as many whole fields as fit in a load.

use super::bits;
use super::codec::{Codec, Slots};
use super::raw::Region;
use super::swar::Fields;

/// Buckets of `B` bit-packed fingerprints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Packed<const B: usize> {
    /// Fingerprint width.
    f: u32,
    /// `B·f`.
    bucket_bits: u64,
    /// Fields per load: as many as fit in 57 bits, at most `B`.
    per: u32,
    /// Loads per bucket: `⌈B / per⌉`.
    chunks: u32,
    /// Masks of a chunk of `per` fields.
    full: Fields,
    /// Fields in the last chunk, and their masks.
    tail_fields: u32,
    tail: Fields,
}

impl<const B: usize> Packed<B> {
    /// The codec for `f`-bit fingerprints (`1 ≤ f ≤ 32`).
    pub(crate) fn new(f: u32) -> Self {
        let b = B as u32;
        let per = (57 / f).min(b);
        let chunks = b.div_ceil(per);
        let tail_fields = b - per * (chunks - 1);
        Packed {
            f,
            bucket_bits: (b * f) as u64,
            per,
            chunks,
            full: Fields::new(per, f),
            tail_fields,
            tail: Fields::new(tail_fields, f),
        }
    }

    /// The equal-field flags of `fp` in chunk `k` of bucket `i`.
    #[inline(always)]
    fn chunk(&self, r: Region<'_>, i: u64, k: u32, fp: u32) -> u64 {
        let (fields, masks) = if k + 1 < self.chunks {
            (self.per, &self.full)
        } else {
            (self.tail_fields, &self.tail)
        };
        let pos = i * self.bucket_bits + (k * self.per * self.f) as u64;
        let _ = fields;
        masks.equal(r.window(pos), fp as u64)
    }

    /// The equal-field flags of `fp` in bucket `i` read with one load (`chunks == 1`).
    #[inline(always)]
    fn whole(&self, r: Region<'_>, i: u64, fp: u32) -> u64 {
        let w = r.window(i * self.bucket_bits);
        self.full.equal(w, fp as u64)
    }
}

impl<const B: usize> Codec for Packed<B> {
    #[inline(always)]
    fn slots(&self) -> usize {
        B
    }

    #[inline(always)]
    fn contains(&self, r: Region<'_>, i1: u64, i2: u64, fp: u32) -> bool {
        if self.chunks == 1 {
            return (self.whole(r, i1, fp) | self.whole(r, i2, fp)) != 0;
        }
        let mut any = 0;
        for k in 0..self.chunks {
            any |= self.chunk(r, i1, k, fp) | self.chunk(r, i2, k, fp);
        }
        any != 0
    }

    #[inline(always)]
    fn count_in(&self, r: Region<'_>, i: u64, fp: u32) -> u32 {
        (0..self.chunks)
            .map(|k| self.chunk(r, i, k, fp).count_ones())
            .sum()
    }

    #[inline(always)]
    fn bucket_byte(&self, i: u64) -> usize {
        ((i * self.bucket_bits) >> 3) as usize
    }

    fn loads(&self, i: u64, out: &mut Vec<(usize, usize)>) {
        for k in 0..self.chunks {
            let pos = i * self.bucket_bits + (k * self.per * self.f) as u64;
            out.push(((pos >> 3) as usize, 8));
        }
    }

    fn read(&self, t: &[u8], i: u64) -> Slots {
        let mut s = [0u32; 8];
        let base = i * self.bucket_bits;
        for (k, v) in s.iter_mut().enumerate().take(B) {
            *v = bits::read(t, base + k as u64 * self.f as u64, self.f) as u32;
        }
        s
    }

    fn store(&self, t: &mut [u8], i: u64, changed: usize, slots: &Slots) {
        let pos = i * self.bucket_bits + changed as u64 * self.f as u64;
        bits::write(t, pos, self.f, slots[changed] as u64);
    }

    fn scan(&self, r: Region<'_>, num_buckets: u64) -> Result<u64, String> {
        let empty: u64 = (0..num_buckets)
            .map(|i| self.count_in(r, i, 0) as u64)
            .sum();
        Ok(num_buckets * B as u64 - empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_the_bucket_in_whole_fields() {
        for f in 1..=32u32 {
            for (b, p) in [
                (2, Packed::<2>::new(f).per),
                (4, Packed::<4>::new(f).per),
                (8, Packed::<8>::new(f).per),
            ] {
                assert!(p >= 1 && p * f <= 57 && p <= b, "b={b} f={f}");
                // As many fields as fit: one more would not.
                assert!(p == b || (p + 1) * f > 57, "b={b} f={f}");
            }
        }
        let p = Packed::<4>::new(10);
        assert_eq!((p.per, p.chunks, p.tail_fields), (4, 1, 4));
        let p = Packed::<8>::new(10);
        assert_eq!((p.per, p.chunks, p.tail_fields), (5, 2, 3));
        let p = Packed::<8>::new(32);
        assert_eq!((p.per, p.chunks, p.tail_fields), (1, 8, 1));
    }
}
