//! Opening files that are short, long, not files at all, or changed under the reader: every
//! case is an `Err`, never a panic. `MappedFilter::read` (a heap copy) answers exactly as
//! `MappedFilter::open` (a mapping) for single filters and chains, gives the same errors, and
//! keeps answering after its file is truncated — where a mapping dies of `SIGBUS`.

mod common;

use cuckoo_sst::{
    Config, CuckooFilter, Error, FilterRef, KeyHash, MappedFilter, ScalableCuckooFilter,
};
use std::io;

fn key(i: u64) -> [u8; 12] {
    let mut k = *b"io:\0\0\0\0\0\0\0\0\0";
    k[4..].copy_from_slice(&i.to_be_bytes());
    k
}

/// A single filter of 300 keys.
fn single() -> CuckooFilter {
    let mut f = CuckooFilter::new(Config::new(400).seed(11)).unwrap();
    for i in 0..300 {
        f.insert(&key(i)).unwrap();
    }
    f
}

/// A chain of four levels holding keys `0..700`. A stretch level grows a thousandfold before
/// it needs a successor, and copies of one key never start one, so after each of the first
/// three quarters of the keys the newest level is closed by distinct keys that fill a pair of
/// it (`common::crafted::start_new_level`; the chain holds those too).
fn chain() -> ScalableCuckooFilter {
    let mut f = ScalableCuckooFilter::new(Config::new(50).seed(12)).unwrap();
    for i in 0..700 {
        f.insert(&key(i)).unwrap();
        if (i + 1) % 175 == 0 && f.levels() < 4 {
            common::crafted::start_new_level(&mut f);
        }
    }
    assert_eq!(f.levels(), 4);
    for k in 0..4 {
        let own = (0..700).filter(|&i| f.level(k).unwrap().contains(&key(i)));
        // Its quarter of the keys, but for the few an older level answered for and counted as
        // copies (false positives there, FORMAT.md §8 "Copies").
        let own = own.count();
        assert!(own >= 170, "level {k}: {own} keys");
    }
    f
}

/// What a reader returned, comparable across readers: the error's `Debug`, or "Ok".
fn outcome(r: Result<MappedFilter, Error>) -> String {
    match r {
        Ok(_) => "Ok".into(),
        Err(e) => format!("{e:?}"),
    }
}

fn io_kind(r: Result<MappedFilter, Error>) -> io::ErrorKind {
    match r {
        Err(Error::Io(e)) => e.kind(),
        other => panic!("expected an I/O error, got {:?}", outcome(other)),
    }
}

/// Lengths of a file from empty to one byte short, and with 1 to 64 bytes appended: every
/// reader refuses each, `open` and `read` with the same error, and the slice readers refuse the
/// same bytes (a short read hands them a prefix).
#[test]
fn every_wrong_length_is_an_error_from_every_reader() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    for (what, bytes, is_chain) in [
        ("single", single().to_bytes(), false),
        ("chain", chain().to_bytes(), true),
    ] {
        // Every length through the header, the level table and the first regions, then every
        // 61st, then the last 130.
        let table_end = 128 + 64 * u32::from_le_bytes(bytes[24..28].try_into().unwrap()) as usize;
        let mut cuts: Vec<usize> = (0..table_end + 256).collect();
        cuts.extend((table_end + 256..bytes.len()).step_by(61));
        cuts.extend(bytes.len() - 130..bytes.len());
        cuts.sort_unstable();
        cuts.dedup();
        let mut lengths: Vec<Vec<u8>> = cuts.iter().map(|&n| bytes[..n].to_vec()).collect();
        for extra in 1..=64u8 {
            let mut long = bytes.clone();
            long.extend((0..extra).map(|i| i ^ 0x5A));
            lengths.push(long);
        }
        for b in &lengths {
            std::fs::write(&path, b).unwrap();
            let n = b.len();
            let open = outcome(MappedFilter::open(&path));
            assert_ne!(open, "Ok", "{what}: {n} bytes");
            assert_eq!(
                outcome(MappedFilter::read(&path)),
                open,
                "{what}: {n} bytes"
            );
            assert!(
                MappedFilter::open_unverified(&path).is_err(),
                "{what}: {n} bytes"
            );
            assert!(CuckooFilter::from_bytes(b).is_err(), "{what}: {n} bytes");
            assert!(FilterRef::from_bytes(b).is_err(), "{what}: {n} bytes");
            assert!(
                ScalableCuckooFilter::from_bytes(b).is_err(),
                "{what}: {n} bytes"
            );
            // The error says what is wrong with the length.
            let expected = bytes.len() as u64;
            if n >= 128 && n < bytes.len() {
                assert_eq!(
                    open,
                    format!(
                        "{:?}",
                        Error::Truncated {
                            expected,
                            found: n as u64
                        }
                    ),
                    "{what}"
                );
            } else if n > bytes.len() {
                assert_eq!(
                    open,
                    format!(
                        "{:?}",
                        Error::TrailingBytes {
                            expected,
                            found: n as u64
                        }
                    ),
                    "{what}"
                );
            }
        }
        // The whole file opens on every reader.
        std::fs::write(&path, &bytes).unwrap();
        assert!(MappedFilter::open(&path).is_ok() && MappedFilter::read(&path).is_ok());
        assert_eq!(ScalableCuckooFilter::from_bytes(&bytes).is_ok(), is_chain);
        assert_eq!(CuckooFilter::from_bytes(&bytes).is_ok(), !is_chain);
    }
}

