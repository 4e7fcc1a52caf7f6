//! Arbitrary bytes into every reader; see `common/from_bytes.rs`.
#![no_main]

// Each target runs one of the shared bodies; the others are unused here.
#[allow(dead_code)]
mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| common::from_bytes::run(data));
