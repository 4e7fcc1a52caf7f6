//! The fuzz targets' checks under plain `cargo test`, on stable and without cargo-fuzz: every
//! file of each target's committed corpus (`fuzz/corpus/<target>/`) is replayed through the
//! same function the target calls (`fuzz/fuzz_targets/common/`), and so are a few thousand
//! inputs from a fixed-seed generator, so that the checks reach more than the seeds on every
//! run. The seeds must keep reaching every layout family; `write_seed_corpora` (ignored)
//! regenerates them.

mod common;
// The fuzz targets' code brings its own copy of the reader written from FORMAT.md
// (`tests/common/spec.rs`, as `fuzz_common::spec`), so that file is compiled twice here.
#[allow(clippy::duplicate_mod)]
#[path = "../fuzz/fuzz_targets/common/mod.rs"]
mod fuzz_common;

use cuckoo_sst::Encoding;
use fuzz_common::Input;
use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::path::{Path, PathBuf};

/// SplitMix64: a fixed-seed generator, so every run replays the same inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target)
}

/// Every file of `target`'s corpus, sorted by name (those local fuzzing added too); with
/// `seeds_only`, the generated seeds (`seed-*`) alone: not the fuzzer's finds committed as
/// `seed-v3-<sha1>`.
fn corpus(target: &str, seeds_only: bool) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(corpus_dir(target))
        .unwrap_or_else(|e| panic!("fuzz/corpus/{target}: {e}"))
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .filter(|(name, _)| {
            !seeds_only || (name.starts_with("seed-") && !name.starts_with("seed-v"))
        })
        .collect();
    files.sort();
    files
}

/// The committed input `name` of `target`'s corpus.
fn committed(target: &str, name: &str) -> Vec<u8> {
    corpus(target, false)
        .into_iter()
        .find(|(n, _)| n == name)
        .expect("the committed input")
        .1
}

/// Runs `run` on `data`, naming the input if it panics.
fn replay(what: &str, run: fn(&[u8]), data: &[u8]) {
    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| run(data))) {
        eprintln!("failing input {what}: {data:02x?}");
        resume_unwind(panic);
    }
}

/// The committed corpus, then `n` random inputs of up to `max_len` bytes.
fn replay_target(target: &str, run: fn(&[u8]), n: usize, max_len: usize) {
    let files = corpus(target, false);
    assert!(!files.is_empty(), "fuzz/corpus/{target} is empty");
    for (name, data) in &files {
        replay(&format!("fuzz/corpus/{target}/{name}"), run, data);
    }
    let mut rng = Rng(0x5EED ^ target.len() as u64);
    for i in 0..n {
        let len = rng.below(max_len + 1);
        let data = rng.bytes(len);
        replay(&format!("{target} random #{i}"), run, &data);
    }
}

#[test]
fn ops_corpus() {
    replay_target("ops", fuzz_common::ops::run, 3000, 400);
}

#[test]
fn chain_corpus() {
    replay_target("chain", fuzz_common::chain::run, 3000, 400);
}

#[test]
fn compact_corpus() {
    replay_target("compact", fuzz_common::compact::run, 1000, 300);
}

#[test]
fn roundtrip_corpus() {
    replay_target("roundtrip", fuzz_common::roundtrip::run, 1000, 400);
}

#[test]
fn run_index_corpus() {
    replay_target("run_index", fuzz_common::run_index::run, 1000, 400);
}

/// The inputs the fuzzer found on 2026-11-28 in which a compaction failed part-way while
/// every id was in use (`seed-v4-01977763d9f1`: the stale index then described 65 runs, two
/// with one id, and left the first merged run out — a false negative; `seed-v4-55bf00076e6d`:
/// a compaction of a stale index failing). Both failures came from hot keys filling their
/// pairs; with the stash, these inputs run with no refusal and no stale index, every run
/// described and every key found (the target's checks). The failure path itself, which the
/// target's keys no longer reach, is tested with crafted hashes that crowd one pair
/// (`index::tests::a_compaction_failing_with_every_id_in_use_leaves_a_stale_index_that_answers_every_run`).
#[test]
fn run_index_inputs_that_failed_compactions_at_max_runs_now_keep_every_run() {
    let r = fuzz_common::run_index::run_reached(&committed("run_index", "seed-v4-01977763d9f1"));
    assert!(r.max_runs && !r.stale && r.stashed, "{r:?}");
    let r = fuzz_common::run_index::run_reached(&committed("run_index", "seed-v4-55bf00076e6d"));
    assert!(!r.stale, "{r:?}");
}

