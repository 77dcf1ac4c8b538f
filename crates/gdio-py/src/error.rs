//! gdio errors as Python exceptions: `gdio.GdioError`, a subclass of `OSError` defined in
//! `gdio/_errors.py`, carrying errno, file, offset, length, kind and driver code; built by
//! `gdio._errors.from_native`, which also makes it the `OSError` subclass of its errno
//! (`FileNotFoundError`, ...) and, for a malformed safetensors file, a `SafetensorError`.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

static ERROR_FACTORY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `gdio.GdioError` built from `e`.
pub fn to_py(e: gdio::Error) -> PyErr {
    Python::attach(|py| match build(py, &e) {
        Ok(err) => err,
        Err(failed) => failed,
    })
}

fn build(py: Python<'_>, e: &gdio::Error) -> PyResult<PyErr> {
    let factory = ERROR_FACTORY.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py.import("gdio._errors")?.getattr("from_native")?.unbind())
    })?;
    let path = e.path().map(|p| p.to_string_lossy().into_owned());
    let (offset, length) = match e.range() {
        Some((o, l)) => (Some(o), Some(l)),
        None => (None, None),
    };
    let kind = format!("{:?}", e.kind());
    let obj = factory.bind(py).call1((
        e.errno(),
        e.to_string(),
        path,
        offset,
        length,
        kind,
        e.driver_code(),
        e.message(),
    ))?;
    Ok(PyErr::from_value(obj))
}
