//! Lanes of the calling threads: a request that is one task into or out of GPU memory runs on
//! the thread that asked for it, with that thread's own stream and bounce buffers, so it pays
//! no hand-off to a worker and no wake-up on either side (on the H200 a 4 KiB read through a
//! worker took 50–80 µs, most of it two thread wake-ups). Lanes are made on first use and
//! shared by the engines of one runtime and shape. A thread's lanes of a runtime that no
//! engine uses any more (its drivers were dropped) are dropped, with their pinned buffers, at
//! that thread's next request here or by [`release_unused`]; otherwise they live as long as
//! the thread.

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use super::job::{Job, TaskResult};
use super::lane::Lane;
use super::plan::Task;
use super::pool::LaneShape;
use super::ring::WorkerRing;
use super::transfer::{self, ReadPath};
use crate::gpu::GpuRuntime;
use crate::request::Op;

struct Owned {
    /// The runtime's address: lanes are only reused for the runtime that made them.
    runtime: usize,
    ordinal: usize,
    size: usize,
    lane: Lane,
}

thread_local! {
    static LANES: RefCell<Vec<Owned>> = const { RefCell::new(Vec::new()) };
}

/// Runtimes (by address) that engines use, with how many engines use each. A lane holds its
/// runtime alive, so an address here is never reused by another runtime while a lane has it.
static LIVE: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

pub(super) fn key_of(runtime: &Arc<dyn GpuRuntime>) -> usize {
    Arc::as_ptr(runtime) as *const () as usize
}

/// An engine over `runtime` was made.
pub(crate) fn engine_started(runtime: &Arc<dyn GpuRuntime>) {
    let key = key_of(runtime);
    let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    match live.iter_mut().find(|(k, _)| *k == key) {
        Some((_, n)) => *n += 1,
        None => live.push((key, 1)),
    }
}

/// An engine over `runtime` was dropped.
pub(crate) fn engine_stopped(runtime: &Arc<dyn GpuRuntime>) {
    let key = key_of(runtime);
    let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(i) = live.iter().position(|(k, _)| *k == key) {
        live[i].1 -= 1;
        if live[i].1 == 0 {
            live.swap_remove(i);
        }
    }
}

/// Drops the items of `items` (a thread's lanes or streams, each of the runtime `runtime_of`
/// says) whose runtime no engine uses, except those of runtime `keep`.
pub(super) fn retain_live<T>(items: &mut Vec<T>, keep: usize, runtime_of: impl Fn(&T) -> usize) {
    if items.iter().all(|o| runtime_of(o) == keep) {
        return;
    }
    let live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    items.retain(|o| runtime_of(o) == keep || live.iter().any(|(k, _)| *k == runtime_of(o)));
}

/// Drops the calling thread's lanes (streams and pinned bounce buffers) and its streams for
/// reads out of page-cache pins, of runtimes that no engine uses any more: what a dropped
/// driver left on this thread.
pub fn release_unused() {
    let _ = LANES.try_with(|cell| {
        if let Ok(mut lanes) = cell.try_borrow_mut() {
            retain_live(&mut lanes, 0, |o| o.runtime);
        }
    });
    super::pinned_read::release_unused();
}

/// Runs the tasks of `job` (device memory of GPU `ordinal`) on the calling thread; `Some(true)`
/// when the thread's lane was made for it. Returns `None`, having claimed nothing, when the
/// calling thread cannot have a lane (its stream or buffers cannot be made, the thread is
/// exiting, or it has none and `may_make` is false): then the workers take the job.
pub(crate) fn run(
    runtime: &Arc<dyn GpuRuntime>,
    shape: LaneShape,
    ordinal: usize,
    job: &Job,
    may_make: bool,
) -> Option<bool> {
    let key = key_of(runtime);
    let ran = LANES.try_with(|cell| {
        let Ok(mut lanes) = cell.try_borrow_mut() else { return None };
        retain_live(&mut lanes, key, |o| o.runtime);
        let mut made = false;
        let i = match lanes
            .iter()
            .position(|o| o.runtime == key && o.ordinal == ordinal && o.size == shape.size)
        {
            Some(i) => i,
            None if !may_make => return None,
            None => {
                // Two buffers: reading chunk N+1 overlaps the copy of chunk N within the task.
                let Ok(lane) = Lane::new(
                    runtime,
                    ordinal,
                    shape.size,
                    (2, 2),
                    shape.polling,
                    (false, None),
                    None,
                ) else {
                    return None;
                };
                lanes.push(Owned { runtime: key, ordinal, size: shape.size, lane });
                made = true;
                lanes.len() - 1
            }
        };
        while let Some(task) = job.claim() {
            run_task(job, task, &mut lanes[i].lane);
        }
        Some(made)
    });
    ran.ok().flatten()
}

/// One task on `l`, finished before returning (its copies waited for).
fn run_task(job: &Job, task: Task, l: &mut Lane) {
    if job.op == Op::Write {
        let (res, err) = transfer::write_from_device(job, task, l);
        if err.is_some() {
            l.settle();
        }
        return job.finish(task, res, err);
    }
    let path = transfer::read_path(job, &task, true);
    debug_assert!(!matches!(path, ReadPath::Mapped), "mapped reads are not run inline");
    let ran = transfer::read_to_device(job, task, l, path, &mut WorkerRing::none());
    match (ran.error, ran.last) {
        (None, Some((seq, slot))) => match l.wait_recorded(seq, slot) {
            Ok(()) => job.finish(task, ran.result, None),
            Err(e) => {
                l.settle();
                job.finish(task, TaskResult::default(), Some(e));
            }
        },
        (None, None) => job.finish(task, ran.result, None),
        (Some(e), _) => {
            l.settle();
            job.finish(task, ran.result, Some(e));
        }
    }
}