/// Flushes that listed keys twice, refused (`Full`) at the default budget before 2026-11-28
/// (`seed-v4-be62edccd1b9`, found by the fuzzer: each copy of a key's hash took a slot) are
/// taken now, with no key lost (the target allows no `Full` for them).
#[test]
fn a_run_index_flush_after_keys_listed_twice_is_taken() {
    let r = fuzz_common::run_index::run_reached(&committed("run_index", "seed-v4-be62edccd1b9"));
    assert!(r.listed_twice && !r.full_few_kicks, "{r:?}");
}

/// A chain read back takes every insert after the round trip as the original does: the
/// input that once parted them (`seed-v3-b9e90e659aab`: a key the newest level of four buckets
/// answered for with another key's entries, which the original, remembering who filled the
/// pair, gave room and the copy refused) now keeps them equal — every insert decides by what
/// the file holds (FORMAT.md §3.5). (The roundtrip target asserts it after every operation;
/// this runs that input by name.)
#[test]
fn the_roundtrip_seed_that_parted_chains_keeps_them_equal() {
    fuzz_common::roundtrip::run(&committed("roundtrip", "seed-v3-b9e90e659aab"));
}

/// The chain target's oracle told a counted copy from a placement by the level's copies alone:
/// in the input the fuzzer found on 2026-11-28 (`seed-v4-f7c96b2605da`), a new key placed in
/// the newest level split a bucket whose bare entry counted one copy, which the split keeps in
/// both halves, each counting it (FORMAT.md §8, "Copies"): the level's copies one more, as for
/// a counted copy, though the key was new. A counted copy also leaves the level's buckets as
/// they were, which the oracle now checks first; the chain itself was right (the key answered
/// for, its count 1).
#[test]
fn a_split_that_keeps_a_counted_bare_entry_in_both_halves_is_a_placement() {
    fuzz_common::chain::run(&committed("chain", "seed-v4-f7c96b2605da"));
}

/// A key that only older levels answer for, with entries that already stand for `2b` copies,
/// is taken for a new key (docs/guarantees.md, "Copies and skew") and may start a level: the
/// inputs the fuzzer found on 2026-11-28 (`seed-v4-3d8873c4d751`: a key whose only answering
/// entry, in the older of two levels, counted 8 copies in buckets of 4, given a third level by
/// an insert the newest level could not place; `seed-v4-35ac25bba96c`, the same in the target's
/// stream of hot keys among fresh ones) once failed the chain target's oracle, which allowed
/// new levels only to keys no level answered for. The oracle now holds the policy: the newest
/// level never answered for such a key, and the chain counted `2b` copies or more.
#[test]
fn a_key_past_an_older_levels_saturated_entries_may_start_a_level() {
    for name in ["seed-v4-3d8873c4d751", "seed-v4-35ac25bba96c"] {
        let reached = fuzz_common::chain::run_reached(&committed("chain", name));
        assert!(reached.past_saturated_started_level, "{name}: {reached:?}");
    }
}

/// Random bytes stop at the magic number, so the generated inputs are the seeds damaged: a few
/// bytes changed, or cut short, and half of them with their checksums rewritten so that the
/// field checks behind the checksums see them (the fuzzer gets there with `--cfg fuzzing`).
#[test]
fn from_bytes_corpus() {
    replay_target("from_bytes", fuzz_common::from_bytes::run, 0, 0);
    let seeds = corpus("from_bytes", false);
    let mut rng = Rng(0xF00D);
    for i in 0..3000 {
        let (name, seed) = &seeds[rng.below(seeds.len())];
        let mut data = seed.clone();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(data.len());
            data[at] = rng.next() as u8;
        }
        if rng.below(8) == 0 {
            data.truncate(rng.below(data.len()));
        }
        if data.len() >= 128 && rng.below(2) == 0 {
            common::resign(&mut data);
        }
        replay(
            &format!("from_bytes #{i} (from {name})"),
            fuzz_common::from_bytes::run,
            &data,
        );
    }
}

