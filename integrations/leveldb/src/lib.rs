//! A LevelDB filter policy that stores cuckoo-sst compact blocks (FORMAT.md §11), one per
//! LevelDB filter (in practice one per data block).
//!
//! The policy itself is C — `cksst_leveldb.h` and `cksst_leveldb.c` beside this crate, over
//! LevelDB's C API and cuckoo-sst's C ABI — for the C and C++ engines that link LevelDB. This
//! crate compiles it, links it with LevelDB and the C ABI (the `cuckoo-sst-c` rlib), and gives
//! its tests and its example (`examples/vs_bloom.rs`, the measurement against LevelDB's Bloom
//! filter):
//!
//! - [`sys`]: a thin binding of the few LevelDB C functions they call, and of the policy's;
//! - [`Policy`], [`Db`], [`WriteBatch`]: small safe wrappers;
//! - [`table`]: a reader of LevelDB's table format that finds each table's filters (to
//!   measure them, and to damage them in tests).
//!
//! It is not a LevelDB binding for applications: only what the tests need is here.

use std::ffi::{CStr, CString, c_char, c_int};
use std::marker::PhantomData;
use std::path::Path;
use std::ptr;

// The C policy calls `cksst_builder_*` and `cksst_compact_contains`: naming the crate makes
// rustc link its rlib, whose `#[no_mangle]` functions then resolve those references (rustc
// puts upstream rlibs after this crate's native libraries on the link line).
use cuckoo_sst_c as _;

pub mod table;

/// The cuckoo policy's name (`CKSST_LEVELDB_POLICY_NAME`), stored in each table's metaindex
/// as `filter.` followed by it.
pub const POLICY_NAME: &str = "cuckoo-sst.compact.v1";

/// The name of LevelDB's built-in Bloom filter, which the clone uses too.
pub const BLOOM_NAME: &str = "leveldb.BuiltinBloomFilter2";

/// The filter the cuckoo policy stores when it could not build one: every lookup answers
/// "maybe" (`CKSST_LEVELDB_FALLBACK_BYTE`).
pub const FALLBACK_BYTE: u8 = 0x00;

/// LevelDB's C API (the functions the tests call) and the policy's (`cksst_leveldb.h`).
#[allow(non_camel_case_types, missing_docs)]
pub mod sys {
    use std::ffi::{c_char, c_int};

    /// Opaque LevelDB handles.
    macro_rules! opaque {
        ($($name:ident),*) => {$(
            #[repr(C)]
            pub struct $name {
                _private: [u8; 0],
            }
        )*};
    }
    opaque!(
        leveldb_t,
        leveldb_options_t,
        leveldb_readoptions_t,
        leveldb_writeoptions_t,
        leveldb_writebatch_t,
        leveldb_filterpolicy_t
    );

    pub const LEVELDB_NO_COMPRESSION: c_int = 0;
    pub const LEVELDB_SNAPPY_COMPRESSION: c_int = 1;

