//! The value a key of this module holds: a cuckoo-sst filter (fixed or growable) with the few
//! counters RedisBloom reports that the filter's bytes do not keep, and its dump — a 48-byte
//! header and the filter's FORMAT.md bytes — used alike by RDB, AOF rewrite and
//! `CF.SCANDUMP`/`CF.LOADCHUNK`.

use cuckoo_sst::{CuckooFilter, Error, ScalableCuckooFilter};

/// The dump header's first bytes.
pub const MAGIC: [u8; 8] = *b"CKSSTRDS";
/// The dump header's version.
pub const DUMP_VERSION: u16 = 1;
/// The dump header's length.
pub const HEADER_LEN: usize = 48;
/// The most filter bytes one `SCANDUMP` reply carries.
pub const CHUNK: usize = 1 << 20;

/// A filter of fixed size (`NONSCALING`, `EXPANSION 0`) or a growable one.
#[derive(Clone, Debug)]
pub enum Filter {
    /// A `CuckooFilter`.
    Fixed(CuckooFilter),
    /// A `ScalableCuckooFilter`.
    Growable(ScalableCuckooFilter),
}

/// What RedisBloom reports and the filter's bytes do not hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    /// Whether the key is a BF key (made by `BF.*`), not a CF key: kept in the dump so that
    /// one kind's dump does not load as the other.
    pub bloom: bool,
    /// The `EXPANSION` asked for (reported; growth is in place whatever it is).
    pub expansion: u64,
    /// Successful deletes (`CF.INFO`'s "Number of items deleted").
    pub deleted: u64,
    /// The `MAXITERATIONS` the filter was made with (its `max_kicks`).
    pub max_iterations: u64,
}

/// The dump header: what kind of filter follows, how many bytes, and the counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Whether the bytes are a `ScalableCuckooFilter`'s.
    pub growable: bool,
    /// Length of the filter's bytes.
    pub total: u64,
    /// The counters.
    pub meta: Meta,
}

impl Header {
    /// The 48 bytes: magic, version (u16), flags (u16, bit 0: growable, bit 1: a BF key), 4
    /// zero bytes, then
    /// total, expansion, deleted and max_iterations (u64 each), all little-endian.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[..8].copy_from_slice(&MAGIC);
        h[8..10].copy_from_slice(&DUMP_VERSION.to_le_bytes());
        let flags = u16::from(self.growable) | u16::from(self.meta.bloom) << 1;
        h[10..12].copy_from_slice(&flags.to_le_bytes());
        h[16..24].copy_from_slice(&self.total.to_le_bytes());
        h[24..32].copy_from_slice(&self.meta.expansion.to_le_bytes());
        h[32..40].copy_from_slice(&self.meta.deleted.to_le_bytes());
        h[40..48].copy_from_slice(&self.meta.max_iterations.to_le_bytes());
        h
    }

    /// Parses a header; `Err` says what is wrong.
    ///
    /// ```
    /// use cuckoo_sst_redis::value::{Header, Meta};
    /// let meta = Meta { bloom: false, expansion: 1, deleted: 0, max_iterations: 500 };
    /// let h = Header { growable: true, total: 1000, meta };
    /// assert_eq!(Header::decode(&h.encode()), Ok(h));
    /// assert!(Header::decode(b"short").is_err());
    /// ```
    pub fn decode(bytes: &[u8]) -> Result<Header, String> {
        let bytes: &[u8; HEADER_LEN] = bytes
            .try_into()
            .map_err(|_| format!("{} bytes, not {HEADER_LEN}", bytes.len()))?;
        let u64_at = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[i..i + 8]);
            u64::from_le_bytes(b)
        };
        if bytes[..8] != MAGIC {
            return Err("not a cuckoo-sst dump header".into());
        }
        let version = u16::from_le_bytes([bytes[8], bytes[9]]);
        if version != DUMP_VERSION {
            return Err(format!(
                "dump version {version}, this module reads {DUMP_VERSION}"
            ));
        }
        let flags = u16::from_le_bytes([bytes[10], bytes[11]]);
        if flags > 3 || bytes[12..16] != [0; 4] {
            return Err("unknown flags".into());
        }
        let total = u64_at(16);
        if total == 0 {
            return Err("no filter bytes".into());
        }
        Ok(Header {
            growable: flags & 1 == 1,
            total,
            meta: Meta {
                bloom: flags & 2 == 2,
                expansion: u64_at(24),
                deleted: u64_at(32),
                max_iterations: u64_at(40),
            },
        })
    }
}

