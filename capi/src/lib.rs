//! The C interface of [`cuckoo_sst`]: what a storage engine written in C or C++ needs to build,
//! persist, map and query the same filters as the Rust crate, byte for byte.
//!
//! Every function is `cksst_`-prefixed and declared in `include/cuckoo_sst.h`, which cbindgen
//! generates from this crate (a test checks that the committed header is current). The
//! conventions, the same for every function:
//!
//! * **Results.** A negative `int` is an error: one of the `CKSST_ERR_*` codes, whose message
//!   [`cksst_last_error`] returns. `CKSST_OK` (0) is success; functions that answer a question
//!   return 1 (yes / "maybe present") or 0 (no). An answer of "maybe" is the safe one: code that
//!   reads the table whenever the result is not 0 never loses a key, even on an error. Batch
//!   calls, which return `CKSST_OK` or an error, set every answer of their output array to
//!   true ("maybe") before anything else, so that after an error it still says "read the
//!   table".
//! * **Handles** are opaque, created by a `*_new` or `*_open` function and released by their
//!   `*_free` function (which accepts NULL). Bytes the library returns are released with
//!   [`cksst_bytes_free`].
//! * **Outputs.** A function that makes a handle or bytes first stores NULL (and 0 for a
//!   length) through its output pointers, once it has checked them: after any failure they hold
//!   NULL and 0, which the `*_free` functions accept, never a value left from earlier use.
//! * **Pointers and lengths** are checked: NULL where a value is required gives
//!   `CKSST_ERR_INVALID_ARGUMENT`; a NULL pointer with length 0 is an empty key. What cannot be
//!   checked — that a pointer points at as many bytes as its length says, that bytes a view
//!   borrows outlive it — is the caller's to keep.
//! * **No panic crosses the boundary**: one that would is caught and reported as
//!   `CKSST_ERR_INTERNAL`.
//! * **Threads.** Each handle type says what may be shared; the last error is per thread.
//!
//! ```
//! use cuckoo_sst_c::*;
//! // What a C caller writes, from Rust: build a filter block from a table's keys, then query
//! // its bytes in place.
//! unsafe {
//!     let b = cksst_builder_new(std::ptr::null());
//!     for k in [b"apple".as_slice(), b"pear"] {
//!         assert_eq!(cksst_builder_add_key(b, k.as_ptr(), k.len()), CKSST_OK);
//!     }
//!     let (mut bytes, mut len) = (std::ptr::null_mut(), 0);
//!     assert_eq!(cksst_builder_finish(b, &mut bytes, &mut len), CKSST_OK);
//!     cksst_builder_free(b);
//!
//!     let mut view = std::ptr::null_mut();
//!     assert_eq!(cksst_view_open(bytes, len, &mut view), CKSST_OK);
//!     assert_eq!(cksst_view_contains(view, b"pear".as_ptr(), 4), 1);
//!     cksst_view_free(view);
//!     cksst_bytes_free(bytes, len);
//! }
//! ```
//!
//! The run index ([`cksst_run_index`], [`cksst_mapped_run_index`]): one cuckoo table that maps
//! each key to the sorted runs that may hold it. Its lookups return 1 with the runs in the
//! caller's buffer, newest first, 0 when no run holds the key, and a negative code when the
//! caller must read every run (a buffer too small included: see [`cksst_run_index_runs_for`]).
//! Two flushes, a lookup and a compaction, what a C engine writes:
//!
//! ```
//! use cuckoo_sst_c::*;
//! use std::ptr;
//! unsafe {
//!     let mut index = ptr::null_mut();
//!     assert_eq!(cksst_run_index_new(ptr::null(), &mut index), CKSST_OK);
//!     let older: [&[u8]; 2] = [b"apple", b"pear"];
//!     let (keys, lens): (Vec<*const u8>, Vec<usize>) =
//!         older.iter().map(|k| (k.as_ptr(), k.len())).unzip();
//!     assert_eq!(cksst_run_index_add_run(index, 10, keys.as_ptr(), lens.as_ptr(), 2), CKSST_OK);
//!     let newer = [cksst_hash(b"pear".as_ptr(), 4), cksst_hash(b"plum".as_ptr(), 4)];
//!     assert_eq!(cksst_run_index_add_run_hashes(index, 11, newer.as_ptr(), 2), CKSST_OK);
//!
//!     let mut runs = [0u64; CKSST_RUN_INDEX_MAX_RUNS];
//!     let mut count = 0;
//!     let rc = cksst_run_index_runs_for(index, b"pear".as_ptr(), 4, runs.as_mut_ptr(),
//!                                       runs.len(), &mut count);
//!     assert_eq!((rc, &runs[..count]), (1, &[11, 10][..])); // newest first
//!     // Room for one run only: an error, with the count; the caller reads every run (or asks
//!     // again with room for `count`).
//!     let rc = cksst_run_index_runs_for(index, b"pear".as_ptr(), 4, runs.as_mut_ptr(), 1,
//!                                       &mut count);
//!     assert_eq!((rc, count, runs[0]), (CKSST_ERR_BUFFER_TOO_SMALL, 2, 11));
//!
//!     // Runs 10 and 11 merged into 12, which keeps every key.
//!     let kept = [cksst_hash(b"apple".as_ptr(), 5), newer[0], newer[1]];
//!     assert_eq!(cksst_run_index_compact_hashes(index, [11, 10].as_ptr(), 2, 12,
//!                                               kept.as_ptr(), 3), CKSST_OK);
//!     assert_eq!(cksst_run_index_describes(index, [12].as_ptr(), 1), 1);
//!     let rc = cksst_run_index_runs_for_hash(index, kept[0], runs.as_mut_ptr(), runs.len(),
//!                                            &mut count);
//!     assert_eq!((rc, &runs[..count]), (1, &[12][..]));
//!     cksst_run_index_free(index);
//! }
//! ```
//!
//! Saved, then mapped and asked in place:
//!
//! ```
//! use cuckoo_sst_c::*;
//! use std::ffi::CString;
//! use std::ptr;
//! let dir = tempfile::tempdir().unwrap();
//! let path = CString::new(dir.path().join("runs.index").to_str().unwrap()).unwrap();
//! unsafe {
//!     let mut index = ptr::null_mut();
//!     assert_eq!(cksst_run_index_new(ptr::null(), &mut index), CKSST_OK);
//!     let h = cksst_hash(b"k".as_ptr(), 1);
//!     assert_eq!(cksst_run_index_add_run_hashes(index, 7, &h, 1), CKSST_OK);
//!     assert_eq!(cksst_run_index_save(index, path.as_ptr()), CKSST_OK);
//!     cksst_run_index_free(index);
//!
//!     let mut mapped = ptr::null_mut();
//!     assert_eq!(cksst_mapped_run_index_open(path.as_ptr(), &mut mapped), CKSST_OK);
//!     // Trust it only if it describes the engine's live runs.
//!     assert_eq!(cksst_mapped_run_index_describes(mapped, [7].as_ptr(), 1), 1);
//!     let (mut runs, mut count) = ([0u64; CKSST_RUN_INDEX_MAX_RUNS], 0);
//!     let rc = cksst_mapped_run_index_runs_for(mapped, b"k".as_ptr(), 1, runs.as_mut_ptr(),
//!                                              runs.len(), &mut count);
//!     assert_eq!((rc, &runs[..count]), (1, &[7][..]));
//!     assert_eq!(cksst_mapped_run_index_verify(mapped), CKSST_OK);
//!     cksst_mapped_run_index_free(mapped);
//! }
//! ```
#![deny(missing_docs)]
#![allow(non_camel_case_types)]

use std::borrow::Cow;
use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char, c_int};
use std::fs::File;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::ptr;

use cuckoo_sst::{
    CompactFilter, Config, DEFAULT_FPR, DEFAULT_GROWTH_FACTOR, DEFAULT_MAX_KICKS, DEFAULT_SEED,
    DEFAULT_TIGHTENING, Encoding, Error, FilterBuilder, FilterRef, KeyHash, MappedFilter,
    MappedRunIndex, RunIndex, Runs, ScalableCuckooFilter,
};

// ---------------------------------------------------------------------------------------------
// Results

/// Success.
pub const CKSST_OK: c_int = 0;
/// A NULL pointer where a value is required, a length too large for the address space, a path
/// that is not a string, or an output buffer of the wrong size.
pub const CKSST_ERR_INVALID_ARGUMENT: c_int = -1;
/// A setting of the `cksst_config` is impossible or unsupported (the message names it).
pub const CKSST_ERR_INVALID_CONFIG: c_int = -2;
/// An insert found no free slot, or a growable filter may not grow further (its `max_levels`
/// or `max_bytes`). The filter is exactly as it was: every key inserted earlier is still found.
pub const CKSST_ERR_FULL: c_int = -3;
/// A growable filter refused another copy of a key it already holds as many copies of as its
/// buckets take. Nothing changed and the key is found.
pub const CKSST_ERR_TOO_MANY_COPIES: c_int = -4;
/// Memory could not be had: for a filter's table, a builder's keys (8 bytes a key), a handle,
/// a file's bytes. The call changed nothing; a builder keeps the keys added before.
/// (Allocations of a few dozen bytes inside a filter's code still abort the process where
/// they fail, as Rust's do: only where the address space is already exhausted.)
pub const CKSST_ERR_OUT_OF_MEMORY: c_int = -5;
/// Reading or writing a file failed (the message has the operating system's reason).
pub const CKSST_ERR_IO: c_int = -6;
/// The bytes are not a cuckoo-sst filter (wrong magic).
pub const CKSST_ERR_BAD_MAGIC: c_int = -7;
/// The bytes were written in a newer format version than this library reads.
pub const CKSST_ERR_UNSUPPORTED_VERSION: c_int = -8;
/// The bytes are shorter than their header says.
pub const CKSST_ERR_TRUNCATED: c_int = -9;
/// The bytes are longer than their header says.
pub const CKSST_ERR_TRAILING_BYTES: c_int = -10;
/// A checksum does not match: the bytes were damaged.
pub const CKSST_ERR_CHECKSUM_MISMATCH: c_int = -11;
/// A header or level field holds an impossible or inconsistent value.
pub const CKSST_ERR_CORRUPT: c_int = -12;
/// A single filter where a growable one was expected.
pub const CKSST_ERR_NOT_GROWABLE: c_int = -13;
/// A growable filter (several levels) where a single filter was expected.
pub const CKSST_ERR_GROWABLE: c_int = -14;
/// The caller's buffer is too small; the length needed was stored through the length pointer.
pub const CKSST_ERR_BUFFER_TOO_SMALL: c_int = -15;
/// A builder was used after its filter was finished (only finishing again is allowed).
pub const CKSST_ERR_FINISHED: c_int = -16;
/// A bug in the library (a panic, caught at the boundary). Please report it.
pub const CKSST_ERR_INTERNAL: c_int = -17;
/// A save wrote and renamed the file but could not sync it or its directory: the file is there
/// and complete, but may not survive a crash or power loss. Saving again retries.
pub const CKSST_ERR_NOT_DURABLE: c_int = -18;

/// The encodings of `cksst_config.encoding`: 0 lets the library choose.
pub const CKSST_ENCODING_AUTO: u32 = 0;
/// Whole-byte slots (8, 16 or 32 bits): the fastest lookups.
pub const CKSST_ENCODING_PLAIN: u32 = 1;
/// Bit-packed fingerprints of any width from 7 to 32 bits.
pub const CKSST_ENCODING_PACKED: u32 = 2;
/// Buckets of 4, semi-sorted (one bit per fingerprint smaller than packed).
pub const CKSST_ENCODING_SEMI_SORTED: u32 = 3;

/// What went wrong on this thread, for the message.
struct Failure {
    code: c_int,
    /// A static message where even a small allocation may fail (out of memory).
    message: Cow<'static, str>,
}

impl Failure {
    fn new(code: c_int, message: impl Into<Cow<'static, str>>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }

    fn argument(message: impl Into<Cow<'static, str>>) -> Failure {
        Failure::new(CKSST_ERR_INVALID_ARGUMENT, message)
    }

    /// Out of memory for `what`: a static message, which needs no allocation.
    fn out_of_memory(what: &'static str) -> Failure {
        Failure::new(CKSST_ERR_OUT_OF_MEMORY, what)
    }

    /// The same failure again (a builder reports its error each time it is asked).
    fn again(&self) -> Failure {
        Failure::new(self.code, self.message.clone())
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        let code = match &e {
            Error::InvalidConfig { .. } => CKSST_ERR_INVALID_CONFIG,
            Error::Full => CKSST_ERR_FULL,
            Error::TooManyCopies => CKSST_ERR_TOO_MANY_COPIES,
            Error::OutOfMemory { .. } => CKSST_ERR_OUT_OF_MEMORY,
            Error::Io(_) => CKSST_ERR_IO,
            Error::NotDurable(_) => CKSST_ERR_NOT_DURABLE,
            Error::BadMagic { .. } => CKSST_ERR_BAD_MAGIC,
            Error::UnsupportedVersion { .. } => CKSST_ERR_UNSUPPORTED_VERSION,
            Error::Truncated { .. } => CKSST_ERR_TRUNCATED,
            Error::TrailingBytes { .. } => CKSST_ERR_TRAILING_BYTES,
            Error::ChecksumMismatch { .. } => CKSST_ERR_CHECKSUM_MISMATCH,
            Error::Corrupt { .. } => CKSST_ERR_CORRUPT,
            Error::NotGrowable => CKSST_ERR_NOT_GROWABLE,
            Error::Growable { .. } => CKSST_ERR_GROWABLE,
            // Variants added to the library later: still an error, with its message.
            _ => CKSST_ERR_CORRUPT,
        };
        Failure::new(code, e.to_string())
    }
}

/// The last error's message: its own copy, or a static one where memory for a copy could not
/// be had.
enum LastError {
    Static(&'static CStr),
    Owned(CString),
}

impl LastError {
    /// The message `text` as a C string (NUL bytes inside it become spaces), allocated
    /// fallibly: a failure out of memory must not abort while it is reported.
    fn of(text: &str) -> LastError {
        let mut bytes = Vec::new();
        if bytes.try_reserve_exact(text.len() + 1).is_err() {
            return LastError::Static(c"out of memory (the message could not be stored)");
        }
        bytes.extend(text.bytes().map(|b| if b == 0 { b' ' } else { b }));
        // No NUL inside, and room for the terminator: no allocation, no error.
        CString::new(bytes).map_or(LastError::Static(c""), LastError::Owned)
    }

    fn as_ptr(&self) -> *const c_char {
        match self {
            LastError::Static(s) => s.as_ptr(),
            LastError::Owned(s) => s.as_ptr(),
        }
    }
}

thread_local! {
    static LAST_ERROR: RefCell<LastError> = const { RefCell::new(LastError::Static(c"")) };
}

/// Runs `body` at the boundary: its error is recorded for [`cksst_last_error`] and returned
/// as its code; a panic becomes `CKSST_ERR_INTERNAL`.
fn boundary(body: impl FnOnce() -> Result<c_int, Failure>) -> c_int {
    let failure = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(result)) => return result,
        Ok(Err(failure)) => failure,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Failure::new(
                CKSST_ERR_INTERNAL,
                format!("internal error (a bug): {what}"),
            )
        }
    };
    let message = LastError::of(&failure.message);
    // Even recording the message must not unwind into C (a thread being torn down).
    let _ = LAST_ERROR.try_with(|last| *last.borrow_mut() = message);
    failure.code
}

/// The message of the last error on the calling thread, NUL-terminated: what failed and why
/// (for example `checksum mismatch in level 0 buckets: stored 0x…, computed 0x…`), or the
/// empty string if no call on this thread has failed. The library owns it; it stays valid
/// until the next failing call on the same thread. Successful calls leave it as it was.
#[unsafe(no_mangle)]
pub extern "C" fn cksst_last_error() -> *const c_char {
    LAST_ERROR
        .try_with(|last| last.borrow().as_ptr())
        .unwrap_or(c"".as_ptr())
}

/// The name of a result code (`"CKSST_ERR_CORRUPT"`, …), a static string; `"CKSST_UNKNOWN"`
/// for a value that is not one.
#[unsafe(no_mangle)]
pub extern "C" fn cksst_status_name(code: c_int) -> *const c_char {
    let name: &'static CStr = match code {
        CKSST_OK => c"CKSST_OK",
        CKSST_ERR_INVALID_ARGUMENT => c"CKSST_ERR_INVALID_ARGUMENT",
        CKSST_ERR_INVALID_CONFIG => c"CKSST_ERR_INVALID_CONFIG",
        CKSST_ERR_FULL => c"CKSST_ERR_FULL",
        CKSST_ERR_TOO_MANY_COPIES => c"CKSST_ERR_TOO_MANY_COPIES",
        CKSST_ERR_OUT_OF_MEMORY => c"CKSST_ERR_OUT_OF_MEMORY",
        CKSST_ERR_IO => c"CKSST_ERR_IO",
        CKSST_ERR_BAD_MAGIC => c"CKSST_ERR_BAD_MAGIC",
        CKSST_ERR_UNSUPPORTED_VERSION => c"CKSST_ERR_UNSUPPORTED_VERSION",
        CKSST_ERR_TRUNCATED => c"CKSST_ERR_TRUNCATED",
        CKSST_ERR_TRAILING_BYTES => c"CKSST_ERR_TRAILING_BYTES",
        CKSST_ERR_CHECKSUM_MISMATCH => c"CKSST_ERR_CHECKSUM_MISMATCH",
        CKSST_ERR_CORRUPT => c"CKSST_ERR_CORRUPT",
        CKSST_ERR_NOT_GROWABLE => c"CKSST_ERR_NOT_GROWABLE",
        CKSST_ERR_GROWABLE => c"CKSST_ERR_GROWABLE",
        CKSST_ERR_BUFFER_TOO_SMALL => c"CKSST_ERR_BUFFER_TOO_SMALL",
        CKSST_ERR_FINISHED => c"CKSST_ERR_FINISHED",
        CKSST_ERR_INTERNAL => c"CKSST_ERR_INTERNAL",
        CKSST_ERR_NOT_DURABLE => c"CKSST_ERR_NOT_DURABLE",
        _ => c"CKSST_UNKNOWN",
    };
    name.as_ptr()
}

