//! `libcufile.so.0`: the C ABI of NVIDIA's `cufile.h` 1.15 (all 43 public functions, same
//! signatures, struct layouts, error numbers and return conventions), translated onto gdio.
//!
//! Programs that speak cuFile (KvikIO, `torch.cuda.gds`, cuda-python, DALI, C programs linked
//! with `-lcufile`) run on it unchanged, on any Linux filesystem, without nvidia-fs, udev or
//! libmount. What differs from NVIDIA's, on purpose:
//!
//! - loading it does nothing (no thread, no GPU, no config read): everything starts at the
//!   first call;
//! - no panic crosses the ABI (every export runs under `catch_unwind`; a panic returns
//!   `INTERNAL_ERROR`), and NULL or stale handles and out-pointers give errors;
//! - `cuFileDriverGetProperties` reports what was set (legacy setters and staged parameters);
//!   `nvfs.major/minor` stay 0.0: there is no nvidia-fs;
//! - POSIX pool slabs are staged and reported, never allocated (gdio has its own pool).
//!
//! Batch I/O runs on gdio's engine ([`gdio::Batch`]: entries in flight while the caller goes
//! on) and `cuFileReadAsync`/`cuFileWriteAsync` on its stream-ordered I/O
//! ([`gdio::Driver::submit_on_stream`]); this crate keeps only the ABI's bookkeeping (batch ids,
//! registered streams and their flags, error encodings).

// The exported functions keep NVIDIA's safe-looking C prototypes; every pointer is checked for
// NULL, and handles are looked up in tables, before use.
#![allow(clippy::not_unsafe_ptr_arg_deref)]
#![allow(non_snake_case, non_camel_case_types)]

pub mod abi;
pub mod batch;
pub mod in_flight;
pub mod io;
pub mod log;
pub mod params;
pub mod session;
mod stats_abi;
pub mod streams;

use std::ffi::{c_char, c_int, c_long, c_uint, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::time::Instant;

use abi::{code, CUfileError_t as Err_t, *};
use log::Level;
use params::{flag, size, string};

/// `cuFileGetVersion`'s answer: 1.15.
pub const CUFILE_VERSION: c_int = 1150;

/// `CUfileHandle_t`.
pub type CUfileHandle_t = *mut c_void;
/// `CUfileBatchHandle_t`.
pub type CUfileBatchHandle_t = *mut c_void;
/// `CUstream`.
pub type CUstream = *mut c_void;

fn guard<T>(what: &str, fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        log::log(Level::Error, || format!("{what}: internal panic caught at the ABI boundary"));
        fallback
    })
}

/// `CUDA_ERROR_INVALID_CONTEXT`, the `cu_err` of a stream given where this process has no CUDA.
const CUDA_ERROR_INVALID_CONTEXT: c_int = 201;

const INTERNAL: Err_t = Err_t::code(code::INTERNAL_ERROR);

fn err(c: i32) -> Err_t {
    Err_t::code(c)
}

/// Writes `v` through `p` when it is not NULL; false for NULL.
fn put<T>(p: *mut T, v: T) -> bool {
    if p.is_null() {
        return false;
    }
    // SAFETY: the caller passed a non-NULL out-pointer for a `T`, per cufile.h.
    unsafe { p.write_unaligned(v) };
    true
}

// ---------------------------------------------------------------- driver

/// `cuFileDriverOpen`.
#[no_mangle]
pub extern "C" fn cuFileDriverOpen() -> Err_t {
    guard("cuFileDriverOpen", INTERNAL, session::open)
}

/// `cuFileDriverClose_v2` (what programs compiled against the header call).
#[no_mangle]
pub extern "C" fn cuFileDriverClose_v2() -> Err_t {
    guard("cuFileDriverClose_v2", INTERNAL, session::close)
}

/// `cuFileDriverClose` (same as `_v2`).
#[no_mangle]
pub extern "C" fn cuFileDriverClose() -> Err_t {
    guard("cuFileDriverClose", INTERNAL, session::close)
}

/// `cuFileUseCount`.
#[no_mangle]
pub extern "C" fn cuFileUseCount() -> c_long {
    guard("cuFileUseCount", 0, || session::with_global(|g| g.use_count as c_long))
}

