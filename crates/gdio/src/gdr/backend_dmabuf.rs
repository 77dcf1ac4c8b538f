//! The dma-buf backend: `cuMemGetHandleForAddressRange(DMA_BUF_FD)` exports the range as a
//! dma-buf fd, which is then `mmap`ed. Needs no kernel module, but a CUDA driver ≥ 13.3
//! (R610+) for discrete GPUs, and a device reporting `CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED`.

use std::os::fd::{AsRawFd, OwnedFd};

use super::{cuda, MappingType, PinFlags};
use crate::error::{Error, ErrorKind, Result};

/// A usable dma-buf path.
#[derive(Debug)]
pub(crate) struct Dmabuf {
    /// `cuDriverGetVersion`.
    pub driver_version: i32,
}

/// One exported range.
#[derive(Debug)]
pub(crate) struct DmabufPin {
    /// The dma-buf fd (closed on drop).
    pub fd: OwnedFd,
    /// Host-page-aligned start of the exported range.
    pub va: u64,
    /// Length of the exported range.
    pub len: u64,
    /// The mapping type the fd will give.
    pub mapping_type: MappingType,
}

fn fmt_cuda(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

impl Dmabuf {
    /// Checks the driver; the error says what is missing.
    pub fn open() -> Result<Dmabuf> {
        if !cuda::lib_present() {
            return Err(Error::new(
                ErrorKind::NoGpu,
                "no libcuda.so: the dma-buf path needs an NVIDIA CUDA 13.3+ (R610+) driver",
            ));
        }
        let v = cuda::driver_version()?;
        if v < cuda::DMABUF_MMAP_MIN_DRIVER {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "the CUDA driver is {} (API {v}); CPU mmap of dma-buf fds of discrete GPUs needs CUDA 13.3+ (driver R610+): upgrade the driver",
                    fmt_cuda(v)
                ),
            ));
        }
        if !cuda::has_symbol("cuMemGetHandleForAddressRange") {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "libcuda lacks cuMemGetHandleForAddressRange: install a CUDA 13.3+ (R610+) driver",
            ));
        }
        let n = cuda::device_count()?;
        if n == 0 {
            return Err(Error::new(ErrorKind::NoGpu, "the CUDA driver sees no device"));
        }
        let mut any = false;
        for d in 0..n {
            any |= cuda::dmabuf_supported(d)?;
        }
        if !any {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("none of the {n} CUDA devices reports CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED (needs Linux 5.12+ and the open kernel modules)"),
            ));
        }
        Ok(Dmabuf { driver_version: v })
    }

    /// Exports the host-page-aligned cover of `[addr, addr + size)` on device `ordinal`.
    pub fn pin(&self, ordinal: i32, addr: u64, size: u64, flags: PinFlags) -> Result<DmabufPin> {
        let page = super::host_page_size() as u64;
        let va = addr & !(page - 1);
        let end = addr
            .checked_add(size)
            .and_then(|e| e.checked_next_multiple_of(page))
            .ok_or_else(|| {
                Error::new(ErrorKind::InvalidInput, format!("range 0x{addr:x}+{size} overflows"))
            })?;
        if !cuda::dmabuf_supported(ordinal)? {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("CUDA device {ordinal} does not support dma-buf export"),
            ));
        }
        let force_pcie = flags.contains(PinFlags::FORCE_PCIE);
        let fd = cuda::export_dmabuf(ordinal, va, (end - va) as usize, u64::from(force_pcie))?;
        let mapping_type = if !force_pcie && cuda::coherent_host_page_tables(ordinal)? {
            MappingType::Caching
        } else {
            MappingType::Wc
        };
        Ok(DmabufPin { fd, va, len: end - va, mapping_type })
    }

    /// `mmap(NULL, len, RW, MAP_SHARED, fd, 0)`.
    pub fn mmap(&self, pin: &DmabufPin, len: usize) -> Result<*mut u8> {
        // SAFETY: a fresh shared mapping of the dma-buf; the kernel picks the address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                pin.fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
            let mut e =
                Error::from_errno(errno, format!("mmap of the dma-buf fd ({len} bytes) failed"));
            if errno == libc::EOPNOTSUPP || errno == libc::ENOTSUP || errno == libc::EINVAL {
                e = Error::from_errno(errno, format!("mmap of the dma-buf fd ({len} bytes) refused: the driver does not allow CPU mappings of this GPU's dma-bufs (needs R610+)"));
            }
            return Err(e);
        }
        Ok(p as *mut u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_explains_itself() {
        match Dmabuf::open() {
            Ok(d) => eprintln!("dma-buf path usable here (driver {})", d.driver_version),
            Err(e) => {
                let s = e.to_string();
                assert!(
                    s.contains("13.3") || s.contains("dma-buf") || s.contains("DMA_BUF"),
                    "{s}"
                );
            }
        }
    }

    #[test]
    fn cuda_version_format() {
        assert_eq!(fmt_cuda(13030), "13.3");
        assert_eq!(fmt_cuda(13000), "13.0");
        assert_eq!(fmt_cuda(12080), "12.8");
    }
}