/// The library's version, `"0.1.0"`, a static string.
#[unsafe(no_mangle)]
pub extern "C" fn cksst_version() -> *const c_char {
    const VERSION: &CStr =
        match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
            Ok(v) => v,
            Err(_) => c"",
        };
    VERSION.as_ptr()
}

// ---------------------------------------------------------------------------------------------
// The caller's pointers: every dereference of one is here.

/// `len` bytes at `ptr`, NULL allowed for an empty slice.
///
/// # Safety
/// Unless NULL, `ptr` points at `len` readable bytes that stay unchanged for `'a`.
unsafe fn bytes<'a>(ptr: *const u8, len: usize, what: &str) -> Result<&'a [u8], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Failure::argument(format!(
            "{what} is NULL with length {len}"
        )));
    }
    if len > isize::MAX as usize {
        return Err(Failure::argument(format!(
            "{what}'s length {len} is too large"
        )));
    }
    // SAFETY: `ptr` is not NULL and `len` is at most isize::MAX; the caller guarantees that
    // `len` bytes are readable at `ptr` and unchanged while the slice lives (the function's
    // contract, stated on every public function that takes a pointer and a length). `u8` has
    // alignment 1, so any address is aligned.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// The caller's `n` answers at `ptr` (NULL allowed when `n` is 0), each set to "maybe" (true)
/// first: a batch call checks them before anything else, so that if it then fails, every
/// answer says "read the table". The caller's memory may be uninitialized: it is written
/// through the raw pointer, and only then borrowed as `bool`s.
///
/// # Safety
/// Unless NULL, `ptr` points at `n` writable, aligned `bool`s nothing else accesses meanwhile.
unsafe fn answers_out<'a>(ptr: *mut bool, n: usize, what: &str) -> Result<&'a mut [bool], Failure> {
    if n == 0 {
        return Ok(&mut []);
    }
    if ptr.is_null() {
        return Err(Failure::argument(format!("{what} is NULL with length {n}")));
    }
    if n > isize::MAX as usize {
        return Err(Failure::argument(format!(
            "{what}'s length {n} is too large"
        )));
    }
    // SAFETY: not NULL and at most isize::MAX bytes (checked; a `bool` is one byte, alignment
    // 1); the caller guarantees `n` writable bytes that nothing else accesses during the call.
    // Byte 1 is `true`, so every element is a valid `bool` after this, whatever it held.
    unsafe { ptr::write_bytes(ptr, 1, n) };
    // SAFETY: the same `n` bytes, now initialized `bool`s, borrowed for the call only.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, n) })
}

/// `len` elements at `ptr` to read, NULL allowed when `len` is 0.
///
/// # Safety
/// Unless NULL, `ptr` points at `len` initialized, aligned `T`s unchanged during the call.
#[inline]
unsafe fn in_slice<'a, T>(ptr: *const T, len: usize, what: &str) -> Result<&'a [T], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Failure::argument(format!(
            "{what} is NULL with length {len}"
        )));
    }
    if !ptr.is_aligned() {
        return Err(Failure::argument(format!("{what} is not aligned")));
    }
    if len
        .checked_mul(size_of::<T>().max(1))
        .is_none_or(|n| n > isize::MAX as usize)
    {
        return Err(Failure::argument(format!(
            "{what}'s length {len} is too large"
        )));
    }
    // SAFETY: not NULL, aligned and within isize::MAX bytes (checked); the caller guarantees
    // `len` initialized elements unchanged during the call.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// The handle behind `ptr`.
///
/// # Safety
/// Unless NULL, `ptr` came from this library's constructor of `T` and was not freed.
unsafe fn handle<'a, T>(ptr: *const T, what: &str) -> Result<&'a T, Failure> {
    // SAFETY: the caller passes NULL or a live handle, which `Box::into_raw` made: aligned,
    // initialized, and not mutated while shared (each handle type documents which functions
    // may run at once; those that do take `&T`).
    unsafe { ptr.as_ref() }.ok_or_else(|| Failure::argument(format!("{what} is NULL")))
}

/// The handle behind `ptr`, to change it.
///
/// # Safety
/// As [`handle`], and no other call uses the handle meanwhile.
unsafe fn handle_mut<'a, T>(ptr: *mut T, what: &str) -> Result<&'a mut T, Failure> {
    // SAFETY: as `handle`; the caller guarantees exclusive use for the call (documented on
    // each handle type: one thread at a time for those with functions that change them).
    unsafe { ptr.as_mut() }.ok_or_else(|| Failure::argument(format!("{what} is NULL")))
}

/// Stores `value` through `out`.
///
/// # Safety
/// Unless NULL, `out` points at a writable, aligned `T`.
unsafe fn put<T>(out: *mut T, value: T, what: &str) -> Result<(), Failure> {
    if out.is_null() {
        return Err(Failure::argument(format!("{what} is NULL")));
    }
    if !out.is_aligned() {
        return Err(Failure::argument(format!("{what} is not aligned")));
    }
    // SAFETY: not NULL and aligned (checked); the caller guarantees it points at a writable
    // `T`. `write` does not drop the old value, which may be uninitialized.
    unsafe { out.write(value) };
    Ok(())
}

/// Stores NULL through the output pointer `out` of a function that makes a handle or bytes, the
/// first thing it does, so that a caller's cleanup path after a failure finds NULL rather than
/// a value left from earlier use. `Err` if `out` is NULL or misaligned.
///
/// # Safety
/// Unless NULL, `out` points at a writable pointer.
unsafe fn clear<T>(out: *mut *mut T, what: &str) -> Result<(), Failure> {
    // SAFETY: the caller's contract, as stated.
    unsafe { put(out, ptr::null_mut(), what) }
}

/// [`clear`] for the pointer and length of bytes handed out: NULL and 0.
///
/// # Safety
/// Unless NULL, `out` points at a writable pointer and `out_len` at a writable `size_t`.
unsafe fn clear_bytes(out: *mut *mut u8, out_len: *mut usize) -> Result<(), Failure> {
    if out.is_null() || out_len.is_null() {
        return Err(Failure::argument(
            "the output pointer or its length is NULL",
        ));
    }
    // SAFETY: the caller's contract, as stated.
    unsafe {
        put(out_len, 0, "the length pointer")?;
        clear(out, "the output pointer")
    }
}

/// `value` on the heap, as `Box::into_raw(Box::new(value))` makes it, or `OutOfMemory` where
/// `Box::new` would abort the process.
fn try_box<T>(value: T) -> Result<*mut T, Failure> {
    let layout = std::alloc::Layout::new::<T>();
    if layout.size() == 0 {
        return Ok(Box::into_raw(Box::new(value)));
    }
    // SAFETY: the layout's size is not zero (checked).
    let p = unsafe { std::alloc::alloc(layout) }.cast::<T>();
    if p.is_null() {
        return Err(Failure::out_of_memory("out of memory for a handle"));
    }
    // SAFETY: `p` is a fresh allocation of the global allocator with `T`'s layout, so it is
    // aligned and writable for a `T`, and `Box::from_raw` may own it (the layout a `Box<T>`
    // frees with); [`free`] releases it that way.
    unsafe { p.write(value) };
    Ok(p)
}

/// Stores a new handle holding `value` through `out`: `CKSST_OK`, or the error with nothing
/// left allocated.
///
/// # Safety
/// `out` is NULL (an error) or points at a writable pointer.
unsafe fn give<T>(value: T, out: *mut *mut T) -> Result<c_int, Failure> {
    if out.is_null() {
        return Err(Failure::argument("the output pointer is NULL"));
    }
    let made = try_box(value)?;
    // SAFETY: the caller's contract; on failure the handle is taken back.
    if let Err(e) = unsafe { put(out, made, "the output pointer") } {
        // SAFETY: made just above and not given out.
        unsafe { free(made) };
        return Err(e);
    }
    Ok(CKSST_OK)
}

// Every handle may move between threads and be shared by them: what each handle type's
// comment allows at once is a matter of its functions (those that change it take `&mut`), not
// of its contents.
const _: () = {
    const fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<cksst_builder>();
    send_and_sync::<cksst_view>();
    send_and_sync::<cksst_view_set>();
    send_and_sync::<cksst_mapped>();
    send_and_sync::<cksst_growable>();
    send_and_sync::<cksst_run_index>();
    send_and_sync::<cksst_mapped_run_index>();
};

/// Frees a handle made by `Box::into_raw`.
///
/// # Safety
/// `ptr` is NULL or a live handle of type `T` from this library, not used again.
unsafe fn free<T>(ptr: *mut T) {
    if !ptr.is_null() {
        // SAFETY: the caller passes a handle `Box::into_raw` made and gives it up.
        drop(unsafe { Box::from_raw(ptr) });
    }
}

/// A path from a NUL-terminated string.
///
/// # Safety
/// Unless NULL, `path` points at a NUL-terminated string.
unsafe fn path_of(path: *const c_char) -> Result<PathBuf, Failure> {
    if path.is_null() {
        return Err(Failure::argument("path is NULL"));
    }
    // SAFETY: not NULL; the caller guarantees a NUL-terminated string.
    let s = unsafe { CStr::from_ptr(path) };
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Ok(PathBuf::from(std::ffi::OsStr::from_bytes(s.to_bytes())))
    }
    #[cfg(not(unix))]
    {
        s.to_str()
            .map(PathBuf::from)
            .map_err(|_| Failure::argument("path is not UTF-8"))
    }
}

/// Bytes handed to the caller, released by [`cksst_bytes_free`].
///
/// # Safety
/// `out` and `out_len` are NULL or point at writable, aligned values.
unsafe fn give_bytes(v: Vec<u8>, out: *mut *mut u8, out_len: *mut usize) -> Result<(), Failure> {
    if out.is_null() || out_len.is_null() {
        return Err(Failure::argument(
            "the output pointer or its length is NULL",
        ));
    }
    let len = v.len();
    let ptr = Box::into_raw(v.into_boxed_slice()) as *mut u8;
    // SAFETY: both checked non-NULL; alignment is checked by `put`, and on its failure the
    // bytes are taken back so nothing leaks.
    unsafe {
        if let Err(e) = put(out_len, len, "the length pointer")
            .and_then(|()| put(out, ptr, "the output pointer"))
        {
            drop(Box::from_raw(ptr::slice_from_raw_parts_mut(ptr, len)));
            return Err(e);
        }
    }
    Ok(())
}

/// Releases bytes the library returned (from `cksst_builder_finish`,
/// `cksst_builder_finish_compact`, `cksst_growable_to_bytes`, `cksst_run_index_to_bytes`), with
/// the length it returned with them. NULL is allowed.
///
/// # Safety
/// `bytes` is NULL or came from this library with exactly `len`, and is not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_bytes_free(bytes: *mut u8, len: usize) {
    if !bytes.is_null() {
        // SAFETY: the caller returns a boxed slice `give_bytes` made, with its length.
        drop(unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(bytes, len)) });
    }
}

// ---------------------------------------------------------------------------------------------
// Hashing and configuration

/// The 64-bit hash of a key (XXH3-64, seed 0; FORMAT.md "Hashing"), the same for every filter
/// whatever its seed: hash a key once and ask every filter with the `*_contains_hash`
/// functions. A NULL `key` hashes as the empty key, whatever `len` says: a `uint64_t` result
/// has no value left for an error, and this signature is kept for the callers that have it.
/// [`cksst_hash_checked`] refuses a NULL key with a nonzero length, as every function that
/// takes a key does.
///
/// # Safety
/// `key` is NULL or points at `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_hash(key: *const u8, len: usize) -> u64 {
    // SAFETY: the caller's contract, as stated.
    match unsafe { bytes(key, len, "key") } {
        Ok(key) => KeyHash::of(key).to_u64(),
        Err(_) => KeyHash::of(&[]).to_u64(),
    }
}

/// Stores the 64-bit hash of a key in `*hash`, as [`cksst_hash`] computes it: `CKSST_OK`, or
/// `CKSST_ERR_INVALID_ARGUMENT` (and `*hash` unchanged) for a NULL `key` with a nonzero length
/// or a NULL `hash`, as every function that takes a key refuses it; a NULL key of length 0 is
/// the empty key.
///
/// # Safety
/// `key` is NULL or points at `len` readable bytes; `hash` is NULL or points at a writable
/// `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_hash_checked(key: *const u8, len: usize, hash: *mut u64) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let h = KeyHash::of(unsafe { bytes(key, len, "key") }?).to_u64();
        // SAFETY: the caller's contract, as stated.
        unsafe { put(hash, h, "hash") }?;
        Ok(CKSST_OK)
    })
}

/// Settings for a filter; fill one with [`cksst_config_init`] and change what you need.
/// Zero in `bucket_size`, `fingerprint_bits` or `encoding` lets the library choose (the layout
/// with the fewest bits per key that meets `false_positive_rate`). A configuration that
/// `cksst_config_init` did not fill (`= {0}`, say) is refused, with a message that says so.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cksst_config {
    /// `sizeof(cksst_config)` as the caller's header declares it, which `cksst_config_init`
    /// sets. Fields may be added at the end in later versions: a library then reads the fields
    /// that the caller's size covers and takes the defaults for the rest. This version knows
    /// one size and refuses any other (0: not initialized).
    pub size: usize,
    /// Keys the filter must hold (for a builder, only a hint: it is sized for the keys added).
    pub capacity: u64,
    /// The target false-positive rate, in (0, 1); 0.01 by default.
    pub false_positive_rate: f64,
    /// Slots per bucket: 2, 4 or 8; 0 to choose.
    pub bucket_size: u32,
    /// Fingerprint width in bits; 0 to choose.
    pub fingerprint_bits: u32,
    /// One of the `CKSST_ENCODING_*` values; 0 (`CKSST_ENCODING_AUTO`) to choose.
    pub encoding: u32,
    /// The most relocations per insert; 500 by default.
    pub max_kicks: u32,
    /// The seed of the bucket and fingerprint derivation.
    pub seed: u64,
    /// Growable filters: the capacity ratio between levels; 2 by default.
    pub growth_factor: f64,
    /// Growable filters: the share of the rate budget each level leaves to later ones; 0.2.
    pub tightening: f64,
    /// Growable filters: the most levels (0: no limit).
    pub max_levels: u32,
    /// Growable filters: the most bytes (0: no limit).
    pub max_bytes: u64,
}

/// Fills `config` with the defaults for `capacity` keys: a 1 % false-positive rate, the layout
/// chosen for it, the default seed and kicks, doubling levels.
///
/// # Safety
/// `config` is NULL (an error) or points at a writable `cksst_config`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_config_init(config: *mut cksst_config, capacity: u64) -> c_int {
    boundary(|| {
        let value = cksst_config {
            size: size_of::<cksst_config>(),
            capacity,
            false_positive_rate: DEFAULT_FPR,
            bucket_size: 0,
            fingerprint_bits: 0,
            encoding: CKSST_ENCODING_AUTO,
            max_kicks: DEFAULT_MAX_KICKS,
            seed: DEFAULT_SEED,
            growth_factor: DEFAULT_GROWTH_FACTOR,
            tightening: DEFAULT_TIGHTENING,
            max_levels: 0,
            max_bytes: 0,
        };
        // SAFETY: the caller's contract, as stated.
        unsafe { put(config, value, "config") }?;
        Ok(CKSST_OK)
    })
}

/// The Rust configuration of `config`, or the defaults (capacity 0) for NULL.
///
/// # Safety
/// `config` is NULL or points at an initialized `cksst_config`.
unsafe fn config_of(config: *const cksst_config) -> Result<Config, Failure> {
    // SAFETY: the caller's contract, as stated; `cksst_config` is plain data (any bits valid).
    let Some(c) = (unsafe { config.as_ref() }) else {
        return Ok(Config::new(0));
    };
    if c.size != size_of::<cksst_config>() {
        return Err(Failure::new(
            CKSST_ERR_INVALID_CONFIG,
            format!(
                "the cksst_config's size is {}, this library's is {}: fill it with \
                 cksst_config_init before changing what you need{}",
                c.size,
                size_of::<cksst_config>(),
                if c.size == 0 {
                    " (a zeroed configuration is not one)"
                } else {
                    ""
                }
            ),
        ));
    }
    let capacity = usize::try_from(c.capacity)
        .map_err(|_| Failure::new(CKSST_ERR_INVALID_CONFIG, "capacity: too large"))?;
    let mut out = Config::new(capacity)
        .false_positive_rate(c.false_positive_rate)
        .seed(c.seed)
        .max_kicks(c.max_kicks)
        .growth_factor(c.growth_factor)
        .tightening(c.tightening)
        .max_levels(c.max_levels)
        .max_bytes(c.max_bytes);
    if c.bucket_size != 0 {
        out = out.bucket_size(c.bucket_size as usize);
    }
    if c.fingerprint_bits != 0 {
        out = out.fingerprint_bits(c.fingerprint_bits);
    }
    out = match c.encoding {
        CKSST_ENCODING_AUTO => out,
        CKSST_ENCODING_PLAIN => out.encoding(Encoding::Plain),
        CKSST_ENCODING_PACKED => out.encoding(Encoding::Packed),
        CKSST_ENCODING_SEMI_SORTED => out.encoding(Encoding::SemiSorted),
        other => {
            return Err(Failure::new(
                CKSST_ERR_INVALID_CONFIG,
                format!("encoding: {other} is not one of the CKSST_ENCODING_* values (0 to 3)"),
            ));
        }
    };
    Ok(out)
}

