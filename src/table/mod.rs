//! Bucket storage: the table's geometry and its codec ([`codec`]: one per layout, resolved
//! once), the owned buffer, and the whole-region check the decoder runs. Lookups go through
//! [`kernel`].
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

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2;
pub(crate) mod bits;
mod buf;
pub(crate) mod codec;
pub(crate) mod kernel;
pub(crate) mod packed;
pub(crate) mod plain;
pub(crate) mod raw;
pub(crate) mod semi;
pub(crate) mod swar;

use crate::error::{Error, Result};
pub(crate) use buf::{FixedBuf, TableBuf, set_anonymous_maps};
pub(crate) use codec::{Codec, Layout, with_codec};
use raw::Region;

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

/// The encoding's name as the CLI and the README write it: `plain`, `packed`, `semi-sorted`.
///
/// ```
/// use cuckoo_sst::Encoding;
/// assert_eq!(Encoding::SemiSorted.to_string(), "semi-sorted");
/// assert_eq!(format!("{:>8}", Encoding::Plain), "   plain");
/// ```
impl std::fmt::Display for Encoding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(match self {
            Encoding::Plain => "plain",
            Encoding::Packed => "packed",
            Encoding::SemiSorted => "semi-sorted",
        })
    }
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

/// Slack after the last bucket of a bit-packed region (FORMAT.md §3), so that a slot can be
/// read or written through the 8-byte window that starts at its first byte ([`bits`]).
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
    layout: Layout,
    /// 0 for a classic level; for a stretch level (FORMAT.md §3.4), its core width `c`.
    core_bits: u32,
    /// A stretch level's payload width `p` (0 for a filter's; a run index's run ids). A byte:
    /// it fits beside the other narrow fields, and the geometry stays 128 bytes (a file of
    /// many tiny levels decodes into a struct per level; tests/decode_alloc.rs bounds them).
    payload_bits: u8,
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
        if !(2..=MAX_BUCKETS).contains(&num_buckets) || !num_buckets.is_multiple_of(2) {
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
            layout: Layout::new(encoding, bucket_size, fp_bits),
            core_bits: 0,
            payload_bits: 0,
        })
    }

    /// The shape of a stretch level (FORMAT.md §3.4): any bucket count from 2 to 2^32, `w`-bit
    /// slots holding a `core_bits`-bit core, at least one continuation bit and the marker.
    pub(crate) fn stretch(
        num_buckets: u64,
        bucket_size: u32,
        slot_bits: u32,
        encoding: Encoding,
        core_bits: u32,
    ) -> Result<Geometry> {
        Geometry::stretch_with_payload(num_buckets, bucket_size, slot_bits, encoding, core_bits, 0)
    }

    /// [`stretch`](Self::stretch) with `payload_bits` of payload above each slot's core (a
    /// run index's run ids): the core, the payload, a continuation bit and the marker must
    /// fit in the slot.
    pub(crate) fn stretch_with_payload(
        num_buckets: u64,
        bucket_size: u32,
        slot_bits: u32,
        encoding: Encoding,
        core_bits: u32,
        payload_bits: u32,
    ) -> Result<Geometry> {
        use crate::hash::stretch::{MAX_CORE_BITS, MIN_CORE_BITS};
        if !(MIN_CORE_BITS..=MAX_CORE_BITS).contains(&core_bits) {
            return Err(Error::invalid(
                "core_bits",
                format!("{core_bits} is not in {MIN_CORE_BITS}..={MAX_CORE_BITS}"),
            ));
        }
        if !BUCKET_SIZES.contains(&bucket_size) {
            return Err(Error::invalid(
                "bucket_size",
                format!("{bucket_size} is not supported; use 2, 4 or 8"),
            ));
        }
        if !(2..=MAX_BUCKETS).contains(&num_buckets) {
            return Err(Error::invalid(
                "capacity",
                format!("{num_buckets} buckets is not supported; a level has 2 to 2^32"),
            ));
        }
        // The classic checks of the width, on an even count (a stretch level may have any).
        let mut g = Geometry::new((num_buckets + 1) & !1, bucket_size, slot_bits, encoding)?;
        if slot_bits < core_bits.saturating_add(payload_bits).saturating_add(2) {
            return Err(Error::invalid(
                "fingerprint_bits",
                format!(
                    "{slot_bits}-bit slots cannot hold a {core_bits}-bit core, {payload_bits} \
                     payload bits, a continuation bit and the marker"
                ),
            ));
        }
        let used = (num_buckets * g.bucket_bits).div_ceil(8);
        let slack = if encoding == Encoding::Plain {
            0
        } else {
            PACKED_SLACK as u64
        };
        let table = (used + slack).next_multiple_of(CACHE_LINE as u64);
        g.num_buckets = num_buckets;
        g.used_bytes = used as usize;
        g.table_bytes = table as usize;
        g.core_bits = core_bits;
        g.payload_bits = payload_bits as u8;
        Ok(g)
    }

    /// The same level with `num_buckets` buckets (a stretch level growing or shrinking).
    pub(crate) fn with_buckets(&self, num_buckets: u64) -> Result<Geometry> {
        if !(2..=MAX_BUCKETS).contains(&num_buckets) || self.core_bits == 0 {
            return Geometry::stretch_with_payload(
                num_buckets,
                self.bucket_size,
                self.fp_bits,
                self.encoding,
                self.core_bits,
                self.payload_bits as u32,
            );
        }
        // Only the count and the lengths change (no u64 overflow below 2^32 buckets; a length
        // past usize goes the checked way, which refuses it).
        let used = (num_buckets * self.bucket_bits).div_ceil(8);
        let slack = if self.encoding == Encoding::Plain {
            0
        } else {
            PACKED_SLACK as u64
        };
        let table = (used + slack).next_multiple_of(CACHE_LINE as u64);
        match (usize::try_from(used), usize::try_from(table)) {
            (Ok(used_bytes), Ok(table_bytes)) => Ok(Geometry {
                num_buckets,
                used_bytes,
                table_bytes,
                ..*self
            }),
            _ => Geometry::stretch_with_payload(
                num_buckets,
                self.bucket_size,
                self.fp_bits,
                self.encoding,
                self.core_bits,
                self.payload_bits as u32,
            ),
        }
    }

    /// The slot layout of a stretch level, or `None` for a classic one.
    #[inline(always)]
    pub(crate) const fn stretch_slots(&self) -> Option<crate::hash::stretch::Slots> {
        if self.core_bits == 0 {
            None
        } else {
            Some(crate::hash::stretch::Slots {
                core_bits: self.core_bits,
                l0: self.fp_bits - 1 - self.core_bits - self.payload_bits as u32,
                payload_bits: self.payload_bits as u32,
            })
        }
    }

    /// The linear-hashing state of a stretch level's bucket count.
    #[inline(always)]
    pub(crate) const fn split(&self) -> crate::hash::stretch::Split {
        crate::hash::stretch::Split::of(self.num_buckets)
    }

    /// The core width of a stretch level; 0 for a classic one.
    #[inline]
    pub(crate) const fn core_bits(&self) -> u32 {
        self.core_bits
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

    /// The codec of this geometry's buckets.
    #[inline]
    pub(crate) const fn layout(&self) -> Layout {
        self.layout
    }

    /// The false-positive rate of a lookup when both candidate buckets are full: each of the
    /// `2b` slots matches an absent key's fingerprint with probability `1/(2^f − 1)`.
    pub(crate) fn fpr_bound(&self) -> f64 {
        fpr_bound(self.bucket_size, self.fp_bits)
    }

    /// The byte offset of `bucket`'s first byte in the region.
    #[cfg(test)]
    pub(crate) fn bucket_offset(&self, bucket: u64) -> usize {
        ((bucket * self.bucket_bits) >> 3) as usize
    }

    /// The average number of distinct 64-byte lines the probe of one bucket loads from, with
    /// the region starting on a line boundary: exactly 1 for plain buckets; for bit-packed
    /// ones, the lines under the bucket's 8-byte loads, each at the byte holding the first bit
    /// it needs (one load where the bucket fits in 57 bits). Bucket offsets repeat modulo 64
    /// bytes every 512 buckets, so averaging over 512 buckets is exact.
    pub(crate) fn lines_per_bucket(&self) -> f64 {
        let mut loads = Vec::new();
        let mut total = 0;
        for i in 0..512u64 {
            loads.clear();
            with_codec!(self.layout, c => c.loads(i, &mut loads));
            let mut lines: Vec<usize> = loads
                .iter()
                .flat_map(|&(at, len)| [at / CACHE_LINE, (at + len - 1) / CACHE_LINE])
                .collect();
            lines.sort_unstable();
            lines.dedup();
            total += lines.len();
        }
        total as f64 / 512.0
    }
}

