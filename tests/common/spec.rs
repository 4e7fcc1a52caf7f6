//! A reader written from FORMAT.md alone: it uses the crate for nothing, and none of the
//! crate's code was consulted to write it. It validates a file of version 1 to 4 by the
//! steps of §7, in their order, and names the first failure as the crate's error would be
//! named (`Corrupt(field)`, `Checksum(part)`, …, the form `tests/validation.rs` prints); it
//! answers lookups by §2.1 (classic levels) and §2.2 (stretch levels), reading slots by §3,
//! it lists a stretch level's entries with their precisions (§3.4, §5.1), and it reads the
//! copies a version-4 level counts (§3.5).
//!
//! Where FORMAT.md leaves a choice open the code says so at the place (search for
//! "FORMAT.md does not say").
#![allow(dead_code)]

use std::sync::OnceLock;

/// §1 / §4: the magic.
pub const MAGIC: [u8; 8] = *b"CUCKOSST";
/// §7 step 2: the newest version this reader knows.
pub const NEWEST: u32 = 4;

/// A level, as its descriptor (§5) says, with its region.
#[derive(Clone, Debug)]
pub struct Level<'a> {
    pub region_offset: u64,
    pub m: u64,
    pub item_count: u64,
    /// `capacity` of a classic level, `key_count` of a stretch level (bytes 32..40).
    pub capacity: u64,
    pub target_fpr: f64,
    pub b: u64,
    /// `f` of a classic level, the slot width `w` of a stretch level.
    pub f: u64,
    pub encoding: u8,
    /// 0: classic; 4..=8: stretch.
    pub core_bits: u64,
    pub precision: u64,
    /// The bucket region (§3).
    pub region: &'a [u8],
    /// Version 4: the copies encoding (§3.5: 0 none, 1 records, 2 dense) and region.
    pub copies_encoding: u8,
    pub copies: &'a [u8],
    /// The whole region, buckets then copies (what the chunks cover, §6).
    pub whole: &'a [u8],
}

/// A file that passed §7.
#[derive(Clone, Debug)]
pub struct File<'a> {
    pub version: u32,
    pub chain: bool,
    pub seed: u64,
    pub item_count: u64,
    pub levels: Vec<Level<'a>>,
}

/// An entry of a stretch level (§3.4): where it is, its value, its bucket's address length
/// `ℓ`, its number of continuation bits `L`, its precision `T = ℓ + L`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub bucket: u64,
    pub value: u64,
    pub ell: u64,
    pub cont: u64,
    pub precision: u64,
}

fn corrupt(field: impl std::fmt::Display) -> String {
    format!("Corrupt({field})")
}

fn crc(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// §4, §5: little-endian fields.
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

fn f64_at(b: &[u8], o: usize) -> f64 {
    f64::from_bits(u64_at(b, o))
}

/// In (0, 1), NaN excluded.
fn open_unit(x: f64) -> bool {
    x > 0.0 && x < 1.0
}

/// §3: `used_len` in bits and `region_len` in bytes of `m` buckets of `b` slots of `f` bits in
/// `encoding` (checked arithmetic; `None` on overflow).
fn lengths(m: u64, b: u64, f: u64, encoding: u8) -> Option<(u64, u64)> {
    match encoding {
        0 => {
            let bucket = b.checked_mul(f / 8)?;
            let used = m.checked_mul(bucket)?;
            Some((used.checked_mul(8)?, used.div_ceil(64).checked_mul(64)?))
        }
        1 | 2 => {
            let bits = if encoding == 1 {
                m.checked_mul(b)?.checked_mul(f)?
            } else {
                m.checked_mul(4 * f - 4)?
            };
            let used = bits.div_ceil(8);
            Some((bits, used.checked_add(16)?.div_ceil(64).checked_mul(64)?))
        }
        _ => None,
    }
}

/// §3: the `region_len` of a level of `m` buckets of `b` slots of `f` bits in `encoding`.
pub fn region_len(m: u64, b: u64, f: u64, encoding: u8) -> u64 {
    lengths(m, b, f, encoding).expect("a supported encoding").1
}

/// §1, §4, §5, §6: the length of a version-2 or -3 file whose levels' regions are
/// `region_lens` long, written with `chunk_shift` 16 (§8): the header, a descriptor per level,
/// the checksum table (one entry per 64 KiB chunk of each region, padded to a multiple of 64
/// bytes), the regions.
pub fn file_len(region_lens: &[u64]) -> u64 {
    let chunks: u64 = region_lens.iter().map(|r| r.div_ceil(1 << 16)).sum();
    let table = (4 * chunks).div_ceil(64) * 64;
    128 + 64 * region_lens.len() as u64 + table + region_lens.iter().sum::<u64>()
}

/// §3.1–§3.3: whether an encoding holds `f`-bit values in buckets of `b`.
/// FORMAT.md does not say which field is named when a semi-sorted level (§3.3: `b` = 4) has
/// buckets of 2 or 8 — §7 step 6.4 checks `bucket_size` ∈ {2, 4, 8} and then that
/// `fingerprint_bits` "is supported by the encoding"; this reader names `fingerprint_bits`
/// (reported with a proposed wording).
fn supported(f: u64, b: u64, encoding: u8) -> bool {
    match encoding {
        0 => matches!(f, 8 | 16 | 32),
        1 => (7..=32).contains(&f),
        2 => (7..=32).contains(&f) && b == 4,
        _ => false,
    }
}

/// Steps 1–8 of §7: the file, or the first failure.
pub fn read(file: &[u8]) -> Result<File<'_>, String> {
    let f = read_unverified(file)?;
    check_regions(file, &f)?;
    Ok(f)
}

