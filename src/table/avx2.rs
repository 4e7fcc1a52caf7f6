//! Semi-sorted probes of four keys at a time with AVX2, for the batched lookups of a chain's
//! levels (x86-64 only, chosen at run time: the default build stays portable).
//!
//! A chain answers an absent key only after probing every level, so its batches spend their
//! time deriving buckets (four multiplications a key and level) and testing low parts. Here
//! both run in 256-bit vectors, a lane per key: `vpmuludq` does each 32 × 32 → 64-bit
//! multiplication of the format's derivation (FORMAT.md, "Hashing") for four keys, and the
//! SWAR low-part test of [`Fields::equal`] runs on four buckets at once. The bucket words are
//! loaded one by one through [`Region`]'s clamped loads (AVX2 gathers measured slower on this
//! project's AMD machine). A key whose low part matches in either bucket, about
//! `8 / 2^(f − 4)` of them, is probed again by the scalar [`SemiFast`] codec, which decides
//! the answer from the high nibbles; every other key is certainly absent from the level. So
//! the answers are the scalar codec's, key for key (tested against it below).
//!
//! The one `unsafe` here is the call into the `target_feature` function, after the CPU was
//! checked to have AVX2.
#![allow(unsafe_code)]

use super::raw::Region;
use super::semi::SemiFast;
use super::swar::Fields;
use super::{Codec, Geometry, Layout};
use std::arch::x86_64::*;

/// The most keys one call takes (a chain's batches work in blocks of this many).
pub(crate) const BLOCK: usize = 64;

/// The groups of four keys in a block.
const GROUPS: usize = 16;
const _: () = assert!(4 * GROUPS == BLOCK);

/// Room for [`semi_level`] to keep a block's buckets and fingerprints while it prefetches:
/// made once per batch and reused for every level and block, so that a call does not zero
/// three 512-byte arrays (48 vector stores) for each level of each block of 64 keys.
pub(crate) struct Scratch {
    p1: [[u64; 4]; GROUPS],
    p2: [[u64; 4]; GROUPS],
    fps: [[u64; 4]; GROUPS],
}

impl Default for Scratch {
    fn default() -> Scratch {
        Scratch {
            p1: [[0; 4]; GROUPS],
            p2: [[0; 4]; GROUPS],
            fps: [[0; 4]; GROUPS],
        }
    }
}

/// Ors into `out[k]` whether the level of geometry `geo` over `r` may hold the key with the
/// seeded hash `seeded[k]` (`seeded` and `out` as long, at most [`BLOCK`]), prefetching
/// the level's buckets first if `prefetch`. Returns `false`, and does nothing, unless the
/// level is a classic one, semi-sorted with 11 to 15-bit fingerprints, with fewer than 2^32
/// buckets, and the CPU has AVX2: then the caller probes it the scalar way.
pub(crate) fn semi_level(
    geo: &Geometry,
    r: Region<'_>,
    seeded: &[u64],
    out: &mut [bool],
    prefetch: bool,
    scratch: &mut Scratch,
) -> bool {
    assert!(seeded.len() <= BLOCK && seeded.len() == out.len());
    let m = geo.num_buckets();
    // The vector multiplications take 32-bit operands: `m` and `m / 2` must fit. The probe
    // derives the classic buckets and fingerprints (FORMAT.md §2.1): a stretch level, whose
    // slots share the layouts below, is addressed otherwise and is declined here, whatever
    // the caller checked.
    if m >= 1 << 32 || geo.stretch_slots().is_some() || !std::is_x86_feature_detected!("avx2") {
        return false;
    }
    macro_rules! go {
        ($c:expr) => {
            // SAFETY: the CPU has AVX2 (checked above), the only requirement of calling a
            // `target_feature(enable = "avx2")` function; its body is safe code.
            unsafe { probe(&$c, geo, r, seeded, out, prefetch, scratch) }
        };
    }
    match geo.layout() {
        // Narrower low parts match too often for the vector pass to pay: at f = 10, 41 % of
        // the groups of four would be probed again by the scalar codec.
        Layout::Semi11(c) => go!(c),
        Layout::Semi12(c) => go!(c),
        Layout::Semi13(c) => go!(c),
        Layout::Semi14(c) => go!(c),
        Layout::Semi15(c) => go!(c),
        _ => return false,
    }
    true
}

