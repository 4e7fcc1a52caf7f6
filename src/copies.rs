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
                        for k in first..b as usize {
                            if e == 0 || values[k] != v {
                                break;
                            }
                            let f = e.min(cap);
                            write_bits(&mut out, (j * u64::from(b) + k as u64) * u64::from(fb), fb, f);
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
                    return Err(format!("{} bytes of copies, but no copies encoding", bytes.len()));
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
                    let word = |i: usize| u32::from_le_bytes([rec[i], rec[i + 1], rec[i + 2], rec[i + 3]]);
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
                            let f = read_bits(bytes, (j * u64::from(b) + i as u64) * u64::from(fb), fb);
                            if v == 0 && f != 0 {
                                return Err(format!("bucket {j}: copies on an empty slot"));
                            }
                            if f > cap || (short && f != 0) {
                                return Err(format!("bucket {j}: copies of {v:#x} not packed from its first slot"));
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
            let n = (n.min(((bytes.len().saturating_sub(RECORDS_HEAD)) / RECORD_LEN) as u64)) as usize;
            let record = |r: usize| {
                let at = RECORDS_HEAD + RECORD_LEN * r;
                let word = |i: usize| {
                    u32::from_le_bytes([bytes[at + i], bytes[at + i + 1], bytes[at + i + 2], bytes[at + i + 3]])
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