fn answer(yes: bool) -> Result<c_int, Failure> {
    Ok(c_int::from(yes))
}

// ---------------------------------------------------------------------------------------------
// The builder

/// Builds the filter of an SSTable from all of its keys: add them, then finish into bytes.
/// The filter is sized exactly for the distinct keys added (duplicates are dropped).
///
/// Memory: 8 bytes a key while keys are added, taken as they come; finishing needs about 8
/// more a key for a while, then the filter. Where that memory cannot be had, adding a key and
/// finishing return `CKSST_ERR_OUT_OF_MEMORY` and keep the keys added so far (finish again
/// once memory is free), and [`cksst_builder_new`] returns NULL: the process is not aborted.
/// (Below 134 million keys. The filter's own table and the file's bytes are allocated
/// fallibly too; a compact block of more than 4096 keys is not.)
///
/// Thread safety: one thread at a time (it may move between threads).
pub struct cksst_builder {
    state: BuilderState,
}

enum BuilderState {
    /// The keys' hashes so far, kept here rather than in a [`FilterBuilder`] so that their
    /// memory is reserved fallibly; `seed` is the configuration's.
    Adding {
        config: Config,
        seed: u64,
        hashes: Vec<u64>,
    },
    /// A configuration [`config_of`] refused: keys are accepted and dropped, and finishing
    /// reports the error, as [`cksst_builder_new`] documents.
    Invalid(Failure),
    /// The finished file (or compact block, `compact`), kept so that a `finish_into` with too
    /// small a buffer can be retried.
    Built {
        bytes: Vec<u8>,
        compact: bool,
    },
    Taken,
}

/// The most hashes a builder reserves room for up front, whatever the capacity hint (1 GiB),
/// as [`FilterBuilder::new`] does.
const RESERVE_MAX: u64 = 1 << 27;

/// The fewest hashes a builder reserves room for (512 bytes), whatever the hint.
const RESERVE_MIN: u64 = 64;

/// A builder for the keys to come, following `config` (NULL: the defaults). NULL if the
/// memory for it cannot be had (the message says so). Invalid settings are reported when it
/// finishes.
///
/// # Safety
/// `config` is NULL or points at an initialized `cksst_config`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_builder_new(config: *const cksst_config) -> *mut cksst_builder {
    let mut made = ptr::null_mut();
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let state = match unsafe { config_of(config) } {
            Ok(c) => {
                // SAFETY: as above; `config_of` read it already.
                let (seed, hint) =
                    unsafe { config.as_ref() }.map_or((DEFAULT_SEED, 0), |c| (c.seed, c.capacity));
                let mut hashes = Vec::new();
                // Only a hint: where even the address space cannot be had, keys reserve their
                // own as they come.
                // At least RESERVE_MIN: a filter policy's builder, made with no hint for a
                // block of a few dozen keys, would otherwise grow its vector five times.
                let _ = hashes.try_reserve_exact(hint.clamp(RESERVE_MIN, RESERVE_MAX) as usize);
                BuilderState::Adding {
                    config: c,
                    seed,
                    hashes,
                }
            }
            // Reported when the builder finishes, as documented.
            Err(invalid) => BuilderState::Invalid(invalid),
        };
        made = try_box(cksst_builder { state })?;
        Ok(CKSST_OK)
    });
    made
}

/// Adds a key. `CKSST_ERR_FINISHED` after the filter was finished; `CKSST_ERR_OUT_OF_MEMORY`
/// (the key not added, the others kept) where its 8 bytes cannot be had.
///
/// # Safety
/// `builder` is a live builder used by no other thread; `key` is NULL or points at `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_builder_add_key(
    builder: *mut cksst_builder,
    key: *const u8,
    len: usize,
) -> c_int {
    // SAFETY: the caller's contract, as stated.
    boundary(|| unsafe { add(builder, KeyHash::of(bytes(key, len, "key")?)) })
}

/// Adds a key by its hash ([`cksst_hash`]), as [`cksst_builder_add_key`] does.
///
/// # Safety
/// `builder` is a live builder used by no other thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_builder_add_hash(builder: *mut cksst_builder, hash: u64) -> c_int {
    // SAFETY: the caller's contract, as stated.
    boundary(|| unsafe { add(builder, KeyHash::from_u64(hash)) })
}

/// # Safety
/// As [`cksst_builder_add_hash`].
unsafe fn add(builder: *mut cksst_builder, h: KeyHash) -> Result<c_int, Failure> {
    // SAFETY: the caller's contract.
    match &mut unsafe { handle_mut(builder, "builder") }?.state {
        BuilderState::Adding { hashes, .. } => {
            if hashes.try_reserve(1).is_err() {
                return Err(Failure::out_of_memory(
                    "out of memory for another key (8 bytes a key): the key was not added, \
                     the others are kept",
                ));
            }
            hashes.push(h.to_u64());
            Ok(CKSST_OK)
        }
        BuilderState::Invalid(_) => Ok(CKSST_OK),
        _ => Err(Failure::new(
            CKSST_ERR_FINISHED,
            "the builder's filter was already finished",
        )),
    }
}

/// Keys added so far, duplicates included (0 once finished).
///
/// # Safety
/// `builder` is NULL or a live builder used by no other thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_builder_len(builder: *const cksst_builder) -> usize {
    // SAFETY: the caller's contract, as stated.
    match unsafe { builder.as_ref() }.map(|b| &b.state) {
        Some(BuilderState::Adding { hashes, .. }) => hashes.len(),
        _ => 0,
    }
}

/// Builds the filter once, as a file or a compact block; later calls find the bytes. Refusals
/// that need nothing from the keys (a compact block's seed, memory for the builder's copy of
/// the keys) leave the keys where they are, to finish otherwise or later.
fn built(builder: &mut cksst_builder, compact: bool) -> Result<&mut Vec<u8>, Failure> {
    match &builder.state {
        BuilderState::Invalid(f) => return Err(f.again()),
        BuilderState::Adding { seed, hashes, .. } => {
            if compact && *seed != DEFAULT_SEED {
                return Err(Failure::new(
                    CKSST_ERR_INVALID_CONFIG,
                    format!(
                        "invalid seed: {seed:#x}: a compact block names its seed by an index \
                         from the default seed; leave the seed at its default (the keys are \
                         kept: cksst_builder_finish still builds a file)"
                    ),
                ));
            }
            // The FilterBuilder takes a copy of the hashes (ours are freed before it sorts
            // them, so the peak is its own); its room is reserved exactly, and fallibly here
            // first: where it cannot be had, nothing is taken.
            let mut room: Vec<u64> = Vec::new();
            if room.try_reserve_exact(hashes.len()).is_err() {
                return Err(Failure::out_of_memory(
                    "out of memory for finishing (8 bytes a key more): the keys are kept",
                ));
            }
        }
        _ => {}
    }
    if let BuilderState::Adding { .. } = builder.state {
        let BuilderState::Adding { config, hashes, .. } =
            std::mem::replace(&mut builder.state, BuilderState::Taken)
        else {
            unreachable!()
        };
        let finished = finish_hashes(config, hashes, compact);
        builder.state = match finished {
            Ok(bytes) => BuilderState::Built { bytes, compact },
            // Finishing again reports the same error.
            Err(e) => BuilderState::Invalid(e),
        };
        if let BuilderState::Invalid(f) = &builder.state {
            return Err(f.again());
        }
    }
    match &mut builder.state {
        BuilderState::Built { bytes, compact: c } if *c == compact => Ok(bytes),
        BuilderState::Built { .. } => Err(Failure::new(
            CKSST_ERR_FINISHED,
            "the builder's filter was finished in the other form (file or compact block)",
        )),
        _ => Err(Failure::new(
            CKSST_ERR_FINISHED,
            "the builder's bytes were already taken",
        )),
    }
}

/// The file or compact block of the key hashes `hashes`, built by a [`FilterBuilder`].
fn finish_hashes(config: Config, hashes: Vec<u64>, compact: bool) -> Result<Vec<u8>, Failure> {
    // Sized for the keys, so that adding them reserves once: the room `built` just found.
    let mut b = FilterBuilder::new(config.capacity(hashes.len()));
    for &h in &hashes {
        b.add_hash(KeyHash::from_u64(h));
    }
    drop(hashes);
    if compact {
        return Ok(b.finish_compact()?);
    }
    let filter = b.finish()?;
    let mut bytes = Vec::new();
    if bytes.try_reserve_exact(filter.size_in_bytes()).is_err() {
        return Err(Failure::out_of_memory(
            "out of memory for the filter's file bytes",
        ));
    }
    filter.write_to(&mut bytes)?;
    Ok(bytes)
}

/// # Safety
/// As [`cksst_builder_finish`].
unsafe fn finish(
    builder: *mut cksst_builder,
    bytes: *mut *mut u8,
    len: *mut usize,
    compact: bool,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract.
        unsafe { clear_bytes(bytes, len) }?;
        // SAFETY: the caller's contract.
        let b = unsafe { handle_mut(builder, "builder") }?;
        let out = std::mem::take(built(b, compact)?);
        b.state = BuilderState::Taken;
        // SAFETY: the caller's contract.
        unsafe { give_bytes(out, bytes, len) }?;
        Ok(CKSST_OK)
    })
}

/// # Safety
/// As [`cksst_builder_finish_into`].
unsafe fn finish_into(
    builder: *mut cksst_builder,
    buf: *mut u8,
    capacity: usize,
    len: *mut usize,
    compact: bool,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract.
        unsafe { put(len, 0, "len") }?;
        // SAFETY: the caller's contract.
        let b = unsafe { handle_mut(builder, "builder") }?;
        let file = built(b, compact)?;
        // SAFETY: the caller's contract.
        unsafe { deliver(file, buf, capacity, len) }
    })
}

/// Copies `file` into the caller's buffer `buf` of `capacity` bytes, its length into `*len`
/// first: `CKSST_ERR_BUFFER_TOO_SMALL` (nothing copied) where it does not fit.
///
/// # Safety
/// `len` is writable; `buf` is NULL or points at `capacity` writable bytes.
#[inline]
unsafe fn deliver(
    file: &[u8],
    buf: *mut u8,
    capacity: usize,
    len: *mut usize,
) -> Result<c_int, Failure> {
    // SAFETY: the caller's contract.
    unsafe { put(len, file.len(), "len") }?;
    if capacity < file.len() {
        return Err(Failure::new(
            CKSST_ERR_BUFFER_TOO_SMALL,
            format!(
                "the filter takes {} bytes, the buffer has {capacity}",
                file.len()
            ),
        ));
    }
    if file.is_empty() {
        return Ok(CKSST_OK);
    }
    if buf.is_null() {
        return Err(Failure::argument(format!(
            "buf is NULL with capacity {capacity}"
        )));
    }
    // SAFETY: `buf` is not NULL and the caller guarantees `capacity ≥ file.len()` writable
    // bytes there (checked above against the length), at any alignment (bytes); the bytes
    // written are exactly the filter's, through the raw pointer, so no reference is made
    // to the rest of the caller's buffer, which may be uninitialized. `file` is the
    // library's own memory, so the two do not overlap.
    unsafe { ptr::copy_nonoverlapping(file.as_ptr(), buf, file.len()) };
    Ok(CKSST_OK)
}

/// The compact block (FORMAT.md §11) of `n` keys — `keys[i]` of `lens[i]` bytes — at the
/// default configuration, built into the caller's buffer in one call: what
/// [`cksst_builder_new`] (NULL), [`cksst_builder_add_key`] for each key and
/// [`cksst_builder_finish_compact_into`] give, without a builder to make and free. For a
/// filter policy that builds a block every few dozen keys (LevelDB's), where those calls cost
/// more than the block.
///
/// `CKSST_ERR_BUFFER_TOO_SMALL`, with the length in `*len`, where the block does not fit;
/// call again with a buffer of that size (the block is built again: the same bytes). A
/// default block takes at most `16 + 2 * n` bytes (about 9 bits a key, 2 bytes of header).
///
/// Any thread may call it. Each thread keeps one builder and one block between its calls, so
/// that a block costs no allocation: memory for the largest block it built, up to 65 536 keys
/// (after a larger one the thread starts again small).
///
/// # Safety
/// `keys` and `lens` point at `n` elements (NULL when `n` is 0), each `keys[i]` NULL (with
/// `lens[i]` 0) or pointing at `lens[i]` bytes; `buf` is NULL or points at `capacity`
/// writable bytes; `len` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_compact_build_into(
    keys: *const *const u8,
    lens: *const usize,
    n: usize,
    buf: *mut u8,
    capacity: usize,
    len: *mut usize,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe { put(len, 0, "len") }?;
        // SAFETY: as above.
        let (keys, lens) = unsafe { (in_slice(keys, n, "keys")?, in_slice(lens, n, "lens")?) };
        // One builder and one block a thread, kept between calls: a filter policy builds a
        // block every few dozen keys, and two allocations a block cost about as much as its
        // sort (a call made while the thread's pair is in use, or while the thread is torn
        // down, takes a fresh pair).
        thread_local! {
            // Made on the thread's first call (a constant initializer: no lazy-init check
            // through a call each block).
            static SCRATCH: RefCell<Option<(FilterBuilder, Vec<u8>)>> =
                const { RefCell::new(None) };
        }
        let mut fresh = None;
        let build_block = |(b, block): &mut (FilterBuilder, Vec<u8>)| -> Result<c_int, Failure> {
            // A call that failed on a key left the keys before it.
            b.clear();
            b.try_reserve(n)
                .map_err(|_| Failure::out_of_memory("out of memory for the keys' hashes"))?;
            // The keys hashed in one pass of known length (no check of the vector's room a
            // key). Where no key is NULL and no length above isize::MAX, the pass checks
            // nothing; otherwise a key that `bytes` would refuse is hashed as the empty key
            // and noted, its error returned after the pass. The first is found by two passes
            // over the arrays that OR their values together, with no branch a key (the
            // compiler vectorizes them): the top bit of `address − 1` is set for NULL (and for
            // an address in the top half, which only takes the checking pass), that of a
            // length above isize::MAX is set.
            let top = keys
                .iter()
                .fold(0, |all, &k| all | k.addr().wrapping_sub(1))
                | lens.iter().fold(0, |all, &l| all | l);
            if top >> (usize::BITS - 1) == 0 {
                b.extend(keys.iter().zip(lens).map(|(&k, &l)| {
                    // SAFETY: `k` is not NULL and `l` at most isize::MAX (both found above for
                    // every key: `k − 1` and `l` below 2^63); the caller's contract: each key
                    // points at its length's bytes.
                    KeyHash::of(unsafe { std::slice::from_raw_parts(k, l) })
                }));
            } else {
                let mut refused = false;
                b.extend(keys.iter().zip(lens).map(|(&k, &l)| {
                    let readable = !k.is_null() && l <= isize::MAX as usize;
                    refused |= !readable & (l != 0);
                    let key: &[u8] = if readable {
                        // SAFETY: `k` is not NULL and `l` at most isize::MAX (checked); the
                        // caller's contract: each key points at its length's bytes.
                        unsafe { std::slice::from_raw_parts(k, l) }
                    } else {
                        &[]
                    };
                    KeyHash::of(key)
                }));
                if refused {
                    for (&k, &l) in keys.iter().zip(lens) {
                        // SAFETY: as above.
                        unsafe { bytes(k, l, "a key") }?;
                    }
                }
            }
            b.build_compact_into(block)?;
            // SAFETY: the caller's contract, as stated.
            unsafe { deliver(block, buf, capacity, len) }
        };
        let build = |pair: &mut (FilterBuilder, Vec<u8>)| -> Result<c_int, Failure> {
            let built = build_block(pair);
            // Memory kept for a thread's later blocks is bounded: after a large block the
            // thread's pair starts again small.
            if n > 1 << 16 {
                *pair = (FilterBuilder::new(Config::new(0)), Vec::new());
            }
            built
        };
        let kept = SCRATCH.try_with(|s| {
            s.try_borrow_mut().ok().map(|mut pair| {
                build(pair.get_or_insert_with(|| (FilterBuilder::new(Config::new(0)), Vec::new())))
            })
        });
        match kept {
            Ok(Some(result)) => result,
            _ => build(fresh.insert((FilterBuilder::new(Config::new(0)), Vec::new()))),
        }
    })
}

/// Finishes the filter into bytes the caller owns: a single-filter file (FORMAT.md), to store
/// as a block of the SSTable. Stores the pointer and length; release them with
/// [`cksst_bytes_free`]. After this the builder only needs freeing.
///
/// # Safety
/// `builder` is a live builder used by no other thread; `bytes` and `len` point at writable
/// values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_builder_finish(
    builder: *mut cksst_builder,
    bytes: *mut *mut u8,
    len: *mut usize,
) -> c_int {
    // SAFETY: the caller's contract, as stated.
    unsafe { finish(builder, bytes, len, false) }
}

