//! Batches of independent reads and writes with cuFile's batch semantics, and the table of
//! registered streams: the bookkeeping behind `cuFileBatchIO*` and `cuFileStream*`.
//!
//! - [`BatchTable`]: `setup` (capacity 1..=limit), `submit` (all entries checked before any
//!   runs; more entries in flight than the capacity is [`BatchError::Full`]), `status` (events in
//!   completion order, `min_nr`/`nr`/timeout rules), `cancel`, `destroy`.
//! - [`StreamTable`]: registered streams and their flags.
//!
//! The I/O of each entry is done by an [`Executor`] the caller passes to
//! [`BatchTable::submit`]. TEMPORARY: gdio-cufile's executor runs every entry synchronously,
//! inside `submit`, through the driver's sync calls, until the engine's batch API lands; then
//! an executor starts the entries and reports each through [`Completion::complete`] from any
//! thread, and nothing else here changes.

mod streams;

pub use streams::{StreamFlags, StreamTable};

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Why a batch call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchError {
    /// Unknown batch id, a capacity out of range, `min_nr > nr`, an invalid entry.
    InvalidValue,
    /// More entries would be in flight than the batch's capacity.
    Full,
}

/// Read or write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOp {
    /// File → memory.
    Read,
    /// Memory → file.
    Write,
}

/// One entry of a batch, as submitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchEntry<H> {
    /// Read or write.
    pub op: BatchOp,
    /// The file (whatever the caller uses to name one).
    pub handle: H,
    /// Base address of the memory.
    pub buf_base: u64,
    /// Offset into the memory.
    pub buf_offset: u64,
    /// Offset in the file.
    pub file_offset: u64,
    /// Bytes.
    pub size: u64,
    /// Echoed in the entry's event.
    pub cookie: u64,
}

/// How an entry ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryStatus {
    /// Done; the bytes moved.
    Complete(u64),
    /// Failed; the (negative) error value to report.
    Failed(i64),
    /// Cancelled before it completed.
    Canceled,
}

/// One reported event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchEvent {
    /// The entry's cookie.
    pub cookie: u64,
    /// How it ended.
    pub status: EntryStatus,
}

/// When [`BatchTable::status`] stops waiting for `min_nr` events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Until `min_nr` events are there (also what a nonsensical timeout means).
    UntilMinNr,
    /// At most this long, then with what is there.
    For(Duration),
}

impl Wait {
    /// cuFile's `struct timespec *timeout`: NULL, or fields out of range (negative, nanoseconds
    /// ≥ 10⁹, or absurdly large as uninitialised memory gives) never shorten the wait for
    /// `min_nr`: they mean [`Wait::UntilMinNr`].
    pub fn from_timespec(t: Option<(i64, i64)>) -> Wait {
        match t {
            Some((s, ns))
                if (0..=1_000_000_000).contains(&s) && (0..1_000_000_000).contains(&ns) =>
            {
                Wait::For(Duration::new(s as u64, ns as u32))
            }
            _ => Wait::UntilMinNr,
        }
    }
}

/// Reports the end of one entry; sent by an [`Executor`], from any thread.
#[derive(Debug, Clone)]
pub struct Completion {
    batch: Arc<Batch>,
    slot: u64,
}

impl Completion {
    /// The entry ended with `status`. A second report of the same entry, or a report after the
    /// entry was cancelled, is ignored.
    pub fn complete(&self, status: EntryStatus) {
        self.batch.finish(self.slot, status);
    }
}

/// Runs the entries of one submit: each entry with the [`Completion`] to report it through.
pub trait Executor<H> {
    /// Starts (or runs) `entries`; every entry must eventually be completed or cancelled.
    fn start(&self, entries: Vec<(BatchEntry<H>, Completion)>);
}

impl<H, F: Fn(Vec<(BatchEntry<H>, Completion)>)> Executor<H> for F {
    fn start(&self, entries: Vec<(BatchEntry<H>, Completion)>) {
        self(entries)
    }
}

#[derive(Debug, Default)]
struct BatchState {
    /// Entries submitted and not yet reported, by slot, with their cookie.
    pending: HashMap<u64, u64>,
    /// Ended entries not yet reported, in completion order.
    done: VecDeque<BatchEvent>,
    next_slot: u64,
    destroyed: bool,
}

#[derive(Debug)]
struct Batch {
    capacity: usize,
    state: Mutex<BatchState>,
    changed: Condvar,
}

impl Batch {
    fn lock(&self) -> MutexGuard<'_, BatchState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn finish(&self, slot: u64, status: EntryStatus) {
        let mut s = self.lock();
        if let Some(cookie) = s.pending.remove(&slot) {
            s.done.push_back(BatchEvent { cookie, status });
            self.changed.notify_all();
        }
    }

    /// Entries submitted and not yet reported through `status`.
    fn in_flight(s: &BatchState) -> usize {
        s.pending.len() + s.done.len()
    }
}

/// The live batches of one driver, by id.
#[derive(Debug)]
pub struct BatchTable {
    limit: usize,
    next_id: AtomicU64,
    batches: Mutex<HashMap<u64, Arc<Batch>>>,
}