/// Steps 1–7 of §7.
pub fn read_unverified(file: &[u8]) -> Result<File<'_>, String> {
    let n = file.len() as u64;
    // Step 1.
    if file.len() >= 8 && file[..8] != MAGIC {
        return Err("BadMagic".into());
    }
    if file.len() < 128 {
        // FORMAT.md does not say, for a file of 9 to 127 bytes, which of "its bytes" are
        // compared with "the start of magic" (all of them cannot be): its first 8, which the
        // sentence before has already found to be the magic (reported with a wording).
        let head = file.len().min(8);
        if file[..head] != MAGIC[..head] {
            return Err("BadMagic".into());
        }
        return Err(format!("Truncated(128, {n})"));
    }
    // Step 2. (FORMAT.md does not say whether a version-3 file must hold a stretch level;
    // §7 has no such check, so this reader accepts one without — reported.)
    let version = u32_at(file, 8);
    if version > NEWEST {
        return Err(format!("UnsupportedVersion({version}, {NEWEST})"));
    }
    if version == 0 {
        return Err(corrupt("version"));
    }
    // Step 3.
    if crc(&file[..124]) != u32_at(file, 124) {
        return Err("Checksum(header)".into());
    }
    // Step 4.
    if u32_at(file, 12) != 128 {
        return Err(corrupt("header_len"));
    }
    if u32_at(file, 32) != 1 {
        return Err(corrupt("hash"));
    }
    let reserved: &[std::ops::Range<usize>] = if version == 1 {
        &[76..80, 98..120]
    } else {
        &[76..80, 99..100, 112..120]
    };
    if reserved
        .iter()
        .any(|r| file[r.clone()].iter().any(|&x| x != 0))
    {
        return Err(corrupt("reserved"));
    }
    let flags = u32_at(file, 28);
    if flags & !1 != 0 {
        return Err(corrupt("flags"));
    }
    let chain = flags & 1 == 1;
    let level_count = u32_at(file, 24) as u64;
    if !(1..=128).contains(&level_count) {
        return Err(corrupt("level_count"));
    }
    if u32_at(file, 36) > 65536 {
        return Err(corrupt("max_kicks"));
    }
    let file_len = u64_at(file, 16);
    if 128 + 128 * level_count > file_len {
        return Err(corrupt("level_count"));
    }
    if file_len > n {
        return Err(format!("Truncated({file_len}, {n})"));
    }
    if file_len < n {
        return Err(format!("TrailingBytes({file_len}, {n})"));
    }
    if !open_unit(f64_at(file, 48)) {
        return Err(corrupt("target_fpr"));
    }
    if !chain {
        if level_count != 1 {
            return Err(corrupt("level_count"));
        }
        let chain_fields = [56..64, 64..72, 72..76, 80..88, 96..97, 97..98];
        if chain_fields
            .iter()
            .any(|r| file[r.clone()].iter().any(|&x| x != 0))
        {
            return Err(corrupt("chain fields"));
        }
    } else {
        let growth = f64_at(file, 56);
        if !(growth > 1.0 && growth <= 64.0) {
            return Err(corrupt("growth_factor"));
        }
        if !open_unit(f64_at(file, 64)) {
            return Err(corrupt("tightening"));
        }
        let max_levels = u32_at(file, 72) as u64;
        if max_levels != 0 && !(level_count..=128).contains(&max_levels) {
            return Err(corrupt("max_levels"));
        }
        if !matches!(file[96], 0 | 2 | 4 | 8) {
            return Err(corrupt("chain_bucket_size"));
        }
        if file[97] > 3 || (file[97] == 3 && matches!(file[96], 2 | 8)) {
            return Err(corrupt("chain_encoding"));
        }
    }
    let (shift, chunks) = (file[98] as u32, u64_at(file, 104));
    let table_len = if version == 1 {
        0
    } else {
        if !(12..=24).contains(&shift) {
            return Err(corrupt("chunk_shift"));
        }
        if chunks < level_count {
            return Err(corrupt("chunk_count"));
        }
        let table_len = chunks
            .checked_mul(4)
            .map(|x| x.div_ceil(64) * 64)
            .ok_or_else(|| corrupt("chunk_count"))?;
        let need = (128 + 64 * level_count)
            .checked_add(table_len)
            .and_then(|x| x.checked_add(chunks.checked_mul(64)?));
        if need.is_none_or(|need| need > file_len) {
            return Err(corrupt("chunk_count"));
        }
        table_len
    };
    // Step 5.
    let table_end = 128 + 64 * level_count as usize;
    if crc(&file[128..table_end]) != u32_at(file, 120) {
        return Err("Checksum(level table)".into());
    }
    // Step 6.
    let mut levels = Vec::new();
    let mut next_offset = table_end as u64 + table_len;
    for k in 0..level_count as usize {
        let d = &file[128 + 64 * k..128 + 64 * (k + 1)];
        let field = |name: &str| corrupt(format!("level {k} {name}"));
        let core_bits = d[51] as u64;
        let precision = u64_at(d, 56);
        // 6.1
        let reserved_bad = match version {
            1 => core_bits != 0 || precision != 0,
            2 => u32_at(d, 52) != 0 || core_bits != 0 || precision != 0,
            3 => u32_at(d, 52) != 0 || (core_bits == 0 && precision != 0),
            _ => d[53..56] != [0, 0, 0] || (core_bits == 0 && (d[52] != 0 || precision != 0)),
        };
        if reserved_bad {
            return Err(field("reserved"));
        }
        // 6.2
        if version >= 3 && core_bits != 0 && !chain {
            return Err(field("core_bits"));
        }
        // 6.3
        let encoding = d[50];
        if encoding > 2 {
            return Err(field("encoding"));
        }
        // 6.4
        let (b, f, m) = (d[48] as u64, d[49] as u64, u64_at(d, 16));
        if core_bits != 0 && !(4..=8).contains(&core_bits) {
            return Err(field("core_bits"));
        }
        if !matches!(b, 2 | 4 | 8) {
            return Err(field("bucket_size"));
        }
        let m_ok = (2..=1 << 32).contains(&m) && (core_bits != 0 || m % 2 == 0);
        if !m_ok {
            return Err(field("num_buckets"));
        }
        if !supported(f, b, encoding) || (core_bits != 0 && f < core_bits + 2) {
            return Err(field("fingerprint_bits"));
        }
        // 6.5
        let copies_encoding = if version == 4 { d[52] } else { 0 };
        if copies_encoding > 2 {
            return Err(field("copies"));
        }
        let (_, buckets_len) = lengths(m, b, f, encoding).unwrap();
        let region_len = u64_at(d, 8);
        let copies_len = region_len.checked_sub(buckets_len);
        let copies_ok = copies_len.is_some_and(|c| match copies_encoding {
            0 => c == 0,
            2 => c == dense_copies_len(m, b),
            _ => c > 0 && c % 64 == 0,
        });
        if !copies_ok {
            return Err(field("region_len"));
        }
        // 6.6
        let region_offset = u64_at(d, 0);
        if region_offset != next_offset {
            return Err(field("region_offset"));
        }
        // 6.7
        let (item_count, capacity) = (u64_at(d, 24), u64_at(d, 32));
        if item_count > m * b {
            return Err(field("item_count"));
        }
        if core_bits == 0 {
            if capacity > m * b {
                return Err(field("capacity"));
            }
        } else {
            let per_slot = if copies_encoding == 0 { 1 } else { 2 * b };
            if capacity as u128 > item_count as u128 * per_slot as u128 {
                return Err(field("key_count"));
            }
            if precision as u128 > (b as u128) << 60 || (precision == 0) != (item_count == 0) {
                return Err(field("precision"));
            }
        }
        // 6.8
        let target_fpr = f64_at(d, 40);
        if !open_unit(target_fpr) || (core_bits != 0 && target_fpr > f64_at(file, 48)) {
            return Err(field("target_fpr"));
        }
        // 6.9
        let end = region_offset.checked_add(region_len);
        if end.is_none_or(|end| end > file_len) {
            return Err(field("region_len"));
        }
        next_offset = region_offset + region_len;
        let whole = &file[region_offset as usize..next_offset as usize];
        levels.push(Level {
            region_offset,
            m,
            item_count,
            capacity,
            target_fpr,
            b,
            f,
            encoding,
            core_bits,
            precision,
            region: &whole[..buckets_len as usize],
            copies_encoding,
            copies: &whole[buckets_len as usize..],
            whole,
        });
    }
    if version != 1 {
        let total: u64 = levels
            .iter()
            .map(|l| (l.whole.len() as u64).div_ceil(1 << shift))
            .sum();
        if total != chunks {
            return Err(corrupt("chunk_count"));
        }
    }
    if next_offset != file_len {
        return Err(corrupt("file_len"));
    }
    if !chain && u64_at(file, 48) != levels[0].target_fpr.to_bits() {
        return Err(corrupt("target_fpr"));
    }
    let keys: u64 = levels
        .iter()
        .map(|l| {
            if l.core_bits == 0 {
                l.item_count
            } else {
                l.capacity
            }
        })
        .sum();
    let item_count = u64_at(file, 88);
    if keys != item_count {
        return Err(corrupt("item_count"));
    }
    // Step 7.
    if version != 1 {
        let table = &file[table_end..table_end + table_len as usize];
        if crc(table) != u32_at(file, 100) {
            return Err("Checksum(checksum table)".into());
        }
        if table[4 * chunks as usize..].iter().any(|&x| x != 0) {
            return Err(corrupt("checksum table"));
        }
    }
    Ok(File {
        version,
        chain,
        seed: u64_at(file, 40),
        item_count,
        levels,
    })
}

