//! A copy's landing as any thread can ask about it: the marker a stream recorded after the
//! copy ([`super::GpuStream::record`]), shared with the thread that asks
//! ([`super::GpuStream::landing`]). The completion watcher asks it instead of reading a
//! progress word, so the stream runs one operation after each copy (the marker the worker
//! needs anyway for reusing its buffer) instead of two (`completion_watch_events`).

use std::sync::Arc;

/// The markers of one stream, kept alive by every [`Landing`] handed out for them.
pub(crate) trait MarkerSource: Send + Sync {
    /// True once marker `slot`'s record `seq` has been reached. A runtime whose markers only
    /// know their latest record (CUDA events) answers for that one: a later record of the
    /// same slot is reached only after the earlier one. False when the runtime cannot tell (a
    /// failed query): the worker that recorded the marker learns the error itself.
    fn reached(&self, slot: usize, seq: u64) -> bool;
}

/// The marker recorded after a copy, for a thread other than the stream's owner.
#[derive(Clone)]
pub struct Landing {
    source: Arc<dyn MarkerSource>,
    slot: usize,
    seq: u64,
    queue: usize,
}

impl Landing {
    /// Marker `slot`'s record `seq` of `source`, on the queue numbered `queue`.
    pub(crate) fn new(
        source: Arc<dyn MarkerSource>,
        slot: usize,
        seq: u64,
        queue: usize,
    ) -> Landing {
        Landing { source, slot, seq, queue }
    }

    /// True once everything queued before the marker is done (asks the runtime: for CUDA one
    /// `cuEventQuery`). Never blocks.
    pub fn reached(&self) -> bool {
        self.source.reached(self.slot, self.seq)
    }

    /// The queue (stream) the marker was recorded on: the markers of one queue are reached in
    /// the order they were recorded, so a thread asking about many can stop at the first one
    /// of a queue not reached yet.
    pub fn queue(&self) -> usize {
        self.queue
    }
}

impl std::fmt::Debug for Landing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Landing")
            .field("slot", &self.slot)
            .field("seq", &self.seq)
            .field("queue", &self.queue)
            .finish()
    }
}
