//! Flushes, compactions, drops and lookups on one run index against an exact model, and its
//! file damaged and hostile; see `common/run_index.rs`.
#![no_main]

// Each target runs one of the shared bodies; the others are unused here.
#[allow(dead_code)]
mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| common::run_index::run(data));
