//! The `compact` target: compact blocks (FORMAT.md §11). Half the inputs are blocks — what the
//! crate accepts, the reader written from FORMAT.md (`spec.rs`) accepts with the same keys and
//! answers, and what one refuses the other refuses with the same error; the one-shot lookup
//! checks the header as the unverified reader does, answers as it does, and never faults. The
//! other half are key sets in a layout the input chooses: the block built from them finds every
//! key, and the reader from the text reads it with the same count and answers.

use super::{Input, all_keys, key, spec};
use cuckoo_sst::{CompactFilter, Config, Encoding, Error, FilterBuilder, KeyHash};

/// An error as the spec reader names it (`tests/common/mod.rs`'s `describe`).
fn describe(e: &Error) -> String {
    match e {
        Error::Corrupt { field, .. } => format!("Corrupt({field})"),
        Error::Truncated { expected, found } => format!("Truncated({expected}, {found})"),
        Error::UnsupportedVersion { found, supported } => {
            format!("UnsupportedVersion({found}, {supported})")
        }
        Error::BadMagic { .. } => "BadMagic".into(),
        other => format!("{other:?}"),
    }
}

/// Both readers on `block`: the same verdict, the same keys, the same answers to every key.
fn check_block(block: &[u8]) {
    let keys = all_keys();
    let ours = CompactFilter::from_bytes(block);
    let theirs = spec::read_compact(block);
    match (&ours, &theirs) {
        (Ok(f), Ok(r)) => {
            assert_eq!(f.len() as u64, r.keys());
            for k in &keys {
                let h = KeyHash::of(k);
                assert_eq!(f.contains_hash(h), r.contains(k));
                assert_eq!(
                    CompactFilter::block_contains_hash(block, h).ok(),
                    Some(f.contains_hash(h))
                );
            }
        }
        (Err(e), Err(s)) => assert_eq!(&describe(e), s),
        _ => panic!(
            "the crate says {:?}, the reader from FORMAT.md {:?}",
            ours.as_ref().map(|f| f.len()).map_err(describe),
            theirs.as_ref().map(|r| r.keys())
        ),
    }
    let one = CompactFilter::block_contains(block, b"k").map_err(|e| describe(&e));
    let unverified = spec::read_compact_unverified(block);
    assert_eq!(one.as_ref().err(), unverified.as_ref().err());
    // From buckets the check refuses too, the same answers (FORMAT.md §11.2: "maybe" for a
    // semi-sorted index past 3875, a bucket out of order read as its fingerprints).
    if let Ok(u) = &unverified {
        for k in &keys {
            assert_eq!(
                CompactFilter::block_contains(block, k).ok(),
                Some(u.contains(k))
            );
        }
    }
}

pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    if input.byte().is_multiple_of(2) {
        return check_block(input.rest());
    }
    // A layout: encoding, bucket size, width from the input (unsupported ones are refused).
    let encoding =
        [Encoding::Plain, Encoding::Packed, Encoding::SemiSorted][input.byte() as usize % 3];
    let b = [2, 4, 8][input.byte() as usize % 3];
    let f = 7 + u32::from(input.byte()) % 26;
    let config = Config::new(0)
        .encoding(encoding)
        .bucket_size(b)
        .fingerprint_bits(f);
    // Keys: numbered keys named by the bytes, and `count` fresh ones.
    let fresh = usize::from(input.u16() % 6000);
    let mut builder = FilterBuilder::new(config);
    let mut present: Vec<Vec<u8>> = input.rest().iter().map(|&k| key(k)).collect();
    present.extend((0..fresh).map(|j| format!("fresh{j}").into_bytes()));
    for k in &present {
        builder.add_key(k);
    }
    let block = match builder.finish_compact() {
        Ok(block) => block,
        Err(Error::InvalidConfig { .. }) => return,
        Err(e) => panic!("finish_compact: {e}"),
    };
    let f = CompactFilter::from_bytes(&block).expect("a block the crate built reads back");
    for k in &present {
        assert!(f.contains(k), "lost a key");
        assert_eq!(CompactFilter::block_contains(&block, k).ok(), Some(true));
    }
    let mut distinct = present.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(f.len(), distinct.len());
    check_block(&block);
}
