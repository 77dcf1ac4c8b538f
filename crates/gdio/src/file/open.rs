//! Opening files without ever blocking: the type is checked before the open (`stat`), the open
//! itself is non-blocking (`O_NONBLOCK`, so a FIFO that appears between the check and the open
//! cannot hang it), and the type is checked again on the descriptor (`fstat`). Only regular
//! files and block devices pass; FIFOs, sockets, character devices (`/dev/zero`, a terminal)
//! and directories are refused with an error naming the path and the type.

use std::fs::File;
use std::io::Read;
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use super::info::DirectIo;
use crate::error::{Error, ErrorKind, Result};

/// What may be opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Allowed {
    /// Regular files and block devices (data files).
    FileOrBlockDevice,
    /// Regular files only (config files).
    RegularFile,
}

/// The words for a file type that is refused.
fn type_name(ft: std::fs::FileType) -> &'static str {
    if ft.is_dir() {
        "is a directory, not a file"
    } else if ft.is_fifo() {
        "is a FIFO (named pipe), not a file: gdio never reads pipes, they would block"
    } else if ft.is_socket() {
        "is a socket, not a file"
    } else if ft.is_char_device() {
        "is a character device (like /dev/zero or a terminal), not a file"
    } else if ft.is_block_device() {
        "is a block device, not a regular file"
    } else {
        "is not a regular file"
    }
}

/// Refuses a file type that `allowed` does not take.
pub(crate) fn check_type(ft: std::fs::FileType, allowed: Allowed, path: &Path) -> Result<()> {
    let ok = ft.is_file() || (allowed == Allowed::FileOrBlockDevice && ft.is_block_device());
    if ok {
        return Ok(());
    }
    let errno = if ft.is_dir() { libc::EISDIR } else { libc::EINVAL };
    Err(Error::new(ErrorKind::InvalidInput, type_name(ft)).with_errno(errno).with_path(path))
}

pub(crate) fn open_error(e: &std::io::Error, path: &Path, what: &str) -> Error {
    let hint = match e.raw_os_error() {
        Some(libc::ENOENT) => "no such file",
        Some(libc::EACCES) | Some(libc::EPERM) => "permission denied",
        Some(libc::EISDIR) => "is a directory, not a file",
        Some(libc::EROFS) => "the filesystem is read-only",
        Some(libc::ENXIO) => "a FIFO or device with nothing at the other end",
        _ => "cannot open",
    };
    Error::from_io(e, format!("{what}: {hint}")).with_path(path)
}

/// Opens `path` with `options` without blocking, and only when it is a file `allowed` takes.
/// The descriptor comes back in blocking mode. `what` says what the open was for (errors).
pub(crate) fn open_checked(
    path: &Path,
    mut options: std::fs::OpenOptions,
    allowed: Allowed,
    what: &str,
) -> Result<File> {
    // Before: so that opening never touches a FIFO or device (opening some has side effects).
    if let Ok(md) = std::fs::metadata(path) {
        check_type(md.file_type(), allowed, path)?;
    }
    // During: O_NONBLOCK, in case the path changed since.
    options.custom_flags(libc::O_NONBLOCK);
    let f = options.open(path).map_err(|e| open_error(&e, path, what))?;
    // After: the type of what was opened is the one that counts.
    let md = f.metadata().map_err(|e| Error::from_io(&e, "fstat failed").with_path(path))?;
    check_type(md.file_type(), allowed, path)?;
    clear_nonblock(&f, path)?;
    Ok(f)
}

fn clear_nonblock(f: &File, path: &Path) -> Result<()> {
    let fd = f.as_fd();
    let flags = rustix::fs::fcntl_getfl(fd).map_err(|e| {
        Error::from_errno(e.raw_os_error(), "fcntl(F_GETFL) failed").with_path(path)
    })?;
    rustix::fs::fcntl_setfl(fd, flags - rustix::fs::OFlags::NONBLOCK)
        .map_err(|e| Error::from_errno(e.raw_os_error(), "fcntl(F_SETFL) failed").with_path(path))
}

/// Opens `path` for reading to probe it.
pub(crate) fn open_for_probe(path: &Path) -> Result<File> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    open_checked(path, o, Allowed::FileOrBlockDevice, "open for reading")
}

