//! NVIDIA GPUs through the CUDA driver API, loaded at run time by cudarc.
//!
//! `libcuda.so.1` is looked for when [`CudaRuntime::new`] runs, never at build time, so one
//! binary runs on machines with and without a GPU. cudarc panics when the library is absent,
//! so presence is checked first and its absence becomes an error.

use std::collections::HashMap;
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys;
use cudarc::driver::CudaContext;

use super::cuda_gate::GatePool;
use super::{DeviceInfo, GpuRuntime, GpuStream, StreamGate};
use crate::error::{Error, ErrorKind, Result};
use crate::memory::MemoryKind;

use super::cuda_error::{check, from_driver};

/// The CUDA runtime: one retained primary context per GPU, made on first use.
#[derive(Debug)]
pub struct CudaRuntime {
    contexts: Vec<OnceLock<Arc<CudaContext>>>,
    /// Per GPU, the flags of stream-ordered I/O gates, made on first use.
    gates: Vec<OnceLock<Arc<GatePool>>>,
    driver_version: i32,
    /// Pinned buffers are huge-page memory registered with the driver (`pinned_huge_pages`),
    /// else `cuMemHostAlloc`.
    huge_pinned: bool,
    /// The pinned buffers made the huge-page way: address → mapped length.
    registered: Mutex<HashMap<usize, usize>>,
}

impl CudaRuntime {
    /// Loads libcuda, initialises the driver and counts GPUs. Fails (never panics) when the
    /// library is missing, the driver does not initialise, or there is no GPU.
    pub fn new() -> Result<CudaRuntime> {
        // SAFETY: only tries to dlopen the library under its known names.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::new(
                ErrorKind::NoGpu,
                "no CUDA driver: libcuda.so.1 was not found (install the NVIDIA driver, or in a container pass the GPU through with --gpus)",
            ));
        }
        // SAFETY: the library is present (checked above); cuInit takes flags 0.
        check(unsafe { sys::cuInit(0) }, "cuInit").map_err(|e| {
            Error::new(ErrorKind::NoGpu, format!("the CUDA driver did not initialise: {e}"))
        })?;
        let mut count = 0;
        // SAFETY: writes one int.
        check(unsafe { sys::cuDeviceGetCount(&mut count) }, "cuDeviceGetCount")?;
        if count <= 0 {
            return Err(Error::new(ErrorKind::NoGpu, "the CUDA driver loaded but reports no GPU"));
        }
        let mut driver_version = 0;
        // SAFETY: writes one int.
        check(unsafe { sys::cuDriverGetVersion(&mut driver_version) }, "cuDriverGetVersion")?;
        Ok(CudaRuntime {
            contexts: (0..count).map(|_| OnceLock::new()).collect(),
            gates: (0..count).map(|_| OnceLock::new()).collect(),
            driver_version,
            huge_pinned: true,
            registered: Mutex::new(HashMap::new()),
        })
    }

    /// Makes pinned buffers as huge-page memory registered with `cuMemHostRegister` (`true`,
    /// the default: several times cheaper to pin, as fast to copy from) or with
    /// `cuMemHostAlloc` (`false`). The `pinned_huge_pages` key.
    pub fn with_huge_pinned(mut self, on: bool) -> CudaRuntime {
        self.huge_pinned = on;
        self
    }

    /// Huge-page memory of `len` bytes registered as pinned, or `None` when it cannot be
    /// (then `cuMemHostAlloc` serves: no huge pages, a locked-memory limit, an old driver).
    fn alloc_registered(&self, len: usize) -> Option<*mut u8> {
        let (p, mapped) = super::huge_pages::map(len).ok()?;
        // SAFETY: the mapping stays until `free_pinned` unregisters and unmaps it.
        let r = unsafe {
            sys::cuMemHostRegister_v2(
                p.cast(),
                mapped,
                sys::CU_MEMHOSTREGISTER_PORTABLE | sys::CU_MEMHOSTREGISTER_DEVICEMAP,
            )
        };
        if r != sys::CUresult::CUDA_SUCCESS {
            // SAFETY: from `map`, not registered, not handed out.
            unsafe { super::huge_pages::unmap(p, mapped) };
            return None;
        }
        self.registered.lock().unwrap_or_else(|e| e.into_inner()).insert(p as usize, mapped);
        Some(p)
    }

    fn check_ordinal(&self, ordinal: usize) -> Result<()> {
        if ordinal >= self.contexts.len() {
            return Err(Error::new(
                ErrorKind::NoGpu,
                format!(
                    "GPU {ordinal} does not exist: this machine has {} GPU(s), numbered from 0",
                    self.contexts.len()
                ),
            ));
        }
        Ok(())
    }

    /// The (retained primary) context of GPU `ordinal`, the one cudarc's `CudaContext::new`
    /// gives, so gdio and cudarc users share memory and streams.
    pub fn context(&self, ordinal: usize) -> Result<Arc<CudaContext>> {
        self.check_ordinal(ordinal)?;
        if let Some(c) = self.contexts[ordinal].get() {
            return Ok(c.clone());
        }
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| from_driver(e, &format!("creating the context of GPU {ordinal}")))?;
        Ok(self.contexts[ordinal].get_or_init(|| ctx).clone())
    }

    fn bind(&self, ordinal: usize) -> Result<Arc<CudaContext>> {
        let ctx = self.context(ordinal)?;
        ctx.bind_to_thread().map_err(|e| from_driver(e, "cuCtxSetCurrent"))?;
        Ok(ctx)
    }

    /// Makes some context current for a query that any context answers (a pointer's kind or
    /// allocation: addresses are unified), without making one that does not exist yet: the
    /// thread's current context if it has one, else one gdio already holds, else a primary
    /// context another library made active (torch on the rank's own GPU), and only when there
    /// is none at all GPU 0's. Making GPU 0's context in a process that only uses GPU 1 cost a
    /// 2-rank load 0.15–0.2 s (and GPU 0 memory) in every rank but rank 0 (BENCHMARKS.md
    /// session 5).
    fn bind_any(&self) -> Result<()> {
        let mut current: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: writes one context handle.
        if unsafe { sys::cuCtxGetCurrent(&mut current) } == sys::CUresult::CUDA_SUCCESS
            && !current.is_null()
        {
            return Ok(());
        }
        if let Some(held) = self.contexts.iter().position(|c| c.get().is_some()) {
            return self.bind(held).map(drop);
        }
        for ordinal in 0..self.contexts.len() {
            let (mut dev, mut flags, mut active) = (0, 0u32, 0i32);
            // SAFETY: writes one device handle, then one flags word and one int.
            let known = unsafe {
                sys::cuDeviceGet(&mut dev, ordinal as i32) == sys::CUresult::CUDA_SUCCESS
                    && sys::cuDevicePrimaryCtxGetState(dev, &mut flags, &mut active)
                        == sys::CUresult::CUDA_SUCCESS
            };
            if known && active != 0 {
                return self.bind(ordinal).map(drop);
            }
        }
        self.bind(0).map(drop)
    }
}

