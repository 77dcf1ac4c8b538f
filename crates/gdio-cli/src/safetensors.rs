//! `gdio load` and `gdio save`: safetensors checkpoints into GPU or host memory (and back out),
//! with tensors, bytes, seconds and GB/s; `--verify` compares every tensor with a plain read.

use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::Args;
use gdio::safetensors::{
    load_stream, save, Checkpoint, LoadOptions, Loaded, Plan, SaveOptions, SaveTensor, Target,
    TensorView,
};
use gdio::Driver;
use serde_json::json;

use crate::bench::progress::Progress;
use crate::out::outln;
use crate::units::{format_size, parse_size};
use gdio::cpu_steal::CpuTicks;
use gdio::engine::WorkerShares;

/// Arguments of `gdio load`.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// Safetensors files, folders, or a `*.safetensors.index.json`.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Where tensors go: `gpu` (GPU 0), `gpu:N`, `gpu:0,1` (each listed GPU gets every tensor,
    /// each byte read from storage once), or `host`.
    #[arg(long, default_value = "gpu:0")]
    pub target: String,
    /// Load only tensors whose names match (`*`, `?` wildcards); repeat or separate by commas.
    #[arg(long, value_delimiter = ',')]
    pub tensors: Vec<String>,
    /// Compare every loaded tensor byte for byte with a plain read of the file.
    #[arg(long)]
    pub verify: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// After loading, save the loaded tensors to this path (through the GPU when loaded there).
    #[arg(long)]
    pub resave: Option<PathBuf>,
    /// With --resave: split into shards of at most this size (e.g. 5G) with an index.
    #[arg(long, value_parser = parse_size)]
    pub shard_size: Option<u64>,
    /// With --resave: fsync the files before returning.
    #[arg(long)]
    pub fsync: bool,
    /// Bytes per read request (default: the configuration's `safetensors_request_bytes`, else
    /// threads × task_size × 8).
    #[arg(long, value_parser = parse_size)]
    pub request_size: Option<u64>,
    /// Read requests in flight (default: `safetensors_requests_in_flight`, else 2, or the
    /// number of GPUs).
    #[arg(long)]
    pub requests: Option<usize>,
    /// With several GPUs (--target gpu:0,1): each GPU reads a share over its own host link and
    /// copies it to the others (default: everything is read into the first GPU and copied to
    /// the others over the GPU link, faster where the CPU side limits the load; the
    /// configuration's `safetensors_spread_reads` sets the default).
    #[arg(long)]
    pub spread_reads: bool,
    /// Tests only: this many simulated GPUs (host memory, copies that complete late) instead
    /// of the machine's, so that CI covers the GPU paths of the load.
    #[arg(long, hide = true, default_value_t = 0)]
    pub sim_gpus: usize,
}

/// Arguments of `gdio save`.
#[derive(Debug, Args)]
pub struct SaveArgs {
    /// Checkpoint to read: files, folders, or a `*.safetensors.index.json`.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Where to write (`out.safetensors`; with --shard-size the shards go beside it).
    #[arg(long, short)]
    pub out: PathBuf,
    /// Memory the checkpoint passes through: `gpu:N` or `host`.
    #[arg(long, default_value = "gpu:0")]
    pub via: String,
    /// Split into shards of at most this size (e.g. 5G) with an index.
    #[arg(long, value_parser = parse_size)]
    pub shard_size: Option<u64>,
    /// fsync the files before returning.
    #[arg(long)]
    pub fsync: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Tests only: this many simulated GPUs instead of the machine's (see `gdio load`).
    #[arg(long, hide = true, default_value_t = 0)]
    pub sim_gpus: usize,
}

fn fail(cmd: &str, e: impl std::fmt::Display) -> ExitCode {
    eprintln!("gdio {cmd}: {e}");
    ExitCode::from(2)
}

fn gbps(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 / secs / 1e9
    } else {
        0.0
    }
}

