//! Copies counted on a stretch level's entries (FORMAT.md §3.5). A key inserted again adds one
//! to an entry that answers for it instead of taking a slot, so that a key inserted many times
//! holds one slot of its pair and never fills the pair against other keys. An entry `(j, v)` —
//! value `v` in bucket `j` — stands for `r + e` copies, `r` the slots of `j` that hold `v` and
//! `e` the copies it counts, at most `r · (2b − 1)`.
//!
//! In memory the counts are a map from `(j, v)` to `e`; in a file, whichever is smaller of a
//! sorted list of records and a dense field of `log2(2b)` bits per slot.

use crate::table::{Codec, Geometry, with_codec};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// FORMAT.md §3.5: the encodings of a level's copies (level descriptor byte 52).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CopiesEncoding {
    /// No copies counted: no copies region.
    None,
    /// A count of records, then records `(bucket, value, copies)` sorted by bucket and value.
    Records,
    /// One field of `log2(2b)` bits per slot, in each bucket's ascending value order.
    Dense,
}

impl CopiesEncoding {
    /// The code stored in the level descriptor.
    pub(crate) const fn code(self) -> u8 {
        match self {
            CopiesEncoding::None => 0,
            CopiesEncoding::Records => 1,
            CopiesEncoding::Dense => 2,
        }
    }

    /// The encoding of a code, if it names one.
    pub(crate) const fn from_code(code: u8) -> Option<CopiesEncoding> {
        match code {
            0 => Some(CopiesEncoding::None),
            1 => Some(CopiesEncoding::Records),
            2 => Some(CopiesEncoding::Dense),
            _ => None,
        }
    }
}

/// Bytes of one record: bucket, value and copies, each a little-endian `u32`.
pub(crate) const RECORD_LEN: usize = 12;
/// Bytes before the records: their number, a little-endian `u64`.
const RECORDS_HEAD: usize = 8;

/// The most copies one slot counts: `2b − 1`, so that a slot and its count hold the `2b`
/// copies a key may have.
#[inline]
pub(crate) const fn per_slot(b: u32) -> u32 {
    2 * b - 1
}

/// Bits of a dense field: `log2(2b)`, enough for `0 ..= 2b − 1`.
#[inline]
pub(crate) const fn field_bits(b: u32) -> u32 {
    (2 * b).trailing_zeros()
}

/// Bytes of a copies region of `records` records (FORMAT.md §3.5), padded to 64.
pub(crate) const fn records_len(records: usize) -> usize {
    (RECORDS_HEAD + RECORD_LEN * records).next_multiple_of(64)
}

/// Bytes of a dense copies region of a level of geometry `geo`, padded to 64.
pub(crate) fn dense_len(geo: &Geometry) -> usize {
    let bits = geo.num_buckets() as u128
        * u128::from(geo.bucket_size())
        * u128::from(field_bits(geo.bucket_size()));
    (bits.div_ceil(8) as usize).next_multiple_of(64)
}

/// A hasher for the map's `u64` keys (FORMAT.md §2's `fmix64`): deterministic, and enough
/// for keys that are a bucket and a value.
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = crate::hash::fmix64(self.0 ^ u64::from(b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = crate::hash::fmix64(self.0 ^ x);
    }
}

/// The map key of entry `v` of bucket `j`.
#[inline]
const fn key(j: u64, v: u32) -> u64 {
    j << 32 | v as u64
}

/// The map of [`Copies`].
type Map = HashMap<u64, u32, BuildHasherDefault<KeyHasher>>;

/// The copies a level's entries count: `(bucket, value) → e ≥ 1`. The map is boxed and made
/// at the first count: a level without copies (most) keeps two words for them (a chain read
/// from a file keeps state per level, which FORMAT.md §4's 128 levels bound).
#[derive(Clone, Default)]
pub(crate) struct Copies {
    map: Option<Box<Map>>,
    /// `Σ e`.
    total: u64,
}

impl PartialEq for Copies {
    /// The same counts (a map emptied by removes equals none).
    fn eq(&self, other: &Self) -> bool {
        self.total == other.total
            && self.records() == other.records()
            && self
                .map
                .iter()
                .flat_map(|m| m.iter())
                .all(|(&k, &e)| other.get(k >> 32, k as u32) == e)
    }
}

impl Eq for Copies {}

impl std::fmt::Debug for Copies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Copies")
            .field("records", &self.records())
            .field("total", &self.total)
            .finish()
    }
}

