//! SWAR ("SIMD within a register"): compare a query with every field of a 64-bit word at once.
//! The bit-packed and semi-sorted probes use it to test all the fingerprints a load brings in
//! without cutting them out one by one.

use wide::{u8x16, u64x2};

/// `n` fields of `w` bits each, packed from bit 0 of a word (`n·w ≤ 64`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fields {
    /// The lowest bit of every field: `q · rep` repeats `q` in every field.
    rep: u64,
    /// The low `w − 1` bits of every field.
    low: u64,
    /// The top bit of every field.
    high: u64,
}

impl Fields {
    /// The masks of `n` fields of `w` bits (`1 ≤ w`, `n·w ≤ 64`).
    pub(crate) const fn new(n: u32, w: u32) -> Fields {
        assert!(w >= 1 && n * w <= 64);
        let mut f = Fields {
            rep: 0,
            low: 0,
            high: 0,
        };
        let mut k = 0;
        while k < n {
            let at = k * w;
            f.rep |= 1 << at;
            f.low |= ((1u64 << (w - 1)) - 1) << at;
            f.high |= 1 << (at + w - 1);
            k += 1;
        }
        f
    }

    /// The masks `(rep, low, high)`: the lowest bit, the low `w − 1` bits and the top bit of
    /// every field (for the AVX2 probe, which applies [`equal`](Self::equal) to vectors).
    #[cfg(target_arch = "x86_64")]
    pub(crate) const fn masks(&self) -> (u64, u64, u64) {
        (self.rep, self.low, self.high)
    }

    /// `v` (below `2^w`) repeated in every field.
    #[inline(always)]
    pub(crate) const fn repeat(&self, v: u64) -> u64 {
        v.wrapping_mul(self.rep)
    }

    /// The top bit of every field of `word` that equals `q` (`q < 2^w`). Bits of `word` above
    /// the fields are ignored.
    ///
    /// Exact for every field, not only the lowest that matches: `(x & low) + low` sets a
    /// field's top bit iff its low bits are not all zero, and cannot carry out of the field
    /// (`2·(2^(w−1) − 1) < 2^w`); or-ing `x` adds the field's own top bit.
    #[inline(always)]
    pub(crate) const fn equal(&self, word: u64, q: u64) -> u64 {
        let x = word ^ q.wrapping_mul(self.rep);
        !((x & self.low).wrapping_add(self.low) | x) & self.high
    }

    /// The top bit of every field of `word` that answers for `q` as a stretch level's entry
    /// does (FORMAT.md §3.4): nonzero, and equal to `q` on every bit above its lowest set bit
    /// (the marker). Bits of `word` above the fields are ignored.
    ///
    /// Per field `x`: `y = (x | top) − 1` cannot borrow out of the field, and its low `w − 1`
    /// bits are those of `x − 1` (for `x ≠ 0`), so `x ^ y` is the marker and every bit below
    /// it, except for a top bit that is wrong when `x`'s own top bit is clear; and-ing with
    /// `x | !top` clears it. What is left of `x ^ q` above that must be zero.
    #[inline(always)]
    pub(crate) const fn prefix_match(&self, word: u64, q: u64) -> u64 {
        let fields = self.low | self.high;
        let x = word & fields;
        let below = (x ^ (x | self.high).wrapping_sub(self.rep)) & (x | !self.high);
        let diff = (x ^ q.wrapping_mul(self.rep)) & !below & fields;
        let zero = !((diff & self.low).wrapping_add(self.low) | diff) & self.high;
        let nonzero = ((x & self.low).wrapping_add(self.low) | x) & self.high;
        zero & nonzero
    }

    /// [`prefix_match`](Self::prefix_match) for narrow fields: every bit of `word` outside
    /// the low `w − 2` bits of its fields is clear, and `q < 2^(w−2)` (a run index's low
    /// parts, whose top two bits are payload bits masked out). Fewer operations, as the two
    /// free bits do the work of the general test's masks.
    ///
    /// Per field `x`: `(x | top) − 1` cannot borrow out of the field, so `m = x ^ ((x | top) −
    /// 1)` is, for `x ≠ 0`, the top bit, the marker and every bit below it (bit `w − 2` clear,
    /// as the marker lies below it), and for `x = 0` the low `w − 1` bits (bit `w − 2` set).
    /// `bad = ((x ^ q) & !m) | (m & bit w − 2)` is then zero exactly when `x ≠ 0` agrees with
    /// `q` above its marker, and below `2^(w−1)`, so `bad + (2^(w−1) − 1)` sets the top bit
    /// exactly when `bad ≠ 0`, without a carry out of the field.
    #[inline(always)]
    pub(crate) const fn prefix_match_narrow(&self, word: u64, q: u64) -> u64 {
        let m = word ^ (word | self.high).wrapping_sub(self.rep);
        let bad = ((word ^ q.wrapping_mul(self.rep)) & !m) | (m & (self.high >> 1));
        !bad.wrapping_add(self.low) & self.high
    }

