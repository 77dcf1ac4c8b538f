//! Asynchronous I/O: [`IoHandle`], what [`Driver::submit_read`](crate::Driver::submit_read) and
//! [`Driver::submit_write`](crate::Driver::submit_write) return, and the router that starts an
//! I/O on the backend that scores highest.
//!
//! A submitted I/O owns its buffer (`B: IoBufMut + Send + 'static`, moved into the handle) and
//! its file (an `Arc<FileHandle>` the engine holds), so nothing the caller does can free or
//! move either while the I/O runs: dropping the handle blocks until the I/O has finished, and
//! forgetting it (`mem::forget`) leaks the buffer instead of freeing it under the I/O.

use std::sync::Arc;
use std::time::Duration;

use crate::backend::{select, Backend};
use crate::config::Config;
use crate::engine::{Bulk, EngineIo, Notifier};
use crate::error::{Error, ErrorKind, Result};
use crate::file::FileHandle;
use crate::gpu::GpuRuntime;
use crate::memory::{BufferRef, MemoryKind};
use crate::request::{Op, Request};
use crate::stats::Stats;

/// What the router needs of a driver, shared by handles and batches.
#[derive(Debug, Clone)]
pub(crate) struct Router {
    pub backends: Vec<Arc<dyn Backend>>,
    pub config: Arc<Config>,
    pub stats: Arc<Stats>,
    pub runtime: Arc<dyn GpuRuntime>,
}

