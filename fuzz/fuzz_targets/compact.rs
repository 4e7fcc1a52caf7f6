//! Compact blocks (FORMAT.md §11), hostile and built; see `common/compact.rs`.
#![no_main]

// Each target runs one of the shared bodies; the others are unused here.
#[allow(dead_code)]
mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| common::compact::run(data));
