//! The `gds` fastpath: NVIDIA GPUDirect Storage through libcufile, loaded at run time.
//!
//! It offers itself only where the storage→GPU DMA path can exist: the nvidia-fs kernel module
//! is loaded, or the kernel has PCI P2PDMA and `use_pci_p2pdma` is on (cuFile 12.8+). Where
//! neither holds, libcufile is not even loaded and `cuFileDriverOpen` is never called (it has
//! been seen to corrupt fd 0 on such machines).
//!
//! Each file is registered once with `cuFileHandleRegister`; a failure (for example 5027 on a
//! disk without udev data) is remembered for the file (by device and inode) and becomes the
//! reject reason of every later request on it. cuFile's own compatibility mode is switched off
//! where the library allows it (`cuFileSetParameterBool`), so a registered file really takes
//! the direct path; gdio's compat backend is the fallback.
//!
//! # References
//! - cuFile API reference, §5.1.1 `cuFileDriverOpen`, §5.2.1 `cuFileHandleRegister`,
//!   §5.2.3 `cuFileRead` (return convention: -1 ⇒ errno, other negatives ⇒ -CUfileOpError).
//! - `shared/reference/cufile-hipfile.md` §1.1, §3.1.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::{rules, Backend, Request, Score};
use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::file::{FileHandle, FileInfo};
use crate::gpu::GpuRuntime;
use crate::memory::{BufferRef, MemoryKind};

/// Library names tried, in order.
pub const LIBRARY_NAMES: &[&str] = &["libcufile.so.0", "libcufile.so"];

/// Largest byte count of one cuFileRead/cuFileWrite call (Linux `MAX_RW_COUNT`).
const MAX_CALL: usize = 0x7fff_f000;

// ---- FFI: the C types of cufile.h, exactly as the header declares them. ----

/// `CUfileError_t { CUfileOpError err; CUresult cu_err; }`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
#[allow(non_camel_case_types)]
struct CUfileError_t {
    err: c_int,
    cu_err: c_int,
}

/// The union in `CUfileDescr_t`: `{ int fd; void *handle; }`.
#[repr(C)]
#[derive(Clone, Copy)]
union CUfileDescrHandle {
    fd: c_int,
    handle: *mut c_void,
}

/// `CUfileDescr_t { CUfileFileHandleType type; union {int fd; void *handle;} handle; const CUfileFSOps_t *fs_ops; }`.
#[repr(C)]
#[allow(non_camel_case_types)]
struct CUfileDescr_t {
    type_: c_int,
    handle: CUfileDescrHandle,
    fs_ops: *const c_void,
}

/// `CU_FILE_HANDLE_TYPE_OPAQUE_FD`.
const CU_FILE_HANDLE_TYPE_OPAQUE_FD: c_int = 1;
/// `CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE` of `CUFileBoolConfigParameter_t`.
const CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE: c_int = 1;
/// `CUFILE_PARAM_USE_PCIP2PDMA` of `CUFileBoolConfigParameter_t`.
const CUFILE_PARAM_USE_PCIP2PDMA: c_int = 7;

type CUfileHandle = *mut c_void;
type DriverOpenFn = unsafe extern "C" fn() -> CUfileError_t;
type DriverCloseFn = unsafe extern "C" fn() -> CUfileError_t;
type HandleRegisterFn =
    unsafe extern "C" fn(*mut CUfileHandle, *mut CUfileDescr_t) -> CUfileError_t;
type HandleDeregisterFn = unsafe extern "C" fn(CUfileHandle);
type ReadFn =
    unsafe extern "C" fn(CUfileHandle, *mut c_void, usize, libc::off_t, libc::off_t) -> isize;
type WriteFn =
    unsafe extern "C" fn(CUfileHandle, *const c_void, usize, libc::off_t, libc::off_t) -> isize;
type SetParameterBoolFn = unsafe extern "C" fn(c_int, bool) -> CUfileError_t;

