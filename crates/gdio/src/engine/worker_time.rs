//! Where the workers' time goes: file I/O, waiting for a bounce buffer whose copy is still in
//! flight, waiting on the other workers of a split read, queueing copies, or waiting for the
//! last copies to land (the rest of a worker's time is idle or bookkeeping); and how long a
//! task's last copy took to land after it was queued. The answer to "why is this shape slow":
//! workers that are mostly idle want more requests in flight, workers that mostly wait for
//! buffers are behind the GPU link, workers that mostly read are behind the CPU's copy out of
//! the page cache (or the disk), workers of split reads that mostly wait on each other are
//! held by their slowest piece or by the claimer's buffer.
//!
//! Each phase is timed once per chunk or per wait (two clock reads), not per byte, and only on
//! the engine's worker threads; a caller that runs its own small request inline (no hand-off)
//! counts as [`WorkerTime::inline_ns`].

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

thread_local! {
    /// This thread is one of an engine's workers (set once when it starts).
    static WORKER: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread as an engine worker: [`timed`] times its phases from now on.
pub(crate) fn mark_worker() {
    WORKER.with(|w| w.set(true));
}

fn on_worker() -> bool {
    WORKER.with(Cell::get)
}

/// Nanoseconds the engine's workers spent, summed over all workers, since the engine started
/// (a snapshot of running totals: subtract two with [`WorkerTime::since`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct WorkerTime {
    /// In file reads and writes (`pread`, `pwrite`, io_uring), including the copy out of or
    /// into the page cache that the kernel does on the worker's CPU.
    pub file_io_ns: u64,
    /// Waiting for a bounce buffer: its previous copy to or from the GPU was still in flight.
    pub buffer_wait_ns: u64,
    /// Workers of a read split into one bounce buffer (`split_into_one_buffer`) waiting on
    /// each other: a helper for the claimer to publish its buffer, the claimer for the pieces
    /// the helpers are still reading.
    pub split_wait_ns: u64,
    /// Queueing copies to or from the GPU and recording their markers (driver calls).
    pub copy_queue_ns: u64,
    /// Nothing queued, copies in flight: waiting for them to land.
    pub draining_ns: u64,
    /// Submitting threads running their own one-task requests inline (`inline_max_bytes`,
    /// host memory in place): work the workers did not see.
    pub inline_ns: u64,
    /// Summed over tasks (a gathered group of small reads counts once): from a task's last
    /// copy queued to the worker (or a callback) finding it landed. Divide by
    /// [`WorkerTime::copies_landed`] for the mean.
    pub landing_ns: u64,
    /// Tasks, and gathered groups, whose copies landed (the count behind `landing_ns`).
    pub copies_landed: u64,
    /// Summed over requests a worker started: from the request made (and queued) to a worker
    /// claiming its first task. Divide by [`WorkerTime::requests_started`] for the mean.
    pub start_wait_ns: u64,
    /// Requests whose first task a worker claimed (the count behind `start_wait_ns`).
    pub requests_started: u64,
    /// Summed over callers that slept waiting for a request: from the request marked done to
    /// the caller running again. Divide by [`WorkerTime::callers_woken`] for the mean.
    pub wake_ns: u64,
    /// Callers that slept until their request was done (the count behind `wake_ns`).
    pub callers_woken: u64,
    /// Synchronous callers whose read, alone in flight, was done while they polled it
    /// (`lone_caller_polls`): they never slept, so they count in no wake.
    pub callers_polled: u64,
}

impl WorkerTime {
    /// The time spent between `before` and `self` (two snapshots of the same engine).
    pub fn since(&self, before: &WorkerTime) -> WorkerTime {
        WorkerTime {
            file_io_ns: self.file_io_ns.saturating_sub(before.file_io_ns),
            buffer_wait_ns: self.buffer_wait_ns.saturating_sub(before.buffer_wait_ns),
            split_wait_ns: self.split_wait_ns.saturating_sub(before.split_wait_ns),
            copy_queue_ns: self.copy_queue_ns.saturating_sub(before.copy_queue_ns),
            draining_ns: self.draining_ns.saturating_sub(before.draining_ns),
            inline_ns: self.inline_ns.saturating_sub(before.inline_ns),
            landing_ns: self.landing_ns.saturating_sub(before.landing_ns),
            copies_landed: self.copies_landed.saturating_sub(before.copies_landed),
            start_wait_ns: self.start_wait_ns.saturating_sub(before.start_wait_ns),
            requests_started: self.requests_started.saturating_sub(before.requests_started),
            wake_ns: self.wake_ns.saturating_sub(before.wake_ns),
            callers_woken: self.callers_woken.saturating_sub(before.callers_woken),
            callers_polled: self.callers_polled.saturating_sub(before.callers_polled),
        }
    }

