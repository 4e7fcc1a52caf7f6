//! Radix sorts of 64-bit values for [`FilterBuilder`](crate::FilterBuilder): its seeded hashes,
//! and the keys its second pass takes in second-bucket order.
//!
//! Both sorts make one pass over the whole input that scatters it by its top bits into
//! buckets small enough for L2 cache (up to 2^11 of them: few enough streams for the TLB), then
//! finish each bucket in cache with least-significant-digit passes of up to 11 bits. Uniform
//! values (hashes) take three passes in all, each reading and writing every value once, where
//! `sort_unstable` compares each value about log2(n) times with unpredictable branches.

use crate::error::{Error, Result};

/// A zeroed buffer of `u64` for a sort to scatter into, as long as the values it sorts.
///
/// A large one is anonymous mapped memory whose pages the kernel provides all at once (Linux's
/// `MAP_POPULATE`): a fresh buffer of 32 M values otherwise takes 65 536 page faults, one per
/// 4 KiB page, about half the cost of the pass that fills it. A small one, or where mapping
/// fails, is a `Vec`.
pub(crate) enum Scratch {
    /// Anonymous mapped memory (zeroed by the kernel) and the number of values it holds.
    Mapped(memmap2::MmapMut, usize),
    /// Heap memory.
    Heap(Vec<u64>),
}

impl Scratch {
    /// Buffers of fewer values than this (2 MiB) are allocated on the heap: mapping costs
    /// system calls.
    const MAP_FROM: usize = 1 << 18;

    /// A zeroed buffer of `n` values, or [`Error::OutOfMemory`].
    pub(crate) fn new(n: usize) -> Result<Scratch> {
        let bytes = n
            .checked_mul(8)
            .ok_or(Error::OutOfMemory { bytes: u64::MAX })?;
        if n >= Self::MAP_FROM {
            let map = memmap2::MmapOptions::new().len(bytes).populate().map_anon();
            if let Ok(map) = map {
                return Ok(Scratch::Mapped(map, n));
            }
        }
        let mut v = Vec::new();
        v.try_reserve_exact(n).map_err(|_| Error::OutOfMemory {
            bytes: bytes as u64,
        })?;
        v.resize(n, 0);
        Ok(Scratch::Heap(v))
    }

    /// The buffer's values.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u64] {
        match self {
            Scratch::Mapped(map, n) => &mut bytemuck::cast_slice_mut(&mut map[..])[..*n],
            Scratch::Heap(v) => v,
        }
    }
}

/// The widest digit, in bits: 2^11 counters (16 KiB) stay in L1 cache and 2^11 write streams
/// stay within the TLB.
const MAX_DIGIT: u32 = 11;

/// Buckets the top pass aims for, as a power of two of values (2^13 values, 64 KiB: the bucket
/// and its copy fit in L2 cache).
const BUCKET_LOG2: u32 = 13;

/// Below this many values a bucket is sorted by comparisons: fewer than the counters a radix
/// pass would clear.
const SMALL: usize = 64;

/// Extra bits an [`sort`] bucket is radix-sorted by beyond log2 of its length, so that few
/// values share their sorted bits (about one adjacent pair in 2^`EXTRA`) and the pass that
/// sorts those ties finds short runs.
const EXTRA: u32 = 6;

/// Sorts `v` ascending: the same result as `v.sort_unstable()`. `scratch` must be at least as
/// long as `v`; its contents are overwritten.
///
/// # Panics
/// If `scratch` is shorter than `v`.
pub(crate) fn sort(v: &mut [u64], scratch: &mut [u64]) {
    sort_with(v, scratch, |x| x, Ties::Unstable);
}

/// Sorts `v` by `key`, stably: values with equal keys keep their order. `scratch` must be at
/// least as long as `v`; its contents are overwritten.
///
/// # Panics
/// If `scratch` is shorter than `v`.
pub(crate) fn sort_stable_by_key(v: &mut [u64], scratch: &mut [u64], key: impl Fn(u64) -> u64) {
    sort_with(v, scratch, key, Ties::Stable);
}

/// What a bucket's radix passes leave for values whose sorted bits tie.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Ties {
    /// The key is the value: radix-sort the bits that spread the bucket out, then sort the
    /// runs of values that tie on them (rare, short).
    Unstable,
    /// Radix-sort every bit of the key (stable passes only), so ties keep their order.
    Stable,
}

