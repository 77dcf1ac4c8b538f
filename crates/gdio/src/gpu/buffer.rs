//! Owned buffers: device memory and pinned host memory, freed on drop.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::GpuRuntime;
use crate::error::{Error, ErrorKind, Result};
use crate::memory::{BufferRef, IoBuf, IoBufMut, MemoryKind};

/// Memory on one GPU, owned; freed when dropped.
#[derive(Debug)]
pub struct DeviceBuffer {
    runtime: Arc<dyn GpuRuntime>,
    ordinal: usize,
    addr: u64,
    len: usize,
}

impl DeviceBuffer {
    /// Allocates `len` bytes on GPU `ordinal`.
    pub fn new(runtime: &Arc<dyn GpuRuntime>, ordinal: usize, len: usize) -> Result<DeviceBuffer> {
        let addr = runtime.alloc_device(ordinal, len.max(1))?;
        Ok(DeviceBuffer { runtime: runtime.clone(), ordinal, addr, len })
    }

    /// The device address.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a zero-length buffer.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// GPU ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The buffer as the engine sees it.
    pub fn as_buffer_ref(&self) -> BufferRef {
        BufferRef {
            addr: self.addr,
            len: self.len,
            kind: MemoryKind::Device { ordinal: self.ordinal },
        }
    }

    fn check(&self, offset: usize, len: usize) -> Result<()> {
        if offset.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("range {offset}+{len} is outside the {}-byte device buffer", self.len),
            ));
        }
        Ok(())
    }

    /// Copies `src` into the buffer at `offset` (synchronously).
    pub fn copy_from_host(&mut self, offset: usize, src: &[u8]) -> Result<()> {
        self.check(offset, src.len())?;
        let mut s = self.runtime.new_stream(self.ordinal, 1)?;
        // SAFETY: `src` is a live slice; the device range was bounds-checked; we synchronize
        // before `src` can go away.
        unsafe { s.copy_to_device(self.addr + offset as u64, src.as_ptr(), src.len())? };
        s.synchronize()
    }

    /// Copies `dst.len()` bytes from the buffer at `offset` into `dst` (synchronously).
    pub fn copy_to_host(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        self.check(offset, dst.len())?;
        let mut s = self.runtime.new_stream(self.ordinal, 1)?;
        // SAFETY: `dst` is a live, exclusive slice; the device range was bounds-checked; we
        // synchronize before `dst` can go away.
        unsafe { s.copy_to_host(dst.as_mut_ptr(), self.addr + offset as u64, dst.len())? };
        s.synchronize()
    }

    /// The whole buffer copied to a `Vec`.
    pub fn to_vec(&self) -> Result<Vec<u8>> {
        let mut v = vec![0u8; self.len];
        self.copy_to_host(0, &mut v)?;
        Ok(v)
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: `addr` came from `alloc_device(ordinal, ..)` of this runtime and is dropped once.
        unsafe { self.runtime.free_device(self.ordinal, self.addr) };
    }
}

/// Bytes of every [`PinnedBuffer`] of this process now (the engines' bounce buffers and any a
/// caller made).
static PINNED_HELD: AtomicUsize = AtomicUsize::new(0);

/// Bytes of page-locked host memory gdio's [`PinnedBuffer`]s hold in this process now: the
/// engines' bounce buffers (made for each GPU at its first I/O) and any a caller made. What
/// dropping a driver gives back (Python's `gdio.bounce_buffer_free`).
pub fn pinned_bytes_held() -> usize {
    PINNED_HELD.load(Ordering::Relaxed)
}

/// Page-locked host memory, owned; freed when dropped. Used as bounce buffers.
#[derive(Debug)]
pub struct PinnedBuffer {
    runtime: Arc<dyn GpuRuntime>,
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer owns its allocation exclusively; access goes through &/&mut self.
unsafe impl Send for PinnedBuffer {}
// SAFETY: shared references only allow reads.
unsafe impl Sync for PinnedBuffer {}

impl PinnedBuffer {
    /// Allocates `len` bytes of pinned memory for GPU `ordinal`.
    pub fn new(runtime: &Arc<dyn GpuRuntime>, ordinal: usize, len: usize) -> Result<PinnedBuffer> {
        let ptr = runtime.alloc_pinned(ordinal, len.max(1))?;
        PINNED_HELD.fetch_add(len.max(1), Ordering::Relaxed);
        Ok(PinnedBuffer { runtime: runtime.clone(), ptr, len: len.max(1) })
    }

    /// Start address.
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr
    }

    /// Start address, writable.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a zero-length buffer.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The buffer as a slice.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` is a live allocation of `len` bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The buffer as a mutable slice.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` is a live allocation of `len` bytes owned exclusively by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `alloc_pinned(.., len)` of this runtime and is dropped once.
        unsafe { self.runtime.free_pinned(self.ptr, self.len) };
        PINNED_HELD.fetch_sub(self.len, Ordering::Relaxed);
    }
}

// SAFETY: the range is the allocation this value owns; moving the value does not move it.
unsafe impl IoBufMut for DeviceBuffer {
    fn io_ref_mut(&mut self, _classify: &dyn Fn(u64) -> MemoryKind) -> BufferRef {
        self.as_buffer_ref()
    }
}

// SAFETY: as above.
unsafe impl IoBuf for DeviceBuffer {
    fn io_ref(&self, _classify: &dyn Fn(u64) -> MemoryKind) -> BufferRef {
        self.as_buffer_ref()
    }
}

// SAFETY: the range is the allocation this value owns; moving the value does not move it.
unsafe impl IoBufMut for PinnedBuffer {
    fn io_ref_mut(&mut self, _classify: &dyn Fn(u64) -> MemoryKind) -> BufferRef {
        BufferRef { addr: self.as_mut_ptr() as u64, len: self.len(), kind: MemoryKind::PinnedHost }
    }
}

// SAFETY: as above.
unsafe impl IoBuf for PinnedBuffer {
    fn io_ref(&self, _classify: &dyn Fn(u64) -> MemoryKind) -> BufferRef {
        BufferRef { addr: self.as_ptr() as u64, len: self.len(), kind: MemoryKind::PinnedHost }
    }
}