impl BatchTable {
    /// A table whose batches hold at most `limit` entries each (cuFile's `io_batchsize`).
    pub fn new(limit: usize) -> BatchTable {
        // Ids look nothing like small integers or pointers, so a stale or garbage id is
        // recognised instead of matching some other batch.
        BatchTable { limit, next_id: AtomicU64::new(0x6264_0000_0001), batches: Mutex::default() }
    }

    fn map(&self) -> MutexGuard<'_, HashMap<u64, Arc<Batch>>> {
        self.batches.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn get(&self, id: u64) -> Result<Arc<Batch>, BatchError> {
        self.map().get(&id).cloned().ok_or(BatchError::InvalidValue)
    }

    /// A new batch that holds up to `capacity` entries in flight; `1..=limit`.
    pub fn setup(&self, capacity: usize) -> Result<u64, BatchError> {
        if capacity == 0 || capacity > self.limit {
            return Err(BatchError::InvalidValue);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let batch = Arc::new(Batch { capacity, state: Mutex::default(), changed: Condvar::new() });
        self.map().insert(id, batch);
        Ok(id)
    }

    /// Number of live batches.
    pub fn len(&self) -> usize {
        self.map().len()
    }

    /// True when no batch is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Submits `entries` (already checked by the caller: each is a valid request) and hands
    /// them to `exec`. None runs when the batch is unknown, `entries` is empty, or they would
    /// make more than the batch's capacity in flight.
    pub fn submit<H>(
        &self,
        id: u64,
        entries: Vec<BatchEntry<H>>,
        exec: &dyn Executor<H>,
    ) -> Result<(), BatchError> {
        let batch = self.get(id)?;
        if entries.is_empty() {
            return Err(BatchError::InvalidValue);
        }
        let mut work = Vec::with_capacity(entries.len());
        {
            let mut s = batch.lock();
            if s.destroyed {
                return Err(BatchError::InvalidValue);
            }
            if Batch::in_flight(&s) + entries.len() > batch.capacity {
                return Err(BatchError::Full);
            }
            for e in entries {
                let slot = s.next_slot;
                s.next_slot += 1;
                s.pending.insert(slot, e.cookie);
                work.push((e, Completion { batch: batch.clone(), slot }));
            }
        }
        exec.start(work);
        Ok(())
    }

    /// Up to `max` events of ended entries, oldest first, waiting as `wait` says until at
    /// least `min_nr` are there. `min_nr > max` is invalid. `min_nr` is capped at the entries
    /// in flight, so a wait for entries never submitted does not hang.
    pub fn status(
        &self,
        id: u64,
        min_nr: usize,
        max: usize,
        wait: Wait,
    ) -> Result<Vec<BatchEvent>, BatchError> {
        if min_nr > max {
            return Err(BatchError::InvalidValue);
        }
        let batch = self.get(id)?;
        let deadline = match wait {
            Wait::For(d) => Instant::now().checked_add(d),
            Wait::UntilMinNr => None,
        };
        let mut s = batch.lock();
        loop {
            if s.destroyed {
                return Err(BatchError::InvalidValue);
            }
            let want = min_nr.min(Batch::in_flight(&s));
            if s.done.len() >= want {
                break;
            }
            match (wait, deadline) {
                (Wait::For(_), Some(d)) => {
                    let now = Instant::now();
                    if now >= d {
                        break;
                    }
                    s = batch.changed.wait_timeout(s, d - now).unwrap_or_else(|p| p.into_inner()).0;
                }
                _ => s = batch.changed.wait(s).unwrap_or_else(|p| p.into_inner()),
            }
        }
        let n = s.done.len().min(max);
        Ok(s.done.drain(..n).collect())
    }

    /// Cancels every entry of the batch that has not ended; each is reported as
    /// [`EntryStatus::Canceled`]. An entry already running may still move its bytes.
    pub fn cancel(&self, id: u64) -> Result<(), BatchError> {
        let batch = self.get(id)?;
        let mut s = batch.lock();
        let mut slots: Vec<(u64, u64)> = s.pending.drain().collect();
        slots.sort_unstable();
        for (_, cookie) in slots {
            s.done.push_back(BatchEvent { cookie, status: EntryStatus::Canceled });
        }
        batch.changed.notify_all();
        Ok(())
    }

    /// Destroys the batch; waiters in [`BatchTable::status`] return `InvalidValue`. Unknown ids
    /// are ignored (cuFile's destroy returns nothing).
    pub fn destroy(&self, id: u64) -> bool {
        let Some(batch) = self.map().remove(&id) else { return false };
        let mut s = batch.lock();
        s.destroyed = true;
        s.pending.clear();
        batch.changed.notify_all();
        true
    }

    /// Destroys every batch (driver close).
    pub fn clear(&self) {
        let ids: Vec<u64> = self.map().keys().copied().collect();
        for id in ids {
            self.destroy(id);
        }
    }
}

#[cfg(test)]
mod tests;
