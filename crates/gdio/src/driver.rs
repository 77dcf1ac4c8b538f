//! [`Driver`]: the context every I/O goes through. It owns the configuration, the GPU runtime,
//! the engine and the backends, and routes each request to the backend that scores highest.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};

use crate::backend::gds::GdsBackend;
use crate::backend::{compat::CompatBackend, host::HostBackend, select, Backend};
use crate::batch::Batch;
use crate::config::{Config, LoadedConfig};
use crate::engine::{Bulk, Engine};
use crate::error::{Error, ErrorKind, Result};
use crate::file::{FileHandle, FileInfo, OpenOptions};
use crate::gpu::lazy::LazyRuntime;
use crate::gpu::{self, DeviceBuffer, GpuRuntime};
use crate::memory::{BufferRef, IoBuf, IoBufMut, MemoryKind};
use crate::request::{Op, Request};
use crate::stats::{Stats, StatsSnapshot};
use crate::submit::{IoHandle, Router};
use crate::submit_group::SubmitGroup;

pub use crate::backend::select::Decision;

/// Bytes of the example request [`Driver::explain`] scores.
pub const EXPLAIN_LEN: u64 = 1 << 20;

/// Why a driver has no GPU: known when it was made, or when its lazy runtime is found.
#[derive(Debug)]
enum WhyNoGpu {
    Known(Option<String>),
    Lazy(Arc<LazyRuntime>),
}

/// The gdio context: configuration, GPU runtime, engine and backends.
#[derive(Debug)]
pub struct Driver {
    loaded: LoadedConfig,
    /// The configuration shared with every asynchronous I/O's router (cloned once, not per
    /// submission: a `Config` clone per 4 KiB request was a measurable part of its cost).
    shared_config: Arc<Config>,
    stats: Arc<Stats>,
    runtime: Arc<dyn GpuRuntime>,
    why_no_gpu: WhyNoGpu,
    engine: Arc<Engine>,
    backends: Vec<Arc<dyn Backend>>,
}

impl Driver {
    /// A driver on the best GPU runtime of this machine (CUDA, else host memory only).
    pub fn new(config: Config) -> Result<Driver> {
        Self::from_loaded(LoadedConfig::from(config))
    }

    /// A driver on the best GPU runtime, with a configuration that knows where each value came
    /// from ([`Config::load`]). With `defer_gpu_init`, the runtime is found at the first call
    /// that needs one.
    pub fn from_loaded(loaded: LoadedConfig) -> Result<Driver> {
        let huge = loaded.config().pinned_huge_pages;
        if loaded.config().defer_gpu_init {
            return Self::with_lazy_runtime(loaded, Arc::new(LazyRuntime::detect(huge)));
        }
        let (runtime, why) = gpu::detect_with(huge);
        Self::build(loaded, runtime, WhyNoGpu::Known(why), None)
    }

    /// A driver on a given runtime (for tests: [`gpu::sim::SimRuntime`]).
    pub fn with_runtime(config: Config, runtime: Arc<dyn GpuRuntime>) -> Result<Driver> {
        Self::build(LoadedConfig::from(config), runtime, WhyNoGpu::Known(None), None)
    }

    /// A driver on a runtime found when first needed (`defer_gpu_init`; tests give a
    /// [`LazyRuntime`] over a simulated one).
    pub fn with_lazy_runtime(
        config: impl Into<LoadedConfig>,
        lazy: Arc<LazyRuntime>,
    ) -> Result<Driver> {
        let runtime: Arc<dyn GpuRuntime> = lazy.clone();
        Self::build(config.into(), runtime, WhyNoGpu::Lazy(lazy), None)
    }

    /// A driver on a given runtime with the backends `make` builds on the driver's engine, in
    /// scoring order (tests put a fault-injecting fastpath before compat and host).
    pub fn with_backends(
        config: impl Into<LoadedConfig>,
        runtime: Arc<dyn GpuRuntime>,
        make: impl FnOnce(&Arc<Engine>) -> Vec<Arc<dyn Backend>>,
    ) -> Result<Driver> {
        Self::build(config.into(), runtime, WhyNoGpu::Known(None), Some(Box::new(make)))
    }

