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

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once};

use serde::Serialize;

use crate::error::{Error, ErrorKind, Result};
use backend_dmabuf::{Dmabuf, DmabufPin};
use backend_gdrdrv::Gdrdrv;

pub use cuda::DeviceMemory;

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
    rustix::param::page_size()
}

/// How the CPU sees a mapping (`gdr_mapping_type_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[repr(u32)]
pub enum MappingType {
    /// Not mapped.
    None = 0,
    /// Write-combining: fast stores, slow uncached loads (x86 over PCIe).
    Wc = 1,
    /// Cached (coherent platforms such as Grace).
    Caching = 2,
    /// Device memory type (strongly ordered; ARM hosts behind BlueField-3).
    Device = 3,
}

impl MappingType {
    /// The upstream name (`gdr_get_mapping_type_string`).
    pub fn name(self) -> &'static str {
        match self {
            MappingType::None => "None",
            MappingType::Wc => "Write Combining",
            MappingType::Caching => "Caching",
            MappingType::Device => "Device",
        }
    }

    /// From the numeric `gdr_mapping_type_t`.
    pub fn from_raw(v: u32) -> Option<MappingType> {
        Some(match v {
            0 => MappingType::None,
            1 => MappingType::Wc,
            2 => MappingType::Caching,
            3 => MappingType::Device,
            _ => return None,
        })
    }
}

/// Flags of [`Gdr::pin`] (`gdr_pin_flags_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PinFlags(u32);

impl PinFlags {
    /// `GDR_PIN_FLAG_DEFAULT`.
    pub const DEFAULT: PinFlags = PinFlags(0);
    /// `GDR_PIN_FLAG_FORCE_PCIE`: a BAR1 (PCIe) mapping even on coherent platforms.
    pub const FORCE_PCIE: PinFlags = PinFlags(1);

    /// From raw bits; `None` for unknown bits.
    pub fn from_bits(bits: u32) -> Option<PinFlags> {
        (bits & !1 == 0).then_some(PinFlags(bits))
    }

    /// The raw bits.
    pub fn bits(self) -> u32 {
        self.0
    }

    /// Whether all bits of `other` are set.
    pub fn contains(self, other: PinFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

/// What [`PinnedRange::map`] asks for (`gdr_map_flags`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MapFlags {
    /// `GDR_MAP_FLAG_DEFAULT`: whatever the backend picks.
    #[default]
    Default,
    /// `GDR_MAP_FLAG_REQ_WC_MAPPING`.
    RequireWc,
    /// `GDR_MAP_FLAG_REQ_CACHE_MAPPING`.
    RequireCaching,
    /// `GDR_MAP_FLAG_REQ_DEVICE_MAPPING`.
    RequireDevice,
}

impl MapFlags {
    /// From the numeric flag (0..=3).
    pub fn from_raw(v: i32) -> Option<MapFlags> {
        Some(match v {
            0 => MapFlags::Default,
            1 => MapFlags::RequireWc,
            2 => MapFlags::RequireCaching,
            3 => MapFlags::RequireDevice,
            _ => return None,
        })
    }

    fn wanted(self) -> MappingType {
        match self {
            MapFlags::Default => MappingType::None,
            MapFlags::RequireWc => MappingType::Wc,
            MapFlags::RequireCaching => MappingType::Caching,
            MapFlags::RequireDevice => MappingType::Device,
        }
    }
}

/// System-wide attributes (`gdr_attr_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Attribute {
    /// `GDR_ATTR_USE_PERSISTENT_MAPPING`: pins survive `cuMemFree` until unpinned.
    UsePersistentMapping = 1,
    /// `GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE`.
    SupportPinFlagForcePcie = 2,
    /// `GDR_ATTR_USING_DMA_BUF_MMAP`: the dma-buf backend is in use.
    UsingDmaBufMmap = 3,
}

