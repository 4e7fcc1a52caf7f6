//! A Morton-style block (Breslow & Jayasena 2018) for a static filter: 512-bit blocks, each
//! holding L logical buckets as 2-bit fullness counters (0..=3 fingerprints each), O overflow
//! bits, and one packed array of F-bit fingerprints in bucket order (a block stores its
//! fingerprints, not its empty slots).
//!
//! Bits of a block (little-endian u64 words, bit i of the block = bit i%64 of word i/64):
//! [0, 2L) counters, [2L, 2L+O) overflow bits, [2L+O, 2L+O+S·F) fingerprints, S = slots.
//!
//! A key (one 64-bit hash h) has a primary bucket (block b1, bucket j1) and a secondary one
//! (b2, j2), both from h alone (a static filter never moves a key without it). Overflow bit
//! `j1 % O` of block b1 is set when some key of that group was placed in its secondary bucket;
//! a lookup reads the secondary block only when its primary bucket misses and that bit is set.

pub const BRANCHY: bool = false;

#[derive(Clone, Copy, Debug)]
pub struct Params {
    pub l: usize,
    pub o: usize,
    pub f: usize,
}

impl Params {
    pub fn slots(&self) -> usize {
        (512 - 2 * self.l - self.o) / self.f
    }
    pub fn base(&self) -> usize {
        2 * self.l + self.o
    }
}

#[repr(C, align(64))]
#[derive(Clone, Copy, Default)]
pub struct Block(pub [u64; 8]);

#[inline(always)]
pub fn mulhi(a: u64, b: u64) -> u64 {
    ((a as u128 * b as u128) >> 64) as u64
}