/// `cuFileDriverGetProperties`: works before open without opening.
#[no_mangle]
pub extern "C" fn cuFileDriverGetProperties(props: *mut CUfileDrvProps_t) -> Err_t {
    guard("cuFileDriverGetProperties", INTERNAL, || {
        if props.is_null() {
            return err(code::INVALID_VALUE);
        }
        let p = session::params_now();
        let compat = match session::current() {
            Some(s) => s.driver.config().allow_compat_mode,
            None => p.bools[flag::ALLOW_COMPAT_MODE],
        };
        let dyn_routing =
            session::current().is_some_and(|s| s.driver.config().rdma_dynamic_routing);
        let u32c = |v: u64| v.min(u32::MAX as u64) as c_uint;
        let mut control = 0;
        if p.bools[flag::USE_POLL_MODE] {
            control |= CONTROL_USE_POLL_MODE;
        }
        if compat {
            control |= CONTROL_ALLOW_COMPAT_MODE;
        }
        let mut features = FEATURE_BATCH_IO | FEATURE_STREAMS | FEATURE_PARALLEL_IO;
        if dyn_routing {
            features |= FEATURE_DYN_ROUTING;
        }
        let v = CUfileDrvProps_t {
            nvfs: CUfileNvfsProps {
                major_version: 0,
                minor_version: 0,
                poll_thresh_size: p.sizes[size::POLLTHRESHOLD_SIZE_KB] as usize,
                max_direct_io_size: p.sizes[size::MAX_DIRECT_IO_SIZE_KB] as usize,
                dstatusflags: 0,
                dcontrolflags: control,
            },
            fflags: features,
            max_device_cache_size: u32c(p.sizes[size::MAX_DEVICE_CACHE_SIZE_KB]),
            per_buffer_cache_size: u32c(p.sizes[size::PER_BUFFER_CACHE_SIZE_KB]),
            max_device_pinned_mem_size: u32c(p.sizes[size::MAX_DEVICE_PINNED_MEM_SIZE_KB]),
            max_batch_io_size: u32c(p.sizes[size::IO_BATCHSIZE]),
            max_batch_io_timeout_msecs: u32c(p.sizes[size::BATCH_IO_TIMEOUT_MS]),
        };
        put(props, v);
        Err_t::OK
    })
}

/// Applies a legacy setter: to the open session, else staged for the next open.
fn legacy_set(sizes: &[(usize, u64)], bools: &[(usize, bool)]) -> Err_t {
    match session::current() {
        Some(s) => {
            let mut p = s.params.lock().unwrap_or_else(|p| p.into_inner());
            for &(i, v) in sizes {
                p.sizes[i] = v;
            }
            for &(i, v) in bools {
                p.bools[i] = v;
            }
        }
        None => session::with_global(|g| {
            for &(i, v) in sizes {
                g.staged.sizes[i] = Some(v);
            }
            for &(i, v) in bools {
                g.staged.bools[i] = Some(v);
            }
        }),
    }
    Err_t::OK
}

/// `cuFileDriverSetPollMode` (applied and reported by `cuFileDriverGetProperties`).
#[no_mangle]
pub extern "C" fn cuFileDriverSetPollMode(poll: bool, poll_threshold_size: usize) -> Err_t {
    guard("cuFileDriverSetPollMode", INTERNAL, || {
        legacy_set(
            &[(size::POLLTHRESHOLD_SIZE_KB, poll_threshold_size as u64)],
            &[(flag::USE_POLL_MODE, poll)],
        )
    })
}

/// `cuFileDriverSetMaxDirectIOSize` (KiB).
#[no_mangle]
pub extern "C" fn cuFileDriverSetMaxDirectIOSize(max_direct_io_size: usize) -> Err_t {
    guard("cuFileDriverSetMaxDirectIOSize", INTERNAL, || {
        if max_direct_io_size == 0 {
            return err(code::INVALID_VALUE);
        }
        legacy_set(&[(size::MAX_DIRECT_IO_SIZE_KB, max_direct_io_size as u64)], &[])
    })
}

/// `cuFileDriverSetMaxCacheSize` (KiB).
#[no_mangle]
pub extern "C" fn cuFileDriverSetMaxCacheSize(max_cache_size: usize) -> Err_t {
    guard("cuFileDriverSetMaxCacheSize", INTERNAL, || {
        legacy_set(&[(size::MAX_DEVICE_CACHE_SIZE_KB, max_cache_size as u64)], &[])
    })
}

/// `cuFileDriverSetMaxPinnedMemSize` (KiB).
#[no_mangle]
pub extern "C" fn cuFileDriverSetMaxPinnedMemSize(max_pinned_size: usize) -> Err_t {
    guard("cuFileDriverSetMaxPinnedMemSize", INTERNAL, || {
        legacy_set(&[(size::MAX_DEVICE_PINNED_MEM_SIZE_KB, max_pinned_size as u64)], &[])
    })
}

// ---------------------------------------------------------------- version, parameters

/// `cuFileGetVersion`: 1150.
#[no_mangle]
pub extern "C" fn cuFileGetVersion(version: *mut c_int) -> Err_t {
    guard("cuFileGetVersion", INTERNAL, || {
        if put(version, CUFILE_VERSION) {
            Err_t::OK
        } else {
            err(code::INVALID_VALUE)
        }
    })
}

fn param_index(param: c_int, n: usize) -> Option<usize> {
    usize::try_from(param).ok().filter(|&p| p < n)
}

/// Stages a value: refused once the driver is open.
fn stage(f: impl FnOnce(&mut params::Staged)) -> Err_t {
    session::with_global(|g| {
        if g.session.is_some() {
            return err(code::DRIVER_ALREADY_OPEN);
        }
        f(&mut g.staged);
        Err_t::OK
    })
}

/// `cuFileGetParameterSizeT`.
#[no_mangle]
pub extern "C" fn cuFileGetParameterSizeT(param: c_int, value: *mut usize) -> Err_t {
    guard("cuFileGetParameterSizeT", INTERNAL, || {
        let Some(i) = param_index(param, params::N_SIZE) else { return err(code::INVALID_VALUE) };
        if put(value, session::params_now().sizes[i] as usize) {
            Err_t::OK
        } else {
            err(code::INVALID_VALUE)
        }
    })
}