impl Attribute {
    /// From the numeric attribute.
    pub fn from_raw(v: u32) -> Option<Attribute> {
        Some(match v {
            1 => Attribute::UsePersistentMapping,
            2 => Attribute::SupportPinFlagForcePcie,
            3 => Attribute::UsingDmaBufMmap,
            _ => return None,
        })
    }
}

/// Which backend a [`Gdr`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum BackendKind {
    /// The gdrdrv kernel driver or a port with its ABI.
    Gdrdrv,
    /// `cuMemGetHandleForAddressRange` dma-buf fd + `mmap` (CUDA 13.3+).
    DmaBuf,
}

impl BackendKind {
    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Gdrdrv => "gdrdrv",
            BackendKind::DmaBuf => "dma-buf",
        }
    }
}

/// Which backends [`Gdr::open_with`] may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BackendChoice {
    /// gdrdrv first, then dma-buf.
    #[default]
    Auto,
    /// Only gdrdrv (or a port at [`GdrOptions::device_path`]).
    Gdrdrv,
    /// Only dma-buf.
    DmaBuf,
}

/// Configuration of the mapping path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GdrOptions {
    /// gdrdrv device node: `/dev/gdrdrv`, or a port's node such as `/dev/mtgdrdrv`.
    pub device_path: PathBuf,
    /// Allowed backends.
    pub backend: BackendChoice,
}

impl Default for GdrOptions {
    fn default() -> Self {
        GdrOptions { device_path: PathBuf::from(DEFAULT_DEVICE), backend: BackendChoice::Auto }
    }
}

impl GdrOptions {
    /// Applies `GDIO_GDR_DEVICE` (device node) and `GDRCOPY_USE_DMABUF_MMAP=1` (dma-buf only).
    pub fn with_env(mut self) -> Self {
        if let Some(p) = std::env::var_os(DEVICE_ENV).filter(|p| !p.is_empty()) {
            self.device_path = PathBuf::from(p);
        }
        if std::env::var(FORCE_DMABUF_ENV).is_ok_and(|v| v.trim() == "1") {
            self.backend = BackendChoice::DmaBuf;
        }
        self
    }
}

/// Whether one backend is usable here, and why (for `gdio check`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackendStatus {
    /// `gdrdrv` or `dma-buf`.
    pub name: String,
    /// Usable now.
    pub available: bool,
    /// What was found, or what is missing and how to get it.
    pub reason: String,
}

/// Probes every backend without keeping anything open.
pub fn probe_backends(opts: &GdrOptions) -> Vec<BackendStatus> {
    let gdrdrv = match Gdrdrv::open(&opts.device_path) {
        Ok(d) => BackendStatus {
            name: "gdrdrv".into(),
            available: true,
            reason: format!(
                "gdrdrv {} at {}",
                backend_gdrdrv::fmt_version(d.version),
                d.path().display()
            ),
        },
        Err(e) => BackendStatus { name: "gdrdrv".into(), available: false, reason: e.to_string() },
    };
    let dmabuf = match Dmabuf::open() {
        Ok(d) => BackendStatus {
            name: "dma-buf".into(),
            available: true,
            reason: format!(
                "CUDA driver API {} supports dma-buf export and CPU mmap",
                d.driver_version
            ),
        },
        Err(e) => BackendStatus { name: "dma-buf".into(), available: false, reason: e.to_string() },
    };
    vec![gdrdrv, dmabuf]
}

/// Details of a pinned range (`gdr_info_v2_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MapInfo {
    /// Aligned start of the pinned range; a mapping's first byte is this address.
    pub va: u64,
    /// Aligned length of the pinned range.
    pub mapped_size: u64,
    /// Page size of the pin (64 KiB with gdrdrv, the host page with dma-buf).
    pub page_size: u32,
    /// Deprecated upstream; 0 under dma-buf.
    pub tm_cycles: u64,
    /// Deprecated upstream; 0 under dma-buf.
    pub cycles_per_ms: u32,
    /// Whether the range is mapped now.
    pub mapped: bool,
    /// Whether the mapping is write-combining.
    pub wc_mapping: bool,
    /// The mapping type ([`MappingType::None`] when not mapped).
    pub mapping_type: MappingType,
}

