//! A checkpoint: one or more safetensors files opened together, by file, list, directory or
//! `*.safetensors.index.json`, with every header validated and every tensor name unique.

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use super::header::{read_header, FileHeader, TensorInfo};
use crate::error::{Error, ErrorKind, Result};
use crate::file::FileHandle;

/// The suffix of a sharded checkpoint's index file.
pub const INDEX_SUFFIX: &str = ".safetensors.index.json";

/// A parsed `*.safetensors.index.json`: which file holds each tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct Index {
    /// Tensor name → file name (relative to the index's folder), sorted by name.
    pub weight_map: BTreeMap<String, String>,
    /// The `"metadata"` object (for example `total_size`), if any.
    pub metadata: serde_json::Map<String, Value>,
}

impl Index {
    /// The distinct file names, in order of first appearance by tensor name.
    pub fn files(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for f in self.weight_map.values() {
            if !out.contains(f) {
                out.push(f.clone());
            }
        }
        out
    }
}

fn bad_index(path: Option<&Path>, what: impl std::fmt::Display) -> Error {
    let e = Error::new(ErrorKind::InvalidInput, format!("malformed safetensors index: {what}"))
        .with_errno(libc::EINVAL);
    match path {
        Some(p) => e.with_path(p),
        None => e,
    }
}

/// A shard name must stay inside the index's folder: relative, no `..`, not empty.
fn safe_relative(name: &str) -> bool {
    let p = Path::new(name);
    !name.is_empty()
        && p.components().all(|c| matches!(c, Component::Normal(_)))
        && p.components().next().is_some()
}

/// Parses an index file's bytes; `path` only names it in errors. Refuses duplicate keys, a
/// missing or non-object `weight_map`, non-string file names, and file names that leave the
/// index's folder (absolute, `..`).
pub fn parse_index(bytes: &[u8], path: Option<&Path>) -> Result<Index> {
    let text =
        std::str::from_utf8(bytes).map_err(|e| bad_index(path, format!("not UTF-8 ({e})")))?;
    let top: UniqueObject =
        serde_json::from_str(text).map_err(|e| bad_index(path, format!("not valid JSON: {e}")))?;
    let mut weight_map = None;
    let mut metadata = serde_json::Map::new();
    for (k, v) in top.0 {
        match k.as_str() {
            "weight_map" => weight_map = Some(v),
            "metadata" => match v {
                Value::Object(m) => metadata = m,
                Value::Null => {}
                _ => return Err(bad_index(path, "\"metadata\" is not a JSON object")),
            },
            _ => {}
        }
    }
    let wm = weight_map.ok_or_else(|| bad_index(path, "no \"weight_map\""))?;
    let Value::Object(wm) = wm else {
        return Err(bad_index(path, "\"weight_map\" is not a JSON object"));
    };
    let mut out = BTreeMap::new();
    for (name, file) in wm {
        let file = file.as_str().ok_or_else(|| {
            bad_index(path, format!("tensor {name:?}: file name is not a string"))
        })?;
        if !safe_relative(file) {
            return Err(bad_index(
                path,
                format!(
                    "tensor {name:?}: file {file:?} is not a plain name inside the index's folder"
                ),
            ));
        }
        out.insert(name, file.to_owned());
    }
    Ok(Index { weight_map: out, metadata })
}

/// A JSON object whose keys are unique at the top level and inside `weight_map` (serde_json
/// keeps the last of duplicate keys silently).
struct UniqueObject(Vec<(String, Value)>);

impl<'de> serde::Deserialize<'de> for UniqueObject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = UniqueObject;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> std::result::Result<UniqueObject, A::Error> {
                let mut out: Vec<(String, Value)> = Vec::new();
                while let Some(k) = m.next_key::<String>()? {
                    if out.iter().any(|(o, _)| *o == k) {
                        return Err(serde::de::Error::custom(format!("duplicate key {k:?}")));
                    }
                    let v = if k == "weight_map" {
                        let inner: UniqueObject = m.next_value()?;
                        Value::Object(inner.0.into_iter().collect())
                    } else {
                        m.next_value()?
                    };
                    out.push((k, v));
                }
                Ok(UniqueObject(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// Where a tensor lives in a [`Checkpoint`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TensorLocation {
    /// Index into [`Checkpoint::files`].
    pub file: usize,
    /// Index into that file's `header.tensors`.
    pub tensor: usize,
}

/// One or more safetensors files read as one set of uniquely named tensors.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    files: Vec<FileHeader>,
    by_name: HashMap<String, TensorLocation>,
    order: Vec<TensorLocation>,
    index: Option<(PathBuf, Index)>,
    /// The files as loads open them (shared by clones).
    opened: OpenedFiles,
}

/// A checkpoint's files, each opened for reading at the first load that reads it and kept
/// for later loads: a load per tensor, what `safe_open.get_tensor` makes, then skips the open
/// and the file's probe (filesystem, `O_DIRECT`, mount table) every time.
#[derive(Debug, Clone)]
pub(crate) struct OpenedFiles(Arc<[OnceLock<Arc<FileHandle>>]>);

impl OpenedFiles {
    fn new(files: usize) -> OpenedFiles {
        OpenedFiles((0..files).map(|_| OnceLock::new()).collect())
    }

