//! The pool that runs futures' I/O that the engine does not take directly: a fixed number of
//! worker threads taking jobs from one queue.
//!
//! Each job calls the synchronous [`gdio::Driver`] and reports to its [`Completion`]. Futures'
//! parts in GPU memory skip the pool: `io::submit_one` hands them to the engine with
//! `Driver::submit_then`, and the pool then only runs their Python callbacks (an engine worker
//! must not wait for the GIL), and each stream's drainer, which waits for one synchronization
//! for all the parts queued on that stream and hands them to the engine (`sync_point`). Host
//! memory, managed memory and the tails of split reads come here whole.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};

thread_local! {
    static ON_WORKER: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread is a pool worker (which runs jobs without the GIL).
pub fn on_worker() -> bool {
    ON_WORKER.with(Cell::get)
}

/// One unit of work.
pub type Job = Box<dyn FnOnce() + Send + 'static>;

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    closed: bool,
    /// Workers inside `Condvar::wait`.
    sleeping: usize,
    /// Wake-ups sent and not yet taken by a worker leaving `wait`.
    woken: usize,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
}

/// A bounded pool of workers over an unbounded queue of jobs (100,000 outstanding futures cost
/// 100,000 queue entries, not threads).
pub struct Dispatch {
    shared: Arc<Shared>,
    workers: usize,
}

impl Dispatch {
    /// A pool of `workers` threads (at least one).
    pub fn new(workers: usize) -> std::io::Result<Dispatch> {
        let workers = workers.max(1);
        let shared = Arc::new(Shared::default());
        for i in 0..workers {
            let s = shared.clone();
            std::thread::Builder::new().name(format!("gdio-py-{i}")).spawn(move || worker(&s))?;
        }
        Ok(Dispatch { shared, workers })
    }

    /// Number of worker threads.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Queues `job`; a free worker runs it. The caller wakes a sleeping worker only when no
    /// wake-up is on its way already; a woken worker wakes the next one if jobs remain (see
    /// `worker`). So a burst of submits costs the submitting thread about one system call per
    /// worker wake-up time, not one per job.
    pub fn submit(&self, job: Job) {
        let mut q = self.shared.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.jobs.push_back(job);
        let wake = q.sleeping > 0 && q.woken == 0;
        if wake {
            q.woken += 1;
        }
        drop(q);
        if wake {
            self.shared.ready.notify_one();
        }
    }
}

impl Drop for Dispatch {
    /// Workers finish the jobs already queued, then exit.
    fn drop(&mut self) {
        let mut q = self.shared.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.closed = true;
        drop(q);
        self.shared.ready.notify_all();
    }
}

fn worker(shared: &Shared) {
    ON_WORKER.with(|w| w.set(true));
    loop {
        let (job, wake) = {
            let mut q = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
            let job = loop {
                if let Some(job) = q.jobs.pop_front() {
                    break job;
                }
                if q.closed {
                    return;
                }
                // Counted under the lock that `wait` gives up only once asleep, so `submit`
                // sees every sleeper. A worker leaving `wait` takes one wake-up, sent or
                // spurious; either way it is awake and empties the queue before it sleeps
                // again, waking the next sleeper while jobs remain, so no job waits while
                // every worker sleeps with no wake-up on its way.
                q.sleeping += 1;
                q = shared.ready.wait(q).unwrap_or_else(|e| e.into_inner());
                q.sleeping -= 1;
                q.woken = q.woken.saturating_sub(1);
            };
            // More jobs than this worker: pass the wake-up on (one at a time, as `submit`).
            let wake = !q.jobs.is_empty() && q.sleeping > 0 && q.woken == 0;
            if wake {
                q.woken += 1;
            }
            (job, wake)
        };
        if wake {
            shared.ready.notify_one();
        }
        // A panic in one job must not take the worker (and every later future) with it. Jobs
        // catch their own panics to complete their future with an error (`io::run_part`).
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn runs_every_job_on_few_threads() {
        let d = Dispatch::new(3).unwrap();
        let count = Arc::new(AtomicUsize::new(0));
        let names = Arc::new(Mutex::new(std::collections::HashSet::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        for i in 0..10_000usize {
            let (c, n, tx) = (count.clone(), names.clone(), tx.clone());
            d.submit(Box::new(move || {
                c.fetch_add(i, Ordering::Relaxed);
                n.lock().unwrap().insert(std::thread::current().name().unwrap().to_owned());
                tx.send(()).unwrap();
            }));
        }
        for _ in 0..10_000 {
            rx.recv().unwrap();
        }
        assert_eq!(count.load(Ordering::Relaxed), (0..10_000).sum::<usize>());
        assert!(names.lock().unwrap().len() <= 3);
    }

    #[test]
    fn a_late_job_wakes_a_sleeping_worker() {
        let d = Dispatch::new(4).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        for round in 0..20u32 {
            // Every worker asleep, then one job, then a burst.
            std::thread::sleep(std::time::Duration::from_millis(5));
            let tx1 = tx.clone();
            d.submit(Box::new(move || tx1.send(round).unwrap()));
            let timeout = std::time::Duration::from_secs(10);
            assert_eq!(rx.recv_timeout(timeout).unwrap(), round);
            for _ in 0..50 {
                let tx1 = tx.clone();
                d.submit(Box::new(move || {
                    std::thread::sleep(std::time::Duration::from_micros(200));
                    tx1.send(round).unwrap()
                }));
            }
            for _ in 0..50 {
                assert_eq!(rx.recv_timeout(timeout).unwrap(), round);
            }
        }
    }

    #[test]
    fn burst_wakes_more_than_one_worker() {
        let d = Dispatch::new(4).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let names = Arc::new(Mutex::new(std::collections::HashSet::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        for _ in 0..64 {
            let (n, tx) = (names.clone(), tx.clone());
            d.submit(Box::new(move || {
                n.lock().unwrap().insert(std::thread::current().name().unwrap().to_owned());
                std::thread::sleep(std::time::Duration::from_millis(2));
                tx.send(()).unwrap();
            }));
        }
        for _ in 0..64 {
            rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        }
        // The woken worker passes the wake-up on while jobs remain.
        assert!(names.lock().unwrap().len() > 1);
    }

    #[test]
    fn many_submitters_lose_no_job() {
        let d = Arc::new(Dispatch::new(3).unwrap());
        let count = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = std::sync::mpsc::channel();
        let submitters: Vec<_> = (0..4)
            .map(|t| {
                let (d, count, tx) = (d.clone(), count.clone(), tx.clone());
                std::thread::spawn(move || {
                    for i in 0..5_000usize {
                        if (i + t) % 700 == 0 {
                            // Let the workers run dry and sleep now and then.
                            std::thread::sleep(std::time::Duration::from_millis(1));
                        }
                        let (count, tx) = (count.clone(), tx.clone());
                        d.submit(Box::new(move || {
                            count.fetch_add(1, Ordering::Relaxed);
                            tx.send(()).unwrap();
                        }));
                    }
                })
            })
            .collect();
        for s in submitters {
            s.join().unwrap();
        }
        for _ in 0..20_000 {
            rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        }
        assert_eq!(count.load(Ordering::Relaxed), 20_000);
    }

    #[test]
    fn queued_jobs_finish_after_drop() {
        let d = Dispatch::new(1).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        for i in 0..100u32 {
            let tx = tx.clone();
            d.submit(Box::new(move || tx.send(i).unwrap()));
        }
        drop(d);
        let got: Vec<u32> = (0..100).map(|_| rx.recv().unwrap()).collect();
        assert_eq!(got, (0..100).collect::<Vec<_>>());
    }
}
