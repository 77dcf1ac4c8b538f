//! DLPack consumer: reads the tensor a `__dlpack__` capsule describes (legacy `dltensor` and
//! versioned `dltensor_versioned`). gdio never consumes the capsule: it holds it while the I/O
//! runs, and dropping it lets the producer's capsule destructor free the tensor.

use std::ffi::c_void;

use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyCapsuleMethods, PyDict};

/// `kDLCPU`.
pub const DEVICE_CPU: i32 = 1;
/// `kDLCUDA`.
pub const DEVICE_CUDA: i32 = 2;
/// `kDLCUDAHost` (pinned host memory).
pub const DEVICE_CUDA_HOST: i32 = 3;
/// `kDLCUDAManaged`.
pub const DEVICE_CUDA_MANAGED: i32 = 13;

/// `DLPACK_FLAG_BITMASK_READ_ONLY`.
const FLAG_READ_ONLY: u64 = 1;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`.
const FLAG_IS_COPIED: u64 = 1 << 1;

#[repr(C)]
#[derive(Clone, Copy)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *const i64,
    strides: *const i64,
    byte_offset: u64,
}

#[repr(C)]
struct DlManagedTensor {
    dl_tensor: DlTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensor)>,
}

#[repr(C)]
struct DlPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DlManagedTensorVersioned {
    version: DlPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DlTensor,
}

/// A contiguous tensor seen through DLPack.
pub struct DlView {
    /// Address of the first byte (data + byte_offset).
    pub addr: u64,
    /// Bytes.
    pub len: usize,
    /// DLPack device type.
    pub device_type: i32,
    /// DLPack device id (the CUDA ordinal for CUDA memory).
    pub device_id: i32,
    /// The producer says the memory must not be written.
    pub read_only: bool,
    /// The producer copied the data for this export (writing into it would be lost).
    pub copied: bool,
    /// The capsule: holding it keeps the tensor alive.
    pub capsule: Py<PyAny>,
}

/// `(device_type, device_id)` of `obj.__dlpack_device__()`.
pub fn device_of(obj: &Bound<'_, PyAny>) -> PyResult<(i32, i32)> {
    obj.call_method0("__dlpack_device__")?.extract()
}

/// Calls `obj.__dlpack__(stream=stream, max_version=(1, 0))` (falling back to the legacy call
/// for producers that do not know `max_version`) and reads the capsule.
pub fn export(obj: &Bound<'_, PyAny>, stream: Option<i64>) -> PyResult<DlView> {
    let py = obj.py();
    let kwargs = PyDict::new(py);
    kwargs.set_item("stream", stream)?;
    kwargs.set_item("max_version", (1, 0))?;
    let capsule = match obj.call_method("__dlpack__", (), Some(&kwargs)) {
        Ok(c) => c,
        Err(e) if e.is_instance_of::<PyTypeError>(py) => {
            let legacy = PyDict::new(py);
            legacy.set_item("stream", stream)?;
            obj.call_method("__dlpack__", (), Some(&legacy))?
        }
        Err(e) => return Err(e),
    };
    read_capsule(capsule)
}

fn read_capsule(capsule: Bound<'_, PyAny>) -> PyResult<DlView> {
    let cap = capsule
        .cast::<PyCapsule>()
        .map_err(|_| PyTypeError::new_err("__dlpack__ did not return a capsule"))?;
    let (tensor, flags) = if let Ok(p) = cap.pointer_checked(Some(c"dltensor_versioned")) {
        let m = p.as_ptr() as *const DlManagedTensorVersioned;
        // SAFETY: a capsule named `dltensor_versioned` holds a `DLManagedTensorVersioned`
        // (DLPack ≥ 1.0) that stays valid while the unconsumed capsule lives (we hold it).
        let m = unsafe { &*m };
        if m.version.major != 1 {
            return Err(PyBufferError::new_err(format!(
                "DLPack version {}.{} is not supported (gdio reads 1.x)",
                m.version.major, m.version.minor
            )));
        }
        (&m.dl_tensor as *const DlTensor, m.flags)
    } else if let Ok(p) = cap.pointer_checked(Some(c"dltensor")) {
        let m = p.as_ptr() as *const DlManagedTensor;
        // SAFETY: a capsule named `dltensor` holds a `DLManagedTensor` valid while the
        // unconsumed capsule lives.
        (unsafe { &(*m).dl_tensor } as *const DlTensor, 0)
    } else {
        return Err(PyTypeError::new_err(
            "__dlpack__ returned a capsule that is neither 'dltensor' nor 'dltensor_versioned' \
             (already consumed?)",
        ));
    };
    // SAFETY: `tensor` points into the managed tensor checked above.
    let t = unsafe { &*tensor };
    let ndim = usize::try_from(t.ndim).map_err(|_| PyBufferError::new_err("negative ndim"))?;
    let shape: &[i64] = if ndim == 0 {
        &[]
    } else {
        // SAFETY: DLPack's `shape` has `ndim` entries, valid while the tensor lives.
        unsafe { std::slice::from_raw_parts(t.shape, ndim) }
    };
    let strides: Option<&[i64]> = if t.strides.is_null() || ndim == 0 {
        None
    } else {
        // SAFETY: a non-null `strides` has `ndim` entries, valid while the tensor lives.
        Some(unsafe { std::slice::from_raw_parts(t.strides, ndim) })
    };
    let bits = u64::from(t.dtype.bits) * u64::from(t.dtype.lanes);
    let mut count: u64 = 1;
    for &d in shape {
        let d = u64::try_from(d).map_err(|_| PyBufferError::new_err("negative dimension"))?;
        count = count.checked_mul(d).ok_or_else(|| PyBufferError::new_err("tensor too large"))?;
    }
    if let Some(strides) = strides {
        // Compact C order, ignoring dimensions of size 1 (their stride does not matter).
        let mut want: i64 = 1;
        for (d, s) in shape.iter().zip(strides).rev() {
            if *d != 1 && *s != want {
                return Err(PyBufferError::new_err(
                    "gdio needs a contiguous (C-order) tensor; call .contiguous() first",
                ));
            }
            want = want.saturating_mul(*d);
        }
    }
    let len = (count * bits).div_ceil(8);
    Ok(DlView {
        addr: (t.data as u64).wrapping_add(t.byte_offset),
        len: usize::try_from(len).map_err(|_| PyBufferError::new_err("tensor too large"))?,
        device_type: t.device.device_type,
        device_id: t.device.device_id,
        read_only: flags & FLAG_READ_ONLY != 0,
        copied: flags & FLAG_IS_COPIED != 0,
        capsule: capsule.unbind(),
    })
}