    /// `cksst_leveldb_stats`.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct cksst_leveldb_stats {
        pub filters: u64,
        pub filter_keys: u64,
        pub filter_bytes: u64,
        pub build_errors: u64,
        pub lookups: u64,
        pub maybe: u64,
        pub refused: u64,
    }

    unsafe extern "C" {
        pub fn leveldb_open(
            options: *const leveldb_options_t,
            name: *const c_char,
            errptr: *mut *mut c_char,
        ) -> *mut leveldb_t;
        pub fn leveldb_close(db: *mut leveldb_t);
        pub fn leveldb_put(
            db: *mut leveldb_t,
            options: *const leveldb_writeoptions_t,
            key: *const c_char,
            keylen: usize,
            val: *const c_char,
            vallen: usize,
            errptr: *mut *mut c_char,
        );
        pub fn leveldb_delete(
            db: *mut leveldb_t,
            options: *const leveldb_writeoptions_t,
            key: *const c_char,
            keylen: usize,
            errptr: *mut *mut c_char,
        );
        pub fn leveldb_write(
            db: *mut leveldb_t,
            options: *const leveldb_writeoptions_t,
            batch: *mut leveldb_writebatch_t,
            errptr: *mut *mut c_char,
        );
        pub fn leveldb_get(
            db: *mut leveldb_t,
            options: *const leveldb_readoptions_t,
            key: *const c_char,
            keylen: usize,
            vallen: *mut usize,
            errptr: *mut *mut c_char,
        ) -> *mut c_char;
        pub fn leveldb_property_value(db: *mut leveldb_t, propname: *const c_char) -> *mut c_char;
        pub fn leveldb_compact_range(
            db: *mut leveldb_t,
            start_key: *const c_char,
            start_key_len: usize,
            limit_key: *const c_char,
            limit_key_len: usize,
        );
        pub fn leveldb_destroy_db(
            options: *const leveldb_options_t,
            name: *const c_char,
            errptr: *mut *mut c_char,
        );

        pub fn leveldb_writebatch_create() -> *mut leveldb_writebatch_t;
        pub fn leveldb_writebatch_destroy(batch: *mut leveldb_writebatch_t);
        pub fn leveldb_writebatch_clear(batch: *mut leveldb_writebatch_t);
        pub fn leveldb_writebatch_put(
            batch: *mut leveldb_writebatch_t,
            key: *const c_char,
            klen: usize,
            val: *const c_char,
            vlen: usize,
        );
        pub fn leveldb_writebatch_delete(
            batch: *mut leveldb_writebatch_t,
            key: *const c_char,
            klen: usize,
        );

        pub fn leveldb_options_create() -> *mut leveldb_options_t;
        pub fn leveldb_options_destroy(options: *mut leveldb_options_t);
        pub fn leveldb_options_set_filter_policy(
            options: *mut leveldb_options_t,
            policy: *mut leveldb_filterpolicy_t,
        );
        pub fn leveldb_options_set_create_if_missing(options: *mut leveldb_options_t, v: u8);
        pub fn leveldb_options_set_paranoid_checks(options: *mut leveldb_options_t, v: u8);
        pub fn leveldb_options_set_write_buffer_size(options: *mut leveldb_options_t, v: usize);
        pub fn leveldb_options_set_block_size(options: *mut leveldb_options_t, v: usize);
        pub fn leveldb_options_set_max_file_size(options: *mut leveldb_options_t, v: usize);
        pub fn leveldb_options_set_compression(options: *mut leveldb_options_t, v: c_int);

        pub fn leveldb_filterpolicy_create_bloom(
            bits_per_key: c_int,
        ) -> *mut leveldb_filterpolicy_t;
        pub fn leveldb_filterpolicy_destroy(policy: *mut leveldb_filterpolicy_t);

        pub fn leveldb_readoptions_create() -> *mut leveldb_readoptions_t;
        pub fn leveldb_readoptions_destroy(options: *mut leveldb_readoptions_t);
        pub fn leveldb_writeoptions_create() -> *mut leveldb_writeoptions_t;
        pub fn leveldb_writeoptions_destroy(options: *mut leveldb_writeoptions_t);

        pub fn leveldb_free(ptr: *mut std::ffi::c_void);

        // cksst_leveldb.h
        pub fn cksst_leveldb_policy_create(
            stats: *mut cksst_leveldb_stats,
        ) -> *mut leveldb_filterpolicy_t;
        pub fn cksst_leveldb_bloom_policy_create(
            bits_per_key: c_int,
            stats: *mut cksst_leveldb_stats,
        ) -> *mut leveldb_filterpolicy_t;
        pub fn cksst_leveldb_policy_destroy(policy: *mut leveldb_filterpolicy_t);
        pub fn cksst_leveldb_stats_load(
            stats: *const cksst_leveldb_stats,
            out: *mut cksst_leveldb_stats,
        );
        pub fn cksst_leveldb_stats_reset(stats: *mut cksst_leveldb_stats);
        pub fn cksst_leveldb_compact_build(
            keys: *const *const c_char,
            lens: *const usize,
            n: c_int,
            len: *mut usize,
            built: *mut c_int,
        ) -> *mut c_char;
        pub fn cksst_leveldb_compact_may_match(
            key: *const c_char,
            key_len: usize,
            filter: *const c_char,
            filter_len: usize,
            refused: *mut c_int,
        ) -> u8;
    }
}

/// A policy's counters (`cksst_leveldb_stats`): filters built and lookups answered.
pub type Stats = sys::cksst_leveldb_stats;

/// Which filter a [`Policy`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// cuckoo-sst compact blocks (`cksst_leveldb_policy_create`).
    Cuckoo,
    /// The C clone of LevelDB's Bloom filter at this many bits a key, counted like the cuckoo
    /// policy (`cksst_leveldb_bloom_policy_create`).
    BloomClone(i32),
    /// LevelDB's own Bloom filter (`leveldb_filterpolicy_create_bloom`): not counted.
    BuiltinBloom(i32),
}

/// A filter policy, with its counters (none for [`Kind::BuiltinBloom`]). Every [`Db`] opened
/// with it borrows it, so it outlives them.
pub struct Policy {
    raw: *mut sys::leveldb_filterpolicy_t,
    /// Owned (from `Box::into_raw`), written by the C side; NULL for the built-in policy.
    stats: *mut Stats,
    kind: Kind,
}