/// The committed seeds reach every layout family, walk length, and chain setting class, so
/// that the replay above and the fuzzer's first inputs start from all of them.
#[test]
fn seeds_reach_every_layout() {
    let mut layouts = BTreeSet::new();
    let (mut widths, mut kicks) = (BTreeSet::new(), BTreeSet::new());
    for (_, data) in corpus("ops", true) {
        let s = fuzz_common::ops::setup(&mut Input::new(&data));
        layouts.insert((format!("{:?}", s.encoding), s.bucket_size));
        widths.insert(s.bits);
        kicks.insert(s.max_kicks);
    }
    let want: BTreeSet<_> = [
        ("Plain", 2),
        ("Plain", 4),
        ("Plain", 8),
        ("Packed", 2),
        ("Packed", 4),
        ("Packed", 8),
        ("SemiSorted", 4),
    ]
    .map(|(e, b)| (e.to_string(), b))
    .into();
    assert_eq!(layouts, want, "ops seeds: (encoding, bucket size)");
    for w in [7, 8, 16, 32] {
        assert!(widths.contains(&w), "no ops seed with {w}-bit fingerprints");
    }
    assert_eq!(
        kicks,
        fuzz_common::ops::KICKS.into(),
        "ops seeds: max_kicks"
    );

    let (mut encodings, mut buckets) = (BTreeSet::new(), BTreeSet::new());
    let (mut levels, mut bytes) = (BTreeSet::new(), BTreeSet::new());
    for (_, data) in corpus("chain", true) {
        let s = fuzz_common::chain::setup(&mut Input::new(&data));
        encodings.insert(format!("{:?}", s.encoding));
        buckets.insert(s.bucket_size);
        levels.insert(s.max_levels != 0);
        bytes.insert(s.max_bytes != 0);
    }
    let all_encodings: BTreeSet<_> = fuzz_common::chain::ENCODINGS
        .iter()
        .map(|e| format!("{e:?}"))
        .collect();
    assert_eq!(encodings, all_encodings, "chain seeds: encodings");
    assert_eq!(buckets, fuzz_common::chain::BUCKET_SIZES.into());
    assert_eq!(
        (levels.len(), bytes.len()),
        (2, 2),
        "chain seeds: with and without limits"
    );

    let mut kinds = BTreeSet::new();
    for (_, data) in corpus("roundtrip", true) {
        let mut input = Input::new(&data);
        let s = fuzz_common::roundtrip::setup(&mut input);
        let encoding = if s.chain {
            fuzz_common::chain::setup(&mut input).encoding
        } else {
            Some(fuzz_common::ops::setup(&mut input).encoding)
        };
        kinds.insert((s.chain, format!("{encoding:?}")));
        kinds.insert((s.save, "save".to_string()));
    }
    for e in [Encoding::Plain, Encoding::Packed, Encoding::SemiSorted] {
        for chain in [false, true] {
            let kind = (chain, format!("{:?}", Some(e)));
            assert!(kinds.contains(&kind), "no roundtrip seed for {kind:?}");
        }
    }
    for save in [false, true] {
        assert!(kinds.contains(&(save, "save".to_string())), "save: {save}");
    }
}

