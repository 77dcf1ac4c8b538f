//! The two CUDA driver calls the ABI needs beyond gdio's runtime: waiting for a caller's
//! stream, and the allocation a device pointer belongs to. Only called where gdio's runtime is
//! CUDA (libcuda already loaded and initialised).

use std::ffi::c_void;

use cudarc::driver::sys;

/// `CUDA_ERROR_INVALID_CONTEXT`: a stream was given but this process has no CUDA.
const INVALID_CONTEXT: i32 = 201;

/// Waits until everything queued on `stream` (NULL: the default stream) has finished.
/// `cuda`: whether gdio's runtime is CUDA. Err: the `CUresult`.
pub fn synchronize(stream: *mut c_void, cuda: bool) -> Result<(), i32> {
    if !cuda {
        return if stream.is_null() { Ok(()) } else { Err(INVALID_CONTEXT) };
    }
    // SAFETY: the runtime is CUDA, so libcuda is loaded; cuStreamSynchronize accepts any stream
    // handle of this process (NULL = the legacy default stream) and returns an error for a
    // destroyed one.
    let r = unsafe { sys::cuStreamSynchronize(stream as sys::CUstream) };
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(r as i32)
    }
}

/// The `(base, size)` of the allocation holding device address `addr`, if CUDA knows it.
pub fn allocation(addr: u64) -> Option<(u64, u64)> {
    let mut base: sys::CUdeviceptr = 0;
    let mut size: usize = 0;
    // SAFETY: called only for addresses gdio's CUDA runtime classified as device memory, so
    // libcuda is loaded; the function writes two integers.
    let r = unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, addr) };
    (r == sys::CUresult::CUDA_SUCCESS).then_some((base, size as u64))
}
