//! The bench's steps, in order: set up, measure the limits, read, verify, write, verify.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use gdio::{Config, DeviceBuffer, Driver, FileHandle, MemoryKind, OpenOptions};
use serde_json::{json, Map, Value};

use super::data::{self, AlignedBuf};
use super::limits;
use super::progress::Progress;
use super::report::{BenchReport, OpResult};
use super::{BenchArgs, Mode};

/// Where the bench puts data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Gpu(usize),
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

/// The memory the bench reads into and writes from.
enum Memory {
    Device(DeviceBuffer),
    Host(AlignedBuf),
}

impl Memory {
    fn addr(&self) -> u64 {
        match self {
            Memory::Device(d) => d.addr(),
            Memory::Host(h) => h.as_slice().as_ptr() as u64,
        }
    }

    /// Compares the first `len` bytes with `reference`, 256 MiB at a time for device memory.
    fn matches(&self, reference: &[u8]) -> Result<Option<usize>, String> {
        match self {
            Memory::Host(h) => {
                Ok(data::first_difference(&h.as_slice()[..reference.len()], reference))
            }
            Memory::Device(d) => {
                let chunk = 256 << 20;
                let mut tmp = vec![0u8; chunk.min(reference.len().max(1))];
                for (i, r) in reference.chunks(chunk).enumerate() {
                    let t = &mut tmp[..r.len()];
                    d.copy_to_host(i * chunk, t).map_err(|e| e.to_string())?;
                    if let Some(p) = data::first_difference(t, r) {
                        return Ok(Some(i * chunk + p));
                    }
                }
                Ok(None)
            }
        }
    }
}

/// GB/s of the best of `rounds` plain parallel reads of `path` (cold: page cache dropped first,
/// `O_DIRECT`).
fn plain_read_gbps(
    path: &std::path::Path,
    scratch: &mut AlignedBuf,
    size: u64,
    threads: usize,
    cold: bool,
    rounds: usize,
) -> Result<f64, String> {
    let mut best = 0.0f64;
    for _ in 0..rounds.max(1) {
        if cold {
            data::drop_cache(path)?;
        }
        let t = Instant::now();
        let got = data::plain_read(path, scratch.as_mut_slice(), size, threads, cold)?;
        best = best.max(got as f64 / t.elapsed().as_secs_f64() / 1e9);
    }
    Ok(best)
}

fn cpu_seconds() -> f64 {
    // SAFETY: rusage is plain old data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage into the zeroed local.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        0.0
    } else {
        v[v.len() / 2]
    }
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return 0.0;
    }
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i.min(v.len() - 1)]
}

/// One timed pass of I/Os of `io_size` over `[0, size)`, `depth` in flight.
struct Pass {
    seconds: f64,
    cpu: f64,
    latencies_ms: Vec<f64>,
}

fn run_pass(
    driver: &Driver,
    file: &FileHandle,
    mem: &Memory,
    size: u64,
    args: &BenchArgs,
    write: bool,
    progress: &Progress,
) -> Result<Pass, String> {
    let cursor = AtomicU64::new(0);
    let lat = Mutex::new(Vec::new());
    let err = Mutex::new(None::<String>);
    let base = mem.addr();
    let is_device = matches!(mem, Memory::Device(_));
    let io = args.io_size.max(1);
    let cpu0 = cpu_seconds();
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..args.queue_depth.max(1) {
            s.spawn(|| {
                let mut mine = Vec::new();
                loop {
                    let off = cursor.fetch_add(io, Ordering::Relaxed);
                    if off >= size || err.lock().unwrap().is_some() {
                        break;
                    }
                    let n = io.min(size - off) as usize;
                    let t = Instant::now();
                    // SAFETY: [base+off, base+off+n) lies inside `mem`, which outlives the scope;
                    // each request covers its own range, so no two touch the same bytes.
                    let r = unsafe {
                        match (write, is_device) {
                            (false, true) => driver.read_device_ptr(file, off, base + off, n),
                            (false, false) => {
                                driver.read_host_ptr(file, off, (base + off) as *mut u8, n)
                            }
                            (true, true) => driver.write_device_ptr(file, off, base + off, n),
                            (true, false) => {
                                driver.write_host_ptr(file, off, (base + off) as *const u8, n)
                            }
                        }
                    };
                    mine.push(t.elapsed().as_secs_f64() * 1e3);
                    match r {
                        Ok(got) if got == n => progress.add(n as u64),
                        Ok(got) => {
                            *err.lock().unwrap() =
                                Some(format!("short transfer at offset {off}: {got} of {n} bytes"));
                            break;
                        }
                        Err(e) => {
                            *err.lock().unwrap() = Some(e.to_string());
                            break;
                        }
                    }
                }
                lat.lock().unwrap().extend(mine);
            });
        }
    });
    let seconds = t0.elapsed().as_secs_f64();
    if let Some(e) = err.into_inner().unwrap() {
        return Err(e);
    }
    Ok(Pass { seconds, cpu: cpu_seconds() - cpu0, latencies_ms: lat.into_inner().unwrap() })
}

