//! Hot keys and the limits of a growable filter, through the public API.
//!
//! A key inserted again and again (a "hot" key) takes one slot of the newest level; its next
//! `2b − 1` copies are counted on that entry (FORMAT.md §3.5), and from then on a copy is
//! refused with `Error::TooManyCopies` and nothing changes — the filter neither starts a level
//! for it nor grows, with or without limits, while ordinary keys go on growing the same level.
//! Distinct keys that the level cannot tell apart are copies as far as it can tell (see also
//! `tests/adversarial.rs`); distinct keys of one pair and core that answer for none of each
//! other fill the pair, and the next of them goes to a new level. A chain read back from its
//! bytes decides every insert as the one saved did. `growth_limit` says which limit forbids a
//! new level, and `ScalableCuckooFilter::new` refuses a `max_bytes` its first level does not
//! fit in.

mod common;

use common::crafted::{Stretch, start_new_level};
use common::spec;
use cuckoo_sst::{Config, Error, GrowthLimit, KeyHash, ScalableCuckooFilter};

/// The key inserted again and again.
const HOT: &[u8] = b"hot";

fn hot() -> KeyHash {
    KeyHash::of(HOT)
}

fn key(i: u64) -> [u8; 16] {
    let mut k = *b"hot_keys\0\0\0\0\0\0\0\0";
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

/// Keys never inserted (another family than [`key`]).
fn absent(i: u64) -> [u8; 16] {
    let mut k = *b"not_here\0\0\0\0\0\0\0\0";
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

/// A chain of `config` holding `key(0..n)`.
fn grown(config: Config, n: u64) -> ScalableCuckooFilter {
    let mut f = ScalableCuckooFilter::new(config).unwrap();
    for i in 0..n {
        f.insert(&key(i)).unwrap();
    }
    f
}

/// What a chain answers for a sample of the keys `key(0..n)` and of absent keys.
fn answers(f: &ScalableCuckooFilter, n: u64) -> Vec<bool> {
    let present = (0..n).step_by(97).map(key);
    let others = (0..20_000).map(absent);
    present.chain(others).map(|k| f.contains(&k)).collect()
}

/// Inserts the key of hash `hot` `tries` times: the first ones go in, every later one is
/// refused with `TooManyCopies` and changes nothing (the chain equals what it was, bytes
/// included, and its levels, size and length stay). Returns how many went in; never a new
/// level.
fn insert_copies(f: &mut ScalableCuckooFilter, hot: KeyHash, tries: usize) -> usize {
    let levels = f.levels();
    let mut taken = 0;
    for t in 0..tries {
        let before = f.clone();
        match f.insert_hash(hot) {
            Ok(()) => {
                assert_eq!(taken, t, "copy {t} taken after a refusal");
                taken += 1;
            }
            Err(Error::TooManyCopies) => {
                assert_eq!(*f, before, "copy {t}: a refused copy changed the chain");
                if t == taken {
                    // The first refusal: the bytes too (the others equal it).
                    assert_eq!(f.to_bytes(), before.to_bytes());
                }
            }
            Err(e) => panic!("copy {t}: {e:?}"),
        }
        assert_eq!(f.levels(), levels, "copy {t} started a level");
    }
    taken
}

/// `2b` = 8 copies of a key fill its two buckets of 4 in a level grown to 100 000 keys; the
/// other 992 of 1000 are refused with `TooManyCopies`, and change nothing: the levels, the
/// size, the length and the answers for present and absent keys are those after the 8 copies.
/// Ordinary growth then goes on in the same level: 100 000 more keys split its buckets, no new
/// level starts, every key is found, and `hot` still has its 8 copies (splits move a key's
/// copies together), so a further one is still refused.
#[test]
fn copies_of_one_key_are_refused_and_the_level_grows_on() {
    let n = 100_000;
    let mut f = grown(Config::new(1000), n);
    assert_eq!(f.levels(), 1);
    assert_eq!(f.growth_limit(), None);
    let before_copies = f.clone();

    assert_eq!(insert_copies(&mut f, hot(), 8), 8);
    let held = f.clone();
    assert_eq!(f.len(), before_copies.len() + 8);
    assert_eq!(insert_copies(&mut f, hot(), 992), 0);
    assert_eq!(f, held);
    assert_eq!(
        (f.levels(), f.size_in_bytes(), f.len()),
        (held.levels(), held.size_in_bytes(), held.len())
    );
    assert_eq!(answers(&f, n), answers(&held, n));
    assert_eq!(f.count(HOT), 8);
    assert!(f.contains(HOT));
    assert!((0..n).all(|i| f.contains(&key(i))));

    let buckets = f.level(0).unwrap().num_buckets();
    for i in n..2 * n {
        f.insert(&key(i)).unwrap();
    }
    assert_eq!(f.levels(), 1, "grown in place");
    assert!(f.level(0).unwrap().num_buckets() > buckets);
    assert!((0..2 * n).all(|i| f.contains(&key(i))));
    assert_eq!(f.count(HOT), 8);
    assert_eq!(insert_copies(&mut f, hot(), 10), 0);
}

/// With limits that forbid a new level — `max_levels(1)`, or a `max_bytes` that leaves room
/// for the first level to grow but not for a second — copies of a key are refused as copies
/// (`TooManyCopies`, not `Full`: no limit is what refuses them) and change nothing, as without
/// limits.
#[test]
fn copies_of_one_key_are_refused_as_copies_under_limits() {
    let n = 100_000;
    let unlimited = grown(Config::new(1000), n);
    // The size of the chain at n keys plus a little: the level may split a few more buckets,
    // but a second level (for n / 4 keys, tens of KiB) does not fit. Splits before n keys never
    // came near the cap, so the chain grows as the unlimited one did.
    let max_bytes = unlimited.size_in_bytes() as u64 + 4096;
    for (what, config) in [
        ("max_levels(1)", Config::new(1000).max_levels(1)),
        ("max_bytes", Config::new(1000).max_bytes(max_bytes)),
    ] {
        let mut f = grown(config, n);
        assert_eq!(f.size_in_bytes(), unlimited.size_in_bytes(), "{what}");
        match f.growth_limit() {
            Some(GrowthLimit::MaxLevels { levels: 1 }) => assert_eq!(what, "max_levels(1)"),
            Some(GrowthLimit::MaxBytes {
                needed,
                max_bytes: m,
            }) => {
                assert_eq!(what, "max_bytes");
                assert!(needed > m && m == max_bytes, "{needed} {m}");
            }
            other => panic!("{what}: {other:?}"),
        }
        let before = f.clone();
        assert_eq!(insert_copies(&mut f, hot(), 8), 8, "{what}");
        let held = f.clone();
        assert_eq!(insert_copies(&mut f, hot(), 200), 0, "{what}");
        assert_eq!(f, held, "{what}");
        assert_eq!(
            (f.levels(), f.size_in_bytes(), f.len()),
            (1, held.size_in_bytes(), before.len() + 8),
            "{what}"
        );
        assert_eq!(answers(&f, n), answers(&held, n), "{what}");
        assert_eq!(f.count(HOT), 8, "{what}");
    }
}

/// Inserts distinct keys with one pair and core in the newest level, none answering for
/// another, until one is refused, when a new level is forbidden: those before it go in and fill
/// their pair (the `2b + 1`-th is refused, or an earlier one when the pair holds an entry of
/// another key of their core that cannot leave; see `common::crafted::start_new_level`); the
/// refused one gets `Full` — the limit, not a copy — and changes nothing, nor the limit.
fn assert_a_new_level_is_refused(f: &mut ScalableCuckooFilter, limit: GrowthLimit) {
    let (levels, newest) = (f.levels(), f.levels() - 1);
    let b = f.level(newest).unwrap().bucket_size();
    let base = KeyHash::of(format!("refused at {} keys", f.len()).as_bytes());
    let candidates = Stretch::newest(f).distinct(base.to_u64(), 32);
    let mut class = Vec::new();
    let mut taken = 0;
    for &h in &candidates {
        if f.contains_hash(h) || class.len() == 2 * b + 1 {
            continue;
        }
        class.push(h);
        let j = class.len() - 1;
        let before = f.clone();
        match f.insert_hash(h) {
            Ok(()) => taken += 1,
            Err(Error::Full) => {
                assert_eq!(*f, before, "a refused insert changed the chain");
                let bytes = f.to_bytes();
                assert_eq!(bytes, before.to_bytes());
                let pair = common::crafted::pair_slots(&bytes, newest, h);
                assert!(pair.iter().all(|&(v, _)| v != 0), "{pair:x?}: not full");
                assert!(pair.iter().all(|&(_, a)| !a), "{pair:x?}: an entry answers");
                let _ = j;
                break;
            }
            Err(e) => panic!("crafted key {j}: {e:?}"),
        }
    }
    assert!(taken < 2 * b + 1, "all {taken} crafted keys taken");
    assert!(taken >= b, "only {taken} crafted keys taken");
    assert_eq!(f.levels(), levels);
    assert_eq!(f.growth_limit(), Some(limit));
    assert!(class[..taken].iter().all(|&h| f.contains_hash(h)));
}

/// `growth_limit` is `None` for a fresh chain without limits, `MaxLevels` at `max_levels`;
/// after each limit, an insert that needs a new level is refused with `Full` and nothing
/// changes.
#[test]
fn growth_limit_names_max_levels() {
    let f = ScalableCuckooFilter::new(Config::new(1000)).unwrap();
    assert_eq!(f.growth_limit(), None);
    for levels in [1, 2] {
        let mut f = grown(Config::new(1000).max_levels(levels), 1000);
        if levels == 2 {
            assert_eq!(f.growth_limit(), None);
            start_new_level(&mut f);
        }
        let limit = GrowthLimit::MaxLevels { levels };
        assert_eq!(f.growth_limit(), Some(limit));
        assert_a_new_level_is_refused(&mut f, limit);
    }
}

/// `MaxBytes` names the length of the file a second level would make: a level sized for a
/// quarter of the keys so far, at least 64 (FORMAT.md §8) — here 1000 keys, so 250 — in
/// `⌈250 / (4 · 0.8)⌉ = 79` buckets of 4 (the split load of buckets of 4 is 0.8) of 14-bit
/// slots (`1 + ⌈log2(2 · 4 · 0.8 · 8.5 / share)⌉` for the share (1 % − the first level's
/// bound) · (1 − 0.2), just under 0.8 %), semi-sorted: its length computed from FORMAT.md §1,
/// §3.3 and §6 by the reader written from it, and the size a chain without the cap has once
/// distinct keys start its second level.
#[test]
fn growth_limit_names_max_bytes_with_the_length_a_new_level_needs() {
    let one_level = ScalableCuckooFilter::new(Config::new(1000)).unwrap();
    // The first level: ⌈1000 / 3.2⌉ = 313 buckets of 4 semi-sorted 14-bit slots.
    let first = spec::region_len(313, 4, 14, 2);
    let level = one_level.level(0).unwrap();
    assert_eq!((level.num_buckets(), level.fingerprint_bits()), (313, 14));
    assert_eq!(one_level.size_in_bytes() as u64, spec::file_len(&[first]));
    // Room for the first level and a line more (1000 keys fit its 1252 slots at 80 %), not for
    // a second level's descriptor and region.
    let max_bytes = spec::file_len(&[first]) + 64;
    let mut f = grown(Config::new(1000).max_bytes(max_bytes), 1000);
    assert_eq!(f.levels(), 1);
    // The level's region: its buckets, and the copies it counts (FORMAT.md §3.5: a key that is
    // a false positive of another's entry equal to its value is counted, a record of 12 bytes
    // in a line of 64).
    let copies = |c: &ScalableCuckooFilter| -> Vec<u64> {
        let bytes = c.to_bytes();
        let file = spec::read(&bytes).unwrap();
        file.levels.iter().map(|l| l.copies.len() as u64).collect()
    };
    let counted = copies(&f)[0];
    assert_eq!(f.size_in_bytes() as u64, spec::file_len(&[first + counted]));
    let share = (0.01 - f.level(0).unwrap().expected_fpr()) * (1.0 - 0.2);
    assert!(share < 0.008 && share > 0.007, "{share}");
    assert_eq!(1.0 + (2.0 * 4.0 * 0.8 * 8.5 / share).log2().ceil(), 14.0);
    let needed = spec::file_len(&[first + counted, spec::region_len(79, 4, 14, 2)]);
    let Some(GrowthLimit::MaxBytes {
        needed: n,
        max_bytes: m,
    }) = f.growth_limit()
    else {
        panic!("{:?}", f.growth_limit())
    };
    assert_eq!((n, m), (needed, max_bytes));
    assert!(needed > max_bytes);
    // The same chain without the cap: its second level makes the file `needed` bytes long.
    let mut twin = grown(Config::new(1000), 1000);
    start_new_level(&mut twin);
    let counted = copies(&twin);
    let second = spec::region_len(79, 4, 14, 2) + counted[1];
    assert_eq!(
        twin.size_in_bytes() as u64,
        spec::file_len(&[first + counted[0], second])
    );
    let second = twin.level(1).unwrap();
    assert_eq!((second.num_buckets(), second.fingerprint_bits()), (79, 14));

    assert_a_new_level_is_refused(&mut f, GrowthLimit::MaxBytes { needed, max_bytes });
}

/// `FprBudget`: at a 1e-6 target and tightening 0.01, the first level gets the share
/// 1e-6 · 0.99 (27-bit slots) and grows until one more key would pass it; what it leaves,
/// (1e-6 − its bound) · 0.99, is under 1e-8, and no slot of up to 32 bits meets that
/// (`1 + ⌈log2(2 · 4 · 0.8 · 8.5 / share)⌉` is 34 or more, FORMAT.md §8). So the chain is full:
/// every insert of a new key is refused with `Full` and changes nothing; a copy of a key it
/// holds is still counted (FORMAT.md §3.5: it takes no slot and adds nothing to the bound).
#[test]
fn growth_limit_names_the_spent_false_positive_budget() {
    let config = Config::new(1).false_positive_rate(1e-6).tightening(0.01);
    let mut f = ScalableCuckooFilter::new(config).unwrap();
    assert_eq!(f.growth_limit(), None);
    assert_eq!(f.level(0).unwrap().fingerprint_bits(), 27);
    let mut n = 0;
    loop {
        match f.insert(&key(n)) {
            Ok(()) => n += 1,
            Err(Error::Full) => break,
            Err(e) => panic!("key {n}: {e:?}"),
        }
        assert!(n < 2_000_000, "never full");
        assert_eq!(f.levels(), 1);
    }
    assert!(n > 10_000, "full after {n} keys");
    let bound = f.level(0).unwrap().expected_fpr();
    assert!(bound <= 1e-6 * 0.99);
    let share = (1e-6 - bound) * (1.0 - 0.01);
    assert!(share < 1e-8, "{share}");
    let width = 1.0 + (2.0 * 4.0 * 0.8 * 8.5 / share).log2().ceil();
    assert!(width > 32.0, "{width}");
    assert_eq!(f.growth_limit(), Some(GrowthLimit::FprBudget { share }));
    for i in [n, n + 1] {
        let before = f.clone();
        assert!(matches!(f.insert(&key(i)), Err(Error::Full)), "key {i}");
        assert_eq!(f, before);
    }
    let (bound, count) = (f.expected_fpr(), f.count(&key(0)));
    f.insert(&key(0)).unwrap();
    assert_eq!(f.count(&key(0)), count + 1);
    assert_eq!(f.expected_fpr(), bound);
    assert_eq!(f.growth_limit(), Some(GrowthLimit::FprBudget { share }));
    assert!((0..n).all(|i| f.contains(&key(i))));
}

/// `new` refuses a `max_bytes` that its first level does not fit in, naming the setting; a
/// `max_bytes` exactly the first level's file length is accepted (and one byte less is not).
/// The length, from FORMAT.md: `⌈1 000 000 / (4 · 0.8)⌉ = 312 500` buckets of 4 semi-sorted
/// 14-bit slots.
#[test]
fn new_refuses_a_max_bytes_its_first_level_does_not_fit_in() {
    let config = || Config::new(1_000_000);
    match ScalableCuckooFilter::new(config().max_bytes(4096)) {
        Err(Error::InvalidConfig { setting, .. }) => assert_eq!(setting, "max_bytes"),
        other => panic!("{other:?}"),
    }
    let len = spec::file_len(&[spec::region_len(312_500, 4, 14, 2)]);
    assert_eq!(
        ScalableCuckooFilter::new(config()).unwrap().size_in_bytes() as u64,
        len
    );
    let f = ScalableCuckooFilter::new(config().max_bytes(len)).unwrap();
    assert_eq!(f.size_in_bytes() as u64, len);
    assert!(matches!(
        ScalableCuckooFilter::new(config().max_bytes(len - 1)),
        Err(Error::InvalidConfig {
            setting: "max_bytes",
            ..
        })
    ));
}

/// Distinct keys with one pair and core that answer for none of each other start a new level
/// — the one after those that filled their pair (`start_new_level` checks it;
/// `tests/adversarial.rs` floods chains with keys a level cannot tell apart) — while copies of
/// one of them do not: the first takes a slot, the next `2b − 1` are counted on it (FORMAT.md
/// §3.5), and the one after is refused with `TooManyCopies`.
#[test]
fn distinct_keys_at_a_full_pair_start_a_level_and_copies_do_not() {
    let n = 100_000;
    let f = grown(Config::new(1000), n);
    let mut distinct = f.clone();
    let crafted = start_new_level(&mut distinct);
    assert!(crafted.len() <= 9);
    assert_eq!(distinct.levels(), 2);
    assert_eq!(distinct.len(), f.len() + crafted.len());
    assert!(crafted.iter().all(|&h| distinct.contains_hash(h)));
    assert!((0..n).all(|i| distinct.contains(&key(i))));

    let mut copies = f.clone();
    let taken = insert_copies(&mut copies, crafted[0], 12);
    assert_eq!(taken, 8);
    assert_eq!(copies.levels(), 1);
    assert_eq!(copies.count_hash(crafted[0]), 8);
    // One slot holds them: the pair holds one entry answering for the key.
    let pair = common::crafted::pair_slots(&copies.to_bytes(), 0, crafted[0]);
    assert_eq!(pair.iter().filter(|&&(_, a)| a).count(), 1, "{pair:x?}");
}

/// A chain read back from its bytes answers inserts as the chain that was saved: copies of a
/// hot key, and keys the level cannot tell apart from one (crafted to share everything it
/// stores of them), are counted on the same entries and refused past `2b` alike — the copies
/// are in the file (FORMAT.md §3.5), and nothing the chain decides by is kept outside it.
#[test]
fn a_reopened_chain_answers_inserts_as_the_saved_one() {
    let n = 100_000;
    let mut f = grown(Config::new(1000), n);
    assert_eq!(insert_copies(&mut f, hot(), 8), 8);
    let b = f.level(0).unwrap().bucket_size();
    let class = Stretch::newest(&f).crafted(KeyHash::of(b"reopened").to_u64(), 2 * b + 1);
    let mut reopened = ScalableCuckooFilter::from_bytes(&f.to_bytes()).unwrap();
    assert_eq!(reopened, f);
    for (j, &h) in class.iter().chain([hot()].iter()).enumerate() {
        let (a, b) = (f.insert_hash(h), reopened.insert_hash(h));
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "insert {j}");
        assert_eq!(reopened, f, "insert {j}");
        assert_eq!(reopened.to_bytes(), f.to_bytes(), "insert {j}");
    }
    assert!(matches!(
        f.insert_hash(class[2 * b]),
        Err(Error::TooManyCopies)
    ));
    assert_eq!(f.levels(), 1);
    assert!(class.iter().all(|&h| f.count_hash(h) == 2 * b));
}

/// `golden-v3-chain.cksst`'s program under the current writer (seed 42, a 10 % target,
/// `key-0` … `key-499`), then copies of `hot`: its pair holds one entry answering for it, which
/// counts the copies (FORMAT.md §3.5), beside entries of other keys; no copy starts a level,
/// and copies past `2b` are refused. (Before copies were counted, 7 copies of `hot` and one
/// entry of another key with `hot`'s core closed the pair, and further copies each started a
/// level.)
#[test]
fn copies_of_one_key_take_one_slot_and_start_no_level() {
    let config = Config::new(1).false_positive_rate(0.1).seed(42);
    let mut f = ScalableCuckooFilter::new(config).unwrap();
    for i in 0..500 {
        f.insert(format!("key-{i}").as_bytes()).unwrap();
    }
    assert_eq!(insert_copies(&mut f, hot(), 7), 7);
    let bytes = f.to_bytes();
    let pair = common::crafted::pair_slots(&bytes, 0, hot());
    assert_eq!(pair.iter().filter(|&&(_, a)| a).count(), 1, "{pair:x?}");
    assert_eq!(f.count(HOT), 7);
    for copy in 8..=20 {
        match f.insert(HOT) {
            Ok(()) => assert!(copy <= 8, "copy {copy} taken"),
            Err(Error::TooManyCopies) => assert!(copy > 8, "copy {copy} refused"),
            Err(e) => panic!("copy {copy}: {e:?}"),
        }
        assert_eq!(f.levels(), 1, "copy {copy} started a level");
    }
    assert_eq!(f.count(HOT), 8);
}

/// The same at scale: 2000 hot keys inserted 10 times each into a chain of 100 000 keys. No
/// copy starts a level, and since copies take no slot (one per hot key, its copies counted on
/// it, FORMAT.md §3.5) no pair is closed to new keys either: the chain keeps its one level.
/// (Before copies were counted, they took 16 000 slots and four keys whose buckets both were
/// held by hot keys started levels; before copies were refused, copies started 34 levels and
/// the file grew from 203 456 bytes to 2 277 568.)
#[test]
fn many_hot_keys_do_not_grow_a_chain_by_levels() {
    let mut f = grown(Config::new(1000), 100_000);
    let size = f.size_in_bytes();
    let mut started = 0;
    for k in 0..2000 {
        let key = format!("hot-{k}");
        for copy in 0..10 {
            let (levels, found) = (f.levels(), f.contains(key.as_bytes()));
            match f.insert(key.as_bytes()) {
                Ok(()) | Err(Error::TooManyCopies) => {}
                Err(e) => panic!("{key}, copy {copy}: {e:?}"),
            }
            if f.levels() > levels {
                assert!(
                    !found,
                    "{key}: copy {copy}, found before it, started a level"
                );
                started += 1;
            }
        }
    }
    println!(
        "{started} levels started; {size} bytes, then {}",
        f.size_in_bytes()
    );
    assert_eq!((f.levels(), started), (1, 0));
    // A slot per hot key and a record of its copies: 2000 slots (about 4 kB at 16 bits a slot,
    // and the splits they add) and 24 kB of records, or 3 bits per slot once those are fewer.
    assert!(
        f.size_in_bytes() < size + 4_000 + 24_000 + 4096,
        "{size} bytes, then {}",
        f.size_in_bytes()
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Hot keys among new keys against a model of the copies taken (FORMAT.md §3.5): every
    /// key the model holds is found, `count` is its copies exactly (at a 1e-6 target no other
    /// key's entry answers for it), `len` is the model's total, a copy is refused only past
    /// `2b`, removing every copy of a key leaves nothing of it, a remove is refused only where
    /// more than one level answers for the key (as `remove` documents), and the chain has the
    /// levels the same distinct keys inserted once have, give or take one.
    #[test]
    fn copies_follow_a_model_and_keep_the_levels_of_the_keys(
        ops in proptest::collection::vec((0u8..4, 0u16..400), 1..3000),
        seed in 0u64..1000,
    ) {
        let config = || Config::new(16).false_positive_rate(1e-6).seed(seed);
        let mut f = ScalableCuckooFilter::new(config()).unwrap();
        let mut once = ScalableCuckooFilter::new(config()).unwrap();
        let mut model: std::collections::HashMap<u16, usize> = Default::default();
        let mut fresh = 10_000u16;
        for (op, k) in ops {
            // Hot keys are 0..20; a new key every other operation.
            let k = match op {
                0 => { fresh += 1; fresh }
                1 | 2 => k % 20,
                _ => k,
            };
            let key = key(u64::from(k));
            if op == 3 && model.get(&k).copied().unwrap_or(0) > 0 {
                if !f.remove(&key) {
                    // The documented refusal: more than one level answers for the key (its
                    // copies past `2b`, or an older level's entry whose key a newer level took
                    // as new), and removing from the wrong one could lose another key. Nothing
                    // is removed; the key keeps every copy.
                    let holders = (0..f.levels())
                        .filter(|&l| f.level(l).is_some_and(|v| v.contains(&key)))
                        .count();
                    proptest::prop_assert!(holders > 1, "key {}: refused, {} levels hold it", k, holders);
                    proptest::prop_assert_eq!(f.count(&key), model[&k], "key {} refused", k);
                    continue;
                }
                *model.get_mut(&k).unwrap() -= 1;
                if model[&k] == 0 {
                    proptest::prop_assert_eq!(f.count(&key), 0, "key {} removed", k);
                    proptest::prop_assert!(!f.contains(&key), "key {} removed", k);
                }
                continue;
            }
            let held = model.get(&k).copied().unwrap_or(0);
            match f.insert(&key) {
                Ok(()) => {
                    *model.entry(k).or_default() += 1;
                    if held == 0 {
                        once.insert(&key).unwrap();
                    }
                }
                // Never below `2b` copies; above them where the key's copies span levels (an
                // older level's entries, standing for `2b` copies, that the newest level took
                // the key past as new: the policy `insert` documents).
                Err(Error::TooManyCopies) => proptest::prop_assert!(held >= 8, "key {}: refused at {}", k, held),
                Err(e) => proptest::prop_assert!(false, "key {}: {:?}", k, e),
            }
            let c = f.count(&key);
            proptest::prop_assert_eq!(c, model[&k], "key {}", k);
        }
        for (&k, &n) in &model {
            proptest::prop_assert_eq!(f.count(&key(u64::from(k))), n, "key {}", k);
        }
        proptest::prop_assert_eq!(f.len(), model.values().sum::<usize>());
        proptest::prop_assert!(f.levels() <= once.levels() + 1, "{} levels, {} once", f.levels(), once.levels());
        let back = ScalableCuckooFilter::from_bytes(&f.to_bytes()).unwrap();
        proptest::prop_assert_eq!(back, f);
    }
}
