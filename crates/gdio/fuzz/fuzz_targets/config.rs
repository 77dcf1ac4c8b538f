//! libFuzzer target: gdio's configuration layers on arbitrary bytes, as a config file
//! (cufile.json or gdio's form) and as environment variables (see `config_check.rs`).

#![no_main]

mod config_check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| config_check::config(data));
