//! The native half of `gdio.safetensors`: a checkpoint ([`Checkpoint`]), loads of all, some or
//! row slices of its tensors into host or GPU memory (one gdio allocation per file and target),
//! a completion-order stream of tensors, and save from host buffers.
//!
//! Tensors leave as [`Tensor`] objects with `__dlpack__`/`__dlpack_device__`: the capsule's
//! manager context holds an `Arc` of what owns the memory (the `Loaded` or the load stream), so
//! the allocation lives while any framework tensor made from it does. Dtypes DLPack consumers
//! cannot take (FP8, FP6, FP4, E8M0) are exported only through [`Tensor::raw`] (flat `uint8`).

use std::any::Any;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use gdio::safetensors::{
    self as st, dtype_from_name, dtype_name, Dtype, LoadOptions, LoadStream, Plan, SaveOptions,
    SaveTensor, Target, TensorView,
};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyBufferError, PyKeyError, PyStopIteration, PyValueError};
use pyo3::prelude::*;

use crate::buffer::{acquire, Access};
use crate::dlpack::{DlDataType, DlDevice, DlManagedTensor, DlTensor, DEVICE_CPU, DEVICE_CUDA};
use crate::error::to_py;
use crate::file::runtime;
use crate::io::{check_size, Dir, Part};
use crate::sync_point::StreamWait;

/// What keeps a tensor's memory alive (a `Loaded` or a `Mutex<LoadStream>`).
type Owner = Arc<dyn Any + Send + Sync>;

fn target_of(gpu: Option<usize>) -> Target {
    gpu.map_or(Target::Host, Target::Gpu)
}

/// A safetensors checkpoint: one file, a list of shards, a directory or an index.
#[pyclass(module = "gdio._native", frozen)]
pub struct Checkpoint {
    ckpt: Arc<st::Checkpoint>,
}

#[pymethods]
impl Checkpoint {
    /// Opens `paths` (one path, or the shards of one checkpoint) and validates every header.
    #[new]
    fn new(py: Python<'_>, paths: Vec<PathBuf>) -> PyResult<Self> {
        let ckpt = py
            .detach(|| {
                if paths.len() == 1 {
                    st::Checkpoint::open(&paths[0])
                } else {
                    st::Checkpoint::open_all(&paths)
                }
            })
            .map_err(to_py)?;
        Ok(Checkpoint { ckpt: Arc::new(ckpt) })
    }

    /// Tensor names, in file order.
    fn keys(&self) -> Vec<String> {
        self.ckpt.keys().map(str::to_owned).collect()
    }

    /// The `__metadata__` of every file, merged.
    fn metadata(&self) -> BTreeMap<String, String> {
        self.ckpt.metadata()
    }

    /// `(dtype, shape)` of tensor `name`.
    fn info(&self, name: &str) -> PyResult<(String, Vec<u64>)> {
        let info = self
            .ckpt
            .info(name)
            .ok_or_else(|| PyKeyError::new_err(format!("no tensor named {name:?}")))?;
        Ok((dtype_name(info.dtype), info.shape.clone()))
    }

    /// Every tensor as `(name, file, data_begin, data_end, dtype, shape)` (offsets inside its
    /// file's data section), and each file's data-section length: what a group of ranks
    /// needs to split the bytes between them.
    #[allow(clippy::type_complexity)]
    fn layout(&self) -> (Vec<(String, usize, u64, u64, String, Vec<u64>)>, Vec<u64>) {
        let tensors = self
            .ckpt
            .tensors()
            .map(|(loc, info)| {
                let (b, e) = info.data_offsets;
                (info.name.clone(), loc.file, b, e, dtype_name(info.dtype), info.shape.clone())
            })
            .collect();
        let files = self.ckpt.files().iter().map(|f| f.header.data_len).collect();
        (tensors, files)
    }

    /// Each file's path and the file offset where its data section starts (in `layout()`'s
    /// file order): where a rank reads its share of the bytes from.
    fn data_files(&self) -> Vec<(PathBuf, u64)> {
        self.ckpt.files().iter().map(|f| (f.path.clone(), f.header.data_start)).collect()
    }

