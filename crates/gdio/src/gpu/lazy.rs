//! A GPU runtime found at the first call that needs one (`defer_gpu_init`): loading libcuda and
//! `cuInit` cost a fixed fraction of a second on a GPU machine, which a process that only
//! reads files into host memory (a safetensors load onto the CPU, `gdio.CuFile` into NumPy
//! arrays) should not pay. Until then, host memory is told apart from GPU memory without CUDA:
//! no CUDA memory can exist in a process that has not loaded libcuda.

use std::sync::{Arc, OnceLock};

use super::{DeviceInfo, GpuRuntime, GpuStream, StreamGate};
use crate::error::Result;
use crate::memory::MemoryKind;

/// What finds the runtime: the runtime, and why it is not CUDA when it is not.
pub type Resolve = Box<dyn Fn() -> (Arc<dyn GpuRuntime>, Option<String>) + Send + Sync>;

/// True when memory of the runtime [`Resolve`] would find may already exist in this process.
pub type MemoryMayExist = Box<dyn Fn() -> bool + Send + Sync>;

/// A [`GpuRuntime`] that finds the real one the first time it is asked something only the real
/// one can answer, and hands every call to it from then on.
pub struct LazyRuntime {
    resolve: Resolve,
    memory_may_exist: MemoryMayExist,
    found: OnceLock<(Arc<dyn GpuRuntime>, Option<String>)>,
}

impl LazyRuntime {
    /// The machine's best runtime ([`super::detect_with`]), found when first needed.
    pub fn detect(huge_pinned: bool) -> LazyRuntime {
        LazyRuntime::new(Box::new(move || super::detect_with(huge_pinned)), Box::new(cuda_loaded))
    }

    /// A runtime `resolve` finds when first needed; until then an address is host memory
    /// unless `memory_may_exist` says memory of that runtime may exist (tests give a
    /// simulated runtime and their own answer).
    pub fn new(resolve: Resolve, memory_may_exist: MemoryMayExist) -> LazyRuntime {
        LazyRuntime { resolve, memory_may_exist, found: OnceLock::new() }
    }

    /// Whether the runtime has been found.
    pub fn resolved(&self) -> bool {
        self.found.get().is_some()
    }

    /// Why the runtime found is not CUDA, when it is not (finds it first).
    pub fn why_no_gpu(&self) -> Option<&str> {
        self.found().1.as_deref()
    }

    fn found(&self) -> &(Arc<dyn GpuRuntime>, Option<String>) {
        self.found.get_or_init(|| {
            let start = std::time::Instant::now();
            let found = (self.resolve)();
            tracing::debug!(runtime = found.0.name(), took = ?start.elapsed(), "GPU runtime found");
            found
        })
    }

    fn rt(&self) -> &dyn GpuRuntime {
        &*self.found().0
    }
}

impl std::fmt::Debug for LazyRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.found.get() {
            Some((rt, _)) => f.debug_tuple("LazyRuntime").field(rt).finish(),
            None => f.write_str("LazyRuntime(not yet found)"),
        }
    }
}

/// True when libcuda is loaded in this process (by gdio or by anyone else: torch, CuPy, a
/// cuFile client). Without it there is neither device memory nor CUDA-pinned host memory. The
/// loader matches the name against each loaded library's SONAME too, so a libcuda opened as
/// `libcuda.so` is found.
fn cuda_loaded() -> bool {
    // SAFETY: a NUL-terminated name; RTLD_NOLOAD loads nothing and runs no constructor, it only
    // returns a new reference to a library already loaded, which is dropped at once.
    unsafe {
        let h = libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD);
        if h.is_null() {
            return false;
        }
        libc::dlclose(h);
        true
    }
}

