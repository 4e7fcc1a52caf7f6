//! Compact filter blocks (FORMAT.md §11): a filter of any size, from 0 keys up, in four bytes
//! of header and exactly its buckets, for a block its container already checksums — the
//! filter of one data block in LevelDB, say, where a 40-key filter's buckets take 45 bytes and
//! a full file's header, level table and checksums would take 200 more.
//!
//! The buckets are the classic level's (FORMAT.md §2.1, §3), so lookups run through the same
//! kernels as [`FilterRef`]'s. The block stores no padding, which a bucket's wide loads read
//! past: a [`CompactFilter`] copies the buckets into a zero-padded region once; the one-shot
//! lookup copies only the bytes of its two buckets into a small padded window, so that it
//! costs the same on a block of any size.

use crate::config::{Config, DEFAULT_SEED};
use crate::error::{Error, Result};
use crate::hash::{self, KeyHash};
use crate::table::raw::Region;
use crate::table::{self, Codec, Encoding, Geometry, TableBuf, kernel, semi, with_codec};
use crate::view::FilterRef;

/// The first byte of a compact block: `0xC` in the high nibble marks a compact block (a full
/// filter file starts with `C`, 0x43), the low nibble is its version.
pub(crate) const MAGIC: u8 = 0xC1;
/// The version in [`MAGIC`]'s low nibble.
const VERSION: u8 = MAGIC & 0x0F;
/// Bytes before the buckets: magic, layout, width, seed index.
pub(crate) const HEADER_LEN: usize = 4;
/// The step between the seeds a compact block can name: seed `k` is
/// `DEFAULT_SEED + k · SEED_STEP (mod 2^64)`, the seeds the builder's retries use.
pub(crate) const SEED_STEP: u64 = 0x9E37_79B9_7F4A_7C15;
/// The seed indices a compact block may name, `0 .. SEED_INDICES`: every index a writer makes
/// ([`build_exact`] tries 16 a size, [`FilterBuilder::finish`](crate::FilterBuilder::finish)
/// retries 12), so that a damaged index of 16 or more is refused rather than read with the
/// wrong seed (FORMAT.md §11.2, step 5).
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

/// The seed that seed index `k` names.
pub(crate) const fn seed_of(k: u8) -> u64 {
    DEFAULT_SEED.wrapping_add((k as u64).wrapping_mul(SEED_STEP))
}

/// The seed index of `seed`, if a compact block can name it.
pub(crate) fn seed_index(seed: u64) -> Option<u8> {
    (0..SEED_INDICES).find(|&k| seed_of(k) == seed)
}

/// What a compact block's header says, checked against its length.
#[derive(Clone, Copy, Debug)]
struct Parsed<'a> {
    /// The geometry of the buckets; 2 empty buckets for a block without any.
    geo: Geometry,
    seed: u64,
    /// The buckets as stored: `ceil(m · bucket_bits / 8)` bytes, none for an empty filter.
    body: &'a [u8],
}

