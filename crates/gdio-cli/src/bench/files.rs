//! The bench's files, made so that nothing of the user's is lost: the input is read, never
//! written; a `--file` that does not exist is created (`O_EXCL`) and removed unless `--keep`;
//! generated files and outputs have no name while the bench runs (`O_TMPFILE`, or a name made
//! with `O_EXCL` and removed at once), so Ctrl-C, SIGTERM or SIGKILL leaves nothing behind;
//! `--out` is a file the bench creates, or with `--overwrite` an existing regular, writable
//! file that is not the input (same device and inode, through symbolic and hard links).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::data;
use super::reference::{Reference, Source};
use super::BenchArgs;
use crate::newfile;
use crate::signals;

/// Seed of generated files (with the size mixed in).
const SEED: u64 = 0x6764_696f;

/// An open file the bench moves data through.
pub struct BenchFile {
    /// The open file.
    pub file: File,
    /// What to call it in messages and the report.
    pub display: String,
    /// The directory it lives in (the filesystem it is on).
    pub dir: PathBuf,
    /// How the library opens it: its path, or `/proc/self/fd/N` when it has no name.
    pub open_path: PathBuf,
}

impl BenchFile {
    fn unnamed(file: File, dir: &Path, display: String) -> BenchFile {
        let open_path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        BenchFile { file, display, dir: dir.to_path_buf(), open_path }
    }

    fn named(file: File, path: &Path) -> BenchFile {
        BenchFile {
            file,
            display: path.display().to_string(),
            dir: newfile::parent_dir(path),
            open_path: path.to_path_buf(),
        }
    }

    /// (device, inode).
    fn id(&self) -> Option<(u64, u64)> {
        self.file.metadata().ok().map(|m| (m.dev(), m.ino()))
    }

    /// Opens the same file again with `O_DIRECT` (for cold plain reads).
    pub fn reopen_direct(&self) -> Result<File, String> {
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(format!("/proc/self/fd/{}", self.file.as_raw_fd()))
            .map_err(|e| format!("{}: cannot open with O_DIRECT: {e}", self.display))
    }
}

/// Filesystems whose files do not hold the bytes their size says.
fn untrusted_fs(path: &Path) -> Option<&'static str> {
    let c =
        std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str())).ok()?;
    // SAFETY: statfs is plain old data; all-zero is valid, and statfs fills it.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a valid out pointer.
    if unsafe { libc::statfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    match s.f_type as u64 {
        0x9fa0 => Some("procfs"),
        0x6265_6572 => Some("sysfs"),
        0x6462_6720 => Some("debugfs"),
        0x7472_6163 => Some("tracefs"),
        0x6367_7270 | 0x0027_e0eb => Some("cgroupfs"),
        0x7363_6673 => Some("securityfs"),
        0x6265_6570 => Some("configfs"),
        0xcafe_4a11 => Some("bpffs"),
        0xde5e_81e4 => Some("efivarfs"),
        _ => None,
    }
}

/// Whether `dir` is on tmpfs (its files take memory).
pub fn on_tmpfs(dir: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(dir.as_os_str()))
    else {
        return false;
    };
    // SAFETY: as in `untrusted_fs`.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as in `untrusted_fs`.
    (unsafe { libc::statfs(c.as_ptr(), &mut s) } == 0) && s.f_type as u64 == 0x0102_1994
}

/// The input file and what its bytes must be.
pub struct Input {
    /// The file.
    pub file: BenchFile,
    /// Its expected content.
    pub reference: Reference,
}

/// The size of a file the bench creates.
pub fn generated_size(args: &BenchArgs) -> u64 {
    args.size.unwrap_or(1 << 30)
}

fn generate(file: BenchFile, size: u64, threads: usize) -> Result<Input, String> {
    let seed = SEED ^ size;
    let digests = data::write_generated(&file.file, &file.display, size, seed, threads)?;
    let reference = Reference { size, digests, source: Source::Seed(seed) };
    Ok(Input { file, reference })
}

/// Opens (or creates) the input of `args`.
pub fn open_input(args: &BenchArgs, threads: usize) -> Result<Input, String> {
    let Some(p) = &args.file else {
        let dir = args.dir.clone().unwrap_or_else(std::env::temp_dir);
        let size = generated_size(args);
        if !args.keep {
            let f = tempfile::tempfile_in(&dir)
                .map_err(|e| format!("cannot create a file in {}: {e}", dir.display()))?;
            let display =
                format!("unnamed file in {} (removed when the bench ends)", dir.display());
            return generate(BenchFile::unnamed(f, &dir, display), size, threads);
        }
        let (f, path) = tempfile::Builder::new()
            .prefix("gdio-bench-")
            .suffix(".bin")
            .tempfile_in(&dir)
            .and_then(|t| t.keep().map_err(|e| e.error))
            .map_err(|e| format!("cannot create a file in {}: {e}", dir.display()))?;
        let guard = signals::remove_on_signal(&path);
        let r = generate(BenchFile::named(f, &path), size, threads);
        if r.is_err() {
            let _ = std::fs::remove_file(&path);
        }
        drop(guard);
        return r;
    };
    match std::fs::symlink_metadata(p) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => create_input(p, args, threads),
        Err(e) => Err(format!("--file {}: {e}", p.display())),
        Ok(_) => existing_input(p, args, threads),
    }
}