    /// File number `file`, at `path`, opened at the first call and the same handle after.
    pub(crate) fn get(&self, file: usize, path: &Path) -> Result<Arc<FileHandle>> {
        let slot = self.0.get(file).ok_or_else(|| {
            Error::new(ErrorKind::InvalidInput, format!("no file {file} in this checkpoint"))
                .with_path(path)
        })?;
        if let Some(h) = slot.get() {
            return Ok(h.clone());
        }
        let h = Arc::new(FileHandle::open(path)?);
        // Two loads opening it at once: the first handle stored is kept, the other closed.
        Ok(slot.get_or_init(|| h).clone())
    }
}

impl Checkpoint {
    /// The checkpoint's files as loads open them (shared with its clones).
    pub(crate) fn opened_files(&self) -> OpenedFiles {
        self.opened.clone()
    }

    /// File number `file` (an index into [`Checkpoint::files`]) opened for reading: the handle
    /// this checkpoint's loads read through, opened at the first use and kept, so that bytes
    /// read through it come from the file whose header laid the tensors out, even where the
    /// path has since been replaced.
    pub fn file_handle(&self, file: usize) -> Result<Arc<FileHandle>> {
        let path = self.files.get(file).map(|f| f.path.as_path()).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidInput,
                format!("no file {file} in this checkpoint of {} files", self.files.len()),
            )
        })?;
        self.opened.get(file, path)
    }

    /// Opens one path: a `.safetensors` file, a `*.safetensors.index.json`, or a directory
    /// (its index file if it has exactly one, else all its `*.safetensors` files by name).
    pub fn open(path: impl AsRef<Path>) -> Result<Checkpoint> {
        Self::open_all(&[path.as_ref()])
    }

    /// Opens several paths as one checkpoint (each as [`Checkpoint::open`] takes it). A tensor
    /// name may appear in only one file.
    pub fn open_all<P: AsRef<Path>>(paths: &[P]) -> Result<Checkpoint> {
        if paths.is_empty() {
            return Err(Error::new(ErrorKind::InvalidInput, "no safetensors path given"));
        }
        let mut files: Vec<PathBuf> = Vec::new();
        let mut index = None;
        for p in paths {
            let p = p.as_ref();
            let (list, idx) = expand(p)?;
            if idx.is_some() {
                if paths.len() > 1 {
                    return Err(Error::new(
                        ErrorKind::InvalidInput,
                        "an index file (or a directory with one) must be the only path given",
                    )
                    .with_path(p));
                }
                index = idx;
            }
            files.extend(list);
        }
        let mut seen = std::collections::HashSet::new();
        files.retain(|f| seen.insert(f.clone()));
        let headers = files
            .into_iter()
            .map(|path| read_header(&path).map(|header| FileHeader { path, header }))
            .collect::<Result<Vec<_>>>()?;
        Self::from_headers(headers, index)
    }

    /// A checkpoint of already parsed headers (an index, when given, must name every tensor
    /// of its shards, each in the file it is in).
    pub fn from_headers(
        files: Vec<FileHeader>,
        index: Option<(PathBuf, Index)>,
    ) -> Result<Checkpoint> {
        let mut by_name = HashMap::new();
        let mut order = Vec::new();
        for (fi, f) in files.iter().enumerate() {
            for (ti, t) in f.header.tensors.iter().enumerate() {
                let loc = TensorLocation { file: fi, tensor: ti };
                if let Some(prev) = by_name.insert(t.name.clone(), loc) {
                    return Err(Error::new(
                        ErrorKind::InvalidInput,
                        format!(
                            "tensor {:?} is in both {} and {}",
                            t.name,
                            files[prev.file].path.display(),
                            f.path.display()
                        ),
                    )
                    .with_path(&f.path));
                }
                order.push(loc);
            }
        }
        if let Some((ipath, idx)) = &index {
            for (name, file) in &idx.weight_map {
                let loc = by_name.get(name).ok_or_else(|| {
                    bad_index(Some(ipath), format!("tensor {name:?} is not in any shard"))
                })?;
                let actual = &files[loc.file].path;
                if !actual.ends_with(file) {
                    return Err(bad_index(
                        Some(ipath),
                        format!(
                            "tensor {name:?} is mapped to {file} but found in {}",
                            actual.display()
                        ),
                    ));
                }
            }
            // The other way round: a shard's tensor the index does not list is loaded like the
            // others (transformers loads every tensor of each shard its index names); only
            // said, since an index that lists less than its shards hold is stale, not wrong.
            if by_name.len() != idx.weight_map.len() {
                let unlisted: Vec<&str> = order
                    .iter()
                    .map(|l| files[l.file].header.tensors[l.tensor].name.as_str())
                    .filter(|n| !idx.weight_map.contains_key(*n))
                    .collect();
                tracing::warn!(
                    index = %ipath.display(),
                    "{} tensor(s) of the shards are not in the index's weight_map and are \
                     loaded too (first: {:?})",
                    unlisted.len(),
                    unlisted.first()
                );
            }
        }
        let opened = OpenedFiles::new(files.len());
        Ok(Checkpoint { files, by_name, order, index, opened })
    }

    /// The files, in the order their tensors are listed.
    pub fn files(&self) -> &[FileHeader] {
        &self.files
    }

    /// The index file and its contents, when the checkpoint was opened by one.
    pub fn index(&self) -> Option<(&Path, &Index)> {
        self.index.as_ref().map(|(p, i)| (p.as_path(), i))
    }

    /// Number of tensors.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// True when there are no tensors.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Tensor names, file by file in data order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.order.iter().map(|l| self.info_at(*l).name.as_str())
    }

    /// Where tensor `name` lives.
    pub fn locate(&self, name: &str) -> Option<TensorLocation> {
        self.by_name.get(name).copied()
    }

    /// The header entry of tensor `name`.
    pub fn info(&self, name: &str) -> Option<&TensorInfo> {
        self.locate(name).map(|l| self.info_at(l))
    }

    /// The header entry at `loc`.
    ///
    /// # Panics
    /// When `loc` did not come from this checkpoint.
    pub fn info_at(&self, loc: TensorLocation) -> &TensorInfo {
        &self.files[loc.file].header.tensors[loc.tensor]
    }

    /// Every tensor with its location, file by file in data order.
    pub fn tensors(&self) -> impl Iterator<Item = (TensorLocation, &TensorInfo)> {
        self.order.iter().map(|l| (*l, self.info_at(*l)))
    }

    /// Bytes of tensor data in all files.
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.header.data_len).sum()
    }

    /// The `__metadata__` of the first file that has one.
    pub fn metadata(&self) -> BTreeMap<String, String> {
        self.files
            .iter()
            .map(|f| &f.header.metadata)
            .find(|m| !m.is_empty())
            .cloned()
            .unwrap_or_default()
    }
}