// ---------------------------------------------------------------------------------------
// Process ownership: a fork child must not use the parent's handles.

static FORK_GENERATION: AtomicU64 = AtomicU64::new(0);

extern "C" fn after_fork_in_child() {
    FORK_GENERATION.fetch_add(1, Ordering::SeqCst);
}

fn fork_generation() -> u64 {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // SAFETY: registers a handler that only bumps an atomic, which is async-signal-safe.
        unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
    });
    FORK_GENERATION.load(Ordering::Relaxed)
}

// ---------------------------------------------------------------------------------------

#[derive(Debug)]
enum Backend {
    Gdrdrv(Gdrdrv),
    DmaBuf(Dmabuf),
}

#[derive(Debug)]
struct Inner {
    backend: Backend,
    generation: u64,
    pid: u32,
    handles: Mutex<HashMap<u64, Arc<Handle>>>,
    next_id: AtomicU64,
}

#[derive(Debug)]
enum PinKind {
    Gdrdrv(u64),
    DmaBuf(DmabufPin),
}

#[derive(Debug)]
struct Mapping {
    /// Address of the mapping (kept as an integer so the state stays `Send`).
    addr: usize,
    /// Length passed to `mmap`.
    len: usize,
    ty: MappingType,
}

#[derive(Debug)]
struct HandleState {
    pin: Option<PinKind>,
    mapping: Option<Mapping>,
}

#[derive(Debug)]
struct Handle {
    id: u64,
    addr: u64,
    size: u64,
    va: u64,
    mapped_size: u64,
    page_size: u32,
    state: Mutex<HandleState>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave the state inconsistent in a way that
    // matters more than refusing every later call, so recover the guard.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn einval(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidInput, msg).with_errno(libc::EINVAL)
}

impl Inner {
    fn check_process(&self) -> Result<()> {
        if fork_generation() != self.generation {
            return Err(Error::from_errno(
                libc::EACCES,
                format!("this gdr handle belongs to process {} that opened it; a forked child must open its own Gdr", self.pid),
            ));
        }
        Ok(())
    }

    fn unmap_locked(&self, st: &mut HandleState) -> Result<()> {
        let m = st.mapping.take().ok_or_else(|| einval("the handle is not mapped"))?;
        // SAFETY: addr/len are exactly what mmap returned for this handle, and the mapping
        // is removed from the state under the lock, so no copy can be using it.
        let r = unsafe { libc::munmap(m.addr as *mut libc::c_void, m.len) };
        copy::mapping_removed(m.ty);
        if r != 0 {
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
            return Err(Error::from_errno(errno, "munmap of the GPU mapping failed"));
        }
        Ok(())
    }

    fn unpin(&self, h: &Handle) -> Result<()> {
        let mut st = lock(&h.state);
        let mut first_err = None;
        if st.mapping.is_some() {
            if let Err(e) = self.unmap_locked(&mut st) {
                first_err = Some(e);
            }
        }
        match st.pin.take() {
            None => return Err(einval("the handle was already unpinned")),
            Some(PinKind::Gdrdrv(kh)) => {
                if let Backend::Gdrdrv(d) = &self.backend {
                    if let Err(e) = d.unpin(kh) {
                        first_err.get_or_insert(e);
                    }
                }
            }
            Some(PinKind::DmaBuf(p)) => drop(p),
        }
        drop(st);
        lock(&self.handles).remove(&h.id);
        first_err.map_or(Ok(()), Err)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let handles: Vec<_> = lock(&self.handles).values().cloned().collect();
        for h in handles {
            let _ = self.unpin(&h);
        }
    }
}

/// An open mapping library state (`gdr_t`). Cheap to clone; `Send + Sync`.
#[derive(Debug, Clone)]
pub struct Gdr {
    inner: Arc<Inner>,
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

/// A pinned range of GPU memory (`gdr_mh_t`), optionally mapped into the CPU. Unpinned on
/// drop (unmapping first). `Send + Sync`; copies on one handle are serialised by its lock.
#[derive(Debug)]
pub struct PinnedRange {
    gdr: Arc<Inner>,
    h: Arc<Handle>,
}

impl PinnedRange {
    /// An id unique within its [`Gdr`].
    pub fn id(&self) -> u64 {
        self.h.id
    }

