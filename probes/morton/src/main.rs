//! Probe for issue 28: a Morton-style one-line block layout for built (static) filters
//! (Breslow & Jayasena, PVLDB 2018), against `sbbf-rs-safe` (split-block Bloom, 11 bits/key),
//! `xorf`'s BinaryFuse8 and cuckoo-sst's default layout. Not part of the crate; it depends on
//! the crate only for the comparison. The layout and its builder are in `layout.rs`.
//!
//!   cargo run --release -- count N L,O,F@load ...      # bits/key, keys placed in their
//!       # secondary bucket, overflow bits set, lines per absent and present lookup (counted),
//!       # measured FPR over 4 M absent keys; and the peers' bits/key and FPR
//!   MORTON_NAIVE=1 cargo run --release -- count ...   # eviction blind to the overflow bits
//!   cargo run --release -- time N ROUNDS L,O,F@load ...  # single absent / present, batched
//!       # absent, and the LSM read (one absent key asked of 16 filters of N keys, newest
//!       # first, stopping at the first "maybe"), every case in one process, rounds alternated,
//!       # medians; ratios against sbbf. Run it on an otherwise idle machine.
//!   cargo run --release -- micro | lsmmicro             # kernel variants on precomputed hashes
//!
//! Layouts compiled in for timing: see `dispatch!`. Single lookups of 8-bit layouts check the
//! bucket without a branch (`BRANCHY` in layout.rs) and branch only on the overflow bit; the
//! "hoisted" LSM read derives the bucket, the fingerprint and the counter masks once per key.
mod layout;

use layout::{Morton, Params};
use std::hint::black_box;
use std::time::Instant;
use xorf::{BinaryFuse8, Filter as _};
use xxhash_rust::xxh3::xxh3_64;

