//! A job: one request, split into tasks that workers claim one at a time, and the state its
//! submitter waits on. A task counts as finished only when its bytes have landed (for reads
//! into GPU memory: when the copy of its last chunk is known complete), so a job is done
//! exactly when no worker or copy touches its buffer any more.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use super::plan::Task;
use super::pool::OpenRead;
use crate::error::{Error, ErrorKind};
use crate::file::FileHandle;
use crate::memory::BufferRef;
use crate::request::Op;

/// How the engine reads one job's file: decided per task from the direct-I/O policy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DirectChoice {
    /// Never `O_DIRECT`.
    Never,
    /// `O_DIRECT` for the aligned middle of every task.
    Always,
    /// `O_DIRECT` for tasks whose range is less than this fraction cached.
    WhenCold(f64),
}

/// The outcome of one task (on error: what reached its destination before the error).
#[derive(Debug, Default, Clone, Copy)]
pub struct TaskResult {
    /// Bytes moved.
    pub bytes: u64,
    /// Bytes moved with `O_DIRECT`.
    pub direct_bytes: u64,
    /// Bytes moved by DMA straight from the page cache.
    pub mapped_bytes: u64,
}

/// The file a job reads or writes: borrowed from a submitter that waits for the job before it
/// lets the handle go, or shared with it.
pub(crate) enum JobFile {
    /// The submitter keeps the handle alive until the job is done.
    Borrowed(*const FileHandle),
    /// The job keeps the handle alive itself.
    Shared(Arc<FileHandle>),
}

/// Where the engine counts the bytes of finished jobs.
#[derive(Default, Debug)]
pub(crate) struct Counters {
    pub buffered_read: AtomicU64,
    pub direct_read: AtomicU64,
    pub mapped_read: AtomicU64,
    pub buffered_write: AtomicU64,
    pub direct_write: AtomicU64,
    /// Reads that went in a gathered group.
    pub gathered_reads: AtomicU64,
    /// Gathered reads whose group went with the scatter kernel (`gather_scatter`).
    pub scattered_reads: AtomicU64,
    /// Writes that went in a gathered group (`gather_writes`).
    pub gathered_writes: AtomicU64,
    /// Gathered pieces read or written in one call with the piece before them
    /// (`gather_adjacent_runs`).
    pub adjacent_pieces: AtomicU64,
    /// One-task reads spread over free workers (`split_min_bytes`).
    pub split_reads: AtomicU64,
    /// Pieces of split reads that a worker other than the task's owner read into the owner's
    /// bounce buffer (`split_into_one_buffer`).
    pub split_pieces_helped: AtomicU64,
    /// Split reads whose first parts went to the GPU in copies of their own before the rest
    /// was read (`split_early_copy`, `split_early_copy_parts`; by default the first half).
    pub split_early_copies: AtomicU64,
    /// Tasks the completion watcher finished (before their workers looked).
    pub watcher_finished: AtomicU64,
    /// Requests into or out of GPU memory run on their calling threads.
    pub inline_requests: AtomicU64,
    /// Small requests sent to the workers for a crowd of callers (`inline_max_callers`).
    pub inline_busy: AtomicU64,
    /// Lanes made for calling threads' inline requests.
    pub caller_lanes_made: AtomicU64,
    /// Reads served out of page-cache pins.
    pub pinned_reads: AtomicU64,
    /// Reads into GPU memory served out of read-ahead (`read_ahead_bytes`).
    pub read_ahead_reads: AtomicU64,
    /// Bytes those reads copied out of read-ahead.
    pub read_ahead_bytes: AtomicU64,
    /// Bytes read ahead (reads started).
    pub read_ahead_started: AtomicU64,
    /// Bytes read ahead that no read used (let go).
    pub read_ahead_unused: AtomicU64,
    /// Jobs made and not done yet: the engine has no I/O in flight while this is 0.
    pub jobs_in_flight: std::sync::atomic::AtomicUsize,
    /// Where the workers' time went.
    pub time: super::worker_time::Clock,
}