struct Measured {
    seconds: Vec<f64>,
    cpu: Vec<f64>,
    lat: Vec<f64>,
}

/// The engine's byte counters moved by the timed passes: (buffered, direct, page-cache DMA).
fn counter_delta(
    before: gdio::engine::EngineCounters,
    after: gdio::engine::EngineCounters,
    write: bool,
) -> (u64, u64, u64) {
    if write {
        (
            after.buffered_write_bytes - before.buffered_write_bytes,
            after.direct_write_bytes - before.direct_write_bytes,
            0,
        )
    } else {
        (
            after.buffered_read_bytes - before.buffered_read_bytes,
            after.direct_read_bytes - before.direct_read_bytes,
            after.page_cache_dma_bytes - before.page_cache_dma_bytes,
        )
    }
}

impl Measured {
    fn new() -> Self {
        Measured { seconds: vec![], cpu: vec![], lat: vec![] }
    }
    fn push(&mut self, p: Pass) {
        self.seconds.push(p.seconds);
        self.cpu.push(p.cpu);
        self.lat.extend(p.latencies_ms);
    }
    #[allow(clippy::too_many_arguments)]
    fn result(
        mut self,
        op: &str,
        target: Target,
        bytes: u64,
        args: &BenchArgs,
        verified: bool,
        backend: String,
        limit: Option<f64>,
    ) -> OpResult {
        let secs = median(&mut self.seconds.clone());
        let best = self.seconds.iter().cloned().fold(f64::INFINITY, f64::min);
        let gbps = bytes as f64 / secs / 1e9;
        OpResult {
            op: op.into(),
            target: target.label(),
            bytes,
            seconds: secs,
            gbps,
            best_gbps: bytes as f64 / best / 1e9,
            verified,
            iterations: self.seconds.len(),
            io_size: args.io_size,
            queue_depth: args.queue_depth,
            latency_p50_ms: percentile(&mut self.lat, 0.5),
            latency_p99_ms: percentile(&mut self.lat, 0.99),
            cpu_seconds: median(&mut self.cpu),
            buffered_bytes: 0,
            direct_bytes: 0,
            page_cache_dma_bytes: 0,
            cold: args.cold,
            fsync_seconds: None,
            backend,
            ratio_to_limit: limit.filter(|l| *l > 0.0).map(|l| gbps / l),
        }
    }
}

/// Removes the bench's own files when dropped.
struct Cleanup(Vec<PathBuf>, bool);

