//! Long native calls that Ctrl-C stops: the work runs on a helper thread while the calling
//! thread waits with the GIL released, waking every [`CHECK_EVERY`] to run Python's signal
//! handlers. A `KeyboardInterrupt` (or any exception a handler raises) sets the work's cancel
//! flag, waits for the work to stop and clean up, and is then raised to the caller.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// Work of fewer bytes than this runs on the calling thread (the helper thread's start, tens
/// of microseconds, would show in a small `get_tensor`; such work ends within milliseconds
/// anyway).
pub const CANCELLABLE_MIN_BYTES: u64 = 256 << 20;

/// How often a waiting caller looks for a signal (the longest a Ctrl-C waits to be seen; each
/// look takes the GIL for a few microseconds). Python's own switch interval is 5 ms.
const CHECK_EVERY: Duration = Duration::from_millis(10);

/// Runs `work` of `bytes` bytes with the GIL released: [`cancellable`] from
/// [`CANCELLABLE_MIN_BYTES`] up, else on the calling thread.
pub fn cancellable_if_large<T: Send>(
    py: Python<'_>,
    bytes: u64,
    cancel: &AtomicBool,
    work: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    if bytes < CANCELLABLE_MIN_BYTES {
        return Ok(py.detach(work));
    }
    cancellable(py, cancel, work)
}

/// Runs `work` with the GIL released; a Python signal handler that raises meanwhile sets
/// `cancel` (which `work` must check), and its exception is returned once `work` has ended.
pub fn cancellable<T: Send>(
    py: Python<'_>,
    cancel: &AtomicBool,
    work: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    let done = (Mutex::new(false), Condvar::new());
    std::thread::scope(|s| {
        let done = &done;
        let worker = s.spawn(move || {
            // Set even when `work` panics, so the caller never waits for nothing.
            struct Finished<'a>(&'a (Mutex<bool>, Condvar));
            impl Drop for Finished<'_> {
                fn drop(&mut self) {
                    *self.0 .0.lock().unwrap_or_else(|p| p.into_inner()) = true;
                    self.0 .1.notify_all();
                }
            }
            let _finished = Finished(done);
            work()
        });
        let mut raised = None;
        loop {
            let finished = py.detach(|| {
                let g = done.0.lock().unwrap_or_else(|p| p.into_inner());
                let (g, _) = done
                    .1
                    .wait_timeout_while(g, CHECK_EVERY, |finished| !*finished)
                    .unwrap_or_else(|p| p.into_inner());
                *g
            });
            if finished {
                break;
            }
            if let Err(e) = py.check_signals() {
                cancel.store(true, Ordering::SeqCst);
                raised = Some(e);
                break;
            }
        }
        let result = py
            .detach(|| worker.join())
            .map_err(|_| PyRuntimeError::new_err("gdio: internal panic in a native call"))?;
        match raised {
            Some(e) => Err(e),
            None => Ok(result),
        }
    })
}
