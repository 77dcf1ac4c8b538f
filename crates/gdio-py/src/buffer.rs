//! Turning a Python object into memory gdio can read into or write from: DLPack first (torch,
//! CuPy, JAX, NumPy), then the CUDA Array Interface (honouring its `stream`), then the buffer
//! protocol for host memory. The objects that keep the memory alive travel with the I/O.
//!
//! Two shortcuts come first, for the per-call cost of many small I/Os; each gives what the
//! general route would give for that object: types whose memory is host memory behind the
//! buffer protocol by definition (exact `bytearray`, `bytes`, `memoryview`, `numpy.ndarray`)
//! go straight to the buffer protocol, and a plain torch tensor is read from its attributes
//! (`torch.rs`) instead of a DLPack capsule.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyMemoryView, PyType};

use gdio::{Driver, MemoryKind};

use crate::dlpack;
use crate::stream;

/// Where the memory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Memory {
    /// Host memory (pageable or pinned).
    Host,
    /// Memory of GPU `ordinal`.
    Device(usize),
    /// Let the GPU driver classify it (managed memory).
    Any,
}

/// What must outlive the I/O: Python objects (a capsule, the producer, a tensor's storage), or a
/// buffer-protocol export (which holds its object, and keeps a `bytearray` from resizing).
/// Dropped with the GIL it lets go at once; without it (a worker finishing a future nobody
/// holds any more) PyO3 queues the objects' release and an export waits for the next gdio call
/// (see [`Export`]): a worker never waits for the GIL.
#[allow(dead_code)] // held, never read
pub enum Keepalive {
    /// Python objects.
    Objects(Vec<Py<PyAny>>),
    /// A buffer-protocol export.
    Export(Export),
    /// Several (a vectored I/O).
    Many(Vec<Keepalive>),
}

/// A buffer-protocol export, released where it is dropped, except on a future worker (which
/// runs without the GIL): there it is queued and released by the next [`acquire`] (which runs
/// with the GIL), so a worker never waits for the GIL.
pub struct Export(Option<RawExport>);

/// One export of an object's buffer (`PyObject_GetBuffer`), released once, with the GIL.
pub struct RawExport(Box<ffi::Py_buffer>);

// SAFETY: the `Py_buffer` is only read on the thread that took it, with the GIL (`get`), and
// released once with the GIL (`drop`); the memory it points to is the exporter's, kept alive by
// the export itself, whichever thread holds this value in between.
unsafe impl Send for RawExport {}

impl RawExport {
    /// Exports `obj`'s buffer with `flags` (the exporter's error when it cannot).
    fn get(obj: &Bound<'_, PyAny>, flags: std::ffi::c_int) -> PyResult<RawExport> {
        let mut view = Box::<ffi::Py_buffer>::new_uninit();
        // SAFETY: `obj` is live and `view` is storage for one Py_buffer, filled on success; the
        // box keeps its address (exporters may point `shape` into it) until it is released.
        let rc = unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), view.as_mut_ptr(), flags) };
        if rc != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        // SAFETY: PyObject_GetBuffer succeeded, so `view` is initialised.
        Ok(RawExport(unsafe { view.assume_init() }))
    }
}

impl Drop for RawExport {
    fn drop(&mut self) {
        // Attaching is a counter increment where the GIL is held already (every caller but a
        // worker, which queues the export instead: `Export`).
        let _ = Python::try_attach(|_| {
            // SAFETY: the view was filled by PyObject_GetBuffer in `get` and is released once,
            // here, with the GIL.
            unsafe { ffi::PyBuffer_Release(&mut *self.0) }
        });
    }
}

/// Exports dropped on a worker, to release with the GIL.
static DEFERRED: Mutex<Vec<RawExport>> = Mutex::new(Vec::new());
/// Whether `DEFERRED` may hold something (checked without the lock on every call).
static ANY_DEFERRED: AtomicBool = AtomicBool::new(false);

impl Drop for Export {
    fn drop(&mut self) {
        let Some(export) = self.0.take() else { return };
        if !crate::dispatch::on_worker() {
            // A Python thread, holding the GIL: released now.
            drop(export);
            return;
        }
        DEFERRED.lock().unwrap_or_else(|e| e.into_inner()).push(export);
        ANY_DEFERRED.store(true, Ordering::Release);
    }
}