fn read_sysfs(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_owned())
}

/// BAR1's size from the PCI `resource` table (line 1: start, end, flags).
fn bar1_size(bus: &str) -> Option<u64> {
    let text = read_sysfs(&format!("/sys/bus/pci/devices/{bus}/resource"))?;
    let line = text.lines().nth(1)?;
    let mut it =
        line.split_whitespace().map(|v| u64::from_str_radix(v.trim_start_matches("0x"), 16).ok());
    let (start, end) = (it.next()??, it.next()??);
    (end > start).then(|| end - start + 1)
}

impl GpuRuntime for CudaRuntime {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn device_count(&self) -> usize {
        self.contexts.len()
    }

    fn device_info(&self, ordinal: usize) -> Result<DeviceInfo> {
        self.check_ordinal(ordinal)?;
        let mut dev = 0;
        // SAFETY: writes one CUdevice; ordinal is in range.
        check(unsafe { sys::cuDeviceGet(&mut dev, ordinal as i32) }, "cuDeviceGet")?;
        let mut name = [0 as std::ffi::c_char; 256];
        // SAFETY: the buffer holds 256 chars; the driver NUL-terminates within it.
        check(unsafe { sys::cuDeviceGetName(name.as_mut_ptr(), 256, dev) }, "cuDeviceGetName")?;
        // SAFETY: NUL-terminated by the driver.
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
        let mut total = 0usize;
        // SAFETY: writes one size_t.
        check(unsafe { sys::cuDeviceTotalMem_v2(&mut total, dev) }, "cuDeviceTotalMem")?;
        let mut bus = [0 as std::ffi::c_char; 64];
        // SAFETY: the buffer holds 64 chars.
        let pci_bus_id = (unsafe { sys::cuDeviceGetPCIBusId(bus.as_mut_ptr(), 64, dev) }
            == sys::CUresult::CUDA_SUCCESS)
            // SAFETY: NUL-terminated by the driver on success.
            .then(|| unsafe { CStr::from_ptr(bus.as_ptr()) }.to_string_lossy().to_lowercase());
        let sys_path = |f: &str| {
            pci_bus_id.as_ref().and_then(|b| read_sysfs(&format!("/sys/bus/pci/devices/{b}/{f}")))
        };
        Ok(DeviceInfo {
            ordinal,
            name,
            total_memory: total as u64,
            pcie_link_speed: sys_path("current_link_speed"),
            pcie_link_width: sys_path("current_link_width").and_then(|w| w.parse().ok()),
            bar1_size: pci_bus_id
                .as_deref()
                .and_then(|b| bar1_size(b).or_else(|| super::nvml::bar1_size(b))),
            pci_bus_id,
        })
    }

