//! The lookup paths of two builds of cuckoo-sst, measured in one process: `base` (the crate at
//! an earlier commit) and `head` (the working tree). Built and run by `scripts/compare-lookups`,
//! which says how; not part of the crate.
//!
//! Each build makes two copies of every filter, in the order base, head, head, base (where a
//! filter lands in memory depends on what was allocated before it, and measurably changes its
//! speed: one copy of the same code measured 0.82× the other in the LSM case). Every case is
//! timed in rounds; a round times each copy over the same `PROBES` keys in the order base,
//! head, head, base (reversed in the next round), so drift of the machine reaches both builds
//! alike; the report gives each build's median rate and the ratio of the medians.
//! Cases: a right-sized filter of 1 M 16-byte keys at the default 1 % (single absent, single
//! present, batched absent), the LSM read (one absent key asked of 16 filters of 1 M keys,
//! newest first, `first_containing`), a filter of 32 M keys (single and batched absent), and
//! with the `grown` feature (both builds from format version 3 on) a growable filter grown
//! 1000× to 1 M keys (single and batched absent). Those time the view's `contains_hash` with
//! keys of a length the compiler knows; the calls users make are timed too, each on keys whose
//! length is known only at run time (a `&[u8]` cut to a length read through `black_box`):
//! `CuckooFilter::contains` (absent and present), `FilterRef::contains` (the view made once),
//! `MappedFilter::contains` (the filter saved and mapped) and `ScalableCuckooFilter::contains`
//! (1 M keys, right-sized: one level in every build).

use std::hint::black_box;
use std::time::Instant;

const PROBES: usize = 1 << 20;
const POOL: usize = 1 << 22;

include!("builds.rs");

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

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds: usize = args.first().map_or(21, |s| s.parse().expect("rounds"));
    let big = !args.iter().any(|a| a == "--no-32m");
    println!(
        "million lookups per second (keys for LSM-16), medians of {rounds} rounds of {PROBES} \
         keys, each build's two copies timed in every round"
    );
    println!("| case | base | head | head/base | base range | head range |");
    println!("|---|---|---|---|---|---|");
    let n = 1_000_000;
    let absent = pool(n, n, 0);
    let present = pool(0, n, 1);
    let (fa, fb) = abba(|| base::filter(0, n), || head::filter(0, n));
    compare("1M absent, single", rounds, &absent, both!(single, fa, fb));
    compare(
        "1M present, single",
        rounds,
        &present,
        both!(single, fa, fb),
    );
    compare("1M absent, batched", rounds, &absent, both!(batch, fa, fb));
    // The calls users make, on keys of a length known at run time.
    compare(
        "1M absent, CuckooFilter::contains",
        rounds,
        &absent,
        both!(owned, fa, fb),
    );
    compare(
        "1M present, CuckooFilter::contains",
        rounds,
        &present,
        both!(owned, fa, fb),
    );
    compare(
        "1M absent, FilterRef::contains",
        rounds,
        &absent,
        both!(view, fa, fb),
    );
    let dir = std::env::temp_dir().join(format!("compare-lookups-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ma = [0, 1].map(|i| base::mapped(&fa[i], &dir.join(format!("base-{i}"))));
    let mb = [0, 1].map(|i| head::mapped(&fb[i], &dir.join(format!("head-{i}"))));
    compare(
        "1M absent, MappedFilter::contains",
        rounds,
        &absent,
        both!(mapped_contains, ma, mb),
    );
    drop((ma, mb));
    std::fs::remove_dir_all(&dir).unwrap();
    drop((fa, fb));
    let (sa, sb) = abba(|| base::scalable(n), || head::scalable(n));
    compare(
        "1M absent, ScalableCuckooFilter::contains",
        rounds,
        &absent,
        both!(scalable_contains, sa, sb),
    );
    drop((sa, sb));
    // 16 tables of 1 M keys each, disjoint; the keys asked are in none of them.
    let tables = 16;
    let (la, lb) = abba(
        || {
            (0..tables)
                .map(|t| base::filter(t * n, n))
                .collect::<Vec<_>>()
        },
        || {
            (0..tables)
                .map(|t| head::filter(t * n, n))
                .collect::<Vec<_>>()
        },
    );
    let lsm_absent = pool(tables * n, n, 2);
    compare(
        "LSM-16 × 1M absent",
        rounds,
        &lsm_absent,
        both!(lsm, la, lb),
    );
    drop((la, lb));
    #[cfg(feature = "grown")]
    {
        let (ga, gb) = abba(|| base::grown(n), || head::grown(n));
        println!(
            "grown: base {} levels, {} bytes; head {} levels, {} bytes",
            ga[0].levels(),
            ga[0].size_in_bytes(),
            gb[0].levels(),
            gb[0].size_in_bytes()
        );
        compare(
            "grown 1000× to 1M, absent, single",
            rounds,
            &absent,
            both!(grown_single, ga, gb),
        );
        compare(
            "grown 1000× to 1M, absent, batched",
            rounds,
            &absent,
            both!(grown_batch, ga, gb),
        );
    }
    if big {
        let n = 32_000_000;
        let absent = pool(n, n, 3);
        let (fa, fb) = abba(|| base::filter(0, n), || head::filter(0, n));
        compare("32M absent, single", rounds, &absent, both!(single, fa, fb));
        compare("32M absent, batched", rounds, &absent, both!(batch, fa, fb));
    }
}