/// Releases the exports dropped without the GIL (`py` proves this thread holds it).
fn release_deferred(_py: Python<'_>) {
    if !ANY_DEFERRED.load(Ordering::Acquire) {
        return;
    }
    let exports = {
        let mut d = DEFERRED.lock().unwrap_or_else(|e| e.into_inner());
        ANY_DEFERRED.store(false, Ordering::Release);
        std::mem::take(&mut *d)
    };
    drop(exports);
}

impl Keepalive {
    /// A keepalive holding `objects`.
    pub fn of(objects: Vec<Py<PyAny>>) -> Keepalive {
        Keepalive::Objects(objects)
    }

    /// One keepalive holding all of `parts`.
    pub fn join(parts: Vec<Keepalive>) -> Keepalive {
        Keepalive::Many(parts)
    }

    /// Lets go of everything now, on any thread (`_py`: this thread holds the GIL).
    pub fn release(self, _py: Python<'_>) {
        match self {
            Keepalive::Objects(o) => drop(o),
            Keepalive::Export(mut e) => drop(e.0.take()),
            Keepalive::Many(parts) => parts.into_iter().for_each(|k| k.release(_py)),
        }
    }
}

/// Memory taken from a Python object for one I/O.
pub struct IoBuffer {
    /// First byte.
    pub addr: u64,
    /// Bytes.
    pub len: usize,
    /// Where the memory is.
    pub memory: Memory,
    /// A CUDA stream `(ordinal, handle)` whose earlier work must finish before the I/O.
    pub sync: Option<(usize, u64)>,
    /// What keeps the memory alive.
    pub keep: Keepalive,
}

/// What the I/O does to the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The file is read into the buffer.
    Fill,
    /// The buffer is written to the file.
    Drain,
}

/// `module.attr` when `module` is already imported (`sys.modules`); never imports it.
pub fn loaded_attr<'py>(py: Python<'py>, module: &str, attr: &str) -> Option<Bound<'py, PyAny>> {
    let name = pyo3::types::PyString::new(py, module);
    // SAFETY: `name` is a live str; PyImport_GetModule returns a new reference, or NULL (with
    // an exception set only when the lookup itself failed, which `from_owned_ptr_or_opt`
    // leaves to be cleared below).
    let m = unsafe { Bound::from_owned_ptr_or_opt(py, ffi::PyImport_GetModule(name.as_ptr())) };
    let Some(m) = m else {
        drop(PyErr::take(py));
        return None;
    };
    m.getattr(attr).ok()
}

static NDARRAY: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// Whether `obj` is exactly a `numpy.ndarray` (host memory; NumPy imported by someone else).
fn is_ndarray(obj: &Bound<'_, PyAny>) -> bool {
    let py = obj.py();
    let t = match NDARRAY.get(py) {
        Some(t) => t,
        None => {
            let Some(t) = loaded_attr(py, "numpy", "ndarray").and_then(|t| t.cast_into().ok())
            else {
                return false;
            };
            let _ = NDARRAY.set(py, t.unbind());
            match NDARRAY.get(py) {
                Some(t) => t,
                None => return false,
            }
        }
    };
    obj.get_type().is(t)
}

/// Takes the memory of `obj`. For [`Access::Fill`], read-only memory is refused.
pub fn acquire(obj: &Bound<'_, PyAny>, access: Access, driver: &Driver) -> PyResult<IoBuffer> {
    release_deferred(obj.py());
    // Exact types only: a subclass may add `__dlpack__` or `__cuda_array_interface__`.
    if obj.is_exact_instance_of::<PyByteArray>()
        || obj.is_exact_instance_of::<PyMemoryView>()
        || obj.is_exact_instance_of::<PyBytes>()
        || is_ndarray(obj)
    {
        return from_buffer_protocol(obj, access);
    }
    if let Some(b) = crate::torch::acquire(obj) {
        return Ok(b);
    }
    acquire_general(obj, access, driver)
}

