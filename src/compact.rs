//! Compact filter blocks (FORMAT.md §11): a filter of any size, from 0 keys up, in two bytes
//! of header (version 2, §11.5; version 1 had four) and exactly its buckets, for a block its
//! container already checksums — the filter of one data block in LevelDB, say, where a 36-key
//! filter's buckets take 41 bytes and a full file's header, level table and checksums would
//! take 200 more.
//!
//! The buckets are the classic level's (FORMAT.md §2.1, §3); an odd bucket count derives over
//! twice as many and halves, so an owned [`CompactFilter`] reads every block through the same
//! kernels as [`FilterRef`]'s, from a zero-padded copy. The one-shot lookup reads a block of
//! the default layout in place (one unaligned load a bucket, no copy), and other layouts by
//! copying only the bytes of its two buckets into a small padded window, so that it costs the
//! same on a block of any size.

use crate::config::DEFAULT_SEED;
use crate::error::{Error, Result};
use crate::hash::{self, KeyHash, Slot};
use crate::table::raw::Region;
use crate::table::{self, Codec, Encoding, Geometry, TableBuf, kernel, semi, with_codec};
use crate::view::FilterRef;

/// The first byte of a version-1 compact block: `0xC` in the high nibble marks a compact block
/// (a full filter file starts with `C`, 0x43), the low nibble is its version.
pub(crate) const MAGIC: u8 = 0xC1;
/// The first byte of a version-2 compact block (FORMAT.md §11.5), the one writers make.
pub(crate) const MAGIC_V2: u8 = 0xC2;
/// The newest compact version, the one [`MAGIC_V2`] names.
const VERSION: u8 = MAGIC_V2 & 0x0F;
/// Bytes before the buckets of a version-1 block: magic, layout, width, seed index.
pub(crate) const HEADER_LEN: usize = 4;
/// Bytes before the buckets of a version-2 block of the default layout: magic, then the seed
/// index, the layout flag and the check in one byte.
pub(crate) const HEADER_LEN_V2: usize = 2;
/// Bytes before the buckets of a version-2 block that names its layout (flag set): the two
/// above, then the layout and width bytes of version 1.
pub(crate) const HEADER_LEN_V2_LAYOUT: usize = 4;
/// Bit 3 of a version-2 block's second byte: the layout is named in bytes 2 and 3.
const V2_LAYOUT_FLAG: u8 = 0x08;
/// The layout a version-2 block without [`V2_LAYOUT_FLAG`] has: the crate's default at the 1 %
/// default (semi-sorted buckets of 4, 10-bit fingerprints, 36 bits a bucket).
const V2_DEFAULT: (Encoding, u32, u32) = (Encoding::SemiSorted, 4, 10);
/// Bits of a bucket of [`V2_DEFAULT`].
const DEFAULT_BUCKET_BITS: u64 = 36;
/// The seed indices a version-2 block can name (bits 0 to 2 of its second byte).
pub(crate) const V2_SEED_INDICES: u8 = 8;
/// The step between the seeds a compact block can name: seed `k` is
/// `DEFAULT_SEED + k · SEED_STEP (mod 2^64)`, the seeds the builder's retries use.
pub(crate) const SEED_STEP: u64 = 0x9E37_79B9_7F4A_7C15;
/// The seed indices a version-1 block may name, `0 .. SEED_INDICES`: every index a writer made
/// (16 a size in the exact search, 12 retries in
/// [`FilterBuilder::finish`](crate::FilterBuilder::finish)), so that a damaged index of 16 or
/// more is refused rather than read with the wrong seed (FORMAT.md §11.2, step 5).
pub(crate) const SEED_INDICES: u8 = 16;
/// Bytes of the window a one-shot lookup reads its two buckets from: two groups of at most 32
/// bytes (see [`contains_in_place`]) and the 16 bytes of slack, in whole cache lines.
const WINDOW: usize = 128;
/// Up to this many distinct keys, the builder places keys by an exact matching in the fewest
/// buckets that hold them; above, it sizes the table as [`FilterBuilder`](crate::FilterBuilder)
/// does (for the 95 % load that relocation reaches) and places keys the same way.
pub(crate) const EXACT_MAX: usize = 4096;
/// Up to this many distinct keys, compact blocks start from the fewest buckets that hold them.
const EXACT_FULL: u64 = 128;
/// The most buckets a block may have: an even count up to 2^32 (the classic derivation's
/// range); an odd one is derived over twice as many, so below 2^31.
const MAX_BUCKETS: u64 = 1 << 32;

/// The seed that seed index `k` names.
pub(crate) const fn seed_of(k: u8) -> u64 {
    DEFAULT_SEED.wrapping_add((k as u64).wrapping_mul(SEED_STEP))
}

/// The seed index of `seed`, if a compact block can name it.
pub(crate) fn seed_index(seed: u64) -> Option<u8> {
    (0..SEED_INDICES).find(|&k| seed_of(k) == seed)
}

/// A key's buckets and fingerprint in a compact block of `m ≥ 2` buckets (FORMAT.md §11.5):
/// for an even `m` the classic derivation (§2.1); for an odd `m` the classic derivation over
/// `2m` buckets with both buckets halved, so that the two can be one bucket (about one key in
/// `m`). Version 1 has even counts only, so this serves both versions.
#[inline(always)]
pub(crate) fn locate(seeded: u64, m: u64, f: u32) -> Slot {
    let odd = m & 1;
    let s = hash::locate(seeded, m << odd, f);
    Slot {
        i1: s.i1 >> odd,
        i2: s.i2 >> odd,
        ..s
    }
}

/// The 4-bit check of a version-2 block (FORMAT.md §11.5): the top four bits of `fmix64` of
/// the block's length rotated by 32 bits, XOR its header bytes with the check's own bits 0 —
/// `b0 | (b1 & 0x0F) << 8 | b2 << 16 | b3 << 24` (`b2`, `b3` 0 for a 2-byte header).
#[inline(always)]
fn check_of(block_len: u64, header_word: u32) -> u8 {
    (hash::fmix64(block_len.rotate_left(32) ^ u64::from(header_word)) >> 60) as u8
}

/// What a compact block's header says, checked against its length.
#[derive(Clone, Copy, Debug)]
struct Parsed<'a> {
    /// The layout: a geometry of 2 buckets with the block's bucket size, width and encoding.
    layout: Geometry,
    /// The number of buckets stored, 0 for an empty filter.
    m: u64,
    seed: u64,
    /// The buckets as stored: `ceil(m · bucket_bits / 8)` bytes, none for an empty filter.
    body: &'a [u8],
}

/// The error for a block of `found` bytes that needs `expected`.
fn truncated(expected: usize, found: usize) -> Error {
    Error::Truncated {
        expected: expected as u64,
        found: found as u64,
    }
}

/// Reads a compact block's header, of either version (FORMAT.md §11.2 and §11.5).
fn parse(block: &[u8]) -> Result<Parsed<'_>> {
    let Some(&first) = block.first() else {
        return Err(truncated(HEADER_LEN_V2, 0));
    };
    if first >> 4 != MAGIC >> 4 {
        let mut found = [0u8; 8];
        let n = block.len().min(8);
        found[..n].copy_from_slice(&block[..n]);
        return Err(Error::BadMagic { found });
    }
    match first & 0x0F {
        // Never written, so not a newer writer's block: damage, as file version 0 is (§7).
        0 => Err(Error::corrupt(
            "compact version",
            "0 was never written (compact versions start at 1)",
        )),
        1 => parse_v1(block),
        2 => parse_v2(block),
        v => Err(Error::UnsupportedVersion {
            found: u32::from(v),
            supported: u32::from(VERSION),
        }),
    }
}

/// The layout a layout byte and a width byte name (FORMAT.md §11.2's checks 3 and 4), as a
/// geometry of 2 buckets.
fn layout_of(layout: u8, f: u8) -> Result<Geometry> {
    if layout & 0xF0 != 0 {
        return Err(Error::corrupt(
            "compact layout",
            format!("{layout:#04x} has reserved bits (4 to 7) set"),
        ));
    }
    let Some(encoding) = Encoding::from_code(layout & 0x03) else {
        return Err(Error::corrupt(
            "compact layout",
            format!("encoding code {} is not 0, 1 or 2", layout & 0x03),
        ));
    };
    let log2_b = (layout >> 2) & 0x03;
    if log2_b == 0 {
        return Err(Error::corrupt(
            "compact layout",
            "bucket size code 0 (one slot a bucket) is not supported; 1, 2, 3 for 2, 4, 8",
        ));
    }
    Geometry::new(2, 1u32 << log2_b, u32::from(f), encoding).map_err(|e| match e {
        Error::InvalidConfig { reason, .. } => Error::corrupt("compact fingerprint_bits", reason),
        other => other,
    })
}

/// The number of buckets `L` bytes of buckets of `layout` hold, 0 for `L = 0`, if `L` is a
/// length a writer makes: `ceil(m · bucket_bits / 8) = L` for an `m ≥ 2` (even for version 1),
/// the bits of the last byte after the last bucket 0 (FORMAT.md §11.1, §11.5).
fn buckets_of(layout: &Geometry, body: &[u8], even_only: bool) -> Result<u64> {
    if body.is_empty() {
        return Ok(0);
    }
    let bucket_bits = layout
        .encoding()
        .bucket_bits(layout.bucket_size(), layout.fp_bits());
    let m = body.len() as u64 * 8 / bucket_bits;
    let m = if even_only { m - m % 2 } else { m };
    let limit = if m.is_multiple_of(2) {
        MAX_BUCKETS
    } else {
        MAX_BUCKETS / 2 - 1
    };
    if m < 2 || m > limit || (m * bucket_bits).div_ceil(8) != body.len() as u64 {
        let what = if even_only { "an even" } else { "an" };
        return Err(Error::corrupt(
            "compact length",
            format!(
                "{} bytes of buckets is not ceil(m · {bucket_bits} / 8) for {what} m ≥ 2",
                body.len()
            ),
        ));
    }
    // A writer leaves the bits after the last bucket 0: set, they are another length's bucket
    // bits (a block cut or extended to a length that holds a whole number of buckets).
    let tail = (m * bucket_bits) % 8;
    if tail != 0 && body.last().is_some_and(|&last| last >> tail != 0) {
        return Err(Error::corrupt(
            "compact length",
            format!(
                "the last byte has bits set after the last of {m} buckets: the block was cut or \
                 extended"
            ),
        ));
    }
    Ok(m)
}

/// Reads a version-1 block's header (FORMAT.md §11.2's checks 1 to 6, in order).
fn parse_v1(block: &[u8]) -> Result<Parsed<'_>> {
    if block.len() < HEADER_LEN {
        return Err(truncated(HEADER_LEN, block.len()));
    }
    let layout = layout_of(block[1], block[2])?;
    if block[3] >= SEED_INDICES {
        return Err(Error::corrupt(
            "compact seed_index",
            format!(
                "{} is not one a writer makes (0 to {})",
                block[3],
                SEED_INDICES - 1
            ),
        ));
    }
    let body = &block[HEADER_LEN..];
    let m = buckets_of(&layout, body, true)?;
    Ok(Parsed {
        layout,
        m,
        seed: seed_of(block[3]),
        body,
    })
}

