//! Semi-sorted buckets (Fan et al. §5.2) for buckets of 4: the fingerprints are kept sorted,
//! so their four high 4-bit parts form a non-decreasing sequence, one of only 3,876 (the
//! multisets of 4 values out of 16). That sequence is stored as a 12-bit index instead of 16
//! bits: one bit saved per fingerprint. The low `f − 4` bits of each fingerprint follow,
//! in the sorted order (FORMAT.md §3.3).
//!
//! The index is the combinatorial-number-system rank of the sequence: with nibbles
//! `n0 ≤ n1 ≤ n2 ≤ n3`, `c_k = n_k + k` is strictly increasing in `0..19` and
//! `rank = C(c0, 1) + C(c1, 2) + C(c2, 3) + C(c3, 4)`, a bijection onto `0..3876`. Encoding
//! computes it with a few multiplications; decoding looks it up in a 7.6 KiB table built at
//! compile time.

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
    // C(c,1) + C(c,2) + C(c,3) + C(c,4) with c_k = n_k + k, written out for speed.
    let (c0, c1, c2, c3) = (n[0], n[1] + 1, n[2] + 2, n[3] + 3);
    c0 + c1 * (c1 - 1) / 2 + c2 * (c2 - 1) * (c2 - 2) / 6 + c3 * (c3 - 1) * (c3 - 2) * (c3 - 3) / 24
}

/// `DECODE[index]` packs the four nibbles of `index`, nibble `k` at bits `4k`. Entries past
/// 3,875 (indexes no encoder produces) are 0; the verifier rejects them.
pub(crate) static DECODE: [u16; 4096] = build_decode();

const fn build_decode() -> [u16; 4096] {
    let mut table = [0u16; 4096];
    let mut a = 0;
    while a < 16 {
        let mut b = a;
        while b < 16 {
            let mut c = b;
            while c < 16 {
                let mut d = c;
                while d < 16 {
                    let r = rank([a, b, c, d]) as usize;
                    table[r] = (a | b << 4 | c << 8 | d << 12) as u16;
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

/// Sorts `fps` and splits them into the index and the low parts.
#[inline]
pub(crate) fn encode(mut fps: [u32; 4], low_bits: u32) -> (u64, [u32; 4]) {
    fps.sort_unstable();
    let low_mask = (1u32 << low_bits) - 1;
    let index = rank(fps.map(|f| f >> low_bits));
    (index as u64, fps.map(|f| f & low_mask))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_is_a_bijection_onto_0_to_3875() {
        let mut seen = vec![false; COMBINATIONS];
        let mut count = 0;
        for a in 0..16 {
            for b in a..16 {
                for c in b..16 {
                    for d in c..16 {
                        let r = rank([a, b, c, d]) as usize;
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