    /// The standard backends, in scoring order: gds, compat, host.
    pub fn standard_backends(engine: &Arc<Engine>, config: &Config) -> Vec<Arc<dyn Backend>> {
        vec![
            Arc::new(GdsBackend::new(engine.runtime().clone(), config)),
            Arc::new(CompatBackend::new(engine.clone())),
            Arc::new(HostBackend::new(engine.clone())),
        ]
    }

    #[allow(clippy::type_complexity)]
    fn build(
        loaded: LoadedConfig,
        runtime: Arc<dyn GpuRuntime>,
        why_no_gpu: WhyNoGpu,
        make: Option<Box<dyn FnOnce(&Arc<Engine>) -> Vec<Arc<dyn Backend>> + '_>>,
    ) -> Result<Driver> {
        let config = loaded.config();
        config.validate()?;
        let engine = Arc::new(Engine::new(runtime.clone(), config));
        let backends = match make {
            Some(make) => make(&engine),
            None => Self::standard_backends(&engine, config),
        };
        let shared_config = Arc::new(config.clone());
        Ok(Driver {
            loaded,
            shared_config,
            stats: Arc::default(),
            runtime,
            why_no_gpu,
            engine,
            backends,
        })
    }

    /// The configuration in effect.
    pub fn config(&self) -> &Config {
        self.loaded.config()
    }

    /// The configuration with the source of every value.
    pub fn loaded_config(&self) -> &LoadedConfig {
        &self.loaded
    }

    /// The backends, in scoring order.
    pub fn backends(&self) -> &[Arc<dyn Backend>] {
        &self.backends
    }

    /// Per-backend counters now: ops, bytes, errors, retries with causes, fallbacks with
    /// reasons.
    pub fn stats(&self) -> StatsSnapshot {
        self.stats.snapshot()
    }

    /// Sets every counter back to zero.
    pub fn reset_stats(&self) {
        self.stats.reset();
    }

    /// The GPU runtime.
    pub fn runtime(&self) -> &Arc<dyn GpuRuntime> {
        &self.runtime
    }

    /// Why there is no GPU runtime, when there is none (with `defer_gpu_init`, finds the
    /// runtime first).
    pub fn why_no_gpu(&self) -> Option<&str> {
        match &self.why_no_gpu {
            WhyNoGpu::Known(why) => why.as_deref(),
            WhyNoGpu::Lazy(lazy) => lazy.why_no_gpu(),
        }
    }

    /// Whether the GPU runtime has been found: always, but with `defer_gpu_init` before the
    /// first call that needed it.
    pub fn gpu_runtime_found(&self) -> bool {
        match &self.why_no_gpu {
            WhyNoGpu::Known(_) => true,
            WhyNoGpu::Lazy(lazy) => lazy.resolved(),
        }
    }

    /// The engine (for callers that want its knobs).
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Opens `path` for reading.
    pub fn open(&self, path: impl AsRef<std::path::Path>) -> Result<FileHandle> {
        FileHandle::open(path)
    }

    /// Opens `path` with `options`.
    pub fn open_with(
        &self,
        path: impl AsRef<std::path::Path>,
        options: OpenOptions,
    ) -> Result<FileHandle> {
        FileHandle::open_with(path, options)
    }

    /// Sets up GPU `ordinal` for I/O now: every engine worker allocates its stream and pinned
    /// bounce buffers, so the first read or write does not pay for them (about 10 ms on the
    /// H200 machine). Once per GPU: later calls return at once.
    pub fn prepare_gpu(&self, ordinal: usize) -> Result<()> {
        self.check_gpu(ordinal)?;
        self.engine.prepare_gpu(ordinal)
    }

    /// Whether [`Driver::prepare_gpu`] has made GPU `ordinal`'s streams and bounce buffers
    /// (they are made once per driver and GPU).
    pub fn gpu_prepared(&self, ordinal: usize) -> bool {
        self.engine.gpu_prepared(ordinal)
    }

    /// Allocates `len` bytes on GPU `ordinal`.
    pub fn alloc_device(&self, ordinal: usize, len: usize) -> Result<DeviceBuffer> {
        self.check_gpu(ordinal)?;
        DeviceBuffer::new(&self.runtime, ordinal, len)
    }