/// Four keys' buckets and fingerprints: lane `k` is key `k`'s.
#[derive(Clone, Copy)]
struct Four {
    /// The first bit of the first bucket (`i1 · bucket bits`).
    p1: __m256i,
    /// The first bit of the second bucket.
    p2: __m256i,
    fp: __m256i,
}

/// The constants of the derivation for a table of `m` buckets and `F`-bit fingerprints.
#[derive(Clone, Copy)]
struct Derive {
    /// `m` in every 32-bit lane, for `vpmuludq`.
    m: __m256i,
    /// `m` in every 64-bit lane.
    m64: __m256i,
    half: __m256i,
    fp_max: __m256i,
    bucket_bits: __m256i,
}

impl Derive {
    #[inline]
    #[target_feature(enable = "avx2")]
    fn new<const F: u32>(m: u64) -> Derive {
        Derive {
            // In every 32-bit lane, though `vpmuludq` reads only the low one of each 64: with
            // zero high lanes LLVM widened some products to full 64-bit multiplications (three
            // instructions each). `semi_level` checked that `m` fits in 32 bits.
            m: _mm256_set1_epi32(m as u32 as i32),
            m64: _mm256_set1_epi64x(m as i64),
            half: _mm256_set1_epi32((m / 2) as u32 as i32),
            fp_max: _mm256_set1_epi64x((u32::MAX >> (32 - F)) as i64),
            bucket_bits: _mm256_set1_epi64x(SemiFast::<F>::BITS as i64),
        }
    }

    /// [`hash::first_bucket`], [`hash::fingerprint`] and [`hash::alt_bucket`] of four seeded
    /// hashes. Every product is of two numbers below 2^32, as `vpmuludq` takes them.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn four(&self, seeded: [u64; 4]) -> Four {
        let one = _mm256_set1_epi64x(1);
        let s: __m256i = bytemuck::cast(seeded);
        // i1 = (s >> 32) · m >> 32
        let i1 = _mm256_srli_epi64::<32>(_mm256_mul_epu32(_mm256_srli_epi64::<32>(s), self.m));
        // fp = (s mod 2^32) · (2^F − 1) >> 32, plus 1
        let fp = _mm256_add_epi64(
            _mm256_srli_epi64::<32>(_mm256_mul_epu32(s, self.fp_max)),
            one,
        );
        // mixed = bits 32..64 of fp · φ mod 2^64, with φ = 0x9E3779B9_7F4A7C15 in halves:
        // (fp · φ_lo >> 32) + fp · φ_hi, whose low 32 bits are the ones used.
        let mixed = _mm256_add_epi64(
            _mm256_srli_epi64::<32>(_mm256_mul_epu32(fp, _mm256_set1_epi64x(0x7F4A_7C15))),
            _mm256_mul_epu32(fp, _mm256_set1_epi64x(0x9E37_79B9)),
        );
        // o = 2 · (mixed · m/2 >> 32) + 1, the same as (mixed · m/2 >> 31) | 1
        let o = _mm256_or_si256(
            _mm256_srli_epi64::<31>(_mm256_mul_epu32(mixed, self.half)),
            one,
        );
        // i2 = o − i1, plus m if i1 > o (all below 2^33: a signed compare is exact)
        let i2 = _mm256_add_epi64(
            _mm256_sub_epi64(o, i1),
            _mm256_and_si256(_mm256_cmpgt_epi64(i1, o), self.m64),
        );
        Four {
            p1: _mm256_mul_epu32(i1, self.bucket_bits),
            p2: _mm256_mul_epu32(i2, self.bucket_bits),
            fp,
        }
    }
}

