//! The compat engine: a request becomes tasks, tasks run on a pool of workers, and each worker
//! moves GPU data through its own ring of pinned bounce buffers and its own stream, so reading
//! chunk N+1 overlaps the copy of chunk N. Host memory is read and written in place.
//!
//! - [`plan`]: splitting requests into aligned tasks and tasks into buffered/direct pieces.
//! - `job`: one request in flight and the state its caller waits on.
//! - `pool`: the worker threads.
//! - `lane`: a worker's stream and bounce ring for one GPU.
//! - `transfer`: what a worker does with a task.

mod job;
mod lane;
mod mapped;
pub mod plan;
mod pool;
mod transfer;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub use job::DirectChoice;

use crate::backend::Op;
use crate::config::{Config, DirectIoPolicy};
use crate::error::{Error, ErrorKind, Result};
use crate::file::FileHandle;
use crate::gpu::GpuRuntime;
use crate::memory::BufferRef;
use job::Job;
use pool::{LaneShape, Pool};

/// What one request moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Transfer {
    /// Bytes moved (for reads, fewer than asked only at end of file).
    pub bytes: u64,
    /// Of which through `O_DIRECT`.
    pub direct_bytes: u64,
    /// Of which by DMA straight from the page cache.
    pub mapped_bytes: u64,
}

/// How the engine's bytes travelled since it started: the answer to "was it the page cache,
/// the disk, or the mapping?".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct EngineCounters {
    /// Bytes read with buffered `pread` (page cache).
    pub buffered_read_bytes: u64,
    /// Bytes read with `O_DIRECT`.
    pub direct_read_bytes: u64,
    /// Bytes read into GPUs by DMA straight from the page cache.
    pub page_cache_dma_bytes: u64,
    /// Bytes written with buffered `pwrite`.
    pub buffered_write_bytes: u64,
    /// Bytes written with `O_DIRECT`.
    pub direct_write_bytes: u64,
}

#[derive(Default)]
struct Counters {
    buffered_read: AtomicU64,
    direct_read: AtomicU64,
    mapped_read: AtomicU64,
    buffered_write: AtomicU64,
    direct_write: AtomicU64,
}

/// The engine: a worker pool over one GPU runtime.
pub struct Engine {
    runtime: Arc<dyn GpuRuntime>,
    pool: Pool,
    config: Config,
    counters: Counters,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("runtime", &self.runtime.name())
            .field("config", &self.config)
            .finish()
    }
}

impl Engine {
    /// An engine over `runtime` with the engine knobs of `config` (`threads`, `write_threads`,
    /// `task_size`, the bounce buffers, `direct_io`, `hot_cache_fraction`, `page_cache_dma`).
    /// Threads start at the first request.
    pub fn new(runtime: Arc<dyn GpuRuntime>, config: &Config) -> Engine {
        let config = config.clone();
        let shape = LaneShape {
            size: config.bounce_buffer_size,
            count: config.bounce_buffers_per_thread.max(2),
        };
        Engine {
            pool: Pool::new(runtime.clone(), config.threads.max(1), shape),
            runtime,
            config,
            counters: Counters::default(),
        }
    }

    /// The runtime.
    pub fn runtime(&self) -> &Arc<dyn GpuRuntime> {
        &self.runtime
    }

    /// The configuration the engine was made with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// How the bytes moved so far travelled.
    pub fn counters(&self) -> EngineCounters {
        let c = &self.counters;
        EngineCounters {
            buffered_read_bytes: c.buffered_read.load(Ordering::Relaxed),
            direct_read_bytes: c.direct_read.load(Ordering::Relaxed),
            page_cache_dma_bytes: c.mapped_read.load(Ordering::Relaxed),
            buffered_write_bytes: c.buffered_write.load(Ordering::Relaxed),
            direct_write_bytes: c.direct_write.load(Ordering::Relaxed),
        }
    }

    /// Allocates every worker's stream and pinned bounce buffers for GPU `ordinal` now, so the
    /// first I/O to that GPU does not pay for them.
    pub fn prepare_gpu(&self, ordinal: usize) -> Result<()> {
        self.pool.warm(ordinal)
    }

