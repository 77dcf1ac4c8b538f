//! [`FileHandle`]: an open file with its probe, a buffered descriptor and, where the filesystem
//! allows, an `O_DIRECT` twin.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use super::probe::{self, DirectIo, FileInfo, FileType};
use crate::error::{Error, ErrorKind, Result};

/// How to open a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenOptions {
    read: bool,
    write: bool,
    create: bool,
    truncate: bool,
}

impl OpenOptions {
    /// Options that open nothing yet; set at least one of read and write.
    pub fn new() -> Self {
        Self::default()
    }
    /// Open for reading.
    pub fn read(mut self, yes: bool) -> Self {
        self.read = yes;
        self
    }
    /// Open for writing.
    pub fn write(mut self, yes: bool) -> Self {
        self.write = yes;
        self
    }
    /// Create the file if it does not exist (needs write).
    pub fn create(mut self, yes: bool) -> Self {
        self.create = yes;
        self
    }
    /// Truncate an existing file to zero length (needs write).
    pub fn truncate(mut self, yes: bool) -> Self {
        self.truncate = yes;
        self
    }
    fn std(&self) -> std::fs::OpenOptions {
        let mut o = std::fs::OpenOptions::new();
        o.read(self.read).write(self.write).create(self.create).truncate(self.truncate);
        o
    }
    /// Whether the handle may write.
    pub fn is_write(&self) -> bool {
        self.write
    }
    /// Whether the handle may read.
    pub fn is_read(&self) -> bool {
        self.read
    }
}

/// An open file: one buffered descriptor, an optional `O_DIRECT` twin, and what the one-time
/// probe found. Shared by reference among worker threads (`pread`/`pwrite` take offsets).
#[derive(Debug)]
pub struct FileHandle {
    buffered: File,
    direct: Option<File>,
    info: FileInfo,
    options: OpenOptions,
    /// Bytes written past the probed size raise this, so reads see the new end.
    size: AtomicU64,
}

pub(crate) fn open_for_probe(path: &Path) -> Result<File> {
    let f = File::open(path).map_err(|e| open_error(&e, path, "open for reading"))?;
    reject_non_files(&f, path)?;
    Ok(f)
}

fn open_error(e: &std::io::Error, path: &Path, what: &str) -> Error {
    let hint = match e.raw_os_error() {
        Some(libc::ENOENT) => "no such file",
        Some(libc::EACCES) | Some(libc::EPERM) => "permission denied",
        Some(libc::EISDIR) => "is a directory, not a file",
        Some(libc::EROFS) => "the filesystem is read-only",
        _ => "cannot open",
    };
    Error::from_io(e, format!("{what}: {hint}")).with_path(path)
}

fn reject_non_files(f: &File, path: &Path) -> Result<()> {
    let md = f.metadata().map_err(|e| Error::from_io(&e, "fstat failed").with_path(path))?;
    let ft = md.mode() & libc::S_IFMT;
    if ft == libc::S_IFDIR {
        return Err(Error::new(ErrorKind::InvalidInput, "is a directory, not a file")
            .with_errno(libc::EISDIR)
            .with_path(path));
    }
    if ft != libc::S_IFREG && ft != libc::S_IFBLK {
        return Err(Error::new(ErrorKind::InvalidInput, "not a regular file or block device")
            .with_path(path));
    }
    Ok(())
}

/// Tries to open an `O_DIRECT` twin of `path`; returns it and what happened.
pub(crate) fn try_open_direct(path: &Path, write: bool) -> (Option<File>, DirectIo) {
    let mut o = std::fs::OpenOptions::new();
    o.read(true).custom_flags(libc::O_DIRECT);
    if write {
        o.write(true);
    }
    match o.open(path) {
        Ok(f) => (Some(f), DirectIo { supported: true, reason: None }),
        Err(e) => {
            let why = match e.raw_os_error() {
                Some(libc::EINVAL) => "the filesystem refuses O_DIRECT (EINVAL)".to_owned(),
                _ => format!("open(O_DIRECT) failed: {e}"),
            };
            (None, DirectIo { supported: false, reason: Some(why) })
        }
    }
}

impl FileHandle {
    /// Opens `path` for reading.
    pub fn open(path: impl AsRef<Path>) -> Result<FileHandle> {
        Self::open_with(path, OpenOptions::new().read(true))
    }

    /// Opens (and creates if missing) `path` for reading and writing.
    pub fn create(path: impl AsRef<Path>) -> Result<FileHandle> {
        Self::open_with(path, OpenOptions::new().read(true).write(true).create(true))
    }

