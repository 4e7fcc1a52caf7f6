//! Issue 43's probe: the size and false-positive rate of candidate compact-v2 layouts at
//! LevelDB's key counts per filter, against LevelDB's Bloom filter at 10 bits per key.
//!
//! Everything is simulated from the definitions (the crate's classic derivation, FORMAT.md
//! §2.1; LevelDB 1.23's util/bloom.cc and util/hash.cc), over db_bench-like 16-byte keys
//! (`%016d` of random numbers). A layout's size is the smallest bucket count, from the fewest
//! that hold the keys up, at which some seed index places every key (exact matching). The
//! false-positive rate is measured with absent keys of the same form.

use std::collections::{HashSet, VecDeque};

fn fmix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    x
}
const DEFAULT_SEED: u64 = 0x6375_636B_6F6F_7373;
const SEED_STEP: u64 = 0x9E37_79B9_7F4A_7C15;
fn range32(x: u32, n: u64) -> u64 {
    (x as u64 * n) >> 32
}
/// The classic derivation over `m` (even) buckets: (i1, i2, fp).
fn classic(h: u64, m: u64, f: u32) -> (u64, u64, u32) {
    let i1 = range32((h >> 32) as u32, m);
    let max = (u32::MAX >> (32 - f)) as u64;
    let fp = (range32(h as u32, max) + 1) as u32;
    let mixed = ((fp as u64).wrapping_mul(SEED_STEP) >> 32) as u32;
    let o = 2 * range32(mixed, m / 2) + 1;
    let i2 = if o >= i1 { o - i1 } else { (o + m) - i1 };
    (i1, i2 % m, fp)
}

#[derive(Clone, Copy, PartialEq)]
enum Derive {
    /// m even only: the classic derivation (version 1).
    Even,
    /// any m: even m classic; odd m the classic derivation over 2m, both buckets halved (a
    /// key whose two halves coincide has one bucket).
    Halve,
    /// any m: the reflection (o − i) mod m with o odd in 1..m; a fixed point (i2 = i1) moves
    /// to i1 + 1 mod m.
    Reflect,
}

fn locate(d: Derive, h: u64, m: u64, f: u32) -> (u64, u64, u32) {
    match d {
        Derive::Even => classic(h, m, f),
        Derive::Halve => {
            if m % 2 == 0 {
                classic(h, m, f)
            } else {
                let (a, b, fp) = classic(h, 2 * m, f);
                (a >> 1, b >> 1, fp)
            }
        }
        Derive::Reflect => {
            if m % 2 == 0 {
                classic(h, m, f)
            } else {
                let i1 = range32((h >> 32) as u32, m);
                let max = (u32::MAX >> (32 - f)) as u64;
                let fp = (range32(h as u32, max) + 1) as u32;
                let mixed = ((fp as u64).wrapping_mul(SEED_STEP) >> 32) as u32;
                let o = 2 * range32(mixed, m / 2) + 1;
                let mut i2 = (o + m - i1) % m;
                if i2 == i1 {
                    i2 = (i1 + 1) % m;
                }
                (i1, i2, fp)
            }
        }
    }
}

struct Layout {
    name: &'static str,
    header: u64,
    b: usize,
    f: u32,
    bucket_bits: u64,
    derive: Derive,
    seeds: u64,
}

/// Exact placement by augmenting paths (the crate's `Placement`, simplified).
fn place(keys: &[(u64, u64)], m: usize, b: usize) -> Option<Vec<usize>> {
    let mut at = vec![usize::MAX; keys.len()];
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); m];
    for k in 0..keys.len() {
        let mut from = vec![(usize::MAX, usize::MAX); m];
        let mut seen = vec![false; m];
        let mut q = VecDeque::new();
        for i in [keys[k].0 as usize, keys[k].1 as usize] {
            if !seen[i] {
                seen[i] = true;
                q.push_back(i);
            }
        }
        let mut end = None;
        while let Some(x) = q.pop_front() {
            if members[x].len() < b {
                end = Some(x);
                break;
            }
            for &r in &members[x] {
                let (p, s) = keys[r];
                let y = if p as usize == x { s as usize } else { p as usize };
                if !seen[y] {
                    seen[y] = true;
                    from[y] = (x, r);
                    q.push_back(y);
                }
            }
        }
        let mut x = end?;
        loop {
            let (prev, moved) = from[x];
            let arriving = if prev == usize::MAX { k } else { moved };
            members[x].push(arriving);
            at[arriving] = x;
            if prev == usize::MAX {
                break;
            }
            let pos = members[prev].iter().position(|&r| r == moved).unwrap();
            members[prev].swap_remove(pos);
            x = prev;
        }
    }
    Some(at)
}

