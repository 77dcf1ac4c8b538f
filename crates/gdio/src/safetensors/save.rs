//! Saving tensors from GPU or host memory as a safetensors file or a sharded checkpoint with
//! its index.
//!
//! Each file is written under a temporary name in the destination folder and renamed to its
//! final name only when complete (and `fsync`ed when asked), so the final name never holds a
//! partial file: an error or a cancellation removes the temporary file and leaves whatever was
//! at the final name untouched. A sharded checkpoint is renamed into place only once every
//! shard and the index are complete. Tensor data goes through the driver's write path: device
//! memory is copied GPU → pinned bounce buffers → `pwrite` by the engine's write workers,
//! pipelined, so host memory is bounded by the bounce-buffer ring, not by the checkpoint;
//! tensors adjacent in memory (a loaded checkpoint) are written with one request, and writes
//! of tensors in separate GPU allocations overlap (up to `save_writes_in_flight` per file).

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::dtype::{byte_size, dtype_name, element_count, Dtype};
use super::header::METADATA_KEY;
use super::index::INDEX_SUFFIX;
use super::load::{Loaded, TensorView};
use super::plan::Target;
use crate::driver::Driver;
use crate::error::{Error, ErrorKind, Result};
use crate::file::{FileHandle, OpenOptions};
use crate::submit::IoHandle;
use crate::Op;

/// Where a tensor to save is.
#[derive(Debug, Clone, Copy)]
enum Data<'a> {
    Host(&'a [u8]),
    Device { ordinal: usize, addr: u64, len: u64 },
}

/// A tensor to save: name, type, shape and where its bytes are.
#[derive(Debug, Clone)]
pub struct SaveTensor<'a> {
    name: String,
    dtype: Dtype,
    shape: Vec<u64>,
    data: Data<'a>,
    /// The allocation the bytes belong to, when known (views of a load): only tensors of one
    /// allocation are written with one request.
    block: Option<u64>,
}

fn check_size(name: &str, dtype: Dtype, shape: &[u64], len: u64) -> Result<()> {
    let want = element_count(shape).and_then(|n| byte_size(dtype, n));
    if want != Some(len) {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "tensor {name:?}: shape {shape:?} of {} needs {} bytes, the data has {len}",
                dtype_name(dtype),
                want.map_or("an impossible number of".to_owned(), |w| w.to_string())
            ),
        ));
    }
    if name == METADATA_KEY || name.is_empty() {
        return Err(Error::new(ErrorKind::InvalidInput, format!("{name:?} is not a tensor name")));
    }
    Ok(())
}

impl<'a> SaveTensor<'a> {
    /// A tensor in host memory. The data length must match shape and dtype.
    pub fn host(name: &str, dtype: Dtype, shape: &[u64], data: &'a [u8]) -> Result<Self> {
        check_size(name, dtype, shape, data.len() as u64)?;
        Ok(SaveTensor {
            name: name.to_owned(),
            dtype,
            shape: shape.to_vec(),
            data: Data::Host(data),
            block: None,
        })
    }

    /// A tensor in memory of GPU `ordinal` at device address `addr`.
    ///
    /// # Safety
    /// `addr..addr+len` must be device memory of GPU `ordinal` that stays allocated and
    /// unchanged until [`save`] returns.
    pub unsafe fn device(
        name: &str,
        dtype: Dtype,
        shape: &[u64],
        ordinal: usize,
        addr: u64,
        len: u64,
    ) -> Result<Self> {
        check_size(name, dtype, shape, len)?;
        Ok(SaveTensor {
            name: name.to_owned(),
            dtype,
            shape: shape.to_vec(),
            data: Data::Device { ordinal, addr, len },
            block: None,
        })
    }

    /// A view of a finished load, under its own name.
    pub fn from_view(loaded: &'a Loaded, view: &TensorView) -> Result<Self> {
        let foreign = || {
            Error::new(
                ErrorKind::InvalidInput,
                format!("view of {:?} is not from this load", view.name),
            )
        };
        let alloc = loaded.allocations().get(view.allocation).ok_or_else(foreign)?;
        if alloc.addr() + view.offset != view.addr {
            return Err(foreign());
        }
        check_size(&view.name, view.dtype, &view.shape, view.len)?;
        let data = match view.target {
            Target::Host => Data::Host(loaded.host_bytes(view).ok_or_else(foreign)?),
            Target::Gpu(ordinal) => Data::Device { ordinal, addr: view.addr, len: view.len },
        };
        Ok(SaveTensor {
            name: view.name.clone(),
            dtype: view.dtype,
            shape: view.shape.clone(),
            data,
            block: Some(alloc.addr()),
        })
    }