    /// Opens `path` with `options`, probes it, and opens an `O_DIRECT` twin where possible.
    ///
    /// Fails for a missing file (unless creating), a directory, anything that is not a regular
    /// file or block device, and a file without any write permission bit opened for writing
    /// (refused even for root, so that a read-only file is never changed by mistake).
    pub fn open_with(path: impl AsRef<Path>, options: OpenOptions) -> Result<FileHandle> {
        let path = path.as_ref();
        if !options.read && !options.write {
            return Err(Error::new(ErrorKind::InvalidInput, "open needs read, write or both")
                .with_path(path));
        }
        if options.write {
            if let Ok(md) = std::fs::metadata(path) {
                if md.is_dir() {
                    return Err(Error::new(ErrorKind::InvalidInput, "is a directory, not a file")
                        .with_errno(libc::EISDIR)
                        .with_path(path));
                }
                if md.is_file() && md.mode() & 0o222 == 0 {
                    return Err(Error::new(
                        ErrorKind::PermissionDenied,
                        format!(
                            "file is read-only (mode {:o}); refusing to open it for writing",
                            md.mode() & 0o7777
                        ),
                    )
                    .with_errno(libc::EACCES)
                    .with_path(path));
                }
            }
        }
        let what = if options.write { "open for writing" } else { "open for reading" };
        let buffered = options.std().open(path).map_err(|e| open_error(&e, path, what))?;
        reject_non_files(&buffered, path)?;
        let (direct, direct_info) = try_open_direct(path, options.write);
        let info = probe::probe(path, buffered.as_fd(), direct_info)?;
        let size = AtomicU64::new(info.size);
        Ok(FileHandle { buffered, direct, info, options, size })
    }

    /// A handle from parts opened elsewhere in the crate ([`FileHandle::from_fd`]).
    pub(crate) fn from_parts(
        buffered: File,
        direct: Option<File>,
        info: FileInfo,
        options: OpenOptions,
    ) -> FileHandle {
        let size = AtomicU64::new(info.size);
        FileHandle { buffered, direct, info, options, size }
    }

    /// What the probe found.
    pub fn info(&self) -> &FileInfo {
        &self.info
    }

    /// The path given at open.
    pub fn path(&self) -> &Path {
        &self.info.path
    }

    /// Whether the handle was opened for writing.
    pub fn is_writable(&self) -> bool {
        self.options.is_write()
    }

    /// Whether the handle was opened for reading.
    pub fn is_readable(&self) -> bool {
        self.options.is_read()
    }

    /// The file's current size: the probed size, raised by writes through this handle, and
    /// re-read from the file when a read reaches past it.
    pub fn size(&self) -> u64 {
        self.size.load(Ordering::Acquire)
    }

    /// Re-reads the size from the file (another process may have grown it).
    pub fn refresh_size(&self) -> Result<u64> {
        if self.info.file_type == FileType::BlockDevice {
            return Ok(self.size());
        }
        let md = self
            .buffered
            .metadata()
            .map_err(|e| Error::from_io(&e, "fstat failed").with_path(self.path()))?;
        self.size.store(md.len(), Ordering::Release);
        Ok(md.len())
    }

    pub(crate) fn note_written_end(&self, end: u64) {
        self.size.fetch_max(end, Ordering::AcqRel);
    }

    /// The buffered descriptor.
    pub fn buffered_fd(&self) -> BorrowedFd<'_> {
        self.buffered.as_fd()
    }

    /// The `O_DIRECT` descriptor, when the filesystem gave one.
    pub fn direct_fd(&self) -> Option<BorrowedFd<'_>> {
        self.direct.as_ref().map(|f| f.as_fd())
    }

    /// Flushes written data and metadata to the device (`fsync`).
    pub fn sync_all(&self) -> Result<()> {
        self.buffered
            .sync_all()
            .map_err(|e| Error::from_io(&e, "fsync failed").with_path(self.path()))
    }

    /// Sets the file's length (`ftruncate`).
    pub fn set_len(&self, len: u64) -> Result<()> {
        if !self.is_writable() {
            return Err(Error::new(
                ErrorKind::PermissionDenied,
                "set_len on a handle opened read-only",
            )
            .with_path(self.path()));
        }
        self.buffered
            .set_len(len)
            .map_err(|e| Error::from_io(&e, "ftruncate failed").with_path(self.path()))?;
        self.size.store(len, Ordering::Release);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn missing_file_is_not_found() {
        let e = FileHandle::open("/nonexistent/gdio/x").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(e.to_string().contains("/nonexistent/gdio/x"));
    }

    #[test]
    fn directory_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let e = FileHandle::open(d.path()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.to_string().contains("directory"), "{e}");
        let e = FileHandle::create(d.path()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
    }

    #[test]
    fn read_only_file_is_refused_for_writing_and_unchanged() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("ro");
        std::fs::write(&p, b"keep me").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
        let e =
            FileHandle::open_with(&p, OpenOptions::new().write(true).truncate(true)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PermissionDenied);
        assert!(e.to_string().contains("read-only"), "{e}");
        assert_eq!(std::fs::read(&p).unwrap(), b"keep me");
        assert!(FileHandle::open(&p).is_ok());
    }

    #[test]
    fn open_needs_a_mode() {
        let e = FileHandle::open_with("/tmp", OpenOptions::new()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
    }
}