/// Tries to open an `O_DIRECT` twin of `path`, the same file as `buffered` (device and inode
/// compared, so a path replaced meanwhile is not used); returns it and what happened.
pub(crate) fn try_open_direct(
    path: &Path,
    buffered: &File,
    write: bool,
) -> (Option<File>, DirectIo) {
    let mut o = std::fs::OpenOptions::new();
    o.read(true).custom_flags(libc::O_DIRECT | libc::O_NONBLOCK);
    if write {
        o.write(true);
    }
    let refuse = |why: String| (None, DirectIo { supported: false, reason: Some(why) });
    let f = match o.open(path) {
        Ok(f) => f,
        Err(e) => {
            return refuse(match e.raw_os_error() {
                Some(libc::EINVAL) => "the filesystem refuses O_DIRECT (EINVAL)".to_owned(),
                _ => format!("open(O_DIRECT) failed: {e}"),
            })
        }
    };
    let same = match (f.metadata(), buffered.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    };
    if !same {
        return refuse("the path now names another file than the one opened".to_owned());
    }
    if let Err(e) = clear_nonblock(&f, path) {
        return refuse(e.to_string());
    }
    (Some(f), DirectIo { supported: true, reason: None })
}

/// The most a config file may hold (1 MiB): more is refused rather than read, so a path that
/// names `/dev/zero` or a huge file cannot exhaust memory.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads a config file: a regular file of at most `max` bytes, as UTF-8 text.
pub(crate) fn read_small_text(path: &Path, max: u64) -> Result<String> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    let f = open_checked(path, o, Allowed::RegularFile, "cannot read the config file")?;
    let mut text = String::new();
    f.take(max + 1).read_to_string(&mut text).map_err(|e| {
        Error::from_io(&e, "cannot read the config file (is it UTF-8 text?)").with_path(path)
    })?;
    if text.len() as u64 > max {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("the config file is larger than {max} bytes; it cannot be a config file"),
        )
        .with_errno(libc::EFBIG)
        .with_path(path));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Runs `f` on a thread and fails the test if it does not finish in 10 s (a regression must
    /// fail, not hang CI).
    fn within_10s<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("{what} blocked for more than 10 s"))
    }

    fn mkfifo(dir: &Path) -> std::path::PathBuf {
        let p = dir.join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &p,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        p
    }

    #[test]
    fn fifo_is_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let fifo = mkfifo(d.path());
        let p = fifo.clone();
        let e = within_10s("open_for_probe(FIFO)", move || open_for_probe(&p)).unwrap_err();
        assert!(e.to_string().contains("FIFO") && e.to_string().contains("fifo"), "{e}");
        let p = fifo.clone();
        let e =
            within_10s("config read of a FIFO", move || read_small_text(&p, 1 << 20)).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
    }

    #[test]
    fn character_devices_are_refused() {
        for dev in ["/dev/zero", "/dev/urandom", "/dev/null"] {
            let p = Path::new(dev);
            let e = within_10s("config read of a device", move || read_small_text(p, 1 << 20))
                .unwrap_err();
            assert!(e.to_string().contains("character device") && e.to_string().contains(dev));
            let e = within_10s("probe open of a device", move || open_for_probe(p)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        }
    }

    #[test]
    fn config_reads_are_bounded() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big.json");
        std::fs::write(&p, vec![b' '; 4097]).unwrap();
        let e = read_small_text(&p, 4096).unwrap_err();
        assert!(e.to_string().contains("larger than 4096 bytes"), "{e}");
        std::fs::write(&p, b"{}").unwrap();
        assert_eq!(read_small_text(&p, 4096).unwrap(), "{}");
    }

    #[test]
    fn direct_twin_must_be_the_same_file() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        std::fs::write(&a, b"aaaa").unwrap();
        let other = d.path().join("b");
        std::fs::write(&other, b"bbbb").unwrap();
        let f = open_for_probe(&a).unwrap();
        let (twin, _) = try_open_direct(&a, &f, false);
        if twin.is_none() {
            eprintln!("skipped: this filesystem refuses O_DIRECT");
            return;
        }
        // The path now names another file: the twin is refused.
        std::fs::rename(&other, &a).unwrap();
        let (twin, info) = try_open_direct(&a, &f, false);
        assert!(twin.is_none());
        assert!(!info.supported);
        assert!(info.reason.unwrap().contains("another file"));
    }
}