impl Policy {
    /// The policy of `kind`.
    ///
    /// # Panics
    /// If the C side returns NULL (out of memory, or bits per key outside 0..=1000).
    pub fn new(kind: Kind) -> Policy {
        let stats = match kind {
            Kind::BuiltinBloom(_) => ptr::null_mut(),
            _ => Box::into_raw(Box::new(Stats::default())),
        };
        // SAFETY: `stats` is NULL or a live, zeroed `Stats` freed only after the policy.
        let raw = unsafe {
            match kind {
                Kind::Cuckoo => sys::cksst_leveldb_policy_create(stats),
                Kind::BloomClone(bits) => sys::cksst_leveldb_bloom_policy_create(bits, stats),
                Kind::BuiltinBloom(bits) => sys::leveldb_filterpolicy_create_bloom(bits),
            }
        };
        if raw.is_null() {
            if !stats.is_null() {
                // SAFETY: from `Box::into_raw` above, not shared.
                drop(unsafe { Box::from_raw(stats) });
            }
            panic!("the {kind:?} filter policy could not be created");
        }
        Policy { raw, stats, kind }
    }

    /// The cuckoo policy.
    pub fn cuckoo() -> Policy {
        Policy::new(Kind::Cuckoo)
    }

    /// What it writes.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The name LevelDB stores in each table's metaindex (after `filter.`).
    pub fn name(&self) -> &'static str {
        match self.kind {
            Kind::Cuckoo => POLICY_NAME,
            Kind::BloomClone(_) | Kind::BuiltinBloom(_) => BLOOM_NAME,
        }
    }

    /// Its counters so far; `None` for LevelDB's built-in policy.
    pub fn stats(&self) -> Option<Stats> {
        if self.stats.is_null() {
            return None;
        }
        let mut out = Stats::default();
        // SAFETY: `self.stats` is live; the C side reads each counter atomically.
        unsafe { sys::cksst_leveldb_stats_load(self.stats, &mut out) };
        Some(out)
    }

    /// Sets its counters to 0.
    pub fn reset_stats(&self) {
        if !self.stats.is_null() {
            // SAFETY: `self.stats` is live; the C side stores each counter atomically.
            unsafe { sys::cksst_leveldb_stats_reset(self.stats) };
        }
    }

    /// The raw policy, for `leveldb_options_set_filter_policy`.
    pub fn as_ptr(&self) -> *mut sys::leveldb_filterpolicy_t {
        self.raw
    }
}

impl Drop for Policy {
    fn drop(&mut self) {
        // SAFETY: no database uses the policy any more (each `Db` borrows it); the stats go
        // after the policy that wrote them.
        unsafe {
            match self.kind {
                Kind::BuiltinBloom(_) => sys::leveldb_filterpolicy_destroy(self.raw),
                _ => sys::cksst_leveldb_policy_destroy(self.raw),
            }
            if !self.stats.is_null() {
                drop(Box::from_raw(self.stats));
            }
        }
    }
}

/// The cuckoo policy's `create_filter` (`cksst_leveldb_compact_build`): the filter of `keys`,
/// and whether it is a compact block (false: the fallback byte).
pub fn compact_build(keys: &[&[u8]]) -> (Vec<u8>, bool) {
    let ptrs: Vec<*const c_char> = keys.iter().map(|k| k.as_ptr().cast()).collect();
    let lens: Vec<usize> = keys.iter().map(|k| k.len()).collect();
    let n = c_int::try_from(keys.len()).expect("at most i32::MAX keys");
    let (mut len, mut built) = (0usize, 0 as c_int);
    // SAFETY: `ptrs[i]` points at `lens[i]` bytes; the result is malloc'd, freed below.
    unsafe {
        let out =
            sys::cksst_leveldb_compact_build(ptrs.as_ptr(), lens.as_ptr(), n, &mut len, &mut built);
        let bytes = if out.is_null() {
            Vec::new()
        } else {
            std::slice::from_raw_parts(out.cast::<u8>(), len).to_vec()
        };
        sys::leveldb_free(out.cast());
        (bytes, built != 0)
    }
}

/// The cuckoo policy's `key_may_match` (`cksst_leveldb_compact_may_match`): whether `key` may
/// be in `filter`, and whether the filter was refused (not a compact block: then "maybe").
pub fn compact_may_match(key: &[u8], filter: &[u8]) -> (bool, bool) {
    let mut refused: c_int = 0;
    // SAFETY: both slices are live for the call.
    let maybe = unsafe {
        sys::cksst_leveldb_compact_may_match(
            key.as_ptr().cast(),
            key.len(),
            filter.as_ptr().cast(),
            filter.len(),
            &mut refused,
        )
    };
    (maybe != 0, refused != 0)
}