impl Copies {
    /// Whether no entry counts a copy.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.map.as_ref().is_none_or(|m| m.is_empty())
    }

    /// Entries that count copies.
    pub(crate) fn records(&self) -> usize {
        self.map.as_ref().map_or(0, |m| m.len())
    }

    /// The copies counted, `Σ e`.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// The copies entry `v` of bucket `j` counts.
    #[inline]
    pub(crate) fn get(&self, j: u64, v: u32) -> u32 {
        match &self.map {
            Some(m) => m.get(&key(j, v)).copied().unwrap_or(0),
            None => 0,
        }
    }

    /// Sets the copies entry `v` of bucket `j` counts (0 forgets it).
    pub(crate) fn set(&mut self, j: u64, v: u32, e: u32) {
        let old = if e == 0 {
            self.map.as_mut().and_then(|m| m.remove(&key(j, v)))
        } else {
            self.map.get_or_insert_default().insert(key(j, v), e)
        };
        self.total = self.total - u64::from(old.unwrap_or(0)) + u64::from(e);
    }

    /// Adds `n` to the copies entry `v` of bucket `j` counts.
    pub(crate) fn add(&mut self, j: u64, v: u32, n: u32) {
        if n > 0 {
            let e = self.get(j, v) + n;
            self.set(j, v, e);
        }
    }

    /// Removes and returns the copies entry `v` of bucket `j` counts.
    pub(crate) fn take(&mut self, j: u64, v: u32) -> u32 {
        let e = self.get(j, v);
        if e > 0 {
            self.set(j, v, 0);
        }
        e
    }

    /// Every `(bucket, value, copies)`, sorted by bucket and value.
    pub(crate) fn sorted(&self) -> Vec<(u64, u32, u32)> {
        let mut all: Vec<(u64, u32, u32)> = self
            .map
            .iter()
            .flat_map(|m| m.iter())
            .map(|(&k, &e)| (k >> 32, k as u32, e))
            .collect();
        all.sort_unstable();
        all
    }

    /// The encoding a file uses for these copies in a level of geometry `geo`: none when
    /// there are none, else the smaller of records and dense fields (records when equal).
    pub(crate) fn encoding(&self, geo: &Geometry) -> CopiesEncoding {
        if self.is_empty() {
            CopiesEncoding::None
        } else if records_len(self.records()) <= dense_len(geo) {
            CopiesEncoding::Records
        } else {
            CopiesEncoding::Dense
        }
    }

    /// Bytes of the copies region of a level of geometry `geo`.
    pub(crate) fn encoded_len(&self, geo: &Geometry) -> usize {
        match self.encoding(geo) {
            CopiesEncoding::None => 0,
            CopiesEncoding::Records => records_len(self.records()),
            CopiesEncoding::Dense => dense_len(geo),
        }
    }

    /// At most the bytes of the copies region of a level of geometry `geo` once `more` records
    /// are added (a count on an entry that had none, a split of entries with none left).
    pub(crate) fn encoded_len_with(&self, more: usize, geo: &Geometry) -> usize {
        match self.records() + more {
            0 => 0,
            n => records_len(n).min(dense_len(geo)),
        }
    }

    /// The copies region (FORMAT.md §3.5) of a level of geometry `geo` whose bucket region is
    /// `table`.
    pub(crate) fn encode(&self, geo: &Geometry, table: &[u8]) -> Vec<u8> {
        let mut out = vec![0u8; self.encoded_len(geo)];
        match self.encoding(geo) {
            CopiesEncoding::None => {}
            CopiesEncoding::Records => {
                let all = self.sorted();
                out[..RECORDS_HEAD].copy_from_slice(&(all.len() as u64).to_le_bytes());
                for (r, &(j, v, e)) in all.iter().enumerate() {
                    let at = RECORDS_HEAD + RECORD_LEN * r;
                    out[at..at + 4].copy_from_slice(&(j as u32).to_le_bytes());
                    out[at + 4..at + 8].copy_from_slice(&v.to_le_bytes());
                    out[at + 8..at + 12].copy_from_slice(&e.to_le_bytes());
                }
            }
            CopiesEncoding::Dense => {
                let b = geo.bucket_size();
                let (fb, cap) = (field_bits(b), per_slot(b));
                let all = self.sorted();
                let mut at = 0;
                while at < all.len() {
                    let j = all[at].0;
                    let mut values = with_codec!(geo.layout(), c => c.read(table, j));
                    let values = &mut values[..b as usize];
                    values.sort_unstable_by_key(|&v| (v == 0, v));
                    while at < all.len() && all[at].0 == j {
                        let (_, v, mut e) = all[at];
                        let first = values.iter().position(|&x| x == v).unwrap_or(0);
                        let run = values[first..].iter().take_while(|&&x| x == v).count();
                        for k in first..first + run {
                            if e == 0 {
                                break;
                            }
                            let f = e.min(cap);
                            write_bits(
                                &mut out,
                                (j * u64::from(b) + k as u64) * u64::from(fb),
                                fb,
                                f,
                            );
                            e -= f;
                        }
                        at += 1;
                    }
                }
            }
        }
        out
    }

    /// The copies of a copies region `bytes` in `encoding` of a level of geometry `geo` whose
    /// bucket region is `table` (already checked), each checked (FORMAT.md §7 step 8): what
    /// is wrong, if anything.
    pub(crate) fn decode(
        geo: &Geometry,
        table: &[u8],
        encoding: CopiesEncoding,
        bytes: &[u8],
    ) -> std::result::Result<Copies, String> {
        let b = geo.bucket_size();
        let cap = per_slot(b);
        let slots_of = |j: u64, v: u32| -> u32 {
            with_codec!(geo.layout(), c => {
                c.read(table, j)[..b as usize].iter().filter(|&&x| x == v).count() as u32
            })
        };
        let mut copies = Copies::default();
        match encoding {
            CopiesEncoding::None => {
                if !bytes.is_empty() {
                    return Err(format!(
                        "{} bytes of copies, but no copies encoding",
                        bytes.len()
                    ));
                }
            }
            CopiesEncoding::Records => {
                let head = bytes.get(..RECORDS_HEAD).ok_or("no record count")?;
                let n = u64::from_le_bytes(head.try_into().map_err(|_| "no record count")?);
                if n == 0 {
                    return Err("a records encoding with no record".into());
                }
                let expected = usize::try_from(n)
                    .ok()
                    .filter(|&n| n <= (bytes.len() - RECORDS_HEAD) / RECORD_LEN)
                    .map(records_len);
                if expected != Some(bytes.len()) {
                    return Err(format!(
                        "{n} records, but the copies region is {} bytes",
                        bytes.len()
                    ));
                }
                let n = n as usize;
                let body = &bytes[RECORDS_HEAD..];
                let mut last: Option<(u64, u32)> = None;
                for r in 0..n {
                    let rec = &body[RECORD_LEN * r..RECORD_LEN * (r + 1)];
                    let word =
                        |i: usize| u32::from_le_bytes([rec[i], rec[i + 1], rec[i + 2], rec[i + 3]]);
                    let (j, v, e) = (u64::from(word(0)), word(4), word(8));
                    if j >= geo.num_buckets() {
                        return Err(format!("record {r}: bucket {j} of {}", geo.num_buckets()));
                    }
                    if last.is_some_and(|l| l >= (j, v)) {
                        return Err(format!("record {r}: not after the one before"));
                    }
                    last = Some((j, v));
                    let slots = if v == 0 { 0 } else { slots_of(j, v) };
                    if slots == 0 {
                        return Err(format!("record {r}: bucket {j} holds no entry {v:#x}"));
                    }
                    if e == 0 || e > slots * cap {
                        return Err(format!(
                            "record {r}: {e} copies on {slots} slot(s), at most {} each",
                            cap
                        ));
                    }
                    copies.set(j, v, e);
                }
                if body[RECORD_LEN * n..].iter().any(|&x| x != 0) {
                    return Err("nonzero padding after the records".into());
                }
            }
            CopiesEncoding::Dense => {
                if bytes.len() != dense_len(geo) {
                    return Err(format!(
                        "a dense copies region of {} bytes, not {}",
                        bytes.len(),
                        dense_len(geo)
                    ));
                }
                let fb = field_bits(b);
                let used = geo.num_buckets() * u64::from(b) * u64::from(fb);
                for j in 0..geo.num_buckets() {
                    let mut values = with_codec!(geo.layout(), c => c.read(table, j));
                    let values = &mut values[..b as usize];
                    values.sort_unstable_by_key(|&v| (v == 0, v));
                    let mut k = 0;
                    while k < b as usize {
                        let v = values[k];
                        let run = values[k..].iter().take_while(|&&x| x == v).count();
                        let mut e = 0;
                        let mut short = false;
                        for i in k..k + run {
                            let f =
                                read_bits(bytes, (j * u64::from(b) + i as u64) * u64::from(fb), fb);
                            if v == 0 && f != 0 {
                                return Err(format!("bucket {j}: copies on an empty slot"));
                            }
                            if f > cap || (short && f != 0) {
                                return Err(format!(
                                    "bucket {j}: copies of {v:#x} not packed from its first slot"
                                ));
                            }
                            short |= f < cap;
                            e += f;
                        }
                        if e > 0 {
                            copies.set(j, v, e);
                        }
                        k += run;
                    }
                }
                let tail = used.div_ceil(8) as usize;
                let partial = used % 8;
                if partial != 0 && bytes[tail - 1] >> partial != 0
                    || bytes[tail..].iter().any(|&x| x != 0)
                {
                    return Err("nonzero padding after the dense copies".into());
                }
                if copies.is_empty() {
                    return Err("a dense encoding with no copies".into());
                }
            }
        }
        if copies.encoding(geo) != encoding {
            return Err(format!(
                "{} records in the {:?} encoding, where the writer uses {:?}",
                copies.records(),
                encoding,
                copies.encoding(geo)
            ));
        }
        Ok(copies)
    }
}

