//! Gathering small reads into GPU memory: when several small single-task reads to one GPU are
//! already queued, one worker reads them, of any requests, into consecutive places of one
//! bounce buffer (in file order, with one `pread` per run of pieces next to each other in a
//! file, `gather_adjacent_runs`) and sends them with one scatter kernel (`gather_scatter`) or
//! one batched copy, and one completion marker, instead of a copy call and a marker per piece.
//! Each request still finishes when its own piece has landed (the group's marker), and a piece
//! that fails to read fails only its own request. Which requests may be gathered, reads or
//! (with `gather_writes`) writes, is [`GatherShape::candidate`]; a group of writes is
//! `gather_write.rs`.

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::job::{Counters, DirectChoice, Job, TaskResult};
use super::lane::Lane;
use super::plan::Task;
use super::ring::{Shape, WorkerRing};
use super::transfer::{self, ReadPath};
use super::worker_time::{timed, Phase};
use crate::config::Config;
use crate::file::{posix, uring};
use crate::memory::MemoryKind;
use crate::request::Op;

/// Pieces start at multiples of this in the bounce buffer (so every copy's source is aligned
/// the way the DMA engine likes it).
const PIECE_ALIGN: usize = 512;

/// The gathering knobs of the engine's configuration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GatherShape {
    /// Pieces per group at most (under 2: off).
    pub max_pieces: usize,
    /// Bytes per group at most (also at most a bounce buffer).
    pub max_bytes: usize,
    /// Reads of at most this many bytes are candidates.
    pub piece_size: usize,
    /// Use the runtime's batched copy (else one copy call per piece).
    pub batch_copy: bool,
    /// Send the group with the runtime's scatter kernel (`gather_scatter`).
    pub scatter: bool,
    /// Gather small writes out of GPU memory too (`gather_writes`).
    pub writes: bool,
    /// Writes into files that are not memory-backed join only from this many bytes
    /// (`gather_write_disk_min_bytes`).
    pub write_disk_min_bytes: usize,
    /// One `pread`/`pwrite` per run of pieces next to each other in a file and in the bounce
    /// buffer (`gather_adjacent_runs`).
    pub adjacent_runs: bool,
}

impl GatherShape {
    /// The knobs of `config`.
    pub(crate) fn from_config(config: &Config) -> GatherShape {
        GatherShape {
            max_pieces: config.gather_max_pieces,
            max_bytes: config.gather_max_bytes.min(config.bounce_buffer_bytes()),
            piece_size: config.gather_piece_size,
            batch_copy: config.gather_batch_copy,
            scatter: config.gather_scatter,
            writes: config.gather_writes,
            write_disk_min_bytes: config.gather_write_disk_min_bytes,
            adjacent_runs: config.gather_adjacent_runs,
        }
    }

    fn enabled(&self) -> bool {
        self.max_pieces > 1 && self.max_bytes > 0 && self.piece_size > 0
    }

    /// The group `job` may join (its GPU and its direction): a buffered-capable read of one
    /// small task into GPU memory (not split over workers), or with `gather_writes` a buffered
    /// write of one small task out of GPU memory (into a file on disk, of at least
    /// `write_disk_min_bytes`). Reads and writes never share a group.
    pub(crate) fn candidate(&self, job: &Job) -> Option<(usize, Op)> {
        let op_ok = match job.op {
            Op::Read => !job.page_cache_dma,
            Op::Write => {
                self.writes && (job.len >= self.write_disk_min_bytes as u64 || job.into_memory)
            }
        };
        // A read split into one buffer (`split_into_one_buffer`) is one task too, but its
        // workers read it together: never gathered.
        if !self.enabled()
            || !op_ok
            || job.tasks.len() != 1
            || job.split_read.is_some()
            || job.len > self.piece_size.min(self.max_bytes) as u64
            || matches!(job.direct, DirectChoice::Always)
        {
            return None;
        }
        match job.buf.kind {
            MemoryKind::Device { ordinal } => Some((ordinal, job.op)),
            _ => None,
        }
    }
}

/// The lane's next bounce buffer for a group of `jobs`; when none can be had, every job's task
/// finishes with the error and `None` is returned.
pub(crate) fn group_slot(jobs: &[Arc<Job>], lane: &mut Lane, counters: &Counters) -> Option<usize> {
    match timed(Some(&counters.time), Phase::BufferWait, || lane.take_slot()) {
        Ok(s) => Some(s),
        Err(e) => {
            for job in jobs {
                if let Some(task) = job.claim() {
                    job.finish(task, TaskResult::default(), Some(e.clone()));
                }
            }
            None
        }
    }
}

/// A task of a group and its place in the group's bounce buffer.
pub(crate) type Placed = (Arc<Job>, Task, usize);