/// `cuFileGetParameterBool`.
#[no_mangle]
pub extern "C" fn cuFileGetParameterBool(param: c_int, value: *mut bool) -> Err_t {
    guard("cuFileGetParameterBool", INTERNAL, || {
        let Some(i) = param_index(param, params::N_BOOL) else { return err(code::INVALID_VALUE) };
        if put(value, session::params_now().bools[i]) {
            Err_t::OK
        } else {
            err(code::INVALID_VALUE)
        }
    })
}

/// `cuFileGetParameterString`: `ENV_LOGFILE_PATH` fails unless `CUFILE_LOGFILE_PATH` is set
/// (or the value was staged); a buffer too short for the value and its NUL fails.
#[no_mangle]
pub extern "C" fn cuFileGetParameterString(
    param: c_int,
    desc_str: *mut c_char,
    len: c_int,
) -> Err_t {
    guard("cuFileGetParameterString", INTERNAL, || {
        let Some(i) = param_index(param, params::N_STRING) else { return err(code::INVALID_VALUE) };
        if desc_str.is_null() || len <= 0 {
            return err(code::INVALID_VALUE);
        }
        let p = session::params_now();
        let value = match i {
            string::ENV_LOGFILE_PATH => {
                match p.strings[i].clone().or_else(|| std::env::var("CUFILE_LOGFILE_PATH").ok()) {
                    Some(v) => v,
                    None => return err(code::INVALID_VALUE),
                }
            }
            string::LOGGING_LEVEL => std::env::var("CUFILE_LOGGING_LEVEL")
                .ok()
                .filter(|_| p.strings[i].as_deref() == Some("ERROR"))
                .or(p.strings[i].clone())
                .unwrap_or_default(),
            _ => p.strings[i].clone().unwrap_or_default(),
        };
        let bytes = value.as_bytes();
        if bytes.len() + 1 > len as usize || bytes.contains(&0) {
            return err(code::INVALID_VALUE);
        }
        // SAFETY: the caller's buffer holds `len` bytes; we write bytes.len() + 1 ≤ len.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), desc_str as *mut u8, bytes.len());
            *desc_str.add(bytes.len()) = 0;
        }
        Err_t::OK
    })
}

/// `cuFileSetParameterSizeT`: before open only (else 5026); range per
/// `cuFileGetParameterMinMaxValue`.
#[no_mangle]
pub extern "C" fn cuFileSetParameterSizeT(param: c_int, value: usize) -> Err_t {
    guard("cuFileSetParameterSizeT", INTERNAL, || {
        let Some(i) = param_index(param, params::N_SIZE) else { return err(code::INVALID_VALUE) };
        match params::settable_range(i) {
            Some((lo, hi)) if (lo..=hi).contains(&(value as u64)) => {}
            _ => return err(code::INVALID_VALUE),
        }
        stage(|s| s.sizes[i] = Some(value as u64))
    })
}

/// `cuFileSetParameterBool`: before open only.
#[no_mangle]
pub extern "C" fn cuFileSetParameterBool(param: c_int, value: bool) -> Err_t {
    guard("cuFileSetParameterBool", INTERNAL, || {
        let Some(i) = param_index(param, params::N_BOOL) else { return err(code::INVALID_VALUE) };
        stage(|s| s.bools[i] = Some(value))
    })
}

/// `cuFileSetParameterString`: before open only; `LOGGING_LEVEL` takes cuFile's level names.
#[no_mangle]
pub extern "C" fn cuFileSetParameterString(param: c_int, desc_str: *const c_char) -> Err_t {
    guard("cuFileSetParameterString", INTERNAL, || {
        let Some(i) = param_index(param, params::N_STRING) else { return err(code::INVALID_VALUE) };
        if desc_str.is_null() {
            return err(code::INVALID_VALUE);
        }
        // SAFETY: a non-NULL C string from the caller, per cufile.h.
        let Ok(v) = unsafe { CStr::from_ptr(desc_str) }.to_str().map(str::to_owned) else {
            return err(code::INVALID_VALUE);
        };
        if i == string::LOGGING_LEVEL && log::parse(&v).is_none() {
            return err(code::INVALID_VALUE);
        }
        stage(|s| s.strings[i] = Some(v))
    })
}

/// `cuFileGetParameterMinMaxValue`.
#[no_mangle]
pub extern "C" fn cuFileGetParameterMinMaxValue(
    param: c_int,
    min_value: *mut usize,
    max_value: *mut usize,
) -> Err_t {
    guard("cuFileGetParameterMinMaxValue", INTERNAL, || {
        let Some(i) = param_index(param, params::N_SIZE) else { return err(code::INVALID_VALUE) };
        let Some((lo, hi)) = params::SIZE_RANGES[i] else { return err(code::INVALID_VALUE) };
        if min_value.is_null() || max_value.is_null() {
            return err(code::INVALID_VALUE);
        }
        put(min_value, lo as usize);
        put(max_value, hi as usize);
        Err_t::OK
    })
}

