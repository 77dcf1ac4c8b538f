//! The memory a load fills: one allocation per file and target, page-aligned so that file
//! offsets and buffer addresses share their alignment (the condition for `O_DIRECT`).

use std::alloc::Layout;
use std::sync::Arc;

use super::plan::Target;
use crate::driver::Driver;
use crate::error::{Error, ErrorKind, Result};
use crate::gpu::DeviceBuffer;

/// Alignment of every allocation and of every span inside one.
pub const ALIGN: u64 = 4096;

enum Memory {
    Host { ptr: *mut u8, layout: Layout },
    Device(DeviceBuffer),
}

/// One allocation of a load: host memory or memory of one GPU, freed when dropped.
pub struct Allocation {
    target: Target,
    len: usize,
    memory: Memory,
}

// SAFETY: the host pointer is owned exclusively by this value (allocated here, freed in Drop)
// and only handed out as addresses; device buffers are Send and Sync already.
unsafe impl Send for Allocation {}
// SAFETY: shared access only reads the address; writes go through raw addresses whose users
// uphold their own contracts.
unsafe impl Sync for Allocation {}

impl std::fmt::Debug for Allocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Allocation")
            .field("target", &self.target)
            .field("addr", &format_args!("0x{:x}", self.addr()))
            .field("len", &self.len)
            .finish()
    }
}

impl Allocation {
    /// `len` bytes on `target`, zeroed on the host.
    pub fn new(driver: &Driver, target: Target, len: usize) -> Result<Allocation> {
        let memory = match target {
            Target::Host => {
                let layout = Layout::from_size_align(len.max(1), ALIGN as usize).map_err(|_| {
                    Error::new(ErrorKind::InvalidInput, format!("{len} bytes cannot be allocated"))
                })?;
                // SAFETY: the layout has a non-zero size.
                let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
                if ptr.is_null() {
                    return Err(Error::new(
                        ErrorKind::Io,
                        format!("out of host memory allocating {len} bytes"),
                    )
                    .with_errno(libc::ENOMEM));
                }
                Memory::Host { ptr, layout }
            }
            Target::Gpu(n) => Memory::Device(driver.alloc_device(n, len)?),
        };
        Ok(Allocation { target, len, memory })
    }

    /// Where it is.
    pub fn target(&self) -> Target {
        self.target
    }

    /// Start address (host virtual address, or device pointer).
    pub fn addr(&self) -> u64 {
        match &self.memory {
            Memory::Host { ptr, .. } => *ptr as u64,
            Memory::Device(b) => b.addr(),
        }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty allocation.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes `offset..offset+len` of host memory (`None` for device memory or a range
    /// outside the allocation).
    pub fn host_slice(&self, offset: u64, len: u64) -> Option<&[u8]> {
        let Memory::Host { ptr, .. } = &self.memory else { return None };
        let end = offset.checked_add(len)?;
        if end > self.len as u64 {
            return None;
        }
        // SAFETY: the range is inside the live allocation (checked above), which was zeroed
        // at allocation so every byte is initialised; loads write only while the load that
        // owns this allocation runs, and callers read views only after they were handed out.
        Some(unsafe { std::slice::from_raw_parts(ptr.add(offset as usize), len as usize) })
    }

    /// Copies bytes `offset..offset+dst.len()` into `dst`, from host or device memory.
    pub fn copy_to_host(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        match &self.memory {
            Memory::Host { .. } => {
                let src = self.host_slice(offset, dst.len() as u64).ok_or_else(|| {
                    Error::new(ErrorKind::InvalidInput, "range outside the allocation")
                })?;
                dst.copy_from_slice(src);
                Ok(())
            }
            Memory::Device(b) => {
                let off = usize::try_from(offset).map_err(|_| {
                    Error::new(ErrorKind::InvalidInput, "range outside the allocation")
                })?;
                b.copy_to_host(off, dst)
            }
        }
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        if let Memory::Host { ptr, layout } = &self.memory {
            // SAFETY: allocated in `new` with this layout and freed once.
            unsafe { std::alloc::dealloc(*ptr, *layout) };
        }
    }
}

/// The allocations of one load, shared by the loader's threads and the caller.
pub type Allocations = Arc<Vec<Allocation>>;