    /// A descriptor of its own (the caller closes it) for the file the checkpoint reads file
    /// `file` through: what a CPU load maps, so that it maps the very file its header came
    /// from even if the path names another one by now.
    fn dup_fd(&self, py: Python<'_>, file: usize) -> PyResult<i32> {
        use std::os::fd::IntoRawFd;
        let ckpt = self.ckpt.clone();
        let handle = py.detach(|| ckpt.file_handle(file)).map_err(to_py)?;
        let fd = handle.buffered_fd().try_clone_to_owned().map_err(|e| {
            to_py(
                gdio::Error::from_io(&e, "duplicating the checkpoint's descriptor")
                    .with_path(handle.path()),
            )
        })?;
        Ok(fd.into_raw_fd())
    }

    /// Reads `len` bytes at `offset` of file `file`'s data section into `buf` (any buffer gdio
    /// takes: a torch tensor, CuPy, NumPy, host bytes) through the handle the checkpoint's
    /// loads read through, and returns the bytes read (fewer only where the file was cut
    /// short since its header was read). A range outside the data section is a `GdioError`
    /// and nothing is read.
    fn read_into(
        &self,
        py: Python<'_>,
        file: usize,
        offset: u64,
        buf: &Bound<'_, PyAny>,
        len: usize,
    ) -> PyResult<usize> {
        let header = self.ckpt.files().get(file).ok_or_else(|| {
            PyValueError::new_err(format!(
                "no file {file} in this checkpoint of {} files",
                self.ckpt.files().len()
            ))
        })?;
        let (path, data_start, data_len) =
            (header.path.clone(), header.header.data_start, header.header.data_len);
        if offset.checked_add(len as u64).is_none_or(|end| end > data_len) {
            return Err(to_py(
                gdio::Error::new(
                    gdio::ErrorKind::InvalidInput,
                    format!(
                        "{len} bytes at offset {offset} run past the data section ({data_len} \
                         bytes)"
                    ),
                )
                .with_path(&path)
                .with_range(data_start + offset, len as u64),
            ));
        }
        let rt = runtime(py)?;
        let ckpt = self.ckpt.clone();
        let handle = py.detach(|| ckpt.file_handle(file)).map_err(to_py)?;
        let b = acquire(buf, Access::Fill, &rt.driver)?;
        check_size(&handle, b.len, 0, len, data_start + offset).map_err(to_py)?;
        let part = Part {
            dir: Dir::Read,
            addr: b.addr,
            len,
            memory: b.memory,
            file_offset: data_start + offset,
            sync: StreamWait::made_now(b.sync),
            tail: false,
        };
        let r = py.detach(|| part.run(&rt.driver, &handle));
        drop(b);
        r.map_err(to_py)
    }

    /// Loads tensors `names` (all when `None`) to host memory or GPU `gpu`; returns them in
    /// the order they landed.
    #[pyo3(signature = (names=None, gpu=None))]
    fn load(
        &self,
        py: Python<'_>,
        names: Option<Vec<String>>,
        gpu: Option<usize>,
    ) -> PyResult<Vec<Tensor>> {
        let plan = self.plan(names.as_deref(), gpu)?;
        let rt = runtime(py)?;
        let ckpt = self.ckpt.clone();
        // A large load stops at Ctrl-C (before its next read request) and raises
        // `KeyboardInterrupt`; its memory is freed.
        let cancel = Arc::new(AtomicBool::new(false));
        let options = LoadOptions { cancel: Some(cancel.clone()), ..LoadOptions::default() };
        let loaded = crate::interrupt::cancellable_if_large(py, plan.bytes(), &cancel, || {
            st::load(&rt.driver, &ckpt, &plan, &options)
        })?
        .map_err(to_py)?;
        let loaded = Arc::new(loaded);
        let owner: Owner = loaded.clone();
        Ok(loaded.views().iter().map(|v| Tensor::from_view(v, &owner)).collect())
    }

    /// Loads rows `start..stop` (along dimension 0) of tensor `name`.
    #[pyo3(signature = (name, start, stop, gpu=None))]
    fn load_rows(
        &self,
        py: Python<'_>,
        name: &str,
        start: u64,
        stop: u64,
        gpu: Option<usize>,
    ) -> PyResult<Tensor> {
        let mut plan = Plan::new();
        plan.add_rows(&self.ckpt, name, target_of(gpu), start..stop).map_err(to_py)?;
        let rt = runtime(py)?;
        let ckpt = self.ckpt.clone();
        let loaded = py
            .detach(|| st::load(&rt.driver, &ckpt, &plan, &LoadOptions::default()))
            .map_err(to_py)?;
        let loaded = Arc::new(loaded);
        let owner: Owner = loaded.clone();
        let view = loaded
            .views()
            .first()
            .ok_or_else(|| PyValueError::new_err(format!("no rows of {name:?} were loaded")))?;
        Ok(Tensor::from_view(view, &owner))
    }

