//! The configuration: one typed struct with a measured default for every knob, loaded in
//! layers.
//!
//! Precedence, lowest first: built-in defaults < a JSON config file < environment variables <
//! values set in code ([`LoadedConfig::set`]). [`Config::load`] builds the first three layers and
//! remembers where each value came from, so `gdio check` can print it.
//!
//! - The file is named by `GDIO_CONFIG`, else by `CUFILE_ENV_PATH_JSON`. It is JSON with `//`
//!   comments: gdio's own flat keys, and cufile.json's `properties`, `fs` and `execution`
//!   sections for the keys that mean the same ([`json`]).
//! - Environment variables are `GDIO_` + the key in capitals (`GDIO_ALLOW_COMPAT_MODE`,
//!   `GDIO_FS_LUSTRE_POSIX_GDS_MIN_KB`), and the vendor variables `CUFILE_ALLOW_COMPAT_MODE`,
//!   `CUFILE_FORCE_COMPAT_MODE`, `HIPFILE_ALLOW_COMPAT_MODE`, `HIPFILE_FORCE_COMPAT_MODE`,
//!   `HIPFILE_UNSUPPORTED_FILE_SYSTEMS`, `CUFILE_USE_PCIP2PDMA` ([`mod@env`]). A `GDIO_` variable
//!   beats a vendor one.

pub mod env;
pub mod json;
pub mod keys;
pub mod source;

pub use env::UnknownVar;
pub use keys::{Bound, KeyKind, BOUNDS, KEYS};
pub use source::{ConfigEntry, LoadedConfig, Source};

use std::collections::BTreeMap;

/// The smallest task and the unit of bounce buffers, in bytes.
const PAGE: usize = 4096;

/// When the engine reads with `O_DIRECT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DirectIoPolicy {
    /// `O_DIRECT` for a range that is mostly not in the page cache (asked with `cachestat`),
    /// buffered reads for a cached one. Writes are buffered.
    Auto,
    /// `O_DIRECT` for the aligned middle of every request where the file allows it.
    On,
    /// Never `O_DIRECT`.
    Off,
}

impl std::str::FromStr for DirectIoPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(DirectIoPolicy::Auto),
            "on" | "true" | "1" | "yes" => Ok(DirectIoPolicy::On),
            "off" | "false" | "0" | "no" => Ok(DirectIoPolicy::Off),
            _ => Err(format!("direct I/O policy must be auto, on or off, not {s:?}")),
        }
    }
}

/// How the engine's workers issue reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoEngine {
    /// Whichever measured faster for the shape: so far `pread` for every shape (single reads:
    /// the ring lost on the build machine; gathered page-cache pieces: no win; a worker's cold
    /// `O_DIRECT` chunks in flight: 1.66 GB/s through the ring against 1.74 with `pread` on the
    /// H200, BENCHMARKS.md session 4).
    Auto,
    /// Always `pread`, one system call per read.
    Pread,
    /// io_uring wherever a worker has reads to issue, even one at a time.
    IoUring,
}

impl IoEngine {
    /// The key's value as written (`auto`, `pread`, `io_uring`).
    pub fn as_str(self) -> &'static str {
        match self {
            IoEngine::Auto => "auto",
            IoEngine::Pread => "pread",
            IoEngine::IoUring => "io_uring",
        }
    }
}

impl std::str::FromStr for IoEngine {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(IoEngine::Auto),
            "pread" => Ok(IoEngine::Pread),
            "io_uring" | "io-uring" | "iouring" => Ok(IoEngine::IoUring),
            _ => Err(format!("I/O engine must be auto, pread or io_uring, not {s:?}")),
        }
    }
}

/// Settings that apply to one filesystem type (cufile.json's `fs` section).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FsConfig {
    /// I/O smaller than this many KiB goes through POSIX (compat) even when compat is not
    /// allowed (cuFile `posix_gds_min_kb`).
    pub posix_gds_min_kb: u64,
    /// Whether direct (RDMA) writes are allowed on this filesystem (cuFile `rdma_write_support`).
    pub rdma_write_support: bool,
}

