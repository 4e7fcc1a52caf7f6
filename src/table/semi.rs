//! Semi-sorted buckets (Fan et al. §5.2) for buckets of 4: the fingerprints are kept sorted,
//! so their four high 4-bit parts form a non-decreasing sequence, one of only 3,876 (the
//! multisets of 4 values out of 16). That sequence is stored as a 12-bit index instead of 16
//! bits: one bit saved per fingerprint. The low `f − 4` bits of each fingerprint follow,
//! in the sorted order (FORMAT.md §3.3).
//!
//! The index is the combinatorial-number-system rank of the sequence: with nibbles
//! `n0 ≤ n1 ≤ n2 ≤ n3`, `c_k = n_k + k` is strictly increasing in `0..19` and
//! `rank = C(c0, 1) + C(c1, 2) + C(c2, 3) + C(c3, 4)`, a bijection onto `0..3876`. Encoding
//! computes it with a few multiplications; decoding looks it up in an 8 KiB table built at
//! compile time.

use super::bits;
use super::codec::{Codec, Slots};
use super::raw::Region;
use super::swar::{Fields, Gather4};

/// The number of non-decreasing sequences of four 4-bit values: C(19, 4).
pub(crate) const COMBINATIONS: usize = 3876;

/// Bits of the index.
pub(crate) const INDEX_BITS: u32 = 12;

/// `C(n, k)` for the small arguments used here.
#[cfg(test)]
const fn choose(n: u32, k: u32) -> u32 {
    let mut num = 1u32;
    let mut den = 1u32;
    let mut i = 0;
    while i < k {
        if n < k {
            return 0;
        }
        num *= n - i;
        den *= i + 1;
        i += 1;
    }
    num / den
}

/// The index of the sorted nibbles `n` (each `< 16`, non-decreasing).
#[inline]
pub(crate) const fn rank(n: [u32; 4]) -> u32 {
    // C(c0,1) + C(c1,2) + C(c2,3) + C(c3,4) with c_k = n_k + k: the last three looked up (the
    // products they take cost the builder's encoding a third of its time).
    let t = &RANK_TERMS;
    n[0] + t[0][(n[1] & 15) as usize] as u32
        + t[1][(n[2] & 15) as usize] as u32
        + t[2][(n[3] & 15) as usize] as u32
}

/// `RANK_TERMS[k - 1][n]` is `C(n + k, k + 1)`: the term of [`rank`] for nibble `k` (1..=3)
/// with value `n`.
const RANK_TERMS: [[u16; 16]; 3] = build_rank_terms();

const fn build_rank_terms() -> [[u16; 16]; 3] {
    let mut t = [[0u16; 16]; 3];
    let mut n = 0;
    while n < 16 {
        let (c1, c2, c3) = (n + 1, n + 2, n + 3);
        t[0][n as usize] = (c1 * (c1 - 1) / 2) as u16;
        t[1][n as usize] = (c2 * (c2 - 1) * (c2 - 2) / 6) as u16;
        t[2][n as usize] = (c3 * (c3 - 1) * (c3 - 2) * (c3 - 3) / 24) as u16;
        n += 1;
    }
    t
}

/// `DECODE[index]` packs the four nibbles of `index`, nibble `k` at bits `4k`. Entries past
/// 3,875 (indexes no encoder produces) are 0; the verifier rejects them.
pub(crate) static DECODE: [u16; 4096] = build_decode();

const fn build_decode() -> [u16; 4096] {
    let mut table = [0u16; 4096];
    // The nibbles a ≤ b ≤ c ≤ d, each up to 15. (Written with `<=` and `+` rather than `< 16`
    // and `|`: the same table, but no mutation of these lines builds it again unchanged.)
    let mut a = 0;
    while a <= 15 {
        let mut b = a;
        while b <= 15 {
            let mut c = b;
            while c <= 15 {
                let mut d = c;
                while d <= 15 {
                    let r = rank([a, b, c, d]) as usize;
                    table[r] = (a + (b << 4) + (c << 8) + (d << 12)) as u16;
                    d += 1;
                }
                c += 1;
            }
            b += 1;
        }
        a += 1;
    }
    table
}

