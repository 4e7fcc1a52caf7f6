//! The policy through SlateDB's traits, without a database: build, encode, decode, and what
//! damaged or foreign bytes decode to.

mod common;

use std::ops::Bound;
use std::sync::Arc;

use cuckoo_sst::CuckooFilter;
use cuckoo_sst_slatedb::{CuckooFilterPolicy, POLICY_NAME};
use slatedb::bytes::Bytes;
use slatedb::filter_policy::{BloomFilterPolicy, Filter, FilterPolicy, FilterQuery};
use slatedb::{RowEntry, ValueDeletable};

use common::{absent_key, key};

fn entry(key: &str, value: ValueDeletable, seq: u64) -> RowEntry {
    RowEntry {
        key: Bytes::copy_from_slice(key.as_bytes()),
        value,
        seq,
        create_ts: None,
        expire_ts: None,
    }
}

fn point(key: &str) -> FilterQuery {
    FilterQuery::point(Bytes::copy_from_slice(key.as_bytes()))
}

/// A filter built by `policy` from `n` keys, as a table of values, tombstones and merge
/// operands, with a second version of every tenth key.
fn build(policy: &dyn FilterPolicy, n: u64) -> Arc<dyn Filter> {
    let mut builder = policy.builder();
    for i in 0..n {
        let value = match i % 3 {
            0 => ValueDeletable::Value(Bytes::from_static(b"v")),
            1 => ValueDeletable::Tombstone,
            _ => ValueDeletable::Merge(Bytes::from_static(b"m")),
        };
        builder.add_entry(&entry(&key(i), value, 2 * i + 1));
        if i % 10 == 0 {
            builder.add_entry(&entry(&key(i), ValueDeletable::Tombstone, 2 * i));
        }
    }
    builder.build()
}

fn encode(filter: &dyn Filter) -> Vec<u8> {
    let mut block = Vec::new();
    filter.encode(&mut block);
    block
}

#[test]
fn every_entry_is_found_after_encoding_and_decoding() {
    let policy = CuckooFilterPolicy::new();
    let n = 50_000;
    let built = build(&policy, n);
    let block = encode(&*built);
    assert_eq!(built.size(), block.len());
    // The block is the crate's file format, sized for the distinct keys only.
    let file = CuckooFilter::from_bytes(&block).unwrap();
    assert_eq!(file.len(), n as usize);
    let decoded = policy.decode(&block);
    let clamped = decoded.clamp_allocated_size();
    for i in 0..n {
        for f in [&built, &decoded, &clamped] {
            assert!(f.might_match(&point(&key(i))), "false negative: {}", key(i));
        }
    }
    assert_eq!(policy.damaged_filters(), 0);
}

#[test]
fn absent_keys_are_ruled_out_at_the_configured_rate() {
    for fpr in [0.01, 0.001] {
        let policy = CuckooFilterPolicy::with_false_positive_rate(fpr).unwrap();
        let built = build(&policy, 50_000);
        let decoded = policy.decode(&encode(&*built));
        let probes = 400_000;
        let mut maybes = 0;
        for i in 0..probes {
            let q = point(&absent_key(i));
            let answer = decoded.might_match(&q);
            // The decoded filter answers exactly as the one built.
            assert_eq!(answer, built.might_match(&q));
            maybes += u64::from(answer);
        }
        let measured = maybes as f64 / probes as f64;
        // The bound is reached with both buckets full; at about 95 % occupancy the rate is a
        // little below it (σ ≈ 1.4e-4 and 4.5e-5 here).
        assert!(
            measured <= policy.expected_fpr() && measured <= fpr,
            "fpr {fpr}: measured {measured}, bound {}",
            policy.expected_fpr()
        );
        assert!(measured > 0.0, "fpr {fpr}: no false positive in {probes}");
    }
}

#[test]
fn prefix_and_range_queries_answer_maybe() {
    let policy = CuckooFilterPolicy::new();
    assert!(!policy.supports_prefix_queries());
    assert!(!policy.supports_range_queries());
    let filter = policy.decode(&encode(&*build(&policy, 1_000)));
    for prefix in ["key", "nothing-like-it", ""] {
        let q = FilterQuery::prefix(Bytes::copy_from_slice(prefix.as_bytes()));
        assert!(filter.might_match(&q), "prefix {prefix:?}");
    }
    let q = FilterQuery::range(
        Bound::Included(Bytes::from_static(b"zz")),
        Bound::Excluded(Bytes::from_static(b"zzz")),
    );
    assert!(filter.might_match(&q));
}

#[test]
fn the_name_is_stable_and_independent_of_the_rate() {
    // A reader configured for another rate must still find blocks written under this name.
    assert_eq!(CuckooFilterPolicy::new().name(), POLICY_NAME);
    let tight = CuckooFilterPolicy::with_false_positive_rate(1e-5).unwrap();
    assert_eq!(tight.name(), POLICY_NAME);
    let block = encode(&*build(&tight, 2_000));
    let reader = CuckooFilterPolicy::new();
    let decoded = reader.decode(&block);
    assert_eq!(reader.damaged_filters(), 0);
    let ruled_out = (0..10_000)
        .filter(|&i| !decoded.might_match(&point(&absent_key(i))))
        .count();
    assert!(ruled_out > 9_900, "{ruled_out}");
}

#[test]
fn estimate_size_is_close_to_the_block_written() {
    let policy = CuckooFilterPolicy::new();
    for n in [1_000, 10_000, 100_000] {
        let written = encode(&*build(&policy, n)).len();
        let estimate = policy.estimate_size(n as usize);
        assert!(
            estimate.abs_diff(written) <= (written / 100).max(64),
            "{n} keys: estimate {estimate}, written {written}"
        );
    }
}