fn key(i: u64) -> [u8; 16] {
    let mut k = *b"key:\0\0\0\0\0\0\0\0\0\0\0\0";
    k[8..].copy_from_slice(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
    k
}

fn hashes(lo: u64, n: u64) -> Vec<u64> {
    (lo..lo + n).map(|i| xxh3_64(&key(i))).collect()
}

const ABSENT_LO: u64 = 1 << 50;

fn parse_layout(s: &str) -> (Params, f64) {
    let (lof, load) = s.split_once('@').expect("L,O,F@load");
    let v: Vec<usize> = lof.split(',').map(|x| x.parse().unwrap()).collect();
    (
        Params {
            l: v[0],
            o: v[1],
            f: v[2],
        },
        load.parse().unwrap(),
    )
}

macro_rules! dispatch {
    ($p:expr, $m:ident, $body:ident) => {{
        let p: Params = $p;
        match (p.l, p.o, p.f) {
            (64, 16, 7) => $body!($m, 64, 16, 7),
            (64, 16, 8) => $body!($m, 64, 16, 8),
            (64, 8, 7) => $body!($m, 64, 8, 7),
            (56, 16, 8) => $body!($m, 56, 16, 8),
            (48, 16, 8) => $body!($m, 48, 16, 8),
            (48, 8, 8) => $body!($m, 48, 8, 8),
            (40, 16, 8) => $body!($m, 40, 16, 8),
            (32, 16, 8) => $body!($m, 32, 16, 8),
            (48, 16, 10) => $body!($m, 48, 16, 10),
            (40, 16, 10) => $body!($m, 40, 16, 10),
            (40, 8, 10) => $body!($m, 40, 8, 10),
            (32, 16, 10) => $body!($m, 32, 16, 10),
            _ => panic!("layout {:?} not compiled in", p),
        }
    }};
}

fn count(n: u64, layouts: &[(Params, f64)]) {
    let present = hashes(0, n);
    let absent = hashes(ABSENT_LO, 4_000_000);
    println!(
        "| layout L,O,F (slots) | load | bits/key | secondary | overflow bits set | lines/absent | lines/present | FPR | build s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for &(p, load) in layouts {
        let t = Instant::now();
        let Some(m) = Morton::build(p, &present, load, 0x1234_5678) else {
            println!(
                "| {},{},{} ({}) | {load} | — | failed | | | | | |",
                p.l,
                p.o,
                p.f,
                p.slots()
            );
            continue;
        };
        let secs = t.elapsed().as_secs_f64();
        // no false negatives, lines of present keys
        let mut lp = 0u64;
        for &h in &present {
            let (ok, lines) = m.contains_counted(h);
            assert!(ok, "false negative");
            lp += lines as u64;
        }
        let mut la = 0u64;
        let mut fp = 0u64;
        for &h in &absent {
            let (ok, lines) = m.contains_counted(h);
            la += lines as u64;
            fp += ok as u64;
        }
        // the compiled kernel agrees
        macro_rules! check {
            ($mm:ident, $l:literal, $o:literal, $f:literal) => {{
                for &h in present.iter().chain(absent.iter()).step_by(7) {
                    assert_eq!($mm.contains::<$l, $o, $f>(h), $mm.contains_counted(h).0);
                }
            }};
        }
        dispatch!(p, m, check);
        println!(
            "| {},{},{} ({}) | {load:.2} | {:.2} | {:.2} % | {:.2} % | {:.3} | {:.3} | {:.3} % | {secs:.1} |",
            p.l,
            p.o,
            p.f,
            p.slots(),
            m.bits_per_key(n as usize),
            100.0 * m.secondary as f64 / n as f64,
            100.0 * m.ota_set as f64 / (m.nb as f64 * p.o as f64),
            la as f64 / absent.len() as f64,
            lp as f64 / n as f64,
            100.0 * fp as f64 / absent.len() as f64,
        );
        let _ = &m;
    }
    // peers
    for bpk in [11.0, 16.0] {
        let mut s = sbbf_rs_safe::Filter::new(bpk as usize, n as usize);
        for &h in &present {
            s.insert_hash(h);
        }
        let fp = absent.iter().filter(|&&h| s.contains_hash(h)).count();
        println!(
            "| sbbf {bpk} bits/key | | {:.2} | | | 1 | 1 | {:.3} % | |",
            s.as_bytes().len() as f64 * 8.0 / n as f64,
            100.0 * fp as f64 / absent.len() as f64
        );
    }
    let fuse = BinaryFuse8::try_from(&present).unwrap();
    let fp = absent.iter().filter(|h| fuse.contains(h)).count();
    println!(
        "| BinaryFuse8 | | {:.2} | | | 3 | 3 | {:.3} % | |",
        fuse.fingerprints.len() as f64 * 8.0 / n as f64,
        100.0 * fp as f64 / absent.len() as f64
    );
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

const PROBES: usize = 1 << 20;

fn absent_keys(salt: u64) -> Vec<[u8; 16]> {
    (0..PROBES as u64)
        .map(|i| key(ABSENT_LO + salt * PROBES as u64 + i))
        .collect()
}

type Case<'a> = (String, Box<dyn Fn() -> usize + 'a>);

/// Runs each case once per round (order reversed every other round); median Mkeys/s.
fn run(title: &str, rounds: usize, cases: Vec<Case<'_>>, keys_per_call: usize) {
    let mut rates = vec![Vec::new(); cases.len()];
    for (_, f) in &cases {
        black_box(f()); // warm
    }
    for r in 0..rounds {
        let order: Vec<usize> = if r % 2 == 0 {
            (0..cases.len()).collect()
        } else {
            (0..cases.len()).rev().collect()
        };
        for i in order {
            let t = Instant::now();
            black_box((cases[i].1)());
            rates[i].push(keys_per_call as f64 / t.elapsed().as_secs_f64() / 1e6);
        }
    }
    println!("\n{title} (million keys/s, median of {rounds} rounds)");
    let meds: Vec<f64> = rates.iter_mut().map(|v| median(v)).collect();
    let base = meds[cases
        .iter()
        .position(|(n, _)| n.starts_with("sbbf"))
        .unwrap_or(0)];
    for ((name, _), m) in cases.iter().zip(&meds) {
        println!("| {name} | {m:.2} | {:.2}× sbbf |", m / base);
    }
}

fn time(n: u64, rounds: usize, layouts: &[(Params, f64)]) {
    const TABLES: u64 = 16;
    let keys_owned = absent_keys(1);
    let keys: &[[u8; 16]] = &keys_owned;
    let present_keys: Vec<[u8; 16]> = {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        (0..PROBES)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                key(x % n)
            })
            .collect()
    };
    // one filter of each kind on keys 0..n, and 16 on disjoint ranges (table t: t·n..)
    let mut mortons: Vec<Vec<Morton>> = Vec::new();
    let mut sb = Vec::new();
    let mut fu = Vec::new();
    let mut ck = Vec::new();
    for t in 0..TABLES {
        let hs = hashes(t * n, n);
        let mut row = Vec::new();
        for &(p, load) in layouts {
            row.push(Morton::build(p, &hs, load, 0x1234_5678 ^ t).expect("build"));
        }
        mortons.push(row);
        let mut s = sbbf_rs_safe::Filter::new(11, n as usize);
        for &h in &hs {
            s.insert_hash(h);
        }
        sb.push(s);
        fu.push(BinaryFuse8::try_from(&hs).unwrap());
        let mut b = cuckoo_sst::FilterBuilder::new(cuckoo_sst::Config::new(n as usize));
        for i in t * n..(t + 1) * n {
            b.add_key(&key(i));
        }
        ck.push(b.finish().unwrap());
        eprintln!("built table {t}");
    }
    let views: Vec<cuckoo_sst::FilterRef<'_>> = ck.iter().map(|f| f.as_filter_ref()).collect();

    macro_rules! single {
        ($mm:ident, $l:literal, $o:literal, $f:literal) => {{
            let mm = $mm;
            Box::new(move || single_m::<$l, $o, $f>(mm, keys)) as Box<dyn Fn() -> usize>
        }};
    }
    macro_rules! single_present {
        ($mm:ident, $l:literal, $o:literal, $f:literal) => {{
            let mm = $mm;
            let keys: &[[u8; 16]] = &present_keys;
            Box::new(move || single_m::<$l, $o, $f>(mm, keys)) as Box<dyn Fn() -> usize>
        }};
    }
    macro_rules! batch {
        ($mm:ident, $l:literal, $o:literal, $f:literal) => {{
            let mm = $mm;
            Box::new(move || {
                let mut hs = [0u64; 1024];
                let mut out = [false; 1024];
                let mut hits = 0;
                for chunk in keys.chunks(1024) {
                    for (h, k) in hs.iter_mut().zip(chunk) {
                        *h = xxh3_64(black_box(&k[..]));
                    }
                    mm.contains_batch::<$l, $o, $f>(&hs[..chunk.len()], &mut out[..chunk.len()]);
                    hits += out[..chunk.len()].iter().filter(|&&x| x).count();
                }
                hits
            }) as Box<dyn Fn() -> usize>
        }};
    }
    macro_rules! lsm {
        ($mm:ident, $l:literal, $o:literal, $f:literal) => {{
            let ms: &Vec<&Morton> = $mm;
            Box::new(move || lsm_m::<$l, $o, $f>(ms, &keys[..PROBES / 4])) as Box<dyn Fn() -> usize>
        }};
    }
    let name = |p: &Params, load: f64| format!("morton {},{},{}@{load}", p.l, p.o, p.f);

    // single absent
    let mut cases: Vec<Case<'_>> = Vec::new();
    for (i, &(p, load)) in layouts.iter().enumerate() {
        let m = &mortons[0][i];
        cases.push((name(&p, load), dispatch!(p, m, single)));
    }
    let (s0, f0, v0) = (&sb[0], &fu[0], views[0]);
    cases.push((
        "sbbf 11".into(),
        Box::new(|| {
            keys.iter()
                .filter(|k| s0.contains_hash(xxh3_64(black_box(&k[..]))))
                .count()
        }),
    ));
    cases.push((
        "BinaryFuse8".into(),
        Box::new(|| {
            keys.iter()
                .filter(|k| f0.contains(&xxh3_64(black_box(&k[..]))))
                .count()
        }),
    ));
    cases.push((
        "cuckoo-sst default".into(),
        Box::new(|| {
            keys.iter()
                .filter(|k| v0.contains_hash(cuckoo_sst::KeyHash::of(black_box(&k[..]))))
                .count()
        }),
    ));
    run(&format!("{n} keys, single absent"), rounds, cases, PROBES);

    // single present
    let mut cases: Vec<Case<'_>> = Vec::new();
    for (i, &(p, load)) in layouts.iter().enumerate() {
        let m = &mortons[0][i];
        cases.push((name(&p, load), dispatch!(p, m, single_present)));
    }
    let pk = &present_keys;
    cases.push((
        "sbbf 11".into(),
        Box::new(|| {
            pk.iter()
                .filter(|k| s0.contains_hash(xxh3_64(black_box(&k[..]))))
                .count()
        }),
    ));
    cases.push((
        "BinaryFuse8".into(),
        Box::new(|| {
            pk.iter()
                .filter(|k| f0.contains(&xxh3_64(black_box(&k[..]))))
                .count()
        }),
    ));
    cases.push((
        "cuckoo-sst default".into(),
        Box::new(|| {
            pk.iter()
                .filter(|k| v0.contains_hash(cuckoo_sst::KeyHash::of(black_box(&k[..]))))
                .count()
        }),
    ));
    run(&format!("{n} keys, single present"), rounds, cases, PROBES);

    // batched absent (peers: their single lookups)
    let mut cases: Vec<Case<'_>> = Vec::new();
    for (i, &(p, load)) in layouts.iter().enumerate() {
        let m = &mortons[0][i];
        cases.push((name(&p, load) + " batch", dispatch!(p, m, batch)));
    }
    cases.push((
        "sbbf 11".into(),
        Box::new(|| {
            keys.iter()
                .filter(|k| s0.contains_hash(xxh3_64(black_box(&k[..]))))
                .count()
        }),
    ));
    cases.push((
        "cuckoo-sst default batch".into(),
        Box::new(|| {
            let mut hs = [cuckoo_sst::KeyHash::of(b""); 1024];
            let mut out = [false; 1024];
            let mut hits = 0;
            for chunk in keys.chunks(1024) {
                for (h, k) in hs.iter_mut().zip(chunk) {
                    *h = cuckoo_sst::KeyHash::of(black_box(&k[..]));
                }
                v0.contains_batch(&hs[..chunk.len()], &mut out[..chunk.len()]);
                hits += out[..chunk.len()].iter().filter(|&&x| x).count();
            }
            hits
        }),
    ));
    run(&format!("{n} keys, batched absent"), rounds, cases, PROBES);

    // LSM-16
    let per_layout: Vec<Vec<&Morton>> = (0..layouts.len())
        .map(|i| mortons.iter().map(|row| &row[i]).collect())
        .collect();
    let lsm_keys = PROBES / 4;
    let keys = &keys[..lsm_keys];
    let mut cases: Vec<Case<'_>> = Vec::new();
    for (i, &(p, load)) in layouts.iter().enumerate() {
        let ms = &per_layout[i];
        cases.push((name(&p, load), dispatch!(p, ms, lsm)));
    }
    for (i, &(p, load)) in layouts.iter().enumerate() {
        let ms: &Vec<&Morton> = &per_layout[i];
        // check the hoisted read against single lookups
        for k in keys.iter().take(20000) {
            let h = xxh3_64(k);
            let want = ms.iter().any(|m| m.contains_counted(h).0);
            match (p.l, p.o, p.f) {
                (40, 16, 8) => assert_eq!(layout::first_containing8::<40, 16, false>(ms, h), want),
                (48, 16, 8) => assert_eq!(layout::first_containing8::<48, 16, false>(ms, h), want),
                _ => {}
            }
        }
        match (p.l, p.o, p.f) {
            (40, 16, 8) => {
                cases.push((
                    name(&p, load) + " hoisted",
                    Box::new(move || lsm_hoisted::<40, 16, false>(ms, keys)),
                ));
                cases.push((
                    name(&p, load) + " hoisted, branch-free bucket",
                    Box::new(move || lsm_hoisted::<40, 16, true>(ms, keys)),
                ));
            }
            (48, 16, 8) => {
                cases.push((
                    name(&p, load) + " hoisted",
                    Box::new(move || lsm_hoisted::<48, 16, false>(ms, keys)),
                ));
                cases.push((
                    name(&p, load) + " hoisted, branch-free bucket",
                    Box::new(move || lsm_hoisted::<48, 16, true>(ms, keys)),
                ));
            }
            _ => {}
        }
    }
    let (sb, fu, views) = (&sb, &fu, &views);
    cases.push(("sbbf 11".into(), Box::new(move || lsm_sbbf(sb, keys))));
    cases.push(("BinaryFuse8".into(), Box::new(move || lsm_fuse(fu, keys))));
    cases.push((
        "cuckoo-sst default".into(),
        Box::new(move || {
            keys.iter()
                .filter(|k| {
                    cuckoo_sst::FilterRef::first_containing(
                        views,
                        cuckoo_sst::KeyHash::of(black_box(&k[..])),
                    )
                    .is_some()
                })
                .count()
        }),
    ));
    run(
        &format!("LSM-16 × {n} keys, absent"),
        rounds,
        cases,
        lsm_keys,
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args[0].as_str() {
        "count" => {
            let n: u64 = args[1].parse().unwrap();
            let layouts: Vec<(Params, f64)> = args[2..].iter().map(|s| parse_layout(s)).collect();
            count(n, &layouts);
        }
        "time" => {
            let n: u64 = args[1].parse().unwrap();
            let rounds: usize = args[2].parse().unwrap();
            let layouts: Vec<(Params, f64)> = args[3..].iter().map(|s| parse_layout(s)).collect();
            time(n, rounds, &layouts);
        }
        "lsmmicro" => {
            let ms: Vec<Morton> = (0..16u64)
                .map(|t| {
                    Morton::build(
                        Params { l: 40, o: 16, f: 8 },
                        &hashes(t * 1_000_000, 1_000_000),
                        0.95,
                        t,
                    )
                    .unwrap()
                })
                .collect();
            let sbs: Vec<sbbf_rs_safe::Filter> = (0..16u64)
                .map(|t| {
                    let mut s = sbbf_rs_safe::Filter::new(11, 1_000_000);
                    for h in hashes(t * 1_000_000, 1_000_000) {
                        s.insert_hash(h);
                    }
                    s
                })
                .collect();
            for m in &ms {
                eprintln!("blocks at {:p} nb {}", m.blocks.as_ptr(), m.nb);
            }
            let ab = hashes(ABSENT_LO, 1_000_000);
            for _ in 0..5 {
                let t = Instant::now();
                let c = ab
                    .iter()
                    .filter(|&&h| ms.iter().any(|m| m.contains8::<40, 16>(black_box(h))))
                    .count();
                let a = ab.len() as f64 / t.elapsed().as_secs_f64() / 1e6;
                let t = Instant::now();
                let c1 = ab
                    .iter()
                    .filter(|&&h| {
                        ms.iter().enumerate().any(|(i, m)| {
                            m.contains8::<40, 16>(black_box(
                                h ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                            ))
                        })
                    })
                    .count();
                let a1 = ab.len() as f64 / t.elapsed().as_secs_f64() / 1e6;
                let t = Instant::now();
                let c2 = ab
                    .iter()
                    .filter(|&&h| sbs.iter().any(|s| s.contains_hash(black_box(h))))
                    .count();
                let b = ab.len() as f64 / t.elapsed().as_secs_f64() / 1e6;
                println!("{c} {c1} {c2} morton {a:.3} M/s, salted {a1:.3}, sbbf {b:.3} M/s");
            }
        }
        "micro" => {
            let hs = hashes(0, 1_000_000);
            let m = Morton::build(Params { l: 64, o: 16, f: 7 }, &hs, 0.95, 1).unwrap();
            let m8 = Morton::build(Params { l: 48, o: 16, f: 8 }, &hs, 0.95, 1).unwrap();
            for &h in hs.iter().chain(&hashes(ABSENT_LO, 100_000)) {
                assert_eq!(m8.contains8::<48, 16>(h), m8.contains_counted(h).0);
                assert_eq!(m8.contains_bf::<48, 16, 8>(h), m8.contains_counted(h).0);
                assert_eq!(m.contains_bf::<64, 16, 7>(h), m.contains_counted(h).0);
            }
            let ab = hashes(ABSENT_LO, 4_000_000);
            let mut sb = sbbf_rs_safe::Filter::new(11, 1_000_000);
            for &h in &hs {
                sb.insert_hash(h);
            }
            for _ in 0..3 {
                let t = Instant::now();
                let c = ab.iter().filter(|&&h| probe_one(&m, black_box(h))).count();
                let a = ab.len() as f64 / t.elapsed().as_secs_f64() / 1e6;
                let t = Instant::now();
                let c2 = ab
                    .iter()
                    .filter(|&&h| sb.contains_hash(black_box(h)))
                    .count();
                let b = ab.len() as f64 / t.elapsed().as_secs_f64() / 1e6;
                let t = Instant::now();
                let c3 = ab
                    .iter()
                    .filter(|&&h| probe_eight(&m8, black_box(h)))
                    .count();
                let c = c + c3;
                let d = ab.len() as f64 / t.elapsed().as_secs_f64() / 1e6;
                let t = Instant::now();
                let c4 = ab.iter().filter(|&&h| probe_bf7(&m, black_box(h))).count();
                let e = ab.len() as f64 / t.elapsed().as_secs_f64() / 1e6;
                let t = Instant::now();
                let c5 = ab.iter().filter(|&&h| probe_bf8(&m8, black_box(h))).count();
                let g = ab.len() as f64 / t.elapsed().as_secs_f64() / 1e6;
                println!(
                    "{c} {c2} {c4} {c5} morton {a:.2} M/s sbbf {b:.2} M/s m8 {d:.2} bf7 {e:.2} bf8 {g:.2}"
                );
            }
        }
        _ => panic!("count N layouts... | time N ROUNDS layouts..."),
    }
}

