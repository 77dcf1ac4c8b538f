//! The limits a bench result is measured against, in the same run: the pinned host↔device copy
//! bandwidth of the GPU, and a plain parallel read of the same file into host memory.

use std::time::Instant;

use gdio::gpu::{DeviceBuffer, PinnedBuffer};
use gdio::Driver;

/// Copy bandwidth between pinned host memory and GPU `ordinal`, in GB/s (10^9 bytes/s):
/// `copies` back-to-back copies of `chunk` bytes on one stream, best of three rounds.
pub fn pinned_copy_gbps(
    driver: &Driver,
    ordinal: usize,
    to_device: bool,
    chunk: usize,
    copies: usize,
) -> Result<f64, String> {
    let rt = driver.runtime();
    let mut host = PinnedBuffer::new(rt, ordinal, chunk).map_err(|e| e.to_string())?;
    super::data::fill_random(host.as_mut_slice(), 9, 4)?;
    let dev = DeviceBuffer::new(rt, ordinal, chunk).map_err(|e| e.to_string())?;
    let mut stream = rt.new_stream(ordinal, 1).map_err(|e| e.to_string())?;
    let mut best = 0.0f64;
    for round in 0..4 {
        let t = Instant::now();
        for _ in 0..copies {
            // SAFETY: both buffers are live for `chunk` bytes and we synchronize before they drop.
            unsafe {
                if to_device {
                    stream.copy_to_device(dev.addr(), host.as_ptr(), chunk)
                } else {
                    stream.copy_to_host(host.as_mut_ptr(), dev.addr(), chunk)
                }
            }
            .map_err(|e| e.to_string())?;
        }
        stream.synchronize().map_err(|e| e.to_string())?;
        let secs = t.elapsed().as_secs_f64();
        if round > 0 {
            best = best.max((chunk * copies) as f64 / secs / 1e9);
        }
    }
    Ok(best)
}