/// Files, and the index that named them.
type Expanded = (Vec<PathBuf>, Option<(PathBuf, Index)>);

/// The files `p` stands for, and the index when `p` is (or holds) one.
fn expand(p: &Path) -> Result<Expanded> {
    let meta = std::fs::metadata(p).map_err(|e| Error::from_io(&e, "cannot open").with_path(p))?;
    if meta.is_dir() {
        let rd =
            std::fs::read_dir(p).map_err(|e| Error::from_io(&e, "cannot list").with_path(p))?;
        let mut shards = Vec::new();
        let mut indexes = Vec::new();
        for entry in rd {
            let entry = entry.map_err(|e| Error::from_io(&e, "cannot list").with_path(p))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            if name.ends_with(INDEX_SUFFIX) {
                indexes.push(entry.path());
            } else if name.ends_with(".safetensors") {
                shards.push(entry.path());
            }
        }
        return match indexes.len() {
            0 if shards.is_empty() => Err(Error::new(
                ErrorKind::NotFound,
                "directory has no *.safetensors files and no index",
            )
            .with_path(p)),
            0 => {
                shards.sort();
                Ok((shards, None))
            }
            1 => open_index(&indexes[0]),
            _ => Err(Error::new(
                ErrorKind::InvalidInput,
                format!("directory has {} index files; name the one to load", indexes.len()),
            )
            .with_path(p)),
        };
    }
    if p.to_string_lossy().ends_with(".json") {
        return open_index(p);
    }
    Ok((vec![p.to_path_buf()], None))
}

fn open_index(p: &Path) -> Result<Expanded> {
    let bytes =
        std::fs::read(p).map_err(|e| Error::from_io(&e, "cannot read index").with_path(p))?;
    let idx = parse_index(&bytes, Some(p))?;
    let dir = p.parent().unwrap_or(Path::new("."));
    let files = idx.files().iter().map(|f| dir.join(f)).collect();
    Ok((files, Some((p.to_path_buf(), idx))))
}