/// `SLOTS_WITH[index]` tells, for every nibble value `q`, which slots of a bucket with this
/// index hold a fingerprint whose high nibble is `q`: bits `4q .. 4q + 4`, bit `k` for slot `k`.
/// A probe finds its nibble's slots with one load, a shift and a mask. (Indexes past 3,875 have
/// the nibbles 0, 0, 0, 0, as in [`DECODE`]; the verifier rejects them.)
pub(crate) static SLOTS_WITH: [u64; 4096] = build_slots_with();

const fn build_slots_with() -> [u64; 4096] {
    let mut table = [0u64; 4096];
    let mut index = 0;
    while index < 4096 {
        let n = DECODE[index] as u64;
        let mut k = 0;
        while k < 4 {
            let q = (n >> (4 * k)) & 15;
            table[index] += 1 << (4 * q + k); // a bit of its own for each slot
            k += 1;
        }
        index += 1;
    }
    table
}

/// The slots of the bucket with index `index` (any 12 bits) whose high nibble is `q` (< 16).
#[inline(always)]
fn slots_with(index: u64, q: u64) -> u32 {
    ((SLOTS_WITH[(index & 0xFFF) as usize] >> (4 * q)) & 0xF) as u32
}

/// The four fingerprints of a bucket from its index and low parts, in sorted order.
#[inline(always)]
pub(crate) fn decode(index: u64, lows: [u32; 4], low_bits: u32) -> [u32; 4] {
    let n = DECODE[(index & 0xFFF) as usize] as u32;
    [
        (n & 15) << low_bits | lows[0],
        (n >> 4 & 15) << low_bits | lows[1],
        (n >> 8 & 15) << low_bits | lows[2],
        (n >> 12) << low_bits | lows[3],
    ]
}

/// `fps` in ascending order: a sorting network of five compare-exchanges, without branches
/// (the values are random, so a sort that branches mispredicts about every other compare).
#[inline(always)]
fn sort4(fps: [u32; 4]) -> [u32; 4] {
    let cx = |a: u32, b: u32| (a.min(b), a.max(b));
    let (a, b) = cx(fps[0], fps[1]);
    let (c, d) = cx(fps[2], fps[3]);
    let (a, c) = cx(a, c);
    let (b, d) = cx(b, d);
    let (b, c) = cx(b, c);
    [a, b, c, d]
}

/// Sorts `fps` and splits them into the index and the low parts.
#[inline]
pub(crate) fn encode(fps: [u32; 4], low_bits: u32) -> (u64, [u32; 4]) {
    let fps = sort4(fps);
    let low_mask = (1u32 << low_bits) - 1;
    let index = rank(fps.map(|f| f >> low_bits));
    (index as u64, fps.map(|f| f & low_mask))
}

/// The slot operations every semi-sorted codec shares, for low parts of `low` bits: the
/// bucket decoded through checked slices, encoded sorted, and a region checked bucket by bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slots4 {
    low: u32,
    bucket_bits: u64,
}

impl Slots4 {
    const fn new(f: u32) -> Slots4 {
        let low = f - 4;
        Slots4 {
            low,
            bucket_bits: (INDEX_BITS + 4 * low) as u64,
        }
    }

    /// Whether the index and two low parts fit one field of [`bits`] (at most 57 bits: low
    /// parts of up to 22 bits); then a bucket is read and written as two fields, not five.
    #[inline(always)]
    const fn halves(&self) -> bool {
        INDEX_BITS + 2 * self.low <= 57
    }

    fn read(&self, t: &[u8], i: u64) -> Slots {
        let pos = i * self.bucket_bits;
        let base = pos + INDEX_BITS as u64;
        let (low, m) = (self.low, (1u64 << self.low) - 1);
        let (index, lows) = if self.halves() {
            let a = bits::read(t, pos, INDEX_BITS + 2 * low);
            let b = bits::read(t, base + u64::from(2 * low), 2 * low);
            let part = |w: u64, k: u32| ((w >> (k * low)) & m) as u32;
            (
                a,
                [
                    part(a >> INDEX_BITS, 0),
                    part(a >> INDEX_BITS, 1),
                    part(b, 0),
                    part(b, 1),
                ],
            )
        } else {
            let at = |k: u64| bits::read(t, base + k * low as u64, low) as u32;
            (bits::read(t, pos, INDEX_BITS), [at(0), at(1), at(2), at(3)])
        };
        let fps = decode(index, lows, low);
        let mut s = [0u32; 8];
        s[..4].copy_from_slice(&fps);
        s
    }

