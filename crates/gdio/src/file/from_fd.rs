//! [`FileHandle::from_fd`]: a handle for a descriptor the caller opened (cuFile's
//! `cuFileHandleRegister`), on any filesystem, with or without `O_DIRECT`, without udev or
//! libmount.
//!
//! The caller's descriptor is never used for I/O and never closed: gdio opens its own buffered
//! descriptor and `O_DIRECT` twin through `/proc/self/fd/N` (which works for deleted files too),
//! so the caller's file offset and flags stay untouched. Where that reopen is refused (a file
//! whose permissions changed since the caller opened it), the descriptor is duplicated instead.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use super::handle::{FileHandle, OpenOptions};
use super::info::DirectIo;
use super::open::try_open_direct;
use super::probe;
use crate::error::{Error, ErrorKind, Result};

/// Why a descriptor cannot become a [`FileHandle`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FdRefusal {
    /// Not an open descriptor (`EBADF`), or negative.
    BadDescriptor,
    /// A directory, socket, pipe or character device: only regular files and block devices
    /// carry file I/O.
    NotAFile(String),
    /// Opened with flags file I/O cannot honour (`O_APPEND` moves every write to the end;
    /// `O_PATH` allows no I/O at all).
    UnsupportedFlags(i32),
    /// Another system error, with its `errno`.
    Os(i32),
}

impl std::fmt::Display for FdRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FdRefusal::BadDescriptor => f.write_str("not an open file descriptor"),
            FdRefusal::NotAFile(what) => write!(f, "{what}, not a regular file or block device"),
            FdRefusal::UnsupportedFlags(fl) => {
                write!(f, "opened with unsupported flags 0x{fl:x} (O_APPEND or O_PATH)")
            }
            FdRefusal::Os(e) => write!(f, "system error {}", std::io::Error::from_raw_os_error(*e)),
        }
    }
}

/// What a caller's descriptor allows, read with `fcntl(F_GETFL)` and `fstat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdMode {
    /// Opened for reading.
    pub read: bool,
    /// Opened for writing.
    pub write: bool,
    /// Opened with `O_DIRECT`.
    pub direct: bool,
}

/// Checks that `fd` is an open regular file or block device with flags gdio can honour.
pub fn check_fd(fd: i32) -> std::result::Result<FdMode, FdRefusal> {
    if fd < 0 {
        return Err(FdRefusal::BadDescriptor);
    }
    // SAFETY: F_GETFL reads the flags of a descriptor number; an invalid one gives EBADF.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EBADF);
        return Err(if e == libc::EBADF { FdRefusal::BadDescriptor } else { FdRefusal::Os(e) });
    }
    if flags & (libc::O_APPEND | libc::O_PATH) != 0 {
        return Err(FdRefusal::UnsupportedFlags(flags));
    }
    // SAFETY: an all-zero stat is a valid value to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat fills `st`; `fd` was just checked to be open.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
        return Err(FdRefusal::Os(e));
    }
    match st.st_mode & libc::S_IFMT {
        libc::S_IFREG | libc::S_IFBLK => {}
        libc::S_IFDIR => return Err(FdRefusal::NotAFile("a directory".into())),
        libc::S_IFCHR => return Err(FdRefusal::NotAFile("a character device".into())),
        libc::S_IFIFO => return Err(FdRefusal::NotAFile("a pipe".into())),
        libc::S_IFSOCK => return Err(FdRefusal::NotAFile("a socket".into())),
        _ => return Err(FdRefusal::NotAFile("a special file".into())),
    }
    let acc = flags & libc::O_ACCMODE;
    Ok(FdMode {
        read: acc == libc::O_RDONLY || acc == libc::O_RDWR,
        write: acc == libc::O_WRONLY || acc == libc::O_RDWR,
        direct: flags & libc::O_DIRECT != 0,
    })
}

