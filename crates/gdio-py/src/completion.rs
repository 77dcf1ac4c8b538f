//! The shared state of one future: how many parts are left, the bytes done, the first error,
//! the callbacks to run and the Python objects that keep the buffer alive until the I/O ends.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use crate::buffer::Keepalive;

/// The outcome of a finished future.
pub type Outcome = Result<usize, gdio::Error>;

/// Runs a finished future's callbacks (takes the GIL).
pub type CallbackRun = Box<dyn FnOnce() + Send>;

struct State {
    parts_left: usize,
    bytes: usize,
    /// The error of the part at the lowest buffer offset, with that offset.
    error: Option<(usize, gdio::Error)>,
    outcome: Option<Outcome>,
    /// `(callback, future)` pairs to call when done.
    callbacks: Vec<(Py<PyAny>, Py<PyAny>)>,
    keep: Option<Keepalive>,
    /// Threads blocked in `wait` (the last part wakes them only when there are some).
    waiters: usize,
}

/// Completion of a request split into parts (one per task or per vectored buffer).
pub struct Completion {
    state: Mutex<State>,
    done: Condvar,
}

impl Completion {
    /// A completion waiting for `parts` parts; `keep` holds the buffer until the outcome is
    /// collected (see `release`).
    pub fn new(parts: usize, keep: Keepalive) -> Completion {
        let c = Completion {
            state: Mutex::new(State {
                parts_left: parts,
                bytes: 0,
                error: None,
                outcome: None,
                callbacks: Vec::new(),
                keep: Some(keep),
                waiters: 0,
            }),
            done: Condvar::new(),
        };
        if parts == 0 {
            c.finish_locked(&mut c.lock());
        }
        c
    }

    /// A completion that is already done.
    pub fn finished(outcome: Outcome) -> Completion {
        Completion {
            state: Mutex::new(State {
                parts_left: 0,
                bytes: 0,
                error: None,
                outcome: Some(outcome),
                callbacks: Vec::new(),
                keep: None,
                waiters: 0,
            }),
            done: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn finish_locked(&self, s: &mut State) {
        s.outcome = Some(match s.error.take() {
            Some((_, e)) => Err(e),
            None => Ok(s.bytes),
        });
    }

    /// Records part `at` of the request (its buffer offset) as done with `result`; the last
    /// part completes the future and runs its callbacks here (taking the GIL).
    pub fn part_done(&self, at: usize, result: Outcome) {
        if let Some(run_callbacks) = self.record_part(at, result) {
            run_callbacks();
        }
    }

    /// Like [`Completion::part_done`], for a thread that must not wait for the GIL (an engine
    /// worker): the callbacks to run, if any, are handed to `defer` (a thread that may).
    pub fn part_done_then(&self, at: usize, result: Outcome, defer: impl FnOnce(CallbackRun)) {
        if let Some(run_callbacks) = self.record_part(at, result) {
            defer(run_callbacks);
        }
    }

    /// Counts the part in; when it was the last, completes the future, wakes its waiters and
    /// returns what runs its callbacks (none: `None`).
    fn record_part(&self, at: usize, result: Outcome) -> Option<CallbackRun> {
        let (callbacks, keep, wake) = {
            let mut s = self.lock();
            match result {
                Ok(n) => s.bytes += n,
                Err(e) => {
                    if s.error.as_ref().is_none_or(|(o, _)| at < *o) {
                        s.error = Some((at, e));
                    }
                }
            }
            s.parts_left = s.parts_left.saturating_sub(1);
            if s.parts_left > 0 {
                return None;
            }
            self.finish_locked(&mut s);
            let callbacks = std::mem::take(&mut s.callbacks);
            // Without callbacks the buffer stays held until Python collects the outcome
            // (`release`, or the future's last reference going away): released here, without
            // the GIL, PyO3 would only queue the release, and a bytearray could still refuse
            // to resize after `get()` returned.
            let keep = if callbacks.is_empty() { None } else { s.keep.take() };
            (callbacks, keep, s.waiters > 0)
        };
        // `waiters` is counted under the lock that `wait` holds until it sleeps, so a waiter
        // either saw the outcome or is counted here.
        if wake {
            self.done.notify_all();
        }
        if callbacks.is_empty() {
            return None;
        }
        Some(Box::new(move || {
            Python::attach(|py| {
                if let Some(keep) = keep {
                    keep.release(py);
                }
                run_callbacks(py, callbacks)
            })
        }))
    }

    /// Lets go of the buffer once done (called with the GIL held, so the release is
    /// immediate).
    pub fn release(&self, py: Python<'_>) {
        let keep = {
            let mut s = self.lock();
            if s.outcome.is_none() {
                return;
            }
            s.keep.take()
        };
        if let Some(keep) = keep {
            keep.release(py);
        }
    }

    /// The outcome, if done.
    pub fn outcome(&self) -> Option<Outcome> {
        self.lock().outcome.clone()
    }

    /// The outcome, if done, with the buffer let go as in `release` (one lock for both); the
    /// keepalive comes back to be dropped by the caller, who holds the GIL.
    pub fn collect(&self) -> Option<(Outcome, Option<Keepalive>)> {
        let mut s = self.lock();
        let o = s.outcome.clone()?;
        Some((o, s.keep.take()))
    }

    /// Waits for the outcome, at most `timeout`; `None` when it ran out.
    pub fn wait(&self, timeout: Option<Duration>) -> Option<Outcome> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut s = self.lock();
        loop {
            if let Some(o) = &s.outcome {
                return Some(o.clone());
            }
            let left = match deadline {
                None => None,
                Some(d) => Some(d.checked_duration_since(Instant::now())?),
            };
            s.waiters += 1;
            s = match left {
                None => self.done.wait(s).unwrap_or_else(|e| e.into_inner()),
                Some(left) => self.done.wait_timeout(s, left).unwrap_or_else(|e| e.into_inner()).0,
            };
            s.waiters -= 1;
        }
    }

    /// Adds `callback(future)` to run when done; returns it back when already done (the
    /// caller runs it at once).
    pub fn add_callback(
        &self,
        callback: Py<PyAny>,
        future: Py<PyAny>,
    ) -> Option<(Py<PyAny>, Py<PyAny>)> {
        let mut s = self.lock();
        if s.outcome.is_some() {
            return Some((callback, future));
        }
        s.callbacks.push((callback, future));
        None
    }
}

/// Calls each `callback(future)`; an exception goes to `sys.unraisablehook` (as
/// `concurrent.futures` logs it) and the others still run.
pub fn run_callbacks(py: Python<'_>, callbacks: Vec<(Py<PyAny>, Py<PyAny>)>) {
    for (cb, fut) in callbacks {
        if let Err(e) = cb.call1(py, (fut,)) {
            e.write_unraisable(py, Some(cb.bind(py)));
        }
    }
}