    fn driver_version(&self) -> Option<i32> {
        Some(self.driver_version)
    }

    fn device_allocation(&self, addr: u64) -> Option<(u64, u64)> {
        if addr == 0 || self.bind_any().is_err() {
            return None;
        }
        let mut base: sys::CUdeviceptr = 0;
        let mut size: usize = 0;
        // SAFETY: libcuda is loaded and a context is current (bind above); the call writes two
        // integers and fails for an address CUDA does not know.
        let r = unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, addr) };
        (r == sys::CUresult::CUDA_SUCCESS).then_some((base, size as u64))
    }
    fn classify(&self, addr: u64) -> MemoryKind {
        if addr == 0 || self.bind_any().is_err() {
            return MemoryKind::Host;
        }
        let mut mem_type: u32 = 0;
        let mut managed: u32 = 0;
        let mut ordinal: i32 = -1;
        let mut attrs = [
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_IS_MANAGED,
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        ];
        let mut data: [*mut c_void; 3] = [
            (&mut mem_type as *mut u32).cast(),
            (&mut managed as *mut u32).cast(),
            (&mut ordinal as *mut i32).cast(),
        ];
        // SAFETY: three attributes, each with a pointer to a live, large-enough local.
        let r =
            unsafe { sys::cuPointerGetAttributes(3, attrs.as_mut_ptr(), data.as_mut_ptr(), addr) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return MemoryKind::Host;
        }
        if managed != 0 {
            return MemoryKind::Managed;
        }
        match mem_type {
            x if x == sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32 => {
                MemoryKind::Device { ordinal: ordinal.max(0) as usize }
            }
            x if x == sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32 => MemoryKind::PinnedHost,
            _ => MemoryKind::Host,
        }
    }

    fn alloc_device(&self, ordinal: usize, len: usize) -> Result<u64> {
        self.bind(ordinal)?;
        let mut p: sys::CUdeviceptr = 0;
        check(
            // SAFETY: writes one device pointer.
            unsafe { sys::cuMemAlloc_v2(&mut p, len.max(1)) },
            &format!("cuMemAlloc of {len} bytes on GPU {ordinal}"),
        )?;
        Ok(p)
    }

    unsafe fn free_device(&self, ordinal: usize, addr: u64) {
        if self.bind(ordinal).is_ok() {
            // SAFETY: the caller promises `addr` came from cuMemAlloc and is freed once.
            let _ = unsafe { sys::cuMemFree_v2(addr) };
        }
    }

    /// Pinned memory: huge-page memory registered with the driver
    /// ([`CudaRuntime::with_huge_pinned`], the default) where that works, else
    /// `cuMemHostAlloc`. Both are pinned for every context (PORTABLE).
    fn alloc_pinned(&self, ordinal: usize, len: usize) -> Result<*mut u8> {
        self.bind(ordinal)?;
        if self.huge_pinned {
            if let Some(p) = self.alloc_registered(len) {
                return Ok(p);
            }
        }
        let mut p: *mut c_void = std::ptr::null_mut();
        check(
            // SAFETY: writes one pointer; PORTABLE makes it pinned for every context, DEVICEMAP
            // lets kernels read it (scattered copies).
            unsafe {
                sys::cuMemHostAlloc(
                    &mut p,
                    len.max(1),
                    sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP,
                )
            },
            &format!("cuMemHostAlloc of {len} bytes"),
        )?;
        Ok(p.cast())
    }

    unsafe fn free_pinned(&self, ptr: *mut u8, _len: usize) {
        let mapped =
            self.registered.lock().unwrap_or_else(|e| e.into_inner()).remove(&(ptr as usize));
        match mapped {
            // SAFETY: the caller promises `ptr` came from `alloc_pinned` and is freed once;
            // this one was mapped and registered by `alloc_registered`. Unregistering needs a
            // current context (the dropping thread may have none; one exists: it registered).
            Some(len) => unsafe {
                let _ = self.bind_any();
                let _ = sys::cuMemHostUnregister(ptr.cast());
                super::huge_pages::unmap(ptr, len);
            },
            // SAFETY: as above; this one came from cuMemHostAlloc.
            None => unsafe {
                let _ = sys::cuMemFreeHost(ptr.cast());
            },
        }
    }

    fn new_stream(&self, ordinal: usize, slots: usize) -> Result<Box<dyn GpuStream>> {
        let ctx = self.bind(ordinal)?;
        let mut stream: sys::CUstream = std::ptr::null_mut();
        check(
            // SAFETY: writes one stream handle; the context is current.
            unsafe {
                sys::cuStreamCreate(&mut stream, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32)
            },
            "cuStreamCreate",
        )?;
        CudaStream::with_events(Arc::new(RawStream { ctx, raw: stream }), slots)
    }

    fn bind_thread(&self, ordinal: usize) -> Result<()> {
        self.bind(ordinal).map(|_| ())
    }

    unsafe fn stream_ordinal(&self, stream: u64) -> Result<usize> {
        let mut sctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: the caller promises a live stream (or 0); writes one context handle.
        let r = unsafe { sys::cuStreamGetCtx(stream as sys::CUstream, &mut sctx) };
        if r != sys::CUresult::CUDA_SUCCESS || sctx.is_null() {
            if stream == 0 {
                // The null stream of a thread without a current context: GPU 0's.
                return Ok(0);
            }
            check(r, "cuStreamGetCtx")?;
        }
        let known = (0..self.contexts.len())
            .find(|&o| self.contexts[o].get().is_some_and(|c| c.cu_ctx() == sctx));
        if let Some(o) = known {
            return Ok(o);
        }
        for o in 0..self.contexts.len() {
            if self.context(o)?.cu_ctx() == sctx {
                return Ok(o);
            }
        }
        Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "stream 0x{stream:x} belongs to a CUDA context that is no GPU's primary context, \
                 which gdio uses"
            ),
        )
        .with_errno(libc::EINVAL))
    }

    unsafe fn launch_gated_host_fn(
        &self,
        ordinal: usize,
        stream: u64,
        start: Box<dyn FnOnce(StreamGate) + Send>,
    ) -> Result<()> {
        let ctx = self.bind(ordinal)?;
        let s = stream as sys::CUstream;
        let mut sctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: the caller promises a live stream; writes one context handle.
        check(unsafe { sys::cuStreamGetCtx(s, &mut sctx) }, "cuStreamGetCtx")?;
        if sctx != ctx.cu_ctx() {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "stream 0x{stream:x} belongs to another CUDA context than GPU {ordinal}'s \
                     primary context, which gdio uses"
                ),
            )
            .with_errno(libc::EINVAL));
        }
        let pool = match self.gates[ordinal].get() {
            Some(p) => p.clone(),
            None => {
                let p = Arc::new(GatePool::new()?);
                self.gates[ordinal].get_or_init(|| p).clone()
            }
        };
        // SAFETY: the stream is live and of the current context (checked above).
        unsafe { pool.launch(s, start) }
    }

    unsafe fn register_host(
        &self,
        ordinal: usize,
        ptr: *mut u8,
        len: usize,
        read_only: bool,
    ) -> Result<()> {
        self.bind(ordinal)?;
        let flags = sys::CU_MEMHOSTREGISTER_PORTABLE
            | if read_only { sys::CU_MEMHOSTREGISTER_READ_ONLY } else { 0 };
        // SAFETY: forwarded contract: the range stays mapped until unregistered.
        check(
            unsafe { sys::cuMemHostRegister_v2(ptr.cast(), len, flags) },
            &format!("cuMemHostRegister of {len} bytes"),
        )
    }

    unsafe fn unregister_host(&self, ordinal: usize, ptr: *mut u8) -> Result<()> {
        self.bind(ordinal)?;
        // SAFETY: forwarded contract: registered, no copy in flight.
        check(unsafe { sys::cuMemHostUnregister(ptr.cast()) }, "cuMemHostUnregister")
    }
    unsafe fn copy_peer(
        &self,
        dst_ordinal: usize,
        dst: u64,
        src_ordinal: usize,
        src: u64,
        len: usize,
    ) -> Result<()> {
        let dctx = self.context(dst_ordinal)?;
        let sctx = self.bind(src_ordinal)?;
        if dst_ordinal != src_ordinal {
            // Direct access over NVLink or PCIe where the GPUs allow it (else cuMemcpyPeer
            // stages through host memory). Enabling twice reports ALREADY_ENABLED: fine.
            // SAFETY: both contexts are live primary contexts; the source one is current.
            let r = unsafe { sys::cuCtxEnablePeerAccess(dctx.cu_ctx(), 0) };
            let ok = [
                sys::CUresult::CUDA_SUCCESS,
                sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
                sys::CUresult::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
            ];
            if !ok.contains(&r) {
                check(r, "cuCtxEnablePeerAccess")?;
            }
        }
        // SAFETY: the caller promised both ranges are device memory of these GPUs, valid and
        // not written by anything else until this synchronous copy returns.
        check(
            unsafe { sys::cuMemcpyPeer(dst, dctx.cu_ctx(), src, sctx.cu_ctx(), len) },
            "cuMemcpyPeer",
        )
    }
}