    /// Starts loading tensors `names` (all when `None`); iterate the result for the tensors
    /// in completion order.
    #[pyo3(signature = (names=None, gpu=None))]
    fn stream(
        &self,
        py: Python<'_>,
        names: Option<Vec<String>>,
        gpu: Option<usize>,
    ) -> PyResult<Stream> {
        let plan = self.plan(names.as_deref(), gpu)?;
        let rt = runtime(py)?;
        let ckpt = self.ckpt.clone();
        let stream = py
            .detach(|| st::load_stream(&rt.driver, &ckpt, &plan, &LoadOptions::default()))
            .map_err(to_py)?;
        Ok(Stream { stream: Arc::new(Mutex::new(stream)) })
    }
}

impl Checkpoint {
    fn plan(&self, names: Option<&[String]>, gpu: Option<usize>) -> PyResult<Plan> {
        let target = target_of(gpu);
        match names {
            None => Ok(Plan::all(&self.ckpt, &[target])),
            Some(names) => {
                let mut plan = Plan::new();
                for n in names {
                    plan.add(&self.ckpt, n, target).map_err(to_py)?;
                }
                Ok(plan)
            }
        }
    }
}

/// Tensors of a load in completion order.
#[pyclass(module = "gdio._native", frozen)]
pub struct Stream {
    stream: Arc<Mutex<LoadStream>>,
}

#[pymethods]
impl Stream {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Tensor> {
        let stream = &self.stream;
        let next = py.detach(|| stream.lock().unwrap_or_else(|p| p.into_inner()).next());
        match next {
            Some(Ok(view)) => {
                let owner: Owner = self.stream.clone();
                Ok(Tensor::from_view(&view, &owner))
            }
            Some(Err(e)) => Err(to_py(e)),
            None => Err(PyStopIteration::new_err(())),
        }
    }
}

/// One loaded tensor in gdio's memory, handed to frameworks through DLPack.
#[pyclass(module = "gdio._native", frozen)]
pub struct Tensor {
    owner: Owner,
    name: String,
    dtype: Dtype,
    shape: Vec<u64>,
    addr: u64,
    len: u64,
    gpu: Option<usize>,
    raw: bool,
}

impl Tensor {
    fn from_view(v: &TensorView, owner: &Owner) -> Tensor {
        Tensor {
            owner: owner.clone(),
            name: v.name.clone(),
            dtype: v.dtype,
            shape: v.shape.clone(),
            addr: v.addr,
            len: v.len,
            gpu: v.target.gpu(),
            raw: false,
        }
    }

    fn device(&self) -> (i32, i32) {
        match self.gpu {
            Some(n) => (DEVICE_CUDA, n as i32),
            None => (DEVICE_CPU, 0),
        }
    }

    /// The DLPack type and shape this tensor exports as.
    fn export_type(&self) -> PyResult<(DlDataType, Vec<i64>)> {
        let dims = |s: &[u64]| s.iter().map(|&d| d as i64).collect::<Vec<_>>();
        if self.raw {
            return Ok((DlDataType { code: 1, bits: 8, lanes: 1 }, vec![self.len as i64]));
        }
        let (code, bits) = dlpack_code(self.dtype).ok_or_else(|| {
            PyBufferError::new_err(format!(
                "DLPack has no type for {} (tensor {:?}): use raw() and view the bytes",
                dtype_name(self.dtype),
                self.name
            ))
        })?;
        Ok((DlDataType { code, bits, lanes: 1 }, dims(&self.shape)))
    }
}

/// DLPack `(code, bits)` of the dtypes DLPack consumers take.
fn dlpack_code(d: Dtype) -> Option<(u8, u8)> {
    const INT: u8 = 0;
    const UINT: u8 = 1;
    const FLOAT: u8 = 2;
    const BFLOAT: u8 = 4;
    const COMPLEX: u8 = 5;
    const BOOL: u8 = 6;
    Some(match d {
        Dtype::BOOL => (BOOL, 8),
        Dtype::U8 => (UINT, 8),
        Dtype::I8 => (INT, 8),
        Dtype::I16 => (INT, 16),
        Dtype::U16 => (UINT, 16),
        Dtype::F16 => (FLOAT, 16),
        Dtype::BF16 => (BFLOAT, 16),
        Dtype::I32 => (INT, 32),
        Dtype::U32 => (UINT, 32),
        Dtype::F32 => (FLOAT, 32),
        Dtype::C64 => (COMPLEX, 64),
        Dtype::F64 => (FLOAT, 64),
        Dtype::I64 => (INT, 64),
        Dtype::U64 => (UINT, 64),
        _ => return None,
    })
}

