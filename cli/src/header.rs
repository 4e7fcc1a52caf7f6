//! The header and level table of a filter file (FORMAT.md §4, §5), read field by field for
//! `info`. Only called on bytes the library's `open_unverified` accepted, so the header and the
//! level table are whole and their checksums hold; every read is still bounds-checked.

use serde_json::{Value, json};

/// The header fields (FORMAT.md §4).
#[derive(Debug)]
pub struct Header {
    pub version: u32,
    pub file_len: u64,
    pub flags: u32,
    pub hash: u32,
    pub max_kicks: u32,
    pub seed: u64,
    pub target_fpr: f64,
    pub growth_factor: f64,
    pub tightening: f64,
    pub max_levels: u32,
    pub max_bytes: u64,
    pub item_count: u64,
    pub chain_bucket_size: u8,
    pub chain_encoding: u8,
    /// Version 2: log2 of the chunk size, and the chunks (0 in version 1).
    pub chunk_shift: u8,
    pub chunk_count: u64,
    pub levels: Vec<Level>,
}

/// One level descriptor (FORMAT.md §5).
#[derive(Debug)]
pub struct Level {
    pub region_offset: u64,
    pub region_len: u64,
    pub num_buckets: u64,
    /// Occupied slots (a stretch level's splits may copy an entry into two).
    pub item_count: u64,
    /// Classic: the items it was sized for; stretch (`core_bits` > 0): its keys (`key_count`).
    pub capacity: u64,
    pub target_fpr: f64,
    pub bucket_size: u8,
    pub fingerprint_bits: u8,
    pub encoding: u8,
    /// Version 3: 0 for a classic level, the core width of a stretch level.
    pub core_bits: u8,
    /// Version 3, a stretch level: its precision sum (FORMAT.md §5.1); otherwise 0.
    pub precision: u64,
    /// Version 4: how the level's copies are encoded (FORMAT.md §3.5; byte 52): 0 none, 1
    /// records, 2 dense. 0 in earlier versions (version 1 keeps a CRC there).
    pub copies: u8,
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn bytes<const N: usize>(&self, at: usize) -> Option<[u8; N]> {
        self.0.get(at..at.checked_add(N)?)?.try_into().ok()
    }
    fn u8(&self, at: usize) -> Option<u8> {
        self.0.get(at).copied()
    }
    fn u32(&self, at: usize) -> Option<u32> {
        self.bytes(at).map(u32::from_le_bytes)
    }
    fn u64(&self, at: usize) -> Option<u64> {
        self.bytes(at).map(u64::from_le_bytes)
    }
    fn f64(&self, at: usize) -> Option<f64> {
        self.bytes(at).map(f64::from_le_bytes)
    }
}

pub const HEADER_LEN: u64 = 128;
pub const LEVEL_LEN: u64 = 64;

/// The header's fields (FORMAT.md §4): name and byte range. The one list of their offsets:
/// [`Header::read`] reads through it, and error messages name the bytes with it.
pub const HEADER_FIELDS: [(&str, u64, u64); 20] = [
    ("magic", 0, 8),
    ("version", 8, 12),
    ("header_len", 12, 16),
    ("file_len", 16, 24),
    ("level_count", 24, 28),
    ("flags", 28, 32),
    ("hash", 32, 36),
    ("max_kicks", 36, 40),
    ("seed", 40, 48),
    ("target_fpr", 48, 56),
    ("growth_factor", 56, 64),
    ("tightening", 64, 72),
    ("max_levels", 72, 76),
    ("max_bytes", 80, 88),
    ("item_count", 88, 96),
    ("chain_bucket_size", 96, 97),
    ("chain_encoding", 97, 98),
    ("chunk_shift", 98, 99),
    ("checksums_crc", 100, 104),
    ("chunk_count", 104, 112),
];

/// A level descriptor's fields (FORMAT.md §5), relative to the descriptor's start.
pub const LEVEL_FIELDS: [(&str, u64, u64); 13] = [
    ("region_offset", 0, 8),
    ("region_len", 8, 16),
    ("num_buckets", 16, 24),
    ("item_count", 24, 32),
    ("capacity", 32, 40),
    ("key_count", 32, 40),
    ("target_fpr", 40, 48),
    ("bucket_size", 48, 49),
    ("fingerprint_bits", 49, 50),
    ("encoding", 50, 51),
    ("core_bits", 51, 52),
    ("copies", 52, 53),
    ("precision", 56, 64),
];

/// The byte range of field `name` in `fields`.
pub fn field(fields: &[(&str, u64, u64)], name: &str) -> Option<(u64, u64)> {
    fields
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|&(_, a, b)| (a, b))
}

/// The offset of a field every reader of this module names correctly.
fn at(fields: &[(&str, u64, u64)], name: &str) -> usize {
    field(fields, name).expect("a field of FORMAT.md").0 as usize
}