type BatchV2 = unsafe extern "C" fn(
    *mut sys::CUdeviceptr,
    *mut sys::CUdeviceptr,
    *mut usize,
    usize,
    *mut sys::CUmemcpyAttributes,
    *mut usize,
    usize,
    sys::CUstream,
) -> sys::CUresult;
type BatchV1 = unsafe extern "C" fn(
    *mut sys::CUdeviceptr,
    *mut sys::CUdeviceptr,
    *mut usize,
    usize,
    *mut sys::CUmemcpyAttributes,
    *mut usize,
    usize,
    *mut usize,
    sys::CUstream,
) -> sys::CUresult;

/// The driver's batched copy entry point: `cuMemcpyBatchAsync_v2` (CUDA 13) or
/// `cuMemcpyBatchAsync` (CUDA 12.8/12.9, with a failure index).
#[derive(Clone, Copy)]
enum BatchCopy {
    V2(BatchV2),
    V1(BatchV1),
}

/// Set when the driver refused a batched copy: later groups go one copy at a time.
static BATCH_REFUSED: AtomicBool = AtomicBool::new(false);

/// The batched copy of the loaded driver, `None` when it has none (before CUDA 12.8): then a
/// batch is queued one copy at a time. Looked up once, without cudarc's loader (which panics
/// on a missing symbol).
fn batch_copy_fn() -> Option<BatchCopy> {
    static F: OnceLock<Option<BatchCopy>> = OnceLock::new();
    *F.get_or_init(|| {
        // SAFETY: the runtime only exists once libcuda loaded, so `culib` finds it; the symbol
        // types are the driver API's prototypes of these names.
        unsafe {
            let lib = sys::culib();
            if let Ok(f) = lib.get::<BatchV2>(b"cuMemcpyBatchAsync_v2\0") {
                return Some(BatchCopy::V2(*f));
            }
            lib.get::<BatchV1>(b"cuMemcpyBatchAsync\0").ok().map(|f| BatchCopy::V1(*f))
        }
    })
}