#[inline(never)]
fn single_m<const L: usize, const O: usize, const F: usize>(
    m: &Morton,
    keys: &[[u8; 16]],
) -> usize {
    keys.iter()
        .filter(|k| m.contains::<L, O, F>(xxh3_64(black_box(&k[..]))))
        .count()
}

#[inline(never)]
fn lsm_m<const L: usize, const O: usize, const F: usize>(
    ms: &[&Morton],
    keys: &[[u8; 16]],
) -> usize {
    keys.iter()
        .filter(|k| {
            let h = xxh3_64(black_box(&k[..]));
            ms.iter().any(|m| m.contains::<L, O, F>(h))
        })
        .count()
}

#[inline(never)]
fn lsm_hoisted<const L: usize, const O: usize, const B: bool>(
    ms: &[&Morton],
    keys: &[[u8; 16]],
) -> usize {
    keys.iter()
        .filter(|k| layout::first_containing8::<L, O, B>(ms, xxh3_64(black_box(&k[..]))))
        .count()
}

#[inline(never)]
fn lsm_sbbf(sb: &[sbbf_rs_safe::Filter], keys: &[[u8; 16]]) -> usize {
    keys.iter()
        .filter(|k| {
            let h = xxh3_64(black_box(&k[..]));
            sb.iter().any(|s| s.contains_hash(h))
        })
        .count()
}

#[inline(never)]
fn lsm_fuse(fu: &[BinaryFuse8], keys: &[[u8; 16]]) -> usize {
    keys.iter()
        .filter(|k| {
            let h = xxh3_64(black_box(&k[..]));
            fu.iter().any(|f| f.contains(&h))
        })
        .count()
}

#[inline(never)]
pub fn probe_one(m: &Morton, h: u64) -> bool {
    m.contains::<64, 16, 7>(h)
}

#[inline(never)]
pub fn probe_bf7(m: &Morton, h: u64) -> bool {
    m.contains_bf::<64, 16, 7>(h)
}

#[inline(never)]
pub fn probe_bf8(m: &Morton, h: u64) -> bool {
    m.contains_bf::<48, 16, 8>(h)
}

#[inline(never)]
pub fn probe_eight(m: &Morton, h: u64) -> bool {
    m.contains8::<48, 16>(h)
}