/// `cuFileSetParameterPosixPoolSlabArray`: staged (never allocated), before open only.
#[no_mangle]
pub extern "C" fn cuFileSetParameterPosixPoolSlabArray(
    size_values: *const usize,
    count_values: *const usize,
    len: c_int,
) -> Err_t {
    guard("cuFileSetParameterPosixPoolSlabArray", INTERNAL, || {
        let n = match usize::try_from(len) {
            Ok(n) if (1..=params::MAX_SLABS).contains(&n) => n,
            _ => return err(code::INVALID_VALUE),
        };
        if size_values.is_null() || count_values.is_null() {
            return err(code::INVALID_VALUE);
        }
        // SAFETY: the caller passes two arrays of `len` size_t, per cufile.h.
        let (sizes, counts) = unsafe {
            (
                std::slice::from_raw_parts(size_values, n),
                std::slice::from_raw_parts(count_values, n),
            )
        };
        if sizes.iter().any(|&s| s < 4 || s % 4 != 0) || counts.contains(&0) {
            return err(code::INVALID_VALUE);
        }
        let (s, c) =
            (sizes.iter().map(|&v| v as u64).collect(), counts.iter().map(|&v| v as u64).collect());
        stage(|st| st.slabs = Some((s, c)))
    })
}

/// `cuFileGetParameterPosixPoolSlabArray`: `len` must equal the current array length.
#[no_mangle]
pub extern "C" fn cuFileGetParameterPosixPoolSlabArray(
    size_values: *mut usize,
    count_values: *mut usize,
    len: c_int,
) -> Err_t {
    guard("cuFileGetParameterPosixPoolSlabArray", INTERNAL, || {
        let p = session::params_now();
        if size_values.is_null()
            || count_values.is_null()
            || usize::try_from(len).ok() != Some(p.slab_sizes.len())
        {
            return err(code::INVALID_VALUE);
        }
        for (i, (&s, &c)) in p.slab_sizes.iter().zip(&p.slab_counts).enumerate() {
            // SAFETY: the caller's arrays hold `len` == p.slab_sizes.len() entries.
            unsafe {
                *size_values.add(i) = s as usize;
                *count_values.add(i) = c as usize;
            }
        }
        Err_t::OK
    })
}

// ---------------------------------------------------------------- handles and buffers

/// `cuFileHandleRegister`: any regular file or block device; opens the driver implicitly.
#[no_mangle]
pub extern "C" fn cuFileHandleRegister(
    fh: *mut CUfileHandle_t,
    descr: *mut CUfileDescr_t,
) -> Err_t {
    guard("cuFileHandleRegister", INTERNAL, || {
        if fh.is_null() || descr.is_null() {
            return err(code::INVALID_VALUE);
        }
        // SAFETY: a non-NULL descriptor struct from the caller, per cufile.h.
        let d = unsafe { descr.read_unaligned() };
        let fd = match d.type_ {
            HANDLE_TYPE_OPAQUE_FD => d.handle as usize as u32 as i32,
            HANDLE_TYPE_OPAQUE_WIN32 | HANDLE_TYPE_USERSPACE_FS => {
                return err(code::IO_NOT_SUPPORTED)
            }
            _ => return err(code::INVALID_VALUE),
        };
        if fd < 0 {
            return err(code::INVALID_VALUE);
        }
        let s = match session::ensure_open() {
            Ok(s) => s,
            Err(e) => return e,
        };
        let r = s.register_fd(fd);
        if session::stats_on() {
            s.stats.handle_register.record(r.is_ok());
        }
        match r {
            Ok(h) => {
                put(fh, h);
                Err_t::OK
            }
            Err(c) => err(c),
        }
    })
}

/// `cuFileHandleDeregister`.
#[no_mangle]
pub extern "C" fn cuFileHandleDeregister(fh: CUfileHandle_t) {
    guard("cuFileHandleDeregister", (), || {
        if let Some(s) = session::current() {
            let ok = s.deregister(fh);
            if session::stats_on() {
                s.stats.handle_deregister.record(ok);
            }
            if !ok {
                log::log(Level::Error, || format!("cuFileHandleDeregister: unknown handle {fh:?}"));
            }
        }
    })
}

/// `cuFileBufRegister`: device or host memory; opens the driver implicitly. `flags` are
/// accepted and unused (as NVIDIA's).
#[no_mangle]
pub extern "C" fn cuFileBufRegister(
    bufPtr_base: *const c_void,
    length: usize,
    _flags: c_int,
) -> Err_t {
    guard("cuFileBufRegister", INTERNAL, || {
        if bufPtr_base.is_null() || length == 0 {
            return err(code::INVALID_VALUE);
        }
        let s = match session::ensure_open() {
            Ok(s) => s,
            Err(e) => return e,
        };
        let r = s.register_buffer(bufPtr_base as u64, length);
        if session::stats_on() {
            s.stats.buf_register.record(r.is_ok());
        }
        r.map_or_else(err, |()| Err_t::OK)
    })
}

/// `cuFileBufDeregister`.
#[no_mangle]
pub extern "C" fn cuFileBufDeregister(bufPtr_base: *const c_void) -> Err_t {
    guard("cuFileBufDeregister", INTERNAL, || {
        if bufPtr_base.is_null() {
            return err(code::INVALID_VALUE);
        }
        let Some(s) = session::current() else { return err(code::DRIVER_NOT_INITIALIZED) };
        let ok = s.deregister_buffer(bufPtr_base as u64);
        if session::stats_on() {
            s.stats.buf_deregister.record(ok);
        }
        if ok {
            Err_t::OK
        } else {
            err(code::MEMORY_NOT_REGISTERED)
        }
    })
}

// ---------------------------------------------------------------- sync I/O