/// A CUDA stream handle, synchronized and destroyed when the last [`CudaStream`] on it is
/// dropped ([`GpuStream::fork`] puts several on one).
struct RawStream {
    ctx: Arc<CudaContext>,
    raw: sys::CUstream,
}

// SAFETY: a CUDA stream may be used from any thread once its context is current; the handle
// is only destroyed in Drop, by the last owner.
unsafe impl Send for RawStream {}
// SAFETY: as above; the driver serializes calls on one stream from several threads.
unsafe impl Sync for RawStream {}

impl Drop for RawStream {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_err() {
            return;
        }
        // SAFETY: the stream was created by `new_stream` and this is its last owner.
        unsafe {
            let _ = sys::cuStreamSynchronize(self.raw);
            let _ = sys::cuStreamDestroy_v2(self.raw);
        }
    }
}

/// A stream's marker events, shared with the [`super::Landing`]s handed out for them and
/// destroyed by the last owner (after the stream that recorded them was synchronized).
struct Events {
    /// The stream the events are recorded on (and its context).
    owner: Arc<RawStream>,
    handles: Vec<sys::CUevent>,
}

// SAFETY: CUDA events may be used from any thread once their context is current, which every
// use makes first; the handles are destroyed only in Drop, by the last owner.
unsafe impl Send for Events {}
// SAFETY: as above; querying an event from several threads at once is allowed.
unsafe impl Sync for Events {}

