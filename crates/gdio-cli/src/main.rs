//! `gdio`: move data between files and GPU memory at the hardware limit, and say which path
//! every I/O took and why.

mod bench;
mod check;
mod config;
mod explain;
mod gdr;
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

fn make_file(path: &std::path::Path, size: u64, seed: u64) -> Result<(), String> {
    use std::os::fd::AsFd;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let chunk = 256u64 << 20;
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(4);
    let mut buf = vec![0u8; chunk.min(size.max(1)) as usize];
    let mut off = 0u64;
    while off < size {
        let n = (size - off).min(chunk) as usize;
        bench::data::fill_random(&mut buf[..n], seed ^ (off / chunk).wrapping_mul(0x9E37_79B9), threads);
        gdio::file::posix::pwrite_all(f.as_fd(), &buf[..n], off)
            .map_err(|(_, e)| format!("write to {} failed: {}", path.display(), std::io::Error::from_raw_os_error(e)))?;
        off += n as u64;
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Bench(a) => bench::main(a),
        Command::Check(a) => check::main(a),
        Command::Gdr(c) => gdr::run(c),
        Command::MakeFile { path, size, seed } => match make_file(&path, size, seed) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("gdio make-file: {e}");
                ExitCode::from(2)
            }
        },
    }
}