    fn store(&self, t: &mut [u8], i: u64, slots: &Slots) {
        let pos = i * self.bucket_bits;
        let (index, lows) = encode([slots[0], slots[1], slots[2], slots[3]], self.low);
        let base = pos + INDEX_BITS as u64;
        let low = self.low;
        if self.halves() {
            let pair = |k: usize| u64::from(lows[k]) | u64::from(lows[k + 1]) << low;
            bits::write(t, pos, INDEX_BITS + 2 * low, index | pair(0) << INDEX_BITS);
            bits::write(t, base + u64::from(2 * low), 2 * low, pair(2));
        } else {
            bits::write(t, pos, INDEX_BITS, index);
            for (k, l) in lows.into_iter().enumerate() {
                bits::write(t, base + k as u64 * low as u64, low, l as u64);
            }
        }
    }

    fn scan(&self, t: &[u8], num_buckets: u64) -> Result<u64, String> {
        let mut n = 0;
        for i in 0..num_buckets {
            let index = bits::read(t, i * self.bucket_bits, INDEX_BITS) as usize;
            if index >= COMBINATIONS {
                return Err(format!(
                    "bucket {i} has the invalid semi-sorted index {index}"
                ));
            }
            let fps = self.read(t, i);
            if fps[..4].windows(2).any(|w| w[0] > w[1]) {
                return Err(format!("bucket {i} is not sorted"));
            }
            n += fps[..4].iter().filter(|&&f| f != 0).count() as u64;
        }
        Ok(n)
    }

    /// The window load of the field at bit `at`, for [`Codec::loads`].
    fn load(out: &mut Vec<(usize, usize)>, at: u64) {
        out.push(((at >> 3) as usize, 8));
    }
}

/// The query's two halves: its low part and its high nibble.
#[inline(always)]
const fn split(fp: u32, low: u32) -> (u64, u64) {
    ((fp & ((1 << low) - 1)) as u64, (fp >> low) as u64)
}

/// The semi-sorted codec for `F`-bit fingerprints, `F` in 8..=15, where a bucket (at most 56
/// bits) comes with one 8-byte load.
///
/// A probe compares the query's low part with the four stored ones at once
/// ([`Fields::equal`]), gathers the four flags with one multiplication ([`Gather4`]), and
/// looks up which slots hold the query's high nibble ([`SLOTS_WITH`]): a slot matches when
/// both do. No branch, and every shift and mask but the nibble's a constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct SemiFast<const F: u32>;

impl<const F: u32> SemiFast<F> {
    pub(crate) const LOW: u32 = {
        assert!(F >= 8 && F <= 15);
        F - 4
    };
    pub(crate) const BITS: u64 = (INDEX_BITS + 4 * Self::LOW) as u64;
    const LOWS: Fields = Fields::new(4, Self::LOW);
    const GATHER: Gather4 = Gather4::new(Self::LOW);
    const SLOTS: Slots4 = Slots4::new(F);

    /// One bit per slot of bucket `i` that holds `fp`.
    #[inline(always)]
    fn matches(r: Region<'_>, i: u64, fp: u32) -> u32 {
        let (q_low, q_nibble) = split(fp, Self::LOW);
        let w = r.window(i * Self::BITS);
        let lows = Self::LOWS.equal(w >> INDEX_BITS, q_low) >> (Self::LOW - 1);
        slots_with(w, q_nibble) & Self::GATHER.apply(lows)
    }
}

impl<const F: u32> Codec for SemiFast<F> {
    #[inline(always)]
    fn slots(&self) -> usize {
        4
    }

