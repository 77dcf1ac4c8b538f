//! Stream gates for CUDA: a slab of 32-bit flags in pinned, device-mapped host memory. A gate
//! is `cuStreamWaitValue32(flag >= target)` on the caller's stream; opening it is a CPU store
//! of `target`. Each flag only ever grows, so a flag can be handed to the next gate as soon as
//! the CPU opened the previous one: a stream still waiting on the old target is satisfied by
//! any later value too.

use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use cudarc::driver::sys;

use super::cuda_error::check;
use super::StreamGate;
use crate::error::{Error, ErrorKind, Result};

/// Flags per GPU: the number of stream-ordered I/Os that may be waiting at once.
const SLOTS: usize = 4096;

/// One GPU's flags.
pub(super) struct GatePool {
    host: *mut u32,
    dev: u64,
    state: Mutex<Slots>,
}

struct Slots {
    free: Vec<usize>,
    value: Vec<u32>,
}

// SAFETY: `host` points to pinned memory owned by the pool for its whole life; each flag is
// written by one opener at a time (a slot is in use by one gate until that gate opens it).
unsafe impl Send for GatePool {}
// SAFETY: as above; the slot bookkeeping is behind the mutex.
unsafe impl Sync for GatePool {}

impl GatePool {
    /// Allocates the flags; the caller has made GPU's context current.
    pub(super) fn new() -> Result<GatePool> {
        let bytes = SLOTS * std::mem::size_of::<u32>();
        let mut p: *mut c_void = std::ptr::null_mut();
        let flags = sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP;
        check(
            // SAFETY: writes one pointer.
            unsafe { sys::cuMemHostAlloc(&mut p, bytes, flags) },
            "cuMemHostAlloc of the stream gate flags",
        )?;
        // SAFETY: `p` is `bytes` long and ours.
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, bytes) };
        let mut dev: sys::CUdeviceptr = 0;
        let r = check(
            // SAFETY: `p` came from cuMemHostAlloc with DEVICEMAP; writes one device pointer.
            unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dev, p, 0) },
            "cuMemHostGetDevicePointer of the stream gate flags",
        );
        if let Err(e) = r {
            // SAFETY: allocated above, not shared yet.
            unsafe { sys::cuMemFreeHost(p) };
            return Err(e);
        }
        Ok(GatePool {
            host: p.cast(),
            dev,
            state: Mutex::new(Slots { free: (0..SLOTS).rev().collect(), value: vec![0; SLOTS] }),
        })
    }

    /// Enqueues `start` then a gate on `stream` (whose context is current).
    ///
    /// # Safety
    /// `stream` is a live stream of the current context.
    pub(super) unsafe fn launch(
        self: &Arc<Self>,
        stream: sys::CUstream,
        start: Box<dyn FnOnce(StreamGate) + Send>,
    ) -> Result<()> {
        let (slot, target) = {
            let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
            let Some(slot) = s.free.pop() else {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!("more than {SLOTS} stream-ordered I/Os are waiting on this GPU"),
                )
                .with_errno(libc::EAGAIN));
            };
            s.value[slot] = s.value[slot].wrapping_add(1).max(1);
            (slot, s.value[slot])
        };
        let pool = self.clone();
        let gate = StreamGate::new(Box::new(move || pool.open(slot, target)));
        let job: Box<dyn FnOnce() + Send> = Box::new(move || start(gate));
        let user = Box::into_raw(Box::new(job));
        // SAFETY: `trampoline` consumes `user` exactly once when the stream reaches it.
        let r = unsafe { sys::cuLaunchHostFunc(stream, Some(trampoline), user.cast()) };
        if let Err(e) = check(r, "cuLaunchHostFunc") {
            // SAFETY: the launch failed, so the trampoline never runs; dropping the box drops
            // the gate, which opens (returns) the slot.
            drop(unsafe { Box::from_raw(user) });
            return Err(e);
        }
        let addr = self.dev + (slot * std::mem::size_of::<u32>()) as u64;
        let flag = sys::CUstreamWaitValue_flags::CU_STREAM_WAIT_VALUE_GEQ as u32;
        // SAFETY: `addr` is a device-mapped flag of this pool, alive as long as the pool (the
        // runtime holds the pool for its life); the stream is live.
        let r = unsafe { sys::cuStreamWaitValue32_v2(stream, addr, target, flag) };
        // If the wait could not be queued, the host function still runs and opens the gate;
        // the caller learns that later stream work is not held back.
        check(r, "cuStreamWaitValue32 (stream-ordered I/O gate)")
    }

    fn open(&self, slot: usize, target: u32) {
        // SAFETY: `slot < SLOTS`; the flag is pinned memory the GPU reads; only this gate
        // writes it now. Release ordering: whatever the opener wrote before (the I/O's result)
        // is visible before the flag.
        unsafe {
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
            std::ptr::write_volatile(self.host.add(slot), target);
        }
        self.state.lock().unwrap_or_else(|p| p.into_inner()).free.push(slot);
    }
}

impl std::fmt::Debug for GatePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatePool").field("dev", &format_args!("0x{:x}", self.dev)).finish()
    }
}

impl Drop for GatePool {
    fn drop(&mut self) {
        // SAFETY: allocated by cuMemHostAlloc in `new`; no gate is alive (each holds an Arc).
        unsafe { sys::cuMemFreeHost(self.host.cast()) };
    }
}

/// Runs (once) the `Box<dyn FnOnce() + Send>` boxed again behind `user`: the host function of
/// every `cuLaunchHostFunc` gdio queues.
pub(super) unsafe extern "C" fn trampoline(user: *mut c_void) {
    // SAFETY: `user` is the box leaked in `launch`, handed to exactly one call.
    let f = unsafe { Box::from_raw(user.cast::<Box<dyn FnOnce() + Send>>()) };
    // A panic must not unwind into the CUDA driver.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
}
