//! The crate's one error type: what went wrong, what was expected, and what to do about it.

use std::fmt;

/// Everything that can go wrong in this crate.
///
/// The enum is `#[non_exhaustive]`: later versions add variants (file format errors, for
/// instance) without a breaking change, so match with a wildcard arm.
///
/// ```
/// use cuckoo_sst::{Config, CuckooFilter, Error};
///
/// match CuckooFilter::new(Config::new(1000).bucket_size(3)) {
///     Err(Error::InvalidConfig { setting, .. }) => assert_eq!(setting, "bucket_size"),
///     other => panic!("expected InvalidConfig, got {other:?}"),
/// }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A [`Config`](crate::Config) setting is impossible or unsupported.
    InvalidConfig {
        /// The name of the setting, as spelled by its `Config` method (`"bucket_size"`, …).
        setting: &'static str,
        /// What is wrong with it and which values are accepted.
        reason: String,
    },
    /// An insert found no free slot within `max_kicks` relocations (or a growable filter may
    /// not grow further). The filter is exactly as it was before the call: every key inserted
    /// earlier is still found. (A unit variant, so both `Error::Full` and `Error::Full`
    /// match it; the filter's `len()` and `capacity()` tell how full it is.)
    Full,
    /// A growable filter ([`ScalableCuckooFilter`](crate::ScalableCuckooFilter)) refused a key
    /// because the entries that answer for it already stand for `2 · bucket_size` copies: a
    /// key it finds is a copy as far as it can tell, counted on an answering entry (FORMAT.md
    /// §3.5) — a key inserted again and again, a "hot" key, takes one slot and counts its
    /// copies there — and a key fits `2 · bucket_size` times. Nothing was changed, and the key
    /// is found: `contains` answers `true`. Copies take no slot and never start a level, so
    /// hot keys cannot make the filter large or slow. Use `insert_unique` for sets.
    ///
    /// ```
    /// use cuckoo_sst::{Config, Error, ScalableCuckooFilter};
    /// let mut f = ScalableCuckooFilter::new(Config::new(1000))?;
    /// let mut taken = 0;
    /// for _ in 0..100 {
    ///     match f.insert(b"hot") {
    ///         Ok(()) => taken += 1,
    ///         Err(Error::TooManyCopies) => {}
    ///         Err(e) => return Err(e),
    ///     }
    /// }
    /// assert_eq!((taken, f.levels()), (8, 1)); // buckets of 4: two of them
    /// assert!(f.contains(b"hot"));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    TooManyCopies,
    /// The table for the requested configuration could not be allocated.
    OutOfMemory {
        /// The number of bytes that were requested.
        bytes: u64,
    },
    /// Reading or writing a file failed; the `io::Error` is the [`source`](std::error::Error::source).
    /// A failed `save` (of [`CuckooFilter`](crate::CuckooFilter::save) or
    /// [`ScalableCuckooFilter`](crate::ScalableCuckooFilter::save)) that returns `Io` left the
    /// file at its path as it was.
    Io(std::io::Error),
    /// A `save` replaced the file — every reader that opens the path now gets the new one,
    /// written and fsynced whole — but the fsync of its directory, which makes the rename
    /// itself durable, failed: after a crash or power loss the path may hold the old file
    /// again (whole, never torn). The `io::Error` is the [`source`](std::error::Error::source).
    ///
    /// It is its own variant because it is the one error after which the path has changed: a
    /// storage engine that records the save (in a manifest, say) should not record it as
    /// durable, nor assume the old file is still there; saving again makes it durable once
    /// the directory can be synced.
    ///
    /// ```
    /// use cuckoo_sst::Error;
    /// # fn save() -> Result<(), Error> { Ok(()) }
    /// match save() {
    ///     Ok(()) => { /* durable: record it */ }
    ///     Err(Error::NotDurable(e)) => eprintln!("saved, but not durably ({e}): retry"),
    ///     Err(e) => eprintln!("not saved, the old file is intact: {e}"),
    /// }
    /// ```
    NotDurable(std::io::Error),
    /// The bytes do not start with the filter magic `"CUCKOSST"`: not a filter file.
    BadMagic {
        /// The first eight bytes found (fewer bytes are zero-padded).
        found: [u8; 8],
    },
    /// The file was written in a format version this build cannot read (a newer writer).
    UnsupportedVersion {
        /// The version in the file.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// The file is shorter than its header says (or than a header): truncated or empty.
    Truncated {
        /// Bytes the file should have.
        expected: u64,
        /// Bytes it has.
        found: u64,
    },
    /// The file is longer than its header says: bytes were appended.
    TrailingBytes {
        /// Bytes the file should have.
        expected: u64,
        /// Bytes it has.
        found: u64,
    },
    /// A checksum does not match: the bytes were damaged.
    ChecksumMismatch {
        /// Which part of the file (`"header"`, `"level table"`, `"level 0 buckets"`).
        part: String,
        /// The CRC-32 stored in the file.
        stored: u32,
        /// The CRC-32 of the bytes as they are.
        computed: u32,
    },
    /// A header or level field holds an impossible or inconsistent value.
    Corrupt {
        /// The field, as named in FORMAT.md (`"level 0 num_buckets"`, …).
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The bytes hold a single filter where a growable one was expected.
    NotGrowable,
    /// The bytes hold a growable filter (a chain of levels) where a single filter was expected.
    Growable {
        /// Levels in the file.
        levels: u32,
    },
}

/// `Result<T, cuckoo_sst::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn invalid(setting: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidConfig {
            setting,
            reason: reason.into(),
        }
    }

    pub(crate) fn corrupt(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Corrupt {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// A `Corrupt` error whose reason names the step of FORMAT.md §7 that found it (where
    /// two checks share a field); other errors unchanged.
    pub(crate) fn at_step(self, step: &str) -> Self {
        match self {
            Error::Corrupt { field, reason } => Error::Corrupt {
                field,
                reason: format!("{reason} (§7 step {step})"),
            },
            other => other,
        }
    }

    /// A copy of the error, to report a damage found once to every caller that asks (the
    /// `io::Error` of an `Io` error cannot be copied: its kind and message are).
    pub(crate) fn duplicate(&self) -> Error {
        match self {
            Error::InvalidConfig { setting, reason } => Error::InvalidConfig {
                setting,
                reason: reason.clone(),
            },
            Error::Full => Error::Full,
            Error::TooManyCopies => Error::TooManyCopies,
            Error::OutOfMemory { bytes } => Error::OutOfMemory { bytes: *bytes },
            Error::Io(e) => Error::Io(std::io::Error::new(e.kind(), e.to_string())),
            Error::NotDurable(e) => Error::NotDurable(std::io::Error::new(e.kind(), e.to_string())),
            Error::BadMagic { found } => Error::BadMagic { found: *found },
            Error::UnsupportedVersion { found, supported } => Error::UnsupportedVersion {
                found: *found,
                supported: *supported,
            },
            Error::Truncated { expected, found } => Error::Truncated {
                expected: *expected,
                found: *found,
            },
            Error::TrailingBytes { expected, found } => Error::TrailingBytes {
                expected: *expected,
                found: *found,
            },
            Error::ChecksumMismatch {
                part,
                stored,
                computed,
            } => Error::ChecksumMismatch {
                part: part.clone(),
                stored: *stored,
                computed: *computed,
            },
            Error::Corrupt { field, reason } => Error::Corrupt {
                field: field.clone(),
                reason: reason.clone(),
            },
            Error::NotGrowable => Error::NotGrowable,
            Error::Growable { levels } => Error::Growable { levels: *levels },
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidConfig { setting, reason } => {
                write!(f, "invalid configuration: {setting}: {reason}")
            }
            Error::Full => write!(
                f,
                "filter is full: no free slot found for the key, and nothing was changed; size \
                 the filter for more items or use a growable filter (ScalableCuckooFilter)"
            ),
            Error::TooManyCopies => write!(
                f,
                "the key was not added: the entries that answer for it already stand for \
                 2 * bucket_size copies of it, the most a key fits; it is found, and nothing \
                 was changed; use insert_unique to keep one copy of each key"
            ),
            Error::OutOfMemory { bytes } => write!(
                f,
                "could not allocate {bytes} bytes for the filter table; configure a smaller capacity"
            ),
            Error::Io(e) => write!(f, "I/O error: {e}"),
            Error::NotDurable(e) => write!(
                f,
                "the file was saved, but the fsync of its directory failed ({e}): a crash may \
                 bring back the old file; save again"
            ),
            Error::BadMagic { found } => write!(
                f,
                "not a cuckoo-sst filter: the file starts with {found:02x?}, not \"CUCKOSST\""
            ),
            Error::UnsupportedVersion { found, supported } => write!(
                f,
                "filter file format version {found} is newer than this build reads (up to \
                 {supported}); upgrade cuckoo-sst or rewrite the file with this version"
            ),
            Error::Truncated { expected, found } => write!(
                f,
                "filter file is truncated: {found} bytes where {expected} are needed; rebuild it"
            ),
            Error::TrailingBytes { expected, found } => write!(
                f,
                "filter file has {} unexpected bytes after its end ({found} bytes, {expected} \
                 expected); pass exactly the filter's bytes",
                found - expected
            ),
            Error::ChecksumMismatch {
                part,
                stored,
                computed,
            } => write!(
                f,
                "filter file is damaged: the checksum of the {part} is {computed:#010x}, the \
                 file says {stored:#010x}; rebuild it"
            ),
            Error::Corrupt { field, reason } => {
                write!(f, "filter file is invalid: {field}: {reason}; rebuild it")
            }
            Error::NotGrowable => write!(
                f,
                "the bytes hold a single filter, not a growable one; open them with \
                 CuckooFilter::from_bytes, FilterRef::from_bytes or MappedFilter"
            ),
            Error::Growable { levels } => write!(
                f,
                "the bytes hold a growable filter ({levels} levels), not a single filter; open \
                 them with MappedFilter or ScalableCuckooFilter"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) | Error::NotDurable(e) => Some(e),
            _ => None,
        }
    }
}