impl Drop for Events {
    fn drop(&mut self) {
        if self.owner.ctx.bind_to_thread().is_err() {
            return;
        }
        for ev in &self.handles {
            // SAFETY: made by `CudaStream::with_events`, destroyed once, here; the stream that
            // recorded them was synchronized when its CudaStream went (before this last owner).
            let _ = unsafe { sys::cuEventDestroy_v2(*ev) };
        }
    }
}

impl super::MarkerSource for Events {
    fn reached(&self, slot: usize, _seq: u64) -> bool {
        let Some(&ev) = self.handles.get(slot) else { return false };
        if self.owner.ctx.bind_to_thread().is_err() {
            return false;
        }
        // SAFETY: the event lives as long as `self`; querying never blocks.
        unsafe { sys::cuEventQuery(ev) == sys::CUresult::CUDA_SUCCESS }
    }
}

/// A CUDA stream with one event per marker slot (plus one for `synchronize`), queueing on
/// its own stream or, when forked, on another's.
struct CudaStream {
    /// The stream this one queues on (and its context), shared with its forks.
    owner: Arc<RawStream>,
    events: Arc<Events>,
    recorded: Vec<bool>,
    /// The progress word, once asked for: its handle and device address.
    progress: Option<(super::ProgressWord, u64)>,
}

// SAFETY: CUDA streams and events may be used from any thread once the owning context is made
// current, which every method does first.
unsafe impl Send for CudaStream {}

impl CudaStream {
    /// A stream on `owner`'s queue with `slots` markers (and one more for `synchronize`).
    fn with_events(owner: Arc<RawStream>, slots: usize) -> Result<Box<dyn GpuStream>> {
        let mut handles = Vec::new();
        for _ in 0..=slots.max(1) {
            let mut ev: sys::CUevent = std::ptr::null_mut();
            let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32
                | sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC as u32;
            // SAFETY: writes one event handle; the context is current.
            let made = check(unsafe { sys::cuEventCreate(&mut ev, flags) }, "cuEventCreate");
            if let Err(e) = made {
                // The ones made so far go with this set.
                drop(Events { owner, handles });
                return Err(e);
            }
            handles.push(ev);
        }
        let recorded = vec![false; handles.len()];
        let events = Arc::new(Events { owner: owner.clone(), handles });
        Ok(Box::new(CudaStream { owner, events, recorded, progress: None }))
    }

    fn bind(&self) -> Result<()> {
        self.owner.ctx.bind_to_thread().map_err(|e| from_driver(e, "cuCtxSetCurrent"))
    }

