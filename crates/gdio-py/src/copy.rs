//! Bytes already in host memory copied into any buffer gdio takes (host, GPU or managed
//! memory): how `gdio.RemoteFile` lands what it received over the network in a GPU tensor.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use gdio::Error;

use crate::buffer::{acquire, Access, Memory};
use crate::error::to_py;
use crate::file::runtime;
use crate::stream;

/// Copies every byte of `src` (host memory with the buffer protocol) into `dst` at byte
/// `offset` and returns the bytes copied; the GIL is released while it copies. A GPU
/// destination's producer stream (CUDA Array Interface, DLPack) is waited for first, and the
/// copy has landed when this returns.
#[pyfunction]
pub fn copy_into(
    py: Python<'_>,
    dst: &Bound<'_, PyAny>,
    offset: usize,
    src: &Bound<'_, PyAny>,
) -> PyResult<usize> {
    let rt = runtime(py)?;
    let b = acquire(dst, Access::Fill, &rt.driver)?;
    let s = PyBuffer::<u8>::get(src)?;
    if !s.is_c_contiguous() {
        return Err(PyValueError::new_err("copy_into: the source must be contiguous bytes"));
    }
    let n = s.len_bytes();
    if offset.checked_add(n).is_none_or(|end| end > b.len) {
        return Err(PyValueError::new_err(format!(
            "copy_into: {n} bytes at offset {offset} do not fit a buffer of {} bytes",
            b.len
        )));
    }
    let src_addr = s.buf_ptr() as usize;
    let dst_addr = b.addr + offset as u64;
    let driver = &rt.driver;
    let r = py.detach(|| -> gdio::Result<()> {
        if let Some((ordinal, handle)) = b.sync {
            stream::synchronize(driver, ordinal, handle)?;
        }
        if n == 0 {
            return Ok(());
        }
        match b.memory {
            Memory::Host | Memory::Any => {
                // SAFETY: `src_addr..+n` is the exported source buffer (held by `s` until this
                // returns); `dst_addr..+n` lies inside the destination's host-accessible memory
                // (checked against its length above, kept alive by `b`); they are distinct
                // objects' memory, so they do not overlap unless the caller passed one buffer
                // twice, which `copy` tolerates.
                unsafe { std::ptr::copy(src_addr as *const u8, dst_addr as *mut u8, n) };
                Ok(())
            }
            Memory::Device(ordinal) => {
                let mut st = driver.runtime().new_stream(ordinal, 1)?;
                // SAFETY: the source is valid for `n` bytes and the destination is a device
                // range of `n` bytes inside the buffer (both kept alive until after the
                // synchronization below).
                unsafe { st.copy_to_device(dst_addr, src_addr as *const u8, n)? };
                st.synchronize()
            }
        }
    });
    drop(s);
    drop(b);
    r.map_err(|e: Error| {
        to_py(e.map_message(|m| format!("copying {n} bytes into a buffer at offset {offset}: {m}")))
    })?;
    Ok(n)
}
