//! Instruction counts and a quick timing of single lookups, for two builds of cuckoo-sst (the
//! `base` and `head` of `scripts/compare-lookups`, which copies this file into its harness as
//! the `cg` binary and builds it with the harness). Not part of the crate.
//!
//! `cg <build>-<case>` runs one case once, for callgrind:
//! `valgrind --tool=callgrind target/compare/target/release/cg head-scalable`, then
//! `callgrind_annotate --inclusive=yes callgrind.out.<pid> | grep scalable_contains` gives the
//! case's instructions; divide by the 262 144 lookups. Builds: `base`, `head`; cases: `owned`
//! (`CuckooFilter::contains`), `view` (`FilterRef::contains`), `single` (`contains_hash`),
//! `mapped`, `scalable` (a right-sized `ScalableCuckooFilter`), `grown` (one grown from
//! n / 1000); `head-sview` (a stretch level's view). The filters hold 200 000 keys.
//!
//! `cg time` times the growable filter at 1 M keys, grown a thousandfold and right-sized, base
//! against head: one copy of each, 11 rounds in alternating order, the medians and their ratio.

// The shared `build!` macro makes cases this binary does not ask for.
#![allow(dead_code)]

use std::hint::black_box;
use std::time::Instant;

const POOL: usize = 1 << 22;

include!("../builds.rs");

/// What `cg` asks of each build beyond the harness's cases.
macro_rules! extra {
    ($m:ident, $krate:ident) => {
        mod $m {
            use std::hint::black_box;
            use $krate::Config;

            /// A growable filter started at `n / 1000` keys and grown to `n`.
            pub fn grown(n: u64) -> $krate::ScalableCuckooFilter {
                let mut f = $krate::ScalableCuckooFilter::new(Config::new((n / 1000) as usize))
                    .unwrap();
                for i in 0..n {
                    f.insert(&super::key(i)).unwrap();
                }
                f
            }

            /// A stretch level's view.
            pub fn stretch_view(f: &$krate::ScalableCuckooFilter, keys: &[[u8; 16]]) -> usize {
                let (v, len) = (f.level(0).unwrap(), black_box(16));
                keys.iter().filter(|k| v.contains(&k[..len])).count()
            }
        }
    };
}

build!(base);
build!(head);
extra!(base_x, base);
extra!(head_x, head);

fn time_pair(name: &str, a: &dyn Fn() -> usize, b: &dyn Fn() -> usize, keys: usize) {
    let (mut ra, mut rb) = (Vec::new(), Vec::new());
    for round in 0..11 {
        let order: [bool; 2] = if round % 2 == 0 { [false, true] } else { [true, false] };
        for &head in &order {
            let t = Instant::now();
            let r = if head { b() } else { a() };
            black_box(r);
            let rate = keys as f64 / t.elapsed().as_secs_f64() / 1e6;
            if head { rb.push(rate) } else { ra.push(rate) }
        }
    }
    ra.sort_by(f64::total_cmp);
    rb.sort_by(f64::total_cmp);
    println!("| {name} | {:.2} | {:.2} | {:.3} |", ra[5], rb[5], rb[5] / ra[5]);
}

fn main() {
    let which = std::env::args().nth(1).unwrap();
    if which == "time" {
        let n = 1_000_000;
        let absent = pool(n, n, 7);
        let keys = &absent[..1 << 20];
        let (ga, gb) = (base_x::grown(n), head_x::grown(n));
        println!("levels: base {} head {}; bytes base {} head {}", ga.levels(), gb.levels(), ga.size_in_bytes(), gb.size_in_bytes());
        time_pair("grown 1000x, ScalableCuckooFilter::contains absent", &|| base::scalable_contains(&ga, keys), &|| head::scalable_contains(&gb, keys), keys.len());
        let (sa, sb) = (base::scalable(n), head::scalable(n));
        println!("levels: base {} head {}; bytes base {} head {}", sa.levels(), sb.levels(), sa.size_in_bytes(), sb.size_in_bytes());
        time_pair("right-sized, ScalableCuckooFilter::contains absent", &|| base::scalable_contains(&sa, keys), &|| head::scalable_contains(&sb, keys), keys.len());
        return;
    }
    let n = 200_000;
    let absent = pool(n, n, 0);
    let keys = &absent[..1 << 18];
    let fa = base::filter(0, n);
    let fb = head::filter(0, n);
    let r = match which.as_str() {
        "base-owned" => base::owned(&fa, keys),
        "head-owned" => head::owned(&fb, keys),
        "base-view" => base::view(&fa, keys),
        "head-view" => head::view(&fb, keys),
        "base-single" => base::single(&fa, keys),
        "head-single" => head::single(&fb, keys),
        "base-scalable" => base::scalable_contains(&base::scalable(n), keys),
        "base-grown" => base::scalable_contains(&base_x::grown(n), keys),
        "head-grown" => head::scalable_contains(&head_x::grown(n), keys),
        "head-sview" => head_x::stretch_view(&head::scalable(n), keys),
        "head-scalable" => head::scalable_contains(&head::scalable(n), keys),
        "base-mapped" => { let p = std::env::temp_dir().join("cg-base"); base::mapped_contains(&base::mapped(&fa, &p), keys) }
        "head-mapped" => { let p = std::env::temp_dir().join("cg-head"); head::mapped_contains(&head::mapped(&fb, &p), keys) }
        _ => panic!(),
    };
    println!("{which}: {r}");
}