/// Reads a compact block's header (FORMAT.md §11.2's checks 1 to 6, in order).
fn parse(block: &[u8]) -> Result<Parsed<'_>> {
    if block.len() < HEADER_LEN {
        return Err(Error::Truncated {
            expected: HEADER_LEN as u64,
            found: block.len() as u64,
        });
    }
    if block[0] >> 4 != MAGIC >> 4 {
        let mut found = [0u8; 8];
        let n = block.len().min(8);
        found[..n].copy_from_slice(&block[..n]);
        return Err(Error::BadMagic { found });
    }
    if block[0] & 0x0F == 0 {
        // Never written, so not a newer writer's block: damage, as file version 0 is (§7).
        return Err(Error::corrupt(
            "compact version",
            "0 was never written (compact versions start at 1)",
        ));
    }
    if block[0] & 0x0F != VERSION {
        return Err(Error::UnsupportedVersion {
            found: u32::from(block[0] & 0x0F),
            supported: u32::from(VERSION),
        });
    }
    let layout = block[1];
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
    let (b, f) = (1u32 << log2_b, u32::from(block[2]));
    let layout_error = |e: Error| match e {
        Error::InvalidConfig { reason, .. } => Error::corrupt("compact fingerprint_bits", reason),
        other => other,
    };
    let body = &block[HEADER_LEN..];
    // The layout is checked with the smallest table first, so that its error is the layout's.
    let smallest = Geometry::new(2, b, f, encoding).map_err(layout_error)?;
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
    let seed = seed_of(block[3]);
    if body.is_empty() {
        return Ok(Parsed {
            geo: smallest,
            seed,
            body,
        });
    }
    let bucket_bits = encoding.bucket_bits(b, f);
    let bits = body.len() as u64 * 8;
    let m = bits / bucket_bits;
    let m = m - m % 2;
    if m < 2 || (m * bucket_bits).div_ceil(8) != body.len() as u64 {
        return Err(Error::corrupt(
            "compact length",
            format!(
                "{} bytes of buckets is not ceil(m · {bucket_bits} / 8) for an even m ≥ 2",
                body.len()
            ),
        ));
    }
    let geo = Geometry::new(m, b, f, encoding).map_err(|e| match e {
        Error::InvalidConfig { reason, .. } => Error::corrupt("compact length", reason),
        other => other,
    })?;
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
    Ok(Parsed { geo, seed, body })
}

/// Whether the key of hash `h` may be in the parsed, nonempty block, read in place: each of
/// its two buckets with the buckets that share its bytes — a group of `g` buckets, `g` the
/// fewest that fill whole bytes (1, 2 or 4: bucket widths are even), at most 32 bytes — is
/// copied into a zeroed window of two groups, the table of `2g` buckets that the kernel
/// probes at the buckets' places in their groups. The same answer as a probe of the whole
/// region (a bucket's bits decide it), at the cost of a few dozen bytes whatever the block's
/// size. A semi-sorted bucket whose index is past the last code answers "maybe" (§11.2): the
/// block is damaged there, and what the bucket held cannot be told.
fn contains_in_place(p: &Parsed<'_>, h: KeyHash) -> bool {
    let geo = &p.geo;
    let s = hash::locate(hash::seeded(h, p.seed), geo.num_buckets(), geo.fp_bits());
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
/// returns: a filter of any size, 0 keys included, in 4 bytes of header and exactly its
/// buckets, for a block whose integrity its container checks (it carries no checksum of its
/// own). For a one-off lookup in a block (what a LevelDB filter policy does for each read),
/// [`block_contains`](Self::block_contains) answers without keeping anything.
///
/// ```
/// use cuckoo_sst::{CompactFilter, Config, FilterBuilder};
/// let mut b = FilterBuilder::new(Config::new(0));
/// for k in 0..40u32 {
///     b.add_key(&k.to_le_bytes());
/// }
/// let block = b.finish_compact()?;
/// assert!(block.len() <= 4 + 40 * 10 / 8); // under 10 bits a key, header included
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
        let mut table = TableBuf::zeroed(p.geo.table_bytes())?;
        table.bytes_mut()[..p.body.len()].copy_from_slice(p.body);
        let len = table::scan(&p.geo, table.bytes())
            .map_err(|reason| Error::corrupt("compact buckets", reason))?;
        Ok(CompactFilter {
            geo: p.geo,
            seed: p.seed,
            len,
            block_len: block.len(),
            table,
        })
    }

    /// Whether the key may be in the compact block `block`, from its bytes alone: its header and
    /// length are checked (FORMAT.md §11.2, steps 1 to 6), its buckets are not (the container
    /// checked the block; any bytes are read safely). For one lookup per block, as a filter
    /// policy makes; keep a [`CompactFilter`] to ask one block many times.
    ///
    /// It reads the key's two buckets where they lie and copies nothing else, so a lookup costs
    /// the same on a block of any size (FORMAT.md §11.2 has the measurements). A semi-sorted
    /// bucket whose index is past the last code, which no writer makes, answers `true`
    /// ("maybe"). Other damage that keeps to the format's rules — a changed seed index, flipped
    /// bucket bits, a cut to another whole number of buckets — is read as it is and can answer
    /// `false` for a key that was added: version 1 carries no check value (FORMAT.md §11.2 lists
    /// what [`from_bytes`](Self::from_bytes) catches and what nothing can).
    ///
    /// ```
    /// use cuckoo_sst::{CompactFilter, Config, FilterBuilder};
    /// let empty = FilterBuilder::new(Config::new(0)).finish_compact()?;
    /// assert_eq!(empty.len(), 4); // the header alone
    /// assert!(!CompactFilter::block_contains(&empty, b"anything")?);
    ///
    /// // Two semi-sorted buckets whose indices (0xFFF) are past the last code: "maybe".
    /// let mut one = FilterBuilder::new(Config::new(0));
    /// one.add_key(b"k");
    /// let mut damaged = one.finish_compact()?;
    /// damaged[4..].fill(0xFF);
    /// assert!(CompactFilter::from_bytes(&damaged).is_err());
    /// assert!(CompactFilter::block_contains(&damaged, b"anything")?);
    /// # Ok::<(), cuckoo_sst::Error>(())
    /// ```
    pub fn block_contains(block: &[u8], key: &[u8]) -> Result<bool> {
        CompactFilter::block_contains_hash(block, KeyHash::of(key))
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
    pub fn block_contains_hash(block: &[u8], h: KeyHash) -> Result<bool> {
        let p = parse(block)?;
        if p.body.is_empty() {
            return Ok(false);
        }
        Ok(contains_in_place(&p, h))
    }

    /// The view every lookup goes through.
    ///
    /// ```
    /// let f = cuckoo_sst::CompactFilter::from_bytes(&[0xC1, 0x0A, 10, 0])?; // empty
    /// assert!(f.as_filter_ref().is_empty());
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

/// The header of a compact block for geometry `geo` and seed index `k`.
fn header(geo: &Geometry, k: u8) -> [u8; HEADER_LEN] {
    let log2_b = geo.bucket_size().trailing_zeros() as u8;
    [
        MAGIC,
        geo.encoding().code() | log2_b << 2,
        geo.fp_bits() as u8,
        k,
    ]
}

/// The compact block of a table: its header and the bytes that hold buckets.
pub(crate) fn encode(geo: &Geometry, k: u8, table: &[u8], len: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + geo.used_bytes());
    out.extend_from_slice(&header(geo, k));
    if len > 0 {
        out.extend_from_slice(&table[..geo.used_bytes()]);
    }
    out
}

