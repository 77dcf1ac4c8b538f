//! The CUDA driver call the ABI needs beyond gdio's runtime: the allocation a device pointer
//! belongs to. Only called where gdio's runtime is CUDA (libcuda already loaded and
//! initialised).

use cudarc::driver::sys;

/// `CUDA_ERROR_INVALID_CONTEXT`: a stream was given but this process has no CUDA.
pub(crate) const INVALID_CONTEXT: i32 = 201;

/// The `(base, size)` of the allocation holding device address `addr`, if CUDA knows it.
pub fn allocation(addr: u64) -> Option<(u64, u64)> {
    let mut base: sys::CUdeviceptr = 0;
    let mut size: usize = 0;
    // SAFETY: called only for addresses gdio's CUDA runtime classified as device memory, so
    // libcuda is loaded; the function writes two integers.
    let r = unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, addr) };
    (r == sys::CUresult::CUDA_SUCCESS).then_some((base, size as u64))
}
