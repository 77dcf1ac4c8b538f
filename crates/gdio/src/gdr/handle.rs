//! [`Gdr`]: the open library state (`gdr_t`): picks a backend, pins ranges of GPU memory.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::backend_dmabuf::Dmabuf;
use super::backend_gdrdrv::Gdrdrv;
use super::state::{einval, fork_generation, lock, Backend, Handle, HandleState, Inner, PinKind};
use super::*;
use crate::error::{Error, ErrorKind, Result};

/// An open mapping library state (`gdr_t`). Cheap to clone; `Send + Sync`.
#[derive(Debug, Clone)]
pub struct Gdr {
    pub(super) inner: Arc<Inner>,
}

impl Gdr {
    /// Opens with [`GdrOptions::default`] plus the environment overrides.
    pub fn open() -> Result<Gdr> {
        Gdr::open_with(&GdrOptions::default().with_env())
    }

    /// Opens the first usable backend allowed by `opts`. The error names what is missing for
    /// each backend tried and how to get it.
    pub fn open_with(opts: &GdrOptions) -> Result<Gdr> {
        let generation = fork_generation();
        let mut reasons = Vec::new();
        let mut backend = None;
        if opts.backend != BackendChoice::DmaBuf {
            match Gdrdrv::open(&opts.device_path) {
                Ok(d) => backend = Some(Backend::Gdrdrv(d)),
                Err(e) => reasons.push(e.to_string()),
            }
        }
        if backend.is_none() && opts.backend != BackendChoice::Gdrdrv {
            match Dmabuf::open() {
                Ok(d) => backend = Some(Backend::DmaBuf(d)),
                Err(e) => reasons.push(format!("dma-buf: {e}")),
            }
        }
        let backend = backend.ok_or_else(|| {
            Error::new(
                ErrorKind::NoBackend,
                format!("no way to map GPU memory into the CPU here: {}", reasons.join("; and ")),
            )
        })?;
        Ok(Gdr {
            inner: Arc::new(Inner {
                backend,
                generation,
                pid: std::process::id(),
                handles: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(1),
            }),
        })
    }

    /// The backend in use.
    pub fn backend(&self) -> BackendKind {
        match self.inner.backend {
            Backend::Gdrdrv(_) => BackendKind::Gdrdrv,
            Backend::DmaBuf(_) => BackendKind::DmaBuf,
        }
    }

    /// The gdrdrv version `(major, minor)`; an error under the dma-buf backend, which has no
    /// kernel driver of its own.
    pub fn driver_version(&self) -> Result<(u32, u32)> {
        self.inner.check_process()?;
        match &self.inner.backend {
            Backend::Gdrdrv(d) => {
                Ok((d.version >> abi::MAJOR_VERSION_SHIFT, d.version & abi::MINOR_VERSION_MASK))
            }
            Backend::DmaBuf(_) => Err(Error::new(
                ErrorKind::Unsupported,
                "the dma-buf backend is in use: there is no gdrdrv driver version",
            )
            .with_errno(libc::EBADF)),
        }
    }

    /// The CUDA driver API version when the dma-buf backend is in use.
    pub fn cuda_driver_version(&self) -> Option<i32> {
        match &self.inner.backend {
            Backend::DmaBuf(d) => Some(d.driver_version),
            Backend::Gdrdrv(_) => None,
        }
    }

    /// `gdr_get_attribute`.
    pub fn attribute(&self, attr: Attribute) -> Result<u32> {
        self.inner.check_process()?;
        match &self.inner.backend {
            Backend::DmaBuf(_) => Ok(1),
            Backend::Gdrdrv(d) => match attr {
                Attribute::UsingDmaBufMmap => Ok(0),
                Attribute::UsePersistentMapping => d.attr(abi::GDRDRV_ATTR_USE_PERSISTENT_MAPPING),
                Attribute::SupportPinFlagForcePcie => {
                    d.attr(abi::GDRDRV_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE)
                }
            },
        }
    }

    /// Number of ranges pinned through this state and not yet unpinned.
    pub fn pinned_count(&self) -> usize {
        lock(&self.inner.handles).len()
    }

    /// `gdr_pin_buffer_v2`: pins `[addr, addr + size)` of device memory.
    pub fn pin(&self, addr: u64, size: u64, flags: PinFlags) -> Result<PinnedRange> {
        self.pin_inner(addr, size, flags, 0, 0)
    }