/// Every setting of gdio.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Config {
    /// The compat (POSIX through host memory) path may serve I/O the fastpath cannot.
    pub allow_compat_mode: bool,
    /// Every I/O goes through compat; the fastpath is never used.
    pub force_compat_mode: bool,
    /// The fastpath may serve files on filesystems it does not know to be safe.
    pub unsupported_file_systems: bool,
    /// Unaligned writes go through compat instead of the fastpath.
    pub posix_unaligned_writes: bool,
    /// Direct (GPU→storage DMA) writes are allowed.
    pub gds_rdma_write_support: bool,
    /// The gds fastpath may use the kernel's PCI P2PDMA mode where nvidia-fs is not loaded
    /// (cufile.json `properties.use_pci_p2pdma`).
    pub use_pci_p2pdma: bool,
    /// Per-filesystem settings, keyed by filesystem name (`ext4`, `xfs`, `wekafs`, `nfs`, ...).
    pub fs: BTreeMap<String, FsConfig>,
    /// Route distributed-filesystem I/O by `rdma_dynamic_routing_order`.
    pub rdma_dynamic_routing: bool,
    /// Order of routing choices (`GPU_MEM_NVLINKS`, `GPU_MEM`, `SYS_MEM`, `P2P`).
    pub rdma_dynamic_routing_order: Vec<String>,

    /// Worker threads of the engine.
    pub threads: usize,
    /// Workers one write request uses at most (buffered writes to one file serialize on the
    /// file's lock in ext4 and xfs, so more writers only add contention).
    pub write_threads: usize,
    /// Buffered writes of 1 MiB or more ([`crate::file::FILE_WRITERS_MIN_BYTES`]) in flight
    /// into one open file at once, over all its requests (`write_threads` caps one request;
    /// sixteen 4 MiB writes in flight otherwise reach the file from every worker); 0: no
    /// limit. Buffered writes into one file take its inode lock one at a time, so more
    /// writers only contend for it. On the H200 (BENCHMARKS.md session 30 run 4,
    /// `bench/write-threads-probe.c`, 8 GiB into one fresh file in 4 MiB calls): ext4 1 writer
    /// 2.76 GB/s, 2 4.00, 4 3.78, 8 3.53, 12 3.24, 16 3.31; tmpfs 1 writer 3.16, 2–16
    /// 2.21–2.53; and `gdio bench` 4 MiB × 16 into ext4 with 4 workers in all wrote 4.19 / 4.89
    /// against 3.23 / 3.67 GB/s with the default 12. `gdio bench --mode write` out of GPU
    /// memory into a 4 GiB ext4 file (session 31 run 1), limit 2 / 4 / none, GB/s: 4 MiB × 16
    /// 4.17, 4.07 / 3.55, 4.19 / 3.54, 3.35; 1 GiB × 2 3.57, 4.24 / 3.39, 4.14 / 3.37, 3.93;
    /// 1 MiB × 32 4.48 / 3.88 / 4.26; on tmpfs every limit inside the others' spread. With 2
    /// the ext4 write table from 4 MiB up went from 0.87–0.88 to 1.00–1.18 × the plain `pwrite`.
    pub file_writers: usize,
    /// A request is split into tasks of this many bytes; the engine's tasks are at least 4 KiB
    /// and rounded up to the file's `O_DIRECT` alignment ([`Config::task_bytes`]).
    pub task_size: usize,
    /// Size of each pinned bounce buffer in bytes; the buffers are whole pages, so a value
    /// that is not a multiple of 4096 makes buffers of the next multiple
    /// ([`Config::bounce_buffer_bytes`]).
    pub bounce_buffer_size: usize,
    /// Bytes per buffered (page-cache) read into a bounce buffer, at most `bounce_buffer_size`.
    /// `O_DIRECT` reads fill whole bounce buffers: the disk wants large requests, while a
    /// page-cache copy is faster in pieces that stay in the CPU cache while the GPU copies them.
    pub buffered_chunk_size: usize,
    /// Pinned bounce buffers per worker (at least 2, so reads overlap copies).
    pub bounce_buffers_per_thread: usize,
    /// `O_DIRECT` reads one worker keeps in flight for a cold range going to GPU memory (1–64):
    /// a worker reads this many bounce buffers at once, so a cold read keeps the disk's queue
    /// full. Each worker then has at least this many + 1 bounce buffers.
    pub direct_reads_in_flight: usize,
    /// Small reads into GPU memory (`gather_piece_size` bytes or less) that are already queued
    /// together are gathered: a worker reads up to this many of them, of any requests, into
    /// consecutive places of one bounce buffer and sends them to the GPU with one batched copy
    /// and one completion marker. 0 or 1 turns gathering off. A lone request never waits to be
    /// gathered: only requests already queued are, and a worker takes at most its share of the
    /// queue (queued / `threads` + 1), so the other workers keep reading in parallel.
    pub gather_max_pieces: usize,
    /// Bytes one gathered group fills at most (also at most `bounce_buffer_size`); 0 turns
    /// gathering off.
    pub gather_max_bytes: usize,
    /// Reads of at most this many bytes may be gathered; 0 turns gathering off.
    pub gather_piece_size: usize,
    /// Send a gathered group with the driver's batched copy (`cuMemcpyBatchAsync`, CUDA 12.8+)
    /// when the driver has it; off (or an older driver): one copy call per piece, still one
    /// marker per group.
    pub gather_batch_copy: bool,
    /// Send a gathered group with one kernel launch that reads the pieces out of the pinned
    /// bounce buffer and puts each in place (CUDA; no DMA copy per piece); off, or a driver
    /// that will not load the kernel: `gather_batch_copy` decides. H200, on against off in one
    /// run (BENCHMARKS.md session 23 run 4): 4 KiB × 256 batch 282–315k → 430–463k IOPS,
    /// 64 KiB × 64 batch 6.6–8.8 → 7.7–8.9 GB/s, async 4.2–6.3 → 5.8–6.8; rows that gather
    /// nothing unchanged.
    pub gather_scatter: bool,
    /// Small writes out of GPU memory (`gather_piece_size` bytes or less) that are already
    /// queued together are gathered too: a worker copies up to `gather_max_pieces` of them, of
    /// any requests, into consecutive places of one bounce buffer (one batched copy with
    /// `gather_batch_copy`, else a copy call each), waits once for the copies to land, and
    /// then writes each piece to its file (one device→host wait per group instead of per
    /// write; each request still finishes with its own piece, and a piece that fails to write
    /// fails only its own request). On by default: on the H200 (BENCHMARKS.md session 27 run
    /// 1, 512 MiB tmpfs file, alternating; 4 KiB random × 64 wrote 1.11 / 1.24 GB/s against
    /// 0.72 / 0.69 off, 64 KiB × 64 2.03 / 1.94 against 1.77 / 1.62; run 2: 1.26 / 1.22
    /// against 0.82 / 0.65 and 1.94 / 2.04 against 1.86 / 1.53; session 28 run 1: 32 KiB
    /// random × 32 1.71–2.11 against 1.54–1.55, 16 KiB random × 32 a tie over three reps).
    /// Writes larger than a piece, and callers few enough to run their writes inline, are not
    /// gathered; into files on disk, writes under `gather_write_disk_min_bytes` are not either.
    pub gather_writes: bool,
    /// With `gather_writes`, a write into a file that is not memory-backed (anything but
    /// tmpfs and ramfs) joins a group only from this many bytes; into tmpfs every small write
    /// may. 0: every small write, whatever the filesystem. Measured on the H200 into an ext4
    /// file (page cache; BENCHMARKS.md session 28 runs 3–5, alternating, GB/s gathered against
    /// not): 4 KiB random × 64 0.49 against 0.61 (six reps), 16 KiB random × 32 1.20 against
    /// 1.41 (six), 16 KiB sequential × 32 1.33 against 1.86, 32 KiB random × 32 1.76 against
    /// 2.03, while 64 KiB × 64 gained, sequential 2.66 against 2.51 and random 2.76 against
    /// 2.18; and 48 KiB gained (session 29 run 2, two reps), random × 32 1.94 / 1.80 against
    /// 1.75 / 1.68 and sequential × 64 2.13 / 2.24 against 1.96 / 1.75. Into tmpfs gathering
    /// won from 4 KiB (sessions 27–28).
    pub gather_write_disk_min_bytes: usize,
    /// Pieces of a gathered group that lie next to each other both in one file and in the
    /// group's bounce buffer (consecutive requests of a sequential reader or writer) are read
    /// or written with one `pread`/`pwrite` per run instead of one per piece; reads are placed
    /// in file order first so that such runs form. A run that fails is done again piece by
    /// piece, so each request still gets its own result. Off: one call per piece. On the H200
    /// (BENCHMARKS.md session 30 run 1, on against off, alternating, two reps, GB/s): 16 KiB ×
    /// 64 sequential writes into tmpfs 1.57 / 1.82 against 1.49 / 1.38, 64 KiB 2.11 / 2.10
    /// against 2.06 / 1.83; 16 KiB × 64 reads from the ext4 page cache 6.29 / 6.16 against
    /// 5.87 / 5.66; 4 KiB random and 64 KiB ext4 rows inside their spread.
    pub gather_adjacent_runs: bool,
    /// A batch submission (`Driver::batch`, `cuFileBatchIOSubmit`) hands its entries to the
    /// workers in groups of this many: one trip through the workers' queue and one round of
    /// wake-ups per group instead of per entry, and a queue deep enough at once for each worker
    /// to take a share (and gather small reads). 0 or 1: each entry as it is submitted.
    pub batch_queue_group: usize,
    /// Microseconds a worker polls a copy's completion marker (checking for new work between
    /// polls) before it blocks on the marker. Blocking waits wake tens of microseconds late,
    /// which small requests and buffer reuse feel; 0 blocks at once. Default 1000: 0 lost at
    /// eight and sixteen reads in flight in every rep (H100, BENCHMARKS.md session 48 run 1,
    /// ABBA, three reps: KvikIO compat OFF through gdio's libcufile at eight threads 30.3–38.5
    /// GB/s against 40.8–41.7; H200 session 33: 45.0 / 46.3 against 50.7–51.0 at sixteen); 200
    /// led 1000 in 5 of 18 paired rows. Polling does not raise the hypervisor's steal there.
    pub completion_spin_us: u64,
    /// Microseconds between two polls of a completion marker while a worker polls: asking
    /// back to back (0) from many workers keeps the CUDA driver's locks busy for the workers
    /// that are queueing copies.
    pub completion_poll_us: u64,
    /// Each copy stream runs a callback after a task's last copy that completes the task at
    /// once, instead of when its worker next looks (after the read it started meanwhile).
    /// Off by default: CUDA's one callback thread per process made 1 MiB requests 3.6 times
    /// slower on the H200 host (BENCHMARKS.md, session 3).
    pub completion_callbacks: bool,
    /// One engine thread finishes the tasks of requests of one or two tasks (and every piece of
    /// a one-task read split over free workers) the moment their copies land, by a word the
    /// copy stream sets in stream order (`cuStreamWriteValue32`), instead of when their worker
    /// next looks. No host function holds the stream, unlike
    /// `completion_callbacks`. The thread polls every `completion_poll_us` while copies are in
    /// flight (every 50 µs after `completion_spin_us` without a landing). On by default: on the
    /// H200 it read 1 MiB × 32 5–9 % and 16 MiB × 8 4–25 % faster and Python's `preadv` 15 %
    /// faster; larger requests are left to their workers (BENCHMARKS.md, session 11).
    pub completion_watcher: bool,
    /// For copies on the shared copy streams (`copy_streams`), the completion watcher learns
    /// that a watched task's copies landed by asking the marker its worker records after them
    /// anyway (for CUDA a `cuEventQuery`, at most one per copy stream not yet reached per
    /// look), instead of reading a progress word the stream writes after them
    /// (`cuStreamWriteValue32`): one stream operation after each copy instead of two. H200
    /// (BENCHMARKS.md session 34): the probe's ring of 4 MiB `pread` + copy at 12 threads
    /// 50.3–50.5 GB/s with an event after each copy against 49.1–49.9 with an event and a
    /// word (run 3); KvikIO compat OFF through gdio's libcufile at 16 threads 51.15–51.70
    /// against 50.10–50.57, ahead in each of eight ABBA reps (run 6). Copies on a worker's own
    /// stream (`own_stream_max_bytes`: small tasks, gathered groups; not measured with markers)
    /// and streams that cannot share their markers keep the word.
    pub completion_watch_events: bool,
    /// On a machine of several NUMA nodes, engine workers run on the CPUs of the node of the
    /// GPU they move bytes for (their pinned bounce buffers are then allocated there too).
    pub numa_affinity: bool,
    /// A request of one task and at most this many bytes into or out of GPU memory runs on the
    /// calling thread with its own stream and bounce buffers (no hand-off to a worker, no
    /// wake-ups); larger ones go to the workers, which overlap one task's copy with the next
    /// read. 0: never inline.
    pub inline_max_bytes: usize,
    /// Requests up to `inline_max_bytes` go to the workers once more than this many callers
    /// have such requests in flight (inline or not), until at most half as many do: the
    /// workers gather small reads and keep a few streams busy, where many callers' own
    /// streams and copies crowd the cores and the driver. 0: no limit. Default: the default
    /// worker count (`threads`).
    pub inline_max_callers: usize,
    /// A read into GPU memory of one task and at least twice this many bytes is split into
    /// tasks of at least this size over the workers free for it (not running a job nor spoken
    /// for by queued work: asleep, polling for work, or waiting for their copies to land), so
    /// that few large requests in flight still keep several workers reading (H200, 4 MiB
    /// requests, 8 in flight: 24.4 GB/s as one task each, 39.2 split; no change at 32 in
    /// flight). A worker is left to each other read into GPU memory in flight, so with every
    /// worker busy, or as many reads in flight as workers, nothing is split (H200, 16 in
    /// flight: +3 % against splitting, BENCHMARKS.md session 21). 0: never. Default 1 MiB
    /// (session 35, ABBA against 2 MiB: `gdio bench` 4 MiB × 8 from tmpfs 46.3–48.2 GB/s
    /// against 45.0–45.4, from ext4 51.0–51.2 against 49.5–50.8; 16 in flight the same;
    /// 2 MiB × 16 2.5 % lower, its reads now split when a worker is free for a moment).
    /// A read alone in flight whose pieces share one bounce buffer (`split_into_one_buffer`)
    /// may take every free worker, in pieces down to a quarter of this (so 1 MiB reads split
    /// too): a lone caller's 4 MiB reads kept 8 of 12 workers idle
    /// (session 38, ABBA: KvikIO's default one thread 13.1 / 13.3 GB/s against 11.2 / 10.8,
    /// `gdio bench` 4 MiB × 1 +13 to +28 %, 1 MiB × 1 +37 to +64 %).
    pub split_min_bytes: usize,
    /// The pieces of a split read (`split_min_bytes`) go into one bounce buffer of the worker
    /// that claims the task, and the task goes to the GPU in one copy, instead of each piece
    /// into a buffer of its reader with a copy of its own: the reads still run side by side,
    /// and the link moves one large copy. Only where the task fits one bounce buffer and goes
    /// through bounce buffers read with `pread` (not `page_cache_dma`, not `io_engine`
    /// `io_uring`). H200 (BENCHMARKS.md session 32 runs 3 and 4, ABBA, eight reps): KvikIO
    /// compat OFF through gdio's libcufile at 8 threads 46.5–48.5 GB/s against 43.7–45.2 off
    /// (a call 0.71 ms against 0.75–0.77), 16 threads the same (50.3–50.5, the link's
    /// ceiling for 4 MiB copies), `gdio bench` 4 MiB × 8 37.8–46.2 against 41.3–44.1 (means
    /// 2–3 % lower, one slow rep in each run), the default bench the same.
    pub split_into_one_buffer: bool,
    /// With `split_into_one_buffer`, each worker's share of a split read is cut into this
    /// many pieces, taken one at a time by whichever worker is free: a worker that starts late
    /// takes fewer, and the worker that copies the task waits at most about one piece for the
    /// others. The copy stays one per task however many pieces. H200 (BENCHMARKS.md session
    /// 32 runs 5 and 6, on a machine slower than runs 3 and 4): KvikIO compat OFF at 8 threads
    /// 4 pieces 35.5–43.8 GB/s (means 39.5, 38.9) against 1 piece 34.3–39.6 (37.6, 36.4),
    /// `gdio bench` 4 MiB × 8 +3 to +5 % on the means, 16 threads the same; 2 pieces no
    /// better than 1. Since a read alone in flight takes every free worker (pieces of about
    /// 90 KiB at 4), 8 leads 4 for reads alone and ties with more in flight (session 40 run 3,
    /// ABBA, two reps, with `lone_caller_polls`: `gdio bench` 4 MiB × 1 18.47 / 16.58 GB/s
    /// against 12.74 / 13.87 with 4 and no polling, 2 MiB × 1 15.05 / 14.04 against 9.84 /
    /// 10.45, KvikIO compat OFF at one thread 18.82 / 16.31 against 13.64 / 13.10, 4 MiB × 2,
    /// × 4 and × 8 inside the spread).
    pub split_pieces_per_worker: usize,
    /// A split read alone in flight (`split_min_bytes`, into one buffer) of at least
    /// `split_early_copy_min_bytes` queues the copy of its first half (of each of its first
    /// `split_early_copy_parts` − 1 runs of pieces) as soon as every piece up to there is
    /// read, and the rest when the last piece is: the first copy runs while the second half
    /// is read. Reads with others in flight keep one copy per task either
    /// way, unless `split_early_copy_max_others` allows them. H200, ABBA, three reps (BENCHMARKS.md session 39 run 1): KvikIO compat OFF at its
    /// default one thread (4 MiB calls) 12.44 / 15.28 / 14.53 GB/s against 10.41 / 14.45 /
    /// 12.61, a call 0.282 ms against 0.315 (the copy landed 0.132 ms after queueing against
    /// 0.173); `gdio bench` 4 MiB × 1 12.52 / 14.03 / 14.87 against 10.95 / 14.34 / 14.23.
    pub split_early_copy: bool,
    /// The shortest read `split_early_copy` copies in two: a copy's landing costs about
    /// 0.03 ms beside the link's time (the probe's lone copies: 4 MiB landed 0.11–0.12 ms after
    /// queueing, 2 MiB 0.07), so halves of short reads lose more than they overlap (session
    /// 39 run 1, early for every read: 1 MiB × 1 7.27 / 8.49 / 7.94 GB/s against 6.24 / 9.02 /
    /// 8.86, 512 KiB × 1 4.34 / 5.44 / 5.77 against 4.95 / 5.39 / 5.93).
    pub split_early_copy_min_bytes: u64,
    /// How many copies `split_early_copy` sends a read in (2–16): its pieces are cut into this
    /// many runs, and each run's copy is queued as soon as every piece up to its end is read
    /// in full, so the copy engine starts after the first run instead of the first half.
    /// More runs start the link sooner but pay one copy's landing cost each (about 0.03 ms on
    /// the H200, BENCHMARKS.md session 39 run 1). Session 39 run 6, two ABBA reps: KvikIO
    /// compat OFF at one thread halves 14.88 / 14.08 GB/s, quarters 14.86 / 14.88, eighths
    /// 14.49 / 14.64 (`gdio bench` 4 MiB × 1 likewise inside the spread), so halves stay.
    pub split_early_copy_parts: usize,
    /// The most other reads into GPU memory in flight in the pool (`Pool::reads_open`) beside
    /// which a split read still copies early (`split_early_copy`); 0: only a read alone in
    /// flight, as measured (BENCHMARKS.md session 39: early copies for lone reads). With a few
    /// requests in flight each caller waits for its whole read and then its whole copy (at four
    /// 4 MiB reads in flight on the H200 a call took 0.80 ms, its copy landing 0.20 ms after
    /// queueing, session 46), so copying the first half while the second is read might shorten
    /// every call there too. Measured (BENCHMARKS.md session 47 run 1, H100 host, ABBA, four
    /// reps): 3 against 0 lost at two and four in flight in every rep: KvikIO compat OFF at
    /// four threads 24.66–25.87 GB/s against 27.20–31.77, `gdio bench` 4 MiB × 4 25.85–26.74
    /// against 28.01–30.43, two threads 17.46–18.79 against 18.67–20.42; eight in flight alike
    /// (few reads there copy early). Two copies per read cost more than the overlap gains once
    /// other reads keep the link busy, so the default keeps 0.
    pub split_early_copy_max_others: usize,
    /// A synchronous read into GPU memory alone in flight in its pool (or beside a few others:
    /// `polling_callers_max`): its caller polls the request's done flag for up to
    /// `completion_spin_us` (while no more reads open) instead of sleeping until a worker
    /// wakes it. A woken thread runs again tens of microseconds after it is woken (the H200's
    /// library summary at one thread: callers woke 0.021 ms after their request was done, in
    /// a call of 0.34 ms). Only where the workers leave a core over (`threads` < cores); a
    /// crowd of polling callers took the workers' cores (session 7). H200, session 40 run 3, ABBA, two
    /// reps, against neither this nor 8 split pieces per worker: alone 4 MiB × 1 16.71 / 14.03
    /// GB/s against 12.74 / 13.87, 1 MiB × 1
    /// 9.29 / 8.95 against 7.79 / 8.20, KvikIO compat OFF at one thread 16.24 / 14.53 against
    /// 13.64 / 13.10; with 8 pieces per worker (the defaults) see `split_pieces_per_worker`.
    pub lone_caller_polls: bool,
    /// With `lone_caller_polls`, a caller polls while at most this many reads into GPU memory
    /// are open in its pool (its own included), never more than the cores the workers and the
    /// completion watcher leave over (`threads` + 1 fewer than the cores), and always while
    /// alone. 1: only a caller alone polls. Two or three callers, each with a read that the
    /// free workers split between them, otherwise sleep and are woken tens of µs after their
    /// read is done, in calls of about 0.2 ms. Default 3 (H200, BENCHMARKS.md session 42 run
    /// 3, ABBA, two reps, means against 1: KvikIO compat OFF through gdio's libcufile at two
    /// threads +11 %, four +3 %, sixteen +0.5 %; `gdio bench` 4 MiB × 2 +7 %, × 3 +5 %, × 4
    /// +2 %, 2 MiB × 2 +10 %, 1 MiB × 2 +16 %; one thread and 4 MiB × 1 the same. With more
    /// reads open than this nobody polls, so eight or more in flight run as before: run 6,
    /// two reps, inside the machine's spread).
    pub polling_callers_max: usize,
    /// Streams per GPU that a pool's workers queue their copies on, in turn. 0: a stream per
    /// worker, so every worker's copies share the link at once and each lands when those
    /// beside it do; N: the copies of the workers on one stream run one after another in the
    /// order queued, so the first lands sooner, which clients that wait for each request
    /// before sending the next feel (H200, 1 against 0 alternating, BENCHMARKS.md session 17
    /// run 2: KvikIO compat OFF through gdio's libcufile, 8 threads 39.4–42.0 GB/s against
    /// 36.8–39.5, 16 threads 49.8–50.0 against 45.9–48.0; 4 MiB × 16 47.9–49.7 against
    /// 42.2–46.0; the default bench's read the same, its writes inside their spread). One
    /// stream alone carries the link.
    pub copy_streams: usize,
    /// Tasks into or out of GPU memory of at most this many bytes, and every gathered group
    /// of small reads, queue their copies on their worker's own stream instead of the shared
    /// `copy_streams`: one shared stream runs the copies of every worker one after another,
    /// which suits a few large copies (the first lands sooner) but makes many small ones wait
    /// in one line. 0: every copy on the shared streams. A worker makes the lane for its own
    /// stream (two bounce buffers of at most this size or `gather_max_bytes`, whichever is
    /// larger) at its first small copy, or when the workers are warmed for a GPU (before a
    /// stream-ordered I/O holds its caller's stream, behind which nothing may be made).
    pub own_stream_max_bytes: usize,
    /// Each GPU after the first gets a worker pool of its own (`threads` workers each, made at
    /// its first work) instead of sharing the engine's one pool. On the two-GPU H200 host, one
    /// process reading into both GPUs with an engine per GPU moved 53.6–57.9 GB/s against
    /// 46.4–46.7 with one shared engine of 12 workers, as much as two processes (BENCHMARKS.md
    /// session 9, run 8); this key had not run on two GPUs yet, so it is off.
    pub pool_per_gpu: bool,
    /// A safetensors save keeps up to this many writes of tensors in separate GPU allocations
    /// in flight per file (each on the engine's write workers), so that one tensor's
    /// device→host copies and `pwrite`s overlap the next one's; 1: one after another. Measured
    /// on the H200 (BENCHMARKS.md session 10, runs 2 and 4: 8 and 16 GiB state dicts of 720
    /// tensors into the ext4 page cache), 8 in flight moved 3.06–3.67 GB/s against 3.13–4.12
    /// one at a time: writes to one file serialize on its inode lock, so 1 is the default.
    /// Tensors in host memory are always written one after another on the calling thread.
    pub save_writes_in_flight: usize,
    /// Python's `safe_open.get_tensor` called down `keys()` in order (what loaders do) loads
    /// the following tensors, up to this many bytes, with one load and hands them out as
    /// asked; 0: one load per tensor. H200, 720 tensors into `cuda:0` from tmpfs: 23 MiB in
    /// 14.8–21.2 ms and 368 MiB in 36.5–36.9 ms, the `safetensors` package's loop 23.8–29.9 and
    /// 111–115 ms (BENCHMARKS.md session 14, runs 1 and 4).
    pub safetensors_read_ahead_bytes: usize,
    /// Bytes per read request of a safetensors load (`gdio load`, `gdio.safetensors`, the
    /// library's `load`); 0: `threads × task_size × 8`, so that one request gives every engine
    /// worker several tasks (a worker drains its copy pipeline at the end of each request): 768
    /// MiB with 16 cores (12 workers, 8 MiB tasks), near the 1 GiB × 2 that `gdio bench` reads
    /// fastest (BENCHMARKS.md "Tuning runs"). On the H200, `gdio load` of the 16 GiB checkpoint
    /// with 1 GiB, 768 MiB × 3 and 256 MiB × 4 requests moved 33–48 GB/s with no order between
    /// them (session 16 run 4), so the derived size stays. A load's own `LoadOptions` (the CLI's
    /// `--request-size`) wins over this key.
    pub safetensors_request_bytes: usize,
    /// Read requests of a safetensors load in flight at once, each spread over the engine's
    /// workers; 0: two, or the number of GPUs that load the same tensors if more (measured
    /// with the request size above). The CLI's `--requests` wins over this key.
    pub safetensors_requests_in_flight: usize,
    /// Ranges of one file that a safetensors load wants and that lie closer than this many
    /// bytes are read as one span, the bytes between included (fewer, larger reads for a
    /// plan that skips small tensors); 0: `task_size`. Gaps under a page count as a page
    /// (reads are page-aligned, so ranges closer than that share one).
    pub safetensors_merge_gap_bytes: usize,
    /// A safetensors load of the same tensors into several GPUs (`--target gpu:0,1`): each GPU
    /// reads a share over its own host link and copies it to the others (true), or everything
    /// is read into the first GPU and copied to the others over the GPU-to-GPU link (false).
    /// H200 pair (BENCHMARKS.md sessions 6 and 7), where the CPU's copies out of the page cache
    /// limit the load: 38.0–40.2 GB/s spread against 39.9–41.6 through the first GPU, which
    /// keeps one bounce ring per worker, so false; spreading is for machines where one host
    /// link is the limit. The CLI's `--spread-reads` wins over this key.
    pub safetensors_spread_reads: bool,
    /// A safetensors load into GPUs starts reading at once and each engine worker makes its
    /// stream and pinned bounce buffers for the GPU (once per process) at its first task, so
    /// the first reads overlap the last workers' pinning (true); false: the load first waits
    /// until every worker has them.
    pub safetensors_overlap_warm: bool,
    /// From Python (`gdio.safetensors` with NumPy or torch on the CPU): the tensors of a file
    /// in the page cache (every page of 64 windows of 64 KiB spread over it) are views of a
    /// private, copy-on-write mapping of it, as the safetensors package's torch tensors are
    /// (no copy: writes to them never reach the file; the file must not be cut short while
    /// they live); false, or a file not cached: read into memory of their own. Build machine,
    /// files of 0.2 and 2.2 GB in `/dev/shm`: NumPy `load_file` in 6–9 and 28–34 ms against
    /// 109–148 and 956–1558 read (BENCHMARKS.md session 17, "CPU tensors as views of the page
    /// cache"); H200 (session 18): 1.5–2.8 and 5.2–6.1 ms, the package 133–182 and 1346–1578.
    pub safetensors_map_host: bool,
    /// A sharded safetensors save writes up to this many shards at once, each from a thread of
    /// its own (buffered writes to one file serialize on its inode lock, so files written side
    /// by side go faster than one after another); 1: one after another. H200, `gdio save` of
    /// the 16 GiB checkpoint in 5 GB shards from GPU memory into the ext4 page cache: 5.90–6.75
    /// GB/s side by side against 3.18–3.65 one after another (BENCHMARKS.md session 10 run 4).
    pub save_files_in_flight: usize,
    /// Python's `gdio.RemoteFile`: attempts in all for one HTTP request when the server
    /// answers one of `http_status_codes` or the connection drops (backoff doubling from 50
    /// ms); KvikIO's `http_max_attempts`, same default.
    pub http_max_attempts: usize,
    /// Python's `gdio.RemoteFile`: seconds one HTTP connection may wait for the server
    /// (connect, or between received bytes); KvikIO's `http_timeout`, same default.
    pub http_timeout: u64,
    /// Python's `gdio.RemoteFile`: the HTTP answers retried (up to `http_max_attempts`);
    /// KvikIO's `http_status_codes`, same default (429, 500, 502, 503, 504).
    pub http_status_codes: Vec<u16>,
    /// Pinned bounce and staging buffers are anonymous memory on transparent huge pages,
    /// registered with `cuMemHostRegister` (true), or come from `cuMemHostAlloc` (false).
    /// Measured on the H200 machine: 96 MiB pinned from 12 threads in 11 ms against 55, copies
    /// from either equally fast. Falls back to `cuMemHostAlloc` where registering fails.
    pub pinned_huge_pages: bool,
    /// A driver finds its GPU runtime (loads libcuda, `cuInit`) at the first call that needs
    /// one (a GPU allocation or stream, an address that may be GPU memory, a device query)
    /// instead of when it is made, so a process that only reads files into host memory never
    /// pays for it; an address is asked of CUDA only once libcuda is loaded in the process (by
    /// gdio or anyone: no CUDA memory exists before). On by default: on the H200 a 0.2 GB
    /// safetensors file read onto the CPU took 317–324 ms without it and 21–24 ms with it,
    /// and GPU reads ran at the same rate (BENCHMARKS.md session 20).
    pub defer_gpu_init: bool,
    /// When to use `O_DIRECT`.
    pub direct_io: DirectIoPolicy,
    /// How workers issue reads: `auto` (what measured faster per shape: `pread` so far),
    /// `pread`, or `io_uring` (every worker read through its ring). Where io_uring cannot be
    /// set up (an old kernel, `kernel.io_uring_disabled`, seccomp) every engine reads with
    /// `pread` and says why
    /// ([`crate::engine::Engine::io_uring_unavailable`]).
    pub io_engine: IoEngine,
    /// A range at least this cached (0.0–1.0) counts as hot under `DirectIoPolicy::Auto`.
    pub hot_cache_fraction: f64,
    /// Read hot ranges into GPU memory by DMA straight from the page cache (the file range is
    /// mapped and registered with the GPU) instead of copying them through bounce buffers.
    pub page_cache_dma: bool,
    /// Page-cache pins: a file range read into GPU memory twice over (counted in 32 MiB
    /// chunks) is mapped and registered with the GPU while the engine has no I/O in flight,
    /// and later reads of it are one DMA from the page cache on the caller's thread, with no
    /// CPU copy (`engine/page_cache_pins.rs`). The most bytes of page cache kept pinned
    /// (pinned pages cannot be reclaimed); 0, the default, turns the pins off. H200 (BENCHMARKS
    /// session 36): once pinned, `gdio bench` 4 MiB × 8 read 52.1 GB/s against 42.5–46.8,
    /// 64 MiB × 4 and 1 GiB × 2 55.0–55.1 (the link) against 52.0, KvikIO at 16 threads 52.0
    /// against 51.1–51.4; but registering holds the driver's locks (a pass that registered
    /// while it read fell to 21–25 GB/s), so registration waits for an idle engine, and reads
    /// back to back (KvikIO's passes, `gdio bench`'s iterations) read no faster with the pins
    /// on (run 2): they can pay only where reads have gaps, such as compute between epochs,
    /// whose own CUDA calls a registration (up to 2 ms a chunk) then delays. Session 37 run 6
    /// (`bench/pins_compute_cost.py`: each epoch KvikIO reads 8 GiB at 16 threads, then 1.5 s
    /// of 3.4 ms compute steps): in the one compute phase that registered the file, steps took
    /// p99 6.5–6.9 ms (ext4) and p50 4.5–4.8 ms (tmpfs) against 3.4, 13–25 % fewer steps;
    /// later epochs' steps no slower, their reads 51.4–52.2 GB/s against 50.7–51.4 off (ext4)
    /// and 51.8–52.2 against 49.5–50.8 (tmpfs). Off by default: a one-time stall for a 2–4 %
    /// gain, and pinned page cache the kernel cannot reclaim.
    pub page_cache_pins_max_bytes: u64,
    /// A pinned chunk no read used for this long is released (milliseconds).
    pub page_cache_pins_idle_ms: u64,
    /// Reads into GPU memory smaller than this neither use nor count towards page-cache pins.
    /// H200 (session 36 run 1): 1 MiB × 32 out of the pins, waiting with
    /// `cuStreamSynchronize`, read 23.6–41.6 GB/s against 42.4–43.6 through the bounce
    /// buffers; with marker waits (run 2) 39.4–42.6 against 40.8–41.1, inside the noise.
    pub page_cache_pins_min_request_bytes: u64,
    /// Read-ahead for sequential synchronous reads into GPU memory (`engine/read_ahead.rs`):
    /// once three reads of a file of one length have each started where the highest end read
    /// so far was (KvikIO's threads each asking for the next chunk), the workers read the
    /// ranges after them into memory of the engine's own (GPU memory with
    /// `read_ahead_gpu_memory`, else pinned host memory), and a read that finds its range
    /// there copies it on the calling thread. The value is the memory read ahead into at most
    /// (one allocation, made at the first read ahead); 0 turns it off. Into GPU memory
    /// (session 52 run 1, H100, hot 8 GiB file, ABBA against off): one KvikIO thread 2.36 ×,
    /// two 2.46 ×, four 1.41 ×, eight 0.995 ×, sixteen 0.939 ×, `gdio bench` 4 MiB × 1–4,
    /// 1 MiB × 8, 16 MiB × 2 1.45–2.45 ×. 256 MiB, the default, was measured into pinned
    /// memory on two H100 hosts (BENCHMARKS.md sessions 50–51, ABBA against off, hot 8 GiB
    /// file): one KvikIO thread (its default) 1.69–1.71 ×, two 1.96 ×, four
    /// 0.983–1.38 ×, `gdio bench` 4 MiB × 1–4, 1 MiB × 8 and 16 MiB × 2 1.30–1.89 ×; the cost:
    /// eight threads 0.931–0.998 × (where the workers read ahead into the arena at ~40 GB/s on
    /// the slower host, below what eight threads' own reads move), sixteen 0.986–1.017 ×; cold
    /// file one thread 1.30–1.34 ×, eight 0.95–0.97 ×. 512 MiB was slower than 256 in every row,
    /// 64 MiB (sixteen 4 MiB slots) capped every row at 44–46 GB/s.
    pub read_ahead_bytes: u64,
    /// Reads into GPU memory shorter than this neither use nor start read-ahead.
    pub read_ahead_min_request_bytes: u64,
    /// Reads into GPU memory longer than this neither use nor start read-ahead (they keep
    /// every worker busy on their own).
    pub read_ahead_max_request_bytes: u64,
    /// Nothing new is read ahead while more synchronous reads into GPU memory than this are in
    /// flight: that many callers keep the workers busy without it. 4 measured worse than 8 at
    /// eight KvikIO threads (0.883 × off against 0.964 ×) and no better elsewhere (session 51
    /// run 2, pinned memory); with GPU memory (session 52 runs 2–3, H200) 16 tied 8
    /// (0.963–1.014 × off against 0.988–1.011 ×) and 4 lost at `gdio bench` 4 MiB × 8
    /// (0.894 ×).
    pub read_ahead_max_callers: usize,
    /// Ranges are read ahead into GPU memory of the engine's own on the GPU being read into
    /// (`read_ahead_bytes` of it, allocated at the first read ahead and given back once every
    /// file read ahead was read to its end or nobody read it for 0.5 s): the workers read them as they read for
    /// callers, through their bounce buffers, and a read that finds its range copies it
    /// device to device. False: into pinned host memory, which the workers fill with the CPU
    /// and each read copies over the link. Where the GPU has no memory to spare, pinned host
    /// memory is used. Session 52 run 1 (H100, ABBA two reps, hot 8 GiB file): GPU memory
    /// against pinned 1.26 × at one KvikIO thread, 1.16 × at two and four, 1.15 × at eight
    /// (where pinned memory capped near 40 GB/s), 0.99 × at sixteen; `gdio bench` 4 MiB × 1–4
    /// and 16 MiB × 2 1.17–1.30 ×, 1 MiB × 8 0.97 ×. Runs 2–3 (H200): one to thirty-two
    /// threads at the link (50–51 GB/s; one thread 2.80 × off).
    pub read_ahead_gpu_memory: bool,
}