#[test]
fn a_builder_is_fresh_after_build() {
    let policy = CuckooFilterPolicy::new();
    let mut builder = policy.builder();
    builder.add_entry(&entry("a", ValueDeletable::Tombstone, 1));
    let first = builder.build();
    assert!(first.might_match(&point("a")));
    let second = builder.build();
    let decoded = policy.decode(&encode(&*second));
    assert_eq!(
        policy.damaged_filters(),
        0,
        "an empty table's filter is a valid block"
    );
    assert!(
        !decoded.might_match(&point("a")),
        "the second build holds no key"
    );
}

/// The keys a damaged block must not lose, and their filter's block.
fn small_block(policy: &CuckooFilterPolicy) -> (u64, Vec<u8>) {
    let n = 300;
    (n, encode(&*build(policy, n)))
}

fn assert_all_maybe(filter: &dyn Filter, n: u64, what: &str) {
    for i in 0..n {
        assert!(
            filter.might_match(&point(&key(i))),
            "{what}: lost {}",
            key(i)
        );
    }
    let absent_maybes = (0..1_000)
        .filter(|&i| filter.might_match(&point(&absent_key(i))))
        .count();
    assert_eq!(
        absent_maybes, 1_000,
        "{what}: a damaged block must rule nothing out"
    );
}

#[test]
fn every_flipped_byte_decodes_to_always_maybe() {
    common::capture_logs();
    let policy = CuckooFilterPolicy::new();
    let (n, block) = small_block(&policy);
    for at in 0..block.len() {
        for mask in [0x01u8, 0x80, 0xFF] {
            let mut damaged = block.clone();
            damaged[at] ^= mask;
            let before = policy.damaged_filters();
            let filter = policy.decode(&damaged);
            // Every byte is under a checksum or checked field by field: nothing slips through.
            assert_eq!(
                policy.damaged_filters(),
                before + 1,
                "byte {at} ^ {mask:#x}"
            );
            assert_all_maybe(&*filter, n, &format!("byte {at} ^ {mask:#x}"));
        }
    }
    assert!(
        common::logged()
            .iter()
            .any(|m| m.contains(&format!("a filter block of {} bytes", block.len()))),
        "damaged blocks are logged"
    );
}

#[test]
fn every_truncation_decodes_to_always_maybe() {
    let policy = CuckooFilterPolicy::new();
    let (n, block) = small_block(&policy);
    for len in 0..block.len() {
        let filter = policy.decode(&block[..len]);
        assert_all_maybe(&*filter, n, &format!("first {len} bytes"));
    }
    assert_eq!(policy.damaged_filters(), block.len() as u64);
}

/// A writer that runs out of room mid-block: the failure is counted and logged, and what was
/// written reads back as "maybe" for every key (a filter decoded from it, or the same filter
/// encoded again into room enough, loses none).
#[test]
fn a_failed_encode_is_counted_and_its_partial_block_rules_nothing_out() {
    common::capture_logs();
    let policy = CuckooFilterPolicy::new();
    let n = 300;
    let built = build(&policy, n);
    let whole = encode(&*built);
    assert_eq!(policy.failed_encodes(), 0);
    for room in [0, 1, 100, whole.len() / 2, whole.len() - 1] {
        let mut buf = vec![0u8; room];
        let before = policy.failed_encodes();
        built.encode(&mut &mut buf[..]);
        assert_eq!(policy.failed_encodes(), before + 1, "room for {room} bytes");
        assert_eq!(buf[..], whole[..room], "the block's first {room} bytes");
        assert_all_maybe(&*policy.decode(&buf), n, &format!("{room} bytes of room"));
    }
    // A clamped copy counts into the same policy.
    let mut buf = [0u8; 10];
    built.clamp_allocated_size().encode(&mut &mut buf[..]);
    assert_eq!(policy.failed_encodes(), 6);
    assert_eq!(policy.failed_builds(), 0);
    assert_eq!(encode(&*built), whole);
    assert_eq!(policy.failed_encodes(), 6);
    assert!(
        common::logged()
            .iter()
            .any(|m| m.contains("writing a filter block failed")),
        "failed encodes are logged"
    );
}

#[test]
fn trailing_bytes_lose_no_key() {
    let policy = CuckooFilterPolicy::new();
    let (n, mut block) = small_block(&policy);
    block.extend_from_slice(&[0xAB; 100]);
    let filter = policy.decode(&block);
    for i in 0..n {
        assert!(filter.might_match(&point(&key(i))));
    }
}

#[test]
fn foreign_blocks_decode_to_always_maybe() {
    common::capture_logs();
    let policy = CuckooFilterPolicy::new();
    // SlateDB's own Bloom filter block, handed to the wrong policy.
    let bloom = BloomFilterPolicy::new(10);
    let bloom_block = encode(&*build(&bloom, 300));
    let random: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let blocks: [(&str, &[u8]); 4] = [
        ("a Bloom filter block", &bloom_block),
        ("an empty block", &[]),
        ("zeros", &[0; 4096]),
        ("noise", &random),
    ];
    for (i, (what, block)) in blocks.into_iter().enumerate() {
        let filter = policy.decode(block);
        assert_eq!(policy.damaged_filters(), i as u64 + 1, "{what}");
        assert_all_maybe(&*filter, 300, what);
    }
    assert!(
        common::logged()
            .iter()
            .any(|m| m.contains("a filter block of 0 bytes did not check out")),
        "{:?}",
        common::logged()
    );
}