/// (b1, j1, fp) of a hash.
#[inline(always)]
pub fn primary(h: u64, salt: u64, nb: u64, l: u64, f: u32) -> (u64, u64, u64) {
    let b1 = mulhi(h ^ salt, nb);
    let m = (h ^ (h >> 31)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let j1 = ((m >> 32) * l) >> 32;
    let fp = (m >> 12) & ((1 << f) - 1);
    (b1, j1, fp)
}

/// (b2, j2) of a hash.
#[inline(always)]
pub fn secondary(h: u64, salt: u64, nb: u64, l: u64) -> (u64, u64) {
    let m2 =
        ((h ^ salt).rotate_left(32) ^ 0x5851_F42D_4C95_7F2D).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    (mulhi(m2, nb), ((m2 & 0xFFFF_FFFF) * l) >> 32)
}

/// (b1, j1, fp, b2, j2) of a hash.
#[inline(always)]
pub fn derive(h: u64, salt: u64, nb: u64, l: u64, f: u32) -> (u64, u64, u64, u64, u64) {
    let (b1, j1, fp) = primary(h, salt, nb, l, f);
    let (b2, j2) = secondary(h, salt, nb, l);
    (b1, j1, fp, b2, j2)
}

pub struct Morton {
    pub p: Params,
    /// mixed into every hash (each filter its own): the same key does not land on the same
    /// block offset in every filter of an LSM read
    pub salt: u64,
    pub nb: u64,
    pub blocks: Vec<Block>,
    /// keys in their secondary bucket, and overflow bits set (statistics of the build)
    pub secondary: usize,
    pub ota_set: usize,
}

#[inline(always)]
fn bits_at(blk: &Block, bit: usize) -> u64 {
    // 8 bytes from byte bit/8, clamped inside the block; returns the bits from `bit` on
    // (at least 64 - 7 of them, or up to the block's end).
    let byte = (bit / 8).min(56);
    let bytes: &[u8; 64] = bytemuck_cast(blk);
    let w = u64::from_le_bytes(bytes[byte..byte + 8].try_into().unwrap());
    w >> (bit - byte * 8)
}

#[inline(always)]
fn bytemuck_cast(b: &Block) -> &[u8; 64] {
    // SAFETY (probe only): Block is 64 bytes of plain u64s.
    unsafe { &*(b as *const Block as *const [u8; 64]) }
}

fn set_bits(blk: &mut Block, bit: usize, width: usize, v: u64) {
    for i in 0..width {
        if v >> i & 1 == 1 {
            let b = bit + i;
            blk.0[b / 64] |= 1 << (b % 64);
        }
    }
}

/// Sum of the 2-bit fields of x, folded to 4-bit fields (each ≤ 6).
#[inline(always)]
fn fold2(x: u64) -> u64 {
    (x & 0x3333_3333_3333_3333) + ((x >> 2) & 0x3333_3333_3333_3333)
}

/// Start slot and count of bucket j (counters in words 0 and 1 of the block).
#[inline(always)]
fn slot_range(w0: u64, w1: u64, j: u64) -> (u64, u64) {
    let sh = 2 * (j & 31);
    let low = (1u64 << sh) - 1;
    let hi_half = j >= 32;
    let (m0, m1) = if hi_half { (u64::MAX, low) } else { (low, 0) };
    let a = fold2(w0 & m0) + fold2(w1 & m1); // 4-bit fields ≤ 12
    let b = (a & 0x0F0F_0F0F_0F0F_0F0F) + ((a >> 4) & 0x0F0F_0F0F_0F0F_0F0F);
    let start = b.wrapping_mul(0x0101_0101_0101_0101) >> 56;
    let w = if hi_half { w1 } else { w0 };
    (start, (w >> sh) & 3)
}

#[inline(always)]
fn bucket_has(blk: &Block, j: u64, fp: u64, base: usize, f: usize) -> bool {
    let (start, cnt) = slot_range(blk.0[0], blk.0[1], j);
    let rep = 1 | 1 << f | 1 << (2 * f);
    let hi = rep << (f - 1);
    let x = bits_at(blk, base + start as usize * f) ^ (fp * rep);
    let t = x.wrapping_sub(rep) & !x & hi;
    // the fields of this bucket only: cnt ≤ 3 of them
    t & ((1u64 << (cnt as usize * f)) - 1) != 0
}

/// Bit i: byte i of the block equals fp (SSE2, the x86-64 baseline; AVX2 where compiled in).
#[inline(always)]
fn match_mask(blk: &Block, fp: u64) -> u64 {
    use std::arch::x86_64::*;
    #[cfg(target_feature = "avx2")]
    unsafe {
        let p = blk.0.as_ptr() as *const __m256i;
        let f = _mm256_set1_epi8(fp as i8);
        let a = _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_load_si256(p), f)) as u32 as u64;
        let b =
            _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_load_si256(p.add(1)), f)) as u32 as u64;
        a | b << 32
    }
    #[cfg(not(target_feature = "avx2"))]
    unsafe {
        let p = blk.0.as_ptr() as *const __m128i;
        let f = _mm_set1_epi8(fp as i8);
        let m0 = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_load_si128(p), f)) as u32 as u64;
        let m1 = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_load_si128(p.add(1)), f)) as u32 as u64;
        let m2 = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_load_si128(p.add(2)), f)) as u32 as u64;
        let m3 = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_load_si128(p.add(3)), f)) as u32 as u64;
        m0 | m1 << 16 | m2 << 32 | m3 << 48
    }
}

/// Bucket j of the block holds fingerprint fp (8-bit fingerprints, bytewise slots).
#[inline(always)]
fn block_has8<const L: usize, const O: usize>(blk: &Block, j: u64, fp: u64) -> bool {
    let first = (2 * L + O) / 8;
    let m = match_mask(blk, fp) >> first;
    if m == 0 {
        return false;
    }
    let (start, cnt) = slot_range(blk.0[0], blk.0[1], j);
    m >> start & ((1u64 << cnt) - 1) != 0
}

#[inline(always)]
fn block_has8_bf<const L: usize, const O: usize>(blk: &Block, j: u64, fp: u64) -> bool {
    let first = (2 * L + O) / 8;
    let m = match_mask(blk, fp) >> first;
    let (start, cnt) = slot_range(blk.0[0], blk.0[1], j);
    m >> start & ((1u64 << cnt) - 1) != 0
}