    #[inline(always)]
    fn contains(&self, r: Region<'_>, i1: u64, i2: u64, fp: u32) -> bool {
        let (q_low, q_nibble) = split(fp, Self::LOW);
        let (w1, w2) = (r.window(i1 * Self::BITS), r.window(i2 * Self::BITS));
        let equal = Self::LOWS.equal2(w1, w2, INDEX_BITS, q_low);
        if equal.none() {
            return false;
        }
        let [e1, e2] = equal.words();
        let m1 = slots_with(w1, q_nibble) & Self::GATHER.apply(e1 >> (Self::LOW - 1));
        let m2 = slots_with(w2, q_nibble) & Self::GATHER.apply(e2 >> (Self::LOW - 1));
        (m1 | m2) != 0
    }

    #[inline(always)]
    fn count_in(&self, r: Region<'_>, i: u64, fp: u32) -> u32 {
        Self::matches(r, i, fp).count_ones()
    }

    /// The stretch match without decoding: a stretch slot's marker lies in its low part (the
    /// core, of at least 4 bits, holds the high nibble), so the low parts are tested with
    /// [`Fields::prefix_match`] and the high nibble must be the query's exactly.
    #[inline(always)]
    fn count_prefix_in(&self, r: Region<'_>, i: u64, q: u32) -> u32 {
        let (q_low, q_nibble) = split(q, Self::LOW);
        let w = r.window(i * Self::BITS);
        let lows = Self::LOWS.prefix_match(w >> INDEX_BITS, q_low) >> (Self::LOW - 1);
        (slots_with(w, q_nibble) & Self::GATHER.apply(lows)).count_ones()
    }

    /// Both buckets' low parts first (an absent key's rarely match, and then the nibble
    /// table is not read).
    #[inline(always)]
    fn contains_prefix(&self, r: Region<'_>, i1: u64, q1: u32, i2: u64, q2: u32) -> bool {
        let ((l1, n1), (l2, n2)) = (split(q1, Self::LOW), split(q2, Self::LOW));
        let (w1, w2) = (r.window(i1 * Self::BITS), r.window(i2 * Self::BITS));
        let e1 = Self::LOWS.prefix_match(w1 >> INDEX_BITS, l1);
        let e2 = Self::LOWS.prefix_match(w2 >> INDEX_BITS, l2);
        if (e1 | e2) == 0 {
            return false;
        }
        let m1 = slots_with(w1, n1) & Self::GATHER.apply(e1 >> (Self::LOW - 1));
        let m2 = slots_with(w2, n2) & Self::GATHER.apply(e2 >> (Self::LOW - 1));
        (m1 | m2) != 0
    }

    #[inline(always)]
    fn bucket_byte(&self, i: u64) -> usize {
        ((i * Self::BITS) >> 3) as usize
    }

    fn loads(&self, i: u64, out: &mut Vec<(usize, usize)>) {
        Slots4::load(out, i * Self::BITS);
    }

    fn read(&self, t: &[u8], i: u64) -> Slots {
        // The whole bucket (at most 56 bits) with one load.
        let w = bits::read(t, i * Self::BITS, Self::BITS as u32);
        let low = |k: u32| ((w >> (INDEX_BITS + k * Self::LOW)) & ((1 << Self::LOW) - 1)) as u32;
        let fps = decode(w & 0xFFF, [low(0), low(1), low(2), low(3)], Self::LOW);
        let mut s = [0u32; 8];
        s[..4].copy_from_slice(&fps);
        s
    }

    fn store(&self, t: &mut [u8], i: u64, _changed: usize, slots: &Slots) {
        self.store_all(t, i, slots)
    }

    fn store_all(&self, t: &mut [u8], i: u64, slots: &Slots) {
        let (index, lows) = encode([slots[0], slots[1], slots[2], slots[3]], Self::LOW);
        let w = lows.iter().enumerate().fold(index, |w, (k, &l)| {
            w | (l as u64) << (INDEX_BITS + k as u32 * Self::LOW)
        });
        bits::write(t, i * Self::BITS, Self::BITS as u32, w);
    }

    fn scan(&self, r: Region<'_>, num_buckets: u64) -> Result<u64, String> {
        Self::SLOTS.scan(r.bytes(), num_buckets)
    }
}