/// Step 8 of §7.
fn check_regions(file: &[u8], f: &File<'_>) -> Result<(), String> {
    let table_end = 128 + 64 * f.levels.len();
    if f.version == 1 {
        for (k, l) in f.levels.iter().enumerate() {
            if crc(l.region) != u32_at(file, 128 + 64 * k + 52) {
                return Err(format!("Checksum(level {k} buckets)"));
            }
        }
    } else {
        let c = 1usize << file[98];
        let mut entry = table_end;
        for (k, l) in f.levels.iter().enumerate() {
            let r = l.region_offset as usize;
            for (j, chunk) in l.whole.chunks(c).enumerate() {
                let start = r + j * c;
                let mut covered = (start as u64).to_le_bytes().to_vec();
                covered.extend_from_slice(chunk);
                if crc(&covered) != u32_at(file, entry) {
                    let end = start + chunk.len();
                    return Err(format!(
                        "Checksum(level {k} chunk {j} (bytes {start}..{end}))"
                    ));
                }
                entry += 4;
            }
        }
    }
    for (k, l) in f.levels.iter().enumerate() {
        let buckets = || corrupt(format!("level {k} buckets"));
        let (used_bits, _) = lengths(l.m, l.b, l.f, l.encoding).unwrap();
        if (used_bits..8 * l.region.len() as u64).any(|p| bit(l.region, p) == 1) {
            return Err(buckets());
        }
        let mut occupied = 0;
        for i in 0..l.m {
            let slots = l.try_bucket(i).ok_or_else(buckets)?;
            occupied += slots.iter().filter(|&&v| v != 0).count() as u64;
        }
        if occupied != l.item_count {
            return Err(corrupt(format!("level {k} item_count")));
        }
        if l.core_bits != 0 {
            let entries = l.entries().ok_or_else(buckets)?;
            let p: u64 = entries.iter().map(|e| 1u64 << (60 - e.precision)).sum();
            if p != l.precision {
                return Err(corrupt(format!("level {k} precision")));
            }
            let copies = l
                .read_copies()
                .ok_or_else(|| corrupt(format!("level {k} copies")))?;
            let total: u64 = copies.values().sum();
            if l.capacity as u128 > l.item_count as u128 + total as u128 {
                return Err(corrupt(format!("level {k} key_count")));
            }
        }
    }
    Ok(())
}