/// Finishes the filter into the caller's buffer `buf` of `capacity` bytes (any alignment) and
/// stores its length in `*len`. If the buffer is too small, returns
/// `CKSST_ERR_BUFFER_TOO_SMALL` with the length needed in `*len` and keeps the filter: call
/// again with a larger buffer (`capacity` 0 and `buf` NULL ask for the length). After any other
/// error `*len` is 0.
///
/// # Safety
/// `builder` is a live builder used by no other thread; `buf` is NULL or points at `capacity`
/// writable bytes; `len` points at a writable `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_builder_finish_into(
    builder: *mut cksst_builder,
    buf: *mut u8,
    capacity: usize,
    len: *mut usize,
) -> c_int {
    // SAFETY: the caller's contract, as stated.
    unsafe { finish_into(builder, buf, capacity, len, false) }
}

/// Finishes the filter as a compact block (FORMAT.md §11, compact version 2: §11.5) into bytes
/// the caller owns: 2 bytes of header at the default layout (4 at others) and exactly the
/// buckets its keys need (about 9.2 bits a key at the default 1 %), with a 4-bit check over its
/// header and length but no checksum of its buckets, for a block whose integrity its container
/// checks (a LevelDB filter block, say). Query it with [`cksst_compact_contains`]. Release the
/// bytes with [`cksst_bytes_free`]. The configured seed must be the default.
///
/// # Safety
/// As [`cksst_builder_finish`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_builder_finish_compact(
    builder: *mut cksst_builder,
    bytes: *mut *mut u8,
    len: *mut usize,
) -> c_int {
    // SAFETY: the caller's contract, as stated.
    unsafe { finish(builder, bytes, len, true) }
}

/// [`cksst_builder_finish_compact`] into the caller's buffer, as [`cksst_builder_finish_into`]
/// does: `CKSST_ERR_BUFFER_TOO_SMALL` with the length needed in `*len` if it does not fit.
///
/// # Safety
/// As [`cksst_builder_finish_into`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_builder_finish_compact_into(
    builder: *mut cksst_builder,
    buf: *mut u8,
    capacity: usize,
    len: *mut usize,
) -> c_int {
    // SAFETY: the caller's contract, as stated.
    unsafe { finish_into(builder, buf, capacity, len, true) }
}

/// Releases a builder (NULL is allowed).
///
/// # Safety
/// `builder` is NULL or a live builder, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_builder_free(builder: *mut cksst_builder) {
    // SAFETY: the caller's contract, as stated.
    unsafe { free(builder) }
}

// ---------------------------------------------------------------------------------------------
// Views: bytes queried in place

/// A filter read in place from bytes the caller owns (a filter block of an SSTable, a buffer,
/// a mapping): nothing is copied, the bytes may sit at any address, and they must stay alive
/// and unchanged until the view is freed.
///
/// Thread safety: immutable; any number of threads may query one view at once.
pub struct cksst_view {
    inner: FilterRef<'static>,
}

/// # Safety
/// `bytes` points at `len` bytes that outlive the view; `out` at a writable pointer.
unsafe fn open_view(
    bytes_ptr: *const u8,
    len: usize,
    out: *mut *mut cksst_view,
    verify: bool,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract: `out` is NULL or writable.
        unsafe { clear(out, "the output pointer") }?;
        // SAFETY: the caller's contract: the bytes outlive the view (so `'static` is only as
        // long as the caller keeps them, which each opening function documents).
        let data: &'static [u8] = unsafe { bytes(bytes_ptr, len, "bytes") }?;
        let inner = if verify {
            FilterRef::from_bytes(data)?
        } else {
            FilterRef::from_bytes_assume_verified(data)?
        };
        // SAFETY: the caller's contract: `out` is NULL or writable.
        unsafe { give(cksst_view { inner }, out) }
    })
}

/// Opens a view of a single-filter file's bytes, checked completely first: header, every
/// field, every checksum (a few GB/s). Stores the view in `*view`.
///
/// # Safety
/// `bytes` points at `len` readable bytes that stay alive and unchanged until the view is
/// freed; `view` points at a writable pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_view_open(
    bytes: *const u8,
    len: usize,
    view: *mut *mut cksst_view,
) -> c_int {
    // SAFETY: the caller's contract, as stated.
    unsafe { open_view(bytes, len, view, true) }
}

/// Opens a view of bytes the caller has already verified (a block whose own checksum its
/// SSTable reader checked): only the header and level table are checked (microseconds), not
/// the checksums of the buckets. Bytes damaged since the caller checked them can give wrong
/// answers, false negatives included; memory safety does not depend on it.
///
/// # Safety
/// As [`cksst_view_open`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_view_open_trusted(
    bytes: *const u8,
    len: usize,
    view: *mut *mut cksst_view,
) -> c_int {
    // SAFETY: the caller's contract, as stated.
    unsafe { open_view(bytes, len, view, false) }
}

/// Whether the key may be in the filter: 1 ("maybe": read the table), 0 (certainly absent),
/// or a negative error code (NULL view): any result but 0 means "read the table".
///
/// # Safety
/// `view` is NULL or a live view; `key` is NULL or points at `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_view_contains(
    view: *const cksst_view,
    key: *const u8,
    len: usize,
) -> c_int {
    // SAFETY: the caller's contract, as stated.
    boundary(|| unsafe {
        answer(
            handle(view, "view")?
                .inner
                .contains(bytes(key, len, "key")?),
        )
    })
}

/// As [`cksst_view_contains`], for a key hashed once with [`cksst_hash`].
///
/// # Safety
/// `view` is NULL or a live view.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_view_contains_hash(view: *const cksst_view, hash: u64) -> c_int {
    // SAFETY: the caller's contract, as stated.
    boundary(|| unsafe {
        answer(
            handle(view, "view")?
                .inner
                .contains_hash(KeyHash::from_u64(hash)),
        )
    })
}

/// Answers `n` hashed keys at once, `out[i]` for `hashes[i]` (true: maybe present), with the
/// memory accesses of later keys overlapped: several times the rate of single lookups on a
/// large filter.
///
/// # Safety
/// `view` is a live view; `hashes` points at `n` `uint64_t`s and `out` at `n` writable bools.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_view_contains_batch(
    view: *const cksst_view,
    hashes: *const u64,
    n: usize,
    out: *mut bool,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let (out, v, hashes) = unsafe {
            (
                answers_out(out, n, "out")?,
                handle(view, "view")?,
                in_slice(hashes, n, "hashes")?,
            )
        };
        let hashes: Vec<KeyHash> = hashes.iter().map(|&h| KeyHash::from_u64(h)).collect();
        v.inner.contains_batch(&hashes, out);
        Ok(CKSST_OK)
    })
}

/// Answers `n` keys at once: `keys[i]` of `lens[i]` bytes, answered in `out[i]`.
///
/// # Safety
/// `view` is a live view; `keys` and `lens` point at `n` elements, each `keys[i]` NULL (with
/// `lens[i]` 0) or pointing at `lens[i]` bytes; `out` at `n` writable bools.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_view_contains_keys(
    view: *const cksst_view,
    keys: *const *const u8,
    lens: *const usize,
    n: usize,
    out: *mut bool,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let (out, v, hashes) = unsafe {
            (
                answers_out(out, n, "out")?,
                handle(view, "view")?,
                hash_keys(keys, lens, n)?,
            )
        };
        v.inner.contains_batch(&hashes, out);
        Ok(CKSST_OK)
    })
}

/// The hashes of `n` keys given as pointers and lengths.
///
/// # Safety
/// As [`cksst_view_contains_keys`]'s `keys`, `lens` and `n`.
unsafe fn hash_keys(
    keys: *const *const u8,
    lens: *const usize,
    n: usize,
) -> Result<Vec<KeyHash>, Failure> {
    // SAFETY: the caller's contract.
    let (keys, lens) = unsafe { (in_slice(keys, n, "keys")?, in_slice(lens, n, "lens")?) };
    keys.iter()
        .zip(lens)
        // SAFETY: the caller's contract: each key points at its length's bytes.
        .map(|(&k, &len)| Ok(KeyHash::of(unsafe { bytes(k, len, "a key") }?)))
        .collect()
}

/// The number of keys the filter holds.
///
/// # Safety
/// `view` is NULL (0) or a live view.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_view_len(view: *const cksst_view) -> usize {
    // SAFETY: the caller's contract, as stated.
    unsafe { view.as_ref() }.map_or(0, |v| v.inner.len())
}

/// The filter's false-positive bound (the rate at which absent keys answer "maybe", at most).
///
/// # Safety
/// `view` is NULL (1.0) or a live view.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_view_expected_fpr(view: *const cksst_view) -> f64 {
    // SAFETY: the caller's contract, as stated.
    unsafe { view.as_ref() }.map_or(1.0, |v| v.inner.expected_fpr())
}

/// Releases a view (NULL is allowed). A set made from it does not need it (the set keeps its
/// own copy of what it reads) but does need the bytes the view borrowed: they are the caller's
/// again once the view and every set made from it are freed.
///
/// # Safety
/// `view` is NULL or a live view, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_view_free(view: *mut cksst_view) {
    // SAFETY: the caller's contract, as stated.
    unsafe { free(view) }
}

/// Several views asked one key at a time, in order — an LSM tree's tables, newest first: one
/// key hashed once, answered from every table's filter in one call.
///
/// Thread safety: immutable; any number of threads may query one set at once.
pub struct cksst_view_set {
    filters: Vec<FilterRef<'static>>,
}

/// A set of the `n` views in `views`, in that order. The views may be freed afterwards, but the
/// bytes they borrowed must outlive the set. Stores the set in `*set`.
///
/// # Safety
/// `views` points at `n` live views; `set` at a writable pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_view_set_new(
    views: *const *const cksst_view,
    n: usize,
    set: *mut *mut cksst_view_set,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe { clear(set, "the output pointer") }?;
        // SAFETY: the caller's contract, as stated.
        let views = unsafe { in_slice(views, n, "views") }?;
        let filters = views
            .iter()
            // SAFETY: the caller's contract: each is a live view.
            .map(|&v| unsafe { handle(v, "a view") }.map(|v| v.inner))
            .collect::<Result<Vec<_>, _>>()?;
        // SAFETY: the caller's contract: `set` is NULL or writable.
        unsafe { give(cksst_view_set { filters }, set) }
    })
}

/// The first view of the set (in its order) that may contain the key hashed as `hash`: 1 and
/// its position in `*index`, or 0 if every filter says the key is absent — no table need be
/// read. A negative error code for a NULL argument.
///
/// # Safety
/// `set` is a live set; `index` points at a writable `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_view_set_first_containing(
    set: *const cksst_view_set,
    hash: u64,
    index: *mut usize,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let s = unsafe { handle(set, "set") }?;
        if index.is_null() {
            return Err(Failure::argument("index is NULL"));
        }
        match FilterRef::first_containing(&s.filters, KeyHash::from_u64(hash)) {
            Some(i) => {
                // SAFETY: the caller's contract, as stated.
                unsafe { put(index, i, "index") }?;
                Ok(1)
            }
            None => Ok(0),
        }
    })
}

/// Asks every view of the set: `out[i]` for the `i`-th (true: maybe present). `n` is the
/// length of `out`, which must be the number of views in the set.
///
/// # Safety
/// `set` is a live set; `out` points at `n` writable bools.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_view_set_contains_each(
    set: *const cksst_view_set,
    hash: u64,
    out: *mut bool,
    n: usize,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let (out, s) = unsafe { (answers_out(out, n, "out")?, handle(set, "set")?) };
        if n != s.filters.len() {
            return Err(Failure::argument(format!(
                "out has {n} entries for a set of {} views",
                s.filters.len()
            )));
        }
        FilterRef::contains_hash_each(&s.filters, KeyHash::from_u64(hash), out);
        Ok(CKSST_OK)
    })
}

/// Releases a set (NULL is allowed).
///
/// # Safety
/// `set` is NULL or a live set, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_view_set_free(set: *mut cksst_view_set) {
    // SAFETY: the caller's contract, as stated.
    unsafe { free(set) }
}

// ---------------------------------------------------------------------------------------------
// Compact blocks

/// Whether the key may be in the compact block of `len` bytes at `block` (FORMAT.md §11), from
/// its bytes alone, with nothing kept: 1 (maybe), 0 (absent) or a negative error code (a
/// header or length that is not a compact block's: any result but 0 means "read the table").
/// Version 1 and 2 blocks are read. The header, its check and the length are checked (FORMAT.md
/// §11.2 steps 1 to 6, §11.5 steps 1 to 5), the buckets are not (the container checked the
/// block; any bytes are read safely); a semi-sorted bucket whose index is past the last code
/// (3875) answers 1. It reads the key's two buckets where they lie and allocates nothing, so a
/// call costs the same on a block of any size. A version-2 block whose header or length was
/// damaged gives `CKSST_ERR_CORRUPT` unless its 4-bit check agrees by chance (1 in 16). Damage
/// that keeps to the rules — in the buckets; in version 1 a seed index changed to another below
/// 16 or a cut to another length that holds whole buckets — is read as it is and can answer 0
/// for a key that was added (see [`cksst_compact_check`]). What a LevelDB filter policy's
/// `key_may_match` does.
///
/// # Safety
/// `block` points at `len` readable bytes; `key` is NULL or points at `key_len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_compact_contains(
    block: *const u8,
    len: usize,
    key: *const u8,
    key_len: usize,
) -> c_int {
    // SAFETY: the caller's contract, as stated.
    if let Some(answer) = unsafe { compact_contains_default(block, len, key, key_len) } {
        return answer;
    }
    // SAFETY: as above.
    unsafe { compact_contains_checked(block, len, key, key_len) }
}

/// [`cksst_compact_contains`]'s common case, inlined into it: arguments that need no error and
/// a well-formed block of the default layout ([`CompactFilter::block_contains_default`]);
/// `None` for everything else (and for a panic, which the checked path then meets and
/// reports). A function of its own, so that the lookup does not pay the error path's frame.
///
/// # Safety
/// As [`cksst_compact_contains`].
#[inline(always)]
unsafe fn compact_contains_default(
    block: *const u8,
    len: usize,
    key: *const u8,
    key_len: usize,
) -> Option<c_int> {
    let limit = isize::MAX as usize;
    if block.is_null() || len > limit || (key.is_null() && key_len != 0) || key_len > limit {
        return None;
    }
    // SAFETY: `block` is not NULL and `len` at most isize::MAX; the caller guarantees `len`
    // readable bytes there, unchanged during the call (alignment 1).
    let block = unsafe { std::slice::from_raw_parts(block, len) };
    let key = if key_len == 0 {
        &[][..]
    } else {
        // SAFETY: as for `block`: `key` is not NULL here, with `key_len` readable bytes.
        unsafe { std::slice::from_raw_parts(key, key_len) }
    };
    catch_unwind(|| CompactFilter::block_contains_default(block, key))
        .ok()
        .flatten()
        .map(c_int::from)
}

/// [`cksst_compact_contains`] with every argument checked and every error named.
///
/// # Safety
/// As [`cksst_compact_contains`].
#[inline(never)]
unsafe fn compact_contains_checked(
    block: *const u8,
    len: usize,
    key: *const u8,
    key_len: usize,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let (block, key) = unsafe { (bytes(block, len, "block")?, bytes(key, key_len, "key")?) };
        answer(CompactFilter::block_contains(block, key)?)
    })
}

/// As [`cksst_compact_contains`], for a key hashed once with [`cksst_hash`].
///
/// # Safety
/// `block` points at `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_compact_contains_hash(
    block: *const u8,
    len: usize,
    hash: u64,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let block = unsafe { bytes(block, len, "block") }?;
        answer(CompactFilter::block_contains_hash(
            block,
            KeyHash::from_u64(hash),
        )?)
    })
}

/// Checks a compact block completely — its header (and in version 2 its check) against its
/// length, its buckets well formed (FORMAT.md §11.2 steps 1 to 7, §11.5 steps 1 to 6) — and
/// stores the number of keys it holds in `*keys` (NULL: not wanted). `CKSST_OK` or the error
/// that names what is wrong: `CKSST_ERR_CORRUPT` for compact version 0 (never written) or a
/// check that disagrees, `CKSST_ERR_UNSUPPORTED_VERSION` for 3 to 15 (newer).
///
/// What it cannot catch: bucket bits flipped into other well-formed buckets; in version 2,
/// header or length damage whose 4-bit check agrees by chance (1 in 16); in version 1, which
/// has no check value, a seed-index byte (byte 3) changed to another below 16 (nearly every
/// key then answers 0), a cut or appended bytes that give another whole number of buckets, a
/// layout or width byte the length also fits. Rely on the container's checksum for damage at
/// rest. It copies the block while it checks it (memory for a second copy).
///
/// # Safety
/// `block` points at `len` readable bytes; `keys` is NULL or points at a writable `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_compact_check(
    block: *const u8,
    len: usize,
    keys: *mut usize,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let block = unsafe { bytes(block, len, "block") }?;
        let f = CompactFilter::from_bytes(block)?;
        if !keys.is_null() {
            // SAFETY: the caller's contract, as stated.
            unsafe { put(keys, f.len(), "keys") }?;
        }
        Ok(CKSST_OK)
    })
}

// ---------------------------------------------------------------------------------------------
// Mapped files

