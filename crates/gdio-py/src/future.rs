//! `gdio.Future`: the result of `pread`/`pwrite`/`preadv`, like KvikIO's `IOFuture` plus
//! callbacks, timeouts and `await`.

use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::{PyTimeoutError, PyValueError};
use pyo3::prelude::*;

use crate::completion::{run_callbacks, Completion, Outcome};
use crate::error::to_py;

/// A pending I/O. `get()` returns the bytes moved or raises `gdio.GdioError`.
#[pyclass(module = "gdio", name = "Future", frozen)]
pub struct Future {
    completion: Arc<Completion>,
}

impl Future {
    /// A future on `completion`.
    pub fn new(completion: Arc<Completion>) -> Future {
        Future { completion }
    }

    /// Waits for the outcome (without the GIL).
    pub fn get_blocking(&self, py: Python<'_>) -> PyResult<usize> {
        self.get(py, None)
    }

    /// A future that is already done.
    pub fn finished(outcome: Outcome) -> Future {
        Future { completion: Arc::new(Completion::finished(outcome)) }
    }
}

fn outcome_to_py(o: Outcome) -> PyResult<usize> {
    o.map_err(to_py)
}

impl Future {
    fn collect(&self, py: Python<'_>, o: Outcome) -> PyResult<usize> {
        self.completion.release(py);
        outcome_to_py(o)
    }
}

#[pymethods]
impl Future {
    /// Waits (without the GIL) and returns the bytes read or written; raises the I/O's
    /// `GdioError`, or `TimeoutError` when `timeout` seconds pass first.
    #[pyo3(signature = (timeout=None))]
    fn get(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<usize> {
        if let Some((o, keep)) = self.completion.collect() {
            // Let go here, with the GIL, before `get` returns.
            if let Some(keep) = keep {
                keep.release(py);
            }
            return outcome_to_py(o);
        }
        let timeout = match timeout {
            None => None,
            Some(t) if t.is_finite() && t >= 0.0 => Some(Duration::from_secs_f64(t)),
            Some(t) => return Err(PyValueError::new_err(format!("timeout must be ≥ 0, not {t}"))),
        };
        let c = self.completion.clone();
        match py.detach(move || c.wait(timeout)) {
            Some(o) => self.collect(py, o),
            None => Err(PyTimeoutError::new_err("the gdio I/O did not finish in time")),
        }
    }

    /// `get()` under `concurrent.futures`' name.
    #[pyo3(signature = (timeout=None))]
    fn result(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<usize> {
        self.get(py, timeout)
    }

    /// KvikIO's `IOFutureStream.check_bytes_done()`: waits and returns the bytes moved.
    fn check_bytes_done(&self, py: Python<'_>) -> PyResult<usize> {
        self.get(py, None)
    }

    /// Whether the I/O has finished (successfully or not).
    fn done(&self, py: Python<'_>) -> bool {
        let done = self.completion.outcome().is_some();
        if done {
            self.completion.release(py);
        }
        done
    }

    /// The exception the I/O raised, or None (waits for it first).
    #[pyo3(signature = (timeout=None))]
    fn exception(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<PyErr>> {
        match self.get(py, timeout) {
            Ok(_) => Ok(None),
            Err(e) if e.is_instance_of::<PyTimeoutError>(py) && !self.done(py) => Err(e),
            Err(e) => Ok(Some(e)),
        }
    }

    /// Calls `fn(future)` when the I/O finishes, on the worker thread that finished it (or at
    /// once, on this thread, if it already has). Exceptions from `fn` go to
    /// `sys.unraisablehook`.
    fn add_done_callback(slf: &Bound<'_, Self>, r#fn: Py<PyAny>) {
        let me = slf.clone().into_any().unbind();
        if let Some(now) = slf.get().completion.add_callback(r#fn, me) {
            // Done: the buffer is let go first, as for callbacks run by the finishing worker.
            slf.get().completion.release(slf.py());
            run_callbacks(slf.py(), vec![now]);
        }
    }

    /// `await future` inside a running asyncio loop.
    fn __await__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        Ok(py.import("gdio._aio")?.getattr("await_future")?.call1((slf,))?.unbind())
    }

    fn __repr__(&self) -> String {
        match self.completion.outcome() {
            None => "<gdio.Future pending>".to_owned(),
            Some(Ok(n)) => format!("<gdio.Future done: {n} bytes>"),
            Some(Err(e)) => format!("<gdio.Future failed: {e}>"),
        }
    }
}