/// The driver of `gdio load` and `gdio save`: the configured workers, however many GPUs are
/// targets (on the two-GPU H200 host, 24 workers loaded a checkpoint onto both GPUs at
/// 20.1–20.9 GB/s and 12 at 27.6–28.3, BENCHMARKS.md session 3).
/// With `sim_gpus` > 0 (tests), the driver runs on that many simulated GPUs.
fn driver(sim_gpus: usize) -> gdio::Result<Arc<Driver>> {
    let loaded = crate::config::load()?;
    if sim_gpus == 0 {
        return Ok(Arc::new(Driver::from_loaded(loaded)?));
    }
    let sim = gdio::gpu::sim::SimRuntime::new(sim_gpus, std::time::Duration::from_micros(20));
    Ok(Arc::new(Driver::with_runtime(loaded.config().clone(), Arc::new(sim))?))
}

struct LoadRun {
    loaded: Loaded,
    /// From the first allocation to the last tensor in place.
    seconds: f64,
    targets: Vec<Target>,
}

fn run_load(
    driver: &Arc<Driver>,
    ckpt: &Checkpoint,
    targets: Vec<Target>,
    patterns: &[String],
    options: &LoadOptions,
    quiet: bool,
) -> gdio::Result<LoadRun> {
    let plan = if patterns.is_empty() {
        Plan::all(ckpt, &targets)
    } else {
        let p: Vec<&str> = patterns.iter().map(String::as_str).collect();
        Plan::matching(ckpt, &p, &targets)?
    };
    // The workers' streams and pinned buffers for the load's GPUs are made inside the timed
    // part: by each worker at its first read (`safetensors_overlap_warm`), or before the load
    // allocates.
    let progress = Progress::new("load".into(), plan.bytes(), quiet);
    let start = Instant::now();
    let mut stream = load_stream(driver, ckpt, &plan, options)?;
    for v in stream.by_ref() {
        progress.add(v?.len);
    }
    let loaded = stream.finish()?;
    let seconds = start.elapsed().as_secs_f64();
    drop(progress);
    Ok(LoadRun { loaded, seconds, targets })
}

/// Compares every view with a plain `pread` of its bytes; returns the first mismatch.
fn verify(ckpt: &Checkpoint, loaded: &Loaded) -> gdio::Result<Option<String>> {
    let mut files = Vec::new();
    for f in ckpt.files() {
        files.push(std::fs::File::open(&f.path).map_err(|e| {
            gdio::Error::from_io(&e, "cannot open for --verify").with_path(&f.path)
        })?);
    }
    for v in loaded.views() {
        let f = &ckpt.files()[v.location.file];
        let info = ckpt.info_at(v.location);
        let off = f.header.data_start + info.data_offsets.0 + v.bytes.start;
        let mut want = vec![0u8; v.len as usize];
        files[v.location.file].read_exact_at(&mut want, off).map_err(|e| {
            gdio::Error::from_io(&e, "plain read for --verify")
                .with_path(&f.path)
                .with_range(off, v.len)
        })?;
        if loaded.to_vec(v)? != want {
            return Ok(Some(format!("tensor {:?} on {} differs from the file", v.name, v.target)));
        }
    }
    Ok(None)
}

/// Saves `views` of `loaded` in file order. A signal meanwhile stops the save, which removes
/// its temporary files, and then ends the process by that signal (`signals`).
fn run_save(
    driver: &Driver,
    loaded: &Loaded,
    out: &PathBuf,
    shard_size: Option<u64>,
    fsync: bool,
    metadata: std::collections::BTreeMap<String, String>,
    target: Target,
) -> gdio::Result<(gdio::safetensors::Saved, f64)> {
    let mut views: Vec<&TensorView> =
        loaded.views().iter().filter(|v| v.target == target).collect();
    views.sort_by_key(|v| (v.location.file, v.location.tensor));
    let tensors =
        views.iter().map(|v| SaveTensor::from_view(loaded, v)).collect::<gdio::Result<Vec<_>>>()?;
    let cancel = crate::signals::cancel_on_signal();
    let options = SaveOptions {
        fsync,
        max_shard_size: shard_size.unwrap_or(0),
        metadata,
        cancel: Some(cancel.flag()),
    };
    let start = Instant::now();
    let saved = save(driver, &tensors, out, &options);
    let secs = start.elapsed().as_secs_f64();
    cancel.finish("the save", saved.is_ok());
    Ok((saved?, secs))
}