/// What runs when a job is done, given the job (its outcome is final by then).
pub(crate) type DoneHook = Box<dyn FnOnce(&Job) + Send>;

/// Told when a job completes (a batch waits on one of these for all its entries). A
/// completion is one atomic increment; it takes the lock and wakes the waiter only once the
/// count the waiter asked for is reached, so a batch of many small I/Os costs one wake-up per
/// `get_status`, not one per I/O, and workers finishing at once do not queue on a lock.
#[derive(Debug)]
pub(crate) struct Notifier {
    /// Jobs completed since the notifier was made.
    completions: AtomicU64,
    /// The count a waiter sleeps until (`u64::MAX`: nobody waits).
    wake_at: AtomicU64,
    lock: Mutex<()>,
    cv: Condvar,
    /// How long a waiter polls the count before it sleeps.
    spin: std::time::Duration,
}

impl Default for Notifier {
    fn default() -> Notifier {
        Notifier::with_spin(std::time::Duration::ZERO)
    }
}

impl Notifier {
    /// A notifier whose waiter polls the count for up to `spin` before it sleeps: a sleeping
    /// thread wakes tens of microseconds after it is woken, which a batch of small I/Os that
    /// completes within that time would pay on every `get_status`.
    pub(crate) fn with_spin(spin: std::time::Duration) -> Notifier {
        Notifier {
            completions: AtomicU64::new(0),
            wake_at: AtomicU64::new(u64::MAX),
            lock: Mutex::new(()),
            cv: Condvar::new(),
            spin,
        }
    }

    pub(crate) fn notify(&self) {
        // SeqCst pairs with `wait_for`: the waiter stores `wake_at` then reads `completions`,
        // this adds to `completions` then reads `wake_at`, so at least one sees the other.
        let now = self.completions.fetch_add(1, Ordering::SeqCst) + 1;
        if now >= self.wake_at.load(Ordering::SeqCst) {
            // Taking the lock orders this wake-up after the waiter's last check: a waiter is
            // either before that check (and sees the count) or asleep on the condvar.
            drop(self.lock.lock().unwrap_or_else(|p| p.into_inner()));
            self.cv.notify_all();
        }
    }

    /// Jobs completed so far.
    pub(crate) fn completions(&self) -> u64 {
        self.completions.load(Ordering::SeqCst)
    }

    /// Blocks until at least `target` jobs have completed or `deadline` passed; true when
    /// the count was reached. One waiter at a time (a batch's `get_status` takes `&mut`).
    pub(crate) fn wait_for(&self, target: u64, deadline: Option<Instant>) -> bool {
        if !self.spin.is_zero() {
            let start = Instant::now();
            // (`checked_add`: a spin too long to add is no spin, never a panic.)
            let end = start.checked_add(self.spin).unwrap_or(start);
            let until = deadline.map_or(end, |d| d.min(end));
            while Instant::now() < until {
                if self.completions.load(Ordering::Acquire) >= target {
                    return true;
                }
                std::hint::spin_loop();
            }
        }
        let mut g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.wake_at.store(target, Ordering::SeqCst);
        let reached = loop {
            if self.completions.load(Ordering::SeqCst) >= target {
                break true;
            }
            match deadline {
                None => g = self.cv.wait(g).unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        break false;
                    }
                    g = self.cv.wait_timeout(g, d - now).unwrap_or_else(|p| p.into_inner()).0;
                }
            }
        };
        self.wake_at.store(u64::MAX, Ordering::SeqCst);
        drop(g);
        reached
    }
}

