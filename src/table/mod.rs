//! Bucket storage: the table's geometry, its byte layout, and the slot operations that insert
//! and remove use. Lookups go through [`kernel`].
//!
//! The table is a flat little-endian byte region, exactly as persisted (FORMAT.md, "Bucket
//! region"): bucket `i` occupies bytes `i·B .. (i+1)·B` where `B = bucket_size · slot_bytes` is
//! a power of two no larger than 32, so with a 64-byte-aligned region no bucket straddles a
//! cache line. Slot value 0 marks an empty slot; fingerprints are never 0.

pub(crate) mod kernel;

use crate::error::{Error, Result};

/// How the fingerprints of a bucket are stored.
///
/// ```
/// use cuckoo_sst::{CuckooFilter, Encoding};
/// assert_eq!(CuckooFilter::with_capacity(10).encoding(), Encoding::Plain);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Encoding {
    /// Each fingerprint in its own 8-, 16- or 32-bit little-endian slot; a bucket's slots are
    /// contiguous and in no particular order.
    Plain,
}

impl Encoding {
    /// The `encoding` code of a level descriptor (FORMAT.md §5).
    pub(crate) const fn code(self) -> u8 {
        match self {
            Encoding::Plain => 0,
        }
    }

    /// The encoding with descriptor code `code`, if this build knows it.
    pub(crate) const fn from_code(code: u8) -> Option<Encoding> {
        match code {
            0 => Some(Encoding::Plain),
            _ => None,
        }
    }
}

/// The bucket sizes the table supports.
pub(crate) const BUCKET_SIZES: [u32; 3] = [2, 4, 8];

/// The fingerprint widths of the plain encoding (one slot each).
pub(crate) const PLAIN_WIDTHS: [u32; 3] = [8, 16, 32];

/// The largest supported number of buckets: bucket indices come from 32 hash bits. Bucket
/// counts are even (see `hash::alt_bucket`).
pub(crate) const MAX_BUCKETS: u64 = 1 << 32;

/// Bytes in a cache line; the bucket region starts and ends on one.
pub(crate) const CACHE_LINE: usize = 64;

/// The table's shape: everything a lookup needs, derived once and then copied around.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    num_buckets: u64,
    bucket_size: u32,
    fp_bits: u32,
    encoding: Encoding,
    slot_bytes: usize,
    bucket_bytes: usize,
    table_bytes: usize,
    kind: Kind,
}

/// The lookup kernel that serves a geometry: plain slots of a width × bucket size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    P8x2,
    P8x4,
    P8x8,
    P16x2,
    P16x4,
    P16x8,
    P32x2,
    P32x4,
    P32x8,
}