/// The general route: DLPack, then the CUDA Array Interface, then the buffer protocol.
fn acquire_general(obj: &Bound<'_, PyAny>, access: Access, driver: &Driver) -> PyResult<IoBuffer> {
    if access == Access::Fill && is_jax_array(obj) {
        // JAX's DLPack export carries no read-only flag, but every JAX array is immutable:
        // other arrays may share its buffer, and compiled code may have cached it.
        return Err(read_only_error(
            "JAX arrays are immutable; read into a NumPy, CuPy or torch buffer and convert it \
             with jax.numpy.asarray or jax.dlpack.from_dlpack, or load safetensors with \
             gdio.safetensors.safe_open(..., framework=\"jax\")",
        ));
    }
    if obj.hasattr("__dlpack_device__")? && obj.hasattr("__dlpack__")? {
        let (dev_type, _) = dlpack::device_of(obj)?;
        // Host memory that also speaks the buffer protocol (NumPy): the buffer protocol says
        // whether it is writable, which legacy DLPack cannot.
        // SAFETY: `obj` is a live object; PyObject_CheckBuffer only reads its type.
        let has_buffer = unsafe { ffi::PyObject_CheckBuffer(obj.as_ptr()) } != 0;
        if !(dev_type == dlpack::DEVICE_CPU && has_buffer) {
            return from_dlpack(obj, access, dev_type);
        }
    }
    if let Ok(cai) = obj.getattr("__cuda_array_interface__") {
        return from_cai(obj, &cai, access, driver);
    }
    // SAFETY: as above.
    if unsafe { ffi::PyObject_CheckBuffer(obj.as_ptr()) } != 0 {
        return from_buffer_protocol(obj, access);
    }
    Err(PyTypeError::new_err(format!(
        "gdio cannot use a {} as a buffer: pass an object with __dlpack__ (torch, CuPy, JAX, \
         NumPy), __cuda_array_interface__, or the buffer protocol (bytearray, memoryview)",
        obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
    )))
}

/// Whether `obj` is a JAX array (its type lives in `jax` or `jaxlib`).
fn is_jax_array(obj: &Bound<'_, PyAny>) -> bool {
    obj.get_type().module().is_ok_and(|m| {
        let m = m.to_string();
        m == "jax" || m == "jaxlib" || m.starts_with("jax.") || m.starts_with("jaxlib.")
    })
}

fn read_only_error(what: &str) -> PyErr {
    PyBufferError::new_err(format!(
        "cannot read into a read-only buffer ({what}); pass a writable one"
    ))
}

fn from_dlpack(obj: &Bound<'_, PyAny>, access: Access, dev_type: i32) -> PyResult<IoBuffer> {
    // CUDA producers make their data ready on the legacy default stream (1), which the I/O
    // synchronizes before it starts; host producers take no stream.
    let cuda = dev_type == dlpack::DEVICE_CUDA || dev_type == dlpack::DEVICE_CUDA_MANAGED;
    let view = dlpack::export(obj, cuda.then_some(stream::LEGACY))?;
    if access == Access::Fill && (view.read_only || view.copied) {
        let why = if view.read_only { "DLPack read-only flag" } else { "DLPack export is a copy" };
        return Err(read_only_error(why));
    }
    let memory = match view.device_type {
        dlpack::DEVICE_CPU | dlpack::DEVICE_CUDA_HOST => Memory::Host,
        dlpack::DEVICE_CUDA => Memory::Device(usize::try_from(view.device_id).unwrap_or(0)),
        dlpack::DEVICE_CUDA_MANAGED => Memory::Any,
        other => {
            return Err(PyBufferError::new_err(format!(
                "DLPack device type {other} is not supported (gdio reads CPU, CUDA, CUDA host \
                 and CUDA managed memory)"
            )))
        }
    };
    let sync = match memory {
        Memory::Device(o) => Some((o, stream::LEGACY as u64)),
        Memory::Any => Some((0, stream::LEGACY as u64)),
        Memory::Host => None,
    };
    Ok(IoBuffer {
        addr: view.addr,
        len: view.len,
        memory,
        sync,
        keep: Keepalive::of(vec![view.capsule, obj.clone().unbind()]),
    })
}

