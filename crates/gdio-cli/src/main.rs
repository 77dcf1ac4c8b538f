//! `gdio`: move data between files and GPU memory at the hardware limit, and say which path
//! every I/O took and why. The command line lives in the library ([`gdio_cli::run`]).

use std::process::ExitCode;

fn main() -> ExitCode {
    let status = gdio_cli::run(std::env::args_os().collect());
    ExitCode::from(u8::try_from(status).unwrap_or(1))
}
