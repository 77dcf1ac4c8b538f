//! A CUDA stream's progress word ([`super::ProgressWord`]): 4 bytes of pinned, device-mapped
//! host memory that `cuStreamWriteValue32` sets in stream order. The write's default flags
//! make the stream's earlier writes (the copies) visible before the word.

use std::ffi::c_void;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

use cudarc::driver::sys;
use cudarc::driver::CudaContext;

use super::cuda_error::check;
use super::progress::WordOwner;
use super::ProgressWord;
use crate::error::Result;

/// The pinned allocation behind one progress word, freed when the last handle goes.
struct PinnedWord {
    ctx: Arc<CudaContext>,
    host: *mut AtomicU32,
}

// SAFETY: `host` is pinned memory owned by this value until Drop; it is only read and written
// through an atomic (by the CPU) or by the GPU's ordered stream write.
unsafe impl Send for PinnedWord {}
// SAFETY: as above.
unsafe impl Sync for PinnedWord {}

impl WordOwner for PinnedWord {
    fn word(&self) -> &AtomicU32 {
        // SAFETY: valid, aligned and initialized from `new` until Drop.
        unsafe { &*self.host }
    }
}

impl Drop for PinnedWord {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: allocated by cuMemHostAlloc in `new_word`; the stream that wrote it was
            // synchronized before it let go of its handle, and nobody else writes it.
            unsafe { sys::cuMemFreeHost(self.host.cast()) };
        }
    }
}

/// Makes a progress word in the context `ctx` (current on this thread): the handle readers
/// use, and the device address a stream writes.
pub(super) fn new_word(ctx: &Arc<CudaContext>) -> Result<(ProgressWord, u64)> {
    let mut p: *mut c_void = std::ptr::null_mut();
    let flags = sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP;
    check(
        // SAFETY: writes one pointer.
        unsafe { sys::cuMemHostAlloc(&mut p, std::mem::size_of::<u32>(), flags) },
        "cuMemHostAlloc of a stream progress word",
    )?;
    // SAFETY: `p` is 4 bytes of pinned memory, page aligned, ours alone.
    unsafe { p.cast::<AtomicU32>().write(AtomicU32::new(0)) };
    let owner = Arc::new(PinnedWord { ctx: ctx.clone(), host: p.cast() });
    let mut dev: sys::CUdeviceptr = 0;
    check(
        // SAFETY: `p` came from cuMemHostAlloc with DEVICEMAP; writes one device pointer.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dev, p, 0) },
        "cuMemHostGetDevicePointer of a stream progress word",
    )?;
    Ok((ProgressWord::new(owner), dev))
}

/// Queues the write of `value` into the word at `dev` on `stream`.
///
/// # Safety
/// `stream` is a live stream of the current context and `dev` the device address of a word
/// that outlives the write (the stream synchronizes before dropping its handle).
pub(super) unsafe fn signal(stream: sys::CUstream, dev: u64, value: u32) -> Result<()> {
    let flags = sys::CUstreamWriteValue_flags::CU_STREAM_WRITE_VALUE_DEFAULT as u32;
    // SAFETY: forwarded contract.
    check(
        unsafe { sys::cuStreamWriteValue32_v2(stream, dev, value, flags) },
        "cuStreamWriteValue32 (stream progress word)",
    )
}