    /// [`equal`](Self::equal) for two words at once, each shifted right by `shift` first: the
    /// flags of `a` in lane 0, of `b` in lane 1 (one SSE2 vector on x86-64, where the two
    /// buckets of a lookup are tested with one instruction per step).
    #[inline(always)]
    pub(crate) fn equal2(&self, a: u64, b: u64, shift: u32, q: u64) -> Pair {
        let x = (u64x2::new([a, b]) >> shift) ^ u64x2::splat(q.wrapping_mul(self.rep));
        let low = u64x2::splat(self.low);
        Pair(!(((x & low) + low) | x) & u64x2::splat(self.high))
    }
}

/// The flags of two words from [`Fields::equal2`].
#[derive(Clone, Copy)]
pub(crate) struct Pair(u64x2);

impl Pair {
    /// Whether no flag is set in either word.
    #[inline(always)]
    pub(crate) fn none(self) -> bool {
        bytemuck::cast::<u64x2, u8x16>(self.0)
            .simd_eq(u8x16::ZERO)
            .all()
    }

    /// The two words of flags.
    #[inline(always)]
    pub(crate) fn words(self) -> [u64; 2] {
        self.0.to_array()
    }
}

/// Gathers flags at bits `0, s, 2s, 3s` into bits `0..4` (`4 ≤ s ≤ 20`) with one
/// multiplication: term `j` of the multiplier moves bit `k·s` to `(3 + k − j)·s + j`, which is
/// `3s + k` for `j = k`; for `s ≥ 4` no two terms meet (their positions differ by a multiple
/// of `s` plus at most 3), so nothing carries into the four bits read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Gather4 {
    multiplier: u64,
    shift: u32,
}

impl Gather4 {
    /// The gather for stride `s` (`4 ≤ s ≤ 20`; other strides give a gather that is never
    /// applied).
    pub(crate) const fn new(s: u32) -> Gather4 {
        if s < 4 || s > 20 {
            return Gather4 {
                multiplier: 0,
                shift: 0,
            };
        }
        Gather4 {
            multiplier: (1u64 << (3 * s)) | (1 << (2 * s + 1)) | (1 << (s + 2)) | (1 << 3),
            shift: 3 * s,
        }
    }

