//! The worker pool: threads that take jobs of every request from one queue and run their
//! tasks, each worker with its own lanes (stream and bounce ring) per GPU. A worker never waits
//! for a request's copies before it moves on: it polls its lanes between tasks and blocks on
//! their markers only when the queue is empty.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use super::copy_queue::CopyQueues;
use super::gather::{self, GatherShape};
use super::gather_write;
use super::job::{Counters, Job, TaskResult};
use super::lane::{Lane, Polling};
use super::mapped;
use super::numa::{self, GpuNodes};
use super::plan::Task;
use super::ring::{IoChoice, WorkerRing};
use super::transfer::{self, ReadPath};
use super::watcher::{WatchBy, Watcher};
use super::worker_time::{self, timed, Phase};
use crate::error::{Error, Result};
use crate::gpu::GpuRuntime;
use crate::memory::MemoryKind;
use crate::request::Op;

/// Sizes the workers' bounce rings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LaneShape {
    pub size: usize,
    pub count: usize,
    /// Bounce buffers a worker's ring may grow to (for cold reads in flight).
    pub max: usize,
    /// How a worker polls a completion marker before it blocks on it.
    pub polling: Polling,
    /// Streams finish tasks with completion callbacks.
    pub callbacks: bool,
    /// A completion watcher finishes small requests' tasks when their copies land.
    pub watcher: bool,
    /// The watcher asks the markers recorded after the copies on the shared copy streams
    /// instead of a progress word (`completion_watch_events`).
    pub watch_events: bool,
    /// An idle worker polls the queue for the polling's `spin` before it sleeps
    /// ([`super::may_poll_while_idle`]).
    pub poll_for_work: bool,
    /// Streams per GPU the workers queue their copies on (`copy_streams`); 0: one per worker.
    pub copy_streams: usize,
    /// Tasks of at most this many bytes, and gathered groups, queue their copies on the
    /// worker's own stream (`own_stream_max_bytes`); 0: on the shared streams.
    pub own_stream_max: usize,
    /// Bounce buffer size of a worker's own-stream lane.
    pub own_size: usize,
}

impl LaneShape {
    /// Whether copies of `bytes` (a task, or a gathered group when `None`) go on the worker's
    /// own stream rather than the shared ones. With no shared streams every lane is the
    /// worker's own already, so one lane serves all.
    fn own_stream(&self, bytes: Option<u64>) -> bool {
        self.copy_streams > 0
            && self.own_stream_max > 0
            && bytes.is_none_or(|b| b <= self.own_stream_max as u64)
    }
}

/// A worker's lanes: one per GPU queueing on the shared copy streams, and one per GPU on a
/// stream of the worker's own for small copies (`own_stream_max_bytes`).
type Lanes = HashMap<(usize, bool), Lane>;

/// A warm-up request: each worker that takes one makes its lane for `ordinal`, then waits at
/// the barrier so that it cannot take a second one.
struct Warm {
    ordinal: usize,
    barrier: Arc<Barrier>,
    error: Arc<Mutex<Option<Error>>>,
}

enum Work {
    Job(Arc<Job>),
    Warm(Warm),
}

struct Queue {
    jobs: VecDeque<Work>,
    shutdown: bool,
    /// Workers blocked on the condition variable.
    idle: usize,
    /// Of those, how many a submitter has already woken (not yet back from the wait).
    waking: usize,
}

impl Queue {
    /// Counts `n` wake-ups owed to idle workers for new work and returns how many to send:
    /// no more than the workers asleep and not already being woken (a busy worker looks at the
    /// queue before it sleeps, so nothing queued is ever left without a worker).
    fn wakeups_for(&mut self, n: usize) -> usize {
        let k = n.min(self.idle.saturating_sub(self.waking));
        self.waking += k;
        k
    }
}

struct Shared {
    queue: Mutex<Queue>,
    cv: Condvar,
    /// Entries in `queue.jobs`, readable without the lock (a spinning worker watches it).
    queued: AtomicUsize,
    /// Worker threads started.
    started: AtomicUsize,
    /// Workers running a job taken off the queue (the rest are free: polling for work,
    /// waiting for their copies to land, or asleep).
    working: AtomicUsize,
    /// Reads into GPU memory made for this pool and not done yet ([`OpenRead`]).
    reads_open: Arc<AtomicUsize>,
    runtime: Arc<dyn GpuRuntime>,
    shape: LaneShape,
    gather: GatherShape,
    threads: usize,
    counters: Arc<Counters>,
    /// Workers move to their GPU's NUMA node (`numa_affinity`).
    numa: bool,
    nodes: GpuNodes,
    /// The engine's `io_engine`: each worker makes its ring from it.
    io: Arc<IoChoice>,
    /// The pool's completion watcher (`completion_watcher`).
    watcher: Option<Arc<Watcher>>,
    /// The streams the workers' lanes share (`copy_streams`).
    copy_queues: CopyQueues,
}

