//! libFuzzer target: the safetensors header parser (`parse_prefix`, `parse_header`) on
//! arbitrary bytes, read as a whole file, as the start of a longer one and as a bare JSON
//! header; every accepted header is checked against the parser's promises and the
//! `safetensors` crate (see `check.rs`).

#![no_main]

#[allow(dead_code)] // each target uses half of it
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::header(data));