/// The chain seeds drive growth: a level splits from a few buckets to hundreds, splits copy
/// entries that ran out of continuation bits, chains reach several levels, copies of one key
/// are refused, and inserts are refused at the level limit and at `max_bytes`.
#[test]
fn chain_seeds_drive_growth() {
    let mut all = fuzz_common::chain::Reached::default();
    for (name, data) in corpus("chain", true) {
        let r = fuzz_common::chain::run_reached(&data);
        println!("{name}: {r:?}");
        all.levels = all.levels.max(r.levels);
        all.buckets = all.buckets.max(r.buckets);
        all.copied |= r.copied;
        all.full_at_max_levels |= r.full_at_max_levels;
        all.full_at_max_bytes |= r.full_at_max_bytes;
        all.copies_refused |= r.copies_refused;
        all.counted_records |= r.counted_records;
        all.counted_dense |= r.counted_dense;
    }
    assert!(all.levels >= 5, "{all:?}");
    assert!(all.buckets >= 400, "{all:?}");
    assert!(
        all.copied && all.full_at_max_levels && all.full_at_max_bytes && all.copies_refused,
        "{all:?}"
    );
    assert!(all.counted_records && all.counted_dense, "{all:?}");
}

/// Operation bytes for a seed: mostly inserts of `keys` distinct keys (so that small tables
/// fill and chains grow), with removals, inserts of unique keys, a batch and a round trip.
fn seed_ops(rng: &mut Rng, n: usize, keys: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for _ in 0..n {
        let op = match rng.below(20) {
            0..=12 => rng.below(3),
            13 | 14 => 3,
            15..=17 => 4,
            18 => 6,
            _ => 7,
        };
        v.push(op as u8);
        v.push(if op == 6 {
            rng.next() as u8
        } else {
            rng.below(keys) as u8
        });
    }
    v
}

/// Operation bytes that make a chain grow: fresh keys in bulk (op 6 with bit 6: `4·(k + 1)`
/// keys), removals of fresh keys (4 with bit 6), copies of key 7, and among them inserts of
/// numbered keys, lookups and round trips.
fn growth_ops(rng: &mut Rng, n: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for _ in 0..n {
        let (op, k) = match rng.below(16) {
            0..=3 => (0x46, rng.next() as u8),
            4..=6 => (0x44, rng.next() as u8),
            7..=9 => (0, 7),
            10 => (7, 0),
            11 => (6, rng.next() as u8),
            12 => (4, 7),
            _ => (rng.below(3) as u8, rng.below(64) as u8),
        };
        v.extend([op, k]);
    }
    v
}

/// The `ops` setup bytes for a layout: encoding (0 plain, 1 packed, 2 semi-sorted), bucket
/// size, width, index into `KICKS`, capacity.
fn ops_setup(encoding: u8, b: usize, bits: u32, kicks: u8, capacity: usize) -> Vec<u8> {
    let b_index = [2, 4, 8].iter().position(|&x| x == b).unwrap() as u32;
    let shape = match encoding {
        0 => b_index + 3 * [8, 16, 32].iter().position(|&x| x == bits).unwrap() as u32,
        1 => b_index + 3 * (bits - 7),
        _ => bits - 7,
    };
    let sizing = kicks as usize + 4 * (capacity - 8);
    vec![encoding, shape as u8, sizing as u8, capacity as u8, 0x5A]
}

/// The `chain` setup bytes: indexes into its tables of encodings, bucket sizes, rates,
/// tightenings, growth factors, level and byte limits and kicks, and the capacity.
#[allow(clippy::too_many_arguments)]
fn chain_setup(
    encoding: u8,
    bucket: u8,
    fpr: u8,
    tightening: u8,
    growth: u8,
    max_levels: u8,
    max_bytes: u8,
    kicks: u8,
    capacity: u8,
) -> Vec<u8> {
    vec![
        encoding + 4 * bucket,
        fpr + 8 * tightening,
        growth + 4 * max_levels + 16 * max_bytes,
        kicks + 4 * capacity,
        capacity,
        0xC3,
    ]
}