/// One key asked of many filters (8-bit fingerprints), newest first: the bucket within a block,
/// the fingerprint, its broadcast and the counter masks are derived once for all filters; each
/// filter costs a multiplication, one line and (when its overflow bit is set) a second one.
#[inline(always)]
pub fn first_containing8<const L: usize, const O: usize, const BRANCHLESS: bool>(
    ms: &[&Morton],
    h: u64,
) -> bool {
    let m = (h ^ (h >> 31)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let j = ((m >> 32) * L as u64) >> 32;
    let fp = (m >> 12) & 0xFF;
    let first = (2 * L + O) / 8;
    let sh = 2 * (j & 31);
    let low = (1u64 << sh) - 1;
    let hi_half = j >= 32;
    let (m0, m1) = if hi_half { (u64::MAX, low) } else { (low, 0) };
    let ota_bit = 1u64 << (j % O as u64);
    for mm in ms {
        let b1 = mulhi(h ^ mm.salt, mm.nb);
        let blk = unsafe { mm.blocks.get_unchecked(b1 as usize) };
        let hits = match_mask(blk, fp) >> first;
        let (w0, w1) = (blk.0[0], blk.0[1]);
        let in_bucket = |hits: u64| {
            let a = fold2(w0 & m0) + fold2(w1 & m1);
            let b = (a & 0x0F0F_0F0F_0F0F_0F0F) + ((a >> 4) & 0x0F0F_0F0F_0F0F_0F0F);
            let start = b.wrapping_mul(0x0101_0101_0101_0101) >> 56;
            let w = if hi_half { w1 } else { w0 };
            let cnt = (w >> sh) & 3;
            hits >> start & ((1u64 << cnt) - 1) != 0
        };
        let hit = if BRANCHLESS {
            in_bucket(hits)
        } else {
            hits != 0 && in_bucket(hits)
        };
        if hit {
            return true;
        }
        let ota = bits_at(blk, 2 * L);
        if ota & ota_bit != 0 {
            let (b2, j2) = secondary(h, mm.salt, mm.nb, L as u64);
            let blk2 = unsafe { mm.blocks.get_unchecked(b2 as usize) };
            if block_has8::<L, O>(blk2, j2, fp) {
                return true;
            }
        }
    }
    false
}

impl Morton {
    /// Builds from hashes at most `load` of the slots full; None if placement failed.
    pub fn build(p: Params, hashes: &[u64], load: f64, seed: u64) -> Option<Morton> {
        let n = hashes.len();
        let salt = if std::env::var_os("MORTON_NOSALT").is_some() {
            0
        } else {
            seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        };
        let s = p.slots();
        let nb = ((n as f64 / (s as f64 * load)).ceil() as u64).max(1);
        let (l, o, f) = (p.l as u64, p.o as u64, p.f as u32);
        // per key: b1, j1, fp, b2, j2
        let mut b1 = vec![0u32; n];
        let mut j1 = vec![0u8; n];
        let mut b2 = vec![0u32; n];
        let mut j2 = vec![0u8; n];
        let mut fps = vec![0u16; n];
        for (i, &h) in hashes.iter().enumerate() {
            let (a, b, c, d, e) = derive(h, salt, nb, l, f);
            b1[i] = a as u32;
            j1[i] = b as u8;
            fps[i] = c as u16;
            b2[i] = d as u32;
            j2[i] = e as u8;
        }
        let nbu = nb as usize;
        let csr = |bk: &[u32]| {
            let mut start = vec![0u32; nbu + 1];
            for &b in bk {
                start[b as usize + 1] += 1;
            }
            for i in 0..nbu {
                start[i + 1] += start[i];
            }
            let mut pos = start.clone();
            let mut idx = vec![0u32; n];
            for (k, &b) in bk.iter().enumerate() {
                idx[pos[b as usize] as usize] = k as u32;
                pos[b as usize] += 1;
            }
            (start, idx)
        };
        let (s1, i1) = csr(&b1);
        let (s2, i2) = csr(&b2);
        let mut sec = vec![false; n];
        let mut cb = vec![0u8; nbu * p.l];
        let mut ck = vec![0u32; nbu];
        let mut over = vec![0u32; nbu]; // buckets above 3
        for k in 0..n {
            let bu = b1[k] as usize * p.l + j1[k] as usize;
            cb[bu] += 1;
            if cb[bu] == 4 {
                over[b1[k] as usize] += 1;
            }
            ck[b1[k] as usize] += 1;
        }
        let mut ota = vec![0u32; nbu];
        let illegal = |ck: &[u32], over: &[u32], b: usize| ck[b] as usize > s || over[b] > 0;
        let mut queue: std::collections::VecDeque<u32> = (0..nbu as u32)
            .filter(|&b| illegal(&ck, &over, b as usize))
            .collect();
        let mut inq = vec![false; nbu];
        for &b in &queue {
            inq[b as usize] = true;
        }
        let mut rng = seed | 1;
        let mut rnd = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let limit = 50 * n + 1000;
        let naive = std::env::var_os("MORTON_NAIVE").is_some();
        let mut steps = 0usize;
        while let Some(b) = queue.pop_front() {
            let b = b as usize;
            inq[b] = false;
            while illegal(&ck, &over, b) {
                steps += 1;
                if steps > limit {
                    return None;
                }
                // the bucket to relieve, if any is above 3
                let want_bucket = if over[b] > 0 {
                    (0..p.l).find(|&j| cb[b * p.l + j] > 3).map(|j| j as u8)
                } else {
                    None
                };
                // candidates: primary-placed keys of this block (in that bucket, if any)
                let mut best: Option<(u64, u32)> = None;
                let ks = &i1[s1[b] as usize..s1[b + 1] as usize];
                // group sizes among primary-placed keys
                let mut gsize = [0u32; 64];
                for &k in ks {
                    if !sec[k as usize] {
                        gsize[(j1[k as usize] as u64 % o) as usize] += 1;
                    }
                }
                for &k in ks {
                    let ku = k as usize;
                    if sec[ku] {
                        continue;
                    }
                    if let Some(jb) = want_bucket {
                        if j1[ku] != jb {
                            continue;
                        }
                    }
                    let g = j1[ku] as u64 % o;
                    let set = ota[b] >> g & 1 == 1;
                    let d = b2[ku] as usize;
                    let room = (ck[d] as usize) < s && cb[d * p.l + j2[ku] as usize] < 3 && d != b;
                    // lower is better: a new overflow bit costs most, then no room, then a
                    // small group, then chance
                    let set = set || naive;
                    let score = ((!set) as u64) << 40
                        | ((!room) as u64) << 39
                        | ((64 - gsize[g as usize].min(64)) as u64) << 32
                        | (rnd() & 0xFFFF_FFFF);
                    if best.is_none_or(|(bs, _)| score < bs) {
                        best = Some((score, k));
                    }
                }
                if let Some((_, k)) = best {
                    let ku = k as usize;
                    sec[ku] = true;
                    let from = b * p.l + j1[ku] as usize;
                    if cb[from] == 4 {
                        over[b] -= 1;
                    }
                    cb[from] -= 1;
                    ck[b] -= 1;
                    ota[b] |= 1 << (j1[ku] as u64 % o);
                    let d = b2[ku] as usize;
                    let to = d * p.l + j2[ku] as usize;
                    cb[to] += 1;
                    if cb[to] == 4 {
                        over[d] += 1;
                    }
                    ck[d] += 1;
                    if illegal(&ck, &over, d) && !inq[d] && d != b {
                        inq[d] = true;
                        queue.push_back(d as u32);
                    }
                    continue;
                }
                // no primary-placed key to move: send a secondary-placed key back home
                let back: Vec<u32> = i2[s2[b] as usize..s2[b + 1] as usize]
                    .iter()
                    .copied()
                    .filter(|&k| {
                        sec[k as usize] && want_bucket.is_none_or(|jb| j2[k as usize] == jb)
                    })
                    .collect();
                if back.is_empty() {
                    return None;
                }
                let k = back[(rnd() % back.len() as u64) as usize] as usize;
                sec[k] = false;
                let from = b * p.l + j2[k] as usize;
                if cb[from] == 4 {
                    over[b] -= 1;
                }
                cb[from] -= 1;
                ck[b] -= 1;
                let d = b1[k] as usize;
                let to = d * p.l + j1[k] as usize;
                cb[to] += 1;
                if cb[to] == 4 {
                    over[d] += 1;
                }
                ck[d] += 1;
                if illegal(&ck, &over, d) && !inq[d] && d != b {
                    inq[d] = true;
                    queue.push_back(d as u32);
                }
            }
        }
        // overflow bits from the final placement only
        let mut ota = vec![0u32; nbu];
        let mut secondary = 0;
        for k in 0..n {
            if sec[k] {
                ota[b1[k] as usize] |= 1 << (j1[k] as u64 % o);
                secondary += 1;
            }
        }
        // write the blocks: fingerprints in bucket order
        let fin: Vec<u32> = (0..n)
            .map(|k| {
                if sec[k] {
                    b2[k] * p.l as u32 + j2[k] as u32
                } else {
                    b1[k] * p.l as u32 + j1[k] as u32
                }
            })
            .collect();
        let (bs, bi) = {
            let nbk = nbu * p.l;
            let mut start = vec![0u32; nbk + 1];
            for &x in &fin {
                start[x as usize + 1] += 1;
            }
            for i in 0..nbk {
                start[i + 1] += start[i];
            }
            let mut pos = start.clone();
            let mut idx = vec![0u32; n];
            for (k, &x) in fin.iter().enumerate() {
                idx[pos[x as usize] as usize] = k as u32;
                pos[x as usize] += 1;
            }
            (start, idx)
        };
        let mut blocks = vec![Block::default(); nbu];
        let mut ota_set = 0;
        for (b, blk) in blocks.iter_mut().enumerate() {
            let mut slot = 0;
            for j in 0..p.l {
                let bu = b * p.l + j;
                let ks = &bi[bs[bu] as usize..bs[bu + 1] as usize];
                assert!(ks.len() <= 3);
                set_bits(blk, 2 * j, 2, ks.len() as u64);
                for &k in ks {
                    set_bits(blk, p.base() + slot * p.f, p.f, fps[k as usize] as u64);
                    slot += 1;
                }
            }
            assert!(slot <= s);
            set_bits(blk, 2 * p.l, p.o, ota[b] as u64);
            ota_set += ota[b].count_ones() as usize;
        }
        Some(Morton {
            p,
            salt,
            nb,
            blocks,
            secondary,
            ota_set,
        })
    }

    pub fn bits_per_key(&self, n: usize) -> f64 {
        self.nb as f64 * 512.0 / n as f64
    }

    /// The lookup with its parameters at run time; also returns the lines it read.
    pub fn contains_counted(&self, h: u64) -> (bool, u32) {
        let p = self.p;
        let (b1, j1, fp, b2, j2) = derive(h, self.salt, self.nb, p.l as u64, p.f as u32);
        let blk = &self.blocks[b1 as usize];
        if bucket_has(blk, j1, fp, p.base(), p.f) {
            return (true, 1);
        }
        let ota = bits_at(blk, 2 * p.l);
        if ota >> (j1 % p.o as u64) & 1 == 0 {
            return (false, 1);
        }
        let blk2 = &self.blocks[b2 as usize];
        let lines = if b2 == b1 { 1 } else { 2 };
        (bucket_has(blk2, j2, fp, p.base(), p.f), lines)
    }

    /// The lookup, compiled for one layout.
    #[inline(always)]
    pub fn contains<const L: usize, const O: usize, const F: usize>(&self, h: u64) -> bool {
        if F == 8 {
            return self.contains8::<L, O>(h);
        }
        let base = 2 * L + O;
        let (b1, j1, fp) = primary(h, self.salt, self.nb, L as u64, F as u32);
        // SAFETY (probe only): b1, b2 < nb by mulhi.
        let blk = unsafe { self.blocks.get_unchecked(b1 as usize) };
        if bucket_has(blk, j1, fp, base, F) {
            return true;
        }
        let ota = bits_at(blk, 2 * L);
        if ota >> (j1 % O as u64) & 1 == 0 {
            return false;
        }
        let (b2, j2) = secondary(h, self.salt, self.nb, L as u64);
        let blk2 = unsafe { self.blocks.get_unchecked(b2 as usize) };
        bucket_has(blk2, j2, fp, base, F)
    }

    /// The lookup for 8-bit fingerprints: the fingerprint is compared with every slot of the
    /// block at once (SSE2, the x86-64 baseline); the bucket's slot range is computed only
    /// when some slot matched.
    #[inline(always)]
    pub fn contains8<const L: usize, const O: usize>(&self, h: u64) -> bool {
        let (b1, j1, fp) = primary(h, self.salt, self.nb, L as u64, 8);
        let blk = unsafe { self.blocks.get_unchecked(b1 as usize) };
        let hit = if BRANCHY {
            block_has8::<L, O>(blk, j1, fp)
        } else {
            block_has8_bf::<L, O>(blk, j1, fp)
        };
        let ota = bits_at(blk, 2 * L) >> (j1 % O as u64) & 1;
        if hit | (ota == 0) {
            return hit;
        }
        let (b2, j2) = secondary(h, self.salt, self.nb, L as u64);
        let blk2 = unsafe { self.blocks.get_unchecked(b2 as usize) };
        block_has8::<L, O>(blk2, j2, fp)
    }

    /// Branch-free: the secondary block replaces the primary one (a select, not a branch)
    /// only when the primary bucket missed and its overflow bit is set, so an absent key's
    /// lookup reads one line unless that bit is set, and no answer is mispredicted.
    #[inline(always)]
    pub fn contains_bf<const L: usize, const O: usize, const F: usize>(&self, h: u64) -> bool {
        let base = 2 * L + O;
        let (b1, j1, fp) = primary(h, self.salt, self.nb, L as u64, F as u32);
        let blk = unsafe { self.blocks.get_unchecked(b1 as usize) };
        let hit1 = if F == 8 {
            block_has8_bf::<L, O>(blk, j1, fp)
        } else {
            bucket_has(blk, j1, fp, base, F)
        };
        let ota = bits_at(blk, 2 * L) >> (j1 % O as u64) & 1;
        let need = (!hit1 as u64 & ota).wrapping_neg();
        let (b2, j2) = secondary(h, self.salt, self.nb, L as u64);
        let b = b1 ^ ((b1 ^ b2) & need);
        let j = j1 ^ ((j1 ^ j2) & need);
        let blk = unsafe { self.blocks.get_unchecked(std::hint::black_box(b) as usize) };
        if F == 8 {
            block_has8_bf::<L, O>(blk, j, fp)
        } else {
            bucket_has(blk, j, fp, base, F)
        }
    }

    #[inline(always)]
    pub fn prefetch(&self, h: u64) {
        let b1 = mulhi(h ^ self.salt, self.nb);
        #[cfg(target_arch = "x86_64")]
        unsafe {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            _mm_prefetch(
                self.blocks.as_ptr().add(b1 as usize) as *const i8,
                _MM_HINT_T0,
            );
        }
    }

    /// Batched lookups: prefetch 16 ahead.
    pub fn contains_batch<const L: usize, const O: usize, const F: usize>(
        &self,
        hs: &[u64],
        out: &mut [bool],
    ) {
        const D: usize = 16;
        for h in hs.iter().take(D) {
            self.prefetch(*h);
        }
        for i in 0..hs.len() {
            if i + D < hs.len() {
                self.prefetch(hs[i + D]);
            }
            out[i] = self.contains::<L, O, F>(hs[i]);
        }
    }
}