/// The semi-sorted codec for the other widths: 7 bits (3-bit low parts, too narrow for the
/// one-multiplication gather) and 16 to 32 bits (buckets of 60 to 124 bits). Three loads: the
/// index, then the low parts two by two (at most 56 bits each), each pair compared at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Semi {
    slots: Slots4,
    /// Bits of a low part, `f − 4`.
    low: u32,
    /// Masks of two low parts.
    pair: Fields,
    /// Masks of all four low parts when they fit in a word (low parts of at most 16 bits),
    /// else of two (as `pair`): the run index's payload probe ([`Codec::payloads_prefix`]).
    /// (The codec stays within the size of the largest layout.)
    quad: Fields,
}

impl Semi {
    /// The codec for `f`-bit fingerprints (`7 ≤ f ≤ 32`).
    pub(crate) const fn new(f: u32) -> Semi {
        let low = f - 4;
        Semi {
            slots: Slots4::new(f),
            low,
            pair: Fields::new(2, low),
            quad: Fields::new(if low <= 16 { 4 } else { 2 }, low),
        }
    }

    /// One bit per slot of bucket `i` that holds `fp`.
    #[inline(always)]
    fn matches(&self, r: Region<'_>, i: u64, fp: u32) -> u32 {
        let q_low = split(fp, self.low).0;
        self.nibbles(r, i, fp) & self.low_flags(r, i, |w| self.pair.equal(w, q_low))
    }

    /// One bit per slot of bucket `i`, from `test` applied to its low parts two by two (a
    /// [`Fields`] test of `self.pair`, flagging a field by its top bit).
    #[inline(always)]
    fn low_flags(&self, r: Region<'_>, i: u64, test: impl Fn(u64) -> u64) -> u32 {
        let lows = i * self.slots.bucket_bits + INDEX_BITS as u64;
        let first = test(r.window(lows));
        let second = test(r.window(lows + 2 * self.low as u64));
        let (a, b) = (self.low - 1, 2 * self.low - 1);
        (((first >> a) & 1)
            | ((first >> b) & 1) << 1
            | ((second >> a) & 1) << 2
            | ((second >> b) & 1) << 3) as u32
    }

    /// Which slots of bucket `i` hold the high nibble of `q`.
    #[inline(always)]
    fn nibbles(&self, r: Region<'_>, i: u64, q: u32) -> u32 {
        slots_with(r.window(i * self.slots.bucket_bits), split(q, self.low).1)
    }

    /// One bit per slot of bucket `i` that answers the stretch slot value `q`: the high
    /// nibble equal, the low parts tested two by two with [`Fields::prefix_match`] (the
    /// marker lies in the low part, as for [`SemiFast`]).
    #[inline(always)]
    fn prefix_matches(&self, r: Region<'_>, i: u64, q: u32) -> u32 {
        let lows = self.prefix_lows(r, i, q);
        if lows == 0 {
            return 0;
        }
        self.nibbles(r, i, q) & lows
    }

    /// One bit per slot of bucket `i` whose low part answers the low part of `q`.
    #[inline(always)]
    fn prefix_lows(&self, r: Region<'_>, i: u64, q: u32) -> u32 {
        let q_low = split(q, self.low).0;
        self.low_flags(r, i, |w| self.pair.prefix_match(w, q_low))
    }
}