/// The sort behind [`sort`] and [`sort_stable_by_key`]: scatters `v` into `scratch` by the
/// top bits of the key, then sorts each bucket back into place in `v`.
fn sort_with(v: &mut [u64], scratch: &mut [u64], key: impl Fn(u64) -> u64, ties: Ties) {
    let scratch = &mut scratch[..v.len()];
    // Only the bits below the highest one where keys differ matter.
    let bits = varying_bits(v, &key);
    if v.len() <= SMALL || bits == 0 {
        small_sort(v, &key, ties);
        return;
    }
    let top = (ceil_log2(v.len()).saturating_sub(BUCKET_LOG2)).clamp(1, MAX_DIGIT.min(bits));
    let shift = bits - top;
    let mut starts = vec![0usize; (1 << top) + 1];
    scatter(v, scratch, &key, shift, top, &mut starts);
    for w in starts.windows(2) {
        let (a, b) = (w[0], w[1]);
        sort_bucket(&mut scratch[a..b], &mut v[a..b], &key, shift, ties);
    }
}

/// The number of low bits in which the keys of `v` differ (0 when all are equal): bit
/// `varying_bits - 1` is the highest one that is not the same in every key.
fn varying_bits(v: &[u64], key: &impl Fn(u64) -> u64) -> u32 {
    let Some(&first) = v.first() else { return 0 };
    let k0 = key(first);
    let diff = v.iter().fold(0, |acc, &x| acc | (key(x) ^ k0));
    64 - diff.leading_zeros()
}

/// `ceil(log2(n))` for `n ≥ 1`.
fn ceil_log2(n: usize) -> u32 {
    usize::BITS - n.saturating_sub(1).leading_zeros()
}

/// One counting-sort pass: moves `src` into `dst` ordered by the digit of `width` bits at
/// `shift` of each key, stably. `starts` (`2^width + 1` entries) receives where each digit's
/// values begin in `dst`, and `src.len()` last.
fn scatter(
    src: &[u64],
    dst: &mut [u64],
    key: &impl Fn(u64) -> u64,
    shift: u32,
    width: u32,
    starts: &mut [usize],
) {
    let mask = (1u64 << width) - 1;
    let digit = |x: u64| ((key(x) >> shift) & mask) as usize;
    let counts = &mut starts[..=mask as usize + 1];
    counts.fill(0);
    for &x in src {
        counts[digit(x) + 1] += 1;
    }
    for d in 1..counts.len() {
        counts[d] += counts[d - 1];
    }
    let mut next = [0usize; 1 << MAX_DIGIT];
    let next = &mut next[..=mask as usize];
    next.copy_from_slice(&counts[..=mask as usize]);
    for &x in src {
        let d = digit(x);
        dst[next[d]] = x;
        next[d] += 1;
    }
}

/// Sorts one bucket of the top pass, whose keys agree above bit `bits`, from `src` into `dst`
/// (`src` is left in any order): least-significant-digit passes over the low bits that matter,
/// then, for [`Ties::Unstable`], the runs that tie on them.
fn sort_bucket(src: &mut [u64], dst: &mut [u64], key: &impl Fn(u64) -> u64, bits: u32, ties: Ties) {
    if src.len() <= SMALL || bits == 0 {
        dst.copy_from_slice(src);
        if bits > 0 {
            small_sort(dst, key, ties);
        }
        return;
    }
    let sorted_bits = match ties {
        Ties::Unstable => bits.min(ceil_log2(src.len()) + EXTRA),
        Ties::Stable => bits,
    };
    let low = bits - sorted_bits;
    let passes = sorted_bits.div_ceil(MAX_DIGIT);
    let width = sorted_bits.div_ceil(passes);
    let mut starts = [0usize; (1 << MAX_DIGIT) + 1];
    let (mut from, mut to) = (src, dst);
    for p in 0..passes {
        let shift = low + p * width;
        let w = width.min(bits - shift);
        scatter(from, to, key, shift, w, &mut starts[..(1 << w) + 1]);
        (from, to) = (to, from);
    }
    // After the passes the values are in `from`; `to` is the other buffer.
    if passes % 2 == 0 {
        to.copy_from_slice(from);
        from = to;
    }
    if ties == Ties::Unstable && low > 0 {
        sort_tied_runs(from, low);
    }
}

