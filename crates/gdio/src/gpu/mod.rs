//! The GPU runtime layer: a vendor-neutral trait and its implementations.
//!
//! - [`cuda`]: NVIDIA GPUs through the CUDA driver API (cudarc, loaded at run time).
//! - [`host`]: a machine without a GPU; every device operation is a clear error.
//! - [`lazy`]: one of those, found at the first call that needs it (`defer_gpu_init`).
//! - [`sim`]: GPUs simulated in host memory with asynchronous copies, for tests on machines
//!   without a GPU (they drive the same bounce-buffer pipeline the CUDA path uses).

pub mod buffer;
pub mod cuda;
pub(crate) mod cuda_error;
mod cuda_gate;
mod cuda_progress;
mod cuda_scatter;
pub mod host;
mod huge_pages;
mod landing;
pub mod lazy;
mod nvml;
mod progress;
pub mod sim;

use std::sync::Arc;

pub use buffer::{pinned_bytes_held, DeviceBuffer, PinnedBuffer};
pub use landing::Landing;
pub(crate) use landing::MarkerSource;
pub(crate) use progress::BoxedWord;
pub use progress::ProgressWord;

use crate::error::Result;
use crate::memory::MemoryKind;

/// An error, naming the piece, when a piece `(dst, offset, len)` of a scattered group of
/// `len` bytes ([`GpuStream::copy_to_device_scattered`]) lies outside it.
pub(crate) fn check_pieces(len: usize, pieces: &[(u64, u32, u32)]) -> Result<()> {
    match pieces.iter().find(|&&(_, off, n)| off as usize + n as usize > len) {
        Some(&(_, off, n)) => Err(crate::error::Error::new(
            crate::error::ErrorKind::InvalidInput,
            format!("a scattered piece ({n} bytes at offset {off}) ends past its {len}-byte group"),
        )),
        None => Ok(()),
    }
}

/// The one copy per piece that a scattered group `(dst, offset, len)` of the host range
/// `src..src + len` stands for; an error when a piece lies outside the range
/// ([`check_pieces`]).
pub(crate) fn piece_copies(
    src: *const u8,
    len: usize,
    pieces: &[(u64, u32, u32)],
) -> Result<Vec<(u64, *const u8, usize)>> {
    check_pieces(len, pieces)?;
    // Every `offset + len` is inside the caller's range (no dereference here).
    Ok(pieces
        .iter()
        .map(|&(dst, off, n)| (dst, src.wrapping_add(off as usize), n as usize))
        .collect())
}

/// What gdio knows about one GPU.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DeviceInfo {
    /// Ordinal, as the driver counts.
    pub ordinal: usize,
    /// Marketing name (`NVIDIA H200`).
    pub name: String,
    /// Memory in bytes.
    pub total_memory: u64,
    /// PCI bus id (`0000:3b:00.0`), when known.
    pub pci_bus_id: Option<String>,
    /// Current PCIe link speed as sysfs prints it (`32.0 GT/s PCIe`).
    pub pcie_link_speed: Option<String>,
    /// Current PCIe link width (lanes).
    pub pcie_link_width: Option<u32>,
    /// Size of BAR1 (the window GPUDirect maps memory through), in bytes.
    pub bar1_size: Option<u64>,
}

