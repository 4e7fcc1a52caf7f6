//! Compiles the filter policy (cksst_leveldb.c) and links LevelDB.
//!
//! The policy's references to `cksst_*` resolve to the `#[no_mangle]` functions of the
//! `cuckoo-sst-c` rlib (a dependency, named in src/lib.rs so that rustc links it), which rustc
//! puts on the link line after this crate's own native libraries.
//!
//! LevelDB is found in the compiler's default paths (Debian's `libleveldb-dev`:
//! `scripts/install-leveldb`), or under `LEVELDB_INCLUDE_DIR` and `LEVELDB_LIB_DIR`.

use std::env;
use std::path::PathBuf;

fn main() {
    let here = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let capi_include = here.join("../../capi/include");
    for file in ["cksst_leveldb.c", "cksst_leveldb.h"] {
        println!("cargo:rerun-if-changed={file}");
    }
    println!(
        "cargo:rerun-if-changed={}",
        capi_include.join("cuckoo_sst.h").display()
    );
    println!("cargo:rerun-if-env-changed=LEVELDB_INCLUDE_DIR");
    println!("cargo:rerun-if-env-changed=LEVELDB_LIB_DIR");

    // Elsewhere the compiler's default paths are searched (the message below says what to do
    // if they hold no LevelDB).
    let include = env::var_os("LEVELDB_INCLUDE_DIR").map(PathBuf::from);
    if let Some(dir) = &include {
        assert!(
            dir.join("leveldb/c.h").exists(),
            "LEVELDB_INCLUDE_DIR={} holds no leveldb/c.h",
            dir.display()
        );
    }

    let mut build = cc::Build::new();
    build
        .file(here.join("cksst_leveldb.c"))
        .include(&here)
        .include(&capi_include)
        .std("c99")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true);
    if let Some(dir) = &include {
        build.include(dir);
    }
    if let Err(e) = build.try_compile("cksst_leveldb") {
        panic!(
            "compiling cksst_leveldb.c failed ({e}). If leveldb/c.h was not found, install \
             LevelDB's headers: scripts/install-leveldb (Debian's libleveldb-dev), or set \
             LEVELDB_INCLUDE_DIR and LEVELDB_LIB_DIR"
        );
    }

    if let Some(dir) = env::var_os("LEVELDB_LIB_DIR") {
        println!(
            "cargo:rustc-link-search=native={}",
            PathBuf::from(dir).display()
        );
    }
    println!("cargo:rustc-link-lib=leveldb");
}