impl Header {
    /// The header and level table of `file`, or `None` if it is too short to hold them.
    pub fn read(file: &[u8]) -> Option<Header> {
        let r = Reader(file);
        let h = |name| at(&HEADER_FIELDS, name);
        let l = |name| at(&LEVEL_FIELDS, name);
        let level_count = r.u32(h("level_count"))? as usize;
        let version = r.u32(h("version"))?;
        let levels = (0..level_count)
            .map(|k| {
                let start = HEADER_LEN as usize + k * LEVEL_LEN as usize;
                let r = Reader(file.get(start..)?);
                Some(Level {
                    region_offset: r.u64(l("region_offset"))?,
                    region_len: r.u64(l("region_len"))?,
                    num_buckets: r.u64(l("num_buckets"))?,
                    item_count: r.u64(l("item_count"))?,
                    capacity: r.u64(l("capacity"))?,
                    target_fpr: r.f64(l("target_fpr"))?,
                    bucket_size: r.u8(l("bucket_size"))?,
                    fingerprint_bits: r.u8(l("fingerprint_bits"))?,
                    encoding: r.u8(l("encoding"))?,
                    core_bits: r.u8(l("core_bits"))?,
                    precision: r.u64(l("precision"))?,
                    copies: match version {
                        4 => r.u8(l("copies"))?,
                        _ => 0,
                    },
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Header {
            version: r.u32(h("version"))?,
            file_len: r.u64(h("file_len"))?,
            flags: r.u32(h("flags"))?,
            hash: r.u32(h("hash"))?,
            max_kicks: r.u32(h("max_kicks"))?,
            seed: r.u64(h("seed"))?,
            target_fpr: r.f64(h("target_fpr"))?,
            growth_factor: r.f64(h("growth_factor"))?,
            tightening: r.f64(h("tightening"))?,
            max_levels: r.u32(h("max_levels"))?,
            max_bytes: r.u64(h("max_bytes"))?,
            item_count: r.u64(h("item_count"))?,
            chain_bucket_size: r.u8(h("chain_bucket_size"))?,
            chain_encoding: r.u8(h("chain_encoding"))?,
            chunk_shift: r.u8(h("chunk_shift"))?,
            chunk_count: r.u64(h("chunk_count"))?,
            levels,
        })
    }

    pub fn growable(&self) -> bool {
        self.flags & 1 != 0
    }

    /// The byte range of the level table, for naming damage.
    pub fn level_table_range(&self) -> (u64, u64) {
        (
            HEADER_LEN,
            HEADER_LEN + LEVEL_LEN * self.levels.len() as u64,
        )
    }

    /// The byte range of the checksum table (version 2; empty in version 1): from the end of
    /// the level table to the first region.
    pub fn checksum_table_range(&self) -> (u64, u64) {
        let start = self.level_table_range().1;
        (
            start,
            self.levels.first().map_or(start, |l| l.region_offset),
        )
    }

    /// The chunk size in bytes (version 2), or `None` (version 1: a checksum per region).
    pub fn chunk_bytes(&self) -> Option<u64> {
        (self.version >= 2).then(|| 1u64 << self.chunk_shift.min(63))
    }
}

impl Level {
    pub fn encoding_name(&self) -> &'static str {
        encoding_name(self.encoding)
    }

    pub fn layout(&self) -> String {
        if self.core_bits != 0 {
            // A stretch level's slot: the core, continuation bits and the marker (§3.4).
            return format!(
                "{} b={} w={} c={}",
                self.encoding_name(),
                self.bucket_size,
                self.fingerprint_bits,
                self.core_bits
            );
        }
        format!(
            "{} b={} f={}",
            self.encoding_name(),
            self.bucket_size,
            self.fingerprint_bits
        )
    }

    /// A stretch level (FORMAT.md §2.2): it grew in place, and its descriptor counts keys
    /// apart from occupied slots.
    pub fn is_stretch(&self) -> bool {
        self.core_bits != 0
    }

    /// The keys in the level.
    pub fn keys(&self) -> u64 {
        if self.is_stretch() {
            self.capacity
        } else {
            self.item_count
        }
    }

    /// The items a classic level was sized for (a stretch level has no fixed capacity).
    pub fn sized_for(&self) -> Option<u64> {
        (!self.is_stretch()).then_some(self.capacity)
    }

    /// Bucket region bits per key.
    pub fn bits_per_item(&self) -> Option<f64> {
        (self.keys() > 0).then(|| self.region_len as f64 * 8.0 / self.keys() as f64)
    }

    /// Occupied slots over slots.
    pub fn load_factor(&self) -> f64 {
        self.item_count as f64 / (self.num_buckets as f64 * self.bucket_size as f64)
    }

    /// The level's false-positive bound: FORMAT.md §5 for a classic level (both buckets
    /// full), §5.1 for a stretch level (from its precision sum).
    pub fn expected_fpr(&self) -> f64 {
        if self.is_stretch() {
            let scale = 2f64.powi(1 - self.core_bits as i32 - 60);
            return (self.precision as f64 * scale).min(1.0);
        }
        let values = 2f64.powi(self.fingerprint_bits as i32) - 1.0;
        1.0 - (1.0 - 1.0 / values).powi(2 * self.bucket_size as i32)
    }

    /// The level's descriptor under FORMAT.md §5's names (`capacity` for a classic level,
    /// `key_count` for a stretch one, the other null), and what is derived from it.
    pub fn json(&self, k: usize) -> Value {
        json!({
            "item_count": self.item_count,
            "key_count": self.is_stretch().then_some(self.capacity),
            "core_bits": self.core_bits,
            "precision": self.precision,
            "copies": match self.copies {
                0 => "none",
                1 => "records",
                2 => "dense",
                _ => "unknown",
            },
            "region_len": self.region_len,
            "expected_fpr": self.expected_fpr(),
            "level": k,
            "layout": self.layout(),
            "encoding": self.encoding_name(),
            "bucket_size": self.bucket_size,
            "fingerprint_bits": self.fingerprint_bits,
            "num_buckets": self.num_buckets,
            "capacity": self.sized_for(),
            "items": self.keys(),
            "load_factor": self.load_factor(),
            "target_fpr": self.target_fpr,
            "region_offset": self.region_offset,
            "region_bytes": self.region_len,
            "bits_per_item": self.bits_per_item(),
        })
    }
}

pub fn encoding_name(code: u8) -> &'static str {
    match code {
        0 => "plain",
        1 => "packed",
        2 => "semi-sorted",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuckoo_sst::{Config, CuckooFilter, Encoding, ScalableCuckooFilter};

    #[test]
    fn reads_what_the_library_wrote() {
        let mut f = CuckooFilter::new(
            Config::new(1000)
                .seed(42)
                .encoding(Encoding::Packed)
                .fingerprint_bits(11),
        )
        .unwrap();
        for k in 0..700u32 {
            f.insert(&k.to_le_bytes()).unwrap();
        }
        let bytes = f.to_bytes();
        let h = Header::read(&bytes).unwrap();
        assert_eq!(h.version, 2);
        assert_eq!((h.chunk_bytes(), h.chunk_count), (Some(64 << 10), 1));
        let (a, b) = h.checksum_table_range();
        assert_eq!((a, b - a), (192, 64));
        assert_eq!(h.file_len, bytes.len() as u64);
        assert!(!h.growable());
        assert_eq!((h.seed, h.item_count, h.hash), (42, 700, 1));
        assert_eq!(h.max_kicks, f.max_kicks());
        assert_eq!(h.levels.len(), 1);
        let l = &h.levels[0];
        assert_eq!(l.layout(), format!("packed b={} f=11", f.bucket_size()));
        assert_eq!(l.num_buckets, f.num_buckets() as u64);
        assert_eq!(l.capacity, 1000, "the items it was sized for");
        assert_eq!((l.sized_for(), l.keys()), (Some(1000), 700));
        assert!(!l.is_stretch());
        assert_eq!(l.item_count, 700);
        assert_eq!(l.region_offset % 64, 0);
        assert!(l.region_offset + l.region_len <= bytes.len() as u64);
        assert!((l.load_factor() - f.load_factor()).abs() < 1e-12);
        // Too short for the level table it announces.
        assert!(Header::read(&bytes[..150]).is_none());
    }

    #[test]
    fn reads_a_chain() {
        let mut c = ScalableCuckooFilter::new(Config::new(100).bucket_size(2)).unwrap();
        for k in 0..1000u32 {
            c.insert(&k.to_le_bytes()).unwrap();
        }
        let bytes = c.to_bytes();
        let h = Header::read(&bytes).unwrap();
        assert!(h.growable());
        assert_eq!(h.levels.len(), c.levels());
        assert_eq!(h.chain_bucket_size, 2);
        assert!(h.growth_factor > 1.0);
        // Stretch levels: their keys add up to the header's, and have no fixed capacity.
        assert_eq!(h.version, 3);
        assert!(
            h.levels
                .iter()
                .all(|l| l.is_stretch() && l.sized_for().is_none())
        );
        assert_eq!(h.levels.iter().map(Level::keys).sum::<u64>(), h.item_count);
        assert_eq!(h.item_count, c.len() as u64);
        for (k, l) in h.levels.iter().enumerate() {
            let view = c.level(k).unwrap();
            assert_eq!((l.core_bits, l.keys()), (5, view.len() as u64));
            assert!(l.item_count >= l.keys(), "occupied slots, copies included");
        }
    }
}