/// Writes the seed corpora: `cargo test --release --test fuzz_corpus -- --ignored`.
#[test]
#[ignore = "regenerates fuzz/corpus/*/seed-*"]
fn write_seed_corpora() {
    let mut rng = Rng(2026);
    let ops = [
        ("plain-b2-f8", ops_setup(0, 2, 8, 3, 16)),
        ("plain-b4-f16", ops_setup(0, 4, 16, 2, 40)),
        ("plain-b8-f32", ops_setup(0, 8, 32, 0, 64)),
        ("packed-b2-f7", ops_setup(1, 2, 7, 3, 24)),
        ("packed-b4-f13", ops_setup(1, 4, 13, 1, 12)),
        ("packed-b8-f23", ops_setup(1, 8, 23, 2, 8)),
        ("packed-b8-f32", ops_setup(1, 8, 32, 3, 64)),
        ("semi-f7", ops_setup(2, 4, 7, 3, 32)),
        ("semi-f10", ops_setup(2, 4, 10, 0, 20)),
        ("semi-f32", ops_setup(2, 4, 32, 3, 64)),
    ];
    let mut out = Vec::new();
    for (name, mut setup) in ops {
        setup.extend(seed_ops(&mut rng, 120, 48));
        out.push(("ops", name, setup));
    }
    let chains = [
        ("default", chain_setup(0, 0, 3, 1, 1, 0, 0, 3, 8)),
        ("plain-b2-levels2", chain_setup(1, 1, 1, 0, 2, 2, 0, 2, 16)),
        ("packed-b8-bytes4k", chain_setup(2, 3, 6, 0, 0, 0, 2, 0, 4)),
        (
            "semi-b4-levels3-g64",
            chain_setup(3, 2, 4, 2, 3, 3, 0, 3, 1),
        ),
        ("semi-bytes1k", chain_setup(3, 0, 0, 1, 1, 0, 1, 1, 0)),
        ("packed-b2-1e-7", chain_setup(2, 1, 7, 0, 1, 0, 0, 3, 2)),
        ("plain-b4-levels1", chain_setup(1, 2, 2, 3, 0, 1, 0, 3, 12)),
        ("semi-b8-refused", chain_setup(3, 3, 3, 1, 1, 0, 0, 3, 8)),
    ];
    for (name, mut setup) in chains {
        setup.extend(seed_ops(&mut rng, 150, 96));
        out.push(("chain", name, setup));
    }
    // First byte: bit 0 chain, bits 1-3 zero to `save`, bits 4-7 the `FilterRef` offset.
    let trips = [
        ("plain-b4-f16", 0x32, ops_setup(0, 4, 16, 3, 24)),
        ("packed-b8-f9-save", 0x00, ops_setup(1, 8, 9, 3, 32)),
        ("semi-f12", 0x72, ops_setup(2, 4, 12, 3, 16)),
        ("chain-plain", 0x13, chain_setup(1, 0, 3, 1, 1, 0, 0, 3, 4)),
        (
            "chain-packed-b2-save",
            0x01,
            chain_setup(2, 1, 3, 1, 1, 3, 0, 3, 4),
        ),
        ("chain-semi", 0x53, chain_setup(3, 2, 4, 0, 1, 0, 2, 3, 2)),
        ("chain-auto", 0x23, chain_setup(0, 0, 5, 1, 2, 0, 0, 3, 8)),
    ];
    for (name, first, setup) in trips {
        let mut data = vec![first];
        data.extend(setup);
        data.push(40); // operations before the round trip
        data.extend(seed_ops(&mut rng, 70, 64));
        out.push(("roundtrip", name, data));
    }
    // Seeds that drive a chain's growth (after the others, so that those stay as they were):
    // fresh keys in bulk from 2 buckets, copies of one key, and limits.
    let growth = [
        ("grow-default", chain_setup(0, 0, 3, 0, 1, 0, 0, 3, 0), 48),
        (
            "grow-plain-b2-fpr0.5",
            chain_setup(1, 1, 0, 1, 1, 0, 0, 3, 0),
            0,
        ),
        (
            "grow-semi-levels2",
            chain_setup(3, 2, 3, 0, 1, 2, 0, 3, 0),
            24,
        ),
        (
            "grow-packed-b8-bytes4k",
            chain_setup(2, 3, 2, 1, 1, 0, 2, 2, 0),
            0,
        ),
        (
            "grow-kicks0-levels3",
            chain_setup(0, 2, 4, 0, 1, 3, 0, 0, 16),
            0,
        ),
        // One level from 2 buckets through more than six doublings, so that splits copy the
        // entries that have spent their six continuation bits (the fewest a level has).
        (
            "grow-semi-one-level",
            chain_setup(3, 2, 0, 0, 1, 0, 0, 3, 0),
            0,
        ),
        // Buckets of 2 with no relocations: levels jam and the chain starts level after level
        // (copies of one key no longer start levels).
        (
            "grow-packed-b2-kicks0",
            chain_setup(2, 1, 3, 1, 1, 0, 0, 0, 0),
            0,
        ),
    ];
    for (name, mut setup, copies) in growth {
        for _ in 0..copies {
            setup.extend([0, 7]); // insert key 7 again
        }
        setup.extend(growth_ops(&mut rng, 80));
        out.push(("chain", name, setup));
    }
    for (target, name, data) in out {
        let dir = corpus_dir(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("seed-{name}")), data).unwrap();
    }
}