/// A filter file mapped into memory and queried in place, single or growable: opened in
/// constant time; a lazily checked one verifies each chunk of its buckets the first time a
/// lookup reads it, and answers "maybe" from a damaged chunk (never a false negative).
///
/// Files must not change while mapped. The mapping shows the file's current bytes, and
/// lookups read them as they are: nothing may write into or truncate a mapped file (this
/// process through another handle, or another process) until it is freed. Bytes overwritten
/// after the checks give wrong answers, false negatives included, and a lookup past a truncated
/// end raises SIGBUS, which kills the process. Files saved with `cksst_growable_save` (or the
/// Rust crate's `save`) are replaced by a rename, never changed in place, so a mapping keeps
/// the old file's bytes. Where something else may write the files (a shared or network file
/// system, a tool that rewrites files in place), open them with [`cksst_mapped_read`], which
/// copies the file into memory and checks it: nothing done to the file afterwards reaches it.
///
/// Thread safety: any number of threads may query one mapped filter at once.
pub struct cksst_mapped {
    inner: MappedFilter,
}

/// # Safety
/// `path` is a NUL-terminated string; `out` points at a writable pointer.
unsafe fn open_mapped(
    path: *const c_char,
    out: *mut *mut cksst_mapped,
    open: fn(PathBuf) -> cuckoo_sst::Result<MappedFilter>,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract.
        unsafe { clear(out, "the output pointer") }?;
        // SAFETY: the caller's contract.
        let path = unsafe { path_of(path) }?;
        let inner = open(path)?;
        // SAFETY: the caller's contract: `out` is NULL or writable.
        unsafe { give(cksst_mapped { inner }, out) }
    })
}

/// Maps the filter file at `path` and checks it completely (header, fields, every checksum)
/// before the first lookup. Stores the handle in `*mapped`.
///
/// # Safety
/// `path` is a NUL-terminated string; `mapped` points at a writable pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_open(
    path: *const c_char,
    mapped: *mut *mut cksst_mapped,
) -> c_int {
    // SAFETY: the caller's contract, as stated.
    unsafe { open_mapped(path, mapped, MappedFilter::open) }
}

/// Reads the filter file at `path` into memory — no mapping — and checks it completely, as
/// [`cksst_mapped_open`] does; lookups then run the same code. The file's size in memory, and
/// the whole file read now; in exchange nothing that happens to the file afterwards
/// (truncation, overwriting, deletion) can reach the filter. Stores the handle in `*mapped`.
///
/// # Safety
/// As [`cksst_mapped_open`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_read(
    path: *const c_char,
    mapped: *mut *mut cksst_mapped,
) -> c_int {
    // SAFETY: the caller's contract, as stated.
    unsafe { open_mapped(path, mapped, MappedFilter::read) }
}

/// Maps the filter file at `path` in constant time: the header and level table are checked
/// now, each chunk of buckets when a lookup first reads it ([`cksst_mapped_verify`] checks
/// the rest).
///
/// # Safety
/// As [`cksst_mapped_open`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_open_lazy(
    path: *const c_char,
    mapped: *mut *mut cksst_mapped,
) -> c_int {
    // SAFETY: the caller's contract, as stated.
    unsafe { open_mapped(path, mapped, MappedFilter::open_unverified) }
}

/// Maps `len` bytes at `offset` of the open file `fd` — a filter block inside an SSTable — and
/// checks them completely (with `lazy` nonzero: the header and level table now, each chunk of
/// buckets when first read). The file descriptor stays the caller's (the mapping keeps its own
/// reference to the file). Unix only: elsewhere `CKSST_ERR_INVALID_ARGUMENT`.
///
/// # Safety
/// `fd` is an open file descriptor; `mapped` points at a writable pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_open_range(
    fd: c_int,
    offset: u64,
    len: u64,
    lazy: c_int,
    mapped: *mut *mut cksst_mapped,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe { clear(mapped, "the output pointer") }?;
        // SAFETY: the caller's contract, as stated.
        let file = unsafe { file_of(fd) }?;
        let inner = if lazy != 0 {
            MappedFilter::open_range_unverified(&file, offset, len)?
        } else {
            MappedFilter::open_range(&file, offset, len)?
        };
        // SAFETY: the caller's contract: `mapped` is NULL or writable.
        unsafe { give(cksst_mapped { inner }, mapped) }
    })
}

/// A `File` of its own for the caller's descriptor (a duplicate, so closing it leaves the
/// caller's open).
///
/// # Safety
/// `fd` is an open file descriptor for the duration of the call.
unsafe fn file_of(fd: c_int) -> Result<File, Failure> {
    #[cfg(unix)]
    {
        use std::os::fd::BorrowedFd;
        if fd < 0 {
            return Err(Failure::argument(format!(
                "fd {fd} is not a file descriptor"
            )));
        }
        // SAFETY: the caller's contract: `fd` is open for the duration of the call (which is
        // all the borrow lasts: it is duplicated at once).
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        let owned = borrowed
            .try_clone_to_owned()
            .map_err(|e| Failure::from(Error::Io(e)))?;
        Ok(File::from(owned))
    }
    #[cfg(not(unix))]
    {
        Err(Failure::argument(format!(
            "fd {fd}: file descriptors are Unix only"
        )))
    }
}

/// Checks every chunk not checked yet: `CKSST_OK` if the whole file is sound, else the error
/// of the first damage found (lookups then answer "maybe" from the damaged chunks).
///
/// # Safety
/// `mapped` is NULL or a live mapped filter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_verify(mapped: *const cksst_mapped) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe { handle(mapped, "mapped") }?.inner.verify()?;
        Ok(CKSST_OK)
    })
}

/// Whether the key may be in the file's filter: 1 (maybe), 0 (absent) or a negative error
/// code (NULL handle).
///
/// # Safety
/// `mapped` is NULL or a live mapped filter; `key` is NULL or points at `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_contains(
    mapped: *const cksst_mapped,
    key: *const u8,
    len: usize,
) -> c_int {
    // SAFETY: the caller's contract, as stated.
    boundary(|| unsafe {
        answer(
            handle(mapped, "mapped")?
                .inner
                .contains(bytes(key, len, "key")?),
        )
    })
}

/// As [`cksst_mapped_contains`], for a key hashed once with [`cksst_hash`].
///
/// # Safety
/// `mapped` is NULL or a live mapped filter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_contains_hash(
    mapped: *const cksst_mapped,
    hash: u64,
) -> c_int {
    // SAFETY: the caller's contract, as stated.
    boundary(|| unsafe {
        answer(
            handle(mapped, "mapped")?
                .inner
                .contains_hash(KeyHash::from_u64(hash)),
        )
    })
}

/// Answers `n` hashed keys at once into `out` (true: maybe present).
///
/// # Safety
/// `mapped` is a live mapped filter; `hashes` points at `n` `uint64_t`s, `out` at `n` bools.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_contains_batch(
    mapped: *const cksst_mapped,
    hashes: *const u64,
    n: usize,
    out: *mut bool,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let (out, m, hashes) = unsafe {
            (
                answers_out(out, n, "out")?,
                handle(mapped, "mapped")?,
                in_slice(hashes, n, "hashes")?,
            )
        };
        let hashes: Vec<KeyHash> = hashes.iter().map(|&h| KeyHash::from_u64(h)).collect();
        m.inner.contains_batch(&hashes, out);
        Ok(CKSST_OK)
    })
}

/// The number of keys the file's filter holds.
///
/// # Safety
/// `mapped` is NULL (0) or a live mapped filter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_len(mapped: *const cksst_mapped) -> usize {
    // SAFETY: the caller's contract, as stated.
    unsafe { mapped.as_ref() }.map_or(0, |m| m.inner.len())
}

/// The number of levels (1 for a single filter).
///
/// # Safety
/// `mapped` is NULL (0) or a live mapped filter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_levels(mapped: *const cksst_mapped) -> usize {
    // SAFETY: the caller's contract, as stated.
    unsafe { mapped.as_ref() }.map_or(0, |m| m.inner.levels())
}

/// Releases a mapped filter and unmaps its file (NULL is allowed).
///
/// # Safety
/// `mapped` is NULL or a live mapped filter, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_free(mapped: *mut cksst_mapped) {
    // SAFETY: the caller's contract, as stated.
    unsafe { free(mapped) }
}

// ---------------------------------------------------------------------------------------------
// The growable filter

/// A filter that takes inserts and removals and grows in place as keys arrive, with a total
/// false-positive rate bounded however far it grows (a memtable's filter, a set of unknown
/// size).
///
/// After an internal error (`CKSST_ERR_INTERNAL`, a bug) in the middle of a change, the filter
/// may be half changed: it is then poisoned, answers 1 ("maybe") to every lookup, and returns
/// `CKSST_ERR_INTERNAL` from every change, save and `to_bytes`. Free it and build it again.
///
/// Thread safety: any number of threads may look up at once (`_contains`, `_contains_hash`,
/// `_len`, `_levels`, `_save`, `_to_bytes`); a change (`_insert`, `_insert_unique`,
/// `_remove`) needs the filter to itself, with no other call on it meanwhile. It may move
/// between threads. Share it behind a read-write lock, or save it and map the file.
pub struct cksst_growable {
    inner: ScalableCuckooFilter,
    /// Set while a change runs: still set afterwards only if it panicked (a bug, caught at
    /// the boundary), when the filter may be half changed.
    poisoned: bool,
}

/// The error of every change, save and `to_bytes` of a poisoned growable filter.
fn poisoned() -> Failure {
    Failure::new(
        CKSST_ERR_INTERNAL,
        "the growable filter was left inconsistent by an earlier internal error (a bug): it \
         answers \"maybe\" to every lookup and takes no change; free it",
    )
}

#[cfg(test)]
thread_local! {
    /// Makes the next change of a growable filter on this thread panic inside it (tests).
    static PANIC_IN_NEXT_CHANGE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl cksst_growable {
    /// Runs `op`, a change of the filter, poisoning the filter if it panics.
    fn change<T>(
        &mut self,
        op: impl FnOnce(&mut ScalableCuckooFilter) -> cuckoo_sst::Result<T>,
    ) -> Result<T, Failure> {
        if self.poisoned {
            return Err(poisoned());
        }
        self.poisoned = true;
        #[cfg(test)]
        if PANIC_IN_NEXT_CHANGE.with(|p| p.replace(false)) {
            panic!("a panic injected by a test, inside a change");
        }
        let result = op(&mut self.inner);
        self.poisoned = false;
        Ok(result?)
    }

    /// The filter to save, unless poisoned.
    fn sound(&self) -> Result<&ScalableCuckooFilter, Failure> {
        if self.poisoned {
            return Err(poisoned());
        }
        Ok(&self.inner)
    }

    /// Whether the key of hash `h` may be in the filter: "maybe" once poisoned.
    fn may_contain(&self, h: KeyHash) -> bool {
        self.poisoned || self.inner.contains_hash(h)
    }
}

/// A new, empty growable filter following `config` (NULL: the defaults), its first level sized
/// for `config->capacity` keys. Stores it in `*filter`.
///
/// # Safety
/// `config` is NULL or points at an initialized `cksst_config`; `filter` at a writable pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_growable_new(
    config: *const cksst_config,
    filter: *mut *mut cksst_growable,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe { clear(filter, "the output pointer") }?;
        // SAFETY: the caller's contract, as stated.
        let config = unsafe { config_of(config) }?;
        let inner = ScalableCuckooFilter::new(config)?;
        // SAFETY: the caller's contract: `filter` is NULL or writable.
        unsafe {
            give(
                cksst_growable {
                    inner,
                    poisoned: false,
                },
                filter,
            )
        }
    })
}

/// Reads the growable filter saved at `path` (checked completely). Stores it in `*filter`.
///
/// # Safety
/// `path` is a NUL-terminated string; `filter` points at a writable pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_growable_open(
    path: *const c_char,
    filter: *mut *mut cksst_growable,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe { clear(filter, "the output pointer") }?;
        // SAFETY: the caller's contract, as stated.
        let path = unsafe { path_of(path) }?;
        let data = std::fs::read(&path).map_err(|e| Failure::from(Error::Io(e)))?;
        let inner = ScalableCuckooFilter::from_bytes(&data)?;
        // SAFETY: the caller's contract: `filter` is NULL or writable.
        unsafe {
            give(
                cksst_growable {
                    inner,
                    poisoned: false,
                },
                filter,
            )
        }
    })
}

/// Reads a growable filter from `len` bytes at `bytes_ptr` (copied; checked completely). Stores
/// it in `*filter`.
///
/// # Safety
/// `bytes_ptr` points at `len` readable bytes; `filter` at a writable pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_growable_from_bytes(
    bytes_ptr: *const u8,
    len: usize,
    filter: *mut *mut cksst_growable,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe { clear(filter, "the output pointer") }?;
        // SAFETY: the caller's contract, as stated.
        let data = unsafe { bytes(bytes_ptr, len, "bytes") }?;
        let inner = ScalableCuckooFilter::from_bytes(data)?;
        // SAFETY: the caller's contract: `filter` is NULL or writable.
        unsafe {
            give(
                cksst_growable {
                    inner,
                    poisoned: false,
                },
                filter,
            )
        }
    })
}

/// Inserts a key (a multiset: inserting twice stores two copies). `CKSST_OK`, or
/// `CKSST_ERR_FULL` / `CKSST_ERR_TOO_MANY_COPIES` with the filter unchanged.
///
/// # Safety
/// `filter` is a live growable filter used by no other thread; `key` is NULL or points at
/// `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_growable_insert(
    filter: *mut cksst_growable,
    key: *const u8,
    len: usize,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let (f, key) = unsafe { (handle_mut(filter, "filter")?, bytes(key, len, "key")?) };
        f.change(|g| g.insert(key))?;
        Ok(CKSST_OK)
    })
}

/// Inserts a key unless the filter may already hold it: 1 if inserted, 0 if it answered
/// "maybe present" already (a set), or a negative error code.
///
/// # Safety
/// As [`cksst_growable_insert`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_growable_insert_unique(
    filter: *mut cksst_growable,
    key: *const u8,
    len: usize,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let (f, key) = unsafe { (handle_mut(filter, "filter")?, bytes(key, len, "key")?) };
        answer(f.change(|g| g.insert_unique(key))?)
    })
}

/// Removes one copy of a key that was inserted: 1 if an entry was removed, 0 if none answered
/// for it. Remove only keys that were inserted: removing another key that collides with one
/// can make that one disappear.
///
/// # Safety
/// As [`cksst_growable_insert`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_growable_remove(
    filter: *mut cksst_growable,
    key: *const u8,
    len: usize,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let (f, key) = unsafe { (handle_mut(filter, "filter")?, bytes(key, len, "key")?) };
        answer(f.change(|g| Ok(g.remove(key)))?)
    })
}

/// Whether the key may be in the filter: 1 (maybe), 0 (absent) or a negative error code.
///
/// # Safety
/// `filter` is NULL or a live growable filter no other thread changes meanwhile; `key` is NULL
/// or points at `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_growable_contains(
    filter: *const cksst_growable,
    key: *const u8,
    len: usize,
) -> c_int {
    // SAFETY: the caller's contract, as stated.
    boundary(|| unsafe {
        answer(handle(filter, "filter")?.may_contain(KeyHash::of(bytes(key, len, "key")?)))
    })
}

/// As [`cksst_growable_contains`], for a key hashed once with [`cksst_hash`].
///
/// # Safety
/// `filter` is NULL or a live growable filter no other thread changes meanwhile.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_growable_contains_hash(
    filter: *const cksst_growable,
    hash: u64,
) -> c_int {
    // SAFETY: the caller's contract, as stated.
    boundary(|| unsafe { answer(handle(filter, "filter")?.may_contain(KeyHash::from_u64(hash))) })
}

/// The number of entries (keys inserted, copies counted, minus those removed).
///
/// # Safety
/// `filter` is NULL (0) or a live growable filter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_growable_len(filter: *const cksst_growable) -> usize {
    // SAFETY: the caller's contract, as stated.
    unsafe { filter.as_ref() }.map_or(0, |f| f.inner.len())
}

/// The number of levels the filter has grown to.
///
/// # Safety
/// `filter` is NULL (0) or a live growable filter.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_growable_levels(filter: *const cksst_growable) -> usize {
    // SAFETY: the caller's contract, as stated.
    unsafe { filter.as_ref() }.map_or(0, |f| f.inner.levels())
}

/// Saves the filter to `path` atomically (a temporary file renamed over it, synced): a reader
/// sees the old file or the new one, never a torn one. Map it with [`cksst_mapped_open`].
/// `CKSST_ERR_NOT_DURABLE` if the new file is in place but syncing it failed (save again to
/// make it durable); `CKSST_ERR_IO` if it could not be written (the old file is untouched).
///
/// # Safety
/// `filter` is a live growable filter no other thread changes meanwhile; `path` is a
/// NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_growable_save(
    filter: *const cksst_growable,
    path: *const c_char,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let (f, path) = unsafe { (handle(filter, "filter")?, path_of(path)?) };
        f.sound()?.save(path)?;
        Ok(CKSST_OK)
    })
}

/// The filter's file bytes, which the caller owns: release them with [`cksst_bytes_free`].
///
/// # Safety
/// `filter` is a live growable filter no other thread changes meanwhile; `bytes` and `len`
/// point at writable values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_growable_to_bytes(
    filter: *const cksst_growable,
    bytes: *mut *mut u8,
    len: *mut usize,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe { clear_bytes(bytes, len) }?;
        // SAFETY: the caller's contract, as stated.
        let f = unsafe { handle(filter, "filter") }?;
        // SAFETY: the caller's contract, as stated.
        unsafe { give_bytes(f.sound()?.to_bytes(), bytes, len) }?;
        Ok(CKSST_OK)
    })
}