/// The copies counted by the entries answering for the key with seeded hash `h` in its two
/// buckets of a stretch level of geometry `geo` whose bucket region is `table`: `get(j, v)`
/// for each distinct answering value `v` of each bucket `j`.
pub(crate) fn answering_sum(
    geo: &Geometry,
    table: &[u8],
    h: u64,
    get: impl Fn(u64, u32) -> u32,
) -> u64 {
    let Some(slots) = geo.stretch_slots() else {
        return 0;
    };
    let p = crate::hash::stretch::locate(geo.split(), slots, h);
    let b = geo.bucket_size() as usize;
    let mut n = 0;
    for (bucket, q) in [(p.i1, p.q1), (p.i2, p.q2)] {
        let entries = with_codec!(geo.layout(), c => c.read(table, bucket));
        for (k, &v) in entries[..b].iter().enumerate() {
            if crate::hash::stretch::matches(v, q) && !entries[..k].contains(&v) {
                n += u64::from(get(bucket, v));
            }
        }
    }
    n
}

/// The copies entry `v` of bucket `j` counts, read from the copies region `bytes` (in
/// `encoding`) of a level of geometry `geo` whose bucket region is `table`, without decoding
/// the region: what a mapped file's `count` reads. Bytes [`Copies::decode`] has not checked
/// may give a wrong count, never a panic.
pub(crate) fn counted_in(
    geo: &Geometry,
    table: &[u8],
    encoding: CopiesEncoding,
    bytes: &[u8],
    j: u64,
    v: u32,
) -> u32 {
    match encoding {
        CopiesEncoding::None => 0,
        CopiesEncoding::Records => {
            let n = bytes
                .get(..RECORDS_HEAD)
                .and_then(|h| h.try_into().ok())
                .map_or(0, u64::from_le_bytes);
            let n =
                (n.min(((bytes.len().saturating_sub(RECORDS_HEAD)) / RECORD_LEN) as u64)) as usize;
            let record = |r: usize| {
                let at = RECORDS_HEAD + RECORD_LEN * r;
                let word = |i: usize| {
                    u32::from_le_bytes([
                        bytes[at + i],
                        bytes[at + i + 1],
                        bytes[at + i + 2],
                        bytes[at + i + 3],
                    ])
                };
                ((u64::from(word(0)), word(4)), word(8))
            };
            let (mut lo, mut hi) = (0, n);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                let (k, e) = record(mid);
                match k.cmp(&(j, v)) {
                    std::cmp::Ordering::Less => lo = mid + 1,
                    std::cmp::Ordering::Greater => hi = mid,
                    std::cmp::Ordering::Equal => return e,
                }
            }
            0
        }
        CopiesEncoding::Dense => {
            let b = geo.bucket_size();
            if j >= geo.num_buckets() || bytes.len() != dense_len(geo) {
                return 0;
            }
            let fb = field_bits(b);
            let mut values = with_codec!(geo.layout(), c => c.read(table, j));
            let values = &mut values[..b as usize];
            values.sort_unstable_by_key(|&x| (x == 0, x));
            values
                .iter()
                .enumerate()
                .filter(|&(_, &x)| x == v && v != 0)
                .map(|(k, _)| read_bits(bytes, (j * u64::from(b) + k as u64) * u64::from(fb), fb))
                .sum()
        }
    }
}

