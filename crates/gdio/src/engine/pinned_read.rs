//! Reads served out of page-cache pins ([`super::page_cache_pins`]): one host→device copy per
//! pinned chunk the range crosses, queued on the calling thread's own stream and waited for
//! before the call returns. No worker, no bounce buffer, no CPU copy: many callers at once
//! keep as many copies in flight as they have threads.

use std::cell::RefCell;
use std::sync::Arc;

use super::caller_lane::{key_of, retain_live};
use super::lane::{wait_marker, Polling};
use super::page_cache_pins::PinnedSpan;
use crate::error::Result;
use crate::gpu::{GpuRuntime, GpuStream};

struct Owned {
    /// The runtime's address (see `caller_lane`: streams are reused only for it).
    runtime: usize,
    ordinal: usize,
    stream: Box<dyn GpuStream>,
}

thread_local! {
    static STREAMS: RefCell<Vec<Owned>> = const { RefCell::new(Vec::new()) };
}

/// Drops the calling thread's streams of runtimes that no engine uses any more.
pub(crate) fn release_unused() {
    let _ = STREAMS.try_with(|cell| {
        if let Ok(mut streams) = cell.try_borrow_mut() {
            retain_live(&mut streams, 0, |o| o.runtime);
        }
    });
}

/// Copies `span` into GPU `ordinal` at device address `dst` and returns the bytes copied, on
/// the calling thread's stream for that GPU (made on its first such read), waiting for the
/// copies as the workers wait for theirs (`polling`: poll the marker, then block; many
/// callers in `cuStreamSynchronize` at once ran 1 MiB × 32 at half the rate, session 36 run 1). `None` when the
/// thread cannot have one (it is exiting, or is in this function already): the caller reads
/// the other way.
pub(crate) fn read(
    runtime: &Arc<dyn GpuRuntime>,
    ordinal: usize,
    span: &PinnedSpan,
    dst: u64,
    polling: Polling,
) -> Option<Result<u64>> {
    let key = key_of(runtime);
    STREAMS
        .try_with(|cell| {
            let mut streams = cell.try_borrow_mut().ok()?;
            retain_live(&mut streams, key, |o| o.runtime);
            let i = match streams.iter().position(|o| o.runtime == key && o.ordinal == ordinal) {
                Some(i) => i,
                None => {
                    let made =
                        runtime.bind_thread(ordinal).and_then(|()| runtime.new_stream(ordinal, 1));
                    match made {
                        Ok(stream) => streams.push(Owned { runtime: key, ordinal, stream }),
                        Err(e) => return Some(Err(e)),
                    }
                    streams.len() - 1
                }
            };
            Some(copy(runtime, ordinal, &mut *streams[i].stream, span, dst, polling))
        })
        .ok()
        .flatten()
}

fn copy(
    runtime: &Arc<dyn GpuRuntime>,
    ordinal: usize,
    stream: &mut dyn GpuStream,
    span: &PinnedSpan,
    dst: u64,
    polling: Polling,
) -> Result<u64> {
    runtime.bind_thread(ordinal)?;
    let mut at = dst;
    for (chunk, start, len) in &span.pieces {
        // SAFETY: the chunk's registered mapping holds `start + len` bytes (the span was cut
        // from it) and stays registered while `span` holds it, past the synchronize below; the
        // caller promises `dst..dst + span.len` is device memory it may write.
        let queued = unsafe { stream.copy_to_device(at, chunk.ptr().add(*start), *len) };
        if let Err(e) = queued {
            // Wait for what was queued before letting the caller reuse its buffer.
            let _ = stream.synchronize();
            return Err(e);
        }
        at += *len as u64;
    }
    stream.record(0)?;
    wait_marker(stream, polling, 0)?;
    Ok(span.len)
}