/// `read` and `open` give the same error for damaged files as well: a byte flipped in the
/// header, the level table or a region, and a field changed behind valid checksums.
#[test]
fn read_refuses_damaged_files_as_open_does() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let bytes = chain().to_bytes();
    let mut cases = Vec::new();
    for at in [0, 8, 16, 20, 24, 100, 125, 130, 200, 300, bytes.len() - 1] {
        let mut b = bytes.clone();
        b[at] ^= 0x10;
        cases.push(b);
    }
    for (at, v) in [(16, u64::MAX), (16, 1 << 40), (128 + 16, 1 << 31)] {
        let mut b = bytes.clone();
        common::put_u64(&mut b, at, v);
        common::resign(&mut b);
        cases.push(b);
    }
    for b in cases {
        std::fs::write(&path, &b).unwrap();
        let open = outcome(MappedFilter::open(&path));
        assert_ne!(open, "Ok");
        assert_eq!(outcome(MappedFilter::read(&path)), open);
    }
}

#[test]
fn a_directory_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    for r in [
        MappedFilter::open(dir.path()),
        MappedFilter::open_unverified(dir.path()),
        MappedFilter::read(dir.path()),
    ] {
        assert_eq!(io_kind(r), io::ErrorKind::IsADirectory);
    }
}

#[test]
fn a_missing_file_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gone");
    for r in [
        MappedFilter::open(&path),
        MappedFilter::open_unverified(&path),
        MappedFilter::read(&path),
    ] {
        assert_eq!(io_kind(r), io::ErrorKind::NotFound);
    }
}

/// Devices are refused before anything is read from them: `/dev/zero` would otherwise give
/// zeros for ever, `/dev/null` nothing.
#[cfg(target_os = "linux")]
#[test]
fn a_device_is_refused() {
    for dev in ["/dev/null", "/dev/zero"] {
        for r in [
            MappedFilter::open(dev),
            MappedFilter::open_unverified(dev),
            MappedFilter::read(dev),
        ] {
            assert_eq!(io_kind(r), io::ErrorKind::InvalidInput, "{dev}");
        }
    }
}

/// One of `MappedFilter`'s ways to open a path.
#[cfg(target_os = "linux")]
type Reader = fn(&std::path::Path) -> Result<MappedFilter, Error>;

/// A named pipe with a writer holding a valid filter's bytes is refused, not read: opening it
/// blocks until the writer has opened it (as any `File::open` of a pipe does), then returns.
#[cfg(target_os = "linux")]
#[test]
fn a_pipe_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let bytes = single().to_bytes();
    let readers: [Reader; 3] = [
        |p| MappedFilter::open(p),
        |p| MappedFilter::open_unverified(p),
        |p| MappedFilter::read(p),
    ];
    for reader in readers {
        std::thread::scope(|s| {
            s.spawn(|| {
                use std::io::Write;
                // Blocks until the reader opens the pipe; the reader may be gone before the
                // bytes are written (a broken pipe), which is fine.
                let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
                let _ = w.write_all(&bytes);
            });
            assert_eq!(io_kind(reader(&fifo)), io::ErrorKind::InvalidInput);
        });
    }
}

/// Asserts that `a` and `b` give the same answers to everything a reader is asked.
fn assert_same_answers(what: &str, a: &MappedFilter, b: &MappedFilter, keys: u64) {
    assert_eq!(a.as_bytes(), b.as_bytes(), "{what}");
    assert_eq!(a.size_in_bytes(), b.size_in_bytes(), "{what}");
    assert_eq!(a.len(), b.len(), "{what}");
    assert_eq!(a.is_empty(), b.is_empty(), "{what}");
    assert_eq!(a.levels(), b.levels(), "{what}");
    assert_eq!(a.seed(), b.seed(), "{what}");
    assert_eq!(a.expected_fpr(), b.expected_fpr(), "{what}");
    assert_eq!(a.is_verified(), b.is_verified(), "{what}");
    for k in 0..=a.levels() {
        let (x, y) = (a.level(k), b.level(k));
        assert_eq!(x.is_some(), y.is_some(), "{what}: level {k}");
        if let (Some(x), Some(y)) = (x, y) {
            assert_eq!(x.len(), y.len(), "{what}: level {k}");
            assert_eq!(x.num_buckets(), y.num_buckets(), "{what}: level {k}");
            assert_eq!(
                x.fingerprint_bits(),
                y.fingerprint_bits(),
                "{what}: level {k}"
            );
        }
    }
    let keys: Vec<[u8; 12]> = (0..keys).map(key).collect();
    let hashes: Vec<KeyHash> = keys.iter().map(|k| KeyHash::of(k)).collect();
    let (mut batch_a, mut batch_b) = (vec![false; keys.len()], vec![true; keys.len()]);
    a.contains_batch_keys(&keys, &mut batch_a);
    b.contains_batch_keys(&keys, &mut batch_b);
    assert_eq!(batch_a, batch_b, "{what}");
    let (mut hash_a, mut hash_b) = (vec![true; keys.len()], vec![false; keys.len()]);
    a.contains_batch(&hashes, &mut hash_a);
    b.contains_batch(&hashes, &mut hash_b);
    assert_eq!(hash_a, hash_b, "{what}");
    assert_eq!(batch_a, hash_a, "{what}");
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(a.contains(k), b.contains(k), "{what}: key {i}");
        assert_eq!(a.contains(k), batch_a[i], "{what}: key {i}");
        assert_eq!(a.count(k), b.count(k), "{what}: key {i}");
        assert_eq!(
            a.count_hash(hashes[i]),
            b.count_hash(hashes[i]),
            "{what}: key {i}"
        );
    }
}

