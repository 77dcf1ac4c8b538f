//! A worker's io_uring: many reads submitted with one system call and reaped together, each
//! finished the way [`posix::pread_full_raw`] finishes one: short reads continue with the
//! rest, `EINTR` is resubmitted, and a read stops at end of file. A read the kernel answers
//! with `EAGAIN` (a caller's descriptor left `O_NONBLOCK`) finishes with blocking `pread`s.
//!
//! Plain `IORING_OP_READ` into the caller's memory. Registered buffers and files are not
//! used (not measured yet, BENCHMARKS.md "io_uring (CPU-only)"): page-cache reads copy into
//! the buffer either way, and a worker's bounce ring grows, so registering it would mean
//! re-registering.
//!
//! Every read passes the fault-injection seam (`file::fault`) before each submission, as a
//! `pread` does, when the crate is built for its tests or with the `fault-injection` feature.

use std::marker::PhantomData;
use std::os::fd::{AsRawFd, BorrowedFd};

use io_uring::{opcode, types, IoUring};

use super::posix;

/// Entries of a worker's ring: reads in flight at once (more wait until earlier ones finish).
pub const RING_ENTRIES: u32 = 64;

/// The most one operation asks for; a longer read continues like a short one.
const MAX_OP: usize = 1 << 30;

/// One read: up to `len` bytes at `offset` of `fd` into `dst`.
#[derive(Debug, Clone, Copy)]
pub struct Read<'fd> {
    /// The file.
    pub fd: BorrowedFd<'fd>,
    /// Where in the file.
    pub offset: u64,
    /// Bytes wanted.
    pub len: usize,
    /// Where they go.
    pub dst: *mut u8,
}

/// Where one read stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// The rest (from `done`) is to be submitted.
    Ready,
    /// An operation of it is in the kernel.
    InFlight,
    /// Finished: all bytes, end of file, or an error.
    Done(Result<usize, i32>),
}

/// A ring of one thread: it is made for a single submitter, so it stays on the thread that
/// made it (it is neither `Send` nor `Sync`).
pub struct Ring {
    ring: IoUring,
    /// A failed `io_uring_enter` left reads in the kernel: the ring takes no more work.
    broken: bool,
    _one_thread: PhantomData<*const ()>,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring").field("entries", &self.ring.params().sq_entries()).finish()
    }
}

/// The bytes the next operation may move (fault injection may cut it short or fail it).
#[inline]
fn allowed(fd: BorrowedFd<'_>, offset: u64, want: usize) -> Result<usize, i32> {
    #[cfg(any(test, feature = "fault-injection"))]
    {
        super::fault::before(fd, super::fault::Dir::Read, offset, want)
    }
    #[cfg(not(any(test, feature = "fault-injection")))]
    {
        let _ = (fd, offset);
        Ok(want)
    }
}

impl Ring {
    /// A ring of `entries` slots (a power of two, at most 4096), set up for one submitting
    /// thread (completions are run when that thread waits) where the kernel has that (6.1+),
    /// else plain. Fails with the `errno` of `io_uring_setup` (`ENOSYS`: no io_uring; `EPERM`:
    /// `kernel.io_uring_disabled` or seccomp; `ENOMEM`: the locked-memory limit).
    pub fn new(entries: u32) -> Result<Ring, i32> {
        let tuned = IoUring::builder().setup_single_issuer().setup_defer_taskrun().build(entries);
        let ring = match tuned {
            Ok(r) => r,
            Err(_) => IoUring::new(entries).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?,
        };
        Ok(Ring { ring, broken: false, _one_thread: PhantomData })
    }