/// Checks that `region` (of `g.table_bytes()` bytes) is a well-formed table — zero padding,
/// and for semi-sorted buckets a valid index and sorted fingerprints — and counts its occupied
/// slots. A full scan, used when a file is verified.
pub(crate) fn scan(g: &Geometry, region: &[u8]) -> std::result::Result<u64, String> {
    let r = Region::new(region, g).ok_or("the region has the wrong length")?;
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
    with_codec!(g.layout, c => c.scan(r, g.num_buckets))
}

/// `1 − (1 − 1/(2^f − 1))^(2b)`: the false-positive rate of a lookup whose two candidate
/// buckets are full of fingerprints of other keys.
pub(crate) fn fpr_bound(bucket_size: u32, fp_bits: u32) -> f64 {
    let values = 2f64.powi(fp_bits as i32) - 1.0;
    -f64::exp_m1(2.0 * bucket_size as f64 * f64::ln_1p(-1.0 / values))
}

#[cfg(test)]
pub(crate) mod tests {
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

    /// A payload takes slot bits from the continuation: a slot must still hold the core, the
    /// payload, one continuation bit and the marker; a payload past that, however wide, is
    /// refused, and the layout's fields add up to the slot.
    #[test]
    fn a_payload_must_leave_a_continuation_bit() {
        let g = Geometry::stretch_with_payload(10, 4, 16, Encoding::Packed, 5, 9).unwrap();
        let s = g.stretch_slots().unwrap();
        assert_eq!((s.core_bits, s.l0, s.payload_bits), (5, 1, 9));
        assert_eq!(s.payload_shift() + s.payload_bits, 16);
        for p in [10, 27, u32::MAX] {
            assert!(Geometry::stretch_with_payload(10, 4, 16, Encoding::Packed, 5, p).is_err());
        }
        let grown = g.with_buckets(1000).unwrap();
        assert_eq!(grown.stretch_slots(), Some(s), "growth keeps the payload");
        assert_eq!(
            Geometry::stretch(10, 4, 16, Encoding::Packed, 5)
                .unwrap()
                .stretch_slots()
                .unwrap()
                .payload_bits,
            0
        );
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

    /// The bytes a probe of any bucket touches lie inside the region, the last bucket's
    /// included: its prefetch addresses and its loads (a bit-packed bucket's 8-byte load past
    /// its last bit reads the slack). The mapped reader's chunk lookup relies on it.
    #[test]
    fn probes_load_inside_the_region() {
        let mut loads = Vec::new();
        for (e, b, f) in all_layouts() {
            for m in [2, 10, 1000, 1024, 4098] {
                let g = Geometry::new(m, b, f, e).unwrap();
                let n = g.table_bytes();
                with_codec!(g.layout(), c => {
                    for i in [0, 1, m / 2, m - 2, m - 1] {
                        for at in c.prefetch_at(i) {
                            assert!(at < n, "{e:?} b={b} f={f} m={m}: bucket {i} at {at} of {n}");
                        }
                        loads.clear();
                        c.loads(i, &mut loads);
                        for &(at, len) in &loads {
                            assert!(at + len <= n, "{e:?} b={b} f={f} m={m}: bucket {i} loads {at}+{len} of {n}");
                        }
                    }
                });
            }
        }
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
        kernel::set(&g, buf.bytes_mut(), 3, 3, 0x0102_0304);
        let t = buf.bytes();
        assert_eq!(&t[60..64], &[4, 3, 2, 1]);
        assert_eq!(g.layout().read(t, 3)[3], 0x0102_0304);
        assert_eq!(scan(&g, t), Ok(1));
        assert!((buf.bytes().as_ptr() as usize).is_multiple_of(CACHE_LINE));
    }

    /// The codec's own slot operations in every layout: `slots` is the bucket size,
    /// `try_put` fills the first bucket and then the second (once when they are the same
    /// bucket) and then refuses, and `store_all` writes every slot of a bucket.
    #[test]
    fn codecs_fill_both_buckets_and_store_whole_ones() {
        for (e, b, f) in all_layouts() {
            let g = Geometry::new(8, b, f, e).unwrap();
            let mut buf = TableBuf::zeroed(g.table_bytes()).unwrap();
            let t = buf.bytes_mut();
            let fp = |k: u32| 1 + k % ((1u64 << f.min(31)) - 1) as u32;
            with_codec!(g.layout(), c => {
                assert_eq!(c.slots(), b as usize, "{e:?} b={b} f={f}");
                for k in 0..2 * b {
                    assert!(c.try_put(t, 2, 5, fp(k)), "{e:?} b={b} f={f}: put {k}");
                    let (first, second) = (k.min(b - 1) + 1, k.saturating_sub(b - 1));
                    let r = raw::Region::new(t, &g).unwrap();
                    assert_eq!(c.count_in(r, 2, 0), b - first, "{e:?} b={b} f={f}: put {k}");
                    assert_eq!(c.count_in(r, 5, 0), b - second, "{e:?} b={b} f={f}: put {k}");
                }
                assert!(!c.try_put(t, 2, 5, fp(0)), "{e:?} b={b} f={f}: both full");
                // One bucket as both candidates: it takes `b`, not `2b`.
                for k in 0..b {
                    assert!(c.try_put(t, 7, 7, fp(k)), "{e:?} b={b} f={f}");
                }
                assert!(!c.try_put(t, 7, 7, fp(0)), "{e:?} b={b} f={f}: bucket 7 full");
                let mut slots = [0u32; 8];
                for (k, s) in slots[..b as usize].iter_mut().enumerate() {
                    *s = fp(100 + k as u32);
                }
                c.store_all(t, 0, &slots);
                let mut got = c.read(t, 0);
                got[..b as usize].sort_unstable();
                slots[..b as usize].sort_unstable();
                assert_eq!(got[..b as usize], slots[..b as usize], "{e:?} b={b} f={f}");
            });
        }
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
                kernel::set(&g, buf.bytes_mut(), i, s, v);
                if e == Encoding::SemiSorted {
                    // Slot numbers follow the sorted order: compare as sorted multisets.
                    let mut want = g.layout().read(buf.bytes(), i)[..4].to_vec();
                    want.sort_unstable();
                    model[i as usize] = want;
                } else {
                    model[i as usize][s as usize] = v;
                }
                for (j, bucket) in model.iter().enumerate() {
                    let mut got: Vec<u32> =
                        g.layout().read(buf.bytes(), j as u64)[..b as usize].to_vec();
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

    /// The stretch probe of every layout (the semi-sorted codecs' SWAR one included) against
    /// the slot-by-slot model: random buckets of valid entries, queries that some of them
    /// answer, down to the last bucket of an odd-sized region.
    #[test]
    fn stretch_probes_agree_with_the_model_in_every_layout() {
        use crate::hash::stretch::matches;
        let mut rng = SplitMix64::new(13);
        for (e, b, w) in all_layouts() {
            for c in [4u32, 5, 8] {
                if w < c + 2 {
                    continue;
                }
                let l0 = w - 1 - c;
                let m = 15;
                let g = Geometry::stretch(m, b, w, e, c).unwrap();
                let mut buf = TableBuf::zeroed(g.table_bytes()).unwrap();
                let query = |rng: &mut SplitMix64| -> u32 {
                    let core = rng.below(1 << c) as u32;
                    let cont = (rng.next_u64() as u32) & ((1u32 << l0) - 1);
                    core << (l0 + 1) | cont << 1 | 1
                };
                let qs: Vec<u32> = (0..8).map(|_| query(&mut rng)).collect();
                for i in 0..m {
                    let mut slots = [0u32; 8];
                    for v in slots[..b as usize].iter_mut() {
                        *v = match rng.below(4) {
                            0 => 0,
                            _ => {
                                // An entry of a query, cut to a random length, or a random one.
                                let q = if rng.below(2) == 0 {
                                    qs[rng.below(8) as usize]
                                } else {
                                    query(&mut rng)
                                };
                                let cut = rng.below(l0 as u64 + 1) as u32;
                                (q >> (cut + 1) << (cut + 1)) | 1 << cut
                            }
                        };
                    }
                    with_codec!(g.layout(), cd => cd.store_all(buf.bytes_mut(), i, &slots));
                }
                let r = raw::Region::new(buf.bytes(), &g).unwrap();
                for i in 0..m {
                    let stored = g.layout().read(buf.bytes(), i);
                    for &q in &qs {
                        let want = stored[..b as usize]
                            .iter()
                            .filter(|&&v| matches(v, q))
                            .count() as u32;
                        let j = (i + 7) % m;
                        let other = g.layout().read(buf.bytes(), j)[..b as usize]
                            .iter()
                            .filter(|&&v| matches(v, q ^ 2))
                            .count() as u32;
                        with_codec!(g.layout(), cd => {
                            assert_eq!(cd.count_prefix_in(r, i, q), want, "{e:?} b={b} w={w} c={c} bucket {i}");
                            assert_eq!(
                                cd.contains_prefix(r, i, q, j, q ^ 2),
                                want + other > 0,
                                "{e:?} b={b} w={w} c={c} buckets {i}, {j}"
                            );
                        });
                    }
                }
            }
        }
    }

    /// A stretch geometry grown or shrunk a bucket at a time is the one made from scratch, in
    /// every layout, across odd and even counts, up to 2^32 buckets; past it, an error.
    #[test]
    fn stretch_geometries_resize_exactly() {
        for (e, b, w) in all_layouts() {
            let c = 4;
            if w < c + 2 {
                continue;
            }
            let g = Geometry::stretch(2, b, w, e, c).unwrap();
            for m in (2..300).chain([MAX_BUCKETS - 1, MAX_BUCKETS]) {
                assert_eq!(
                    g.with_buckets(m).unwrap(),
                    Geometry::stretch(m, b, w, e, c).unwrap(),
                    "{e:?} b={b} w={w} m={m}"
                );
            }
            assert!(g.with_buckets(MAX_BUCKETS + 1).is_err());
            assert!(g.with_buckets(1).is_err());
        }
    }

    #[test]
    fn semi_sorted_set_keeps_the_multiset() {
        let g = Geometry::new(2, 4, 9, Encoding::SemiSorted).unwrap();
        let mut buf = TableBuf::zeroed(g.table_bytes()).unwrap();
        let t = buf.bytes_mut();
        let l = g.layout();
        for (s, v) in [(0, 300), (1, 7), (2, 511), (3, 7)] {
            // Fill empty slots: the empty ones sort first, so slot 0 is always empty here.
            assert_eq!(l.read(t, 1)[0], 0, "before writing {v} to slot {s}");
            kernel::set(&g, t, 1, 0, v);
        }
        let four = |t: &[u8], i| l.read(t, i)[..4].to_vec();
        assert_eq!(four(t, 1), [7, 7, 300, 511]);
        assert!(with_codec!(l, c => c.replace(t, 1, 0, 300, 12)));
        assert_eq!(four(t, 1), [7, 7, 12, 511]);
        assert!(l.remove_one(t, 1, 7));
        assert_eq!(four(t, 1), [0, 7, 12, 511]);
        assert_eq!(four(t, 0), [0; 4]);
        assert!(!l.remove_one(t, 1, 8));
        assert!(!with_codec!(l, c => c.replace(t, 1, 0, 8, 9)));
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

    /// What FORMAT.md and the codecs' docs say a probe reads: a plain bucket's bytes; for a
    /// packed bucket, 8 bytes at the byte holding the first bit of each chunk of ⌊57/f⌋ fields;
    /// for a semi-sorted one, 8 bytes at its first byte (8 to 15 bits), else 8 bytes each at the
    /// index, the first low part and the third.
    fn spec_loads(e: Encoding, b: u64, f: u64, i: u64) -> Vec<(u64, u64)> {
        let bits = e.bucket_bits(b as u32, f as u32);
        let pos = i * bits;
        let at = |p: u64| (p / 8, 8);
        match e {
            Encoding::Plain => vec![(pos / 8, bits / 8)],
            Encoding::Packed => {
                let per = (57 / f).min(b);
                (0..b.div_ceil(per))
                    .map(|k| at(pos + k * per * f))
                    .collect()
            }
            Encoding::SemiSorted if (8..=15).contains(&f) => vec![at(pos)],
            Encoding::SemiSorted => vec![at(pos), at(pos + 12), at(pos + 12 + 2 * (f - 4))],
        }
    }

    #[test]
    fn probes_read_what_the_spec_says() {
        for (e, b, f) in all_layouts() {
            let g = Geometry::new(600, b, f, e).unwrap();
            let mut lines = 0;
            for i in 0..512u64 {
                let mut loads = Vec::new();
                let fetched: [u64; 2] = with_codec!(g.layout(), c => {
                    assert_eq!(c.bucket_byte(i), g.bucket_offset(i), "{e:?} b={b} f={f} {i}");
                    c.loads(i, &mut loads);
                    c.prefetch_at(i).map(|at| at as u64 / 64)
                });
                // The first line prefetched is the bucket's; the two cover every line loaded.
                assert_eq!(fetched[0], g.bucket_offset(i) as u64 / 64);
                let want = spec_loads(e, b as u64, f as u64, i);
                let got: Vec<(u64, u64)> =
                    loads.iter().map(|&(a, l)| (a as u64, l as u64)).collect();
                assert_eq!(got, want, "{e:?} b={b} f={f} bucket {i}");
                let mut touched: Vec<u64> = want
                    .iter()
                    .flat_map(|&(a, l)| [a / 64, (a + l - 1) / 64])
                    .collect();
                touched.sort_unstable();
                touched.dedup();
                for l in &touched {
                    assert!(
                        fetched.contains(l),
                        "{e:?} b={b} f={f} bucket {i}: line {l}"
                    );
                }
                lines += touched.len();
            }
            assert_eq!(
                g.lines_per_bucket(),
                lines as f64 / 512.0,
                "{e:?} b={b} f={f}"
            );
        }
        // By hand: 5-byte packed buckets start at every residue modulo 64 once per 64 buckets,
        // and an 8-byte load from residues 57..=63 reaches the next line.
        let g = Geometry::new(600, 4, 10, Encoding::Packed).unwrap();
        assert_eq!(g.lines_per_bucket(), 1.0 + 7.0 / 64.0);
        let g = Geometry::new(600, 8, 16, Encoding::Plain).unwrap();
        assert_eq!(g.lines_per_bucket(), 1.0);
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

    /// The encodings' names as the CLI spells them (`build --encoding`, `info`), padded as a
    /// column asks.
    #[test]
    fn encodings_print_their_cli_names() {
        let names: Vec<String> = Encoding::ALL.iter().map(|e| format!("[{e:>12}]")).collect();
        assert_eq!(
            names,
            ["[       plain]", "[      packed]", "[ semi-sorted]"]
        );
    }

    /// A stretch slot holds the core, at least one continuation bit and the marker: every
    /// width from `c + 2` up is taken, and every narrower one refused as `fingerprint_bits`,
    /// for each core width and layout.
    #[test]
    fn a_stretch_slot_holds_its_core_a_continuation_bit_and_the_marker() {
        use crate::hash::stretch::{MAX_CORE_BITS, MIN_CORE_BITS};
        let (mut taken, mut refused) = (0, 0);
        for (e, b, w) in all_layouts() {
            for c in MIN_CORE_BITS..=MAX_CORE_BITS {
                match Geometry::stretch(65, b, w, e, c) {
                    Ok(g) => {
                        assert!(w >= c + 2, "{e:?} b={b} w={w} c={c}");
                        assert_eq!(
                            (g.num_buckets(), g.stretch_slots().unwrap().core_bits),
                            (65, c)
                        );
                        taken += 1;
                    }
                    Err(Error::InvalidConfig { setting, reason }) => {
                        assert!(w < c + 2, "{e:?} b={b} w={w} c={c}: {reason}");
                        assert_eq!(setting, "fingerprint_bits", "{reason}");
                        refused += 1;
                    }
                    Err(other) => panic!("{e:?} b={b} w={w} c={c}: {other:?}"),
                }
            }
        }
        assert!(
            taken > 100 && refused >= 5,
            "{taken} taken, {refused} refused"
        );
    }

    /// Only a stretch geometry changes its bucket count: a classic one is refused (it has no
    /// core), whatever the count.
    #[test]
    fn a_classic_geometry_does_not_resize() {
        for (e, b, f) in all_layouts() {
            let g = Geometry::new(64, b, f, e).unwrap();
            for m in [2, 63, 64, 66, 1 << 20] {
                assert!(g.with_buckets(m).is_err(), "{e:?} b={b} f={f} m={m}");
            }
        }
    }

    /// A geometry's bound is the closed form of its bucket size and width, a probability
    /// strictly between 0 and 1 (stretch geometries included).
    #[test]
    fn a_geometry_bound_is_that_of_its_bucket_size_and_width() {
        for (e, b, f) in all_layouts() {
            let want = fpr_bound(b, f);
            assert!(want > 0.0 && want < 0.5, "{e:?} b={b} f={f}: {want}");
            assert_eq!(Geometry::new(64, b, f, e).unwrap().fpr_bound(), want);
            if let Ok(g) = Geometry::stretch(65, b, f, e, 4) {
                assert_eq!(g.fpr_bound(), want, "{e:?} b={b} f={f}");
            }
        }
    }
}