    fn check_gpu(&self, ordinal: usize) -> Result<()> {
        let n = self.runtime.device_count();
        if ordinal >= n {
            let why = match (self.why_no_gpu(), n) {
                (Some(w), _) => w.to_owned(),
                (None, n) => format!("this machine has {n} GPU(s), numbered from 0"),
            };
            return Err(Error::new(
                ErrorKind::NoGpu,
                format!("GPU {ordinal} does not exist: {why}"),
            ));
        }
        Ok(())
    }

    /// Scores a request with every backend and names the one that would serve it.
    pub fn decide(&self, req: &Request<'_>) -> Decision {
        select::decide(&self.backends, req, self.loaded.config())
    }

    /// What would serve a request on `info` (a probed path, see
    /// [`file::probe_path`](crate::file::probe::probe_path)): a [`EXPLAIN_LEN`]-byte `op` into
    /// `memory`, at an offset, size and buffer address that meet the file's DIO alignment
    /// (`aligned`) or miss it by one byte (not `aligned`). A fastpath may try to register the
    /// file first, so a registration failure shows as its reason. Needs no GPU.
    pub fn explain(&self, info: &FileInfo, op: Op, memory: MemoryKind, aligned: bool) -> Decision {
        for b in &self.backends {
            b.prepare_path(info);
        }
        let base: u64 = 1 << 40;
        let oa = u64::from(info.dio_offset_align.max(1));
        let req = if aligned {
            let len = EXPLAIN_LEN.div_ceil(oa) * oa;
            Request { op, file: info, memory, file_offset: 0, buf_addr: base, len }
        } else {
            Request { op, file: info, memory, file_offset: 1, buf_addr: base, len: EXPLAIN_LEN + 1 }
        };
        self.decide(&req)
    }

    /// Like [`Driver::explain`] on an open file (its registration is the one I/O would use).
    pub fn explain_handle(
        &self,
        file: &FileHandle,
        op: Op,
        memory: MemoryKind,
        aligned: bool,
    ) -> Decision {
        for b in &self.backends {
            b.prepare(file);
        }
        self.explain(file.info(), op, memory, aligned)
    }

    fn route(&self, op: Op, file: &FileHandle, buf: BufferRef, offset: u64) -> Result<usize> {
        file.check_range(offset, buf.len as u64)?;
        if let MemoryKind::Device { ordinal } = buf.kind {
            self.check_gpu(ordinal)?;
        }
        for b in &self.backends {
            b.prepare(file);
        }
        let req = Request {
            op,
            file: file.info(),
            memory: buf.kind,
            file_offset: offset,
            buf_addr: buf.addr,
            len: buf.len as u64,
        };
        select::run(&self.backends, &req, self.loaded.config(), &self.stats, |b| match op {
            // SAFETY: every caller of `route` built `buf` from memory it holds for the call
            // (a borrowed buffer, or a raw range the unsafe caller vouched for).
            Op::Read => unsafe { b.read(file, buf, offset) },
            // SAFETY: as above.
            Op::Write => unsafe { b.write(file, buf, offset) },
        })
    }