    /// Queues `(dst, src, len)` copies, host→device when `to_device` (else device→host), with
    /// one `cuMemcpyBatchAsync` where the driver has it and there is more than one; else, or
    /// once the driver refused a batch, one copy call each.
    ///
    /// # Safety
    /// Every entry's ranges must be valid (host side for the host, device side on this GPU)
    /// until the copies are known complete.
    unsafe fn batch_copies(&mut self, copies: &[(u64, u64, usize)], to_device: bool) -> Result<()> {
        let one_by_one = |s: &mut Self| -> Result<()> {
            for &(dst, src, len) in copies {
                // SAFETY: forwarded contract, in the direction of the batch.
                unsafe {
                    if to_device {
                        s.copy_to_device(dst, src as *const u8, len)?
                    } else {
                        s.copy_to_host(dst as *mut u8, src, len)?
                    }
                }
            }
            Ok(())
        };
        let batch = match batch_copy_fn() {
            Some(f) if copies.len() > 1 && !BATCH_REFUSED.load(Ordering::Relaxed) => f,
            _ => return one_by_one(self),
        };
        self.bind()?;
        let mut dsts: Vec<sys::CUdeviceptr> = copies.iter().map(|c| c.0).collect();
        let mut srcs: Vec<sys::CUdeviceptr> = copies.iter().map(|c| c.1).collect();
        let mut sizes: Vec<usize> = copies.iter().map(|c| c.2).collect();
        let host =
            sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST, id: 0 };
        let device = sys::CUmemLocation {
            type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: self.owner.ctx.ordinal() as i32,
        };
        let (src_loc, dst_loc) = if to_device { (host, device) } else { (device, host) };
        let mut attrs = sys::CUmemcpyAttributes {
            srcAccessOrder: sys::CUmemcpySrcAccessOrder::CU_MEMCPY_SRC_ACCESS_ORDER_STREAM,
            srcLocHint: src_loc,
            dstLocHint: dst_loc,
            flags: 0,
        };
        let mut attr_idx = 0usize;
        let n = copies.len();
        let (d, s, z, a, ai) = (
            dsts.as_mut_ptr(),
            srcs.as_mut_ptr(),
            sizes.as_mut_ptr(),
            &mut attrs as *mut sys::CUmemcpyAttributes,
            &mut attr_idx as *mut usize,
        );
        let r = match batch {
            // SAFETY: `n` entries in each array, one attribute applying from entry 0; the
            // ranges are valid until the copies complete (forwarded contract).
            BatchCopy::V2(f) => unsafe { f(d, s, z, n, a, ai, 1, self.owner.raw) },
            BatchCopy::V1(f) => {
                let mut fail = usize::MAX;
                // SAFETY: as above; `fail` receives the index of a failing copy.
                unsafe { f(d, s, z, n, a, ai, 1, &mut fail, self.owner.raw) }
            }
        };
        if let Err(e) = check(r, &format!("cuMemcpyBatchAsync of {n} copies")) {
            // The driver refused the batched call: queue the copies one by one from now on.
            // Copies are idempotent (same source, same destination, the source untouched until
            // the group's marker), so any the refused call did queue may safely run twice.
            BATCH_REFUSED.store(true, Ordering::Relaxed);
            tracing::warn!(error = %e, "cuMemcpyBatchAsync refused; copying one piece at a time");
            return one_by_one(self);
        }
        Ok(())
    }
}

