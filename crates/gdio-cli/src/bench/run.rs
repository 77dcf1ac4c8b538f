//! The bench's steps, in order: set up (files, memory, limits), read, verify, write, verify.
//! Requests go through the sync `Driver` API from the bench's own threads ([`pass`]).

use std::os::fd::AsFd;

use gdio::cpu_steal::CpuTicks;
use gdio::{Config, Driver, FileHandle, MemoryKind, OpenOptions};
use serde_json::{json, Map, Value};

use super::data::{self, AlignedBuf, CHUNK};
use super::files::{self, Input};
use super::pass::{self, Histogram, Mover, Shape};
use super::progress::Progress;
use super::reference::Memory;
use super::report::{BenchReport, OpResult};
use super::{hostmem, limits, BenchArgs, Mode};
use gdio::engine::WorkerShares;

/// Where the bench puts data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// GPU `n`.
    Gpu(usize),
    /// Host memory.
    Host,
}

impl Target {
    fn label(self) -> String {
        match self {
            Target::Gpu(n) => format!("gpu:{n}"),
            Target::Host => "host".into(),
        }
    }
}

fn parse_target(s: &str) -> Result<Target, String> {
    match s {
        "host" | "cpu" => Ok(Target::Host),
        "gpu" => Ok(Target::Gpu(0)),
        _ => s
            .strip_prefix("gpu:")
            .and_then(|n| n.parse().ok())
            .map(Target::Gpu)
            .ok_or_else(|| format!("--target {s:?}: expected gpu, gpu:N or host")),
    }
}

/// Host memory the write limit reuses for a GPU target: larger than any CPU cache.
const WRITE_RING: usize = 256 << 20;

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn round2(x: f64) -> Value {
    json!((x * 100.0).round() / 100.0)
}

/// The timed passes of one row.
#[derive(Default)]
struct Measured {
    seconds: Vec<f64>,
    cpu: Vec<f64>,
    hist: Histogram,
    ios: u64,
    /// The machine's CPU ticks over the timed passes together; `None` once a pass could not
    /// read them.
    ticks: Option<CpuTicks>,
}

impl Measured {
    fn push(&mut self, p: pass::Pass) {
        // The first pass starts the ticks; a pass without them ends them for the row.
        self.ticks = match (self.seconds.is_empty(), self.ticks, p.ticks) {
            (true, _, t) => t,
            (false, Some(a), Some(b)) => Some(a.plus(&b)),
            _ => None,
        };
        self.seconds.push(p.seconds);
        self.cpu.push(p.cpu);
        self.hist.merge(&p.hist);
        self.ios = p.ios;
    }

    /// The share of the machine's CPU time the hypervisor took while the timed passes ran.
    fn steal_share(&self) -> Option<f64> {
        self.ticks.and_then(|t| t.steal_share())
    }

    fn gbps(&self, bytes: u64) -> f64 {
        bytes as f64 / median(&self.seconds) / 1e9
    }
}

/// What the engine's counters say about the timed passes: the bytes by path, and where the
/// workers' time went.
#[derive(Debug, Default, Clone, Copy)]
struct Moved {
    buffered: u64,
    direct: u64,
    page_cache_dma: u64,
    /// Reads served out of page-cache pins.
    pinned_reads: u64,
    /// Reads served out of read-ahead.
    read_ahead_reads: u64,
    /// Tasks the completion watcher finished.
    watcher_finished: u64,
    /// Requests run on their calling threads.
    inline_requests: u64,
    /// Requests small enough for their callers sent to the workers (`inline_max_callers`).
    inline_busy: u64,
    /// Reads split over free workers.
    split_reads: u64,
    /// Pieces of split reads read into another worker's buffer.
    split_pieces_helped: u64,
    /// Split reads whose first parts were copied early.
    split_early_copies: u64,
    /// Small reads gathered, and those of them the scatter kernel sent.
    gathered_reads: u64,
    scattered_reads: u64,
    gathered_writes: u64,
    adjacent_pieces: u64,
    time: gdio::engine::WorkerTime,
}