fn from_cai(
    obj: &Bound<'_, PyAny>,
    cai: &Bound<'_, PyAny>,
    access: Access,
    driver: &Driver,
) -> PyResult<IoBuffer> {
    let cai = cai
        .cast::<PyDict>()
        .map_err(|_| PyTypeError::new_err("__cuda_array_interface__ is not a dict"))?;
    let get = |k: &str| -> PyResult<Bound<'_, PyAny>> {
        cai.get_item(k)?
            .ok_or_else(|| PyTypeError::new_err(format!("__cuda_array_interface__ has no '{k}'")))
    };
    let (addr, read_only): (u64, bool) = get("data")?.extract()?;
    let shape: Vec<u64> = get("shape")?.extract()?;
    let typestr: String = get("typestr")?.extract()?;
    let itemsize: u64 = typestr.get(2..).and_then(|s| s.parse().ok()).ok_or_else(|| {
        PyTypeError::new_err(format!("__cuda_array_interface__ typestr {typestr:?} not understood"))
    })?;
    if let Some(strides) = cai.get_item("strides")?.filter(|s| !s.is_none()) {
        let strides: Vec<i64> = strides.extract()?;
        let mut want = itemsize as i64;
        for (d, s) in shape.iter().zip(&strides).rev() {
            if *d != 1 && *s != want {
                return Err(PyBufferError::new_err(
                    "gdio needs a contiguous (C-order) array; make a contiguous copy first",
                ));
            }
            want = want.saturating_mul(*d as i64);
        }
    }
    if access == Access::Fill && read_only {
        return Err(read_only_error("__cuda_array_interface__ data is read-only"));
    }
    let len = shape.iter().try_fold(itemsize, |a, d| a.checked_mul(*d));
    let len = len
        .and_then(|l| usize::try_from(l).ok())
        .ok_or_else(|| PyBufferError::new_err("array too large"))?;
    let memory = match driver.runtime().classify(addr) {
        MemoryKind::Device { ordinal } => Memory::Device(ordinal),
        MemoryKind::Host | MemoryKind::PinnedHost => Memory::Host,
        _ => Memory::Any,
    };
    let ordinal = match memory {
        Memory::Device(o) => o,
        _ => 0,
    };
    // CAI v3: `stream` absent or None means the data is ready; otherwise the consumer
    // synchronizes on it. The per-thread default stream (2) belongs to this thread, so it is
    // synchronized here; any other stream on the worker that runs the I/O.
    let sync = match cai.get_item("stream")?.filter(|s| !s.is_none()) {
        None => None,
        Some(s) => {
            let s: u64 = s.extract()?;
            if s == 0 {
                return Err(PyBufferError::new_err(
                    "__cuda_array_interface__ stream 0 is not allowed (CAI v3: use 1 for the \
                     legacy default stream)",
                ));
            }
            if s == stream::PER_THREAD as u64 {
                let py = obj.py();
                py.detach(|| stream::synchronize(driver, ordinal, s))
                    .map_err(crate::error::to_py)?;
                None
            } else {
                Some((ordinal, s))
            }
        }
    };
    Ok(IoBuffer { addr, len, memory, sync, keep: Keepalive::of(vec![obj.clone().unbind()]) })
}

fn from_buffer_protocol(obj: &Bound<'_, PyAny>, access: Access) -> PyResult<IoBuffer> {
    // One export of `obj` itself (no memoryview: two fewer objects for the garbage collector
    // per I/O), held until the I/O ends. The exporter refuses a non-contiguous buffer.
    let export = RawExport::get(obj, ffi::PyBUF_C_CONTIGUOUS)
        .map_err(|e| PyBufferError::new_err(format!("gdio needs a contiguous buffer: {e}")))?;
    let len = usize::try_from(export.0.len)
        .map_err(|_| PyBufferError::new_err("the buffer reports a negative length"))?;
    let (addr, read_only) = (export.0.buf as u64, export.0.readonly != 0);
    if access == Access::Fill && read_only {
        return Err(read_only_error(&format!(
            "{} is read-only",
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        )));
    }
    Ok(IoBuffer {
        addr,
        len,
        memory: Memory::Host,
        sync: None,
        keep: Keepalive::Export(Export(Some(export))),
    })
}