/// The name of a `CUfileOpError` code, as cufile.h spells it.
pub fn op_error_name(code: i64) -> &'static str {
    match code {
        0 => "CU_FILE_SUCCESS",
        5001 => "CU_FILE_DRIVER_NOT_INITIALIZED (nvidia-fs driver is not loaded)",
        5002 => "CU_FILE_DRIVER_INVALID_PROPS",
        5003 => "CU_FILE_DRIVER_UNSUPPORTED_LIMIT",
        5004 => "CU_FILE_DRIVER_VERSION_MISMATCH",
        5005 => "CU_FILE_DRIVER_VERSION_READ_ERROR",
        5006 => "CU_FILE_DRIVER_CLOSING",
        5007 => "CU_FILE_PLATFORM_NOT_SUPPORTED",
        5008 => "CU_FILE_IO_NOT_SUPPORTED (GPUDirect Storage not supported on current file)",
        5009 => "CU_FILE_DEVICE_NOT_SUPPORTED",
        5010 => "CU_FILE_NVFS_DRIVER_ERROR",
        5011 => "CU_FILE_CUDA_DRIVER_ERROR",
        5012 => "CU_FILE_CUDA_POINTER_INVALID",
        5013 => "CU_FILE_CUDA_MEMORY_TYPE_INVALID",
        5014 => "CU_FILE_CUDA_POINTER_RANGE_ERROR",
        5015 => "CU_FILE_CUDA_CONTEXT_MISMATCH",
        5016 => "CU_FILE_INVALID_MAPPING_SIZE",
        5017 => "CU_FILE_INVALID_MAPPING_RANGE",
        5018 => "CU_FILE_INVALID_FILE_TYPE",
        5019 => "CU_FILE_INVALID_FILE_OPEN_FLAG",
        5020 => "CU_FILE_DIO_NOT_SET",
        5022 => "CU_FILE_INVALID_VALUE",
        5023 => "CU_FILE_MEMORY_ALREADY_REGISTERED",
        5024 => "CU_FILE_MEMORY_NOT_REGISTERED",
        5025 => "CU_FILE_PERMISSION_DENIED",
        5026 => "CU_FILE_DRIVER_ALREADY_OPEN",
        5027 => "CU_FILE_HANDLE_NOT_REGISTERED (file descriptor is not registered)",
        5028 => "CU_FILE_HANDLE_ALREADY_REGISTERED",
        5029 => "CU_FILE_DEVICE_NOT_FOUND",
        5030 => "CU_FILE_INTERNAL_ERROR",
        5031 => "CU_FILE_GETNEWFD_FAILED",
        5033 => "CU_FILE_NVFS_SETUP_ERROR",
        5034 => "CU_FILE_IO_DISABLED",
        5036 => "CU_FILE_GPU_MEMORY_PINNING_FAILED",
        5043 => "CU_FILE_NOMEM_ERROR",
        5044 => "CU_FILE_IO_ERROR",
        5049 => "CU_FILE_BATCH_NOCOMPAT_ERROR",
        _ => "unknown cuFile error",
    }
}

/// The errno gdio attaches to a cuFile operation error, for the retry decision: the ones that
/// say "this path cannot serve" map to ENODEV or ENOTSUP (retried on compat), the rest to EIO.
pub fn op_error_errno(code: i64) -> i32 {
    match code {
        5001 | 5006 | 5009 | 5010 | 5029 | 5033 | 5048 => libc::ENODEV,
        5007 | 5008 | 5034 | 5049 => libc::EOPNOTSUPP,
        5012 | 5013 | 5014 | 5016 | 5017 | 5018 | 5019 | 5022 => libc::EINVAL,
        5027 => libc::EBADF,
        5043 => libc::ENOMEM,
        _ => libc::EIO,
    }
}

fn status_text(e: CUfileError_t) -> String {
    let code = i64::from(e.err);
    if code == 5011 {
        format!("{code} {} (CUresult {})", op_error_name(code), e.cu_err)
    } else {
        format!("{code} {}", op_error_name(code))
    }
}

/// The symbols gdio uses, resolved from a loaded libcufile.
struct CuFileLib {
    // Keeps the function pointers below valid.
    _lib: libloading::Library,
    name: String,
    driver_open: DriverOpenFn,
    driver_close: DriverCloseFn,
    handle_register: HandleRegisterFn,
    handle_deregister: HandleDeregisterFn,
    read: ReadFn,
    write: WriteFn,
    set_parameter_bool: Option<SetParameterBoolFn>,
}