/// Releases a growable filter (NULL is allowed).
///
/// # Safety
/// `filter` is NULL or a live growable filter, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_growable_free(filter: *mut cksst_growable) {
    // SAFETY: the caller's contract, as stated.
    unsafe { free(filter) }
}

// ---------------------------------------------------------------------------------------------
// The run index

/// The most runs a run index describes at once (`cuckoo_sst::MAX_RUNS`): an output buffer of
/// this many `uint64_t`s is never too small for `cksst_run_index_runs_for` and the other
/// functions that copy runs out.
pub const CKSST_RUN_INDEX_MAX_RUNS: usize = 64;

const _: () = assert!(CKSST_RUN_INDEX_MAX_RUNS == cuckoo_sst::MAX_RUNS);

/// One cuckoo table for every sorted run (SSTable) of an LSM-tree (FORMAT.md §12): each entry
/// is a key's fingerprint and the id of the run that holds it, so a point read asks one
/// structure, two buckets, whatever the number of runs, and gets the runs that may hold the key,
/// newest first. Built from runs as they are flushed ([`cksst_run_index_add_run`]), updated by
/// compactions ([`cksst_run_index_compact`]) and dropped runs ([`cksst_run_index_drop_run`]),
/// saved atomically ([`cksst_run_index_save`]) and mapped ([`cksst_mapped_run_index_open`]).
/// The per-run filters stay the durable truth: an engine that finds the index stale or
/// damaged reads through them.
///
/// Lookups ([`cksst_run_index_runs_for`]) return 1 with the runs that may hold the key in the
/// caller's buffer, newest first; 0 when no run holds it; a negative error code when the
/// caller must read every run (see that function for a buffer that is too small).
///
/// After an internal error (`CKSST_ERR_INTERNAL`, a bug) in the middle of a change, the index
/// may be half changed: it is then poisoned; every lookup returns `CKSST_ERR_INTERNAL` (read
/// every run), `_describes` answers 0, `_is_stale` 1, and every change, save and `_to_bytes`
/// is refused. Free it and build it again.
///
/// Thread safety: any number of threads may look up at once (`_runs_for`, `_runs_for_hash`,
/// `_runs`, `_run_count`, `_len`, `_size_in_bytes`, `_expected_fpr`, `_describes`,
/// `_is_stale`, `_runs_digest`, `_save`, `_to_bytes`); a change (`_add_run`,
/// `_add_run_hashes`, `_compact`, `_compact_hashes`, `_drop_run`) needs the index to itself,
/// with no other call on it meanwhile. It may move between threads.
pub struct cksst_run_index {
    inner: RunIndex,
    /// Set while a change runs: still set afterwards only if it panicked (a bug, caught at
    /// the boundary), when the index may be half changed.
    poisoned: bool,
}

/// The error of every lookup, change, save and `to_bytes` of a poisoned run index.
fn poisoned_index() -> Failure {
    Failure::new(
        CKSST_ERR_INTERNAL,
        "the run index was left inconsistent by an earlier internal error (a bug): read every \
         run; it takes no change; free it",
    )
}

/// The failure of a change of a run index: a refused argument (a run already described, one
/// not described, the 64 runs an index describes at most) is the caller's argument, not a
/// configuration.
fn index_failure(e: Error) -> Failure {
    match e {
        Error::InvalidConfig { .. } => Failure::argument(e.to_string()),
        other => Failure::from(other),
    }
}

impl cksst_run_index {
    fn made(inner: RunIndex) -> cksst_run_index {
        cksst_run_index {
            inner,
            poisoned: false,
        }
    }

    /// Runs `op`, a change of the index, poisoning it if it panics.
    fn change<T>(
        &mut self,
        op: impl FnOnce(&mut RunIndex) -> cuckoo_sst::Result<T>,
    ) -> Result<T, Failure> {
        if self.poisoned {
            return Err(poisoned_index());
        }
        self.poisoned = true;
        #[cfg(test)]
        if PANIC_IN_NEXT_CHANGE.with(|p| p.replace(false)) {
            panic!("a panic injected by a test, inside a change");
        }
        let result = op(&mut self.inner);
        self.poisoned = false;
        result.map_err(index_failure)
    }

    /// The index to ask or save, unless poisoned.
    fn sound(&self) -> Result<&RunIndex, Failure> {
        if self.poisoned {
            return Err(poisoned_index());
        }
        Ok(&self.inner)
    }
}

/// The hashes of `n` keys given as pointers and lengths, their memory reserved fallibly.
///
/// # Safety
/// As [`cksst_run_index_add_run`]'s `keys`, `lens` and `n`.
unsafe fn key_hashes(
    keys: *const *const u8,
    lens: *const usize,
    n: usize,
) -> Result<Vec<KeyHash>, Failure> {
    // SAFETY: the caller's contract.
    let (keys, lens) = unsafe { (in_slice(keys, n, "keys")?, in_slice(lens, n, "lens")?) };
    let mut out = Vec::new();
    out.try_reserve_exact(n)
        .map_err(|_| Failure::out_of_memory("out of memory for the keys' hashes"))?;
    for (&k, &len) in keys.iter().zip(lens) {
        // SAFETY: the caller's contract: each key points at its length's bytes.
        out.push(KeyHash::of(unsafe { bytes(k, len, "a key") }?));
    }
    Ok(out)
}

/// `n` keys given as pointers and lengths, as slices (checked), their memory reserved fallibly.
///
/// # Safety
/// As [`cksst_run_index_runs_for_keys`]'s `keys`, `lens` and `n`.
unsafe fn key_slices<'a>(
    keys: *const *const u8,
    lens: *const usize,
    n: usize,
) -> Result<Vec<&'a [u8]>, Failure> {
    // SAFETY: the caller's contract.
    let (keys, lens) = unsafe { (in_slice(keys, n, "keys")?, in_slice(lens, n, "lens")?) };
    let mut out = Vec::new();
    out.try_reserve_exact(n)
        .map_err(|_| Failure::out_of_memory("out of memory for the keys"))?;
    for (&k, &len) in keys.iter().zip(lens) {
        // SAFETY: the caller's contract: each key points at its length's bytes.
        out.push(unsafe { bytes(k, len, "a key") }?);
    }
    Ok(out)
}

/// `n` hashes ([`cksst_hash`]) as key hashes, their memory reserved fallibly.
///
/// # Safety
/// `hashes` is NULL (with `n` 0) or points at `n` `uint64_t`s.
unsafe fn hashes_of(hashes: *const u64, n: usize, what: &str) -> Result<Vec<KeyHash>, Failure> {
    // SAFETY: the caller's contract.
    let hashes = unsafe { in_slice(hashes, n, what) }?;
    let mut out = Vec::new();
    out.try_reserve_exact(n)
        .map_err(|_| Failure::out_of_memory("out of memory for the keys' hashes"))?;
    out.extend(hashes.iter().map(|&h| KeyHash::from_u64(h)));
    Ok(out)
}

/// Copies `runs` (at most [`CKSST_RUN_INDEX_MAX_RUNS`]) into the caller's `out` of `cap`
/// elements and their number into `*count`; returns that number. Where they do not fit,
/// `CKSST_ERR_BUFFER_TOO_SMALL`, with the first `cap` of them in `out` and their number in
/// `*count`. `*count` is 0 after any other error.
///
/// # Safety
/// `count` is NULL or points at a writable `size_t`; `out` is NULL or points at `cap` writable
/// `uint64_t`s.
unsafe fn deliver_runs(
    runs: impl Iterator<Item = u64>,
    out: *mut u64,
    cap: usize,
    count: *mut usize,
) -> Result<usize, Failure> {
    if cap > 0 {
        if out.is_null() {
            return Err(Failure::argument(format!("out is NULL with cap {cap}")));
        }
        if !out.is_aligned() {
            return Err(Failure::argument("out is not aligned"));
        }
    }
    let mut total = 0;
    for run in runs {
        if total < cap {
            // SAFETY: `out` is not NULL and aligned (checked, as `cap` > 0 here), and the
            // caller guarantees `cap` writable `uint64_t`s; `total < cap`. Written through
            // the raw pointer: the caller's buffer may be uninitialized.
            unsafe { out.add(total).write(run) };
        }
        total += 1;
    }
    // SAFETY: the caller's contract, as stated.
    unsafe { put(count, total, "count") }?;
    if total > cap {
        return Err(Failure::new(
            CKSST_ERR_BUFFER_TOO_SMALL,
            format!(
                "{total} runs, the buffer holds {cap} (its first {cap} are there): read every \
                 run, or ask again with room for {total} (CKSST_RUN_INDEX_MAX_RUNS always is)"
            ),
        ));
    }
    Ok(total)
}

/// Copies each key's runs of `batch` (`n` of them) into row `i` of the caller's `out` (`n`
/// rows of `cap`), their number into `counts[i]` and the result [`cksst_run_index_runs_for`]
/// gives that key into `results[i]`; returns `CKSST_OK`, or `CKSST_ERR_BUFFER_TOO_SMALL` when
/// some key's runs did not fit its row. Every argument is checked before anything is written.
///
/// # Safety
/// `out` is NULL or points at `n · cap` writable `uint64_t`s; `counts` and `results` are NULL
/// or point at `n` writable `size_t`s and `int`s.
unsafe fn deliver_batch<'a>(
    batch: impl Iterator<Item = Runs<'a>>,
    n: usize,
    out: *mut u64,
    cap: usize,
    counts: *mut usize,
    results: *mut c_int,
) -> Result<c_int, Failure> {
    let cells = n
        .checked_mul(cap)
        .filter(|&c| c <= isize::MAX as usize / size_of::<u64>())
        .ok_or_else(|| Failure::argument(format!("n {n} times cap {cap} is too large")))?;
    for (ptr, what, align) in [
        (out as usize, "out", align_of::<u64>()),
        (counts as usize, "counts", align_of::<usize>()),
        (results as usize, "results", align_of::<c_int>()),
    ] {
        let len = if what == "out" { cells } else { n };
        if len > 0 && ptr == 0 {
            return Err(Failure::argument(format!(
                "{what} is NULL with length {len}"
            )));
        }
        if ptr % align != 0 {
            return Err(Failure::argument(format!("{what} is not aligned")));
        }
    }
    let mut rc = CKSST_OK;
    for (i, runs) in batch.enumerate().take(n) {
        // SAFETY: `i < n`; `out` holds `n · cap` elements (the caller's contract; not NULL and
        // aligned when that is not 0, checked above), so row `i` is `cap` writable elements
        // and `out + i·cap` stays within it (or is `out` itself when `cap` is 0).
        let row = if cap == 0 {
            out
        } else {
            unsafe { out.add(i * cap) }
        };
        // SAFETY: `counts` and `results` hold `n` elements (checked not NULL and aligned).
        let (count, result) = unsafe { (counts.add(i), results.add(i)) };
        // SAFETY: the row and `count` as above.
        let r = match unsafe { deliver_runs(runs, row, cap, count) } {
            Ok(total) => c_int::from(total > 0),
            Err(f) if f.code == CKSST_ERR_BUFFER_TOO_SMALL => {
                rc = CKSST_ERR_BUFFER_TOO_SMALL;
                CKSST_ERR_BUFFER_TOO_SMALL
            }
            Err(f) => return Err(f),
        };
        // SAFETY: as above.
        unsafe { result.write(r) };
    }
    Ok(rc)
}

/// A new, empty run index following `config` (NULL: the defaults), sized for
/// `config->capacity` entries (a key in two runs is two) and growing in place past it; an
/// absent key gets a run at about `config->false_positive_rate`. Its layout is its own (buckets
/// of 4, semi-sorted, a 6-bit run id in each slot): `bucket_size`, `fingerprint_bits` and
/// `encoding` are checked as for a filter but not used, nor are the growable filter's settings.
/// `CKSST_ERR_INVALID_CONFIG` for a rate whose slots would need more than 32 bits with the run
/// ids. Stores it in `*index`.
///
/// # Safety
/// `config` is NULL or points at an initialized `cksst_config`; `index` at a writable pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_new(
    config: *const cksst_config,
    index: *mut *mut cksst_run_index,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe { clear(index, "the output pointer") }?;
        // SAFETY: the caller's contract, as stated.
        let config = unsafe { config_of(config) }?;
        let inner = RunIndex::new(config)?;
        // SAFETY: the caller's contract: `index` is NULL or writable.
        unsafe { give(cksst_run_index::made(inner), index) }
    })
}

/// Reads the run index saved at `path` (FORMAT.md §12), checked completely: header, run table,
/// every checksum and the buckets' contents. It answers, grows and is updated as the index that
/// was saved. Stores it in `*index`. (To ask a file in place, map it with
/// [`cksst_mapped_run_index_open`].)
///
/// # Safety
/// `path` is a NUL-terminated string; `index` points at a writable pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_open(
    path: *const c_char,
    index: *mut *mut cksst_run_index,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe { clear(index, "the output pointer") }?;
        // SAFETY: the caller's contract, as stated.
        let path = unsafe { path_of(path) }?;
        let data = std::fs::read(&path).map_err(|e| Failure::from(Error::Io(e)))?;
        let inner = RunIndex::from_bytes(&data)?;
        // SAFETY: the caller's contract: `index` is NULL or writable.
        unsafe { give(cksst_run_index::made(inner), index) }
    })
}

/// Reads a run index from `len` bytes at `bytes_ptr` (copied; checked completely, as
/// [`cksst_run_index_open`] checks a file). Stores it in `*index`.
///
/// # Safety
/// `bytes_ptr` points at `len` readable bytes; `index` at a writable pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_from_bytes(
    bytes_ptr: *const u8,
    len: usize,
    index: *mut *mut cksst_run_index,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe { clear(index, "the output pointer") }?;
        // SAFETY: the caller's contract, as stated.
        let data = unsafe { bytes(bytes_ptr, len, "bytes") }?;
        let inner = RunIndex::from_bytes(data)?;
        // SAFETY: the caller's contract: `index` is NULL or writable.
        unsafe { give(cksst_run_index::made(inner), index) }
    })
}

/// Adds a flushed run, newer than every run the index describes, with its `n` keys: `keys[i]`
/// of `lens[i]` bytes, as [`cksst_compact_build_into`] takes them. `run` is the engine's id of
/// the run (any value). `CKSST_ERR_INVALID_ARGUMENT` if `run` is already described or the index
/// describes [`CKSST_RUN_INDEX_MAX_RUNS`] runs (compact or drop first); `CKSST_ERR_FULL` or
/// `CKSST_ERR_OUT_OF_MEMORY` if the index cannot grow for them. A key may be in every run (its
/// runs past two go to its stash record), and a key listed several times is taken once. After
/// any error no key of the run is in the index and it is not described
/// (so [`cksst_run_index_describes`] no longer matches the engine's runs, which then reads
/// through its per-run filters): every run added before answers as before.
///
/// # Safety
/// `index` is a live run index no other call uses meanwhile; `keys` and `lens` point at `n`
/// elements (NULL when `n` is 0), each `keys[i]` NULL (with `lens[i]` 0) or pointing at
/// `lens[i]` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_add_run(
    index: *mut cksst_run_index,
    run: u64,
    keys: *const *const u8,
    lens: *const usize,
    n: usize,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let (x, hashes) = unsafe { (handle_mut(index, "index")?, key_hashes(keys, lens, n)?) };
        x.change(|i| i.add_run(run, &hashes))?;
        Ok(CKSST_OK)
    })
}

/// [`cksst_run_index_add_run`] with the run's keys hashed once by [`cksst_hash`] (what its
/// filter's builder was given with `cksst_builder_add_hash`): `n` hashes at `hashes`.
///
/// # Safety
/// `index` is a live run index no other call uses meanwhile; `hashes` points at `n`
/// `uint64_t`s (NULL when `n` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_add_run_hashes(
    index: *mut cksst_run_index,
    run: u64,
    hashes: *const u64,
    n: usize,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let (x, hashes) = unsafe { (handle_mut(index, "index")?, hashes_of(hashes, n, "hashes")?) };
        x.change(|i| i.add_run(run, &hashes))?;
        Ok(CKSST_OK)
    })
}

/// A compaction: the `n_merged` runs at `merged` (each described by the index) are replaced by
/// the run `into`, which holds the `n` keys `keys[i]` of `lens[i]` bytes (each from one of the
/// merged runs; the keys the compaction dropped are left out). Each kept key's entry is given
/// `into` in place; what is left of the merged runs is swept out. `into` takes the place of the
/// newest merged run in the order.
///
/// `CKSST_ERR_INVALID_ARGUMENT` (nothing changed) if a merged run is not described, `into` is,
/// or `n_merged` is 0. `CKSST_ERR_FULL` or `CKSST_ERR_OUT_OF_MEMORY` if the index could not grow
/// for a kept key it had no entry for: the index is then **stale** — every lookup answers every
/// run it describes ([`cksst_run_index_is_stale`] says 1, and so does the file it saves) — so
/// no key is lost; rebuild it.
///
/// # Safety
/// `index` is a live run index no other call uses meanwhile; `merged` points at `n_merged`
/// `uint64_t`s; `keys` and `lens` as for [`cksst_run_index_add_run`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_compact(
    index: *mut cksst_run_index,
    merged: *const u64,
    n_merged: usize,
    into: u64,
    keys: *const *const u8,
    lens: *const usize,
    n: usize,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let (x, merged, kept) = unsafe {
            (
                handle_mut(index, "index")?,
                in_slice(merged, n_merged, "merged")?,
                key_hashes(keys, lens, n)?,
            )
        };
        x.change(|i| i.compact(merged, into, &kept))?;
        Ok(CKSST_OK)
    })
}

