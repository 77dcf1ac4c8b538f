//! The gdrdrv backend: ioctls and `mmap` on `/dev/gdrdrv` (or a port's node, e.g.
//! `/dev/mtgdrdrv`), with the version negotiation of libgdrapi 2.6.

use std::ffi::c_void;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use super::abi;
use crate::error::{Error, ErrorKind, Result};

/// An open gdrdrv device whose version has been checked.
#[derive(Debug)]
pub(crate) struct Gdrdrv {
    fd: OwnedFd,
    path: PathBuf,
    /// Driver version word (`major << 16 | minor`).
    pub version: u32,
}

/// The API version word this library speaks (2.6).
pub(crate) const API_VERSION: u32 = abi::version(super::API_MAJOR, super::API_MINOR);

impl Gdrdrv {
    /// Opens `path` (`O_RDWR | O_CLOEXEC`) and negotiates versions.
    pub fn open(path: &Path) -> Result<Gdrdrv> {
        let fd = match rustix::fs::open(
            path,
            rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(e) => {
                let port = path.file_name().is_some_and(|n| n != "gdrdrv");
                let how = match e.raw_os_error() {
                    libc::ENOENT if port => "not found: load the gdrdrv port that provides this node (e.g. Moore Threads' mtgdrdrv)",
                    libc::ENOENT => "not found: load the gdrdrv kernel module from NVIDIA/gdrcopy (insmod.sh creates the node)",
                    libc::EACCES | libc::EPERM => "permission denied: make the node readable and writable (chmod a+rw) or pass it into the container",
                    libc::ENXIO | libc::ENODEV => "has no driver behind it: the gdrdrv module is not loaded (or lost its major number)",
                    _ => "cannot be opened",
                };
                return Err(Error::from_errno(
                    e.raw_os_error(),
                    format!("{} {how}", path.display()),
                ));
            }
        };
        let dev = Gdrdrv { fd, path: path.to_path_buf(), version: 0 };
        let mut p = abi::GetVersionParams::default();
        dev.ioctl(abi::IOC_GET_VERSION, &mut p).map_err(|e| {
            Error::new(e.kind(), format!("{} does not answer GDRDRV_IOC_GET_VERSION ({e}): it is not gdrdrv 2.x or a port with its ABI", path.display()))
        })?;
        if p.gdrdrv_version < abi::MINIMUM_GDRDRV_VERSION {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "{} is gdrdrv {}, older than 2.0: install gdrdrv 2.x from NVIDIA/gdrcopy",
                    path.display(),
                    fmt_version(p.gdrdrv_version)
                ),
            ));
        }
        if p.minimum_gdr_api_version > API_VERSION {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "{} needs gdrapi {} or newer, this library speaks 2.6",
                    path.display(),
                    fmt_version(p.minimum_gdr_api_version)
                ),
            ));
        }
        Ok(Gdrdrv { version: p.gdrdrv_version, ..dev })
    }

    /// The device node.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn ioctl<T>(&self, cmd: u32, arg: &mut T) -> Result<()> {
        // SAFETY: arg is a valid, exclusively borrowed #[repr(C)] struct of the layout the
        // command expects (checked by the abi tests); the kernel copies sizeof(T) bytes.
        let r = unsafe { libc::ioctl(self.fd.as_raw_fd(), cmd as _, arg as *mut T as *mut c_void) };
        if r == 0 {
            Ok(())
        } else {
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
            Err(Error::from_errno(errno, format!("gdrdrv ioctl 0x{cmd:08x} failed")))
        }
    }

    /// `GDRDRV_IOC_PIN_BUFFER` (v1, with the deprecated token and VA space).
    pub fn pin(&self, addr: u64, size: u64, p2p_token: u64, va_space: u32) -> Result<u64> {
        let mut p = abi::PinBufferParams { addr, size, p2p_token, va_space, handle: 0 };
        self.ioctl(abi::IOC_PIN_BUFFER, &mut p)?;
        Ok(p.handle)
    }

    /// `GDRDRV_IOC_PIN_BUFFER_V2`; falls back to v1 for flags 0 on drivers older than 2.5.
    pub fn pin_v2(&self, addr: u64, size: u64, flags: u32) -> Result<u64> {
        if self.version < abi::GDRDRV_MINIMUM_VERSION_WITH_PIN_BUFFER_V2 {
            if flags != 0 {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!(
                        "gdrdrv {} is too old for pin flags (FORCE_PCIE needs gdrdrv 2.5+)",
                        fmt_version(self.version)
                    ),
                ));
            }
            return self.pin(addr, size, 0, 0);
        }
        let mut p = abi::PinBufferV2Params { addr, size, flags, pad: 0, handle: 0 };
        self.ioctl(abi::IOC_PIN_BUFFER_V2, &mut p)?;
        Ok(p.handle)
    }

    /// `GDRDRV_IOC_UNPIN_BUFFER`.
    pub fn unpin(&self, handle: u64) -> Result<()> {
        self.ioctl(abi::IOC_UNPIN_BUFFER, &mut abi::UnpinBufferParams { handle })
    }

    /// `GDRDRV_IOC_GET_CB_FLAG`.
    pub fn callback_flag(&self, handle: u64) -> Result<bool> {
        let mut p = abi::GetCbFlagParams { handle, flag: 0 };
        self.ioctl(abi::IOC_GET_CB_FLAG, &mut p)?;
        Ok(p.flag != 0)
    }

    /// `GET_INFO_V2` on drivers ≥ 2.4, else `GET_INFO`; returns the v2 view either way.
    pub fn info(&self, handle: u64) -> Result<abi::GetInfoV2Params> {
        if self.version >= abi::GDRDRV_MINIMUM_VERSION_WITH_GET_INFO_V2 {
            let mut p = abi::GetInfoV2Params { handle, ..Default::default() };
            self.ioctl(abi::IOC_GET_INFO_V2, &mut p)?;
            Ok(p)
        } else {
            let p = self.info_v1(handle)?;
            let mapping_type = match (p.mapped != 0, p.wc_mapping != 0) {
                (false, _) => abi::GDR_MR_NONE,
                (true, true) => abi::GDR_MR_WC,
                (true, false) => abi::GDR_MR_CACHING,
            };
            Ok(abi::GetInfoV2Params {
                handle,
                va: p.va,
                mapped_size: p.mapped_size,
                page_size: p.page_size,
                tsc_khz: p.tsc_khz,
                tm_cycles: p.tm_cycles,
                mapping_type,
            })
        }
    }

    /// `GDRDRV_IOC_GET_INFO` (v1).
    pub fn info_v1(&self, handle: u64) -> Result<abi::GetInfoParams> {
        let mut p = abi::GetInfoParams { handle, ..Default::default() };
        self.ioctl(abi::IOC_GET_INFO, &mut p)?;
        Ok(p)
    }

    /// `GDRDRV_IOC_GET_ATTR`; 0 when the driver is older than 2.5 or does not know `attr`.
    pub fn attr(&self, attr: u32) -> Result<u32> {
        if self.version < abi::GDRDRV_MINIMUM_VERSION_WITH_GET_ATTR {
            return Ok(0);
        }
        let mut p = abi::GetAttrParams { attr, val: 0 };
        match self.ioctl(abi::IOC_GET_ATTR, &mut p) {
            Ok(()) => Ok(p.val),
            Err(e) if e.errno() == Some(libc::EINVAL) => Ok(0),
            Err(e) => Err(e),
        }
    }

    /// `GDRDRV_IOC_REQ_MAPPING_TYPE` (drivers ≥ 2.5; a no-op before).
    pub fn request_mapping_type(&self, handle: u64, mapping_type: u32) -> Result<()> {
        if self.version < abi::GDRDRV_MINIMUM_VERSION_WITH_REQ_MAPPING_TYPE {
            return Ok(());
        }
        self.ioctl(
            abi::IOC_REQ_MAPPING_TYPE,
            &mut abi::ReqMappingTypeParams { handle, mapping_type },
        )
    }

    /// `mmap(NULL, len, RW, MAP_SHARED, fd, handle << PAGE_SHIFT)`.
    pub fn mmap(&self, handle: u64, len: usize) -> Result<*mut u8> {
        let shift = super::host_page_size().trailing_zeros();
        let offset =
            handle.checked_shl(shift).filter(|o| o >> shift == handle).ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidInput,
                    format!("gdrdrv handle {handle} does not fit an mmap offset"),
                )
            })?;
        // SAFETY: a fresh shared mapping of the device; the kernel picks the address, so no
        // existing memory is replaced.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                self.fd.as_raw_fd(),
                offset as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
            return Err(Error::from_errno(
                errno,
                format!("mmap of gdrdrv handle {handle} ({len} bytes) failed"),
            ));
        }
        Ok(p as *mut u8)
    }
}

/// Formats a version word as `major.minor`.
pub(crate) fn fmt_version(v: u32) -> String {
    format!("{}.{}", v >> abi::MAJOR_VERSION_SHIFT, v & abi::MINOR_VERSION_MASK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_node_names_the_fix() {
        let e = Gdrdrv::open(Path::new("/nonexistent/gdrdrv")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(e.to_string().contains("load the gdrdrv kernel module"), "{e}");
        let e = Gdrdrv::open(Path::new("/nonexistent/mtgdrdrv")).unwrap_err();
        assert!(
            e.to_string().contains("/nonexistent/mtgdrdrv") && e.to_string().contains("port"),
            "{e}"
        );
    }

    #[test]
    fn a_node_that_is_not_gdrdrv_is_refused() {
        // /dev/null opens but answers ENOTTY to our ioctl.
        let e = Gdrdrv::open(Path::new("/dev/null")).unwrap_err();
        assert!(e.to_string().contains("GDRDRV_IOC_GET_VERSION"), "{e}");
    }

    #[test]
    fn version_format() {
        assert_eq!(fmt_version(0x0002_0006), "2.6");
        assert_eq!(API_VERSION, 0x0002_0006);
    }
}