    /// The sum of two spans (two passes of a benchmark, say).
    pub fn plus(&self, other: &WorkerTime) -> WorkerTime {
        WorkerTime {
            file_io_ns: self.file_io_ns + other.file_io_ns,
            buffer_wait_ns: self.buffer_wait_ns + other.buffer_wait_ns,
            split_wait_ns: self.split_wait_ns + other.split_wait_ns,
            copy_queue_ns: self.copy_queue_ns + other.copy_queue_ns,
            draining_ns: self.draining_ns + other.draining_ns,
            inline_ns: self.inline_ns + other.inline_ns,
            landing_ns: self.landing_ns + other.landing_ns,
            copies_landed: self.copies_landed + other.copies_landed,
            start_wait_ns: self.start_wait_ns + other.start_wait_ns,
            requests_started: self.requests_started + other.requests_started,
            wake_ns: self.wake_ns + other.wake_ns,
            callers_woken: self.callers_woken + other.callers_woken,
            callers_polled: self.callers_polled + other.callers_polled,
        }
    }

    /// Mean milliseconds from a task's last copy queued to its landing noticed, if any landed.
    pub fn mean_landing_ms(&self) -> Option<f64> {
        mean_ms(self.landing_ns, self.copies_landed)
    }

    /// Mean milliseconds a request waited for a worker to start it, if a worker started any.
    pub fn mean_start_wait_ms(&self) -> Option<f64> {
        mean_ms(self.start_wait_ns, self.requests_started)
    }

    /// Mean milliseconds from a request done to its sleeping caller running again, if any
    /// caller slept.
    pub fn mean_wake_ms(&self) -> Option<f64> {
        mean_ms(self.wake_ns, self.callers_woken)
    }
}

fn mean_ms(ns: u64, count: u64) -> Option<f64> {
    (count > 0).then(|| ns as f64 / count as f64 / 1e6)
}

/// What a worker is doing while a [`Clock`] times it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    FileIo,
    BufferWait,
    SplitWait,
    CopyQueue,
    Draining,
    Inline,
}

/// The running totals behind [`WorkerTime`], shared by an engine's workers.
#[derive(Debug, Default)]
pub(crate) struct Clock {
    file_io: AtomicU64,
    buffer_wait: AtomicU64,
    split_wait: AtomicU64,
    copy_queue: AtomicU64,
    draining: AtomicU64,
    inline: AtomicU64,
    landing: AtomicU64,
    landed: AtomicU64,
    start_wait: AtomicU64,
    started: AtomicU64,
    wake: AtomicU64,
    woken: AtomicU64,
    polled: AtomicU64,
}