/// The compact block of the distinct key hashes `hashes` (unseeded), with `config`'s layout, in
/// the fewest even number of buckets some seed index places them in (tried from 0 up), if
/// any within [`EXACT_MAX`] keys; `None` above that.
pub(crate) fn build_exact(config: &Config, hashes: &[u64]) -> Result<Option<Vec<u8>>> {
    let (b, f, encoding) = config.layout()?;
    if hashes.is_empty() {
        let geo = Geometry::new(2, b, f, encoding)?;
        return Ok(Some(encode(&geo, 0, &[], 0)));
    }
    if hashes.len() > EXACT_MAX {
        return Ok(None);
    }
    let n = hashes.len() as u64;
    // Up to EXACT_FULL keys, the search starts at the fewest buckets (every slot filled) and
    // tries 16 seeds a size; above, a table filled to the last slot needs many seeds, each a
    // full search, so it starts at a 98 % load and tries 4 (probe table in FORMAT.md §11.4).
    let (mut m, seeds) = if n <= EXACT_FULL {
        (n.div_ceil(u64::from(b)), 16u8)
    } else {
        ((n as f64 / (f64::from(b) * 0.98)).ceil() as u64, 4)
    };
    m = m.max(2);
    m += m % 2;
    let mut place = Placement::default();
    loop {
        let geo = Geometry::new(m, b, f, encoding)?;
        for k in 0..seeds {
            let seed = seed_of(k);
            place.keys.clear();
            place.keys.extend(hashes.iter().map(|&h| {
                let s = hash::locate(hash::seeded(KeyHash::from_u64(h), seed), m, f);
                (s.i1 as u32, s.i2 as u32, s.fp)
            }));
            if place.solve(m as usize, b as usize) {
                let mut t = TableBuf::zeroed(geo.table_bytes())?;
                let tb = t.bytes_mut();
                with_codec!(geo.layout(), c => {
                    for (key, &bucket) in place.keys.iter().zip(&place.at) {
                        let mut slots = c.read(tb, u64::from(bucket));
                        let Some(free) = slots[..c.slots()].iter().position(|&v| v == 0) else {
                            unreachable!("the placement put more than b keys in bucket {bucket}")
                        };
                        slots[free] = key.2;
                        c.store(tb, u64::from(bucket), free, &slots);
                    }
                });
                return Ok(Some(encode(&geo, k, t.bytes(), n)));
            }
        }
        m += 2;
    }
}