/// An in-order queue of copies on one GPU with completion markers.
///
/// Copies are asynchronous: the memory on both sides must stay valid and untouched until a
/// later [`GpuStream::wait`] or [`GpuStream::synchronize`] returns.
pub trait GpuStream: Send {
    /// Queues a host→device copy.
    ///
    /// # Safety
    /// `src` must be valid for reads of `len` bytes and `dst` a device range of `len` bytes,
    /// both until the copy is known complete.
    unsafe fn copy_to_device(&mut self, dst: u64, src: *const u8, len: usize) -> Result<()>;
    /// Queues many host→device copies (`(device dst, host src, len)`) as one group, in one
    /// driver call where the runtime has one (CUDA 12.8+: `cuMemcpyBatchAsync`); the default
    /// queues them one by one. On error, some of the copies may have been queued.
    ///
    /// # Safety
    /// As [`GpuStream::copy_to_device`], for every entry.
    unsafe fn copy_to_device_batch(&mut self, copies: &[(u64, *const u8, usize)]) -> Result<()> {
        for &(dst, src, len) in copies {
            // SAFETY: forwarded contract.
            unsafe { self.copy_to_device(dst, src, len)? };
        }
        Ok(())
    }
    /// Queues the host range `src..src + len` to the GPU as one group of pieces
    /// `(device dst, offset in the range, len)`, each landing at its `dst`. CUDA launches one
    /// kernel that puts every piece in place, reading the range over the link, where the
    /// driver mapped it into the GPU's address space (pinned memory: no DMA copy at all);
    /// otherwise, and by default, one copy per piece is queued as
    /// [`GpuStream::copy_to_device_batch`] does. Returns true
    /// when the pieces went with one kernel, false when as copies. On error, some of it may
    /// have been queued.
    ///
    /// # Safety
    /// `src` must be valid for reads of `len` bytes and each `dst` a device range of its
    /// piece's length, all until the copies are known complete; every piece must lie inside
    /// `len`.
    unsafe fn copy_to_device_scattered(
        &mut self,
        src: *const u8,
        len: usize,
        pieces: &[(u64, u32, u32)],
    ) -> Result<bool> {
        let copies = piece_copies(src, len, pieces)?;
        // SAFETY: forwarded contract, per piece.
        unsafe { self.copy_to_device_batch(&copies) }.map(|()| false)
    }
    /// Queues a device→host copy.
    ///
    /// # Safety
    /// `dst` must be valid for writes of `len` bytes and `src` a device range of `len` bytes,
    /// both until the copy is known complete.
    unsafe fn copy_to_host(&mut self, dst: *mut u8, src: u64, len: usize) -> Result<()>;
    /// Queues many device→host copies (`(host dst, device src, len)`) as one group, in one
    /// driver call where the runtime has one (CUDA 12.8+: `cuMemcpyBatchAsync`); the default
    /// queues them one by one. On error, some of the copies may have been queued.
    ///
    /// # Safety
    /// As [`GpuStream::copy_to_host`], for every entry.
    unsafe fn copy_to_host_batch(&mut self, copies: &[(*mut u8, u64, usize)]) -> Result<()> {
        for &(dst, src, len) in copies {
            // SAFETY: forwarded contract.
            unsafe { self.copy_to_host(dst, src, len)? };
        }
        Ok(())
    }
    /// Queues a copy from one range of this stream's GPU to another of the same GPU. Runtimes
    /// without GPU memory of their own say they cannot.
    ///
    /// # Safety
    /// `src..src + len` and `dst..dst + len` must be device ranges of this stream's GPU that do
    /// not overlap, `src` unchanged and `dst` untouched by anything else, until the copy is
    /// known complete.
    unsafe fn copy_within_device(&mut self, dst: u64, src: u64, len: usize) -> Result<()> {
        let _ = (dst, src, len);
        Err(crate::error::Error::new(
            crate::error::ErrorKind::Unsupported,
            "this GPU runtime cannot copy device memory to device memory",
        ))
    }
    /// Records marker `slot` (0..[`GpuStream::slots`]) after the copies queued so far.
    fn record(&mut self, slot: usize) -> Result<()>;
    /// Blocks until marker `slot` has been reached (returns at once if it was never recorded).
    /// Blocks in the kernel, never spins.
    fn wait(&mut self, slot: usize) -> Result<()>;
    /// True when marker `slot` has been reached (or was never recorded); never blocks.
    fn query(&mut self, slot: usize) -> Result<bool>;
    /// Blocks until every queued copy is done.
    fn synchronize(&mut self) -> Result<()>;
    /// Runs `f` on a runtime thread once every copy queued on this stream so far is done (in
    /// stream order, like a copy), so a request can complete while the worker that queued it
    /// is busy elsewhere. `f` must return quickly and make no GPU call. Runtimes without
    /// callbacks say so; the caller then learns of completion by markers alone.
    fn notify(&mut self, f: Box<dyn FnOnce() + Send>) -> Result<()> {
        drop(f);
        Err(crate::error::Error::new(
            crate::error::ErrorKind::Unsupported,
            "this runtime's streams have no completion callbacks",
        ))
    }
    /// This stream's progress word ([`GpuStream::signal`] sets it), made on the first call
    /// (a resource: call it where streams are made, not while a caller's stream is held).
    /// `None`: the runtime's streams cannot write one; completion is then learnt from markers.
    fn progress(&mut self) -> Result<Option<ProgressWord>> {
        Ok(None)
    }
    /// Queues a write of `value` into the progress word, after the work queued so far (and
    /// with everything it wrote visible first). Runtimes without a word say so.
    fn signal(&mut self, value: u32) -> Result<()> {
        let _ = value;
        Err(crate::error::Error::new(
            crate::error::ErrorKind::Unsupported,
            "this runtime's streams have no progress word",
        ))
    }
    /// Marker `slot`'s latest record ([`GpuStream::record`]) as a [`Landing`] any thread can
    /// ask about without holding this stream. `None`: the runtime cannot share its markers
    /// (completion is then learnt from the progress word, or by the stream's owner).
    fn landing(&mut self, slot: usize) -> Option<Landing> {
        let _ = slot;
        None
    }
    /// Number of marker slots.
    fn slots(&self) -> usize;
    /// A stream with `slots` markers and a progress word of its own that queues its work on
    /// this stream's queue: what either queues runs in the one order both queued it (the
    /// copies of several workers one after another, instead of sharing the link at once). The
    /// queue lives while any stream on it does. Runtimes that cannot share a queue say so.
    fn fork(&mut self, slots: usize) -> Result<Box<dyn GpuStream>> {
        let _ = slots;
        Err(crate::error::Error::new(
            crate::error::ErrorKind::Unsupported,
            "this runtime's streams cannot share a queue",
        ))
    }
}

