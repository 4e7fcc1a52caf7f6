//! Layouts the integration tests run over: every bucket size and encoding, narrow and wide.
#![allow(dead_code)]

use cuckoo_sst::{Config, Encoding};

/// (bucket size, fingerprint bits, encoding).
pub const LAYOUTS: [(usize, u32, Encoding); 15] = [
    (2, 8, Encoding::Plain),
    (4, 8, Encoding::Plain),
    (8, 8, Encoding::Plain),
    (2, 16, Encoding::Plain),
    (4, 16, Encoding::Plain),
    (8, 16, Encoding::Plain),
    (4, 32, Encoding::Plain),
    (2, 7, Encoding::Packed),
    (4, 11, Encoding::Packed),
    (8, 13, Encoding::Packed),
    (8, 27, Encoding::Packed),
    (4, 7, Encoding::SemiSorted),
    (4, 10, Encoding::SemiSorted),
    (4, 13, Encoding::SemiSorted),
    (4, 32, Encoding::SemiSorted),
];

/// A configuration for `capacity` items with a layout from [`LAYOUTS`].
pub fn config(capacity: usize, (b, bits, encoding): (usize, u32, Encoding)) -> Config {
    Config::new(capacity)
        .bucket_size(b)
        .fingerprint_bits(bits)
        .encoding(encoding)
}