/// The low-part test of four keys, each against its two buckets: lane `k` of the result is
/// nonzero iff a low part of key `k`'s buckets equals its own ([`Fields::equal`] per bucket).
#[inline]
#[target_feature(enable = "avx2")]
fn low_parts<const F: u32>(r: Region<'_>, p1: [u64; 4], p2: [u64; 4], fp: __m256i) -> __m256i {
    let low = SemiFast::<F>::LOW;
    let fields = Fields::new(4, low);
    let (rep, lo, hi) = fields.masks();
    // The bucket at bit p (`Region::window`, as the scalar probe reads it), shifted past the
    // index's 12 bits so the low parts start at bit 0.
    // (Macros rather than closures: a closure is not compiled with the function's AVX2.)
    macro_rules! words {
        ($p:expr) => {{
            let w: __m256i = bytemuck::cast($p.map(|p| r.window(p)));
            _mm256_srli_epi64::<{ super::semi::INDEX_BITS as i32 }>(w)
        }};
    }
    // q · rep: the query's low part in all four fields (q < 2^low, rep < 2^34, so the product
    // is q · rep_lo + (q · rep_hi << 32)).
    let q = _mm256_and_si256(fp, _mm256_set1_epi64x((1i64 << low) - 1));
    let q_rep = _mm256_add_epi64(
        _mm256_mul_epu32(q, _mm256_set1_epi64x(rep as u32 as i64)),
        _mm256_slli_epi64::<32>(_mm256_mul_epu32(q, _mm256_set1_epi64x((rep >> 32) as i64))),
    );
    let (lo, hi) = (_mm256_set1_epi64x(lo as i64), _mm256_set1_epi64x(hi as i64));
    macro_rules! equal {
        ($w:expr) => {{
            let x = _mm256_xor_si256($w, q_rep);
            // !(((x & lo) + lo) | x) & hi
            _mm256_andnot_si256(
                _mm256_or_si256(_mm256_add_epi64(_mm256_and_si256(x, lo), lo), x),
                hi,
            )
        }};
    }
    _mm256_or_si256(equal!(words!(p1)), equal!(words!(p2)))
}

/// Prefetches the lines of the one 8-byte load that reads the bucket at bit `p`.
#[inline(always)]
fn prefetch_bucket(r: Region<'_>, p: u64) {
    r.prefetch((p >> 3) as usize);
    r.prefetch((p >> 3) as usize + 7);
}