    fn sub(
        buf: BufferRef,
        buf_offset: usize,
        len: usize,
        file: &FileHandle,
        file_offset: u64,
    ) -> Result<BufferRef> {
        match buf_offset.checked_add(len) {
            Some(end) if end <= buf.len => {
                Ok(BufferRef { addr: buf.addr + buf_offset as u64, len, kind: buf.kind })
            }
            _ => Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "buffer of {} bytes is too short for {len} bytes at buffer offset {buf_offset}",
                    buf.len
                ),
            )
            .with_errno(libc::EINVAL)
            .with_path(file.path())
            .with_range(file_offset, len as u64)),
        }
    }

    /// Reads `len` bytes at `file_offset` of `file` into `dst` starting at `buf_offset`
    /// (cuFileRead's argument order). Returns the bytes read: fewer than `len` only when the
    /// file ends first. Device memory goes through the best GPU backend, host memory is read in
    /// place.
    pub fn read<B: IoBufMut + ?Sized>(
        &self,
        file: &FileHandle,
        file_offset: u64,
        dst: &mut B,
        buf_offset: usize,
        len: usize,
    ) -> Result<usize> {
        let whole = dst.io_ref_mut(&|a| self.runtime.classify(a));
        let buf = Self::sub(whole, buf_offset, len, file, file_offset)?;
        self.route(Op::Read, file, buf, file_offset)
    }

    /// Writes `len` bytes of `src` from `buf_offset` to `file` at `file_offset`. Returns `len`.
    pub fn write<B: IoBuf + ?Sized>(
        &self,
        file: &FileHandle,
        file_offset: u64,
        src: &B,
        buf_offset: usize,
        len: usize,
    ) -> Result<usize> {
        let whole = src.io_ref(&|a| self.runtime.classify(a));
        let buf = Self::sub(whole, buf_offset, len, file, file_offset)?;
        self.route(Op::Write, file, buf, file_offset)
    }

    /// Reads into a cudarc `CudaSlice<u8>` (after its stream has finished earlier work).
    pub fn read_cuda_slice(
        &self,
        file: &FileHandle,
        file_offset: u64,
        dst: &mut CudaSlice<u8>,
        buf_offset: usize,
        len: usize,
    ) -> Result<usize> {
        let stream = dst.stream().clone();
        stream
            .synchronize()
            .map_err(|e| gpu::cuda_error::from_driver(e, "synchronizing the slice's stream"))?;
        let ordinal = dst.ordinal();
        let total = dst.len();
        let (ptr, _sync) = dst.device_ptr_mut(&stream);
        let whole = BufferRef { addr: ptr, len: total, kind: MemoryKind::Device { ordinal } };
        let buf = Self::sub(whole, buf_offset, len, file, file_offset)?;
        self.route(Op::Read, file, buf, file_offset)
    }

    /// Writes from a cudarc `CudaSlice<u8>` (after its stream has finished earlier work).
    pub fn write_cuda_slice(
        &self,
        file: &FileHandle,
        file_offset: u64,
        src: &CudaSlice<u8>,
        buf_offset: usize,
        len: usize,
    ) -> Result<usize> {
        let stream = src.stream().clone();
        stream
            .synchronize()
            .map_err(|e| gpu::cuda_error::from_driver(e, "synchronizing the slice's stream"))?;
        let ordinal = src.ordinal();
        let total = src.len();
        let (ptr, _sync) = src.device_ptr(&stream);
        let whole = BufferRef { addr: ptr, len: total, kind: MemoryKind::Device { ordinal } };
        let buf = Self::sub(whole, buf_offset, len, file, file_offset)?;
        self.route(Op::Write, file, buf, file_offset)
    }

    fn raw(
        &self,
        addr: u64,
        len: usize,
        need: Option<bool>,
        file: &FileHandle,
        file_offset: u64,
    ) -> Result<BufferRef> {
        if addr == 0 {
            return Err(null_buffer(file, file_offset, len));
        }
        let kind = self.runtime.classify(addr);
        let wrong = match (need, kind) {
            (Some(true), MemoryKind::Device { .. }) | (Some(false), MemoryKind::Host | MemoryKind::PinnedHost) | (None, _) => None,
            (Some(true), k) => Some(format!("address 0x{addr:x} is {k} memory, but this call needs device memory (allocate it with cuMemAlloc, or call the host variant)")),
            (Some(false), k) => Some(format!("address 0x{addr:x} is {k} memory, but this call needs host memory (call the device variant)")),
        };
        if let Some(w) = wrong {
            return Err(Error::new(ErrorKind::InvalidInput, w)
                .with_errno(libc::EINVAL)
                .with_path(file.path())
                .with_range(file_offset, len as u64));
        }
        Ok(BufferRef { addr, len, kind })
    }

    /// Reads into GPU memory at device address `dptr`.
    ///
    /// # Safety
    /// `dptr..dptr+len` must be device memory allocated in this process, not freed or used by
    /// anything else until the call returns.
    pub unsafe fn read_device_ptr(
        &self,
        file: &FileHandle,
        file_offset: u64,
        dptr: u64,
        len: usize,
    ) -> Result<usize> {
        let buf = self.raw(dptr, len, Some(true), file, file_offset)?;
        self.route(Op::Read, file, buf, file_offset)
    }

    /// Writes from GPU memory at device address `dptr`.
    ///
    /// # Safety
    /// `dptr..dptr+len` must be device memory allocated in this process and stay valid until
    /// the call returns.
    pub unsafe fn write_device_ptr(
        &self,
        file: &FileHandle,
        file_offset: u64,
        dptr: u64,
        len: usize,
    ) -> Result<usize> {
        let buf = self.raw(dptr, len, Some(true), file, file_offset)?;
        self.route(Op::Write, file, buf, file_offset)
    }

    /// Reads into host memory at `ptr`.
    ///
    /// # Safety
    /// `ptr..ptr+len` must be writable host memory not accessed by anything else until the
    /// call returns.
    pub unsafe fn read_host_ptr(
        &self,
        file: &FileHandle,
        file_offset: u64,
        ptr: *mut u8,
        len: usize,
    ) -> Result<usize> {
        let buf = self.raw(ptr as u64, len, Some(false), file, file_offset)?;
        self.route(Op::Read, file, buf, file_offset)
    }

    /// Writes from host memory at `ptr`.
    ///
    /// # Safety
    /// `ptr..ptr+len` must be readable host memory that stays valid until the call returns.
    pub unsafe fn write_host_ptr(
        &self,
        file: &FileHandle,
        file_offset: u64,
        ptr: *const u8,
        len: usize,
    ) -> Result<usize> {
        let buf = self.raw(ptr as u64, len, Some(false), file, file_offset)?;
        self.route(Op::Write, file, buf, file_offset)
    }

    /// Reads into memory of any kind at `addr`, classified by the GPU driver.
    ///
    /// # Safety
    /// `addr..addr+len` must be memory of this process, valid for writes and not accessed by
    /// anything else until the call returns.
    pub unsafe fn read_raw(
        &self,
        file: &FileHandle,
        file_offset: u64,
        addr: u64,
        len: usize,
    ) -> Result<usize> {
        let buf = self.raw(addr, len, None, file, file_offset)?;
        self.route(Op::Read, file, buf, file_offset)
    }

    /// Writes from memory of any kind at `addr`, classified by the GPU driver.
    ///
    /// # Safety
    /// `addr..addr+len` must be memory of this process, valid for reads until the call returns.
    pub unsafe fn write_raw(
        &self,
        file: &FileHandle,
        file_offset: u64,
        addr: u64,
        len: usize,
    ) -> Result<usize> {
        let buf = self.raw(addr, len, None, file, file_offset)?;
        self.route(Op::Write, file, buf, file_offset)
    }

    fn router(&self) -> Router {
        Router {
            backends: self.backends.clone(),
            config: self.shared_config.clone(),
            stats: self.stats.clone(),
            runtime: self.runtime.clone(),
        }
    }

    /// Starts reading `len` bytes at `file_offset` of `file` into `dst` from `buf_offset`, and
    /// returns at once. The handle owns `dst` until the read is over: [`IoHandle::wait`] gives
    /// it back with the bytes read (fewer than `len` only at the end of the file), and
    /// dropping the handle blocks until the read has finished. Many reads may be in flight on
    /// one file and many files; they complete in any order. Routed like [`Driver::read`]: the
    /// engine backends (compat, host) run it asynchronously; a backend with its own I/O path
    /// (gds) serves it before this returns. Bad input is an error here, and `dst` is dropped.
    pub fn submit_read<B: IoBufMut + Send + 'static>(
        &self,
        file: &Arc<FileHandle>,
        file_offset: u64,
        mut dst: B,
        buf_offset: usize,
        len: usize,
    ) -> Result<IoHandle<B>> {
        let whole = dst.io_ref_mut(&|a| self.runtime.classify(a));
        let buf = Self::sub(whole, buf_offset, len, file, file_offset)?;
        // SAFETY: `dst` moves into the handle, which keeps it (at the same address, by the
        // IoBufMut contract) until the read is over, and leaks it if the handle is forgotten.
        let started = unsafe { self.router().start(Op::Read, file, buf, file_offset, None)? };
        Ok(IoHandle::new(started, self.stats.clone(), dst))
    }

    /// Starts writing `len` bytes of `src` from `buf_offset` at `file_offset`; as
    /// [`Driver::submit_read`]. The result is `len` or an error that says how many bytes of the
    /// write reached the file.
    pub fn submit_write<B: IoBuf + Send + 'static>(
        &self,
        file: &Arc<FileHandle>,
        file_offset: u64,
        src: B,
        buf_offset: usize,
        len: usize,
    ) -> Result<IoHandle<B>> {
        let whole = src.io_ref(&|a| self.runtime.classify(a));
        let buf = Self::sub(whole, buf_offset, len, file, file_offset)?;
        // SAFETY: as in `submit_read`.
        let started = unsafe { self.router().start(Op::Write, file, buf, file_offset, None)? };
        Ok(IoHandle::new(started, self.stats.clone(), src))
    }

    /// Starts `op` on memory of any kind at `addr` (classified by the GPU driver), as
    /// [`Driver::submit_read`] does for owned buffers: for the C ABI and other callers with
    /// raw pointers.
    ///
    /// # Safety
    /// `addr..addr+len` must be memory of this process valid for `op` and not accessed by
    /// anything else until the handle reports the I/O finished (`wait`, `poll`, `is_done`) or
    /// is dropped. A forgotten handle means the memory must stay valid for ever.
    pub unsafe fn submit_raw(
        &self,
        op: Op,
        file: &Arc<FileHandle>,
        file_offset: u64,
        addr: u64,
        len: usize,
    ) -> Result<IoHandle<()>> {
        // SAFETY: forwarded contract.
        unsafe { self.start_ptr(op, file, file_offset, addr, len, None) }
    }

    /// Starts `op` on `buf`, whose kind the caller vouches for (no pointer query), and calls
    /// `done` once with the result (bytes moved, or the error) when the I/O is over: on an
    /// engine worker thread, or on this thread when a backend serves the I/O synchronously.
    /// Nothing waits for it: this is the submission for front ends with completions of their
    /// own (a Python future), which leaves the engine free to gather many small reads into one
    /// copy. `done` must be quick and must not wait for other I/O. When this returns an error,
    /// `done` is never called.
    ///
    /// # Safety
    /// `buf` is memory of `buf.kind` of this process, valid for `op` and not otherwise accessed
    /// until `done` has been called; a device range lies in one allocation of that GPU.
    pub unsafe fn submit_then(
        &self,
        op: Op,
        file: &Arc<FileHandle>,
        file_offset: u64,
        buf: BufferRef,
        done: Box<dyn FnOnce(Result<usize>) + Send>,
    ) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { self.submit_then_into(op, file, file_offset, buf, done, None) }
    }

    /// A group of [`Driver::submit_then`] submissions queued for the engine's workers
    /// together (see [`SubmitGroup`]).
    pub fn submit_group(&self) -> SubmitGroup<'_> {
        SubmitGroup::new(self)
    }

    /// [`Driver::submit_then`], holding an engine job in `bulk` when one is given.
    ///
    /// # Safety
    /// As [`Driver::submit_then`].
    pub(crate) unsafe fn submit_then_into(
        &self,
        op: Op,
        file: &Arc<FileHandle>,
        file_offset: u64,
        buf: BufferRef,
        done: Box<dyn FnOnce(Result<usize>) + Send>,
        bulk: Option<&mut Bulk>,
    ) -> Result<()> {
        if buf.addr == 0 && buf.len > 0 {
            return Err(null_buffer(file, file_offset, buf.len));
        }
        // SAFETY: forwarded contract.
        unsafe { self.router().start_then(op, file, buf, file_offset, done, bulk) }
    }

    /// Starts `op` on GPU memory at device address `dptr`, as [`Driver::submit_raw`] does;
    /// memory that is not device memory is refused (as [`Driver::write_device_ptr`] refuses
    /// it) before anything starts.
    ///
    /// # Safety
    /// As [`Driver::submit_raw`], for device memory of this process.
    pub unsafe fn submit_device_ptr(
        &self,
        op: Op,
        file: &Arc<FileHandle>,
        file_offset: u64,
        dptr: u64,
        len: usize,
    ) -> Result<IoHandle<()>> {
        // SAFETY: forwarded contract.
        unsafe { self.start_ptr(op, file, file_offset, dptr, len, Some(true)) }
    }

    /// # Safety
    /// As [`Driver::submit_raw`].
    unsafe fn start_ptr(
        &self,
        op: Op,
        file: &Arc<FileHandle>,
        file_offset: u64,
        addr: u64,
        len: usize,
        need_device: Option<bool>,
    ) -> Result<IoHandle<()>> {
        let buf = self.raw(addr, len, need_device, file, file_offset)?;
        // SAFETY: forwarded contract.
        let started = unsafe { self.router().start(op, file, buf, file_offset, None)? };
        Ok(IoHandle::new(started, self.stats.clone(), ()))
    }

    /// A batch of up to `capacity` I/Os in flight, with cuFile's batch semantics (see
    /// [`Batch`]). A capacity of 0 is an error.
    pub fn batch(&self, capacity: usize) -> Result<Batch> {
        Batch::new(self.router(), capacity)
    }

    /// Reads many pieces of `file` into one buffer at once: each `(file_offset, buf_offset,
    /// len)` of `pieces` is read into `dst` at `buf_offset`, all in flight together. Returns
    /// the bytes read per piece (fewer only at the end of the file). Pieces must not overlap
    /// in `dst`; any bad piece is an error before anything is read. If a piece fails, the
    /// others still finish before the first error is returned.
    pub fn read_vectored<B: IoBufMut + ?Sized>(
        &self,
        file: &FileHandle,
        dst: &mut B,
        pieces: &[(u64, usize, usize)],
    ) -> Result<Vec<usize>> {
        let whole = dst.io_ref_mut(&|a| self.runtime.classify(a));
        let mut bufs = Vec::with_capacity(pieces.len());
        for &(off, bo, len) in pieces {
            bufs.push(Self::sub(whole, bo, len, file, off)?);
        }
        let mut order: Vec<usize> = (0..pieces.len()).collect();
        order.sort_by_key(|&i| pieces[i].1);
        for w in order.windows(2) {
            let (a, b) = (pieces[w[0]], pieces[w[1]]);
            if a.2 > 0 && b.2 > 0 && a.1 + a.2 > b.1 {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    format!("pieces overlap in the buffer: {}+{} and {}+{}", a.1, a.2, b.1, b.2),
                )
                .with_errno(libc::EINVAL)
                .with_path(file.path()));
            }
        }
        let engine = self.backends.iter().find_map(|b| {
            let e = b.engine()?;
            let req = Request {
                op: Op::Read,
                file: file.info(),
                memory: whole.kind,
                file_offset: 0,
                buf_addr: whole.addr,
                len: whole.len as u64,
            };
            (self.decide(&req).backend == Some(b.name())).then(|| (e.clone(), b.name()))
        });
        let Some((engine, name)) = engine else {
            // No engine backend serves this memory: one routed read per piece.
            return pieces
                .iter()
                .zip(bufs)
                .map(|(&(off, _, _), buf)| self.route(Op::Read, file, buf, off))
                .collect();
        };
        for (&(off, _, len), _) in pieces.iter().zip(&bufs) {
            engine.validate(Op::Read, file, len as u64, off)?;
        }
        let mut ios = Vec::with_capacity(pieces.len());
        for (&(off, _, _), buf) in pieces.iter().zip(bufs) {
            // SAFETY: `dst` and `file` stay borrowed until every I/O below is waited for (each
            // EngineIo also blocks in drop, and nothing here can forget one); the pieces do
            // not overlap.
            ios.push(unsafe { engine.submit_borrowed(Op::Read, file, buf, off) });
        }
        let mut out = Vec::with_capacity(ios.len());
        let mut first_err = None;
        for io in ios {
            match io.and_then(|io| io.wait()) {
                Ok(t) => {
                    self.stats.record_ok(name, t.bytes);
                    out.push(t.bytes as usize);
                }
                Err(e) => {
                    self.stats.record_error(name);
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    /// Enqueues `op` on the caller's GPU stream `stream` (a `CUstream`, or a
    /// [`SimRuntime`](crate::gpu::sim::SimRuntime) stream handle) with `cuFileReadAsync`'s
    /// semantics: it starts after the work queued on the stream before it, later work on the
    /// stream waits for it, and the size and offsets in `params` are read when the stream
    /// reaches it; the result (bytes, or a negative errno) lands in `*params.bytes_p`. See
    /// [`stream_io`](crate::stream_io) for every ordering guarantee. For device memory the
    /// stream must be of that GPU's context: another GPU's or context's stream is an error
    /// here. Host memory (pinned or not) is ordered on the stream's own GPU. Without a GPU
    /// (host runtime) there are no streams: on the null stream (0) an I/O on host memory runs
    /// before this returns; any other stream is an error. A NULL or misaligned pointer in
    /// `params` is an error (`InvalidInput`, EINVAL) before anything is read or queued; the
    /// result is stored atomically, so it may be polled with an atomic load.
    ///
    /// # Safety
    /// `stream` is a live stream; the `params` pointers stay valid until the stream has run the
    /// I/O; `buf_base + *buf_offset_p .. + *size_p` is memory of this process (device or host)
    /// valid for the I/O and not otherwise accessed until then.
    pub unsafe fn submit_on_stream(
        &self,
        op: Op,
        file: &Arc<FileHandle>,
        buf_base: u64,
        params: crate::stream_io::StreamIoParams,
        stream: u64,
    ) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { self.submit_on_stream_with(op, file, buf_base, params, stream, None) }
    }

    /// [`Driver::submit_on_stream`], calling `done` when the I/O has finished (on the
    /// runtime's thread, before later stream work starts) for the value stored in
    /// `*params.bytes_p`: how a front end counts the I/O and encodes its result.
    ///
    /// # Safety
    /// As [`Driver::submit_on_stream`].
    pub unsafe fn submit_on_stream_with(
        &self,
        op: Op,
        file: &Arc<FileHandle>,
        buf_base: u64,
        params: crate::stream_io::StreamIoParams,
        stream: u64,
        done: Option<crate::stream_io::StreamIoDone>,
    ) -> Result<()> {
        let kind = self.runtime.classify(buf_base);
        let ordinal = match kind {
            MemoryKind::Device { ordinal } => {
                self.check_gpu(ordinal)?;
                Some(ordinal)
            }
            // No GPU: only the null stream exists, with nothing queued on it.
            _ if self.runtime.device_count() == 0 && stream == 0 => None,
            _ if self.runtime.device_count() == 0 => {
                return Err(Error::new(
                    ErrorKind::NoGpu,
                    format!(
                        "stream 0x{stream:x} cannot be a stream of this process: {}",
                        self.why_no_gpu().unwrap_or("it has no GPU")
                    ),
                )
                .with_path(file.path()))
            }
            // Host memory on a GPU stream: ordered on that stream's GPU.
            _ => {
                // SAFETY: forwarded contract (a live stream of this runtime, or 0).
                let o = unsafe { self.runtime.stream_ordinal(stream) };
                Some(o.map_err(|e| e.with_path(file.path()))?)
            }
        };
        let req = Request {
            op,
            file: file.info(),
            memory: kind,
            file_offset: 0,
            buf_addr: buf_base,
            len: EXPLAIN_LEN,
        };
        let config = self.loaded.config();
        let engine = self.backends.iter().find_map(|b| {
            let e = b.engine()?;
            b.score(&req, config).accepts().then(|| (e.clone(), b.name()))
        });
        // Device memory: where its allocation ends, asked now (the host function that runs the
        // I/O may not call the GPU runtime) and checked against the size read then.
        let end = match kind {
            MemoryKind::Device { .. } => {
                self.runtime.device_allocation(buf_base).map(|(start, len)| start + len)
            }
            _ => None,
        };
        let Some((engine, name)) = engine else {
            return Err(Error::new(
                ErrorKind::NoBackend,
                "stream-ordered I/O runs on the compat engine, which this configuration does not allow",
            )
            .with_errno(libc::ENOTSUP)
            .with_path(file.path()));
        };
        // SAFETY: forwarded contract.
        unsafe {
            crate::stream_io::enqueue(
                &self.runtime,
                engine,
                name,
                self.stats.clone(),
                op,
                file,
                buf_base,
                kind,
                end,
                ordinal,
                params,
                stream,
                done,
            )
        }
    }
}

/// The error for a null buffer address given for `len` bytes at `file_offset` of `file`.
fn null_buffer(file: &FileHandle, file_offset: u64, len: usize) -> Error {
    Error::new(
        ErrorKind::InvalidInput,
        "null buffer address: pass the address of the memory to use",
    )
    .with_path(file.path())
    .with_range(file_offset, len as u64)
}
