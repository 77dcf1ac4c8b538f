//! What the fuzz targets check on one input, shared with the regression test
//! `crates/gdio/tests/safetensors_fuzz_regressions.rs` (which includes this file with
//! `#[path]`), so the corpus replayed by `cargo test` is held to exactly the fuzzer's rules.
//!
//! [`header`] reads its input three ways:
//! - as a whole file (`file_len` = input length): an accepted header must satisfy
//!   [`check_header`], must agree with the `safetensors` crate's `read_metadata` (the same
//!   claim `tests/safetensors_fuzz.rs` makes: same tensors and metadata when both accept; only
//!   gdio refuses, and only duplicate keys), and must survive a round trip through
//!   `build_header`;
//! - as the first bytes of a longer file (`file_len` = input length plus the input's last
//!   8 bytes read as a little-endian u64), so offsets far past the bytes given get exercised;
//! - as a bare JSON header (the input after its first 8 bytes) with the first 8 bytes read as
//!   the data section's length, so mutations that change the JSON's length still reach the
//!   JSON parser instead of failing the length prefix.
//!
//! [`index`] parses its input as a `*.safetensors.index.json` and checks what `parse_index`
//! promises: every file name non-empty, relative and free of `..` (only plain components),
//! and the maps equal to what `serde_json` reads from the same bytes.

use std::cell::Cell;
use std::collections::{BTreeMap, HashSet};
use std::path::{Component, Path};
use std::sync::Once;

use gdio::safetensors::{
    build_header, byte_size, element_count, parse_header, parse_index, parse_prefix, Header,
    SaveTensor,
};

/// The key of the free-form string map in a header.
const METADATA_KEY: &str = "__metadata__";

