//! Batched I/O with cuFile's batch semantics (`cuFileBatchIOSetUp`, `…Submit`, `…GetStatus`,
//! `…Cancel`, `…Destroy`): a [`Batch`] has a capacity, takes many reads and writes at once,
//! each with a caller cookie, and reports each entry's completion exactly once through
//! [`Batch::get_status`].

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::engine::{Bulk, Notifier};
use crate::error::{Error, ErrorKind, Result};
use crate::file::FileHandle;
use crate::gpu::GpuRuntime;
use crate::memory::{BufferRef, MemoryKind};
use crate::request::Op;
use crate::submit::{Router, Started};

/// One I/O of a batch, as `CUfileIOParams_t` describes it.
#[derive(Debug, Clone)]
pub struct BatchEntry {
    /// Read or write ([`Op::from_cufile`] maps `CUfileOpcode_t`).
    pub op: Op,
    /// The file.
    pub file: Arc<FileHandle>,
    /// Byte offset in the file.
    pub file_offset: u64,
    /// Start of the buffer (`devPtr_base`): device or host memory of this process.
    pub buf_base: u64,
    /// Offset into the buffer (`devPtr_offset`).
    pub buf_offset: u64,
    /// Bytes to move.
    pub len: usize,
    /// Echoed in the entry's [`BatchEvent`].
    pub cookie: u64,
    /// The kind of the whole buffer range when the caller already knows it (for example from
    /// a registration that checked the range once): the batch then trusts it and makes no
    /// pointer query for the entry. `None`: the batch classifies and checks the range.
    pub memory: Option<MemoryKind>,
}

/// How a batch entry ended.
#[derive(Debug, Clone)]
pub enum BatchState {
    /// Done: the bytes moved (reads: fewer than asked only at the end of the file).
    Complete(usize),
    /// Failed with this error (errno or driver code inside).
    Failed(Error),
    /// Canceled by [`Batch::cancel`] before it ran.
    Canceled,
}

/// One completion, reported once.
#[derive(Debug, Clone)]
pub struct BatchEvent {
    /// The entry's cookie.
    pub cookie: u64,
    /// How it ended.
    pub state: BatchState,
    /// The entry's operation (for per-operation accounting by front ends).
    pub op: Op,
    /// The kind of the entry's memory, as classified at submit.
    pub memory: MemoryKind,
    /// Bytes the entry asked for.
    pub len: usize,
    /// From submit until [`Batch::get_status`] saw the entry finished.
    pub elapsed: Duration,
}

/// What [`Batch::get_status`] found.
#[derive(Debug, Clone, Default)]
pub struct BatchStatus {
    /// Completions not reported before, at most the `nr` asked for.
    pub events: Vec<BatchEvent>,
    /// True when the timeout passed before `min_nr` entries had completed (then `events`
    /// holds fewer than `min_nr`).
    pub timed_out: bool,
}

struct Slot {
    cookie: u64,
    op: Op,
    buf: BufferRef,
    submitted: Instant,
    started: Started,
}

/// A batch of I/Os (`CUfileBatchHandle_t`). Dropping it, like [`Batch::destroy`], cancels what
/// has not started and blocks until every entry in flight has finished.
pub struct Batch {
    router: Router,
    capacity: usize,
    slots: VecDeque<Slot>,
    notifier: Arc<Notifier>,
    destroyed: bool,
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("capacity", &self.capacity)
            .field("outstanding", &self.slots.len())
            .field("destroyed", &self.destroyed)
            .finish()
    }
}

/// Distinct buffer bases whose kind one [`Batch::submit`] call remembers.
const KIND_CACHE: usize = 8;

/// A buffer base of one [`Batch::submit`] call: its kind, and for device memory the
/// allocation that holds it.
#[derive(Debug, Clone, Copy)]
struct Base {
    addr: u64,
    kind: MemoryKind,
    /// `(start, len)` of the device allocation holding `addr`, where the runtime can tell.
    allocation: Option<(u64, u64)>,
}

impl Base {
    fn of(runtime: &dyn GpuRuntime, addr: u64) -> Base {
        let kind = runtime.classify(addr);
        let allocation = match kind {
            MemoryKind::Device { ordinal } if ordinal < runtime.device_count() => {
                runtime.device_allocation(addr)
            }
            _ => None,
        };
        Base { addr, kind, allocation }
    }

