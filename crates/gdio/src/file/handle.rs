//! [`FileHandle`]: an open file with its probe, a buffered descriptor and, where the filesystem
//! allows, an `O_DIRECT` twin.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use super::info::{FileInfo, FileType};
use super::open::{self, Allowed};
use super::probe;
use super::write_gate::{WriteGate, WriteTurn};
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

/// Buffered writes of at least this many bytes count against `file_writers`; smaller ones
/// (gathered pieces, many callers' small writes) were not measured with a limit and go as they
/// come.
pub const FILE_WRITERS_MIN_BYTES: u64 = 1 << 20;

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
    /// Large buffered writes in flight into this file (`file_writers`).
    writers: WriteGate,
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
        let buffered = open::open_checked(path, options.std(), Allowed::FileOrBlockDevice, what)?;
        let (direct, direct_info) = open::try_open_direct(path, &buffered, options.write);
        let info = probe::probe(path, buffered.as_fd(), direct_info)?;
        let size = AtomicU64::new(info.size);
        Ok(FileHandle { buffered, direct, info, options, size, writers: WriteGate::default() })
    }

    /// A handle from parts opened elsewhere in the crate ([`FileHandle::from_fd`]).
    pub(crate) fn from_parts(
        buffered: File,
        direct: Option<File>,
        info: FileInfo,
        options: OpenOptions,
    ) -> FileHandle {
        let size = AtomicU64::new(info.size);
        FileHandle { buffered, direct, info, options, size, writers: WriteGate::default() }
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

    /// Waits until fewer than `limit` large buffered writes into this file are in flight (0:
    /// no limit) and counts this one in until the turn is dropped (`file_writers`).
    pub(crate) fn write_turn(&self, limit: usize) -> WriteTurn<'_> {
        self.writers.enter(limit)
    }

    /// The most large buffered writes (of at least [`FILE_WRITERS_MIN_BYTES`]) that the
    /// engine had in flight into this handle at once: at most the config's `file_writers`
    /// when that is not 0. Tells whether writes into one file were held back, or crowded it.
    pub fn most_writers_at_once(&self) -> usize {
        self.writers.most_at_once()
    }

    /// Checks that `[offset, offset + len)` is a range a file can have: its end neither
    /// overflows `u64` nor passes the largest file offset Linux takes (`i64::MAX`, `off_t`).
    /// Returns the end. Every I/O entry point calls this before touching the file or the
    /// cached size.
    pub fn check_range(&self, offset: u64, len: u64) -> Result<u64> {
        check_range(self.path(), offset, len)
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

/// The largest end offset of an I/O: `off_t` is signed.
pub const MAX_FILE_END: u64 = i64::MAX as u64;

/// [`FileHandle::check_range`] for a path.
pub(crate) fn check_range(path: &Path, offset: u64, len: u64) -> Result<u64> {
    match offset.checked_add(len) {
        Some(end) if end <= MAX_FILE_END => Ok(end),
        _ => Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "offset {offset} + length {len} is past the largest file offset ({MAX_FILE_END}); nothing was read or written"
            ),
        )
        .with_errno(libc::EINVAL)
        .with_path(path)
        .with_range(offset, len)),
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
    fn range_overflow_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let h = FileHandle::create(d.path().join("f")).unwrap();
        assert_eq!(h.check_range(10, 20).unwrap(), 30);
        assert_eq!(h.check_range(MAX_FILE_END - 1, 1).unwrap(), MAX_FILE_END);
        for (off, len) in [(u64::MAX, 1), (1, u64::MAX), (MAX_FILE_END, 1), (u64::MAX - 3, 0)] {
            let e = h.check_range(off, len).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput);
            assert_eq!(e.range(), Some((off, len)));
            let s = e.to_string();
            assert!(s.contains(&format!("offset {off}")) && s.contains(&format!("length {len}")));
        }
    }

    #[test]
    fn fifo_and_devices_are_refused_for_every_mode() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let p = fifo.clone();
        std::thread::spawn(move || {
            let r = [
                FileHandle::open(&p).map(|_| ()),
                FileHandle::create(&p).map(|_| ()),
                FileHandle::open_with(&p, OpenOptions::new().write(true)).map(|_| ()),
                super::probe::probe_path(&p).map(|_| ()),
                FileHandle::open("/dev/zero").map(|_| ()),
                FileHandle::create("/dev/null").map(|_| ()),
            ];
            let _ = tx.send(r);
        });
        let r = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("opening a FIFO or device blocked for more than 10 s");
        for e in r {
            let e = e.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
            let s = e.to_string();
            assert!(s.contains("FIFO") || s.contains("character device"), "{s}");
        }
    }

    #[test]
    fn open_needs_a_mode() {
        let e = FileHandle::open_with("/tmp", OpenOptions::new()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
    }
}