/// An exact placement of keys in buckets of `b` slots: each key in one of its two buckets,
/// found by augmenting paths (a breadth-first search from the key's buckets to one with room,
/// moving each key on the path to its other bucket), so that if any placement exists, one is
/// found.
#[derive(Default)]
struct Placement {
    /// Each key's two buckets and fingerprint.
    keys: Vec<(u32, u32, u32)>,
    /// Each key's bucket, once placed.
    at: Vec<u32>,
    /// The keys in each bucket, `b` entries a bucket (`u32::MAX`: empty).
    members: Vec<u32>,
    load: Vec<u8>,
    /// The bucket a search reached each bucket from, and the key it would move (`u32::MAX`
    /// for the key's own buckets).
    from: Vec<(u32, u32)>,
    /// The search that last reached each bucket.
    seen: Vec<u32>,
    queue: std::collections::VecDeque<u32>,
}

impl Placement {
    /// Places every key; false if some key cannot be (then no placement exists).
    fn solve(&mut self, m: usize, b: usize) -> bool {
        self.at.clear();
        self.at.resize(self.keys.len(), u32::MAX);
        self.members.clear();
        self.members.resize(m * b, u32::MAX);
        self.load.clear();
        self.load.resize(m, 0);
        self.from.clear();
        self.from.resize(m, (u32::MAX, u32::MAX));
        self.seen.clear();
        self.seen.resize(m, u32::MAX);
        (0..self.keys.len()).all(|k| self.place(k as u32, b))
    }