impl Moved {
    /// Adds what the counters moved from `before` to `after` (a write's or a read's bytes).
    fn add(
        &mut self,
        before: gdio::engine::EngineCounters,
        after: gdio::engine::EngineCounters,
        write: bool,
    ) {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        if write {
            self.buffered += d(after.buffered_write_bytes, before.buffered_write_bytes);
            self.direct += d(after.direct_write_bytes, before.direct_write_bytes);
        } else {
            self.buffered += d(after.buffered_read_bytes, before.buffered_read_bytes);
            self.direct += d(after.direct_read_bytes, before.direct_read_bytes);
            self.page_cache_dma += d(after.page_cache_dma_bytes, before.page_cache_dma_bytes);
            self.pinned_reads += d(after.pinned_reads, before.pinned_reads);
            self.read_ahead_reads += d(after.read_ahead_reads, before.read_ahead_reads);
        }
        self.watcher_finished += d(after.watcher_finished, before.watcher_finished);
        self.inline_requests += d(after.inline_requests, before.inline_requests);
        self.inline_busy += d(after.inline_busy, before.inline_busy);
        self.split_reads += d(after.split_reads, before.split_reads);
        self.split_pieces_helped += d(after.split_pieces_helped, before.split_pieces_helped);
        self.split_early_copies += d(after.split_early_copies, before.split_early_copies);
        self.gathered_reads += d(after.gathered_reads, before.gathered_reads);
        self.scattered_reads += d(after.scattered_reads, before.scattered_reads);
        self.gathered_writes += d(after.gathered_writes, before.gathered_writes);
        self.adjacent_pieces += d(after.adjacent_pieces, before.adjacent_pieces);
        self.time = self.time.plus(&after.worker_time.since(&before.worker_time));
    }
}

/// The layered configuration with the command line's knobs set on top (source "code").
fn config_for(args: &BenchArgs) -> Result<gdio::LoadedConfig, String> {
    let mut c = crate::config::load().map_err(|e| e.to_string())?;
    let e = |r: gdio::Result<()>| r.map_err(|e| e.to_string());
    if let Some(t) = args.threads {
        e(c.set("threads", t))?;
    }
    if let Some(t) = args.task_size {
        e(c.set("task_size", t))?;
    }
    if let Some(b) = args.bounce_size {
        e(c.set("bounce_buffer_size", b))?;
    }
    if let Some(d) = args.direct {
        e(c.set("direct_io", serde_json::to_value(d).unwrap_or(Value::Null)))?;
    }
    if let Some(p) = args.page_cache_dma {
        e(c.set("page_cache_dma", p == super::OnOff::On))?;
    }
    Ok(c)
}

fn backend_for(
    driver: &Driver,
    file: &FileHandle,
    kind: MemoryKind,
    write: bool,
    addr: u64,
    len: u64,
) -> String {
    let op = if write { gdio::backend::Op::Write } else { gdio::backend::Op::Read };
    let req = gdio::backend::Request {
        op,
        file: file.info(),
        memory: kind,
        file_offset: 0,
        buf_addr: addr,
        len,
    };
    driver.decide(&req).backend.unwrap_or("none").to_owned()
}

/// Everything set up for measuring: the driver, the input and its reference, the memory, and
/// the limits measured so far.
pub struct Bench<'a> {
    args: &'a BenchArgs,
    driver: Driver,
    threads: usize,
    target: Target,
    input: Input,
    handle: FileHandle,
    mem: Memory,
    /// Whether `mem` holds the reference bytes (a verified read put them there).
    loaded: bool,
    /// The output and gdio's handle on it, opened by the first write (a sweep's write rows
    /// all write this one file, each into it emptied).
    output: Option<(files::Output, FileHandle)>,
    /// Limits measured in this run.
    pub limits: Map<String, Value>,
    /// What was set up.
    pub setup: Map<String, Value>,
}

