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

use std::hint::black_box;
use std::time::Instant;

const PROBES: usize = 1 << 20;
const POOL: usize = 1 << 22;

/// Key `i`: 16 bytes, as `benches/peers.rs` makes them.
fn key(i: u64) -> [u8; 16] {
    let mut k = *b"key:\0\0\0\0\0\0\0\0\0\0\0\0";
    k[8..].copy_from_slice(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
    k
}

/// `POOL` keys drawn from ids `lo..lo + n`.
fn pool(lo: u64, n: u64, salt: u64) -> Vec<[u8; 16]> {
    let mut x = 0x2545_F491_4F6C_DD1Du64 ^ salt;
    (0..POOL)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            key(lo + x % n)
        })
        .collect()
}

/// One build's lookups, instantiated for `base` and for `head` (the same source against
/// either crate: both name their items alike).
macro_rules! build {
    ($krate:ident) => {
        mod $krate {
            use std::hint::black_box;
            use $krate::{Config, CuckooFilter, FilterBuilder, FilterRef, KeyHash};

            /// A filter of ids `lo..lo + n`, built as an SSTable's is.
            pub fn filter(lo: u64, n: u64) -> CuckooFilter {
                let mut b = FilterBuilder::new(Config::new(n as usize));
                for i in lo..lo + n {
                    b.add_key(&super::key(i));
                }
                b.finish().unwrap()
            }

            /// `CuckooFilter::contains(&[u8])`, as a user calls it: the owned filter, a key whose
            /// length the compiler does not know.
            pub fn owned(f: &CuckooFilter, keys: &[[u8; 16]]) -> usize {
                let len = black_box(16);
                keys.iter().filter(|k| f.contains(&k[..len])).count()
            }

            /// `FilterRef::contains(&[u8])`, the view made once.
            pub fn view(f: &CuckooFilter, keys: &[[u8; 16]]) -> usize {
                let (v, len) = (f.as_filter_ref(), black_box(16));
                keys.iter().filter(|k| v.contains(&k[..len])).count()
            }

            /// The filter saved to `path` and mapped.
            pub fn mapped(f: &CuckooFilter, path: &std::path::Path) -> $krate::MappedFilter {
                f.save(path).unwrap();
                $krate::MappedFilter::open(path).unwrap()
            }

            /// `MappedFilter::contains(&[u8])`.
            pub fn mapped_contains(m: &$krate::MappedFilter, keys: &[[u8; 16]]) -> usize {
                let len = black_box(16);
                keys.iter().filter(|k| m.contains(&k[..len])).count()
            }

            /// A growable filter of `n` keys, sized for them (one level in every build).
            pub fn scalable(n: u64) -> $krate::ScalableCuckooFilter {
                let mut f = $krate::ScalableCuckooFilter::new(Config::new(n as usize)).unwrap();
                for i in 0..n {
                    f.insert(&super::key(i)).unwrap();
                }
                f
            }

            /// A growable filter started at `n / 1000` keys and grown to `n`.
            pub fn grown(n: u64) -> $krate::ScalableCuckooFilter {
                let mut f = $krate::ScalableCuckooFilter::new(Config::new((n / 1000) as usize)).unwrap();
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

            /// `ScalableCuckooFilter::contains(&[u8])`.
            pub fn scalable_contains(f: &$krate::ScalableCuckooFilter, keys: &[[u8; 16]]) -> usize {
                let len = black_box(16);
                keys.iter().filter(|k| f.contains(&k[..len])).count()
            }

            /// Single lookups, the key hashed each time: how many answered "maybe".
            pub fn single(f: &CuckooFilter, keys: &[[u8; 16]]) -> usize {
                let v = f.as_filter_ref();
                keys.iter()
                    .filter(|k| v.contains_hash(KeyHash::of(black_box(&k[..]))))
                    .count()
            }

            /// Batched lookups of keys hashed first, 1 024 at a time, by `probe` (a filter's
            /// `contains_batch`): how many answered "maybe".
            fn batched(keys: &[[u8; 16]], probe: impl Fn(&[KeyHash], &mut [bool])) -> usize {
                let mut hashes = [KeyHash::of(b""); 1024];
                let mut out = [false; 1024];
                let mut hits = 0;
                for chunk in keys.chunks(1024) {
                    for (h, k) in hashes.iter_mut().zip(chunk) {
                        *h = KeyHash::of(black_box(&k[..]));
                    }
                    let n = chunk.len();
                    probe(&hashes[..n], &mut out[..n]);
                    hits += out[..n].iter().filter(|&&x| x).count();
                }
                hits
            }

            /// Batched lookups in a single filter.
            pub fn batch(f: &CuckooFilter, keys: &[[u8; 16]]) -> usize {
                let v = f.as_filter_ref();
                batched(keys, |h, out| v.contains_batch(h, out))
            }

            /// The LSM read: each key hashed once and asked of every filter, newest first,
            /// stopping at the first "maybe".
            pub fn lsm(filters: &[CuckooFilter], keys: &[[u8; 16]]) -> usize {
                let views: Vec<FilterRef<'_>> = filters.iter().map(|f| f.as_filter_ref()).collect();
                keys.iter()
                    .filter(|k| {
                        FilterRef::first_containing(&views, KeyHash::of(black_box(&k[..])))
                            .is_some()
                    })
                    .count()
            }

            /// A growable filter grown a thousandfold to `n` keys (builds from format version
            /// 3 on: stretch levels).
            #[cfg(any())]
            pub fn grown(n: u64) -> $krate::ScalableCuckooFilter {
                let config = Config::new((n / 1000) as usize);
                let mut f = $krate::ScalableCuckooFilter::new(config).unwrap();
                for i in 0..n {
                    f.insert(&super::key(i)).unwrap();
                }
                f
            }

            #[cfg(any())]
            pub fn grown_single(f: &$krate::ScalableCuckooFilter, keys: &[[u8; 16]]) -> usize {
                keys.iter()
                    .filter(|k| f.contains_hash(KeyHash::of(black_box(&k[..]))))
                    .count()
            }

            #[cfg(any())]
            pub fn grown_batch(f: &$krate::ScalableCuckooFilter, keys: &[[u8; 16]]) -> usize {
                batched(keys, |h, out| f.contains_batch(h, out))
            }
        }
    };
}

build!(base);
build!(head);

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// A case's lookups over a window of keys, returning how many answered "maybe".
type Run<'a> = &'a dyn Fn(&[[u8; 16]]) -> usize;

/// Times `rounds` rounds of each build's two copies (`a`: base, `b`: head), each over the next
/// `PROBES` keys of `keys`, in the order a0 b0 b1 a1, reversed in every other round; prints each
/// build's median rate (million lookups per second, a round's rate over its two copies) and the
/// ratio of the medians.
fn compare(name: &str, rounds: usize, keys: &[[u8; 16]], (a, b): ([Run<'_>; 2], [Run<'_>; 2])) {
    let mut at = 0;
    let mut window = || {
        at = (at + PROBES) % POOL;
        &keys[at..at + PROBES]
    };
    // A warm-up of each, and all must agree: the same keys, the same answers (a build's two
    // copies, where the builds make different filters of the same keys: a growable filter
    // before and after format version 3).
    let w = window();
    let answers: Vec<usize> = [a[0], b[0], b[1], a[1]].iter().map(|f| f(w)).collect();
    let agree = if name.contains("ScalableCuckooFilter") {
        answers[0] == answers[3] && answers[1] == answers[2]
    } else {
        answers.iter().all(|&x| x == answers[0])
    };
    assert!(agree, "{name}: the builds answer differently: {answers:?}");
    let (mut ra, mut rb) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        let w = window();
        let time = |f: Run<'_>| {
            let t = Instant::now();
            black_box(f(w));
            t.elapsed().as_secs_f64()
        };
        let mut order = [(0, a[0]), (1, b[0]), (1, b[1]), (0, a[1])];
        if r % 2 == 1 {
            order.reverse();
        }
        let mut secs = [0.0; 2];
        for (build, f) in order {
            secs[build] += time(f);
        }
        ra.push(2.0 * PROBES as f64 / secs[0] / 1e6);
        rb.push(2.0 * PROBES as f64 / secs[1] / 1e6);
    }
    let (ma, mb) = (median(ra.clone()), median(rb.clone()));
    let spread = |xs: &[f64]| {
        let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = xs.iter().copied().fold(0.0, f64::max);
        format!("{lo:.2}–{hi:.2}")
    };
    println!(
        "| {name} | {ma:.2} | {mb:.2} | {:.3} | {} | {} |",
        mb / ma,
        spread(&ra),
        spread(&rb)
    );
}

