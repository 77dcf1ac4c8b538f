//! Replays the libFuzzer corpus and every input the fuzzers ever crashed on through the
//! safetensors header and index parsers, so `cargo test` (no fuzzer needed) keeps them as
//! regression tests: every file under `fuzz/corpus/header`, `fuzz/corpus/index` and
//! `fuzz/regressions/{header,index}` must parse without a panic, and whatever is accepted must
//! keep the same promises the fuzz targets check (`fuzz/fuzz_targets/check.rs`, included
//! here): tensor byte ranges that tile the data section exactly and match shape × dtype, the
//! `safetensors` crate agreeing, index file names that stay inside the index's folder.

use std::path::{Path, PathBuf};

#[path = "../fuzz/fuzz_targets/check.rs"]
mod check;

/// The files under `fuzz/<dir>` (none when the folder does not exist), sorted by name.
fn inputs(dir: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz").join(dir);
    let Ok(rd) = std::fs::read_dir(&dir) else { return Vec::new() };
    let mut v: Vec<_> = rd
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    v.sort();
    v
}

/// Runs `check` on every input of `dirs`, naming the file that fails; returns how many ran.
fn replay(dirs: &[&str], check: fn(&[u8])) -> usize {
    let mut n = 0;
    for d in dirs {
        for (path, bytes) in inputs(d) {
            let r = std::panic::catch_unwind(|| check(&bytes));
            assert!(r.is_ok(), "{} fails the fuzz checks", path.display());
            n += 1;
        }
    }
    n
}

#[test]
fn header_corpus_and_regressions() {
    let n = replay(&["corpus/header", "regressions/header"], check::header);
    assert!(n >= 5, "only {n} header inputs found");
}

#[test]
fn index_corpus_and_regressions() {
    let n = replay(&["corpus/index", "regressions/index"], check::index);
    assert!(n >= 2, "only {n} index inputs found");
}
