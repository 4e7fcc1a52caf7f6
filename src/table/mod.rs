//! Bucket storage: the table's geometry, its byte layout per encoding, and the slot operations
//! that insert and remove use. Lookups go through [`kernel`].
//!
//! The table is a flat little-endian byte region, exactly as persisted (FORMAT.md §3), in one
//! of three encodings:
//!
//! * **plain** — 8-, 16- or 32-bit slots; bucket `i` is bytes `i·B .. (i+1)·B` with `B` a power
//!   of two of at most 32, so with a 64-byte-aligned region no bucket straddles a cache line.
//! * **packed** — `f`-bit slots for any `f` in 7..=32, packed back to back, bucket after bucket:
//!   no bit is wasted, and a bucket may straddle a cache line.
//! * **semi-sorted** (buckets of 4) — a 12-bit index of the sorted high nibbles, then four
//!   `f − 4`-bit low parts ([`semi`]): `f − 1` bits per slot.
//!
//! Slot value 0 marks an empty slot; fingerprints are never 0. An all-zero region is an empty
//! table in every encoding.

pub(crate) mod bits;
pub(crate) mod kernel;
pub(crate) mod semi;

use crate::error::{Error, Result};
use bits::Word;

/// How the fingerprints of a bucket are stored.
///
/// [`Config::false_positive_rate`](crate::Config::false_positive_rate) picks the encoding
/// that meets the rate in the fewest bits; [`Config::encoding`](crate::Config::encoding)
/// forces one.
///
/// ```
/// use cuckoo_sst::{Config, CuckooFilter, Encoding};
/// // At 1 %, 10-bit semi-sorted buckets of 4 are the smallest layout.
/// let f = CuckooFilter::new(Config::new(1000).false_positive_rate(0.01))?;
/// assert_eq!((f.encoding(), f.fingerprint_bits()), (Encoding::SemiSorted, 10));
/// # Ok::<(), cuckoo_sst::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Encoding {
    /// Each fingerprint in its own 8-, 16- or 32-bit little-endian slot: the fastest lookups.
    Plain,
    /// Fingerprints of any width from 7 to 32 bits, bit-packed with no gaps.
    Packed,
    /// Buckets of 4 kept sorted, their high nibbles coded together in 12 bits instead of 16
    /// (Fan et al. §5.2): one bit per fingerprint smaller than packed. Widths 7 to 32.
    SemiSorted,
}

impl Encoding {
    /// The `encoding` code of a level descriptor (FORMAT.md §5).
    pub(crate) const fn code(self) -> u8 {
        match self {
            Encoding::Plain => 0,
            Encoding::Packed => 1,
            Encoding::SemiSorted => 2,
        }
    }

    /// The encoding with descriptor code `code`, if this build knows it.
    pub(crate) const fn from_code(code: u8) -> Option<Encoding> {
        match code {
            0 => Some(Encoding::Plain),
            1 => Some(Encoding::Packed),
            2 => Some(Encoding::SemiSorted),
            _ => None,
        }
    }

    /// Every encoding, simplest first.
    pub(crate) const ALL: [Encoding; 3] = [Encoding::Plain, Encoding::Packed, Encoding::SemiSorted];

    /// Whether this encoding stores buckets of `b` slots with `f`-bit fingerprints.
    pub(crate) fn supports(self, b: u32, f: u32) -> bool {
        BUCKET_SIZES.contains(&b)
            && match self {
                Encoding::Plain => PLAIN_WIDTHS.contains(&f),
                Encoding::Packed => (MIN_FP_BITS..=32).contains(&f),
                Encoding::SemiSorted => b == 4 && (MIN_FP_BITS..=32).contains(&f),
            }
    }

    /// The widths this encoding supports with buckets of `b`, narrowest first.
    pub(crate) fn widths(self, b: u32) -> impl Iterator<Item = u32> {
        (MIN_FP_BITS..=32).filter(move |&f| self.supports(b, f))
    }

    /// Bits a bucket of `b` slots with `f`-bit fingerprints takes.
    pub(crate) const fn bucket_bits(self, b: u32, f: u32) -> u64 {
        match self {
            Encoding::Plain | Encoding::Packed => b as u64 * f as u64,
            Encoding::SemiSorted => semi::INDEX_BITS as u64 + 4 * (f as u64 - 4),
        }
    }
}

