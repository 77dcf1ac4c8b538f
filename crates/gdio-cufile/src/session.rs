//! The driver's life: reference-counted open and close, the [`Session`] an open creates (a
//! [`gdio::Driver`], the registered files and buffers, batches, counters), and the values
//! staged before open. Nothing here runs at load: the state is created by the first call.

use std::collections::HashMap;
use std::ffi::c_void;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};

use gdio::gpu::GpuRuntime;
use gdio::op_stats::OpStats;
use gdio::{Config, Driver, FileHandle, LoadedConfig, MemoryKind};

use crate::abi::{code, CUfileError_t};
use crate::batch::BatchTable;
use crate::in_flight::InFlight;
use crate::log::{self, Level};
use crate::params::{self, Params, Staged};
use crate::streams::StreamTable;

/// The number the next registered file gets: process-wide, so a handle kept past its
/// deregistration or its driver's last close never names a file registered later (it would,
/// if each open counted again from the same start: a stale handle would then read or write
/// another file). Far from 0 and from small integers, which a caller passing a descriptor or
/// a cookie by mistake would give.
static NEXT_HANDLE: AtomicU64 = AtomicU64::new(0x6866_0000_0001);

/// A registered file.
#[derive(Debug)]
pub struct Registered {
    /// gdio's handle (its own descriptors), shared with the I/O in flight on it.
    pub file: Arc<FileHandle>,
    /// The caller's descriptor number.
    pub fd: i32,
}

/// A registered buffer: what it is, so I/O on it skips the pointer query.
#[derive(Debug, Clone, Copy)]
pub struct BufReg {
    /// Registered length.
    pub len: usize,
    /// Kind of memory.
    pub kind: MemoryKind,
}

/// Everything an open driver holds.
#[derive(Debug)]
pub struct Session {
    /// gdio's driver.
    pub driver: Driver,
    /// Parameter values in effect (the legacy setters change some).
    pub params: Mutex<Params>,
    handles: RwLock<HashMap<u64, Arc<Registered>>>,
    buffers: RwLock<HashMap<u64, BufReg>>,
    /// Batches, by `CUfileBatchHandle_t`.
    pub batches: BatchTable,
    /// Per-call counters (stats levels 1–3).
    pub stats: OpStats,
    /// The synchronous calls' overlap, for the summary at close (INFO enabled at open only).
    pub in_flight: Option<InFlight>,
    summary_logged: AtomicBool,
}

fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|p| p.into_inner())
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|p| p.into_inner())
}

impl Session {
    /// The registered file behind a `CUfileHandle_t`.
    pub fn handle(&self, fh: *mut c_void) -> Option<Arc<Registered>> {
        read(&self.handles).get(&(fh as u64)).cloned()
    }