impl FileHandle {
    /// A handle for the caller's open descriptor `fd`, with the caller's access mode. The
    /// descriptor stays the caller's: gdio reads and writes through descriptors of its own.
    ///
    /// Errors: [`FdRefusal`] as the error's message, with kind `InvalidInput` (bad descriptor,
    /// not a file: errno `EBADF`/`EISDIR`/`ENODEV`) or `Unsupported` (flags: errno `EINVAL`).
    pub fn from_fd(fd: BorrowedFd<'_>) -> Result<FileHandle> {
        let raw = fd.as_raw_fd();
        let mode = check_fd(raw).map_err(|r| refusal_error(&r))?;
        let proc_path = PathBuf::from(format!("/proc/self/fd/{raw}"));
        let path = std::fs::read_link(&proc_path).unwrap_or_else(|_| proc_path.clone());
        let mut o = std::fs::OpenOptions::new();
        o.read(mode.read).write(mode.write).custom_flags(libc::O_CLOEXEC);
        let (buffered, reopened) = match o.open(&proc_path) {
            Ok(f) => (f, true),
            Err(_) => {
                let f = fd.try_clone_to_owned().map_err(|e| {
                    Error::from_io(&e, "duplicating the registered descriptor").with_path(&path)
                })?;
                (File::from(f), false)
            }
        };
        let (direct, direct_info) = if reopened {
            match (mode.read, mode.write) {
                // try_open_direct always asks for read; a write-only caller gets no twin
                // unless the file is also readable to us.
                (true, w) => try_open_direct(&proc_path, &buffered, w),
                (false, _) => (
                    None,
                    DirectIo { supported: false, reason: Some("write-only descriptor".into()) },
                ),
            }
        } else if mode.direct {
            (None, DirectIo { supported: true, reason: None })
        } else {
            (
                None,
                DirectIo {
                    supported: false,
                    reason: Some("descriptor could not be reopened".into()),
                },
            )
        };
        let info = probe::probe(&path, buffered.as_fd(), direct_info)?;
        let options = OpenOptions::new().read(mode.read).write(mode.write);
        Ok(FileHandle::from_parts(buffered, direct, info, options))
    }
}

fn refusal_error(r: &FdRefusal) -> Error {
    let msg = format!("cannot register the descriptor: {r}");
    match r {
        FdRefusal::BadDescriptor => {
            Error::new(ErrorKind::InvalidInput, msg).with_errno(libc::EBADF)
        }
        FdRefusal::NotAFile(w) if w == "a directory" => {
            Error::new(ErrorKind::InvalidInput, msg).with_errno(libc::EISDIR)
        }
        FdRefusal::NotAFile(_) => Error::new(ErrorKind::InvalidInput, msg).with_errno(libc::ENODEV),
        FdRefusal::UnsupportedFlags(_) => {
            Error::new(ErrorKind::Unsupported, msg).with_errno(libc::EINVAL)
        }
        FdRefusal::Os(e) => Error::from_errno(*e, msg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;

    #[test]
    fn refuses_directories_append_and_bad_fds() {
        let dir = tempfile::tempdir().unwrap();
        let d = File::open(dir.path()).unwrap();
        assert!(matches!(check_fd(d.as_raw_fd()), Err(FdRefusal::NotAFile(_))));
        let p = dir.path().join("a");
        let a = std::fs::OpenOptions::new().create(true).append(true).open(&p).unwrap();
        assert!(matches!(check_fd(a.as_raw_fd()), Err(FdRefusal::UnsupportedFlags(_))));
        assert_eq!(check_fd(-1), Err(FdRefusal::BadDescriptor));
        assert_eq!(check_fd(987_654), Err(FdRefusal::BadDescriptor));
        let e = FileHandle::from_fd(d.as_fd()).unwrap_err();
        assert_eq!(e.errno(), Some(libc::EISDIR));
    }

    #[test]
    fn reads_through_own_descriptors_with_the_callers_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let data: Vec<u8> =
            (0..70_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
        std::fs::File::create(&p).unwrap().write_all(&data).unwrap();
        let f = File::open(&p).unwrap();
        let h = FileHandle::from_fd(f.as_fd()).unwrap();
        assert!(h.is_readable() && !h.is_writable());
        assert_eq!(h.size(), data.len() as u64);
        assert_eq!(h.path(), p.as_path());
        let mut buf = vec![0u8; 1000];
        let n = crate::file::posix::pread_full(h.buffered_fd(), &mut buf, 12_345).unwrap();
        assert_eq!(&buf[..n], &data[12_345..13_345]);
        // Deleted files stay readable through the caller's descriptor.
        std::fs::remove_file(&p).unwrap();
        let h2 = FileHandle::from_fd(f.as_fd()).unwrap();
        let n = crate::file::posix::pread_full(h2.buffered_fd(), &mut buf, 0).unwrap();
        assert_eq!(&buf[..n], &data[..1000]);
    }
}