/// A key's value: a filter, or one being assembled by `LOADCHUNK`.
#[derive(Clone, Debug)]
pub struct Value {
    /// The counters.
    pub meta: Meta,
    /// The filter or the bytes so far.
    pub state: State,
}

/// A filter, or the bytes of one arriving in chunks.
#[derive(Clone, Debug)]
pub enum State {
    /// A usable filter.
    Ready(Filter),
    /// Chunks received so far (in order), toward `header.total` bytes.
    Loading {
        /// The header of the dump.
        header: Header,
        /// The bytes so far.
        bytes: Vec<u8>,
    },
}

/// Why a chunk was refused.
#[derive(Debug, PartialEq)]
pub enum ChunkError {
    /// Not the next chunk, past the end, or the key is not being loaded: nothing changed.
    Position,
    /// The last chunk arrived and the bytes are not a filter (the reason).
    Invalid(String),
}

impl Value {
    /// A new value holding `filter`.
    pub fn new(filter: Filter, meta: Meta) -> Value {
        Value {
            meta,
            state: State::Ready(filter),
        }
    }

    /// An empty value being loaded from a dump with this header.
    pub fn loading(header: Header) -> Value {
        Value {
            meta: header.meta,
            state: State::Loading {
                header,
                bytes: Vec::new(),
            },
        }
    }

    /// The header and filter bytes of the value (a partly loaded one: the bytes so far).
    pub fn dump(&self) -> ([u8; HEADER_LEN], Vec<u8>) {
        match &self.state {
            State::Ready(f) => {
                let (growable, bytes) = match f {
                    Filter::Fixed(f) => (false, f.to_bytes()),
                    Filter::Growable(f) => (true, f.to_bytes()),
                };
                let header = Header {
                    growable,
                    total: bytes.len() as u64,
                    meta: self.meta,
                };
                (header.encode(), bytes)
            }
            State::Loading { header, bytes } => (header.encode(), bytes.clone()),
        }
    }

    /// The value of a dump: a header and all or the first part of its filter bytes, checked
    /// (every checksum and field) when all are there.
    pub fn from_dump(header: &[u8], bytes: Vec<u8>) -> Result<Value, String> {
        let header = Header::decode(header)?;
        let mut v = Value::loading(header);
        match v.add_chunk(bytes.len() as u64, &bytes) {
            Ok(()) => Ok(v),
            Err(ChunkError::Position) => Err(format!(
                "{} filter bytes where the header says {}",
                bytes.len(),
                header.total
            )),
            Err(ChunkError::Invalid(e)) => Err(e),
        }
    }

