//! Operation sequences on one filter, in any layout, against a model; see `common/ops.rs`.
#![no_main]

// Each target runs one of the shared bodies; the others are unused here.
#[allow(dead_code)]
mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| common::ops::run(data));