/// Sorts each run of adjacent values of `v` that agree above bit `low` (`v` is sorted by those
/// bits).
fn sort_tied_runs(v: &mut [u64], low: u32) {
    let mut at = 0;
    while at < v.len() {
        let high = v[at] >> low;
        let len = v[at..]
            .iter()
            .position(|&x| x >> low != high)
            .unwrap_or(v.len() - at);
        if len > 1 {
            v[at..at + len].sort_unstable();
        }
        at += len;
    }
}

/// Sorts a few values by comparisons: `sort_unstable` of the values, or an insertion sort by
/// key (stable, no allocation).
fn small_sort(v: &mut [u64], key: &impl Fn(u64) -> u64, ties: Ties) {
    match ties {
        Ties::Unstable => v.sort_unstable(),
        Ties::Stable => {
            for i in 1..v.len() {
                let x = v[i];
                let k = key(x);
                let mut j = i;
                while j > 0 && key(v[j - 1]) > k {
                    v[j] = v[j - 1];
                    j -= 1;
                }
                v[j] = x;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::SplitMix64;

    /// Sorts `v` with [`sort`] and checks the result against `sort_unstable`.
    fn check(v: Vec<u64>) {
        let mut expected = v.clone();
        expected.sort_unstable();
        let mut got = v;
        let mut scratch = vec![0; got.len()];
        sort(&mut got, &mut scratch);
        assert_eq!(got, expected);
    }

    fn random(n: usize, seed: u64) -> Vec<u64> {
        let mut rng = SplitMix64::new(seed);
        (0..n).map(|_| rng.next_u64()).collect()
    }

    #[test]
    fn sorts_empty_and_single() {
        check(vec![]);
        check(vec![42]);
    }

    #[test]
    fn sorts_all_equal() {
        check(vec![7; 10_000]);
        check(vec![u64::MAX; 100]);
    }

    #[test]
    fn sorts_sorted_and_reversed() {
        let mut v = random(50_000, 1);
        v.sort_unstable();
        check(v.clone());
        v.reverse();
        check(v);
        check((0..100_000).collect());
    }

    #[test]
    fn sorts_random_values_of_many_lengths() {
        for (i, n) in [2, 3, 63, 64, 65, 100, 1000, 4097, 10_000, 100_000, 300_000]
            .into_iter()
            .enumerate()
        {
            check(random(n, i as u64));
        }
    }

    #[test]
    fn sorts_values_with_only_high_or_only_low_bits() {
        let r = random(100_000, 9);
        check(r.iter().map(|x| x & 0xFFF).collect()); // low 12 bits, many duplicates
        check(r.iter().map(|x| x & 0xFFFF_FFFF).collect());
        check(r.iter().map(|x| x & 0xFFF0_0000_0000_0000).collect()); // top 12 bits
        check(r.iter().map(|x| x & 0xFFFF_FFFF_0000_0000).collect());
        check(r.iter().map(|x| 1 << (x % 64)).collect()); // one bit each
        check(r.iter().map(|x| x & 0x8000_0000_0000_0001).collect()); // the top and bottom bits
    }

    #[test]
    fn sorts_duplicates_mixed_with_distinct_values() {
        let mut v = random(20_000, 3);
        v.extend_from_within(..5_000);
        v.extend_from_within(..100);
        check(v);
    }

    #[test]
    fn a_longer_scratch_is_fine() {
        let mut v = random(1_000, 4);
        let mut expected = v.clone();
        expected.sort_unstable();
        sort(&mut v, &mut vec![0; 5_000]);
        assert_eq!(v, expected);
    }

    /// [`sort_stable_by_key`] against the standard library's stable sort, on keys with many
    /// ties (a narrow key) and without (a wide one).
    #[test]
    fn the_stable_sort_keeps_the_order_of_ties() {
        for (n, bits) in [
            (0, 8),
            (1, 8),
            (50, 3),
            (1_000, 4),
            (100_000, 10),
            (100_000, 23),
        ] {
            let v = random(n, bits as u64);
            let key = |x: u64| (x >> 7) & ((1 << bits) - 1);
            let mut expected = v.clone();
            expected.sort_by_key(|&x| key(x));
            let mut got = v;
            sort_stable_by_key(&mut got, &mut vec![0; n], key);
            assert_eq!(got, expected, "n={n} bits={bits}");
        }
    }
}
