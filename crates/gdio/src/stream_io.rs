//! Stream-ordered I/O with `cuFileReadAsync`/`cuFileWriteAsync` semantics.
//!
//! Ordering guarantees, for an I/O enqueued on a caller's stream S:
//! - it starts only after every piece of work queued on S before it has finished (a host
//!   function on S starts it);
//! - work queued on S after it starts only once the I/O has finished: every byte has landed in
//!   GPU memory (reads) or reached the file (writes), and the result is in `*bytes_p`;
//! - the size, file offset and buffer offset are read from the caller's memory when S reaches
//!   the I/O, not when it is enqueued, so earlier work on S may write them — unless the caller
//!   promised they are fixed ([`StreamIoParams::read_at_queue`], cuFile's stream flags), then
//!   they are read when the I/O is enqueued;
//! - in a process whose GPU runtime has no GPU (the host runtime), only the null stream exists
//!   and nothing can be queued on it before the I/O: the I/O runs before the call returns;
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
//!
//! While the stream is held, the I/O creates no GPU resource (stream, event, pinned or device
//! memory): the CUDA driver holds such calls in every thread while any thread waits in a copy
//! to or from pageable memory, and a caller who queues one behind the I/O (`tensor.cpu()`) waits
//! for the stream, which waits for the I/O. So the engine's workers get their lanes for the
//! GPU when the I/O is queued (`Engine::prepare_stream_ordered`, once per GPU), and the job
//! never grows a worker's ring (`bench/pageable-gate-probe.c` shows which calls block; the C
//! ABI program's device part hung here before).

use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// Where the result goes (`bytes_read_p`): bytes moved, or a negative errno. Stored with an
    /// atomic release store, so a caller may poll it with an atomic load (C11 `atomic_load`,
    /// Rust's `AtomicIsize`) while the I/O runs, besides reading it after later stream work.
    pub bytes_p: *mut isize,
    /// Read the size and offsets when the I/O is enqueued, not when the stream reaches it (the
    /// caller promised they are fixed by then: cuFile's `FIXED_*` stream flags).
    pub read_at_queue: bool,
}

/// Called once, on the runtime's thread, when a stream-ordered I/O has finished, with the size
/// asked, the result and the time the I/O took; returns the value stored in `*bytes_p` (a front
/// end's encoding of the result). Must not call the GPU runtime, and must not wait for anything
/// that may wait for the stream (later stream work waits for this I/O). The hook, and all it
/// holds, is dropped only after `*bytes_p` is written: memory it keeps alive may hold the
/// parameters and the result (a front end without caller memory of its own).
pub type StreamIoDone = Box<dyn FnMut(usize, &Result<usize>, Duration) -> isize + Send>;

/// The default value for `*bytes_p`: bytes moved, or a negative errno (`EIO` when the error
/// has none).
pub fn default_result(r: &Result<usize>) -> isize {
    match r {
        Ok(n) => *n as isize,
        Err(e) => -(e.errno().unwrap_or(libc::EIO) as isize),
    }
}

/// The size and offsets, as read from the caller's memory.
#[derive(Debug, Clone, Copy)]
struct Args {
    size: usize,
    file_offset: i64,
    buf_offset: i64,
}

impl StreamIoParams {
    /// Refuses a NULL or misaligned pointer (reading or writing through one is undefined
    /// behaviour), naming it. [`Driver::submit_on_stream`](crate::Driver::submit_on_stream)
    /// checks this before anything else; a front end may ask first to report it its own way.
    pub fn check(&self) -> Result<()> {
        fn ok<T>(p: *const T) -> bool {
            !p.is_null() && p.is_aligned()
        }
        let bad = [
            ("size", ok(self.size_p)),
            ("file offset", ok(self.file_offset_p)),
            ("buffer offset", ok(self.buf_offset_p)),
            ("result", ok(self.bytes_p.cast_const())),
        ]
        .into_iter()
        .find(|(_, fine)| !fine);
        match bad {
            None => Ok(()),
            Some((what, _)) => Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "stream-ordered I/O: the {what} pointer is NULL or not aligned for its \
                     type (8 bytes)"
                ),
            )
            .with_errno(libc::EINVAL)),
        }
    }

    /// Stores `v` as the result, with release ordering (see [`StreamIoParams::bytes_p`]).
    ///
    /// # Safety
    /// `bytes_p` is valid for writes (it is aligned: [`StreamIoParams::check`]) and nothing
    /// reads or writes it non-atomically until later stream work runs.
    unsafe fn store_result(&self, v: isize) {
        // SAFETY: forwarded contract: aligned, valid, and accessed only atomically meanwhile.
        unsafe { AtomicIsize::from_ptr(self.bytes_p) }.store(v, Ordering::Release);
    }

    /// Reads the size and offsets.
    ///
    /// # Safety
    /// The three pointers are valid and written.
    unsafe fn args(&self) -> Args {
        // SAFETY: forwarded contract; volatile because earlier stream work may have written
        // them behind the compiler's back.
        unsafe {
            Args {
                size: std::ptr::read_volatile(self.size_p),
                file_offset: std::ptr::read_volatile(self.file_offset_p),
                buf_offset: std::ptr::read_volatile(self.buf_offset_p),
            }
        }
    }
}

