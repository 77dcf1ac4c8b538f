//! A worker's resources for one GPU: its own stream, a ring of pinned bounce buffers, and the
//! tasks whose copies are still in flight on that stream. Reading chunk N+1 overlaps the copy
//! of chunk N, across task and request boundaries: a task is finished when the marker recorded
//! after its last copy is reached, which the worker notices when it reuses that buffer, when
//! it polls between tasks, or when it runs out of work (then it blocks on the marker). With
//! completion callbacks on, the stream also runs a callback after the task's last copy that
//! finishes it at once, even while the worker is busy reading its next chunk; whichever comes
//! first (callback or worker) finishes the task, exactly once.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::copy_queue::CopyQueues;
use super::job::{Job, TaskResult};
use super::plan::Task;
use super::watcher::{Mark, WatchBy, Watcher};
use crate::error::{Error, Result};
use crate::gpu::{GpuRuntime, GpuStream, PinnedBuffer, ProgressWord};

/// A task whose copies are queued: finished once, by its stream's callback, the completion
/// watcher or the worker.
pub(super) struct Deferred {
    taken: AtomicBool,
    job: Arc<Job>,
    task: Task,
    result: TaskResult,
    /// When its last copy was queued, for the engine's landing time: set on one task per
    /// marker (a gathered group's pieces share one copy, counted once).
    queued: Option<Instant>,
}

impl Deferred {
    /// Finishes the task (with `error`, or with its result) unless that was done already;
    /// true when this call finished it.
    pub(super) fn finish(&self, error: Option<Error>) -> bool {
        if self.taken.swap(true, Ordering::AcqRel) {
            return false;
        }
        if let (Some(clock), Some(queued)) = (self.job.clock(), self.queued) {
            clock.landed(queued);
        }
        match error {
            None => self.job.finish(self.task, self.result, None),
            Some(e) => self.job.finish(self.task, TaskResult::default(), Some(e)),
        }
        true
    }

    pub(super) fn is_finished(&self) -> bool {
        self.taken.load(Ordering::Acquire)
    }

    /// Task `task` of `job`, its copies queued now, for tests of what finishes it.
    #[cfg(test)]
    pub(super) fn for_test(job: Arc<Job>, task: Task) -> Arc<Deferred> {
        let result = TaskResult { bytes: task.len, ..TaskResult::default() };
        Arc::new(Deferred { taken: AtomicBool::new(false), job, task, result, queued: None })
    }
}

/// The most tasks a request may have for the completion watcher to finish them (split reads
/// aside, [`is_watched`]): requests of one or two tasks (up to 2 × `task_size`) are the ones
/// whose callers wait on one landing, and the H200 read them 3–9 % faster with the watcher
/// (1 MiB × 32, 16 MiB × 8; BENCHMARKS.md session 11); the large requests of a checkpoint load
/// read 1.5–4 % slower with their tasks watched, so their workers finish their tasks
/// themselves.
const WATCH_MAX_TASKS: usize = 2;

/// True when the completion watcher finishes `job`'s tasks: a request of at most
/// [`WATCH_MAX_TASKS`] tasks, or a one-task read split over free workers (`split_min_bytes`),
/// however many pieces: its caller waits for pieces that run side by side, as for one task.
pub(super) fn is_watched(job: &Job) -> bool {
    job.tasks.len() <= WATCH_MAX_TASKS || job.split
}

/// How a worker waits for a copy's completion marker: it asks the stream every `every` for up
/// to `spin`, then blocks. Asking back to back from many workers keeps the driver's locks busy
/// for the threads queueing copies; an interval of a few microseconds costs little latency.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Polling {
    /// How long to poll before blocking.
    pub spin: Duration,
    /// The interval between two polls.
    pub every: Duration,
}

impl Polling {
    /// Busy-waits out the rest of one polling interval begun at `since` (microseconds: shorter
    /// than any sleep), returning early once `stop` says so.
    pub(crate) fn pause(&self, since: Instant, stop: impl Fn() -> bool) {
        while since.elapsed() < self.every && !stop() {
            std::hint::spin_loop();
        }
    }
}

/// A task whose bytes are on their way to the GPU.
struct InFlight {
    /// Marker sequence number recorded after the task's last copy.
    seq: u64,
    slot: usize,
    task: Arc<Deferred>,
}

/// Waits for marker `slot` of `stream`: polls it for up to `polling`'s `spin` (a blocking wait
/// wakes tens of microseconds after the copy ends), then blocks.
pub(crate) fn wait_marker(stream: &mut dyn GpuStream, polling: Polling, slot: usize) -> Result<()> {
    let start = Instant::now();
    loop {
        let at = Instant::now();
        if at - start >= polling.spin {
            break;
        }
        if stream.query(slot)? {
            return Ok(());
        }
        polling.pause(at, || false);
    }
    stream.wait(slot)
}

