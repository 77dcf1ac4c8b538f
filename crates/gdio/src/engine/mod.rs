//! The compat engine: a request becomes tasks, tasks run on a pool of workers, and each worker
//! moves GPU data through its own ring of pinned bounce buffers and its own stream, so reading
//! chunk N+1 overlaps the copy of chunk N. Host memory is read and written in place.
//!
//! - [`plan`]: splitting requests into aligned tasks and tasks into buffered/direct pieces.
//! - `job`: one request in flight and the state its caller waits on.
//! - `pool`: the worker threads.
//! - `lane`: a worker's stream and bounce ring for one GPU.
//! - `transfer`: what a worker does with a task.
//! - `page_cache_pins`: file chunks read twice over stay registered with the GPU;
//!   `read_ahead`: the ranges after a sequence of reads read into pinned memory ahead of them;
//!   `pinned_read`: a read out of either, one DMA on the caller's stream; `file_stamp`: what
//!   says a file has not changed since bytes of it were kept.
//! - `gather`: small reads of many requests to one GPU sent as one group.
//! - `gather_write`: small writes of many requests from one GPU copied out as one group.
//! - `ring`: which reads a worker issues through its own io_uring (`io_engine`).
//! - `worker_time`: where the workers' time went (file I/O, buffers, copies, draining).
//! - `worker_shares`: that time as shares of a span, and the verdict it gives.

mod caller_lane;
mod copy_queue;
mod file_stamp;
pub use caller_lane::release_unused as release_unused_caller_lanes;
mod gather;
mod gather_write;
mod job;
mod lane;
mod mapped;
mod numa;
mod page_cache_pins;
mod pinned_read;
pub mod plan;
mod pool;
mod read_ahead;
mod ring;
mod split_read;
mod transfer;
mod watcher;
mod worker_shares;
mod worker_time;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

pub use job::DirectChoice;
pub use worker_shares::WorkerShares;
pub use worker_time::WorkerTime;

pub(crate) use job::Notifier;

use crate::config::{Config, DirectIoPolicy};
use crate::error::{Error, ErrorKind, Result};
use crate::file::FileHandle;
use crate::gpu::GpuRuntime;
use crate::memory::{BufferRef, MemoryKind};
use crate::request::Op;
use job::{Counters, Job, JobFile};
use pool::{LaneShape, Pool, PoolSpec};

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
    /// Bytes read into GPUs by DMA straight from the page cache (`page_cache_dma`, and reads
    /// served out of page-cache pins).
    pub page_cache_dma_bytes: u64,
    /// Reads into GPU memory served out of page-cache pins (`page_cache_pins_max_bytes`): one
    /// DMA from registered page-cache pages on the calling thread, no bounce buffer.
    pub pinned_reads: u64,
    /// Bytes of page cache registered with the GPU now (page-cache pins).
    pub page_cache_pinned_bytes: u64,
    /// Reads into GPU memory served out of read-ahead (`read_ahead_bytes`): a sequence of
    /// reads of one length was read ahead of by the workers (into GPU memory of the engine's
    /// own with `read_ahead_gpu_memory`, else pinned host memory), and the read found its range
    /// there and copied it on the calling thread.
    pub read_ahead_reads: u64,
    /// Bytes those reads copied out of read-ahead.
    pub read_ahead_bytes: u64,
    /// Bytes the workers read ahead (every read started, used or not).
    pub read_ahead_started_bytes: u64,
    /// Bytes read ahead that no read used: the reads went elsewhere, the file changed or
    /// nobody read it for a while. A large share of `read_ahead_started_bytes` means the
    /// read-ahead read for nothing.
    pub read_ahead_unused_bytes: u64,
    /// Pinned host memory held for read-ahead now (`read_ahead_bytes`, allocated at the first
    /// read ahead and kept).
    pub read_ahead_pinned_bytes: u64,
    /// GPU memory held for read-ahead now (`read_ahead_gpu_memory`: allocated at the first
    /// read ahead, given back once every file read ahead was read to its end or nobody read
    /// it for 0.5 s).
    pub read_ahead_gpu_bytes: u64,
    /// Bytes written with buffered `pwrite`.
    pub buffered_write_bytes: u64,
    /// Bytes written with `O_DIRECT`.
    pub direct_write_bytes: u64,
    /// Small reads into GPU memory that went in a gathered group (one bounce buffer, one
    /// scatter kernel or batched copy, one marker for many requests).
    pub gathered_reads: u64,
    /// Of the gathered reads, those whose group went with the scatter kernel
    /// (`gather_scatter`); the rest went as copies: the key off, a runtime without the kernel,
    /// or a driver that would not load it (the log says so once).
    pub scattered_reads: u64,
    /// Small writes out of GPU memory that went in a gathered group (`gather_writes`: one
    /// bounce buffer and one wait for the device→host copies of many requests).
    pub gathered_writes: u64,
    /// Gathered pieces (reads or writes) that went in one `pread`/`pwrite` with the piece
    /// before them, next to it in the same file (`gather_adjacent_runs`): the calls saved.
    pub adjacent_pieces: u64,
    /// Reads (or pieces of reads) that workers issued through their io_uring (`io_engine`).
    pub io_uring_reads: u64,
    /// One-task reads into GPU memory split over free workers (`split_min_bytes`).
    pub split_reads: u64,
    /// Pieces of split reads read by a worker other than the one that copied the task, into
    /// that worker's bounce buffer (`split_into_one_buffer`): how much the free workers helped.
    pub split_pieces_helped: u64,
    /// Split reads whose first parts were copied to the GPU before the rest was read
    /// (`split_early_copy`: reads alone in flight, or beside at most
    /// `split_early_copy_max_others`; `split_early_copy_parts`, by default the
    /// first half).
    pub split_early_copies: u64,
    /// Tasks the completion watcher finished the moment their copies landed, before their
    /// workers looked (`completion_watcher`; requests of one or two tasks, and split reads).
    pub watcher_finished: u64,
    /// Synchronous requests of one task that ran on their calling threads instead of the
    /// workers: host memory, and GPU memory up to `inline_max_bytes`.
    pub inline_requests: u64,
    /// Requests small enough to run on their callers that went to the workers because more
    /// than `inline_max_callers` callers had such requests in flight, or because, after such
    /// a crowd, the calling thread had no inline lane yet and was not the only small caller.
    pub inline_busy: u64,
    /// Lanes (a stream and two pinned bounce buffers) made for calling threads' inline
    /// requests into or out of GPU memory: normally one per thread and GPU. A count that grows
    /// with the requests means short-lived threads each paid for one.
    pub caller_lanes_made: u64,
    /// Where the workers' time went (summed over workers).
    pub worker_time: WorkerTime,
}

impl EngineCounters {
    /// Bytes the engine moved with `pread` and `pwrite`, buffered and `O_DIRECT`, reads and
    /// writes (not page-cache DMA): what its workers' file-I/O time carried
    /// ([`WorkerShares::with_file_bytes`]).
    pub fn file_bytes(&self) -> u64 {
        self.buffered_read_bytes
            + self.direct_read_bytes
            + self.buffered_write_bytes
            + self.direct_write_bytes
    }
}

/// The engine: a worker pool over one GPU runtime.
pub struct Engine {
    runtime: Arc<dyn GpuRuntime>,
    /// Ranges read ahead of sequential reads into GPU memory (`read_ahead_bytes`). Declared
    /// before the pools: dropping it waits for its reads, which their workers run.
    read_ahead: read_ahead::ReadAhead,
    /// Serves host memory and GPU 0 (every GPU without `pool_per_gpu`).
    pool: Pool,
    /// With `pool_per_gpu`: the pool of GPU `i + 1`, made at its first work.
    gpu_pools: Vec<std::sync::OnceLock<Pool>>,
    /// What the GPU pools are made of.
    spec: PoolSpec,
    config: Config,
    counters: Arc<Counters>,
    io: Arc<ring::IoChoice>,
    /// Callers with a request small enough to run inline in flight right now, inline or on
    /// the workers (`inline_max_callers`).
    small_callers: AtomicUsize,
    /// Small requests go to the workers: set when more than `inline_max_callers` callers have
    /// them in flight, cleared when at most half as many do, so that a crowd of callers goes
    /// one way instead of a mix of both (which lost to either on the H200, session 24 run 5).
    crowded: AtomicBool,
    /// Small requests have gone to the workers for a crowd at least once: from then on a
    /// thread without an inline lane does not make one while other small callers are in
    /// flight, and sends its small requests to the workers. Pinning a lane's buffers and
    /// making its stream hold up every thread's driver calls for milliseconds, which the
    /// lulls of a crowd would otherwise pay again and again (session 24: 35 such lanes cost a
    /// 64 KiB × 64 read a third of its rate).
    crowd_seen: AtomicBool,
    /// File chunks read twice over, registered with the GPU (`page_cache_pins_max_bytes`).
    pins: page_cache_pins::PageCachePins,
    /// A synchronous read's caller polls while at most this many reads into GPU memory are
    /// open in its pool; 0: never ([`polling_callers`]).
    polling_callers: usize,
}

