//! `gdio bench`: the main job. Reads a file into GPU (or host) memory, verifies every byte,
//! writes it back out through the same memory, verifies that, and prints GB/s, latency and CPU
//! time beside the limits measured in the same run.

pub mod data;
pub mod limits;
pub mod progress;
mod report;
mod run;

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
    /// Benchmark this existing file (read as it is, verified against a plain read; modified only
    /// in write mode, where it is rewritten with its own bytes). Default: a new file of random
    /// bytes in --dir, removed afterwards.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Write to this file (created, and emptied before each timed write) instead of --file or
    /// the generated output file.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Bytes to move (default 1G; with --file, the whole file).
    #[arg(long, value_parser = parse_size_arg)]
    pub size: Option<u64>,
    /// Bytes per I/O request.
    #[arg(long, default_value = "64M", value_parser = parse_size_arg)]
    pub io_size: u64,
    /// I/O requests in flight at once.
    #[arg(long, default_value_t = 4)]
    pub queue_depth: usize,
    /// Engine worker threads (default: the config's `threads`).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Engine task size (default: the config's `task_size`).
    #[arg(long, value_parser = parse_size_arg)]
    pub task_size: Option<u64>,
    /// Bounce buffer size (default: the config's `bounce_buffer_size`).
    #[arg(long, value_parser = parse_size_arg)]
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
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Timed repetitions of each operation.
    #[arg(long, default_value_t = 3)]
    pub iterations: usize,
    /// Drop the page cache before each timed read (root: all caches; else this file's pages),
    /// and measure the host limit with O_DIRECT.
    #[arg(long)]
    pub cold: bool,
    /// Directory for the generated files (default: the system temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the generated files.
    #[arg(long)]
    pub keep: bool,
    /// Print one JSON object on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
}

fn parse_size_arg(s: &str) -> Result<u64, String> {
    crate::units::parse_size(s)
}

/// Runs the bench; prints the table or JSON. Returns the process exit code.
pub fn main(args: BenchArgs) -> std::process::ExitCode {
    match run::run(&args) {
        Ok(report) => {
            if args.json {
                println!(
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
                println!("{}", serde_json::json!({ "error": e }));
            }
            eprintln!("gdio bench: {e}");
            std::process::ExitCode::from(2)
        }
    }
}
