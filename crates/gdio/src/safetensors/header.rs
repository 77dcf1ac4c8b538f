//! The header of one safetensors file, parsed and validated without trusting it.
//!
//! A file is an 8-byte little-endian header length `n`, `n` bytes of JSON, then the data
//! section. The JSON maps tensor names to `{"dtype", "shape", "data_offsets": [begin, end]}`
//! (offsets relative to the data section) plus an optional `"__metadata__"` map of strings.
//! [`parse_header`] checks everything a reader relies on: the length is bounded and inside the
//! file, the JSON is well formed UTF-8 with no duplicate keys (at any depth: a tensor entry
//! with two `"shape"`s is refused, not read as its last one), every dtype is known, every
//! shape's element count times the dtype size equals its byte range without overflow, and the
//! ranges tile the data section exactly (no overlap, no hole, nothing past the end, nothing
//! after the last tensor). An error names the file and the tensor; nothing here panics or
//! indexes out of bounds on any input (fuzzed: `fuzz/`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::dtype::{byte_size, dtype_from_name, element_count, Dtype};
use crate::error::{Error, ErrorKind, Result};

/// Largest header accepted, in bytes (the `safetensors` crate's limit).
pub const MAX_HEADER_LEN: u64 = 100_000_000;

/// Bytes of the length prefix.
pub const PREFIX_LEN: u64 = 8;

/// The key of the free-form string map in a header.
pub const METADATA_KEY: &str = "__metadata__";

/// One tensor as its file's header describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// Name (the header's key).
    pub name: String,
    /// Element type.
    pub dtype: Dtype,
    /// Shape; empty for a zero-dimensional (scalar) tensor.
    pub shape: Vec<u64>,
    /// Byte range `[begin, end)` relative to the start of the data section.
    pub data_offsets: (u64, u64),
}

impl TensorInfo {
    /// Bytes of data.
    pub fn len(&self) -> u64 {
        self.data_offsets.1 - self.data_offsets.0
    }

    /// True for a tensor with no bytes (a zero in its shape).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of elements.
    pub fn elements(&self) -> u64 {
        element_count(&self.shape).unwrap_or(0)
    }
}

/// A validated header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Tensors in the order of their data (by offset).
    pub tensors: Vec<TensorInfo>,
    /// The `__metadata__` map (empty when absent).
    pub metadata: BTreeMap<String, String>,
    /// File offset of the data section (8 + header length).
    pub data_start: u64,
    /// Bytes of the data section.
    pub data_len: u64,
}

impl Header {
    /// The tensor called `name`.
    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }
}

/// The error for a malformed file. Its words are a contract: Python's `gdio._errors.from_native`
/// makes an error whose message holds "malformed safetensors file" a `SafetensorError` too (as
/// the safetensors package raises), and `python/tests/test_safetensors_raw.py` checks it.
fn bad(path: Option<&Path>, what: impl fmt::Display) -> Error {
    let e = Error::new(ErrorKind::InvalidInput, format!("malformed safetensors file: {what}"))
        .with_errno(libc::EINVAL);
    match path {
        Some(p) => e.with_path(p),
        None => e,
    }
}

/// The header length from the 8-byte prefix of a file of `file_len` bytes, checked against
/// [`MAX_HEADER_LEN`] and the file size.
pub fn header_len(prefix: &[u8], file_len: u64, path: Option<&Path>) -> Result<u64> {
    let Some(bytes) = prefix.get(..8) else {
        return Err(bad(
            path,
            format!("{} bytes is too short for the 8-byte header length", prefix.len()),
        ));
    };
    let mut a = [0u8; 8];
    a.copy_from_slice(bytes);
    let n = u64::from_le_bytes(a);
    if n > MAX_HEADER_LEN {
        return Err(bad(
            path,
            format!("header length {n} exceeds the limit of {MAX_HEADER_LEN} bytes"),
        ));
    }
    if n < 2 {
        return Err(bad(path, format!("header length {n} cannot hold a JSON object")));
    }
    if PREFIX_LEN + n > file_len {
        return Err(bad(
            path,
            format!("header length {n} runs past the end of the {file_len}-byte file (truncated?)"),
        ));
    }
    Ok(n)
}