/// [`semi_level`] for a known codec.
#[target_feature(enable = "avx2")]
fn probe<const F: u32>(
    c: &SemiFast<F>,
    geo: &Geometry,
    r: Region<'_>,
    seeded: &[u64],
    out: &mut [bool],
    prefetch: bool,
    scratch: &mut Scratch,
) {
    let d = Derive::new::<F>(geo.num_buckets());
    let groups = seeded.len() / 4;
    let Scratch { p1, p2, fps } = scratch;
    for (g, s) in seeded.chunks_exact(4).enumerate() {
        let f = d.four([s[0], s[1], s[2], s[3]]);
        (p1[g], p2[g], fps[g]) = (
            bytemuck::cast(f.p1),
            bytemuck::cast(f.p2),
            bytemuck::cast(f.fp),
        );
    }
    if prefetch {
        for &p in p1[..groups].iter().chain(&p2[..groups]).flatten() {
            prefetch_bucket(r, p);
        }
    }
    // Groups with a low-part match, listed without a branch per group: a group of four keys
    // matches often enough for a branch to mispredict (at f = 11, 1 − (1 − 8/128)^4 = 23 % of
    // groups; at f = 15, 3 %).
    let mut matched = [0u8; GROUPS];
    let mut n = 0;
    for g in 0..groups {
        let any = low_parts::<F>(r, p1[g], p2[g], bytemuck::cast(fps[g]));
        let none = _mm256_cmpeq_epi64(any, _mm256_setzero_si256());
        matched[n] = g as u8;
        n += (_mm256_movemask_pd(_mm256_castsi256_pd(none)) != 0b1111) as usize;
    }
    let scalar = |k: usize, out: &mut [bool]| {
        let s = crate::hash::locate(seeded[k], geo.num_buckets(), geo.fp_bits());
        out[k] |= c.contains(r, s.i1, s.i2, s.fp);
    };
    for &g in &matched[..n] {
        for k in 4 * g as usize..4 * g as usize + 4 {
            scalar(k, out);
        }
    }
    for k in 4 * groups..seeded.len() {
        scalar(k, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::{self, KeyHash, SplitMix64};
    use crate::table::{Encoding, Geometry, TableBuf};

    /// [`semi_level`] with a scratch of its own.
    fn level(
        geo: &Geometry,
        r: Region<'_>,
        seeded: &[u64],
        out: &mut [bool],
        prefetch: bool,
    ) -> bool {
        semi_level(geo, r, seeded, out, prefetch, &mut Scratch::default())
    }

    fn avx2() -> bool {
        let has = std::is_x86_feature_detected!("avx2");
        if !has {
            eprintln!("no AVX2 on this CPU: the kernel is not run (nor used)");
        }
        has
    }

    /// The vector derivation gives the scalar one's buckets and fingerprints, for every
    /// width, small and odd-sized tables and the largest (2^32 − 2 buckets).
    #[test]
    fn derivation_matches_the_scalar_hash() {
        if !avx2() {
            return;
        }
        fn check<const F: u32>(rng: &mut SplitMix64) {
            for m in [
                2u64,
                4,
                6,
                130,
                4186,
                1_000_002,
                (1 << 31) + 2,
                (1 << 32) - 2,
            ] {
                // SAFETY: AVX2 was checked by the caller.
                let d = unsafe { Derive::new::<F>(m) };
                for _ in 0..500 {
                    let s = [0; 4].map(|_| rng.next_u64());
                    // SAFETY: as above.
                    let f = unsafe { d.four(s) };
                    let (p1, p2, fp): ([u64; 4], [u64; 4], [u64; 4]) = (
                        bytemuck::cast(f.p1),
                        bytemuck::cast(f.p2),
                        bytemuck::cast(f.fp),
                    );
                    for k in 0..4 {
                        let i1 = hash::first_bucket(s[k], m);
                        let want_fp = hash::fingerprint(s[k], F);
                        let i2 = hash::alt_bucket(i1, want_fp, m);
                        let bits = SemiFast::<F>::BITS;
                        assert_eq!(fp[k], want_fp as u64, "F={F} m={m} s={:#x}", s[k]);
                        assert_eq!(p1[k], i1 * bits, "F={F} m={m} s={:#x}", s[k]);
                        assert_eq!(p2[k], i2 * bits, "F={F} m={m} s={:#x}", s[k]);
                    }
                }
            }
        }
        let mut rng = SplitMix64::new(11);
        check::<8>(&mut rng);
        check::<9>(&mut rng);
        check::<10>(&mut rng);
        check::<11>(&mut rng);
        check::<12>(&mut rng);
        check::<13>(&mut rng);
        check::<14>(&mut rng);
        check::<15>(&mut rng);
        // Seeded hashes at the edges of the fast ranges.
        let edges = [0, u64::MAX, 1 << 32, (1 << 32) - 1, u32::MAX as u64 * 3];
        // SAFETY: AVX2 was checked above.
        let f =
            unsafe { Derive::new::<10>(1_000_002).four([edges[0], edges[1], edges[2], edges[3]]) };
        let fp: [u64; 4] = bytemuck::cast(f.fp);
        for k in 0..4 {
            assert_eq!(fp[k], hash::fingerprint(edges[k], 10) as u64);
        }
    }

    /// A table of `m` buckets of `F`-bit semi-sorted slots, filled at random: most buckets
    /// full, some partly, some empty; values drawn from a few so that low parts and whole
    /// fingerprints match often.
    fn table(g: &Geometry, rng: &mut SplitMix64) -> TableBuf {
        let mut buf = TableBuf::zeroed(g.table_bytes()).unwrap();
        let f = g.fp_bits();
        let max = (1u32 << f) - 1;
        for i in 0..g.num_buckets() {
            let mut slots = [0u32; 8];
            for s in slots.iter_mut().take(4) {
                *s = match rng.below(8) {
                    0 => 0,
                    1..=3 => rng.below(max as u64) as u32 + 1,
                    _ => [1, 2, max, 0x15 & max, (5 << (f - 4)) | 1][rng.below(5) as usize],
                };
            }
            with_layout_store(g, buf.bytes_mut(), i, &slots);
        }
        buf
    }

    fn with_layout_store(g: &Geometry, t: &mut [u8], i: u64, slots: &[u32; 8]) {
        crate::table::with_codec!(g.layout(), c => c.store_all(t, i, slots));
    }

    /// Answers as the scalar codec gives them, or-ed into what `out` held (true or false), for
    /// every width, tables from one cache line (2 buckets, the last bucket at the region's
    /// end) up, blocks of 0 to 64 keys (not only multiples of four), with and without
    /// prefetching, and regions at several misalignments.
    #[test]
    fn answers_are_the_scalar_codecs() {
        if !avx2() {
            return;
        }
        let mut rng = SplitMix64::new(5);
        // One scratch for every call, as a batch uses it: what earlier calls left in it must
        // not matter.
        let mut scratch = Scratch::default();
        for f in 11..=15 {
            for m in [2u64, 4, 18, 130, 1000] {
                let g = Geometry::new(m, 4, f, Encoding::SemiSorted).unwrap();
                let buf = table(&g, &mut rng);
                let mut shifted = vec![0u8; buf.bytes().len() + 64];
                for shift in [0, 1, 7, 33] {
                    let bytes = &mut shifted[shift..shift + buf.bytes().len()];
                    bytes.copy_from_slice(buf.bytes());
                    let r = Region::new(bytes, &g).unwrap();
                    for len in [0, 1, 3, 4, 5, 17, 63, 64] {
                        // Seeded hashes whose keys are present about half the time: a random
                        // hash, or one whose fingerprint is in one of its buckets.
                        let seeded: Vec<u64> = (0..len).map(|_| rng.next_u64()).collect();
                        let before: Vec<bool> = (0..len).map(|_| rng.below(4) == 0).collect();
                        for prefetch in [false, true] {
                            let mut out = before.clone();
                            assert!(semi_level(&g, r, &seeded, &mut out, prefetch, &mut scratch));
                            for k in 0..len {
                                let i1 = hash::first_bucket(seeded[k], m);
                                let fp = hash::fingerprint(seeded[k], f);
                                let i2 = hash::alt_bucket(i1, fp, m);
                                let want = before[k]
                                    || crate::table::kernel::contains_scalar(
                                        &g,
                                        buf.bytes(),
                                        i1,
                                        i2,
                                        fp,
                                    );
                                assert_eq!(out[k], want, "f={f} m={m} shift={shift} key {k}");
                            }
                        }
                    }
                }
            }
        }
    }

    /// Keys that are in the table are found, at every width it takes (a stored fingerprint
    /// may sit in any of the four slots, so each field of the low-part test is exercised),
    /// also when every key of a block is present (each group of four then goes to the scalar
    /// check).
    #[test]
    fn present_keys_are_found() {
        if !avx2() {
            return;
        }
        for bits in 11..=15 {
            let mut f = crate::CuckooFilter::new(
                crate::Config::new(3000)
                    .encoding(Encoding::SemiSorted)
                    .fingerprint_bits(bits),
            )
            .unwrap();
            let seed = f.seed();
            let hashes: Vec<crate::KeyHash> = (0..3000u32)
                .map(|k| crate::KeyHash::of(&k.to_le_bytes()))
                .collect();
            for &h in &hashes {
                f.insert_hash(h).unwrap();
            }
            let v = f.as_filter_ref();
            let (g, r) = (v.geo, v.region);
            for block in hashes.chunks(BLOCK) {
                let seeded: Vec<u64> = block.iter().map(|&h| hash::seeded(h, seed)).collect();
                let mut out = vec![false; block.len()];
                assert!(level(&g, r, &seeded, &mut out, true));
                assert!(out.iter().all(|&x| x), "f={bits}: a false negative");
            }
        }
    }

    /// Layouts it does not handle, and tables of 2^32 buckets or more, are left to the caller.
    #[test]
    fn other_layouts_and_huge_tables_are_declined() {
        let mut out = [false; 4];
        let seeded = [1, 2, 3, 4];
        for (e, b, f) in [
            (Encoding::Plain, 4, 16),
            (Encoding::Packed, 4, 12),
            (Encoding::SemiSorted, 4, 16),
            (Encoding::SemiSorted, 4, 10),
            (Encoding::SemiSorted, 4, 8),
            (Encoding::SemiSorted, 4, 7),
        ] {
            let g = Geometry::new(8, b, f, e).unwrap();
            let buf = TableBuf::zeroed(g.table_bytes()).unwrap();
            let r = Region::new(buf.bytes(), &g).unwrap();
            assert!(!level(&g, r, &seeded, &mut out, false), "{e:?} f={f}");
        }
        // A layout it takes, with a bucket count it does not (the region is never read then:
        // a small one stands in for the 2^32 buckets').
        let g = Geometry::new(8, 4, 12, Encoding::SemiSorted).unwrap();
        let buf = TableBuf::zeroed(g.table_bytes()).unwrap();
        let r = Region::new(buf.bytes(), &g).unwrap();
        assert!(level(&g, r, &seeded, &mut out, false));
        out = [false; 4];
        let huge = Geometry::new(1 << 32, 4, 12, Encoding::SemiSorted).unwrap();
        assert!(!level(&huge, r, &seeded, &mut out, false));
        assert_eq!(out, [false; 4]);
    }

    /// A stretch level in a layout the probe takes (semi-sorted, 11 to 15-bit slots) is
    /// declined by the probe itself: it derives classic buckets, and a stretch level's keys
    /// live elsewhere. Its table here is full of one value, which the classic probe would
    /// find for any key whose fingerprint it is.
    #[test]
    fn stretch_levels_are_declined() {
        for w in 11..=15 {
            let g = Geometry::stretch(64, 4, w, Encoding::SemiSorted, 5).unwrap();
            let classic = Geometry::new(64, 4, w, Encoding::SemiSorted).unwrap();
            assert_eq!(g.layout(), classic.layout(), "w={w}: the same codec");
            let mut buf = TableBuf::zeroed(g.table_bytes()).unwrap();
            let seeded: Vec<u64> = (0..8).map(|i| hash::seeded(KeyHash::of(&[i]), 0)).collect();
            let fp = hash::locate(seeded[0], 64, w).fp;
            for i in 0..64 {
                g.layout().store(buf.bytes_mut(), i, 0, &[fp; 8]);
            }
            let r = Region::new(buf.bytes(), &g).unwrap();
            let mut out = [false; 8];
            assert!(!level(&g, r, &seeded, &mut out, true), "w={w}");
            assert_eq!(out, [false; 8], "w={w}: nothing written");
            if avx2() {
                // The same bytes as a classic level are taken, and the key is found.
                assert!(level(&classic, r, &seeded, &mut out, true));
                assert!(out[0]);
            }
        }
    }
}
