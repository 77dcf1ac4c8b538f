//! The runtime of a machine without a usable GPU: host memory only. Every device operation
//! fails with a sentence that says why there is no GPU.

use std::alloc::Layout;

use super::{DeviceInfo, GpuRuntime, GpuStream};
use crate::error::{Error, ErrorKind, Result};
use crate::memory::MemoryKind;

/// Host-only runtime.
#[derive(Debug, Clone)]
pub struct HostRuntime {
    why_no_gpu: String,
}

impl HostRuntime {
    /// A host runtime; `why_no_gpu` is the sentence device operations fail with.
    pub fn new(why_no_gpu: impl Into<String>) -> Self {
        HostRuntime { why_no_gpu: why_no_gpu.into() }
    }

    fn no_gpu(&self, ordinal: usize) -> Error {
        Error::new(ErrorKind::NoGpu, format!("GPU {ordinal} is not available: {}", self.why_no_gpu))
    }
}

pub(crate) fn page_layout(len: usize) -> Result<Layout> {
    Layout::from_size_align(len.max(1), 4096)
        .map_err(|_| Error::new(ErrorKind::InvalidInput, format!("cannot lay out {len} bytes")))
}

/// Allocates `len` zeroed bytes aligned to 4096 from the global allocator. Zeroed, unlike
/// `cuMemAlloc`'s memory, so that reading back bytes nothing wrote (a test comparing a whole
/// simulated device buffer before and after a refused I/O) reads defined values: valgrind's
/// memcheck runs the tests that do.
pub(crate) fn alloc_aligned(len: usize) -> Result<*mut u8> {
    let layout = page_layout(len)?;
    // SAFETY: the layout has a non-zero size.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if p.is_null() {
        return Err(Error::new(
            ErrorKind::Io,
            format!("out of host memory allocating {len} bytes"),
        )
        .with_errno(libc::ENOMEM));
    }
    Ok(p)
}

/// Frees what [`alloc_aligned`] returned.
///
/// # Safety
/// `p` came from `alloc_aligned(len)`.
pub(crate) unsafe fn free_aligned(p: *mut u8, len: usize) {
    if let Ok(layout) = page_layout(len) {
        // SAFETY: the caller promises `p` came from `alloc_aligned(len)`, i.e. this layout.
        unsafe { std::alloc::dealloc(p, layout) };
    }
}

impl GpuRuntime for HostRuntime {
    fn name(&self) -> &'static str {
        "host"
    }
    fn device_count(&self) -> usize {
        0
    }
    fn device_info(&self, ordinal: usize) -> Result<DeviceInfo> {
        Err(self.no_gpu(ordinal))
    }
    fn driver_version(&self) -> Option<i32> {
        None
    }
    fn classify(&self, _addr: u64) -> MemoryKind {
        MemoryKind::Host
    }
    fn alloc_device(&self, ordinal: usize, _len: usize) -> Result<u64> {
        Err(self.no_gpu(ordinal))
    }
    unsafe fn free_device(&self, _ordinal: usize, _addr: u64) {}
    fn alloc_pinned(&self, _ordinal: usize, len: usize) -> Result<*mut u8> {
        alloc_aligned(len)
    }
    unsafe fn free_pinned(&self, ptr: *mut u8, len: usize) {
        // SAFETY: forwarded contract: `ptr` came from `alloc_pinned(.., len)` = `alloc_aligned(len)`.
        unsafe { free_aligned(ptr, len) }
    }
    fn new_stream(&self, ordinal: usize, _slots: usize) -> Result<Box<dyn GpuStream>> {
        Err(self.no_gpu(ordinal))
    }
    fn bind_thread(&self, _ordinal: usize) -> Result<()> {
        Ok(())
    }
    unsafe fn register_host(
        &self,
        ordinal: usize,
        _ptr: *mut u8,
        _len: usize,
        _read_only: bool,
    ) -> Result<()> {
        Err(self.no_gpu(ordinal))
    }
    unsafe fn unregister_host(&self, ordinal: usize, _ptr: *mut u8) -> Result<()> {
        Err(self.no_gpu(ordinal))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_operations_say_why() {
        let rt = HostRuntime::new("libcuda.so.1 was not found");
        let e = rt.alloc_device(3, 10).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NoGpu);
        assert!(e.to_string().contains("GPU 3"));
        assert!(e.to_string().contains("libcuda.so.1"));
        assert!(rt.new_stream(0, 2).is_err());
        assert_eq!(rt.classify(0x1000), MemoryKind::Host);
    }
}