/// `cuFileRead`: bytes read (short only at end of file), `-1` with `errno`, or `-code`.
#[no_mangle]
pub extern "C" fn cuFileRead(
    fh: CUfileHandle_t,
    bufPtr_base: *mut c_void,
    size: usize,
    file_offset: i64,
    bufPtr_offset: i64,
) -> isize {
    guard("cuFileRead", -(code::INTERNAL_ERROR as isize), || {
        io::sync_io(gdio::Op::Read, fh, bufPtr_base, size, file_offset, bufPtr_offset)
    })
}

/// `cuFileWrite`: `size` (a write completes or fails), `-1` with `errno`, or `-code`.
#[no_mangle]
pub extern "C" fn cuFileWrite(
    fh: CUfileHandle_t,
    bufPtr_base: *const c_void,
    size: usize,
    file_offset: i64,
    bufPtr_offset: i64,
) -> isize {
    guard("cuFileWrite", -(code::INTERNAL_ERROR as isize), || {
        io::sync_io(gdio::Op::Write, fh, bufPtr_base, size, file_offset, bufPtr_offset)
    })
}

// ---------------------------------------------------------------- batch

/// `cuFileBatchIOSetUp`: `1 <= nr <= io_batchsize`.
#[no_mangle]
pub extern "C" fn cuFileBatchIOSetUp(batch_idp: *mut CUfileBatchHandle_t, nr: c_uint) -> Err_t {
    guard("cuFileBatchIOSetUp", INTERNAL, || {
        if batch_idp.is_null() {
            return err(code::INVALID_VALUE);
        }
        let Some(s) = session::current() else { return err(code::DRIVER_NOT_INITIALIZED) };
        let r = s.batches.setup(&s.driver, nr as usize);
        if session::stats_on() {
            s.stats.batch_setup.record(r.is_some());
        }
        match r {
            Some(id) => {
                put(batch_idp, id as CUfileBatchHandle_t);
                Err_t::OK
            }
            None => err(code::INVALID_VALUE),
        }
    })
}

/// `cuFileBatchIOSubmit`: every entry is checked before any starts; the entries then run on
/// gdio's engine while the caller goes on, and complete in any order.
#[no_mangle]
pub extern "C" fn cuFileBatchIOSubmit(
    batch_idp: CUfileBatchHandle_t,
    nr: c_uint,
    iocbp: *mut CUfileIOParams_t,
    _flags: c_uint,
) -> Err_t {
    guard("cuFileBatchIOSubmit", INTERNAL, || {
        let Some(s) = session::current() else { return err(code::DRIVER_NOT_INITIALIZED) };
        let start = Instant::now();
        let r = batch_submit(&s, batch_idp as u64, nr, iocbp);
        if session::stats_on() {
            s.stats.batch_submit.record(r.is_ok());
            if r.is_ok() {
                s.stats.batch_entries.fetch_add(nr as u64, Ordering::Relaxed);
            }
            s.stats
                .batch_submit_us
                .fetch_add(start.elapsed().as_micros() as u64, Ordering::Relaxed);
        }
        r.err().map_or(Err_t::OK, err)
    })
}

fn batch_submit(
    s: &session::Session,
    id: u64,
    nr: c_uint,
    iocbp: *mut CUfileIOParams_t,
) -> Result<(), c_int> {
    let Some(shared) = s.batches.get(id) else { return Err(code::INVALID_VALUE) };
    if iocbp.is_null() || nr == 0 {
        return Err(code::INVALID_VALUE);
    }
    let mut entries = Vec::with_capacity(nr as usize);
    for i in 0..nr as usize {
        // SAFETY: the caller passes `nr` entries at `iocbp`, per cufile.h.
        let p = unsafe { iocbp.add(i).read_unaligned() };
        let op = match p.opcode {
            0 => gdio::Op::Read,
            1 => gdio::Op::Write,
            _ => return Err(code::INVALID_VALUE),
        };
        let reg = s.handle(p.fh).ok_or(code::INVALID_VALUE)?;
        if p.mode != BATCH_MODE
            || p.dev_ptr_base.is_null()
            || p.file_offset < 0
            || p.dev_ptr_offset < 0
        {
            return Err(code::INVALID_VALUE);
        }
        entries.push(gdio::BatchEntry {
            op,
            file: reg.file.clone(),
            file_offset: p.file_offset as u64,
            buf_base: p.dev_ptr_base as u64,
            buf_offset: p.dev_ptr_offset as u64,
            len: p.size.min(isize::MAX as usize),
            cookie: p.cookie as u64,
            memory: io::registered_kind(s, p.dev_ptr_base as u64, p.dev_ptr_offset as u64, p.size),
        });
    }
    let mut batch = batch::lock(&shared);
    if batch.outstanding() + entries.len() > batch.capacity() {
        return Err(code::BATCH_FULL);
    }
    // SAFETY: cuFile's contract: each entry's memory stays valid and untouched until its
    // completion is reported or the batch is destroyed (destroy waits for what is in flight).
    unsafe { batch.submit(&entries) }.map_err(|e| {
        log::log(Level::Error, || format!("cuFileBatchIOSubmit: {e}"));
        code::INVALID_VALUE
    })
}

