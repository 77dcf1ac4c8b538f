//! Shared helpers: one test at a time (the library's state is process-wide), files of seeded
//! random bytes, registration.
#![allow(dead_code)]

use std::ffi::{c_int, c_void};
use std::os::fd::AsRawFd;
use std::sync::{Mutex, MutexGuard};

use cufile::abi::*;
use cufile::*;
use rand::{RngCore, SeedableRng};

static LOCK: Mutex<()> = Mutex::new(());

/// Serialises tests and starts each with the driver closed.
pub fn serial() -> MutexGuard<'static, ()> {
    let g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    closed();
    g
}

/// Closes until the use count is 0.
pub fn closed() {
    while cuFileUseCount() > 0 {
        assert_eq!(cuFileDriverClose_v2().err, 0);
    }
}

/// `n` seeded random bytes.
pub fn random_bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    rand::rngs::StdRng::seed_from_u64(seed).fill_bytes(&mut v);
    v
}

/// A descriptor struct for `fd`.
pub fn descr(fd: i32) -> CUfileDescr_t {
    CUfileDescr_t { type_: 1, handle: fd as usize as *mut c_void, fs_ops: std::ptr::null() }
}

/// Registers `f`; panics on failure.
pub fn register(f: &impl AsRawFd) -> CUfileHandle_t {
    let mut fh: CUfileHandle_t = std::ptr::null_mut();
    let mut d = descr(f.as_raw_fd());
    let e = cuFileHandleRegister(&mut fh, &mut d);
    assert_eq!(e, CUfileError_t::OK, "register");
    fh
}

/// Registers `fd` and returns the error number.
pub fn register_err(fd: i32) -> i32 {
    let mut fh: CUfileHandle_t = std::ptr::null_mut();
    let mut d = descr(fd);
    cuFileHandleRegister(&mut fh, &mut d).err
}

/// The calling thread's errno.
pub fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// A batch entry: `op` 0 read, 1 write, of `size` bytes between file offset `foff` and
/// `base + boff`.
pub fn params(
    op: c_int,
    fh: CUfileHandle_t,
    base: *mut u8,
    foff: i64,
    boff: i64,
    size: usize,
    cookie: usize,
) -> CUfileIOParams_t {
    CUfileIOParams_t {
        mode: BATCH_MODE,
        dev_ptr_base: base.cast(),
        file_offset: foff,
        dev_ptr_offset: boff,
        size,
        fh,
        opcode: op,
        cookie: cookie as *mut c_void,
    }
}