    /// Appends `chunk`, which ends at byte `end` of the filter's bytes; the last chunk turns
    /// the value into its filter. On `Err` the value is unchanged.
    pub fn add_chunk(&mut self, end: u64, chunk: &[u8]) -> Result<(), ChunkError> {
        let State::Loading { header, bytes } = &mut self.state else {
            return Err(ChunkError::Position);
        };
        let start = end.checked_sub(chunk.len() as u64);
        if start != Some(bytes.len() as u64) || end > header.total {
            return Err(ChunkError::Position);
        }
        if end < header.total {
            bytes.extend_from_slice(chunk);
            return Ok(());
        }
        let filter = {
            let whole: std::borrow::Cow<[u8]> = if bytes.is_empty() {
                chunk.into()
            } else {
                let mut b = std::mem::take(bytes);
                b.extend_from_slice(chunk);
                b.into()
            };
            let parsed = if header.growable {
                ScalableCuckooFilter::from_bytes(&whole).map(Filter::Growable)
            } else {
                CuckooFilter::from_bytes(&whole).map(Filter::Fixed)
            };
            match parsed {
                Ok(f) => f,
                Err(e) => {
                    if let std::borrow::Cow::Owned(mut b) = whole {
                        b.truncate(b.len() - chunk.len());
                        *bytes = b;
                    }
                    return Err(ChunkError::Invalid(e.to_string()));
                }
            }
        };
        self.state = State::Ready(filter);
        Ok(())
    }

    /// The filter, unless the value is still being loaded.
    pub fn filter(&self) -> Option<&Filter> {
        match &self.state {
            State::Ready(f) => Some(f),
            State::Loading { .. } => None,
        }
    }

    /// The filter, mutably, unless the value is still being loaded.
    pub fn filter_mut(&mut self) -> Option<&mut Filter> {
        match &mut self.state {
            State::Ready(f) => Some(f),
            State::Loading { .. } => None,
        }
    }

    /// The bytes the value takes in memory: the filter's (its table is its file, less a
    /// header of a few hundred bytes) and the value's own struct.
    pub fn mem_usage(&self) -> usize {
        size_of::<Value>()
            + match &self.state {
                State::Ready(f) => f.size_in_bytes(),
                State::Loading { bytes, .. } => bytes.capacity(),
            }
    }
}

/// What an insert did, as RedisBloom's replies tell it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Added {
    /// Added.
    Yes,
    /// Not added: (probably) present already (the `NX` commands, `BF.ADD`).
    Exists,
    /// Not added: the filter is full (or, growable, a limit or the key's `2b` copies).
    Full,
    /// Not added: out of memory.
    NoMemory,
}

impl From<Error> for Added {
    fn from(e: Error) -> Added {
        match e {
            Error::OutOfMemory { .. } => Added::NoMemory,
            _ => Added::Full,
        }
    }
}

impl Filter {
    /// Inserts `key`; with `unique`, only if it is not (probably) present.
    pub fn add(&mut self, key: &[u8], unique: bool) -> Added {
        let r = match (self, unique) {
            (Filter::Fixed(f), false) => f.insert(key).map(|()| true),
            (Filter::Fixed(f), true) => f.insert_unique(key),
            (Filter::Growable(f), false) => f.insert(key).map(|()| true),
            (Filter::Growable(f), true) => f.insert_unique(key),
        };
        match r {
            Ok(true) => Added::Yes,
            Ok(false) => Added::Exists,
            Err(e) => e.into(),
        }
    }

    /// Whether `key` may be present.
    pub fn contains(&self, key: &[u8]) -> bool {
        match self {
            Filter::Fixed(f) => f.contains(key),
            Filter::Growable(f) => f.contains(key),
        }
    }

    /// The copies of `key` the filter answers for (at least those inserted).
    pub fn count(&self, key: &[u8]) -> usize {
        match self {
            Filter::Fixed(f) => f.count(key),
            Filter::Growable(f) => f.count(key),
        }
    }

    /// Removes one copy of `key`.
    pub fn remove(&mut self, key: &[u8]) -> bool {
        match self {
            Filter::Fixed(f) => f.remove(key),
            Filter::Growable(f) => f.remove(key),
        }
    }

    /// Items inserted (and not removed).
    pub fn len(&self) -> usize {
        match self {
            Filter::Fixed(f) => f.len(),
            Filter::Growable(f) => f.len(),
        }
    }

    /// Whether it holds no item.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Items it holds without growing.
    pub fn capacity(&self) -> usize {
        match self {
            Filter::Fixed(f) => f.capacity(),
            Filter::Growable(f) => f.capacity(),
        }
    }

