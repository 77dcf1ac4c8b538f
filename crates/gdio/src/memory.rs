//! Kinds of memory an I/O can land in, and the buffers gdio hands out.

use std::fmt;

/// The host's page size in bytes (`sysconf(_SC_PAGESIZE)`; 4096 where that fails). Asked of
/// libc, not read from the auxiliary vector's vDSO image as `rustix::param::page_size` does:
/// under valgrind that image is listed but not mapped, and reading it crashed the process.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf reads a constant of the C library; no memory of ours is involved.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|n| n.is_power_of_two()).unwrap_or(4096)
}

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
/// what kind of memory it is. A plain description: anyone can build one, and every function
/// that moves bytes to or from the range it names is `unsafe` (its caller promises the range
/// is valid). The safe API builds them from buffers it borrows or owns ([`IoBuf`],
/// [`IoBufMut`]).
///
/// Safe code cannot hand the engine an arbitrary address:
///
/// ```compile_fail,E0133
/// # fn f(engine: &gdio::engine::Engine, file: &gdio::FileHandle) {
/// let anywhere = gdio::BufferRef { addr: 0xdead_0000, len: 4096, kind: gdio::MemoryKind::Host };
/// let _ = engine.read(file, anywhere, 0); // error[E0133]: call to unsafe function
/// # }
/// ```
///
/// nor a backend:
///
/// ```compile_fail,E0133
/// # use gdio::backend::Backend;
/// # fn f(b: &dyn Backend, file: &gdio::FileHandle) {
/// let anywhere = gdio::BufferRef { addr: 0xdead_0000, len: 4096, kind: gdio::MemoryKind::Host };
/// let _ = b.write(file, anywhere, 0); // error[E0133]: call to unsafe function
/// # }
/// ```
///
/// nor claim, through a safe trait impl, that an address is its buffer:
///
/// ```compile_fail,E0200
/// struct Anywhere;
/// impl gdio::IoBufMut for Anywhere { // error[E0200]: the trait requires an `unsafe impl`
///     fn io_ref_mut(&mut self, _: &dyn Fn(u64) -> gdio::MemoryKind) -> gdio::BufferRef {
///         gdio::BufferRef { addr: 0xdead_0000, len: 4096, kind: gdio::MemoryKind::Host }
///     }
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferRef {
    /// Start address (a host virtual address, or a CUDA device pointer).
    pub addr: u64,
    /// Length in bytes.
    pub len: usize,
    /// Kind of memory at `addr`.
    pub kind: MemoryKind,
}

/// A buffer gdio can read into: host slices and vectors, [`DeviceBuffer`](crate::gpu::DeviceBuffer)s,
/// [`PinnedBuffer`](crate::gpu::PinnedBuffer)s.
///
/// # Safety
/// `io_ref_mut` must describe memory this value owns or borrows exclusively, valid for writes
/// of the whole length for as long as the value lives (and is not used otherwise), and (for
/// owned values given to [`Driver::submit_read`](crate::Driver::submit_read)) at the same
/// address when the value is moved.
pub unsafe trait IoBufMut {
    /// Address, length and kind of the whole buffer. `classify` tells the kind of a host
    /// address (pageable or pinned).
    fn io_ref_mut(&mut self, classify: &dyn Fn(u64) -> MemoryKind) -> BufferRef;
}

/// A buffer gdio can write from.
///
/// # Safety
/// As [`IoBufMut`], for reads.
pub unsafe trait IoBuf {
    /// Address, length and kind of the whole buffer.
    fn io_ref(&self, classify: &dyn Fn(u64) -> MemoryKind) -> BufferRef;
}

/// Memory named by address whose kind the caller already knows (from a buffer registration,
/// or the one pointer query it made itself): an [`IoBuf`]/[`IoBufMut`] the driver takes as
/// it is, with no pointer query of its own. For front ends that receive raw addresses (the
/// cuFile C ABI, Python buffers).
#[derive(Debug, Clone, Copy)]
pub struct KnownBuffer(BufferRef);

impl KnownBuffer {
    /// Wraps `buf`.
    ///
    /// # Safety
    /// `buf.addr .. buf.addr + buf.len` must be memory of this process of kind `buf.kind`,
    /// valid for every I/O the value is given to (writes for a read, reads for a write) and not
    /// used by anything else until that I/O is over: until the call returns, or for
    /// [`Driver::submit_read`](crate::Driver::submit_read) and the other asynchronous calls,
    /// until the I/O is reported done.
    pub unsafe fn new(buf: BufferRef) -> KnownBuffer {
        KnownBuffer(buf)
    }
}

// SAFETY: `KnownBuffer::new`'s caller vouches for the range, its kind and its exclusive use.
unsafe impl IoBufMut for KnownBuffer {
    fn io_ref_mut(&mut self, _classify: &dyn Fn(u64) -> MemoryKind) -> BufferRef {
        self.0
    }
}

// SAFETY: as above.
unsafe impl IoBuf for KnownBuffer {
    fn io_ref(&self, _classify: &dyn Fn(u64) -> MemoryKind) -> BufferRef {
        self.0
    }
}

// SAFETY: the range is the slice or vector itself; a moved vector keeps its heap buffer.
unsafe impl IoBufMut for [u8] {
    fn io_ref_mut(&mut self, classify: &dyn Fn(u64) -> MemoryKind) -> BufferRef {
        let addr = self.as_mut_ptr() as u64;
        let kind = match classify(addr) {
            MemoryKind::PinnedHost => MemoryKind::PinnedHost,
            _ => MemoryKind::Host,
        };
        BufferRef { addr, len: self.len(), kind }
    }
}

// SAFETY: as above.
unsafe impl IoBuf for [u8] {
    fn io_ref(&self, classify: &dyn Fn(u64) -> MemoryKind) -> BufferRef {
        let addr = self.as_ptr() as u64;
        let kind = match classify(addr) {
            MemoryKind::PinnedHost => MemoryKind::PinnedHost,
            _ => MemoryKind::Host,
        };
        BufferRef { addr, len: self.len(), kind }
    }
}

// SAFETY: the range is the slice or vector itself; a moved vector keeps its heap buffer.
unsafe impl IoBufMut for Vec<u8> {
    fn io_ref_mut(&mut self, classify: &dyn Fn(u64) -> MemoryKind) -> BufferRef {
        self.as_mut_slice().io_ref_mut(classify)
    }
}

// SAFETY: as above.
unsafe impl IoBuf for Vec<u8> {
    fn io_ref(&self, classify: &dyn Fn(u64) -> MemoryKind) -> BufferRef {
        self.as_slice().io_ref(classify)
    }
}