    fn place(&mut self, key: u32, b: usize) -> bool {
        let (i1, i2, _) = self.keys[key as usize];
        self.queue.clear();
        for i in [i1, i2] {
            if self.seen[i as usize] != key {
                self.seen[i as usize] = key;
                self.from[i as usize] = (u32::MAX, u32::MAX);
                self.queue.push_back(i);
            }
        }
        let mut end = None;
        while let Some(x) = self.queue.pop_front() {
            if usize::from(self.load[x as usize]) < b {
                end = Some(x);
                break;
            }
            for s in 0..b {
                let resident = self.members[x as usize * b + s];
                let (p, q, _) = self.keys[resident as usize];
                let y = if p == x { q } else { p };
                if self.seen[y as usize] != key {
                    self.seen[y as usize] = key;
                    self.from[y as usize] = (x, resident);
                    self.queue.push_back(y);
                }
            }
        }
        let Some(mut x) = end else { return false };
        // Walk back from the bucket with room: each bucket on the path takes the key moved
        // from the bucket before it, which frees that key's slot there for the next one.
        let mut slot = self.load[x as usize] as usize;
        self.load[x as usize] += 1;
        loop {
            let (prev, moved) = self.from[x as usize];
            let arriving = if prev == u32::MAX { key } else { moved };
            self.members[x as usize * b + slot] = arriving;
            self.at[arriving as usize] = x;
            if prev == u32::MAX {
                return true;
            }
            slot = (0..b)
                .find(|&s| self.members[prev as usize * b + s] == moved)
                .expect("the moved key is in the bucket the search came from");
            x = prev;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::SplitMix64;
    use std::collections::HashSet;

    fn keys(n: usize, salt: u64) -> Vec<u64> {
        let mut rng = SplitMix64::new(salt);
        let mut v: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    #[test]
    fn the_placement_is_exact_and_fills_the_smallest_even_table() {
        for n in [
            1usize, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 40, 41, 100, 255, 256, 300, 1000,
        ] {
            for salt in 0..5 {
                let hashes = keys(n, salt * 1000 + n as u64);
                let block = build_exact(&Config::new(0), &hashes).unwrap().unwrap();
                let f = CompactFilter::from_bytes(&block).unwrap();
                assert_eq!(f.len(), hashes.len());
                for &h in &hashes {
                    assert!(f.contains_hash(KeyHash::from_u64(h)), "n={n} lost {h:#x}");
                    assert!(
                        CompactFilter::block_contains_hash(&block, KeyHash::from_u64(h)).unwrap()
                    );
                }
                let minimal = (hashes.len() as u64).div_ceil(4).max(2);
                let minimal = minimal + minimal % 2;
                let m = f.geo.num_buckets();
                // Small sets fill the smallest even table, or one of 2 more buckets (16 seeds a
                // size); larger ones at least 95 % of theirs (from a 98 % start, 4 seeds a size).
                assert!(
                    if n as u64 <= EXACT_FULL {
                        m <= minimal + 2
                    } else {
                        hashes.len() as f64 >= 0.95 * (4 * m) as f64
                    },
                    "n={n}: {m} buckets, {minimal} minimal"
                );
            }
        }
    }

    /// The search's sizes, as FORMAT.md §11.3 gives them: up to `EXACT_FULL` keys it starts
    /// from the fewest buckets that hold them, `⌈n/b⌉` rounded up to even, with 16 seed
    /// indices a size; above, from `⌈n/(0.98·b)⌉` (even) with 4; a size where no seed places
    /// the keys is followed by the one 2 buckets larger. The key sets are fixed (SplitMix64
    /// streams), so where each lands is too: all of these fill the first size tried but two,
    /// found by a scan of 300 sets of 128 keys and 20 of 4096, that take the next.
    #[test]
    fn the_search_tries_the_sizes_format_md_gives() {
        let b = 4u64;
        let start = |n: u64| {
            let m = if n <= EXACT_FULL {
                n.div_ceil(b)
            } else {
                (n as f64 / (b as f64 * 0.98)).ceil() as u64
            };
            let m = m.max(2);
            m + m % 2
        };
        // Rounded up to even: 4096 keys need ⌈1044.9⌉ = 1045 buckets, so 1046 (FORMAT.md §11.3).
        assert_eq!(start(4096), 1046);
        assert_eq!(start(9), 4);
        let mut cases: Vec<(usize, u64, u64)> = Vec::new();
        for n in [1usize, 9, 40, 100, 120, 127, 128, 129, 200, 500, 1000, 2000] {
            for salt in 0..6 {
                cases.push((n, salt * 1000 + n as u64, 0));
            }
        }
        cases.push((128, 41 * 1000 + 128, 2));
        cases.push((4096, 11 * 1000 + 4096, 2));
        for (n, salt, extra) in cases {
            let hashes = keys(n, salt);
            let block = build_exact(&Config::new(0), &hashes).unwrap().unwrap();
            let f = CompactFilter::from_bytes(&block).unwrap();
            let m = f.geo.num_buckets();
            let want = start(hashes.len() as u64) + extra;
            assert_eq!(m, want, "n={n} salt={salt}");
            let seeds = if n as u64 <= EXACT_FULL { 16 } else { 4 };
            assert!(
                block[3] < seeds,
                "n={n} salt={salt}: seed index {}",
                block[3]
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
        assert!(p.solve(4, 2));
        let mut load = [0; 4];
        for (k, &at) in p.at.iter().enumerate() {
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
        assert!(!q.solve(2, 2));
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
    fn headers_that_break_a_rule_are_refused() {
        let mut b = crate::FilterBuilder::new(Config::new(0));
        for k in 0..40u32 {
            b.add_key(&k.to_le_bytes());
        }
        let good = b.finish_compact().unwrap();
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
            with(0, 0xC2),
            Error::UnsupportedVersion {
                found: 2,
                supported: 1
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
        let small = small.finish_compact().unwrap();
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
                assert_eq!(block[1], e.code() | (b.trailing_zeros() as u8) << 2);
                assert_eq!(block[2], f as u8);
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