impl std::fmt::Debug for CuFileLib {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CuFileLib").field("name", &self.name).finish()
    }
}

impl CuFileLib {
    fn load() -> std::result::Result<CuFileLib, String> {
        let mut tried = Vec::new();
        for name in LIBRARY_NAMES {
            // SAFETY: loading libcufile runs its initialisers, which only set up the library's
            // own state; nothing of ours is touched. The driver is opened later, on purpose.
            match unsafe { libloading::Library::new(*name) } {
                Ok(lib) => return Self::resolve(lib, name),
                Err(e) => tried.push(format!("{name}: {e}")),
            }
        }
        Err(format!("libcufile not found ({})", tried.join("; ")))
    }

    fn resolve(lib: libloading::Library, name: &str) -> std::result::Result<CuFileLib, String> {
        fn sym<T: Copy>(
            lib: &libloading::Library,
            name: &str,
            s: &[u8],
        ) -> std::result::Result<T, String> {
            // SAFETY: the type T given at each call below is the C signature cufile.h declares
            // for that symbol.
            unsafe { lib.get::<T>(s) }.map(|f| *f).map_err(|e| {
                format!(
                    "{name} lacks {}: {e}",
                    String::from_utf8_lossy(&s[..s.len().saturating_sub(1)])
                )
            })
        }
        let driver_close = sym::<DriverCloseFn>(&lib, name, b"cuFileDriverClose_v2\0")
            .or_else(|_| sym::<DriverCloseFn>(&lib, name, b"cuFileDriverClose\0"))?;
        Ok(CuFileLib {
            name: name.to_owned(),
            driver_open: sym(&lib, name, b"cuFileDriverOpen\0")?,
            driver_close,
            handle_register: sym(&lib, name, b"cuFileHandleRegister\0")?,
            handle_deregister: sym(&lib, name, b"cuFileHandleDeregister\0")?,
            read: sym(&lib, name, b"cuFileRead\0")?,
            write: sym(&lib, name, b"cuFileWrite\0")?,
            set_parameter_bool: sym(&lib, name, b"cuFileSetParameterBool\0").ok(),
            _lib: lib,
        })
    }
}

/// What the machine offers the gds fastpath. Detected once; tests build it by hand.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GdsPlatform {
    /// The GPU runtime is CUDA (`Err` names the runtime in use otherwise).
    pub cuda: std::result::Result<(), String>,
    /// nvidia-fs is loaded (`/proc/driver/nvidia-fs/version` or `/dev/nvidia-fs*`).
    pub nvidia_fs: bool,
    /// The kernel can do PCI P2PDMA (`CONFIG_PCI_P2PDMA` or `p2pdma_pgmap_ops`). Probed only
    /// where it could serve: `use_pci_p2pdma` on and no nvidia-fs (the probe may read all of
    /// `/proc/kallsyms`, 40–90 ms, which every process making a driver would pay).
    pub p2pdma: bool,
    /// libcufile loaded with every symbol gdio needs (its name), or why not. `Err` also when
    /// it was not tried because no DMA path exists.
    pub library: std::result::Result<String, String>,
    /// `cuFileDriverOpen` succeeded, or why not.
    pub driver: std::result::Result<(), String>,
}

impl GdsPlatform {
    /// A platform on which everything is present (for tests).
    pub fn ready() -> Self {
        GdsPlatform {
            cuda: Ok(()),
            nvidia_fs: true,
            p2pdma: false,
            library: Ok("libcufile.so.0".into()),
            driver: Ok(()),
        }
    }

    /// The platform rule: the first reason the fastpath cannot run here, in the order driver
    /// (nvidia-fs or P2PDMA), CUDA, library, driver open.
    pub fn rule(&self, config: &Config) -> Option<super::Reason> {
        if !(self.nvidia_fs || self.p2pdma && config.use_pci_p2pdma) {
            return Some(if config.use_pci_p2pdma {
                "nvidia-fs is not loaded (no /proc/driver/nvidia-fs/version, no /dev/nvidia-fs*) and the kernel has no PCI P2PDMA".into()
            } else {
                "nvidia-fs is not loaded (no /proc/driver/nvidia-fs/version, no /dev/nvidia-fs*) and PCI P2PDMA mode is off (use_pci_p2pdma=true tries the kernel's P2PDMA; `gdio check` says whether this kernel has it)".into()
            });
        }
        if let Err(why) = &self.cuda {
            return Some(why.clone().into());
        }
        if let Err(why) = &self.library {
            return Some(why.clone().into());
        }
        if let Err(why) = &self.driver {
            return Some(why.clone().into());
        }
        None
    }
}