struct Built {
    m: u64,
    seed: u64,
    /// Each bucket's fingerprints.
    buckets: Vec<Vec<u32>>,
}

fn build(l: &Layout, hashes: &[u64]) -> Built {
    let n = hashes.len() as u64;
    let mut m = n.div_ceil(l.b as u64).max(2);
    if l.derive == Derive::Even {
        m += m % 2;
    }
    loop {
        for k in 0..l.seeds {
            let seed = DEFAULT_SEED.wrapping_add(k.wrapping_mul(SEED_STEP));
            let loc: Vec<(u64, u64, u32)> =
                hashes.iter().map(|&h| locate(l.derive, fmix64(h ^ seed), m, l.f)).collect();
            let pairs: Vec<(u64, u64)> = loc.iter().map(|&(a, b, _)| (a, b)).collect();
            if let Some(at) = place(&pairs, m as usize, l.b) {
                let mut buckets = vec![Vec::new(); m as usize];
                for (j, &x) in at.iter().enumerate() {
                    buckets[x].push(loc[j].2);
                }
                return Built { m, seed, buckets };
            }
        }
        m += if l.derive == Derive::Even { 2 } else { 1 };
    }
}

fn may_contain(l: &Layout, t: &Built, h: u64) -> bool {
    let (i1, i2, fp) = locate(l.derive, fmix64(h ^ t.seed), t.m, l.f);
    t.buckets[i1 as usize].contains(&fp) || t.buckets[i2 as usize].contains(&fp)
}

/// LevelDB's `Hash` (util/hash.cc).
fn leveldb_hash(data: &[u8], seed: u32) -> u32 {
    let m: u32 = 0xc6a4_a793;
    let mut h = seed ^ (data.len() as u32).wrapping_mul(m);
    let mut c = data.chunks_exact(4);
    for w in &mut c {
        h = h.wrapping_add(u32::from_le_bytes(w.try_into().unwrap()));
        h = h.wrapping_mul(m);
        h ^= h >> 16;
    }
    let r = c.remainder();
    if !r.is_empty() {
        for (i, &byte) in r.iter().enumerate().rev() {
            h = h.wrapping_add(u32::from(byte) << (8 * i));
        }
        h = h.wrapping_mul(m);
        h ^= h >> 24;
    }
    h
}

/// LevelDB's Bloom filter at `bits_per_key` (util/bloom.cc): the bit array and k.
fn bloom_build(keys: &[Vec<u8>], bits_per_key: usize) -> Vec<u8> {
    let k = ((bits_per_key as f64 * 0.69) as usize).clamp(1, 30);
    let bits = (keys.len() * bits_per_key).max(64);
    let bytes = bits.div_ceil(8);
    let bits = bytes * 8;
    let mut a = vec![0u8; bytes];
    for key in keys {
        let mut h = leveldb_hash(key, 0xbc9f_1d34);
        let delta = h.rotate_right(17);
        for _ in 0..k {
            let pos = h as usize % bits;
            a[pos / 8] |= 1 << (pos % 8);
            h = h.wrapping_add(delta);
        }
    }
    a.push(k as u8);
    a
}