    /// Registers the caller's descriptor `fd`.
    pub fn register_fd(&self, fd: i32) -> Result<*mut c_void, i32> {
        if read(&self.handles).values().any(|r| r.fd == fd) {
            return Err(code::HANDLE_ALREADY_REGISTERED);
        }
        use gdio::file::from_fd::{check_fd, FdRefusal};
        match check_fd(fd) {
            Ok(_) => {}
            Err(FdRefusal::BadDescriptor) => return Err(code::INVALID_VALUE),
            Err(FdRefusal::NotAFile(_)) => return Err(code::INVALID_FILE_TYPE),
            Err(FdRefusal::UnsupportedFlags(fl)) => {
                log::log(Level::Error, || format!("fd {fd} opened with unsupported flags: {fl}"));
                return Err(code::INVALID_FILE_OPEN_FLAG);
            }
            Err(FdRefusal::Os(_)) => return Err(code::PERMISSION_DENIED),
        }
        // SAFETY: check_fd just saw `fd` open; the borrow lasts only for from_fd, which reopens
        // the file through descriptors of its own.
        let file = FileHandle::from_fd(unsafe { BorrowedFd::borrow_raw(fd) }).map_err(|e| {
            log::log(Level::Error, || format!("registering fd {fd}: {e}"));
            code::PERMISSION_DENIED
        })?;
        log::log(Level::Info, || {
            let i = file.info();
            let pages = gdio::file::TmpfsPages::probe(&i.fs)
                .map(|t| format!("; tmpfs pages: {}", t.describe()))
                .unwrap_or_default();
            format!(
                "registered fd {fd}: {} on {} ({}), O_DIRECT twin: {}{pages}",
                i.path.display(),
                i.fs.name,
                if file.is_writable() { "read-write" } else { "read-only" },
                if file.direct_fd().is_some() { "yes" } else { "no" }
            )
        });
        let mut map = write(&self.handles);
        if map.values().any(|r| r.fd == fd) {
            return Err(code::HANDLE_ALREADY_REGISTERED);
        }
        let id = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed);
        map.insert(id, Arc::new(Registered { file: Arc::new(file), fd }));
        Ok(id as *mut c_void)
    }

    /// Forgets a handle; false if it was not registered.
    pub fn deregister(&self, fh: *mut c_void) -> bool {
        write(&self.handles).remove(&(fh as u64)).is_some()
    }

    /// The registration at exactly `base`.
    pub fn buffer(&self, base: u64) -> Option<BufReg> {
        read(&self.buffers).get(&base).copied()
    }

    /// Registers `len` bytes at `base`.
    pub fn register_buffer(&self, base: u64, len: usize) -> Result<(), i32> {
        if read(&self.buffers).contains_key(&base) {
            return Err(code::MEMORY_ALREADY_REGISTERED);
        }
        let kind = self.driver.runtime().classify(base);
        if let MemoryKind::Device { ordinal } = kind {
            match self.driver.runtime().device_allocation(base) {
                Some((b, size)) if base + len as u64 > b + size => {
                    return Err(code::CUDA_POINTER_RANGE_ERROR)
                }
                Some(_) => {}
                None => return Err(code::CUDA_POINTER_INVALID),
            }
            if let Some(g) = self.stats.gpus.get(ordinal) {
                g.registrations.fetch_add(1, Ordering::Relaxed);
                g.registered_bytes.fetch_add(len as u64, Ordering::Relaxed);
            }
        }
        let mut map = write(&self.buffers);
        if map.contains_key(&base) {
            return Err(code::MEMORY_ALREADY_REGISTERED);
        }
        map.insert(base, BufReg { len, kind });
        log::log(Level::Debug, || format!("registered {len} bytes of {kind} memory at 0x{base:x}"));
        Ok(())
    }

    /// Forgets the registration at `base`.
    pub fn deregister_buffer(&self, base: u64) -> bool {
        write(&self.buffers).remove(&base).is_some()
    }

    /// Logs, once per session, at INFO, how its synchronous calls overlapped and where the
    /// engine's workers spent that time (`when`: what prompted it).
    pub fn log_summary(&self, when: &str) {
        let Some(f) = &self.in_flight else { return };
        let s = f.summary();
        if s.reads + s.writes == 0 || self.summary_logged.swap(true, Ordering::Relaxed) {
            return;
        }
        let threads = self.driver.config().threads.max(1);
        let engine = self.driver.engine().counters();
        log::log(Level::Info, || format!("{when}: {}", s.line(threads, &engine)));
    }

    fn teardown(&self) {
        self.log_summary("driver closed");
        self.batches.clear();
        write(&self.handles).clear();
        write(&self.buffers).clear();
        log::log(Level::Info, || {
            let s = self.driver.stats();
            let parts: Vec<String> = s
                .backends
                .iter()
                .map(|(name, b)| {
                    format!(
                        "{name}: {} ops, {} bytes, {} errors, fallbacks {:?}",
                        b.ops, b.bytes, b.errors, b.fallbacks
                    )
                })
                .collect();
            format!("driver closed; paths taken: {}", parts.join("; "))
        });
    }
}

/// Process-wide state: the open count, the session, staged parameters.
#[derive(Debug, Default)]
pub struct Global {
    /// `cuFileUseCount`.
    pub use_count: i64,
    /// The open session.
    pub session: Option<Arc<Session>>,
    /// Values staged before open.
    pub staged: Staged,
}

static GLOBAL: OnceLock<Mutex<Global>> = OnceLock::new();

fn global() -> MutexGuard<'static, Global> {
    GLOBAL.get_or_init(Mutex::default).lock().unwrap_or_else(|p| p.into_inner())
}

