//! The worker pool: threads that take jobs from a queue and run their tasks, each worker with
//! its own lanes (stream and bounce ring) per GPU.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::thread::JoinHandle;

use super::job::Job;
use super::lane::Lane;
use super::mapped;
use super::transfer::{self, ReadPath};
use crate::backend::Op;
use crate::error::{Error, Result};
use crate::gpu::GpuRuntime;
use crate::memory::MemoryKind;

/// Sizes the workers' bounce rings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LaneShape {
    pub size: usize,
    pub count: usize,
}

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
}

struct Shared {
    queue: Mutex<Queue>,
    cv: Condvar,
    runtime: Arc<dyn GpuRuntime>,
    shape: LaneShape,
}

/// A fixed set of worker threads, started on first use.
pub(crate) struct Pool {
    shared: Arc<Shared>,
    threads: usize,
    handles: Mutex<Vec<JoinHandle<()>>>,
}

impl Pool {
    pub(crate) fn new(runtime: Arc<dyn GpuRuntime>, threads: usize, shape: LaneShape) -> Pool {
        Pool {
            shared: Arc::new(Shared {
                queue: Mutex::new(Queue { jobs: VecDeque::new(), shutdown: false }),
                cv: Condvar::new(),
                runtime,
                shape,
            }),
            threads,
            handles: Mutex::new(Vec::new()),
        }
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
                .name(format!("gdio-worker-{id}"))
                .spawn(move || worker_main(shared))
                .map_err(|e| Error::from_io(&e, "cannot start an engine worker thread"))?;
            h.push(handle);
        }
        Ok(())
    }

    /// Queues `job` for up to `workers` workers.
    pub(crate) fn submit(&self, job: &Arc<Job>, workers: usize) -> Result<()> {
        self.start()?;
        let mut q = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        for _ in 0..workers.clamp(1, self.threads) {
            q.jobs.push_back(Work::Job(job.clone()));
        }
        drop(q);
        self.shared.cv.notify_all();
        Ok(())
    }
}

impl Pool {
    /// Makes every worker allocate its stream and bounce ring for GPU `ordinal` now.
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

fn lane<'a>(
    lanes: &'a mut HashMap<usize, Lane>,
    shared: &Shared,
    ordinal: usize,
) -> Result<&'a mut Lane> {
    match lanes.entry(ordinal) {
        std::collections::hash_map::Entry::Occupied(e) => Ok(e.into_mut()),
        std::collections::hash_map::Entry::Vacant(e) => Ok(e.insert(Lane::new(
            &shared.runtime,
            ordinal,
            shared.shape.size,
            shared.shape.count,
        )?)),
    }
}

fn worker_main(shared: Arc<Shared>) {
    let mut lanes: HashMap<usize, Lane> = HashMap::new();
    loop {
        let work = {
            let mut q = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                if let Some(j) = q.jobs.pop_front() {
                    break j;
                }
                if q.shutdown {
                    return;
                }
                q = shared.cv.wait(q).unwrap_or_else(|p| p.into_inner());
            }
        };
        let job = match work {
            Work::Job(j) => j,
            Work::Warm(w) => {
                if let Err(e) = lane(&mut lanes, &shared, w.ordinal) {
                    w.error.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
                }
                w.barrier.wait();
                continue;
            }
        };
        job.enter();
        let mut used: Option<usize> = None;
        while let Some((_, task)) = job.claim() {
            let device = matches!(job.buf.kind, MemoryKind::Device { .. });
            let path = (job.op == Op::Read).then(|| transfer::read_path(&job, &task, device));
            let result = match (path, job.buf.kind) {
                (path, MemoryKind::Device { ordinal }) => {
                    match lane(&mut lanes, &shared, ordinal) {
                        Ok(l) => {
                            used = Some(ordinal);
                            match path {
                                Some(ReadPath::Mapped) => {
                                    mapped::read_to_device(&job, task, l, &*shared.runtime, ordinal)
                                }
                                Some(p) => transfer::read_to_device(&job, task, l, p),
                                None => transfer::write_from_device(&job, task, l),
                            }
                        }
                        Err(e) => Err(e),
                    }
                }
                (Some(p), _) => transfer::read_to_host(&job, task, p),
                (None, _) => transfer::write_from_host(&job, task),
            };
            job.finish(task, result);
        }
        let sync_err =
            used.and_then(|o| lanes.get_mut(&o)).and_then(|l| l.stream.synchronize().err());
        job.leave(sync_err);
    }
}