/// An I/O the router started.
#[derive(Debug)]
pub(crate) enum Started {
    /// Running on the engine on behalf of backend `.1`.
    Engine(EngineIo, &'static str),
    /// Served synchronously (a backend with its own I/O path), already finished.
    Done(Result<usize>),
}

impl Router {
    /// Checks that `buf` is memory the runtime knows as the kind it claims: a device range
    /// must lie in memory of that GPU from its first to its last byte.
    pub(crate) fn check_buffer(
        &self,
        buf: BufferRef,
        file: &FileHandle,
        offset: u64,
    ) -> Result<()> {
        let bad = |why: String| {
            Err(Error::new(ErrorKind::InvalidInput, why)
                .with_errno(libc::EINVAL)
                .with_path(file.path())
                .with_range(offset, buf.len as u64))
        };
        if buf.addr == 0 {
            return bad("null buffer address".into());
        }
        if buf.addr.checked_add(buf.len as u64).is_none() {
            return bad(format!("buffer 0x{:x} + {} bytes wraps around", buf.addr, buf.len));
        }
        if let MemoryKind::Device { ordinal } = buf.kind {
            if ordinal >= self.runtime.device_count() {
                return bad(format!("GPU {ordinal} does not exist"));
            }
            let last = buf.addr + (buf.len as u64).max(1) - 1;
            for a in [buf.addr, last] {
                if self.runtime.classify(a) != buf.kind {
                    return bad(format!(
                        "address 0x{a:x} is not memory allocated on GPU {ordinal} in this \
                         process (unregistered or freed)"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Starts `op` on the backend that scores highest. An engine backend runs it
    /// asynchronously; any other backend serves it now, through the retry policy.
    ///
    /// # Safety
    /// `buf` must stay valid for the I/O until the returned [`Started`] reports it finished or
    /// is dropped.
    pub(crate) unsafe fn start(
        &self,
        op: Op,
        file: &Arc<FileHandle>,
        buf: BufferRef,
        offset: u64,
        notifier: Option<Arc<Notifier>>,
    ) -> Result<Started> {
        self.check_buffer(buf, file, offset)?;
        // SAFETY: forwarded contract.
        unsafe { self.start_checked(op, file, buf, offset, notifier, None) }
    }

    /// The request for `op` on `buf` and the backend that serves it (the backends prepared
    /// for `file` first).
    fn choose<'f>(
        &self,
        op: Op,
        file: &'f Arc<FileHandle>,
        buf: BufferRef,
        offset: u64,
    ) -> Result<(Request<'f>, &Arc<dyn Backend>)> {
        for b in &self.backends {
            b.prepare(file);
        }
        let req = Request {
            op,
            file: file.info(),
            memory: buf.kind,
            file_offset: offset,
            buf_addr: buf.addr,
            len: buf.len as u64,
        };
        let decision = select::decide(&self.backends, &req, &self.config);
        let chosen = decision
            .backend
            .and_then(|name| self.backends.iter().find(|b| b.name() == name))
            .ok_or_else(|| select::no_backend_error(&decision, &req))?;
        Ok((req, chosen))
    }

    /// Serves `req` on a backend with its own I/O path (not the engine), through the retry
    /// policy; returns after the I/O.
    ///
    /// # Safety
    /// `buf` is the memory `req` names, valid for the I/O until this returns.
    unsafe fn serve_now(
        &self,
        req: &Request<'_>,
        file: &Arc<FileHandle>,
        buf: BufferRef,
    ) -> Result<usize> {
        let offset = req.file_offset;
        select::run(&self.backends, req, &self.config, &self.stats, |b| match req.op {
            // SAFETY: forwarded contract; the call returns after the I/O.
            Op::Read => unsafe { b.read(file, buf, offset) },
            // SAFETY: as above.
            Op::Write => unsafe { b.write(file, buf, offset) },
        })
    }

    /// Starts `op` on `buf` (whose kind the caller vouches for: no pointer query) and calls
    /// `done` once with the result when the I/O is over: on an engine worker, or on this thread
    /// when a backend serves the I/O synchronously. Stats are recorded before `done` runs.
    /// When this returns an error, `done` is never called. With `bulk`, an engine job is held
    /// there and queued when `bulk` is flushed or dropped.
    ///
    /// # Safety
    /// `buf` is memory of `buf.kind`, valid and not otherwise accessed until `done` is called.
    pub(crate) unsafe fn start_then(
        &self,
        op: Op,
        file: &Arc<FileHandle>,
        buf: BufferRef,
        offset: u64,
        done: Box<dyn FnOnce(Result<usize>) + Send>,
        bulk: Option<&mut Bulk>,
    ) -> Result<()> {
        let (req, chosen) = self.choose(op, file, buf, offset)?;
        if let Some(engine) = chosen.engine() {
            let (stats, name) = (self.stats.clone(), chosen.name());
            let report = Box::new(move |t: Result<crate::engine::Transfer>| {
                let r = t.map(|t| t.bytes as usize);
                match &r {
                    Ok(n) => stats.record_ok(name, *n as u64),
                    Err(_) => stats.record_error(name),
                }
                done(r);
            });
            // SAFETY: forwarded contract.
            return unsafe { engine.submit_then(op, file, buf, offset, report, bulk) }.inspect_err(
                |_| {
                    self.stats.record_error(chosen.name());
                },
            );
        }
        // SAFETY: forwarded contract.
        let r = unsafe { self.serve_now(&req, file, buf) };
        done(r);
        Ok(())
    }

    /// [`Router::start`] for a buffer already checked (or whose kind a registration vouches
    /// for): no pointer queries. With `bulk`, an engine job is held there and queued when
    /// `bulk` is flushed or dropped (a batch queues all its entries at once).
    ///
    /// # Safety
    /// As [`Router::start`], and `buf.kind` is the kind of the whole range.
    pub(crate) unsafe fn start_checked(
        &self,
        op: Op,
        file: &Arc<FileHandle>,
        buf: BufferRef,
        offset: u64,
        notifier: Option<Arc<Notifier>>,
        bulk: Option<&mut Bulk>,
    ) -> Result<Started> {
        let (req, chosen) = self.choose(op, file, buf, offset)?;
        if let Some(engine) = chosen.engine() {
            // SAFETY: forwarded contract.
            let io = unsafe { engine.submit_with(op, file, buf, offset, notifier, bulk) };
            return match io {
                Ok(io) => Ok(Started::Engine(io, chosen.name())),
                Err(e) => {
                    self.stats.record_error(chosen.name());
                    Err(e)
                }
            };
        }
        // SAFETY: forwarded contract.
        let r = unsafe { self.serve_now(&req, file, buf) };
        if let Some(n) = notifier {
            n.notify();
        }
        Ok(Started::Done(r))
    }
}

/// The state of a handle's I/O.
#[derive(Debug)]
enum State {
    Running(EngineIo, &'static str),
    Finished(Result<usize>),
}

/// An I/O in flight, started by [`Driver::submit_read`](crate::Driver::submit_read) or
/// [`Driver::submit_write`](crate::Driver::submit_write); it owns the buffer until the I/O is
/// over. [`IoHandle::wait`] returns the result and the buffer; dropping the handle blocks
/// until the I/O has finished and then drops the buffer.
#[derive(Debug)]
pub struct IoHandle<B> {
    // Declared before `buf`: a running I/O is waited for before the buffer is dropped.
    state: Option<State>,
    stats: Arc<Stats>,
    buf: Option<B>,
}

impl<B> IoHandle<B> {
    pub(crate) fn new(started: Started, stats: Arc<Stats>, buf: B) -> IoHandle<B> {
        let state = match started {
            Started::Engine(io, name) => State::Running(io, name),
            Started::Done(r) => State::Finished(r),
        };
        IoHandle { state: Some(state), stats, buf: Some(buf) }
    }

    /// True once the I/O has finished (then [`IoHandle::wait`] returns at once).
    pub fn is_done(&self) -> bool {
        match &self.state {
            Some(State::Running(io, _)) => io.is_done(),
            _ => true,
        }
    }

    /// The result if the I/O has finished, without blocking: `None` while it runs. After it
    /// returned `Some`, [`IoHandle::wait`] returns the same result.
    pub fn poll(&mut self) -> Option<Result<usize>> {
        if !self.is_done() {
            return None;
        }
        Some(self.settle().clone())
    }

    /// Blocks until the I/O has finished or `timeout` passed; true when it finished.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        match &self.state {
            Some(State::Running(io, _)) => io.wait_timeout(timeout),
            _ => true,
        }
    }

    /// Stops the parts of the I/O that have not started (the rest finishes); the result is
    /// then an `ECANCELED` error unless all of it had already run. False when it had finished.
    pub fn cancel(&self) -> bool {
        match &self.state {
            Some(State::Running(io, _)) => io.cancel(),
            _ => false,
        }
    }

    /// Blocks until the I/O has finished; returns its result (bytes moved; for reads fewer
    /// than asked only at the end of the file) and the buffer.
    pub fn wait(mut self) -> (Result<usize>, B) {
        let r = self.settle().clone();
        let buf = self.buf.take().expect("the buffer stays in the handle until wait");
        (r, buf)
    }

    /// Waits for a running I/O, records it in the stats once, and keeps its result.
    fn settle(&mut self) -> &Result<usize> {
        if let Some(State::Running(io, name)) = &self.state {
            let r = io.wait().map(|t| t.bytes as usize);
            match &r {
                Ok(n) => self.stats.record_ok(name, *n as u64),
                Err(_) => self.stats.record_error(name),
            }
            self.state = Some(State::Finished(r));
        }
        match &self.state {
            Some(State::Finished(r)) => r,
            _ => unreachable!("settle leaves a finished state"),
        }
    }
}

impl<B> Drop for IoHandle<B> {
    fn drop(&mut self) {
        if self.state.is_some() {
            // Blocks until the I/O is over, before the buffer field is dropped.
            let _ = self.settle();
        }
    }
}