/// A caller counted in [`Engine::small_callers`] until dropped.
struct SmallCaller<'a>(&'a AtomicUsize);

impl Drop for SmallCaller<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
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
            size: config.bounce_buffer_bytes(),
            count: config.bounce_buffers_per_thread.max(2),
            max: config
                .bounce_buffers_per_thread
                .max(2)
                .max(config.direct_reads_in_flight.clamp(1, 64) + 1),
            polling: lane::Polling {
                spin: std::time::Duration::from_micros(config.completion_spin_us),
                every: std::time::Duration::from_micros(config.completion_poll_us),
            },
            callbacks: config.completion_callbacks,
            watcher: config.completion_watcher,
            watch_events: config.completion_watch_events,
            poll_for_work: may_poll_while_idle(&config),
            copy_streams: config.copy_streams,
            own_stream_max: config.own_stream_max_bytes,
            own_size: own_lane_size(&config),
        };
        let counters: Arc<Counters> = Arc::default();
        let io = Arc::new(ring::IoChoice::new(config.io_engine));
        let spec = PoolSpec {
            runtime: runtime.clone(),
            threads: config.threads.max(1),
            shape,
            gather: gather::GatherShape::from_config(&config),
            counters: counters.clone(),
            numa: config.numa_affinity,
            io: io.clone(),
        };
        let extra = if config.pool_per_gpu { runtime.device_count().saturating_sub(1) } else { 0 };
        caller_lane::engine_started(&runtime);
        let pins = page_cache_pins::PageCachePins::new(
            runtime.clone(),
            page_cache_pins::Budget {
                max_bytes: config.page_cache_pins_max_bytes,
                idle: std::time::Duration::from_millis(config.page_cache_pins_idle_ms),
                min_request: config.page_cache_pins_min_request_bytes,
            },
            counters.clone(),
        );
        let read_ahead = read_ahead::ReadAhead::new(
            runtime.clone(),
            read_ahead::Budget {
                max_bytes: config.read_ahead_bytes,
                min_request: config.read_ahead_min_request_bytes,
                max_request: config.read_ahead_max_request_bytes,
                max_callers: config.read_ahead_max_callers,
                settle: file_stamp::SETTLE,
                gpu_memory: config.read_ahead_gpu_memory,
            },
            counters.clone(),
        );
        Engine {
            read_ahead,
            pins,
            pool: Pool::new(spec.clone(), "gdio-worker"),
            gpu_pools: (0..extra).map(|_| std::sync::OnceLock::new()).collect(),
            spec,
            runtime,
            counters,
            io,
            small_callers: AtomicUsize::new(0),
            crowded: AtomicBool::new(false),
            crowd_seen: AtomicBool::new(false),
            polling_callers: polling_callers(&config),
            config,
        }
    }

    /// The pool that serves memory of `kind`: GPU N's own with `pool_per_gpu` (N ≥ 1), else
    /// the engine's first.
    fn pool_for(&self, kind: MemoryKind) -> &Pool {
        match Self::pool_index(kind, self.gpu_pools.len()) {
            0 => &self.pool,
            n => self.gpu_pools[n - 1]
                .get_or_init(|| Pool::new(self.spec.clone(), &format!("gdio-gpu{n}"))),
        }
    }

    /// Which pool serves memory of `kind` with `gpu_pools` pools of GPUs after the first: 0 for
    /// the engine's first pool, N for GPU N's own.
    fn pool_index(kind: MemoryKind, gpu_pools: usize) -> usize {
        match kind {
            MemoryKind::Device { ordinal } if (1..=gpu_pools).contains(&ordinal) => ordinal,
            _ => 0,
        }
    }

    /// Waits until `n` workers of the engine's first pool wait for work (tests let them settle
    /// before a request whose plan depends on it); fails the test after 10 s.
    #[cfg(test)]
    pub(crate) fn wait_idle(&self, n: usize) {
        let start = std::time::Instant::now();
        while self.pool.idle_workers() < n && start.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(self.pool.idle_workers(), n, "workers did not go idle");
    }

    /// Worker pools started so far (one, or with `pool_per_gpu` one more per GPU after the
    /// first that has had work).
    pub fn pools(&self) -> usize {
        1 + self.gpu_pools.iter().filter(|p| p.get().is_some()).count()
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
        let (ahead_pinned, ahead_gpu) = self.read_ahead.held_bytes();
        EngineCounters {
            buffered_read_bytes: c.buffered_read.load(Ordering::Relaxed),
            direct_read_bytes: c.direct_read.load(Ordering::Relaxed),
            page_cache_dma_bytes: c.mapped_read.load(Ordering::Relaxed),
            buffered_write_bytes: c.buffered_write.load(Ordering::Relaxed),
            direct_write_bytes: c.direct_write.load(Ordering::Relaxed),
            gathered_reads: c.gathered_reads.load(Ordering::Relaxed),
            scattered_reads: c.scattered_reads.load(Ordering::Relaxed),
            gathered_writes: c.gathered_writes.load(Ordering::Relaxed),
            adjacent_pieces: c.adjacent_pieces.load(Ordering::Relaxed),
            split_reads: c.split_reads.load(Ordering::Relaxed),
            split_pieces_helped: c.split_pieces_helped.load(Ordering::Relaxed),
            split_early_copies: c.split_early_copies.load(Ordering::Relaxed),
            watcher_finished: c.watcher_finished.load(Ordering::Relaxed),
            inline_requests: c.inline_requests.load(Ordering::Relaxed),
            inline_busy: c.inline_busy.load(Ordering::Relaxed),
            caller_lanes_made: c.caller_lanes_made.load(Ordering::Relaxed),
            pinned_reads: c.pinned_reads.load(Ordering::Relaxed),
            page_cache_pinned_bytes: self.pins.pinned_bytes(),
            read_ahead_reads: c.read_ahead_reads.load(Ordering::Relaxed),
            read_ahead_bytes: c.read_ahead_bytes.load(Ordering::Relaxed),
            read_ahead_started_bytes: c.read_ahead_started.load(Ordering::Relaxed),
            read_ahead_unused_bytes: c.read_ahead_unused.load(Ordering::Relaxed),
            read_ahead_pinned_bytes: ahead_pinned,
            read_ahead_gpu_bytes: ahead_gpu,
            io_uring_reads: self.io.uring_reads.load(Ordering::Relaxed),
            worker_time: c.time.snapshot(),
        }
    }

    /// Why the workers read with `pread` although `io_engine` (`auto` or `io_uring`) wanted
    /// io_uring: the error of the first ring that could not be set up (seccomp,
    /// `kernel.io_uring_disabled`, an old kernel) and the platform probe's finding. `None`
    /// while no ring failed, or with `io_engine` `pread`.
    pub fn io_uring_unavailable(&self) -> Option<String> {
        self.io.unavailable().map(str::to_owned)
    }

    /// Allocates every worker's stream and pinned bounce buffers for GPU `ordinal` now, so the
    /// first I/O to that GPU does not pay for them. Once per GPU: later calls return at once
    /// (a call while another thread is making them waits for it).
    pub fn prepare_gpu(&self, ordinal: usize) -> Result<()> {
        self.pool_for(MemoryKind::Device { ordinal }).ensure_warm(ordinal)
    }

    /// Whether [`Engine::prepare_gpu`] has made GPU `ordinal`'s streams and buffers.
    pub fn gpu_prepared(&self, ordinal: usize) -> bool {
        self.pool_for(MemoryKind::Device { ordinal }).is_warm(ordinal)
    }

    /// Makes sure every worker has its stream and bounce buffers for GPU `ordinal` (once per
    /// GPU), so that stream-ordered I/O creates no GPU resource while it holds a caller's
    /// stream: the CUDA driver blocks resource creation in every thread while any thread waits
    /// in a pageable copy, and a pageable copy queued behind the I/O on that stream would then
    /// never start (`bench/pageable-gate-probe.c`).
    pub(crate) fn prepare_stream_ordered(&self, ordinal: usize) -> Result<()> {
        self.pool_for(MemoryKind::Device { ordinal }).ensure_warm(ordinal)
    }

    /// Like [`Engine::submit`], for stream-ordered I/O: the job creates no GPU resource (a
    /// cold read keeps one `O_DIRECT` chunk in flight per worker instead of growing the
    /// worker's ring); [`Engine::prepare_stream_ordered`] made what it needs beforehand.
    ///
    /// # Safety
    /// As [`Engine::submit`].
    pub(crate) unsafe fn submit_stream_ordered(
        &self,
        op: Op,
        file: &Arc<FileHandle>,
        buf: BufferRef,
        offset: u64,
    ) -> Result<EngineIo> {
        let (mut job, len) = self.checked_job(op, JobFile::Shared(file.clone()), buf, offset)?;
        job.direct_in_flight = 1;
        self.start_job(job, offset, len, None, None)
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

    /// Checks a request and clamps a read at the end of the file; `None` when there is nothing
    /// to move.
    fn check(&self, op: Op, file: &FileHandle, len: u64, offset: u64) -> Result<Option<u64>> {
        // No overflow, no end past the largest file offset (off_t is signed).
        let end = file.check_range(offset, len)?;
        match op {
            Op::Read if !file.is_readable() => {
                return Err(Error::new(ErrorKind::PermissionDenied, "handle was opened write-only")
                    .with_errno(libc::EBADF)
                    .with_path(file.path())
                    .with_range(offset, len))
            }
            Op::Write if !file.is_writable() => {
                return Err(Error::new(
                    ErrorKind::PermissionDenied,
                    "handle was opened read-only; open it for writing",
                )
                .with_errno(libc::EBADF)
                .with_path(file.path())
                .with_range(offset, len))
            }
            _ => {}
        }
        if len == 0 {
            return Ok(None);
        }
        if op == Op::Write {
            return Ok(Some(len));
        }
        let mut size = file.size();
        if end > size {
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
        Ok(Some(len.min(size - offset)))
    }

    /// Builds the job of a checked request of `len` bytes.
    fn job(&self, op: Op, file: JobFile, buf: BufferRef, offset: u64, len: u64) -> Job {
        let fh = match &file {
            // SAFETY: the caller of `job` holds the handle for the whole call.
            JobFile::Borrowed(p) => unsafe { &**p },
            JobFile::Shared(f) => &**f,
        };
        let align = transfer::direct_align(fh);
        let mut tasks = plan::split(offset, len, self.config.task_bytes() as u64, align);
        let mut split = false;
        let mut split_read = None;
        // Reads into GPU memory are counted in flight by their pool, and a one-task one may be
        // split over its free workers.
        let gpu_read = op == Op::Read && matches!(buf.kind, MemoryKind::Device { .. });
        let pool = gpu_read.then(|| self.pool_for(buf.kind));
        if let (1, Some(pool)) = (tasks.len(), pool) {
            let one_buffer = self.splits_into_one_buffer(offset, len, align);
            let others = pool.reads_open();
            if let Some(size) = self.split_size(len, pool, others, one_buffer) {
                let pieces = plan::split(offset, len, size, align);
                if one_buffer {
                    // Each worker's share in `split_pieces_per_worker` pieces, taken one at a
                    // time by whoever is free first.
                    let per = self.config.split_pieces_per_worker.max(1) as u64;
                    let piece = size.div_ceil(per).next_multiple_of(4096);
                    let fine = plan::split(offset, len, piece, align);
                    // A long read alone in flight (or beside at most
                    // `split_early_copy_max_others`) may copy its first parts early.
                    let early = self.config.split_early_copy
                        && others <= self.config.split_early_copy_max_others
                        && len >= self.config.split_early_copy_min_bytes;
                    let parts = if early { self.config.split_early_copy_parts } else { 0 };
                    split_read = Some(split_read::SplitRead::new(fine, pieces.len(), parts));
                } else {
                    tasks = pieces;
                }
                split = true;
                self.counters.split_reads.fetch_add(1, Ordering::Relaxed);
            }
        }
        let mut job = Job::new(
            op,
            file,
            buf,
            offset,
            len,
            tasks,
            self.direct_choice(op),
            Some(self.counters.clone()),
        );
        job.buffered_chunk = self.config.buffered_chunk_size.max(4096) as u64;
        job.file_writers = self.config.file_writers;
        job.direct_in_flight = self.config.direct_reads_in_flight.clamp(1, 64);
        job.page_cache_dma = self.config.page_cache_dma && op == Op::Read;
        job.split = split;
        job.split_read = split_read;
        if let Some(pool) = pool {
            job.hold_open(pool.open_read());
        }
        job
    }

    /// The task size that spreads a one-task read of `len` bytes over the free workers of
    /// `pool` (`split_min_bytes`; [`Pool::free_workers`]: not running a job nor spoken for by
    /// queued work, whether asleep, polling for work or waiting for copies to land), or `None`
    /// to keep it whole: too small, or fewer than two workers to spare. A worker is left for
    /// each of the `others` reads into GPU memory in flight ([`Pool::reads_open`], read once
    /// by the caller): with as many reads in flight as workers, each keeps a worker busy
    /// whole, and a piece would only take half a bounce buffer and a worker that the next read
    /// needs.
    ///
    /// Pieces are at least `split_min_bytes`, except for a read alone in flight whose pieces
    /// share one bounce buffer and one copy (`one_buffer`, [`Engine::splits_into_one_buffer`]):
    /// it may take every free worker, in pieces down to a quarter of that. A lone caller's
    /// 4 MiB reads otherwise kept 8 of 12 workers idle (H200, KvikIO's default one thread
    /// through gdio's libcufile: a call 0.38 ms, 10.9 GB/s; BENCHMARKS.md session 38 runs 4
    /// to 6). Pieces with copies of their own keep the minimum, so that no copy gets smaller.
    fn split_size(&self, len: u64, pool: &Pool, others: usize, one_buffer: bool) -> Option<u64> {
        let min = self.config.split_min_bytes as u64;
        if min == 0 {
            return None;
        }
        let others = others as u64;
        let alone = if others == 0 && one_buffer { len / (min / 4).max(4096) } else { 0 };
        let by_len = (len / min).max(alone);
        let free = pool.free_workers() as u64;
        let spare = (pool.threads() as u64).saturating_sub(others);
        let pieces = free.min(spare).min(by_len);
        (pieces >= 2).then(|| len.div_ceil(pieces).next_multiple_of(4096))
    }

    /// Whether the pieces of a split read of `len` bytes at `offset` go into one bounce buffer
    /// (`split_into_one_buffer`): the task fits one buffer wherever a direct read would place
    /// it, it goes through bounce buffers (not `page_cache_dma`), and its pieces are read with
    /// `pread` (not `io_engine` `io_uring`, which reads a worker's own chunks).
    fn splits_into_one_buffer(&self, offset: u64, len: u64, align: u64) -> bool {
        let c = &self.config;
        c.split_into_one_buffer
            && !c.page_cache_dma
            && c.io_engine != crate::config::IoEngine::IoUring
            && offset % align.max(1) + len <= c.bounce_buffer_bytes() as u64
    }

    /// Queues a job for the workers (`threads`, for writes `write_threads`), or holds it in
    /// `bulk` when one is given.
    fn queue(&self, job: &Arc<Job>, bulk: Option<&mut Bulk>) -> Result<()> {
        let pool = self.pool_for(job.buf.kind);
        let cap =
            if job.op == Op::Write { self.config.write_threads.max(1) } else { pool.threads() };
        // A read split into one buffer is one task, queued for the workers its split counted.
        let tasks = job.split_read.as_ref().map_or(job.tasks.len(), |s| s.workers());
        let workers = tasks.min(cap);
        let queued = match bulk {
            Some(b) => {
                // One held group per pool (a batch may hold I/Os for several GPUs).
                let at = Self::pool_index(job.buf.kind, self.gpu_pools.len());
                if b.held.len() <= at {
                    b.held.resize_with(at + 1, || None);
                }
                let r = pool.hold(job, workers, &mut b.held[at]);
                if b.held[at].as_ref().is_some_and(|h| h.len() >= self.config.batch_queue_group) {
                    b.flush();
                }
                r
            }
            None => pool.submit(job, workers),
        };
        queued.map_err(|e| e.with_path(job.file().path()))
    }

    fn transfer(job: &Job) -> Result<Transfer> {
        job.wait_until(None);
        let (bytes, direct_bytes, mapped_bytes) = job.outcome()?;
        Ok(Transfer { bytes, direct_bytes, mapped_bytes })
    }

    /// What a submitted job moved, once it is done; a write that succeeded moves the file's
    /// known end.
    fn settled(job: &Job) -> Result<Transfer> {
        let t = Self::transfer(job);
        if job.op == Op::Write && job.len > 0 && t.is_ok() {
            job.file().note_written_end(job.offset + job.len);
        }
        t
    }

    fn run_sync(&self, op: Op, file: &FileHandle, buf: BufferRef, offset: u64) -> Result<Transfer> {
        let Some(len) = self.check(op, file, buf.len as u64, offset)? else {
            return Ok(Transfer::default());
        };
        if let Some(t) = self.read_pinned(op, file, buf, offset, len) {
            return t;
        }
        // Read-ahead sees the length asked for: the last read of a sequence, cut at the end of
        // the file, is still one of it.
        let _caller = gpu_read(op, &buf).and_then(|_| self.read_ahead.enter(buf.len as u64));
        if let Some(t) = self.read_ahead(op, file, buf, offset, len) {
            return t;
        }
        let job = self.job(op, JobFile::Borrowed(file), buf, offset, len);
        // A single task runs on the calling thread: no hand-off, no wake-up. Host memory in
        // place; device memory through the thread's own lane when it is small (not for
        // page-cache DMA; a lone thread cannot overlap a large task's copy with more reads)
        // and few callers have small requests in flight (many are served better by the
        // workers, which gather small reads and keep a few streams busy). The caller counts
        // among those until its request is done, whichever way it went.
        let since = std::time::Instant::now();
        let mut _small_caller = None;
        let inline = match buf.kind {
            _ if job.tasks.len() != 1 => false,
            MemoryKind::Device { ordinal }
                if !job.page_cache_dma && len <= self.config.inline_max_bytes as u64 =>
            {
                let callers = self.small_callers.fetch_add(1, Ordering::AcqRel) + 1;
                _small_caller = Some(SmallCaller(&self.small_callers));
                if self.crowded(callers) {
                    self.counters.inline_busy.fetch_add(1, Ordering::Relaxed);
                    false
                } else {
                    self.run_inline(ordinal, &job, callers)
                }
            }
            MemoryKind::Device { .. } => false,
            _ => {
                if let Some(task) = job.claim() {
                    pool::run_host_task(&job, task, &mut ring::WorkerRing::none());
                }
                true
            }
        };
        if inline {
            self.counters.time.add(worker_time::Phase::Inline, since);
            self.counters.inline_requests.fetch_add(1, Ordering::Relaxed);
            return Self::settled(&job);
        }
        // Not queued: canceled, so the job counts as done before it is dropped.
        let job = self.launch(Arc::new(job), offset, len, None)?;
        self.poll_while_few_open(&job);
        Self::settled(&job)
    }

    /// A synchronous read into GPU memory with at most [`Engine::polling_callers`] reads open
    /// in its pool (`lone_caller_polls`, `polling_callers_max`): the caller polls the job's
    /// done flag for up to `completion_spin_us` instead of going to sleep at once, and stops
    /// as soon as more reads open, so that only callers with a core of their own keep one
    /// busy (a crowd of polling callers takes the workers' cores).
    fn poll_while_few_open(&self, job: &Job) {
        if self.polling_callers == 0
            || job.op != Op::Read
            || !matches!(job.buf.kind, MemoryKind::Device { .. })
        {
            return;
        }
        let pool = self.pool_for(job.buf.kind);
        let spin = pool.shape().polling.spin;
        let start = std::time::Instant::now();
        while !job.is_done() && pool.reads_open() <= self.polling_callers && start.elapsed() < spin
        {
            std::hint::spin_loop();
        }
        if job.is_done() {
            self.counters.time.polled();
        }
    }

    /// A read into GPU memory out of page-cache pins, when they hold all of it (on the calling
    /// thread: one DMA per pinned chunk); `None` otherwise, having counted the read towards
    /// pinning the chunks it will read.
    fn read_pinned(
        &self,
        op: Op,
        file: &FileHandle,
        buf: BufferRef,
        offset: u64,
        len: u64,
    ) -> Option<Result<Transfer>> {
        let ordinal = gpu_read(op, &buf)?;
        let span = self.pins.cover(file, offset, len, ordinal)?;
        let read =
            pinned_read::read(&self.runtime, ordinal, &span, buf.addr, self.pool.shape().polling)?;
        Some(match read {
            Ok(bytes) => {
                self.counters.mapped_read.fetch_add(bytes, Ordering::Relaxed);
                self.counters.pinned_reads.fetch_add(1, Ordering::Relaxed);
                Ok(Transfer { bytes, direct_bytes: 0, mapped_bytes: bytes })
            }
            Err(e) => Err(kept_read_error(e, "page-cache pins", "page_cache_pins_max_bytes")
                .with_path(file.path())
                .with_range(offset, len)),
        })
    }

    /// A read into GPU memory out of read-ahead, when a range read ahead holds it (waiting for
    /// that read if it still runs, then one copy on the calling thread); `None` otherwise,
    /// having counted the read towards its file's sequence and read ahead of it when the
    /// sequence is long enough (`read_ahead_bytes`, [`read_ahead`]).
    fn read_ahead(
        &self,
        op: Op,
        file: &FileHandle,
        buf: BufferRef,
        offset: u64,
        len: u64,
    ) -> Option<Result<Transfer>> {
        let ordinal = gpu_read(op, &buf)?;
        let start = |f: &Arc<FileHandle>, b: BufferRef, at: u64| {
            // SAFETY: `b` is a slot of read-ahead's memory (pinned, or GPU memory of the
            // engine's own), which nothing reads, writes or frees until this read is over: a
            // slot is handed out, read into again or freed only once its `EngineIo` is done or
            // dropped (which waits).
            unsafe { self.submit(Op::Read, f, b, at) }
        };
        let taken = self.read_ahead.look(file, offset, buf.len as u64, ordinal, &start)?;
        let (src, n) = taken.wait()?;
        let mut polling = self.pool.shape().polling;
        if self.read_ahead.callers() > self.polling_callers {
            // More callers than cores to spare: each sleeps on its copy instead of spinning.
            polling.spin = std::time::Duration::ZERO;
        }
        // SAFETY: the slot is pinned memory, or memory of GPU `ordinal` (`look` hands out
        // GPU memory only to reads into its GPU), that `taken` keeps (read, unchanged) until it
        // is dropped after this copy; the caller of `read` promises `buf` is device memory it
        // may write, `len` ≥ `n` bytes of it, apart from the engine's own.
        let read = unsafe {
            pinned_read::read_pieces(&self.runtime, ordinal, &[(src, n)], buf.addr, polling)
        }?;
        Some(match read {
            Ok(bytes) => {
                taken.served();
                Ok(Transfer { bytes, direct_bytes: 0, mapped_bytes: 0 })
            }
            Err(e) => Err(kept_read_error(e, "read-ahead", "read_ahead_bytes")
                .with_path(file.path())
                .with_range(offset, len)),
        })
    }

    /// Whether small requests go to the workers with `callers` callers (this one included)
    /// having them in flight (`inline_max_callers`; see the `crowded` field).
    fn crowded(&self, callers: usize) -> bool {
        // Written only when it changes: every small request of a crowd asks, from many
        // threads, and a store each time would bounce the flags' cache line between them.
        let set = |flag: &AtomicBool, to: bool| {
            if flag.load(Ordering::Relaxed) != to {
                flag.store(to, Ordering::Relaxed);
            }
        };
        let max = self.config.inline_max_callers;
        if max == 0 {
            false
        } else if callers > max {
            set(&self.crowded, true);
            set(&self.crowd_seen, true);
            true
        } else if callers <= max / 2 {
            set(&self.crowded, false);
            false
        } else {
            self.crowded.load(Ordering::Relaxed)
        }
    }

    /// Whether a thread without an inline lane may make one with `callers` small callers in
    /// flight (itself included): always before any crowd, afterwards only alone (see the
    /// `crowd_seen` field).
    fn may_make_lane(&self, callers: usize) -> bool {
        callers == 1 || !self.crowd_seen.load(Ordering::Relaxed)
    }

    /// Runs a one-task request into or out of GPU memory on the calling thread's own lane;
    /// false when the thread has no lane (or, after a crowd, has none made yet and is not the
    /// only one of `callers` small callers: counted in `inline_busy`).
    fn run_inline(&self, ordinal: usize, job: &Job, callers: usize) -> bool {
        let may_make = self.may_make_lane(callers);
        match caller_lane::run(&self.runtime, self.pool.shape(), ordinal, job, may_make) {
            Some(made_lane) => {
                if made_lane {
                    self.counters.caller_lanes_made.fetch_add(1, Ordering::Relaxed);
                }
                true
            }
            None => {
                if !may_make {
                    self.counters.inline_busy.fetch_add(1, Ordering::Relaxed);
                }
                false
            }
        }
    }

    /// Reads up to `dst.len` bytes at `offset` into `dst`. Fewer bytes come back only when the
    /// file ends first. An offset past the end of the file is an error.
    ///
    /// # Safety
    /// `dst` must describe memory of this process (host memory, or device memory of the
    /// runtime's GPUs) valid for writes of `dst.len` bytes and not accessed by anything else
    /// until the call returns.
    pub unsafe fn read(&self, file: &FileHandle, dst: BufferRef, offset: u64) -> Result<Transfer> {
        self.run_sync(Op::Read, file, dst, offset)
    }

    /// Writes all `src.len` bytes of `src` at `offset`.
    ///
    /// # Safety
    /// `src` must describe memory of this process valid for reads of `src.len` bytes until the
    /// call returns.
    pub unsafe fn write(&self, file: &FileHandle, src: BufferRef, offset: u64) -> Result<Transfer> {
        self.run_sync(Op::Write, file, src, offset)
    }

    /// Starts `op` on `buf` at `offset` of `file` and returns at once; the returned [`EngineIo`]
    /// waits for it, and its drop blocks until the I/O has finished. Reads are clamped at the
    /// end of the file, as [`Engine::read`] does.
    ///
    /// # Safety
    /// `buf` must describe memory of this process valid for `op` (writes for a read, reads for
    /// a write) of `buf.len` bytes, not accessed by anything else (not read either, for a
    /// read) until the returned [`EngineIo`] reports the I/O done or is dropped. Forgetting the
    /// [`EngineIo`] (`mem::forget`) means the memory must stay valid for ever.
    pub unsafe fn submit(
        &self,
        op: Op,
        file: &Arc<FileHandle>,
        buf: BufferRef,
        offset: u64,
    ) -> Result<EngineIo> {
        // SAFETY: forwarded contract.
        unsafe { self.submit_with(op, file, buf, offset, None, None) }
    }

    /// Like [`Engine::submit`], notifying `notifier` when the job completes. With `bulk`, the
    /// job is held there and queued, with every other job held there, when `bulk` is flushed
    /// or dropped (see [`Bulk`]).
    ///
    /// # Safety
    /// As [`Engine::submit`].
    pub(crate) unsafe fn submit_with(
        &self,
        op: Op,
        file: &Arc<FileHandle>,
        buf: BufferRef,
        offset: u64,
        notifier: Option<Arc<Notifier>>,
        bulk: Option<&mut Bulk>,
    ) -> Result<EngineIo> {
        // SAFETY: forwarded contract; the job keeps the file alive itself.
        unsafe { self.start(op, JobFile::Shared(file.clone()), buf, offset, notifier, bulk) }
    }

    /// Like [`Engine::submit`] on a borrowed file.
    ///
    /// # Safety
    /// As [`Engine::submit`], and `file` must outlive the returned [`EngineIo`] and the I/O
    /// (the caller waits for it, without the chance of a `mem::forget`, before the borrow
    /// ends).
    pub(crate) unsafe fn submit_borrowed(
        &self,
        op: Op,
        file: &FileHandle,
        buf: BufferRef,
        offset: u64,
    ) -> Result<EngineIo> {
        // SAFETY: forwarded contract.
        unsafe { self.start(op, JobFile::Borrowed(file), buf, offset, None, None) }
    }

    /// # Safety
    /// As [`Engine::submit_borrowed`].
    unsafe fn start(
        &self,
        op: Op,
        file: JobFile,
        buf: BufferRef,
        offset: u64,
        notifier: Option<Arc<Notifier>>,
        bulk: Option<&mut Bulk>,
    ) -> Result<EngineIo> {
        let (job, len) = self.checked_job(op, file, buf, offset)?;
        self.start_job(job, offset, len, notifier, bulk)
    }

    /// The job for `op` on `buf` at `offset` of `file`, once the request passed
    /// [`Engine::check`], with the bytes it moves (a read clamped at the end of the file).
    fn checked_job(
        &self,
        op: Op,
        file: JobFile,
        buf: BufferRef,
        offset: u64,
    ) -> Result<(Job, u64)> {
        let fh = match &file {
            // SAFETY: the submitter keeps a borrowed handle alive until the job is done (the
            // contract of every submission that passes one).
            JobFile::Borrowed(p) => unsafe { &**p },
            JobFile::Shared(f) => &**f,
        };
        let len = self.check(op, fh, buf.len as u64, offset)?.unwrap_or(0);
        Ok((self.job(op, file, buf, offset, len), len))
    }

    /// Like [`Engine::submit`] without a handle: `done` gets the result once the I/O is over,
    /// on the worker thread that finished it (or on this thread when there is nothing to move).
    /// When this returns an error, `done` is never called.
    ///
    /// # Safety
    /// As [`Engine::submit`]: the buffer stays valid, and untouched by anything else, until
    /// `done` has been called.
    pub(crate) unsafe fn submit_then(
        &self,
        op: Op,
        file: &Arc<FileHandle>,
        buf: BufferRef,
        offset: u64,
        done: Box<dyn FnOnce(Result<Transfer>) + Send>,
        bulk: Option<&mut Bulk>,
    ) -> Result<()> {
        let (mut job, len) = self.checked_job(op, JobFile::Shared(file.clone()), buf, offset)?;
        job.set_done_hook(Box::new(move |job: &Job| done(Self::settled(job))));
        self.launch(Arc::new(job), offset, len, bulk).map(drop)
    }

    /// Queues `job` (or completes it at once when it has nothing to move).
    fn start_job(
        &self,
        mut job: Job,
        offset: u64,
        len: u64,
        notifier: Option<Arc<Notifier>>,
        bulk: Option<&mut Bulk>,
    ) -> Result<EngineIo> {
        if let Some(n) = notifier {
            job.set_notifier(n);
        }
        let job = self.launch(Arc::new(job), offset, len, bulk)?;
        Ok(EngineIo { job })
    }

    /// Queues `job`, or completes it at once when it has nothing to move. When it cannot be
    /// queued it is canceled without running its done hook (the error is the caller's).
    fn launch(
        &self,
        job: Arc<Job>,
        offset: u64,
        len: u64,
        bulk: Option<&mut Bulk>,
    ) -> Result<Arc<Job>> {
        if job.is_done() {
            job.notify_done();
        } else if let Err(e) = self.queue(&job, bulk) {
            job.take_done_hook();
            job.cancel();
            return Err(e.with_range(offset, len));
        }
        Ok(job)
    }

    /// Checks `op` of `len` bytes at `offset` as a submission would, without starting it.
    pub(crate) fn validate(&self, op: Op, file: &FileHandle, len: u64, offset: u64) -> Result<()> {
        self.check(op, file, len, offset).map(|_| ())
    }
}

/// The GPU that a read into GPU memory goes to; `None` for writes and host memory.
fn gpu_read(op: Op, buf: &BufferRef) -> Option<usize> {
    match (op, buf.kind) {
        (Op::Read, MemoryKind::Device { ordinal }) => Some(ordinal),
        _ => None,
    }
}

/// A failed copy out of pinned memory the engine keeps (`what`: page-cache pins or
/// read-ahead), saying which key turns that path off.
fn kept_read_error(e: Error, what: &str, key: &str) -> Error {
    e.map_message(|m| {
        format!(
            "a read out of {what} failed: {m} ({key}=0 reads through the bounce buffers instead)"
        )
    })
}

/// Jobs that one call submitting many I/Os (a batch) holds back and queues together: one trip
/// through the workers' queue and one round of wake-ups per group instead of one per I/O, and
/// a queue deep enough at once for each worker to take a share of small reads and gather them
/// into one copy. A group goes out when `batch_queue_group` jobs wait (so the first I/O of a
/// long batch does not wait for the whole batch) and when the call ends ([`Bulk::flush`], or
/// on drop).
#[derive(Default)]
pub(crate) struct Bulk {
    /// Held jobs per pool (index 0: the engine's first pool; N: GPU N's own).
    held: Vec<Option<pool::Held>>,
}

impl Bulk {
    /// Queues every held job now.
    pub(crate) fn flush(&mut self) {
        for h in self.held.iter_mut().flatten() {
            h.flush();
        }
    }
}

/// True when every worker and one caller can each poll on a core of its own: only then do idle
/// workers poll for new work, and batch waiters for completions, before they sleep (spinning
/// threads that outnumber the cores take the cores from the threads doing the I/O).
pub(crate) fn may_poll_while_idle(config: &Config) -> bool {
    may_poll_on(config, cores())
}

/// The cores this process may run on.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// [`may_poll_while_idle`] on `cores` cores.
fn may_poll_on(config: &Config, cores: usize) -> bool {
    config.completion_spin_us > 0 && config.threads.max(1) < cores
}

/// How many reads into GPU memory may be open in a pool while synchronous callers poll theirs
/// (`lone_caller_polls`, `polling_callers_max`): none without polling, at most the cores left
/// over by the workers and the completion watcher, and always a caller alone where every
/// worker and it have a core of their own ([`may_poll_while_idle`]).
fn polling_callers(config: &Config) -> usize {
    polling_callers_on(config, cores())
}

/// [`polling_callers`] on `cores` cores.
fn polling_callers_on(config: &Config, cores: usize) -> usize {
    if !config.lone_caller_polls || !may_poll_on(config, cores) {
        return 0;
    }
    let spare = cores.saturating_sub(config.threads.max(1) + 1);
    config.polling_callers_max.min(spare).max(1)
}

/// Bounce buffer size of a worker's own-stream lane (`own_stream_max_bytes`): enough for the
/// largest task it serves and a gathered group, in whole pages, never above the shared lanes'.
fn own_lane_size(config: &Config) -> usize {
    let want = config.own_stream_max_bytes.max(config.gather_max_bytes).max(1);
    want.div_ceil(4096).saturating_mul(4096).min(config.bounce_buffer_bytes())
}

/// One I/O started with [`Engine::submit`]. Dropping it blocks until the I/O has finished, so
/// nothing touches its buffer afterwards.
#[derive(Debug)]
pub struct EngineIo {
    job: Arc<Job>,
}

impl EngineIo {
    /// True once the I/O has finished (the buffer is the caller's again).
    pub fn is_done(&self) -> bool {
        self.job.is_done()
    }

    /// Blocks until the I/O has finished or `timeout` passed; true when it finished.
    pub fn wait_timeout(&self, timeout: std::time::Duration) -> bool {
        self.job.wait_until(std::time::Instant::now().checked_add(timeout))
    }

    /// Blocks until the I/O has finished and returns what it moved.
    pub fn wait(&self) -> Result<Transfer> {
        Engine::settled(&self.job)
    }

    /// Stops the tasks that have not started; tasks in flight finish. The I/O then completes
    /// with an `ECANCELED` error unless every task had already run. Returns false when the I/O
    /// had already finished.
    pub fn cancel(&self) -> bool {
        self.job.cancel()
    }

    /// True when the I/O was canceled before all of it ran.
    pub fn was_canceled(&self) -> bool {
        self.job.was_canceled()
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        caller_lane::engine_stopped(&self.runtime);
    }
}

impl Drop for EngineIo {
    fn drop(&mut self) {
        self.job.wait_until(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::sim::SimRuntime;
    use std::time::Duration;

    /// Large buffered writes into one file, out of host memory and out of simulated GPU
    /// memory, on the temp dir's filesystem and on tmpfs, each `pwrite` held 200 ms by the
    /// fault seam (a writer that keeps the file's inode lock long): with no `file_writers`
    /// limit several are in the file at once, with a limit of 2 exactly 2 at most; every byte
    /// lands. (`tests/file_writers.rs` checks the limits with no delay, where whether writers
    /// overlap is up to the scheduler.)
    #[test]
    fn slow_large_writes_overlap_without_a_limit_and_keep_to_a_limit() {
        use crate::file::fault::{self, FaultPlan};
        use crate::{DirectIoPolicy, Driver, OpenOptions};
        use rand::{RngCore, SeedableRng};
        let mut dirs = vec![tempfile::tempdir().unwrap()];
        dirs.extend(tempfile::tempdir_in("/dev/shm").ok());
        let (writes, len) = (6usize, 1usize << 20);
        for (d, from_device, limit) in dirs
            .iter()
            .flat_map(|d| [false, true].map(|dev| (d, dev)))
            .flat_map(|(d, dev)| [0usize, 2].map(|limit| (d, dev, limit)))
        {
            let what = format!("{} device {from_device} limit {limit}", d.path().display());
            let mut r = rand::rngs::StdRng::seed_from_u64(40 + limit as u64);
            let (mut before, mut src) = (vec![0u8; writes * len + 4096], vec![0u8; writes * len]);
            r.fill_bytes(&mut before);
            r.fill_bytes(&mut src);
            let path = d.path().join(format!("w{limit}{from_device}"));
            std::fs::write(&path, &before).unwrap();
            let config = Config {
                threads: writes,
                write_threads: writes,
                task_size: len,
                bounce_buffer_size: len,
                buffered_chunk_size: len,
                direct_io: DirectIoPolicy::Off,
                file_writers: limit,
                ..Config::default()
            };
            let drv =
                Driver::with_runtime(config, Arc::new(SimRuntime::new(1, Duration::ZERO))).unwrap();
            let file =
                FileHandle::open_with(&path, OpenOptions::new().read(true).write(true)).unwrap();
            let dev = from_device.then(|| {
                let mut dev = drv.alloc_device(0, src.len()).unwrap();
                dev.copy_from_host(0, &src).unwrap();
                dev
            });
            let delay = Some(Duration::from_millis(200));
            let slow = fault::inject(&path, FaultPlan { write_delay: delay, ..Default::default() })
                .unwrap();
            // Write i lands at MiB i + 4096 bytes, off the file's MiB boundaries.
            std::thread::scope(|s| {
                for i in 0..writes {
                    let (drv, file, dev, src, what) = (&drv, &file, &dev, &src, &what);
                    s.spawn(move || {
                        let at = (4096 + i * len) as u64;
                        let n = match dev {
                            Some(dev) => drv.write(file, at, dev, i * len, len),
                            None => drv.write(file, at, &src[..], i * len, len),
                        };
                        assert_eq!(n.unwrap(), len, "{what}: write {i}");
                    });
                }
            });
            assert_eq!(slow.written(), (writes * len) as u64, "{what}: bytes written");
            drop(slow);
            before[4096..].copy_from_slice(&src);
            assert!(std::fs::read(&path).unwrap() == before, "{what}: the file differs");
            let most = file.most_writers_at_once();
            if limit == 0 {
                assert!(most >= 2, "{what}: {most} writer(s) at once, each held 200 ms");
            } else {
                assert_eq!(most, limit, "{what}: {most} writers at once");
            }
        }
    }

    #[test]
    fn callers_poll_only_on_cores_the_workers_and_the_watcher_leave_over() {
        let with = |threads, max, polls, spin| Config {
            threads,
            polling_callers_max: max,
            lone_caller_polls: polls,
            completion_spin_us: spin,
            ..Config::default()
        };
        // 12 workers and the watcher on 16 cores leave 3 over.
        assert_eq!(polling_callers_on(&with(12, 1, true, 50), 16), 1);
        assert_eq!(polling_callers_on(&with(12, 2, true, 50), 16), 2);
        assert_eq!(polling_callers_on(&with(12, 3, true, 50), 16), 3);
        assert_eq!(polling_callers_on(&with(12, 8, true, 50), 16), 3);
        // None over: a caller alone still polls, as long as the workers leave it a core.
        assert_eq!(polling_callers_on(&with(14, 4, true, 50), 16), 1);
        assert_eq!(polling_callers_on(&with(15, 4, true, 50), 16), 1);
        // Workers on every core, polling off, or no spinning at all: nobody polls.
        assert_eq!(polling_callers_on(&with(16, 4, true, 50), 16), 0);
        assert_eq!(polling_callers_on(&with(12, 4, false, 50), 16), 0);
        assert_eq!(polling_callers_on(&with(12, 4, true, 0), 16), 0);
        assert_eq!(polling_callers_on(&with(1, 4, true, 50), 1), 0);
    }

    #[test]
    fn pool_per_gpu_gives_each_gpu_after_the_first_a_pool_of_its_own() {
        for per_gpu in [false, true] {
            let rt: Arc<dyn GpuRuntime> = Arc::new(SimRuntime::new(3, Duration::ZERO));
            let config = Config { threads: 2, pool_per_gpu: per_gpu, ..Config::default() };
            let e = Engine::new(rt, &config);
            assert_eq!(e.pools(), 1);
            e.prepare_gpu(0).unwrap();
            assert_eq!(e.pools(), 1, "GPU 0 shares the engine's first pool");
            e.prepare_gpu(2).unwrap();
            assert_eq!(e.pools(), if per_gpu { 2 } else { 1 });
            e.prepare_gpu(1).unwrap();
            assert_eq!(e.pools(), if per_gpu { 3 } else { 1 });
            let host = e.pool_for(MemoryKind::Host) as *const Pool;
            let gpu0 = e.pool_for(MemoryKind::Device { ordinal: 0 }) as *const Pool;
            let gpu2 = e.pool_for(MemoryKind::Device { ordinal: 2 }) as *const Pool;
            assert_eq!(host, gpu0);
            assert_eq!(gpu2 != gpu0, per_gpu);
            // A GPU the runtime does not have falls back to the first pool (its I/O fails
            // where the buffer is checked, not here).
            assert_eq!(e.pool_for(MemoryKind::Device { ordinal: 9 }) as *const Pool, host);
        }
    }

    /// `split_size` for a read into one buffer with the pool's reads in flight as they are.
    fn split(e: &Engine, len: u64) -> Option<u64> {
        e.split_size(len, &e.pool, e.pool.reads_open(), true)
    }

    /// Waits for its job when dropped: a test that asserts while a job of its writes into
    /// its memory holds one, declared after that memory, so a panic never frees it first.
    struct Settles(Arc<Job>);

    impl Drop for Settles {
        fn drop(&mut self) {
            self.0.wait_until(None);
        }
    }

    fn engine(split_min: usize) -> Engine {
        let rt: Arc<dyn GpuRuntime> = Arc::new(SimRuntime::new(1, Duration::ZERO));
        let config = Config { threads: 4, split_min_bytes: split_min, ..Config::default() };
        Engine::new(rt, &config)
    }

    #[test]
    fn a_crowd_of_small_callers_goes_to_the_workers_until_it_halves() {
        let rt: Arc<dyn GpuRuntime> = Arc::new(SimRuntime::new(1, Duration::ZERO));
        let e = Engine::new(rt.clone(), &Config { inline_max_callers: 8, ..Config::default() });
        assert!(e.may_make_lane(1) && e.may_make_lane(8), "no crowd yet: lanes may be made");
        let seen: Vec<bool> = [3, 8, 9, 8, 5, 12, 4, 6].iter().map(|&n| e.crowded(n)).collect();
        assert_eq!(seen, [false, false, true, true, true, true, false, false]);
        // After a crowd, new lanes only for a caller alone.
        assert!(e.may_make_lane(1), "alone");
        assert!(!e.may_make_lane(2) && !e.may_make_lane(7), "with other callers in flight");
        let free = Engine::new(rt, &Config { inline_max_callers: 0, ..Config::default() });
        assert!([1, 100, 10_000, 1].iter().all(|&n| !free.crowded(n)), "0: no limit");
    }

    #[test]
    fn a_large_one_task_read_is_spread_over_free_workers_only_when_some_are_free() {
        let e = engine(2 << 20);
        // No worker started yet: nothing free, nothing split.
        assert_eq!(split(&e, 8 << 20), None);
        e.prepare_gpu(0).unwrap();
        e.wait_idle(4);
        // 4 free workers: 4 pieces of 2 MiB (pieces are at least 2 MiB).
        assert_eq!(split(&e, 8 << 20), Some(2 << 20));
        // 6 MiB alone: every free worker, 4 pieces of 1.5 MiB.
        assert_eq!(split(&e, 6 << 20), Some(3 << 19));
        // Under twice the minimum, alone: every free worker, in pieces of at least a quarter
        // of the minimum.
        assert_eq!(split(&e, (4 << 20) - 1), Some(1 << 20));
        assert_eq!(split(&e, 1 << 20), Some(512 << 10));
        // Under twice a quarter of the minimum: kept whole.
        assert_eq!(split(&e, (1 << 20) - 1), None);
        // Pieces that would each have a copy of their own keep the minimum.
        assert_eq!(e.split_size((4 << 20) - 1, &e.pool, 0, false), None);
        assert_eq!(e.split_size(6 << 20, &e.pool, 0, false), Some(2 << 20));
        // One other read in flight: pieces of at least the minimum (up to the 3 workers left),
        // none for a read under twice the minimum.
        let other = e.pool.open_read();
        assert_eq!(split(&e, (4 << 20) - 1), None);
        assert_eq!(split(&e, 8 << 20), Some((8u64 << 20).div_ceil(3).next_multiple_of(4096)));
        // Three others: one worker left for this read, nothing split.
        let more = [e.pool.open_read(), e.pool.open_read()];
        assert_eq!(split(&e, 8 << 20), None);
        drop((other, more));
        // Off.
        let off = engine(0);
        off.prepare_gpu(0).unwrap();
        off.wait_idle(4);
        assert_eq!(split(&off, 64 << 20), None);
    }

    #[test]
    fn every_request_leaves_the_jobs_in_flight_as_it_found_them() {
        // Page-cache pins register only while no job is in flight: a job counted and never
        // uncounted would keep them from ever being made.
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        let data: Vec<u8> =
            (0..3u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let f = Arc::new(FileHandle::open(&p).unwrap());
        let rt: Arc<dyn GpuRuntime> = Arc::new(SimRuntime::new(1, Duration::from_micros(20)));
        let e = Engine::new(rt.clone(), &Config { threads: 4, ..Config::default() });
        let in_flight = || e.counters.jobs_in_flight.load(Ordering::Relaxed);
        let dev = rt.alloc_device(0, data.len()).unwrap();
        let device =
            |len: usize| BufferRef { addr: dev, len, kind: MemoryKind::Device { ordinal: 0 } };
        let mut host = vec![0u8; data.len()];
        let host_ref =
            BufferRef { addr: host.as_mut_ptr() as u64, len: host.len(), kind: MemoryKind::Host };
        // SAFETY: the buffers are this test's, alive and untouched until each call returns
        // (the async ones are waited for or canceled and dropped before the next use).
        unsafe {
            for len in [4096, 1 << 20, 3 << 20] {
                assert_eq!(e.read(&f, device(len), 0).unwrap().bytes, len as u64);
            }
            assert_eq!(e.read(&f, host_ref, 0).unwrap().bytes, data.len() as u64);
            assert!(e.read(&f, device(4096), data.len() as u64 + 1).is_err(), "past the end");
            let io = e.submit(Op::Read, &f, device(3 << 20), 5).unwrap();
            io.wait().unwrap();
            drop(io);
            let io = e.submit(Op::Read, &f, device(3 << 20), 0).unwrap();
            io.cancel();
            drop(io);
            assert!(e.write(&f, device(1 << 20), 0).is_err(), "a read-only handle");
        }
        assert!(host == data, "the host read's bytes");
        assert_eq!(in_flight(), 0);
        // SAFETY: the allocation is this test's, and nothing uses it any more.
        unsafe { rt.free_device(0, dev) };
    }

    #[test]
    fn a_split_read_goes_into_one_buffer_only_where_its_task_fits_one_and_the_key_is_on() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, vec![9u8; 1 << 20]).unwrap();
        let f = Arc::new(FileHandle::open(&p).unwrap());
        let dev =
            BufferRef { addr: 1 << 40, len: 16 << 20, kind: MemoryKind::Device { ordinal: 0 } };
        // (tasks, pieces into one buffer) of a read of `len` at `off` with `config`.
        let shape = |config: Config, off: u64, len: u64| {
            let rt: Arc<dyn GpuRuntime> = Arc::new(SimRuntime::new(1, Duration::ZERO));
            let e = Engine::new(rt, &Config { threads: 4, task_size: 8 << 20, ..config });
            e.prepare_gpu(0).unwrap();
            e.wait_idle(4);
            let job = e.job(Op::Read, JobFile::Shared(f.clone()), dev, off, len);
            (job.tasks.len(), job.split_read.as_ref().map(|s| s.workers()))
        };
        let on = || Config { split_min_bytes: 1 << 20, ..Config::default() };
        assert_eq!(shape(on(), 0, 4 << 20), (1, Some(4)), "4 MiB fits a 4 MiB buffer");
        assert_eq!(shape(on(), 4096, 4 << 20), (1, Some(4)), "buffered: no shift");
        assert_eq!(shape(on(), 0, 8 << 20), (4, None), "8 MiB does not: pieces of their own");
        let off = Config { split_into_one_buffer: false, ..on() };
        assert_eq!(shape(off, 0, 4 << 20), (4, None), "the key off");
        let mapped = Config { page_cache_dma: true, ..on() };
        assert_eq!(shape(mapped, 0, 4 << 20), (4, None), "page-cache DMA reads no buffer");
        let uring = Config { io_engine: crate::config::IoEngine::IoUring, ..on() };
        assert_eq!(shape(uring, 0, 4 << 20), (4, None), "io_uring reads a worker's own chunks");
        // Two pieces per worker's share: 8 pieces of 512 KiB for the 4 workers.
        let rt: Arc<dyn GpuRuntime> = Arc::new(SimRuntime::new(1, Duration::ZERO));
        let e = Engine::new(rt, &Config { threads: 4, split_pieces_per_worker: 2, ..on() });
        e.prepare_gpu(0).unwrap();
        e.wait_idle(4);
        let job = e.job(Op::Read, JobFile::Shared(f.clone()), dev, 0, 4 << 20);
        let s = job.split_read.as_ref().unwrap();
        assert_eq!((job.tasks.len(), s.workers(), s.pieces()), (1, 4, 8));
        // A small read split into one buffer is never gathered, however small the pieces.
        let rt: Arc<dyn GpuRuntime> = Arc::new(SimRuntime::new(1, Duration::ZERO));
        let tiny = Config { threads: 4, split_min_bytes: 16 << 10, ..Config::default() };
        let e = Engine::new(rt, &tiny);
        e.prepare_gpu(0).unwrap();
        e.wait_idle(4);
        let job = e.job(Op::Read, JobFile::Shared(f.clone()), dev, 0, 64 << 10);
        assert!(job.split_read.is_some(), "64 KiB over 16 KiB pieces");
        assert_eq!(gather::GatherShape::from_config(&tiny).candidate(&job), None);
        // The same read unsplit (no worker started yet, none free) is a candidate: the split
        // alone keeps it out.
        let e = Engine::new(Arc::new(SimRuntime::new(1, Duration::ZERO)), &tiny);
        let job = e.job(Op::Read, JobFile::Shared(f.clone()), dev, 0, 64 << 10);
        assert!(job.split_read.is_none());
        assert!(gather::GatherShape::from_config(&tiny).candidate(&job).is_some());
        // The same with an unaligned start that O_DIRECT would shift past the buffer's end.
        let rt: Arc<dyn GpuRuntime> = Arc::new(SimRuntime::new(1, Duration::ZERO));
        let e = Engine::new(rt, &Config { threads: 4, ..on() });
        assert!(e.splits_into_one_buffer(0, 4 << 20, 4096));
        assert!(!e.splits_into_one_buffer(512, 4 << 20, 4096), "shifted past the buffer");
        assert!(e.splits_into_one_buffer(512, (4 << 20) - 512, 4096));
    }

    #[test]
    fn a_read_is_split_only_over_workers_that_other_reads_in_flight_leave() {
        let e = engine(2 << 20);
        e.prepare_gpu(0).unwrap();
        e.wait_idle(4);
        assert_eq!(split(&e, 8 << 20), Some(2 << 20), "4 pieces over 4 workers");
        // Two reads in flight leave two workers: two pieces.
        let open: Vec<_> = (0..2).map(|_| e.pool.open_read()).collect();
        assert_eq!(e.pool.reads_open(), 2);
        assert_eq!(split(&e, 8 << 20), Some(4 << 20));
        // Three leave one: kept whole, though every worker is free.
        let third = e.pool.open_read();
        assert_eq!(e.pool.free_workers(), 4);
        assert_eq!(split(&e, 8 << 20), None);
        drop((open, third));
        assert_eq!(e.pool.reads_open(), 0);
        assert_eq!(split(&e, 8 << 20), Some(2 << 20));
    }

    #[test]
    fn a_read_into_gpu_memory_is_open_until_it_is_done_or_dropped_whatever_its_outcome() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        let data: Vec<u8> =
            (0..3u32 << 20).map(|i| (i.wrapping_mul(2_246_822_519) >> 23) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let f = Arc::new(FileHandle::open(&p).unwrap());
        let rt: Arc<dyn GpuRuntime> = Arc::new(SimRuntime::new(1, Duration::ZERO));
        let e = Engine::new(rt.clone(), &Config { threads: 4, ..Config::default() });
        let dev = crate::gpu::DeviceBuffer::new(&rt, 0, data.len()).unwrap();
        let buf = dev.as_buffer_ref();
        let read = |off: u64, len: u64| e.job(Op::Read, JobFile::Shared(f.clone()), buf, off, len);
        // Made and never queued: open until dropped.
        let idle = read(0, 1 << 20);
        assert_eq!(e.pool.reads_open(), 1);
        drop(idle);
        assert_eq!(e.pool.reads_open(), 0);
        // Read through: closed once done, before the caller lets go of the job.
        let job = Arc::new(read(4096, (3 << 20) - 4096));
        assert_eq!(e.pool.reads_open(), 1);
        e.queue(&job, None).unwrap();
        assert!(job.wait_until(None));
        assert_eq!(e.pool.reads_open(), 0, "a done read is no longer in flight");
        let mut back = vec![0u8; (3 << 20) - 4096];
        dev.copy_to_host(0, &mut back).unwrap();
        assert_eq!(back, data[4096..]);
        // A read that fails is closed too.
        let bad = crate::file::fault::FaultPlan { eio_at: Some(1 << 20), ..Default::default() };
        let armed = crate::file::fault::inject(&p, bad).unwrap();
        let failing = Arc::new(read(0, 2 << 20));
        e.queue(&failing, None).unwrap();
        assert!(failing.wait_until(None));
        assert!(failing.outcome().is_err(), "the injected EIO was not seen");
        drop(armed);
        assert_eq!(e.pool.reads_open(), 0);
        // Host memory and writes are never counted.
        let mut host = vec![0u8; 4096];
        let h = BufferRef { addr: host.as_mut_ptr() as u64, len: 4096, kind: MemoryKind::Host };
        let _host_read = e.job(Op::Read, JobFile::Shared(f.clone()), h, 0, 4096);
        let _write = e.job(Op::Write, JobFile::Shared(f.clone()), buf, 0, 4096);
        assert_eq!(e.pool.reads_open(), 0);
    }

    #[test]
    fn a_worker_running_a_job_is_not_free_and_one_polling_or_asleep_is() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("slow");
        let data: Vec<u8> =
            (0..1u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let f = Arc::new(FileHandle::open(&p).unwrap());
        let e = engine(2 << 20);
        assert_eq!(e.pool.free_workers(), 0, "no worker started yet");
        e.prepare_gpu(0).unwrap();
        e.wait_idle(4);
        assert_eq!(e.pool.free_workers(), 4);
        let slow = crate::file::fault::FaultPlan {
            read_delay: Some(Duration::from_millis(300)),
            ..Default::default()
        };
        let armed = crate::file::fault::inject(&p, slow).unwrap();
        let mut out = vec![0u8; data.len()];
        let host =
            BufferRef { addr: out.as_mut_ptr() as u64, len: out.len(), kind: MemoryKind::Host };
        let job = Arc::new(e.job(Op::Read, JobFile::Shared(f.clone()), host, 0, data.len() as u64));
        // Dropped before `out`: a failed assertion below waits for the read instead of freeing
        // the memory it still writes.
        let _settles = Settles(job.clone());
        e.queue(&job, None).unwrap();
        let until = |n: usize| {
            let start = std::time::Instant::now();
            while e.pool.free_workers() != n && start.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(1));
            }
            e.pool.free_workers()
        };
        // Until a worker has taken the job off the queue: queued, it already counts as one
        // worker's (3 free), and a worker taking it counts as working before the queue count
        // drops (2 free for that instant, which a split sized meanwhile would see; qemu's
        // slower emulation caught it).
        let start = std::time::Instant::now();
        while e.pool.working() == 0 && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(e.pool.working(), 1, "no worker took the read");
        assert_eq!(until(3), 3, "the worker reading is not free");
        assert!(!job.is_done(), "the read finished before it was looked at");
        // Three workers free: an 8 MiB read goes out in three pieces.
        assert_eq!(split(&e, 8 << 20), Some((8u64 << 20).div_ceil(3).next_multiple_of(4096)));
        assert!(job.wait_until(None));
        drop(armed);
        assert_eq!(out, data);
        assert_eq!(until(4), 4, "free again once the job is done");
    }

    #[test]
    fn the_watcher_finishes_small_requests_and_split_reads_not_large_ones() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, vec![7u8; 64 << 10]).unwrap();
        let f = Arc::new(FileHandle::open(&p).unwrap());
        let e = Engine::new(
            Arc::new(SimRuntime::new(1, Duration::ZERO)),
            &Config {
                threads: 4,
                task_size: 4 << 20,
                split_min_bytes: 1 << 20,
                ..Config::default()
            },
        );
        let dev = |len| BufferRef { addr: 1 << 40, len, kind: MemoryKind::Device { ordinal: 0 } };
        let job = |op, len: u64| e.job(op, JobFile::Shared(f.clone()), dev(len as usize), 0, len);
        // No worker started yet: nothing idle, so a 4 MiB read stays one task.
        let whole = job(Op::Read, 4 << 20);
        assert_eq!((whole.tasks.len(), whole.split), (1, false));
        assert!(lane::is_watched(&whole));
        // Let go before the next read is made: an open read would take a worker from it.
        drop(whole);
        e.prepare_gpu(0).unwrap();
        e.wait_idle(4);
        let split = job(Op::Read, 4 << 20);
        let (two, three) = (job(Op::Read, 8 << 20), job(Op::Read, 12 << 20));
        let write = job(Op::Write, 4 << 20);
        // 1 MiB pieces over 4 free workers, into one bounce buffer: one task, four workers.
        let pieces = split.split_read.as_ref().map(|s| s.workers());
        assert_eq!((split.tasks.len(), split.split, pieces), (1, true, Some(4)));
        assert_eq!((two.tasks.len(), three.tasks.len(), three.split), (2, 3, false));
        assert_eq!((write.tasks.len(), write.split), (1, false), "writes are never split");
        assert!(lane::is_watched(&two) && lane::is_watched(&write));
        assert!(lane::is_watched(&split), "a split read is watched whatever its pieces");
        assert!(!lane::is_watched(&three), "a request of three tasks is left to its workers");
    }
}
