//! [`FilterRef`]'s constructors from a file's bytes: the format layer hands the view it
//! decoded to the layer below, which knows nothing of files.

use super::decode;
use crate::error::Result;
use crate::view::FilterRef;

impl<'a> FilterRef<'a> {
    /// A view over the bytes of a single-filter file (FORMAT.md) — a filter block inside an
    /// SSTable, say — checked completely first: header, every field, every checksum. The
    /// slice may start at any address. Lookups then read the bucket region in place.
    ///
    /// A file holding a growable chain of several levels gives [`Error::Growable`](crate::Error::Growable); open it
    /// with [`MappedFilter`](crate::MappedFilter).
    ///
    /// ```
    /// use cuckoo_sst::{CuckooFilter, FilterRef};
    /// let mut f = CuckooFilter::with_capacity(100);
    /// f.insert(b"k")?;
    /// let mut block = vec![0u8; 3]; // an SSTable block, at an odd offset
    /// f.write_to(&mut block)?;
    /// let view = FilterRef::from_bytes(&block[3..])?;
    /// assert!(view.contains(b"k"));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn from_bytes(bytes: &'a [u8]) -> Result<FilterRef<'a>> {
        let (meta, level) = decode::parse_single(bytes)?;
        Ok(FilterRef::new(
            level.geo,
            meta.seed,
            level.len,
            &bytes[level.region()],
        ))
    }

    /// A view over the bytes of a single-filter file **that the caller has already verified**
    /// — a block whose own checksum its SSTable reader checked when it loaded it: only the
    /// header and the level table are checked (FORMAT.md §7 steps 1–6, microseconds), not the
    /// checksums of the buckets.
    ///
    /// Bytes damaged since the caller checked them give wrong answers, false negatives
    /// included: use [`from_bytes`](Self::from_bytes) (which checks every byte) or
    /// [`MappedFilter::from_shared`](crate::MappedFilter::from_shared) (which checks chunks
    /// as lookups touch them) unless the bytes really were checked. Memory safety does not
    /// depend on it: any bytes are read safely.
    ///
    /// ```
    /// use cuckoo_sst::{CuckooFilter, FilterRef};
    /// let mut f = CuckooFilter::with_capacity(100);
    /// f.insert(b"k")?;
    /// let block = f.to_bytes(); // its integrity checked by the caller's own block checksum
    /// assert!(FilterRef::from_bytes_assume_verified(&block)?.contains(b"k"));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn from_bytes_assume_verified(bytes: &'a [u8]) -> Result<FilterRef<'a>> {
        let meta = decode::parse_trusting_regions(bytes)?;
        let level = decode::single_level(&meta)?;
        Ok(FilterRef::new(
            level.geo,
            meta.seed,
            level.len,
            &bytes[level.region()],
        ))
    }
}