impl Semi {
    /// The flags of bucket `i`'s low parts that answer the low part `q_low` of a stretch slot
    /// value as [`Fields::prefix_match`] tests them, each masked by `keep` first (the bits
    /// below a payload, repeated in the fields of `quad`). With low parts of at most 16 bits,
    /// the four come with one 16-byte load and one test; wider ones two by two, as
    /// [`Semi::prefix_lows`] reads them.
    /// `narrow`: `keep` leaves the top two bits of every part clear (a payload of at least 6
    /// bits), and [`Fields::prefix_match_narrow`] does. Nonzero exactly when a part answers;
    /// the flags are left where the tests put them (each field's top bit) until
    /// [`Semi::gather`] collects them.
    #[inline(always)]
    fn prefix_flags(&self, r: Region<'_>, i: u64, q_low: u64, keep: u64, narrow: bool) -> [u64; 2] {
        let test = |f: &Fields, w: u64| {
            if narrow {
                f.prefix_match_narrow(w & keep, q_low)
            } else {
                f.prefix_match(w & keep, q_low)
            }
        };
        let lows = i * self.slots.bucket_bits + INDEX_BITS as u64;
        if self.low <= 16 {
            let at = (lows >> 3) as usize;
            let word = (u128::from_le_bytes(r.bytes16(at)) >> (lows & 7)) as u64;
            [test(&self.quad, word), 0]
        } else {
            [
                test(&self.pair, r.window(lows)),
                test(&self.pair, r.window(lows + 2 * self.low as u64)),
            ]
        }
    }

    /// One bit per slot of bucket `i` whose low part may answer the stretch slot value `q`
    /// below a payload at bit `shift` (as [`Codec::payloads_prefix`] flags them: a superset
    /// of the slots whose value answers; [`slot_value`](Self::slot_value) gives each value to
    /// confirm). A run index's compaction finds a kept key's entries with it instead of
    /// decoding both buckets.
    #[inline(always)]
    pub(crate) fn payload_flags(&self, r: Region<'_>, i: u64, q: u32, shift: u32) -> u32 {
        let low = self.low;
        let keep = self.quad.repeat((1 << shift.min(low)) - 1);
        let narrow = shift + 2 <= low;
        self.gather(self.prefix_flags(r, i, split(q, low).0, keep, narrow))
    }

    /// The value of slot `k` (0 to 3) of bucket `i`, as [`Codec::read`] decodes it: its high
    /// nibble from the bucket's index, its low part.
    #[inline(always)]
    pub(crate) fn slot_value(&self, r: Region<'_>, i: u64, k: u32) -> u32 {
        let pos = i * self.slots.bucket_bits;
        let nibbles = DECODE[(r.window(pos) & 0xFFF) as usize] as u32;
        let part =
            r.window(pos + INDEX_BITS as u64 + u64::from(k * self.low)) & ((1 << self.low) - 1);
        ((nibbles >> (4 * k)) & 15) << self.low | part as u32
    }

    /// [`prefix_flags`](Self::prefix_flags)' flags as bits `0..4`, one per slot.
    #[inline(always)]
    fn gather(&self, words: [u64; 2]) -> u32 {
        let low = self.low;
        let (a, b) = if low <= 16 {
            (words[0], words[0] >> (2 * low))
        } else {
            (words[0], words[1])
        };
        (((a >> (low - 1)) & 1)
            | ((a >> (2 * low - 1)) & 1) << 1
            | ((b >> (low - 1)) & 1) << 2
            | ((b >> (2 * low - 1)) & 1) << 3) as u32
    }
}

/// The payloads (one bit each) of the slots `flags` names (bits `0..4`) of the buckets
/// `buckets` (bucket, the key's slot value there, flags) that answer the value below `shift`:
/// each flagged slot's value is put together from its high nibble (the bucket's index) and
/// its low part (`low` bits; buckets of `bucket_bits`), and tested as the decoded path tests
/// it. Out of line: an absent key rarely gets here.
#[inline(never)]
fn flagged_payloads(
    r: Region<'_>,
    low: u32,
    bucket_bits: u64,
    shift: u32,
    buckets: [(u64, u32, u32); 2],
) -> u64 {
    let below = ((1u64 << shift) - 1) as u32;
    let mut found = 0u64;
    for (i, q, mut flags) in buckets {
        if flags == 0 {
            continue;
        }
        let pos = i * bucket_bits;
        let nibbles = DECODE[(r.window(pos) & 0xFFF) as usize] as u32;
        let lows = pos + INDEX_BITS as u64;
        while flags != 0 {
            let k = flags.trailing_zeros();
            flags &= flags - 1;
            let part = r.window(lows + u64::from(k * low)) & ((1 << low) - 1);
            let v = ((nibbles >> (4 * k)) & 15) << low | part as u32;
            if crate::hash::stretch::matches(v & below, q) {
                found |= 1 << ((u64::from(v) >> shift) & 63);
            }
        }
    }
    found
}