#[derive(Default)]
struct State {
    /// Threads blocked in `wait_until` (completion wakes them only when there are some).
    waiters: usize,
    claimed: usize,
    finished: usize,
    /// No more tasks will be claimed (an error or a cancel).
    stopped: bool,
    canceled: bool,
    done: bool,
    bytes: u64,
    direct_bytes: u64,
    mapped_bytes: u64,
    /// Lowest file offset at which a task came up short (end of file).
    short_at: Option<u64>,
    error: Option<Error>,
    /// Taken by whoever marks the job done, and run once that lock is let go.
    done_hook: Option<DoneHook>,
    /// When the job was marked done (for how late its waiting callers woke).
    done_at: Option<Instant>,
    /// Counts this job among its pool's reads in flight until it is done (or dropped).
    open: Option<OpenRead>,
}

/// What is left to do once a job is marked done and its lock let go ([`Job::announce`]).
struct Completed {
    /// Threads wait in [`Job::wait_until`].
    wake: bool,
    hook: Option<DoneHook>,
}

/// What a finished job moved: bytes counted as `pread` would (up to the first short task), of
/// which direct and page-cache DMA.
pub(crate) type JobOutcome = Result<(u64, u64, u64), Error>;

/// One request in flight.
pub struct Job {
    pub(crate) op: Op,
    file: JobFile,
    pub(crate) buf: BufferRef,
    pub(crate) offset: u64,
    pub(crate) len: u64,
    pub(crate) tasks: Vec<Task>,
    pub(crate) direct: DirectChoice,
    /// Hot ranges go to the GPU by DMA from the page cache.
    pub(crate) page_cache_dma: bool,
    /// Bytes per buffered read into a bounce buffer.
    pub(crate) buffered_chunk: u64,
    /// Large buffered writes into one file in flight at once (`file_writers`; 0: no limit).
    pub(crate) file_writers: usize,
    /// `O_DIRECT` reads a worker keeps in flight for this job's cold ranges in GPU memory.
    pub(crate) direct_in_flight: usize,
    /// A one-task read split over free workers (`split_min_bytes`): its caller waits for
    /// pieces that run side by side, so the completion watcher finishes them however many.
    pub(crate) split: bool,
    /// The pieces of a split read that go into one bounce buffer of the worker that claims the
    /// task (`split_into_one_buffer`); the job then has one task and is queued for the workers
    /// its split counted.
    pub(crate) split_read: Option<super::split_read::SplitRead>,
    /// A write into a memory-backed file (tmpfs, ramfs), noted when the job is made: workers
    /// look at queued jobs that may be done already, whose file the submitter may have
    /// dropped, so nothing that decides how to run a job may read its file later.
    pub(crate) into_memory: bool,
    counters: Option<Arc<Counters>>,
    notifier: Option<Arc<Notifier>>,
    state: Mutex<State>,
    /// When the job was made, just before it is queued (for how long it waited for a worker).
    made: Instant,
    /// `state.done`, readable without the lock (a batch polls many jobs; set with Release after
    /// the last byte landed, so an Acquire read that sees it sees the bytes).
    done: AtomicBool,
    cv: Condvar,
}