/// §3.5: the length of a dense copies region of `m` buckets of `b` slots.
pub fn dense_copies_len(m: u64, b: u64) -> u64 {
    let d = (2 * b).trailing_zeros() as u64;
    (m * b * d).div_ceil(512) * 64
}

/// §3.5: the length of a copies region of `n` records.
pub fn records_copies_len(n: u64) -> u64 {
    (8 + 12 * n).div_ceil(64) * 64
}

impl Level<'_> {
    /// §3.5: the copies the level counts, `(bucket, value) → e ≥ 1`, checked as §7 step 8
    /// says (`None` for a region that breaks a rule). Its buckets must have been checked.
    pub fn read_copies(&self) -> Option<std::collections::BTreeMap<(u64, u64), u64>> {
        let mut out = std::collections::BTreeMap::new();
        let cap = 2 * self.b - 1;
        let held = |j: u64, v: u64| self.bucket(j).iter().filter(|&&x| x == v).count() as u64;
        match self.copies_encoding {
            0 => return self.copies.is_empty().then_some(out),
            1 => {
                let n = u64_at(self.copies, 0);
                let most = (self.copies.len() as u64 - 8) / 12;
                if n == 0 || n > most || records_copies_len(n) != self.copies.len() as u64 {
                    return None;
                }
                let mut last = None;
                for r in 0..n as usize {
                    let at = 8 + 12 * r;
                    let (j, v, e) = (
                        u32_at(self.copies, at) as u64,
                        u32_at(self.copies, at + 4) as u64,
                        u32_at(self.copies, at + 8) as u64,
                    );
                    if j >= self.m || last.is_some_and(|l| l >= (j, v)) || v == 0 {
                        return None;
                    }
                    last = Some((j, v));
                    let r = held(j, v);
                    if r == 0 || e == 0 || e > r * cap {
                        return None;
                    }
                    out.insert((j, v), e);
                }
                if self.copies[8 + 12 * n as usize..].iter().any(|&x| x != 0) {
                    return None;
                }
            }
            _ => {
                let d = (2 * self.b).trailing_zeros() as u64;
                for j in 0..self.m {
                    let mut values: Vec<u64> =
                        self.bucket(j).into_iter().filter(|&v| v != 0).collect();
                    values.sort_unstable();
                    let fields: Vec<u64> = (0..self.b)
                        .map(|i| field(self.copies, (j * self.b + i) * d, d))
                        .collect();
                    if fields[values.len()..].iter().any(|&x| x != 0) {
                        return None;
                    }
                    let mut i = 0;
                    while i < values.len() {
                        let v = values[i];
                        let run = values[i..].iter().take_while(|&&x| x == v).count();
                        let mut e = 0;
                        let mut short = false;
                        for &x in &fields[i..i + run] {
                            if x > cap || (short && x != 0) {
                                return None;
                            }
                            short |= x < cap;
                            e += x;
                        }
                        if e > 0 {
                            out.insert((j, v), e);
                        }
                        i += run;
                    }
                }
                let used = self.m * self.b * d;
                if (used..8 * self.copies.len() as u64).any(|p| bit(self.copies, p) == 1) {
                    return None;
                }
                if out.is_empty() {
                    return None;
                }
            }
        }
        // The writer's rule: records when they are no longer than the dense fields.
        let records = records_copies_len(out.len() as u64) <= dense_copies_len(self.m, self.b);
        let rule = match self.copies_encoding {
            1 => records,
            _ => !records,
        };
        rule.then_some(out)
    }

    /// §3.5: the copies the entries answering for a key of seeded hash `h` count (its two
    /// buckets, each distinct answering value once). The level's copies must be valid.
    pub fn counted_copies(&self, h: u64) -> u64 {
        let copies = self.read_copies().unwrap_or_default();
        let mut n = 0;
        for (i, q) in self.probes(h) {
            let mut seen = Vec::new();
            for v in self.bucket(i) {
                if v != 0 && self.matches(v, q) && !seen.contains(&v) {
                    seen.push(v);
                    n += copies.get(&(i, v)).copied().unwrap_or(0);
                }
            }
        }
        n
    }
}