    /// Name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Bytes of data.
    pub fn len(&self) -> u64 {
        match self.data {
            Data::Host(s) => s.len() as u64,
            Data::Device { len, .. } => len,
        }
    }

    /// True for a tensor without bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// How to save.
#[derive(Debug, Clone, Default)]
pub struct SaveOptions {
    /// `fsync` every file and the folder before returning, so the checkpoint survives a crash.
    pub fsync: bool,
    /// Split into shards of at most this many data bytes (a larger tensor gets a shard of its
    /// own) with a `*.safetensors.index.json`; 0 = one file.
    pub max_shard_size: u64,
    /// The `__metadata__` map of every file.
    pub metadata: BTreeMap<String, String>,
    /// Set to stop a save in progress (checked between write requests); the save then fails
    /// and leaves no file behind.
    pub cancel: Option<Arc<AtomicBool>>,
}

/// What a save wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    /// The safetensors files, in order.
    pub files: Vec<PathBuf>,
    /// The index file, for a sharded save.
    pub index: Option<PathBuf>,
    /// Bytes of tensor data written.
    pub data_bytes: u64,
    /// Bytes written in all, headers and index included.
    pub total_bytes: u64,
}

/// The header of a file holding `tensors` in this order; returns the padded JSON bytes.
pub fn build_header(
    tensors: &[SaveTensor<'_>],
    metadata: &BTreeMap<String, String>,
) -> Result<Vec<u8>> {
    let mut seen = std::collections::HashSet::new();
    let mut s = String::from("{");
    if !metadata.is_empty() {
        let m = serde_json::to_string(metadata)
            .map_err(|e| Error::new(ErrorKind::InvalidInput, format!("metadata: {e}")))?;
        let _ = write!(s, "\"{METADATA_KEY}\":{m}");
    }
    let mut off = 0u64;
    for t in tensors {
        if !seen.insert(t.name.as_str()) {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("tensor {:?} is given twice", t.name),
            ));
        }
        if s.len() > 1 {
            s.push(',');
        }
        let name = serde_json::to_string(&t.name)
            .map_err(|e| Error::new(ErrorKind::InvalidInput, format!("tensor name: {e}")))?;
        let shape: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
        let end = off + t.len();
        let _ = write!(
            s,
            "{name}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{off},{end}]}}",
            dtype_name(t.dtype),
            shape.join(",")
        );
        off = end;
    }
    s.push('}');
    let mut bytes = s.into_bytes();
    bytes.resize(bytes.len().next_multiple_of(8), b' ');
    Ok(bytes)
}

/// Saves `tensors` (in this order) to `path`, or with `max_shard_size` to shards named like
/// `model-00001-of-00003.safetensors` beside `path` plus `path` + `.index.json`.
///
/// A tensor name given twice is refused before anything is written. A sharded checkpoint is
/// written whole under temporary names first (every shard, then the index); only then are the
/// shards renamed into place and the index last, so an error or a cancellation while writing
/// leaves every final name as it was (a checkpoint already there stays whole and loadable).
/// Before the renames, the index of a checkpoint already there is removed: renames cut short
/// leave no index that maps a mix of old and new shards.
pub fn save(
    driver: &Driver,
    tensors: &[SaveTensor<'_>],
    path: impl AsRef<Path>,
    options: &SaveOptions,
) -> Result<Saved> {
    let path = path.as_ref();
    let mut seen = std::collections::HashSet::with_capacity(tensors.len());
    if let Some(t) = tensors.iter().find(|t| !seen.insert(t.name.as_str())) {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("tensor {:?} is given twice", t.name),
        )
        .with_path(path));
    }
    let shards = split(tensors, options.max_shard_size);
    if shards.len() <= 1 && options.max_shard_size == 0 {
        let (tmp, data, total) = write_file(driver, tensors, path, options)?;
        tmp.commit(options.fsync)?;
        return Ok(Saved {
            files: vec![path.to_path_buf()],
            index: None,
            data_bytes: data,
            total_bytes: total,
        });
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let stem = file_name.strip_suffix(".safetensors").unwrap_or(&file_name).to_owned();
    let n = shards.len();
    // Temporary files written so far: dropped (removed) on any error below.
    let mut written: Vec<TempFile> = Vec::with_capacity(n + 1);
    let mut weight_map = BTreeMap::new();
    let (mut data_bytes, mut total_bytes) = (0, 0);
    let names: Vec<String> =
        (0..n).map(|i| format!("{stem}-{:05}-of-{n:05}.safetensors", i + 1)).collect();
    for (i, (tmp, d, t)) in
        write_shards(driver, tensors, &shards, &names, dir, options)?.into_iter().enumerate()
    {
        written.push(tmp);
        data_bytes += d;
        total_bytes += t;
        for t in &tensors[shards[i].clone()] {
            weight_map.insert(t.name.clone(), names[i].clone());
        }
    }
    let index = serde_json::json!({
        "metadata": { "total_size": data_bytes },
        "weight_map": weight_map,
    });
    let index_path = dir.join(format!("{stem}{INDEX_SUFFIX}"));
    let bytes = serde_json::to_vec_pretty(&index)
        .map_err(|e| Error::new(ErrorKind::Io, format!("index: {e}")))?;
    written.push(TempFile::write(&index_path, options.fsync, |fh| {
        driver.write(fh, 0, &bytes, 0, bytes.len())?;
        Ok(())
    })?);
    total_bytes += bytes.len() as u64;
    // Everything is on disk under temporary names: into place, the index last. A checkpoint
    // already there loses its index first: were the renames cut short (a crash, a rename that
    // fails), its index would otherwise map a mix of old and new shards of the same names
    // and load without a word; without one, loading by index fails until a save completes.
    retire_index(&index_path, options.fsync)?;
    let files = written[..n].iter().map(|t| t.path.clone()).collect();
    for tmp in written {
        tmp.commit(options.fsync)?;
    }
    Ok(Saved { files, index: Some(index_path), data_bytes, total_bytes })
}

