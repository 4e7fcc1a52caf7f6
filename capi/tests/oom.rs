//! Out of memory from C (issue 40, finding 5): the header promises `CKSST_ERR_OUT_OF_MEMORY`
//! (or NULL from `cksst_builder_new`) when memory cannot be had, and a C engine cannot catch an
//! abort. Each test runs itself again as a child process under an address-space limit (`ulimit
//! -v`, RLIMIT_AS), where the allocations fail, and checks that the child reports the error and
//! exits normally rather than dying of SIGABRT.

#![cfg(target_os = "linux")]

use std::ffi::CStr;
use std::process::Command;
use std::ptr;

use cuckoo_sst_c::*;

/// Set in the child's environment.
const CHILD: &str = "CKSST_OOM_CHILD";

/// The address space the child may use: 256 MiB, as in the review's reproduction.
const LIMIT_KIB: u64 = 256 * 1024;

/// Runs the test `name` of this binary as a child under [`LIMIT_KIB`]; returns its output.
fn run_limited(name: &str) -> String {
    let exe = std::env::current_exe().expect("the test binary");
    let ran = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {LIMIT_KIB} && exec \"$0\" \"$@\""))
        .arg(exe)
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&ran.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(
        ran.status.success(),
        "the child under a {} MiB address-space limit failed ({}):\n{stdout}\n{stderr}",
        LIMIT_KIB / 1024,
        ran.status
    );
    stdout
}