/// The JSON object's entries in file order, refusing duplicate keys (a `HashMap` would keep
/// the last one silently).
struct Entries(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entries;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object of tensors")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut m: A,
            ) -> std::result::Result<Entries, A::Error> {
                let mut seen = std::collections::HashSet::new();
                let mut out = Vec::new();
                while let Some(k) = m.next_key::<String>()? {
                    if !seen.insert(k.clone()) {
                        return Err(serde::de::Error::custom(format!("duplicate key {k:?}")));
                    }
                    let UniqueValue(v) = m.next_value()?;
                    out.push((k, v));
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// A JSON value whose objects, at any depth, have unique keys (`Value` keeps the last of
/// duplicate keys silently; the `safetensors` crate refuses a tensor entry with two fields of
/// one name, and so does this parser).
struct UniqueValue(Value);

impl<'de> Deserialize<'de> for UniqueValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = UniqueValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_bool<E>(self, v: bool) -> std::result::Result<UniqueValue, E> {
                Ok(UniqueValue(Value::Bool(v)))
            }
            fn visit_i64<E>(self, v: i64) -> std::result::Result<UniqueValue, E> {
                Ok(UniqueValue(Value::from(v)))
            }
            fn visit_u64<E>(self, v: u64) -> std::result::Result<UniqueValue, E> {
                Ok(UniqueValue(Value::from(v)))
            }
            fn visit_f64<E>(self, v: f64) -> std::result::Result<UniqueValue, E> {
                Ok(UniqueValue(Value::from(v)))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<UniqueValue, E> {
                Ok(UniqueValue(Value::String(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> std::result::Result<UniqueValue, E> {
                Ok(UniqueValue(Value::String(v)))
            }
            fn visit_unit<E>(self) -> std::result::Result<UniqueValue, E> {
                Ok(UniqueValue(Value::Null))
            }
            fn visit_none<E>(self) -> std::result::Result<UniqueValue, E> {
                Ok(UniqueValue(Value::Null))
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut s: A,
            ) -> std::result::Result<UniqueValue, A::Error> {
                let mut out = Vec::new();
                while let Some(UniqueValue(v)) = s.next_element()? {
                    out.push(v);
                }
                Ok(UniqueValue(Value::Array(out)))
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut m: A,
            ) -> std::result::Result<UniqueValue, A::Error> {
                let mut out = serde_json::Map::new();
                while let Some(k) = m.next_key::<String>()? {
                    if out.contains_key(&k) {
                        return Err(serde::de::Error::custom(format!("duplicate key {k:?}")));
                    }
                    let UniqueValue(v) = m.next_value()?;
                    out.insert(k, v);
                }
                Ok(UniqueValue(Value::Object(out)))
            }
        }
        d.deserialize_any(V)
    }
}

fn as_u64(v: &Value) -> Option<u64> {
    v.as_u64()
}

fn tensor_entry(name: &str, v: &Value, path: Option<&Path>) -> Result<TensorInfo> {
    let t = |what: String| bad(path, format!("tensor {name:?}: {what}"));
    let obj = v.as_object().ok_or_else(|| t("entry is not a JSON object".into()))?;
    let dtype_name = obj
        .get("dtype")
        .ok_or_else(|| t("no \"dtype\"".into()))?
        .as_str()
        .ok_or_else(|| t("\"dtype\" is not a string".into()))?;
    let dtype =
        dtype_from_name(dtype_name).ok_or_else(|| t(format!("unknown dtype {dtype_name:?}")))?;
    let shape = obj
        .get("shape")
        .ok_or_else(|| t("no \"shape\"".into()))?
        .as_array()
        .ok_or_else(|| t("\"shape\" is not an array".into()))?
        .iter()
        .map(as_u64)
        .collect::<Option<Vec<u64>>>()
        .ok_or_else(|| t("\"shape\" holds something other than non-negative integers".into()))?;
    let offs = obj
        .get("data_offsets")
        .ok_or_else(|| t("no \"data_offsets\"".into()))?
        .as_array()
        .ok_or_else(|| t("\"data_offsets\" is not an array".into()))?;
    let (begin, end) = match offs.as_slice() {
        [b, e] => match (as_u64(b), as_u64(e)) {
            (Some(b), Some(e)) => (b, e),
            _ => return Err(t("\"data_offsets\" are not non-negative integers".into())),
        },
        _ => return Err(t(format!("\"data_offsets\" has {} values, not 2", offs.len()))),
    };
    if end < begin {
        return Err(t(format!("data_offsets [{begin}, {end}] end before they begin")));
    }
    let elements =
        element_count(&shape).ok_or_else(|| t(format!("shape {shape:?} overflows 64 bits")))?;
    let bytes = byte_size(dtype, elements).ok_or_else(|| {
        t(format!("{elements} elements of {dtype_name} do not fill whole bytes or overflow"))
    })?;
    if end - begin != bytes {
        return Err(t(format!(
            "shape {shape:?} of {dtype_name} is {bytes} bytes but data_offsets [{begin}, {end}] hold {}",
            end - begin
        )));
    }
    Ok(TensorInfo { name: name.to_owned(), dtype, shape, data_offsets: (begin, end) })
}

/// Parses and validates `json` (the `n` header bytes after the prefix) of a file of
/// `file_len` bytes; `path` only names the file in errors.
pub fn parse_header(json: &[u8], file_len: u64, path: Option<&Path>) -> Result<Header> {
    let n = json.len() as u64;
    let data_start = PREFIX_LEN + n;
    if data_start > file_len {
        return Err(bad(
            path,
            format!("header of {n} bytes runs past the end of the {file_len}-byte file"),
        ));
    }
    let data_len = file_len - data_start;
    let text =
        std::str::from_utf8(json).map_err(|e| bad(path, format!("header is not UTF-8 ({e})")))?;
    let entries: Entries = serde_json::from_str(text)
        .map_err(|e| bad(path, format!("header is not valid JSON: {e}")))?;
    let mut metadata = BTreeMap::new();
    let mut tensors = Vec::with_capacity(entries.0.len());
    for (name, v) in &entries.0 {
        if name == METADATA_KEY && v.is_null() {
            continue;
        } else if name == METADATA_KEY {
            let obj =
                v.as_object().ok_or_else(|| bad(path, "\"__metadata__\" is not a JSON object"))?;
            for (k, v) in obj {
                let s = v.as_str().ok_or_else(|| {
                    bad(path, format!("\"__metadata__\" value of {k:?} is not a string"))
                })?;
                metadata.insert(k.clone(), s.to_owned());
            }
        } else {
            tensors.push(tensor_entry(name, v, path)?);
        }
    }
    tensors.sort_by(|a, b| a.data_offsets.cmp(&b.data_offsets).then_with(|| a.name.cmp(&b.name)));
    let mut next = 0u64;
    let mut prev: Option<&str> = None;
    for t in &tensors {
        let (b, e) = t.data_offsets;
        if e > data_len {
            return Err(bad(
                path,
                format!(
                    "tensor {:?}: data_offsets [{b}, {e}] run past the {data_len}-byte data section (file truncated?)",
                    t.name
                ),
            ));
        }
        if b < next {
            return Err(bad(
                path,
                format!(
                    "tensor {:?}: data_offsets [{b}, {e}] overlap tensor {:?} (which ends at {next})",
                    t.name,
                    prev.unwrap_or("")
                ),
            ));
        }
        if b > next {
            return Err(bad(
                path,
                format!(
                    "tensor {:?}: data_offsets [{b}, {e}] leave a hole of {} bytes before it",
                    t.name,
                    b - next
                ),
            ));
        }
        next = e;
        prev = Some(&t.name);
    }
    if next != data_len {
        return Err(bad(
            path,
            format!("data section is {data_len} bytes but its tensors cover only {next} (trailing bytes)"),
        ));
    }
    Ok(Header { tensors, metadata, data_start, data_len })
}

/// Parses a whole file's bytes, or its first `8 + n` bytes with `file_len` the whole size.
pub fn parse_prefix(bytes: &[u8], file_len: u64, path: Option<&Path>) -> Result<Header> {
    let n = header_len(bytes, file_len, path)?;
    let end = usize::try_from(PREFIX_LEN + n).map_err(|_| bad(path, "header length overflows"))?;
    let json = bytes.get(PREFIX_LEN as usize..end).ok_or_else(|| {
        bad(path, format!("only {} of the {end} header bytes were given", bytes.len()))
    })?;
    parse_header(json, file_len, path)
}

/// Reads and validates the header of the file at `path`.
pub fn read_header(path: &Path) -> Result<Header> {
    use std::os::unix::fs::FileExt;
    let io = |e: std::io::Error, what: &str| Error::from_io(&e, what).with_path(path);
    let f = std::fs::File::open(path).map_err(|e| io(e, "cannot open safetensors file"))?;
    let file_len = f.metadata().map_err(|e| io(e, "cannot stat safetensors file"))?.len();
    let mut prefix = [0u8; 8];
    f.read_exact_at(&mut prefix, 0).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            bad(Some(path), format!("file of {file_len} bytes is too short for a header"))
        } else {
            io(e, "cannot read the header length")
        }
    })?;
    let n = header_len(&prefix, file_len, Some(path))?;
    let mut json = vec![0u8; n as usize];
    f.read_exact_at(&mut json, PREFIX_LEN).map_err(|e| io(e, "cannot read the header"))?;
    parse_header(&json, file_len, Some(path))
}

/// A header parsed from a file, with the file's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHeader {
    /// The file.
    pub path: PathBuf,
    /// Its validated header.
    pub header: Header,
}