/// Registered streams (kept across opens until the last close, usable before open).
pub fn streams() -> &'static StreamTable {
    static S: OnceLock<StreamTable> = OnceLock::new();
    S.get_or_init(StreamTable::default)
}

fn runtime_override() -> &'static Mutex<Option<Arc<dyn GpuRuntime>>> {
    static R: OnceLock<Mutex<Option<Arc<dyn GpuRuntime>>>> = OnceLock::new();
    R.get_or_init(Mutex::default)
}

/// For tests (Rust only, not part of the C ABI): the next open builds its driver on `runtime`
/// (for example [`gdio::gpu::sim::SimRuntime`]) instead of the machine's; `None` restores
/// detection.
pub fn set_runtime_for_tests(runtime: Option<Arc<dyn GpuRuntime>>) {
    *runtime_override().lock().unwrap_or_else(|p| p.into_inner()) = runtime;
}

/// Stats level 0–3.
pub static STATS_LEVEL: AtomicI32 = AtomicI32::new(0);
/// Between `cuFileStatsStart` and `cuFileStatsStop`.
pub static STATS_RUNNING: AtomicBool = AtomicBool::new(false);

/// True when calls are being counted.
pub fn stats_on() -> bool {
    STATS_RUNNING.load(Ordering::Relaxed) && STATS_LEVEL.load(Ordering::Relaxed) >= 1
}

/// The open session, if any.
pub fn current() -> Option<Arc<Session>> {
    global().session.clone()
}

/// Runs `f` on the global state.
pub fn with_global<T>(f: impl FnOnce(&mut Global) -> T) -> T {
    f(&mut global())
}

/// The cuFile JSON file NVIDIA's library would read: `CUFILE_ENV_PATH_JSON`, else
/// `/etc/cufile.json` when it exists.
pub fn json_path() -> Option<std::path::PathBuf> {
    match std::env::var_os("CUFILE_ENV_PATH_JSON") {
        Some(p) if !p.is_empty() => Some(p.into()),
        _ => {
            let p = std::path::PathBuf::from("/etc/cufile.json");
            p.exists().then_some(p)
        }
    }
}

fn load_config(params: &Params) -> LoadedConfig {
    let mut vars: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let named = vars
        .iter()
        .any(|(k, v)| (k == "GDIO_CONFIG" || k == "CUFILE_ENV_PATH_JSON") && !v.is_empty());
    if !named {
        if let Some(p) = json_path() {
            vars.push(("CUFILE_ENV_PATH_JSON".into(), p.display().to_string()));
        }
    }
    let mut loaded = match Config::load_from_vars(vars.clone()) {
        Ok(l) => l,
        Err(e) => {
            log::log(Level::Error, || format!("configuration: {e}; reading the environment alone"));
            let without: Vec<_> = vars
                .into_iter()
                .filter(|(k, _)| k != "GDIO_CONFIG" && k != "CUFILE_ENV_PATH_JSON")
                .collect();
            Config::load_from_vars(without).unwrap_or_else(|e| {
                log::log(Level::Error, || format!("configuration: {e}; using the defaults"));
                LoadedConfig::defaults()
            })
        }
    };
    for p in params.apply_to_config(&mut loaded) {
        log::log(Level::Warn, || format!("parameter not applied: {p}"));
    }
    loaded
}

/// The parameters as the layers set them: defaults, then `cufile.json`
/// (`CUFILE_ENV_PATH_JSON`), then the `CUFILE_*` variables, then the values staged through the
/// parameter API.
fn layered(staged: &Staged) -> Params {
    let mut params = Params::default();
    if let Some(j) = json_path().and_then(|p| params::read_json(&p)) {
        params.apply_json(&j);
    }
    params.apply_env(|k| std::env::var(k).ok());
    params.apply_staged(staged);
    params
}

