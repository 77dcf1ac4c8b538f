//! Fault injection for the `pread`/`pwrite` loops of [`super::posix`]: a plan attached to a
//! file (by device and inode, so it reaches every descriptor and every engine worker) makes the
//! system calls fail or come up short the way a sick disk or a busy signal handler would.
//!
//! Compiled in only for the crate's own tests and with the `fault-injection` feature; without a
//! plan armed, the seam costs one relaxed atomic load per system call.
//!
//! ```ignore
//! let _plan = gdio::file::fault::inject(&path, FaultPlan { eio_at: Some(1 << 20), ..Default::default() })?;
//! // every read or write of `path` that reaches byte 1 MiB now fails with EIO there
//! ```

use std::os::fd::BorrowedFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// What goes wrong, for one file. Every field is independent; the default plan injects nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultPlan {
    /// A read or write that reaches this byte transfers the bytes before it, then fails with
    /// `EIO` (as a bad sector does).
    pub eio_at: Option<u64>,
    /// Every system call first fails with `EINTR` this many times (a signal storm).
    pub eintr_burst: u32,
    /// Every system call transfers at most this many bytes (short reads and writes).
    pub short_max: Option<usize>,
    /// Writes fail with `ENOSPC` once this many bytes were written to the file since the plan
    /// was armed; the write that crosses the limit is cut short at it.
    pub enospc_after: Option<u64>,
    /// Calls on an `O_DIRECT` descriptor fail with `EINVAL` (a filesystem that refuses the
    /// alignment after all).
    pub einval_direct: bool,
    /// Every read system call first sleeps this long (a slow disk).
    pub read_delay: Option<std::time::Duration>,
    /// Every write system call first sleeps this long (a slow disk, or a writer that holds
    /// the file's inode lock long).
    pub write_delay: Option<std::time::Duration>,
}

struct Armed {
    id: u64,
    key: (u64, u64),
    plan: FaultPlan,
    /// EINTRs still to give on the current call.
    eintr_left: u32,
    written: u64,
    injected: u64,
}

static ARMED: AtomicUsize = AtomicUsize::new(0);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
static PLANS: Mutex<Vec<Armed>> = Mutex::new(Vec::new());

fn plans() -> std::sync::MutexGuard<'static, Vec<Armed>> {
    PLANS.lock().unwrap_or_else(|p| p.into_inner())
}

/// An armed plan; dropping it disarms it.
#[derive(Debug)]
pub struct Injection {
    id: u64,
}

impl Injection {
    /// How many faults (errors and short transfers) the plan injected so far.
    pub fn injected(&self) -> u64 {
        plans().iter().find(|a| a.id == self.id).map_or(0, |a| a.injected)
    }

    /// Bytes written to the file through the seam since the plan was armed.
    pub fn written(&self) -> u64 {
        plans().iter().find(|a| a.id == self.id).map_or(0, |a| a.written)
    }
}

impl Drop for Injection {
    fn drop(&mut self) {
        let mut p = plans();
        p.retain(|a| a.id != self.id);
        ARMED.store(p.len(), Ordering::Release);
    }
}

/// Arms `plan` for the file at `path` (every descriptor of it, in every thread) until the
/// returned [`Injection`] is dropped.
pub fn inject(path: &Path, plan: FaultPlan) -> std::io::Result<Injection> {
    let md = std::fs::metadata(path)?;
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let mut p = plans();
    p.push(Armed {
        id,
        key: (md.dev(), md.ino()),
        eintr_left: plan.eintr_burst,
        plan,
        written: 0,
        injected: 0,
    });
    ARMED.store(p.len(), Ordering::Release);
    Ok(Injection { id })
}

/// Read or write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dir {
    Read,
    Write,
}

/// Called before each system call of `want` bytes at `offset`: the bytes the call may
/// transfer (at most `want`, at least 1), or the errno it fails with.
pub(crate) fn before(fd: BorrowedFd<'_>, dir: Dir, offset: u64, want: usize) -> Result<usize, i32> {
    if ARMED.load(Ordering::Relaxed) == 0 || want == 0 {
        return Ok(want);
    }
    let Ok(st) = rustix::fs::fstat(fd) else { return Ok(want) };
    #[allow(clippy::unnecessary_cast)]
    let key = (st.st_dev as u64, st.st_ino as u64);
    let mut p = plans();
    let Some(a) = p.iter_mut().find(|a| a.key == key) else { return Ok(want) };
    let delay = match dir {
        Dir::Read => a.plan.read_delay,
        Dir::Write => a.plan.write_delay,
    };
    if let Some(d) = delay {
        drop(p);
        std::thread::sleep(d);
        p = plans();
        let Some(found) = p.iter_mut().find(|a| a.key == key) else { return Ok(want) };
        return apply(found, fd, dir, offset, want);
    }
    apply(a, fd, dir, offset, want)
}

/// The fault `a` injects into one system call (after any delay).
fn apply(
    a: &mut Armed,
    fd: BorrowedFd<'_>,
    dir: Dir,
    offset: u64,
    want: usize,
) -> Result<usize, i32> {
    let direct = rustix::fs::fcntl_getfl(fd).is_ok_and(|f| f.contains(rustix::fs::OFlags::DIRECT));
    if a.plan.einval_direct && direct {
        a.injected += 1;
        return Err(libc::EINVAL);
    }
    if a.eintr_left > 0 {
        a.eintr_left -= 1;
        a.injected += 1;
        return Err(libc::EINTR);
    }
    a.eintr_left = a.plan.eintr_burst;
    let mut n = want;
    if let Some(bad) = a.plan.eio_at {
        if bad >= offset && bad < offset + want as u64 {
            if bad == offset {
                a.injected += 1;
                return Err(libc::EIO);
            }
            n = n.min((bad - offset) as usize);
        }
    }
    if dir == Dir::Write {
        if let Some(limit) = a.plan.enospc_after {
            let left = limit.saturating_sub(a.written);
            if left == 0 {
                a.injected += 1;
                return Err(libc::ENOSPC);
            }
            n = n.min(usize::try_from(left).unwrap_or(usize::MAX));
        }
    }
    if let Some(max) = a.plan.short_max {
        n = n.min(max.max(1));
    }
    if n < want {
        a.injected += 1;
    }
    Ok(n)
}

/// Called after a write system call moved `n` bytes.
pub(crate) fn wrote(fd: BorrowedFd<'_>, n: usize) {
    if ARMED.load(Ordering::Relaxed) == 0 {
        return;
    }
    let Ok(st) = rustix::fs::fstat(fd) else { return };
    #[allow(clippy::unnecessary_cast)]
    let key = (st.st_dev as u64, st.st_ino as u64);
    if let Some(a) = plans().iter_mut().find(|a| a.key == key) {
        a.written += n as u64;
    }
}

#[cfg(test)]
mod tests;