impl Codec for Semi {
    #[inline(always)]
    fn slots(&self) -> usize {
        4
    }

    #[inline(always)]
    fn contains(&self, r: Region<'_>, i1: u64, i2: u64, fp: u32) -> bool {
        (self.matches(r, i1, fp) | self.matches(r, i2, fp)) != 0
    }

    #[inline(always)]
    fn count_in(&self, r: Region<'_>, i: u64, fp: u32) -> u32 {
        self.matches(r, i, fp).count_ones()
    }

    /// Without decoding (the default reads and decodes the whole bucket, out of line: at
    /// 32 M keys, where a grown filter's newer level has 17-bit slots, a lookup's two
    /// buckets were then fetched one after the other).
    #[inline(always)]
    fn count_prefix_in(&self, r: Region<'_>, i: u64, q: u32) -> u32 {
        self.prefix_matches(r, i, q).count_ones()
    }

    /// Both buckets' low parts first, as [`SemiFast`] does.
    #[inline(always)]
    fn contains_prefix(&self, r: Region<'_>, i1: u64, q1: u32, i2: u64, q2: u32) -> bool {
        let (e1, e2) = (self.prefix_lows(r, i1, q1), self.prefix_lows(r, i2, q2));
        if (e1 | e2) == 0 {
            return false;
        }
        (self.nibbles(r, i1, q1) & e1 | self.nibbles(r, i2, q2) & e2) != 0
    }

    /// Without decoding: both buckets' low parts, the payload's bits among them masked out,
    /// tested with [`Fields::prefix_match`] ([`Semi::prefix_flags`]: a stretch slot's marker
    /// lies in its low part); only when a part answers are the flagged slots read one by one
    /// ([`flagged_payloads`]).
    #[inline(always)]
    fn payloads_prefix(
        &self,
        r: Region<'_>,
        i1: u64,
        q1: u32,
        i2: u64,
        q2: u32,
        shift: u32,
    ) -> u64 {
        let low = self.low;
        let keep = self.quad.repeat((1 << shift.min(low)) - 1);
        let (l1, l2) = (split(q1, low).0, split(q2, low).0);
        let narrow = shift + 2 <= low;
        let w1 = self.prefix_flags(r, i1, l1, keep, narrow);
        let w2 = self.prefix_flags(r, i2, l2, keep, narrow);
        if (w1[0] | w1[1] | w2[0] | w2[1]) == 0 {
            return 0;
        }
        let buckets = [(i1, q1, self.gather(w1)), (i2, q2, self.gather(w2))];
        flagged_payloads(r, low, self.slots.bucket_bits, shift, buckets)
    }

    #[inline(always)]
    fn bucket_byte(&self, i: u64) -> usize {
        ((i * self.slots.bucket_bits) >> 3) as usize
    }

    fn loads(&self, i: u64, out: &mut Vec<(usize, usize)>) {
        let pos = i * self.slots.bucket_bits;
        Slots4::load(out, pos);
        Slots4::load(out, pos + INDEX_BITS as u64);
        Slots4::load(out, pos + (INDEX_BITS + 2 * self.low) as u64);
    }

    fn read(&self, t: &[u8], i: u64) -> Slots {
        self.slots.read(t, i)
    }

    fn store(&self, t: &mut [u8], i: u64, _changed: usize, slots: &Slots) {
        self.slots.store(t, i, slots)
    }

    fn store_all(&self, t: &mut [u8], i: u64, slots: &Slots) {
        self.slots.store(t, i, slots)
    }