/// A GPU runtime: devices, memory, pointer classification and copy streams.
pub trait GpuRuntime: Send + Sync + std::fmt::Debug {
    /// Short name (`cuda`, `host`, `sim`).
    fn name(&self) -> &'static str;
    /// Number of GPUs.
    fn device_count(&self) -> usize;
    /// Facts about GPU `ordinal`.
    fn device_info(&self, ordinal: usize) -> Result<DeviceInfo>;
    /// Driver version as the vendor numbers it (CUDA: 1000*major + 10*minor), if any.
    fn driver_version(&self) -> Option<i32>;
    /// What kind of memory `addr` points into.
    fn classify(&self, addr: u64) -> MemoryKind;
    /// Allocates `len` bytes on GPU `ordinal`; returns the device address.
    fn alloc_device(&self, ordinal: usize, len: usize) -> Result<u64>;
    /// Frees what [`GpuRuntime::alloc_device`] returned.
    ///
    /// # Safety
    /// `addr` came from `alloc_device(ordinal, ..)` of this runtime and is not used again.
    unsafe fn free_device(&self, ordinal: usize, addr: u64);
    /// Allocates `len` bytes of page-locked host memory usable for DMA with GPU `ordinal`,
    /// aligned to at least 4096.
    fn alloc_pinned(&self, ordinal: usize, len: usize) -> Result<*mut u8>;
    /// Frees what [`GpuRuntime::alloc_pinned`] returned.
    ///
    /// # Safety
    /// `ptr` came from `alloc_pinned(.., len)` of this runtime and is not used again.
    unsafe fn free_pinned(&self, ptr: *mut u8, len: usize);
    /// A new stream on GPU `ordinal` with `slots` completion markers.
    fn new_stream(&self, ordinal: usize, slots: usize) -> Result<Box<dyn GpuStream>>;
    /// Makes GPU `ordinal` current on the calling thread (a no-op where that means nothing).
    fn bind_thread(&self, ordinal: usize) -> Result<()>;
    /// Registers page-aligned host memory (for example a file mapping) so GPU `ordinal` can DMA
    /// from it directly; `read_only` for memory mapped without write permission.
    ///
    /// # Safety
    /// `ptr..ptr+len` must stay mapped until [`GpuRuntime::unregister_host`] returns.
    unsafe fn register_host(
        &self,
        ordinal: usize,
        ptr: *mut u8,
        len: usize,
        read_only: bool,
    ) -> Result<()>;
    /// The `(start, len)` of the device allocation that holds `addr`, where the runtime can
    /// tell (`None`: unknown, or not device memory).
    fn device_allocation(&self, addr: u64) -> Option<(u64, u64)> {
        let _ = addr;
        None
    }
    /// Enqueues on `stream` of GPU `ordinal`, for stream-ordered I/O: a host function `start`,
    /// run when the stream reaches it, then a gate that holds back every later piece of work on
    /// `stream` until the [`StreamGate`] handed to `start` is opened (from any thread, after
    /// any amount of time). `start` must return quickly and make no CUDA call (CUDA forbids a
    /// host function to wait for other GPU work: the copies it would wait for are completed by
    /// the same driver thread); the slow part goes to another thread, which opens the gate when
    /// done. A stream of another context or GPU is an error. Runtimes without streams say so.
    ///
    /// # Safety
    /// `stream` is a live stream handle of this runtime (a `CUstream` for CUDA) until the gate
    /// has been passed.
    unsafe fn launch_gated_host_fn(
        &self,
        ordinal: usize,
        stream: u64,
        start: Box<dyn FnOnce(StreamGate) + Send>,
    ) -> Result<()> {
        let _ = (stream, start);
        Err(crate::error::Error::new(
            crate::error::ErrorKind::Unsupported,
            format!("the {} runtime has no streams for GPU {ordinal}", self.name()),
        ))
    }
    /// The GPU whose context `stream` belongs to (for the null stream, the calling thread's
    /// current context, else GPU 0): where stream-ordered I/O on host memory is ordered.
    /// Runtimes without streams say so.
    ///
    /// # Safety
    /// `stream` is a live stream handle of this runtime (a `CUstream` for CUDA), or 0.
    unsafe fn stream_ordinal(&self, stream: u64) -> Result<usize> {
        Err(crate::error::Error::new(
            crate::error::ErrorKind::Unsupported,
            format!("the {} runtime has no stream 0x{stream:x}", self.name()),
        ))
    }
    /// Undoes [`GpuRuntime::register_host`].
    ///
    /// # Safety
    /// `ptr` was registered and no copy from it is in flight.
    unsafe fn unregister_host(&self, ordinal: usize, ptr: *mut u8) -> Result<()>;
    /// Copies `len` bytes from `src` on GPU `src_ordinal` to `dst` on GPU `dst_ordinal` (a peer
    /// copy over NVLink or PCIe; the same GPU is allowed) and returns when the bytes are there.
    /// Runtimes without GPUs say so.
    ///
    /// # Safety
    /// `src..src+len` must be device memory of GPU `src_ordinal` and `dst..dst+len` device
    /// memory of GPU `dst_ordinal`, both allocated by this runtime and not written by anything
    /// else until the call returns.
    unsafe fn copy_peer(
        &self,
        dst_ordinal: usize,
        dst: u64,
        src_ordinal: usize,
        src: u64,
        len: usize,
    ) -> Result<()> {
        let _ = (dst, src, len);
        Err(crate::error::Error::new(
            crate::error::ErrorKind::Unsupported,
            format!(
                "the {} runtime cannot copy between GPUs {src_ordinal} and {dst_ordinal}",
                self.name()
            ),
        ))
    }
}

