//! A one-task read into GPU memory split over free workers into one bounce buffer
//! (`split_into_one_buffer`): the worker that claims the task (the owner) takes a bounce buffer
//! of its lane and publishes it; the free workers the job was queued for read pieces of the
//! task into their places of that buffer; the owner reads pieces too, waits for the others'
//! and queues one host→device copy of the whole task. The reads run side by side as with
//! pieces of their own, but the link sees one large copy instead of one per piece (H200,
//! KvikIO's 4 MiB reads from 8 threads through gdio's libcufile: 46.5–48.5 GB/s against
//! 43.7–45.2 with a copy per piece, BENCHMARKS.md session 32).
//!
//! Protocol, all lock-free but the results: a piece is read by whoever takes its index
//! (`next`), and only once the buffer is published; the owner takes every index it can and
//! then waits until every taken piece is counted `done`, so no helper touches the buffer or
//! the file after the owner moves on (the job is not done before then). An owner that cannot
//! get a buffer closes the read instead, and helpers then leave without reading.
//!
//! Both waits (a helper's for the buffer, the owner's for the pieces others still read) count
//! as [`super::WorkerTime::split_wait_ns`], so `gdio bench` and the libcufile's summary say
//! when the workers of split reads spend their time waiting on each other.
//!
//! With early copies (`split_early_copy`, a read alone in flight), the task is cut into
//! `split_early_copy_parts` runs of pieces: the owner is told as soon as every piece up to the
//! end of a run is read in full, while it reads or waits, and queues the copy of the bytes not
//! yet queued then; whatever is left goes in a last copy at the end. A piece that fails or
//! comes short is never counted, so no copy passes it: a read whose first piece fails keeps
//! its one copy at the end.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::job::{Job, TaskResult};
use super::plan::Task;
use crate::error::{Error, Result};

/// What reading one piece came to: bytes read and of them direct, or the error; `None` until
/// read.
type PieceOutcome = Option<Result<(u64, u64)>>;

/// The pieces of one split task and who read what.
#[derive(Debug)]
pub(crate) struct SplitRead {
    /// The pieces; `rel` counts from the job's start, which is its one task's start and so
    /// the published `base`.
    pieces: Vec<Task>,
    /// Workers the job is queued for (the claimer and its helpers), at most one per piece.
    workers: usize,
    /// Where piece offsets start: the owner's bounce buffer plus the task's in-buffer shift;
    /// 0 until published.
    base: AtomicUsize,
    /// The owner reads with `O_DIRECT` (published with `base`).
    direct: AtomicBool,
    /// The owner gave up before publishing: helpers leave.
    closed: AtomicBool,
    /// The next piece index to take.
    next: AtomicUsize,
    /// Pieces read (successfully or not).
    done: AtomicUsize,
    /// Each piece's outcome: bytes read (and of which direct), or the error.
    results: Mutex<Vec<PieceOutcome>>,
    /// Piece indices where a run whose copy may go early ends (exclusive), rising; empty: no
    /// early copy.
    run_ends: Vec<usize>,
    /// Each piece read in full; empty without early copies (nothing asks).
    full: Vec<AtomicBool>,
}

impl SplitRead {
    /// The split of a task into `pieces` (from [`super::plan::split`], so boundaries after
    /// the first are aligned) for `workers` workers: with more pieces than workers, whoever
    /// reads faster takes more of them, and the claimer waits at most about one piece for the
    /// last helper (`split_pieces_per_worker`). With `early_parts` ≥ 2 the pieces are cut
    /// into that many runs (fewer with fewer pieces), and the copy of each run but the last
    /// may be queued before the rest is read; 0 or 1: one copy at the end.
    pub(crate) fn new(pieces: Vec<Task>, workers: usize, early_parts: usize) -> SplitRead {
        let n = pieces.len();
        let parts = early_parts.min(n);
        let mut run_ends: Vec<usize> = (1..parts.max(1)).map(|j| n * j / parts).collect();
        run_ends.dedup();
        run_ends.retain(|&e| e > 0 && e < n);
        let flags = if run_ends.is_empty() { 0 } else { n };
        SplitRead {
            run_ends,
            full: (0..flags).map(|_| AtomicBool::new(false)).collect(),
            workers: workers.clamp(1, n.max(1)),
            pieces,
            base: AtomicUsize::new(0),
            direct: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            results: Mutex::new((0..n).map(|_| None).collect()),
        }
    }

    /// How many pieces the task is split into.
    #[cfg(test)]
    pub(crate) fn pieces(&self) -> usize {
        self.pieces.len()
    }

    /// How many workers the job is queued for.
    pub(crate) fn workers(&self) -> usize {
        self.workers
    }

    /// The owner cannot read into one buffer: helpers leave without reading.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// Takes the next piece, if any is left.
    fn take(&self) -> Option<usize> {
        let i = self.next.fetch_add(1, Ordering::AcqRel);
        (i < self.pieces.len()).then_some(i)
    }