    /// Its bytes as a file (FORMAT.md).
    pub fn size_in_bytes(&self) -> usize {
        match self {
            Filter::Fixed(f) => f.size_in_bytes(),
            Filter::Growable(f) => f.size_in_bytes(),
        }
    }

    /// Levels (1 for a fixed filter).
    pub fn levels(&self) -> usize {
        match self {
            Filter::Fixed(_) => 1,
            Filter::Growable(f) => f.levels(),
        }
    }

    /// Buckets in all levels.
    pub fn buckets(&self) -> usize {
        match self {
            Filter::Fixed(f) => f.num_buckets(),
            Filter::Growable(f) => (0..f.levels())
                .filter_map(|k| f.level(k))
                .map(|l| l.num_buckets())
                .sum(),
        }
    }

    /// Slots per bucket (of the newest level).
    pub fn bucket_size(&self) -> usize {
        match self {
            Filter::Fixed(f) => f.bucket_size(),
            Filter::Growable(f) => f.level(f.levels() - 1).map_or(0, |l| l.bucket_size()),
        }
    }

    /// The bound on its false-positive rate.
    pub fn expected_fpr(&self) -> f64 {
        match self {
            Filter::Fixed(f) => f.expected_fpr(),
            Filter::Growable(f) => f.expected_fpr(),
        }
    }

    /// Whether it grows.
    pub fn is_growable(&self) -> bool {
        matches!(self, Filter::Growable(_))
    }
}

