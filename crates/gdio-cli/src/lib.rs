//! `gdio`: move data between files and GPU memory at the hardware limit, and say which path
//! every I/O took and why.
//!
//! The command line as a library: [`run`] is the whole CLI (the `gdio` binary and
//! `python -m gdio` both call it).

mod bench;
mod check;
mod config;
mod explain;
mod gdr;
mod units;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// gdio: files ↔ GPU memory at the hardware limit, on any Linux machine.
#[derive(Debug, Parser)]
#[command(name = "gdio", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Read a file into GPU (or host) memory and write it back, verified, with GB/s, latency,
    /// CPU time and the limits measured in the same run.
    Bench(bench::BenchArgs),
    /// Report the platform (GPUs, drivers, nvidia-fs, P2PDMA, libcufile, io_uring) and, for each
    /// path, its filesystem, O_DIRECT support and alignment.
    Check(check::CheckArgs),
    /// GPU memory mapped into the CPU (GDRCopy): sanity, copybw, copylat, apiperf.
    #[command(subcommand)]
    Gdr(gdr::GdrCommand),
    /// Write a file of random bytes (for benchmarks).
    MakeFile {
        /// File to create (overwritten).
        path: PathBuf,
        /// Size, e.g. 8G.
        #[arg(long, value_parser = units::parse_size)]
        size: u64,
        /// Seed of the random bytes.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

/// Runs the `gdio` command line on `args` (the first is the program name) and returns the exit
/// status: 0 on success. Prints to stdout and stderr like the binary; `--help` and argument
/// errors print clap's text.
pub fn run(args: Vec<OsString>) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    exit_status(dispatch(cli))
}

/// The number behind an [`ExitCode`] (std keeps it private; the subcommands return these).
fn exit_status(code: ExitCode) -> i32 {
    (0..=u8::MAX).find(|n| ExitCode::from(*n) == code).map_or(1, i32::from)
}

fn dispatch(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Bench(a) => bench::main(a),
        Command::Check(a) => check::main(a),
        Command::Gdr(c) => gdr::run(c),
        Command::MakeFile { path, size, seed } => {
            match bench::data::make_random_file(&path, size, seed) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("gdio make-file: {e}");
                    ExitCode::from(2)
                }
            }
        }
    }
}