fn build_session(staged: &Staged) -> Result<Session, CUfileError_t> {
    let params = layered(staged);
    if let Some(l) = &params.strings[params::string::LOGGING_LEVEL] {
        log::set_threshold(l);
    }
    let loaded = load_config(&params);
    let forced = runtime_override().lock().unwrap_or_else(|p| p.into_inner()).clone();
    let driver = match forced {
        Some(rt) => {
            let config = loaded.config().clone();
            Driver::with_backends(loaded, rt, |e| Driver::standard_backends(e, &config))
        }
        None => Driver::from_loaded(loaded),
    };
    let driver = driver.map_err(|e| {
        log::log(Level::Error, || format!("cuFileDriverOpen: {e}"));
        CUfileError_t::code(code::INTERNAL_ERROR)
    })?;
    log::log(Level::Info, || match driver.why_no_gpu() {
        Some(w) => format!("driver open on host memory only: {w}"),
        None => format!(
            "driver open on {} ({} GPU(s))",
            driver.runtime().name(),
            driver.runtime().device_count()
        ),
    });
    let level = params.sizes[params::size::PROFILE_STATS];
    if level > 0 {
        STATS_LEVEL.store(level.min(3) as i32, Ordering::Relaxed);
        STATS_RUNNING.store(true, Ordering::Relaxed);
    }
    let limit = params.sizes[params::size::IO_BATCHSIZE].max(1) as usize;
    Ok(Session {
        driver,
        params: Mutex::new(params),
        handles: RwLock::default(),
        buffers: RwLock::default(),
        batches: BatchTable::new(limit),
        stats: OpStats::default(),
        in_flight: log::enabled(Level::Info).then(|| {
            summary_at_exit();
            InFlight::default()
        }),
        summary_logged: AtomicBool::new(false),
    })
}

/// Logs the session's summary once, at INFO, when the process exits with the driver open
/// (torch.cuda.gds and many programs never close it). Registered at the first open that keeps
/// the summary; glibc ties the handler to this library, so a `dlclose` first runs or drops it.
fn summary_at_exit() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    static PID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    extern "C" fn at_exit() {
        // A forked child inherits the handler but not the threads that may have held the
        // locks below at the fork: it says nothing.
        if std::process::id() != PID.load(Ordering::Relaxed) {
            return;
        }
        let _ = std::panic::catch_unwind(|| {
            // Another thread may hold the state at exit: then say nothing rather than wait.
            let session = match GLOBAL.get().map(Mutex::try_lock) {
                Some(Ok(g)) => g.session.clone(),
                _ => None,
            };
            if let Some(s) = session {
                s.log_summary("at exit, the driver still open");
            }
        });
    }
    ONCE.call_once(|| {
        PID.store(std::process::id(), Ordering::Relaxed);
        // SAFETY: `at_exit` is a plain function of this library that never unwinds.
        if unsafe { libc::atexit(at_exit) } != 0 {
            log::log(Level::Warn, || "no summary at exit: atexit refused".into());
        }
    });
}

/// `cuFileDriverOpen`: one more reference; the first builds the session.
pub fn open() -> CUfileError_t {
    let mut g = global();
    if g.session.is_none() {
        match build_session(&g.staged) {
            Ok(s) => g.session = Some(Arc::new(s)),
            Err(e) => return e,
        }
        // Staged values apply to this open only (cuFile's guide: staging is then cleared).
        g.staged = Staged::default();
    }
    g.use_count += 1;
    CUfileError_t::OK
}

/// The session, opening the driver implicitly (count 1) when it is closed.
pub fn ensure_open() -> Result<Arc<Session>, CUfileError_t> {
    let mut g = global();
    if let Some(s) = &g.session {
        return Ok(s.clone());
    }
    let s = Arc::new(build_session(&g.staged)?);
    g.staged = Staged::default();
    g.session = Some(s.clone());
    g.use_count = 1;
    Ok(s)
}

/// `cuFileDriverClose_v2`: one reference less; the last tears the session down.
pub fn close() -> CUfileError_t {
    let mut g = global();
    if g.use_count <= 0 {
        return CUfileError_t::code(code::DRIVER_NOT_INITIALIZED);
    }
    g.use_count -= 1;
    if g.use_count == 0 {
        if let Some(s) = g.session.take() {
            s.teardown();
        }
        streams().clear();
        STATS_RUNNING.store(false, Ordering::Relaxed);
    }
    CUfileError_t::OK
}

/// Parameter values now: the session's after open; before open, what open would set
/// (defaults, `cufile.json`, `CUFILE_*` variables, staged values), read at this call.
pub fn params_now() -> Params {
    let staged = {
        let g = global();
        match &g.session {
            Some(s) => return s.params.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            None => g.staged.clone(),
        }
    };
    layered(&staged)
}