/// `cuFileBatchIOGetStatus`: `*nr` in = room in `iocbp`, out = events written. A NULL or
/// nonsensical `timeout` waits for `min_nr` events (never returns fewer early).
#[no_mangle]
pub extern "C" fn cuFileBatchIOGetStatus(
    batch_idp: CUfileBatchHandle_t,
    min_nr: c_uint,
    nr: *mut c_uint,
    iocbp: *mut CUfileIOEvents_t,
    timeout: *mut libc::timespec,
) -> Err_t {
    guard("cuFileBatchIOGetStatus", INTERNAL, || {
        if nr.is_null() {
            return err(code::INVALID_VALUE);
        }
        let Some(s) = session::current() else { return err(code::DRIVER_NOT_INITIALIZED) };
        // SAFETY: non-NULL in/out count from the caller.
        let room = unsafe { nr.read_unaligned() } as usize;
        if (iocbp.is_null() && room > 0) || min_nr as usize > room {
            return err(code::INVALID_VALUE);
        }
        let Some(shared) = s.batches.get(batch_idp as u64) else {
            return err(code::INVALID_VALUE);
        };
        if room == 0 {
            put(nr, 0);
            return Err_t::OK;
        }
        let limit = if timeout.is_null() {
            batch::wait_limit(None)
        } else {
            // SAFETY: a non-NULL timespec from the caller; any bit pattern is a valid timespec.
            let t = unsafe { timeout.read_unaligned() };
            batch::wait_limit(Some((t.tv_sec, t.tv_nsec)))
        };
        let got = batch::lock(&shared).get_status(min_nr as usize, room, limit);
        let Ok(got) = got else { return err(code::INVALID_VALUE) };
        for (i, e) in got.events.iter().enumerate() {
            let (status, ret) = match &e.state {
                gdio::BatchState::Complete(n) => (status::COMPLETE, *n),
                gdio::BatchState::Failed(x) => {
                    log::log(Level::Error, || format!("batch entry failed: {x}"));
                    (status::FAILED, io::negative(x) as usize)
                }
                gdio::BatchState::Canceled => (status::CANCELED, 0),
            };
            let ev = CUfileIOEvents_t { cookie: e.cookie as *mut c_void, status, ret };
            // SAFETY: i < events.len() <= room, the caller's array length.
            unsafe { iocbp.add(i).write_unaligned(ev) };
            if session::stats_on() {
                count_batch_event(&s, e);
            }
        }
        put(nr, got.events.len() as c_uint);
        Err_t::OK
    })
}

/// Counts a reported batch entry in cuFile's stats (batch counters and per-GPU reads/writes).
fn count_batch_event(s: &session::Session, e: &gdio::BatchEvent) {
    let res = match &e.state {
        gdio::BatchState::Complete(n) => Ok(*n as u64),
        _ => Err(()),
    };
    s.stats.batch_complete.record(res.is_ok());
    if matches!(e.state, gdio::BatchState::Canceled) {
        return;
    }
    let gpu = e.memory.device_ordinal();
    match e.op {
        gdio::Op::Read => {
            if let Ok(n) = res {
                s.stats.batch_read_bytes.fetch_add(n, Ordering::Relaxed);
            }
            s.stats.record_read(gpu, e.len as u64, res, e.elapsed)
        }
        gdio::Op::Write => {
            if let Ok(n) = res {
                s.stats.batch_write_bytes.fetch_add(n, Ordering::Relaxed);
            }
            s.stats.record_write(gpu, e.len as u64, res, e.elapsed)
        }
    }
}

/// `cuFileBatchIOCancel`: entries not started end CANCELED; those in flight finish.
#[no_mangle]
pub extern "C" fn cuFileBatchIOCancel(batch_idp: CUfileBatchHandle_t) -> Err_t {
    guard("cuFileBatchIOCancel", INTERNAL, || {
        let Some(s) = session::current() else { return err(code::DRIVER_NOT_INITIALIZED) };
        let r = s.batches.get(batch_idp as u64).map(|b| batch::lock(&b).cancel().is_ok());
        let ok = r == Some(true);
        if session::stats_on() {
            s.stats.batch_cancel.record(ok);
        }
        if ok {
            Err_t::OK
        } else {
            err(code::INVALID_VALUE)
        }
    })
}

/// `cuFileBatchIODestroy`: cancels what has not started and waits for what is in flight.
#[no_mangle]
pub extern "C" fn cuFileBatchIODestroy(batch_idp: CUfileBatchHandle_t) {
    guard("cuFileBatchIODestroy", (), || {
        if let Some(s) = session::current() {
            let ok = s.batches.destroy(batch_idp as u64);
            if session::stats_on() {
                s.stats.batch_destroy.record(ok);
            }
        }
    })
}

// ---------------------------------------------------------------- stream-ordered