/// The run-index seeds drive every path the target checks: flushes, compactions, drops and
/// round trips; the documented refusals; an index describing `MAX_RUNS` runs and compacted
/// then; hot keys in the stash, a key in a full pair's worth of runs (8) or more, flushes
/// listing keys twice, all taken; flushes refused (`Full`) at a small relocation budget; a
/// damaged file opened mapped; growth. (A compaction that fails part-way, stale after it, is
/// no longer reached with the target's keys: see the test above.)
#[test]
fn run_index_seeds_drive_every_path() {
    let mut all = fuzz_common::run_index::Reached::default();
    for (name, data) in corpus("run_index", true) {
        let start = std::time::Instant::now();
        let r = fuzz_common::run_index::run_reached(&data);
        println!("{name} ({:.1?}): {r:?}", start.elapsed());
        all.flushes += r.flushes;
        all.compactions += r.compactions;
        all.drops += r.drops;
        all.round_trips += r.round_trips;
        all.refused += r.refused;
        all.full_few_kicks |= r.full_few_kicks;
        all.stashed |= r.stashed;
        all.key_in_eight_runs |= r.key_in_eight_runs;
        all.listed_twice |= r.listed_twice;
        all.max_runs |= r.max_runs;
        all.compact_at_max_runs |= r.compact_at_max_runs;
        all.damaged_mapped |= r.damaged_mapped;
        all.grew |= r.grew;
    }
    assert!(all.flushes >= 100 && all.compactions >= 20, "{all:?}");
    assert!(
        all.drops >= 5 && all.round_trips >= 10 && all.refused >= 5,
        "{all:?}"
    );
    assert!(
        all.stashed && all.key_in_eight_runs && all.listed_twice && all.full_few_kicks,
        "{all:?}"
    );
    assert!(all.max_runs && all.compact_at_max_runs, "{all:?}");
    assert!(all.damaged_mapped && all.grew, "{all:?}");
}

/// Operation bytes for the run-index target (`fuzz/fuzz_targets/common/run_index.rs`): by
/// `weights` (flush, compaction, drop, lookup, round trip, damage, window), with random flag
/// bits and the extra bytes each operation reads.
fn run_index_ops(rng: &mut Rng, n: usize, weights: [usize; 7]) -> Vec<u8> {
    let total: usize = weights.iter().sum();
    let mut v = Vec::new();
    for _ in 0..n {
        let mut pick = rng.below(total);
        let kind = weights
            .iter()
            .position(|&w| {
                if pick < w {
                    true
                } else {
                    pick -= w;
                    false
                }
            })
            .unwrap();
        let bits = rng.next() as u8 & 0xF8;
        let arg = rng.next() as u8;
        match kind {
            0 => {
                // Bit 3 (a run id maybe described) and bit 6 (bulk) one time in eight.
                let mut op = bits & 0xB0;
                if rng.below(8) == 0 {
                    op |= 0x08;
                }
                if rng.below(8) == 0 {
                    op |= 0x40;
                }
                v.extend([op, arg]);
            }
            1 => {
                // The invalid and foreign variants (bit 6) one time in four.
                let op = 2 | (bits & 0xB8) | if rng.below(4) == 0 { 0x40 } else { 0 };
                v.extend([op, arg, rng.next() as u8]);
            }
            2 => v.extend([3 | (bits & if rng.below(6) == 0 { 0x08 } else { 0 }), arg]),
            3 => v.extend([4, arg]),
            4 => v.extend([5 | (bits & 0x08), arg]),
            5 => v.extend([6 | (bits & 0x08), arg, rng.next() as u8, rng.next() as u8]),
            _ => {
                v.extend([7 | (bits & 0x08), arg, rng.next() as u8, rng.next() as u8]);
                v.extend(rng.bytes(arg as usize % 32));
            }
        }
    }
    v
}

