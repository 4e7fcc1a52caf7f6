//! Checksums per chunk (FORMAT.md §6) and verification on first touch: a file opened without
//! reading its buckets answers from every chunk it has checked, "maybe present" from a damaged
//! one, and says where the damage is; filter blocks inside larger files open by range, from
//! shared bytes, or — for bytes the caller has checked — with the buckets taken on trust.

mod common;

use cuckoo_sst::{
    Config, CuckooFilter, Encoding, Error, FilterBuilder, FilterRef, KeyHash, MappedFilter,
};
use std::io::Write;
use std::sync::Arc;

const CHUNK: usize = 1 << 16;

fn key(i: u64) -> [u8; 16] {
    let mut k = *b"chunks:\0\0\0\0\0\0\0\0\0";
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

fn built(n: u64, config: Config) -> CuckooFilter {
    let mut b = FilterBuilder::new(config);
    for i in 0..n {
        b.add_key(&key(i));
    }
    b.finish().unwrap()
}

/// FORMAT.md §2 from the text: a key's two buckets in a level of `m` buckets and `f`-bit
/// fingerprints.
fn buckets(k: &[u8], seed: u64, m: u64, f: u32) -> [u64; 2] {
    let mut h = KeyHash::of(k).to_u64() ^ seed;
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^= h >> 33;
    let range = |x: u64, n: u64| ((x & 0xFFFF_FFFF) * n) >> 32;
    let i1 = range(h >> 32, m);
    let fp = range(h, (1 << f) - 1) + 1;
    let o = 2 * range(fp.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32, m / 2) + 1;
    [i1, (o + m - i1) % m]
}

/// The region bytes a probe of bucket `i` may read: the bucket's bits, and for bit-packed
/// buckets the 8-byte loads that start in them (FORMAT.md §3.2: the region's 16 bytes of
/// slack make room for them).
fn bucket_bytes(f: &CuckooFilter, i: u64) -> std::ops::RangeInclusive<usize> {
    let bits = match f.encoding() {
        Encoding::SemiSorted => 12 + 4 * (f.fingerprint_bits() as u64 - 4),
        _ => f.bucket_size() as u64 * f.fingerprint_bits() as u64,
    };
    let first = (i * bits / 8) as usize;
    match f.encoding() {
        Encoding::Plain => first..=first + (bits / 8) as usize - 1,
        _ => first..=((i + 1) * bits / 8) as usize + 7,
    }
}

/// One byte flipped in one chunk of a file of many: `open_unverified` succeeds; every present
/// key answers `true` (no false negative anywhere); every key with a bucket in the damaged
/// chunk answers `true`; absent keys elsewhere mostly `false`; `verify` names the chunk and its
/// bytes, which hold the flipped one; `health` counts what the lookups found.
#[test]
fn a_damaged_chunk_answers_maybe_and_the_rest_answers() {
    for config in [
        Config::new(0),
        Config::new(0)
            .encoding(Encoding::Plain)
            .bucket_size(8)
            .fingerprint_bits(16),
    ] {
        let n = 1_500_000;
        let f = built(n, config.seed(11));
        let bytes = f.to_bytes();
        let region = common::first_region(&bytes);
        let chunks = (bytes.len() - region).div_ceil(CHUNK);
        assert!(chunks >= 20, "{chunks} chunks");
        let damaged = 7;
        let at = region + damaged * CHUNK + 1234;
        let mut b = bytes.clone();
        b[at] ^= 0x08;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, &b).unwrap();
        let what = format!("{:?} f={}", f.encoding(), f.fingerprint_bits());

        let m = MappedFilter::open_unverified(&path).unwrap();
        let h = m.health();
        assert_eq!((h.chunks, h.verified, h.damaged), (chunks as u64, 0, 0));
        let (nb, f_bits, seed) = (f.num_buckets() as u64, f.fingerprint_bits(), f.seed());
        let touches = |k: &[u8]| {
            buckets(k, seed, nb, f_bits).iter().any(|&i| {
                let r = bucket_bytes(&f, i);
                r.contains(&(damaged * CHUNK))
                    || [*r.start(), *r.end()]
                        .iter()
                        .any(|&byte| byte / CHUNK == damaged)
            })
        };
        let (mut touched, mut absent_elsewhere, mut false_positives) = (0, 0, 0);
        for i in 0..2 * n {
            let k = key(i);
            let answer = m.contains(&k);
            if i < n {
                assert!(answer, "{what}: a false negative for key {i}");
            }
            if touches(&k) {
                assert!(answer, "{what}: key {i} reads the damaged chunk");
                touched += 1;
            } else if i >= n {
                absent_elsewhere += 1;
                false_positives += answer as u64;
                assert_eq!(answer, f.contains(&k), "{what}: key {i}");
            }
        }
        assert!(touched > 1000, "{what}: {touched} keys touch the damage");
        let rate = false_positives as f64 / absent_elsewhere as f64;
        assert!(rate < 2.0 * f.expected_fpr(), "{what}: {rate}");
        let h = m.health();
        assert_eq!((h.verified, h.damaged), (chunks as u64 - 1, 1), "{what}");
        assert!(!h.is_whole());
        // The damage is kept and reported, naming the chunk and its bytes.
        let start = region + damaged * CHUNK;
        let part = format!("level 0 chunk {damaged} (bytes {start}..{})", start + CHUNK);
        match m.damage() {
            Some(Error::ChecksumMismatch { part: p, .. }) => assert_eq!(p, part),
            other => panic!("{what}: {other:?}"),
        }
        match m.verify() {
            Err(Error::ChecksumMismatch { part: p, .. }) => assert_eq!(p, part),
            other => panic!("{what}: {other:?}"),
        }
        assert!((start..start + CHUNK).contains(&at));
        assert!(!m.is_verified() && m.level(0).is_none());
        // A fresh open, verified first: the same damage, nothing else checked twice.
        let m = MappedFilter::open_unverified(&path).unwrap();
        assert!(m.verify().is_err());
        assert_eq!(m.health().damaged, 1);
        assert_eq!(m.health().verified, chunks as u64 - 1);
        assert!(MappedFilter::open(&path).is_err());
    }
}