    /// Flags at bits `0, s, 2s, 3s` gathered into bits `0..4`.
    #[inline(always)]
    pub(crate) const fn apply(&self, flags: u64) -> u32 {
        ((flags.wrapping_mul(self.multiplier) >> self.shift) & 0xF) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::SplitMix64;

    /// Against a field-by-field model: random words and queries, plus words built to match.
    #[test]
    fn equal_flags_exactly_the_equal_fields() {
        let mut rng = SplitMix64::new(17);
        for w in 1..=32u32 {
            for n in 1..=(64 / w).min(8) {
                let f = Fields::new(n, w);
                let mask = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
                for _ in 0..2000 {
                    let q = rng.next_u64() & mask;
                    let mut word = rng.next_u64();
                    // Plant the query, zero and near misses in some fields.
                    for k in 0..n {
                        let v = match rng.below(4) {
                            0 => q,
                            1 => 0,
                            2 => q ^ (1 << rng.below(w as u64)),
                            _ => rng.next_u64() & mask,
                        };
                        word = (word & !(mask << (k * w))) | (v << (k * w));
                    }
                    let want = (0..n).fold(0u64, |acc, k| {
                        let field = (word >> (k * w)) & mask;
                        acc | (((field == q) as u64) << (k * w + w - 1))
                    });
                    assert_eq!(
                        f.equal(word, q),
                        want,
                        "n={n} w={w} q={q:#x} word={word:#x}"
                    );
                    // Two words at once, each shifted first, flag what the one-word test
                    // flags in each (the planted fields survive a shift that brings in the
                    // bits below them).
                    let sh = rng.below(13) as u32;
                    let a = word << sh | (rng.next_u64() & ((1 << sh) - 1));
                    let b = rng.next_u64();
                    let each = [f.equal(a >> sh, q), f.equal(b >> sh, q)];
                    let pair = f.equal2(a, b, sh, q);
                    assert_eq!(pair.words(), each, "n={n} w={w} q={q:#x} a={a:#x} b={b:#x}");
                    assert_eq!(pair.none(), each == [0, 0]);
                    if (n * w + sh) <= 64 {
                        assert_eq!(each[0], want);
                    }
                }
            }
        }
    }

    /// Against a field-by-field model of the stretch match: random fields, fields that agree
    /// with the query above their marker, empty fields, markers at every position.
    #[test]
    fn prefix_match_flags_exactly_the_answering_fields() {
        let model = |v: u64, q: u64| v != 0 && (v ^ q) & !(v ^ (v - 1)) == 0;
        let mut rng = SplitMix64::new(29);
        for w in 2..=20u32 {
            for n in 1..=(64 / w).min(4) {
                let f = Fields::new(n, w);
                let mask = (1u64 << w) - 1;
                for _ in 0..3000 {
                    let q = rng.next_u64() & mask | 1;
                    let mut word = rng.next_u64();
                    for k in 0..n {
                        let marker = rng.below(w as u64) as u32;
                        let v = match rng.below(5) {
                            0 => 0,
                            // q's bits above the marker, the marker, zeros below
                            1 | 2 => (q >> (marker + 1) << (marker + 1)) | 1 << marker,
                            // the same with one bit above the marker flipped
                            3 if marker + 1 < w => {
                                let v = (q >> (marker + 1) << (marker + 1)) | 1 << marker;
                                v ^ 1 << (marker + 1 + rng.below((w - marker - 1) as u64) as u32)
                            }
                            _ => rng.next_u64() & mask,
                        };
                        word = (word & !(mask << (k * w))) | (v << (k * w));
                    }
                    let want = (0..n).fold(0u64, |acc, k| {
                        let v = (word >> (k * w)) & mask;
                        acc | ((model(v, q) as u64) << (k * w + w - 1))
                    });
                    assert_eq!(
                        f.prefix_match(word, q),
                        want,
                        "n={n} w={w} q={q:#x} word={word:#x}"
                    );
                }
            }
        }
    }

    /// The narrow test flags what the general one does on every word it is made for (the top
    /// two bits of every field clear, nothing above the fields): random fields, fields that
    /// answer the query, near misses, empty fields, and every field width with room for a
    /// marker and a bit above it.
    #[test]
    fn narrow_prefix_match_agrees_with_the_general_one() {
        let model = |v: u64, q: u64| v != 0 && (v ^ q) & !(v ^ (v - 1)) == 0;
        let mut rng = SplitMix64::new(31);
        let mut hits = 0u64;
        for w in 3..=32u32 {
            for n in 1..=(64 / w).min(4) {
                let f = Fields::new(n, w);
                let (mask, narrow) = ((1u64 << w) - 1, (1u64 << (w - 2)) - 1);
                for _ in 0..3000 {
                    let q = rng.next_u64() & narrow | 1;
                    let mut word = 0u64;
                    for k in 0..n {
                        let marker = rng.below(u64::from(w - 2)) as u32;
                        let agree = (q >> (marker + 1) << (marker + 1)) | 1 << marker;
                        let v = match rng.below(5) {
                            0 => 0,
                            1 | 2 => agree,
                            3 if marker + 3 < w => {
                                agree
                                    ^ 1 << (marker
                                        + 1
                                        + rng.below(u64::from(w - 3 - marker)) as u32)
                            }
                            _ => rng.next_u64() & narrow,
                        };
                        word |= v << (k * w);
                    }
                    let want = (0..n).fold(0u64, |acc, k| {
                        let v = (word >> (k * w)) & mask;
                        acc | ((model(v, q) as u64) << (k * w + w - 1))
                    });
                    let got = f.prefix_match_narrow(word, q);
                    assert_eq!(got, want, "n={n} w={w} q={q:#x} word={word:#x}");
                    assert_eq!(got, f.prefix_match(word, q), "n={n} w={w}");
                    hits += u64::from(want != 0);
                }
            }
        }
        assert!(hits > 10_000, "{hits}");
    }

    #[test]
    fn gather4_collects_every_pattern() {
        for s in 4..=20u32 {
            for pattern in 0..16u64 {
                let mut flags = 0u64;
                for k in 0..4 {
                    flags |= ((pattern >> k) & 1) << (k * s);
                }
                assert_eq!(Gather4::new(s).apply(flags) as u64, pattern, "s={s}");
            }
        }
    }
}