/// `gdio load`.
pub fn load_main(a: LoadArgs) -> ExitCode {
    let targets = match Target::parse_list(&a.target) {
        Ok(t) => t,
        Err(e) => return fail("load", e),
    };
    let driver = match driver(a.sim_gpus) {
        Ok(d) => d,
        Err(e) => return fail("load", e),
    };
    // The GPUs' contexts first, untimed: the peers' benchmarks start their clocks after
    // `torch.cuda.init()` too. Timed from opening the files (headers, gdio's own GPU set-up:
    // streams and pinned buffers, allocations, reads) to the last tensor in place.
    let init = Instant::now();
    for n in targets.iter().filter_map(|t| t.gpu()) {
        if let Err(e) = driver.runtime().bind_thread(n) {
            return fail("load", e);
        }
    }
    let init_seconds = init.elapsed().as_secs_f64();
    let start = Instant::now();
    let ckpt = match Checkpoint::open_all(&a.paths) {
        Ok(c) => c,
        Err(e) => return fail("load", e),
    };
    let open_seconds = start.elapsed().as_secs_f64();
    let options = LoadOptions {
        request_size: a.request_size.unwrap_or(0) as usize,
        requests_in_flight: a.requests.unwrap_or(0),
        merge_gap: 0,
        spread_reads: a.spread_reads.then_some(true),
        cancel: None,
    };
    let before = driver.engine().counters();
    let ticks = CpuTicks::now();
    let run = match run_load(&driver, &ckpt, targets, &a.tensors, &options, a.json) {
        Ok(r) => r,
        Err(e) => return fail("load", e),
    };
    let seconds = start.elapsed().as_secs_f64();
    let after = driver.engine().counters();
    let steal = CpuTicks::since_reading(ticks).and_then(|t| t.steal_share());
    let workers = WorkerShares::new(
        driver.engine().config().threads.max(1),
        run.seconds,
        after.worker_time.since(&before.worker_time),
    )
    .with_file_bytes(after.file_bytes().saturating_sub(before.file_bytes()));
    let bytes = run.loaded.bytes_loaded();
    let mut verified = false;
    let mut mismatch = None;
    if a.verify {
        match verify(&ckpt, &run.loaded) {
            Ok(None) => verified = true,
            Ok(Some(m)) => mismatch = Some(m),
            Err(e) => return fail("load", e),
        }
    }
    let mut resave = serde_json::Value::Null;
    if let Some(out) = &a.resave {
        match run_save(
            &driver,
            &run.loaded,
            out,
            a.shard_size,
            a.fsync,
            ckpt.metadata(),
            run.targets[0],
        ) {
            Ok((s, secs)) => {
                resave = json!({
                    "files": s.files, "index": s.index, "bytes": s.total_bytes,
                    "seconds": secs, "gbps": gbps(s.total_bytes, secs),
                })
            }
            Err(e) => return fail("load", e),
        }
    }
    let targets: Vec<String> = run.targets.iter().map(|t| t.to_string()).collect();
    let times = run.loaded.times();
    let shape = run.loaded.shape();
    if a.json {
        let v = json!({
            "tensors": run.loaded.views().len() / run.targets.len().max(1),
            "views": run.loaded.views().len(),
            "bytes": bytes,
            "bytes_read": run.loaded.bytes_read(),
            "checkpoint_bytes": ckpt.total_bytes(),
            "files": ckpt.files().len(),
            "targets": targets,
            "seconds": seconds,
            "gbps": gbps(bytes, seconds),
            "transfer_seconds": run.seconds,
            "open_seconds": open_seconds,
            "warm_seconds": times.warm.as_secs_f64(),
            "alloc_seconds": times.allocate.as_secs_f64(),
            "cuda_init_seconds": init_seconds,
            "verified": verified,
            "mismatch": mismatch,
            "resave": resave,
            "workers": workers,
            "cpu_steal": steal,
            "shape": {
                "request_bytes": shape.request_size,
                "requests_in_flight": shape.requests_in_flight,
                "merge_gap_bytes": shape.merge_gap,
                "spread_reads": shape.spread_reads,
            },
        });
        outln!("{v}");
    } else {
        outln!(
            "loaded {} tensors, {} into {} in {:.3} s: {:.2} GB/s ({} read from {} file(s))",
            run.loaded.views().len() / run.targets.len().max(1),
            format_size(bytes),
            targets.join(","),
            seconds,
            gbps(bytes, seconds),
            format_size(run.loaded.bytes_read()),
            ckpt.files().len()
        );
        outln!(
            "read in requests of {}, {} in flight{}",
            format_size(shape.request_size),
            shape.requests_in_flight,
            if shape.spread_reads && run.targets.len() > 1 {
                ", each GPU reading a share over its own link"
            } else {
                ""
            }
        );
        let setup = times.allocate + times.warm;
        if setup.as_secs_f64() > seconds / 20.0 {
            outln!(
                "before the first read: {:.1} ms allocating, {:.1} ms waiting for the engine's \
                 pinned bounce buffers (made once per process)",
                times.allocate.as_secs_f64() * 1e3,
                times.warm.as_secs_f64() * 1e3
            );
        }
        if workers.verdict().is_some() {
            outln!("{}", workers.line());
        }
        if let Some(line) = crate::steal::line(steal, "it loaded") {
            outln!("{line}");
        }
        if verified {
            outln!("verified: every tensor matches a plain read of the file");
        }
        if !resave.is_null() {
            outln!("resaved: {resave}");
        }
    }
    match mismatch {
        Some(m) => fail("load", format!("--verify failed: {m}")),
        None => ExitCode::SUCCESS,
    }
}