impl Geometry {
    /// Checks a shape and derives the values lookups need.
    pub(crate) fn new(
        num_buckets: u64,
        bucket_size: u32,
        fp_bits: u32,
        encoding: Encoding,
    ) -> Result<Geometry> {
        if !BUCKET_SIZES.contains(&bucket_size) {
            return Err(Error::invalid(
                "bucket_size",
                format!("{bucket_size} is not supported; use 2, 4 or 8"),
            ));
        }
        if !(2..=MAX_BUCKETS).contains(&num_buckets) || num_buckets % 2 != 0 {
            return Err(Error::invalid(
                "capacity",
                format!(
                    "{num_buckets} buckets is not supported; the count must be even, from 2 to \
                     2^32"
                ),
            ));
        }
        let Encoding::Plain = encoding;
        let kind = match (fp_bits, bucket_size) {
            (8, 2) => Kind::P8x2,
            (8, 4) => Kind::P8x4,
            (8, 8) => Kind::P8x8,
            (16, 2) => Kind::P16x2,
            (16, 4) => Kind::P16x4,
            (16, 8) => Kind::P16x8,
            (32, 2) => Kind::P32x2,
            (32, 4) => Kind::P32x4,
            (32, 8) => Kind::P32x8,
            _ => {
                return Err(Error::invalid(
                    "fingerprint_bits",
                    format!("{fp_bits}-bit fingerprints are not supported; use 8, 16 or 32"),
                ));
            }
        };
        let slot_bytes = (fp_bits / 8) as usize;
        let bucket_bytes = slot_bytes * bucket_size as usize;
        let table_bytes = num_buckets
            .checked_mul(bucket_bytes as u64)
            .and_then(|n| n.checked_next_multiple_of(CACHE_LINE as u64))
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| {
                Error::invalid(
                    "capacity",
                    format!("{num_buckets} buckets do not fit in memory"),
                )
            })?;
        Ok(Geometry {
            num_buckets,
            bucket_size,
            fp_bits,
            encoding,
            slot_bytes,
            bucket_bytes,
            table_bytes,
            kind,
        })
    }

    /// Number of buckets (`m`).
    #[inline]
    pub(crate) const fn num_buckets(&self) -> u64 {
        self.num_buckets
    }

    /// Slots per bucket (`b`).
    #[inline]
    pub(crate) const fn bucket_size(&self) -> u32 {
        self.bucket_size
    }

    /// Fingerprint width in bits (`f`).
    #[inline]
    pub(crate) const fn fp_bits(&self) -> u32 {
        self.fp_bits
    }

    /// The bucket encoding.
    #[inline]
    pub(crate) const fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Total slots, `m · b`.
    #[inline]
    pub(crate) const fn slots(&self) -> u64 {
        self.num_buckets * self.bucket_size as u64
    }

    /// Bytes of the bucket region, a multiple of 64.
    #[inline]
    pub(crate) const fn table_bytes(&self) -> usize {
        self.table_bytes
    }

    /// The kernel for this geometry.
    #[inline]
    pub(crate) const fn kind(&self) -> Kind {
        self.kind
    }

    /// The false-positive rate of a lookup when both candidate buckets are full: each of the
    /// `2b` slots matches an absent key's fingerprint with probability `1/(2^f − 1)`.
    pub(crate) fn fpr_bound(&self) -> f64 {
        fpr_bound(self.bucket_size, self.fp_bits)
    }

    /// The byte offset of `bucket` in the region (to prefetch it).
    #[inline]
    pub(crate) fn bucket_offset(&self, bucket: u64) -> usize {
        bucket as usize * self.bucket_bytes
    }

    #[inline]
    fn slot_offset(&self, bucket: u64, slot: u32) -> usize {
        bucket as usize * self.bucket_bytes + slot as usize * self.slot_bytes
    }

    /// Reads slot `slot` of bucket `bucket` (0 when empty).
    #[inline]
    pub(crate) fn get(&self, t: &[u8], bucket: u64, slot: u32) -> u32 {
        let o = self.slot_offset(bucket, slot);
        match self.slot_bytes {
            1 => t[o] as u32,
            2 => u16::from_le_bytes([t[o], t[o + 1]]) as u32,
            _ => u32::from_le_bytes([t[o], t[o + 1], t[o + 2], t[o + 3]]),
        }
    }

    /// Writes `fp` into slot `slot` of bucket `bucket`.
    #[inline]
    pub(crate) fn set(&self, t: &mut [u8], bucket: u64, slot: u32, fp: u32) {
        let o = self.slot_offset(bucket, slot);
        let n = self.slot_bytes;
        t[o..o + n].copy_from_slice(&fp.to_le_bytes()[..n]);
    }

    /// Puts `fp` into the first empty slot of bucket `i1`, else of bucket `i2` (pass the same
    /// bucket twice for one); false when both are full. The empty slots are found with one
    /// SIMD compare against 0.
    #[inline]
    pub(crate) fn try_put(&self, t: &mut [u8], i1: u64, i2: u64, fp: u32) -> bool {
        let b = self.bucket_size;
        let empty = kernel::match_mask(self, t, i1, i2, 0) & ((1 << (2 * b)) - 1);
        if empty == 0 {
            return false;
        }
        let first = empty.trailing_zeros();
        if first < b {
            self.set(t, i1, first, fp);
        } else {
            self.set(t, i2, first - b, fp);
        }
        true
    }

    /// Clears one slot of `bucket` holding `fp`; false when there is none.
    #[inline]
    pub(crate) fn remove_one(&self, t: &mut [u8], bucket: u64, fp: u32) -> bool {
        for s in 0..self.bucket_size {
            if self.get(t, bucket, s) == fp {
                self.set(t, bucket, s, 0);
                return true;
            }
        }
        false
    }

    /// Bytes holding buckets, `m · B`; the rest of the region, up to the next multiple of 64, is
    /// zero padding.
    #[inline]
    pub(crate) const fn used_bytes(&self) -> usize {
        self.num_buckets as usize * self.bucket_bytes
    }
}

