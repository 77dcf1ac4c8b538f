//! `gdio._native`: the native half of the `gdio` Python package (the Python half is
//! `python/gdio/`). It holds the driver, the file objects and futures, takes buffers from
//! DLPack, the CUDA Array Interface and the buffer protocol, and runs the `gdio` command line.
//! Every I/O runs with the GIL released.

mod buffer;
mod completion;
mod copy;
mod dispatch;
mod dlpack;
mod error;
mod file;
mod future;
mod interrupt;
mod io;
mod report;
mod safetensors;
mod state;
mod stream;
mod sync_point;
mod torch;

use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::Arc;

use gdio::gpu::GpuRuntime;

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::error::to_py;

/// Python value → JSON for a configuration key.
fn to_json(v: &Bound<'_, PyAny>) -> PyResult<serde_json::Value> {
    use serde_json::Value;
    if v.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = v.cast::<pyo3::types::PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(i) = v.extract::<u64>() {
        return Ok(i.into());
    }
    if let Ok(i) = v.extract::<i64>() {
        return Ok(i.into());
    }
    if let Ok(f) = v.extract::<f64>() {
        return Ok(f.into());
    }
    if let Ok(s) = v.extract::<String>() {
        return Ok(Value::String(s));
    }
    if let Ok(items) = v.extract::<Vec<Bound<'_, PyAny>>>() {
        return items.iter().map(to_json).collect::<PyResult<Vec<_>>>().map(Value::Array);
    }
    Err(PyTypeError::new_err(format!("cannot use {v} as a configuration value")))
}

fn from_json(py: Python<'_>, v: &serde_json::Value) -> PyResult<Py<PyAny>> {
    use serde_json::Value;
    Ok(match v {
        Value::Null => py.None(),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any().unbind(),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => u.into_pyobject(py)?.into_any().unbind(),
            (_, Some(i)) => i.into_pyobject(py)?.into_any().unbind(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any().unbind(),
        },
        Value::String(s) => s.into_pyobject(py)?.into_any().unbind(),
        Value::Array(a) => {
            let items = a.iter().map(|x| from_json(py, x)).collect::<PyResult<Vec<_>>>()?;
            pyo3::types::PyList::new(py, items)?.into_any().unbind()
        }
        Value::Object(_) => v.to_string().into_pyobject(py)?.into_any().unbind(),
    })
}

/// The value of gdio configuration key `key`.
#[pyfunction]
fn config_get(py: Python<'_>, key: &str) -> PyResult<Py<PyAny>> {
    let v = state::get(key).map_err(to_py)?;
    from_json(py, &v)
}

/// Every gdio configuration key and its value.
#[pyfunction]
fn config_all(py: Python<'_>) -> PyResult<Vec<(String, Py<PyAny>)>> {
    let all = state::all().map_err(to_py)?;
    all.iter().map(|(k, v)| Ok((k.clone(), from_json(py, v)?))).collect()
}

/// Sets gdio configuration keys (all or none); returns the old values.
#[pyfunction]
fn config_set(
    py: Python<'_>,
    pairs: Vec<(String, Bound<'_, PyAny>)>,
) -> PyResult<Vec<(String, Py<PyAny>)>> {
    let pairs =
        pairs.iter().map(|(k, v)| Ok((k.clone(), to_json(v)?))).collect::<PyResult<Vec<_>>>()?;
    let old = state::set(&pairs).map_err(to_py)?;
    old.iter().map(|(k, v)| Ok((k.clone(), from_json(py, v)?))).collect()
}

/// `(pages_cached, pages_total)` of `length` bytes (0: to the end) at `offset` of `file` (a
/// path, a `CuFile` or a file descriptor); with `windows` > 0, of that many evenly spaced
/// windows of 64 KiB across the range only (a cost that does not grow with the range).
#[pyfunction]
#[pyo3(signature = (file, offset=0, length=0, windows=0))]
fn page_cache_info(
    file: &Bound<'_, PyAny>,
    offset: u64,
    length: u64,
    windows: u64,
) -> PyResult<(u64, u64)> {
    let py = file.py();
    let residency = |fd: std::os::fd::BorrowedFd<'_>| -> gdio::Result<(u64, u64)> {
        let size = rustix_size(fd)?;
        let len = if length == 0 { size.saturating_sub(offset) } else { length };
        let r = if windows == 0 {
            gdio::file::residency::residency(fd, offset, len)
        } else {
            gdio::file::residency::sampled(fd, offset, len, windows, 64 << 10)
        };
        let r = r.ok_or_else(|| {
            gdio::Error::new(
                gdio::ErrorKind::Unsupported,
                "neither cachestat nor mincore works here",
            )
        })?;
        Ok((r.cached_pages, r.total_pages))
    };
    if let Ok(f) = file.cast::<file::CuFile>() {
        let h = file::handle_of(f.get())?;
        return py.detach(|| residency(h.buffered_fd())).map_err(to_py);
    }
    if let Ok(fd) = file.extract::<i32>() {
        if fd < 0 {
            return Err(PyValueError::new_err(format!("bad file descriptor {fd}")));
        }
        // SAFETY: the caller passed an open descriptor; it is only borrowed for this call.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        return py.detach(|| residency(fd)).map_err(to_py);
    }
    let path: PathBuf = file.extract()?;
    py.detach(|| {
        let f = std::fs::File::open(&path)
            .map_err(|e| gdio::Error::from_io(&e, "cannot open").with_path(&path))?;
        residency(f.as_fd()).map_err(|e| e.with_path(&path))
    })
    .map_err(to_py)
}