    /// True when `len` bytes at `addr` lie inside this base's device allocation, which is all
    /// that [`Router::check_buffer`] would establish with two pointer queries (null and
    /// wrapping addresses are checked apart).
    fn holds(&self, addr: u64, len: usize) -> bool {
        let Some((start, size)) = self.allocation else { return false };
        let Some(last) = addr.checked_add((len as u64).max(1) - 1) else { return false };
        addr >= start && last < start.saturating_add(size)
    }
}

fn invalid(msg: String) -> Error {
    Error::new(ErrorKind::InvalidInput, msg).with_errno(libc::EINVAL)
}

impl Batch {
    pub(crate) fn new(router: Router, capacity: usize) -> Result<Batch> {
        if capacity == 0 {
            return Err(invalid("a batch needs a capacity of at least 1 entry".into()));
        }
        Ok(Batch {
            capacity,
            slots: VecDeque::new(),
            notifier: Arc::new(Notifier::with_spin(
                if crate::engine::may_poll_while_idle(&router.config) {
                    Duration::from_micros(router.config.completion_spin_us)
                } else {
                    Duration::ZERO
                },
            )),
            destroyed: false,
            router,
        })
    }

    fn alive(&self) -> Result<()> {
        if self.destroyed {
            return Err(invalid("this batch was destroyed".into()));
        }
        Ok(())
    }

    /// The capacity given at setup.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Entries submitted and not yet reported by [`Batch::get_status`].
    pub fn outstanding(&self) -> usize {
        self.slots.len()
    }