/// The bucket sizes the table supports.
pub(crate) const BUCKET_SIZES: [u32; 3] = [2, 4, 8];

/// The narrowest fingerprints supported. With `f` bits a bucket has at most `2^f − 1` distinct
/// alternate buckets, so the relocation walk of a large table with narrow fingerprints stays
/// within a small neighbourhood; at 7 and 8 bits tables still fill past their sizing load
/// (`tests/load.rs`), below that they are not offered.
pub(crate) const MIN_FP_BITS: u32 = 7;

/// The fingerprint widths of the plain encoding (one slot each).
pub(crate) const PLAIN_WIDTHS: [u32; 3] = [8, 16, 32];

/// The largest supported number of buckets: bucket indices come from 32 hash bits. Bucket
/// counts are even (see `hash::alt_bucket`).
pub(crate) const MAX_BUCKETS: u64 = 1 << 32;

/// Bytes in a cache line; the bucket region starts and ends on one.
pub(crate) const CACHE_LINE: usize = 64;

/// Slack after the last bucket of a bit-packed region, so that a bucket can be read with one
/// 16-byte load ([`bits::read_wide`]).
pub(crate) const PACKED_SLACK: usize = 16;

/// The table's shape: everything a lookup needs, derived once and then copied around.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    num_buckets: u64,
    bucket_size: u32,
    fp_bits: u32,
    encoding: Encoding,
    bucket_bits: u64,
    used_bytes: usize,
    table_bytes: usize,
    kind: Kind,
}

