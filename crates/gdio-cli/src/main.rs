//! gdio command-line tool. (Minimal wiring of the `gdr` tools; the lead integrates the rest.)

mod gdr;

use std::process::ExitCode;

use clap::Parser;

/// gdio: move data between storage and GPU memory.
#[derive(Parser, Debug)]
#[command(name = "gdio", version)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(clap::Subcommand, Debug)]
enum Cmd {
    /// GDRCopy tools: CPU mappings of GPU memory.
    #[command(subcommand)]
    Gdr(gdr::GdrCommand),
}

fn main() -> ExitCode {
    match Cli::parse().cmd {
        Cmd::Gdr(c) => gdr::run(c),
    }
}