    /// Submits `entries`. The batch and every entry's parameters are checked first (capacity:
    /// outstanding + new ≤ capacity; buffer non-null, known to the runtime and inside one
    /// allocation; offsets that do not overflow): if any fails, nothing is submitted and the
    /// error names the entry. Entries then run concurrently and may complete in any order; an
    /// I/O error of one entry (a handle not open for the operation, an offset past the end of
    /// the file, EIO, ENOSPC…) is that entry's [`BatchState::Failed`] event and leaves the
    /// others alone.
    ///
    /// # Safety
    /// Each entry's buffer range `buf_base + buf_offset .. + len` must be memory of this
    /// process (of the kind [`BatchEntry::memory`] says, when it says one) valid for the
    /// entry's operation, not accessed by anything else until
    /// [`Batch::get_status`] has reported the entry, or the batch was destroyed or dropped.
    pub unsafe fn submit(&mut self, entries: &[BatchEntry]) -> Result<()> {
        self.alive()?;
        if self.slots.len() + entries.len() > self.capacity {
            return Err(invalid(format!(
                "{} entries do not fit: the batch holds {} of {} entries (get their status first)",
                entries.len(),
                self.slots.len(),
                self.capacity
            )));
        }
        let mut bufs = Vec::with_capacity(entries.len());
        // The buffer bases seen in this call, with their kind and (device memory) the
        // allocation that holds them: entries usually share one buffer, and asking the driver
        // is a pointer query (a CUDA call on a GPU machine) that 4 KiB reads cannot afford
        // once per entry, let alone twice.
        let mut bases: Vec<Base> = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            let at = |err: Error| {
                Error::new(err.kind(), format!("batch entry {i}: {}", err.message()))
                    .with_errno(err.errno().unwrap_or(libc::EINVAL))
                    .with_path(e.file.path())
                    .with_range(e.file_offset, e.len as u64)
            };
            let addr = match (e.buf_base, e.buf_base.checked_add(e.buf_offset)) {
                (0, _) => return Err(at(invalid("null buffer address".into()))),
                (_, Some(a)) => a,
                (_, None) => return Err(at(invalid("buffer base + offset overflows".into()))),
            };
            let buf = match e.memory {
                Some(kind) => BufferRef { addr, len: e.len, kind },
                None => {
                    let base = match bases.iter().find(|b| b.addr == e.buf_base) {
                        Some(b) => *b,
                        None => {
                            let b = Base::of(self.router.runtime.as_ref(), e.buf_base);
                            if bases.len() < KIND_CACHE {
                                bases.push(b);
                            }
                            b
                        }
                    };
                    let buf = BufferRef { addr, len: e.len, kind: base.kind };
                    if !base.holds(addr, e.len) {
                        self.router.check_buffer(buf, &e.file, e.file_offset).map_err(at)?;
                    }
                    buf
                }
            };
            if addr.checked_add(e.len as u64).is_none() {
                return Err(at(invalid("buffer address + length overflows".into())));
            }
            if e.file_offset.checked_add(e.len as u64).is_none() {
                return Err(at(invalid("file offset + length overflows".into())));
            }
            bufs.push(buf);
        }
        let submitted = Instant::now();
        // The entries' jobs go to the workers `batch_queue_group` at a time, the rest when
        // `bulk` drops at the end of this call.
        let mut bulk = Bulk::default();
        for (e, buf) in entries.iter().zip(bufs) {
            // SAFETY: forwarded contract: valid until reported, destroyed or dropped, and
            // drop/destroy wait for every entry; the buffer was checked above (or its kind is
            // vouched for by the caller, per the contract).
            let started = unsafe {
                self.router.start_checked(
                    e.op,
                    &e.file,
                    buf,
                    e.file_offset,
                    Some(self.notifier.clone()),
                    Some(&mut bulk),
                )
            };
            let started = started.unwrap_or_else(|err| Started::Done(Err(err)));
            self.slots.push_back(Slot { cookie: e.cookie, op: e.op, buf, submitted, started });
        }
        Ok(())
    }

    fn take_finished(&mut self, nr: usize, out: &mut Vec<BatchEvent>) {
        let mut i = 0;
        while i < self.slots.len() && out.len() < nr {
            let done = match &self.slots[i].started {
                Started::Engine(io, _) => io.is_done(),
                Started::Done(_) => true,
            };
            if !done {
                i += 1;
                continue;
            }
            let Some(slot) = self.slots.remove(i) else { break };
            let state = match slot.started {
                Started::Engine(io, name) => {
                    let canceled = io.was_canceled();
                    match io.wait() {
                        Ok(t) => {
                            self.router.stats.record_ok(name, t.bytes);
                            BatchState::Complete(t.bytes as usize)
                        }
                        Err(_) if canceled => BatchState::Canceled,
                        Err(e) => {
                            self.router.stats.record_error(name);
                            BatchState::Failed(e)
                        }
                    }
                }
                Started::Done(Ok(n)) => BatchState::Complete(n),
                Started::Done(Err(e)) => BatchState::Failed(e),
            };
            out.push(BatchEvent {
                cookie: slot.cookie,
                state,
                op: slot.op,
                memory: slot.buf.kind,
                len: slot.buf.len,
                elapsed: slot.submitted.elapsed(),
            });
        }
    }

    /// Reports up to `nr` completions not reported before, waiting until at least `min_nr`
    /// are available (`min_nr` is capped at `nr` and at the entries outstanding, so it cannot
    /// wait for entries that do not exist) or until `timeout` has passed (`None`: no limit).
    /// It returns fewer than `min_nr` events only when the timeout truly passed
    /// (`timed_out`). `nr` = 0 is an error, as is a destroyed batch.
    pub fn get_status(
        &mut self,
        min_nr: usize,
        nr: usize,
        timeout: Option<Duration>,
    ) -> Result<BatchStatus> {
        self.alive()?;
        if nr == 0 {
            return Err(invalid("get_status needs room for at least one event (nr = 0)".into()));
        }
        let want = min_nr.min(nr).min(self.slots.len());
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let mut out = Vec::new();
        loop {
            let seen = self.notifier.completions();
            self.take_finished(nr, &mut out);
            if out.len() >= want || out.len() >= nr {
                return Ok(BatchStatus { events: out, timed_out: false });
            }
            // Sleep until enough new completions for what is missing (a lower bound: some of
            // those counted after `seen` may already be in `out`, then the loop waits again).
            let missing = (want - out.len()) as u64;
            if !self.notifier.wait_for(seen + missing, deadline) {
                self.take_finished(nr, &mut out);
                let timed_out = out.len() < want;
                return Ok(BatchStatus { events: out, timed_out });
            }
        }
    }

    /// Cancels every entry that has not started (best effort: entries in flight finish and
    /// report their result; canceled ones report [`BatchState::Canceled`]).
    pub fn cancel(&mut self) -> Result<()> {
        self.alive()?;
        for s in &self.slots {
            if let Started::Engine(io, _) = &s.started {
                io.cancel();
            }
        }
        Ok(())
    }

    /// Cancels what has not started, waits for every entry in flight, and retires the batch:
    /// every later call on it is an error. Safe right after a submit and more than once.
    pub fn destroy(&mut self) {
        if self.destroyed {
            return;
        }
        let _ = self.cancel();
        // Dropping an engine I/O blocks until it has finished.
        self.slots.clear();
        self.destroyed = true;
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        self.destroy();
    }
}
