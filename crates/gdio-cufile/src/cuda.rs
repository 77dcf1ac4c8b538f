//! The two CUDA driver calls the ABI needs beyond gdio's runtime: waiting for a caller's
//! stream, and the allocation a device pointer belongs to. Only called where gdio's runtime is
//! CUDA (libcuda already loaded and initialised).

use std::ffi::c_void;

use cudarc::driver::sys;

/// `CUDA_ERROR_INVALID_CONTEXT`: a stream was given but this process has no CUDA.
const INVALID_CONTEXT: i32 = 201;

fn check(r: sys::CUresult) -> Result<(), i32> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(r as i32)
    }
}

/// Waits until the I/O's place in `stream` (NULL: the legacy default stream) is reached:
/// everything queued on it has finished and, for a blocking stream, everything queued before on
/// the legacy default stream too (work on a blocking stream waits for it, so data a kernel on
/// the default stream produced is ready). `cuda`: whether gdio's runtime is CUDA. Err: the
/// `CUresult`.
pub fn synchronize(stream: *mut c_void, cuda: bool) -> Result<(), i32> {
    if !cuda {
        return if stream.is_null() { Ok(()) } else { Err(INVALID_CONTEXT) };
    }
    let s = stream as sys::CUstream;
    // SAFETY: the runtime is CUDA, so libcuda is loaded; cuStreamSynchronize accepts any stream
    // handle of this process (NULL = the legacy default stream) and returns an error for a
    // destroyed one.
    check(unsafe { sys::cuStreamSynchronize(s) })?;
    if !stream.is_null() {
        let mut flags: std::ffi::c_uint = 0;
        // SAFETY: as above; the call writes one unsigned int.
        check(unsafe { sys::cuStreamGetFlags(s, &mut flags) })?;
        if flags & sys::CUstream_flags::CU_STREAM_NON_BLOCKING as std::ffi::c_uint == 0 {
            // SAFETY: NULL is the calling thread's legacy default stream.
            check(unsafe { sys::cuStreamSynchronize(std::ptr::null_mut()) })?;
        }
    }
    Ok(())
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
