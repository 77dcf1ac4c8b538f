//! What the `config` fuzz target checks on one input, shared with the regression test
//! `crates/gdio/tests/config_fuzz_regressions.rs` (which includes this file with `#[path]`).
//!
//! The input is read two ways:
//! - as the text of a config file (gdio's flat form or a cufile.json, `//` comments allowed),
//!   the file every process that preloads gdio's libcufile reads: `strip_comments` keeps every
//!   line break (error positions hold) and leaves text without `//` alone; `json::parse`
//!   accepts or refuses without a panic; each setting it returns, applied from code with
//!   `LoadedConfig::set`, either holds (and the configuration still validates) or is refused
//!   with the configuration exactly as it was;
//! - as environment lines `NAME=value` (the variables that name a config file left out, so no
//!   file is opened): `Config::load_from_vars` loads or refuses without a panic, and a loaded
//!   configuration validates.

use gdio::config::env::FILE_VARS;
use gdio::config::json::{parse, strip_comments};
use gdio::{Config, LoadedConfig};

/// Checks one input both ways; panics on a broken promise.
pub fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    config_file(&text);
    environment(&text);
}

fn config_file(text: &str) {
    let stripped = strip_comments(text);
    let lines = |s: &str| s.bytes().filter(|&b| b == b'\n').count();
    assert_eq!(lines(&stripped), lines(text), "strip_comments changed the line count");
    if !text.contains("//") {
        assert_eq!(stripped, text, "strip_comments changed text without comments");
    }
    let Ok(settings) = parse(text, "fuzz.json") else { return };
    let mut loaded = LoadedConfig::defaults();
    for s in settings {
        assert!(!s.key.is_empty() && !s.written.is_empty(), "a setting without a key: {s:?}");
        let before = loaded.config().clone();
        match loaded.set(&s.key, s.value.clone()) {
            Ok(()) => {
                if let Err(e) = loaded.config().validate() {
                    panic!("{} = {} was accepted but leaves {e}", s.key, s.value);
                }
            }
            Err(e) => {
                assert!(!e.to_string().is_empty());
                assert!(
                    *loaded.config() == before,
                    "refusing {} = {} changed the configuration",
                    s.key,
                    s.value
                );
            }
        }
    }
    // Every entry can be listed (what `gdio config` prints).
    let _ = loaded.entries();
}

fn environment(text: &str) {
    let vars: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.split_once('='))
        // The variables that name a config file to read are not taken from fuzzed input.
        .filter(|(k, _)| !FILE_VARS.contains(&k.trim()))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    if let Ok(loaded) = Config::load_from_vars(vars) {
        if let Err(e) = loaded.config().validate() {
            panic!("an environment was loaded into a configuration that does not validate: {e}");
        }
        let _ = loaded.entries();
    }
}