/// Bit `p` of a region (§3: bit `p mod 8` of byte `p div 8`).
fn bit(region: &[u8], p: u64) -> u64 {
    ((region[(p / 8) as usize] >> (p % 8)) & 1) as u64
}

/// The `w`-bit field at bit `p`, bit by bit (§3).
fn field(region: &[u8], p: u64, w: u64) -> u64 {
    (0..w).fold(0, |acc, j| acc | bit(region, p + j) << j)
}

/// §3.3: the rank of each of the 3876 non-decreasing nibble sequences, as a table from rank
/// to nibbles.
fn unrank_table() -> &'static Vec<[u64; 4]> {
    static TABLE: OnceLock<Vec<[u64; 4]>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = vec![[u64::MAX; 4]; 3876];
        for a in 0..16u64 {
            for b in a..16 {
                for c in b..16 {
                    for d in c..16 {
                        let (c0, c1, c2, c3) = (a, b + 1, c + 2, d + 3);
                        let r = c0
                            + c1 * (c1 - 1) / 2
                            + c2 * (c2 - 1) * (c2 - 2) / 6
                            + c3 * (c3 - 1) * (c3 - 2) * (c3 - 3) / 24;
                        assert_eq!(t[r as usize][0], u64::MAX, "rank {r} twice");
                        t[r as usize] = [a, b, c, d];
                    }
                }
            }
        }
        assert!(t.iter().all(|n| n[0] != u64::MAX));
        t
    })
}

impl Level<'_> {
    pub fn is_stretch(&self) -> bool {
        self.core_bits != 0
    }

    /// The slot values of bucket `i` (§3), or `None` for an invalid semi-sorted bucket (an
    /// index past 3875, or fingerprints out of order).
    pub fn try_bucket(&self, i: u64) -> Option<Vec<u64>> {
        self.bucket_values(i)
            .filter(|x| self.encoding != 2 || x.windows(2).all(|w| w[0] <= w[1]))
    }

    /// The slot values of bucket `i` (§3) in the order stored, or `None` for a semi-sorted
    /// bucket whose index is past 3875 (it names no nibbles).
    pub fn bucket_values(&self, i: u64) -> Option<Vec<u64>> {
        let (b, f) = (self.b, self.f);
        match self.encoding {
            0 => {
                let w = (f / 8) as usize;
                Some(
                    (0..b as usize)
                        .map(|s| {
                            let at = (i * b) as usize * w + s * w;
                            let mut v = [0u8; 8];
                            v[..w].copy_from_slice(&self.region[at..at + w]);
                            u64::from_le_bytes(v)
                        })
                        .collect(),
                )
            }
            1 => Some(
                (0..b)
                    .map(|s| field(self.region, (i * b + s) * f, f))
                    .collect(),
            ),
            _ => {
                let p = i * (4 * f - 4);
                let index = field(self.region, p, 12);
                let n = *unrank_table().get(index as usize)?;
                Some(
                    (0..4)
                        .map(|k| {
                            (n[k as usize] << (f - 4))
                                + field(self.region, p + 12 + k * (f - 4), f - 4)
                        })
                        .collect(),
                )
            }
        }
    }

    pub fn bucket(&self, i: u64) -> Vec<u64> {
        self.try_bucket(i).expect("a valid bucket")
    }

    /// §3.4: every entry of a stretch level, bucket by bucket; `None` if a nonzero slot is no
    /// valid entry.
    pub fn entries(&self) -> Option<Vec<Entry>> {
        assert!(self.is_stretch());
        let (split, l0) = (Split::new(self.m), self.f - 1 - self.core_bits);
        let mut out = Vec::new();
        for i in 0..self.m {
            let ell = split.address_length(i);
            for v in self.try_bucket(i)? {
                if v == 0 {
                    continue;
                }
                let low = v & ((1 << (l0 + 1)) - 1);
                if low == 0 {
                    return None;
                }
                let cont = l0 - low.trailing_zeros() as u64;
                out.push(Entry {
                    bucket: i,
                    value: v,
                    ell,
                    cont,
                    precision: ell + cont,
                });
            }
        }
        Some(out)
    }

    /// §2.1 / §2.2: whether the level says the key of seeded hash `h` may be present.
    pub fn contains_seeded(&self, h: u64) -> bool {
        self.probes(h)
            .iter()
            .any(|&(i, q)| self.bucket(i).iter().any(|&v| self.matches(v, q)))
    }

    /// The two buckets a lookup reads and what it compares their slots with: a classic
    /// level's fingerprint, a stretch level's query value.
    pub fn probes(&self, h: u64) -> [(u64, u64); 2] {
        if self.is_stretch() {
            let [(i1, _, q1), (i2, _, q2)] = stretch_probes(h, self.m, self.core_bits, self.f);
            [(i1, q1), (i2, q2)]
        } else {
            let (i1, fp, i2) = classic_probes(h, self.m, self.f);
            [(i1, fp), (i2, fp)]
        }
    }

    fn matches(&self, v: u64, q: u64) -> bool {
        if self.is_stretch() {
            answers(v, q, self.f)
        } else {
            v == q
        }
    }
}

