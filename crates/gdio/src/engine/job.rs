//! A job: one request, split into tasks that workers claim one at a time, and the state the
//! caller waits on.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use super::plan::Task;
use crate::backend::Op;
use crate::error::Error;
use crate::file::FileHandle;
use crate::memory::BufferRef;

/// How the engine reads one job's file: decided per task from the direct-I/O policy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DirectChoice {
    /// Never `O_DIRECT`.
    Never,
    /// `O_DIRECT` for the aligned middle of every task.
    Always,
    /// `O_DIRECT` for tasks whose range is less than this fraction cached.
    WhenCold(f64),
}

/// The outcome of one task.
#[derive(Debug, Default, Clone, Copy)]
pub struct TaskResult {
    /// Bytes moved.
    pub bytes: u64,
    /// Bytes moved with `O_DIRECT`.
    pub direct_bytes: u64,
    /// Bytes moved by DMA straight from the page cache.
    pub mapped_bytes: u64,
}

#[derive(Default)]
struct State {
    finished_tasks: usize,
    active_workers: usize,
    bytes: u64,
    direct_bytes: u64,
    mapped_bytes: u64,
    /// Lowest file offset at which a task came up short (end of file).
    short_at: Option<u64>,
    error: Option<Error>,
}

/// One request in flight.
pub struct Job {
    pub(crate) op: Op,
    file: *const FileHandle,
    pub(crate) buf: BufferRef,
    pub(crate) offset: u64,
    pub(crate) tasks: Vec<Task>,
    pub(crate) direct: DirectChoice,
    /// Hot ranges go to the GPU by DMA from the page cache.
    pub(crate) page_cache_dma: bool,
    /// Bytes per buffered read into a bounce buffer.
    pub(crate) buffered_chunk: u64,
    next: AtomicUsize,
    failed: AtomicBool,
    state: Mutex<State>,
    cv: Condvar,
}

// SAFETY: `file` points to a FileHandle (Sync) that the submitting thread keeps alive until
// `wait` returns, and `wait` returns only after every task finished and no worker is active.
unsafe impl Send for Job {}
// SAFETY: as above; all mutable state is behind atomics or the mutex.
unsafe impl Sync for Job {}

impl Job {
    /// A job over `tasks`; the caller must keep `file` alive until [`Job::wait`] returns.
    pub(crate) fn new(
        op: Op,
        file: &FileHandle,
        buf: BufferRef,
        offset: u64,
        tasks: Vec<Task>,
        direct: DirectChoice,
    ) -> Job {
        Job {
            op,
            file,
            buf,
            offset,
            tasks,
            direct,
            page_cache_dma: false,
            buffered_chunk: u64::MAX,
            next: AtomicUsize::new(0),
            failed: AtomicBool::new(false),
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
        }
    }

    /// The file. Valid while the job is not finished (see the `Send` impl).
    pub(crate) fn file(&self) -> &FileHandle {
        // SAFETY: the submitter keeps the handle alive until `wait` returns, which is after all
        // tasks are finished; workers only call this while running a task.
        unsafe { &*self.file }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A worker starts working on this job.
    pub(crate) fn enter(&self) {
        self.lock().active_workers += 1;
    }

    /// A worker is done with this job (after synchronizing its stream).
    pub(crate) fn leave(&self, sync_error: Option<Error>) {
        let mut s = self.lock();
        s.active_workers -= 1;
        if let Some(e) = sync_error {
            s.error.get_or_insert(e);
        }
        self.cv.notify_all();
    }

    /// Claims the next task, or `None` when all are claimed or the job failed.
    pub(crate) fn claim(&self) -> Option<(usize, Task)> {
        if self.failed.load(Ordering::Acquire) {
            return None;
        }
        let i = self.next.fetch_add(1, Ordering::AcqRel);
        self.tasks.get(i).map(|t| (i, *t))
    }

    /// Records the outcome of a task.
    pub(crate) fn finish(&self, task: Task, result: Result<TaskResult, Error>) {
        let mut s = self.lock();
        s.finished_tasks += 1;
        match result {
            Ok(r) => {
                s.bytes += r.bytes;
                s.direct_bytes += r.direct_bytes;
                s.mapped_bytes += r.mapped_bytes;
                if r.bytes < task.len {
                    let at = task.offset + r.bytes;
                    s.short_at = Some(s.short_at.map_or(at, |x: u64| x.min(at)));
                }
            }
            Err(e) => {
                self.failed.store(true, Ordering::Release);
                s.error.get_or_insert(e);
            }
        }
        self.cv.notify_all();
    }

    /// Blocks until every claimed task finished and no worker is active; returns the bytes
    /// moved counted as `pread` would (up to the first short task), the direct bytes and the
    /// page-cache DMA bytes.
    pub(crate) fn wait(&self) -> Result<(u64, u64, u64), Error> {
        let mut s = self.lock();
        loop {
            let claimed = self.next.load(Ordering::Acquire).min(self.tasks.len());
            let all_done = if self.failed.load(Ordering::Acquire) {
                s.finished_tasks >= claimed
            } else {
                s.finished_tasks == self.tasks.len()
            };
            if all_done && s.active_workers == 0 {
                break;
            }
            s = self.cv.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        if let Some(e) = s.error.take() {
            return Err(e);
        }
        let total = match s.short_at {
            Some(at) => at - self.offset,
            None => s.bytes,
        };
        Ok((total, s.direct_bytes, s.mapped_bytes))
    }
}
