//! A torch tensor without DLPack: its memory read from the tensor's own attributes, for the
//! per-call cost of many small `pread`s (torch's `__dlpack__` and `__dlpack_device__` are
//! Python code that builds devices, streams and a capsule on every call).
//!
//! Only a plain `torch.Tensor` (exact type) in the common case takes this path: CPU or CUDA,
//! strided layout, contiguous, not nested or quantized, not requiring grad, no conjugate or
//! negative bit, and, on CUDA, torch's current stream of that GPU is the legacy default stream
//! (what the DLPack path synchronizes on). For anything else it answers `None` and the caller
//! takes the DLPack path, with its errors. Two differences from DLPack, both permissive: a
//! tensor on a GPU other than torch's current one is taken (torch's `__dlpack__` refuses it;
//! the I/O runs in that GPU's context anyway), and dtypes DLPack cannot name are moved as bytes.
//! Everything is read again on every call (no address is cached), and the I/O holds the tensor
//! and its storage, as a DLPack capsule would.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

use crate::buffer::{loaded_attr, IoBuffer, Keepalive, Memory};
use crate::stream;

static TENSOR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static RAW_STREAM: PyOnceLock<Option<Py<PyAny>>> = PyOnceLock::new();
static STRIDED: PyOnceLock<Option<Py<PyAny>>> = PyOnceLock::new();

/// `torch.Tensor`, once torch has been imported (by someone else: gdio never imports it).
fn tensor_type(py: Python<'_>) -> Option<&Bound<'_, PyType>> {
    if let Some(t) = TENSOR.get(py) {
        return Some(t.bind(py));
    }
    let t = loaded_attr(py, "torch", "Tensor")?.cast_into::<PyType>().ok()?;
    let _ = TENSOR.set(py, t.unbind());
    TENSOR.get(py).map(|t| t.bind(py))
}

/// `torch.strided`.
fn strided(py: Python<'_>) -> Option<&Bound<'_, PyAny>> {
    STRIDED
        .get_or_init(py, || loaded_attr(py, "torch", "strided").map(Bound::unbind))
        .as_ref()
        .map(|s| s.bind(py))
}

/// `torch._C._cuda_getCurrentRawStream(device)`, when this torch has it.
fn raw_stream_fn(py: Python<'_>) -> Option<&Bound<'_, PyAny>> {
    RAW_STREAM
        .get_or_init(py, || {
            loaded_attr(py, "torch._C", "_cuda_getCurrentRawStream").map(Bound::unbind)
        })
        .as_ref()
        .map(|f| f.bind(py))
}

fn flag(obj: &Bound<'_, PyAny>, name: &Bound<'_, pyo3::types::PyString>) -> PyResult<bool> {
    obj.getattr(name)?.is_truthy()
}

fn call_flag(obj: &Bound<'_, PyAny>, name: &Bound<'_, pyo3::types::PyString>) -> PyResult<bool> {
    obj.call_method0(name)?.is_truthy()
}

/// The memory of `obj` when it is a plain torch tensor in the common case; `None` sends the
/// caller to the DLPack path (also when asking torch raised: that path has the errors).
pub fn acquire(obj: &Bound<'_, PyAny>) -> Option<IoBuffer> {
    let tensor = tensor_type(obj.py())?;
    if !obj.get_type().is(tensor) {
        return None;
    }
    probe(obj).ok().flatten()
}

fn probe(obj: &Bound<'_, PyAny>) -> PyResult<Option<IoBuffer>> {
    let py = obj.py();
    // torch's __dlpack__ refuses these (the DLPack path raises its error), or their memory is
    // not `nbytes` from `data_ptr` (sparse, MKL-DNN, nested, quantized).
    let Some(strided) = strided(py) else { return Ok(None) };
    if flag(obj, intern!(py, "requires_grad"))?
        || !obj.getattr(intern!(py, "layout"))?.is(strided)
        || flag(obj, intern!(py, "is_nested"))?
        || flag(obj, intern!(py, "is_quantized"))?
        || call_flag(obj, intern!(py, "is_conj"))?
        || call_flag(obj, intern!(py, "is_neg"))?
    {
        return Ok(None);
    }
    let memory = if flag(obj, intern!(py, "is_cuda"))? {
        let ordinal: i64 = obj.call_method0(intern!(py, "get_device"))?.extract()?;
        let Ok(ordinal) = usize::try_from(ordinal) else { return Ok(None) };
        // The DLPack path asks torch for the data on the legacy default stream, which torch
        // gives without extra work when its current stream is that stream (handle 0); then the
        // worker synchronizes that stream, as it does for DLPack.
        let Some(current) = raw_stream_fn(py) else { return Ok(None) };
        let s: u64 = current.call1((ordinal,))?.extract()?;
        if s != 0 {
            return Ok(None);
        }
        Memory::Device(ordinal)
    } else if flag(obj, intern!(py, "is_cpu"))? {
        Memory::Host
    } else {
        return Ok(None);
    };
    // Contiguity is what makes `nbytes` from `data_ptr` the tensor's memory and nothing else.
    if !call_flag(obj, intern!(py, "is_contiguous"))? {
        return Ok(None);
    }
    let addr: u64 = obj.call_method0(intern!(py, "data_ptr"))?.extract()?;
    let len: usize = obj.getattr(intern!(py, "nbytes"))?.extract()?;
    if addr == 0 && len > 0 {
        return Ok(None);
    }
    // The storage, held like the tensor a DLPack capsule holds: the memory stays allocated
    // even if the tensor is pointed at other storage (`set_`) while the I/O runs.
    let storage = obj.call_method0(intern!(py, "untyped_storage"))?;
    let sync = match memory {
        Memory::Device(o) => Some((o, stream::LEGACY as u64)),
        _ => None,
    };
    Ok(Some(IoBuffer {
        addr,
        len,
        memory,
        sync,
        keep: Keepalive::of(vec![storage.unbind(), obj.clone().unbind()]),
    }))
}
