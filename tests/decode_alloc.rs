//! Bounded memory while decoding: a counting global allocator (its own test binary, since a
//! global allocator is per binary) measures the peak of the bytes allocated on the calling
//! thread while `CuckooFilter::from_bytes`, `FilterRef::from_bytes`,
//! `ScalableCuckooFilter::from_bytes` and `MappedFilter::read` take an input — the committed
//! fuzz corpora, valid files, headers whose length fields lie (with valid checksums), and
//! thousands of random field changes, chains of the most levels a file may hold — and holds it
//! to the input's length plus 64 KiB; a one-shot compact lookup allocates nothing. Run-index
//! files (FORMAT.md §12) are held to the same bound by their readers.

mod common;

use cuckoo_sst::{Config, CuckooFilter, Encoding, FilterRef, MappedFilter, ScalableCuckooFilter};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;

/// `System`, counting the bytes each thread has allocated and not freed, and their peak.
struct Counting;

thread_local! {
    static CURRENT: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn track(delta: isize) {
    // `try_with`: nothing is counted while a thread's locals are torn down.
    let _ = CURRENT.try_with(|c| {
        let now = c.get() + delta;
        c.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
    });
}

// SAFETY: every call is passed to `System` unchanged, with its layout; the counters are
// thread-local cells without destructors (const-initialised, so touching them never allocates),
// and their updates cannot unwind.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is `System.alloc`'s.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            track(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            track(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout` (every allocation goes there).
        unsafe { System.dealloc(ptr, layout) };
        track(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`, and the caller's contract for `realloc` is `System`'s.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            track(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The most bytes `f` had allocated at once on this thread, beyond what was allocated before
/// (its result, if it keeps memory, included).
fn peak_of<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let base = CURRENT.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let r = f();
    let peak = PEAK.with(Cell::get) - base;
    (r, peak.max(0) as usize)
}

const SLACK: usize = 64 << 10;

/// Decodes `bytes` with every slice reader and checks each reader's peak; the largest peak.
fn check(what: &str, bytes: &[u8]) -> usize {
    let limit = bytes.len() + SLACK;
    let mut worst = 0;
    let (_, p) = peak_of(|| CuckooFilter::from_bytes(bytes).is_ok());
    assert!(
        p <= limit,
        "{what}: CuckooFilter::from_bytes took {p} bytes for {}",
        bytes.len()
    );
    worst = worst.max(p);
    let (_, p) = peak_of(|| FilterRef::from_bytes(bytes).is_ok());
    assert!(
        p <= limit,
        "{what}: FilterRef::from_bytes took {p} bytes for {}",
        bytes.len()
    );
    worst = worst.max(p);
    let (_, p) = peak_of(|| ScalableCuckooFilter::from_bytes(bytes).is_ok());
    assert!(
        p <= limit,
        "{what}: ScalableCuckooFilter::from_bytes took {p} bytes for {}",
        bytes.len()
    );
    worst.max(p)
}

/// Writes `bytes` to `path` and checks the peak of `MappedFilter::read` (a copy of the file)
/// and `open` (a mapping: its `Vec` of levels only).
fn check_file(what: &str, path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap();
    let limit = bytes.len().next_multiple_of(64) + SLACK;
    let (_, p) = peak_of(|| MappedFilter::read(path).is_ok());
    assert!(
        p <= limit,
        "{what}: MappedFilter::read took {p} bytes for {}",
        bytes.len()
    );
    let (_, p) = peak_of(|| MappedFilter::open(path).is_ok());
    assert!(
        p <= limit,
        "{what}: MappedFilter::open took {p} bytes for {}",
        bytes.len()
    );
}

fn valid_files() -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    for layout in common::layouts() {
        let mut f = CuckooFilter::new(common::config(2000, layout)).unwrap();
        for i in 0..1500u32 {
            f.insert(&i.to_le_bytes()).unwrap();
        }
        v.push((format!("{layout:?}"), f.to_bytes()));
    }
    let c = chain(100, 5000, 1000);
    assert_eq!(c.levels(), 5);
    v.push(("chain".into(), c.to_bytes()));
    v
}

/// A chain from `Config::new(capacity)` holding `keys` keys, with a new level after every
/// `every` of them. (A stretch level grows a thousandfold before it needs a successor, and
/// copies of one key never start one, so each level is closed by distinct keys it cannot tell
/// apart: `common::crafted::start_new_level`. The chain holds those too.)
fn chain(capacity: usize, keys: u32, every: u32) -> ScalableCuckooFilter {
    let mut c = ScalableCuckooFilter::new(Config::new(capacity)).unwrap();
    for i in 0..keys {
        c.insert(&i.to_le_bytes()).unwrap();
        if (i + 1) % every == 0 && i + 1 < keys {
            common::crafted::start_new_level(&mut c);
        }
    }
    assert_eq!(c.levels() as u32, keys.div_ceil(every));
    c
}

/// A valid chain file of `levels` levels of the smallest size: 2 plain buckets of 2 slots of
/// 8 bits, a 64-byte region each, so 128 bytes of input per level. Stretch levels (core of 5
/// bits, version 3) are what the crate writes and the most a reader builds per level; classic
/// ones (version 2) are what older files hold.
fn tiny_levels(levels: u32, stretch: bool) -> Vec<u8> {
    let template = ScalableCuckooFilter::new(
        Config::new(1)
            .bucket_size(2)
            .encoding(Encoding::Plain)
            .false_positive_rate(0.01),
    )
    .unwrap()
    .to_bytes();
    assert_eq!(
        template[128 + 51],
        5,
        "the template's level is a stretch level"
    );
    let l = levels as usize;
    // FORMAT.md §1: the level table, a checksum table of one entry per level (padded to a
    // cache line), then the regions.
    let regions = 128 + 64 * l + (4 * l).next_multiple_of(64);
    let mut b = vec![0u8; regions + 64 * l];
    b[..128].copy_from_slice(&template[..128]);
    common::put_u32(&mut b, 8, if stretch { 3 } else { 2 }); // version
    common::put_u32(&mut b, 24, levels);
    common::put_u64(&mut b, 104, levels as u64); // chunk_count
    let len = b.len() as u64;
    common::put_u64(&mut b, 16, len);
    common::put_u64(&mut b, 88, 0); // item_count
    common::put_u32(&mut b, 72, 0); // max_levels: no limit
    common::put_u64(&mut b, 80, 0); // max_bytes: no limit
    for k in 0..l {
        let d = 128 + 64 * k;
        b[d..d + 64].copy_from_slice(&template[128..192]);
        common::put_u64(&mut b, d, (regions + 64 * k) as u64); // region_offset
        common::put_u64(&mut b, d + 8, 64); // region_len
        common::put_u64(&mut b, d + 16, 2); // num_buckets
        common::put_u64(&mut b, d + 24, 0); // item_count
        // capacity (classic) or key_count (stretch)
        common::put_u64(&mut b, d + 32, if stretch { 0 } else { 1 });
        b[d + 48] = 2; // bucket_size
        b[d + 49] = 8; // fingerprint_bits (stretch: the slot width)
        b[d + 50] = 0; // plain
        b[d + 51] = if stretch { 5 } else { 0 }; // core_bits
        common::put_u64(&mut b, d + 56, 0); // precision: no entries
    }
    common::resign(&mut b);
    b
}

/// Header and level fields set to lies (checksums recomputed, so the field checks reject them).
fn lying(base: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut put = |what: String, at: usize, v: u64, width: usize| {
        let mut b = base.to_vec();
        match width {
            8 => common::put_u64(&mut b, at, v),
            4 => common::put_u32(&mut b, at, v as u32),
            _ => b[at] = v as u8,
        }
        common::resign(&mut b);
        out.push((what, b));
    };
    let huge = [
        u64::MAX,
        1 << 63,
        1 << 40,
        1 << 34,
        u32::MAX as u64,
        1 << 31,
        base.len() as u64 + 64,
        base.len() as u64 * 1000,
    ];
    for v in huge {
        put(format!("file_len {v}"), 16, v, 8);
        put(format!("item_count {v}"), 88, v, 8);
        put(format!("level_count {v}"), 24, v, 4);
        put(format!("chunk_count {v}"), 104, v, 8);
        let levels = u32::from_le_bytes(base[24..28].try_into().unwrap()) as usize;
        for k in 0..levels {
            let d = 128 + 64 * k;
            put(format!("level {k} region_offset {v}"), d, v, 8);
            put(format!("level {k} region_len {v}"), d + 8, v, 8);
            put(format!("level {k} num_buckets {v}"), d + 16, v, 8);
            put(format!("level {k} item_count {v}"), d + 24, v, 8);
            put(format!("level {k} capacity {v}"), d + 32, v, 8);
        }
    }
    // Lies that agree with each other: a level of 2^32 buckets whose region length, and the
    // file length, say so.
    let mut b = base.to_vec();
    let (m, bucket, width) = (1u64 << 32, base[128 + 48] as u64, base[128 + 49] as u64);
    let region = (m * bucket * width / 8 + 16).next_multiple_of(64);
    common::put_u64(&mut b, 128 + 16, m);
    common::put_u64(&mut b, 128 + 8, region);
    common::put_u64(
        &mut b,
        16,
        (common::first_region(base) + region as usize) as u64,
    );
    common::resign(&mut b);
    out.push(("a consistent 2^32-bucket level".into(), b));
    out
}

/// `base` (a chain) claiming as many levels as its file has room for descriptors (or for a
/// descriptor and a smallest region each), checksums recomputed: the decoder reads that many
/// descriptors' worth of file before the first one fails.
fn filling_level_counts(base: &[u8]) -> Vec<(String, Vec<u8>)> {
    [(base.len() - 128) / 64, (base.len() - 128) / 128]
        .into_iter()
        .map(|levels| {
            let mut b = base.to_vec();
            common::put_u32(&mut b, 24, levels as u32);
            common::resign(&mut b);
            (format!("level_count {levels}, filling the file"), b)
        })
        .collect()
}

/// A single filter and a chain of about 1 MiB each, so that an allocation in proportion to
/// the input would stand out against the 64 KiB of slack.
fn large_files() -> Vec<(String, Vec<u8>)> {
    let mut f = CuckooFilter::new(Config::new(800_000)).unwrap();
    for i in 0..100_000u32 {
        f.insert(&i.to_le_bytes()).unwrap();
    }
    let c = chain(100, 400_000, 40_000);
    assert!(c.levels() > 8);
    assert!(c.size_in_bytes() > 1 << 20, "{} bytes", c.size_in_bytes());
    vec![
        ("large".into(), f.to_bytes()),
        ("large chain".into(), c.to_bytes()),
    ]
}

#[test]
fn the_fuzz_corpora_decode_within_their_size() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let mut files = 0;
    for dir in std::fs::read_dir(&root).unwrap() {
        for file in std::fs::read_dir(dir.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            check(&path.display().to_string(), &std::fs::read(&path).unwrap());
            files += 1;
        }
    }
    assert!(files >= 20, "{files} corpus files");
}

#[test]
fn valid_files_decode_within_their_size() {
    let dir = tempfile::tempdir().unwrap();
    for (what, bytes) in valid_files() {
        let peak = check(&what, &bytes);
        // Decoding a valid file copies its buckets: the measure sees them.
        assert!(
            peak >= bytes.len() - 192,
            "{what}: {peak} bytes for {}",
            bytes.len()
        );
        check_file(&what, &dir.path().join("f"), &bytes);
    }
}

#[test]
fn lying_length_fields_allocate_nothing_in_proportion() {
    let dir = tempfile::tempdir().unwrap();
    let mut cases = 0;
    for (name, base) in large_files().into_iter().chain(valid_files()) {
        for (what, bytes) in lying(&base) {
            let what = format!("{name}: {what}");
            let peak = check(&what, &bytes);
            assert!(
                CuckooFilter::from_bytes(&bytes).is_err()
                    || ScalableCuckooFilter::from_bytes(&bytes).is_err(),
                "{what}"
            );
            // Refused early, before anything of the input's size is allocated.
            assert!(peak <= SLACK, "{what}: {peak} bytes");
            // The files' readers too (for a sample of the large files: writing each is slow).
            if bytes.len() < SLACK || cases % 16 == 0 {
                check_file(&what, &dir.path().join("f"), &bytes);
            }
            cases += 1;
        }
    }
    assert!(cases > 1000, "{cases}");
}

/// Thousands of random field values (one to three fields of the header and level table at a
/// time, checksums recomputed) in a single filter and a chain.
#[test]
fn random_field_values_decode_within_their_size() {
    let mut rng = 0x1234_5678_9ABC_DEF0u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let files = valid_files();
    for round in 0..4000 {
        let (name, base) = &files[round % files.len()];
        let mut b = base.clone();
        let table_end = 128 + 64 * u32::from_le_bytes(b[24..28].try_into().unwrap()) as usize;
        for _ in 0..1 + next() % 3 {
            let at = (next() as usize % table_end) & !7;
            let v = match next() % 4 {
                0 => next(),
                1 => 1 << (next() % 64),
                2 => next() % 256,
                _ => u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) ^ (1 << (next() % 64)),
            };
            common::put_u64(&mut b, at, v);
        }
        common::resign(&mut b);
        check(&format!("{name}, round {round}"), &b);
    }
}

/// A header that claims as many levels as the file has room for (checksums valid) is refused
/// before any level is read: every level needs 64 bytes of level table and 64 of buckets, and
/// the level list grows only as descriptors pass.
#[test]
fn level_counts_that_fill_the_file_allocate_nothing_in_proportion() {
    let dir = tempfile::tempdir().unwrap();
    for (name, base) in large_files().into_iter().skip(1) {
        for (what, bytes) in filling_level_counts(&base) {
            let what = format!("{name}, {what}");
            let peak = check(&what, &bytes);
            assert!(peak <= SLACK, "{what}: {peak} bytes");
            check_file(&what, &dir.path().join("f"), &bytes);
        }
    }
}

/// A valid chain of many levels of one cache line each: `ScalableCuckooFilter::from_bytes`
/// builds an owned level per level (a stretch level, or a `CuckooFilter` for a classic one: its
/// table, at least 64 bytes, plus the struct and the decoder's level descriptor), a few times
/// the 132 bytes of file per level; but a file
/// holds at most `MAX_LEVELS` levels (FORMAT.md §4), so that stays within the slack. Counts
/// above the limit are refused before any level is read.
#[test]
fn tiny_levels_within_the_input_plus_64k() {
    let dir = tempfile::tempdir().unwrap();
    for stretch in [true, false] {
        for levels in [10, 100, cuckoo_sst::MAX_LEVELS] {
            let what = format!("{levels} levels of 64 bytes, stretch: {stretch}");
            let bytes = tiny_levels(levels, stretch);
            assert_eq!(bytes[8], if stretch { 3 } else { 2 }, "{what}: version");
            let (c, p) = peak_of(|| ScalableCuckooFilter::from_bytes(&bytes).unwrap());
            assert_eq!(c.levels(), levels as usize);
            // Decoded as the kind of level it holds: written back, the same bytes.
            assert!(c.to_bytes() == bytes, "{what}: not written back as read");
            drop(c);
            println!("{what}: {p} bytes for {}", bytes.len());
            check(&what, &bytes);
            check_file(&what, &dir.path().join("f"), &bytes);
        }
        for levels in [cuckoo_sst::MAX_LEVELS + 1, 500, 4000] {
            let bytes = tiny_levels(levels, stretch);
            let (r, p) = peak_of(|| ScalableCuckooFilter::from_bytes(&bytes).is_err());
            assert!(r, "{levels} levels accepted");
            assert!(p < 1024, "{levels} levels: {p} bytes to refuse them");
            check(&format!("{levels} levels"), &bytes);
        }
    }
}

/// A one-shot compact lookup (`CompactFilter::block_contains`, what `cksst_compact_contains`
/// and the LevelDB policy call) reads the key's two buckets where they lie: it allocates
/// nothing, on a block of 40 keys or of 200 000 (225 KB), where it once copied the whole block
/// into a padded buffer, on the heap above 1 KiB, on every call (issue 44, point 7).
#[test]
fn a_one_shot_compact_lookup_allocates_nothing_whatever_the_block_size() {
    use cuckoo_sst::{CompactFilter, FilterBuilder};
    for n in [40u32, 200_000] {
        let mut b = FilterBuilder::new(Config::new(0));
        for i in 0..n {
            b.add_key(&i.to_le_bytes());
        }
        let block = b.finish_compact().unwrap();
        assert!(block.len() as u64 >= u64::from(n) * 9 / 8);
        for i in (0..n).step_by((n / 40) as usize).chain(n..n + 100) {
            let (answer, peak) =
                peak_of(|| CompactFilter::block_contains(&block, &i.to_le_bytes()));
            assert_eq!(peak, 0, "n={n}: a lookup allocated {peak} bytes");
            if i < n {
                assert!(answer.unwrap(), "n={n}: key {i} lost");
            }
        }
    }
}

/// A run-index file (FORMAT.md §12) with its header's CRC recomputed after a change.
fn resign_run_index(b: &mut [u8]) {
    let crc = crc32fast::hash(&b[..124]);
    b[124..128].copy_from_slice(&crc.to_le_bytes());
}

/// Run-index files: a valid one decodes within its size, and header fields set to lies
/// (header CRC recomputed) — huge bucket counts, lengths, counts, run counts, and a
/// 2^32-bucket level whose chunk count and file length agree with it — are refused before
/// anything in proportion to them, or to the input, is allocated, by `RunIndex::from_bytes`,
/// `MappedRunIndex::from_shared` and `MappedRunIndex::open`.
#[test]
fn run_index_lies_allocate_nothing_in_proportion() {
    use cuckoo_sst::{KeyHash, MappedRunIndex, RunIndex};
    let mut small = RunIndex::new(Config::new(2000)).unwrap();
    for run in 0..5u64 {
        let keys: Vec<KeyHash> = (run * 300..run * 300 + 300)
            .map(|i| KeyHash::of(&i.to_le_bytes()))
            .collect();
        small.add_run(run, &keys).unwrap();
    }
    let large = RunIndex::new(Config::new(300_000)).unwrap().to_bytes();
    assert!(large.len() > 512 << 10, "{} bytes", large.len());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.index");
    let mut cases = 0;
    for base in [small.to_bytes(), large] {
        let (r, p) = peak_of(|| RunIndex::from_bytes(&base).is_ok());
        assert!(r && p <= base.len() + SLACK, "a valid index took {p} bytes");
        let mut lies: Vec<(String, Vec<u8>)> = Vec::new();
        for v in [
            u64::MAX,
            1 << 63,
            1 << 40,
            1 << 34,
            1 << 32,
            u32::MAX as u64,
            1 << 31,
            base.len() as u64 * 1000,
        ] {
            for (name, at, width) in [
                ("file_len", 16, 8),
                ("num_buckets", 56, 8),
                ("key_count", 72, 8),
                ("entry_count", 80, 8),
                ("precision", 88, 8),
                ("run_count", 52, 4),
                ("chunk_count", 104, 4),
            ] {
                let mut b = base.clone();
                b[at..at + width].copy_from_slice(&v.to_le_bytes()[..width]);
                resign_run_index(&mut b);
                if b != base {
                    // (a value whose low bytes are the field's own changes nothing)
                    lies.push((format!("{name} {v}"), b));
                }
            }
        }
        // Consistent lies: 2^32 buckets, with the chunk count and file length they imply.
        let mut b = base.clone();
        let bucket_bits = 4 * u64::from(base[65]) - 4; // semi-sorted buckets of 4
        let region = (((1u64 << 32) * bucket_bits).div_ceil(8) + 16).next_multiple_of(64);
        let chunks = region.div_ceil(1 << 16);
        let runs = u32::from_le_bytes(base[52..56].try_into().unwrap()) as u64;
        b[56..64].copy_from_slice(&(1u64 << 32).to_le_bytes());
        b[104..108].copy_from_slice(&(chunks as u32).to_le_bytes());
        let len =
            128 + (16 * runs).next_multiple_of(64) + (4 * chunks).next_multiple_of(64) + region;
        b[16..24].copy_from_slice(&len.to_le_bytes());
        resign_run_index(&mut b);
        lies.push(("a consistent 2^32-bucket level".into(), b));
        for (what, bytes) in lies {
            let (r, p) = peak_of(|| RunIndex::from_bytes(&bytes).is_err());
            assert!(r, "{what}: accepted");
            assert!(p <= SLACK, "{what}: RunIndex::from_bytes took {p} bytes");
            let shared: std::sync::Arc<[u8]> = bytes.clone().into();
            // A lie about the counts passes the checks made at open and fails `verify`.
            let (m, p) = peak_of(|| MappedRunIndex::from_shared(shared));
            assert!(p <= SLACK, "{what}: from_shared took {p} bytes");
            assert!(m.is_err() || m.is_ok_and(|m| m.verify().is_err()), "{what}");
            if cases % 4 == 0 || bytes.len() < SLACK {
                std::fs::write(&path, &bytes).unwrap();
                let (m, p) = peak_of(|| MappedRunIndex::open(&path));
                assert!(p <= SLACK, "{what}: open took {p} bytes");
                assert!(m.is_err() || m.is_ok_and(|m| m.verify().is_err()), "{what}");
            }
            cases += 1;
        }
    }
    assert!(cases > 100, "{cases}");
}
