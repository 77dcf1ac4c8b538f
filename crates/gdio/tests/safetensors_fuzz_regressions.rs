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

/// `len` as the 8-byte prefix, then `json`, then `data` zero bytes: a whole file.
fn file(json: &str, data: usize) -> Vec<u8> {
    let mut b = (json.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(json.as_bytes());
    b.resize(b.len() + data, 0);
    b
}

/// Found by the header fuzzer (`regressions/header/duplicate_field_in_tensor_entry`): a
/// tensor entry with two `"shape"` fields was read as its last one (`serde_json::Value`
/// collapses duplicate keys) although the header promises no duplicate keys and the
/// `safetensors` crate refuses it. Duplicate keys are now refused at any depth.
#[test]
fn duplicate_fields_inside_a_tensor_entry_are_refused() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions/header");
    let found = std::fs::read(dir.join("duplicate_field_in_tensor_entry")).unwrap();
    let e = gdio::safetensors::parse_prefix(&found, found.len() as u64, None).unwrap_err();
    assert!(e.to_string().contains("duplicate key \"shape\""), "{e}");

    let cases = [
        r#"{"a":{"dtype":"U8","shape":[1],"shape":[1],"data_offsets":[0,1]}}"#,
        r#"{"a":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#,
        r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"data_offsets":[0,1]}}"#,
        r#"{"__metadata__":{"k":"v","k":"w"},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#,
    ];
    for json in cases {
        let b = file(json, 1);
        let e = gdio::safetensors::parse_prefix(&b, b.len() as u64, None).unwrap_err();
        assert!(e.to_string().contains("duplicate key"), "{json}: {e}");
        check::header(&b);
    }
    // Unrelated unknown fields stay accepted, as the crate accepts them.
    let b = file(r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":{"y":[1]}}}"#, 1);
    assert!(gdio::safetensors::parse_prefix(&b, b.len() as u64, None).is_ok());
    check::header(&b);
}