/// The first lookup in a file of many chunks checks only the chunks it reads: one or two of
/// them, never the file.
#[test]
fn the_first_lookup_checks_only_what_it_reads() {
    let f = built(2_000_000, Config::new(0).seed(3));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    f.save(&path).unwrap();
    let m = MappedFilter::open_unverified(&path).unwrap();
    assert!(m.contains(&key(17)));
    let h = m.health();
    assert!((1..=4).contains(&h.verified), "{h:?}");
    assert!(h.chunks > 30);
    // Batches check as they go too, and once every chunk has passed lookups stop checking.
    let keys: Vec<[u8; 16]> = (0..200_000).map(key).collect();
    let mut out = vec![false; keys.len()];
    m.contains_batch_keys(&keys, &mut out);
    assert!(out.iter().all(|&o| o));
    assert!(m.health().is_whole(), "{:?}", m.health());
    assert!(!m.is_verified(), "verify() alone checks the contents");
    m.verify().unwrap();
    assert!(m.is_verified());
}

/// A filter block at an odd offset inside a larger file opens by range — verified or checked
/// as it is touched — and answers like the original; so do shared bytes and bytes taken on
/// trust. Ranges that do not hold exactly one filter are refused with the error the file's
/// readers give.
#[test]
fn a_block_inside_a_table_file_opens_by_range() {
    let f = built(300_000, Config::new(0).seed(5));
    let block = f.to_bytes();
    let mut file = tempfile::tempfile().unwrap();
    let offset = 4096 * 3 + 17;
    file.write_all(&vec![0xAB; offset]).unwrap();
    file.write_all(&block).unwrap();
    file.write_all(b"footer: not part of the filter").unwrap();
    let len = block.len() as u64;
    let off = offset as u64;
    let shared: Arc<[u8]> = block.clone().into();
    let readers = [
        (
            "open_range",
            MappedFilter::open_range(&file, off, len).unwrap(),
        ),
        (
            "open_range_unverified",
            MappedFilter::open_range_unverified(&file, off, len).unwrap(),
        ),
        (
            "from_shared",
            MappedFilter::from_shared(shared.clone()).unwrap(),
        ),
        (
            "from_shared_assume_verified",
            MappedFilter::from_shared_assume_verified(shared.clone()).unwrap(),
        ),
    ];
    let trusted = FilterRef::from_bytes_assume_verified(&block).unwrap();
    for (what, m) in &readers {
        assert_eq!(m.as_bytes(), &block[..], "{what}");
        for i in (0..600_000).step_by(7) {
            let k = key(i);
            assert_eq!(m.contains(&k), f.contains(&k), "{what}: key {i}");
            assert_eq!(trusted.contains(&k), f.contains(&k), "{what}: key {i}");
        }
        let keys: Vec<[u8; 16]> = (0..5000).map(key).collect();
        let mut out = vec![false; keys.len()];
        m.contains_batch_keys(&keys, &mut out);
        assert!(out.iter().all(|&o| o), "{what}");
        m.verify().unwrap();
        assert!(m.is_verified() && m.health().is_whole(), "{what}");
    }
    // Ranges that are not one filter.
    let unexpected_eof = |r: cuckoo_sst::Result<MappedFilter>| matches!(r, Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof);
    let total = off + len + 30;
    assert!(unexpected_eof(MappedFilter::open_range(&file, off, total)));
    assert!(unexpected_eof(MappedFilter::open_range_unverified(
        &file,
        u64::MAX,
        2
    )));
    assert!(matches!(
        MappedFilter::open_range(&file, off, len - 1),
        Err(Error::Truncated { .. })
    ));
    assert!(matches!(
        MappedFilter::open_range(&file, off, len + 1),
        Err(Error::TrailingBytes { .. })
    ));
    assert!(matches!(
        MappedFilter::open_range(&file, off + 1, len),
        Err(Error::BadMagic { .. })
    ));
    assert!(matches!(
        MappedFilter::open_range(&file, off, 100),
        Err(Error::Truncated { .. })
    ));
    assert!(matches!(
        MappedFilter::open_range(&file, off, 0),
        Err(Error::Truncated { .. })
    ));
    assert!(matches!(
        MappedFilter::open_range(&file, 0, 64),
        Err(Error::BadMagic { .. })
    ));
    // The range ends at the file's last byte: mapped, not refused.
    let mut tail = tempfile::tempfile().unwrap();
    tail.write_all(&[1, 2, 3]).unwrap();
    tail.write_all(&block).unwrap();
    assert!(MappedFilter::open_range(&tail, 3, len).is_ok());
}