/// Reads a version-2 block's header (FORMAT.md §11.5's checks, in order).
fn parse_v2(block: &[u8]) -> Result<Parsed<'_>> {
    let Some(&b1) = block.get(1) else {
        return Err(truncated(HEADER_LEN_V2, block.len()));
    };
    let named = b1 & V2_LAYOUT_FLAG != 0;
    let header_len = if named {
        HEADER_LEN_V2_LAYOUT
    } else {
        HEADER_LEN_V2
    };
    let Some(header) = block.get(..header_len) else {
        return Err(truncated(header_len, block.len()));
    };
    let mut word = u32::from(header[0]) | u32::from(b1 & 0x0F) << 8;
    if let [_, _, layout, f] = *header {
        word |= u32::from(layout) << 16 | u32::from(f) << 24;
    }
    let check = check_of(block.len() as u64, word);
    if b1 >> 4 != check {
        return Err(Error::corrupt(
            "compact check",
            format!(
                "the header's check is {:#x}, its header and length give {check:#x}: the block \
                 is damaged, cut or extended",
                b1 >> 4
            ),
        ));
    }
    let layout = match *header {
        [_, _, layout, f] => layout_of(layout, f)?,
        _ => {
            let (e, b, f) = V2_DEFAULT;
            Geometry::new(2, b, f, e)?
        }
    };
    let body = &block[header_len..];
    let m = buckets_of(&layout, body, false)?;
    Ok(Parsed {
        layout,
        m,
        seed: seed_of(b1 & 0x07),
        body,
    })
}

/// Whether the key of hash `h` may be in the parsed, nonempty block, read in place: each of
/// its two buckets with the buckets that share its bytes — a group of `g` buckets, `g` the
/// fewest that fill whole bytes (1, 2 or 4: bucket widths are even), at most 32 bytes — is
/// copied into a zeroed window of two groups, the table of `2g` buckets that the kernel
/// probes at the buckets' places in their groups. The same answer as a probe of the whole
/// region (a bucket's bits decide it), at the cost of a few dozen bytes whatever the block's
/// size. A semi-sorted bucket whose index is past the last code answers "maybe" (§11.2): the
/// block is damaged there, and what the bucket held cannot be told. (The default layout takes
/// [`contains_default`] instead, which copies nothing.)
fn contains_in_place(p: &Parsed<'_>, h: KeyHash) -> bool {
    let geo = &p.layout;
    let s = locate(hash::seeded(h, p.seed), p.m, geo.fp_bits());
    let bucket_bits = geo.encoding().bucket_bits(geo.bucket_size(), geo.fp_bits());
    let g = 8u64 >> bucket_bits.trailing_zeros().min(3);
    let group = (g * bucket_bits / 8) as usize;
    let starts = [s.i1, s.i2].map(|i| ((i & !(g - 1)) * bucket_bits / 8) as usize);
    prefetch_groups(p.body, starts, group);
    // The same layout as the block's, which parsed: it cannot fail. "Maybe" if it did.
    let Ok(window_geo) = Geometry::new(2 * g, geo.bucket_size(), geo.fp_bits(), geo.encoding())
    else {
        return true;
    };
    let mut buf = [0u8; WINDOW];
    for (k, start) in starts.into_iter().enumerate() {
        let src = p.body.get(start..).unwrap_or_default();
        let n = src.len().min(group);
        if let (Some(to), Some(from)) = (buf.get_mut(k * group..k * group + n), src.get(..n)) {
            to.copy_from_slice(from);
        }
    }
    let Some(region) = buf
        .get(..window_geo.table_bytes())
        .and_then(|w| Region::new(w, &window_geo))
    else {
        return true;
    };
    let (j1, j2) = (s.i1 & (g - 1), g + (s.i2 & (g - 1)));
    if geo.encoding() == Encoding::SemiSorted
        && (past_last_code(region, j1 * bucket_bits) || past_last_code(region, j2 * bucket_bits))
    {
        return true;
    }
    kernel::contains(&window_geo, region, j1, j2, s.fp)
}

/// `0b000001_000001_000001_000001`: a 6-bit value in each of the four low-part fields of a
/// default-layout bucket.
const LOW_ONES: u64 = 0x41041;

/// 31 in each of the four 6-bit low-part fields.
const LOW_FIVES: u64 = LOW_ONES * 0x1F;

/// The multiplier that gathers bit `6k` of each field to bit `18 + k` ([`default_matches`]).
const ZERO_GATHER: u64 = 1 << 18 | 1 << 13 | 1 << 8 | 1 << 3;

/// Which of the four slots of the default-layout bucket `w` (its 36 bits in the low bits) hold
/// fingerprint `fp`, one bit a slot; and whether the bucket's index is past the last code.
#[inline(always)]
fn default_matches(w: u64, fp: u32) -> (u32, bool) {
    let index = w & 0xFFF;
    // The low parts equal to fp's low 6 bits are the fields the XOR makes 0: four compares,
    // which the compiler keeps free of branches.
    let x = ((w >> semi::INDEX_BITS) ^ (u64::from(fp & 0x3F) * LOW_ONES)) & 0xFF_FFFF;
    // A field is 0 iff neither its top bit nor (its low 5 bits + 31) has bit 5 set; the sums
    // stay within their fields (31 + 31 < 64), so no field's answer borrows from another.
    // The multiplication moves field k's bit (6k + 5, shifted down by 5) to bit 18 + k; its
    // other products land on distinct bits (6j − 5k + 18 for j ≠ k), so nothing carries.
    let y = (x & LOW_FIVES) + LOW_FIVES;
    let zero = !(y | x) & (LOW_ONES << 5);
    let lows = (((zero >> 5) * ZERO_GATHER) >> 18) as u32 & 0xF;
    let nibble = u64::from(fp >> 6);
    let slots = ((semi::SLOTS_WITH[index as usize] >> (4 * nibble)) & 0xF) as u32;
    (slots & lows, index >= semi::COMBINATIONS as u64)
}

/// The one-shot lookup in a block of the default layout (semi-sorted, `b` = 4, `f` = 10) whose
/// `m ≥ 2` buckets are `body`: both buckets read in place, one load each, nothing copied. A
/// bucket whose index is past the last code answers "maybe", as [`contains_in_place`] does.
#[inline(always)]
fn contains_default(body: &[u8], m: u64, seed: u64, h: KeyHash) -> bool {
    let s = locate(hash::seeded(h, seed), m, 10);
    let w1 = bucket_word(body, s.i1 * DEFAULT_BUCKET_BITS);
    let w2 = bucket_word(body, s.i2 * DEFAULT_BUCKET_BITS);
    let (a, past_a) = default_matches(w1, s.fp);
    let (b, past_b) = default_matches(w2, s.fp);
    // `|`, not `||`: no branch on the answer of either bucket.
    ((a | b) != 0) | past_a | past_b
}

/// The 64 bits of `body` from bit `pos` on, shifted so that bit `pos` is bit 0, for a bucket
/// that ends inside `body` (`pos + 36 ≤ 8 · body.len()`) of a body of at least 8 bytes (a
/// default-layout block of `m ≥ 2` buckets has 9 or more): one load of the 8 bytes at
/// `pos / 8`, or of the body's last 8 where fewer remain, shifted (by at most 3 bytes and 7
/// bits). No branch: in a block of a few buckets a lookup often reads one in the last 8
/// bytes, and a branch on that (a copy of the tail where fewer than 8 remained, before)
/// mispredicted on about every other call.
#[inline(always)]
fn bucket_word(body: &[u8], pos: u64) -> u64 {
    let at = (pos >> 3) as usize;
    let start = at.min(body.len().saturating_sub(8));
    let word = body
        .get(start..start + 8)
        .map_or(0, |w| u64::from_le_bytes(w.try_into().unwrap_or([0; 8])));
    let shift = 8 * (at - start) as u32 + (pos & 7) as u32;
    debug_assert!(shift <= 31, "a bucket past the body's end");
    word.wrapping_shr(shift)
}

/// The one-shot lookup's fast path for a version-2 block of the default layout: the header's
/// one flag decides the layout, and the length and check are tested without building errors.
/// `None` for any other block, or one that fails a check (then [`parse`] gives the error).
#[inline(always)]
fn contains_v2_default(block: &[u8], h: KeyHash) -> Option<bool> {
    let (&[b0, b1], body) = block.split_first_chunk::<2>()?;
    if b0 != MAGIC_V2 || b1 & V2_LAYOUT_FLAG != 0 {
        return None;
    }
    let ok_check = b1 >> 4
        == check_of(
            block.len() as u64,
            u32::from(b0) | u32::from(b1 & 0x0F) << 8,
        );
    let len = body.len() as u64;
    let m = len * 8 / DEFAULT_BUCKET_BITS;
    // 36-bit buckets: an even m ends on a byte, an odd one leaves 4 bits of the last byte 0.
    // Every test is made, joined with `&` rather than `&&`: one branch, which a well-formed
    // block always takes the same way (branches on the count's parity or the block's last
    // byte mispredicted on blocks of mixed sizes). The empty filter (`m` = 0) goes the other
    // way, with the damaged blocks.
    let last = block[block.len() - 1];
    let ok = ok_check
        & (2..MAX_BUCKETS / 2).contains(&m)
        & ((m * DEFAULT_BUCKET_BITS).div_ceil(8) == len)
        & ((m & 1 == 0) | (last >> 4 == 0));
    if !ok {
        return (len == 0 && ok_check).then_some(false);
    }
    // Most blocks are built with seed index 0. A branch on it, rather than the seed read from
    // the header as data, lets the processor predict the index and derive the key's buckets
    // and load them from the key's hash and the block's length alone, while the header's own
    // load is still on its way: in a block that is not in cache, one miss instead of the
    // header's miss and then the buckets' (and the seeded derivation no longer waits for it).
    // The other seeds out of line, so that the two paths stay two.
    if b1 & 0x07 == 0 {
        Some(contains_default(body, m, seed_of(0), h))
    } else {
        Some(contains_default_seeded(body, m, seed_of(b1 & 0x07), h))
    }
}

/// [`contains_default`] for a block built with a seed index other than 0, kept out of line
/// ([`contains_v2_default`] says why).
#[inline(never)]
fn contains_default_seeded(body: &[u8], m: u64, seed: u64, h: KeyHash) -> bool {
    contains_default(body, m, seed, h)
}

/// Asks for the lines of both groups of `group` bytes at `starts` at once, so that in a block
/// larger than the caches their two misses overlap each other and the work before the copy.
#[inline(always)]
fn prefetch_groups(body: &[u8], starts: [usize; 2], group: usize) {
    for start in starts {
        crate::prefetch::prefetch(body, start);
        crate::prefetch::prefetch(body, start + group - 1);
    }
}

