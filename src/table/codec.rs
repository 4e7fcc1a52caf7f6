//! One codec per bucket layout, chosen once per table.
//!
//! A [`Codec`] knows how its buckets are laid out in the region: it probes them (lookups and
//! counts read through the bounds-clamped loads of [`Region`]), reads and stores their slots
//! (inserts, removes and relocations, through checked slices), and scans a whole region when a
//! file is verified. [`Layout`] holds the codec of a table, resolved from its geometry when the
//! geometry is made; [`with_codec!`] turns it into a call on the concrete codec, so each
//! operation is one predictable branch and a loop inside the call (a batch, a relocation walk)
//! is monomorphic.

use super::packed::Packed;
use super::plain::Plain;
use super::raw::Region;
use super::semi::{Semi, SemiFast};

/// The slots of one bucket, decoded: the first `b` entries; 0 marks an empty slot. A
/// semi-sorted bucket's slots are in ascending order.
pub(crate) type Slots = [u32; 8];

/// A bucket layout.
pub(crate) trait Codec: Copy {
    /// How many keys ahead a batch prefetches (`view::contains_batch`): enough lookups in
    /// flight to cover a miss to memory, not so many that the prefetches queue behind each
    /// other. A plain bucket is one line and one prefetch; bit-packed ones take two prefetches
    /// (their loads may cross a line), so fewer keys fill the same queue.
    const BATCH_AHEAD: usize = 16;

    /// Slots per bucket.
    fn slots(&self) -> usize;