/// What a DLPack capsule owns: the memory's owner and the shape array.
struct ExportCtx {
    _owner: Owner,
    _shape: Vec<i64>,
}

unsafe extern "C" fn delete_managed(m: *mut DlManagedTensor) {
    if m.is_null() {
        return;
    }
    // SAFETY: `m` came from `Box::into_raw` in `__dlpack__`, and DLPack calls the deleter once.
    let m = unsafe { Box::from_raw(m) };
    // SAFETY: `manager_ctx` came from `Box::into_raw(Box<ExportCtx>)` in `__dlpack__`.
    drop(unsafe { Box::from_raw(m.manager_ctx as *mut ExportCtx) });
}

const DLTENSOR: &std::ffi::CStr = c"dltensor";

unsafe extern "C" fn destroy_capsule(cap: *mut pyo3::ffi::PyObject) {
    // SAFETY: called by Python with the capsule; a consumed capsule was renamed, so only an
    // unconsumed one (still named `dltensor`) has its tensor deleted here.
    unsafe {
        if pyo3::ffi::PyCapsule_IsValid(cap, DLTENSOR.as_ptr()) == 1 {
            let p = pyo3::ffi::PyCapsule_GetPointer(cap, DLTENSOR.as_ptr()) as *mut DlManagedTensor;
            delete_managed(p);
        }
    }
}

#[pymethods]
impl Tensor {
    /// The tensor's name in the checkpoint.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The safetensors dtype name (`BF16`).
    #[getter]
    fn dtype(&self) -> String {
        dtype_name(self.dtype)
    }

    /// The shape.
    #[getter]
    fn shape(&self) -> Vec<u64> {
        self.shape.clone()
    }

    /// Bytes.
    #[getter]
    fn nbytes(&self) -> u64 {
        self.len
    }

    /// The same memory as a flat `uint8` tensor (for dtypes DLPack has no code for).
    fn raw(&self) -> Tensor {
        Tensor {
            owner: self.owner.clone(),
            name: self.name.clone(),
            dtype: Dtype::U8,
            shape: vec![self.len],
            addr: self.addr,
            len: self.len,
            gpu: self.gpu,
            raw: true,
        }
    }

    fn __dlpack_device__(&self) -> (i32, i32) {
        self.device()
    }

    /// A legacy `dltensor` capsule. The data is complete when the load returns, so `stream`
    /// needs no wait.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<Bound<'py, PyAny>>,
        max_version: Option<Bound<'py, PyAny>>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = (stream, max_version);
        if let Some(d) = dl_device {
            if d != self.device() {
                return Err(PyBufferError::new_err(format!(
                    "tensor {:?} is on DLPack device {:?}, not {d:?}",
                    self.name,
                    self.device()
                )));
            }
        }
        if copy == Some(true) {
            return Err(PyBufferError::new_err("gdio tensors export without copying"));
        }
        let (dtype, shape) = self.export_type()?;
        let mut ctx = Box::new(ExportCtx { _owner: self.owner.clone(), _shape: shape });
        let (device_type, device_id) = self.device();
        let managed = Box::new(DlManagedTensor {
            dl_tensor: DlTensor {
                data: self.addr as *mut c_void,
                device: DlDevice { device_type, device_id },
                ndim: ctx._shape.len() as i32,
                dtype,
                shape: ctx._shape.as_mut_ptr(),
                strides: std::ptr::null(),
                byte_offset: 0,
            },
            manager_ctx: Box::into_raw(ctx) as *mut c_void,
            deleter: Some(delete_managed),
        });
        let managed = Box::into_raw(managed);
        // SAFETY: `managed` is a valid heap DLManagedTensor; the capsule's destructor frees it
        // unless a consumer renamed (consumed) the capsule, which then calls the deleter.
        let cap = unsafe {
            pyo3::ffi::PyCapsule_New(
                managed as *mut c_void,
                DLTENSOR.as_ptr(),
                Some(destroy_capsule),
            )
        };
        if cap.is_null() {
            // SAFETY: the capsule was not made, so nothing else owns `managed`.
            unsafe { delete_managed(managed) };
        }
        // SAFETY: `cap` is a new reference or null with a Python error set.
        unsafe { Bound::from_owned_ptr_or_err(py, cap) }
    }

    fn __repr__(&self) -> String {
        format!(
            "gdio.safetensors tensor {:?} {} {:?} on {}",
            self.name,
            dtype_name(self.dtype),
            self.shape,
            target_of(self.gpu)
        )
    }
}

