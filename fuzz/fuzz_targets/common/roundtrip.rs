//! The `roundtrip` target: operations on a filter or a chain, then its bytes through every
//! reader — `CuckooFilter::from_bytes`, `FilterRef::from_bytes` (at any offset),
//! `ScalableCuckooFilter::from_bytes`, and a file opened with `MappedFilter::open` and
//! `open_unverified` — each of which must answer `contains`, `count` and
//! `contains_batch_keys` exactly as the original for every key, present or not. Then the
//! original and the copy read back take the same further operations and must stay equal (a
//! chain's copy takes each insert and remove as the original does, and must answer as it did;
//! they may part only where the original remembers which key closed a pair, which the bytes do
//! not keep: then the copy is read back again).
//!
//! Input: one byte (single or chain, how the file is written, the offset for `FilterRef`),
//! the setup of the `ops` or `chain` target, one byte for the number of operations before the
//! round trip, then operations of two bytes each.

use super::chain::Chain;
use super::ops::Single;
use super::{Input, Model, Subject, all_keys, drive};
use cuckoo_sst::{CuckooFilter, Error, FilterRef, MappedFilter, ScalableCuckooFilter};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the first byte chose.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Setup {
    pub chain: bool,
    /// Write the file with `save` (temp file, fsync, rename; slow, so one input in eight)
    /// rather than `std::fs::write`.
    pub save: bool,
    /// Bytes before the filter in the buffer `FilterRef` reads: any alignment.
    pub offset: usize,
}

pub fn setup(input: &mut Input<'_>) -> Setup {
    let b = input.byte();
    Setup {
        chain: b & 1 != 0,
        save: (b >> 1) & 7 == 0,
        offset: (b >> 4) as usize,
    }
}

/// A file in the temporary directory, unique to this call, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new() -> TempFile {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("cuckoo-sst-fuzz-{}-{n}.filter", std::process::id());
        TempFile(std::env::temp_dir().join(name))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `(contains, count)` of every key: the answers every reader must give.
type Answers = Vec<(bool, usize)>;

/// A reader answers `want` for `keys`, one by one and in a batch (pre-filled with the wrong
/// answer for the first key, so a slot the batch forgets to write is caught).
fn same_answers(
    what: &str,
    keys: &[Vec<u8>],
    want: &Answers,
    contains: impl Fn(&[u8]) -> bool,
    count: impl Fn(&[u8]) -> usize,
    batch: impl Fn(&[Vec<u8>], &mut [bool]),
) {
    for (k, (key, &(found, n))) in keys.iter().zip(want).enumerate() {
        assert_eq!(contains(key), found, "{what}: contains(key {k})");
        assert_eq!(count(key), n, "{what}: count(key {k})");
    }
    let mut out = vec![!want[0].0; keys.len()];
    batch(keys, &mut out);
    for (k, (&got, &(found, _))) in out.iter().zip(want).enumerate() {
        assert_eq!(got, found, "{what}: contains_batch_keys, key {k}");
    }
}

