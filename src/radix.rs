//! A radix sort of 64-bit values for [`FilterBuilder`](crate::FilterBuilder): its seeded hashes,
//! and the keys its second pass takes in second-bucket order.
//!
//! It makes one pass over the whole input that scatters it by its top bits into
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
    /// Buffers of fewer values than this (32 MiB) are allocated on the heap: up to that size
    /// glibc's allocator keeps freed memory for the next allocation (its dynamic mmap
    /// threshold), so a builder that runs again reuses pages that are already mapped.
    const MAP_FROM: usize = 1 << 22;

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

/// The most passes a bucket takes: enough for 64 bits.
const MAX_PASSES: usize = 64usize.div_ceil(MAX_DIGIT as usize);

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
    sort_with(v, scratch);
}

/// The sort behind [`sort`]: scatters `v` into `scratch` by its top bits, then sorts each
/// bucket back into place in `v`.
fn sort_with(v: &mut [u64], scratch: &mut [u64]) {
    let scratch = &mut scratch[..v.len()];
    if v.len() <= SMALL {
        v.sort_unstable();
        return;
    }
    let top = ceil_log2(v.len())
        .saturating_sub(BUCKET_LOG2)
        .clamp(1, MAX_DIGIT);
    // One read for both: the bits where values differ, and how many values have each value of
    // the top bits, which is the histogram the scatter needs when the values differ in bit 63
    // (hashes do).
    let mut counts = vec![0usize; 1 << top];
    let bits = varying_bits(v, 64 - top, &mut counts);
    if bits == 0 {
        return; // all values equal: sorted
    }
    let top = top.min(bits);
    let shift = bits - top;
    if bits != 64 {
        counts.truncate(1 << top);
        histogram(v, shift, &mut counts);
    }
    let starts = scatter(v, scratch, shift, &counts);
    let largest = starts.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    let mut tmp = vec![0u64; largest];
    let mut bucket_counts = vec![0usize; MAX_PASSES << MAX_DIGIT];
    for w in starts.windows(2) {
        let (a, b) = (w[0], w[1]);
        let bucket = Bucket {
            src: &mut scratch[a..b],
            tmp: &mut tmp[..b - a],
            counts: &mut bucket_counts,
            dst: &mut v[a..b],
        };
        bucket.sort(shift);
    }
}

/// The number of low bits in which the values of `v` differ (0 when all are equal): bit
/// `varying_bits - 1` is the highest one that is not the same in every value. Also counts, in
/// `counts`, the values with each value of their bits from `shift` up.
fn varying_bits(v: &[u64], shift: u32, counts: &mut [usize]) -> u32 {
    let Some(&k0) = v.first() else { return 0 };
    let mut diff = 0;
    for &k in v {
        diff |= k ^ k0;
        counts[(k >> shift) as usize] += 1;
    }
    64 - diff.leading_zeros()
}

/// `ceil(log2(n))` for `n ≥ 1`.
fn ceil_log2(n: usize) -> u32 {
    usize::BITS - n.saturating_sub(1).leading_zeros()
}

/// Counts, in `counts` (zeroed here; its length a power of two), the values of `v` with each
/// value of the digit at bit `shift`.
fn histogram(v: &[u64], shift: u32, counts: &mut [usize]) {
    let mask = counts.len() as u64 - 1;
    counts.fill(0);
    for &x in v {
        counts[((x >> shift) & mask) as usize] += 1;
    }
}

/// One counting-sort pass: moves `src` into `dst` ordered by the digit at bit `shift` of each
/// value, stably, given how many values have each digit (`counts`, whose length, a power of
/// two up to 2^[`MAX_DIGIT`], gives the digit's width). Returns where each digit's values
/// begin in `dst`, followed by `src.len()`.
fn scatter(src: &[u64], dst: &mut [u64], shift: u32, counts: &[usize]) -> Vec<usize> {
    let mut starts = Vec::with_capacity(counts.len() + 1);
    starts.push(0);
    let mut total = 0;
    for &c in counts {
        total += c;
        starts.push(total);
    }
    scatter_from(src, dst, shift, &starts);
    starts
}