/// Whether the semi-sorted bucket at bit `pos` has an index past the last code (3875): it
/// names no fingerprints, so a lookup that reads it answers "maybe" (FORMAT.md §11.2).
fn past_last_code(region: Region<'_>, pos: u64) -> bool {
    region.window(pos) & ((1 << semi::INDEX_BITS) - 1) >= semi::COMBINATIONS as u64
}

/// A compact filter block (FORMAT.md §11) ready for lookups: its buckets copied into a padded
/// region once, then read through the same [`FilterRef`] kernels as every other filter.
///
/// A compact block is what [`FilterBuilder::finish_compact`](crate::FilterBuilder::finish_compact)
/// returns: a filter of any size, 0 keys included, in 2 bytes of header (4 for a layout other
/// than the default) and exactly its buckets, for a block whose integrity its container checks
/// (it carries a check over its header and length, no checksum of its buckets). For a one-off
/// lookup in a block (what a LevelDB filter policy does for each read),
/// [`block_contains`](Self::block_contains) answers without keeping anything.
///
/// ```
/// use cuckoo_sst::{CompactFilter, Config, FilterBuilder};
/// let mut b = FilterBuilder::new(Config::new(0));
/// for k in 0..40u32 {
///     b.add_key(&k.to_le_bytes());
/// }
/// let block = b.finish_compact()?;
/// assert!(block.len() <= 1 + 40 * 10 / 8); // less than Bloom's 10 bits a key and its byte
///
/// let f = CompactFilter::from_bytes(&block)?;
/// assert!((0..40u32).all(|k| f.contains(&k.to_le_bytes())));
/// assert_eq!(f.len(), 40);
/// assert!(CompactFilter::block_contains(&block, &7u32.to_le_bytes())?);
/// # Ok::<(), cuckoo_sst::Error>(())
/// ```
#[derive(Clone)]
pub struct CompactFilter {
    geo: Geometry,
    seed: u64,
    len: u64,
    block_len: usize,
    table: TableBuf,
}

impl CompactFilter {
    /// Reads a compact block: its header checked against its length, its buckets checked to be
    /// well formed (zero padding bits; semi-sorted buckets valid and sorted) and counted. The
    /// bytes are copied; the block may sit at any address.
    ///
    /// ```
    /// use cuckoo_sst::{CompactFilter, Error};
    /// assert!(matches!(CompactFilter::from_bytes(b"CUCKOSST"), Err(Error::BadMagic { .. })));
    /// assert!(matches!(CompactFilter::from_bytes(&[0xC1]), Err(Error::Truncated { .. })));
    /// ```
    pub fn from_bytes(block: &[u8]) -> Result<CompactFilter> {
        let p = parse(block)?;
        let (b, f, e) = (
            p.layout.bucket_size(),
            p.layout.fp_bits(),
            p.layout.encoding(),
        );
        // The buckets in a table of the next even count (an odd m's last bucket empty),
        // checked (§11.2 step 7) and counted there.
        let stored = Geometry::new((p.m + p.m % 2).max(2), b, f, e)?;
        let mut table = TableBuf::zeroed(stored.table_bytes())?;
        table.bytes_mut()[..p.body.len()].copy_from_slice(p.body);
        let len = table::scan(&stored, table.bytes())
            .map_err(|reason| Error::corrupt("compact buckets", reason))?;
        if p.m.is_multiple_of(2) {
            return Ok(CompactFilter {
                geo: stored,
                seed: p.seed,
                len,
                block_len: block.len(),
                table,
            });
        }
        // An odd m derives over 2m buckets and halves (FORMAT.md §11.5): bucket j of the block
        // is buckets 2j and 2j + 1 of a classic table of 2m, which the classic kernels read
        // with the same answers.
        let geo = Geometry::new(2 * p.m, b, f, e)?;
        let mut wide = TableBuf::zeroed(geo.table_bytes())?;
        let (from, to) = (table.bytes(), wide.bytes_mut());
        with_codec!(stored.layout(), c => {
            for j in 0..p.m {
                let slots = c.read(from, j);
                c.store_all(to, 2 * j, &slots);
                c.store_all(to, 2 * j + 1, &slots);
            }
        });
        Ok(CompactFilter {
            geo,
            seed: p.seed,
            len,
            block_len: block.len(),
            table: wide,
        })
    }

    /// Whether the key may be in the compact block `block` (version 1 or 2), from its bytes
    /// alone: its header, its check and its length are checked (FORMAT.md §11.2 steps 1 to 6,
    /// §11.5 steps 1 to 5), its buckets are not (the container checked the block; any bytes are
    /// read safely). For one lookup per block, as a filter policy makes; keep a
    /// [`CompactFilter`] to ask one block many times.
    ///
    /// It reads the key's two buckets where they lie and copies nothing else, so a lookup costs
    /// the same on a block of any size. A semi-sorted bucket whose index is past the last code,
    /// which no writer makes, answers `true` ("maybe"). A version-2 block whose header or
    /// length was damaged is refused (`Err`: a filter policy reads the table) unless its 4-bit
    /// check agrees by chance, about 1 in 16. Damaged bucket bits, and in version 1 a changed
    /// seed index or a cut to another whole number of buckets, are read as they are and can
    /// answer `false` for a key that was added (FORMAT.md §11.2 and §11.5 list what
    /// [`from_bytes`](Self::from_bytes) catches and what nothing can).
    ///
    /// ```
    /// use cuckoo_sst::{CompactFilter, Config, FilterBuilder};
    /// let empty = FilterBuilder::new(Config::new(0)).finish_compact()?;
    /// assert_eq!(empty.len(), 2); // the header alone
    /// assert!(!CompactFilter::block_contains(&empty, b"anything")?);
    ///
    /// // Two semi-sorted buckets whose indices (0xFFF) are past the last code: "maybe".
    /// let mut one = FilterBuilder::new(Config::new(0));
    /// one.add_key(b"k");
    /// let mut damaged = one.finish_compact()?;
    /// damaged[2..].fill(0xFF);
    /// assert!(CompactFilter::from_bytes(&damaged).is_err());
    /// assert!(CompactFilter::block_contains(&damaged, b"anything")?);
    ///
    /// // A block cut short: its check no longer matches its length.
    /// assert!(CompactFilter::block_contains(&damaged[..5], b"anything").is_err());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    #[inline]
    pub fn block_contains(block: &[u8], key: &[u8]) -> Result<bool> {
        CompactFilter::block_contains_hash(block, KeyHash::of(key))
    }

    /// The one-shot lookup's fast path: `Some(answer)` for a version-2 block of the default
    /// layout whose header and length pass their checks — every block a default builder makes —
    /// and `None` for any other block, which [`block_contains`](Self::block_contains) reads
    /// and, if it is damaged, names what is wrong with. Inlined into its caller, it neither
    /// allocates nor builds an error: for a filter policy's callback, where a call's fixed
    /// costs are most of a small block's lookup.
    ///
    /// ```
    /// use cuckoo_sst::{CompactFilter, Config, FilterBuilder};
    /// let mut b = FilterBuilder::new(Config::new(0));
    /// b.add_key(b"k");
    /// let block = b.finish_compact()?;
    /// assert_eq!(CompactFilter::block_contains_default(&block, b"k"), Some(true));
    /// // A damaged header: not answered here; `block_contains` says why.
    /// let mut damaged = block.clone();
    /// damaged[0] ^= 1;
    /// assert_eq!(CompactFilter::block_contains_default(&damaged, b"k"), None);
    /// assert!(CompactFilter::block_contains(&damaged, b"k").is_err());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    #[inline]
    pub fn block_contains_default(block: &[u8], key: &[u8]) -> Option<bool> {
        contains_v2_default(block, KeyHash::of(key))
    }

    /// [`block_contains`](Self::block_contains) for a key hashed once with [`KeyHash::of`].
    ///
    /// ```
    /// use cuckoo_sst::{CompactFilter, Config, FilterBuilder, KeyHash};
    /// let mut b = FilterBuilder::new(Config::new(0));
    /// b.add_key(b"k");
    /// let block = b.finish_compact()?;
    /// assert!(CompactFilter::block_contains_hash(&block, KeyHash::of(b"k"))?);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    #[inline]
    pub fn block_contains_hash(block: &[u8], h: KeyHash) -> Result<bool> {
        // Inlined into the caller (a filter policy's callback, the C ABI's lookup): the
        // common block's answer in registers, with no call; every other block out of line.
        match contains_v2_default(block, h) {
            Some(answer) => Ok(answer),
            None => CompactFilter::block_contains_parsed(block, h),
        }
    }

    /// [`block_contains_hash`](Self::block_contains_hash) for a block other than a well-formed
    /// version-2 block of the default layout: its header parsed, then read in place.
    #[inline(never)]
    fn block_contains_parsed(block: &[u8], h: KeyHash) -> Result<bool> {
        let p = parse(block)?;
        if p.m == 0 {
            return Ok(false);
        }
        let (e, b, f) = V2_DEFAULT;
        let l = &p.layout;
        if (l.encoding(), l.bucket_size(), l.fp_bits()) == (e, b, f) {
            return Ok(contains_default(p.body, p.m, p.seed, h));
        }
        Ok(contains_in_place(&p, h))
    }