/// True when nvidia-fs is loaded (the same probe `gdio check` prints).
pub fn nvidia_fs_loaded() -> bool {
    crate::platform::nvidia_fs().available
}

/// True when the running kernel was built with PCI P2PDMA (the same probe `gdio check` prints).
pub fn kernel_p2pdma() -> bool {
    crate::platform::pci_p2pdma().available
}

/// The scoring of the gds fastpath, as a pure function of the platform, the request, the
/// configuration and what registering the file gave (`Some(Err(reason))` for a remembered
/// failure).
pub fn score_with(
    platform: &GdsPlatform,
    registration: Option<&std::result::Result<(), String>>,
    req: &Request<'_>,
    config: &Config,
) -> Score {
    if let Some(why) = rules::config_rule(req, config) {
        return Score::reject(why);
    }
    if let Some(why) = platform.rule(config) {
        return Score::reject(why);
    }
    if let Some(why) = rules::file_rule(req.file, config) {
        return Score::reject(why);
    }
    if let Some(Err(why)) = registration {
        return Score::reject(why.clone());
    }
    if let Some(why) = rules::memory_rule(req.memory).or_else(|| rules::alignment_rule(req)) {
        return Score::reject(why);
    }
    Score::fastpath("cuFileRead/cuFileWrite: storage DMA straight to GPU memory")
}

/// A file identity: device and inode.
type FileKey = (u64, u64);

#[derive(Debug, Default)]
struct Files {
    /// Registration outcome per file (a failure is kept for the file).
    outcome: HashMap<FileKey, std::result::Result<(), String>>,
    /// Registered handles per (descriptor, file).
    handles: HashMap<(c_int, FileKey), usize>,
}

/// The gds fastpath backend.
#[derive(Debug)]
pub struct GdsBackend {
    platform: GdsPlatform,
    lib: Option<CuFileLib>,
    runtime: Arc<dyn GpuRuntime>,
    files: Mutex<Files>,
}

impl GdsBackend {
    /// Detects the platform and, only where a DMA path exists and the runtime is CUDA, loads
    /// libcufile and opens the driver. Never fails: what is missing becomes the reject reason.
    pub fn new(runtime: Arc<dyn GpuRuntime>, config: &Config) -> GdsBackend {
        let nvidia_fs = nvidia_fs_loaded();
        let p2pdma = !nvidia_fs && config.use_pci_p2pdma && kernel_p2pdma();
        let path_possible = nvidia_fs || (p2pdma && config.use_pci_p2pdma);
        // Asked only where a DMA path exists (the platform rule names the missing path first),
        // so a driver that defers finding its GPU runtime (`defer_gpu_init`) does not find it
        // here.
        let cuda = if !path_possible {
            Err("CUDA not asked: without a DMA path the fastpath needs none".to_owned())
        } else if runtime.name() == "cuda" && runtime.device_count() > 0 {
            Ok(())
        } else {
            Err(format!("the GPU runtime is {} (no CUDA GPU): gds needs CUDA", runtime.name()))
        };
        let not_tried = || {
            Err("libcufile not loaded: no DMA path (nvidia-fs or P2PDMA) or no CUDA GPU".to_owned())
        };
        let (lib, library, driver) = if path_possible && cuda.is_ok() && !config.force_compat_mode {
            match CuFileLib::load() {
                Ok(lib) => {
                    let driver = Self::open_driver(&lib, config.use_pci_p2pdma && !nvidia_fs);
                    let name = lib.name.clone();
                    (Some(lib), Ok(name), driver)
                }
                Err(e) => {
                    (None, Err(e), Err("cuFileDriverOpen not called: no libcufile".to_owned()))
                }
            }
        } else {
            (None, not_tried(), Err("cuFileDriverOpen not called".to_owned()))
        };
        let platform = GdsPlatform { cuda, nvidia_fs, p2pdma, library, driver };
        tracing::debug!(?platform, "gds platform");
        GdsBackend::with_platform(platform, runtime, lib)
    }