fn nanos_since(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

impl Clock {
    /// Adds the time since `since` to `phase`.
    pub(crate) fn add(&self, phase: Phase, since: Instant) {
        let total = match phase {
            Phase::FileIo => &self.file_io,
            Phase::BufferWait => &self.buffer_wait,
            Phase::SplitWait => &self.split_wait,
            Phase::CopyQueue => &self.copy_queue,
            Phase::Draining => &self.draining,
            Phase::Inline => &self.inline,
        };
        total.fetch_add(nanos_since(since), Ordering::Relaxed);
    }

    /// A task whose last copy was queued at `queued` has landed.
    pub(crate) fn landed(&self, queued: Instant) {
        self.landing.fetch_add(nanos_since(queued), Ordering::Relaxed);
        self.landed.fetch_add(1, Ordering::Relaxed);
    }

    /// A worker claimed the first task of a request made at `made` (counted on worker threads
    /// only: a caller running its own request did not wait for one).
    pub(crate) fn started(&self, made: Instant) {
        if on_worker() {
            self.start_wait.fetch_add(nanos_since(made), Ordering::Relaxed);
            self.started.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A caller that slept until its request was done (at `done`) runs again.
    pub(crate) fn woke(&self, done: Instant) {
        self.wake.fetch_add(nanos_since(done), Ordering::Relaxed);
        self.woken.fetch_add(1, Ordering::Relaxed);
    }

    /// A caller polling its lone request saw it done (`lone_caller_polls`).
    pub(crate) fn polled(&self) {
        self.polled.fetch_add(1, Ordering::Relaxed);
    }

    /// The totals now.
    pub(crate) fn snapshot(&self) -> WorkerTime {
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        WorkerTime {
            file_io_ns: r(&self.file_io),
            buffer_wait_ns: r(&self.buffer_wait),
            split_wait_ns: r(&self.split_wait),
            copy_queue_ns: r(&self.copy_queue),
            draining_ns: r(&self.draining),
            inline_ns: r(&self.inline),
            landing_ns: r(&self.landing),
            copies_landed: r(&self.landed),
            start_wait_ns: r(&self.start_wait),
            requests_started: r(&self.started),
            wake_ns: r(&self.wake),
            callers_woken: r(&self.woken),
            callers_polled: r(&self.polled),
        }
    }
}

/// Runs `f`, adding its time to `phase` of `clock` when there is one and this thread is a
/// worker ([`mark_worker`]).
pub(crate) fn timed<T>(clock: Option<&Clock>, phase: Phase, f: impl FnOnce() -> T) -> T {
    let Some(clock) = clock.filter(|_| on_worker()) else { return f() };
    let since = Instant::now();
    let r = f();
    clock.add(phase, since);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_add_up_separately_and_since_subtracts_snapshots() {
        let c = Clock::default();
        let t = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(3));
        c.add(Phase::FileIo, t);
        let a = c.snapshot();
        assert!(a.file_io_ns >= 3_000_000, "{a:?}");
        assert_eq!((a.buffer_wait_ns, a.draining_ns, a.copies_landed), (0, 0, 0));
        let t = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        c.add(Phase::Draining, t);
        c.add(Phase::SplitWait, t);
        c.landed(t);
        c.landed(t);
        let d = c.snapshot().since(&a);
        assert_eq!(d.file_io_ns, 0);
        assert!(d.draining_ns >= 2_000_000);
        assert!(d.split_wait_ns >= 2_000_000 && a.split_wait_ns == 0, "{d:?}");
        assert_eq!(d.copies_landed, 2);
        assert!(d.mean_landing_ms().is_some_and(|ms| ms >= 2.0));
        assert_eq!(d.plus(&d).copies_landed, 4);
        assert_eq!(WorkerTime::default().mean_landing_ms(), None);
    }

    #[test]
    fn start_waits_count_on_workers_and_wakes_on_any_thread() {
        let c = Clock::default();
        let made = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        c.started(made);
        assert_eq!(c.snapshot().requests_started, 0, "a caller's own claim waited for no worker");
        c.woke(made);
        std::thread::scope(|s| {
            s.spawn(|| {
                mark_worker();
                c.started(made);
                c.started(Instant::now());
            });
        });
        let t = c.snapshot();
        assert_eq!((t.requests_started, t.callers_woken), (2, 1));
        assert!(t.mean_start_wait_ms().is_some_and(|ms| ms >= 1.0), "{t:?}");
        assert!(t.mean_wake_ms().is_some_and(|ms| ms >= 2.0));
        let d =
            t.since(&WorkerTime { callers_woken: 1, wake_ns: t.wake_ns, ..WorkerTime::default() });
        assert_eq!((d.callers_woken, d.mean_wake_ms()), (0, None));
        assert_eq!(t.plus(&t).requests_started, 4);
    }

    #[test]
    fn timed_counts_on_worker_threads_only() {
        let c = Clock::default();
        assert_eq!(timed(Some(&c), Phase::FileIo, || 7), 7);
        assert_eq!(c.snapshot(), WorkerTime::default(), "a caller's thread is not timed");
        std::thread::scope(|s| {
            s.spawn(|| {
                mark_worker();
                timed(Some(&c), Phase::CopyQueue, || {
                    std::thread::sleep(std::time::Duration::from_millis(1))
                });
                timed(None, Phase::FileIo, || ());
            });
        });
        let t = c.snapshot();
        assert!(t.copy_queue_ns >= 1_000_000 && t.file_io_ns == 0, "{t:?}");
    }
}
