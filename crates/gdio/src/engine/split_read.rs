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
//! With an early copy (`split_early_copy`, a read alone in flight), the owner is told as soon
//! as every piece of the first half (the head) is read in full, while it reads or waits, and
//! queues that half's copy then; the rest goes in a second copy at the end. A head piece that
//! fails or comes short is never counted, so such a read keeps its one copy at the end.

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
    /// Pieces in the head, whose copy may go early (0: no early copy).
    head: usize,
    /// Head pieces read in full.
    head_done: AtomicUsize,
}

impl SplitRead {
    /// The split of a task into `pieces` (from [`super::plan::split`], so boundaries after
    /// the first are aligned) for `workers` workers: with more pieces than workers, whoever
    /// reads faster takes more of them, and the claimer waits at most about one piece for the
    /// last helper (`split_pieces_per_worker`). With `early_copy` and two pieces or more, the
    /// first half of the pieces is the head, whose copy may be queued before the rest is read.
    pub(crate) fn new(pieces: Vec<Task>, workers: usize, early_copy: bool) -> SplitRead {
        let n = pieces.len();
        SplitRead {
            head: if early_copy { n / 2 } else { 0 },
            head_done: AtomicUsize::new(0),
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
        if i < self.head && full {
            self.head_done.fetch_add(1, Ordering::AcqRel);
        }
        self.done.fetch_add(1, Ordering::AcqRel);
    }

    /// The head's bytes once every head piece is read in full (pieces count from the
    /// published base), else `None`.
    fn head_ready(&self) -> Option<u64> {
        if self.head == 0 || self.head_done.load(Ordering::Acquire) < self.head {
            return None;
        }
        let last = self.pieces[self.head - 1];
        Some(last.rel + last.len)
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
    /// bytes up to the first short or failed piece, and that piece's error. With an early
    /// copy, `head` is called once, with the head's bytes, as soon as they are all read.
    pub(crate) fn run(
        &self,
        job: &Job,
        base: usize,
        direct: bool,
        mut head: impl FnMut(u64),
    ) -> (TaskResult, Option<Error>) {
        self.direct.store(direct, Ordering::Release);
        self.base.store(base, Ordering::Release);
        let mut head_told = self.head == 0;
        let mut tell = |head_told: &mut bool| {
            if !*head_told {
                if let Some(bytes) = self.head_ready() {
                    *head_told = true;
                    head(bytes);
                }
            }
        };
        while let Some(i) = self.take() {
            self.read_piece(job, i, base, direct);
            tell(&mut head_told);
        }
        super::worker_time::timed(job.clock(), super::worker_time::Phase::SplitWait, || {
            spin_until(|| {
                tell(&mut head_told);
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