/// One worker's stream and bounce ring on one GPU.
pub struct Lane {
    pub(crate) stream: Box<dyn GpuStream>,
    pub(crate) buffers: Vec<PinnedBuffer>,
    /// What more buffers are made with ([`Lane::ensure_buffers`]): runtime, GPU, size, and
    /// the most the ring may hold (its stream's marker count).
    grow: (Arc<dyn GpuRuntime>, usize, usize, usize),
    /// Slot to use next.
    next: usize,
    /// Sequence number of the last marker recorded in each slot.
    slot_seq: Vec<u64>,
    /// Last sequence number handed out.
    seq: u64,
    /// Every marker up to this sequence number is known reached (the stream is in order).
    reached: u64,
    in_flight: VecDeque<InFlight>,
    /// How to poll a marker before blocking on it.
    polling: Polling,
    /// The stream finishes deferred tasks with a callback (turned off if the runtime has none).
    callbacks: bool,
    /// The engine's completion watcher and this lane's stream's progress word (where the
    /// runtime has one): the watcher finishes tasks by the markers recorded after their copies
    /// ([`WatchBy::Events`] on a shared copy stream that shares them) or by the word, which
    /// the stream then sets to each marker's sequence number.
    watch: Option<(Arc<Watcher>, Option<ProgressWord>)>,
    /// The stream queues on one of the pool's shared copy streams (`copy_streams`), whose
    /// copies the watcher learns of by their markers ([`WatchBy::Events`]); a worker's own
    /// stream (small tasks, gathered groups) keeps the progress word, as measured for it.
    on_shared_queue: bool,
}

impl Lane {
    /// `count` pinned buffers of `size` bytes now (at least 2), room for up to `max` (made
    /// when cold reads want several in flight, [`Lane::ensure_buffers`]: pinned memory costs
    /// set-up time and RAM per worker), and a stream with one marker per buffer;
    /// `callbacks`: deferred tasks are finished by a stream callback as soon as their copies
    /// are done (else only when the worker polls or waits); `watcher`: by the engine's
    /// completion watcher, through the stream's progress word (where the runtime has one);
    /// `queues`: the stream queues its copies on one of these shared streams (else on one of
    /// its own).
    pub(crate) fn new(
        runtime: &Arc<dyn GpuRuntime>,
        ordinal: usize,
        size: usize,
        (count, max): (usize, usize),
        polling: Polling,
        (callbacks, watcher): (bool, Option<&Arc<Watcher>>),
        queues: Option<&CopyQueues>,
    ) -> Result<Lane> {
        let count = count.max(2);
        let max = max.max(count);
        runtime.bind_thread(ordinal)?;
        let (mut stream, on_shared_queue) =
            match queues.and_then(|q| q.stream_for(runtime, ordinal, max)) {
                Some(s) => (s, true),
                None => (runtime.new_stream(ordinal, max)?, false),
            };
        // The word is made here even when the watcher asks markers: a stream that cannot share
        // its markers falls back to it. Without either (the runtime has no word, or it could
        // not be made) the worker finishes this lane's tasks itself, as with the watcher off.
        let watch = watcher.and_then(|w| {
            let word = stream.progress().unwrap_or_else(|e| {
                tracing::debug!(error = %e, "no progress word for the completion watcher");
                None
            });
            (word.is_some() || w.by() == WatchBy::Events).then(|| (w.clone(), word))
        });
        let buffers = (0..count)
            .map(|_| PinnedBuffer::new(runtime, ordinal, size))
            .collect::<Result<Vec<_>>>()?;
        Ok(Lane {
            stream,
            buffers,
            grow: (runtime.clone(), ordinal, size, max),
            next: 0,
            slot_seq: vec![0; max],
            seq: 0,
            reached: 0,
            in_flight: VecDeque::new(),
            polling,
            callbacks,
            watch,
            on_shared_queue,
        })
    }

    /// Size of each bounce buffer.
    pub fn buffer_size(&self) -> usize {
        self.buffers[0].len()
    }