    /// The address passed to pin.
    pub fn addr(&self) -> u64 {
        self.h.addr
    }

    /// The size passed to pin.
    pub fn size(&self) -> u64 {
        self.h.size
    }

    /// Offset of [`PinnedRange::addr`] inside the mapping (`addr - info.va`).
    pub fn addr_offset(&self) -> usize {
        (self.h.addr - self.h.va) as usize
    }

    fn state(&self) -> Result<MutexGuard<'_, HandleState>> {
        self.gdr.check_process()?;
        let st = lock(&self.h.state);
        if st.pin.is_none() {
            return Err(einval("the handle was unpinned"));
        }
        Ok(st)
    }

    /// `gdr_get_info_v2`.
    pub fn info(&self) -> Result<MapInfo> {
        let st = self.state()?;
        let (mut tm_cycles, mut cycles_per_ms) = (0, 0);
        if let (Backend::Gdrdrv(d), Some(PinKind::Gdrdrv(kh))) = (&self.gdr.backend, &st.pin) {
            let i = d.info(*kh)?;
            tm_cycles = i.tm_cycles;
            cycles_per_ms = i.tsc_khz;
        }
        let ty = st.mapping.as_ref().map_or(MappingType::None, |m| m.ty);
        Ok(MapInfo {
            va: self.h.va,
            mapped_size: self.h.mapped_size,
            page_size: self.h.page_size,
            tm_cycles,
            cycles_per_ms,
            mapped: ty != MappingType::None,
            wc_mapping: ty == MappingType::Wc,
            mapping_type: ty,
        })
    }

    /// `gdr_get_callback_flag`: true once the driver's free callback fired (non-persistent
    /// gdrdrv mode only; always false with persistent mapping and dma-buf).
    pub fn callback_flag(&self) -> Result<bool> {
        let st = self.state()?;
        match (&self.gdr.backend, &st.pin) {
            (Backend::Gdrdrv(d), Some(PinKind::Gdrdrv(kh))) => d.callback_flag(*kh),
            _ => Ok(false),
        }
    }

    /// Maps the whole pinned range ([`MapInfo::mapped_size`] bytes); see [`PinnedRange::map_len`].
    pub fn map(&self, flags: MapFlags) -> Result<MapInfo> {
        self.map_len(flags, self.h.mapped_size as usize)?;
        self.info()
    }