/// `gdio save`: read a checkpoint into `--via` memory and write it to `--out`.
pub fn save_main(a: SaveArgs) -> ExitCode {
    let target = match Target::parse_list(&a.via) {
        Ok(t) if t.len() == 1 => t[0],
        Ok(_) => return fail("save", "--via takes one target (gpu:N or host)"),
        Err(e) => return fail("save", e),
    };
    let driver = match driver(a.sim_gpus) {
        Ok(d) => d,
        Err(e) => return fail("save", e),
    };
    let ckpt = match Checkpoint::open_all(&a.paths) {
        Ok(c) => c,
        Err(e) => return fail("save", e),
    };
    let run = match run_load(&driver, &ckpt, vec![target], &[], &LoadOptions::default(), a.json) {
        Ok(r) => r,
        Err(e) => return fail("save", e),
    };
    let (saved, secs) = match run_save(
        &driver,
        &run.loaded,
        &a.out,
        a.shard_size,
        a.fsync,
        ckpt.metadata(),
        target,
    ) {
        Ok(s) => s,
        Err(e) => return fail("save", e),
    };
    if a.json {
        outln!(
            "{}",
            json!({
                "tensors": run.loaded.views().len(),
                "bytes": saved.total_bytes,
                "data_bytes": saved.data_bytes,
                "seconds": secs,
                "gbps": gbps(saved.total_bytes, secs),
                "via": target.to_string(),
                "files": saved.files,
                "index": saved.index,
                "fsync": a.fsync,
                "load_seconds": run.seconds,
            })
        );
    } else {
        outln!(
            "saved {} tensors, {} from {} in {:.3} s: {:.2} GB/s -> {}",
            run.loaded.views().len(),
            format_size(saved.total_bytes),
            target,
            secs,
            gbps(saved.total_bytes, secs),
            saved.index.as_ref().unwrap_or(&saved.files[0]).display()
        );
    }
    ExitCode::SUCCESS
}