/// Options for [`Db::open`].
#[derive(Clone, Copy)]
pub struct Options<'p> {
    /// The filter policy (`None`: no filters).
    pub policy: Option<&'p Policy>,
    /// Create the database if it does not exist.
    pub create_if_missing: bool,
    /// LevelDB's `paranoid_checks`: among others, verify the metaindex and filter blocks'
    /// CRC-32C when a table is opened (a damaged filter block is then not used).
    pub paranoid_checks: bool,
    /// Bytes of the memtable before it is written to a level-0 table (LevelDB: 4 MiB).
    pub write_buffer_size: usize,
    /// Data block size before compression (LevelDB: 4 KiB).
    pub block_size: usize,
    /// Size at which a compaction starts a new table file (LevelDB: 2 MiB).
    pub max_file_size: usize,
    /// Snappy compression (off here by default: sizes then depend on the data alone).
    pub compression: bool,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            policy: None,
            create_if_missing: true,
            paranoid_checks: false,
            write_buffer_size: 4 << 20,
            block_size: 4096,
            max_file_size: 2 << 20,
            compression: false,
        }
    }
}

impl Options<'_> {
    /// LevelDB's options, which the caller destroys.
    fn raw(&self) -> *mut sys::leveldb_options_t {
        // SAFETY: a fresh options object, set through its setters.
        unsafe {
            let o = sys::leveldb_options_create();
            if let Some(p) = self.policy {
                sys::leveldb_options_set_filter_policy(o, p.as_ptr());
            }
            sys::leveldb_options_set_create_if_missing(o, u8::from(self.create_if_missing));
            sys::leveldb_options_set_paranoid_checks(o, u8::from(self.paranoid_checks));
            sys::leveldb_options_set_write_buffer_size(o, self.write_buffer_size);
            sys::leveldb_options_set_block_size(o, self.block_size);
            sys::leveldb_options_set_max_file_size(o, self.max_file_size);
            sys::leveldb_options_set_compression(
                o,
                if self.compression {
                    sys::LEVELDB_SNAPPY_COMPRESSION
                } else {
                    sys::LEVELDB_NO_COMPRESSION
                },
            );
            o
        }
    }
}

/// Takes LevelDB's error message out of `err` (and frees it), if there is one.
fn check(err: *mut c_char) -> Result<(), String> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: LevelDB set it to a malloc'd NUL-terminated string.
    let msg = unsafe { CStr::from_ptr(err) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: malloc'd by LevelDB, not used again.
    unsafe { sys::leveldb_free(err.cast()) };
    Err(msg)
}

fn c_path(path: &Path) -> Result<CString, String> {
    let s = path
        .to_str()
        .ok_or_else(|| format!("{} is not UTF-8", path.display()))?;
    CString::new(s).map_err(|e| e.to_string())
}

/// An open LevelDB database; closed when dropped. It borrows its filter policy.
pub struct Db<'p> {
    raw: *mut sys::leveldb_t,
    read: *mut sys::leveldb_readoptions_t,
    write: *mut sys::leveldb_writeoptions_t,
    _policy: PhantomData<&'p Policy>,
}

impl<'p> Db<'p> {
    /// Opens (or creates) the database at `path`.
    pub fn open(path: &Path, options: &Options<'p>) -> Result<Db<'p>, String> {
        let name = c_path(path)?;
        let o = options.raw();
        let mut err = ptr::null_mut();
        // SAFETY: valid options and name; LevelDB copies the options (the policy pointer in
        // them stays borrowed through 'p).
        let raw = unsafe { sys::leveldb_open(o, name.as_ptr(), &mut err) };
        // SAFETY: created above, copied by the open.
        unsafe { sys::leveldb_options_destroy(o) };
        check(err)?;
        if raw.is_null() {
            return Err("leveldb_open returned NULL".into());
        }
        // SAFETY: plain constructors.
        let (read, write) = unsafe {
            (
                sys::leveldb_readoptions_create(),
                sys::leveldb_writeoptions_create(),
            )
        };
        Ok(Db {
            raw,
            read,
            write,
            _policy: PhantomData,
        })
    }

    /// Sets `key` to `value`.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<(), String> {
        let mut err = ptr::null_mut();
        // SAFETY: a live database; the slices are live for the call.
        unsafe {
            sys::leveldb_put(
                self.raw,
                self.write,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
                &mut err,
            )
        };
        check(err)
    }