#[allow(clippy::too_many_arguments)]
fn async_io(
    op: gdio::Op,
    fh: CUfileHandle_t,
    base: *mut c_void,
    size_p: *mut usize,
    file_offset_p: *mut i64,
    buf_offset_p: *mut i64,
    bytes_p: *mut isize,
    stream: CUstream,
) -> Err_t {
    if bytes_p.is_null() {
        return err(code::INVALID_VALUE);
    }
    let Some((s, reg)) = session::current().and_then(|s| Some((s.clone(), s.handle(fh)?))) else {
        put(bytes_p, -(libc::EINVAL as isize));
        return err(code::INVALID_VALUE);
    };
    let read_at_queue = session::streams().flags(stream as u64).is_some_and(|f| f.all_fixed());
    let params =
        gdio::StreamIoParams { size_p, file_offset_p, buf_offset_p, bytes_p, read_at_queue };
    // NULL or misaligned size, offset or result pointers (gdio reads and writes them with
    // aligned accesses): 5022, said in the result too (written unaligned).
    if base.is_null() || params.check().is_err() {
        put(bytes_p, -(code::INVALID_VALUE as isize));
        return err(code::INVALID_VALUE);
    }
    let gpu = s.driver.runtime().classify(base as u64).device_ordinal();
    let counted = s.clone();
    let done: gdio::stream_io::StreamIoDone = Box::new(move |size, r, took| {
        if session::stats_on() {
            let res = r.as_ref().map(|n| *n as u64).map_err(|_| ());
            match op {
                gdio::Op::Read => counted.stats.record_read(gpu, size as u64, res, took),
                gdio::Op::Write => counted.stats.record_write(gpu, size as u64, res, took),
            }
        }
        match r {
            Ok(n) => *n as isize,
            Err(e) => {
                log::log(Level::Error, || format!("stream-ordered {op}: {e}"));
                io::negative(e)
            }
        }
    });
    // SAFETY: cuFile's contract: the stream is the caller's, the parameter memory stays valid
    // until the stream has run the I/O, and so does the buffer.
    let r = unsafe {
        s.driver.submit_on_stream_with(
            op,
            &reg.file,
            base as u64,
            params,
            stream as u64,
            Some(done),
        )
    };
    match r {
        Ok(()) => Err_t::OK,
        Err(e) => {
            log::log(Level::Error, || format!("stream-ordered {op}: {e}"));
            match e.kind() {
                gdio::ErrorKind::Gpu | gdio::ErrorKind::NoGpu => Err_t {
                    err: CUDA_DRIVER_ERROR,
                    cu_err: e.driver_code().map_or(CUDA_ERROR_INVALID_CONTEXT, |c| c as c_int),
                },
                _ => err(code::INVALID_VALUE),
            }
        }
    }
}

/// `cuFileReadAsync`: queued on `stream` (gdio's stream-ordered I/O); the result (bytes, or a
/// negative errno or `-code`) lands in `*bytes_read_p` when the stream has run it. The
/// arguments are read when `stream` reaches the read (at queue time when the stream was
/// registered with all four FIXED/ALIGNED flags). The return value reports submission errors
/// only.
#[no_mangle]
pub extern "C" fn cuFileReadAsync(
    fh: CUfileHandle_t,
    bufPtr_base: *mut c_void,
    size_p: *mut usize,
    file_offset_p: *mut i64,
    bufPtr_offset_p: *mut i64,
    bytes_read_p: *mut isize,
    stream: CUstream,
) -> Err_t {
    guard("cuFileReadAsync", INTERNAL, || {
        async_io(
            gdio::Op::Read,
            fh,
            bufPtr_base,
            size_p,
            file_offset_p,
            bufPtr_offset_p,
            bytes_read_p,
            stream,
        )
    })
}

/// `cuFileWriteAsync`.
#[no_mangle]
pub extern "C" fn cuFileWriteAsync(
    fh: CUfileHandle_t,
    bufPtr_base: *mut c_void,
    size_p: *mut usize,
    file_offset_p: *mut i64,
    bufPtr_offset_p: *mut i64,
    bytes_written_p: *mut isize,
    stream: CUstream,
) -> Err_t {
    guard("cuFileWriteAsync", INTERNAL, || {
        async_io(
            gdio::Op::Write,
            fh,
            bufPtr_base,
            size_p,
            file_offset_p,
            bufPtr_offset_p,
            bytes_written_p,
            stream,
        )
    })
}

/// `cuFileStreamRegister`: registering a registered stream → 5022; unknown flag bits kept.
#[no_mangle]
pub extern "C" fn cuFileStreamRegister(stream: CUstream, flags: c_uint) -> Err_t {
    guard("cuFileStreamRegister", INTERNAL, || {
        if session::streams().register(stream as u64, flags) {
            Err_t::OK
        } else {
            err(code::INVALID_VALUE)
        }
    })
}

/// `cuFileStreamDeregister`: an unknown stream → 5022.
#[no_mangle]
pub extern "C" fn cuFileStreamDeregister(stream: CUstream) -> Err_t {
    guard("cuFileStreamDeregister", INTERNAL, || {
        if session::streams().deregister(stream as u64) {
            Err_t::OK
        } else {
            err(code::INVALID_VALUE)
        }
    })
}

// ---------------------------------------------------------------- stats

/// `cuFileSetStatsLevel`: 0–3.
#[no_mangle]
pub extern "C" fn cuFileSetStatsLevel(level: c_int) -> Err_t {
    guard("cuFileSetStatsLevel", INTERNAL, || {
        if !(0..=3).contains(&level) {
            return err(code::INVALID_VALUE);
        }
        session::STATS_LEVEL.store(level, Ordering::Relaxed);
        Err_t::OK
    })
}

/// `cuFileGetStatsLevel`.
#[no_mangle]
pub extern "C" fn cuFileGetStatsLevel(level: *mut c_int) -> Err_t {
    guard("cuFileGetStatsLevel", INTERNAL, || {
        if put(level, session::STATS_LEVEL.load(Ordering::Relaxed)) {
            Err_t::OK
        } else {
            err(code::INVALID_VALUE)
        }
    })
}

