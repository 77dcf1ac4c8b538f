//! The one error type of gdio.
//!
//! Every error keeps what the user needs to act on it: a kind to match on, the operating-system
//! `errno` or the GPU driver's result code where one exists, and the file, offset and length of
//! the I/O that failed.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// What went wrong, coarse enough to match on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The file or device does not exist.
    NotFound,
    /// The caller lacks permission (for example a read-only file opened for writing).
    PermissionDenied,
    /// An argument is wrong: a buffer shorter than the length, an offset past the end, a
    /// directory where a file is needed, a host pointer where device memory is needed.
    InvalidInput,
    /// A system call failed; `errno` says how.
    Io,
    /// No usable GPU: no driver library, no device, or an ordinal that does not exist.
    NoGpu,
    /// The GPU driver returned an error; `driver_code` holds its result code.
    Gpu,
    /// The configuration is wrong: an unknown key, a wrong type, a value out of range.
    Config,
    /// No backend can serve the request; the message lists each backend's reason.
    NoBackend,
    /// The operation is not supported on this platform, file or memory kind.
    Unsupported,
}

/// Which API a driver result code ([`Error::driver_code`]) comes from: the same number means
/// different things in each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CodeDomain {
    /// A `CUresult` of the CUDA driver API (`CUDA_ERROR_*`).
    Cuda,
    /// A `CUfileOpError` of NVIDIA's libcufile (`CU_FILE_*`, 5000 and up).
    CuFile,
}

impl fmt::Display for CodeDomain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CodeDomain::Cuda => "CUDA result",
            CodeDomain::CuFile => "cuFile error",
        })
    }
}

/// The file range an I/O error belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoRange {
    /// File the I/O was on.
    pub path: PathBuf,
    /// Byte offset in the file.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
}

/// The error type of every fallible gdio call.
#[derive(Debug, Clone)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    errno: Option<i32>,
    driver_code: Option<(CodeDomain, i64)>,
    path: Option<PathBuf>,
    range: Option<(u64, u64)>,
}