impl File<'_> {
    pub fn contains(&self, key: &[u8]) -> bool {
        self.contains_hash(xxhash_rust::xxh3::xxh3_64(key))
    }

    /// `H` is the key hash of §2.
    pub fn contains_hash(&self, key_hash: u64) -> bool {
        let h = seeded(key_hash, self.seed);
        self.levels.iter().any(|l| l.contains_seeded(h))
    }
}

pub fn fmix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xFF51AFD7ED558CCD);
    x ^= x >> 33;
    x = x.wrapping_mul(0xC4CEB9FE1A85EC53);
    x ^ (x >> 33)
}

/// §2: `h = fmix64(H XOR S)`.
pub fn seeded(key_hash: u64, seed: u64) -> u64 {
    fmix64(key_hash ^ seed)
}

fn range(x: u64, n: u64) -> u64 {
    ((x & 0xFFFF_FFFF) * n) >> 32
}

/// §2.1: `(i1, fp, i2)`.
pub fn classic_probes(h: u64, m: u64, f: u64) -> (u64, u64, u64) {
    let i1 = range(h >> 32, m);
    let fp = range(h & 0xFFFF_FFFF, (1u64 << f) - 1) + 1;
    let o = 2 * range((fp.wrapping_mul(0x9E3779B97F4A7C15)) >> 32, m / 2) + 1;
    let i2 = if o >= i1 { o - i1 } else { o + m - i1 };
    (i1, fp, i2)
}

/// §2.2: `K` and `s` of a stretch level of `m` buckets.
#[derive(Clone, Copy, Debug)]
pub struct Split {
    pub k: u32,
    pub s: u64,
}

impl Split {
    pub fn new(m: u64) -> Split {
        let k = 63 - m.leading_zeros();
        Split { k, s: m - (1 << k) }
    }

    /// `bucket(a)`: the bucket and the address length `ℓ`.
    pub fn bucket(&self, a: u64) -> (u64, u64) {
        let j = a & ((1 << self.k) - 1);
        if j < self.s {
            (a & ((1 << (self.k + 1)) - 1), self.k as u64 + 1)
        } else {
            (j, self.k as u64)
        }
    }

    /// The address length of bucket `i`: `K + 1` for split buckets (below `s`) and their
    /// images (from `2^K`), else `K`. FORMAT.md does not say this outright: §3.4 and §5.1
    /// need "the address length of the bucket holding v", and §2.2 defines `ℓ` only as what
    /// `bucket(a)` returns for an address string; this follows from `bucket` (reported with a
    /// wording).
    pub fn address_length(&self, i: u64) -> u64 {
        if i < self.s || i >= 1 << self.k {
            self.k as u64 + 1
        } else {
            self.k as u64
        }
    }
}

/// §2.2: `X` of a core.
pub fn partner(core: u64) -> u64 {
    fmix64((core + 1).wrapping_mul(0x9E3779B97F4A7C15)) | 1
}

/// §2.2: `[(i1, ℓ1, q1), (i2, ℓ2, q2)]` for seeded hash `h` in a stretch level of `m` buckets,
/// core width `c` and slot width `w`.
pub fn stretch_probes(h: u64, m: u64, c: u64, w: u64) -> [(u64, u64, u64); 2] {
    let split = Split::new(m);
    let l0 = w - 1 - c;
    let core = h >> (64 - c);
    let query = |a: u64| {
        let (i, ell) = split.bucket(a);
        let r = (0..l0).fold(0, |r, t| r | ((a >> (ell + t)) & 1) << (l0 - 1 - t));
        (i, ell, core << (l0 + 1) | r << 1 | 1)
    };
    [query(h), query(h ^ partner(core))]
}

