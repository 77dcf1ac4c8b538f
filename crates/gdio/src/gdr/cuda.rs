//! The few CUDA driver calls the mapping path needs, through `cudarc::driver::sys`.
//!
//! cudarc panics when `libcuda` or a symbol is missing, so every entry point first checks
//! [`lib_present`] (and [`has_symbol`] for calls newer than the oldest driver we accept) and
//! returns an [`Error`] instead. No CUDA type leaves this module.

use std::ffi::c_void;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::OnceLock;

use cudarc::driver::sys;

use crate::error::{Error, ErrorKind, Result};
use crate::gpu::cuda_error::check;

/// CUDA driver API version (`cuDriverGetVersion`) from which dma-buf fds of discrete GPUs can
/// be `mmap`ed (CUDA 13.3, driver R610).
pub const DMABUF_MMAP_MIN_DRIVER: i32 = 13030;

/// Whether `libcuda` can be loaded (checked once).
pub fn lib_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: is_culib_present only tries to dlopen the library names.
    *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() })
}

fn require_lib() -> Result<()> {
    if lib_present() {
        Ok(())
    } else {
        Err(Error::new(
            ErrorKind::NoGpu,
            "libcuda.so not found: install the NVIDIA driver (no CUDA driver on this machine)",
        ))
    }
}

/// Whether the loaded `libcuda` exports `name`.
pub fn has_symbol(name: &str) -> bool {
    if !lib_present() {
        return false;
    }
    // SAFETY: lib_present() is true so culib() does not panic; we only look the symbol up.
    unsafe { sys::culib().get::<*const c_void>(name.as_bytes()).is_ok() }
}

/// `cuInit(0)`, once per process.
pub fn init() -> Result<()> {
    require_lib()?;
    static INIT: OnceLock<Result<()>> = OnceLock::new();
    INIT.get_or_init(|| {
        // SAFETY: the library is present; cuInit takes a plain flag.
        check(unsafe { sys::cuInit(0) }, "cuInit").map_err(|e| {
            e.map_message(|m| format!("{m}: no usable NVIDIA GPU")).with_kind(ErrorKind::NoGpu)
        })
    })
    .clone()
}

/// `cuDriverGetVersion`: the CUDA API version of the installed driver (13000 = CUDA 13.0).
pub fn driver_version() -> Result<i32> {
    require_lib()?;
    let mut v = 0;
    // SAFETY: v is a valid out-pointer; the call needs no cuInit.
    check(unsafe { sys::cuDriverGetVersion(&mut v) }, "cuDriverGetVersion")?;
    Ok(v)
}

/// Number of CUDA devices.
pub fn device_count() -> Result<i32> {
    init()?;
    let mut n = 0;
    // SAFETY: n is a valid out-pointer.
    check(unsafe { sys::cuDeviceGetCount(&mut n) }, "cuDeviceGetCount")?;
    Ok(n)
}

fn device(ordinal: i32) -> Result<sys::CUdevice> {
    init()?;
    let mut d = 0;
    // SAFETY: d is a valid out-pointer.
    check(unsafe { sys::cuDeviceGet(&mut d, ordinal) }, &format!("cuDeviceGet({ordinal})"))?;
    Ok(d)
}

fn device_attr(ordinal: i32, attr: sys::CUdevice_attribute) -> Result<i32> {
    let d = device(ordinal)?;
    let mut v = 0;
    check(
        // SAFETY: v is a valid out-pointer, d a device handle from cuDeviceGet.
        unsafe { sys::cuDeviceGetAttribute(&mut v, attr, d) },
        &format!("cuDeviceGetAttribute({attr:?})"),
    )?;
    Ok(v)
}

/// `CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED` of device `ordinal`.
pub fn dmabuf_supported(ordinal: i32) -> Result<bool> {
    Ok(device_attr(ordinal, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)? != 0)
}