/// Default worker count: three quarters of the machine's cores, at least 4, at most 12
/// (measured on the 16-core H200 machine, 2026-11-30: 12 workers read an 8 GiB page-cached file
/// into the GPU at 51 GB/s, 8 at 47, 6 at 35; 16 and 32 lost to memory-bandwidth contention;
/// on the 32-core two-GPU host the default bench read 39.8 GB/s with 12, 27.7 with 16 and
/// 34.7 with 24, and every worker's pinned buffers cost set-up time).
fn default_threads() -> usize {
    (std::thread::available_parallelism().map(|n| n.get()).unwrap_or(8) * 3 / 4).clamp(4, 12)
}

impl Default for Config {
    fn default() -> Self {
        let mut fs = BTreeMap::new();
        for name in ["ext4", "xfs", "lustre", "nfs", "gpfs", "beegfs", "wekafs"] {
            fs.insert(
                name.to_owned(),
                FsConfig { posix_gds_min_kb: 0, rdma_write_support: name != "wekafs" },
            );
        }
        Config {
            allow_compat_mode: true,
            force_compat_mode: false,
            unsupported_file_systems: false,
            posix_unaligned_writes: false,
            gds_rdma_write_support: true,
            use_pci_p2pdma: false,
            fs,
            rdma_dynamic_routing: false,
            rdma_dynamic_routing_order: vec![
                "GPU_MEM_NVLINKS".into(),
                "GPU_MEM".into(),
                "SYS_MEM".into(),
                "P2P".into(),
            ],
            threads: default_threads(),
            write_threads: 4,
            file_writers: 2,
            task_size: 8 << 20,
            bounce_buffer_size: 4 << 20,
            buffered_chunk_size: 4 << 20,
            bounce_buffers_per_thread: 2,
            direct_reads_in_flight: 2,
            gather_max_pieces: 64,
            gather_max_bytes: 1 << 20,
            gather_piece_size: 64 << 10,
            gather_batch_copy: true,
            gather_scatter: true,
            gather_writes: true,
            gather_write_disk_min_bytes: 48 << 10,
            gather_adjacent_runs: true,
            batch_queue_group: 64,
            completion_spin_us: 1000,
            completion_poll_us: 4,
            completion_callbacks: false,
            completion_watcher: true,
            completion_watch_events: true,
            numa_affinity: true,
            inline_max_bytes: 256 << 10,
            inline_max_callers: default_threads(),
            split_min_bytes: 1 << 20,
            split_into_one_buffer: true,
            split_pieces_per_worker: 8,
            split_early_copy: true,
            split_early_copy_min_bytes: 4 << 20,
            split_early_copy_parts: 2,
            split_early_copy_max_others: 0,
            lone_caller_polls: true,
            polling_callers_max: 3,
            copy_streams: 1,
            own_stream_max_bytes: 1 << 20,
            pool_per_gpu: false,
            save_writes_in_flight: 1,
            safetensors_read_ahead_bytes: 64 << 20,
            safetensors_request_bytes: 0,
            safetensors_requests_in_flight: 0,
            safetensors_merge_gap_bytes: 0,
            safetensors_spread_reads: false,
            safetensors_overlap_warm: true,
            safetensors_map_host: true,
            save_files_in_flight: 4,
            http_max_attempts: 3,
            http_timeout: 60,
            http_status_codes: vec![429, 500, 502, 503, 504],
            pinned_huge_pages: true,
            defer_gpu_init: true,
            direct_io: DirectIoPolicy::Auto,
            io_engine: IoEngine::Auto,
            hot_cache_fraction: 0.5,
            page_cache_dma: false,
            page_cache_pins_max_bytes: 0,
            page_cache_pins_idle_ms: 30_000,
            page_cache_pins_min_request_bytes: 4 << 20,
            read_ahead_bytes: 256 << 20,
            read_ahead_min_request_bytes: 1 << 20,
            read_ahead_max_request_bytes: 16 << 20,
            read_ahead_max_callers: 8,
            read_ahead_gpu_memory: true,
        }
    }
}

