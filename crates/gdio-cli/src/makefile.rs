//! `gdio make-file`: a file of random bytes for benchmarks, written under no name and renamed
//! into place only when complete (see `newfile`): a read-only target is refused, and an error
//! (a full disk) or a signal leaves the target as it was.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::newfile::NewFile;
use crate::units::bounded_size;

/// Arguments of `gdio make-file`.
#[derive(Debug, Clone, clap::Args)]
pub struct MakeFileArgs {
    /// File to create or replace (a read-only file, a symbolic link or anything but a regular
    /// file is refused).
    pub path: PathBuf,
    /// Size, e.g. 8G.
    #[arg(long, value_parser = bounded_size("--size", 0, crate::bench::MAX_SIZE))]
    pub size: u64,
    /// Seed of the random bytes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// Writes the file; exit 0, or 2 with the reason.
pub fn main(a: MakeFileArgs) -> ExitCode {
    match make(&a) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gdio make-file: {e}");
            ExitCode::from(2)
        }
    }
}

fn make(a: &MakeFileArgs) -> Result<(), String> {
    let new = NewFile::create(&a.path)?;
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(4);
    let what = a.path.display().to_string();
    if let Err(e) = crate::bench::data::write_generated(new.file(), &what, a.size, a.seed, threads)
    {
        drop(new); // the unnamed file goes with its descriptor
        return Err(format!("{e}; the partial file was removed and {what} was not changed"));
    }
    new.commit()
}