    fn direct_choice(&self, op: Op) -> DirectChoice {
        match (self.config.direct_io, op) {
            (DirectIoPolicy::Off, _) => DirectChoice::Never,
            (DirectIoPolicy::On, _) => DirectChoice::Always,
            (DirectIoPolicy::Auto, Op::Read) => {
                DirectChoice::WhenCold(self.config.hot_cache_fraction)
            }
            (DirectIoPolicy::Auto, Op::Write) => DirectChoice::Never,
        }
    }

    fn run(
        &self,
        op: Op,
        file: &FileHandle,
        buf: BufferRef,
        offset: u64,
        len: u64,
    ) -> Result<Transfer> {
        let align = transfer::direct_align(file);
        let tasks = plan::split(offset, len, self.config.task_size as u64, align);
        if tasks.is_empty() {
            return Ok(Transfer::default());
        }
        let cap =
            if op == Op::Write { self.config.write_threads.max(1) } else { self.pool.threads() };
        let workers = tasks.len().min(cap);
        let mut job = Job::new(op, file, buf, offset, tasks, self.direct_choice(op));
        job.buffered_chunk = self.config.buffered_chunk_size.max(4096) as u64;
        job.page_cache_dma = self.config.page_cache_dma && op == Op::Read;
        let job = Arc::new(job);
        if let Err(e) = self.pool.submit(&job, workers) {
            return Err(e.with_path(file.path()).with_range(offset, len));
        }
        let (bytes, direct_bytes, mapped_bytes) = job.wait()?;
        let c = &self.counters;
        let plain = bytes.saturating_sub(direct_bytes + mapped_bytes);
        match op {
            Op::Read => {
                c.buffered_read.fetch_add(plain, Ordering::Relaxed);
                c.direct_read.fetch_add(direct_bytes, Ordering::Relaxed);
                c.mapped_read.fetch_add(mapped_bytes, Ordering::Relaxed);
            }
            Op::Write => {
                c.buffered_write.fetch_add(plain, Ordering::Relaxed);
                c.direct_write.fetch_add(direct_bytes, Ordering::Relaxed);
            }
        }
        Ok(Transfer { bytes, direct_bytes, mapped_bytes })
    }

    /// Reads up to `dst.len` bytes at `offset` into `dst`. Fewer bytes come back only when the
    /// file ends first. An offset past the end of the file is an error.
    pub fn read(&self, file: &FileHandle, dst: BufferRef, offset: u64) -> Result<Transfer> {
        let len = dst.len as u64;
        file.check_range(offset, len)?;
        if !file.is_readable() {
            return Err(Error::new(ErrorKind::PermissionDenied, "handle was opened write-only")
                .with_path(file.path())
                .with_range(offset, len));
        }
        if len == 0 {
            return Ok(Transfer::default());
        }
        let mut size = file.size();
        if offset + len > size {
            size = file.refresh_size()?;
        }
        if offset > size {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("offset {offset} is beyond the end of the file ({size} bytes)"),
            )
            .with_errno(libc::EINVAL)
            .with_path(file.path())
            .with_range(offset, len));
        }
        let len = len.min(size - offset);
        self.run(Op::Read, file, dst, offset, len)
    }

    /// Writes all `src.len` bytes of `src` at `offset`.
    pub fn write(&self, file: &FileHandle, src: BufferRef, offset: u64) -> Result<Transfer> {
        let len = src.len as u64;
        file.check_range(offset, len)?;
        if !file.is_writable() {
            return Err(Error::new(
                ErrorKind::PermissionDenied,
                "handle was opened read-only; open it for writing",
            )
            .with_errno(libc::EBADF)
            .with_path(file.path())
            .with_range(offset, len));
        }
        if len == 0 {
            return Ok(Transfer::default());
        }
        let t = self.run(Op::Write, file, src, offset, len)?;
        file.note_written_end(offset + len);
        Ok(t)
    }
}