/// Writes `bytes` (or has `save` write them) to a new file and maps it, checked on open and
/// unchecked; also maps them by range from a file where `setup.offset` bytes precede them, and
/// shares them from memory, checked as lookups touch them.
fn mapped(
    setup: &Setup,
    bytes: &[u8],
    save: impl FnOnce(&std::path::Path),
) -> (TempFile, TempFile, Vec<(&'static str, MappedFilter)>) {
    let file = TempFile::new();
    if setup.save {
        save(&file.0);
    } else {
        std::fs::write(&file.0, bytes).expect("write the filter file");
    }
    let m = MappedFilter::open(&file.0).expect("a saved filter opens");
    let u = MappedFilter::open_unverified(&file.0).expect("a saved filter opens unverified");
    assert_eq!(m.as_bytes(), bytes, "the file holds other bytes");
    let table = TempFile::new();
    let mut inside = vec![0x5A; setup.offset];
    inside.extend_from_slice(bytes);
    inside.extend_from_slice(b"footer");
    std::fs::write(&table.0, &inside).expect("write the table file");
    let handle = std::fs::File::open(&table.0).expect("open the table file");
    let r = MappedFilter::open_range_unverified(&handle, setup.offset as u64, bytes.len() as u64)
        .expect("a filter block opens by range");
    let s = MappedFilter::from_shared(bytes.into()).expect("shared bytes open");
    let readers = vec![
        ("MappedFilter::open", m),
        ("open_unverified", u),
        ("open_range_unverified", r),
        ("from_shared", s),
    ];
    (file, table, readers)
}

fn single(setup: &Setup, s: &Single, keys: &[Vec<u8>]) -> Single {
    let f = &s.f;
    let want: Answers = keys.iter().map(|k| (f.contains(k), f.count(k))).collect();
    let bytes = f.to_bytes();
    assert_eq!(bytes.len(), f.size_in_bytes());
    let mut streamed = Vec::new();
    f.write_to(&mut streamed).expect("write to a Vec");
    assert_eq!(streamed, bytes, "write_to and to_bytes differ");

    let owned = CuckooFilter::from_bytes(&bytes).expect("a filter's bytes read back");
    assert_eq!(owned, *f);
    same_answers(
        "CuckooFilter::from_bytes",
        keys,
        &want,
        |k| owned.contains(k),
        |k| owned.count(k),
        |ks, out| owned.contains_batch_keys(ks, out),
    );

    let mut buf = vec![0xA5; setup.offset];
    buf.extend_from_slice(&bytes);
    let view = FilterRef::from_bytes(&buf[setup.offset..]).expect("a filter's bytes as a view");
    assert_eq!(view.len(), f.len());
    same_answers(
        "FilterRef::from_bytes",
        keys,
        &want,
        |k| view.contains(k),
        |k| view.count(k),
        |ks, out| view.contains_batch_keys(ks, out),
    );
    let trusted = FilterRef::from_bytes_assume_verified(&buf[setup.offset..])
        .expect("a filter's bytes, taken on trust");
    same_answers(
        "FilterRef::from_bytes_assume_verified",
        keys,
        &want,
        |k| trusted.contains(k),
        |k| trusted.count(k),
        |ks, out| trusted.contains_batch_keys(ks, out),
    );

    assert!(
        matches!(
            ScalableCuckooFilter::from_bytes(&bytes),
            Err(Error::NotGrowable)
        ),
        "a single filter read as a chain"
    );

    let (_file, _table, readers) = mapped(setup, &bytes, |p| f.save(p).expect("save"));
    for (what, m) in &readers {
        assert_eq!((m.len(), m.levels()), (f.len(), 1), "{what}");
        same_answers(
            what,
            keys,
            &want,
            |k| m.contains(k),
            |k| m.count(k),
            |ks, out| m.contains_batch_keys(ks, out),
        );
        let level = m.level(0).expect("level 0 of a verified file");
        same_answers(
            "MappedFilter::level(0)",
            keys,
            &want,
            |k| level.contains(k),
            |k| level.count(k),
            |ks, out| level.contains_batch_keys(ks, out),
        );
    }
    Single {
        f: owned,
        capacity: s.capacity,
    }
}

fn chain(setup: &Setup, s: &Chain, keys: &[Vec<u8>]) -> Chain {
    let c = &s.c;
    let want: Answers = keys.iter().map(|k| (c.contains(k), c.count(k))).collect();
    let bytes = c.to_bytes();
    assert_eq!(bytes.len(), c.size_in_bytes());
    let mut streamed = Vec::new();
    c.write_to(&mut streamed).expect("write to a Vec");
    assert_eq!(streamed, bytes, "write_to and to_bytes differ");

    let owned = ScalableCuckooFilter::from_bytes(&bytes).expect("a chain's bytes read back");
    assert_eq!(owned, *c);
    same_answers(
        "ScalableCuckooFilter::from_bytes",
        keys,
        &want,
        |k| owned.contains(k),
        |k| owned.count(k),
        |ks, out| owned.contains_batch_keys(ks, out),
    );

    // Single-filter readers refuse a chain, whatever its number of levels.
    let levels = c.levels();
    assert!(
        matches!(FilterRef::from_bytes(&bytes), Err(Error::Growable { levels: n }) if n as usize == levels),
        "FilterRef read a chain of {levels} levels"
    );
    assert!(
        matches!(
            CuckooFilter::from_bytes(&bytes),
            Err(Error::Growable { .. })
        ),
        "CuckooFilter read a chain"
    );

    let (_file, _table, readers) = mapped(setup, &bytes, |p| c.save(p).expect("save"));
    for (what, m) in &readers {
        assert_eq!((m.len(), m.levels()), (c.len(), levels), "{what}");
        assert_eq!(
            m.expected_fpr().to_bits(),
            c.expected_fpr().to_bits(),
            "{what}"
        );
        same_answers(
            what,
            keys,
            &want,
            |k| m.contains(k),
            |k| m.count(k),
            |ks, out| m.contains_batch_keys(ks, out),
        );
        // Level by level, too.
        for k in 0..levels {
            let (a, b) = (
                c.level(k).unwrap(),
                m.level(k).expect("a level of the file"),
            );
            let want: Answers = keys.iter().map(|x| (a.contains(x), a.count(x))).collect();
            same_answers(
                "MappedFilter::level",
                keys,
                &want,
                |x| b.contains(x),
                |x| b.count(x),
                |ks, out| b.contains_batch_keys(ks, out),
            );
        }
        assert!(m.level(levels).is_none());
    }
    Chain {
        c: owned,
        ..s.clone()
    }
}

/// Operations, the round trip, then further operations on the original, each of which the
/// copy read back takes too (`Chain::follow`): the same answers, and equal chains — but where
/// the original remembers which key closed a pair, which its bytes do not say.
fn run_chain(
    mut s: Chain,
    input: &mut Input<'_>,
    keys: &[Vec<u8>],
    trip: impl Fn(&Chain) -> Chain,
) {
    let mut model = Model::default();
    let before_trip = input.byte() as usize;
    drive(&mut s, &mut model, input, keys, before_trip);
    let copy = trip(&s);
    s.read_back = Some(Box::new(copy.c));
    drive(&mut s, &mut model, input, keys, usize::MAX);
    let copy = s.read_back.take().expect("the chain read back");
    assert_eq!(s.c, *copy, "the copy read back diverged from the original");
    assert_eq!(s.to_bytes(), copy.to_bytes());
}

/// Operations, the round trip, then the same further operations on the original and the copy
/// (of a single filter: a chain has [`run_chain`]).
fn run_with<S: Subject>(mut s: S, input: &mut Input<'_>, keys: &[Vec<u8>], trip: impl Fn(&S) -> S) {
    let mut model = Model::default();
    let before_trip = input.byte() as usize;
    drive(&mut s, &mut model, input, keys, before_trip);
    let mut copy = trip(&s);
    let (mut rest_a, mut rest_b) = (Input::new(input.rest()), Input::new(input.rest()));
    let mut model_copy = model.clone();
    drive(&mut s, &mut model, &mut rest_a, keys, usize::MAX);
    drive(&mut copy, &mut model_copy, &mut rest_b, keys, usize::MAX);
    // The same operations on equal filters give equal filters: the relocation walk depends on
    // nothing but the bytes and the key.
    assert_eq!(model, model_copy);
    assert_eq!(s, copy, "the copy read back diverged from the original");
    assert_eq!(s.to_bytes(), copy.to_bytes());
}

pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let setup = setup(&mut input);
    let keys = all_keys();
    if setup.chain {
        let chain_setup = super::chain::setup(&mut input);
        if let Some(c) = Chain::new(&chain_setup) {
            run_chain(c, &mut input, &keys, |c| chain(&setup, c, &keys));
        }
    } else {
        let s = Single::new(&super::ops::setup(&mut input));
        run_with(s, &mut input, &keys, |s| single(&setup, s, &keys));
    }
}