fn rustix_size(fd: std::os::fd::BorrowedFd<'_>) -> gdio::Result<u64> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::zeroed();
    use std::os::fd::AsRawFd;
    // SAFETY: fstat writes one `stat` into the zeroed local on success.
    let rc = unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) };
    if rc != 0 {
        return Err(gdio::Error::from_io(&std::io::Error::last_os_error(), "fstat failed"));
    }
    // SAFETY: fstat succeeded, so `st` is initialised.
    Ok(unsafe { st.assume_init() }.st_size as u64)
}

/// Runs the `gdio` command line with `args` (without the program name), GIL released; returns
/// its exit status.
#[pyfunction]
fn cli_main(py: Python<'_>, args: Vec<std::ffi::OsString>) -> i32 {
    let mut argv = vec![std::ffi::OsString::from("gdio")];
    argv.extend(args);
    py.detach(move || gdio_cli::run(argv))
}

/// Facts about the driver: runtime name, GPU count, why there is no GPU.
#[pyfunction]
fn runtime_info(py: Python<'_>) -> PyResult<(String, usize, Option<String>, usize)> {
    let rt = file::runtime(py)?;
    let d = &rt.driver;
    Ok((
        d.runtime().name().to_owned(),
        d.runtime().device_count(),
        d.why_no_gpu().map(str::to_owned),
        rt.dispatch.workers(),
    ))
}

/// Whether the driver has found its GPU runtime (loaded libcuda, `cuInit`): with
/// `defer_gpu_init`, not before the first call that needed it.
#[pyfunction]
fn gpu_runtime_found(py: Python<'_>) -> PyResult<bool> {
    Ok(file::runtime(py)?.driver.gpu_runtime_found())
}

/// Whether GPUDirect Storage can serve I/O here (gdio's `gds` backend, over nvidia-fs or
/// PCI P2PDMA): `(available, why not, nvidia-fs version)`.
#[pyfunction]
fn gds_status(py: Python<'_>) -> PyResult<(bool, Option<String>, Option<String>)> {
    let rt = file::runtime(py)?;
    let d = &rt.driver;
    let why = match d.backends().iter().find(|b| b.name() == "gds") {
        Some(b) => b.unavailable(d.config()).map(|r| r.to_string()),
        None => Some("gdio's driver has no gds backend in this process".to_owned()),
    };
    let nvfs = gdio::platform::nvidia_fs();
    Ok((why.is_none(), why, nvfs.version))
}

/// The version (`"1.15"`) of the libcufile the dynamic loader finds (NVIDIA's, which gdio's
/// `gds` backend uses, or gdio's own where it comes first), or `None` when there is none.
#[pyfunction]
fn libcufile_version(py: Python<'_>) -> Option<String> {
    py.detach(|| {
        let lib = gdio::platform::libcufile();
        lib.version.filter(|_| lib.available)
    })
}

/// KvikIO's `bounce_buffer_free`: drops the current driver (the next I/O builds a new one)
/// and this thread's inline lanes of it, and returns the bytes of pinned memory given back
/// now. A driver that futures in flight still use gives its buffers back when they finish;
/// another thread's inline lane of it, at that thread's next I/O.
#[pyfunction]
fn bounce_buffer_free(py: Python<'_>) -> usize {
    let before = gdio::gpu::pinned_bytes_held();
    let rt = state::release();
    py.detach(move || {
        drop(rt);
        gdio::engine::release_unused_caller_lanes();
    });
    before.saturating_sub(gdio::gpu::pinned_bytes_held())
}