/// [`cksst_run_index_compact`] with the kept keys hashed once by [`cksst_hash`]: `n` hashes at
/// `kept`.
///
/// # Safety
/// `index` is a live run index no other call uses meanwhile; `merged` points at `n_merged`
/// `uint64_t`s and `kept` at `n` (each NULL when its count is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_compact_hashes(
    index: *mut cksst_run_index,
    merged: *const u64,
    n_merged: usize,
    into: u64,
    kept: *const u64,
    n: usize,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let (x, merged, kept) = unsafe {
            (
                handle_mut(index, "index")?,
                in_slice(merged, n_merged, "merged")?,
                hashes_of(kept, n, "kept")?,
            )
        };
        x.change(|i| i.compact(merged, into, &kept))?;
        Ok(CKSST_OK)
    })
}

/// Drops a run (deleted without a compaction): its entries are swept out. 1 if it was
/// described, 0 if not (nothing changed), or a negative error code.
///
/// # Safety
/// `index` is a live run index no other call uses meanwhile.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_drop_run(index: *mut cksst_run_index, run: u64) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let x = unsafe { handle_mut(index, "index") }?;
        answer(x.change(|i| Ok(i.drop_run(run)))?)
    })
}

/// The runs that may hold the key of `len` bytes at `key`, newest first, copied into `out`
/// (room for `cap` run ids), their number in `*count`. Returns:
///
/// * 1: the key may be in the `*count` runs `out[0 .. *count]` (read them newest first, and
///   no other run);
/// * 0: no run holds the key (`*count` is 0);
/// * `CKSST_ERR_BUFFER_TOO_SMALL`: the key may be in `*count` runs, more than `cap`; `out`
///   holds the newest `cap` of them. **Read every run**, or ask again with `cap ≥ *count`. A
///   buffer of [`CKSST_RUN_INDEX_MAX_RUNS`] (or of the index's [`cksst_run_index_run_count`])
///   is never too small;
/// * another negative code (a NULL argument, a poisoned index): **read every run** (`*count`
///   is 0 where `count` could be written).
///
/// So code that reads every run whenever the result is negative never loses a key. A stale
/// index (a failed compaction) answers every run it describes.
///
/// # Safety
/// `index` is NULL or a live run index no other thread changes meanwhile; `key` is NULL or
/// points at `len` bytes; `out` is NULL or points at `cap` writable `uint64_t`s; `count` points
/// at a writable `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_runs_for(
    index: *const cksst_run_index,
    key: *const u8,
    len: usize,
    out: *mut u64,
    cap: usize,
    count: *mut usize,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe {
            put(count, 0, "count")?;
            let x = handle(index, "index")?.sound()?;
            let runs = x.runs_for(bytes(key, len, "key")?);
            answer(deliver_runs(runs, out, cap, count)? > 0)
        }
    })
}

/// [`cksst_run_index_runs_for`] for a key hashed once with [`cksst_hash`].
///
/// # Safety
/// As [`cksst_run_index_runs_for`], without the key.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_runs_for_hash(
    index: *const cksst_run_index,
    hash: u64,
    out: *mut u64,
    cap: usize,
    count: *mut usize,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe {
            put(count, 0, "count")?;
            let x = handle(index, "index")?.sound()?;
            let runs = x.runs_for_hash(KeyHash::from_u64(hash));
            answer(deliver_runs(runs, out, cap, count)? > 0)
        }
    })
}

/// [`cksst_run_index_runs_for`] for `n` keys at once (a multi-get, or one point read's keys):
/// while it answers one key it asks the CPU for the buckets of the key 16 places on, so that
/// the keys' cache misses overlap instead of adding up. Key `i`'s runs go to row `i` of `out`
/// (`n` rows of `cap` run ids, newest first), their number to `counts[i]`, and what
/// [`cksst_run_index_runs_for`] would return for it to `results[i]`: 1 (read those runs), 0
/// (no run holds it) or `CKSST_ERR_BUFFER_TOO_SMALL` (more runs than `cap`: the newest `cap`
/// are in the row; **read every run** for that key). Returns `CKSST_OK` when every key's runs
/// fit, `CKSST_ERR_BUFFER_TOO_SMALL` when some did not (see `results`), or another negative
/// code (a NULL argument, a poisoned index, `n · cap` too large), after which **read every run
/// for every key**: the arrays are then not filled. Checks every argument before it writes.
///
/// # Safety
/// `index` is NULL or a live run index no other thread changes meanwhile; `keys` and `lens`
/// are NULL (with `n` 0) or point at `n` key pointers and lengths, each key at its length's
/// bytes; `out` is NULL or points at `n · cap` writable `uint64_t`s; `counts` and `results` at
/// `n` writable `size_t`s and `int`s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_runs_for_keys(
    index: *const cksst_run_index,
    keys: *const *const u8,
    lens: *const usize,
    n: usize,
    out: *mut u64,
    cap: usize,
    counts: *mut usize,
    results: *mut c_int,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe {
            let x = handle(index, "index")?.sound()?;
            let keys = key_slices(keys, lens, n)?;
            deliver_batch(x.runs_for_batch_keys(&keys), n, out, cap, counts, results)
        }
    })
}

/// [`cksst_run_index_runs_for_keys`] for keys hashed once with [`cksst_hash`].
///
/// # Safety
/// As [`cksst_run_index_runs_for_keys`], with `hashes` NULL (with `n` 0) or pointing at `n`
/// `uint64_t`s instead of the keys.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_runs_for_hashes(
    index: *const cksst_run_index,
    hashes: *const u64,
    n: usize,
    out: *mut u64,
    cap: usize,
    counts: *mut usize,
    results: *mut c_int,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe {
            let x = handle(index, "index")?.sound()?;
            let hashes = hashes_of(hashes, n, "hashes")?;
            deliver_batch(x.runs_for_batch(&hashes), n, out, cap, counts, results)
        }
    })
}

/// The runs the index describes, newest first, copied into `out` (room for `cap`), their number
/// in `*count`: `CKSST_OK`, or `CKSST_ERR_BUFFER_TOO_SMALL` with the number in `*count` and the
/// newest `cap` in `out` (a buffer of [`CKSST_RUN_INDEX_MAX_RUNS`] is never too small).
///
/// # Safety
/// `index` is NULL or a live run index no other thread changes meanwhile; `out` is NULL or
/// points at `cap` writable `uint64_t`s; `count` points at a writable `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_runs(
    index: *const cksst_run_index,
    out: *mut u64,
    cap: usize,
    count: *mut usize,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe {
            put(count, 0, "count")?;
            let x = handle(index, "index")?.sound()?;
            deliver_runs(x.runs().iter().copied(), out, cap, count)?;
        }
        Ok(CKSST_OK)
    })
}

/// The number of runs the index describes (0 for NULL).
///
/// # Safety
/// `index` is NULL or a live run index no other thread changes meanwhile.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_run_count(index: *const cksst_run_index) -> usize {
    // SAFETY: the caller's contract, as stated.
    unsafe { index.as_ref() }.map_or(0, |x| x.inner.runs().len())
}

/// Entries in the index: a key in two runs counts twice (0 for NULL).
///
/// # Safety
/// `index` is NULL or a live run index no other thread changes meanwhile.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_len(index: *const cksst_run_index) -> usize {
    // SAFETY: the caller's contract, as stated.
    unsafe { index.as_ref() }.map_or(0, |x| x.inner.len())
}

/// Bytes of the index's bucket table and stash records (0 for NULL); its file takes a few
/// hundred more.
///
/// # Safety
/// `index` is NULL or a live run index no other thread changes meanwhile.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_size_in_bytes(index: *const cksst_run_index) -> usize {
    // SAFETY: the caller's contract, as stated.
    unsafe { index.as_ref() }.map_or(0, |x| x.inner.size_in_bytes())
}

/// The bound on the rate at which an absent key gets a run (1.0 for NULL).
///
/// # Safety
/// `index` is NULL or a live run index no other thread changes meanwhile.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_expected_fpr(index: *const cksst_run_index) -> f64 {
    // SAFETY: the caller's contract, as stated.
    unsafe { index.as_ref() }.map_or(1.0, |x| x.inner.expected_fpr())
}

/// Whether the index describes exactly the `n` runs at `runs`, newest first — an engine's live
/// runs from its manifest: 1 if so, 0 if not (a flush, compaction or drop did not reach the
/// index, or it is poisoned), or a negative error code. **Trust the index only when this
/// returns 1**; otherwise read through the per-run filters.
///
/// # Safety
/// `index` is NULL or a live run index no other thread changes meanwhile; `runs` points at `n`
/// `uint64_t`s (NULL when `n` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_describes(
    index: *const cksst_run_index,
    runs: *const u64,
    n: usize,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let (x, runs) = unsafe { (handle(index, "index")?, in_slice(runs, n, "runs")?) };
        answer(!x.poisoned && x.inner.describes(runs))
    })
}

/// Whether a compaction failed part-way (or the index is poisoned): 1 if so — every lookup
/// then answers every run; rebuild the index — 0 if not, or a negative error code.
///
/// # Safety
/// `index` is NULL or a live run index no other thread changes meanwhile.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_is_stale(index: *const cksst_run_index) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let x = unsafe { handle(index, "index") }?;
        answer(x.poisoned || x.inner.is_stale())
    })
}

/// Stores in `*digest` the digest of the runs the index describes, newest first (FORMAT.md
/// §12.1 `runs_digest`: XXH3-64 of their little-endian bytes), which an engine may keep in its
/// manifest beside the index file's name; [`cksst_runs_digest_of`] computes it for a list.
///
/// # Safety
/// `index` is NULL or a live run index no other thread changes meanwhile; `digest` points at a
/// writable `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_runs_digest(
    index: *const cksst_run_index,
    digest: *mut u64,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe {
            let x = handle(index, "index")?.sound()?;
            put(digest, x.runs_digest(), "digest")?;
        }
        Ok(CKSST_OK)
    })
}

/// Stores in `*digest` the digest of the `n` runs at `runs`, given newest first (FORMAT.md
/// §12.1 `runs_digest`), as [`cksst_run_index_runs_digest`] and
/// [`cksst_mapped_run_index_runs_digest`] report it for the runs an index describes.
///
/// # Safety
/// `runs` points at `n` `uint64_t`s (NULL when `n` is 0); `digest` at a writable `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_runs_digest_of(
    runs: *const u64,
    n: usize,
    digest: *mut u64,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe {
            let runs = in_slice(runs, n, "runs")?;
            put(digest, RunIndex::runs_digest_of(runs), "digest")?;
        }
        Ok(CKSST_OK)
    })
}

/// Saves the index to `path` atomically and durably (a temporary file in the same directory,
/// synced, renamed over `path`, the directory synced): a reader sees the old file or the new
/// one, never a torn one. Map it with [`cksst_mapped_run_index_open`]. `CKSST_ERR_NOT_DURABLE`
/// if the new file is in place but syncing failed (save again); `CKSST_ERR_IO` if it could not
/// be written (the old file is untouched).
///
/// # Safety
/// `index` is a live run index no other thread changes meanwhile; `path` is a NUL-terminated
/// string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_save(
    index: *const cksst_run_index,
    path: *const c_char,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let (x, path) = unsafe { (handle(index, "index")?, path_of(path)?) };
        x.sound()?.save(path)?;
        Ok(CKSST_OK)
    })
}

/// The index's file bytes (FORMAT.md §12), which the caller owns: release them with
/// [`cksst_bytes_free`]. Given the same operations, the same bytes.
///
/// # Safety
/// `index` is a live run index no other thread changes meanwhile; `bytes` and `len` point at
/// writable values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_to_bytes(
    index: *const cksst_run_index,
    bytes: *mut *mut u8,
    len: *mut usize,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe { clear_bytes(bytes, len) }?;
        // SAFETY: the caller's contract, as stated.
        let x = unsafe { handle(index, "index") }?.sound()?;
        // SAFETY: the caller's contract, as stated.
        unsafe { give_bytes(x.to_bytes(), bytes, len) }?;
        Ok(CKSST_OK)
    })
}

/// Releases a run index (NULL is allowed).
///
/// # Safety
/// `index` is NULL or a live run index, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_run_index_free(index: *mut cksst_run_index) {
    // SAFETY: the caller's contract, as stated.
    unsafe { free(index) }
}

/// A run-index file (FORMAT.md §12) mapped into memory and asked in place, read-only: opening
/// checks the header, the run table and the checksum table (microseconds, whatever the file's
/// size) and copies nothing; each chunk of the buckets is checked the first time a lookup reads
/// it. A lookup whose buckets lie in a damaged chunk answers every run the index describes,
/// never fewer than hold the key; [`cksst_mapped_run_index_verify`] checks every byte and names
/// the damage. A file damaged in its header, run table or checksum table is refused at open:
/// read through the per-run filters then.
///
/// As for [`cksst_mapped`], the file must not change while it is mapped: nothing may write into
/// or truncate it until the handle is freed (overwritten bytes give wrong answers, false
/// negatives included; a lookup past a truncated end raises SIGBUS). Files written by
/// [`cksst_run_index_save`] are replaced by a rename, never changed in place.
///
/// Thread safety: immutable; any number of threads may query one mapped run index at once.
pub struct cksst_mapped_run_index {
    inner: MappedRunIndex,
}

/// Maps the run-index file at `path` and checks its header, run table and checksum table
/// (FORMAT.md §12.4 steps 1–6); its buckets are checked as lookups read them
/// ([`cksst_mapped_run_index_verify`] checks the rest). An error for a file that is not a run
/// index or whose checked parts are damaged. Stores the handle in `*mapped`.
///
/// # Safety
/// `path` is a NUL-terminated string; `mapped` points at a writable pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_run_index_open(
    path: *const c_char,
    mapped: *mut *mut cksst_mapped_run_index,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe { clear(mapped, "the output pointer") }?;
        // SAFETY: the caller's contract, as stated.
        let path = unsafe { path_of(path) }?;
        let inner = MappedRunIndex::open(path)?;
        // SAFETY: the caller's contract: `mapped` is NULL or writable.
        unsafe { give(cksst_mapped_run_index { inner }, mapped) }
    })
}

/// Checks every bucket chunk not checked yet, then the buckets' contents (FORMAT.md §12.4 step
/// 7): `CKSST_OK` if the whole file is sound, else the error of the first damage found
/// (lookups then answer every run). Lookups may run meanwhile.
///
/// # Safety
/// `mapped` is NULL or a live mapped run index.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_run_index_verify(
    mapped: *const cksst_mapped_run_index,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe { handle(mapped, "mapped") }?.inner.verify()?;
        Ok(CKSST_OK)
    })
}

/// The runs that may hold the key, newest first, as [`cksst_run_index_runs_for`] answers them
/// (the same results and the same rules: read every run after a negative result); every run
/// the file describes when it is stale or the chunk a lookup reads is damaged.
///
/// # Safety
/// `mapped` is NULL or a live mapped run index; `key` is NULL or points at `len` bytes; `out`
/// is NULL or points at `cap` writable `uint64_t`s; `count` points at a writable `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_run_index_runs_for(
    mapped: *const cksst_mapped_run_index,
    key: *const u8,
    len: usize,
    out: *mut u64,
    cap: usize,
    count: *mut usize,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe {
            put(count, 0, "count")?;
            let m = handle(mapped, "mapped")?;
            let runs = m.inner.runs_for(bytes(key, len, "key")?);
            answer(deliver_runs(runs, out, cap, count)? > 0)
        }
    })
}

/// [`cksst_mapped_run_index_runs_for`] for a key hashed once with [`cksst_hash`].
///
/// # Safety
/// As [`cksst_mapped_run_index_runs_for`], without the key.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_run_index_runs_for_hash(
    mapped: *const cksst_mapped_run_index,
    hash: u64,
    out: *mut u64,
    cap: usize,
    count: *mut usize,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe {
            put(count, 0, "count")?;
            let m = handle(mapped, "mapped")?;
            let runs = m.inner.runs_for_hash(KeyHash::from_u64(hash));
            answer(deliver_runs(runs, out, cap, count)? > 0)
        }
    })
}

/// [`cksst_run_index_runs_for_keys`] of a mapped run index: the same arrays and results; a
/// stale file, or a chunk a key's lookup reads that fails its check, answers every run the
/// file describes for that key.
///
/// # Safety
/// `mapped` is NULL or a live mapped run index; the rest as [`cksst_run_index_runs_for_keys`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_run_index_runs_for_keys(
    mapped: *const cksst_mapped_run_index,
    keys: *const *const u8,
    lens: *const usize,
    n: usize,
    out: *mut u64,
    cap: usize,
    counts: *mut usize,
    results: *mut c_int,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe {
            let m = handle(mapped, "mapped")?;
            let keys = key_slices(keys, lens, n)?;
            deliver_batch(
                m.inner.runs_for_batch_keys(&keys),
                n,
                out,
                cap,
                counts,
                results,
            )
        }
    })
}

/// [`cksst_mapped_run_index_runs_for_keys`] for keys hashed once with [`cksst_hash`].
///
/// # Safety
/// As [`cksst_run_index_runs_for_hashes`], with `mapped` NULL or a live mapped run index.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_run_index_runs_for_hashes(
    mapped: *const cksst_mapped_run_index,
    hashes: *const u64,
    n: usize,
    out: *mut u64,
    cap: usize,
    counts: *mut usize,
    results: *mut c_int,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe {
            let m = handle(mapped, "mapped")?;
            let hashes = hashes_of(hashes, n, "hashes")?;
            deliver_batch(
                m.inner.runs_for_batch(&hashes),
                n,
                out,
                cap,
                counts,
                results,
            )
        }
    })
}