#[test]
fn read_and_open_answer_alike_for_filters_and_chains() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let mut files: Vec<(String, Vec<u8>, u64)> = Vec::new();
    for layout in common::layouts() {
        let mut f = CuckooFilter::new(common::config(300, layout).seed(5)).unwrap();
        for i in 0..250 {
            f.insert(&key(i)).unwrap();
        }
        files.push((format!("{layout:?}"), f.to_bytes(), 250));
    }
    files.push(("chain".into(), chain().to_bytes(), 700));
    files.push((
        "empty".into(),
        CuckooFilter::with_capacity(10).to_bytes(),
        0,
    ));
    for (what, bytes, present) in files {
        std::fs::write(&path, &bytes).unwrap();
        let mapped = MappedFilter::open(&path).unwrap();
        let read = MappedFilter::read(&path).unwrap();
        assert!(read.is_verified(), "{what}");
        assert_eq!(read.as_bytes(), &bytes[..], "{what}");
        // The copy is cache-line aligned, as a mapping (page-aligned) is.
        assert_eq!(read.as_bytes().as_ptr() as usize % 64, 0, "{what}");
        assert!(format!("{read:?}").contains("\"read\""), "{read:?}");
        assert!(format!("{mapped:?}").contains("\"mapped\""), "{mapped:?}");
        assert_same_answers(&what, &mapped, &read, 2 * present.max(100));
        // Every inserted key is found.
        assert!((0..present).all(|i| read.contains(&key(i))), "{what}");
    }
}

/// A filter that was read keeps its bytes and answers when its file is truncated, overwritten
/// or removed afterwards.
#[test]
fn a_read_filter_does_not_see_its_file_change() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    for (bytes, present) in [(single().to_bytes(), 300), (chain().to_bytes(), 700)] {
        std::fs::write(&path, &bytes).unwrap();
        let reference = MappedFilter::read(&path).unwrap();
        let read = MappedFilter::read(&path).unwrap();
        // Each reader keeps a copy: a change to the file reaches neither.
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_len(0).unwrap();
        assert_same_answers("truncated", &reference, &read, 2 * present);
        std::fs::write(&path, vec![0xFF; bytes.len()]).unwrap();
        assert_same_answers("overwritten", &reference, &read, 2 * present);
        std::fs::remove_file(&path).unwrap();
        read.verify().unwrap();
        assert_eq!(read.as_bytes(), &bytes[..]);
        assert!((0..present).all(|i| read.contains(&key(i))));
    }
}

/// The documented crash: a mapped file truncated under its mapping kills the process with
/// `SIGBUS` on the next lookup, while a read one answers on. Run in a child process (this
/// test binary, re-entered), which truncates its own file.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
#[test]
fn a_mapping_truncated_under_it_dies_of_sigbus_and_a_read_copy_does_not() {
    use std::os::unix::process::ExitStatusExt;
    const CHILD_ENV: &str = "CUCKOO_SST_TRUNCATE_CHILD";
    const SIGBUS: i32 = 7; // on Linux for x86_64 and aarch64
    const TEST: &str = "a_mapping_truncated_under_it_dies_of_sigbus_and_a_read_copy_does_not";

    if let Some(how) = std::env::var_os(CHILD_ENV) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        // A file of many pages, so that buckets lie well past the first page.
        let mut f = CuckooFilter::with_capacity(200_000);
        for i in 0..100_000 {
            f.insert(&key(i)).unwrap();
        }
        f.save(&path).unwrap();
        let m = if how == "read" {
            MappedFilter::read(&path).unwrap()
        } else {
            MappedFilter::open(&path).unwrap()
        };
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(0)
            .unwrap();
        let found = (0..100_000).filter(|&i| m.contains(&key(i))).count();
        assert_eq!(found, 100_000);
        std::process::exit(0);
    }
    for (how, dies) in [("read", false), ("map", true)] {
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, how)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        if dies {
            assert_eq!(status.signal(), Some(SIGBUS), "{how}: {status:?}");
        } else {
            assert!(status.success(), "{how}: {status:?}");
        }
    }
}