/// The moving half of [`scatter`], given where each digit's values begin (`starts`: one more
/// entry than there are digits).
fn scatter_from(src: &[u64], dst: &mut [u64], shift: u32, starts: &[usize]) {
    let mask = starts.len() as u64 - 2;
    let mut next = [0usize; 1 << MAX_DIGIT];
    let next = &mut next[..starts.len() - 1];
    next.copy_from_slice(&starts[..starts.len() - 1]);
    let dst = &mut dst[..src.len()];
    for &x in src {
        let d = ((x >> shift) & mask) as usize;
        let at = &mut next[d];
        // Always in range (the starts come from exact counts); `get_mut` leaves LLVM a plain
        // branch where indexing would also keep the panic path in the loop.
        if let Some(slot) = dst.get_mut(*at) {
            *slot = x;
        }
        *at += 1;
    }
}

/// One bucket of the top pass: its values in `src` (left in any order), a buffer as long,
/// where the sorted values go, and room to count digits.
struct Bucket<'a> {
    src: &'a mut [u64],
    tmp: &'a mut [u64],
    dst: &'a mut [u64],
    /// Room for the histograms of up to [`MAX_PASSES`] passes.
    counts: &'a mut [usize],
}

/// One of a [`Bucket`]'s three buffers.
#[derive(Clone, Copy, PartialEq)]
enum Area {
    /// `src`, the values as the top pass left them.
    Src,
    /// `tmp`, a buffer for the passes between.
    Tmp,
    /// `dst`, where the sorted values go.
    Dst,
}

impl Bucket<'_> {
    /// Sorts the bucket, whose values agree above bit `bits`, into `dst`:
    /// least-significant-digit passes over the low bits that spread it out (each from one
    /// buffer to another, the last into `dst`), then the runs that tie on them (rare, short).
    fn sort(mut self, bits: u32) {
        let len = self.src.len();
        if len <= SMALL || bits == 0 {
            self.dst.copy_from_slice(self.src);
            if bits > 0 {
                self.dst.sort_unstable();
            }
            return;
        }
        let sorted_bits = bits.min(ceil_log2(len) + EXTRA);
        let low = bits - sorted_bits;
        let passes = sorted_bits.div_ceil(MAX_DIGIT);
        let width = sorted_bits.div_ceil(passes);
        // Every pass's histogram in one read: pass `p`'s at `counts[p << width..]`. Two passes
        // (every bucket of uniform values) have their own loop, with the shifts and masks
        // held in registers: the general loop took 40 % of the bucket's time.
        let widths = |p: u32| width.min(bits - (low + p * width));
        let counts = &mut self.counts[..(passes as usize) << width];
        counts.fill(0);
        if passes == 2 {
            let (c0, c1) = counts.split_at_mut(1 << width);
            let (m0, m1) = ((1u64 << widths(0)) - 1, (1u64 << widths(1)) - 1);
            let (s0, s1) = (low, low + width);
            for &k in self.src.iter() {
                c0[((k >> s0) & m0) as usize] += 1;
                c1[((k >> s1) & m1) as usize] += 1;
            }
        } else {
            for &k in self.src.iter() {
                for p in 0..passes {
                    let mask = (1u64 << widths(p)) - 1;
                    counts[((p as usize) << width) + ((k >> (low + p * width)) & mask) as usize] +=
                        1;
                }
            }
        }
        let mut at = Area::Src;
        for p in 0..passes {
            let to = if p + 1 == passes {
                Area::Dst
            } else if at == Area::Tmp {
                Area::Src
            } else {
                Area::Tmp
            };
            let mut starts = [0usize; (1 << MAX_DIGIT) + 1];
            let n = 1 << widths(p);
            for d in 0..n {
                starts[d + 1] = starts[d] + self.counts[((p as usize) << width) + d];
            }
            let (from, into) = self.pair(at, to);
            scatter_from(from, into, low + p * width, &starts[..=n]);
            at = to;
        }
        if low > 0 {
            sort_tied_runs(self.dst, low);
        }
    }

    /// Buffer `from` to read and buffer `to` to write (different ones).
    fn pair(&mut self, from: Area, to: Area) -> (&[u64], &mut [u64]) {
        match (from, to) {
            (Area::Src, Area::Tmp) => (self.src, self.tmp),
            (Area::Src, Area::Dst) => (self.src, self.dst),
            (Area::Tmp, Area::Src) => (self.tmp, self.src),
            (Area::Tmp, Area::Dst) => (self.tmp, self.dst),
            (Area::Dst, Area::Src) => (self.dst, self.src),
            (Area::Dst, Area::Tmp) => (self.dst, self.tmp),
            _ => unreachable!("a pass reads and writes the same buffer"),
        }
    }
}