/// Claims each job's task and places it at the next 512-byte-aligned offset of a bounce buffer
/// of `cap` bytes, in order. Tasks that do not fit, or that `joins` refuses, are returned
/// second, for the caller to run one by one.
pub(crate) fn place(
    jobs: &[Arc<Job>],
    cap: usize,
    joins: impl Fn(&Job, &Task) -> bool,
) -> (Vec<Placed>, Vec<(Arc<Job>, Task)>) {
    let (mut placed, mut rest) = (Vec::with_capacity(jobs.len()), Vec::new());
    let mut at = 0usize;
    for job in jobs {
        let Some(task) = job.claim() else { continue };
        let len = task.len as usize;
        if at + len > cap || !joins(job, &task) {
            rest.push((job.clone(), task));
            continue;
        }
        placed.push((job.clone(), task, at));
        at = (at + len).div_ceil(PIECE_ALIGN) * PIECE_ALIGN;
    }
    (placed, rest)
}

/// `placed` as runs of pieces that follow each other both in one file (the same handle, each
/// starting where the one before ends) and in the bounce buffer: the consecutive requests of a
/// sequential reader or writer. Each range indexes `placed`; every piece is in exactly one
/// run, in order. With `merge` false every piece is a run of its own.
pub(crate) fn adjacent_runs(placed: &[Placed], merge: bool) -> Vec<Range<usize>> {
    let mut runs = Vec::new();
    let mut start = 0;
    for i in 1..=placed.len() {
        let joins = merge && i < placed.len() && {
            let (before, b_task, b_at) = &placed[i - 1];
            let (job, task, at) = &placed[i];
            before.file_id() == job.file_id()
                && b_task.offset + b_task.len == task.offset
                && b_at + b_task.len as usize == *at
        };
        if !joins {
            runs.push(start..i);
            start = i;
        }
    }
    runs
}

/// The bytes of the pieces `run` of `placed` (one call reads or writes them all).
pub(crate) fn run_bytes(placed: &[Placed], run: Range<usize>) -> u64 {
    placed[run].iter().map(|(_, t, _)| t.len).sum()
}

/// How the `n` bytes that one read of a run brought split among its pieces of `lens` bytes,
/// in order: a read comes up short only at the end of the file (one that shrank since the
/// request was checked), so the pieces past it get nothing.
fn run_shares(mut n: usize, lens: impl Iterator<Item = usize>) -> impl Iterator<Item = usize> {
    lens.map(move |len| {
        let got = n.min(len);
        n -= got;
        got
    })
}

/// A piece read into the group's bounce buffer, waiting for its copy.
struct Piece {
    job: Arc<Job>,
    task: Task,
    /// Where in the bounce buffer.
    at: usize,
    /// Bytes read (fewer than the task's only at end of file).
    got: u64,
}