    /// Whether bucket `i1` or bucket `i2` holds `fp` (≠ 0).
    fn contains(&self, r: Region<'_>, i1: u64, i2: u64, fp: u32) -> bool;

    /// Copies of `fp` in bucket `i` (`fp` = 0 counts the empty slots).
    fn count_in(&self, r: Region<'_>, i: u64, fp: u32) -> u32;

    /// The byte offset of bucket `i`'s first byte.
    fn bucket_byte(&self, i: u64) -> usize;

    /// The two bytes whose lines [`prefetch`](Codec::prefetch) asks for: the bucket's first
    /// byte, and the last byte of its last 8-byte load (a bit-packed bucket and its loads may
    /// cross into the next line; two lines cover every bucket of up to 57 bytes). Every byte a
    /// probe loads lies on one of these lines (tested against [`loads`](Codec::loads)).
    #[inline(always)]
    fn prefetch_at(&self, i: u64) -> [usize; 2] {
        [self.bucket_byte(i), self.bucket_byte(i + 1) + 7]
    }

    /// Asks the CPU to bring in the lines a probe of bucket `i` loads (a hint: never faults,
    /// never changes an answer).
    #[inline(always)]
    fn prefetch(&self, r: Region<'_>, i: u64) {
        for at in self.prefetch_at(i) {
            r.prefetch(at);
        }
    }

    /// The loads a probe of bucket `i` makes, as (byte offset, length), for
    /// [`Geometry::lines_per_bucket`](super::Geometry::lines_per_bucket).
    fn loads(&self, i: u64, out: &mut Vec<(usize, usize)>);

    /// The slots of bucket `i` of the table `t`.
    fn read(&self, t: &[u8], i: u64) -> Slots;

    /// Stores `slots` as bucket `i`, where only slot `changed` differs from what [`read`]
    /// returned (a plain or packed bucket writes that slot alone; a semi-sorted one encodes
    /// the whole bucket, sorted).
    ///
    /// [`read`]: Codec::read
    fn store(&self, t: &mut [u8], i: u64, changed: usize, slots: &Slots);

    /// Stores `slots` (the first `b`) as bucket `i`, whatever it held.
    #[inline]
    fn store_all(&self, t: &mut [u8], i: u64, slots: &Slots) {
        for k in 0..self.slots() {
            self.store(t, i, k, slots);
        }
    }

    /// Checks that the whole region `r` holds well-formed buckets (padding is checked by the
    /// caller) and counts the occupied slots.
    fn scan(&self, r: Region<'_>, num_buckets: u64) -> Result<u64, String>;

    /// Puts `fp` into the first empty slot of bucket `i1`, else of bucket `i2`; false when both
    /// are full.
    #[inline]
    fn try_put(&self, t: &mut [u8], i1: u64, i2: u64, fp: u32) -> bool {
        let buckets = [i1, i2];
        for &i in &buckets[..if i1 == i2 { 1 } else { 2 }] {
            let mut s = self.read(t, i);
            if let Some(k) = s[..self.slots()].iter().position(|&v| v == 0) {
                s[k] = fp;
                self.store(t, i, k, &s);
                return true;
            }
        }
        false
    }

    /// Replaces one copy of `old` in `bucket` with `new`, trying slot `hint` first; false when
    /// the bucket holds no `old`. With the hint right (plain and packed buckets never move
    /// their slots) the bytes are exactly those before `old` was written there; a semi-sorted
    /// bucket is canonical, so any copy gives the same bytes.
    #[inline]
    fn replace(&self, t: &mut [u8], bucket: u64, hint: usize, old: u32, new: u32) -> bool {
        debug_assert!(hint < self.slots());
        let mut s = self.read(t, bucket);
        let slot = if s[hint] == old {
            hint
        } else {
            match s[..self.slots()].iter().position(|&v| v == old) {
                Some(k) => k,
                None => return false,
            }
        };
        s[slot] = new;
        self.store(t, bucket, slot, &s);
        true
    }

    /// Entries of bucket `i` that answer for a key whose slot value there is `q` (stretch
    /// levels, FORMAT.md §3.4: nonzero and equal to `q` above their marker).
    #[inline]
    fn count_prefix_in(&self, r: Region<'_>, i: u64, q: u32) -> u32 {
        let s = self.read(r.bytes(), i);
        let n = s[..self.slots()]
            .iter()
            .filter(|&&v| crate::hash::stretch::matches(v, q))
            .count();
        n as u32
    }

    /// Whether bucket `i1` holds an entry answering `q1` or bucket `i2` one answering `q2`.
    #[inline]
    fn contains_prefix(&self, r: Region<'_>, i1: u64, q1: u32, i2: u64, q2: u32) -> bool {
        self.count_prefix_in(r, i1, q1) + self.count_prefix_in(r, i2, q2) != 0
    }

    /// For a stretch level whose slots carry a payload from bit `shift` on (a run index's run
    /// ids, below 64): one bit per payload of the entries of bucket `i1` answering `q1` and of
    /// bucket `i2` answering `q2` (an entry answers when its bits below `shift` do, as
    /// [`count_prefix_in`](Codec::count_prefix_in) tests). This default decodes both buckets;
    /// a codec may test the slots where they lie instead.
    #[inline]
    fn payloads_prefix(
        &self,
        r: Region<'_>,
        i1: u64,
        q1: u32,
        i2: u64,
        q2: u32,
        shift: u32,
    ) -> u64 {
        let below = ((1u64 << shift) - 1) as u32;
        let mut found = 0u64;
        for (i, q) in [(i1, q1), (i2, q2)] {
            for &v in &self.read(r.bytes(), i)[..self.slots()] {
                let hit = crate::hash::stretch::matches(v & below, q);
                found |= u64::from(hit) << ((u64::from(v) >> shift) & 63);
            }
        }
        found
    }

    /// Clears one slot of `bucket` holding `fp`; false when there is none.
    #[inline]
    fn remove_one(&self, t: &mut [u8], bucket: u64, fp: u32) -> bool {
        let mut s = self.read(t, bucket);
        match s[..self.slots()].iter().position(|&v| v == fp) {
            Some(k) => {
                s[k] = 0;
                self.store(t, bucket, k, &s);
                true
            }
            None => false,
        }
    }
}

/// The codec of a table: one variant per concrete codec type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    P8x2(Plain<u8, 2>),
    P8x4(Plain<u8, 4>),
    P8x8(Plain<u8, 8>),
    P16x2(Plain<u16, 2>),
    P16x4(Plain<u16, 4>),
    P16x8(Plain<u16, 8>),
    P32x2(Plain<u32, 2>),
    P32x4(Plain<u32, 4>),
    P32x8(Plain<u32, 8>),
    Packed2(Packed<2>),
    Packed4(Packed<4>),
    Packed8(Packed<8>),
    Semi8(SemiFast<8>),
    Semi9(SemiFast<9>),
    Semi10(SemiFast<10>),
    Semi11(SemiFast<11>),
    Semi12(SemiFast<12>),
    Semi13(SemiFast<13>),
    Semi14(SemiFast<14>),
    Semi15(SemiFast<15>),
    Semi(Semi),
}

/// `with_codec!(layout, c => expr)`: evaluates `expr` with `c` bound to the concrete codec of
/// `layout` (one `match`; `expr` is compiled once per codec type).
macro_rules! with_codec {
    ($layout:expr, $c:ident => $e:expr) => {{
        use $crate::table::codec::Layout as L;
        match $layout {
            L::P8x2($c) => $e,
            L::P8x4($c) => $e,
            L::P8x8($c) => $e,
            L::P16x2($c) => $e,
            L::P16x4($c) => $e,
            L::P16x8($c) => $e,
            L::P32x2($c) => $e,
            L::P32x4($c) => $e,
            L::P32x8($c) => $e,
            L::Packed2($c) => $e,
            L::Packed4($c) => $e,
            L::Packed8($c) => $e,
            L::Semi8($c) => $e,
            L::Semi9($c) => $e,
            L::Semi10($c) => $e,
            L::Semi11($c) => $e,
            L::Semi12($c) => $e,
            L::Semi13($c) => $e,
            L::Semi14($c) => $e,
            L::Semi15($c) => $e,
            L::Semi($c) => $e,
        }
    }};
}
pub(crate) use with_codec;

impl Layout {
    /// [`Codec::read`] of this layout's codec.
    #[cfg(test)]
    pub(crate) fn read(&self, t: &[u8], i: u64) -> Slots {
        with_codec!(*self, c => c.read(t, i))
    }

    /// [`Codec::store`] of this layout's codec.
    #[cfg(test)]
    pub(crate) fn store(&self, t: &mut [u8], i: u64, changed: usize, slots: &Slots) {
        with_codec!(*self, c => c.store(t, i, changed, slots))
    }

    /// [`Codec::remove_one`] of this layout's codec.
    pub(crate) fn remove_one(&self, t: &mut [u8], bucket: u64, fp: u32) -> bool {
        with_codec!(*self, c => c.remove_one(t, bucket, fp))
    }

    /// The codec for `b` slots of `f` bits in `encoding` (a supported shape: see
    /// [`Encoding::supports`](super::Encoding::supports)).
    pub(crate) fn new(encoding: super::Encoding, b: u32, f: u32) -> Layout {
        use super::Encoding::*;
        match (encoding, f, b) {
            (Plain, 8, 2) => Layout::P8x2(Default::default()),
            (Plain, 8, 4) => Layout::P8x4(Default::default()),
            (Plain, 8, _) => Layout::P8x8(Default::default()),
            (Plain, 16, 2) => Layout::P16x2(Default::default()),
            (Plain, 16, 4) => Layout::P16x4(Default::default()),
            (Plain, 16, _) => Layout::P16x8(Default::default()),
            (Plain, _, 2) => Layout::P32x2(Default::default()),
            (Plain, _, 4) => Layout::P32x4(Default::default()),
            (Plain, _, _) => Layout::P32x8(Default::default()),
            (Packed, _, 2) => Layout::Packed2(super::packed::Packed::new(f)),
            (Packed, _, 4) => Layout::Packed4(super::packed::Packed::new(f)),
            (Packed, _, _) => Layout::Packed8(super::packed::Packed::new(f)),
            (SemiSorted, 8, _) => Layout::Semi8(SemiFast),
            (SemiSorted, 9, _) => Layout::Semi9(SemiFast),
            (SemiSorted, 10, _) => Layout::Semi10(SemiFast),
            (SemiSorted, 11, _) => Layout::Semi11(SemiFast),
            (SemiSorted, 12, _) => Layout::Semi12(SemiFast),
            (SemiSorted, 13, _) => Layout::Semi13(SemiFast),
            (SemiSorted, 14, _) => Layout::Semi14(SemiFast),
            (SemiSorted, 15, _) => Layout::Semi15(SemiFast),
            (SemiSorted, _, _) => Layout::Semi(Semi::new(f)),
        }
    }
}
