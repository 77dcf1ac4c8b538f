//! `pread`/`pwrite` loops that finish what they start: they retry `EINTR`, continue after short
//! transfers, and stop at end of file like `pread` does.
//!
//! Every system call passes the fault-injection seam (`file::fault`) first when the crate is
//! built for its tests or with the `fault-injection` feature.

use std::os::fd::{AsRawFd, BorrowedFd};

#[cfg(any(test, feature = "fault-injection"))]
use super::fault;

/// The bytes the next system call may move (fault injection may cut it short or fail it).
#[inline]
fn allowed(fd: BorrowedFd<'_>, write: bool, offset: u64, want: usize) -> Result<usize, i32> {
    #[cfg(any(test, feature = "fault-injection"))]
    {
        let dir = if write { fault::Dir::Write } else { fault::Dir::Read };
        fault::before(fd, dir, offset, want)
    }
    #[cfg(not(any(test, feature = "fault-injection")))]
    {
        let _ = (fd, write, offset);
        Ok(want)
    }
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// Reads up to `buf.len()` bytes at `offset`, looping over short reads and `EINTR`. Returns the
/// bytes read, fewer than asked only at end of file. Errors carry the `errno`.
pub fn pread_full(fd: BorrowedFd<'_>, buf: &mut [u8], offset: u64) -> Result<usize, i32> {
    // SAFETY: `buf` is a live, writable slice of exactly `buf.len()` bytes.
    unsafe { pread_full_raw(fd, buf.as_mut_ptr(), buf.len(), offset) }
}

/// [`pread_full`] on a raw destination.
///
/// # Safety
/// `dst` must be valid for writes of `len` bytes for the duration of the call.
pub unsafe fn pread_full_raw(
    fd: BorrowedFd<'_>,
    dst: *mut u8,
    len: usize,
    offset: u64,
) -> Result<usize, i32> {
    let mut done = 0usize;
    while done < len {
        let at = offset + done as u64;
        let rc = match allowed(fd, false, at, len - done) {
            // SAFETY: `dst + done .. dst + done + n` is inside the range the caller vouched for
            // (n <= len - done).
            Ok(n) => match unsafe {
                libc::pread64(fd.as_raw_fd(), dst.add(done).cast(), n, at as libc::off64_t)
            } {
                rc if rc < 0 => Err(last_errno()),
                rc => Ok(rc as usize),
            },
            Err(e) => Err(e),
        };
        match rc {
            Err(libc::EINTR) => continue,
            Err(errno) => return Err(errno),
            Ok(0) => break,
            Ok(n) => done += n,
        }
    }
    Ok(done)
}

/// Writes all of `buf` at `offset`, looping over partial writes and `EINTR`. On error returns
/// the bytes that reached the file and the `errno`.
pub fn pwrite_all(fd: BorrowedFd<'_>, buf: &[u8], offset: u64) -> Result<(), (usize, i32)> {
    // SAFETY: `buf` is a live slice of exactly `buf.len()` bytes.
    unsafe { pwrite_all_raw(fd, buf.as_ptr(), buf.len(), offset) }
}

/// [`pwrite_all`] from a raw source.
///
/// # Safety
/// `src` must be valid for reads of `len` bytes for the duration of the call.
pub unsafe fn pwrite_all_raw(
    fd: BorrowedFd<'_>,
    src: *const u8,
    len: usize,
    offset: u64,
) -> Result<(), (usize, i32)> {
    let mut done = 0usize;
    while done < len {
        let at = offset + done as u64;
        let rc = match allowed(fd, true, at, len - done) {
            // SAFETY: `src + done .. src + done + n` is inside the range the caller vouched for
            // (n <= len - done).
            Ok(n) => match unsafe {
                libc::pwrite64(fd.as_raw_fd(), src.add(done).cast(), n, at as libc::off64_t)
            } {
                rc if rc < 0 => Err(last_errno()),
                rc => Ok(rc as usize),
            },
            Err(e) => Err(e),
        };
        match rc {
            Err(libc::EINTR) => continue,
            Err(errno) => return Err((done, errno)),
            Ok(0) => return Err((done, libc::ENOSPC)),
            Ok(n) => {
                #[cfg(any(test, feature = "fault-injection"))]
                fault::wrote(fd, n);
                done += n;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::os::fd::AsFd;

    #[test]
    fn read_stops_at_eof_and_write_roundtrips() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let data: Vec<u8> = (0..100_003).map(|_| rng.random()).collect();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&p)
            .unwrap();
        pwrite_all(f.as_fd(), &data, 17).unwrap();
        let mut back = vec![0u8; 200_000];
        let n = pread_full(f.as_fd(), &mut back, 17).unwrap();
        assert_eq!(n, data.len());
        assert_eq!(&back[..n], &data[..]);
        assert_eq!(pread_full(f.as_fd(), &mut back, 1 << 30).unwrap(), 0);
    }

    #[test]
    fn bad_fd_reports_errno() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, b"abc").unwrap();
        let f = std::fs::File::open(&p).unwrap();
        let mut buf = [0u8; 4];
        // Writing to a read-only descriptor fails with EBADF and writes nothing.
        assert_eq!(pwrite_all(f.as_fd(), &buf, 0), Err((0, libc::EBADF)));
        assert_eq!(pread_full(f.as_fd(), &mut buf, 0), Ok(3));
        assert_eq!(&buf[..3], b"abc");
    }
}
