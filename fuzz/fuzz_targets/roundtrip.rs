//! A filter or chain through every reader: all answer as the original; see `common/roundtrip.rs`.
#![no_main]

// Each target runs one of the shared bodies; the others are unused here.
#[allow(dead_code)]
mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| common::roundtrip::run(data));