/// Bytes taken on trust are not checked until asked: damaged buckets give their (wrong)
/// answers, and `verify` finds the damage, after which lookups that touch it say "maybe".
#[test]
fn trusted_bytes_are_checked_only_on_request() {
    let f = built(400_000, Config::new(0).seed(9));
    let mut bytes = f.to_bytes();
    let region = common::first_region(&bytes);
    // Empty the first 4 KiB of buckets: the keys that lived there go missing.
    bytes[region..region + 4096].fill(0);
    let m = MappedFilter::from_shared_assume_verified(bytes.clone().into()).unwrap();
    let lost = (0..400_000u64).filter(|&i| !m.contains(&key(i))).count();
    assert!(lost > 0, "the damage is read as it is");
    assert!(FilterRef::from_bytes_assume_verified(&bytes).is_ok());
    assert!(matches!(
        FilterRef::from_bytes(&bytes),
        Err(Error::ChecksumMismatch { .. })
    ));
    assert!(matches!(
        m.verify(),
        Err(Error::ChecksumMismatch { ref part, .. }) if part.starts_with("level 0 chunk 0 ")
    ));
    assert_eq!(m.health().damaged, 1);
    // Found: no false negative any more.
    assert!((0..400_000u64).all(|i| m.contains(&key(i))));
    // The header and level table are still checked.
    let mut header = bytes.clone();
    header[40] ^= 1;
    assert!(matches!(
        MappedFilter::from_shared_assume_verified(header.into()),
        Err(Error::ChecksumMismatch { .. })
    ));
}