    /// True once a failing `io_uring_enter` made the ring unusable; callers use `pread`.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Reads every read of `reads`, many in flight at once, and returns for each the bytes
    /// read (fewer than asked only at end of file) or its `errno`. A read that fails does not
    /// stop the others.
    ///
    /// # Safety
    /// Every `dst` must be valid for writes of its `len` bytes for the duration of the call,
    /// and no two reads' destinations may overlap.
    pub unsafe fn read_all(&mut self, reads: &[Read<'_>]) -> Vec<Result<usize, i32>> {
        if self.broken {
            return vec![Err(libc::EBADFD); reads.len()];
        }
        let mut state = vec![State::Ready; reads.len()];
        let mut done = vec![0usize; reads.len()];
        if reads.is_empty() {
            return Vec::new();
        }
        // The kernel may have rounded the ring; never more in flight than it holds.
        let cap = (self.ring.params().sq_entries() as usize).max(1);
        let mut in_flight = 0usize;
        let mut next = 0usize;
        loop {
            // Queue what is ready, while there is room.
            let mut scanned = 0;
            while scanned < reads.len() && in_flight < cap {
                let i = next;
                next = (next + 1) % reads.len();
                scanned += 1;
                if state[i] != State::Ready {
                    continue;
                }
                let r = &reads[i];
                if done[i] >= r.len {
                    state[i] = State::Done(Ok(done[i]));
                    continue;
                }
                let at = r.offset + done[i] as u64;
                let n = match allowed(r.fd, at, (r.len - done[i]).min(MAX_OP)) {
                    Ok(n) => n,
                    Err(libc::EINTR) => continue,
                    Err(e) => {
                        state[i] = State::Done(Err(e));
                        continue;
                    }
                };
                // SAFETY: `dst + done .. + n` lies inside the read's destination (n <=
                // len - done), which the caller keeps valid and unshared until this call
                // returns, and this call does not return while the operation is in flight.
                let sqe = opcode::Read::new(
                    types::Fd(r.fd.as_raw_fd()),
                    unsafe { r.dst.add(done[i]) },
                    n as u32,
                )
                .offset(at)
                .build()
                .user_data(i as u64);
                // SAFETY: the entry's buffer stays valid until its completion is reaped (above).
                if unsafe { self.ring.submission().push(&sqe) }.is_err() {
                    // The queue is full: submit what it holds first.
                    next = i;
                    break;
                }
                state[i] = State::InFlight;
                in_flight += 1;
            }
            if in_flight == 0 {
                if state.iter().all(|s| matches!(s, State::Done(_))) {
                    break;
                }
                // Only reads that the seam answered EINTR: try them again.
                continue;
            }
            if let Err(e) = self.ring.submit_and_wait(1) {
                if !self.enter_failed(e, in_flight) {
                    for s in state.iter_mut().filter(|s| !matches!(s, State::Done(_))) {
                        *s = State::Done(Err(libc::EIO));
                    }
                    break;
                }
            }
            for cqe in self.ring.completion() {
                let i = cqe.user_data() as usize;
                let Some(r) = reads.get(i) else { continue };
                in_flight -= 1;
                state[i] = match cqe.result() {
                    res if res > 0 => {
                        done[i] += res as usize;
                        if done[i] >= r.len {
                            State::Done(Ok(done[i]))
                        } else {
                            State::Ready
                        }
                    }
                    0 => State::Done(Ok(done[i])),
                    res if -res == libc::EINTR => State::Ready,
                    res if -res == libc::EAGAIN => {
                        // SAFETY: the rest of the caller's destination, now not in flight.
                        let rest = unsafe {
                            posix::pread_full_raw(
                                r.fd,
                                r.dst.add(done[i]),
                                r.len - done[i],
                                r.offset + done[i] as u64,
                            )
                        };
                        State::Done(rest.map(|n| done[i] + n))
                    }
                    res => State::Done(Err(-res)),
                };
            }
        }
        state
            .into_iter()
            .map(|s| match s {
                State::Done(r) => r,
                _ => Err(libc::EIO),
            })
            .collect()
    }

    /// `io_uring_enter` failed with `e` while `in_flight` operations were queued or in the
    /// kernel: true when the wait may simply go on (`EINTR`, `EAGAIN`, `EBUSY`: completions
    /// are reaped next, which frees room). Otherwise marks the ring broken (it submits nothing
    /// more), waits for the operations the kernel took, and returns false; if they never
    /// complete the thread blocks rather than hand back memory the kernel may still write.
    fn enter_failed(&mut self, e: std::io::Error, in_flight: usize) -> bool {
        let errno = e.raw_os_error().unwrap_or(libc::EIO);
        if matches!(errno, libc::EINTR | libc::EAGAIN | libc::EBUSY) {
            return true;
        }
        tracing::warn!(error = %e, "io_uring_enter failed; this worker reads with pread from now on");
        self.broken = true;
        // Entries still in the submission queue never reached the kernel (and never will);
        // wait only for those that did.
        let queued = self.ring.submission().len();
        let mut left = in_flight.saturating_sub(queued);
        while left > 0 {
            left -= self.ring.completion().count().min(left);
            if left == 0 {
                break;
            }
            // SAFETY: io_uring_enter that submits nothing (to_submit 0) and waits for one
            // completion (IORING_ENTER_GETEVENTS = 1, the kernel ABI); no argument.
            let waited = unsafe { self.ring.submitter().enter::<libc::sigset_t>(0, 1, 1, None) };
            if waited.is_err() {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::os::fd::AsFd;

    fn ring() -> Option<Ring> {
        match Ring::new(8) {
            Ok(r) => Some(r),
            Err(e) => {
                eprintln!("skipped: io_uring unavailable (errno {e})");
                None
            }
        }
    }

    #[test]
    fn many_reads_land_exactly_and_stop_at_eof() {
        let Some(mut ring) = ring() else { return };
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let data: Vec<u8> = (0..1_000_003).map(|_| rng.random()).collect();
        std::fs::write(&p, &data).unwrap();
        let f = std::fs::File::open(&p).unwrap();
        // More reads than the ring has entries, random places and sizes, one past EOF.
        let mut want: Vec<(u64, usize)> = (0..100)
            .map(|_| (rng.random_range(0..data.len() as u64), rng.random_range(1..70_000)))
            .collect();
        want.push((data.len() as u64 - 5, 4096));
        want.push((data.len() as u64 + 10, 10));
        let mut bufs: Vec<Vec<u8>> = want.iter().map(|&(_, n)| vec![0u8; n]).collect();
        let reads: Vec<Read<'_>> = want
            .iter()
            .zip(bufs.iter_mut())
            .map(|(&(offset, len), b)| Read { fd: f.as_fd(), offset, len, dst: b.as_mut_ptr() })
            .collect();
        // SAFETY: each destination is its own live vector of `len` bytes.
        let got = unsafe { ring.read_all(&reads) };
        for ((&(off, len), b), r) in want.iter().zip(&bufs).zip(got) {
            let start = (off as usize).min(data.len());
            let end = (off as usize + len).min(data.len());
            assert_eq!(r, Ok(end - start), "read at {off}");
            assert_eq!(&b[..end - start], &data[start..end], "read at {off}");
        }
        assert!(!ring.is_broken());
    }

    #[test]
    fn a_bad_descriptor_fails_its_read_alone() {
        let Some(mut ring) = ring() else { return };
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, b"hello").unwrap();
        let f = std::fs::File::open(&p).unwrap();
        let w = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        let (mut a, mut b) = ([0u8; 5], [0u8; 5]);
        let reads = [
            Read { fd: w.as_fd(), offset: 0, len: 5, dst: a.as_mut_ptr() },
            Read { fd: f.as_fd(), offset: 0, len: 5, dst: b.as_mut_ptr() },
        ];
        // SAFETY: two live arrays of 5 bytes.
        let got = unsafe { ring.read_all(&reads) };
        assert_eq!(got, vec![Err(libc::EBADF), Ok(5)]);
        assert_eq!(&b, b"hello");
        assert_eq!(a, [0u8; 5], "nothing was written by the failed read");
    }

    #[test]
    fn injected_faults_reach_the_ring() {
        let Some(mut ring) = ring() else { return };
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let f = std::fs::File::open(&p).unwrap();
        let plan = crate::file::fault::FaultPlan {
            short_max: Some(1000),
            eintr_burst: 2,
            eio_at: Some(250_000),
            ..Default::default()
        };
        let inj = crate::file::fault::inject(&p, plan).unwrap();
        let mut a = vec![0u8; 100_000];
        let mut b = vec![0u8; 100_000];
        let reads = [
            Read { fd: f.as_fd(), offset: 1, len: a.len(), dst: a.as_mut_ptr() },
            Read { fd: f.as_fd(), offset: 200_000, len: b.len(), dst: b.as_mut_ptr() },
        ];
        // SAFETY: two live vectors of their lengths.
        let got = unsafe { ring.read_all(&reads) };
        assert_eq!(got, vec![Ok(100_000), Err(libc::EIO)]);
        assert_eq!(&a[..], &data[1..100_001]);
        assert_eq!(&b[..50_000], &data[200_000..250_000], "bytes before the bad one");
        assert!(inj.injected() > 100);
    }
}
