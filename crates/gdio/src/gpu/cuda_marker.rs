//! Completion markers a worker can poll without calling the driver: after the copies of a
//! marker, the stream writes the marker's sequence number into a pinned, device-mapped host
//! flag (`cuStreamWriteValue32`, ordered after the stream's earlier work and fenced), and a
//! poll is a plain load of that flag. Asking the driver instead (`cuEventQuery`) takes the
//! context's locks, which many polling workers hold against the workers queueing copies (the
//! H200's small-read ceiling, and two GPUs in one process, BENCHMARKS.md session 7).

use std::ffi::c_void;

use cudarc::driver::sys;

use super::cuda_error::check;
use crate::error::Result;

/// One stream's flags, one per marker slot.
pub(super) struct MarkerFlags {
    host: *mut u32,
    dev: u64,
    /// Value last asked of each slot's flag.
    want: Vec<u32>,
}

// SAFETY: `host` is pinned memory owned by this object for its whole life; the stream that
// owns it is used by one thread at a time (`GpuStream` is `Send`, not `Sync`).
unsafe impl Send for MarkerFlags {}

impl MarkerFlags {
    /// Flags for `slots` markers; the stream's context is current.
    pub(super) fn new(slots: usize) -> Result<MarkerFlags> {
        let bytes = slots.max(1) * std::mem::size_of::<u32>();
        let mut p: *mut c_void = std::ptr::null_mut();
        let flags = sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP;
        // SAFETY: writes one pointer.
        check(
            unsafe { sys::cuMemHostAlloc(&mut p, bytes, flags) },
            "cuMemHostAlloc of marker flags",
        )?;
        // SAFETY: `p` is `bytes` long and ours.
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, bytes) };
        let mut dev: sys::CUdeviceptr = 0;
        // SAFETY: `p` came from cuMemHostAlloc with DEVICEMAP; writes one device pointer.
        let r = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dev, p, 0) };
        if let Err(e) = check(r, "cuMemHostGetDevicePointer of marker flags") {
            // SAFETY: allocated above, not shared yet.
            unsafe { sys::cuMemFreeHost(p) };
            return Err(e);
        }
        Ok(MarkerFlags { host: p.cast(), dev, want: vec![0; slots.max(1)] })
    }

    /// Queues the write of `slot`'s next value on `stream`, behind its earlier work.
    ///
    /// # Safety
    /// `stream` is a live stream of the current context.
    pub(super) unsafe fn enqueue(&mut self, stream: sys::CUstream, slot: usize) -> Result<()> {
        let value = self.want[slot].wrapping_add(1);
        let addr = self.dev + (slot * std::mem::size_of::<u32>()) as u64;
        // SAFETY: `addr` is this object's device-mapped flag, alive while the stream is (the
        // stream drains before the flags are freed); the stream is live (caller's contract).
        let r = unsafe { sys::cuStreamWriteValue32_v2(stream, addr, value, 0) };
        check(r, "cuStreamWriteValue32 (completion marker)")?;
        self.want[slot] = value;
        Ok(())
    }

    /// True when the stream has written `slot`'s last queued value.
    pub(super) fn reached(&self, slot: usize) -> bool {
        // SAFETY: `slot` indexes the allocation (`want` has one entry per flag); the GPU
        // writes the flag, so it is read volatile.
        let got = unsafe { std::ptr::read_volatile(self.host.add(slot)) };
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        // Values only grow (wrapping): reached when `got` is at or past the one asked for.
        (got.wrapping_sub(self.want[slot]) as i32) >= 0
    }
}

impl Drop for MarkerFlags {
    fn drop(&mut self) {
        // SAFETY: allocated in `new`, freed once; the owning stream synchronized first.
        unsafe { sys::cuMemFreeHost(self.host.cast()) };
    }
}