/// §2.2: whether slot value `v` answers query `q` (slots of `w` bits).
pub fn answers(v: u64, q: u64, w: u64) -> bool {
    v != 0 && ((v ^ q) & !(v ^ (v - 1))) & ((1 << w) - 1) == 0
}

// §8, "How the crate grows a chain" (informative: a reader needs none of it). The crate's
// behaviour, as FORMAT.md states it, for the tests and the `chain` fuzz target to hold the
// crate's chains to.

/// §5: a classic level's false-positive bound, `1 − (1 − 1/(2^f − 1))^(2b)` (the load not
/// counted), computed as `−expm1(2b · ln(1 − x))`: `1 − (1 − x)^n` loses digits for a tiny `x`.
pub fn classic_bound(b: u64, f: u64) -> f64 {
    let x = 1.0 / (2f64.powi(f as i32) - 1.0);
    -(2.0 * b as f64 * (-x).ln_1p()).exp_m1()
}

/// §8: the core width `c` of every stretch level the crate makes.
pub const GROWTH_CORE_BITS: u64 = 5;

/// §8: an insert splits at most this many more buckets to find room (step 4).
pub const GROWTH_RETRIES: u64 = 16;

/// §8: the split load `λ` of a level with buckets of `b`: 0.9 for buckets of 8, else 0.8.
pub fn split_load(b: u64) -> f64 {
    if b == 8 { 0.9 } else { 0.8 }
}

/// §8: the slot width `w` of a level with buckets of `b` in `encoding` (§3's codes) and the
/// false-positive share `share`: `1 + ⌈log2(2b · λ · 8.5 / share)⌉`, at least `c + 7`, a plain
/// encoding rounded up to 8, 16 or 32; `None` when the share is too small for a 32-bit slot
/// (or is not a positive number).
pub fn growth_width(b: u64, encoding: u8, share: f64) -> Option<u64> {
    if share.is_nan() || share <= 0.0 {
        return None;
    }
    let bits = (2.0 * b as f64 * split_load(b) * 8.5 / share).log2().ceil();
    if bits > 31.0 {
        return None;
    }
    let w = (1 + bits.max(1.0) as u64).max(GROWTH_CORE_BITS + 7);
    if encoding == 0 {
        [8, 16, 32].into_iter().find(|&p| p >= w)
    } else {
        Some(w)
    }
}

/// §8: the buckets of a level sized for `keys` keys: `⌈keys / (b · λ)⌉`, at least 2.
pub fn growth_buckets(keys: u64, b: u64) -> u64 {
    (keys as f64 / (b as f64 * split_load(b))).ceil().max(2.0) as u64
}

/// §11: a compact block that passed §11.2's steps 1–6 ([`read_compact`] adds step 7).
#[derive(Clone, Debug)]
pub struct Compact<'a> {
    pub seed: u64,
    /// The block's level; `None` for the empty filter (`L = 0`).
    pub level: Option<Level<'a>>,
}

/// §11.1: the seed that seed index `k` names.
pub fn compact_seed(k: u8) -> u64 {
    0x6375636B6F6F7373u64.wrapping_add((k as u64).wrapping_mul(0x9E3779B97F4A7C15))
}

/// §11.2 steps 1–6: the block, or the first failure.
pub fn read_compact_unverified(block: &[u8]) -> Result<Compact<'_>, String> {
    // §11.2 step 1 and 2, §11.5: the first byte names the version, whose header length
    // follows.
    if block.is_empty() {
        return Err("Truncated(2, 0)".into());
    }
    if block[0] >> 4 != 0xC {
        return Err("BadMagic".into());
    }
    match block[0] & 0xF {
        0 => return Err(corrupt("compact version")),
        1 => {}
        2 if block.len() < 2 => return Err(format!("Truncated(2, {})", block.len())),
        2 => return read_compact_v2(block),
        v => return Err(format!("UnsupportedVersion({v}, 2)")),
    }
    if block.len() < 4 {
        return Err(format!("Truncated(4, {})", block.len()));
    }
    let layout = block[1];
    let (encoding, log2_b) = (layout & 3, (layout >> 2) & 3);
    if layout >> 4 != 0 || encoding > 2 || log2_b == 0 {
        return Err(corrupt("compact layout"));
    }
    let (b, f) = (1u64 << log2_b, block[2] as u64);
    if !supported(f, b, encoding) {
        return Err(corrupt("compact fingerprint_bits"));
    }
    if block[3] >= 16 {
        return Err(corrupt("compact seed_index"));
    }
    let seed = compact_seed(block[3]);
    let region = &block[4..];
    let l = region.len() as u64;
    if l == 0 {
        return Ok(Compact { seed, level: None });
    }
    let bucket_bits = if encoding == 2 { 4 * f - 4 } else { b * f };
    let m = 8 * l / bucket_bits;
    let m = m - m % 2;
    if !(2..=1 << 32).contains(&m) || (m * bucket_bits).div_ceil(8) != l {
        return Err(corrupt("compact length"));
    }
    if (m * bucket_bits..8 * l).any(|p| bit(region, p) == 1) {
        return Err(corrupt("compact length"));
    }
    let level = Level {
        region_offset: 4,
        m,
        item_count: 0,
        capacity: 0,
        target_fpr: 0.0,
        b,
        f,
        encoding,
        core_bits: 0,
        precision: 0,
        region,
        copies_encoding: 0,
        copies: &[],
        whole: region,
    };
    Ok(Compact {
        seed,
        level: Some(level),
    })
}