/// The best runtime this machine has: CUDA when libcuda loads and reports a GPU, else host.
/// The second value says why CUDA was not picked, when it was not.
pub fn detect() -> (Arc<dyn GpuRuntime>, Option<String>) {
    detect_with(true)
}

/// [`detect`], with pinned buffers made as registered huge-page memory or not
/// ([`cuda::CudaRuntime::with_huge_pinned`], the `pinned_huge_pages` key).
pub fn detect_with(huge_pinned: bool) -> (Arc<dyn GpuRuntime>, Option<String>) {
    match cuda::CudaRuntime::new() {
        Ok(rt) => (Arc::new(rt.with_huge_pinned(huge_pinned)), None),
        Err(e) => {
            (Arc::new(host::HostRuntime::new(e.message().to_owned())), Some(e.message().to_owned()))
        }
    }
}

/// For the crate's own GPU tests: a test that found no GPU prints `SKIPPED: why`, or fails when
/// `GDIO_REQUIRE_GPU=1` (set on the GPU machine, so a broken GPU machine cannot look green).
#[cfg(test)]
pub(crate) fn gpu_skip(why: &str) {
    if std::env::var("GDIO_REQUIRE_GPU").is_ok_and(|v| v == "1") {
        panic!("GDIO_REQUIRE_GPU=1 but this GPU test would be skipped: {why}");
    }
    eprintln!("SKIPPED: {why}");
}

/// Holds back the later work of a stream (see [`GpuRuntime::launch_gated_host_fn`]) until it is
/// opened. Dropping it opens it too, so a stream can never be left waiting forever.
pub struct StreamGate {
    open: Option<Box<dyn FnOnce() + Send>>,
}

impl StreamGate {
    /// A gate whose opening runs `open` (the runtime's release of the stream).
    pub fn new(open: Box<dyn FnOnce() + Send>) -> StreamGate {
        StreamGate { open: Some(open) }
    }

    /// Lets the stream's later work run.
    pub fn open(mut self) {
        if let Some(f) = self.open.take() {
            f();
        }
    }
}

impl Drop for StreamGate {
    fn drop(&mut self) {
        if let Some(f) = self.open.take() {
            f();
        }
    }
}

impl std::fmt::Debug for StreamGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamGate").field("opened", &self.open.is_none()).finish()
    }
}