/// Runs the tasks of `jobs` (all [`GatherShape::candidate`]s for `lane`'s GPU) as one group,
/// the pieces' reads through `ring` when it has one for them.
/// Returns the tasks that could not join (a cold range that goes `O_DIRECT`, or no room left):
/// the caller runs them one by one.
pub(crate) fn run_group(
    jobs: &[Arc<Job>],
    lane: &mut Lane,
    shape: &GatherShape,
    counters: &Counters,
    ring: &mut WorkerRing,
) -> Vec<(Arc<Job>, Task)> {
    let Some(slot) = group_slot(jobs, lane, counters) else { return Vec::new() };
    let cap = lane.buffer_size().min(shape.max_bytes);
    let base = lane.buffers[slot].as_mut_ptr();
    // Places first (each piece at the next aligned offset after the one before; in file order
    // when runs are merged, so that a sequential reader's pieces follow each other), then
    // every read at once: one per run of adjacent pieces, through one io_uring submission when
    // the worker's ring serves them, else `pread`s.
    let sorted;
    let order = if shape.adjacent_runs {
        let mut v = jobs.to_vec();
        v.sort_by_key(|job| (job.file_id(), job.offset));
        sorted = v;
        &sorted
    } else {
        jobs
    };
    let (placed, rest) =
        place(order, cap, |job, task| transfer::read_path(job, task, true) == ReadPath::Buffered);
    let runs = adjacent_runs(&placed, shape.adjacent_runs);
    counters.adjacent_pieces.fetch_add((placed.len() - runs.len()) as u64, Ordering::Relaxed);
    let read_from = Instant::now();
    let reads: Vec<uring::Read<'_>> = runs
        .iter()
        .map(|run| {
            let (job, task, at) = &placed[run.start];
            uring::Read {
                fd: job.file().buffered_fd(),
                offset: task.offset,
                len: run_bytes(&placed, run.clone()) as usize,
                // SAFETY: a run's pieces follow each other in the buffer, the last ending at
                // most at `cap <= buffer size`.
                dst: unsafe { base.add(*at) },
            }
        })
        .collect();
    let run_results: Vec<Result<usize, i32>> = match ring.for_reads(reads.len(), Shape::Gathered) {
        // SAFETY: the runs' ranges are disjoint and inside the bounce buffer, whose previous
        // copy is done (slot taken above); nothing else touches them until their copies are
        // queued.
        Some(r) => unsafe { r.read_all(&reads) },
        None => reads
            .iter()
            .map(|r| {
                // SAFETY: as above, one run at a time.
                unsafe { posix::pread_full_raw(r.fd, r.dst, r.len, r.offset) }
            })
            .collect(),
    };
    let mut results: Vec<Result<usize, i32>> = Vec::with_capacity(placed.len());
    for (run, r) in runs.iter().zip(run_results) {
        match r {
            Ok(n) => results.extend(
                run_shares(n, placed[run.clone()].iter().map(|(_, t, _)| t.len as usize)).map(Ok),
            ),
            Err(errno) if run.len() == 1 => results.push(Err(errno)),
            // Each piece again on its own, so that only those that fail report the error.
            Err(_) => results.extend(placed[run.clone()].iter().map(|(job, task, at)| {
                // SAFETY: as above, one piece at a time.
                unsafe {
                    posix::pread_full_raw(
                        job.file().buffered_fd(),
                        base.add(*at),
                        task.len as usize,
                        task.offset,
                    )
                }
            })),
        }
    }
    counters.time.add(Phase::FileIo, read_from);
    let mut pieces: Vec<Piece> = Vec::with_capacity(placed.len());
    for ((job, task, at), r) in placed.into_iter().zip(results) {
        match r {
            Err(errno) => {
                let e = transfer::io_error(
                    job.file(),
                    "buffered read failed",
                    errno,
                    task.offset,
                    task.len,
                );
                job.finish(task, TaskResult::default(), Some(e));
            }
            // At (or past) the end of the file: nothing to copy.
            Ok(0) => job.finish(task, TaskResult::default(), None),
            Ok(n) => pieces.push(Piece { job, task, at, got: n as u64 }),
        }
    }
    if pieces.is_empty() {
        return rest;
    }
    let copy_from = Instant::now();
    // The group's range: from the buffer's start to the end of its last piece.
    let end = pieces.iter().map(|p| p.at + p.got as usize).max().unwrap_or(0);
    let queued = if shape.scatter && u32::try_from(end).is_ok() {
        let scattered: Vec<(u64, u32, u32)> = pieces
            .iter()
            .map(|p| (p.job.buf.addr + p.task.rel, p.at as u32, p.got as u32))
            .collect();
        // SAFETY: each device range lies inside its job's buffer (valid until the job is done,
        // which is after the marker below is reached); the pinned range `base..base + end`
        // stays untouched until the slot's marker is waited for.
        unsafe { lane.stream.copy_to_device_scattered(base, end, &scattered) }
    } else {
        let copies: Vec<(u64, *const u8, usize)> = pieces
            .iter()
            .map(|p| {
                // SAFETY: `p.at + p.got <= cap`, inside the bounce buffer.
                let src = unsafe { base.add(p.at) };
                (p.job.buf.addr + p.task.rel, src as *const u8, p.got as usize)
            })
            .collect();
        if shape.batch_copy {
            // SAFETY: as above, per piece.
            unsafe { lane.stream.copy_to_device_batch(&copies) }
        } else {
            copies.iter().try_for_each(|&(dst, src, len)| {
                // SAFETY: as above.
                unsafe { lane.stream.copy_to_device(dst, src, len) }
            })
        }
        .map(|()| false)
    };
    // Whether the group went with one kernel, and its marker.
    let recorded = queued.and_then(|kernel| Ok((kernel, lane.record(slot)?)));
    counters.time.add(Phase::CopyQueue, copy_from);
    match recorded {
        Ok((kernel, seq)) => {
            counters.gathered_reads.fetch_add(pieces.len() as u64, Ordering::Relaxed);
            if kernel {
                counters.scattered_reads.fetch_add(pieces.len() as u64, Ordering::Relaxed);
            }
            let done = pieces
                .into_iter()
                .map(|p| (p.job, p.task, TaskResult { bytes: p.got, ..TaskResult::default() }))
                .collect();
            lane.defer_all(seq, slot, done);
        }
        Err(e) => {
            // Nothing of the group may still be copying when its requests finish.
            lane.settle();
            for p in pieces {
                p.job.finish(p.task, TaskResult::default(), Some(e.clone()));
            }
        }
    }
    rest
}

#[cfg(test)]
mod tests;
