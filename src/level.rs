//! The level layer: what a level's bytes mean, above the tables' codecs and below the view —
//! for a stretch level (FORMAT.md §3.4, §5.1), the weight of an entry in the precision sum,
//! the false-positive bound that sum gives, and the scan of a level's entries that checks them
//! and counts them when a file is verified. (A classic level's bound and scan need only its
//! geometry: [`Geometry::fpr_bound`], [`crate::table::scan`].)

use crate::hash::stretch::PRECISION_SCALE;
use crate::table::{Codec, Geometry, with_codec};

/// `2^(60 − t)`: one entry of precision `t` in the precision sum.
#[inline]
pub(crate) const fn weight(t: u32) -> u64 {
    1 << (PRECISION_SCALE - t)
}

/// A stretch level's counts, as persisted (FORMAT.md §5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Counts {
    pub(crate) keys: u64,
    pub(crate) entries: u64,
    pub(crate) precision: u64,
}

/// `2 · 2^−c · precision · 2^−60`, at most 1.
pub(crate) fn fpr_bound(core_bits: u32, precision: u64) -> f64 {
    (precision as f64 * bound_scale(core_bits)).min(1.0)
}

/// `2^(1 − c − 60)`: what one unit of the precision sum adds to the bound.
pub(crate) fn bound_scale(core_bits: u32) -> f64 {
    2f64.powi(1 - core_bits as i32 - PRECISION_SCALE as i32)
}

/// Scans a stretch level's region: every slot empty or a valid entry, and the level's counts
/// (occupied slots, precision sum; `keys` is left 0, the bytes do not tell it). Used when a
/// file is verified.
pub(crate) fn scan(geo: &Geometry, region: &[u8]) -> std::result::Result<Counts, String> {
    let slots = geo.stretch_slots().ok_or("not a stretch level")?;
    let split = geo.split();
    let b = geo.bucket_size() as usize;
    let mut counts = Counts::default();
    with_codec!(geo.layout(), c => {
        for j in 0..geo.num_buckets() {
            let entries = c.read(region, j);
            for &v in &entries[..b] {
                if v == 0 {
                    continue;
                }
                if !slots.valid(v) {
                    return Err(format!("bucket {j} holds {v:#x}, an entry without a marker"));
                }
                counts.entries += 1;
                let t = split.address_len(j) + slots.len(v);
                counts.precision = counts
                    .precision
                    .checked_add(weight(t))
                    .ok_or("the precision sum overflows")?;
            }
        }
        Ok::<(), String>(())
    })?;
    Ok(counts)
}