    /// Grows the ring to `n` buffers (at most the count the lane was made for); the ring's
    /// order continues, new slots were never recorded so they are free at once.
    pub fn ensure_buffers(&mut self, n: usize) -> Result<()> {
        let (runtime, ordinal, size, max) = &self.grow;
        while self.buffers.len() < n.min(*max) {
            self.buffers.push(PinnedBuffer::new(runtime, *ordinal, *size)?);
        }
        Ok(())
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

    /// Waits for marker `slot` ([`wait_marker`]).
    fn wait_marker(&mut self, slot: usize) -> Result<()> {
        wait_marker(&mut *self.stream, self.polling, slot)
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
        let queued = Some(Instant::now());
        let d = Arc::new(Deferred { taken: AtomicBool::new(false), job, task, result, queued });
        if self.callbacks {
            let cb = d.clone();
            self.ask_callback(Box::new(move || {
                cb.finish(None);
            }));
        }
        self.watch_tasks(seq, slot, std::slice::from_ref(&d));
        self.in_flight.push_back(InFlight { seq, slot, task: d });
    }

    /// Every `(job, task, result)` of `tasks` finishes when marker `seq` (recorded in `slot`)
    /// is reached: one callback for all of them.
    pub(crate) fn defer_all(
        &mut self,
        seq: u64,
        slot: usize,
        tasks: Vec<(Arc<Job>, Task, TaskResult)>,
    ) {
        let queued = Instant::now();
        let tasks: Vec<Arc<Deferred>> = tasks
            .into_iter()
            .enumerate()
            .map(|(i, (job, task, result))| {
                let queued = (i == 0).then_some(queued);
                Arc::new(Deferred { taken: AtomicBool::new(false), job, task, result, queued })
            })
            .collect();
        if self.callbacks && !tasks.is_empty() {
            let cb = tasks.clone();
            self.ask_callback(Box::new(move || {
                for d in &cb {
                    d.finish(None);
                }
            }));
        }
        self.watch_tasks(seq, slot, &tasks);
        self.in_flight.extend(tasks.into_iter().map(|task| InFlight { seq, slot, task }));
    }

    /// Hands the tasks of `tasks` (finished by marker `seq`, just recorded in `slot`) whose
    /// jobs are small ([`is_watched`]) to the completion watcher, if this lane has one, with
    /// that marker ([`WatchBy::Events`], on a shared copy stream) or else behind the write of
    /// `seq` into the stream's progress word, queued after their copies first (a worker's own
    /// stream, a stream that cannot share its markers, or a watcher that reads words). Large
    /// jobs cost nothing here, not even that write.
    fn watch_tasks(&mut self, seq: u64, slot: usize, tasks: &[Arc<Deferred>]) {
        let small = |d: &&Arc<Deferred>| is_watched(&d.job);
        if !tasks.iter().any(|d| small(&d)) {
            return;
        }
        // Borrowed, not cloned: this runs for every watched copy.
        let Some((watcher, word)) = &self.watch else { return };
        let landing = match watcher.by() {
            WatchBy::Events if self.on_shared_queue => self.stream.landing(slot),
            WatchBy::Events | WatchBy::Word => None,
        };
        let mark = match (landing, word) {
            (Some(landing), _) => Some(Mark::Event(landing)),
            (None, Some(word)) => match self.stream.signal(seq as u32) {
                Ok(()) => Some(Mark::Word(word.clone(), seq as u32)),
                Err(e) => {
                    // The marker stands; the worker finishes this lane's tasks from now on.
                    tracing::debug!(error = %e, "no progress word; the worker finishes its tasks");
                    None
                }
            },
            (None, None) => {
                tracing::debug!("no shared marker and no progress word; the worker finishes");
                None
            }
        };
        match mark {
            Some(mark) => {
                for d in tasks.iter().filter(small) {
                    watcher.watch(mark.clone(), d.clone());
                }
            }
            None => self.watch = None,
        }
    }

    /// Queues `finish` on the stream behind the copies so far; a stream without callbacks is
    /// not asked again (polling still finishes its tasks).
    fn ask_callback(&mut self, finish: Box<dyn FnOnce() + Send>) {
        if let Err(e) = self.stream.notify(finish) {
            tracing::debug!(error = %e, "no completion callbacks; polling markers instead");
            self.callbacks = false;
        }
    }

    fn retire_reached(&mut self) {
        while self.in_flight.front().is_some_and(|f| f.seq <= self.reached) {
            if let Some(f) = self.in_flight.pop_front() {
                f.task.finish(None);
            }
        }
        // Tasks their callbacks finished leave the queue too (their slots are reused later).
        while self.in_flight.front().is_some_and(|f| f.task.is_finished()) {
            self.in_flight.pop_front();
        }
    }

    /// Finishes the tasks whose copies are complete, without blocking.
    pub fn poll(&mut self) {
        while let Some(f) = self.in_flight.front() {
            if f.task.is_finished() {
                self.in_flight.pop_front();
                continue;
            }
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

    /// True when tasks are waiting for their copies and nobody else will finish them: this
    /// lane's worker must poll or wait (with callbacks on, the stream finishes them itself).
    pub fn needs_worker(&self) -> bool {
        !self.callbacks && self.has_in_flight()
    }

    /// True when the lane still lists tasks that the completion watcher or a callback already
    /// finished ([`Lane::release_finished`]).
    pub fn holds_finished(&self) -> bool {
        self.in_flight.iter().any(|f| f.task.is_finished())
    }

    /// Lets go of the tasks already finished that the lane still lists (the watcher finishes
    /// tasks out of the worker's sight): each holds its request, and with it the request's
    /// file, which would otherwise stay open until the worker's next copy.
    pub fn release_finished(&mut self) {
        self.in_flight.retain(|f| !f.task.is_finished());
    }

    /// True when tasks are waiting for their copies.
    pub fn has_in_flight(&self) -> bool {
        self.in_flight.iter().any(|f| !f.task.is_finished())
    }

    /// Blocks until every copy in flight is complete and finishes their tasks.
    pub fn drain(&mut self) {
        while let Some(f) = self.in_flight.front() {
            if f.task.is_finished() {
                self.in_flight.pop_front();
                continue;
            }
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
            f.task.finish(Some(e.clone()));
        }
    }
}