/// Writes every shard under its temporary name, up to `save_files_in_flight` at once (each on
/// a scoped thread of its own), and returns them in shard order. After a failure no further
/// shard is started, and the first error (in shard order) is returned; the temporary files
/// already written are then dropped, which removes them.
fn write_shards(
    driver: &Driver,
    tensors: &[SaveTensor<'_>],
    shards: &[std::ops::Range<usize>],
    names: &[String],
    dir: &Path,
    options: &SaveOptions,
) -> Result<Vec<Written>> {
    let one =
        |i: usize| write_file(driver, &tensors[shards[i].clone()], &dir.join(&names[i]), options);
    let at_once = driver.config().save_files_in_flight.clamp(1, shards.len().max(1));
    if at_once == 1 {
        return (0..shards.len()).map(one).collect();
    }
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let slots: Vec<Mutex<Option<Result<Written>>>> =
        shards.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..at_once {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= shards.len() || failed.load(Ordering::Relaxed) {
                    break;
                }
                let r = one(i);
                if r.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                *slots[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
            });
        }
    });
    let mut out = Vec::with_capacity(shards.len());
    let mut first_error = None;
    for slot in slots {
        match slot.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(Ok(file)) => out.push(file),
            Some(Err(e)) => {
                first_error.get_or_insert(e);
            }
            // Not started: a shard after it failed.
            None => {}
        }
    }
    match first_error {
        Some(e) => Err(e),
        None if out.len() == shards.len() => Ok(out),
        None => Err(Error::new(ErrorKind::Io, "a shard was not written").with_path(dir)),
    }
}

/// Consecutive runs of tensors of at most `max` data bytes each (0 = one run).
fn split(tensors: &[SaveTensor<'_>], max: u64) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    if max == 0 {
        out.push(0..tensors.len());
        return out;
    }
    let (mut start, mut size) = (0, 0u64);
    for (i, t) in tensors.iter().enumerate() {
        if i > start && size + t.len() > max {
            out.push(start..i);
            start = i;
            size = 0;
        }
        size += t.len();
    }
    if start < tensors.len() || out.is_empty() {
        out.push(start..tensors.len());
    }
    out
}

fn temp_name(path: &Path) -> PathBuf {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let n = N.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(".{name}.gdio-tmp-{}-{n}", std::process::id()))
}

/// Removes the index at `path` if there is one (with `fsync`, durably) before a sharded save
/// renames its shards over the checkpoint that index describes.
fn retire_index(path: &Path, fsync: bool) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(Error::from_io(&e, "cannot remove the index of the checkpoint it replaces")
                .with_path(path))
        }
    }
    if fsync {
        sync_folder_of(path)?;
    }
    Ok(())
}

/// `fsync`s the folder holding `path`, so that a rename or removal there survives a crash.
fn sync_folder_of(path: &Path) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::from_io(&e, "cannot fsync the folder").with_path(dir))?;
    }
    Ok(())
}

/// A complete file under a temporary name in its destination folder, waiting to be renamed to
/// its final name ([`TempFile::commit`]); dropped uncommitted, it is removed.
struct TempFile {
    tmp: PathBuf,
    /// The final name.
    path: PathBuf,
    committed: bool,
}

impl TempFile {
    /// Writes a file through `fill` under a temporary name beside `path` (`fsync`ed when
    /// asked); the temporary file is removed if `fill` fails.
    fn write(
        path: &Path,
        fsync: bool,
        fill: impl FnOnce(&Arc<FileHandle>) -> Result<()>,
    ) -> Result<Self> {
        let t = TempFile { tmp: temp_name(path), path: path.to_path_buf(), committed: false };
        let fh = Arc::new(FileHandle::open_with(
            &t.tmp,
            OpenOptions::new().read(true).write(true).create(true).truncate(true),
        )?);
        fill(&fh)?;
        if fsync {
            fh.sync_all()?;
        }
        Ok(t)
    }