// SAFETY: a borrowed `file` points to a FileHandle (Sync) that the submitter keeps alive until
// the job is done, and the buffer stays valid until then by the contract of the unsafe
// submission functions; workers touch both only while running or completing a task, which is
// before the job is done. All mutable state is behind the mutex.
unsafe impl Send for Job {}
// SAFETY: as above.
unsafe impl Sync for Job {}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("op", &self.op)
            .field("offset", &self.offset)
            .field("len", &self.len)
            .field("buf", &self.buf)
            .finish()
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        // A job dropped before it was done (its submission failed) is in flight no more.
        if let (Some(c), false) = (&self.counters, self.is_done()) {
            c.jobs_in_flight.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Job {
    /// A job over `tasks` (a request of `len` bytes at `offset`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        op: Op,
        file: JobFile,
        buf: BufferRef,
        offset: u64,
        len: u64,
        tasks: Vec<Task>,
        direct: DirectChoice,
        counters: Option<Arc<Counters>>,
    ) -> Job {
        let done = tasks.is_empty();
        if let (Some(c), false) = (&counters, done) {
            c.jobs_in_flight.fetch_add(1, Ordering::Relaxed);
        }
        let mut job = Job {
            op,
            file,
            buf,
            offset,
            len,
            tasks,
            direct,
            page_cache_dma: false,
            buffered_chunk: u64::MAX,
            file_writers: 0,
            direct_in_flight: 1,
            split: false,
            split_read: None,
            into_memory: false,
            counters,
            notifier: None,
            state: Mutex::new(State { done, ..State::default() }),
            made: Instant::now(),
            done: AtomicBool::new(done),
            cv: Condvar::new(),
        };
        // The submitter holds the file while the job is made.
        job.into_memory = op == Op::Write && job.file().info().is_memory_backed();
        job
    }

    /// The engine's worker clock, when this job counts into an engine's counters.
    pub(crate) fn clock(&self) -> Option<&super::worker_time::Clock> {
        self.counters.as_deref().map(|c| &c.time)
    }

    /// Counts a split read of this job whose first parts were copied early.
    pub(crate) fn count_early_copy(&self) {
        if let Some(c) = self.counters.as_deref() {
            c.split_early_copies.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts `n` pieces of this job's split read read by a helping worker.
    pub(crate) fn count_helped_pieces(&self, n: u64) {
        if let Some(c) = self.counters.as_deref().filter(|_| n > 0) {
            c.split_pieces_helped.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Completion of this job also notifies `n`.
    pub(crate) fn set_notifier(&mut self, n: Arc<Notifier>) {
        self.notifier = Some(n);
    }

    /// Completion of this job runs `hook` (once, on the thread that completes the job, with
    /// no lock of the job held).
    pub(crate) fn set_done_hook(&mut self, hook: DoneHook) {
        self.state.get_mut().unwrap_or_else(|p| p.into_inner()).done_hook = Some(hook);
    }

    /// Counts this job among its pool's reads in flight (`open`) until it is done.
    pub(crate) fn hold_open(&mut self, open: OpenRead) {
        self.state.get_mut().unwrap_or_else(|p| p.into_inner()).open = Some(open);
    }

    /// Takes the hook back (a submission that failed reports its error itself).
    pub(crate) fn take_done_hook(&self) -> Option<DoneHook> {
        self.lock().done_hook.take()
    }

    /// The file. Valid while the job is not done (see the `Send` impl).
    pub(crate) fn file(&self) -> &FileHandle {
        match &self.file {
            // SAFETY: the submitter keeps the handle alive until the job is done; workers
            // only call this while running a task, which is before that.
            JobFile::Borrowed(p) => unsafe { &**p },
            JobFile::Shared(f) => f,
        }
    }

    /// Which file handle this job is on, as a number: equal for jobs on the same handle. Reads
    /// nothing behind the handle, so it may be asked of a job that is done.
    pub(crate) fn file_id(&self) -> usize {
        match &self.file {
            JobFile::Borrowed(p) => *p as usize,
            JobFile::Shared(f) => Arc::as_ptr(f) as usize,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Claims the next task, or `None` when all are claimed or the job stopped.
    pub(crate) fn claim(&self) -> Option<Task> {
        let mut s = self.lock();
        if s.stopped || s.claimed >= self.tasks.len() {
            return None;
        }
        s.claimed += 1;
        if s.claimed == 1 {
            if let Some(clock) = self.clock() {
                clock.started(self.made);
            }
        }
        Some(self.tasks[s.claimed - 1])
    }

    /// Stops claiming: tasks not started are canceled; tasks in flight still finish. Returns
    /// false when the job was already done.
    pub(crate) fn cancel(&self) -> bool {
        let mut s = self.lock();
        if s.done {
            return false;
        }
        if !s.stopped {
            s.stopped = true;
            if s.claimed < self.tasks.len() {
                s.canceled = true;
            }
        }
        if let Some(done) = self.complete_if_done(&mut s) {
            drop(s);
            self.announce(done);
        }
        true
    }

    /// Records the outcome of a task whose bytes have landed (or that failed, after nothing of
    /// it is in flight any more).
    pub(crate) fn finish(&self, task: Task, result: TaskResult, error: Option<Error>) {
        let mut s = self.lock();
        s.finished += 1;
        s.bytes += result.bytes;
        s.direct_bytes += result.direct_bytes;
        s.mapped_bytes += result.mapped_bytes;
        match error {
            None => {
                if result.bytes < task.len {
                    let at = task.offset + result.bytes;
                    s.short_at = Some(s.short_at.map_or(at, |x: u64| x.min(at)));
                }
            }
            Some(e) => {
                s.stopped = true;
                s.error.get_or_insert(e);
            }
        }
        if let Some(done) = self.complete_if_done(&mut s) {
            drop(s);
            self.announce(done);
        }
    }

    /// Marks the job done when nothing of it is left to run or land; when this call did, hands
    /// back what is left to do ([`Job::announce`]) once the caller has let go of the lock.
    fn complete_if_done(&self, s: &mut State) -> Option<Completed> {
        if s.done || s.finished < s.claimed || !(s.stopped || s.claimed == self.tasks.len()) {
            return None;
        }
        s.done = true;
        s.done_at = Some(Instant::now());
        s.open = None;
        self.done.store(true, Ordering::Release);
        if let Some(c) = &self.counters {
            c.jobs_in_flight.fetch_sub(1, Ordering::Relaxed);
        }
        if s.error.is_none() {
            if let Some(c) = &self.counters {
                let plain = s.bytes.saturating_sub(s.direct_bytes + s.mapped_bytes);
                let (a, b) = match self.op {
                    Op::Read => {
                        c.mapped_read.fetch_add(s.mapped_bytes, Ordering::Relaxed);
                        (&c.buffered_read, &c.direct_read)
                    }
                    Op::Write => (&c.buffered_write, &c.direct_write),
                };
                a.fetch_add(plain, Ordering::Relaxed);
                b.fetch_add(s.direct_bytes, Ordering::Relaxed);
            }
        }
        Some(Completed { wake: s.waiters > 0, hook: s.done_hook.take() })
    }

    /// Wakes the waiters of a job just marked done, tells its notifier and runs its hook, with
    /// the job's lock let go: a waiter woken while the lock is still held would only block on
    /// it again (one more sleep and wake-up per request, tens of microseconds on a VM).
    fn announce(&self, done: Completed) {
        if done.wake {
            self.cv.notify_all();
        }
        if let Some(n) = &self.notifier {
            n.notify();
        }
        if let Some(hook) = done.hook {
            hook(self);
        }
    }

    /// Tells the notifier and the hook about a job that was done at creation (nothing to
    /// move).
    pub(crate) fn notify_done(&self) {
        if let Some(n) = &self.notifier {
            n.notify();
        }
        if let Some(hook) = self.take_done_hook() {
            hook(self);
        }
    }

    /// True once no worker and no copy touches the job's buffer any more.
    pub(crate) fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Blocks until the job is done, or until `deadline`; true when done.
    pub(crate) fn wait_until(&self, deadline: Option<Instant>) -> bool {
        let mut s = self.lock();
        let mut slept = false;
        while !s.done {
            let timeout = match deadline {
                None => None,
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(t) if !t.is_zero() => Some(t),
                    _ => return false,
                },
            };
            s.waiters += 1;
            s = match timeout {
                None => self.cv.wait(s).unwrap_or_else(|p| p.into_inner()),
                Some(t) => self.cv.wait_timeout(s, t).unwrap_or_else(|p| p.into_inner()).0,
            };
            s.waiters -= 1;
            slept = true;
        }
        if let (true, Some(at), Some(clock)) = (slept, s.done_at, self.clock()) {
            clock.woke(at);
        }
        true
    }

    /// The outcome of a done job (call after [`Job::wait_until`] returned true). A write that
    /// failed says how many bytes of the whole request reached the file.
    pub(crate) fn outcome(&self) -> JobOutcome {
        let s = self.lock();
        if let Some(e) = &s.error {
            if self.op == Op::Write {
                return Err(Error::new(
                    e.kind(),
                    format!(
                        "{}; {} of the {} bytes of this write reached the file",
                        e.message(),
                        s.bytes,
                        self.len
                    ),
                )
                .with_errno(e.errno().unwrap_or(libc::EIO))
                .with_path(self.file().path())
                .with_range(self.offset, self.len));
            }
            return Err(e.clone());
        }
        if s.canceled {
            return Err(Error::new(ErrorKind::Io, "the I/O was canceled before it completed")
                .with_errno(libc::ECANCELED)
                .with_path(self.file().path())
                .with_range(self.offset, self.len));
        }
        let total = match s.short_at {
            Some(at) => at - self.offset,
            None => s.bytes,
        };
        Ok((total, s.direct_bytes, s.mapped_bytes))
    }

    /// True when the job was canceled before all its tasks ran.
    pub(crate) fn was_canceled(&self) -> bool {
        let s = self.lock();
        s.canceled && s.error.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_spinning_waiter_keeps_its_deadline_and_sees_completions() {
        let n = Arc::new(Notifier::with_spin(Duration::from_secs(10)));
        let t0 = Instant::now();
        assert!(!n.wait_for(1, Some(t0 + Duration::from_millis(5))), "nothing completed");
        assert!(t0.elapsed() < Duration::from_secs(5), "spun past its deadline");
        let waiter = {
            let n = n.clone();
            std::thread::spawn(move || n.wait_for(2, None))
        };
        n.notify();
        n.notify();
        assert!(waiter.join().unwrap());
        // Past the spin, the waiter sleeps and is woken like any other.
        let n = Arc::new(Notifier::with_spin(Duration::from_micros(50)));
        let waiter = {
            let n = n.clone();
            std::thread::spawn(move || n.wait_for(1, None))
        };
        std::thread::sleep(Duration::from_millis(20));
        n.notify();
        assert!(waiter.join().unwrap());
    }

    #[test]
    fn a_notifier_loses_no_wake_up_under_many_racing_completions() {
        // Rounds of 4 threads × 250 completions racing a waiter that asks, each round, for the
        // round's total: a lost wake-up leaves the waiter asleep until its deadline.
        let n = Arc::new(Notifier::default());
        for round in 1..=200u64 {
            let workers: Vec<_> = (0..4)
                .map(|_| {
                    let n = n.clone();
                    std::thread::spawn(move || (0..250).for_each(|_| n.notify()))
                })
                .collect();
            let deadline = Instant::now() + Duration::from_secs(20);
            assert!(n.wait_for(round * 1000, Some(deadline)), "round {round}: wake-up lost");
            workers.into_iter().for_each(|w| w.join().unwrap());
        }
        assert_eq!(n.completions(), 200_000);
    }

    #[test]
    fn a_notifier_wakes_its_waiter_only_when_the_count_is_reached() {
        let n = Arc::new(Notifier::default());
        let t = {
            let n = n.clone();
            std::thread::spawn(move || n.wait_for(3, None))
        };
        n.notify();
        n.notify();
        std::thread::sleep(Duration::from_millis(20));
        assert!(!t.is_finished(), "woke after 2 of 3 completions");
        n.notify();
        assert!(t.join().unwrap());
        assert_eq!(n.completions(), 3);
    }

    #[test]
    fn a_notifier_wait_times_out_with_the_count_short() {
        let n = Notifier::default();
        n.notify();
        let start = Instant::now();
        assert!(!n.wait_for(2, Some(start + Duration::from_millis(30))));
        assert!(start.elapsed() >= Duration::from_millis(30));
        assert!(n.wait_for(1, Some(start)), "a count already reached needs no time");
    }
}