/// A version-1 file has one checksum per level: opened lazily, its first lookup checks the
/// whole level, and it answers like the version-2 file of the same filter.
#[test]
fn version_1_files_are_checked_a_level_at_a_time() {
    let f = built(200_000, Config::new(0).seed(13));
    let v1 = common::to_v1(&f.to_bytes());
    let m = MappedFilter::from_shared(v1.into()).unwrap();
    assert_eq!((m.health().chunks, m.health().verified), (1, 0));
    assert!(m.contains(&key(1)));
    assert!(m.health().is_whole());
    for i in 0..400_000 {
        assert_eq!(m.contains(&key(i)), f.contains(&key(i)));
    }
    m.verify().unwrap();
}

/// Eight threads make their first lookups in a file of many chunks at once, while another
/// verifies it: every answer is the single-threaded one, and the file ends whole.
#[test]
fn threads_racing_first_touches_agree() {
    let f = built(1_000_000, Config::new(0).seed(21));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    f.save(&path).unwrap();
    let want: Vec<bool> = (0..100_000).map(|i| f.contains(&key(i * 37))).collect();
    for round in 0..4 {
        let m = MappedFilter::open_unverified(&path).unwrap();
        std::thread::scope(|s| {
            let verifier = s.spawn(|| m.verify());
            let readers: Vec<_> = (0..8)
                .map(|t| {
                    let (m, want) = (&m, &want);
                    s.spawn(move || {
                        for j in 0..want.len() {
                            let i = (j + t * 12_345) % want.len();
                            assert_eq!(m.contains(&key(i as u64 * 37)), want[i], "round {round}");
                        }
                    })
                })
                .collect();
            for r in readers {
                r.join().unwrap();
            }
            verifier.join().unwrap().unwrap();
        });
        assert!(m.is_verified() && m.health().is_whole());
    }
}

/// A file whose checksums all hold but whose buckets break FORMAT.md §7 step 8 (a semi-sorted
/// bucket index past the last valid one, re-signed: only a crafted file does that), opened
/// lazily: lookups answer from its whole chunks until `verify` finds the contents broken; from
/// then on the file is rejected — every lookup answers "maybe present", `health` says so, and
/// the file is not whole, although every chunk was checked and none is damaged.
#[test]
fn a_file_whose_contents_break_a_rule_is_rejected_whole_after_verify() {
    let mut f = CuckooFilter::new(
        Config::new(40)
            .fingerprint_bits(9)
            .encoding(Encoding::SemiSorted)
            .seed(1),
    )
    .unwrap();
    f.insert(b"k").unwrap();
    let mut bytes = f.to_bytes();
    let region = common::first_region(&bytes);
    // Buckets of 12 + 4 × 5 = 32 bits; index 3876 is one past the last (3875).
    let empty = (0..f.num_buckets())
        .find(|&i| bytes[region + 4 * i..][..4] == [0; 4])
        .unwrap();
    bytes[region + 4 * empty..][..2].copy_from_slice(&3876u16.to_le_bytes());
    common::resign(&mut bytes);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crafted.filter");
    std::fs::write(&path, &bytes).unwrap();

    assert!(matches!(
        MappedFilter::open(&path),
        Err(Error::Corrupt { .. })
    ));
    let m = MappedFilter::open_unverified(&path).unwrap();
    let absent: Vec<[u8; 16]> = (0..200).map(key).collect();
    let answered_no = absent.iter().filter(|k| !m.contains(&k[..])).count();
    assert!(
        answered_no > 150,
        "{answered_no} of 200 answered absent before verify"
    );
    assert!(m.contains(b"k"));
    let h = m.health();
    assert!(!h.rejected && h.damaged == 0, "{h:?}");

    assert!(matches!(m.verify(), Err(Error::Corrupt { .. })));
    let h = m.health();
    assert_eq!((h.verified, h.damaged), (h.chunks, 0), "{h:?}");
    assert!(h.rejected, "{h:?}");
    assert!(!h.is_whole(), "{h:?}");
    assert!(!m.is_verified());
    assert!(
        absent.iter().all(|k| m.contains(&k[..])),
        "a rejected file answered absent"
    );
    assert!(matches!(m.damage(), Some(Error::Corrupt { .. })));
}