impl<'a> Bench<'a> {
    /// Opens or creates the input, allocates the memory, measures the limits.
    pub fn prepare(args: &'a BenchArgs) -> Result<Bench<'a>, String> {
        let loaded = config_for(args)?;
        let config: Config = loaded.config().clone();
        let threads = config.threads;
        let driver = if args.sim_gpu {
            let sim = gdio::gpu::sim::SimRuntime::new(1, std::time::Duration::from_micros(20));
            Driver::with_runtime(config.clone(), std::sync::Arc::new(sim))
        } else {
            Driver::from_loaded(loaded)
        }
        .map_err(|e| e.to_string())?;
        let target = match &args.target {
            Some(t) => parse_target(t)?,
            None if driver.runtime().device_count() > 0 => Target::Gpu(0),
            None => {
                if !args.json {
                    eprintln!(
                        "note: no GPU ({}); benchmarking host memory",
                        driver.why_no_gpu().unwrap_or("none found")
                    );
                }
                Target::Host
            }
        };
        // Memory: the host target holds the data; everything else is bounded per thread.
        let planned = match &args.file {
            Some(p) => std::fs::metadata(p)
                .map(|m| args.size.unwrap_or(m.len()))
                .unwrap_or_else(|_| files::generated_size(args)),
            None => files::generated_size(args),
        };
        let dir = args.dir.clone().unwrap_or_else(std::env::temp_dir);
        // One CHUNK per plain-I/O thread, the write limit's ring, verification buffers.
        let mut need = (threads + 4) as u64 * CHUNK as u64 + (64 << 20);
        if target == Target::Host {
            need += planned.div_ceil(4096) * 4096;
        } else if args.mode != Mode::Read {
            need += planned.min(WRITE_RING as u64);
        }
        if args.file.as_ref().is_none_or(|p| !p.exists()) && files::on_tmpfs(&dir) {
            need += planned; // the generated file itself lives in memory
        }
        hostmem::check(
            need,
            &format!("a bench of {} on {}", crate::units::format_size(planned), target.label()),
        )?;

        let input = files::open_input(args, threads)?;
        let size = input.reference.size;
        if size == 0 {
            return Err(format!("{}: nothing to read (size 0)", input.file.display));
        }
        let handle = FileHandle::open(&input.file.open_path).map_err(|e| e.to_string())?;
        let mut limits = Map::new();
        let mut setup = Map::new();
        if let Target::Gpu(n) = target {
            // 16 copies of 256 MiB; the simulated GPU copies with memcpy: a few small ones.
            let (chunk, copies) = if args.sim_gpu { (8 << 20, 2) } else { (256 << 20, 16) };
            let h2d = limits::pinned_copy_gbps(&driver, n, true, chunk, copies)?;
            let d2h = limits::pinned_copy_gbps(&driver, n, false, chunk, copies)?;
            limits.insert("pinned_h2d_gbps".into(), round2(h2d));
            limits.insert("pinned_d2h_gbps".into(), round2(d2h));
            if let Ok(info) = driver.runtime().device_info(n) {
                setup.insert(
                    "gpu".into(),
                    json!(format!("{} ({})", info.name, info.pci_bus_id.unwrap_or_default())),
                );
            }
        }
        let mut mem = match target {
            Target::Gpu(n) => {
                // Setup, not timed: the workers' pinned bounce buffers and streams.
                driver.prepare_gpu(n).map_err(|e| e.to_string())?;
                Memory::Device(driver.alloc_device(n, size as usize).map_err(|e| e.to_string())?)
            }
            Target::Host => Memory::Host(AlignedBuf::new((size.div_ceil(4096) * 4096) as usize)?),
        };
        // Limit: a plain parallel read of the same file into host memory (into the bench's
        // memory for the host target; into one buffer per thread otherwise).
        {
            let direct = if args.cold { Some(input.file.reopen_direct()?) } else { None };
            let f = direct.as_ref().unwrap_or(&input.file.file);
            // Not timed: for a GPU target each thread's buffer, its pages faulted in once for
            // every pass.
            let mut into = match &mut mem {
                Memory::Host(h) => data::ReadInto::Memory(h.as_mut_slice()),
                Memory::Device(_) => data::ReadInto::Scratch(data::ReadScratch::new(threads)?),
            };
            let passes = limits::HostReadPasses::for_run(args.iterations, args.cold);
            let best = limits::host_read_gbps(
                f,
                &input.file.display,
                size,
                threads,
                args.cold,
                &mut into,
                passes,
            )?;
            let key = if args.cold { "host_read_direct_gbps" } else { "host_read_gbps" };
            limits.insert(key.into(), round2(best));
            limits.insert("host_read_threads".into(), json!(threads));
        }
        setup.insert("file".into(), json!(input.file.display));
        setup.insert("filesystem".into(), json!(handle.info().fs.name));
        if let Some(t) = gdio::file::TmpfsPages::probe(&handle.info().fs) {
            setup.insert("tmpfs_pages".into(), json!(t.describe()));
        }
        setup.insert("size".into(), json!(crate::units::format_size(size)));
        setup.insert(
            "engine".into(),
            json!(format!(
                "{} threads, {} tasks, {} x {} bounce buffers, direct={:?}, page_cache_dma={}",
                config.threads,
                crate::units::format_size(config.task_size as u64),
                config.bounce_buffers_per_thread,
                crate::units::format_size(config.bounce_buffer_size as u64),
                config.direct_io,
                config.page_cache_dma
            )),
        );
        Ok(Bench {
            args,
            driver,
            threads,
            target,
            input,
            handle,
            mem,
            loaded: false,
            output: None,
            limits,
            setup,
        })
    }

    /// Bytes moved per pass.
    pub fn size(&self) -> u64 {
        self.input.reference.size
    }

    /// The target.
    pub fn target(&self) -> Target {
        self.target
    }

    fn kind(&self) -> MemoryKind {
        match self.target {
            Target::Gpu(n) => MemoryKind::Device { ordinal: n },
            Target::Host => MemoryKind::Host,
        }
    }

    fn passes(&self) -> usize {
        self.args.warmup + self.args.iterations
    }

    #[allow(clippy::too_many_arguments)]
    fn result(
        &self,
        op: &str,
        m: Measured,
        shape: Shape,
        verified: bool,
        backend: String,
        limit: Option<f64>,
        moved: Moved,
    ) -> OpResult {
        let bytes = self.size();
        let secs = median(&m.seconds);
        let best = m.seconds.iter().cloned().fold(f64::INFINITY, f64::min);
        let gbps = m.gbps(bytes);
        OpResult {
            op: op.into(),
            label: None,
            target: self.target.label(),
            pattern: shape.pattern,
            bytes,
            seconds: secs,
            gbps,
            best_gbps: bytes as f64 / best / 1e9,
            iops: m.ios as f64 / secs,
            verified,
            iterations: m.seconds.len(),
            io_size: shape.io_size,
            queue_depth: shape.depth,
            latency_p50_ms: m.hist.quantile_ms(0.5),
            latency_p99_ms: m.hist.quantile_ms(0.99),
            cpu_seconds: median(&m.cpu),
            cpu_steal: m.steal_share(),
            buffered_bytes: moved.buffered,
            direct_bytes: moved.direct,
            page_cache_dma_bytes: moved.page_cache_dma,
            pinned_reads: moved.pinned_reads,
            read_ahead_reads: moved.read_ahead_reads,
            watcher_finished_tasks: moved.watcher_finished,
            inline_requests: moved.inline_requests,
            inline_busy: moved.inline_busy,
            split_reads: moved.split_reads,
            split_pieces_helped: moved.split_pieces_helped,
            split_early_copies: moved.split_early_copies,
            gathered_reads: moved.gathered_reads,
            scattered_reads: moved.scattered_reads,
            gathered_writes: moved.gathered_writes,
            adjacent_pieces: moved.adjacent_pieces,
            workers: self
                .worker_shares(m.seconds.iter().sum(), moved.time)
                .with_file_bytes(moved.buffered + moved.direct),
            cold: self.args.cold,
            fsync_seconds: None,
            most_writers_at_once: None,
            backend,
            limit_gbps: limit,
            ratio_to_limit: limit.filter(|l| *l > 0.0).map(|l| gbps / l),
        }
    }

    /// Where the engine's workers spent `seconds` of timed passes. Reads and writes alike run
    /// on every worker of the pool (`write_threads` bounds the workers of one write request,
    /// not of all of them), so the shares are of `threads` workers.
    fn worker_shares(&self, seconds: f64, time: gdio::engine::WorkerTime) -> WorkerShares {
        WorkerShares::new(self.driver.engine().config().threads.max(1), seconds, time)
    }

    /// A plain `pread` of the input into host memory with `shape` (the limit of a host row),
    /// GB/s of the median pass.
    pub fn plain_read_shape(&mut self, shape: Shape) -> Result<f64, String> {
        let size = self.size();
        let Memory::Host(h) = &self.mem else {
            return Err("the plain read limit of a row needs host memory".into());
        };
        let mover = Mover::PlainRead { fd: self.input.file.file.as_fd(), base: h.addr() };
        let progress =
            Progress::new("plain read".into(), size * self.passes() as u64, self.args.json);
        let mut m = Measured::default();
        for i in 0..self.passes() {
            let p = pass::run(&mover, size, shape, 0x5eed + i as u64, &progress)?;
            if i >= self.args.warmup {
                m.push(p);
            }
        }
        Ok(m.gbps(size))
    }

    /// Reads the whole input `warmup + iterations` times with `shape`, verifies the last pass.
    pub fn read(&mut self, shape: Shape, limit: Option<f64>) -> Result<OpResult, String> {
        let size = self.size();
        let direct = matches!(self.mem, Memory::Device(_));
        let progress = Progress::new("read".into(), size * self.passes() as u64, self.args.json);
        let mut m = Measured::default();
        let mut moved = Moved::default();
        for i in 0..self.passes() {
            if self.args.cold {
                data::drop_cache(&self.input.file.file, &self.input.file.display)?;
            }
            if i + 1 == self.passes() {
                self.mem.poison(size)?; // only the last pass can make the bytes right
            }
            let mover = Mover::Gdio {
                driver: &self.driver,
                file: &self.handle,
                base: self.mem.addr(),
                device: direct,
                write: false,
            };
            let before = self.driver.engine().counters();
            let p = pass::run(&mover, size, shape, 0x5eed + i as u64, &progress)?;
            if i >= self.args.warmup {
                m.push(p);
                moved.add(before, self.driver.engine().counters(), false);
            }
        }
        drop(progress);
        let verified = match self.input.reference.verify_memory(&self.mem, self.threads)? {
            None => true,
            Some(at) => {
                eprintln!("read verification failed: first difference at byte {at}");
                false
            }
        };
        self.loaded = verified;
        let mut limit = limit;
        if self.args.cold {
            // The disk may not give the same speed all the time (cloud disks have burst
            // budgets): measure the plain read again after gdio's and compare with the mean.
            let f = self.input.file.reopen_direct()?;
            let mut best = 0.0f64;
            let mut into = data::ReadInto::Scratch(data::ReadScratch::new(self.threads)?);
            for _ in 0..self.args.iterations.min(2) {
                data::drop_cache(&self.input.file.file, &self.input.file.display)?;
                let t = std::time::Instant::now();
                let (file, what) = (&f, &self.input.file.display);
                let got = data::plain_read(file, what, size, self.threads, true, &mut into)?;
                best = best.max(got as f64 / t.elapsed().as_secs_f64() / 1e9);
            }
            self.limits.insert("host_read_direct_after_gbps".into(), round2(best));
            limit = limit.map(|before| (before + best) / 2.0);
        }
        let backend =
            backend_for(&self.driver, &self.handle, self.kind(), false, self.mem.addr(), size);
        Ok(self.result("read", m, shape, verified, backend, limit, moved))
    }

    /// A plain parallel `pwrite` of host memory with `shape` into an unnamed file in `dir`
    /// (the same filesystem as the output), each pass into an empty file as gdio's: the write
    /// limit, GB/s of the median pass.
    fn plain_write_limit(&self, dir: &std::path::Path, shape: Shape) -> Result<f64, String> {
        let size = self.size();
        let scratch = files::scratch_in(dir)?;
        // From the bench's memory for the host target (as gdio writes it); for a GPU target
        // from a ring of host memory too large for the CPU caches.
        let ring_buf;
        let ring = match &self.mem {
            Memory::Host(h) => &h.as_slice()[..size as usize],
            Memory::Device(_) => {
                let mut r = AlignedBuf::new((size as usize).min(WRITE_RING))?;
                data::fill_random(r.as_mut_slice(), 3, self.threads)?;
                ring_buf = r;
                ring_buf.as_slice()
            }
        };
        let mover = Mover::PlainWrite { fd: scratch.file.as_fd(), ring };
        let progress =
            Progress::new("plain write".into(), size * self.passes() as u64, self.args.json);
        let mut m = Measured::default();
        for i in 0..self.passes() {
            scratch
                .file
                .set_len(0)
                .map_err(|e| format!("cannot empty {}: {e}", scratch.display))?;
            let p = pass::run(&mover, size, shape, 0x5eed + i as u64, &progress)?;
            if i >= self.args.warmup {
                m.push(p);
            }
        }
        Ok(m.gbps(size))
    }

    /// Writes the memory out `warmup + iterations` times with `shape`, verifies the file, and
    /// measures the plain `pwrite` limit into the same filesystem. The row's limit is that
    /// `pwrite`, and for GPU memory at most the pinned device→host copy as well (the bytes
    /// cross the link before the file gets them).
    pub fn write(&mut self, shape: Shape) -> Result<OpResult, String> {
        let size = self.size();
        if !self.loaded {
            self.input.reference.load_into(&mut self.mem, self.threads)?;
            self.loaded = true;
        }
        if self.output.is_none() {
            let out = files::open_output(self.args, &self.input)?;
            if let Some(n) = &out.note {
                self.setup.insert("output_note".into(), json!(n));
            }
            self.setup.insert("output".into(), json!(out.file.display));
            let wfile = FileHandle::open_with(
                &out.file.open_path,
                OpenOptions::new().read(true).write(true),
            )
            .map_err(|e| e.to_string())?;
            self.output = Some((out, wfile));
        }
        let Some((out, wfile)) = &self.output else {
            return Err("the bench's output file is not open".into());
        };
        let plain = self.plain_write_limit(&out.file.dir, shape)?;
        if !self.args.sweep {
            // A sweep measures this per row: each row's limit is in the row.
            self.limits.insert("host_write_gbps".into(), round2(plain));
        }
        let d2h = self.limits.get("pinned_d2h_gbps").and_then(Value::as_f64);
        let limit = d2h.map_or(plain, |l| plain.min(l));
        let device = matches!(self.mem, Memory::Device(_));
        let progress = Progress::new("write".into(), size * self.passes() as u64, self.args.json);
        let mut m = Measured::default();
        let mut moved = Moved::default();
        for i in 0..self.passes() {
            // Each timed write goes to an empty file, as a checkpoint write does (the output is
            // the bench's own file, or one --overwrite allowed it to replace).
            wfile.set_len(0).map_err(|e| e.to_string())?;
            let mover = Mover::Gdio {
                driver: &self.driver,
                file: wfile,
                base: self.mem.addr(),
                device,
                write: true,
            };
            let before = self.driver.engine().counters();
            let p = pass::run(&mover, size, shape, 0x5eed + i as u64, &progress)?;
            if i >= self.args.warmup {
                m.push(p);
                moved.add(before, self.driver.engine().counters(), true);
            }
        }
        drop(progress);
        let t = std::time::Instant::now();
        wfile.sync_all().map_err(|e| e.to_string())?;
        let fsync = t.elapsed().as_secs_f64();
        let verified = match self.input.reference.verify_file(
            &out.file.file,
            &out.file.display,
            self.threads,
        )? {
            None => true,
            Some(at) => {
                eprintln!(
                    "write verification failed: first difference at byte {at} of {}",
                    out.file.display
                );
                false
            }
        };
        let backend = backend_for(&self.driver, wfile, self.kind(), true, self.mem.addr(), size);
        let mut r = self.result("write", m, shape, verified, backend, Some(limit), moved);
        r.fsync_seconds = Some(fsync);
        r.most_writers_at_once = Some(wfile.most_writers_at_once());
        Ok(r)
    }

    /// The library's counters, as JSON.
    pub fn stats(&self) -> Value {
        serde_json::to_value(self.driver.stats()).unwrap_or(Value::Null)
    }
}

/// Runs the whole bench (one shape, read and/or write).
pub fn run(args: &BenchArgs) -> Result<BenchReport, String> {
    let mut b = Bench::prepare(args)?;
    let shape = Shape { io_size: args.io_size, depth: args.queue_depth, pattern: args.pattern };
    b.setup.insert(
        "requests".into(),
        json!(format!(
            "{} x {} in flight, {}",
            crate::units::format_size(args.io_size),
            args.queue_depth,
            args.pattern.label()
        )),
    );
    let mut results = Vec::new();
    if matches!(args.mode, Mode::Read | Mode::Both) {
        let direct = b.limits.get("host_read_direct_gbps").and_then(Value::as_f64);
        let limit = match b.target() {
            // Cold: the disk (a plain parallel O_DIRECT read), or the link if that is slower;
            // `read` averages it with the same read measured again afterwards.
            Target::Gpu(_) if args.cold => {
                let h2d = b.limits.get("pinned_h2d_gbps").and_then(Value::as_f64);
                direct.map(|d| h2d.map_or(d, |h| d.min(h)))
            }
            Target::Gpu(_) => b.limits.get("pinned_h2d_gbps").and_then(Value::as_f64),
            Target::Host => b.limits.get("host_read_gbps").and_then(Value::as_f64).or(direct),
        };
        results.push(b.read(shape, limit)?);
    }
    if matches!(args.mode, Mode::Write | Mode::Both) {
        results.push(b.write(shape)?);
    }
    Ok(BenchReport {
        results,
        limits: b.limits.clone(),
        setup: b.setup.clone(),
        stats: b.stats(),
        summary: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass(ticks: Option<CpuTicks>) -> pass::Pass {
        pass::Pass { seconds: 0.5, cpu: 0.1, hist: Histogram::default(), ios: 4, ticks }
    }

    #[test]
    fn the_timed_passes_ticks_add_up_to_the_rows_steal_share() {
        let mut m = Measured::default();
        m.push(pass(Some(CpuTicks { total: 80, steal: 4 })));
        assert_eq!(m.steal_share(), None, "80 ticks are too few to tell");
        m.push(pass(Some(CpuTicks { total: 120, steal: 36 })));
        assert_eq!(m.steal_share(), Some(40.0 / 200.0));
        // A pass that could not read /proc/stat leaves the row without a share.
        m.push(pass(None));
        m.push(pass(Some(CpuTicks { total: 1_000, steal: 0 })));
        assert_eq!(m.steal_share(), None);
        // ...even when it is the first.
        let mut m = Measured::default();
        m.push(pass(None));
        m.push(pass(Some(CpuTicks { total: 1_000, steal: 10 })));
        assert_eq!(m.steal_share(), None);
    }
}
