//! `gdio`: move data between files and GPU memory at the hardware limit, and say which path
//! every I/O took and why.

mod bench;
mod check;
mod config;
mod cufile_choice;
mod explain;
mod gdr;
mod makefile;
mod newfile;
mod out;
mod signals;
mod units;

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
/// module, and one line in `main` below; a command that writes files creates them through
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
    /// Write a file of random bytes (for benchmarks).
    MakeFile(makefile::MakeFileArgs),
}

fn main() -> ExitCode {
    out::init();
    let cli = Cli::parse();
    match cli.command {
        Command::Bench(a) => bench::main(a),
        Command::Check(a) => check::main(a),
        Command::Gdr(c) => gdr::run(c),
        Command::MakeFile(a) => makefile::main(a),
    }
}
