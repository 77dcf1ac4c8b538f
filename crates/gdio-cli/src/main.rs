//! `gdio`: move data between files and GPU memory at the hardware limit, and say which path
//! every I/O took and why.

mod bench;
mod check;
mod config;
mod cufile_choice;
mod explain;
mod gdr;
mod safetensors;
mod units;

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
    /// Load a safetensors checkpoint (files, a folder, or an index) into GPU or host memory.
    Load(safetensors::LoadArgs),
    /// Read a safetensors checkpoint into GPU (or host) memory and save it from there.
    Save(safetensors::SaveArgs),
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Bench(a) => bench::main(a),
        Command::Check(a) => check::main(a),
        Command::Gdr(c) => gdr::run(c),
        Command::Load(a) => safetensors::load_main(a),
        Command::Save(a) => safetensors::save_main(a),
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
