//! Verification on first touch: which chunks of a file's bucket regions (FORMAT.md §6) have been
//! checked against their checksums, which failed, and the first failure, shared by every thread
//! that queries the file.
//!
//! A lookup on a file whose chunks are not all checked yet checks the chunks its buckets lie in
//! (about 5 µs for a 64 KiB chunk) and then answers from them, or "maybe present" if one is
//! damaged. Once every chunk has passed, one relaxed atomic load per lookup is all that
//! remains.

use crate::error::{Error, Result};
use crate::format::{FileMeta, decode};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering::Relaxed};

/// What a reader knows about a file's chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Health {
    /// Chunks in the file (FORMAT.md §6; one per level in a version-1 file).
    pub chunks: u64,
    /// Chunks checked so far and found whole.
    pub verified: u64,
    /// Chunks checked so far and found damaged: lookups that touch them answer "maybe
    /// present", and [`MappedFilter::verify`](crate::MappedFilter::verify) returns the first.
    pub damaged: u64,
    /// Whether the file was rejected as a whole: its checksums hold but its contents break a
    /// rule of FORMAT.md §7 step 8 (only a crafted file does that). Every lookup answers
    /// "maybe present".
    pub rejected: bool,
}

impl Health {
    /// Whether every chunk has been checked and none is damaged (the contents may not have
    /// been checked: see [`MappedFilter::is_verified`](crate::MappedFilter::is_verified)).
    ///
    /// ```
    /// # use cuckoo_sst::{CuckooFilter, MappedFilter};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # CuckooFilter::with_capacity(10).save(&path)?;
    /// assert!(MappedFilter::open(&path)?.health().is_whole());
    /// assert!(!MappedFilter::open_unverified(&path)?.health().is_whole());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_whole(&self) -> bool {
        self.verified == self.chunks && self.damaged == 0 && !self.rejected
    }
}

/// Some chunks unchecked or damaged: lookups take the slow path.
const PENDING: u8 = 0;
/// Every chunk checked and whole (or taken on trust): lookups read the buckets directly.
const ALL_GOOD: u8 = 1;
/// The contents broke a rule: every lookup answers "maybe present".
const REJECTED: u8 = 2;

/// The verification state of one file.
pub(crate) struct Checks {
    state: AtomicU8,
    good: Box<[AtomicU64]>,
    bad: Box<[AtomicU64]>,
    good_count: AtomicUsize,
    bad_count: AtomicUsize,
    /// The first damage found, for `verify` and error reports.
    damage: OnceLock<Error>,
    /// Whether FORMAT.md §7 step 8 passed as a whole (`verify`).
    contents_ok: AtomicBool,
    total: usize,
}

fn bitset(bits: usize) -> Box<[AtomicU64]> {
    (0..bits.div_ceil(64)).map(|_| AtomicU64::new(0)).collect()
}

impl Checks {
    /// Nothing checked yet, for a file of `meta.chunk_count()` chunks (a bit of memory per
    /// chunk: a 64 KiB chunk costs two bits).
    pub(crate) fn new(meta: &FileMeta) -> Checks {
        let total = meta.chunk_count();
        Checks {
            state: AtomicU8::new(PENDING),
            good: bitset(total),
            bad: bitset(total),
            good_count: AtomicUsize::new(0),
            bad_count: AtomicUsize::new(0),
            damage: OnceLock::new(),
            contents_ok: AtomicBool::new(false),
            total,
        }
    }

    /// Every chunk taken as whole without checking it (the caller vouches for the bytes);
    /// `verify` still checks them all.
    pub(crate) fn trusted(meta: &FileMeta) -> Checks {
        let c = Checks::new(meta);
        c.state.store(ALL_GOOD, Relaxed);
        c
    }

    /// Whether lookups may read every chunk without checking it: the one load of the fast path.
    #[inline(always)]
    pub(crate) fn all_good(&self) -> bool {
        self.state.load(Relaxed) == ALL_GOOD
    }

    pub(crate) fn rejected(&self) -> bool {
        self.state.load(Relaxed) == REJECTED
    }

    fn bit(set: &[AtomicU64], c: usize) -> bool {
        set.get(c / 64)
            .is_some_and(|w| w.load(Relaxed) & (1 << (c % 64)) != 0)
    }

    /// Sets bit `c`; whether it was clear.
    fn set(set: &[AtomicU64], c: usize) -> bool {
        set.get(c / 64)
            .is_some_and(|w| w.fetch_or(1 << (c % 64), Relaxed) & (1 << (c % 64)) == 0)
    }

    /// Whether chunk `c` was checked and found whole.
    pub(crate) fn is_good(&self, c: usize) -> bool {
        Self::bit(&self.good, c)
    }

    /// Records the outcome of checking chunk `c`.
    pub(crate) fn record(&self, c: usize, outcome: &Result<()>) {
        match outcome {
            Ok(()) => {
                if Self::set(&self.good, c)
                    && self.good_count.fetch_add(1, Relaxed) + 1 == self.total
                {
                    // The last chunk to pass: lookups stop checking (unless one was damaged or
                    // the file rejected meanwhile, which keeps them on the slow path).
                    let _ = self
                        .state
                        .compare_exchange(PENDING, ALL_GOOD, Relaxed, Relaxed);
                }
            }
            Err(e) => {
                if Self::set(&self.bad, c) {
                    self.bad_count.fetch_add(1, Relaxed);
                }
                let _ = self.damage.set(e.duplicate());
                // A chunk trusted until now: back to checking.
                let _ = self
                    .state
                    .compare_exchange(ALL_GOOD, PENDING, Relaxed, Relaxed);
            }
        }
    }

