//! The completion watcher (`completion_watcher`): one engine thread that finishes a task the
//! moment its copies land. Without it a task is finished by its worker, which notices only
//! between two chunks: a request then waits up to one more `pread` (a few hundred
//! microseconds) after its bytes are on the GPU, which a request of one or two tasks pays in
//! full. Unlike a completion callback, the watcher holds nothing up: no host function sits in
//! the stream. It learns of a landing in one of two ways ([`WatchBy`]): by asking the marker
//! the worker recorded after the copies ([`crate::gpu::Landing`]: copies on the pool's shared
//! copy streams, by default, `completion_watch_events`), or by reading the progress word the
//! stream sets in stream order after them ([`crate::gpu::ProgressWord`]: one more stream
//! operation per copy, which costs the link; a worker's own stream, the key off, or runtimes
//! whose markers cannot be shared).
//!
//! The watcher only finishes tasks; buffer reuse still waits on the lane's markers, and the
//! worker still finishes any task the watcher has not reached (each task finishes once).

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::job::Counters;
use super::lane::{Deferred, Polling};
use crate::gpu::{Landing, ProgressWord};

/// How the watcher learns that a task's copies landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WatchBy {
    /// By the marker recorded after them (`completion_watch_events`).
    Events,
    /// By the stream's progress word, written after them.
    Word,
}

/// What a watched task's landing is told by.
#[derive(Clone)]
pub(super) enum Mark {
    /// The stream's progress word reaching this sequence number.
    Word(ProgressWord, u32),
    /// The marker recorded after the task's copies.
    Event(Landing),
}

/// A task waiting for its copies to land.
struct Watched {
    mark: Mark,
    task: Arc<Deferred>,
}

struct Inbox {
    tasks: Vec<Watched>,
    shutdown: bool,
}

struct Shared {
    inbox: Mutex<Inbox>,
    cv: Condvar,
    /// Entries in `inbox.tasks`, readable without the lock (the watcher looks while it polls).
    waiting: AtomicUsize,
    /// `inbox.shutdown`, readable without the lock: the thread ends even while tasks it watches
    /// never land (their workers finish or fail them; the watcher is only a shortcut).
    stop: AtomicBool,
    polling: Polling,
    counters: Arc<Counters>,
}

/// The engine's completion watcher thread (started at the first task it is given). While
/// tasks wait it looks every `completion_poll_us`; after `completion_spin_us` without a landing
/// it looks every 50 µs instead.
pub(crate) struct Watcher {
    shared: Arc<Shared>,
    handle: Mutex<Option<JoinHandle<()>>>,
    /// [`NOT_STARTED`], [`RUNNING`] or [`NO_THREAD`].
    state: AtomicU8,
    name: String,
    by: WatchBy,
}

const NOT_STARTED: u8 = 0;
const RUNNING: u8 = 1;
/// The thread could not be made: tasks are not taken (their workers finish them).
const NO_THREAD: u8 = 2;

impl Watcher {
    /// A watcher that checks its tasks' landings every `polling.every` while any is waiting,
    /// told `by` markers or words, counting the tasks it finishes in `counters`.
    pub(crate) fn new(
        polling: Polling,
        by: WatchBy,
        name: &str,
        counters: Arc<Counters>,
    ) -> Watcher {
        Watcher {
            shared: Arc::new(Shared {
                inbox: Mutex::new(Inbox { tasks: Vec::new(), shutdown: false }),
                cv: Condvar::new(),
                waiting: AtomicUsize::new(0),
                stop: AtomicBool::new(false),
                polling,
                counters,
            }),
            handle: Mutex::new(None),
            state: AtomicU8::new(NOT_STARTED),
            name: name.to_owned(),
            by,
        }
    }

    /// How this watcher wants to be told of landings.
    pub(super) fn by(&self) -> WatchBy {
        self.by
    }

