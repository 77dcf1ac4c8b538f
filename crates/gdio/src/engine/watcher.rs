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
    // are not asked (one driver query per queue per look, not one per task).
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