    /// Whether chunk `c` is whole, checking it with `check` the first time it is asked.
    #[inline]
    pub(crate) fn ensure(&self, c: usize, check: impl FnOnce() -> Result<()>) -> bool {
        if self.is_good(c) {
            return true;
        }
        if Self::bit(&self.bad, c) {
            return false;
        }
        let outcome = check();
        self.record(c, &outcome);
        outcome.is_ok()
    }

    /// Every chunk of the file `bytes` (parsed as `meta`) that is not known to be whole, checked
    /// in file order; the first damage, if any. Chunks already found whole are not read again.
    pub(crate) fn check_all_chunks(&self, bytes: &[u8], meta: &FileMeta) -> Result<()> {
        let mut first = None;
        for (k, level) in meta.levels.iter().enumerate() {
            for j in 0..meta.chunks_of(level) {
                let c = level.first_chunk + j;
                if self.is_good(c) {
                    continue;
                }
                let outcome = decode::check_chunk(bytes, meta, k, j);
                self.record(c, &outcome);
                if let Err(e) = outcome {
                    first.get_or_insert(e);
                }
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// FORMAT.md §7 step 8 on the whole file: every chunk not yet known whole, then every
    /// level's contents. A content failure rejects the file (every lookup then answers "maybe").
    pub(crate) fn verify(&self, bytes: &[u8], meta: &FileMeta) -> Result<()> {
        if self.contents_ok.load(Relaxed) {
            return Ok(());
        }
        if self.rejected()
            && let Some(e) = self.damage.get()
        {
            return Err(e.duplicate());
        }
        self.check_all_chunks(bytes, meta)?;
        for k in 0..meta.levels.len() {
            if let Err(e) = decode::check_contents(bytes, meta, k) {
                let _ = self.damage.set(e.duplicate());
                self.state.store(REJECTED, Relaxed);
                return Err(e);
            }
        }
        self.contents_ok.store(true, Relaxed);
        Ok(())
    }

    /// Whether `verify` has passed.
    pub(crate) fn verified(&self) -> bool {
        self.contents_ok.load(Relaxed)
    }

    pub(crate) fn health(&self) -> Health {
        Health {
            chunks: self.total as u64,
            verified: self.good_count.load(Relaxed) as u64,
            damaged: self.bad_count.load(Relaxed) as u64,
            rejected: self.rejected(),
        }
    }

    /// The first damage found so far.
    pub(crate) fn damage(&self) -> Option<Error> {
        self.damage.get().map(Error::duplicate)
    }
}

impl std::fmt::Debug for Checks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.health().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, CuckooFilter};

    /// A file of several chunks (a region past 64 KiB), its bytes and their parse.
    fn file() -> (Vec<u8>, FileMeta) {
        let bytes = CuckooFilter::new(Config::new(200_000)).unwrap().to_bytes();
        let meta = decode::parse(&bytes).unwrap();
        assert!(meta.chunk_count() >= 3, "{} chunks", meta.chunk_count());
        (bytes, meta)
    }

    /// Lookups leave the checking path when, and only when, the last chunk not yet known
    /// whole is found whole; a chunk found whole twice counts once.
    #[test]
    fn the_last_whole_chunk_turns_on_the_fast_path() {
        let (_, meta) = file();
        let c = Checks::new(&meta);
        let n = meta.chunk_count();
        c.record(0, &Ok(()));
        c.record(0, &Ok(()));
        assert_eq!(c.health().verified, 1);
        for j in 1..n {
            assert!(!c.all_good(), "all good with {j} of {n} chunks checked");
            c.record(j, &Ok(()));
        }
        assert!(c.all_good());
        let h = c.health();
        assert_eq!((h.chunks, h.verified, h.damaged), (n as u64, n as u64, 0));
        assert!(h.is_whole() && !c.rejected());
        // `Debug` shows the health.
        assert_eq!(format!("{c:?}"), format!("{h:?}"));
        assert!(format!("{c:?}").contains(&format!("verified: {n}")));
    }

    /// A damaged chunk found in a file taken on trust sends lookups back to checking, counts
    /// once, and is kept as the file's damage; a chunk found whole after it does not bring the
    /// fast path back.
    #[test]
    fn damage_found_in_a_trusted_file_turns_the_fast_path_off() {
        let (mut bytes, meta) = file();
        let at = meta.levels[0].region().start + 10;
        bytes[at] ^= 1;
        let damage = decode::check_chunk(&bytes, &meta, 0, 0);
        assert!(damage.is_err());
        let c = Checks::trusted(&meta);
        assert!(c.all_good() && c.damage().is_none());
        c.record(0, &damage);
        c.record(0, &damage);
        assert!(!c.all_good());
        assert!(!c.ensure(0, || panic!("a chunk known damaged is not checked again")));
        for j in 1..meta.chunk_count() {
            assert!(c.ensure(j, || Ok(())));
        }
        assert!(!c.all_good());
        let h = c.health();
        assert_eq!((h.damaged, h.verified), (1, meta.chunk_count() as u64 - 1));
        assert!(!h.is_whole());
        assert!(matches!(c.damage(), Some(Error::ChecksumMismatch { .. })));
    }
}