impl GpuRuntime for LazyRuntime {
    fn name(&self) -> &'static str {
        self.rt().name()
    }
    fn device_count(&self) -> usize {
        self.rt().device_count()
    }
    fn device_info(&self, ordinal: usize) -> Result<DeviceInfo> {
        self.rt().device_info(ordinal)
    }
    fn driver_version(&self) -> Option<i32> {
        self.rt().driver_version()
    }
    fn classify(&self, addr: u64) -> MemoryKind {
        if self.resolved() || (self.memory_may_exist)() {
            self.rt().classify(addr)
        } else {
            MemoryKind::Host
        }
    }
    fn alloc_device(&self, ordinal: usize, len: usize) -> Result<u64> {
        self.rt().alloc_device(ordinal, len)
    }
    unsafe fn free_device(&self, ordinal: usize, addr: u64) {
        // SAFETY: forwarded contract (the address came from the found runtime).
        unsafe { self.rt().free_device(ordinal, addr) }
    }
    fn alloc_pinned(&self, ordinal: usize, len: usize) -> Result<*mut u8> {
        self.rt().alloc_pinned(ordinal, len)
    }
    unsafe fn free_pinned(&self, ptr: *mut u8, len: usize) {
        // SAFETY: forwarded contract.
        unsafe { self.rt().free_pinned(ptr, len) }
    }
    fn new_stream(&self, ordinal: usize, slots: usize) -> Result<Box<dyn GpuStream>> {
        self.rt().new_stream(ordinal, slots)
    }
    fn bind_thread(&self, ordinal: usize) -> Result<()> {
        self.rt().bind_thread(ordinal)
    }
    unsafe fn register_host(
        &self,
        ordinal: usize,
        ptr: *mut u8,
        len: usize,
        read_only: bool,
    ) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { self.rt().register_host(ordinal, ptr, len, read_only) }
    }
    fn device_allocation(&self, addr: u64) -> Option<(u64, u64)> {
        if self.resolved() || (self.memory_may_exist)() {
            self.rt().device_allocation(addr)
        } else {
            None
        }
    }
    unsafe fn launch_gated_host_fn(
        &self,
        ordinal: usize,
        stream: u64,
        start: Box<dyn FnOnce(StreamGate) + Send>,
    ) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { self.rt().launch_gated_host_fn(ordinal, stream, start) }
    }
    unsafe fn stream_ordinal(&self, stream: u64) -> Result<usize> {
        // SAFETY: forwarded contract.
        unsafe { self.rt().stream_ordinal(stream) }
    }
    unsafe fn unregister_host(&self, ordinal: usize, ptr: *mut u8) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { self.rt().unregister_host(ordinal, ptr) }
    }
    unsafe fn copy_peer(
        &self,
        dst_ordinal: usize,
        dst: u64,
        src_ordinal: usize,
        src: u64,
        len: usize,
    ) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { self.rt().copy_peer(dst_ordinal, dst, src_ordinal, src, len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::sim::SimRuntime;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn found_once_at_the_first_call_that_needs_it() {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        let lazy = LazyRuntime::new(
            Box::new(move || {
                c.fetch_add(1, Ordering::SeqCst);
                (Arc::new(SimRuntime::new(2, std::time::Duration::ZERO)), None)
            }),
            Box::new(|| false),
        );
        let host = [0u8; 64];
        assert_eq!(lazy.classify(host.as_ptr() as u64), MemoryKind::Host);
        assert_eq!(lazy.device_allocation(host.as_ptr() as u64), None);
        assert!(!lazy.resolved() && calls.load(Ordering::SeqCst) == 0, "{lazy:?}");
        let d = lazy.alloc_device(1, 4096).unwrap();
        assert!(lazy.resolved());
        assert_eq!(lazy.classify(d + 10), MemoryKind::Device { ordinal: 1 });
        assert_eq!((lazy.name(), lazy.device_count(), lazy.why_no_gpu()), ("sim", 2, None));
        // SAFETY: `d` came from this runtime's alloc_device on GPU 1.
        unsafe { lazy.free_device(1, d) };
        assert_eq!(calls.load(Ordering::SeqCst), 1, "found once");
    }

    #[test]
    fn an_address_is_asked_of_the_runtime_where_its_memory_may_exist() {
        let lazy = LazyRuntime::new(
            Box::new(|| (Arc::new(SimRuntime::new(1, std::time::Duration::ZERO)), None)),
            Box::new(|| true),
        );
        assert_eq!(lazy.classify(0x1000), MemoryKind::Host);
        assert!(lazy.resolved(), "asking about an address found the runtime");
    }

    #[test]
    fn this_process_without_a_gpu_has_not_loaded_libcuda() {
        // The test binary links no CUDA; on the build machine nothing loads libcuda.
        if std::path::Path::new("/dev/nvidiactl").exists() {
            return;
        }
        let lazy = LazyRuntime::detect(false);
        assert_eq!(lazy.classify(0x1000), MemoryKind::Host);
        assert!(!lazy.resolved());
        assert!(lazy.why_no_gpu().is_some() || lazy.name() == "cuda");
    }
}
