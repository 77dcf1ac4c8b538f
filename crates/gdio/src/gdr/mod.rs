//! GPU memory mapped into the CPU (GDRCopy): the lowest-latency small copies.
//!
//! A range of `cuMemAlloc`/`cudaMalloc` memory is *pinned* (its BAR pages are fixed), then
//! *mapped* into the process; host loads and stores then reach GPU memory directly, without
//! a DMA engine or a CUDA call per copy. Semantics follow `gdrapi.h` 2.6 with its sharp edges
//! turned into errors:
//!
//! - [`PinnedRange::map`] needs the pinned address aligned to the backend's page (64 KiB GPU
//!   page with gdrdrv, host page with dma-buf); [`MapInfo::va`] is the aligned start.
//! - Managed memory and ranges that span two allocations are refused at pin time (when
//!   `libcuda` can be asked).
//! - One mapping per handle; unpin unmaps first.
//! - Handles work only in the process that opened the [`Gdr`] (not in a `fork` child).
//! - Everything is `Send + Sync`: each handle has its own lock, unlike upstream.
//!
//! Backends, picked by [`Gdr::open_with`]: the gdrdrv kernel driver (`/dev/gdrdrv`, or a port
//! with the same ABI such as Moore Threads' `/dev/mtgdrdrv`, see [`GdrOptions`]) and the
//! dma-buf path of CUDA 13.3+ drivers. [`probe_backends`] says why each is or is not usable.

pub mod abi;
mod backend_dmabuf;
mod backend_gdrdrv;
pub mod copy;
mod cuda;
mod flags;
mod handle;
mod info;
mod pin;
mod state;

pub use cuda::DeviceMemory;
pub use flags::{Attribute, MapFlags, MappingType, PinFlags};
pub use handle::Gdr;
pub use info::{probe_backends, BackendChoice, BackendKind, BackendStatus, GdrOptions, MapInfo};
pub use pin::PinnedRange;

/// Major version of the gdrapi API this module implements.
pub const API_MAJOR: u32 = 2;
/// Minor version of the gdrapi API this module implements.
pub const API_MINOR: u32 = 6;
/// `GPU_PAGE_SHIFT`.
pub const GPU_PAGE_SHIFT: u32 = 16;
/// `GPU_PAGE_SIZE`: 64 KiB, the unit gdrdrv pins and maps.
pub const GPU_PAGE_SIZE: u64 = 1 << GPU_PAGE_SHIFT;
/// Default gdrdrv device node.
pub const DEFAULT_DEVICE: &str = "/dev/gdrdrv";
/// Environment variable that overrides [`GdrOptions::device_path`].
pub const DEVICE_ENV: &str = "GDIO_GDR_DEVICE";
/// Upstream's environment variable that forces the dma-buf backend when set to `1`.
pub const FORCE_DMABUF_ENV: &str = "GDRCOPY_USE_DMABUF_MMAP";

/// The version of this gdrapi implementation, `(2, 6)`.
pub fn runtime_version() -> (u32, u32) {
    (API_MAJOR, API_MINOR)
}

pub(crate) fn host_page_size() -> usize {
    crate::memory::page_size()
}
