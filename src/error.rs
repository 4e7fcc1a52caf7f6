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
    /// An insert found no free slot within `max_kicks` relocations. The filter is exactly as it
    /// was before the call: every key inserted earlier is still found.
    Full {
        /// Items in the filter (unchanged by the failed insert).
        len: u64,
        /// Total slots in the filter.
        capacity: u64,
    },
    /// The table for the requested configuration could not be allocated.
    OutOfMemory {
        /// The number of bytes that were requested.
        bytes: u64,
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
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidConfig { setting, reason } => {
                write!(f, "invalid configuration: {setting}: {reason}")
            }
            Error::Full { len, capacity } => write!(
                f,
                "filter is full: no free slot found for the key ({len} items in {capacity} slots); \
                 nothing was changed — size the filter for more items or use a growable filter"
            ),
            Error::OutOfMemory { bytes } => write!(
                f,
                "could not allocate {bytes} bytes for the filter table; configure a smaller capacity"
            ),
        }
    }
}

impl std::error::Error for Error {}
