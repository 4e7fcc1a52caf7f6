//! Layouts the integration tests run over: every layout the crate offers — plain slots of 8, 16
//! and 32 bits in buckets of 2, 4 and 8; packed and semi-sorted fingerprints at the widths the
//! sizing picks (7 and 10 to 20 for 5 % to 0.001 %) and at wider ones (24, 32), which also
//! reach every way a bucket is read (one 8-byte load, one 16-byte load, field by field).
#![allow(dead_code)]

pub mod crafted;
pub mod spec;

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
/// the field checks behind the checksums are what rejects it: in version 2 every chunk's entry
/// of the checksum table and `checksums_crc`, in version 1 every `region_crc`; then
/// `levels_crc` and `header_crc`. Fields that point outside the file are left as they are.
pub fn resign(b: &mut [u8]) {
    let levels = u32::from_le_bytes(b[24..28].try_into().unwrap()) as usize;
    let levels = levels.min((b.len() - 128) / 64);
    let table_end = 128 + 64 * levels;
    if u32::from_le_bytes(b[8..12].try_into().unwrap()) == 1 {
        for k in 0..levels {
            let d = 128 + 64 * k;
            if let Some(region) = region_of(b, d) {
                let crc = crc32fast::hash(region);
                b[d + 52..d + 56].copy_from_slice(&crc.to_le_bytes());
            }
        }
    } else {
        let shift = b[98] as u32;
        let count = u64::from_le_bytes(b[104..112].try_into().unwrap());
        let table_len = usize::try_from(count)
            .ok()
            .and_then(|c| c.checked_mul(4))
            .map(|l| l.next_multiple_of(64));
        if let (Some(table_len), true) = (table_len, (1..=30).contains(&shift)) {
            let mut at = table_end;
            let mut entries = Vec::new();
            for k in 0..levels {
                let d = 128 + 64 * k;
                let off = u64::from_le_bytes(b[d..d + 8].try_into().unwrap());
                if let Some(region) = region_of(b, d) {
                    for (j, chunk) in region.chunks(1 << shift).enumerate() {
                        let mut h = crc32fast::Hasher::new();
                        h.update(&(off + ((j as u64) << shift)).to_le_bytes());
                        h.update(chunk);
                        entries.push(h.finalize());
                    }
                }
            }
            for e in entries {
                if at + 4 <= (table_end + table_len).min(b.len()) {
                    b[at..at + 4].copy_from_slice(&e.to_le_bytes());
                }
                at += 4;
            }
            if let Some(table) = b.get(table_end..table_end + table_len) {
                let crc = crc32fast::hash(table);
                b[100..104].copy_from_slice(&crc.to_le_bytes());
            }
        }
    }
    let crc = crc32fast::hash(&b[128..table_end]);
    b[120..124].copy_from_slice(&crc.to_le_bytes());
    let crc = crc32fast::hash(&b[..124]);
    b[124..128].copy_from_slice(&crc.to_le_bytes());
}

/// The bucket region that level descriptor `d` (its offset in the file) points at, if it lies
/// in the file.
fn region_of(b: &[u8], d: usize) -> Option<&[u8]> {
    let off = u64::from_le_bytes(b[d..d + 8].try_into().unwrap());
    let len = u64::from_le_bytes(b[d + 8..d + 16].try_into().unwrap());
    let (off, len) = (usize::try_from(off).ok()?, usize::try_from(len).ok()?);
    b.get(off..off.checked_add(len)?)
}

/// Level 0's `region_offset` (FORMAT.md §5): where the first bucket region starts.
pub fn first_region(b: &[u8]) -> usize {
    u64::from_le_bytes(b[128..136].try_into().unwrap()) as usize
}

/// The version-1 file with the same filter as the version-2 file `b` (FORMAT.md §9): no
/// checksum table, each region's CRC in its descriptor, bytes 98..120 of the header zero.
/// Version 1 is still read; this is how the tests write it.
pub fn to_v1(b: &[u8]) -> Vec<u8> {
    assert_eq!(u32::from_le_bytes(b[8..12].try_into().unwrap()), 2);
    let levels = u32::from_le_bytes(b[24..28].try_into().unwrap()) as usize;
    let table_end = 128 + 64 * levels;
    let table_len = first_region(b) - table_end;
    let mut v1 = b[..table_end].to_vec();
    v1.extend_from_slice(&b[table_end + table_len..]);
    put_u32(&mut v1, 8, 1);
    v1[98..120].fill(0);
    let len = v1.len() as u64;
    put_u64(&mut v1, 16, len);
    for k in 0..levels {
        let d = 128 + 64 * k;
        let off = u64::from_le_bytes(v1[d..d + 8].try_into().unwrap());
        put_u64(&mut v1, d, off - table_len as u64);
    }
    resign(&mut v1);
    v1
}

pub fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// Writes the `w`-bit value `v` into slot `s` of bucket `i` of level `k`, whose buckets of
/// `b` slots are packed (FORMAT.md §3.2).
pub fn put_packed_slot(bytes: &mut [u8], k: usize, i: u64, s: u64, v: u64) {
    let d = 128 + 64 * k;
    let region = u64::from_le_bytes(bytes[d..d + 8].try_into().unwrap()) as usize;
    let (b, w) = (bytes[d + 48] as u64, bytes[d + 49] as u64);
    assert_eq!(bytes[d + 50], 1, "packed");
    let at = (i * b + s) * w;
    for j in 0..w {
        let (byte, bit) = (region + ((at + j) / 8) as usize, (at + j) % 8);
        bytes[byte] = bytes[byte] & !(1 << bit) | (((v >> j) & 1) << bit) as u8;
    }
}

pub fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// An error as `Variant(field)` with the values that locate it — the form in which
/// [`spec`] names the failures of FORMAT.md §7.
pub fn describe(e: &cuckoo_sst::Error) -> String {
    use cuckoo_sst::Error;
    match e {
        Error::Corrupt { field, .. } => format!("Corrupt({field})"),
        Error::ChecksumMismatch { part, .. } => format!("Checksum({part})"),
        Error::Truncated { expected, found } => format!("Truncated({expected}, {found})"),
        Error::TrailingBytes { expected, found } => format!("TrailingBytes({expected}, {found})"),
        Error::UnsupportedVersion { found, supported } => {
            format!("UnsupportedVersion({found}, {supported})")
        }
        Error::BadMagic { .. } => "BadMagic".into(),
        other => format!("{other:?}"),
    }
}