/// The lookup kernel that serves a geometry.
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
    Packed2,
    Packed4,
    Packed8,
    Semi4,
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
        if !encoding.supports(bucket_size, fp_bits) {
            let accepted = match encoding {
                Encoding::Plain => "8, 16 or 32 (other widths use the packed encoding)",
                Encoding::Packed => "7 to 32",
                Encoding::SemiSorted => "7 to 32, with buckets of 4",
            };
            return Err(Error::invalid(
                "fingerprint_bits",
                format!(
                    "{fp_bits}-bit fingerprints in buckets of {bucket_size} are not supported \
                     by the {encoding:?} encoding; it takes {accepted}"
                ),
            ));
        }
        let kind = match (encoding, fp_bits, bucket_size) {
            (Encoding::Plain, 8, 2) => Kind::P8x2,
            (Encoding::Plain, 8, 4) => Kind::P8x4,
            (Encoding::Plain, 8, _) => Kind::P8x8,
            (Encoding::Plain, 16, 2) => Kind::P16x2,
            (Encoding::Plain, 16, 4) => Kind::P16x4,
            (Encoding::Plain, 16, _) => Kind::P16x8,
            (Encoding::Plain, _, 2) => Kind::P32x2,
            (Encoding::Plain, _, 4) => Kind::P32x4,
            (Encoding::Plain, _, _) => Kind::P32x8,
            (Encoding::Packed, _, 2) => Kind::Packed2,
            (Encoding::Packed, _, 4) => Kind::Packed4,
            (Encoding::Packed, _, _) => Kind::Packed8,
            (Encoding::SemiSorted, _, _) => Kind::Semi4,
        };
        let bucket_bits = encoding.bucket_bits(bucket_size, fp_bits);
        let too_big = || {
            Error::invalid(
                "capacity",
                format!("{num_buckets} buckets do not fit in memory"),
            )
        };
        let used = num_buckets
            .checked_mul(bucket_bits)
            .ok_or_else(too_big)?
            .div_ceil(8);
        let slack = if encoding == Encoding::Plain {
            0
        } else {
            PACKED_SLACK as u64
        };
        let table = used
            .checked_add(slack)
            .and_then(|n| n.checked_next_multiple_of(CACHE_LINE as u64))
            .ok_or_else(too_big)?;
        let (Ok(used_bytes), Ok(table_bytes)) = (usize::try_from(used), usize::try_from(table))
        else {
            return Err(too_big());
        };
        Ok(Geometry {
            num_buckets,
            bucket_size,
            fp_bits,
            encoding,
            bucket_bits,
            used_bytes,
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

    /// Bytes holding buckets, `ceil(m · bucket_bits / 8)`; the rest of the region is zero
    /// padding (and, for bit-packed encodings, the 16 bytes of slack).
    #[inline]
    pub(crate) const fn used_bytes(&self) -> usize {
        self.used_bytes
    }

    /// Bits per bucket.
    #[inline]
    pub(crate) const fn bucket_bits(&self) -> u64 {
        self.bucket_bits
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

    /// The byte offset of `bucket`'s first byte in the region (to prefetch it).
    #[inline]
    pub(crate) fn bucket_offset(&self, bucket: u64) -> usize {
        ((bucket * self.bucket_bits) >> 3) as usize
    }

    /// The average number of distinct 64-byte lines the kernel reads to decode one bucket,
    /// with the region starting on a line boundary: exactly 1 for plain buckets; for
    /// bit-packed ones, the lines under its 16-byte load or under the 8-byte loads of its
    /// fields. Bucket offsets repeat modulo 64 bytes every 512 buckets, so averaging over 512
    /// buckets is exact.
    pub(crate) fn lines_per_bucket(&self) -> f64 {
        if self.encoding == Encoding::Plain {
            return 1.0;
        }
        if self.bucket_bits <= bits::WIDE_BITS as u64 {
            let lines: u64 = (0..512u64)
                .map(|i| {
                    let (at, len) = bits::load_span(i * self.bucket_bits, self.bucket_bits as u32);
                    1 + ((at + len - 1) / 64 != at / 64) as u64
                })
                .sum();
            return lines as f64 / 512.0;
        }
        let fields: Vec<(u64, u64)> = match self.encoding {
            Encoding::SemiSorted => {
                let low = self.fp_bits as u64 - 4;
                let base = semi::INDEX_BITS as u64;
                std::iter::once((0, base))
                    .chain((0..4).map(|k| (base + k * low, low)))
                    .collect()
            }
            _ => (0..self.bucket_size as u64)
                .map(|s| (s * self.fp_bits as u64, 0))
                .collect(),
        };
        let mut total = 0u64;
        for i in 0..512u64 {
            let start = i * self.bucket_bits;
            let mut lines: Vec<u64> = fields
                .iter()
                .flat_map(|&(off, _)| {
                    let byte = (start + off) / 8;
                    [byte / CACHE_LINE as u64, (byte + 7) / CACHE_LINE as u64]
                })
                .collect();
            lines.sort_unstable();
            lines.dedup();
            total += lines.len() as u64;
        }
        total as f64 / 512.0
    }

    /// The bit position of slot `slot` of `bucket` (plain and packed encodings).
    #[inline]
    fn slot_pos(&self, bucket: u64, slot: u32) -> u64 {
        bucket * self.bucket_bits + slot as u64 * self.fp_bits as u64
    }

    /// The four fingerprints of a semi-sorted bucket, sorted. The bucket is read with one
    /// load into a `u64` (up to 57 bits) or a `u128` (up to 121), else field by field.
    #[inline(always)]
    pub(crate) fn semi_bucket(&self, t: &[u8], bucket: u64) -> [u32; 4] {
        let low = self.fp_bits - 4;
        let pos = bucket * self.bucket_bits;
        let width = self.bucket_bits as u32;
        let (index, lows) = if width <= bits::NARROW_BITS {
            semi_fields(bits::read_narrow(t, pos, width), low)
        } else if width <= bits::WIDE_BITS {
            semi_fields(bits::read_wide(t, pos, width), low)
        } else {
            let base = pos + semi::INDEX_BITS as u64;
            let at = |k: u64| bits::read(t, base + k * low as u64, low) as u32;
            (
                bits::read(t, pos, semi::INDEX_BITS),
                [at(0), at(1), at(2), at(3)],
            )
        };
        semi::decode(index, lows, low)
    }

    /// Stores four fingerprints (in any order) as semi-sorted bucket `bucket`.
    fn set_semi_bucket(&self, t: &mut [u8], bucket: u64, fps: [u32; 4]) {
        let pos = bucket * self.bucket_bits;
        let low = self.fp_bits - 4;
        let (index, lows) = semi::encode(fps, low);
        bits::write(t, pos, semi::INDEX_BITS, index);
        let base = pos + semi::INDEX_BITS as u64;
        for (k, l) in lows.into_iter().enumerate() {
            bits::write(t, base + k as u64 * low as u64, low, l as u64);
        }
    }

    /// Reads slot `slot` of bucket `bucket` (0 when empty). In a semi-sorted bucket, slots
    /// are numbered in sorted order, so a write may renumber them.
    #[inline]
    pub(crate) fn get(&self, t: &[u8], bucket: u64, slot: u32) -> u32 {
        match self.encoding {
            Encoding::Plain => {
                let o = (self.slot_pos(bucket, slot) >> 3) as usize;
                match self.fp_bits {
                    8 => t[o] as u32,
                    16 => u16::from_le_bytes([t[o], t[o + 1]]) as u32,
                    _ => u32::from_le_bytes([t[o], t[o + 1], t[o + 2], t[o + 3]]),
                }
            }
            Encoding::Packed => bits::read(t, self.slot_pos(bucket, slot), self.fp_bits) as u32,
            Encoding::SemiSorted => self.semi_bucket(t, bucket)[slot as usize],
        }
    }

    /// Writes `fp` into slot `slot` of bucket `bucket` (a semi-sorted bucket is re-sorted).
    #[inline]
    pub(crate) fn set(&self, t: &mut [u8], bucket: u64, slot: u32, fp: u32) {
        match self.encoding {
            Encoding::Plain => {
                let o = (self.slot_pos(bucket, slot) >> 3) as usize;
                let n = (self.fp_bits / 8) as usize;
                t[o..o + n].copy_from_slice(&fp.to_le_bytes()[..n]);
            }
            Encoding::Packed => {
                bits::write(t, self.slot_pos(bucket, slot), self.fp_bits, fp as u64)
            }
            Encoding::SemiSorted => {
                let mut fps = self.semi_bucket(t, bucket);
                fps[slot as usize] = fp;
                self.set_semi_bucket(t, bucket, fps);
            }
        }
    }

    /// Replaces one copy of `old` in `bucket` with `new`, trying slot `hint` first; false when
    /// the bucket holds no `old`. With the hint right (plain and packed buckets never move
    /// their slots) the bytes are exactly those before `old` was written there; a semi-sorted
    /// bucket is canonical, so any copy gives the same bytes.
    #[inline]
    pub(crate) fn replace(&self, t: &mut [u8], bucket: u64, hint: u32, old: u32, new: u32) -> bool {
        let slot = if self.get(t, bucket, hint) == old {
            hint
        } else {
            match (0..self.bucket_size).find(|&s| self.get(t, bucket, s) == old) {
                Some(s) => s,
                None => return false,
            }
        };
        self.set(t, bucket, slot, new);
        true
    }

    /// Puts `fp` into the first empty slot of bucket `i1`, else of bucket `i2` (pass the same
    /// bucket twice for one); false when both are full. The empty slots are found with the
    /// lookup kernel, comparing against 0.
    #[inline]
    pub(crate) fn try_put(&self, t: &mut [u8], i1: u64, i2: u64, fp: u32) -> bool {
        if self.encoding == Encoding::SemiSorted {
            // Decode each bucket once: sorted, its empty slots (0) come first.
            let buckets = [i1, i2];
            for &i in &buckets[..if i1 == i2 { 1 } else { 2 }] {
                let mut fps = self.semi_bucket(t, i);
                if fps[0] == 0 {
                    fps[0] = fp;
                    self.set_semi_bucket(t, i, fps);
                    return true;
                }
            }
            return false;
        }
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

    /// Every slot of `bucket` (the first `b` entries), decoded once.
    #[inline]
    pub(crate) fn bucket_slots(&self, t: &[u8], bucket: u64) -> [u32; 8] {
        let mut out = [0u32; 8];
        if self.encoding == Encoding::SemiSorted {
            out[..4].copy_from_slice(&self.semi_bucket(t, bucket));
        } else {
            for s in 0..self.bucket_size {
                out[s as usize] = self.get(t, bucket, s);
            }
        }
        out
    }

    /// Clears one slot of `bucket` holding `fp`; false when there is none.
    #[inline]
    pub(crate) fn remove_one(&self, t: &mut [u8], bucket: u64, fp: u32) -> bool {
        match (0..self.bucket_size).find(|&s| self.get(t, bucket, s) == fp) {
            Some(s) => {
                self.set(t, bucket, s, 0);
                true
            }
            None => false,
        }
    }
}

/// The index and the four low parts of a semi-sorted bucket read into one word.
#[inline(always)]
fn semi_fields<W: Word>(w: W, low: u32) -> (u64, [u32; 4]) {
    let idx = semi::INDEX_BITS;
    (
        w.field(0, idx) as u64,
        [0, 1, 2, 3].map(|k| w.field(idx + k * low, low)),
    )
}

/// Checks that `region` (of `g.table_bytes()` bytes) is a well-formed table — zero padding,
/// and for semi-sorted buckets a valid index and sorted fingerprints — and counts its occupied
/// slots. A full scan, used when a file is verified.
pub(crate) fn scan(g: &Geometry, region: &[u8]) -> std::result::Result<u64, String> {
    let padding = region
        .get(g.used_bytes()..)
        .ok_or("the region is too short")?;
    let partial_bits = (g.num_buckets * g.bucket_bits) % 8;
    let last_used = g.used_bytes().checked_sub(1).and_then(|i| region.get(i));
    if padding.iter().any(|&b| b != 0)
        || last_used.is_some_and(|&b| partial_bits != 0 && b >> partial_bits != 0)
    {
        return Err("padding bits are not zero".into());
    }
    match g.encoding {
        Encoding::Plain => Ok(count_plain(g, region)),
        Encoding::Packed => Ok((0..g.num_buckets)
            .map(|i| kernel::occupied(g, region, i) as u64)
            .sum()),
        Encoding::SemiSorted => {
            let mut n = 0;
            for i in 0..g.num_buckets {
                let index = bits::read(region, i * g.bucket_bits, semi::INDEX_BITS) as usize;
                if index >= semi::COMBINATIONS {
                    return Err(format!(
                        "bucket {i} has the invalid semi-sorted index {index}"
                    ));
                }
                let fps = g.semi_bucket(region, i);
                if fps.windows(2).any(|w| w[0] > w[1]) {
                    return Err(format!("bucket {i} is not sorted"));
                }
                n += fps.iter().filter(|&&f| f != 0).count() as u64;
            }
            Ok(n)
        }
    }
}

/// Occupied slots of a plain region (zero padding included, which counts nothing): 64 bytes
/// per SIMD compare.
fn count_plain(g: &Geometry, region: &[u8]) -> u64 {
    use wide::{u8x64, u16x32, u32x16};
    let slot_bytes = (g.fp_bits / 8) as usize;
    let mut empty = 0u64;
    let lines = region.chunks_exact(CACHE_LINE);
    let total_slots = (lines.len() * CACHE_LINE / slot_bytes) as u64;
    for line in lines {
        let mut buf = [0u8; CACHE_LINE];
        buf.copy_from_slice(line);
        empty += match slot_bytes {
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
    use crate::hash::SplitMix64;

    /// Every supported (encoding, bucket size, width).
    pub(crate) fn all_layouts() -> Vec<(Encoding, u32, u32)> {
        let mut v = Vec::new();
        for e in Encoding::ALL {
            for b in BUCKET_SIZES {
                for f in e.widths(b) {
                    v.push((e, b, f));
                }
            }
        }
        v
    }

    #[test]
    fn geometry_rejects_unsupported_shapes() {
        for b in [0, 1, 3, 5, 16] {
            assert!(Geometry::new(10, b, 16, Encoding::Plain).is_err(), "b={b}");
        }
        for f in [0, 1, 7, 12, 33] {
            assert!(Geometry::new(10, 4, f, Encoding::Plain).is_err(), "f={f}");
        }
        for f in [0, 1, 6, 33, 64] {
            assert!(Geometry::new(10, 4, f, Encoding::Packed).is_err(), "f={f}");
        }
        for (b, f) in [(2, 10), (8, 10), (4, 4), (4, 6), (4, 33)] {
            assert!(
                Geometry::new(10, b, f, Encoding::SemiSorted).is_err(),
                "b={b} f={f}"
            );
        }
        assert!(Geometry::new(0, 4, 16, Encoding::Plain).is_err());
        assert!(Geometry::new(1, 4, 16, Encoding::Plain).is_err());
        assert!(Geometry::new(9, 4, 16, Encoding::Plain).is_err());
        assert!(Geometry::new(MAX_BUCKETS + 1, 4, 16, Encoding::Plain).is_err());
        assert!(Geometry::new(MAX_BUCKETS, 4, 16, Encoding::Plain).is_ok());
        assert!(Geometry::new(MAX_BUCKETS, 8, 32, Encoding::Packed).is_ok());
    }

    #[test]
    fn table_bytes_round_up_to_a_cache_line() {
        let g = Geometry::new(2, 4, 16, Encoding::Plain).unwrap();
        assert_eq!(g.table_bytes(), 64);
        let g = Geometry::new(10, 4, 16, Encoding::Plain).unwrap();
        assert_eq!(g.table_bytes(), 128);
        let g = Geometry::new(1000, 8, 32, Encoding::Plain).unwrap();
        assert_eq!(g.table_bytes(), 32_000);
        // 1000 buckets of 4 × 10 bits = 5000 bytes, + 16 bytes of slack, rounded up: 5056.
        let g = Geometry::new(1000, 4, 10, Encoding::Packed).unwrap();
        assert_eq!((g.used_bytes(), g.table_bytes()), (5000, 5056));
        // Semi-sorted: 12 + 4 × 6 = 36 bits per bucket: 4500 bytes, + 16 → 4544.
        let g = Geometry::new(1000, 4, 10, Encoding::SemiSorted).unwrap();
        assert_eq!((g.used_bytes(), g.table_bytes()), (4500, 4544));
    }

    #[test]
    fn plain_buckets_never_straddle_a_cache_line() {
        for b in BUCKET_SIZES {
            for f in PLAIN_WIDTHS {
                let g = Geometry::new(1000, b, f, Encoding::Plain).unwrap();
                for i in 0..1000 {
                    let first = g.bucket_offset(i) / CACHE_LINE;
                    let last = (g.bucket_offset(i + 1) - 1) / CACHE_LINE;
                    assert_eq!(first, last, "b={b} f={f} bucket {i}");
                }
            }
        }
    }

    #[test]
    fn plain_slots_are_little_endian_bytes() {
        let g = Geometry::new(4, 4, 32, Encoding::Plain).unwrap();
        let mut buf = TableBuf::zeroed(g.table_bytes()).unwrap();
        g.set(buf.bytes_mut(), 3, 3, 0x0102_0304);
        let t = buf.bytes();
        assert_eq!(&t[60..64], &[4, 3, 2, 1]);
        assert_eq!(g.get(t, 3, 3), 0x0102_0304);
        assert_eq!(scan(&g, t), Ok(1));
        assert!(buf.bytes().as_ptr() as usize % CACHE_LINE == 0);
    }

    /// Random slot writes in every layout read back as a simple model says, down to the last
    /// bucket, and every occupied slot is counted.
    #[test]
    fn slots_behave_like_a_model_in_every_layout() {
        let mut rng = SplitMix64::new(5);
        for (e, b, f) in all_layouts() {
            let m = 14;
            let g = Geometry::new(m, b, f, e).unwrap();
            let mut buf = TableBuf::zeroed(g.table_bytes()).unwrap();
            let mut model = vec![vec![0u32; b as usize]; m as usize];
            let max = if f == 32 { u32::MAX } else { (1 << f) - 1 };
            for _ in 0..400 {
                let i = rng.below(m);
                let v = if rng.below(4) == 0 {
                    0
                } else {
                    (rng.next_u64() as u32 & max).max(1)
                };
                let s = rng.below(b as u64) as u32;
                g.set(buf.bytes_mut(), i, s, v);
                if e == Encoding::SemiSorted {
                    // Slot numbers follow the sorted order: compare as sorted multisets.
                    let mut want = g.semi_bucket(buf.bytes(), i).to_vec();
                    want.sort_unstable();
                    model[i as usize] = want;
                } else {
                    model[i as usize][s as usize] = v;
                }
                for (j, bucket) in model.iter().enumerate() {
                    let mut got: Vec<u32> =
                        (0..b).map(|s| g.get(buf.bytes(), j as u64, s)).collect();
                    let mut want = bucket.clone();
                    if e == Encoding::SemiSorted {
                        got.sort_unstable();
                        want.sort_unstable();
                    }
                    assert_eq!(got, want, "{e:?} b={b} f={f} bucket {j}");
                }
            }
            let occupied = model.iter().flatten().filter(|&&v| v != 0).count() as u64;
            assert_eq!(scan(&g, buf.bytes()), Ok(occupied), "{e:?} b={b} f={f}");
            // Nothing was written past the buckets.
            assert!(buf.bytes()[g.used_bytes()..].iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn semi_sorted_set_keeps_the_multiset() {
        let g = Geometry::new(2, 4, 9, Encoding::SemiSorted).unwrap();
        let mut buf = TableBuf::zeroed(g.table_bytes()).unwrap();
        let t = buf.bytes_mut();
        for (s, v) in [(0, 300), (1, 7), (2, 511), (3, 7)] {
            // Fill empty slots: the empty ones sort first, so slot 0 is always empty here.
            assert_eq!(g.get(t, 1, 0), 0, "before writing {v} to slot {s}");
            g.set(t, 1, 0, v);
        }
        assert_eq!(g.semi_bucket(t, 1), [7, 7, 300, 511]);
        assert!(g.replace(t, 1, 0, 300, 12));
        assert_eq!(g.semi_bucket(t, 1), [7, 7, 12, 511]);
        assert!(g.remove_one(t, 1, 7));
        assert_eq!(g.semi_bucket(t, 1), [0, 7, 12, 511]);
        assert_eq!(g.semi_bucket(t, 0), [0; 4]);
    }

    #[test]
    fn scan_rejects_bad_padding_and_bad_semi_buckets() {
        let g = Geometry::new(2, 4, 9, Encoding::SemiSorted).unwrap();
        // 2 buckets × 44 bits = 88 bits = 11 bytes: no partial byte; padding from byte 11.
        let mut buf = TableBuf::zeroed(g.table_bytes()).unwrap();
        buf.bytes_mut()[11] = 1;
        assert!(scan(&g, buf.bytes()).is_err());
        let mut buf = TableBuf::zeroed(g.table_bytes()).unwrap();
        bits::write(buf.bytes_mut(), 0, 12, 3876);
        assert!(scan(&g, buf.bytes()).unwrap_err().contains("invalid"));
        let mut buf = TableBuf::zeroed(g.table_bytes()).unwrap();
        // Index 3875 (nibbles 15,15,15,15) with low parts 5, 4, 0, 0: not sorted.
        bits::write(buf.bytes_mut(), 0, 12, 3875);
        bits::write(buf.bytes_mut(), 12, 5, 5);
        bits::write(buf.bytes_mut(), 17, 5, 4);
        assert!(scan(&g, buf.bytes()).unwrap_err().contains("sorted"));
        // A partial last byte: 2 buckets × 2 slots × 7 bits = 28 bits, half of byte 3.
        let g = Geometry::new(2, 2, 7, Encoding::Packed).unwrap();
        let mut buf = TableBuf::zeroed(g.table_bytes()).unwrap();
        buf.bytes_mut()[3] = 0x10; // bit 28: past the last slot
        assert!(scan(&g, buf.bytes()).is_err());
        buf.bytes_mut()[3] = 0x08; // bit 27: the last slot's top bit
        assert_eq!(scan(&g, buf.bytes()), Ok(1));
    }

    #[test]
    fn an_impossible_allocation_is_out_of_memory() {
        let bytes = usize::MAX - 63;
        match TableBuf::zeroed(bytes) {
            Err(Error::OutOfMemory { bytes: b }) => assert_eq!(b, bytes as u64),
            other => panic!("{other:?}"),
        }
        assert_eq!(TableBuf::zeroed(0).unwrap().bytes().len(), 0);
        assert_eq!(TableBuf::zeroed(128).unwrap().bytes(), &[0u8; 128][..]);
    }

    #[test]
    fn fpr_bound_matches_the_closed_form() {
        // b=4, f=8: 1 − (1 − 1/255)^8.
        let want = 1.0 - (1.0 - 1.0 / 255.0f64).powi(8);
        assert!((fpr_bound(4, 8) - want).abs() < 1e-15);
        assert!(fpr_bound(4, 32) > 0.0 && fpr_bound(4, 32) < 2e-9);
    }
}