/// `CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES`: a coherent platform
/// (Grace) where a mapping of GPU memory can be cached.
pub fn coherent_host_page_tables(ordinal: i32) -> Result<bool> {
    Ok(device_attr(
        ordinal,
        sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
    )? != 0)
}

/// What the driver knows about a device pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PointerInfo {
    /// Start of the allocation containing the pointer.
    pub range_start: u64,
    /// Size of that allocation.
    pub range_size: u64,
    /// Managed (unified) memory.
    pub is_managed: bool,
    /// `CU_MEMORYTYPE_*` (2 = device).
    pub memory_type: u32,
    /// Unique id of the allocation.
    pub buffer_id: u64,
    /// Device the memory lives on.
    pub device_ordinal: i32,
}

fn ptr_attr<T: Default>(addr: u64, attr: sys::CUpointer_attribute) -> Result<T> {
    let mut v = T::default();
    check(
        // SAFETY: the out-pointer points to a T of the size the attribute writes (the callers
        // pick T per attribute: u64 for addresses/sizes/ids, u32/i32 for flags and types).
        unsafe { sys::cuPointerGetAttribute(&mut v as *mut T as *mut c_void, attr, addr) },
        &format!("cuPointerGetAttribute({attr:?}) for 0x{addr:x}"),
    )?;
    Ok(v)
}

/// Queries range, managed flag, memory type, buffer id and device of `addr`.
pub fn pointer_info(addr: u64) -> Result<PointerInfo> {
    init()?;
    // Pointer queries need some context current on the thread; under unified addressing any
    // GPU's primary context answers for every device's pointers.
    with_primary_ctx(0, || {
        use sys::CUpointer_attribute as A;
        let memory_type: u32 = ptr_attr(addr, A::CU_POINTER_ATTRIBUTE_MEMORY_TYPE).map_err(|e| {
            Error::new(ErrorKind::InvalidInput, format!("0x{addr:x} is not memory the CUDA driver knows: pass a pointer from cuMemAlloc/cudaMalloc ({e})"))
        })?;
        let is_managed: u32 = ptr_attr(addr, A::CU_POINTER_ATTRIBUTE_IS_MANAGED)?;
        Ok(PointerInfo {
            range_start: ptr_attr(addr, A::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)?,
            range_size: ptr_attr::<u64>(addr, A::CU_POINTER_ATTRIBUTE_RANGE_SIZE)?,
            is_managed: is_managed != 0,
            memory_type,
            buffer_id: ptr_attr(addr, A::CU_POINTER_ATTRIBUTE_BUFFER_ID)?,
            device_ordinal: ptr_attr(addr, A::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)?,
        })
    })
}

/// Runs `f` with the primary context of `ordinal` current on this thread.
fn with_primary_ctx<T>(ordinal: i32, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let d = device(ordinal)?;
    let mut ctx: sys::CUcontext = std::ptr::null_mut();
    check(
        // SAFETY: ctx is a valid out-pointer; d comes from cuDeviceGet.
        unsafe { sys::cuDevicePrimaryCtxRetain(&mut ctx, d) },
        "cuDevicePrimaryCtxRetain",
    )?;
    // SAFETY: ctx was just retained.
    let pushed = check(unsafe { sys::cuCtxPushCurrent_v2(ctx) }, "cuCtxPushCurrent");
    let out = pushed.and_then(|()| {
        let r = f();
        let mut old: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: we pushed ctx above; popping restores the thread's previous context.
        unsafe { sys::cuCtxPopCurrent_v2(&mut old) };
        r
    });
    // SAFETY: balances the retain above.
    unsafe { sys::cuDevicePrimaryCtxRelease_v2(d) };
    out
}