    fn with_platform(
        platform: GdsPlatform,
        runtime: Arc<dyn GpuRuntime>,
        lib: Option<CuFileLib>,
    ) -> GdsBackend {
        GdsBackend { platform, lib, runtime, files: Mutex::default() }
    }

    /// A gds backend on a given platform that never calls libcufile (for tests of the scoring).
    pub fn simulated(platform: GdsPlatform, runtime: Arc<dyn GpuRuntime>) -> GdsBackend {
        GdsBackend::with_platform(platform, runtime, None)
    }

    fn open_driver(lib: &CuFileLib, p2pdma: bool) -> std::result::Result<(), String> {
        if let Some(set) = lib.set_parameter_bool {
            // SAFETY: cuFileSetParameterBool takes an enum value and a bool; both are plain
            // values and the driver is not open yet (the parameter is staged for the open).
            let e = unsafe { set(CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE, false) };
            if e.err != 0 {
                tracing::debug!(
                    "cuFileSetParameterBool(ALLOW_COMPAT_MODE, false): {}",
                    status_text(e)
                );
            }
            if p2pdma {
                // SAFETY: as above.
                let e = unsafe { set(CUFILE_PARAM_USE_PCIP2PDMA, true) };
                if e.err != 0 {
                    tracing::debug!(
                        "cuFileSetParameterBool(USE_PCIP2PDMA, true): {}",
                        status_text(e)
                    );
                }
            }
        }
        // SAFETY: called only where nvidia-fs is loaded or P2PDMA is possible (see `new`);
        // takes no arguments.
        let e = unsafe { (lib.driver_open)() };
        if e.err == 0 {
            Ok(())
        } else {
            Err(format!("cuFileDriverOpen failed: {}", status_text(e)))
        }
    }

