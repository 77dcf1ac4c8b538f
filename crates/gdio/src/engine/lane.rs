//! A worker's resources for one GPU: its own stream and a ring of pinned bounce buffers, so
//! reading chunk N+1 overlaps the copy of chunk N.

use std::sync::Arc;

use crate::error::Result;
use crate::gpu::{GpuRuntime, GpuStream, PinnedBuffer};

/// One worker's stream and bounce ring on one GPU.
pub struct Lane {
    pub(crate) stream: Box<dyn GpuStream>,
    pub(crate) buffers: Vec<PinnedBuffer>,
    /// Slot to use next.
    pub(crate) next: usize,
}

impl Lane {
    /// `count` pinned buffers of `size` bytes and a stream with one marker per buffer.
    pub fn new(
        runtime: &Arc<dyn GpuRuntime>,
        ordinal: usize,
        size: usize,
        count: usize,
    ) -> Result<Lane> {
        runtime.bind_thread(ordinal)?;
        let stream = runtime.new_stream(ordinal, count)?;
        let buffers = (0..count)
            .map(|_| PinnedBuffer::new(runtime, ordinal, size))
            .collect::<Result<Vec<_>>>()?;
        Ok(Lane { stream, buffers, next: 0 })
    }

    /// Size of each bounce buffer.
    pub fn buffer_size(&self) -> usize {
        self.buffers[0].len()
    }

    /// Takes the next slot of the ring, waiting until the copy that last used it is done.
    pub fn take_slot(&mut self) -> Result<usize> {
        let slot = self.next;
        self.next = (self.next + 1) % self.buffers.len();
        self.stream.wait(slot)?;
        Ok(slot)
    }
}