    /// The view every lookup goes through: a classic table with the block's answers. A block
    /// of an odd number of buckets `m` is viewed as the classic table of `2m` buckets it derives
    /// over, each of its buckets twice (FORMAT.md §11.5), so the view's bucket count is `2m`
    /// and its length the block's key count.
    ///
    /// ```
    /// let f = cuckoo_sst::CompactFilter::from_bytes(&[0xC1, 0x0A, 10, 0])?; // empty, version 1
    /// assert!(f.as_filter_ref().is_empty());
    /// let mut b = cuckoo_sst::FilterBuilder::new(cuckoo_sst::Config::new(0));
    /// for k in 0..9u32 {
    ///     b.add_key(&k.to_le_bytes()); // 3 buckets
    /// }
    /// let f = cuckoo_sst::CompactFilter::from_bytes(&b.finish_compact()?)?;
    /// assert_eq!((f.as_filter_ref().num_buckets(), f.len()), (6, 9));
    /// assert!(f.as_filter_ref().contains(&4u32.to_le_bytes()));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn as_filter_ref(&self) -> FilterRef<'_> {
        FilterRef::new(self.geo, self.seed, self.len, self.table.bytes())
    }

    /// Whether the key may be in the filter: `false` means certainly absent.
    ///
    /// ```
    /// let mut b = cuckoo_sst::FilterBuilder::new(cuckoo_sst::Config::new(0));
    /// b.add_key(b"k");
    /// let f = cuckoo_sst::CompactFilter::from_bytes(&b.finish_compact()?)?;
    /// assert!(f.contains(b"k"));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn contains(&self, key: &[u8]) -> bool {
        self.as_filter_ref().contains(key)
    }

    /// [`contains`](Self::contains) for a key hashed once with [`KeyHash::of`].
    ///
    /// ```
    /// let mut b = cuckoo_sst::FilterBuilder::new(cuckoo_sst::Config::new(0));
    /// b.add_key(b"k");
    /// let f = cuckoo_sst::CompactFilter::from_bytes(&b.finish_compact()?)?;
    /// assert!(f.contains_hash(cuckoo_sst::KeyHash::of(b"k")));
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn contains_hash(&self, h: KeyHash) -> bool {
        self.as_filter_ref().contains_hash(h)
    }

    /// The number of keys the block holds (its occupied slots).
    ///
    /// ```
    /// let mut b = cuckoo_sst::FilterBuilder::new(cuckoo_sst::Config::new(0));
    /// b.add_key(b"a");
    /// b.add_key(b"a"); // duplicates are dropped
    /// assert_eq!(cuckoo_sst::CompactFilter::from_bytes(&b.finish_compact()?)?.len(), 1);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        usize::try_from(self.len).unwrap_or(usize::MAX)
    }

    /// Whether the block holds no key.
    ///
    /// ```
    /// let empty = cuckoo_sst::FilterBuilder::new(cuckoo_sst::Config::new(0)).finish_compact()?;
    /// assert!(cuckoo_sst::CompactFilter::from_bytes(&empty)?.is_empty());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The length of the block it was read from, header included.
    ///
    /// ```
    /// let mut b = cuckoo_sst::FilterBuilder::new(cuckoo_sst::Config::new(0));
    /// b.add_key(b"k");
    /// let block = b.finish_compact()?;
    /// assert_eq!(cuckoo_sst::CompactFilter::from_bytes(&block)?.block_len(), block.len());
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn block_len(&self) -> usize {
        self.block_len
    }

    /// The false-positive bound of a lookup whose two buckets are full (every slot of a
    /// minimal compact block is, or nearly).
    ///
    /// ```
    /// let mut b = cuckoo_sst::FilterBuilder::new(cuckoo_sst::Config::new(0));
    /// b.add_key(b"k");
    /// let f = cuckoo_sst::CompactFilter::from_bytes(&b.finish_compact()?)?;
    /// assert!(f.expected_fpr() <= 0.01);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn expected_fpr(&self) -> f64 {
        self.geo.fpr_bound()
    }
}

impl std::fmt::Debug for CompactFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactFilter")
            .field("block_len", &self.block_len)
            .field("len", &self.len)
            .field("num_buckets", &self.geo.num_buckets())
            .field("bucket_size", &self.geo.bucket_size())
            .field("fingerprint_bits", &self.geo.fp_bits())
            .field("encoding", &self.geo.encoding())
            .field("seed", &self.seed)
            .finish()
    }
}

/// The header of a version-1 compact block for geometry `geo` and seed index `k`.
fn header_v1(geo: &Geometry, k: u8) -> [u8; HEADER_LEN] {
    let log2_b = geo.bucket_size().trailing_zeros() as u8;
    [
        MAGIC,
        geo.encoding().code() | log2_b << 2,
        geo.fp_bits() as u8,
        k,
    ]
}

/// A version-2 compact block (FORMAT.md §11.5) of the layout of `geo`, seed index `k` (below
/// [`V2_SEED_INDICES`]) and the bytes `buckets` that hold its buckets (none for an empty
/// filter): the header, its check over the header and the block's length, and the buckets.
fn encode_v2(geo: &Geometry, k: u8, buckets: &[u8]) -> Vec<u8> {
    let (header, header_len) = header_v2(geo, k, buckets.len());
    let mut out = Vec::with_capacity(header_len + buckets.len());
    out.extend_from_slice(&header[..header_len]);
    out.extend_from_slice(buckets);
    out
}

/// The header of a version-2 block of the layout of `geo` and seed index `k` whose buckets
/// take `buckets_len` bytes: its bytes (the first of the returned length) with the check over
/// them and the block's length.
fn header_v2(geo: &Geometry, k: u8, buckets_len: usize) -> ([u8; HEADER_LEN_V2_LAYOUT], usize) {
    let (e, b, f) = V2_DEFAULT;
    let named = (geo.encoding(), geo.bucket_size(), geo.fp_bits()) != (e, b, f);
    if !named {
        let [b0, b1] = header_v2_default(k, HEADER_LEN_V2 + buckets_len);
        return ([b0, b1, 0, 0], HEADER_LEN_V2);
    }
    let [_, layout, f, _] = header_v1(geo, k);
    let mut h = [MAGIC_V2, k | V2_LAYOUT_FLAG, layout, f];
    h[1] |= check_of(
        (HEADER_LEN_V2_LAYOUT + buckets_len) as u64,
        u32::from_le_bytes(h),
    ) << 4;
    (h, HEADER_LEN_V2_LAYOUT)
}

/// The 2-byte header of a version-2 block of the default layout, seed index `k` and
/// `block_len` bytes in all (FORMAT.md §11.5): the magic, then `k` with the check over the
/// two bytes and the length in the top nibble.
fn header_v2_default(k: u8, block_len: usize) -> [u8; 2] {
    let word = u32::from(MAGIC_V2) | u32::from(k) << 8;
    [MAGIC_V2, k | check_of(block_len as u64, word) << 4]
}

/// The compact block of a table of the classic derivation (an even number of buckets, seed
/// index `k`): version 2 for a seed index below [`V2_SEED_INDICES`], the same buckets in
/// version 1 for a larger one (`FilterBuilder::finish` retries with up to 12).
pub(crate) fn encode(geo: &Geometry, k: u8, table: &[u8], len: u64) -> Vec<u8> {
    let buckets = if len > 0 {
        &table[..geo.used_bytes()]
    } else {
        &[]
    };
    if k < V2_SEED_INDICES {
        return encode_v2(geo, k, buckets);
    }
    let mut out = Vec::with_capacity(HEADER_LEN + buckets.len());
    out.extend_from_slice(&header_v1(geo, k));
    out.extend_from_slice(buckets);
    out
}

/// The compact block (version 2) of the distinct key hashes `hashes` (unseeded), with
/// `config`'s layout, in the fewest buckets — any count from 2, odd ones included — some seed
/// index places them in (tried from 0 up), if any within [`EXACT_MAX`] keys; `None` above that.
#[cfg(test)]
pub(crate) fn build_exact(config: &crate::Config, hashes: &[u64]) -> Result<Option<Vec<u8>>> {
    let mut out = Vec::new();
    Ok(build_exact_into(config.layout()?, hashes, &mut out)?.then_some(out))
}

/// [`build_exact`] into `out` (cleared first, its memory kept), for the configuration's
/// layout `(b, f, encoding)` ([`Config::layout`]): true if the block was built, false (`out`
/// empty) above [`EXACT_MAX`] keys.
pub(crate) fn build_exact_into(
    (b, f, encoding): (u32, u32, Encoding),
    hashes: &[u64],
    out: &mut Vec<u8>,
) -> Result<bool> {
    out.clear();
    // The default layout needs no geometry (valid by construction): its header and buckets
    // are written by `emit_default`.
    let default = (encoding, b, f) == V2_DEFAULT;
    let layout = if default && !hashes.is_empty() {
        None
    } else {
        Some(Geometry::new(2, b, f, encoding)?)
    };
    if hashes.is_empty() {
        let layout = layout.as_ref().expect("made for an empty block");
        let (header, header_len) = header_v2(layout, 0, 0);
        out.extend_from_slice(&header[..header_len]);
        return Ok(true);
    }
    if hashes.len() > EXACT_MAX {
        return Ok(false);
    }
    let n = hashes.len() as u64;
    // Up to EXACT_FULL keys, the search starts at the fewest buckets (every slot filled) and
    // tries every seed a size; above, a table filled to the last slot needs many seeds, each a
    // full search, so it starts at a 98 % load and tries 4 (FORMAT.md §11.5).
    let (mut m, seeds) = if n <= EXACT_FULL {
        (n.div_ceil(u64::from(b)), V2_SEED_INDICES)
    } else {
        ((n as f64 / (f64::from(b) * 0.98)).ceil() as u64, 4)
    };
    m = m.max(2);
    // One scratch placement a thread, kept between blocks: a filter policy builds thousands of
    // small blocks, and allocating the search's arrays for each cost more than the search.
    thread_local! {
        // Made on the thread's first block (a constant initializer: no lazy-init check
        // through a call each block).
        static SCRATCH: std::cell::RefCell<Option<Placement>> =
            const { std::cell::RefCell::new(None) };
    }
    SCRATCH.with(|scratch| {
        let mut fresh = None;
        let mut guard = scratch.try_borrow_mut();
        let place = match guard.as_deref_mut() {
            Ok(p) => p.get_or_insert_with(Placement::default),
            Err(_) => fresh.insert(Placement::default()),
        };
        loop {
            if m as usize > BUCKETS_CAP || m as usize * b as usize > SLOTS_CAP {
                // Past the placement's arrays (not seen: the sizes tried stay near the keys'
                // count over the bucket size): the keys go to the filter `finish` builds.
                return Ok(false);
            }
            for k in 0..seeds {
                // The default width's derivation with its constants folded in (the locate was
                // a quarter of a build's instructions, once a seed).
                if f == 10 {
                    place.locate(hashes, seed_of(k), m, 10, b);
                } else {
                    place.locate(hashes, seed_of(k), m, f, b);
                }
                if place.solve(m as usize, b as usize) {
                    match &layout {
                        None => place.emit_default(k, m as usize, out)?,
                        Some(layout) => place.emit(layout, k, m, out)?,
                    }
                    return Ok(true);
                }
            }
            m += 1;
        }
    })
}

/// An exact placement of keys in buckets of `b` slots: each key in one of its two buckets,
/// found by augmenting paths (a breadth-first search from the key's buckets to one with room,
/// moving each key on the path to its other bucket), so that if any placement exists, one is
/// found.
///
/// Kept a thread between blocks, in arrays of fixed length for up to [`BUCKETS_CAP`] buckets
/// (about 140 KiB, allocated once a thread): a search only zeroes its buckets' loads (the slots
/// past a bucket's load are never read, and the search marks the buckets it reached with a
/// stamp that no earlier search used).
struct Placement {
    /// Each key's two buckets and fingerprint.
    keys: Vec<(u32, u32, u32)>,
    /// The keys in each bucket, `b` slots a bucket, the first `load` of them in use: each
    /// key's fingerprint, what [`emit`](Self::emit) stores, and its other bucket (its own for a
    /// key with one bucket), where the search reads a resident can go; neither reads the keys.
    slots: Box<[(u32, u32); SLOTS_CAP]>,
    load: Box<[u8; BUCKETS_CAP]>,
    /// The bucket a search reached each bucket from, and the slot of the key it would move
    /// from there (`u32::MAX` for the key's own buckets); valid where `seen` holds the
    /// search's stamp.
    from: Box<[(u32, u32); BUCKETS_CAP]>,
    /// The stamp of the search that last reached each bucket (0: none).
    seen: Box<[u32; BUCKETS_CAP]>,
    /// The last stamp used.
    stamp: u32,
    /// How many keys may go in each bucket.
    degree: Box<[u16; BUCKETS_CAP]>,
    /// The buckets a search reached, in order.
    queue: Box<[u32; BUCKETS_CAP]>,
}