/// `--file P` that does not exist: created with `--size` random bytes, as fio does; removed
/// (at once: it has no name while the bench runs) unless `--keep`.
fn create_input(p: &Path, args: &BenchArgs, threads: usize) -> Result<Input, String> {
    let size = generated_size(args);
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(p)
        .map_err(|e| format!("--file {}: cannot create it: {e}", p.display()))?;
    if !args.keep {
        std::fs::remove_file(p)
            .map_err(|e| format!("--file {}: cannot remove the new file: {e}", p.display()))?;
        let display = format!("{} (created, removed when the bench ends)", p.display());
        return generate(BenchFile::unnamed(f, &newfile::parent_dir(p), display), size, threads);
    }
    let guard = signals::remove_on_signal(p);
    let r = generate(BenchFile::named(f, p), size, threads);
    if r.is_err() {
        let _ = std::fs::remove_file(p);
    }
    drop(guard);
    r
}

fn existing_input(p: &Path, args: &BenchArgs, threads: usize) -> Result<Input, String> {
    let md = std::fs::metadata(p).map_err(|e| format!("--file {}: {e}", p.display()))?;
    if !md.is_file() {
        return Err(format!("--file {}: not a regular file", p.display()));
    }
    if let Some(fs) = untrusted_fs(p) {
        return Err(format!(
            "--file {}: a file on {fs}, whose size ({} bytes) does not say how many bytes it \
             holds: refusing to benchmark it",
            p.display(),
            md.len()
        ));
    }
    let size = match args.size {
        Some(s) if s > md.len() => {
            return Err(format!(
                "--size {s} is larger than --file {} ({} bytes)",
                p.display(),
                md.len()
            ))
        }
        Some(s) => s,
        None => md.len(),
    };
    let f = File::open(p).map_err(|e| format!("--file {}: {e}", p.display()))?;
    let file = BenchFile::named(f, p);
    // Also warms the page cache (a cold bench drops it before each timed read).
    let digests = data::file_digests(&file.file, &file.display, size, threads)?;
    let again = file.file.try_clone().map_err(|e| e.to_string())?;
    let reference = Reference { size, digests, source: Source::File(again) };
    Ok(Input { file, reference })
}

/// Where the bench writes.
pub struct Output {
    /// The file.
    pub file: BenchFile,
    /// Why the output is not where it would be by default, when it is not.
    pub note: Option<String>,
}

/// Opens the output of `args` for an `input`.
pub fn open_output(args: &BenchArgs, input: &Input) -> Result<Output, String> {
    let input_id = input.file.id();
    if let Some(o) = &args.out {
        let existing = match std::fs::symlink_metadata(o) {
            Ok(md) => Some(md),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(format!("--out {}: {e}", o.display())),
        };
        let same = |m: &std::fs::Metadata| Some((m.dev(), m.ino())) == input_id;
        if std::fs::metadata(o).is_ok_and(|m| same(&m)) {
            return Err(format!(
                "--out {} is the input file {} (same device and inode): refusing to overwrite it",
                o.display(),
                input.file.display
            ));
        }
        let file = match existing {
            None => std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o644)
                .open(o)
                .map_err(|e| format!("--out {}: cannot create it: {e}", o.display()))?,
            Some(md) => {
                newfile::check_target(o).map_err(|e| format!("--out: {e}"))?;
                if !args.overwrite {
                    return Err(format!(
                        "--out {} exists: the bench writes only files it creates (add \
                         --overwrite to replace its content)",
                        o.display()
                    ));
                }
                let f = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(o)
                    .map_err(|e| format!("--out {}: {e}", o.display()))?;
                let now = f.metadata().map_err(|e| e.to_string())?;
                if (now.dev(), now.ino()) != (md.dev(), md.ino()) || same(&now) {
                    return Err(format!("--out {} changed while it was opened", o.display()));
                }
                f
            }
        };
        return Ok(Output { file: BenchFile::named(file, o), note: None });
    }
    let dir = args.dir.clone().unwrap_or_else(|| input.file.dir.clone());
    let (file, note) = match tempfile::tempfile_in(&dir) {
        Ok(f) => (f, None),
        Err(e) if args.dir.is_none() => {
            let tmp = std::env::temp_dir();
            let f = tempfile::tempfile_in(&tmp)
                .map_err(|e| format!("cannot create a file in {}: {e}", tmp.display()))?;
            (
                f,
                Some(format!(
                    "cannot write in {} ({e}): writing in {}",
                    dir.display(),
                    tmp.display()
                )),
            )
        }
        Err(e) => return Err(format!("cannot create a file in {}: {e}", dir.display())),
    };
    let dir = if note.is_some() { std::env::temp_dir() } else { dir };
    let display = format!("unnamed file in {} (removed when the bench ends)", dir.display());
    Ok(Output { file: BenchFile::unnamed(file, &dir, display), note })
}

/// An unnamed scratch file in `dir` (for the plain write limit).
pub fn scratch_in(dir: &Path) -> Result<BenchFile, String> {
    let f = tempfile::tempfile_in(dir)
        .map_err(|e| format!("cannot create a file in {}: {e}", dir.display()))?;
    Ok(BenchFile::unnamed(f, dir, format!("unnamed file in {}", dir.display())))
}
