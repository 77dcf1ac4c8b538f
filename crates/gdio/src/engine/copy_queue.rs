//! Copy queues shared by a pool's workers (`copy_streams`). With a stream per worker, every
//! worker's copies share the GPU link at once, so each copy lands only when all the copies
//! running beside it do; a client that waits for each request before sending the next (a
//! few synchronous callers) then waits longer for every one. Workers that queue their copies
//! on a few shared streams have them run one after another in the order queued: the first
//! lands as soon as the link has moved it. Each worker keeps markers and a progress word of
//! its own ([`GpuStream::fork`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::gpu::{GpuRuntime, GpuStream};

/// The shared streams of one pool, made on first use: `per_gpu` for each GPU.
pub(crate) struct CopyQueues {
    per_gpu: usize,
    /// The stream each fork queues on, by (GPU, index).
    roots: Mutex<HashMap<(usize, usize), Box<dyn GpuStream>>>,
    /// Lanes handed a stream so far: the next takes the following queue.
    handed: AtomicUsize,
}

impl CopyQueues {
    /// `per_gpu` shared streams per GPU; 0: none (each lane makes a stream of its own).
    pub(crate) fn new(per_gpu: usize) -> CopyQueues {
        CopyQueues { per_gpu, roots: Mutex::new(HashMap::new()), handed: AtomicUsize::new(0) }
    }

    /// A stream with `slots` markers for a new lane on GPU `ordinal` (its context current on
    /// this thread), queueing on one of the GPU's shared streams in turn. `None` when sharing
    /// is off or the runtime cannot share a stream: the lane then makes a stream of its own.
    pub(crate) fn stream_for(
        &self,
        runtime: &Arc<dyn GpuRuntime>,
        ordinal: usize,
        slots: usize,
    ) -> Option<Box<dyn GpuStream>> {
        if self.per_gpu == 0 {
            return None;
        }
        let index = self.handed.fetch_add(1, Ordering::Relaxed) % self.per_gpu;
        let mut roots = self.roots.lock().unwrap_or_else(|p| p.into_inner());
        let root = match roots.entry((ordinal, index)) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => match runtime.new_stream(ordinal, 1) {
                Ok(s) => e.insert(s),
                Err(err) => {
                    tracing::debug!(error = %err, ordinal, "no shared copy stream; one per lane");
                    return None;
                }
            },
        };
        match root.fork(slots) {
            Ok(s) => Some(s),
            Err(err) => {
                tracing::debug!(error = %err, ordinal, "streams cannot share a queue; one per lane");
                None
            }
        }
    }
}