/// The most buckets a [`Placement`] holds: more than [`EXACT_MAX`] keys take in buckets of 2
/// or more at a load above 1/2. Its arrays have fixed, power-of-two lengths, so that the
/// placement's hot loops index them with a mask instead of a bounds check (a fifth of their
/// instructions): a bucket index is below the bucket count, so the mask never changes it.
const BUCKETS_CAP: usize = 4096;

/// The most slots (buckets × bucket size) a [`Placement`] holds.
const SLOTS_CAP: usize = 16384;

impl Default for Placement {
    fn default() -> Placement {
        Placement {
            keys: Vec::new(),
            slots: Box::new([(0, 0); SLOTS_CAP]),
            load: Box::new([0; BUCKETS_CAP]),
            from: Box::new([(0, 0); BUCKETS_CAP]),
            seen: Box::new([0; BUCKETS_CAP]),
            stamp: 0,
            degree: Box::new([0; BUCKETS_CAP]),
            queue: Box::new([0; BUCKETS_CAP]),
        }
    }
}

impl Placement {
    /// The version-2 block of the placement [`solve`](Self::solve) found for `m` buckets with
    /// seed index `k`, in `layout` (a geometry of 2 buckets). The buckets are stored straight
    /// into the block, each once from its fingerprints (a semi-sorted bucket is encoded once a
    /// bucket, not once a key), behind room for the header; the padding of the table that
    /// stores them (the next even count) is cut off.
    fn emit(&self, layout: &Geometry, k: u8, m: u64, out: &mut Vec<u8>) -> Result<()> {
        let (e, b, f) = (layout.encoding(), layout.bucket_size(), layout.fp_bits());
        if (e, b, f) == V2_DEFAULT {
            return self.emit_default(k, m as usize, out);
        }
        let used = (m * e.bucket_bits(b, f)).div_ceil(8) as usize;
        let (header, header_len) = header_v2(layout, k, used);
        // Stored in a table of the next even count, whose last bucket an odd m leaves empty.
        let geo = Geometry::new(m + m % 2, b, f, e)?;
        let bs = b as usize;
        let total = header_len + geo.table_bytes();
        out.clear();
        out.try_reserve_exact(total)
            .map_err(|_| Error::OutOfMemory {
                bytes: total as u64,
            })?;
        out.resize(total, 0);
        let tb = &mut out[header_len..];
        with_codec!(geo.layout(), c => {
            for j in 0..m as usize {
                let load = usize::from(self.load[j]);
                if load == 0 {
                    continue;
                }
                let mut slots = [0u32; 8];
                for (slot, &(fp, _)) in slots.iter_mut().zip(&self.slots[j * bs..j * bs + load]) {
                    *slot = fp;
                }
                c.store_all(tb, j as u64, &slots);
            }
        });
        out.truncate(header_len + used);
        out[..header_len].copy_from_slice(&header[..header_len]);
        Ok(())
    }

    /// Sets [`keys`](Self::keys) to the buckets and fingerprints of `hashes` for `seed` in `m`
    /// buckets of `b` slots and `f`-bit fingerprints; where the table has fewer than `b` free
    /// slots, counts each bucket's [`degree`](Self::degree) in the same pass, for
    /// [`solve`](Self::solve)'s check. Inlined, so that a constant `f` folds into the
    /// derivation.
    #[inline(always)]
    fn locate(&mut self, hashes: &[u64], seed: u64, m: u64, f: u32, b: u32) {
        self.keys.resize(hashes.len(), (0, 0, 0));
        let at = |h: u64| {
            let s = locate(hash::seeded(KeyHash::from_u64(h), seed), m, f);
            (s.i1 as u32, s.i2 as u32, s.fp)
        };
        let slots = m * u64::from(b);
        if slots < hashes.len() as u64 + u64::from(b) {
            self.degree[..m as usize].fill(0);
            let degree = &mut *self.degree;
            if m.is_multiple_of(2) {
                // An even count: every key has two buckets (and `locate` has no halving).
                let m = m & !1;
                for (key, &h) in self.keys.iter_mut().zip(hashes) {
                    let s = locate(hash::seeded(KeyHash::from_u64(h), seed), m, f);
                    let (i1, i2) = (s.i1 as u32, s.i2 as u32);
                    *key = (i1, i2, s.fp);
                    degree[i1 as usize & (BUCKETS_CAP - 1)] += 1;
                    degree[i2 as usize & (BUCKETS_CAP - 1)] += 1;
                }
                return;
            }
            for (key, &h) in self.keys.iter_mut().zip(hashes) {
                let (i1, i2, fp) = at(h);
                *key = (i1, i2, fp);
                // A bucket's degree counts the keys that may go there, a key with one bucket
                // (possible when `m` is odd, about one key in `m`) twice: a degree at least the
                // true one only makes `solve`'s check refuse less, never a seed that places the
                // keys, and costs no compare.
                degree[i1 as usize & (BUCKETS_CAP - 1)] += 1;
                degree[i2 as usize & (BUCKETS_CAP - 1)] += 1;
            }
        } else if m.is_multiple_of(2) {
            // As above, with no degrees: an even count located without the halving.
            let m = m & !1;
            for (key, &h) in self.keys.iter_mut().zip(hashes) {
                let s = locate(hash::seeded(KeyHash::from_u64(h), seed), m, f);
                *key = (s.i1 as u32, s.i2 as u32, s.fp);
            }
        } else {
            for (key, &h) in self.keys.iter_mut().zip(hashes) {
                *key = at(h);
            }
        }
    }

    /// [`emit`](Self::emit) for the default layout (semi-sorted, `b` = 4, `f` = 10), seed
    /// index `k` and `m` buckets: its 2-byte header, then each bucket's 36 bits encoded from its
    /// fingerprints and appended two buckets (9 bytes) at a time, nothing zeroed or read back.
    fn emit_default(&self, k: u8, m: usize, out: &mut Vec<u8>) -> Result<()> {
        const B: usize = BUCKETS_CAP - 1;
        const S: usize = SLOTS_CAP - 1;
        let used = (m as u64 * DEFAULT_BUCKET_BITS).div_ceil(8) as usize;
        let total = HEADER_LEN_V2 + used;
        out.clear();
        out.try_reserve_exact(total)
            .map_err(|_| Error::OutOfMemory {
                bytes: total as u64,
            })?;
        out.extend_from_slice(&header_v2_default(k, total));
        let bucket = |j: usize| -> u64 {
            // The slots past the bucket's load read as 0 (empty), with no branch on the load.
            let load = usize::from(self.load[j & B]);
            let fps: [u32; 4] = std::array::from_fn(|s| {
                self.slots[(j * 4 + s) & S].0 & 0u32.wrapping_sub(u32::from(s < load))
            });
            let (index, lows) = semi::encode(fps, 6);
            lows.iter().enumerate().fold(index, |w, (s, &l)| {
                w | u64::from(l) << (semi::INDEX_BITS + 6 * s as u32)
            })
        };
        for j in (0..m - m % 2).step_by(2) {
            let pair = u128::from(bucket(j)) | u128::from(bucket(j + 1)) << DEFAULT_BUCKET_BITS;
            out.extend_from_slice(&pair.to_le_bytes()[..9]);
        }
        if m % 2 == 1 {
            // The last bucket's 36 bits in 5 bytes, the last byte's high nibble 0.
            out.extend_from_slice(&bucket(m - 1).to_le_bytes()[..5]);
        }
        debug_assert_eq!(out.len(), total);
        Ok(())
    }

    /// Places every key; false if some key cannot be (then no placement exists).
    #[inline(always)]
    fn solve(&mut self, m: usize, b: usize) -> bool {
        // The default bucket size as a constant: its multiplications become shifts.
        if b == 4 {
            self.solve_with(m, 4)
        } else {
            self.solve_with(m, b)
        }
    }

    /// [`solve`](Self::solve), inlined into it so that a constant `b` folds in.
    #[inline(always)]
    fn solve_with(&mut self, m: usize, b: usize) -> bool {
        let Some(slack) = (m * b).checked_sub(self.keys.len()) else {
            return false;
        };
        // Hall's condition for the buckets other than one, x: the keys of none of them, all but
        // the `degree(x)` keys that can go in x, need `n − degree(x) ≤ b(m − 1)` slots, so every
        // bucket needs `degree ≥ b − slack`. Near a full table this refuses most of the seeds
        // that fail (38–94 % of them at 19 to 128 keys of random blocks), for a pass over the
        // keys instead of a search that fails near the last key. (The degrees were counted as
        // the keys were located.)
        //
        // More generally, for the set X of the buckets whose degree is under b: the keys of
        // none of them, all but those that can go in one (at most the sum of their degrees),
        // need `n − Σ_X degree ≤ b(m − |X|)` slots, so the buckets' shortfalls `b − degree`
        // may add up to `slack` at most. Near a full table this also refuses the seeds where
        // two buckets fall short: at 71 keys, half the seeds the search failed on (0.18 → 0.09
        // a block).
        // (The shortfalls summed in 16 bits, widened once: a saturating subtraction the
        // compiler does 8 buckets at a time. `b` is at most 8, a sum at most 8 · 4096.)
        let b16 = b as u16;
        if slack < b
            && self.degree[..m]
                .iter()
                .map(|&d| u32::from(b16.saturating_sub(d)))
                .sum::<u32>() as usize
                > slack
        {
            return false;
        }
        self.load[..m].fill(0);
        let mut key = 0;
        loop {
            // The fast placement: the less loaded of the key's buckets, if it has room (most
            // keys until the table is nearly full), over slices held across keys (the fields
            // of `self` would be reloaded after every store); the search only where both are
            // full.
            let (keys, load) = (&self.keys[..], &mut *self.load);
            let slots = &mut *self.slots;
            const B: usize = BUCKETS_CAP - 1;
            const S: usize = SLOTS_CAP - 1;
            let full = keys[key..].iter().position(|&(i1, i2, fp)| {
                let (l1, l2) = (load[i1 as usize & B], load[i2 as usize & B]);
                let (x, l) = if l2 < l1 { (i2, l2) } else { (i1, l1) };
                if usize::from(l) >= b {
                    return true;
                }
                let slot = (x as usize * b + usize::from(l)) & S;
                slots[slot] = (fp, i1 ^ i2 ^ x);
                load[x as usize & B] = l + 1;
                false
            });
            let Some(full) = full else { return true };
            key += full;
            if !self.search(key as u32, b) {
                return false;
            }
            key += 1;
        }
    }