/// Sorts each run of adjacent values of `v` that agree above bit `low` (`v` is sorted by those
/// bits). Such ties are rare: the scan mostly compares neighbours.
fn sort_tied_runs(v: &mut [u64], low: u32) {
    let mut at = 1;
    while at < v.len() {
        if (v[at] ^ v[at - 1]) >> low != 0 {
            at += 1;
            continue;
        }
        let start = at - 1;
        let mut end = at + 1;
        while end < v.len() && (v[end] ^ v[start]) >> low == 0 {
            end += 1;
        }
        v[start..end].sort_unstable();
        at = end + 1;
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
        // Low 4 bits: no wider than the top pass's digit, so every bucket it leaves holds
        // copies of one value (and is not radix-sorted again).
        check(r.iter().map(|x| x & 0xF).collect());
    }

    #[test]
    fn ceil_log2_rounds_up() {
        let expected = [
            (1, 0),
            (2, 1),
            (3, 2),
            (4, 2),
            (5, 3),
            (64, 6),
            (65, 7),
            (8191, 13),
        ];
        for (n, log) in expected {
            assert_eq!(ceil_log2(n), log, "n={n}");
        }
        let top = usize::MAX / 2 + 1; // the top bit alone
        assert_eq!(ceil_log2(top), usize::BITS - 1);
        assert_eq!(ceil_log2(top + 1), usize::BITS);
        assert_eq!(ceil_log2(usize::MAX), usize::BITS);
    }

    #[test]
    fn sorts_duplicates_mixed_with_distinct_values() {
        let mut v = random(20_000, 3);
        v.extend_from_within(..5_000);
        v.extend_from_within(..100);
        check(v);
    }

    /// From `MAP_FROM` values on, the scratch buffer is mapped memory: zeroed, as long as
    /// asked, and a sort through it gives the standard library's order.
    #[test]
    fn a_mapped_scratch_sorts_like_a_heap_one() {
        let n = Scratch::MAP_FROM + 3;
        let mut scratch = Scratch::new(n).unwrap();
        assert!(matches!(scratch, Scratch::Mapped(..)), "mapping failed");
        let buf = scratch.as_mut_slice();
        assert_eq!(buf.len(), n);
        assert!(buf.iter().all(|&x| x == 0));
        let mut v = random(n, 11);
        let mut expected = v.clone();
        expected.sort_unstable();
        sort(&mut v, buf);
        assert_eq!(v, expected);
    }

    #[test]
    fn a_longer_scratch_is_fine() {
        let mut v = random(1_000, 4);
        let mut expected = v.clone();
        expected.sort_unstable();
        sort(&mut v, &mut vec![0; 5_000]);
        assert_eq!(v, expected);
    }

    /// Buckets that take one radix pass (values 14 bits wide: buckets of 10 bits) and three
    /// (a bucket of 297 000 values, which the top pass cannot split: 25 bits sorted).
    #[test]
    fn sorts_buckets_of_one_and_of_three_passes() {
        let narrow: Vec<u64> = random(100_000, 31)
            .into_iter()
            .map(|x| 5 << 50 | x & 0x3FFF)
            .collect();
        check(narrow);
        let lopsided: Vec<u64> = random(300_000, 32)
            .into_iter()
            .enumerate()
            .map(|(i, x)| x & ((1 << 40) - 1) | ((i % 100 == 0) as u64) << 45)
            .collect();
        check(lopsided);
    }
}
