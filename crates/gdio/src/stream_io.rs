//! Stream-ordered I/O with `cuFileReadAsync`/`cuFileWriteAsync` semantics.
//!
//! Ordering guarantees, for an I/O enqueued on a caller's stream S:
//! - it starts only after every piece of work queued on S before it has finished (a host
//!   function on S starts it);
//! - work queued on S after it starts only once the I/O has finished: every byte has landed in
//!   GPU memory (reads) or reached the file (writes), and the result is in `*bytes_p`;
//! - the size, file offset and buffer offset are read from the caller's memory when S reaches
//!   the I/O, not when it is enqueued, so earlier work on S may write them;
//! - I/Os on different streams, and I/Os submitted with the other APIs, are not ordered with
//!   it.
//!
//! How: a host function on S (`cuLaunchHostFunc`) reads the parameters and hands the I/O to a
//! thread of its own, which submits it to the engine's workers, waits, writes `*bytes_p` and
//! then opens a gate queued on S right behind the host function (`cuStreamWaitValue32` on a
//! flag in pinned host memory; [`GpuRuntime::launch_gated_host_fn`]). The host function never
//! blocks: CUDA forbids a host function to wait for other GPU work, and on the H200 a blocking
//! one deadlocked against the engine's own copies. Stream-ordered I/Os on different streams
//! run concurrently.

use std::sync::Arc;

use crate::engine::Engine;
use crate::error::{Error, ErrorKind, Result};
use crate::file::FileHandle;
use crate::gpu::{GpuRuntime, StreamGate};
use crate::memory::{BufferRef, MemoryKind};
use crate::request::Op;
use crate::stats::Stats;

/// The caller's memory a stream-ordered I/O reads its parameters from and writes its result
/// to, as `cuFileReadAsync` takes them.
#[derive(Debug, Clone, Copy)]
pub struct StreamIoParams {
    /// Bytes to move (`size_p`), read when the stream reaches the I/O.
    pub size_p: *const usize,
    /// File offset (`file_offset_p`), read when the stream reaches the I/O.
    pub file_offset_p: *const i64,
    /// Offset into the buffer (`bufPtr_offset_p`), read when the stream reaches the I/O.
    pub buf_offset_p: *const i64,
    /// Where the result goes (`bytes_read_p`): bytes moved, or a negative errno.
    pub bytes_p: *mut isize,
}

struct Job {
    op: Op,
    file: Arc<FileHandle>,
    base: u64,
    ordinal: usize,
    params: StreamIoParams,
    engine: Arc<Engine>,
    stats: Arc<Stats>,
    backend: &'static str,
}

// SAFETY: the pointers are the caller's, valid until the host function ran (contract of
// `enqueue`), and read or written only by that function.
unsafe impl Send for Job {}

impl Job {
    /// Runs on the stream's host-function thread: reads the parameters (the stream has reached
    /// the I/O) and hands the rest to a thread of its own, which opens `gate` when done.
    fn start(self, gate: StreamGate) {
        let p = self.params;
        // SAFETY: the caller keeps the parameter memory valid and written by the time the
        // stream reaches this I/O (contract of `enqueue`); volatile because earlier stream
        // work may have written it behind the compiler's back.
        let (size, foff, boff) = unsafe {
            (
                std::ptr::read_volatile(p.size_p),
                std::ptr::read_volatile(p.file_offset_p),
                std::ptr::read_volatile(p.buf_offset_p),
            )
        };
        let bytes_p = p.bytes_p as usize;
        // The result if no thread can be started (the gate then opens as the closure drops);
        // otherwise overwritten before the gate opens. Later stream work reads it only after.
        // SAFETY: `bytes_p` is the caller's, valid until later stream work runs.
        unsafe { std::ptr::write_volatile(bytes_p as *mut isize, -(libc::EAGAIN as isize)) };
        let spawned = std::thread::Builder::new().name("gdio-stream-io".into()).spawn(move || {
            let v = self.run(size, foff, boff);
            // SAFETY: `bytes_p` is the caller's, valid until later stream work, which waits
            // for the gate opened just below.
            unsafe { std::ptr::write_volatile(bytes_p as *mut isize, v) };
            gate.open();
        });
        if let Err(e) = spawned {
            tracing::warn!("stream-ordered I/O could not start a thread: {e}");
        }
    }

    /// Does the I/O; returns the bytes moved or a negative errno, for `*bytes_p`.
    fn run(self, size: usize, foff: i64, boff: i64) -> isize {
        match &self.io(size, foff, boff) {
            Ok(n) => {
                self.stats.record_ok(self.backend, *n as u64);
                *n as isize
            }
            Err(e) => {
                self.stats.record_error(self.backend);
                tracing::debug!("stream-ordered {} failed: {e}", self.op);
                -(e.errno().unwrap_or(libc::EIO) as isize)
            }
        }
    }

    fn io(&self, size: usize, foff: i64, boff: i64) -> Result<usize> {
        let bad = |m: String| {
            Err(Error::new(ErrorKind::InvalidInput, m)
                .with_errno(libc::EINVAL)
                .with_path(self.file.path()))
        };
        if foff < 0 || boff < 0 {
            return bad(format!("negative offset (file {foff}, buffer {boff})"));
        }
        let Some(addr) = self.base.checked_add(boff as u64) else {
            return bad(format!("buffer offset {boff} overflows"));
        };
        let buf = BufferRef { addr, len: size, kind: MemoryKind::Device { ordinal: self.ordinal } };
        // SAFETY: the caller's contract (`enqueue`): the buffer range is device memory valid
        // until the I/O finished, which the wait below covers.
        let io = unsafe { self.engine.submit(self.op, &self.file, buf, foff as u64) }?;
        io.wait().map(|t| t.bytes as usize)
    }
}

/// Enqueues `op` on `stream`; see the module docs for the ordering.
///
/// # Safety
/// `stream` is a live stream of this process; the parameter pointers are valid until the
/// stream has run the I/O; `buf_base + *buf_offset_p .. + *size_p` is device memory of
/// GPU `ordinal` valid for the I/O and not otherwise accessed until then.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn enqueue(
    runtime: &Arc<dyn GpuRuntime>,
    engine: Arc<Engine>,
    backend: &'static str,
    stats: Arc<Stats>,
    op: Op,
    file: &Arc<FileHandle>,
    buf_base: u64,
    ordinal: usize,
    params: StreamIoParams,
    stream: u64,
) -> Result<()> {
    let job =
        Job { op, file: file.clone(), base: buf_base, ordinal, params, engine, stats, backend };
    // SAFETY: forwarded contract; `start` calls no CUDA API and does not block.
    unsafe { runtime.launch_gated_host_fn(ordinal, stream, Box::new(move |g| job.start(g))) }
}
