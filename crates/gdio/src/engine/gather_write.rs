//! Gathering small writes out of GPU memory (`gather_writes`): when several small single-task
//! writes from one GPU are already queued, one worker copies them, of any requests, into
//! consecutive places of one bounce buffer (one batched copy with `gather_batch_copy`, else a
//! copy call each), waits once for the copies to land, and then writes each piece to its
//! file (pieces next to each other in one file with one `pwrite`, `gather_adjacent_runs`),
//! instead of one device→host copy, one wait and one `pwrite` per request in turn. Each
//! request finishes with its own piece: a copy that fails fails the whole group with nothing
//! written; a piece that fails to write fails only its own request.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::gather::{adjacent_runs, group_slot, place, run_bytes, GatherShape};
use super::job::{Counters, Job, TaskResult};
use super::lane::Lane;
use super::plan::Task;
use super::transfer;
use super::worker_time::{timed, Phase};
use crate::error::Error;

/// Runs the tasks of `jobs` (all [`GatherShape::candidate`] writes from `lane`'s GPU) as one
/// group. Returns the tasks that did not fit in the group's bounce buffer: the caller runs
/// them one by one.
pub(crate) fn run_group(
    jobs: &[Arc<Job>],
    lane: &mut Lane,
    shape: &GatherShape,
    counters: &Counters,
) -> Vec<(Arc<Job>, Task)> {
    let Some(slot) = group_slot(jobs, lane, counters) else { return Vec::new() };
    let cap = lane.buffer_size().min(shape.max_bytes);
    let base = lane.buffers[slot].as_mut_ptr();
    // Places first: each piece at the next aligned offset after the one before.
    let (placed, rest) = place(jobs, cap, |_, _| true);
    if placed.is_empty() {
        return rest;
    }
    let copy_from = Instant::now();
    let copies: Vec<(*mut u8, u64, usize)> = placed
        .iter()
        .map(|(job, task, at)| {
            // SAFETY: `at + len <= cap <= buffer size`: inside the bounce buffer.
            let dst = unsafe { base.add(*at) };
            (dst, job.buf.addr + task.rel, task.len as usize)
        })
        .collect();
    // Each device range lies inside its job's buffer (valid until the job is done, after the
    // wait below); the pieces' places in the bounce buffer are disjoint, and the slot (taken
    // above) is not read before its marker is waited for.
    let queued = if shape.batch_copy {
        // SAFETY: as said above, for every entry.
        unsafe { lane.stream.copy_to_host_batch(&copies) }
    } else {
        copies.iter().try_for_each(|&(dst, src, len)| {
            // SAFETY: as said above.
            unsafe { lane.stream.copy_to_host(dst, src, len) }
        })
    };
    let recorded = queued.and_then(|()| lane.record(slot));
    counters.time.add(Phase::CopyQueue, copy_from);
    let landed = recorded.and_then(|seq| {
        timed(Some(&counters.time), Phase::BufferWait, || lane.wait_recorded(seq, slot))
    });
    if let Err(e) = landed {
        // Nothing of the group may still be copying when its requests finish; nothing of it
        // reached a file.
        lane.settle();
        for (job, task, _) in placed {
            job.finish(task, TaskResult::default(), Some(e.clone()));
        }
        return rest;
    }
    counters.gathered_writes.fetch_add(placed.len() as u64, Ordering::Relaxed);
    // Each run of pieces next to each other in one file goes with one `pwrite`, and its
    // requests finish as soon as it is in the file. A run that fails is written again piece by
    // piece (the same bytes), so that each request gets its own result.
    let runs = adjacent_runs(&placed, shape.adjacent_runs);
    counters.adjacent_pieces.fetch_add((placed.len() - runs.len()) as u64, Ordering::Relaxed);
    for run in runs {
        let whole = run.len() > 1 && {
            let (job, task, at) = &placed[run.start];
            let len = run_bytes(&placed, run.clone());
            // SAFETY: the run's pieces follow each other from `base + at`, copied from the
            // device and waited for above.
            unsafe { write_from(job, base.add(*at), task.offset, len, counters) }.is_ok()
        };
        for (job, task, at) in &placed[run] {
            let written = if whole {
                Ok(0)
            } else {
                // SAFETY: `base + at` holds the piece's `task.len` bytes, copied from the
                // device and waited for above.
                unsafe { write_from(job, base.add(*at), task.offset, task.len, counters) }
            };
            match written {
                Ok(_) => {
                    job.finish(*task, TaskResult { bytes: task.len, ..TaskResult::default() }, None)
                }
                Err((bytes, e)) => {
                    job.finish(*task, TaskResult { bytes, ..TaskResult::default() }, Some(e))
                }
            }
        }
    }
    rest
}

/// Writes `len` bytes at `src` to `job`'s file at `offset`, buffered (candidates never insist
/// on `O_DIRECT`), timed as file I/O: the bytes that reached the file, or with the error those
/// that did.
///
/// # Safety
/// `src` must be valid for reads of `len` bytes.
unsafe fn write_from(
    job: &Job,
    src: *const u8,
    offset: u64,
    len: u64,
    counters: &Counters,
) -> Result<u64, (u64, Error)> {
    let file = job.file();
    // SAFETY: the caller's range covers these bytes.
    timed(Some(&counters.time), Phase::FileIo, || unsafe {
        transfer::write_range(
            file,
            src,
            offset,
            len,
            false,
            transfer::direct_align(file),
            job.file_writers,
        )
    })
}