/// Occupied (nonzero) slots in a region of `g.table_bytes()` bytes, zero padding included:
/// a full scan, 64 bytes per SIMD compare.
pub(crate) fn count_occupied(g: &Geometry, region: &[u8]) -> u64 {
    use wide::{u8x64, u16x32, u32x16};
    let mut empty = 0u64;
    let lines = region.chunks_exact(CACHE_LINE);
    let total_slots = (lines.len() * CACHE_LINE / g.slot_bytes) as u64;
    for line in lines {
        let mut buf = [0u8; CACHE_LINE];
        buf.copy_from_slice(line);
        empty += match g.slot_bytes {
            1 => bytemuck::cast::<_, u8x64>(buf)
                .simd_eq(u8x64::ZERO)
                .to_bitmask()
                .count_ones(),
            2 => bytemuck::cast::<_, u16x32>(buf)
                .simd_eq(u16x32::ZERO)
                .to_bitmask()
                .count_ones(),
            _ => bytemuck::cast::<_, u32x16>(buf)
                .simd_eq(u32x16::ZERO)
                .to_bitmask()
                .count_ones(),
        } as u64;
    }
    total_slots - empty
}

/// `1 − (1 − 1/(2^f − 1))^(2b)`: the false-positive rate of a lookup whose two candidate
/// buckets are full of fingerprints of other keys.
pub(crate) fn fpr_bound(bucket_size: u32, fp_bits: u32) -> f64 {
    let values = 2f64.powi(fp_bits as i32) - 1.0;
    -f64::exp_m1(2.0 * bucket_size as f64 * f64::ln_1p(-1.0 / values))
}

/// One 64-byte cache line: the unit of table storage, so the region is cache-line-aligned in
/// memory exactly as in the file.
#[derive(Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(64))]
pub(crate) struct CacheLine([u8; CACHE_LINE]);

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
    fn geometry_rejects_unsupported_shapes() {
        for b in [0, 1, 3, 5, 16] {
            assert!(Geometry::new(10, b, 16, Encoding::Plain).is_err(), "b={b}");
        }
        for f in [0, 1, 7, 12, 33] {
            assert!(Geometry::new(10, 4, f, Encoding::Plain).is_err(), "f={f}");
        }
        assert!(Geometry::new(0, 4, 16, Encoding::Plain).is_err());
        assert!(Geometry::new(1, 4, 16, Encoding::Plain).is_err());
        assert!(Geometry::new(9, 4, 16, Encoding::Plain).is_err());
        assert!(Geometry::new(MAX_BUCKETS + 1, 4, 16, Encoding::Plain).is_err());
        assert!(Geometry::new(MAX_BUCKETS, 4, 16, Encoding::Plain).is_ok());
    }

    #[test]
    fn table_bytes_round_up_to_a_cache_line() {
        let g = Geometry::new(2, 4, 16, Encoding::Plain).unwrap();
        assert_eq!(g.table_bytes(), 64);
        let g = Geometry::new(10, 4, 16, Encoding::Plain).unwrap();
        assert_eq!(g.table_bytes(), 128);
        let g = Geometry::new(1000, 8, 32, Encoding::Plain).unwrap();
        assert_eq!(g.table_bytes(), 32_000);
    }

    #[test]
    fn buckets_never_straddle_a_cache_line() {
        for b in BUCKET_SIZES {
            for f in PLAIN_WIDTHS {
                let g = Geometry::new(1000, b, f, Encoding::Plain).unwrap();
                for i in 0..1000 {
                    let first = g.slot_offset(i, 0) / CACHE_LINE;
                    let last = (g.slot_offset(i, b - 1) + g.slot_bytes - 1) / CACHE_LINE;
                    assert_eq!(first, last, "b={b} f={f} bucket {i}");
                }
            }
        }
    }

    #[test]
    fn slots_are_little_endian_and_independent() {
        let g = Geometry::new(4, 4, 32, Encoding::Plain).unwrap();
        let mut buf = TableBuf::zeroed(g.table_bytes()).unwrap();
        g.set(buf.bytes_mut(), 3, 3, 0x0102_0304);
        let t = buf.bytes();
        assert_eq!(&t[60..64], &[4, 3, 2, 1]);
        assert_eq!(g.get(t, 3, 3), 0x0102_0304);
        assert_eq!(count_occupied(&g, t), 1);
        assert!(buf.bytes().as_ptr() as usize % CACHE_LINE == 0);
    }

    #[test]
    fn fpr_bound_matches_the_closed_form() {
        // b=4, f=8: 1 − (1 − 1/255)^8.
        let want = 1.0 - (1.0 - 1.0 / 255.0f64).powi(8);
        assert!((fpr_bound(4, 8) - want).abs() < 1e-15);
        assert!(fpr_bound(4, 32) > 0.0 && fpr_bound(4, 32) < 2e-9);
    }
}