/// §11.2 steps 1–7: the block with its number of keys, or the first failure.
pub fn read_compact(block: &[u8]) -> Result<Compact<'_>, String> {
    let mut c = read_compact_unverified(block)?;
    if let Some(l) = &mut c.level {
        let bad = || corrupt("compact buckets");
        let used_bits = l.m
            * if l.encoding == 2 {
                4 * l.f - 4
            } else {
                l.b * l.f
            };
        if (used_bits..8 * l.region.len() as u64).any(|p| bit(l.region, p) == 1) {
            return Err(bad());
        }
        let mut keys = 0;
        for i in 0..l.m {
            keys += l
                .try_bucket(i)
                .ok_or_else(bad)?
                .iter()
                .filter(|&&v| v != 0)
                .count() as u64;
        }
        l.item_count = keys;
    }
    Ok(c)
}

/// §11.5: a key's buckets and fingerprint in a compact block of `m` buckets — the classic
/// derivation, over `2m` buckets with both halved when `m` is odd.
pub fn compact_probes(h: u64, m: u64, f: u64) -> (u64, u64, u64) {
    let odd = m % 2;
    let (i1, fp, i2) = classic_probes(h, m << odd, f);
    (i1 >> odd, fp, i2 >> odd)
}

/// §11.5: a version-2 block's header, check and length (steps 1 to 6).
fn read_compact_v2(block: &[u8]) -> Result<Compact<'_>, String> {
    let named = block[1] & 0x08 != 0;
    let header = if named { 4 } else { 2 };
    if block.len() < header {
        return Err(format!("Truncated({header}, {})", block.len()));
    }
    let mut word = block[0] as u64 | ((block[1] & 0x0F) as u64) << 8;
    if named {
        word |= (block[2] as u64) << 16 | (block[3] as u64) << 24;
    }
    if fmix64((block.len() as u64).rotate_left(32) ^ word) >> 60 != (block[1] >> 4) as u64 {
        return Err(corrupt("compact check"));
    }
    let (encoding, b, f) = if named {
        let layout = block[2];
        let (encoding, log2_b) = (layout & 3, (layout >> 2) & 3);
        if layout >> 4 != 0 || encoding > 2 || log2_b == 0 {
            return Err(corrupt("compact layout"));
        }
        let (b, f) = (1u64 << log2_b, block[3] as u64);
        if !supported(f, b, encoding) {
            return Err(corrupt("compact fingerprint_bits"));
        }
        (encoding, b, f)
    } else {
        (2, 4, 10)
    };
    let seed = compact_seed(block[1] & 7);
    let region = &block[header..];
    let l = region.len() as u64;
    if l == 0 {
        return Ok(Compact { seed, level: None });
    }
    let bucket_bits = if encoding == 2 { 4 * f - 4 } else { b * f };
    let m = 8 * l / bucket_bits;
    let limit = if m.is_multiple_of(2) {
        1 << 32
    } else {
        (1 << 31) - 1
    };
    if !(2..=limit).contains(&m) || (m * bucket_bits).div_ceil(8) != l {
        return Err(corrupt("compact length"));
    }
    if (m * bucket_bits..8 * l).any(|p| bit(region, p) == 1) {
        return Err(corrupt("compact length"));
    }
    let level = Level {
        region_offset: header as u64,
        m,
        item_count: 0,
        capacity: 0,
        target_fpr: 0.0,
        b,
        f,
        encoding,
        core_bits: 0,
        precision: 0,
        region,
        copies_encoding: 0,
        copies: &[],
        whole: region,
    };
    Ok(Compact {
        seed,
        level: Some(level),
    })
}

impl Compact<'_> {
    /// §11.2: whether the key of hash `H` may be present. Without step 7 (after
    /// [`read_compact_unverified`]) a bucket may be invalid: one whose index is past 3875
    /// answers "maybe", one out of order is read as its fingerprints.
    pub fn contains_hash(&self, key_hash: u64) -> bool {
        let h = seeded(key_hash, self.seed);
        self.level.as_ref().is_some_and(|l| {
            let (i1, fp, i2) = compact_probes(h, l.m, l.f);
            [i1, i2]
                .iter()
                .any(|&i| l.bucket_values(i).is_none_or(|s| s.contains(&fp)))
        })
    }

    pub fn contains(&self, key: &[u8]) -> bool {
        self.contains_hash(xxhash_rust::xxh3::xxh3_64(key))
    }

    /// The number of keys (after [`read_compact`]; 0 after the unverified read).
    pub fn keys(&self) -> u64 {
        self.level.as_ref().map_or(0, |l| l.item_count)
    }
}
