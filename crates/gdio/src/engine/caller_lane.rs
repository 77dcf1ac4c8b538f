//! Lanes of the calling threads: a request that is one task into or out of GPU memory runs on
//! the thread that asked for it, with that thread's own stream and bounce buffers, so it pays
//! no hand-off to a worker and no wake-up on either side (on the H200 a 4 KiB read through a
//! worker took 50–80 µs, most of it two thread wake-ups). Lanes are made on first use and
//! live as long as their thread; they are shared by the engines of one runtime and shape.

use std::cell::RefCell;
use std::sync::Arc;

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

/// Runs the tasks of `job` (device memory of GPU `ordinal`) on the calling thread. Returns
/// false, having claimed nothing, when the calling thread cannot have a lane (its stream or
/// buffers cannot be made, or the thread is exiting): then the workers take the job.
pub(crate) fn run(
    runtime: &Arc<dyn GpuRuntime>,
    shape: LaneShape,
    ordinal: usize,
    job: &Job,
) -> bool {
    let key = Arc::as_ptr(runtime) as *const () as usize;
    let ran = LANES.try_with(|cell| {
        let Ok(mut lanes) = cell.try_borrow_mut() else { return false };
        let i = match lanes
            .iter()
            .position(|o| o.runtime == key && o.ordinal == ordinal && o.size == shape.size)
        {
            Some(i) => i,
            None => {
                // Two buffers: reading chunk N+1 overlaps the copy of chunk N within the task.
                let Ok(lane) =
                    Lane::new(runtime, ordinal, shape.size, (2, 2), shape.polling, (false, None))
                else {
                    return false;
                };
                lanes.push(Owned { runtime: key, ordinal, size: shape.size, lane });
                lanes.len() - 1
            }
        };
        while let Some(task) = job.claim() {
            run_task(job, task, &mut lanes[i].lane);
        }
        true
    });
    ran.unwrap_or(false)
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
