//! A worker's resources for one GPU: its own stream, a ring of pinned bounce buffers, and the
//! tasks whose copies are still in flight on that stream. Reading chunk N+1 overlaps the copy
//! of chunk N, across task and request boundaries: a task is finished when the marker recorded
//! after its last copy is reached, which the worker notices when it reuses that buffer, when
//! it polls between tasks, or when it runs out of work (then it blocks on the marker).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::job::{Job, TaskResult};
use super::plan::Task;
use crate::error::{Error, Result};
use crate::gpu::{GpuRuntime, GpuStream, PinnedBuffer};

/// A task whose bytes are on their way to the GPU.
struct InFlight {
    /// Marker sequence number recorded after the task's last copy.
    seq: u64,
    slot: usize,
    job: Arc<Job>,
    task: Task,
    result: TaskResult,
}

/// One worker's stream and bounce ring on one GPU.
pub struct Lane {
    pub(crate) stream: Box<dyn GpuStream>,
    pub(crate) buffers: Vec<PinnedBuffer>,
    /// Slot to use next.
    next: usize,
    /// Sequence number of the last marker recorded in each slot.
    slot_seq: Vec<u64>,
    /// Last sequence number handed out.
    seq: u64,
    /// Every marker up to this sequence number is known reached (the stream is in order).
    reached: u64,
    in_flight: VecDeque<InFlight>,
    /// How long to poll a marker before blocking on it.
    spin: Duration,
}

impl Lane {
    /// `count` pinned buffers of `size` bytes and a stream with one marker per buffer.
    pub fn new(
        runtime: &Arc<dyn GpuRuntime>,
        ordinal: usize,
        size: usize,
        count: usize,
        spin: Duration,
    ) -> Result<Lane> {
        runtime.bind_thread(ordinal)?;
        let stream = runtime.new_stream(ordinal, count)?;
        let buffers = (0..count)
            .map(|_| PinnedBuffer::new(runtime, ordinal, size))
            .collect::<Result<Vec<_>>>()?;
        Ok(Lane {
            stream,
            buffers,
            next: 0,
            slot_seq: vec![0; count],
            seq: 0,
            reached: 0,
            in_flight: VecDeque::new(),
            spin,
        })
    }

    /// Size of each bounce buffer.
    pub fn buffer_size(&self) -> usize {
        self.buffers[0].len()
    }

    /// Takes the next slot of the ring, waiting until the copy that last used it is done (and
    /// finishing the tasks that wait told us about).
    pub fn take_slot(&mut self) -> Result<usize> {
        let slot = self.next;
        self.next = (self.next + 1) % self.buffers.len();
        self.wait_marker(slot)?;
        self.reached = self.reached.max(self.slot_seq[slot]);
        self.retire_reached();
        Ok(slot)
    }

    /// Waits for marker `slot`: polls it for up to `spin` (a blocking wait wakes tens of
    /// microseconds after the copy ends), then blocks.
    fn wait_marker(&mut self, slot: usize) -> Result<()> {
        if !self.spin.is_zero() {
            let start = Instant::now();
            while start.elapsed() < self.spin {
                if self.stream.query(slot)? {
                    return Ok(());
                }
                std::hint::spin_loop();
            }
        }
        self.stream.wait(slot)
    }

    /// Waits until marker `slot`, recorded as sequence `seq`, is reached (spinning first, as
    /// for a slot's reuse).
    pub(crate) fn wait_recorded(&mut self, seq: u64, slot: usize) -> Result<()> {
        self.wait_marker(slot)?;
        self.reached = self.reached.max(seq);
        Ok(())
    }

    /// Records marker `slot` after the copies queued so far; returns its sequence number.
    pub fn record(&mut self, slot: usize) -> Result<u64> {
        self.stream.record(slot)?;
        self.seq += 1;
        self.slot_seq[slot] = self.seq;
        Ok(self.seq)
    }

    /// `task` of `job` finishes when marker `seq` (recorded in `slot`) is reached.
    pub(crate) fn defer(
        &mut self,
        seq: u64,
        slot: usize,
        job: Arc<Job>,
        task: Task,
        result: TaskResult,
    ) {
        self.in_flight.push_back(InFlight { seq, slot, job, task, result });
    }

    fn retire_reached(&mut self) {
        while self.in_flight.front().is_some_and(|f| f.seq <= self.reached) {
            if let Some(f) = self.in_flight.pop_front() {
                f.job.finish(f.task, f.result, None);
            }
        }
    }

    /// Finishes the tasks whose copies are complete, without blocking.
    pub fn poll(&mut self) {
        while let Some(f) = self.in_flight.front() {
            let (seq, slot) = (f.seq, f.slot);
            match self.stream.query(slot) {
                Ok(true) => {
                    self.reached = self.reached.max(seq);
                    self.retire_reached();
                }
                Ok(false) => return,
                Err(e) => return self.fail_all(e),
            }
        }
    }

    /// True when tasks are waiting for their copies.
    pub fn has_in_flight(&self) -> bool {
        !self.in_flight.is_empty()
    }

    /// Blocks until every copy in flight is complete and finishes their tasks.
    pub fn drain(&mut self) {
        while let Some(f) = self.in_flight.front() {
            let (seq, slot) = (f.seq, f.slot);
            if let Err(e) = self.wait_marker(slot) {
                return self.fail_all(e);
            }
            self.reached = self.reached.max(seq);
            self.retire_reached();
        }
    }

    /// After an error: waits for the whole stream (so nothing is in flight any more), then
    /// finishes every waiting task with `error` when the stream itself failed.
    pub fn settle(&mut self) {
        let err = self.stream.synchronize().err();
        self.reached = self.seq;
        match err {
            None => self.retire_reached(),
            Some(e) => self.fail_all(e),
        }
    }

    fn fail_all(&mut self, e: Error) {
        // A stream that failed: synchronize so no copy runs any more, then fail what waited.
        let _ = self.stream.synchronize();
        for f in self.in_flight.drain(..) {
            f.job.finish(f.task, TaskResult::default(), Some(e.clone()));
        }
    }
}