/// The runs of a case for each build's two copies: `both!(single, fa, fb)` times
/// `base::single` over `fa[0]` and `fa[1]`, `head::single` over `fb[0]` and `fb[1]`.
macro_rules! both {
    ($f:ident, $a:expr, $b:expr) => {
        (
            [&|k| base::$f(&$a[0], k), &|k| base::$f(&$a[1], k)],
            [&|k| head::$f(&$b[0], k), &|k| head::$f(&$b[1], k)],
        )
    };
}

/// Each build's two copies of a structure, made in the order base, head, head, base, so that
/// where in memory a copy lands (the allocator's state changes as filters are built) favours
/// neither build.
fn abba<A, B>(a: impl Fn() -> A, b: impl Fn() -> B) -> ([A; 2], [B; 2]) {
    let a0 = a();
    let b0 = b();
    let b1 = b();
    let a1 = a();
    ([a0, a1], [b0, b1])
}

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
        let (ga, gb) = (base::grown(n), head::grown(n));
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
        "base-grown" => base::scalable_contains(&base::grown(n), keys),
        "head-grown" => head::scalable_contains(&head::grown(n), keys),
        "head-sview" => head::stretch_view(&head::scalable(n), keys),
        "head-scalable" => head::scalable_contains(&head::scalable(n), keys),
        "base-mapped" => { let p = std::env::temp_dir().join("cg-base"); base::mapped_contains(&base::mapped(&fa, &p), keys) }
        "head-mapped" => { let p = std::env::temp_dir().join("cg-head"); head::mapped_contains(&head::mapped(&fb, &p), keys) }
        _ => panic!(),
    };
    println!("{which}: {r}");
}