struct Job {
    op: Op,
    file: Arc<FileHandle>,
    base: u64,
    kind: MemoryKind,
    /// End of the device allocation holding the buffer, when the runtime knows it (checked
    /// when the I/O runs, where no GPU call is allowed).
    end: Option<u64>,
    params: StreamIoParams,
    /// Read at queue time (`read_at_queue`), else `None`: read when the job runs.
    fixed: Option<Args>,
    done: Option<StreamIoDone>,
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
    fn start(mut self, gate: StreamGate) {
        let p = self.params;
        // SAFETY: the caller keeps the parameter memory valid and written by the time the
        // stream reaches this I/O (contract of `enqueue`).
        let a = self.fixed.unwrap_or_else(|| unsafe { p.args() });
        self.fixed = Some(a);
        // The result if no thread can be started (the gate then opens as the closure drops);
        // otherwise overwritten before the gate opens. Later stream work reads it only after.
        // SAFETY: `bytes_p` is the caller's, checked aligned in `enqueue`, valid until later
        // stream work runs.
        unsafe { p.store_result(-(libc::EAGAIN as isize)) };
        let spawned = std::thread::Builder::new().name("gdio-stream-io".into()).spawn(move || {
            self.run();
            gate.open();
        });
        if let Err(e) = spawned {
            tracing::warn!("stream-ordered I/O could not start a thread: {e}");
        }
    }

    fn run(mut self) {
        let p = self.params;
        // SAFETY: the caller keeps the parameter memory valid and written by the time the
        // stream reaches this I/O (contract of `enqueue`).
        let a = self.fixed.unwrap_or_else(|| unsafe { p.args() });
        let start = Instant::now();
        let r = self.io(a.size, a.file_offset, a.buf_offset);
        let took = start.elapsed();
        match &r {
            Ok(n) => self.stats.record_ok(self.backend, *n as u64),
            Err(e) => {
                self.stats.record_error(self.backend);
                tracing::debug!("stream-ordered {} failed: {e}", self.op);
            }
        }
        let v = match self.done.as_mut() {
            Some(done) => done(a.size, &r, took),
            None => default_result(&r),
        };
        // SAFETY: as above, `bytes_p` is the caller's, checked aligned in `enqueue`, valid and
        // read only atomically until later stream work runs (the done hook, which may be what
        // keeps it valid, drops with `self` after).
        unsafe { p.store_result(v) };
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
        if let Some(end) = self.end {
            if addr.checked_add(size as u64).is_none_or(|e| e > end) {
                return bad(format!(
                    "buffer offset {boff} + {size} bytes runs past the end of the GPU allocation"
                ));
            }
        }
        let buf = BufferRef { addr, len: size, kind: self.kind };
        // SAFETY: the caller's contract (`enqueue`): the buffer range is memory of `kind` valid
        // until the I/O finished, which the wait below covers.
        let io =
            unsafe { self.engine.submit_stream_ordered(self.op, &self.file, buf, foff as u64) }?;
        io.wait().map(|t| t.bytes as usize)
    }
}

/// Enqueues `op` on `stream` of GPU `ordinal` (`None`: the runtime has no GPU and `stream` is
/// the null stream: the I/O runs now); see the module docs for the ordering.
///
/// A NULL or misaligned parameter pointer is refused (`InvalidInput`, EINVAL) before anything
/// is read, written or queued.
///
/// # Safety
/// `stream` is a live stream of this process; the parameter pointers are valid until the
/// stream has run the I/O; `buf_base + *buf_offset_p .. + *size_p` is memory of `kind` valid
/// for the I/O and not otherwise accessed until then.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn enqueue(
    runtime: &Arc<dyn GpuRuntime>,
    engine: Arc<Engine>,
    backend: &'static str,
    stats: Arc<Stats>,
    op: Op,
    file: &Arc<FileHandle>,
    buf_base: u64,
    kind: MemoryKind,
    end: Option<u64>,
    ordinal: Option<usize>,
    params: StreamIoParams,
    stream: u64,
    done: Option<StreamIoDone>,
) -> Result<()> {
    params.check().map_err(|e| e.with_path(file.path()))?;
    // SAFETY: forwarded contract: with `read_at_queue` the values are written now.
    let fixed = params.read_at_queue.then(|| unsafe { params.args() });
    let job = Job {
        op,
        file: file.clone(),
        base: buf_base,
        kind,
        end,
        params,
        fixed,
        done,
        engine,
        stats,
        backend,
    };
    let Some(ordinal) = ordinal else {
        job.run();
        return Ok(());
    };
    // Every GPU resource the I/O will use is made now, before the stream is held (the module
    // docs say why).
    if let MemoryKind::Device { ordinal: gpu } = kind {
        job.engine.prepare_stream_ordered(gpu)?;
    }
    // SAFETY: forwarded contract; `start` calls no CUDA API and does not block.
    unsafe { runtime.launch_gated_host_fn(ordinal, stream, Box::new(move |g| job.start(g))) }
}