    /// `gdr_map_v2`: maps the first `len` bytes (rounded up to the host page) of the pinned
    /// range and returns the mapping's address, which corresponds to [`MapInfo::va`].
    pub fn map_len(&self, flags: MapFlags, len: usize) -> Result<*mut u8> {
        let mut st = self.state()?;
        if st.mapping.is_some() {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "the handle is already mapped: one mapping per handle, unmap it first",
            )
            .with_errno(libc::EAGAIN));
        }
        if self.h.addr != self.h.va {
            let what = match self.gdr.backend {
                Backend::Gdrdrv(_) => "64 KiB GPU page",
                Backend::DmaBuf(_) => "host page",
            };
            return Err(einval(format!(
                "pinned address 0x{:x} is not aligned to the {what} (aligned start 0x{:x}): map needs an aligned pin; over-allocate by 64 KiB - 1 and round the address up",
                self.h.addr, self.h.va
            )));
        }
        let page = host_page_size();
        let len = len
            .max(1)
            .checked_next_multiple_of(page)
            .ok_or_else(|| einval("map length overflows"))?;
        if len as u64 > self.h.mapped_size.next_multiple_of(page as u64) {
            return Err(einval(format!(
                "map length {len} exceeds the pinned {} bytes",
                self.h.mapped_size
            )));
        }
        let wanted = flags.wanted();
        let (addr, ty) = match (&self.gdr.backend, &st.pin) {
            (Backend::Gdrdrv(d), Some(PinKind::Gdrdrv(kh))) => {
                if flags != MapFlags::Default {
                    d.request_mapping_type(*kh, wanted as u32)?;
                }
                let p = d.mmap(*kh, len)?;
                let unmap = || {
                    // SAFETY: p/len were just returned by mmap and are not shared yet.
                    unsafe { libc::munmap(p as *mut libc::c_void, len) };
                };
                let ty = match d.info(*kh) {
                    Ok(i) => MappingType::from_raw(i.mapping_type).unwrap_or(MappingType::None),
                    Err(e) => {
                        unmap();
                        return Err(e);
                    }
                };
                if ty == MappingType::None {
                    unmap();
                    return Err(Error::new(
                        ErrorKind::Io,
                        "gdrdrv reports the handle unmapped right after mmap",
                    )
                    .with_errno(libc::EAGAIN));
                }
                if flags != MapFlags::Default && ty != wanted {
                    unmap();
                    return Err(einval(format!("gdrdrv gave a {} mapping, not the {} one asked for (gdrdrv may be too old)", ty.name(), wanted.name())));
                }
                (p as usize, ty)
            }
            (Backend::DmaBuf(d), Some(PinKind::DmaBuf(pin))) => {
                if flags != MapFlags::Default && wanted != pin.mapping_type {
                    return Err(einval(format!(
                        "the dma-buf backend maps this range as {}, fixed at pin time; {} cannot be requested",
                        pin.mapping_type.name(),
                        wanted.name()
                    )));
                }
                (d.mmap(pin, len)? as usize, pin.mapping_type)
            }
            _ => return Err(einval("the handle does not belong to this backend")),
        };
        st.mapping = Some(Mapping { addr, len, ty });
        copy::mapping_created(ty);
        Ok(addr as *mut u8)
    }

    /// Whether the range is mapped.
    pub fn is_mapped(&self) -> bool {
        lock(&self.h.state).mapping.is_some()
    }

    /// The mapping's address and length, when mapped. Dereferencing it is up to the caller
    /// (prefer [`PinnedRange::copy_to_mapping`] / [`PinnedRange::copy_from_mapping`]).
    pub fn mapping(&self) -> Option<(*mut u8, usize)> {
        lock(&self.h.state).mapping.as_ref().map(|m| (m.addr as *mut u8, m.len))
    }

    /// `gdr_unmap`.
    pub fn unmap(&self) -> Result<()> {
        let mut st = self.state()?;
        self.gdr.unmap_locked(&mut st)
    }

    fn usable_len(&self, m: &Mapping) -> usize {
        m.len.min(self.h.mapped_size as usize)
    }

    fn bounds(&self, st: &HandleState, offset: usize, len: usize) -> Result<(usize, MappingType)> {
        let m = st
            .mapping
            .as_ref()
            .ok_or_else(|| einval("the handle is not mapped: call map first"))?;
        let usable = self.usable_len(m);
        match offset.checked_add(len) {
            Some(end) if end <= usable => Ok((m.addr + offset, m.ty)),
            _ => Err(einval(format!("range {offset}+{len} is outside the {usable}-byte mapping"))),
        }
    }

    /// `gdr_copy_to_mapping`: copies `src` to `offset` bytes past the mapping's start
    /// ([`MapInfo::va`]) with write-combining stores and a closing fence.
    pub fn copy_to_mapping(&self, offset: usize, src: &[u8]) -> Result<()> {
        let st = self.state()?;
        let (dst, ty) = self.bounds(&st, offset, src.len())?;
        // SAFETY: [dst, dst + len) lies inside our live mapping (checked above, and the lock
        // keeps it mapped); src is a host slice, which cannot overlap device memory.
        unsafe { copy::copy_to_mapping(ty, dst as *mut u8, src.as_ptr(), src.len()) };
        Ok(())
    }

    /// `gdr_copy_from_mapping`: fills `dst` from `offset` bytes past the mapping's start.
    pub fn copy_from_mapping(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        let st = self.state()?;
        let (src, ty) = self.bounds(&st, offset, dst.len())?;
        // SAFETY: as in copy_to_mapping.
        unsafe { copy::copy_from_mapping(ty, dst.as_mut_ptr(), src as *const u8, dst.len()) };
        Ok(())
    }

    /// `gdr_unpin_buffer`: unmaps if mapped, then unpins. Later calls on this handle fail
    /// with "unpinned" (dropping it afterwards is fine).
    pub fn unpin(&self) -> Result<()> {
        self.gdr.check_process()?;
        self.gdr.unpin(&self.h)
    }
}

