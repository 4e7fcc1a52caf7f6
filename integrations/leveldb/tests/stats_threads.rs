//! The cuckoo policy's counters under LevelDB's reader threads (issue 40, finding 6).
//!
//! LevelDB calls a filter policy's `key_may_match` from every thread that reads. The counters
//! are updated with atomic builtins where the compiler has them; where it does not, plain
//! increments from several threads would be a data race, so the policy counts nothing there.
//! `tests/c/stats_threads.c` looks keys up from 4 threads; it is built here twice with
//! ThreadSanitizer — as it is, and with `CKSST_LEVELDB_NO_ATOMIC_BUILTINS` (what a compiler
//! without the builtins gets) — and each run must report no race and the counts it promises:
//! some lookups counted, or none at all. (Before the fix, the second build raced in
//! `count_match`: ThreadSanitizer exited 66.)

#![cfg(target_os = "linux")]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `libcuckoo_sst_c.a` of this build: cargo builds the C ABI's crate with all its crate types,
/// next to this test's binary.
fn static_library() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary");
    let deps = exe.parent().expect("target/<profile>/deps");
    [Some(deps), deps.parent()]
        .into_iter()
        .flatten()
        .map(|d| d.join("libcuckoo_sst_c.a"))
        .find(|p| p.is_file())
        .expect("libcuckoo_sst_c.a next to the test binary")
}

/// Builds `stats_threads.c` with `extra` flags into `exe`; `Err` with the compiler's output.
fn build(exe: &Path, extra: &[&str], sanitize: bool) -> Result<(), String> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut args: Vec<OsString> = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-O1", "-g"]
        .iter()
        .map(OsString::from)
        .collect();
    if sanitize {
        args.push("-fsanitize=thread".into());
    }
    args.extend(extra.iter().map(OsString::from));
    for dir in [here.to_path_buf(), here.join("../../capi/include")] {
        args.push("-I".into());
        args.push(dir.into());
    }
    args.push(here.join("tests/c/stats_threads.c").into());
    args.push(here.join("cksst_leveldb.c").into());
    args.push(static_library().into());
    for lib in [
        "-lleveldb",
        "-lgcc_s",
        "-lutil",
        "-lrt",
        "-lpthread",
        "-lm",
        "-ldl",
        "-lc",
    ] {
        args.push(lib.into());
    }
    args.push("-o".into());
    args.push(exe.into());
    let out = Command::new(&cc)
        .args(&args)
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn counters_are_atomic_or_not_touched_from_leveldbs_reader_threads() {
    let dir = tempfile::tempdir().unwrap();
    // ThreadSanitizer where the compiler has it (gcc's libtsan), else the counts alone.
    let probe = dir.path().join("probe");
    let sanitize = build(&probe, &[], true).is_ok();
    for (extra, atomic) in [
        (&[][..], 1),
        (&["-DCKSST_LEVELDB_NO_ATOMIC_BUILTINS"][..], 0),
    ] {
        let exe = dir.path().join(format!("stats_threads_{atomic}"));
        build(&exe, extra, sanitize).unwrap_or_else(|e| panic!("stats_threads.c: {e}"));
        let db = dir.path().join(format!("db{atomic}"));
        let ran = Command::new(&exe)
            .arg(&db)
            .env("TSAN_OPTIONS", "halt_on_error=1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&ran.stdout);
        let stderr = String::from_utf8_lossy(&ran.stderr);
        assert!(
            ran.status.success(),
            "{extra:?} (ThreadSanitizer: {sanitize}): {}\n{stdout}\n{stderr}",
            ran.status
        );
        assert!(!stderr.contains("data race"), "{stderr}");
        let line = stdout.lines().next().unwrap_or_default();
        assert!(
            line.starts_with(&format!("atomic {atomic} lookups ")),
            "{line}"
        );
        let lookups: u64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        if atomic == 1 {
            assert!(lookups >= 4 * 20_000 * 9 / 10, "{line}");
        } else {
            assert_eq!(lookups, 0, "{line}");
        }
        println!("{extra:?}, ThreadSanitizer {sanitize}: {line}");
    }
}