    fn scan(&self, r: Region<'_>, num_buckets: u64) -> Result<u64, String> {
        self.slots.scan(r.bytes(), num_buckets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_with_lists_the_slots_of_each_nibble() {
        for index in 0..4096u64 {
            let n = DECODE[index as usize] as u64;
            for q in 0..16 {
                let want =
                    (0..4).fold(0, |acc, k| acc | ((((n >> (4 * k)) & 15) == q) as u32) << k);
                assert_eq!(slots_with(index, q), want, "index {index} q {q}");
            }
        }
        // Any 12 bits select an entry; higher bits are ignored.
        assert_eq!(slots_with(0xF000 | 5, 3), slots_with(5, 3));
    }

    /// FORMAT.md §3.3's worked example: the index, the low parts, and the region's bytes.
    #[test]
    fn format_md_worked_example() {
        let fps = [0x3FE, 0x0A3, 0x2C0, 0x1FF];
        assert_eq!(encode(fps, 6), (3376, [0x23, 0x3F, 0x00, 0x3E]));
        let c = SemiFast::<10>;
        let mut region = [0u8; 64];
        let mut slots = [0u32; 8];
        slots[..4].copy_from_slice(&fps);
        c.store_all(&mut region, 1, &slots);
        assert_eq!(
            region[..9],
            [0x00, 0x00, 0x00, 0x00, 0x00, 0xD3, 0xE3, 0x0F, 0xF8]
        );
        assert!(region[9..].iter().all(|&b| b == 0));
        assert_eq!(c.read(&region, 1)[..4], [0x0A3, 0x1FF, 0x2C0, 0x3FE]);
    }

    #[test]
    fn sort4_sorts_every_order_of_every_pattern() {
        // Every assignment of the values 0..4 to four places (repeats included): 256 inputs,
        // each sorted as the standard sort sorts it.
        for code in 0..256u32 {
            let v = [code & 3, code >> 2 & 3, code >> 4 & 3, code >> 6 & 3].map(|x| x * 1000 + 7);
            let mut want = v;
            want.sort_unstable();
            assert_eq!(sort4(v), want, "{v:?}");
        }
        assert_eq!(sort4([u32::MAX, 0, 5, 5]), [0, 5, 5, u32::MAX]);
    }

    #[test]
    fn rank_is_a_bijection_onto_0_to_3875() {
        let mut seen = vec![false; COMBINATIONS];
        let mut count = 0;
        for a in 0..16 {
            for b in a..16 {
                for c in b..16 {
                    for d in c..16 {
                        let r = rank([a, b, c, d]) as usize;
                        // The combinatorial number system of the module docs.
                        let sum = a + choose(b + 1, 2) + choose(c + 2, 3) + choose(d + 3, 4);
                        assert_eq!(r, sum as usize);
                        assert!(r < COMBINATIONS);
                        assert!(!seen[r], "rank {r} twice");
                        seen[r] = true;
                        count += 1;
                        let packed = DECODE[r];
                        assert_eq!(packed, (a | b << 4 | c << 8 | d << 12) as u16);
                    }
                }
            }
        }
        assert_eq!(count, COMBINATIONS);
        assert_eq!(choose(19, 4) as usize, COMBINATIONS);
        assert!(DECODE[COMBINATIONS..].iter().all(|&x| x == 0));
        assert_eq!(rank([0, 0, 0, 0]), 0);
        assert_eq!(rank([15, 15, 15, 15]), 3875);
    }

    #[test]
    fn every_combination_round_trips_through_encode_and_decode() {
        for low_bits in [1u32, 4, 6, 12, 28] {
            let low_mask = (1u32 << low_bits) - 1;
            for index in 0..COMBINATIONS as u64 {
                let n = DECODE[index as usize] as u32;
                let nibbles = [n & 15, n >> 4 & 15, n >> 8 & 15, n >> 12];
                // Low parts that put equal nibbles in a sorted order.
                let lows = [0, 1, 2, 3].map(|k: u32| (k.wrapping_mul(0x9E37_79B9) >> 3) & low_mask);
                let mut fps = [0u32; 4];
                for k in 0..4 {
                    fps[k] = nibbles[k] << low_bits | lows[k];
                }
                fps.sort_unstable();
                let (i, l) = encode(fps, low_bits);
                assert_eq!(i, index);
                assert_eq!(decode(i, l, low_bits), fps);
                // Any order of the same fingerprints encodes the same way.
                let (i2, l2) = encode([fps[3], fps[1], fps[0], fps[2]], low_bits);
                assert_eq!((i2, l2), (i, l));
            }
        }
    }
}