/// `cuMemGetHandleForAddressRange(DMA_BUF_FD)` for `[addr, addr + size)` on device `ordinal`.
/// `flags` 1 asks for a PCIe (BAR1) mapping type.
pub fn export_dmabuf(ordinal: i32, addr: u64, size: usize, flags: u64) -> Result<OwnedFd> {
    const SYM: &str = "cuMemGetHandleForAddressRange";
    if !has_symbol(SYM) {
        return Err(Error::new(ErrorKind::Unsupported, "the CUDA driver lacks cuMemGetHandleForAddressRange: install a CUDA 13.3+ (R610+) driver"));
    }
    with_primary_ctx(ordinal, || {
        let mut fd: i32 = -1;
        // SAFETY: fd is a valid out-pointer for the int the DMA_BUF_FD handle type writes.
        let r = unsafe {
            sys::cuMemGetHandleForAddressRange(
                &mut fd as *mut i32 as *mut c_void,
                addr,
                size,
                sys::CUmemRangeHandleType::CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                flags,
            )
        };
        check(r, &format!("cuMemGetHandleForAddressRange(0x{addr:x}, {size})"))?;
        if fd < 0 {
            return Err(Error::new(ErrorKind::Gpu, "cuMemGetHandleForAddressRange returned no fd"));
        }
        // SAFETY: the driver handed us a new fd that nobody else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    })
}

/// Device memory from `cuMemAlloc` (or `cuMemAllocManaged`) in a device's primary context;
/// freed on drop. Used by the tools and tests to have something to pin.
#[derive(Debug)]
pub struct DeviceMemory {
    ordinal: i32,
    ptr: u64,
    size: usize,
}

impl DeviceMemory {
    /// Allocates `size` bytes on device `ordinal` with `cuMemAlloc`.
    pub fn alloc(ordinal: i32, size: usize) -> Result<DeviceMemory> {
        Self::alloc_inner(ordinal, size, false)
    }

    /// Allocates `size` bytes of managed memory (which the mapping path must refuse).
    pub fn alloc_managed(ordinal: i32, size: usize) -> Result<DeviceMemory> {
        Self::alloc_inner(ordinal, size, true)
    }

    fn alloc_inner(ordinal: i32, size: usize, managed: bool) -> Result<DeviceMemory> {
        // Keep the primary context alive as long as the memory: retain it before allocating, or
        // the release at the end of `with_primary_ctx` would destroy it, and the memory with it.
        let d = device(ordinal)?;
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        check(
            // SAFETY: balanced by the release in Drop (or below on failure).
            unsafe { sys::cuDevicePrimaryCtxRetain(&mut ctx, d) },
            "cuDevicePrimaryCtxRetain",
        )?;
        let ptr = with_primary_ctx(ordinal, || {
            let mut p: sys::CUdeviceptr = 0;
            // SAFETY: p is a valid out-pointer; a context is current.
            let r = unsafe {
                if managed {
                    sys::cuMemAllocManaged(&mut p, size, 1 /* CU_MEM_ATTACH_GLOBAL */)
                } else {
                    sys::cuMemAlloc_v2(&mut p, size)
                }
            };
            check(r, &format!("cuMemAlloc({size})"))?;
            Ok(p)
        });
        let ptr = match ptr {
            Ok(p) => p,
            Err(e) => {
                // SAFETY: balances the retain above.
                unsafe { sys::cuDevicePrimaryCtxRelease_v2(d) };
                return Err(e);
            }
        };
        Ok(DeviceMemory { ordinal, ptr, size })
    }

    /// The device address.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// The size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Copies `data` to `ptr() + offset` with `cuMemcpyHtoD`.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.bounds(offset, data.len())?;
        with_primary_ctx(self.ordinal, || {
            // SAFETY: the device range is inside our allocation; data is a valid slice.
            check(
                unsafe {
                    sys::cuMemcpyHtoD_v2(
                        self.ptr + offset as u64,
                        data.as_ptr() as *const c_void,
                        data.len(),
                    )
                },
                "cuMemcpyHtoD",
            )
        })
    }

    /// Copies `ptr() + offset` into `out` with `cuMemcpyDtoH`.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.bounds(offset, out.len())?;
        with_primary_ctx(self.ordinal, || {
            // SAFETY: the device range is inside our allocation; out is a valid slice.
            check(
                unsafe {
                    sys::cuMemcpyDtoH_v2(
                        out.as_mut_ptr() as *mut c_void,
                        self.ptr + offset as u64,
                        out.len(),
                    )
                },
                "cuMemcpyDtoH",
            )
        })
    }

    fn bounds(&self, offset: usize, len: usize) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(Error::new(
                ErrorKind::InvalidInput,
                format!("range {offset}+{len} is outside the {}-byte device buffer", self.size),
            )),
        }
    }
}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        let ptr = self.ptr;
        let _ = with_primary_ctx(self.ordinal, || {
            // SAFETY: ptr came from cuMemAlloc in this context and is freed once.
            check(unsafe { sys::cuMemFree_v2(ptr) }, "cuMemFree")
        });
        if let Ok(d) = device(self.ordinal) {
            // SAFETY: balances the retain in alloc_inner.
            unsafe { sys::cuDevicePrimaryCtxRelease_v2(d) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_panic_without_libcuda() {
        if lib_present() {
            eprintln!("skipped: libcuda is present on this machine");
            return;
        }
        assert_eq!(driver_version().unwrap_err().kind(), ErrorKind::NoGpu);
        assert_eq!(device_count().unwrap_err().kind(), ErrorKind::NoGpu);
        assert!(pointer_info(0x1000).is_err());
        assert!(export_dmabuf(0, 0x10000, 65536, 0).is_err());
        assert!(DeviceMemory::alloc(0, 4096).is_err());
        assert!(!has_symbol("cuInit"));
    }

    /// On a machine with an NVIDIA GPU: pointer attributes describe allocations correctly,
    /// managed memory is recognised, and the dma-buf export (the first half of the dma-buf
    /// backend) works; the mmap of the fd is attempted and its outcome printed (it fails on
    /// drivers before R610 for discrete GPUs).
    #[test]
    fn gpu_pointer_attributes_and_dmabuf_export() {
        if !lib_present() || device_count().map_or(true, |n| n == 0) {
            crate::gpu::gpu_skip("no CUDA GPU on this machine");
            return;
        }
        eprintln!("CUDA driver API version {}", driver_version().unwrap());
        let m = DeviceMemory::alloc(0, 3 << 20).unwrap();
        let p = pointer_info(m.ptr() + 12345).unwrap();
        assert_eq!(p.range_start, m.ptr());
        assert!(p.range_size >= 3 << 20);
        assert!(!p.is_managed);
        assert_eq!(p.memory_type, 2);
        assert_eq!(p.device_ordinal, 0);
        let data: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
        m.write(100, &data).unwrap();
        let mut back = vec![0u8; 4096];
        m.read(100, &mut back).unwrap();
        assert_eq!(back, data);
        match DeviceMemory::alloc_managed(0, 1 << 20) {
            Ok(mm) => assert!(pointer_info(mm.ptr()).unwrap().is_managed),
            Err(e) => eprintln!("managed memory unavailable: {e}"),
        }
        let supported = dmabuf_supported(0).unwrap();
        eprintln!("CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = {supported}");
        if supported {
            let base = m.ptr().next_multiple_of(1 << 16);
            let fd = export_dmabuf(0, base, 1 << 16, 0).expect("dma-buf export");
            use std::os::fd::AsRawFd;
            // SAFETY: a fresh shared mapping of the fd; unmapped below if it succeeds.
            let q = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    1 << 16,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    fd.as_raw_fd(),
                    0,
                )
            };
            if q == libc::MAP_FAILED {
                eprintln!(
                    "mmap of the dma-buf fd failed as expected before R610: {}",
                    std::io::Error::last_os_error()
                );
            } else {
                eprintln!("mmap of the dma-buf fd succeeded");
                // SAFETY: q/len come from the mmap above.
                unsafe { libc::munmap(q, 1 << 16) };
            }
        }
    }
}