    /// Deletes `key`.
    pub fn delete(&self, key: &[u8]) -> Result<(), String> {
        let mut err = ptr::null_mut();
        // SAFETY: a live database; the slice is live for the call.
        unsafe {
            sys::leveldb_delete(
                self.raw,
                self.write,
                key.as_ptr().cast(),
                key.len(),
                &mut err,
            )
        };
        check(err)
    }

    /// Applies `batch` atomically.
    pub fn write(&self, batch: &mut WriteBatch) -> Result<(), String> {
        let mut err = ptr::null_mut();
        // SAFETY: a live database and batch.
        unsafe { sys::leveldb_write(self.raw, self.write, batch.raw, &mut err) };
        check(err)
    }

    /// The value of `key`, `None` if it is not found.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let (mut len, mut err) = (0usize, ptr::null_mut());
        // SAFETY: a live database; the slice is live for the call.
        let v = unsafe {
            sys::leveldb_get(
                self.raw,
                self.read,
                key.as_ptr().cast(),
                key.len(),
                &mut len,
                &mut err,
            )
        };
        check(err)?;
        if v.is_null() {
            return Ok(None);
        }
        // SAFETY: `len` malloc'd bytes, freed right after the copy.
        let out = unsafe { std::slice::from_raw_parts(v.cast::<u8>(), len) }.to_vec();
        // SAFETY: as above.
        unsafe { sys::leveldb_free(v.cast()) };
        Ok(Some(out))
    }

    /// Compacts the whole key range (`leveldb_compact_range(NULL, NULL)`): the memtable is
    /// written out and every level compacted into the deepest one that has files.
    pub fn compact_all(&self) {
        // SAFETY: a live database; NULL bounds mean the whole range.
        unsafe { sys::leveldb_compact_range(self.raw, ptr::null(), 0, ptr::null(), 0) };
    }

    /// A property (`leveldb.stats`, `leveldb.sstables`, `leveldb.num-files-at-level<N>`, …).
    pub fn property(&self, name: &str) -> Option<String> {
        let name = CString::new(name).ok()?;
        // SAFETY: a live database and a NUL-terminated name.
        let v = unsafe { sys::leveldb_property_value(self.raw, name.as_ptr()) };
        if v.is_null() {
            return None;
        }
        // SAFETY: a malloc'd NUL-terminated string, freed after the copy.
        let s = unsafe { CStr::from_ptr(v) }.to_string_lossy().into_owned();
        // SAFETY: as above.
        unsafe { sys::leveldb_free(v.cast()) };
        Some(s)
    }
}

impl Drop for Db<'_> {
    fn drop(&mut self) {
        // SAFETY: live handles, not used again. Closing waits for background compactions.
        unsafe {
            sys::leveldb_close(self.raw);
            sys::leveldb_readoptions_destroy(self.read);
            sys::leveldb_writeoptions_destroy(self.write);
        }
    }
}

/// Deletes the database at `path` (`leveldb_destroy_db`).
pub fn destroy(path: &Path) -> Result<(), String> {
    let name = c_path(path)?;
    let o = Options::default().raw();
    let mut err = ptr::null_mut();
    // SAFETY: valid options and name.
    unsafe {
        sys::leveldb_destroy_db(o, name.as_ptr(), &mut err);
        sys::leveldb_options_destroy(o);
    }
    check(err)
}

/// A batch of writes, applied atomically by [`Db::write`].
pub struct WriteBatch {
    raw: *mut sys::leveldb_writebatch_t,
    len: usize,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        // SAFETY: a plain constructor.
        WriteBatch {
            raw: unsafe { sys::leveldb_writebatch_create() },
            len: 0,
        }
    }

    /// Adds a put.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        // SAFETY: a live batch (it copies the bytes).
        unsafe {
            sys::leveldb_writebatch_put(
                self.raw,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
            )
        };
        self.len += 1;
    }

    /// Adds a delete.
    pub fn delete(&mut self, key: &[u8]) {
        // SAFETY: a live batch (it copies the bytes).
        unsafe { sys::leveldb_writebatch_delete(self.raw, key.as_ptr().cast(), key.len()) };
        self.len += 1;
    }

    /// The writes added since it was made or cleared.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no write.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Empties it.
    pub fn clear(&mut self) {
        // SAFETY: a live batch.
        unsafe { sys::leveldb_writebatch_clear(self.raw) };
        self.len = 0;
    }
}

impl Default for WriteBatch {
    fn default() -> Self {
        WriteBatch::new()
    }
}

impl Drop for WriteBatch {
    fn drop(&mut self) {
        // SAFETY: a live batch, not used again.
        unsafe { sys::leveldb_writebatch_destroy(self.raw) };
    }
}