    /// Places `key`, both of whose buckets are full, by the shortest chain of moves that ends
    /// in a bucket with room; false if there is none. Inlined into [`solve`](Self::solve).
    #[inline(always)]
    fn search(&mut self, key: u32, b: usize) -> bool {
        const B: usize = BUCKETS_CAP - 1;
        const S: usize = SLOTS_CAP - 1;
        let (slots, load) = (&mut *self.slots, &mut *self.load);
        let (i1, i2, fp) = self.keys[key as usize];
        // One move is the chain most searches find: a resident of either bucket whose other
        // bucket has room moves there and the key takes its slot (the breadth-first search
        // below would find the same chain, at several times the cost).
        for x in [i1, i2] {
            let xs = x as usize * b;
            for s in xs..xs + b {
                let (moved, y) = slots[s & S];
                let l = load[y as usize & B];
                if usize::from(l) < b {
                    let to = (y as usize * b + usize::from(l)) & S;
                    slots[to] = (moved, x);
                    load[y as usize & B] = l + 1;
                    slots[s & S] = (fp, i1 ^ i2 ^ x);
                    return true;
                }
            }
        }
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            // Every bucket's stamp is from an earlier search: start them over.
            self.seen.fill(0);
            self.stamp = 1;
        }
        let stamp = self.stamp;
        let (seen, from, queue) = (&mut *self.seen, &mut *self.from, &mut *self.queue);
        // A bucket enters the queue once a search (its stamp): at most `m` entries.
        let mut tail = 0;
        for i in [i1, i2] {
            if seen[i as usize & B] != stamp {
                seen[i as usize & B] = stamp;
                from[i as usize & B] = (u32::MAX, u32::MAX);
                queue[tail & B] = i;
                tail += 1;
            }
        }
        let mut head = 0;
        let mut end = None;
        while head < tail {
            let x = queue[head & B];
            head += 1;
            if usize::from(load[x as usize & B]) < b {
                end = Some(x);
                break;
            }
            for s in 0..b {
                let at = (x as usize * b + s) & S;
                let y = slots[at].1;
                if seen[y as usize & B] != stamp {
                    seen[y as usize & B] = stamp;
                    from[y as usize & B] = (x, at as u32);
                    queue[tail & B] = y;
                    tail += 1;
                }
            }
        }
        let Some(mut x) = end else { return false };
        // Walk back from the bucket with room: each bucket on the path takes the key moved
        // from the bucket before it, which frees that key's slot there for the next one.
        let mut at = (x as usize * b + usize::from(load[x as usize & B])) & S;
        load[x as usize & B] += 1;
        loop {
            let (prev, moved) = from[x as usize & B];
            if prev == u32::MAX {
                slots[at] = (fp, i1 ^ i2 ^ x);
                return true;
            }
            // The moved key's buckets are the one the search came from and this one.
            let moved = moved as usize & S;
            slots[at] = (slots[moved].0, prev);
            at = moved;
            x = prev;
        }
    }

    /// [`solve`](Self::solve) for keys set directly, their degrees counted first as
    /// [`locate`](Self::locate) counts them.
    #[cfg(test)]
    fn solve_counted(&mut self, m: usize, b: usize) -> bool {
        self.degree[..m].fill(0);
        for &(i1, i2, _) in &self.keys {
            self.degree[i1 as usize] += 1;
            self.degree[i2 as usize] += u16::from(i2 != i1);
        }
        self.solve(m, b)
    }

    /// Each key's bucket in the placement the last [`solve`](Self::solve) found, for keys
    /// whose fingerprints all differ (a key is known by its fingerprint).
    #[cfg(test)]
    fn placed(&self, m: usize, b: usize) -> Vec<u32> {
        let key_of = |fp: u32| {
            let mut of = self.keys.iter().enumerate().filter(|k| k.1.2 == fp);
            let key = of.next().expect("a key's fingerprint").0;
            assert!(of.next().is_none(), "two keys with fingerprint {fp}");
            key
        };
        let mut at = vec![u32::MAX; self.keys.len()];
        for x in 0..m {
            for &(fp, _) in &self.slots[x * b..x * b + usize::from(self.load[x])] {
                let key = key_of(fp);
                assert_eq!(at[key], u32::MAX, "key {key} placed twice");
                at[key] = x as u32;
            }
        }
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::hash::SplitMix64;
    use std::collections::HashSet;

    /// The number of buckets a block stores (FORMAT.md §11.1, §11.5).
    fn stored_buckets(block: &[u8]) -> u64 {
        parse(block).unwrap().m
    }

    /// The version-1 block with the same buckets as the version-2 block `v2`, whose bucket
    /// count must be even (the derivations agree there).
    fn to_v1(v2: &[u8]) -> Vec<u8> {
        let p = parse(v2).unwrap();
        assert_eq!(p.m % 2, 0);
        let k = (0..SEED_INDICES).find(|&k| seed_of(k) == p.seed).unwrap();
        let mut out = header_v1(&p.layout, k).to_vec();
        out.extend_from_slice(p.body);
        out
    }

    fn keys(n: usize, salt: u64) -> Vec<u64> {
        let mut rng = SplitMix64::new(salt);
        let mut v: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    #[test]
    fn the_placement_is_exact_and_fills_the_smallest_table() {
        for n in [
            1usize, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 40, 41, 100, 255, 256, 300, 1000,
        ] {
            for salt in 0..5 {
                let hashes = keys(n, salt * 1000 + n as u64);
                let block = build_exact(&Config::new(0), &hashes).unwrap().unwrap();
                assert_eq!(block[0], MAGIC_V2);
                let f = CompactFilter::from_bytes(&block).unwrap();
                assert_eq!(f.len(), hashes.len());
                for &h in &hashes {
                    assert!(f.contains_hash(KeyHash::from_u64(h)), "n={n} lost {h:#x}");
                    assert!(
                        CompactFilter::block_contains_hash(&block, KeyHash::from_u64(h)).unwrap()
                    );
                }
                let minimal = (hashes.len() as u64).div_ceil(4).max(2);
                let m = stored_buckets(&block);
                // Small sets fill the smallest table, or one of 1 more bucket (8 seeds a
                // size); larger ones at least 95 % of theirs (from a 98 % start, 4 seeds a size).
                assert!(
                    if n as u64 <= EXACT_FULL {
                        m <= minimal + 1
                    } else {
                        hashes.len() as f64 >= 0.95 * (4 * m) as f64
                    },
                    "n={n}: {m} buckets, {minimal} minimal"
                );
            }
        }
    }

    /// The search's sizes, as FORMAT.md §11.5 gives them: up to `EXACT_FULL` keys it starts
    /// from the fewest buckets that hold them, `⌈n/b⌉` (at least 2), with 8 seed indices a
    /// size; above, from `⌈n/(0.98·b)⌉` with 4; a size where no seed places the keys is
    /// followed by the one a bucket larger. The key sets are fixed (SplitMix64 streams), so
    /// where each lands is too: all of these fill the first size tried but three (salts 3120,
    /// 3128, 5128), which take the next.
    #[test]
    fn the_search_tries_the_sizes_format_md_gives() {
        let b = 4u64;
        let start = |n: u64| {
            let m = if n <= EXACT_FULL {
                n.div_ceil(b)
            } else {
                (n as f64 / (b as f64 * 0.98)).ceil() as u64
            };
            m.max(2)
        };
        // 4096 keys need ⌈1044.9⌉ = 1045 buckets (FORMAT.md §11.5), 9 keys ⌈9/4⌉ = 3.
        assert_eq!(start(4096), 1045);
        assert_eq!(start(9), 3);
        let mut cases: Vec<(usize, u64, u64)> = Vec::new();
        for n in [1usize, 9, 40, 100, 120, 127, 128, 129, 200, 500, 1000, 2000] {
            for salt in 0..6 {
                let salt = salt * 1000 + n as u64;
                let extra = u64::from([3120, 3128, 5128].contains(&salt));
                cases.push((n, salt, extra));
            }
        }
        for (n, salt, extra) in cases {
            let hashes = keys(n, salt);
            let block = build_exact(&Config::new(0), &hashes).unwrap().unwrap();
            let m = stored_buckets(&block);
            let want = start(hashes.len() as u64) + extra;
            assert_eq!(m, want, "n={n} salt={salt}");
            let seeds = if n as u64 <= EXACT_FULL { 8 } else { 4 };
            assert!(
                block[1] & 7 < seeds,
                "n={n} salt={salt}: seed index {}",
                block[1] & 7
            );
        }
    }

    /// The exact placement takes up to `EXACT_MAX` distinct keys and leaves more to the
    /// builder's sizing (`None`).
    #[test]
    fn the_exact_placement_stops_at_its_limit() {
        let hashes = keys(EXACT_MAX + 1, 7);
        assert_eq!(hashes.len(), EXACT_MAX + 1);
        let config = Config::new(0);
        assert_eq!(build_exact(&config, &hashes).unwrap(), None);
        let block = build_exact(&config, &hashes[..EXACT_MAX]).unwrap().unwrap();
        let f = CompactFilter::from_bytes(&block).unwrap();
        assert_eq!(f.len(), EXACT_MAX);
        assert!(
            hashes[..EXACT_MAX]
                .iter()
                .all(|&h| f.contains_hash(KeyHash::from_u64(h)))
        );
    }

    #[test]
    fn the_search_places_keys_a_greedy_insert_cannot() {
        // Three keys that all want buckets 0 and 1 of a table of buckets of 1 slot... with
        // b = 2: keys 0..4 on buckets {0,1}, {1,2}, {2,3}, {3,0}, {0,2}: 5 keys, 8 slots, and
        // buckets 0 and 2 filled first so that the last key needs a chain of moves.
        let mut p = Placement {
            keys: vec![
                (0, 2, 1),
                (0, 2, 2),
                (2, 0, 3),
                (0, 2, 4),
                (0, 1, 5),
                (2, 3, 6),
            ],
            ..Placement::default()
        };
        assert!(p.solve_counted(4, 2));
        let mut load = [0; 4];
        for (k, &at) in p.placed(4, 2).iter().enumerate() {
            let (a, c, _) = p.keys[k];
            assert!(at == a || at == c, "key {k} placed in {at}, not {a} or {c}");
            load[at as usize] += 1;
        }
        assert!(load.iter().all(|&l| l <= 2), "{load:?}");
        // Five keys on two buckets of 2 cannot be placed.
        let mut q = Placement {
            keys: vec![(0, 1, 1); 5],
            ..Placement::default()
        };
        assert!(!q.solve_counted(2, 2));
    }

    #[test]
    fn the_search_places_keys_exactly_when_hall_says_it_can() {
        // Keys in buckets of b slots, each key in one of its two: a placement exists iff every
        // set S of buckets has room for the keys whose both buckets are in S (Hall's
        // condition), checked here over every subset of up to 8 buckets. One Placement serves
        // every instance, as the thread's scratch does, so stale stamps and slots are
        // exercised too.
        let mut rng = SplitMix64::new(41);
        let mut p = Placement::default();
        let (mut yes, mut no) = (0, 0);
        for round in 0..6000 {
            let m = 2 + rng.below(7) as usize;
            let b = [1usize, 2, 4, 8][rng.below(4) as usize];
            let n = (m * b).saturating_sub(rng.below(3) as usize) + usize::from(round % 7 == 0);
            p.keys = (0..n)
                .map(|k| {
                    (
                        rng.below(m as u64) as u32,
                        rng.below(m as u64) as u32,
                        k as u32 + 1,
                    )
                })
                .collect();
            let hall = (0u32..1 << m).all(|set| {
                let inside = p
                    .keys
                    .iter()
                    .filter(|&&(i, j, _)| set >> i & 1 == 1 && set >> j & 1 == 1)
                    .count();
                inside <= b * set.count_ones() as usize
            });
            assert_eq!(
                p.solve_counted(m, b),
                hall,
                "round {round}: m={m} b={b} keys {:?}",
                p.keys
            );
            if hall {
                yes += 1;
                let at = p.placed(m, b);
                for (k, &(i, j, _)) in p.keys.iter().enumerate() {
                    assert!(
                        at[k] == i || at[k] == j,
                        "round {round}: key {k} in {}",
                        at[k]
                    );
                }
                assert!((0..m).all(|x| usize::from(p.load[x]) <= b));
            } else {
                no += 1;
            }
        }
        // Both answers were asked for, many times.
        assert!(yes > 1000 && no > 1000, "{yes} placeable, {no} not");
    }

    #[test]
    fn the_false_positive_rate_is_within_the_bound() {
        // 2000 blocks of 50 keys, 100 absent keys each: 200 000 lookups at the 1 % default.
        let mut rng = SplitMix64::new(9);
        let (mut fp, mut asked) = (0u64, 0u64);
        for _ in 0..2000 {
            let hashes = keys(50, rng.next_u64());
            let present: HashSet<u64> = hashes.iter().copied().collect();
            let block = build_exact(&Config::new(0), &hashes).unwrap().unwrap();
            for _ in 0..100 {
                let h = rng.next_u64();
                if present.contains(&h) {
                    continue;
                }
                asked += 1;
                fp += u64::from(
                    CompactFilter::block_contains_hash(&block, KeyHash::from_u64(h)).unwrap(),
                );
            }
        }
        let rate = fp as f64 / asked as f64;
        // The bound for b = 4, f = 10 is 0.78 %; the sampling error at 200 000 lookups is
        // ±0.06 % (3σ).
        assert!(rate < 0.0085 && rate > 0.004, "measured {rate}");
    }

    #[test]
    fn one_shot_and_owned_lookups_agree_on_blocks_of_every_size() {
        // Bucket groups of 1 (16 bits), 4 (14), 2 (36 and semi-sorted 36) in the one-shot
        // lookup's window, on blocks of every size and at their last buckets.
        for (e, b, f) in [
            (Encoding::SemiSorted, 4, 10),
            (Encoding::Plain, 2, 8),
            (Encoding::Packed, 2, 7),
            (Encoding::Packed, 4, 9),
        ] {
            for n in [0usize, 1, 10, 700, 1000, 3000, 5000] {
                one_shot_agrees(
                    Config::new(0)
                        .encoding(e)
                        .bucket_size(b)
                        .fingerprint_bits(f),
                    n,
                );
            }
        }
    }

    fn one_shot_agrees(config: Config, n: usize) {
        {
            let hashes = keys(n, n as u64);
            let mut b = crate::FilterBuilder::new(config);
            for &h in &hashes {
                b.add_hash(KeyHash::from_u64(h));
            }
            let block = b.finish_compact().unwrap();
            let f = CompactFilter::from_bytes(&block).unwrap();
            assert_eq!(f.len(), hashes.len());
            let mut rng = SplitMix64::new(n as u64 + 1);
            for h in hashes
                .iter()
                .copied()
                .chain((0..2000).map(|_| rng.next_u64()))
            {
                let h = KeyHash::from_u64(h);
                assert_eq!(
                    f.contains_hash(h),
                    CompactFilter::block_contains_hash(&block, h).unwrap()
                );
            }
        }
    }

    #[test]
    fn version_1_headers_that_break_a_rule_are_refused() {
        let mut b = crate::FilterBuilder::new(Config::new(0));
        for k in 0..40u32 {
            b.add_key(&k.to_le_bytes());
        }
        let good = to_v1(&b.finish_compact().unwrap());
        assert!(CompactFilter::from_bytes(&good).is_ok());
        let with = |at: usize, v: u8| {
            let mut x = good.clone();
            x[at] = v;
            CompactFilter::from_bytes(&x).unwrap_err()
        };
        assert!(matches!(with(0, 0x43), Error::BadMagic { .. }));
        // Version 0 was never written: damage, not a newer block.
        assert!(
            matches!(with(0, 0xC0), Error::Corrupt { ref field, .. } if field == "compact version")
        );
        assert!(matches!(
            with(0, 0xC3),
            Error::UnsupportedVersion {
                found: 3,
                supported: 2
            }
        ));
        // Reserved bit 4; encoding code 3; bucket size code 0 (encoding 2).
        for layout in [0x1A, 0x03, 0x02] {
            assert!(
                matches!(with(1, layout), Error::Corrupt { ref field, .. } if field == "compact layout"),
                "{layout:#x}"
            );
        }
        assert!(
            matches!(with(2, 6), Error::Corrupt { ref field, .. } if field == "compact fingerprint_bits")
        );
        for cut in 0..HEADER_LEN {
            assert!(matches!(
                CompactFilter::from_bytes(&good[..cut]),
                Err(Error::Truncated { .. })
            ));
        }
        // Every other length of the buckets is refused, longer or shorter.
        for len in HEADER_LEN + 1..good.len() + 20 {
            let mut x = good.clone();
            x.resize(len, 0);
            let r = CompactFilter::from_bytes(&x);
            if len == good.len() {
                assert!(r.is_ok());
            } else if let Err(Error::Corrupt { field, .. }) = &r {
                // A length that is another even table's is refused for its buckets instead
                // (the padding or a semi-sorted code), or accepted if well formed.
                assert!(
                    field == "compact length" || field == "compact buckets",
                    "{field}"
                );
            }
        }
        // The last byte's padding bits must be zero, a check of the length that the one-shot
        // lookup makes too. Semi-sorted buckets of 36 bits in an even number of buckets end on a
        // byte; packed buckets of 2 × 7 bits in 2 buckets take 28 bits, 4 bytes with 4 bits of
        // padding.
        let mut small = crate::FilterBuilder::new(
            Config::new(0)
                .encoding(Encoding::Packed)
                .bucket_size(2)
                .fingerprint_bits(7),
        );
        small.add_key(b"k");
        let small = to_v1(&small.finish_compact().unwrap());
        assert_eq!(small.len(), HEADER_LEN + 4);
        assert!(CompactFilter::from_bytes(&small).is_ok());
        let mut x = small.clone();
        *x.last_mut().unwrap() |= 0x80;
        assert!(
            matches!(CompactFilter::from_bytes(&x), Err(Error::Corrupt { ref field, .. }) if field == "compact length")
        );
        assert!(CompactFilter::block_contains(&x, b"k").is_err());
        // A seed index no writer makes.
        assert!(
            matches!(with(3, SEED_INDICES), Error::Corrupt { ref field, .. } if field == "compact seed_index")
        );
        // The one-shot lookup checks the header and the length only, and reads any buckets
        // safely: semi-sorted buckets with an index past the last code answer "maybe".
        let mut x = good.clone();
        x[HEADER_LEN..].fill(0xFF);
        assert!(matches!(
            CompactFilter::from_bytes(&x),
            Err(Error::Corrupt { ref field, .. }) if field == "compact buckets"
        ));
        assert!((0..100u32).all(|k| CompactFilter::block_contains(&x, &k.to_be_bytes()).unwrap()));
        assert!(CompactFilter::block_contains(&good[..3], b"k").is_err());
    }

    #[test]
    fn every_layout_round_trips() {
        for (e, b, f) in [
            (Encoding::Plain, 2, 8),
            (Encoding::Plain, 8, 16),
            (Encoding::Plain, 4, 32),
            (Encoding::Packed, 2, 7),
            (Encoding::Packed, 8, 13),
            (Encoding::SemiSorted, 4, 7),
            (Encoding::SemiSorted, 4, 32),
        ] {
            let config = Config::new(0)
                .encoding(e)
                .bucket_size(b)
                .fingerprint_bits(f);
            for n in [0usize, 1, 33, 5000] {
                let hashes = keys(n, f as u64);
                let mut builder = crate::FilterBuilder::new(config.clone());
                for &h in &hashes {
                    builder.add_hash(KeyHash::from_u64(h));
                }
                let block = builder.finish_compact().unwrap();
                // Version 2, the layout named in bytes 2 and 3 (none of these is the default).
                assert_eq!(
                    (block[0], block[1] & V2_LAYOUT_FLAG),
                    (MAGIC_V2, V2_LAYOUT_FLAG)
                );
                assert_eq!(block[2], e.code() | (b.trailing_zeros() as u8) << 2);
                assert_eq!(block[3], f as u8);
                let r = CompactFilter::from_bytes(&block).unwrap();
                assert_eq!(
                    (
                        r.len(),
                        r.geo.encoding(),
                        r.geo.bucket_size(),
                        r.geo.fp_bits()
                    ),
                    (n, e, b as u32, f)
                );
                assert!(
                    hashes
                        .iter()
                        .all(|&h| r.contains_hash(KeyHash::from_u64(h)))
                );
            }
        }
    }

    /// Blocks of every size from 0 to 300 keys (odd and even bucket counts, the default
    /// layout's in-place lookup and the others' window) against a `HashSet` model: no key
    /// added answers "absent", and the one-shot lookup, the owned filter and the reader written
    /// from FORMAT.md alone agree on absent keys.
    #[test]
    fn version_2_blocks_keep_every_key_and_agree_with_the_owned_filter() {
        let mut rng = SplitMix64::new(43);
        for (e, b, f) in [
            (Encoding::SemiSorted, 4, 10),
            (Encoding::SemiSorted, 4, 12),
            (Encoding::Packed, 2, 9),
            (Encoding::Plain, 8, 8),
        ] {
            let config = Config::new(0)
                .encoding(e)
                .bucket_size(b)
                .fingerprint_bits(f);
            let (mut odd, mut even) = (0, 0);
            for n in (0..=300usize).step_by(if e == Encoding::SemiSorted && f == 10 {
                1
            } else {
                7
            }) {
                let hashes = keys(n, rng.next_u64());
                let model: HashSet<u64> = hashes.iter().copied().collect();
                let block = build_exact(&config, &hashes).unwrap().unwrap();
                assert_eq!(block[0], MAGIC_V2);
                let m = stored_buckets(&block);
                if m % 2 == 1 {
                    odd += 1;
                } else if m > 0 {
                    even += 1;
                }
                let owned = CompactFilter::from_bytes(&block).unwrap();
                assert_eq!(owned.len(), model.len());
                for &h in &model {
                    let h = KeyHash::from_u64(h);
                    assert!(
                        CompactFilter::block_contains_hash(&block, h).unwrap(),
                        "n={n}"
                    );
                    assert!(owned.contains_hash(h), "n={n}");
                }
                for _ in 0..200 {
                    let h = KeyHash::from_u64(rng.next_u64());
                    assert_eq!(
                        CompactFilter::block_contains_hash(&block, h).unwrap(),
                        owned.contains_hash(h),
                        "n={n}"
                    );
                }
            }
            assert!(odd > 3 && even > 3, "{odd} odd, {even} even bucket counts");
        }
    }

    /// The in-place loads at every bit offset of slices of every length from 0 to 19 bytes,
    /// at any address (a slice starting one byte into a buffer is misaligned), against a
    /// bit-by-bit reference: bits past the end read as 0.
    #[test]
    fn the_default_bucket_match_is_the_slot_by_slot_one() {
        // Each low-part field compared on its own, as FORMAT.md §11.2 reads a bucket: the
        // gathered zero test must agree for every width of difference, every field, and
        // buckets whose bits above the 36 are set (a word loaded past the bucket).
        let reference = |w: u64, fp: u32| {
            let index = w & 0xFFF;
            let mut lows = 0u32;
            for k in 0..4 {
                lows |= u32::from((w >> (semi::INDEX_BITS + 6 * k)) & 0x3F == u64::from(fp & 0x3F))
                    << k;
            }
            let slots = ((semi::SLOTS_WITH[index as usize] >> (4 * (fp >> 6))) & 0xF) as u32;
            (slots & lows, index >= semi::COMBINATIONS as u64)
        };
        let mut rng = SplitMix64::new(44);
        for round in 0..20_000 {
            let mut w = rng.next_u64();
            if round % 2 == 0 {
                // Low parts equal to the fingerprint's, or one bit from it, in some fields.
                let fp_low = rng.below(64);
                for k in 0..4 {
                    let v = match rng.below(3) {
                        0 => fp_low,
                        1 => fp_low ^ 1 << rng.below(6),
                        _ => rng.below(64),
                    };
                    let at = semi::INDEX_BITS + 6 * k;
                    w = w & !(0x3F << at) | v << at;
                }
                w = w & !0xFFF | rng.below(4096);
                let fp = (rng.below(16) << 6 | fp_low) as u32;
                assert_eq!(default_matches(w, fp), reference(w, fp), "{w:#x} {fp}");
            }
            let fp = rng.below(1024) as u32;
            assert_eq!(default_matches(w, fp), reference(w, fp), "{w:#x} {fp}");
        }
    }

    #[test]
    fn bucket_words_read_every_bucket_to_the_last_at_any_alignment() {
        let buf: Vec<u8> = (0..48u32).map(|i| (i * 73 + 11) as u8).collect();
        for start in 0..4 {
            for len in 8..44 {
                let body = &buf[start..start + len];
                let bit = |p: u64| u64::from((body[(p / 8) as usize] >> (p % 8)) & 1);
                // Every position a bucket of 36 bits can start at, the last one included
                // (default-layout buckets start on multiples of 36; any start is allowed).
                for pos in 0..=(8 * len as u64 - 36) {
                    let want = (0..36).fold(0u64, |w, k| w | bit(pos + k) << k);
                    let got = bucket_word(body, pos) & ((1 << 36) - 1);
                    assert_eq!(got, want, "start {start} len {len} pos {pos}");
                }
            }
        }
    }

    /// The last bucket of blocks of 2 to 41 buckets, the only one whose load runs past the end:
    /// a key placed there is found by the in-place lookup, and every bucket's slots read in
    /// place are the owned table's.
    #[test]
    fn the_last_bucket_reads_in_place() {
        for m in 2..=41u64 {
            let seed = seed_of(0);
            // Keys whose first bucket is the last: found by a scan of hashes.
            let mut last = Vec::new();
            let mut h = 0u64;
            while last.len() < 3 {
                h += 1;
                if locate(hash::seeded(KeyHash::from_u64(h), seed), m, 10).i1 == m - 1 {
                    last.push(h);
                }
            }
            let mut hashes: Vec<u64> = (1 << 40..(1 << 40) + 4 * (m - 1) + 1 - 3)
                .chain(last.clone())
                .collect();
            hashes.sort_unstable();
            let block = build_exact(&Config::new(0), &hashes).unwrap().unwrap();
            let n = stored_buckets(&block);
            assert!(n >= m, "{n} buckets for {m}");
            let found = hashes.iter().all(|&h| {
                CompactFilter::block_contains_hash(&block, KeyHash::from_u64(h)).unwrap()
            });
            assert!(found, "m={m}");
        }
        // The empty block and one cut to its header alone.
        let empty = build_exact(&Config::new(0), &[]).unwrap().unwrap();
        assert_eq!(empty.len(), HEADER_LEN_V2);
        assert!(!CompactFilter::block_contains(&empty, b"k").unwrap());
        assert!(CompactFilter::from_bytes(&empty).unwrap().is_empty());
    }

    /// FORMAT.md §11.5's check over the header and the length: of the damage version 1 could
    /// not see — a changed seed index, a cut or an extension to another length that holds
    /// whole buckets — version 2 refuses all but about 1 in 16 (the check's 4 bits), and the
    /// one-shot lookup refuses what the full check refuses. Counted over fixed blocks.
    #[test]
    fn the_check_refuses_header_and_length_damage() {
        let (mut damaged, mut refused) = (0u32, 0u32);
        for n in [8usize, 19, 26, 36, 50, 71, 140] {
            let hashes = keys(n, n as u64);
            let good = build_exact(&Config::new(0), &hashes).unwrap().unwrap();
            let mut variants: Vec<Vec<u8>> = Vec::new();
            for bit in 0..16 {
                let mut x = good.clone();
                x[bit / 8] ^= 1 << (bit % 8);
                variants.push(x);
            }
            for cut in 0..good.len() {
                variants.push(good[..cut].to_vec());
            }
            for extra in 1..=9 {
                let mut x = good.clone();
                x.resize(good.len() + extra, 0);
                variants.push(x);
            }
            for x in variants {
                damaged += 1;
                let full = CompactFilter::from_bytes(&x);
                let one = CompactFilter::block_contains_hash(&x, KeyHash::from_u64(hashes[0]));
                assert_eq!(full.is_err(), one.is_err(), "n={n} {x:02x?}");
                if full.is_err() {
                    refused += 1;
                } else {
                    // What passes is a block some writer could have made: it reads as one.
                    assert!(x.len() >= HEADER_LEN_V2);
                }
            }
        }
        // 7 blocks: 16 bit flips, every cut, 9 extensions each.
        assert!(damaged > 500, "{damaged}");
        assert!(
            f64::from(refused) >= 0.93 * f64::from(damaged),
            "{refused} of {damaged} refused"
        );
        // Each of the 8 seed indices: the check refuses a changed one, unless 1 in 16.
        let hashes = keys(36, 1);
        let good = build_exact(&Config::new(0), &hashes).unwrap().unwrap();
        let passed = (0..8u8)
            .filter(|&k| k != good[1] & 7)
            .filter(|&k| {
                let mut x = good.clone();
                x[1] = (x[1] & !7) | k;
                CompactFilter::from_bytes(&x).is_ok()
            })
            .count();
        assert!(passed <= 1, "{passed} other seed indices passed");
    }

    #[test]
    fn version_2_headers_that_break_a_rule_are_refused() {
        let hashes = keys(40, 5);
        let config = Config::new(0)
            .encoding(Encoding::Packed)
            .bucket_size(2)
            .fingerprint_bits(9);
        let named = build_exact(&config, &hashes).unwrap().unwrap();
        assert_eq!(named[1] & V2_LAYOUT_FLAG, V2_LAYOUT_FLAG);
        // A header that breaks a rule, with its check recomputed so that the rule is reached.
        let with = |at: usize, v: u8| {
            let mut x = named.clone();
            x[at] = v;
            let word = u32::from(x[0])
                | u32::from(x[1] & 0x0F) << 8
                | u32::from(x[2]) << 16
                | u32::from(x[3]) << 24;
            x[1] = (x[1] & 0x0F) | check_of(x.len() as u64, word) << 4;
            CompactFilter::from_bytes(&x).unwrap_err()
        };
        for layout in [0x1A, 0x03, 0x02] {
            assert!(
                matches!(with(2, layout), Error::Corrupt { ref field, .. } if field == "compact layout"),
                "{layout:#x}"
            );
        }
        assert!(
            matches!(with(3, 6), Error::Corrupt { ref field, .. } if field == "compact fingerprint_bits")
        );
        let mut x = named.clone();
        x[1] ^= 0x10;
        assert!(
            matches!(CompactFilter::from_bytes(&x), Err(Error::Corrupt { ref field, .. }) if field == "compact check")
        );
        for cut in 0..HEADER_LEN_V2_LAYOUT {
            assert!(matches!(
                CompactFilter::from_bytes(&named[..cut]),
                Err(Error::Truncated { .. })
            ));
        }
        assert!(matches!(
            CompactFilter::from_bytes(&[MAGIC_V2]),
            Err(Error::Truncated {
                expected: 2,
                found: 1
            })
        ));
        assert!(matches!(
            CompactFilter::from_bytes(&[0xC3, 0]),
            Err(Error::UnsupportedVersion {
                found: 3,
                supported: 2
            })
        ));
        // A length that holds no whole number of buckets, with a valid check: refused.
        let good = build_exact(&Config::new(0), &keys(19, 3)).unwrap().unwrap();
        let mut x = good.clone();
        x.push(0);
        let word = u32::from(x[0]) | u32::from(x[1] & 0x0F) << 8;
        x[1] = (x[1] & 0x0F) | check_of(x.len() as u64, word) << 4;
        assert!(
            matches!(CompactFilter::from_bytes(&x), Err(Error::Corrupt { ref field, .. }) if field == "compact length")
        );
        assert!(CompactFilter::block_contains(&x, b"k").is_err());
    }

    /// A semi-sorted bucket damaged into an index past the last code answers "maybe" in place,
    /// as version 1's did, in a block whose header and length are intact.
    #[test]
    fn a_bucket_past_the_last_code_answers_maybe_in_place() {
        let block = build_exact(&Config::new(0), &keys(19, 9)).unwrap().unwrap();
        let mut x = block.clone();
        x[HEADER_LEN_V2..].fill(0xFF);
        // The last byte's high nibble is after the last (odd) bucket: keep it 0.
        if stored_buckets(&block) % 2 == 1 {
            *x.last_mut().unwrap() = 0x0F;
        }
        assert!(CompactFilter::from_bytes(&x).is_err());
        assert!((0..200u32).all(|k| CompactFilter::block_contains(&x, &k.to_le_bytes()).unwrap()));
    }

    #[test]
    fn seeds_outside_the_family_are_refused() {
        assert_eq!(seed_index(DEFAULT_SEED), Some(0));
        assert_eq!(seed_index(seed_of(15)), Some(15));
        // Index 16 and above is no writer's: not written, and refused when read.
        assert_eq!(seed_index(seed_of(16)), None);
        assert_eq!(seed_index(seed_of(200)), None);
        assert_eq!(seed_index(7), None);
        let mut b = crate::FilterBuilder::new(Config::new(0).seed(7));
        b.add_key(b"k");
        assert!(matches!(
            b.finish_compact(),
            Err(Error::InvalidConfig {
                setting: "seed",
                ..
            })
        ));
    }
}