    /// Renames the file to its final name (and with `fsync` makes the rename durable).
    fn commit(mut self, fsync: bool) -> Result<()> {
        std::fs::rename(&self.tmp, &self.path).map_err(|e| {
            Error::from_io(&e, format!("cannot rename {} to its final name", self.tmp.display()))
                .with_path(&self.path)
        })?;
        self.committed = true;
        if fsync {
            sync_folder_of(&self.path)?;
        }
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// A file written under its temporary name, with its data bytes and total bytes.
type Written = (TempFile, u64, u64);

/// Writes one safetensors file under a temporary name beside `path`; returns it with (data
/// bytes, total bytes).
fn write_file(
    driver: &Driver,
    tensors: &[SaveTensor<'_>],
    path: &Path,
    options: &SaveOptions,
) -> Result<Written> {
    let header = build_header(tensors, &options.metadata)?;
    let data_start = 8 + header.len() as u64;
    let mut data_bytes = 0u64;
    let tmp = TempFile::write(path, options.fsync, |fh| {
        let mut head = Vec::with_capacity(8 + header.len());
        head.extend_from_slice(&(header.len() as u64).to_le_bytes());
        head.extend_from_slice(&header);
        driver.write(fh, 0, &head, 0, head.len())?;
        let mut off = data_start;
        let mut i = 0;
        // Writes of device runs in flight, oldest first. Dropping one (an early return) waits
        // for it, so no write outlives the borrowed tensors or the temporary file.
        let limit = driver.config().save_writes_in_flight.max(1);
        let mut in_flight: VecDeque<(IoHandle<()>, usize)> = VecDeque::new();
        let finish = |(h, n): (IoHandle<()>, usize)| -> Result<()> {
            let (r, ()) = h.wait();
            match r? {
                done if done == n => Ok(()),
                done => Err(Error::new(
                    ErrorKind::Io,
                    format!("a tensor write stored {done} of {n} bytes"),
                )
                .with_path(path)),
            }
        };
        while i < tensors.len() {
            if options.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
                return Err(Error::new(ErrorKind::Io, "save cancelled").with_path(path));
            }
            // Coalesce tensors adjacent in the same memory into one request.
            let mut j = i + 1;
            let mut len = tensors[i].len();
            while j < tensors.len() {
                let same_block =
                    tensors[j].block.is_some() && tensors[j].block == tensors[j - 1].block;
                let adjacent = same_block
                    && match (tensors[j - 1].data, tensors[j].data) {
                        (Data::Host(a), Data::Host(b)) => {
                            a.as_ptr() as u64 + a.len() as u64 == b.as_ptr() as u64
                        }
                        (
                            Data::Device { ordinal: o1, addr: a1, len: l1 },
                            Data::Device { ordinal: o2, addr: a2, .. },
                        ) => o1 == o2 && a1 + l1 == a2,
                        _ => false,
                    };
                if !adjacent {
                    break;
                }
                len += tensors[j].len();
                j += 1;
            }
            let n = usize::try_from(len)
                .map_err(|_| Error::new(ErrorKind::InvalidInput, "tensor too large"))?;
            if n > 0 {
                match tensors[i].data {
                    // SAFETY: the slices are live borrows and adjacent (checked above), so the
                    // run is one readable range of `n` bytes.
                    Data::Host(s) => unsafe { driver.write_host_ptr(fh, off, s.as_ptr(), n)? },
                    Data::Device { addr, .. } if limit > 1 => {
                        while in_flight.len() >= limit {
                            in_flight.pop_front().map_or(Ok(()), finish)?;
                        }
                        // SAFETY: the caller of `SaveTensor::device` promised the ranges are
                        // live device memory for the whole save, and adjacent ranges of one
                        // GPU form one range; the handle is waited for (or dropped, which
                        // waits) before this function returns.
                        let h = unsafe { driver.submit_device_ptr(Op::Write, fh, off, addr, n)? };
                        in_flight.push_back((h, n));
                        0
                    }
                    // SAFETY: as above; the write is over when the call returns.
                    Data::Device { addr, .. } => unsafe {
                        driver.write_device_ptr(fh, off, addr, n)?
                    },
                };
            }
            off += len;
            data_bytes += len;
            i = j;
        }
        while let Some(w) = in_flight.pop_front() {
            finish(w)?;
        }
        Ok(())
    })?;
    Ok((tmp, data_bytes, data_start + data_bytes))
}