    /// The detected platform.
    pub fn platform(&self) -> &GdsPlatform {
        &self.platform
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Files> {
        self.files.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn key_of_path(path: &Path) -> Option<FileKey> {
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }

    fn key_of_fd(fd: BorrowedFd<'_>) -> Option<FileKey> {
        rustix::fs::fstat(fd).ok().map(|st| (st.st_dev, st.st_ino))
    }

    /// Registers `fd` (of file `key`) once; remembers the outcome for the file.
    fn register(
        &self,
        lib: &CuFileLib,
        fd: c_int,
        key: FileKey,
        keep: bool,
    ) -> std::result::Result<usize, String> {
        let mut files = self.lock();
        if let Some(&h) = files.handles.get(&(fd, key)) {
            return Ok(h);
        }
        if let Some(Err(why)) = files.outcome.get(&key) {
            return Err(why.clone());
        }
        let mut descr = CUfileDescr_t {
            type_: CU_FILE_HANDLE_TYPE_OPAQUE_FD,
            handle: CUfileDescrHandle { fd },
            fs_ops: std::ptr::null(),
        };
        let mut handle: CUfileHandle = std::ptr::null_mut();
        // SAFETY: `descr` and `handle` are valid for the call; `fd` is an open descriptor that
        // stays open while the handle is in use (kept handles belong to an open FileHandle;
        // trial handles are deregistered below before their descriptor closes).
        let e = unsafe { (lib.handle_register)(&mut handle, &mut descr) };
        if e.err != 0 {
            let why = format!("cuFileHandleRegister failed: {}", status_text(e));
            files.outcome.insert(key, Err(why.clone()));
            return Err(why);
        }
        files.outcome.insert(key, Ok(()));
        if keep {
            files.handles.insert((fd, key), handle as usize);
        } else {
            // SAFETY: `handle` was just registered and no I/O uses it.
            unsafe { (lib.handle_deregister)(handle) };
        }
        Ok(handle as usize)
    }

    fn handle_for(&self, file: &FileHandle) -> Result<(&CuFileLib, CUfileHandle)> {
        let fail = |why: String| {
            Error::new(ErrorKind::Unsupported, format!("gds cannot serve this file: {why}"))
                .with_errno(libc::ENODEV)
                .with_path(file.path())
        };
        let lib = self.lib.as_ref().ok_or_else(|| fail("libcufile is not loaded".into()))?;
        let fd = file.direct_fd().ok_or_else(|| fail("no O_DIRECT descriptor".into()))?;
        let key = Self::key_of_fd(fd).ok_or_else(|| fail("fstat failed".into()))?;
        let h = self.register(lib, fd.as_raw_fd(), key, true).map_err(fail)?;
        Ok((lib, h as CUfileHandle))
    }

    /// # Safety
    /// `buf` is device memory valid for the I/O until the call returns.
    unsafe fn io(
        &self,
        file: &FileHandle,
        buf: BufferRef,
        offset: u64,
        write: bool,
    ) -> Result<usize> {
        file.check_range(offset, buf.len as u64)?;
        let MemoryKind::Device { ordinal } = buf.kind else {
            return Err(Error::new(ErrorKind::InvalidInput, "gds needs device memory")
                .with_errno(libc::EINVAL));
        };
        let (lib, handle) = self.handle_for(file)?;
        self.runtime.bind_thread(ordinal)?;
        let what = if write { "cuFileWrite" } else { "cuFileRead" };
        let mut done = 0usize;
        while done < buf.len {
            let n = (buf.len - done).min(MAX_CALL);
            let off = libc::off_t::try_from(offset + done as u64).map_err(|_| {
                Error::new(ErrorKind::InvalidInput, "file offset too large")
                    .with_errno(libc::EINVAL)
            })?;
            // SAFETY: the caller of the Driver API promised `buf` is device memory of `buf.len`
            // bytes, valid and unused by others until this returns; `handle` is registered on
            // an open O_DIRECT descriptor of `file`, which outlives this call.
            let r = unsafe {
                if write {
                    (lib.write)(handle, buf.addr as *const c_void, n, off, done as libc::off_t)
                } else {
                    (lib.read)(handle, buf.addr as *mut c_void, n, off, done as libc::off_t)
                }
            };
            if r == -1 {
                let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
                return Err(Error::from_errno(errno, format!("{what} failed"))
                    .with_path(file.path())
                    .with_range(offset, buf.len as u64));
            }
            if r < 0 {
                let code = -(r as i64);
                return Err(Error::new(
                    ErrorKind::Io,
                    format!("{what} failed: {code} {}", op_error_name(code)),
                )
                .with_errno(op_error_errno(code))
                .with_driver_code(crate::error::CodeDomain::CuFile, code)
                .with_path(file.path())
                .with_range(offset, buf.len as u64));
            }
            if r == 0 {
                break;
            }
            done += r as usize;
        }
        if write {
            file.note_written_end(offset + done as u64);
        }
        Ok(done)
    }
}

impl Drop for GdsBackend {
    fn drop(&mut self) {
        let Some(lib) = &self.lib else { return };
        let files = std::mem::take(&mut *self.lock());
        for (_, h) in files.handles {
            // SAFETY: each handle was registered by us and no I/O is in flight (we are dropped).
            unsafe { (lib.handle_deregister)(h as CUfileHandle) };
        }
        if self.platform.driver.is_ok() {
            // SAFETY: the driver was opened by us; nothing uses it any more.
            let _ = unsafe { (lib.driver_close)() };
        }
    }
}

// SAFETY: the raw handles in `files` are plain numbers behind a mutex; libcufile's calls are
// thread-safe per its documentation (one handle may be used from many threads).
unsafe impl Send for GdsBackend {}
// SAFETY: as above.
unsafe impl Sync for GdsBackend {}

impl Backend for GdsBackend {
    fn name(&self) -> &'static str {
        "gds"
    }

    fn is_fastpath(&self) -> bool {
        true
    }

    fn score(&self, req: &Request<'_>, config: &Config) -> Score {
        let registration = if self.platform.rule(config).is_none() && self.lib.is_some() {
            Self::key_of_path(&req.file.path).and_then(|k| self.lock().outcome.get(&k).cloned())
        } else {
            None
        };
        score_with(&self.platform, registration.as_ref(), req, config)
    }

    fn unavailable(&self, config: &Config) -> Option<super::Reason> {
        self.platform.rule(config)
    }

    fn prepare(&self, file: &FileHandle) {
        let (Some(lib), Some(fd)) = (&self.lib, file.direct_fd()) else { return };
        if self.platform.driver.is_err() || self.platform.cuda.is_err() {
            return;
        }
        if let Some(key) = Self::key_of_fd(fd) {
            if let Err(why) = self.register(lib, fd.as_raw_fd(), key, true) {
                tracing::debug!(path = %file.path().display(), "{why}");
            }
        }
    }

    fn prepare_path(&self, info: &FileInfo) {
        let Some(lib) = &self.lib else { return };
        if self.platform.driver.is_err() {
            return;
        }
        let Some(key) = Self::key_of_path(&info.path) else { return };
        if self.lock().outcome.contains_key(&key) {
            return;
        }
        // A trial registration on a descriptor of our own, released at once (opened the
        // non-blocking way: the path may name a FIFO by now).
        let mut o = std::fs::OpenOptions::new();
        o.read(true).custom_flags(libc::O_DIRECT);
        let f = crate::file::open::open_checked(
            &info.path,
            o,
            crate::file::open::Allowed::FileOrBlockDevice,
            "trial registration",
        );
        let Ok(f) = f else { return };
        let _ = self.register(lib, f.as_raw_fd(), key, false);
    }

    unsafe fn read(&self, file: &FileHandle, dst: BufferRef, offset: u64) -> Result<usize> {
        // SAFETY: forwarded contract.
        unsafe { self.io(file, dst, offset, false) }
    }

    unsafe fn write(&self, file: &FileHandle, src: BufferRef, offset: u64) -> Result<usize> {
        // SAFETY: forwarded contract.
        unsafe { self.io(file, src, offset, true) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ffi_layouts_match_cufile_h() {
        assert_eq!(std::mem::size_of::<CUfileError_t>(), 8);
        assert_eq!(std::mem::size_of::<CUfileDescr_t>(), 24);
        assert_eq!(std::mem::offset_of!(CUfileDescr_t, handle), 8);
        assert_eq!(std::mem::offset_of!(CUfileDescr_t, fs_ops), 16);
    }

    #[test]
    fn cufile_errors_map_to_retry_errnos() {
        assert_eq!(op_error_errno(5001), libc::ENODEV);
        assert_eq!(op_error_errno(5008), libc::EOPNOTSUPP);
        assert_eq!(op_error_errno(5022), libc::EINVAL);
        assert_eq!(op_error_errno(5044), libc::EIO);
        assert!(op_error_name(5027).contains("not registered"));
    }

    #[test]
    fn platform_rule_order() {
        let c = Config::default();
        let mut p = GdsPlatform::ready();
        assert_eq!(p.rule(&c), None);
        p.library = Err("libcufile not found".into());
        p.nvidia_fs = false;
        assert!(p.rule(&c).unwrap().contains("nvidia-fs"));
        p.nvidia_fs = true;
        assert!(p.rule(&c).unwrap().contains("libcufile"));
    }

    /// The P2PDMA probe (which may read all of /proc/kallsyms) runs only where P2PDMA could
    /// serve; the reason given without it still says what to set.
    #[test]
    fn p2pdma_is_probed_only_when_use_pci_p2pdma_is_on() {
        let rt: Arc<dyn GpuRuntime> =
            Arc::new(crate::gpu::sim::SimRuntime::new(1, std::time::Duration::ZERO));
        let off = GdsBackend::new(rt.clone(), &Config::default());
        assert!(!off.platform().p2pdma);
        let why = off.platform().rule(&Config::default()).unwrap();
        if !off.platform().nvidia_fs {
            assert!(why.contains("use_pci_p2pdma=true"), "{why}");
        }
        let on_config = Config { use_pci_p2pdma: true, ..Config::default() };
        let on = GdsBackend::new(rt, &on_config);
        assert_eq!(on.platform().p2pdma, !on.platform().nvidia_fs && kernel_p2pdma());
    }
}