impl Drop for PinnedRange {
    fn drop(&mut self) {
        if self.gdr.check_process().is_ok() && lock(&self.h.state).pin.is_some() {
            let _ = self.gdr.unpin(&self.h);
        }
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
    fn probe_reports_each_backend_with_a_reason() {
        let opts = GdrOptions { device_path: "/nonexistent/gdrdrv".into(), ..Default::default() };
        let st = probe_backends(&opts);
        assert_eq!(st.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["gdrdrv", "dma-buf"]);
        assert!(!st[0].available);
        assert!(
            st[0].reason.contains("/nonexistent/gdrdrv")
                && st[0].reason.contains("gdrdrv kernel module"),
            "{}",
            st[0].reason
        );
        for s in &st {
            assert!(!s.reason.is_empty());
            eprintln!("{}: {} ({})", s.name, s.available, s.reason);
        }
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

    #[test]
    fn options_default_and_env() {
        let o = GdrOptions::default();
        assert_eq!(o.device_path, PathBuf::from("/dev/gdrdrv"));
        assert_eq!(o.backend, BackendChoice::Auto);
    }

    #[test]
    fn enums_match_upstream_numbers() {
        assert_eq!(MappingType::Wc as u32, 1);
        assert_eq!(MappingType::from_raw(3), Some(MappingType::Device));
        assert_eq!(MappingType::from_raw(4), None);
        assert_eq!(MappingType::Wc.name(), "Write Combining");
        assert_eq!(MapFlags::from_raw(2), Some(MapFlags::RequireCaching));
        assert_eq!(MapFlags::from_raw(4), None);
        assert_eq!(PinFlags::from_bits(1), Some(PinFlags::FORCE_PCIE));
        assert_eq!(PinFlags::from_bits(2), None);
        assert_eq!(Attribute::from_raw(3), Some(Attribute::UsingDmaBufMmap));
        assert_eq!(runtime_version(), (2, 6));
        assert_eq!(GPU_PAGE_SIZE, 65536);
    }

    /// Runs only where a backend and a GPU exist: pin, map, copy both ways, check the data
    /// against cuMemcpy, and the error paths.
    #[test]
    fn roundtrip_on_a_real_mapping() {
        let g = match Gdr::open() {
            Ok(g) => g,
            Err(e) => {
                eprintln!("skipped: {e}");
                return;
            }
        };
        let mem = DeviceMemory::alloc(0, 4 << 20).expect("cuMemAlloc");
        let base = mem.ptr().next_multiple_of(GPU_PAGE_SIZE);
        let size = (1u64 << 20) as usize;
        let p = g.pin(base, size as u64, PinFlags::DEFAULT).expect("pin");
        p.map(MapFlags::Default).expect("map");
        assert!(p.map(MapFlags::Default).is_err(), "second map must fail");
        let data: Vec<u8> = (0..size).map(|i| (i * 131 + 7) as u8).collect();
        p.copy_to_mapping(0, &data).unwrap();
        let mut back = vec![0u8; size];
        mem.read((base - mem.ptr()) as usize, &mut back).unwrap();
        assert_eq!(back, data);
        let mut via_map = vec![0u8; 4099];
        p.copy_from_mapping(13, &mut via_map).unwrap();
        assert_eq!(via_map, &data[13..13 + 4099]);
        p.unpin().unwrap();
    }
}
