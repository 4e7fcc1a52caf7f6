//! Layouts the integration tests run over: every layout the crate offers — plain slots of 8, 16
//! and 32 bits in buckets of 2, 4 and 8; packed and semi-sorted fingerprints at the widths the
//! sizing picks (7 and 10 to 20 for 5 % to 0.001 %) and at wider ones (24, 32), which also
//! reach every way a bucket is read (one 8-byte load, one 16-byte load, field by field).
#![allow(dead_code)]

use cuckoo_sst::{Config, Encoding};

/// Packed and semi-sorted widths under test.
pub const WIDTHS: [u32; 8] = [7, 10, 13, 16, 17, 20, 24, 32];

/// (bucket size, fingerprint bits, encoding) for every layout under test: 9 plain, 24 packed,
/// 8 semi-sorted.
pub fn layouts() -> Vec<(usize, u32, Encoding)> {
    let mut v = Vec::new();
    for b in [2, 4, 8] {
        for f in [8, 16, 32] {
            v.push((b, f, Encoding::Plain));
        }
    }
    for b in [2, 4, 8] {
        for f in WIDTHS {
            v.push((b, f, Encoding::Packed));
        }
    }
    for f in WIDTHS {
        v.push((4, f, Encoding::SemiSorted));
    }
    v
}

/// A configuration for `capacity` items with a layout from [`layouts`].
pub fn config(capacity: usize, (b, bits, encoding): (usize, u32, Encoding)) -> Config {
    Config::new(capacity)
        .bucket_size(b)
        .fingerprint_bits(bits)
        .encoding(encoding)
}

/// Rewrites the checksums of a file after a field was changed, following FORMAT.md §6, so that
/// the field checks behind the checksums are what rejects it.
pub fn resign(b: &mut [u8]) {
    let levels = u32::from_le_bytes(b[24..28].try_into().unwrap()) as usize;
    let levels = levels.min((b.len() - 128) / 64);
    for k in 0..levels {
        let d = 128 + 64 * k;
        let off = u64::from_le_bytes(b[d..d + 8].try_into().unwrap());
        let len = u64::from_le_bytes(b[d + 8..d + 16].try_into().unwrap());
        if let (Ok(off), Ok(len)) = (usize::try_from(off), usize::try_from(len)) {
            if let Some(region) = off.checked_add(len).and_then(|end| b.get(off..end)) {
                let crc = crc32fast::hash(region);
                b[d + 52..d + 56].copy_from_slice(&crc.to_le_bytes());
            }
        }
    }
    let crc = crc32fast::hash(&b[128..128 + 64 * levels]);
    b[120..124].copy_from_slice(&crc.to_le_bytes());
    let crc = crc32fast::hash(&b[..124]);
    b[124..128].copy_from_slice(&crc.to_le_bytes());
}

pub fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

pub fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