impl Config {
    /// The size of each bounce buffer the engine makes: `bounce_buffer_size` rounded up to a
    /// whole number of 4 KiB pages (an `O_DIRECT` read fills a buffer with whole pages).
    pub fn bounce_buffer_bytes(&self) -> usize {
        self.bounce_buffer_size.max(1).next_multiple_of(PAGE)
    }

    /// The size the engine splits requests at: `task_size`, but at least 4 KiB, so that a tiny
    /// value (KvikIO takes any) cannot make a request into millions of tasks.
    pub fn task_bytes(&self) -> usize {
        self.task_size.max(PAGE)
    }

    /// Checks every value against its range ([`keys::BOUNDS`], the same check every layer's
    /// value passes when it enters), for a `Config` built in code. The error names the key and
    /// the value.
    pub fn validate(&self) -> crate::Result<()> {
        for key in keys::all(self) {
            let Some(value) = keys::get(self, &key) else { continue };
            keys::check_bound(&format!("config value {key}"), &key, &value)?;
        }
        if !(0.0..=1.0).contains(&self.hot_cache_fraction) {
            return Err(crate::Error::new(
                crate::ErrorKind::Config,
                format!(
                    "config value hot_cache_fraction: must be a number from 0 to 1, not {}",
                    self.hot_cache_fraction
                ),
            ));
        }
        Ok(())
    }

    /// Loads the configuration from the process: defaults < the file named by `GDIO_CONFIG` (or
    /// `CUFILE_ENV_PATH_JSON`) < environment variables. Values set in code come after, with
    /// [`LoadedConfig::set`].
    pub fn load() -> crate::Result<LoadedConfig> {
        LoadedConfig::from_vars(
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
        )
    }

    /// Like [`Config::load`], with the environment given as `(name, value)` pairs (for tests
    /// and for callers that keep their own environment).
    pub fn load_from_vars(
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> crate::Result<LoadedConfig> {
        LoadedConfig::from_vars(vars)
    }

    /// The settings of filesystem `name`, or the defaults for one not listed.
    pub fn fs_config(&self, name: &str) -> FsConfig {
        self.fs
            .get(name)
            .cloned()
            .unwrap_or(FsConfig { posix_gds_min_kb: 0, rdma_write_support: true })
    }
}