    /// Finishes `task` once `mark` says its copies landed (unless its worker finished it
    /// first).
    pub(super) fn watch(&self, mark: Mark, task: Arc<Deferred>) {
        if self.state.load(Ordering::Acquire) != RUNNING && !self.start() {
            return;
        }
        let mut inbox = self.shared.inbox.lock().unwrap_or_else(|p| p.into_inner());
        inbox.tasks.push(Watched { mark, task });
        self.shared.waiting.store(inbox.tasks.len(), Ordering::Release);
        drop(inbox);
        self.shared.cv.notify_one();
    }

    /// Starts the thread unless that was done (or failed) already; true when it runs.
    fn start(&self) -> bool {
        let mut h = self.handle.lock().unwrap_or_else(|p| p.into_inner());
        match self.state.load(Ordering::Acquire) {
            RUNNING => return true,
            NO_THREAD => return false,
            _ => {}
        }
        let shared = self.shared.clone();
        match std::thread::Builder::new().name(self.name.clone()).spawn(move || run(&shared)) {
            Ok(j) => {
                *h = Some(j);
                self.state.store(RUNNING, Ordering::Release);
                true
            }
            // No thread: the workers finish every task themselves, as without a watcher.
            Err(e) => {
                tracing::debug!(error = %e, "no completion watcher thread");
                self.state.store(NO_THREAD, Ordering::Release);
                false
            }
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.shared.inbox.lock().unwrap_or_else(|p| p.into_inner()).shutdown = true;
        self.shared.stop.store(true, Ordering::Release);
        self.shared.cv.notify_all();
        if let Some(h) = self.handle.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = h.join();
        }
    }
}

/// How long the watcher sleeps between looks once nothing has landed for the polling's
/// `spin` (copies stuck behind a long queue, or a stream that stopped): it then costs a wake-up
/// every this often instead of a busy core.
const BACKOFF: Duration = Duration::from_micros(50);