fn bloom_may_match(filter: &[u8], key: &[u8]) -> bool {
    let bits = (filter.len() - 1) * 8;
    let k = filter[filter.len() - 1];
    let mut h = leveldb_hash(key, 0xbc9f_1d34);
    let delta = h.rotate_right(17);
    for _ in 0..k {
        let pos = h as usize % bits;
        if filter[pos / 8] & (1 << (pos % 8)) == 0 {
            return false;
        }
        h = h.wrapping_add(delta);
    }
    true
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(SEED_STEP);
        fmix64(self.0)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sets: usize = args.get(1).map_or(300, |s| s.parse().unwrap());
    let absent_per_set: usize = args.get(2).map_or(2000, |s| s.parse().unwrap());
    let semi = |name, header, derive, seeds| Layout {
        name,
        header,
        b: 4,
        f: 10,
        bucket_bits: 36,
        derive,
        seeds,
    };
    let layouts = [
        semi("v1: 4-byte header, even m, b=4 semi f=10, 16 seeds", 4, Derive::Even, 16),
        semi("2-byte header, even m, b=4 semi f=10, 8 seeds", 2, Derive::Even, 8),
        semi("2-byte header, any m (odd: halved 2m), b=4 semi f=10, 8 seeds", 2, Derive::Halve, 8),
        semi("2-byte header, any m (odd: reflection), b=4 semi f=10, 8 seeds", 2, Derive::Reflect, 8),
        semi("1-byte header, any m (odd: halved 2m), b=4 semi f=10, 8 seeds", 1, Derive::Halve, 8),
        Layout {
            name: "2-byte header, any m (odd: halved 2m), b=2 packed f=9, 8 seeds",
            header: 2,
            b: 2,
            f: 9,
            bucket_bits: 18,
            derive: Derive::Halve,
            seeds: 8,
        },
    ];
    println!("sets {sets} a key count, {absent_per_set} absent keys a set; bits per key of the filter alone / with LevelDB's 4-byte offset");
    println!();
    print!("| keys | Bloom 10 | Bloom FPR |");
    for (j, _) in layouts.iter().enumerate() {
        print!(" L{j} bits/key | L{j} FPR |");
    }
    println!();
    print!("|---:|---:|---:|");
    for _ in &layouts {
        print!("---:|---:|");
    }
    println!();
    let mut rng = Rng(43);
    for n in [8usize, 12, 19, 26, 36, 50, 71, 140] {
        let (mut bloom_bytes, mut bloom_fp, mut asked) = (0u64, 0u64, 0u64);
        let mut bytes = vec![0u64; layouts.len()];
        let mut fps = vec![0u64; layouts.len()];
        for _ in 0..sets {
            let mut set = HashSet::new();
            while set.len() < n {
                set.insert(rng.next() % 10_000_000_000);
            }
            let keys: Vec<Vec<u8>> = set.iter().map(|k| format!("{k:016}").into_bytes()).collect();
            let absent: Vec<Vec<u8>> = (0..absent_per_set)
                .map(|_| loop {
                    let k = rng.next() % 10_000_000_000;
                    if !set.contains(&k) {
                        break format!("{k:016}").into_bytes();
                    }
                })
                .collect();
            let bloom = bloom_build(&keys, 10);
            bloom_bytes += bloom.len() as u64;
            bloom_fp += absent.iter().filter(|k| bloom_may_match(&bloom, k)).count() as u64;
            asked += absent.len() as u64;
            let hashes: Vec<u64> = keys.iter().map(|k| xxhash_rust::xxh3::xxh3_64(k)).collect();
            for (j, l) in layouts.iter().enumerate() {
                let t = build(l, &hashes);
                bytes[j] += l.header + (t.m * l.bucket_bits).div_ceil(8);
                assert!(hashes.iter().all(|&h| may_contain(l, &t, h)));
                fps[j] += absent
                    .iter()
                    .filter(|k| may_contain(l, &t, xxhash_rust::xxh3::xxh3_64(k)))
                    .count() as u64;
            }
        }
        let per_key = |b: u64| b as f64 * 8.0 / (sets * n) as f64;
        let with_offset = |b: u64| (b + 4 * sets as u64) as f64 * 8.0 / (sets * n) as f64;
        print!(
            "| {n} | {:.2} / {:.2} | {:.3} % |",
            per_key(bloom_bytes),
            with_offset(bloom_bytes),
            100.0 * bloom_fp as f64 / asked as f64
        );
        for j in 0..layouts.len() {
            print!(
                " {:.2} / {:.2} | {:.3} % |",
                per_key(bytes[j]),
                with_offset(bytes[j]),
                100.0 * fps[j] as f64 / asked as f64
            );
        }
        println!();
    }
    println!();
    for (j, l) in layouts.iter().enumerate() {
        println!("L{j}: {}", l.name);
    }
}