/// Writes the run-index seeds: `cargo test --release --test fuzz_corpus -- --ignored
/// write_run_index_seeds`.
#[test]
#[ignore = "regenerates fuzz/corpus/run_index/seed-*"]
fn write_run_index_seeds() {
    let mut rng = Rng(41);
    // Setup: capacity / 4, rate (index % 6) and kicks (index / 6 % 5), seed.
    let seeds: [(&str, [u8; 3], usize, [usize; 7]); 8] = [
        ("default", [25, 0, 7], 150, [8, 3, 2, 1, 1, 1, 1]),
        ("grow-from-nothing", [0, 0, 1], 120, [10, 2, 1, 1, 2, 0, 0]),
        ("many-runs", [50, 1, 3], 260, [12, 1, 0, 0, 1, 0, 0]),
        (
            "fpr0.3-kicks4",
            [4, 3 + 6 * 2, 9],
            150,
            [8, 3, 2, 1, 1, 1, 1],
        ),
        (
            "fpr0.1-kicks0",
            [10, 2 + 6 * 4, 5],
            150,
            [8, 3, 2, 1, 1, 1, 1],
        ),
        (
            "fpr1e-5-kicks1",
            [8, 4 + 6 * 3, 2],
            150,
            [8, 3, 2, 1, 1, 1, 1],
        ),
        ("damage", [30, 6, 11], 120, [4, 1, 1, 0, 1, 3, 3]),
        ("compactions", [20, 1, 13], 200, [5, 5, 1, 1, 1, 0, 0]),
    ];
    let dir = corpus_dir("run_index");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, setup, n, weights) in seeds {
        let mut data = setup.to_vec();
        data.extend(run_index_ops(&mut rng, n, weights));
        std::fs::write(dir.join(format!("seed-{name}")), data).unwrap();
    }
    // A hot key: flushes of eight numbered keys each, until keys are in a pair's worth of
    // runs; then compactions listing keys no merged run holds.
    let mut data = vec![2, 0, 17];
    for _ in 0..60 {
        data.extend([0x30, rng.next() as u8 & 0x0F]);
    }
    for _ in 0..20 {
        // Variant 2 (`arg / 4 % 4`) of one run (`arg % 4 == 0`).
        data.extend([0x42, 8 + 16 * rng.below(16) as u8, rng.next() as u8]);
    }
    std::fs::write(dir.join("seed-hot-keys"), data).unwrap();
    // Files: an index's own bytes as they are (0xFF), and a header's fields after a valid magic
    // and version, checksums recomputed (0xFE).
    let mut index = cuckoo_sst::RunIndex::new(cuckoo_sst::Config::new(40).seed(3)).unwrap();
    for run in 0..3u32 {
        let keys: Vec<cuckoo_sst::KeyHash> = (run * 10..run * 10 + 14)
            .map(|k| cuckoo_sst::KeyHash::of(&fuzz_common::run_index::key_bytes(k)))
            .collect();
        index.add_run(u64::from(run) + 5, &keys).unwrap();
    }
    let mut file = vec![0xFF];
    file.extend(index.to_bytes());
    std::fs::write(dir.join("seed-file"), &file).unwrap();
    file[0] = 0xFE;
    file.drain(1..13); // the magic and version the target puts back
    std::fs::write(dir.join("seed-file-resigned"), &file).unwrap();
}
