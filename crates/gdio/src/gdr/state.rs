//! The state behind [`Gdr`](super::Gdr) and [`PinnedRange`](super::PinnedRange): the open
//! backend, the pinned handles with their mappings, and the process that owns them (a fork
//! child must not use its parent's handles).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once};

use super::backend_dmabuf::{Dmabuf, DmabufPin};
use super::backend_gdrdrv::Gdrdrv;
use super::{copy, MappingType};
use crate::error::{Error, ErrorKind, Result};

// ---------------------------------------------------------------------------------------
// Process ownership: a fork child must not use the parent's handles.

static FORK_GENERATION: AtomicU64 = AtomicU64::new(0);

extern "C" fn after_fork_in_child() {
    FORK_GENERATION.fetch_add(1, Ordering::SeqCst);
}

pub(super) fn fork_generation() -> u64 {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // SAFETY: registers a handler that only bumps an atomic, which is async-signal-safe.
        unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
    });
    FORK_GENERATION.load(Ordering::Relaxed)
}

// ---------------------------------------------------------------------------------------

#[derive(Debug)]
pub(super) enum Backend {
    Gdrdrv(Gdrdrv),
    DmaBuf(Dmabuf),
}

#[derive(Debug)]
pub(super) struct Inner {
    pub(super) backend: Backend,
    pub(super) generation: u64,
    pub(super) pid: u32,
    pub(super) handles: Mutex<HashMap<u64, Arc<Handle>>>,
    pub(super) next_id: AtomicU64,
}

#[derive(Debug)]
pub(super) enum PinKind {
    Gdrdrv(u64),
    DmaBuf(DmabufPin),
}

#[derive(Debug)]
pub(super) struct Mapping {
    /// Address of the mapping (kept as an integer so the state stays `Send`).
    pub(super) addr: usize,
    /// Length passed to `mmap`.
    pub(super) len: usize,
    pub(super) ty: MappingType,
}

#[derive(Debug)]
pub(super) struct HandleState {
    pub(super) pin: Option<PinKind>,
    pub(super) mapping: Option<Mapping>,
}

#[derive(Debug)]
pub(super) struct Handle {
    pub(super) id: u64,
    pub(super) addr: u64,
    pub(super) size: u64,
    pub(super) va: u64,
    pub(super) mapped_size: u64,
    pub(super) page_size: u32,
    pub(super) state: Mutex<HandleState>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave the state inconsistent in a way that
    // matters more than refusing every later call, so recover the guard.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub(super) fn einval(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidInput, msg).with_errno(libc::EINVAL)
}

impl Inner {
    pub(super) fn check_process(&self) -> Result<()> {
        if fork_generation() != self.generation {
            return Err(Error::from_errno(
                libc::EACCES,
                format!("this gdr handle belongs to process {} that opened it; a forked child must open its own Gdr", self.pid),
            ));
        }
        Ok(())
    }

    pub(super) fn unmap_locked(&self, st: &mut HandleState) -> Result<()> {
        let m = st.mapping.take().ok_or_else(|| einval("the handle is not mapped"))?;
        // SAFETY: addr/len are exactly what mmap returned for this handle, and the mapping
        // is removed from the state under the lock, so no copy can be using it.
        let r = unsafe { libc::munmap(m.addr as *mut libc::c_void, m.len) };
        copy::mapping_removed(m.ty);
        if r != 0 {
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
            return Err(Error::from_errno(errno, "munmap of the GPU mapping failed"));
        }
        Ok(())
    }

    pub(super) fn unpin(&self, h: &Handle) -> Result<()> {
        let mut st = lock(&h.state);
        let mut first_err = None;
        if st.mapping.is_some() {
            if let Err(e) = self.unmap_locked(&mut st) {
                first_err = Some(e);
            }
        }
        match st.pin.take() {
            None => return Err(einval("the handle was already unpinned")),
            Some(PinKind::Gdrdrv(kh)) => {
                if let Backend::Gdrdrv(d) = &self.backend {
                    if let Err(e) = d.unpin(kh) {
                        first_err.get_or_insert(e);
                    }
                }
            }
            Some(PinKind::DmaBuf(p)) => drop(p),
        }
        drop(st);
        lock(&self.handles).remove(&h.id);
        first_err.map_or(Ok(()), Err)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let handles: Vec<_> = lock(&self.handles).values().cloned().collect();
        for h in handles {
            let _ = self.unpin(&h);
        }
    }
}