/// Where one tensor to save is: a host buffer (held until the save returns), or device memory
/// `(ordinal, address, length)` that the caller keeps alive and unchanged meanwhile.
enum Source {
    Host(PyBuffer<u8>),
    Device { ordinal: usize, addr: u64, len: u64 },
}

/// Saves tensors `(name, dtype, shape, data)` to `path` with `metadata`, through gdio
/// (temporary name, then rename). `data` is a C-contiguous host buffer (any format), or a tuple
/// `(ordinal, device_address, nbytes)` of GPU memory, written GPU → pinned bounce buffers →
/// file by the engine (host memory bounded by the bounce buffers, not by the checkpoint); the
/// caller keeps that memory alive and its producers finished until this returns.
#[pyfunction]
#[pyo3(signature = (path, tensors, metadata=None))]
pub fn save_file(
    py: Python<'_>,
    path: PathBuf,
    tensors: Vec<(String, String, Vec<u64>, Bound<'_, PyAny>)>,
    metadata: Option<BTreeMap<String, String>>,
) -> PyResult<()> {
    let mut parts = Vec::with_capacity(tensors.len());
    for (name, dtype, shape, obj) in tensors {
        let d = dtype_from_name(&dtype)
            .ok_or_else(|| PyValueError::new_err(format!("unknown dtype {dtype:?} of {name:?}")))?;
        let src = if let Ok((ordinal, addr, len)) = obj.extract::<(usize, u64, u64)>() {
            if addr == 0 && len > 0 {
                return Err(PyValueError::new_err(format!("tensor {name:?}: null device address")));
            }
            Source::Device { ordinal, addr, len }
        } else {
            let buf = PyBuffer::<u8>::get(&obj)?;
            if !buf.is_c_contiguous() {
                return Err(PyBufferError::new_err(format!("tensor {name:?} is not contiguous")));
            }
            Source::Host(buf)
        };
        parts.push((name, d, shape, src));
    }
    let rt = runtime(py)?;
    let cancel = Arc::new(AtomicBool::new(false));
    let options = SaveOptions {
        metadata: metadata.unwrap_or_default(),
        cancel: Some(cancel.clone()),
        ..SaveOptions::default()
    };
    // Ctrl-C stops a large save at its next write; it removes its temporary file and
    // `KeyboardInterrupt` is raised here, with nothing under `path`.
    let bytes = parts
        .iter()
        .map(|(.., src)| match src {
            Source::Host(buf) => buf.len_bytes() as u64,
            Source::Device { len, .. } => *len,
        })
        .sum();
    crate::interrupt::cancellable_if_large(py, bytes, &cancel, || {
        let list = parts
            .iter()
            .map(|(name, d, shape, src)| match src {
                Source::Host(buf) => {
                    let len = buf.len_bytes();
                    let data: &[u8] = if len == 0 {
                        &[]
                    } else {
                        // SAFETY: the buffer (held in `parts`) exports `len` readable bytes at
                        // its pointer and stays valid until it is released after this closure.
                        unsafe { std::slice::from_raw_parts(buf.buf_ptr() as *const u8, len) }
                    };
                    SaveTensor::host(name, *d, shape, data)
                }
                // SAFETY: the caller promised the range is live device memory of `ordinal`,
                // unchanged until this call returns (the Python tensors are held by the
                // caller's dict, and their streams synchronized); the driver refuses the
                // range if it is not device memory.
                Source::Device { ordinal, addr, len } => unsafe {
                    SaveTensor::device(name, *d, shape, *ordinal, *addr, *len)
                },
            })
            .collect::<gdio::Result<Vec<_>>>()?;
        st::save(&rt.driver, &list, &path, &options).map(|_| ())
    })?
    .map_err(to_py)
}