thread_local! {
    /// True while the reference crate runs: a panic there is caught, not a finding.
    static IN_REFERENCE: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` (the reference `safetensors` crate), turning a panic of its own into `None`
/// without letting libFuzzer's abort-on-panic hook see it. The crate adds offsets unchecked
/// (`buffer_end + 8 + n`), which panics in this overflow-checked build on headers whose
/// offsets sum past `u64::MAX`; gdio refuses those, and that is all this check needs.
fn reference<R>(f: impl FnOnce() -> R) -> Option<R> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_REFERENCE.with(Cell::get) {
                prev(info);
            }
        }));
    });
    IN_REFERENCE.with(|c| c.set(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    IN_REFERENCE.with(|c| c.set(false));
    r.ok()
}

/// Panics unless `h`, accepted for a file of `file_len` bytes whose header is `n` bytes,
/// keeps every promise of `parse_header`: the data section starts after the header and ends
/// at the end of the file, each tensor's byte range is exactly its shape times its dtype's
/// size, and the ranges, in order, tile the data section with no overlap, hole or overrun.
pub fn check_header(h: &Header, file_len: u64, n: u64) {
    assert_eq!(h.data_start, 8 + n, "data_start");
    assert!(h.data_start <= file_len, "data_start {} past file_len {file_len}", h.data_start);
    assert_eq!(h.data_len, file_len - h.data_start, "data_len");
    let mut next = 0u64;
    let mut names = HashSet::new();
    for t in &h.tensors {
        let (b, e) = t.data_offsets;
        assert!(b <= e, "{:?}: [{b}, {e}] ends before it begins", t.name);
        assert!(e <= h.data_len, "{:?}: [{b}, {e}] past the {}-byte data", t.name, h.data_len);
        assert_eq!(b, next, "{:?}: [{b}, {e}] does not start where the last ended", t.name);
        let want = element_count(&t.shape).and_then(|c| byte_size(t.dtype, c));
        assert_eq!(want, Some(t.len()), "{:?}: size of {:?} {:?}", t.name, t.dtype, t.shape);
        assert_eq!(t.is_empty(), b == e);
        assert_ne!(t.name, METADATA_KEY, "the metadata key parsed as a tensor");
        assert!(names.insert(t.name.as_str()), "{:?} twice", t.name);
        assert_eq!(h.tensor(&t.name), Some(t), "lookup of {:?}", t.name);
        next = e;
    }
    assert_eq!(next, h.data_len, "tensors do not cover the data section");
}

/// The header length in an 8-byte little-endian prefix.
fn prefix_len(data: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(data.get(..8)?.try_into().ok()?))
}

/// `parse_prefix` on `data` as a whole file agrees with the `safetensors` crate.
fn agree_with_crate(data: &[u8], mine: &gdio::Result<Header>) {
    let Some(theirs) = reference(|| safetensors::SafeTensors::read_metadata(data)) else {
        assert!(mine.is_err(), "gdio accepts a header whose offsets overflow the crate");
        return;
    };
    match (mine, theirs) {
        (Ok(h), Ok((_, m))) => {
            assert_eq!(h.tensors.len(), m.offset_keys().len(), "tensor count");
            for t in &h.tensors {
                let i = m.info(&t.name).unwrap_or_else(|| panic!("crate lacks {:?}", t.name));
                assert_eq!(i.dtype, t.dtype, "{:?}", t.name);
                let shape: Vec<u64> = i.shape.iter().map(|&d| d as u64).collect();
                assert_eq!(shape, t.shape, "{:?}", t.name);
                let offs = (i.data_offsets.0 as u64, i.data_offsets.1 as u64);
                assert_eq!(offs, t.data_offsets, "{:?}", t.name);
            }
            let meta: BTreeMap<String, String> =
                m.metadata().clone().unwrap_or_default().into_iter().collect();
            assert_eq!(meta, h.metadata, "metadata");
        }
        (Err(e), Ok(_)) => {
            let e = e.to_string();
            assert!(e.contains("duplicate key"), "only gdio refuses: {e}");
        }
        (Ok(_), Err(e)) => panic!("only the crate refuses: {e:?}"),
        (Err(e), Err(_)) => {
            let e = e.to_string();
            assert!(e.starts_with("malformed safetensors file"), "{e}");
        }
    }
}

/// A header accepted from a whole file, written again by `build_header` and parsed again,
/// gives the same tensors and metadata (unless the writer refuses a name, e.g. `""`).
fn round_trip(data: &[u8], h: &Header) {
    let start = h.data_start as usize;
    let mut tensors = Vec::with_capacity(h.tensors.len());
    for t in &h.tensors {
        let (b, e) = (start + t.data_offsets.0 as usize, start + t.data_offsets.1 as usize);
        match SaveTensor::host(&t.name, t.dtype, &t.shape, &data[b..e]) {
            Ok(s) => tensors.push(s),
            Err(_) => return,
        }
    }
    let json = build_header(&tensors, &h.metadata).expect("build_header of a parsed header");
    let file_len = 8 + json.len() as u64 + h.data_len;
    let again = parse_header(&json, file_len, None).expect("re-parse of build_header's output");
    check_header(&again, file_len, json.len() as u64);
    assert_eq!(again.tensors, h.tensors, "tensors after a round trip");
    assert_eq!(again.metadata, h.metadata, "metadata after a round trip");
}

/// Every check on one header fuzz input (see the module documentation).
pub fn header(data: &[u8]) {
    let len = data.len() as u64;

    // A whole file.
    let whole = parse_prefix(data, len, None);
    if let Ok(h) = &whole {
        check_header(h, len, prefix_len(data).expect("accepted without a prefix"));
        round_trip(data, h);
    }
    agree_with_crate(data, &whole);

    // The first bytes of a longer file.
    if let Some(extra) = data.len().checked_sub(8).and_then(|i| prefix_len(&data[i..])) {
        let file_len = len.saturating_add(extra);
        if let Ok(h) = parse_prefix(data, file_len, None) {
            check_header(&h, file_len, prefix_len(data).expect("accepted without a prefix"));
        }
    }

    // A bare JSON header, the first 8 bytes giving the data section's length.
    if let Some(data_len) = prefix_len(data) {
        let json = &data[8..];
        let file_len = (8 + json.len() as u64).saturating_add(data_len);
        if let Ok(h) = parse_header(json, file_len, None) {
            check_header(&h, file_len, json.len() as u64);
        }
    }
}

/// A file name that stays inside the index's folder: not empty, only plain components.
fn plain_relative(name: &str) -> bool {
    let p = Path::new(name);
    !name.is_empty()
        && p.components().next().is_some()
        && p.components().all(|c| matches!(c, Component::Normal(_)))
}

/// Every check on one index fuzz input (see the module documentation).
pub fn index(data: &[u8]) {
    let Ok(idx) = parse_index(data, None) else { return };
    for (name, file) in &idx.weight_map {
        assert!(plain_relative(file), "tensor {name:?}: file {file:?} leaves the folder");
    }
    let files = idx.files();
    assert_eq!(files.iter().collect::<HashSet<_>>().len(), files.len(), "files() repeats");
    let values: HashSet<&String> = idx.weight_map.values().collect();
    assert_eq!(values.len(), files.len(), "files() is not the set of file names");
    assert!(files.iter().all(|f| values.contains(f)), "files() names an unmapped file");

    // The same bytes through plain serde_json (which keeps the last of duplicate keys, which
    // gdio refuses, so on accepted input the two must match exactly).
    let v: serde_json::Value = serde_json::from_slice(data).expect("gdio accepts invalid JSON");
    let top = v.as_object().expect("gdio accepts a non-object");
    let wm = top.get("weight_map").and_then(|w| w.as_object()).expect("weight_map");
    let wm: BTreeMap<String, String> = wm
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().expect("non-string file name").to_owned()))
        .collect();
    assert_eq!(wm, idx.weight_map, "weight_map differs from serde_json's reading");
    let meta = match top.get("metadata") {
        None | Some(serde_json::Value::Null) => serde_json::Map::new(),
        Some(m) => m.as_object().expect("non-object metadata accepted").clone(),
    };
    assert_eq!(meta, idx.metadata, "metadata differs from serde_json's reading");
}