fn last_error() -> String {
    // SAFETY: the library's message, NUL-terminated, valid until the next failing call.
    unsafe { CStr::from_ptr(cksst_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// The review's reproduction: `cksst_builder_add_hash` until memory runs out. It must return
/// `CKSST_ERR_OUT_OF_MEMORY` with the builder intact (its keys kept), and finishing must then
/// build the filter or report the same error.
#[test]
fn a_builder_that_runs_out_of_memory_says_so() {
    if std::env::var_os(CHILD).is_none() {
        let out = run_limited("a_builder_that_runs_out_of_memory_says_so");
        assert!(out.contains("out of memory after"), "{out}");
        return;
    }
    // SAFETY: a builder made here, used by this thread only, freed once; outputs are locals.
    unsafe {
        let b = cksst_builder_new(ptr::null());
        assert!(!b.is_null());
        let mut added: u64 = 0;
        let rc = loop {
            let rc = cksst_builder_add_hash(b, added.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            if rc != CKSST_OK {
                break rc;
            }
            added += 1;
            assert!(added < 1 << 26, "{added} keys fit in 256 MiB");
        };
        assert_eq!(rc, CKSST_ERR_OUT_OF_MEMORY, "{}", last_error());
        assert!(last_error().contains("memory"), "{}", last_error());
        assert_eq!(cksst_builder_len(b), added as usize);
        let (mut bytes, mut len) = (ptr::null_mut(), 0);
        let rc = cksst_builder_finish(b, &mut bytes, &mut len);
        assert!(
            rc == CKSST_OK || rc == CKSST_ERR_OUT_OF_MEMORY,
            "finish: {rc} {}",
            last_error()
        );
        if rc == CKSST_ERR_OUT_OF_MEMORY {
            // Nothing was taken: the keys are still there.
            assert!(bytes.is_null() && len == 0);
            assert_eq!(cksst_builder_len(b), added as usize);
        }
        cksst_bytes_free(bytes, len);
        cksst_builder_free(b);
        println!(
            "out of memory after {added} keys; finish: {}",
            CStr::from_ptr(cksst_status_name(rc)).to_string_lossy()
        );
    }
}

/// With every byte of the address space taken, `cksst_builder_new` returns NULL (what the
/// LevelDB policy's fallback path expects) and a view set's handle is refused with
/// `CKSST_ERR_OUT_OF_MEMORY`, with a message. (Only handles whose contents take no memory of
/// their own are tried: the library's small allocations inside a filter — a view's checks, a
/// growable filter's bookkeeping — are not fallible; its tables are.)
#[test]
fn constructors_return_null_when_no_memory_is_left() {
    if std::env::var_os(CHILD).is_none() {
        let out = run_limited("constructors_return_null_when_no_memory_is_left");
        assert!(out.contains("constructors refused"), "{out}");
        return;
    }
    // This thread's last error exists before memory runs out.
    assert_eq!(last_error(), "");
    // Take all the memory there is, in blocks from 64 MiB down to 8 bytes.
    let mut hog: Vec<Vec<u8>> = Vec::new();
    hog.try_reserve(4096).unwrap();
    let mut size = 64 << 20;
    while size >= 8 {
        let mut block = Vec::new();
        if hog.len() < hog.capacity() && block.try_reserve_exact(size).is_ok() {
            hog.push(block);
        } else {
            size /= 2;
        }
    }
    // SAFETY: a NULL configuration, an empty set of views, a local for the output.
    let (builder, rc, set) = unsafe {
        let builder = cksst_builder_new(ptr::null());
        let mut set = ptr::null_mut();
        let rc = cksst_view_set_new(ptr::null(), 0, &mut set);
        (builder, rc, set)
    };
    // Read once memory is back (the message stays until the next failing call).
    drop(hog);
    let message = last_error();
    assert!(builder.is_null(), "a builder was made");
    assert_eq!(rc, CKSST_ERR_OUT_OF_MEMORY, "{message}");
    assert!(set.is_null());
    assert!(message.contains("memory"), "{message}");
    println!("constructors refused: {message}");
}

/// A run index whose table cannot be had (2^33 entries, tens of GiB, under the 256 MiB limit)
/// is refused with `CKSST_ERR_OUT_OF_MEMORY` and a NULL handle, not an abort; and a run whose
/// 20 million hashes (160 MB) cannot be copied is refused the same way, the index as it was.
#[test]
fn a_run_index_that_cannot_have_its_table_says_so() {
    if std::env::var_os(CHILD).is_none() {
        let out = run_limited("a_run_index_that_cannot_have_its_table_says_so");
        assert!(out.contains("run index refused"), "{out}");
        return;
    }
    // SAFETY: configurations and outputs are locals; handles made here are freed once.
    unsafe {
        let mut cfg = std::mem::zeroed();
        assert_eq!(cksst_config_init(&mut cfg, 1 << 33), CKSST_OK);
        let mut index = ptr::dangling_mut::<cksst_run_index>(); // a value left from earlier use
        let rc = cksst_run_index_new(&cfg, &mut index);
        assert_eq!(rc, CKSST_ERR_OUT_OF_MEMORY, "{}", last_error());
        assert!(index.is_null());
        let message = last_error();
        assert!(message.contains("could not allocate"), "{message}");
        // A small index, and a run whose hashes' copy does not fit: refused, unchanged.
        assert_eq!(cksst_run_index_new(ptr::null(), &mut index), CKSST_OK);
        let one = [1u64];
        assert_eq!(
            cksst_run_index_add_run_hashes(index, 1, one.as_ptr(), 1),
            CKSST_OK
        );
        let many: Vec<u64> = (0..20_000_000u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect();
        let rc = cksst_run_index_add_run_hashes(index, 2, many.as_ptr(), many.len());
        assert_eq!(rc, CKSST_ERR_OUT_OF_MEMORY, "{}", last_error());
        assert!(last_error().contains("hashes"), "{}", last_error());
        assert_eq!(cksst_run_index_run_count(index), 1);
        let (mut runs, mut count) = ([0u64; CKSST_RUN_INDEX_MAX_RUNS], 0);
        assert_eq!(
            cksst_run_index_runs_for_hash(index, 1, runs.as_mut_ptr(), runs.len(), &mut count),
            1
        );
        assert_eq!(&runs[..count], &[1]);
        cksst_run_index_free(index);
        println!("run index refused: {message}");
    }
}
