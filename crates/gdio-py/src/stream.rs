//! Waiting for a CUDA stream named by a caller (a DLPack or CUDA Array Interface producer, or
//! `raw_read_async`'s `stream`) before gdio touches the memory.

use gdio::{Driver, Error, ErrorKind};

/// The legacy default stream, as DLPack and CAI number it.
pub const LEGACY: i64 = 1;
/// The per-thread default stream.
pub const PER_THREAD: i64 = 2;

/// Blocks until the work queued on `stream` of GPU `ordinal` is done (0 means the legacy
/// default stream, as CUDA counts it; on the tests' simulated GPUs, one of their streams).
pub fn synchronize(driver: &Driver, ordinal: usize, stream: u64) -> gdio::Result<()> {
    if driver.runtime().name() == "sim" {
        if let Some(sim) = crate::state::sim_of(driver) {
            // The tests' simulated GPUs: `stream` is one of their streams (`_sim_stream`).
            return sim.with_stream(stream, |s| s.synchronize()).and_then(|r| r);
        }
    }
    if driver.runtime().name() != "cuda" {
        return Err(Error::new(
            ErrorKind::NoGpu,
            format!(
                "CUDA stream 0x{stream:x} given but gdio runs without CUDA: {}",
                driver.why_no_gpu().unwrap_or("no CUDA runtime")
            ),
        ));
    }
    driver.runtime().bind_thread(ordinal)?;
    let handle = stream as usize as cudarc::driver::sys::CUstream;
    // SAFETY: the CUDA runtime is loaded (checked above) and GPU `ordinal`'s context is current
    // on this thread; `stream` is a stream handle the caller gave us (or a special value CUDA
    // defines), valid in that context.
    unsafe { cudarc::driver::result::stream::synchronize(handle) }.map_err(|e| {
        Error::gpu(e.0 as i64, &format!("{e:?}"), format!("synchronizing CUDA stream 0x{stream:x}"))
    })
}