impl Drop for Cleanup {
    fn drop(&mut self) {
        if !self.1 {
            for p in &self.0 {
                let _ = std::fs::remove_file(p);
            }
        }
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

/// Runs the whole bench.
pub fn run(args: &BenchArgs) -> Result<BenchReport, String> {
    if args.iterations == 0 {
        return Err("--iterations must be at least 1".into());
    }
    let loaded = config_for(args)?;
    let config: Config = loaded.config().clone();
    let threads = config.threads;
    let driver = Driver::from_loaded(loaded).map_err(|e| e.to_string())?;
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
    let dir = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let mut cleanup = Cleanup(Vec::new(), args.keep);
    let mut setup = Map::new();
    let mut limits = Map::new();

    // The input file and the reference bytes.
    let (path, size, mut reference) = match &args.file {
        Some(p) => {
            let md = std::fs::metadata(p).map_err(|e| format!("--file {}: {e}", p.display()))?;
            if !md.is_file() {
                return Err(format!("--file {}: not a regular file", p.display()));
            }
            let size = args.size.unwrap_or(md.len()).min(md.len());
            let mut r = AlignedBuf::new((size.div_ceil(4096) * 4096) as usize)?;
            if !args.cold {
                data::plain_read(p, r.as_mut_slice(), size, threads, false)?; // warms the cache
            }
            (p.clone(), size, r)
        }
        None => {
            let size = args.size.unwrap_or(1 << 30);
            let p = dir.join(format!("gdio-bench-{}.bin", std::process::id()));
            let mut r = AlignedBuf::new((size.div_ceil(4096) * 4096) as usize)?;
            data::fill_random(&mut r.as_mut_slice()[..size as usize], 0x6764_696f ^ size, threads);
            cleanup.0.push(p.clone());
            data::write_file(&p, &r.as_slice()[..size as usize], threads)?;
            (p, size, r)
        }
    };
    if size == 0 {
        return Err(format!("{}: nothing to read (size 0)", path.display()));
    }

    // Limit: a plain parallel read of the same file into host memory.
    {
        let mut scratch = AlignedBuf::new((size.div_ceil(4096) * 4096) as usize)?;
        let best =
            plain_read_gbps(&path, &mut scratch, size, threads, args.cold, args.iterations.min(2))?;
        if args.file.is_some() {
            if args.cold {
                // The cold read is the reference.
                reference.as_mut_slice()[..size as usize]
                    .copy_from_slice(&scratch.as_slice()[..size as usize]);
            }
        } else if data::first_difference(
            &scratch.as_slice()[..size as usize],
            &reference.as_slice()[..size as usize],
        )
        .is_some()
        {
            return Err(format!(
                "{}: a plain read does not return the bytes just written",
                path.display()
            ));
        }
        limits.insert(
            if args.cold { "host_read_direct_gbps".into() } else { "host_read_gbps".into() },
            json!((best * 100.0).round() / 100.0),
        );
        limits.insert("host_read_threads".into(), json!(threads));
    }
    let reference = &reference.as_slice()[..size as usize];

    if let Target::Gpu(n) = target {
        let h2d = limits::pinned_copy_gbps(&driver, n, true, 256 << 20, 16)?;
        let d2h = limits::pinned_copy_gbps(&driver, n, false, 256 << 20, 16)?;
        limits.insert("pinned_h2d_gbps".into(), json!((h2d * 100.0).round() / 100.0));
        limits.insert("pinned_d2h_gbps".into(), json!((d2h * 100.0).round() / 100.0));
        if let Ok(info) = driver.runtime().device_info(n) {
            setup.insert(
                "gpu".into(),
                json!(format!("{} ({})", info.name, info.pci_bus_id.unwrap_or_default())),
            );
        }
    }

    let file = FileHandle::open(&path).map_err(|e| e.to_string())?;
    setup.insert("file".into(), json!(path.display().to_string()));
    setup.insert("filesystem".into(), json!(file.info().fs.name));
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
    setup.insert(
        "requests".into(),
        json!(format!(
            "{} x {} in flight",
            crate::units::format_size(args.io_size),
            args.queue_depth
        )),
    );

    let mut mem = match target {
        Target::Gpu(n) => {
            // Setup, not timed: the workers' pinned bounce buffers and streams.
            driver.prepare_gpu(n).map_err(|e| e.to_string())?;
            Memory::Device(driver.alloc_device(n, size as usize).map_err(|e| e.to_string())?)
        }
        Target::Host => {
            let mut h = AlignedBuf::new(size as usize)?;
            h.as_mut_slice().fill(0xA5);
            Memory::Host(h)
        }
    };
    let kind = match target {
        Target::Gpu(n) => MemoryKind::Device { ordinal: n },
        Target::Host => MemoryKind::Host,
    };
    let mut results = Vec::new();
    let read_limit = match target {
        Target::Gpu(_) => limits.get("pinned_h2d_gbps").and_then(Value::as_f64),
        Target::Host => limits
            .get("host_read_gbps")
            .or(limits.get("host_read_direct_gbps"))
            .and_then(Value::as_f64),
    };

    let mut loaded = false;
    if matches!(args.mode, Mode::Read | Mode::Both) {
        let mut m = Measured::new();
        let progress =
            Progress::new("read".into(), size * (args.iterations + args.warmup) as u64, args.json);
        let mut moved = (0, 0, 0);
        for i in 0..args.warmup + args.iterations {
            if args.cold {
                data::drop_cache(&path)?;
            }
            let before = driver.engine().counters();
            let pass = run_pass(&driver, &file, &mem, size, args, false, &progress)?;
            if i >= args.warmup {
                m.push(pass);
                let d = counter_delta(before, driver.engine().counters(), false);
                moved = (moved.0 + d.0, moved.1 + d.1, moved.2 + d.2);
            }
        }
        drop(progress);
        let verified = match mem.matches(reference)? {
            None => true,
            Some(at) => {
                eprintln!("read verification failed: first difference at byte {at}");
                false
            }
        };
        loaded = verified;
        let mut read_limit = read_limit;
        if args.cold {
            // The disk may not give the same speed all the time (cloud disks have burst
            // budgets): measure the plain read again after gdio's and compare with the mean.
            let mut scratch = AlignedBuf::new((size.div_ceil(4096) * 4096) as usize)?;
            let after =
                plain_read_gbps(&path, &mut scratch, size, threads, true, args.iterations.min(2))?;
            limits.insert(
                "host_read_direct_after_gbps".into(),
                json!((after * 100.0).round() / 100.0),
            );
            read_limit = read_limit.map(|before| (before + after) / 2.0);
        }
        let backend = backend_for(&driver, &file, kind, false, mem.addr(), size);
        let mut r = m.result("read", target, size, args, verified, backend, read_limit);
        (r.buffered_bytes, r.direct_bytes, r.page_cache_dma_bytes) = moved;
        results.push(r);
    }

    if matches!(args.mode, Mode::Write | Mode::Both) {
        if !loaded {
            match &mut mem {
                Memory::Device(d) => d.copy_from_host(0, reference).map_err(|e| e.to_string())?,
                Memory::Host(h) => h.as_mut_slice()[..size as usize].copy_from_slice(reference),
            }
        }
        let (out, fresh) = match (&args.out, &args.file) {
            (Some(o), _) => (o.clone(), true),
            (None, Some(p)) => (p.clone(), false),
            (None, None) => {
                let o = dir.join(format!("gdio-bench-{}-out.bin", std::process::id()));
                cleanup.0.push(o.clone());
                (o, true)
            }
        };
        let wfile =
            FileHandle::open_with(&out, OpenOptions::new().read(true).write(true).create(true))
                .map_err(|e| e.to_string())?;
        let mut m = Measured::new();
        let progress =
            Progress::new("write".into(), size * (args.iterations + args.warmup) as u64, args.json);
        let mut moved = (0, 0, 0);
        for i in 0..args.warmup + args.iterations {
            if fresh {
                // Each timed write goes to an empty file, as a checkpoint write does.
                wfile.set_len(0).map_err(|e| e.to_string())?;
            }
            let before = driver.engine().counters();
            let pass = run_pass(&driver, &wfile, &mem, size, args, true, &progress)?;
            if i >= args.warmup {
                m.push(pass);
                let d = counter_delta(before, driver.engine().counters(), true);
                moved = (moved.0 + d.0, moved.1 + d.1, moved.2 + d.2);
            }
        }
        drop(progress);
        let t = Instant::now();
        wfile.sync_all().map_err(|e| e.to_string())?;
        let fsync = t.elapsed().as_secs_f64();
        let mut back = AlignedBuf::new((size.div_ceil(4096) * 4096) as usize)?;
        data::plain_read(&out, back.as_mut_slice(), size, threads, false)?;
        let verified = match data::first_difference(&back.as_slice()[..size as usize], reference) {
            None => true,
            Some(at) => {
                eprintln!(
                    "write verification failed: first difference at byte {at} of {}",
                    out.display()
                );
                false
            }
        };
        let write_limit = match target {
            Target::Gpu(_) => limits.get("pinned_d2h_gbps").and_then(Value::as_f64),
            Target::Host => None,
        };
        let backend = backend_for(&driver, &wfile, kind, true, mem.addr(), size);
        let mut r = m.result("write", target, size, args, verified, backend, write_limit);
        (r.buffered_bytes, r.direct_bytes, r.page_cache_dma_bytes) = moved;
        r.fsync_seconds = Some(fsync);
        results.push(r);
    }

    let stats = serde_json::to_value(driver.stats()).unwrap_or(Value::Null);
    Ok(BenchReport { results, limits, setup, stats })
}