/// `cuFileStatsStart`: needs an open driver (5001) and a level ≥ 1 (5030).
#[no_mangle]
pub extern "C" fn cuFileStatsStart() -> Err_t {
    guard("cuFileStatsStart", INTERNAL, || {
        if session::current().is_none() {
            return err(code::DRIVER_NOT_INITIALIZED);
        }
        if session::STATS_LEVEL.load(Ordering::Relaxed) < 1 {
            return err(code::INTERNAL_ERROR);
        }
        session::STATS_RUNNING.store(true, Ordering::Relaxed);
        Err_t::OK
    })
}

/// `cuFileStatsStop`.
#[no_mangle]
pub extern "C" fn cuFileStatsStop() -> Err_t {
    guard("cuFileStatsStop", INTERNAL, || {
        if session::current().is_none() {
            return err(code::DRIVER_NOT_INITIALIZED);
        }
        session::STATS_RUNNING.store(false, Ordering::Relaxed);
        Err_t::OK
    })
}

/// `cuFileStatsReset`: zeroes cuFile's counters and gdio's per-backend ones.
#[no_mangle]
pub extern "C" fn cuFileStatsReset() -> Err_t {
    guard("cuFileStatsReset", INTERNAL, || {
        let Some(s) = session::current() else { return err(code::DRIVER_NOT_INITIALIZED) };
        s.stats.reset();
        s.driver.reset_stats();
        Err_t::OK
    })
}

fn stats_session(p: bool, need: c_int) -> Result<std::sync::Arc<session::Session>, Err_t> {
    if !p || session::STATS_LEVEL.load(Ordering::Relaxed) < need {
        return Err(err(code::INVALID_VALUE));
    }
    session::current().ok_or(err(code::DRIVER_NOT_INITIALIZED))
}

/// `cuFileGetStatsL1` (512 bytes): needs level ≥ 1.
#[no_mangle]
pub extern "C" fn cuFileGetStatsL1(stats: *mut CUfileStatsLevel1_t) -> Err_t {
    guard("cuFileGetStatsL1", INTERNAL, || match stats_session(!stats.is_null(), 1) {
        Ok(s) => {
            put(stats, stats_abi::level1(&s));
            Err_t::OK
        }
        Err(e) => e,
    })
}

/// `cuFileGetStatsL2` (1024 bytes): needs level ≥ 2.
#[no_mangle]
pub extern "C" fn cuFileGetStatsL2(stats: *mut CUfileStatsLevel2_t) -> Err_t {
    guard("cuFileGetStatsL2", INTERNAL, || match stats_session(!stats.is_null(), 2) {
        Ok(s) => {
            let (r, w) = stats_abi::histograms(&s);
            put(
                stats,
                CUfileStatsLevel2_t {
                    basic: stats_abi::level1(&s),
                    read_size_kb_hist: r,
                    write_size_kb_hist: w,
                },
            );
            Err_t::OK
        }
        Err(e) => e,
    })
}

/// `cuFileGetStatsL3` (5000 bytes): needs level 3.
#[no_mangle]
pub extern "C" fn cuFileGetStatsL3(stats: *mut CUfileStatsLevel3_t) -> Err_t {
    guard("cuFileGetStatsL3", INTERNAL, || match stats_session(!stats.is_null(), 3) {
        Ok(s) => {
            let (r, w) = stats_abi::histograms(&s);
            let (num_gpus, per_gpu_stats) = stats_abi::per_gpu(&s);
            let detailed = CUfileStatsLevel2_t {
                basic: stats_abi::level1(&s),
                read_size_kb_hist: r,
                write_size_kb_hist: w,
            };
            put(stats, CUfileStatsLevel3_t { detailed, num_gpus, per_gpu_stats });
            Err_t::OK
        }
        Err(e) => e,
    })
}

// ---------------------------------------------------------------- misc

/// `cuFileGetBARSizeInKB`: BAR1 of GPU `gpuIndex` in KiB, as `gdio check` measures it (NVML).
#[no_mangle]
pub extern "C" fn cuFileGetBARSizeInKB(gpuIndex: c_int, barSize: *mut usize) -> Err_t {
    guard("cuFileGetBARSizeInKB", INTERNAL, || {
        if barSize.is_null() || gpuIndex < 0 {
            return err(code::INVALID_VALUE);
        }
        let runtime = match session::current() {
            Some(s) => s.driver.runtime().clone(),
            None => gdio::gpu::detect().0,
        };
        if gpuIndex as usize >= runtime.device_count() {
            log::log(Level::Error, || format!("Invalid GPU index {gpuIndex}"));
            return err(code::INVALID_VALUE);
        }
        match runtime.device_info(gpuIndex as usize).ok().and_then(|i| i.bar1_size) {
            Some(b) => {
                put(barSize, (b / 1024) as usize);
                Err_t::OK
            }
            None => err(code::INTERNAL_ERROR),
        }
    })
}

/// Marks this `libcufile.so.0` as gdio's (`gdio check` looks for it): gdio's version, as a
/// NUL-terminated string.
#[no_mangle]
pub extern "C" fn gdio_cufile_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