fn run(shared: &Shared) {
    let mut watched: Vec<Watched> = Vec::new();
    // The queues whose oldest marker asked this look was not reached: their later markers
    // are not asked (one driver query per queue per look, not one per task). Two workers on
    // one shared stream may hand their tasks over in the other order than they recorded their
    // markers; the older task then waits for the younger marker, at most one copy longer (its
    // worker still finishes it when it next looks).
    let mut behind: Vec<usize> = Vec::new();
    // When a task last finished or arrived.
    let mut moved = Instant::now();
    loop {
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        if watched.is_empty() || shared.waiting.load(Ordering::Acquire) > 0 {
            let mut inbox = shared.inbox.lock().unwrap_or_else(|p| p.into_inner());
            while watched.is_empty() && inbox.tasks.is_empty() && !inbox.shutdown {
                inbox = shared.cv.wait(inbox).unwrap_or_else(|p| p.into_inner());
            }
            if inbox.shutdown {
                return;
            }
            if !inbox.tasks.is_empty() {
                moved = Instant::now();
            }
            watched.append(&mut inbox.tasks);
            shared.waiting.store(0, Ordering::Release);
        }
        let at = Instant::now();
        let before = watched.len();
        behind.clear();
        watched.retain(|w| {
            if w.task.is_finished() {
                return false;
            }
            let landed = match &w.mark {
                Mark::Word(word, seq) => word.reached(*seq),
                Mark::Event(l) if behind.contains(&l.queue()) => false,
                Mark::Event(l) => {
                    let reached = l.reached();
                    if !reached {
                        behind.push(l.queue());
                    }
                    reached
                }
            };
            if landed {
                if w.task.finish(None) {
                    shared.counters.watcher_finished.fetch_add(1, Ordering::Relaxed);
                }
                return false;
            }
            true
        });
        if watched.len() < before {
            moved = at;
        }
        if watched.is_empty() {
            continue;
        }
        if at.duration_since(moved) < shared.polling.spin {
            shared.polling.pause(at, || shared.waiting.load(Ordering::Relaxed) > 0);
        } else {
            std::thread::sleep(BACKOFF);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::job::{DirectChoice, Job, JobFile};
    use crate::engine::plan::Task;
    use crate::gpu::{BoxedWord, MarkerSource};
    use crate::memory::{BufferRef, MemoryKind};
    use crate::request::Op;
    use crate::FileHandle;

    /// Markers that are reached when the test says so, counting the questions about each.
    #[derive(Default)]
    struct Switches {
        reached: [AtomicBool; 3],
        asked: [AtomicUsize; 3],
    }

    impl MarkerSource for Switches {
        fn reached(&self, slot: usize, _seq: u64) -> bool {
            self.asked[slot].fetch_add(1, Ordering::Relaxed);
            self.reached[slot].load(Ordering::Acquire)
        }
    }

    /// A one-task read of 4096 bytes of `file` into `dst`, its task claimed and its copy
    /// (as if) queued.
    fn job(file: &Arc<FileHandle>, dst: &mut [u8]) -> (Arc<Job>, Arc<Deferred>) {
        let buf =
            BufferRef { addr: dst.as_mut_ptr() as u64, len: dst.len(), kind: MemoryKind::Host };
        let task = Task { rel: 0, offset: 0, len: dst.len() as u64 };
        let f = JobFile::Shared(file.clone());
        let len = dst.len() as u64;
        let job =
            Arc::new(Job::new(Op::Read, f, buf, 0, len, vec![task], DirectChoice::Never, None));
        // As a worker does before it reads and queues the copy.
        let task = job.claim().expect("one task to claim");
        let d = Deferred::for_test(job.clone(), task);
        (job, d)
    }

    fn settle(until: impl Fn() -> bool) -> bool {
        let end = Instant::now() + Duration::from_secs(10);
        while !until() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(1));
        }
        until()
    }

    /// Two tasks on queue 1 (markers 0 and 1, recorded in that order) and one on queue 2
    /// (marker 2), and one told by a progress word: each finishes once its marker (or word) is
    /// reached, and while queue 1's older marker is not, its younger one is never asked.
    #[test]
    fn markers_finish_their_tasks_and_a_queue_is_asked_once_per_look() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 4096]).unwrap();
        let file = Arc::new(FileHandle::open(&path).unwrap());
        let mut dsts = vec![vec![0u8; 4096]; 4];
        let counters = Arc::new(Counters::default());
        let polling = Polling { spin: Duration::from_secs(5), every: Duration::from_micros(20) };
        let watcher = Watcher::new(polling, WatchBy::Events, "test-watch", counters.clone());
        let switches = Arc::new(Switches::default());
        let source: Arc<dyn MarkerSource> = switches.clone();
        let word = ProgressWord::new(Arc::new(BoxedWord(std::sync::atomic::AtomicU32::new(0))));
        let mut jobs = Vec::new();
        for (i, dst) in dsts.iter_mut().enumerate() {
            let (job, d) = job(&file, dst);
            let mark = match i {
                0 | 1 => Mark::Event(Landing::new(source.clone(), i, 1, 1)),
                2 => Mark::Event(Landing::new(source.clone(), 2, 1, 2)),
                _ => Mark::Word(word.clone(), 5),
            };
            watcher.watch(mark, d);
            jobs.push(job);
        }
        let asked = |slot: usize| switches.asked[slot].load(Ordering::Relaxed);
        assert!(settle(|| asked(0) > 10 && asked(2) > 10), "the watcher asks the queues' heads");
        assert_eq!(
            asked(1),
            0,
            "queue 1's younger marker asked while its older one is not reached"
        );
        assert!(jobs.iter().all(|j| !j.is_done()), "nothing landed, nothing finished");
        switches.reached[2].store(true, Ordering::Release);
        assert!(settle(|| jobs[2].is_done()), "queue 2's task finishes when its marker is reached");
        assert!(!jobs[0].is_done() && !jobs[1].is_done() && !jobs[3].is_done());
        word.store(5);
        assert!(settle(|| jobs[3].is_done()), "the word's task finishes when the word reaches 5");
        switches.reached[0].store(true, Ordering::Release);
        switches.reached[1].store(true, Ordering::Release);
        assert!(settle(|| jobs[0].is_done() && jobs[1].is_done()), "queue 1's tasks finish");
        assert!(asked(1) > 0, "once the older marker is reached the younger one is asked");
        assert_eq!(counters.watcher_finished.load(Ordering::Relaxed), 4);
    }
}