/// Writes the `n`-bit field `f` at bit `at` of `out` (little-endian bit order).
fn write_bits(out: &mut [u8], at: u64, n: u32, f: u32) {
    for i in 0..u64::from(n) {
        let p = at + i;
        if f >> i & 1 != 0 {
            out[(p / 8) as usize] |= 1 << (p % 8);
        }
    }
}

/// The `n`-bit field at bit `at` of `bytes`.
fn read_bits(bytes: &[u8], at: u64, n: u32) -> u32 {
    (0..u64::from(n)).fold(0, |f, i| {
        let p = at + i;
        f | u32::from(bytes[(p / 8) as usize] >> (p % 8) & 1) << i
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::Encoding;

    /// A stretch level's geometry of `m` packed buckets of `b` slots of 14 bits, core 5, and
    /// its bucket region with `buckets` (bucket, values) written.
    fn level(m: u64, b: u32, buckets: &[(u64, &[u32])]) -> (Geometry, Vec<u8>) {
        let geo = Geometry::stretch(m, b, 14, Encoding::Packed, 5).unwrap();
        let mut table = vec![0u8; geo.table_bytes()];
        for &(j, values) in buckets {
            let mut s = [0u32; 8];
            s[..values.len()].copy_from_slice(values);
            with_codec!(geo.layout(), c => c.store_all(&mut table, j, &s));
        }
        (geo, table)
    }

    /// FORMAT.md §3.5's worked example, byte for byte: records (which the writer picks, the
    /// lengths being equal), and the dense form of the same copies.
    #[test]
    fn the_worked_example_of_format_md_holds() {
        let (geo, table) = level(3, 4, &[(1, &[0x0A1, 0x2D5, 0x3F3])]);
        let mut c = Copies::default();
        c.add(1, 0x2D5, 2);
        assert_eq!((records_len(1), dense_len(&geo)), (64, 64));
        assert_eq!(c.encoding(&geo), CopiesEncoding::Records);
        let bytes = c.encode(&geo, &table);
        let mut want = vec![0u8; 64];
        want[..20].copy_from_slice(&[
            1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0xD5, 2, 0, 0, 2, 0, 0, 0,
        ]);
        assert_eq!(bytes, want);
        assert_eq!(
            Copies::decode(&geo, &table, CopiesEncoding::Records, &bytes).unwrap(),
            c
        );
        // Dense: field 1·4 + 1 = 5, bits 15..18, holds 2 — byte 2 is 1.
        let mut dense = vec![0u8; 64];
        write_bits(&mut dense, 15, 3, 2);
        assert_eq!(&dense[..3], &[0, 0, 1]);
        assert_eq!(read_bits(&dense, 15, 3), 2);
        // Equal lengths: a reader refuses the encoding the writer would not pick.
        assert!(Copies::decode(&geo, &table, CopiesEncoding::Dense, &dense).is_err());
    }

    /// Dense fields follow each bucket's values in ascending order, and a value held by several
    /// slots has its copies packed from its first field: `2b − 1` in each, the rest in the
    /// next. Encoded and decoded back, every layout of copies is the same; fields off that
    /// form are refused.
    #[test]
    fn dense_fields_follow_sorted_values_and_pack_a_values_copies() {
        // Enough records that dense fields are smaller: 40 buckets, records in each.
        let m = 40;
        let buckets: Vec<(u64, Vec<u32>)> = (0..m)
            .map(|j| (j, vec![0x3F1, 0x0A1, 0x3F1, 0x2D5]))
            .collect();
        let refs: Vec<(u64, &[u32])> = buckets.iter().map(|(j, v)| (*j, v.as_slice())).collect();
        let (geo, table) = level(m, 4, &refs);
        let mut c = Copies::default();
        for j in 0..m {
            c.add(j, 0x3F1, 9); // two slots: 7 in the first field, 2 in the next
            c.add(j, 0x0A1, 1);
        }
        assert_eq!(c.encoding(&geo), CopiesEncoding::Dense);
        let bytes = c.encode(&geo, &table);
        assert_eq!(bytes.len(), dense_len(&geo));
        // Bucket 0's values sorted: 0x0A1, 0x2D5, 0x3F1, 0x3F1.
        let fields: Vec<u32> = (0..4).map(|i| read_bits(&bytes, i * 3, 3)).collect();
        assert_eq!(fields, [1, 0, 7, 2]);
        let back = Copies::decode(&geo, &table, CopiesEncoding::Dense, &bytes).unwrap();
        assert_eq!(back, c);
        assert_eq!(back.get(5, 0x3F1), 9);
        // Off the packed form: 6 and 3 for 0x3F1's 9.
        let mut off = bytes.clone();
        for (i, f) in [(2, 6), (3, 3)] {
            for bit in 0..3 {
                let p = i * 3 + bit;
                off[(p / 8) as usize] &= !(1 << (p % 8));
            }
            write_bits(&mut off, i * 3, 3, f);
        }
        assert!(Copies::decode(&geo, &table, CopiesEncoding::Dense, &off).is_err());
        // A count on an empty slot of a bucket that has one.
        let (geo2, table2) = level(m, 4, &refs[..39]);
        let mut empty = bytes.clone();
        write_bits(&mut empty, 39 * 4 * 3, 3, 1);
        assert!(Copies::decode(&geo2, &table2, CopiesEncoding::Dense, &empty).is_err());
    }

    /// A record may count up to `r · (2b − 1)` copies on a value held by `r` slots, no more;
    /// records name a value their bucket holds, in order, once each.
    #[test]
    fn records_are_checked_against_their_buckets() {
        let (geo, table) = level(64, 4, &[(3, &[0x2D5, 0x2D5]), (9, &[0x0A1])]);
        let record = |j: u32, v: u32, e: u32| {
            let mut r = j.to_le_bytes().to_vec();
            r.extend_from_slice(&v.to_le_bytes());
            r.extend_from_slice(&e.to_le_bytes());
            r
        };
        let region = |records: &[Vec<u8>]| {
            let mut b = (records.len() as u64).to_le_bytes().to_vec();
            for r in records {
                b.extend_from_slice(r);
            }
            b.resize(records_len(records.len()), 0);
            b
        };
        let ok = region(&[record(3, 0x2D5, 14), record(9, 0x0A1, 7)]);
        let c = Copies::decode(&geo, &table, CopiesEncoding::Records, &ok).unwrap();
        assert_eq!((c.get(3, 0x2D5), c.get(9, 0x0A1), c.total()), (14, 7, 21));
        assert_eq!(c.encode(&geo, &table), ok);
        for bad in [
            region(&[record(3, 0x2D5, 15)]),                     // past 2 · 7
            region(&[record(9, 0x0A1, 8)]),                      // past 7
            region(&[record(9, 0x0A1, 1), record(3, 0x2D5, 1)]), // out of order
            region(&[record(3, 0x2D5, 1), record(3, 0x2D5, 1)]), // twice
            region(&[record(4, 0x2D5, 1)]),                      // not in bucket 4
            region(&[record(64, 0x2D5, 1)]),                     // past the buckets
            region(&[record(3, 0x2D5, 0)]),                      // no copies
            region(&[record(3, 0, 1)]),                          // an empty slot
        ] {
            assert!(Copies::decode(&geo, &table, CopiesEncoding::Records, &bad).is_err());
        }
        // Padding, and lengths.
        let mut padded = ok.clone();
        padded[40] = 1;
        assert!(Copies::decode(&geo, &table, CopiesEncoding::Records, &padded).is_err());
        assert!(Copies::decode(&geo, &table, CopiesEncoding::Records, &ok[..32]).is_err());
        assert!(Copies::decode(&geo, &table, CopiesEncoding::None, &ok).is_err());
        // Read in place as decoded.
        for (j, v) in [(3, 0x2D5), (9, 0x0A1), (3, 0x0A1), (63, 1)] {
            assert_eq!(
                counted_in(&geo, &table, CopiesEncoding::Records, &ok, j, v),
                c.get(j, v)
            );
        }
    }

    /// The map: adds, sets, takes and totals; an emptied map equals none.
    #[test]
    fn the_map_counts_and_empties() {
        let mut c = Copies::default();
        assert!(c.is_empty());
        c.add(1, 5, 2);
        c.add(1, 5, 1);
        c.add(2, 7, 0);
        assert_eq!((c.get(1, 5), c.records(), c.total()), (3, 1, 3));
        assert_eq!(c.take(1, 5), 3);
        assert_eq!((c.records(), c.total()), (0, 0));
        assert_eq!(c, Copies::default());
        assert_eq!(format!("{c:?}"), "Copies { records: 0, total: 0 }");
        let mut h = KeyHasher::default();
        h.write(&[1, 2]);
        assert_ne!(h.finish(), 0);
    }

    /// Two maps are equal when they count the same copies on the same entries: an extra entry
    /// (either way round), the same total spread otherwise, or the same count on another value
    /// or bucket makes them differ.
    #[test]
    fn copies_compare_by_entry_and_count() {
        let mut one = Copies::default();
        one.add(1, 5, 3);
        let mut more = one.clone();
        more.add(2, 7, 1);
        assert_ne!(one, more);
        assert_ne!(more, one);
        let mut spread = Copies::default();
        spread.add(1, 5, 2);
        spread.add(2, 5, 1);
        assert_ne!(one, spread);
        assert_ne!(spread, one);
        for (j, v) in [(1, 6), (2, 5), (0, 5)] {
            let mut other = Copies::default();
            other.add(j, v, 3);
            assert_ne!(one, other, "{j} {v}");
        }
        more.take(2, 7);
        assert_eq!(one, more);
    }

    /// FORMAT.md §3.5's lengths and codes: `2b − 1` copies a slot, `log2(2b)` bits a field,
    /// regions padded to 64 bytes, and the encoding the writer picks (records when at most the
    /// dense length), also for the records an insert or a split may still add.
    #[test]
    fn lengths_codes_and_the_writers_pick_follow_format_md() {
        assert_eq!((per_slot(2), per_slot(4), per_slot(8)), (3, 7, 15));
        assert_eq!((field_bits(2), field_bits(4), field_bits(8)), (2, 3, 4));
        let lens = [0, 1, 4, 5, 10, 11].map(records_len);
        assert_eq!(lens, [64, 64, 64, 128, 128, 192]);
        for e in [
            CopiesEncoding::None,
            CopiesEncoding::Records,
            CopiesEncoding::Dense,
        ] {
            assert_eq!(CopiesEncoding::from_code(e.code()), Some(e));
        }
        let codes = [0, 1, 2, 3].map(|c| CopiesEncoding::from_code(c).map(CopiesEncoding::code));
        assert_eq!(codes, [Some(0), Some(1), Some(2), None]);
        // 64 buckets of 4: 768 bits, 96 bytes, 128 padded; 200 of 8: 6400 bits, 800 bytes.
        let (geo, _) = level(64, 4, &[]);
        assert_eq!(dense_len(&geo), 128);
        let (wide, _) = level(200, 8, &[]);
        assert_eq!(dense_len(&wide), 832);
        let mut c = Copies::default();
        assert_eq!(
            (c.encoding(&geo), c.encoded_len(&geo)),
            (CopiesEncoding::None, 0)
        );
        let with = |c: &Copies| [0, 1, 4, 5, 40].map(|more| c.encoded_len_with(more, &geo));
        assert_eq!(with(&c), [0, 64, 64, 128, 128]);
        c.add(3, 0x2D5, 1);
        assert_eq!(with(&c), [64, 64, 128, 128, 128]);
        assert_eq!(
            (c.encoding(&geo), c.encoded_len(&geo)),
            (CopiesEncoding::Records, 64)
        );
        for j in 10..19 {
            c.add(j, 0x2D5, 1);
        }
        // 10 records: 128 bytes, the dense length too: records.
        assert_eq!(
            (c.encoding(&geo), c.encoded_len(&geo)),
            (CopiesEncoding::Records, 128)
        );
        c.add(20, 0x2D5, 1);
        assert_eq!(
            (c.encoding(&geo), c.encoded_len(&geo)),
            (CopiesEncoding::Dense, 128)
        );
        assert_eq!(c.encoded_len_with(0, &geo), 128);
    }

    /// Six records fill 128 bytes (the dense length of 64 buckets of 4, so records): decoded
    /// and read in place, each gives its count, and a key between two records none.
    #[test]
    fn a_region_of_six_records_is_read_in_place_and_decoded() {
        let buckets: Vec<(u64, &[u32])> =
            (0..6).map(|j| (7 * j + 1, &[0x2D5, 0x3F1][..])).collect();
        let (geo, table) = level(64, 4, &buckets);
        let mut c = Copies::default();
        for (i, &(j, _)) in buckets.iter().enumerate() {
            c.add(j, if i % 2 == 0 { 0x2D5 } else { 0x3F1 }, i as u32 + 1);
        }
        assert_eq!(c.encoding(&geo), CopiesEncoding::Records);
        let bytes = c.encode(&geo, &table);
        assert_eq!(bytes.len(), 128);
        let back = Copies::decode(&geo, &table, CopiesEncoding::Records, &bytes).unwrap();
        assert_eq!(back, c);
        for &(j, _) in &buckets {
            for v in [0x2D5, 0x3F1, 0x100, 0x3FF] {
                let got = counted_in(&geo, &table, CopiesEncoding::Records, &bytes, j, v);
                assert_eq!(got, c.get(j, v), "bucket {j} value {v:#x}");
            }
            assert_eq!(
                counted_in(&geo, &table, CopiesEncoding::Records, &bytes, j + 1, 0x2D5),
                0
            );
        }
    }

    /// Dense fields of five buckets of 4 (60 bits, then 4 padding bits in byte 7): a value held
    /// by three slots has its copies packed from the first field, `2b − 1` each, and nothing
    /// after a field short of that; empty slots (sorted last) count none. Padding bits and
    /// bytes must be zero. Read in place, fields give the decoded counts.
    #[test]
    fn dense_fields_of_a_value_in_three_slots_and_the_padding() {
        let (a, b) = (0x0A1, 0x2D5);
        let (p, q, r, s) = (0x111, 0x222, 0x333, 0x3AA);
        let (geo, table) = level(
            5,
            4,
            &[
                (0, &[b, a, a, a]),
                (1, &[p, q, r]),
                (2, &[s, r, q, p]),
                (3, &[p]),
                (4, &[p, q, r, s]),
            ],
        );
        let mut c = Copies::default();
        c.add(0, a, 15);
        for (j, v) in [(0, b), (1, p), (1, q), (1, r), (4, s)] {
            c.add(j, v, 1);
        }
        assert_eq!(c.encoding(&geo), CopiesEncoding::Dense);
        let bytes = c.encode(&geo, &table);
        let fields: Vec<u32> = (0..20).map(|i| read_bits(&bytes, i * 3, 3)).collect();
        assert_eq!(
            fields,
            [7, 7, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
        );
        let back = Copies::decode(&geo, &table, CopiesEncoding::Dense, &bytes).unwrap();
        assert_eq!(back, c);
        for (j, v) in [
            (0, a),
            (0, b),
            (1, p),
            (1, r),
            (2, s),
            (3, p),
            (4, s),
            (4, 0),
            (0, q),
        ] {
            assert_eq!(
                counted_in(&geo, &table, CopiesEncoding::Dense, &bytes, j, v),
                c.get(j, v),
                "bucket {j} value {v:#x}"
            );
        }
        // Past the buckets, or a region of another length: no copies (and no panic).
        for (j, len) in [(5, 64), (1 << 40, 64), (0, 63)] {
            assert_eq!(
                counted_in(&geo, &table, CopiesEncoding::Dense, &bytes[..len], j, a),
                0
            );
        }
        let with_fields = |fields: [u32; 3]| {
            let mut off = bytes.clone();
            for (i, f) in fields.into_iter().enumerate() {
                for bit in 0..3 {
                    let at = i * 3 + bit;
                    off[at / 8] &= !(1 << (at % 8));
                }
                write_bits(&mut off, i as u64 * 3, 3, f);
            }
            off
        };
        assert_eq!(with_fields([7, 7, 1]), bytes);
        for f in [[3, 0, 1], [0, 0, 1], [7, 1, 7], [7, 0, 7], [6, 7, 2]] {
            let off = with_fields(f);
            assert!(
                Copies::decode(&geo, &table, CopiesEncoding::Dense, &off).is_err(),
                "{f:?}"
            );
        }
        for (byte, bit) in [(7, 4), (7, 7), (8, 0), (63, 7)] {
            let mut padded = bytes.clone();
            padded[byte] |= 1 << bit;
            assert!(
                Copies::decode(&geo, &table, CopiesEncoding::Dense, &padded).is_err(),
                "byte {byte} bit {bit}"
            );
        }
    }

    /// Records read in place from bytes no decoder checked: a count past the region, or no
    /// count at all, gives some count and never a panic.
    #[test]
    fn records_read_in_place_from_unchecked_bytes_do_not_panic() {
        let (geo, table) = level(64, 4, &[(3, &[0x2D5])]);
        let mut c = Copies::default();
        c.add(3, 0x2D5, 5);
        let ok = c.encode(&geo, &table);
        let mut huge = ok.clone();
        huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        for bytes in [&ok[..], &huge[..], &ok[..20], &ok[..8], &ok[..3], &[][..]] {
            for (j, v) in [(3, 0x2D5), (0, 0), (63, u32::MAX), (u64::from(u32::MAX), 1)] {
                let _ = counted_in(&geo, &table, CopiesEncoding::Records, bytes, j, v);
            }
        }
        let at = |bytes: &[u8]| counted_in(&geo, &table, CopiesEncoding::Records, bytes, 3, 0x2D5);
        assert_eq!(
            (at(&ok), at(&ok[..20]), at(&ok[..19]), at(&ok[..3])),
            (5, 5, 0, 0)
        );
        assert_eq!(
            counted_in(&geo, &table, CopiesEncoding::None, &ok, 3, 0x2D5),
            0
        );
    }
}
