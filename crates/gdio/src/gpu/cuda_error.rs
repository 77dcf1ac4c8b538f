//! The one place a CUDA driver result becomes a gdio [`Error`]: `CUresult` codes from raw
//! `cudarc::driver::sys` calls ([`check`]) and cudarc's `DriverError` ([`from_driver`]) alike,
//! with the code, its name from `cuGetErrorName`, and [`CodeDomain::Cuda`](crate::error::CodeDomain).

use std::ffi::CStr;

use cudarc::driver::{sys, DriverError};

use crate::error::{Error, Result};

/// The name of a `CUresult` (`CUDA_ERROR_OUT_OF_MEMORY`), from the driver when it can tell.
fn name(r: sys::CUresult) -> String {
    let mut name: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: cuGetErrorName writes a pointer to a static string (or leaves it null). Callers
    // only have a CUresult after a driver call, so the library is loaded.
    let rc = unsafe { sys::cuGetErrorName(r, &mut name) };
    if rc == sys::CUresult::CUDA_SUCCESS && !name.is_null() {
        // SAFETY: the driver returns a NUL-terminated static string.
        unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
    } else {
        format!("{r:?}")
    }
}

/// Turns a `CUresult` into `Ok` or gdio's error; `what` names the call (`cuMemAlloc`).
pub(crate) fn check(r: sys::CUresult, what: &str) -> Result<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    Err(Error::gpu(r as i64, &name(r), format!("CUDA {what} failed")))
}

/// Turns cudarc's `DriverError` into gdio's error; `what` says what was being done.
pub(crate) fn from_driver(e: DriverError, what: &str) -> Error {
    Error::gpu(e.0 as i64, &name(e.0), format!("CUDA {what} failed"))
}