/// The `SCANDUMP` reply for `iter`: `(next, bytes)`, `next` 0 at the end. Iteration 0 gives the
/// header (next 1); iteration `i ≥ 1` the filter bytes from `i − 1`, up to [`CHUNK`] of them,
/// with next `i` + their length, so that `LOADCHUNK key next bytes` knows where they end.
///
/// ```
/// use cuckoo_sst_redis::value::{scan_chunk, CHUNK};
/// let bytes = vec![7u8; CHUNK + 10];
/// let header = [1u8; 48];
/// assert_eq!(scan_chunk(&header, &bytes, 0), Some((1, &header[..])));
/// assert_eq!(scan_chunk(&header, &bytes, 1).map(|(n, b)| (n, b.len())), Some((1 + CHUNK as i64, CHUNK)));
/// assert_eq!(scan_chunk(&header, &bytes, 1 + CHUNK as i64).map(|(n, b)| (n, b.len())), Some((11 + CHUNK as i64, 10)));
/// assert_eq!(scan_chunk(&header, &bytes, 11 + CHUNK as i64), None);
/// ```
pub fn scan_chunk<'a>(header: &'a [u8], bytes: &'a [u8], iter: i64) -> Option<(i64, &'a [u8])> {
    if iter == 0 {
        return Some((1, header));
    }
    let start = usize::try_from(iter.checked_sub(1)?).ok()?;
    let rest = bytes.get(start..).filter(|r| !r.is_empty())?;
    let chunk = &rest[..rest.len().min(CHUNK)];
    Some((iter + chunk.len() as i64, chunk))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuckoo_sst::Config;

    fn meta() -> Meta {
        Meta {
            bloom: true,
            expansion: 2,
            deleted: 3,
            max_iterations: 500,
        }
    }

    #[test]
    fn a_dump_reassembles_from_chunks() {
        let mut f = ScalableCuckooFilter::new(Config::new(1_000_000)).unwrap();
        for i in 0..1000u32 {
            f.insert(&i.to_le_bytes()).unwrap();
        }
        let v = Value::new(Filter::Growable(f), meta());
        let (h, bytes) = v.dump();
        assert!(bytes.len() > CHUNK, "more than one chunk: {}", bytes.len());
        let mut iter = 0;
        let mut loaded: Option<Value> = None;
        while let Some((next, chunk)) = scan_chunk(&h, &bytes, iter) {
            match &mut loaded {
                None => loaded = Some(Value::loading(Header::decode(chunk).unwrap())),
                Some(l) => l.add_chunk(next as u64 - 1, chunk).unwrap(),
            }
            iter = next;
        }
        let loaded = loaded.unwrap();
        assert_eq!(loaded.meta, meta());
        assert_eq!(loaded.dump(), (h, bytes));
        assert!((0..1000u32).all(|i| loaded.filter().unwrap().contains(&i.to_le_bytes())));
    }

    #[test]
    fn damaged_or_misplaced_chunks_are_refused() {
        let v = Value::new(
            Filter::Fixed(CuckooFilter::new(Config::new(100)).unwrap()),
            meta(),
        );
        let (h, bytes) = v.dump();
        let header = Header::decode(&h).unwrap();
        let mut l = Value::loading(header);
        assert_eq!(l.add_chunk(5, &bytes[1..5]), Err(ChunkError::Position));
        assert_eq!(
            l.add_chunk(bytes.len() as u64 + 1, &bytes),
            Err(ChunkError::Position)
        );
        l.add_chunk(10, &bytes[..10]).unwrap();
        let mut bad = bytes[10..].to_vec();
        let mid = bad.len() / 2;
        bad[mid] ^= 0x40;
        assert!(matches!(
            l.add_chunk(bytes.len() as u64, &bad),
            Err(ChunkError::Invalid(_))
        ));
        // Unchanged: the right last chunk still completes it.
        l.add_chunk(bytes.len() as u64, &bytes[10..]).unwrap();
        assert!(l.filter().is_some());
        assert!(Value::from_dump(&h, bytes[..bytes.len() - 1].to_vec()).is_ok());
        let mut long = bytes.clone();
        long.push(0);
        assert!(Value::from_dump(&h, long).is_err());
    }

    /// The wrapper answers as the filter it holds, fixed or growable: whether it is empty, its
    /// newest level's bucket size and its bound on the false-positive rate; a refused insert is
    /// `Full`, or `NoMemory` when memory ran out.
    #[test]
    fn the_wrapper_answers_as_its_filter() {
        let fixed = CuckooFilter::new(Config::new(1000).bucket_size(4)).unwrap();
        let growable = ScalableCuckooFilter::new(Config::new(1000).bucket_size(8)).unwrap();
        for (mut f, b) in [(Filter::Fixed(fixed), 4), (Filter::Growable(growable), 8)] {
            assert!(f.is_empty());
            assert_eq!(f.add(b"a", false), Added::Yes);
            assert!(!f.is_empty());
            assert_eq!(f.bucket_size(), b);
            let fpr = match &f {
                Filter::Fixed(f) => f.expected_fpr(),
                Filter::Growable(f) => f.expected_fpr(),
            };
            assert!(fpr > 0.0 && fpr < 0.01, "{fpr}");
            assert_eq!(f.expected_fpr(), fpr);
        }
        assert_eq!(
            Added::from(Error::OutOfMemory { bytes: 1 << 40 }),
            Added::NoMemory
        );
        assert_eq!(Added::from(Error::Full), Added::Full);
        assert_eq!(Added::from(Error::TooManyCopies), Added::Full);
    }

    /// A header with a flag bit this version does not know, or with a reserved byte set, is
    /// refused, whatever else it holds.
    #[test]
    fn unknown_flags_and_reserved_bytes_are_refused() {
        let h = Header {
            growable: true,
            total: 100,
            meta: meta(),
        }
        .encode();
        assert!(Header::decode(&h).is_ok());
        for (at, bit) in [(10, 4u8), (10, 0x80), (11, 1), (12, 1), (15, 0x80)] {
            let mut bad = h;
            bad[at] |= bit;
            assert_eq!(
                Header::decode(&bad),
                Err("unknown flags".to_string()),
                "bit {bit:#x} of byte {at}"
            );
        }
    }
}
