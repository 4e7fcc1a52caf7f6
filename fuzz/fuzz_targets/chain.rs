//! Operation sequences on a growable chain, with any growth settings, against a model; see `common/chain.rs`.
#![no_main]

// Each target runs one of the shared bodies; the others are unused here.
#[allow(dead_code)]
mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| common::chain::run(data));