/// `Result` with gdio's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error of `kind` with a message that says what failed.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            errno: None,
            driver_code: None,
            path: None,
            range: None,
        }
    }

    /// An error from a failed system call, keeping its `errno`.
    pub fn from_errno(errno: i32, message: impl Into<String>) -> Self {
        let kind = match errno {
            libc::ENOENT | libc::ENXIO => ErrorKind::NotFound,
            libc::EACCES | libc::EPERM | libc::EROFS => ErrorKind::PermissionDenied,
            libc::EINVAL | libc::EISDIR | libc::ENOTDIR | libc::EBADF => ErrorKind::InvalidInput,
            libc::EOPNOTSUPP => ErrorKind::Unsupported,
            _ => ErrorKind::Io,
        };
        Error::new(kind, message).with_errno(errno)
    }

    /// An error from an [`io::Error`], keeping its `errno` when it has one.
    pub fn from_io(err: &io::Error, message: impl Into<String>) -> Self {
        match err.raw_os_error() {
            Some(errno) => Error::from_errno(errno, message),
            None => {
                let kind = match err.kind() {
                    io::ErrorKind::NotFound => ErrorKind::NotFound,
                    io::ErrorKind::PermissionDenied => ErrorKind::PermissionDenied,
                    io::ErrorKind::InvalidInput => ErrorKind::InvalidInput,
                    _ => ErrorKind::Io,
                };
                Error::new(kind, format!("{}: {err}", message.into()))
            }
        }
    }

    /// An error from the CUDA driver, keeping its `CUresult` code and name
    /// (`CUDA_ERROR_OUT_OF_MEMORY`). CUDA calls go through one helper that makes these
    /// (`gpu::cuda_error`); use it rather than this.
    pub fn gpu(code: i64, name: &str, message: impl Into<String>) -> Self {
        let mut e = Error::new(ErrorKind::Gpu, format!("{} ({name})", message.into()));
        e.driver_code = Some((CodeDomain::Cuda, code));
        e
    }

    /// Sets the `errno`.
    pub fn with_errno(mut self, errno: i32) -> Self {
        self.errno = Some(errno);
        self
    }

    /// Sets the driver result code and the API it comes from.
    pub fn with_driver_code(mut self, domain: CodeDomain, code: i64) -> Self {
        self.driver_code = Some((domain, code));
        self
    }

    /// Replaces the message, keeping the kind, codes, file and range (for adding context when
    /// an error is passed on).
    pub fn map_message(mut self, f: impl FnOnce(&str) -> String) -> Self {
        self.message = f(&self.message);
        self
    }

    /// Names the file the error belongs to (kept if one is already set).
    pub fn with_path(mut self, path: impl AsRef<Path>) -> Self {
        if self.path.is_none() {
            self.path = Some(path.as_ref().to_path_buf());
        }
        self
    }

    /// Names the byte range of the I/O that failed (kept if one is already set).
    pub fn with_range(mut self, offset: u64, len: u64) -> Self {
        if self.range.is_none() {
            self.range = Some((offset, len));
        }
        self
    }

    /// Replaces the kind.
    pub fn with_kind(mut self, kind: ErrorKind) -> Self {
        self.kind = kind;
        self
    }

    /// The kind of error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message, without the file, range and codes.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The operating-system error number, if a system call failed.
    pub fn errno(&self) -> Option<i32> {
        self.errno
    }

    /// The GPU driver or cuFile result code, if the driver failed ([`Error::code_domain`]
    /// says which).
    pub fn driver_code(&self) -> Option<i64> {
        self.driver_code.map(|(_, c)| c)
    }

    /// Which API [`Error::driver_code`] comes from.
    pub fn code_domain(&self) -> Option<CodeDomain> {
        self.driver_code.map(|(d, _)| d)
    }

    /// The file the failed I/O was on.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The file offset and length of the failed I/O.
    pub fn range(&self) -> Option<(u64, u64)> {
        self.range
    }

    /// The file, offset and length together, when all are known.
    pub fn io_range(&self) -> Option<IoRange> {
        match (&self.path, self.range) {
            (Some(p), Some((offset, len))) => Some(IoRange { path: p.clone(), offset, len }),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(p) = &self.path {
            write!(f, " [file {}", p.display())?;
            if let Some((off, len)) = self.range {
                write!(f, ", offset {off}, length {len}")?;
            }
            f.write_str("]")?;
        } else if let Some((off, len)) = self.range {
            write!(f, " [offset {off}, length {len}]")?;
        }
        if let Some(errno) = self.errno {
            let text = io::Error::from_raw_os_error(errno);
            write!(f, ": {text}")?;
        }
        if let Some((domain, code)) = self.driver_code {
            write!(f, " ({domain} {code})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        match e.errno {
            Some(errno) => io::Error::new(io::Error::from_raw_os_error(errno).kind(), e),
            None => io::Error::other(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_range_and_errno() {
        let e = Error::from_errno(libc::EIO, "read failed")
            .with_path("/data/x.bin")
            .with_range(4096, 512);
        let s = e.to_string();
        assert!(s.contains("/data/x.bin"), "{s}");
        assert!(s.contains("offset 4096"), "{s}");
        assert!(s.contains("length 512"), "{s}");
        assert!(s.contains("Input/output error"), "{s}");
        assert_eq!(e.errno(), Some(libc::EIO));
        assert_eq!(e.kind(), ErrorKind::Io);
    }

    #[test]
    fn errno_maps_to_kind() {
        assert_eq!(Error::from_errno(libc::ENOENT, "x").kind(), ErrorKind::NotFound);
        assert_eq!(Error::from_errno(libc::EACCES, "x").kind(), ErrorKind::PermissionDenied);
        assert_eq!(Error::from_errno(libc::EISDIR, "x").kind(), ErrorKind::InvalidInput);
    }

    #[test]
    fn driver_codes_say_their_domain_and_survive_rewrapping() {
        let e = Error::gpu(2, "CUDA_ERROR_OUT_OF_MEMORY", "cuMemAlloc failed");
        assert_eq!(e.code_domain(), Some(CodeDomain::Cuda));
        assert!(e.to_string().contains("(CUDA result 2)"), "{e}");
        let e = Error::new(ErrorKind::Io, "cuFileRead failed")
            .with_driver_code(CodeDomain::CuFile, 5011)
            .with_errno(libc::EIO)
            .map_message(|m| format!("{m} (not retried)"));
        assert_eq!(e.driver_code(), Some(5011));
        assert_eq!(e.errno(), Some(libc::EIO));
        let s = e.to_string();
        assert!(s.contains("(cuFile error 5011)") && s.contains("not retried"), "{s}");
    }

    #[test]
    fn first_path_and_range_win() {
        let e = Error::new(ErrorKind::Io, "x")
            .with_path("/a")
            .with_path("/b")
            .with_range(1, 2)
            .with_range(3, 4);
        assert_eq!(e.path(), Some(Path::new("/a")));
        assert_eq!(e.range(), Some((1, 2)));
    }
}