    /// Reads piece `i` into its place after `base`, records the outcome and counts it done.
    fn read_piece(&self, job: &Job, i: usize, base: usize, direct: bool) {
        let p = self.pieces[i];
        let r = super::worker_time::timed(job.clock(), super::worker_time::Phase::FileIo, || {
            // SAFETY: the published buffer holds the whole task after `base` (checked by the
            // owner against its buffer size); each piece's range is disjoint from the others';
            // the owner does not touch the buffer again until every taken piece is done.
            unsafe {
                super::transfer::read_piece(
                    job.file(),
                    (base + p.rel as usize) as *mut u8,
                    p.offset,
                    p.len,
                    direct,
                )
            }
        });
        let full = matches!(r, Ok((got, _)) if got == p.len);
        self.results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
        if let Some(flag) = self.full.get(i).filter(|_| full) {
            flag.store(true, Ordering::Release);
        }
        self.done.fetch_add(1, Ordering::AcqRel);
    }

    /// A worker the job was queued for, finding its task claimed: waits until the owner
    /// publishes its buffer (or closes the read, or the job is over), then reads every piece
    /// it can take. Returns the pieces it read.
    pub(crate) fn help(&self, job: &Job) -> u64 {
        let mut base = 0;
        super::worker_time::timed(job.clock(), super::worker_time::Phase::SplitWait, || {
            spin_until(|| {
                base = self.base.load(Ordering::Acquire);
                base != 0
                    || self.closed.load(Ordering::Acquire)
                    || job.is_done()
                    || self.next.load(Ordering::Acquire) >= self.pieces.len()
            })
        });
        if base == 0 {
            return 0;
        }
        let direct = self.direct.load(Ordering::Acquire);
        let mut read = 0;
        while let Some(i) = self.take() {
            self.read_piece(job, i, base, direct);
            read += 1;
        }
        read
    }

    /// The owner: publishes `base` (the task's first byte in its bounce buffer), reads every
    /// piece it can take, waits for the pieces others took, and returns what the task read:
    /// bytes up to the first short or failed piece, and that piece's error. With early
    /// copies, `ready` is called once per run but the last, in order, with the bytes from the
    /// base to that run's end, as soon as every piece up to there is read in full.
    pub(crate) fn run(
        &self,
        job: &Job,
        base: usize,
        direct: bool,
        mut ready: impl FnMut(u64),
    ) -> (TaskResult, Option<Error>) {
        self.direct.store(direct, Ordering::Release);
        self.base.store(base, Ordering::Release);
        // Pieces known read in full from the first on, and runs told.
        let (mut prefix, mut told) = (0, 0);
        let mut tell = |prefix: &mut usize, told: &mut usize| {
            while *told < self.run_ends.len() {
                let end = self.run_ends[*told];
                while *prefix < end && self.full[*prefix].load(Ordering::Acquire) {
                    *prefix += 1;
                }
                if *prefix < end {
                    return;
                }
                let last = self.pieces[end - 1];
                ready(last.rel + last.len);
                *told += 1;
            }
        };
        while let Some(i) = self.take() {
            self.read_piece(job, i, base, direct);
            tell(&mut prefix, &mut told);
        }
        super::worker_time::timed(job.clock(), super::worker_time::Phase::SplitWait, || {
            spin_until(|| {
                tell(&mut prefix, &mut told);
                self.done.load(Ordering::Acquire) == self.pieces.len()
            })
        });
        let mut results = self.results.lock().unwrap_or_else(|e| e.into_inner());
        let mut res = TaskResult::default();
        for (p, r) in self.pieces.iter().zip(results.iter_mut()) {
            match r.take() {
                Some(Ok((got, d))) => {
                    res.bytes += got;
                    res.direct_bytes += d;
                    if got < p.len {
                        break;
                    }
                }
                Some(Err(e)) => return (res, Some(e)),
                None => {
                    let what = "a piece of a split read was counted done but not read";
                    let e = Error::new(crate::error::ErrorKind::Io, what)
                        .with_path(job.file().path())
                        .with_range(p.offset, p.len);
                    return (res, Some(e));
                }
            }
        }
        (res, None)
    }
}

/// Waits on another worker that is reading right now (a piece, or the claimer about to
/// publish its buffer): a few busy polls, then yielding the core between polls.
fn spin_until(mut done: impl FnMut() -> bool) {
    let mut spins = 0u32;
    while !done() {
        spins += 1;
        if spins < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(n: usize, parts: usize) -> SplitRead {
        let pieces = (0..n as u64)
            .map(|i| Task { rel: i * 4096, offset: 8192 + i * 4096, len: 4096 })
            .collect();
        SplitRead::new(pieces, 4, parts)
    }

    #[test]
    fn early_copies_end_their_runs_at_rising_pieces_inside_the_task() {
        assert_eq!(split(48, 2).run_ends, [24]);
        assert_eq!(split(48, 4).run_ends, [12, 24, 36]);
        assert_eq!(split(7, 3).run_ends, [2, 4]);
        // More parts than pieces: a copy per piece.
        assert_eq!(split(3, 16).run_ends, [1, 2]);
        for (n, parts) in [(1, 2), (1, 16), (48, 0), (48, 1), (0, 4)] {
            assert!(split(n, parts).run_ends.is_empty(), "{n} pieces, {parts} parts");
        }
    }
}