/// Starts the engine's workers for GPU `ordinal` and gives each its stream and pinned bounce
/// buffers now (`Driver::prepare_gpu`), so the first read does not pay for them.
#[pyfunction]
fn prepare_gpu(py: Python<'_>, ordinal: usize) -> PyResult<()> {
    let rt = file::runtime(py)?;
    py.detach(|| rt.driver.prepare_gpu(ordinal)).map_err(to_py)
}

/// The simulated GPUs of this process (`GDIO_SIMULATE_GPUS=N`), for the test hooks below.
fn sim(py: Python<'_>, hook: &str) -> PyResult<Arc<gdio::gpu::sim::SimRuntime>> {
    file::runtime(py)?
        .sim
        .clone()
        .ok_or_else(|| PyRuntimeError::new_err(format!("{hook} needs GDIO_SIMULATE_GPUS=N")))
}

/// Test hook: `nbytes` of device memory of simulated GPU `ordinal`; returns its address (host
/// memory of this process, readable with `ctypes`).
#[pyfunction]
fn _sim_alloc(py: Python<'_>, ordinal: usize, nbytes: usize) -> PyResult<u64> {
    sim(py, "_sim_alloc")?.alloc_device(ordinal, nbytes).map_err(to_py)
}

/// Test hook: frees what [`_sim_alloc`] gave; no I/O may still use it.
#[pyfunction]
fn _sim_free(py: Python<'_>, ordinal: usize, addr: u64) -> PyResult<()> {
    let rt = sim(py, "_sim_free")?;
    // SAFETY: the simulated runtime ignores an address it did not give (or already freed);
    // the caller promises no I/O still uses the memory.
    unsafe { rt.free_device(ordinal, addr) };
    Ok(())
}

/// Test hook: a stream of simulated GPU `ordinal` (its work runs late, on a thread of its
/// own); returns its handle.
#[pyfunction]
fn _sim_stream(py: Python<'_>, ordinal: usize) -> PyResult<u64> {
    sim(py, "_sim_stream")?.create_stream(ordinal).map_err(to_py)
}

/// Test hook: waits until simulated stream `handle` has run everything queued on it.
#[pyfunction]
fn _sim_stream_synchronize(py: Python<'_>, handle: u64) -> PyResult<()> {
    let rt = sim(py, "_sim_stream_synchronize")?;
    py.detach(|| rt.with_stream(handle, |s| s.synchronize()).and_then(|r| r)).map_err(to_py)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The wheel's version (maturin takes it from this crate), without importlib.metadata,
    // whose import alone took 45 ms of `import gdio`.
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("__git_commit__", env!("GDIO_GIT_COMMIT"))?;
    m.add_function(wrap_pyfunction!(_sim_alloc, m)?)?;
    m.add_function(wrap_pyfunction!(_sim_free, m)?)?;
    m.add_function(wrap_pyfunction!(_sim_stream, m)?)?;
    m.add_function(wrap_pyfunction!(_sim_stream_synchronize, m)?)?;
    m.add_class::<file::CuFile>()?;
    m.add_class::<future::Future>()?;
    m.add_class::<safetensors::Checkpoint>()?;
    m.add_class::<safetensors::Stream>()?;
    m.add_class::<safetensors::Tensor>()?;
    m.add_function(wrap_pyfunction!(safetensors::save_file, m)?)?;
    m.add_function(wrap_pyfunction!(config_get, m)?)?;
    m.add_function(wrap_pyfunction!(config_set, m)?)?;
    m.add_function(wrap_pyfunction!(config_all, m)?)?;
    m.add_function(wrap_pyfunction!(page_cache_info, m)?)?;
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(runtime_info, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_runtime_found, m)?)?;
    m.add_function(wrap_pyfunction!(report::stats_json, m)?)?;
    m.add_function(wrap_pyfunction!(bounce_buffer_free, m)?)?;
    m.add_function(wrap_pyfunction!(gds_status, m)?)?;
    m.add_function(wrap_pyfunction!(copy::copy_into, m)?)?;
    m.add_function(wrap_pyfunction!(libcufile_version, m)?)?;
    m.add_function(wrap_pyfunction!(report::explain_json, m)?)?;
    m.add_function(wrap_pyfunction!(prepare_gpu, m)?)?;
    Ok(())
}
