//! `gdio`: move data between files and GPU memory at the hardware limit, and say which path
//! every I/O took and why.
//!
//! The command line as a library: [`run`] is the whole CLI (the `gdio` binary and
//! `python -m gdio` both call it).

mod bench;
mod check;
mod config;
mod cufile_choice;
mod explain;
mod gdr;
mod makefile;
mod newfile;
mod out;
mod safetensors;
mod signals;
mod steal;
mod units;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// gdio: files ↔ GPU memory at the hardware limit, on any Linux machine.
#[derive(Debug, Parser)]
#[command(name = "gdio", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands. A new one is a variant here, an `Args` struct and a `main` in its own
/// module, and one line in `dispatch` below; a command that writes files creates them through
/// `newfile` (checked target, unnamed until complete, removed on error or signal).
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
    /// Load a safetensors checkpoint (files, a folder, or an index) into GPU or host memory.
    Load(safetensors::LoadArgs),
    /// Read a safetensors checkpoint into GPU (or host) memory and save it from there.
    Save(safetensors::SaveArgs),
    /// Write a file of random bytes (for benchmarks).
    MakeFile(makefile::MakeFileArgs),
}

/// Runs the `gdio` command line on `args` (the first is the program name) and returns the exit
/// status: 0 on success. Prints to stdout and stderr like the binary; `--help` and argument
/// errors print clap's text.
pub fn run(args: Vec<OsString>) -> i32 {
    out::init();
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
        Command::Load(a) => safetensors::load_main(a),
        Command::Save(a) => safetensors::save_main(a),
        Command::MakeFile(a) => makefile::main(a),
    }
}
