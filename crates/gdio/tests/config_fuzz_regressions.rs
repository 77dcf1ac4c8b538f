//! Replays the config fuzz target's corpus and every input it ever failed on through the same
//! checks (`fuzz/fuzz_targets/config_check.rs`, included here), so `cargo test` keeps them as
//! regression tests without a fuzzer: config-file text parses or is refused without a panic,
//! a refused setting leaves the configuration as it was, an accepted one leaves it valid, and
//! environment variables load or are refused without a panic.

use std::path::Path;

#[path = "../fuzz/fuzz_targets/config_check.rs"]
mod config_check;

#[test]
fn config_corpus_and_regressions() {
    let mut n = 0;
    for dir in ["corpus/config", "regressions/config"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz").join(dir);
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        let mut files: Vec<_> = rd.map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
        files.sort();
        for path in files {
            let bytes = std::fs::read(&path).unwrap();
            let r = std::panic::catch_unwind(|| config_check::config(&bytes));
            assert!(r.is_ok(), "{} fails the config fuzz checks", path.display());
            n += 1;
        }
    }
    assert!(n >= 3, "only {n} config inputs found");
}

/// The checks hold on the seeds' own settings: the stock-style cufile.json and gdio's flat
/// form each give settings that apply from code (the fuzz checks would pass vacuously if
/// parsing refused them).
#[test]
fn the_seed_files_parse_and_apply() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/config");
    for (name, expect) in [("seed-cufile-json", "allow_compat_mode"), ("seed-gdio-flat", "threads")]
    {
        let text = std::fs::read_to_string(corpus.join(name)).unwrap();
        let settings = gdio::config::json::parse(&text, name).unwrap();
        assert!(settings.iter().any(|s| s.key == expect), "{name}: {settings:?}");
        let mut loaded = gdio::LoadedConfig::defaults();
        for s in settings {
            loaded.set(&s.key, s.value.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}
