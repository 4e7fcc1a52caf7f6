//! Property tests against a `HashMap` model: random sequences of insert, insert_unique, remove,
//! contains and count never produce a false negative, and `len` always equals the model's.

mod common;

use cuckoo_sst::{Config, CuckooFilter, Error, KeyHash};
use proptest::prelude::*;
use std::collections::HashMap;

#[derive(Clone, Debug)]
enum Op {
    Insert(u16),
    InsertUnique(u16),
    Remove(u16),
    Contains(u16),
}

fn op(keys: u16) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..keys).prop_map(Op::Insert),
        1 => (0..keys).prop_map(Op::InsertUnique),
        2 => (0..keys).prop_map(Op::Remove),
        1 => (0..keys).prop_map(Op::Contains),
    ]
}

fn key(k: u16) -> Vec<u8> {
    format!("key-{k}").into_bytes()
}

/// Every key the model holds is found, with at least its multiplicity; `len` matches.
fn check(f: &CuckooFilter, model: &HashMap<u16, usize>) -> Result<(), TestCaseError> {
    let total: usize = model.values().sum();
    prop_assert_eq!(f.len(), total);
    for (&k, &n) in model {
        prop_assert!(f.contains(&key(k)), "false negative for {}", k);
        prop_assert!(
            f.count(&key(k)) >= n,
            "count {} < {} for {}",
            f.count(&key(k)),
            n,
            k
        );
        prop_assert!(f.contains_hash(KeyHash::of(&key(k))));
    }
    Ok(())
}

fn run(config: Config, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut f = CuckooFilter::new(config).unwrap();
    let mut model: HashMap<u16, usize> = HashMap::new();
    for op in ops {
        match op {
            Op::Insert(k) => match f.insert(&key(k)) {
                Ok(()) => *model.entry(k).or_default() += 1,
                Err(Error::Full) => {}
                Err(e) => return Err(TestCaseError::fail(format!("unexpected error {e}"))),
            },
            Op::InsertUnique(k) => match f.insert_unique(&key(k)) {
                Ok(true) => *model.entry(k).or_default() += 1,
                Ok(false) => prop_assert!(f.contains(&key(k))),
                Err(Error::Full) => {}
                Err(e) => return Err(TestCaseError::fail(format!("unexpected error {e}"))),
            },
            // Only keys that were inserted may be removed (the documented contract).
            Op::Remove(k) => {
                if let Some(n) = model.get_mut(&k) {
                    prop_assert!(f.remove(&key(k)), "remove of present key {} failed", k);
                    *n -= 1;
                    if *n == 0 {
                        model.remove(&k);
                    }
                }
            }
            Op::Contains(k) => {
                if model.contains_key(&k) {
                    prop_assert!(f.contains(&key(k)));
                }
            }
        }
        check(&f, &model)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Small tables that fill up (so `Full` happens), every encoding, bucket size and a range
    /// of widths, with a key space small enough for duplicates and, at 7 or 8 bits,
    /// fingerprint collisions.
    #[test]
    fn no_false_negatives_against_a_model(
        capacity in 8usize..200,
        layout in prop::sample::select(common::layouts()),
        seed in any::<u64>(),
        ops in prop::collection::vec(op(300), 1..600),
    ) {
        run(common::config(capacity, layout).seed(seed), ops)?;
    }

    /// Few distinct keys inserted many times: duplicates overflow their two buckets and the
    /// failed inserts must not lose anything.
    #[test]
    fn duplicates_never_lose_keys(
        seed in any::<u64>(),
        layout in prop::sample::select(common::layouts()),
        ops in prop::collection::vec(op(6), 1..400),
    ) {
        run(common::config(1000, layout).seed(seed), ops)?;
    }

}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Low `max_kicks` makes the rollback path common; each case runs in every layout, so none
    /// is left to chance.
    #[test]
    fn rollback_keeps_everything_with_few_kicks(
        seed in any::<u64>(),
        kicks in 0u32..4,
        ops in prop::collection::vec(op(500), 1..400),
    ) {
        for layout in common::layouts() {
            run(common::config(100, layout).seed(seed).max_kicks(kicks), ops.clone())?;
        }
    }
}
