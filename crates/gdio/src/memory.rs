//! Kinds of memory an I/O can land in, and the buffers gdio hands out.

use std::fmt;

/// Where a buffer lives. Decides which backend may serve an I/O and how bytes travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    /// Ordinary (pageable) host memory.
    Host,
    /// Page-locked host memory the GPU can DMA to and from.
    PinnedHost,
    /// Memory on GPU `ordinal`.
    Device {
        /// GPU ordinal, as `cuDeviceGet` counts.
        ordinal: usize,
    },
    /// CUDA managed (unified) memory; treated as device memory of its preferred GPU by
    /// nothing in gdio: it is refused where device memory is required.
    Managed,
}

impl MemoryKind {
    /// True for memory the CPU can read and write with plain loads and stores.
    pub fn is_host(self) -> bool {
        matches!(self, MemoryKind::Host | MemoryKind::PinnedHost)
    }

    /// The GPU ordinal for device memory.
    pub fn device_ordinal(self) -> Option<usize> {
        match self {
            MemoryKind::Device { ordinal } => Some(ordinal),
            _ => None,
        }
    }

    /// Short name used in reports: `host`, `pinned`, `gpu:N`, `managed`.
    pub fn label(self) -> String {
        match self {
            MemoryKind::Host => "host".into(),
            MemoryKind::PinnedHost => "pinned".into(),
            MemoryKind::Device { ordinal } => format!("gpu:{ordinal}"),
            MemoryKind::Managed => "managed".into(),
        }
    }
}

impl fmt::Display for MemoryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

/// The memory an I/O reads into or writes from, as the engine sees it: an address range and
/// what kind of memory it is. Built by the safe API from slices and device buffers, or by the
/// caller of the raw-pointer functions, who promises the range is valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferRef {
    /// Start address (a host virtual address, or a CUDA device pointer).
    pub addr: u64,
    /// Length in bytes.
    pub len: usize,
    /// Kind of memory at `addr`.
    pub kind: MemoryKind,
}

/// A buffer gdio can read into: host slices, [`DeviceBuffer`](crate::gpu::DeviceBuffer)s.
pub trait IoBufMut {
    /// Address, length and kind of the whole buffer. `classify` tells the kind of a host
    /// address (pageable or pinned).
    fn io_ref_mut(&mut self, classify: &dyn Fn(u64) -> MemoryKind) -> BufferRef;
}

/// A buffer gdio can write from.
pub trait IoBuf {
    /// Address, length and kind of the whole buffer.
    fn io_ref(&self, classify: &dyn Fn(u64) -> MemoryKind) -> BufferRef;
}

impl IoBufMut for [u8] {
    fn io_ref_mut(&mut self, classify: &dyn Fn(u64) -> MemoryKind) -> BufferRef {
        let addr = self.as_mut_ptr() as u64;
        let kind = match classify(addr) {
            MemoryKind::PinnedHost => MemoryKind::PinnedHost,
            _ => MemoryKind::Host,
        };
        BufferRef { addr, len: self.len(), kind }
    }
}

impl IoBuf for [u8] {
    fn io_ref(&self, classify: &dyn Fn(u64) -> MemoryKind) -> BufferRef {
        let addr = self.as_ptr() as u64;
        let kind = match classify(addr) {
            MemoryKind::PinnedHost => MemoryKind::PinnedHost,
            _ => MemoryKind::Host,
        };
        BufferRef { addr, len: self.len(), kind }
    }
}

impl IoBufMut for Vec<u8> {
    fn io_ref_mut(&mut self, classify: &dyn Fn(u64) -> MemoryKind) -> BufferRef {
        self.as_mut_slice().io_ref_mut(classify)
    }
}

impl IoBuf for Vec<u8> {
    fn io_ref(&self, classify: &dyn Fn(u64) -> MemoryKind) -> BufferRef {
        self.as_slice().io_ref(classify)
    }
}

impl IoBufMut for crate::gpu::DeviceBuffer {
    fn io_ref_mut(&mut self, _classify: &dyn Fn(u64) -> MemoryKind) -> BufferRef {
        self.as_buffer_ref()
    }
}

impl IoBuf for crate::gpu::DeviceBuffer {
    fn io_ref(&self, _classify: &dyn Fn(u64) -> MemoryKind) -> BufferRef {
        self.as_buffer_ref()
    }
}

impl IoBufMut for crate::gpu::PinnedBuffer {
    fn io_ref_mut(&mut self, _classify: &dyn Fn(u64) -> MemoryKind) -> BufferRef {
        BufferRef { addr: self.as_mut_ptr() as u64, len: self.len(), kind: MemoryKind::PinnedHost }
    }
}

impl IoBuf for crate::gpu::PinnedBuffer {
    fn io_ref(&self, _classify: &dyn Fn(u64) -> MemoryKind) -> BufferRef {
        BufferRef { addr: self.as_ptr() as u64, len: self.len(), kind: MemoryKind::PinnedHost }
    }
}