/// The runs the file describes, newest first, as [`cksst_run_index_runs`] copies them.
///
/// # Safety
/// `mapped` is NULL or a live mapped run index; `out` is NULL or points at `cap` writable
/// `uint64_t`s; `count` points at a writable `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_run_index_runs(
    mapped: *const cksst_mapped_run_index,
    out: *mut u64,
    cap: usize,
    count: *mut usize,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe {
            put(count, 0, "count")?;
            let m = handle(mapped, "mapped")?;
            deliver_runs(m.inner.runs().iter().copied(), out, cap, count)?;
        }
        Ok(CKSST_OK)
    })
}

/// The number of runs the file describes (0 for NULL).
///
/// # Safety
/// `mapped` is NULL or a live mapped run index.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_run_index_run_count(
    mapped: *const cksst_mapped_run_index,
) -> usize {
    // SAFETY: the caller's contract, as stated.
    unsafe { mapped.as_ref() }.map_or(0, |m| m.inner.runs().len())
}

/// Entries in the index, from the file's header and stash table (0 for NULL), as
/// [`cksst_run_index_len`] counts them.
///
/// # Safety
/// `mapped` is NULL or a live mapped run index.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_run_index_len(
    mapped: *const cksst_mapped_run_index,
) -> usize {
    // SAFETY: the caller's contract, as stated.
    unsafe { mapped.as_ref() }.map_or(0, |m| m.inner.len())
}

/// The bound on the rate at which an absent key gets a run (1.0 for NULL).
///
/// # Safety
/// `mapped` is NULL or a live mapped run index.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_run_index_expected_fpr(
    mapped: *const cksst_mapped_run_index,
) -> f64 {
    // SAFETY: the caller's contract, as stated.
    unsafe { mapped.as_ref() }.map_or(1.0, |m| m.inner.expected_fpr())
}

/// Whether the file describes exactly the `n` runs at `runs`, newest first: 1, 0, or a negative
/// error code, as [`cksst_run_index_describes`]. **Trust the index only when this returns 1.**
///
/// # Safety
/// `mapped` is NULL or a live mapped run index; `runs` points at `n` `uint64_t`s (NULL when `n`
/// is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_run_index_describes(
    mapped: *const cksst_mapped_run_index,
    runs: *const u64,
    n: usize,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        let (m, runs) = unsafe { (handle(mapped, "mapped")?, in_slice(runs, n, "runs")?) };
        answer(m.inner.describes(runs))
    })
}

/// Whether the file says the index is stale (a compaction failed part-way before it was
/// saved; every lookup answers every run): 1, 0, or a negative error code.
///
/// # Safety
/// `mapped` is NULL or a live mapped run index.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_run_index_is_stale(
    mapped: *const cksst_mapped_run_index,
) -> c_int {
    // SAFETY: the caller's contract, as stated.
    boundary(|| answer(unsafe { handle(mapped, "mapped") }?.inner.is_stale()))
}

/// Stores in `*digest` the digest of the runs the file describes (FORMAT.md §12.1
/// `runs_digest`, checked against its run table at open).
///
/// # Safety
/// `mapped` is NULL or a live mapped run index; `digest` points at a writable `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_run_index_runs_digest(
    mapped: *const cksst_mapped_run_index,
    digest: *mut u64,
) -> c_int {
    boundary(|| {
        // SAFETY: the caller's contract, as stated.
        unsafe {
            let m = handle(mapped, "mapped")?;
            put(digest, m.inner.runs_digest(), "digest")?;
        }
        Ok(CKSST_OK)
    })
}

/// Releases a mapped run index and unmaps its file (NULL is allowed).
///
/// # Safety
/// `mapped` is NULL or a live mapped run index, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cksst_mapped_run_index_free(mapped: *mut cksst_mapped_run_index) {
    // SAFETY: the caller's contract, as stated.
    unsafe { free(mapped) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Finding 10 of issue 40: a save whose data is written but not synced (`NotDurable`) has
    /// a code of its own, so that a caller can tell it from a failed write and retry the sync.
    #[test]
    fn not_durable_is_told_apart_from_an_io_error() {
        let io = Failure::from(Error::Io(std::io::Error::other("disk gone")));
        let not_durable = Failure::from(Error::NotDurable(std::io::Error::other("fsync")));
        assert_eq!(io.code, CKSST_ERR_IO);
        assert_ne!(not_durable.code, CKSST_ERR_IO);
        // SAFETY: a static string.
        let name = unsafe { CStr::from_ptr(cksst_status_name(not_durable.code)) };
        assert_eq!(name.to_str().unwrap(), "CKSST_ERR_NOT_DURABLE");
    }

    /// Finding 8 of issue 40: a panic caught at the boundary in the middle of a change (a bug)
    /// may leave a growable filter half changed. From then on it answers "maybe" to every
    /// lookup and refuses every change and every save: it cannot lose a key or be persisted.
    #[test]
    fn a_panic_inside_a_change_poisons_the_growable_filter() {
        // SAFETY: a filter made here and freed once; keys are live slices.
        unsafe {
            let mut g = ptr::null_mut();
            assert_eq!(cksst_growable_new(ptr::null(), &mut g), CKSST_OK);
            assert_eq!(cksst_growable_insert(g, b"a".as_ptr(), 1), CKSST_OK);
            let absent = (0..100u32)
                .map(|i| format!("absent {i}"))
                .find(|k| cksst_growable_contains(g, k.as_ptr(), k.len()) == 0)
                .unwrap();
            PANIC_IN_NEXT_CHANGE.with(|p| p.set(true));
            assert_eq!(
                cksst_growable_insert(g, b"b".as_ptr(), 1),
                CKSST_ERR_INTERNAL
            );
            assert_eq!(cksst_growable_contains(g, absent.as_ptr(), absent.len()), 1);
            let h = cksst_hash_of(absent.as_bytes());
            assert_eq!(cksst_growable_contains_hash(g, h), 1);
            assert_eq!(
                cksst_growable_insert(g, b"c".as_ptr(), 1),
                CKSST_ERR_INTERNAL
            );
            assert_eq!(
                cksst_growable_insert_unique(g, b"d".as_ptr(), 1),
                CKSST_ERR_INTERNAL
            );
            assert_eq!(
                cksst_growable_remove(g, b"a".as_ptr(), 1),
                CKSST_ERR_INTERNAL
            );
            let (mut bytes, mut len) = (ptr::null_mut(), 0);
            assert_eq!(
                cksst_growable_to_bytes(g, &mut bytes, &mut len),
                CKSST_ERR_INTERNAL
            );
            assert!(bytes.is_null());
            let dir = std::env::temp_dir().join(format!("cksst-poison-{}", std::process::id()));
            let path = CString::new(dir.to_str().unwrap()).unwrap();
            assert_eq!(cksst_growable_save(g, path.as_ptr()), CKSST_ERR_INTERNAL);
            assert!(!dir.exists());
            cksst_growable_free(g);
        }
    }

    /// A panic caught at the boundary in the middle of a run index's change (a bug) may leave
    /// it half changed: from then on every lookup returns `CKSST_ERR_INTERNAL` (read every
    /// run), it describes no run list, says it is stale, and refuses every change and save.
    #[test]
    fn a_panic_inside_a_change_poisons_the_run_index() {
        // SAFETY: an index made here and freed once; every buffer is live for its call.
        unsafe {
            let mut x = ptr::null_mut();
            assert_eq!(cksst_run_index_new(ptr::null(), &mut x), CKSST_OK);
            let h = cksst_hash_of(b"a");
            assert_eq!(cksst_run_index_add_run_hashes(x, 1, &h, 1), CKSST_OK);
            assert_eq!(cksst_run_index_describes(x, &1, 1), 1);
            PANIC_IN_NEXT_CHANGE.with(|p| p.set(true));
            assert_eq!(
                cksst_run_index_add_run_hashes(x, 2, &h, 1),
                CKSST_ERR_INTERNAL
            );
            let mut runs = [0u64; CKSST_RUN_INDEX_MAX_RUNS];
            let mut count = 9;
            assert_eq!(
                cksst_run_index_runs_for_hash(x, h, runs.as_mut_ptr(), runs.len(), &mut count),
                CKSST_ERR_INTERNAL
            );
            assert_eq!(count, 0);
            assert_eq!(
                cksst_run_index_runs_for(x, b"a".as_ptr(), 1, runs.as_mut_ptr(), 64, &mut count),
                CKSST_ERR_INTERNAL
            );
            assert_eq!(
                cksst_run_index_runs(x, runs.as_mut_ptr(), runs.len(), &mut count),
                CKSST_ERR_INTERNAL
            );
            assert_eq!(cksst_run_index_describes(x, &1, 1), 0);
            assert_eq!(cksst_run_index_is_stale(x), 1);
            let mut d = 0;
            assert_eq!(cksst_run_index_runs_digest(x, &mut d), CKSST_ERR_INTERNAL);
            assert_eq!(
                cksst_run_index_add_run_hashes(x, 3, &h, 1),
                CKSST_ERR_INTERNAL
            );
            assert_eq!(
                cksst_run_index_compact_hashes(x, &1, 1, 4, &h, 1),
                CKSST_ERR_INTERNAL
            );
            assert_eq!(cksst_run_index_drop_run(x, 1), CKSST_ERR_INTERNAL);
            let (mut bytes, mut len) = (ptr::null_mut(), 0);
            assert_eq!(
                cksst_run_index_to_bytes(x, &mut bytes, &mut len),
                CKSST_ERR_INTERNAL
            );
            assert!(bytes.is_null());
            let dir = std::env::temp_dir().join(format!("cksst-poison-ri-{}", std::process::id()));
            let path = CString::new(dir.to_str().unwrap()).unwrap();
            assert_eq!(cksst_run_index_save(x, path.as_ptr()), CKSST_ERR_INTERNAL);
            assert!(!dir.exists());
            cksst_run_index_free(x);
        }
    }

    fn cksst_hash_of(key: &[u8]) -> u64 {
        KeyHash::of(key).to_u64()
    }

    /// `cksst_compact_build_into` of `keys`, as bytes (a buffer of the documented bound).
    fn build_into(keys: &[&[u8]]) -> (c_int, Vec<u8>) {
        let ptrs: Vec<*const u8> = keys.iter().map(|k| k.as_ptr()).collect();
        let lens: Vec<usize> = keys.iter().map(|k| k.len()).collect();
        let mut buf = vec![0u8; 16 + 2 * keys.len()];
        let mut len = 0;
        // SAFETY: live arrays of `keys.len()` elements, each key its length's bytes; a buffer of
        // its length.
        let rc = unsafe {
            cksst_compact_build_into(
                ptrs.as_ptr(),
                lens.as_ptr(),
                keys.len(),
                buf.as_mut_ptr(),
                buf.len(),
                &mut len,
            )
        };
        buf.truncate(len);
        (rc, buf)
    }

    fn fresh_block(keys: &[&[u8]]) -> Vec<u8> {
        let mut b = FilterBuilder::new(Config::new(0));
        for k in keys {
            b.add_key(k);
        }
        b.finish_compact().unwrap()
    }

    /// The thread's builder, kept between calls: a call that fails on its third key leaves
    /// nothing behind for the next call, and after a block past the kept-memory bound the
    /// thread's pair starts again — each block the bytes a fresh builder makes.
    #[test]
    fn compact_build_into_keeps_nothing_between_calls() {
        let keys: Vec<Vec<u8>> = (0..40u32).map(|i| i.to_le_bytes().to_vec()).collect();
        let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        let ptrs = [b"a".as_ptr(), b"b".as_ptr(), ptr::null()];
        let lens = [1usize, 1, 3];
        let mut buf = [0u8; 64];
        let mut len = 7;
        // SAFETY: three keys, the third NULL with a length (refused before it is read).
        let rc = unsafe {
            cksst_compact_build_into(
                ptrs.as_ptr(),
                lens.as_ptr(),
                3,
                buf.as_mut_ptr(),
                64,
                &mut len,
            )
        };
        assert_eq!((rc, len), (CKSST_ERR_INVALID_ARGUMENT, 0));
        assert_eq!(build_into(&keys), (CKSST_OK, fresh_block(&keys)));
        let many: Vec<Vec<u8>> = (0..70_000u32).map(|i| i.to_be_bytes().to_vec()).collect();
        let many: Vec<&[u8]> = many.iter().map(|k| k.as_slice()).collect();
        assert_eq!(build_into(&many), (CKSST_OK, fresh_block(&many)));
        assert_eq!(build_into(&keys[..9]), (CKSST_OK, fresh_block(&keys[..9])));
        assert_eq!(build_into(&[]), (CKSST_OK, fresh_block(&[])));
    }

    /// The keys' pointers and lengths checked before they are hashed, both ways the call
    /// takes: a NULL key of length 0 is the empty key (the pass that checks each key), a NULL
    /// key with a length or a length above isize::MAX is refused (nothing delivered), and the
    /// blocks are a fresh builder's either way.
    #[test]
    fn compact_build_into_checks_every_key() {
        let keys: Vec<Vec<u8>> = (0..30u32).map(|i| i.to_le_bytes().to_vec()).collect();
        let mut with_empty: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        with_empty.push(&[]);
        let mut ptrs: Vec<*const u8> = with_empty.iter().map(|k| k.as_ptr()).collect();
        let mut lens: Vec<usize> = with_empty.iter().map(|k| k.len()).collect();
        let build = |ptrs: &[*const u8], lens: &[usize]| {
            let mut buf = [0u8; 128];
            let mut len = 7;
            // SAFETY: `ptrs.len()` keys, each NULL or its length's bytes (a length the call
            // refuses is never read); a buffer of 128 bytes.
            let rc = unsafe {
                cksst_compact_build_into(
                    ptrs.as_ptr(),
                    lens.as_ptr(),
                    ptrs.len(),
                    buf.as_mut_ptr(),
                    buf.len(),
                    &mut len,
                )
            };
            (rc, buf[..len].to_vec())
        };
        assert_eq!(build(&ptrs, &lens), (CKSST_OK, fresh_block(&with_empty)));
        *ptrs.last_mut().unwrap() = ptr::null();
        assert_eq!(build(&ptrs, &lens), (CKSST_OK, fresh_block(&with_empty)));
        *lens.last_mut().unwrap() = 1;
        assert_eq!(
            build(&ptrs, &lens),
            (CKSST_ERR_INVALID_ARGUMENT, Vec::new())
        );
        *ptrs.last_mut().unwrap() = keys[0].as_ptr();
        *lens.last_mut().unwrap() = isize::MAX as usize + 1;
        assert_eq!(
            build(&ptrs, &lens),
            (CKSST_ERR_INVALID_ARGUMENT, Vec::new())
        );
        lens.pop();
        ptrs.pop();
        assert_eq!(
            build(&ptrs, &lens),
            (CKSST_OK, fresh_block(&with_empty[..30]))
        );
    }

    /// Any thread may call `cksst_compact_build_into` (each keeps its own builder and block):
    /// four threads building blocks of different sizes at once each get the bytes a fresh
    /// builder makes, every time.
    #[test]
    fn compact_build_into_is_called_from_many_threads_at_once() {
        let workers: Vec<_> = (0..4u32)
            .map(|t| {
                std::thread::spawn(move || {
                    for round in 0..200u32 {
                        let n = (t * 37 + round * 11) % 150;
                        let keys: Vec<Vec<u8>> = (0..n)
                            .map(|i| format!("t{t} r{round} k{i}").into_bytes())
                            .collect();
                        let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
                        assert_eq!(build_into(&keys), (CKSST_OK, fresh_block(&keys)));
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
    }

    /// `cksst_compact_contains` answers a default block through its fast path as the checked
    /// path does, and leaves every argument error and damaged block to the checked path's
    /// codes: NULL arguments, a damaged header, version 1.
    #[test]
    fn compact_contains_takes_the_checked_path_for_every_error() {
        let keys: Vec<Vec<u8>> = (0..19u32).map(|i| i.to_le_bytes().to_vec()).collect();
        let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        let block = fresh_block(&keys);
        // SAFETY: live slices and NULL pointers, each with the length the call is given.
        unsafe {
            for i in 0..200u32 {
                let k = i.to_le_bytes();
                let want = CompactFilter::block_contains(&block, &k).unwrap();
                let got = cksst_compact_contains(block.as_ptr(), block.len(), k.as_ptr(), 4);
                assert_eq!(got, c_int::from(want), "key {i}");
                assert!(i >= 19 || got == 1);
            }
            let empty = fresh_block(&[]);
            assert_eq!(
                cksst_compact_contains(empty.as_ptr(), empty.len(), ptr::null(), 0),
                0
            );
            assert_eq!(
                cksst_compact_contains(ptr::null(), 3, b"k".as_ptr(), 1),
                CKSST_ERR_INVALID_ARGUMENT
            );
            assert_eq!(
                cksst_compact_contains(block.as_ptr(), block.len(), ptr::null(), 1),
                CKSST_ERR_INVALID_ARGUMENT
            );
            let mut damaged = block.clone();
            damaged[1] ^= 0x10; // the check
            assert_eq!(
                cksst_compact_contains(damaged.as_ptr(), damaged.len(), b"k".as_ptr(), 1),
                CKSST_ERR_CORRUPT
            );
            assert_eq!(
                cksst_compact_contains(block.as_ptr(), block.len() - 1, b"k".as_ptr(), 1),
                CKSST_ERR_CORRUPT
            );
        }
    }
}
