//! `gdio bench`: the main job. Reads a file into GPU (or host) memory, verifies every byte,
//! writes it back out through the same memory, verifies that, and prints GB/s, latency and CPU
//! time beside the limits measured in the same run.

pub mod data;
mod files;
mod hostmem;
pub mod limits;
mod pass;
pub mod progress;
mod reference;
mod report;
mod run;
mod sweep;

pub use pass::Pattern;

use crate::out::outln;
use crate::units::{bounded_count, bounded_size};

use std::path::PathBuf;

/// What `gdio bench` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// File → memory.
    Read,
    /// Memory → file.
    Write,
    /// Read, then write back.
    Both,
}

/// A switch on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    /// Enabled.
    On,
    /// Disabled.
    Off,
}

/// Arguments of `gdio bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// Benchmark this file: read as it is and verified against a plain read, never written.
    /// A path that does not exist is created with --size random bytes (as fio does) and
    /// removed afterwards unless --keep. Default: a new unnamed file of random bytes in --dir.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Write to this file, which the bench creates (default: an unnamed file beside the input,
    /// removed at the end). An existing file is refused unless --overwrite; the input itself
    /// (same device and inode, through symbolic or hard links) always is.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Allow --out to name an existing regular, writable file: it is emptied before each timed
    /// write and holds the data afterwards.
    #[arg(long, requires = "out")]
    pub overwrite: bool,
    /// Bytes to move (default 1G; with an existing --file, the whole file).
    #[arg(long, value_parser = bounded_size("--size", 1, MAX_SIZE))]
    pub size: Option<u64>,
    /// Bytes per I/O request.
    #[arg(long, default_value = "64M", value_parser = bounded_size("--io-size", 1, 64 << 30), conflicts_with = "sweep")]
    pub io_size: u64,
    /// I/O requests in flight at once (each from its own thread).
    #[arg(long, default_value = "4", value_parser = bounded_count("--queue-depth", 1, 1024), conflicts_with = "sweep")]
    pub queue_depth: usize,
    /// Order of the requests: seq, or random (offsets aligned to --io-size, each once).
    #[arg(long, value_enum, default_value_t = Pattern::Seq, conflicts_with = "sweep")]
    pub pattern: Pattern,
    /// Run the table of request shapes (4 KiB random x 64, 64 KiB x 64, 1 MiB x 32, 4 MiB x
    /// 16, 16 MiB x 8, 64 MiB x 4, 1 GiB x 2; reads, then writes, as --mode says, each
    /// verified) against the limit of each; requests larger than --size / in-flight shrink to
    /// it, so a small --size runs quickly.
    #[arg(long)]
    pub sweep: bool,
    /// Engine worker threads (default: the config's `threads`).
    #[arg(long, value_parser = bounded_count("--threads", 1, 1024))]
    pub threads: Option<usize>,
    /// Engine task size (default: the config's `task_size`).
    #[arg(long, value_parser = bounded_size("--task-size", 4096, 1 << 30))]
    pub task_size: Option<u64>,
    /// Bounce buffer size (default: the config's `bounce_buffer_size`).
    #[arg(long, value_parser = bounded_size("--bounce-size", 4096, 1 << 30))]
    pub bounce_size: Option<u64>,
    /// Where the data goes: `gpu`, `gpu:N` or `host` (default gpu:0, host without a GPU).
    #[arg(long)]
    pub target: Option<String>,
    /// read, write or both.
    #[arg(long, value_enum, default_value_t = Mode::Both)]
    pub mode: Mode,
    /// O_DIRECT policy: auto (cold ranges direct, cached ones buffered), on, off.
    #[arg(long)]
    pub direct: Option<gdio::DirectIoPolicy>,
    /// Read hot ranges into the GPU by DMA straight from the page cache: on or off (default:
    /// the config's `page_cache_dma`).
    #[arg(long)]
    pub page_cache_dma: Option<OnOff>,
    /// Untimed passes before the timed ones (page tables, caches, lazy driver state).
    #[arg(long, default_value = "1", value_parser = bounded_count("--warmup", 0, 1000))]
    pub warmup: usize,
    /// Timed repetitions of each operation.
    #[arg(long, default_value = "3", value_parser = bounded_count("--iterations", 1, 1000))]
    pub iterations: usize,
    /// Drop the page cache before each timed read (root: all caches; else this file's pages),
    /// and measure the host limit with O_DIRECT.
    #[arg(long)]
    pub cold: bool,
    /// Directory for the generated files (default: the system temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the generated input file (named gdio-bench-*.bin in --dir, or --file).
    #[arg(long)]
    pub keep: bool,
    /// Tests only: one simulated GPU (host memory, copies that complete late) instead of the
    /// machine's, so that CI covers the GPU paths of the bench.
    #[arg(long, hide = true)]
    pub sim_gpu: bool,
    /// Print one JSON object on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// The largest --size: 1 PiB.
pub const MAX_SIZE: u64 = 1 << 50;

/// Runs the bench; prints the table or JSON. Returns the process exit code.
pub fn main(args: BenchArgs) -> std::process::ExitCode {
    let result = if args.sweep { sweep::run(&args) } else { run::run(&args) };
    match result {
        Ok(report) => {
            if args.json {
                outln!(
                    "{}",
                    serde_json::to_string(&report)
                        .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
                );
            } else {
                report.print();
            }
            if report.results.iter().all(|r| r.verified) {
                std::process::ExitCode::SUCCESS
            } else {
                eprintln!("gdio bench: verification FAILED");
                std::process::ExitCode::from(3)
            }
        }
        Err(e) => {
            if args.json {
                outln!("{}", serde_json::json!({ "error": e }));
            }
            eprintln!("gdio bench: {e}");
            std::process::ExitCode::from(2)
        }
    }
}