    /// `gdr_pin_buffer`: the v1 call with the deprecated P2P token and VA space (both must be
    /// 0 with persistent mapping, the default since gdrdrv 2.5).
    pub fn pin_v1(
        &self,
        addr: u64,
        size: u64,
        p2p_token: u64,
        va_space: u32,
    ) -> Result<PinnedRange> {
        self.pin_inner(addr, size, PinFlags::DEFAULT, p2p_token, va_space)
    }

    fn pin_inner(
        &self,
        addr: u64,
        size: u64,
        flags: PinFlags,
        token: u64,
        va_space: u32,
    ) -> Result<PinnedRange> {
        self.inner.check_process()?;
        if size == 0 {
            return Err(einval("cannot pin an empty range"));
        }
        let end = addr
            .checked_add(size)
            .ok_or_else(|| einval(format!("range 0x{addr:x}+{size} overflows")))?;
        // Refuse managed memory and ranges over two allocations while the driver can tell.
        let ptr = if cuda::lib_present() { Some(cuda::pointer_info(addr)?) } else { None };
        if let Some(p) = &ptr {
            if p.is_managed {
                return Err(einval(format!(
                    "0x{addr:x} is CUDA managed memory, which cannot be mapped into the CPU this way: allocate it with cuMemAlloc/cudaMalloc"
                )));
            }
            if p.memory_type != 2 {
                return Err(einval(format!("0x{addr:x} is not device memory (CUDA memory type {}): pin only cuMemAlloc/cudaMalloc memory", p.memory_type)));
            }
            if end > p.range_start.saturating_add(p.range_size) {
                return Err(einval(format!(
                    "range 0x{addr:x}+{size} spans two allocations (the allocation at 0x{:x} has {} bytes): pin each allocation separately",
                    p.range_start, p.range_size
                )));
            }
        }
        let (pin, va, mapped_size, page_size) = match &self.inner.backend {
            Backend::Gdrdrv(d) => {
                let kh = if token != 0 || va_space != 0 {
                    d.pin(addr, size, token, va_space)?
                } else {
                    d.pin_v2(addr, size, flags.bits())?
                };
                let info = match d.info(kh) {
                    Ok(i) => i,
                    Err(e) => {
                        let _ = d.unpin(kh);
                        return Err(e);
                    }
                };
                (PinKind::Gdrdrv(kh), info.va, info.mapped_size, info.page_size)
            }
            Backend::DmaBuf(d) => {
                if token != 0 || va_space != 0 {
                    return Err(einval(
                        "P2P tokens are not supported by the dma-buf backend: pass 0",
                    ));
                }
                let ordinal = ptr.map(|p| p.device_ordinal).unwrap_or(0);
                let p = d.pin(ordinal, addr, size, flags)?;
                let (va, len) = (p.va, p.len);
                (PinKind::DmaBuf(p), va, len, host_page_size() as u32)
            }
        };
        let h = Arc::new(Handle {
            id: self.inner.next_id.fetch_add(1, Ordering::Relaxed),
            addr,
            size,
            va,
            mapped_size,
            page_size,
            state: Mutex::new(HandleState { pin: Some(pin), mapping: None }),
        });
        lock(&self.inner.handles).insert(h.id, h.clone());
        Ok(PinnedRange { gdr: self.inner.clone(), h })
    }

    /// `gdr_close`: unpins (and unmaps) every range still pinned through this state. Ranges
    /// still held report "already unpinned" afterwards.
    pub fn close(self) -> Result<()> {
        let handles: Vec<_> = lock(&self.inner.handles).values().cloned().collect();
        let mut first_err = None;
        for h in handles {
            if let Err(e) = self.inner.unpin(&h) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}
    #[test]
    fn handles_are_send_and_sync() {
        assert_send_sync::<Gdr>();
        assert_send_sync::<PinnedRange>();
    }

    #[test]
    fn open_without_backend_names_what_is_missing() {
        let opts = GdrOptions { device_path: "/nonexistent/gdrdrv".into(), ..Default::default() };
        match Gdr::open_with(&opts) {
            Ok(g) => eprintln!("skipped: a backend is usable here ({})", g.backend().name()),
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::NoBackend);
                let s = e.to_string();
                assert!(s.contains("gdrdrv kernel module") && s.contains("13.3"), "{s}");
                assert!(!s.contains('\n'));
            }
        }
        let only = GdrOptions { device_path: "/dev/null".into(), backend: BackendChoice::Gdrdrv };
        let e = Gdr::open_with(&only).unwrap_err();
        assert!(e.to_string().contains("/dev/null"), "{e}");
    }
}
