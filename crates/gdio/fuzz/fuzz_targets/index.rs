//! libFuzzer target: the `*.safetensors.index.json` parser (`parse_index`) on arbitrary
//! bytes; every accepted index is checked against the parser's promises (file names stay
//! inside the index's folder) and against plain `serde_json` (see `check.rs`).

#![no_main]

#[allow(dead_code)] // each target uses half of it
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::index(data));