/// One read into GPU memory counted in its pool's [`Pool::reads_open`] while this lives.
#[derive(Debug)]
pub(crate) struct OpenRead(Arc<AtomicUsize>);

impl Drop for OpenRead {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A fixed set of worker threads, started on first use.
pub(crate) struct Pool {
    shared: Arc<Shared>,
    threads: usize,
    /// Prefix of the workers' thread names.
    name: String,
    handles: Mutex<Vec<JoinHandle<()>>>,
    /// GPUs every worker has its lane for ([`Pool::ensure_warm`]).
    warmed: Mutex<Vec<usize>>,
}

/// What a pool is made of: the engine's runtime, knobs and shared counters (an engine makes
/// its pools from one of these).
#[derive(Clone)]
pub(crate) struct PoolSpec {
    pub runtime: Arc<dyn GpuRuntime>,
    pub threads: usize,
    pub shape: LaneShape,
    pub gather: GatherShape,
    pub counters: Arc<Counters>,
    pub numa: bool,
    pub io: Arc<IoChoice>,
}

impl Pool {
    /// A pool of `spec.threads` workers (started at its first work), named `{name}-{i}`.
    pub(crate) fn new(spec: PoolSpec, name: &str) -> Pool {
        let watcher = spec.shape.watcher.then(|| {
            let name = format!("{name}-watch");
            let by = if spec.shape.watch_events { WatchBy::Events } else { WatchBy::Word };
            Arc::new(Watcher::new(spec.shape.polling, by, &name, spec.counters.clone()))
        });
        Pool {
            shared: Arc::new(Shared {
                queue: Mutex::new(Queue {
                    jobs: VecDeque::new(),
                    shutdown: false,
                    idle: 0,
                    waking: 0,
                }),
                cv: Condvar::new(),
                queued: AtomicUsize::new(0),
                started: AtomicUsize::new(0),
                working: AtomicUsize::new(0),
                reads_open: Arc::new(AtomicUsize::new(0)),
                runtime: spec.runtime,
                shape: spec.shape,
                gather: spec.gather,
                threads: spec.threads,
                counters: spec.counters,
                numa: spec.numa,
                nodes: GpuNodes::default(),
                io: spec.io,
                watcher,
                copy_queues: CopyQueues::new(spec.shape.copy_streams),
            }),
            threads: spec.threads,
            name: name.to_owned(),
            handles: Mutex::new(Vec::new()),
            warmed: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn shape(&self) -> LaneShape {
        self.shared.shape
    }

    pub(crate) fn threads(&self) -> usize {
        self.threads
    }

    fn start(&self) -> Result<()> {
        let mut h = self.handles.lock().unwrap_or_else(|p| p.into_inner());
        while h.len() < self.threads {
            let shared = self.shared.clone();
            let id = h.len();
            let handle = std::thread::Builder::new()
                .name(format!("{}-{id}", self.name))
                .spawn(move || worker_main(shared))
                .map_err(|e| Error::from_io(&e, "cannot start an engine worker thread"))?;
            h.push(handle);
            self.shared.started.fetch_add(1, Ordering::Release);
        }
        Ok(())
    }

    /// Workers that could start new work at once: started, not running a job, and not spoken
    /// for by work already queued (one entry per worker it may use). A worker polling for work
    /// or waiting for its copies to land counts: it takes queued work the moment it sees it.
    pub(crate) fn free_workers(&self) -> usize {
        let sh = &self.shared;
        let busy = sh.working.load(Ordering::Acquire) + sh.queued.load(Ordering::Acquire);
        sh.started.load(Ordering::Acquire).saturating_sub(busy)
    }

    /// Reads into GPU memory of this pool in flight: made and not done, whether queued, running
    /// or waiting for their copies to land.
    pub(crate) fn reads_open(&self) -> usize {
        self.shared.reads_open.load(Ordering::Acquire)
    }

    /// Counts one more read into GPU memory in flight until the guard is dropped (by the job
    /// when it is done, or with it).
    pub(crate) fn open_read(&self) -> OpenRead {
        self.shared.reads_open.fetch_add(1, Ordering::AcqRel);
        OpenRead(self.shared.reads_open.clone())
    }

    /// Workers running a job taken off the queue.
    #[cfg(test)]
    pub(crate) fn working(&self) -> usize {
        self.shared.working.load(Ordering::Acquire)
    }

    /// Workers asleep for want of work, not counting those already being woken.
    #[cfg(test)]
    pub(crate) fn idle_workers(&self) -> usize {
        let q = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        q.idle.saturating_sub(q.waking)
    }

    /// Queues `job` for up to `workers` workers.
    pub(crate) fn submit(&self, job: &Arc<Job>, workers: usize) -> Result<()> {
        self.start()?;
        let n = workers.clamp(1, self.threads);
        let mut q = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        for _ in 0..n {
            q.jobs.push_back(Work::Job(job.clone()));
        }
        self.shared.queued.store(q.jobs.len(), Ordering::Release);
        let wake = q.wakeups_for(n);
        drop(q);
        for _ in 0..wake {
            self.shared.cv.notify_one();
        }
        Ok(())
    }
}

/// Jobs held back by one submitting call, queued together when it flushes them (or drops
/// them): one trip through the queue's lock and one round of wake-ups for all of them, and a
/// queue deep enough at once for each worker to take a share (and gather small reads).
pub(crate) struct Held {
    shared: Arc<Shared>,
    /// Each job with the number of queue entries it gets (the workers it may use).
    jobs: Vec<(Arc<Job>, usize)>,
}

impl Held {
    /// Jobs held now.
    pub(crate) fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Queues every held job.
    pub(crate) fn flush(&mut self) {
        if self.jobs.is_empty() {
            return;
        }
        let mut q = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        let mut entries = 0;
        for (job, n) in self.jobs.drain(..) {
            for _ in 0..n {
                q.jobs.push_back(Work::Job(job.clone()));
            }
            entries += n;
        }
        self.shared.queued.store(q.jobs.len(), Ordering::Release);
        let wake = q.wakeups_for(entries);
        drop(q);
        for _ in 0..wake {
            self.shared.cv.notify_one();
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // A held job that never reached the queue would never finish: its waiter would block.
        self.flush();
    }
}

impl Pool {
    /// Holds `job` (for up to `workers` workers) in `held`, to be queued when `held` is
    /// flushed or dropped; the workers are started now, so that flushing cannot fail.
    pub(crate) fn hold(
        &self,
        job: &Arc<Job>,
        workers: usize,
        held: &mut Option<Held>,
    ) -> Result<()> {
        if held.is_none() {
            self.start()?;
        }
        let n = workers.clamp(1, self.threads);
        held.get_or_insert_with(|| Held { shared: self.shared.clone(), jobs: Vec::new() })
            .jobs
            .push((job.clone(), n));
        Ok(())
    }

    /// Makes every worker allocate its stream and bounce ring for GPU `ordinal` now.
    /// [`Pool::warm`] once per GPU: later calls for a GPU already warmed return at once.
    pub(crate) fn ensure_warm(&self, ordinal: usize) -> Result<()> {
        let mut warmed = self.warmed.lock().unwrap_or_else(|p| p.into_inner());
        if !warmed.contains(&ordinal) {
            self.warm(ordinal)?;
            warmed.push(ordinal);
        }
        Ok(())
    }

    /// Whether [`Pool::ensure_warm`] made GPU `ordinal`'s lanes (waits while it is making them).
    pub(crate) fn is_warm(&self, ordinal: usize) -> bool {
        self.warmed.lock().unwrap_or_else(|p| p.into_inner()).contains(&ordinal)
    }

    pub(crate) fn warm(&self, ordinal: usize) -> Result<()> {
        self.start()?;
        let barrier = Arc::new(Barrier::new(self.threads + 1));
        let error = Arc::new(Mutex::new(None));
        {
            let mut q = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            for _ in 0..self.threads {
                q.jobs.push_back(Work::Warm(Warm {
                    ordinal,
                    barrier: barrier.clone(),
                    error: error.clone(),
                }));
            }
            self.shared.queued.store(q.jobs.len(), Ordering::Release);
        }
        self.shared.cv.notify_all();
        barrier.wait();
        let e = error.lock().unwrap_or_else(|p| p.into_inner()).take();
        match e {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.queue.lock().unwrap_or_else(|p| p.into_inner()).shutdown = true;
        self.shared.cv.notify_all();
        for h in self.handles.lock().unwrap_or_else(|p| p.into_inner()).drain(..) {
            let _ = h.join();
        }
    }
}

/// The worker's lane for GPU `ordinal`: on its own stream when `own`, else on the shared
/// copy streams (made at first use).
fn lane<'a>(
    lanes: &'a mut Lanes,
    shared: &Shared,
    ordinal: usize,
    own: bool,
) -> Result<&'a mut Lane> {
    if shared.numa {
        // Before the lane exists, so its pinned buffers are allocated on the GPU's node.
        numa::place(&shared.nodes, &*shared.runtime, ordinal);
    }
    match lanes.entry((ordinal, own)) {
        std::collections::hash_map::Entry::Occupied(e) => Ok(e.into_mut()),
        std::collections::hash_map::Entry::Vacant(e) => Ok(e.insert(Lane::new(
            &shared.runtime,
            ordinal,
            if own { shared.shape.own_size } else { shared.shape.size },
            (shared.shape.count, shared.shape.max),
            shared.shape.polling,
            (shared.shape.callbacks, shared.watcher.as_ref()),
            if own { None } else { Some(&shared.copy_queues) },
        )?)),
    }
}

fn worker_main(shared: Arc<Shared>) {
    worker_time::mark_worker();
    let mut lanes = Lanes::new();
    let mut ring = WorkerRing::new(shared.io.clone());
    // Polled its copies since it last ran a task: a lane whose stream finishes tasks with
    // callbacks needs no more of this worker, which then sleeps until work arrives.
    let mut polled = false;
    // Host jobs taken off the queue with the one being run (see `take_host_run`).
    let mut host_run: Vec<Arc<Job>> = Vec::new();
    // Polled the queue for new work since it last found some (it sleeps only after that).
    let mut waited = false;
    loop {
        let (work, group) = {
            let mut q = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                if let Some(j) = q.jobs.pop_front() {
                    if matches!(j, Work::Job(_)) {
                        // Before the queue count drops, so the job is never counted free.
                        shared.working.fetch_add(1, Ordering::AcqRel);
                    }
                    let group = take_group(&mut q, &j, &shared);
                    if group.is_empty() {
                        host_run = take_host_run(&mut q, &j, &shared);
                    }
                    shared.queued.store(q.jobs.len(), Ordering::Release);
                    break (Some(j), group);
                }
                let must_poll = lanes.values().any(Lane::needs_worker);
                if must_poll || (!polled && lanes.values().any(Lane::has_in_flight)) {
                    break (None, Vec::new());
                }
                if q.shutdown {
                    return;
                }
                if lanes.values().any(Lane::holds_finished) {
                    // About to wait for work: let go of the requests (and their files) whose
                    // tasks were finished for this worker, outside the queue's lock.
                    drop(q);
                    lanes.values_mut().for_each(Lane::release_finished);
                    q = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
                    continue;
                }
                if !waited && shared.shape.poll_for_work {
                    // Poll for new work before sleeping: a sleeping worker wakes tens of
                    // microseconds after it is woken, which every burst of small requests (a
                    // batch after a batch) would pay. Awake, it is not counted idle, so
                    // submitters skip the wake-up call too.
                    drop(q);
                    waited = true;
                    wait_for_work(&shared);
                    q = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
                    continue;
                }
                q.idle += 1;
                q = shared.cv.wait(q).unwrap_or_else(|p| p.into_inner());
                q.idle -= 1;
                q.waking = q.waking.saturating_sub(1);
            }
        };
        let job = match work {
            // Nothing queued: wait for this worker's copies in flight. Poll for up to `spin`
            // (new work ends the wait at once), then block on the markers.
            None => {
                timed(Some(&shared.counters.time), Phase::Draining, || {
                    wait_for_copies(&mut lanes, &shared)
                });
                polled = true;
                continue;
            }
            Some(Work::Job(j)) => {
                polled = false;
                waited = false;
                j
            }
            Some(Work::Warm(w)) => {
                // Both lanes, the one on its own stream too when small copies use it: a
                // stream-ordered I/O warms the workers before it holds the caller's stream,
                // behind which no GPU resource may be made.
                let mut made = lane(&mut lanes, &shared, w.ordinal, false).map(drop);
                if made.is_ok() && shared.shape.own_stream(None) {
                    made = lane(&mut lanes, &shared, w.ordinal, true).map(drop);
                }
                if let Err(e) = made {
                    w.error.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
                }
                w.barrier.wait();
                continue;
            }
        };
        // Counted working since it took the job off the queue; free again once done with it.
        let _working = Working(&shared.working);
        if !group.is_empty() {
            run_gathered(job, group, &mut lanes, &shared, &mut ring);
            continue;
        }
        while let Some(task) = job.claim() {
            for l in lanes.values_mut().filter(|l| l.has_in_flight()) {
                l.poll();
            }
            run_task(&job, task, &mut lanes, &shared, &mut ring);
        }
        if let Some(split) = &job.split_read {
            // Queued for a piece of a read whose task another worker claimed: read pieces
            // into that worker's buffer (nothing left once this worker claimed it itself).
            job.count_helped_pieces(split.help(&job));
        }
        for job in host_run.drain(..) {
            while let Some(task) = job.claim() {
                run_task(&job, task, &mut lanes, &shared, &mut ring);
            }
        }
    }
}

/// A worker running a job: counted out of [`Shared::working`] when dropped.
struct Working<'a>(&'a AtomicUsize);

impl Drop for Working<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Host-memory jobs of one task queued right behind `first` (one too): taken with it, up to
/// this worker's share of the queue, so that a run of small host reads costs one trip through
/// the queue's lock instead of one per read. Only work already queued is taken.
fn take_host_run(q: &mut Queue, first: &Work, shared: &Shared) -> Vec<Arc<Job>> {
    let small_host =
        |j: &Job| j.tasks.len() == 1 && !matches!(j.buf.kind, MemoryKind::Device { .. });
    let mut run = Vec::new();
    let Work::Job(job) = first else { return run };
    if !small_host(job) {
        return run;
    }
    let share = (q.jobs.len() + 1).div_ceil(shared.threads.max(1)).min(HOST_RUN_MAX);
    while run.len() + 1 < share {
        match q.jobs.front() {
            Some(Work::Job(j)) if small_host(j) => {
                run.push(j.clone());
                q.jobs.pop_front();
            }
            _ => break,
        }
    }
    run
}

/// Jobs a worker takes in one run of small host reads at most.
const HOST_RUN_MAX: usize = 32;

/// When `first` may be gathered and more like it are queued right behind it: takes them off
/// the queue (at most this worker's share of it, so the other workers keep reading in
/// parallel) and returns them. Only work already queued is taken; nothing waits for more.
fn take_group(q: &mut Queue, first: &Work, shared: &Shared) -> Vec<Arc<Job>> {
    let mut group = Vec::new();
    let Work::Job(job) = first else { return group };
    let Some(key) = shared.gather.candidate(job) else { return group };
    let share = (q.jobs.len() + 1).div_ceil(shared.threads.max(1));
    let limit = shared.gather.max_pieces.min(share);
    while group.len() + 1 < limit {
        match q.jobs.front() {
            Some(Work::Job(j)) if shared.gather.candidate(j) == Some(key) => {
                group.push(j.clone());
                q.jobs.pop_front();
            }
            _ => break,
        }
    }
    group
}

/// Runs `first` and `more` (gathering candidates of one GPU and one direction) as one gathered
/// group.
fn run_gathered(
    first: Arc<Job>,
    more: Vec<Arc<Job>>,
    lanes: &mut Lanes,
    shared: &Shared,
    ring: &mut WorkerRing,
) {
    for l in lanes.values_mut().filter(|l| l.has_in_flight()) {
        l.poll();
    }
    let mut jobs = more;
    jobs.insert(0, first);
    let Some((ordinal, op)) = shared.gather.candidate(&jobs[0]) else {
        // Not reached (every member is a candidate); run them one by one all the same.
        for job in &jobs {
            while let Some(task) = job.claim() {
                run_task(job, task, lanes, shared, ring);
            }
        }
        return;
    };
    let rest = match lane(lanes, shared, ordinal, shared.shape.own_stream(None)) {
        Ok(l) if op == Op::Write => {
            gather_write::run_group(&jobs, l, &shared.gather, &shared.counters)
        }
        Ok(l) => gather::run_group(&jobs, l, &shared.gather, &shared.counters, ring),
        Err(e) => {
            for job in &jobs {
                if let Some(task) = job.claim() {
                    job.finish(task, TaskResult::default(), Some(e.clone()));
                }
            }
            return;
        }
    };
    for (job, task) in rest {
        run_task(&job, task, lanes, shared, ring);
    }
}

/// A worker with copies in flight and an empty queue: polls its lanes (finishing tasks as
/// their markers are reached) until none is in flight or work arrives; after `spin` it blocks
/// on the markers of lanes without completion callbacks (the others finish on their own).
fn wait_for_copies(lanes: &mut Lanes, shared: &Shared) {
    let start = Instant::now();
    let polling = shared.shape.polling;
    let new_work = || shared.queued.load(Ordering::Acquire) > 0;
    while start.elapsed() < polling.spin {
        let at = Instant::now();
        lanes.values_mut().filter(|l| l.has_in_flight()).for_each(Lane::poll);
        if !lanes.values().any(Lane::has_in_flight) || new_work() {
            return;
        }
        polling.pause(at, new_work);
    }
    lanes.values_mut().filter(|l| l.needs_worker()).for_each(Lane::drain);
}

/// Polls the queue for up to the polling's `spin`, returning as soon as work is queued.
fn wait_for_work(shared: &Shared) {
    let start = Instant::now();
    let polling = shared.shape.polling;
    while start.elapsed() < polling.spin {
        if shared.queued.load(Ordering::Acquire) > 0 {
            return;
        }
        polling.pause(Instant::now(), || shared.queued.load(Ordering::Acquire) > 0);
    }
}

/// Runs one task; a task whose copies are still in flight is finished later by its lane.
fn run_task(job: &Arc<Job>, task: Task, lanes: &mut Lanes, shared: &Shared, ring: &mut WorkerRing) {
    let MemoryKind::Device { ordinal } = job.buf.kind else {
        return timed(job.clock(), Phase::FileIo, || run_host_task(job, task, ring));
    };
    let l = match lane(lanes, shared, ordinal, shared.shape.own_stream(Some(task.len))) {
        Ok(l) => l,
        Err(e) => return job.finish(task, TaskResult::default(), Some(e)),
    };
    if job.op == Op::Write {
        let (res, err) = transfer::write_from_device(job, task, l);
        if err.is_some() {
            l.settle();
        }
        return job.finish(task, res, err);
    }
    match transfer::read_path(job, &task, true) {
        ReadPath::Mapped => match mapped::read_to_device(job, task, l, &*shared.runtime, ordinal) {
            Ok(r) => job.finish(task, r, None),
            Err(e) => job.finish(task, TaskResult::default(), Some(e)),
        },
        path => {
            let ran = transfer::read_to_device(job, task, l, path, ring);
            match (ran.error, ran.last) {
                (None, Some((seq, slot))) => l.defer(seq, slot, job.clone(), task, ran.result),
                (None, None) => job.finish(task, ran.result, None),
                (Some(e), _) => {
                    l.settle();
                    job.finish(task, ran.result, Some(e));
                }
            }
        }
    }
}

/// Runs one task on host memory (on a worker with its ring, or inline on the submitting thread
/// without one).
pub(crate) fn run_host_task(job: &Job, task: Task, ring: &mut WorkerRing) {
    if job.op == Op::Write {
        let (res, err) = transfer::write_from_host(job, task);
        return job.finish(task, res, err);
    }
    let path = transfer::read_path(job, &task, false);
    match transfer::read_to_host(job, task, path, ring) {
        Ok(r) => job.finish(task, r, None),
        Err(e) => job.finish(task, TaskResult::default(), Some(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_work_wakes_no_more_workers_than_are_asleep_and_not_already_woken() {
        let mut q = Queue { jobs: VecDeque::new(), shutdown: false, idle: 3, waking: 0 };
        assert_eq!(q.wakeups_for(2), 2);
        assert_eq!(q.wakeups_for(5), 1, "one sleeper left unwoken");
        assert_eq!(q.wakeups_for(1), 0, "every sleeper is already being woken");
        q.idle = 0;
        q.waking = 0;
        assert_eq!(q.wakeups_for(4), 0, "busy workers look at the queue before they sleep");
    }
}