impl GpuStream for CudaStream {
    unsafe fn copy_to_device(&mut self, dst: u64, src: *const u8, len: usize) -> Result<()> {
        self.bind()?;
        // SAFETY: forwarded contract.
        check(
            unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src.cast(), len, self.owner.raw) },
            "cuMemcpyHtoDAsync",
        )
    }
    unsafe fn copy_to_device_batch(&mut self, copies: &[(u64, *const u8, usize)]) -> Result<()> {
        let raw: Vec<(u64, u64, usize)> =
            copies.iter().map(|&(d, s, n)| (d, s as u64, n)).collect();
        // SAFETY: forwarded contract: host sources, device destinations.
        unsafe { self.batch_copies(&raw, true) }
    }
    unsafe fn copy_to_device_scattered(
        &mut self,
        src: *const u8,
        len: usize,
        pieces: &[(u64, u32, u32)],
    ) -> Result<bool> {
        self.bind()?;
        super::check_pieces(len, pieces)?;
        if let Some(f) = super::cuda_scatter::function(&self.owner.ctx) {
            // SAFETY: forwarded contract; the pieces lie inside `len` (checked above).
            if unsafe { super::cuda_scatter::queue(f, self.owner.raw, src, pieces)? } {
                return Ok(true);
            }
        }
        // No kernel, or memory the GPU cannot read in place: a copy per piece.
        let copies = super::piece_copies(src, len, pieces)?;
        // SAFETY: forwarded contract, per piece.
        unsafe { self.copy_to_device_batch(&copies) }.map(|()| false)
    }
    unsafe fn copy_to_host(&mut self, dst: *mut u8, src: u64, len: usize) -> Result<()> {
        self.bind()?;
        // SAFETY: forwarded contract.
        check(
            unsafe { sys::cuMemcpyDtoHAsync_v2(dst.cast(), src, len, self.owner.raw) },
            "cuMemcpyDtoHAsync",
        )
    }
    unsafe fn copy_within_device(&mut self, dst: u64, src: u64, len: usize) -> Result<()> {
        self.bind()?;
        // SAFETY: forwarded contract.
        check(
            unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, len, self.owner.raw) },
            "cuMemcpyDtoDAsync",
        )
    }
    unsafe fn copy_to_host_batch(&mut self, copies: &[(*mut u8, u64, usize)]) -> Result<()> {
        let raw: Vec<(u64, u64, usize)> =
            copies.iter().map(|&(d, s, n)| (d as u64, s, n)).collect();
        // SAFETY: forwarded contract: device sources, host destinations.
        unsafe { self.batch_copies(&raw, false) }
    }
    fn record(&mut self, slot: usize) -> Result<()> {
        self.bind()?;
        let ev = self.events.handles[slot];
        // SAFETY: the event and stream belong to the current context.
        check(unsafe { sys::cuEventRecord(ev, self.owner.raw) }, "cuEventRecord")?;
        self.recorded[slot] = true;
        Ok(())
    }
    fn wait(&mut self, slot: usize) -> Result<()> {
        if !self.recorded[slot] {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: the event was recorded on this stream.
        check(unsafe { sys::cuEventSynchronize(self.events.handles[slot]) }, "cuEventSynchronize")
    }
    fn query(&mut self, slot: usize) -> Result<bool> {
        if !self.recorded[slot] {
            return Ok(true);
        }
        self.bind()?;
        // SAFETY: the event was recorded on this stream.
        let r = unsafe { sys::cuEventQuery(self.events.handles[slot]) };
        if r == sys::CUresult::CUDA_ERROR_NOT_READY {
            return Ok(false);
        }
        check(r, "cuEventQuery").map(|_| true)
    }
    fn synchronize(&mut self) -> Result<()> {
        let last = self.events.handles.len() - 1;
        self.record(last)?;
        self.wait(last)
    }
    fn slots(&self) -> usize {
        self.events.handles.len() - 1
    }
    fn landing(&mut self, slot: usize) -> Option<super::Landing> {
        let recorded = *self.recorded.get(slot)?;
        recorded.then(|| {
            let events: Arc<dyn super::MarkerSource> = self.events.clone();
            super::Landing::new(events, slot, 0, self.owner.raw as usize)
        })
    }
    fn fork(&mut self, slots: usize) -> Result<Box<dyn GpuStream>> {
        self.bind()?;
        CudaStream::with_events(self.owner.clone(), slots)
    }
    fn notify(&mut self, f: Box<dyn FnOnce() + Send>) -> Result<()> {
        self.bind()?;
        let user = Box::into_raw(Box::new(f));
        // SAFETY: `trampoline` takes back and runs the box behind `user` exactly once, when the
        // stream reaches it; the stream is live (destroyed only in Drop, after a synchronize).
        let r = unsafe {
            sys::cuLaunchHostFunc(self.owner.raw, Some(super::cuda_gate::trampoline), user.cast())
        };
        if let Err(e) = check(r, "cuLaunchHostFunc (completion callback)") {
            // SAFETY: the launch failed, so the trampoline never runs: the box is still ours.
            drop(unsafe { Box::from_raw(user) });
            return Err(e);
        }
        Ok(())
    }
    fn progress(&mut self) -> Result<Option<super::ProgressWord>> {
        if self.progress.is_none() {
            self.bind()?;
            self.progress = Some(super::cuda_progress::new_word(&self.owner.ctx)?);
        }
        Ok(self.progress.as_ref().map(|(w, _)| w.clone()))
    }
    fn signal(&mut self, value: u32) -> Result<()> {
        let Some((_, dev)) = self.progress else {
            return Err(Error::new(ErrorKind::Gpu, "signal before the progress word was made"));
        };
        self.bind()?;
        // SAFETY: the stream is live; the word lives as long as this stream's handle, which
        // Drop keeps until after the stream is synchronized.
        unsafe { super::cuda_progress::signal(self.owner.raw, dev, value) }
    }
}

impl Drop for CudaStream {
    fn drop(&mut self) {
        if self.bind().is_err() {
            return;
        }
        // SAFETY: the stream (kept alive by `owner`) drains: no copy from this stream's buffers
        // and no write of its progress word is left. Its events go with their last owner
        // (`Events`, after this), the stream itself with its last owner.
        unsafe {
            let _ = sys::cuStreamSynchronize(self.owner.raw);
        }
    }
}
