//! The ABI side of `cuFileBatchIO*`: the table from `CUfileBatchHandle_t` to the engine's
//! [`gdio::Batch`] (which has the behaviour: asynchronous entries, cookies, `min_nr`/`nr`/
//! timeout, cancel, destroy), the `io_batchsize` limit, and what a `struct timespec` means.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use gdio::{Batch, Driver};

/// A live batch, shared by the calls that name its id.
pub type Shared = Arc<Mutex<Batch>>;

/// The id the next batch gets, process-wide: a batch id kept past its destroy or its
/// driver's last close never names a batch set up later (with a count per open, the first
/// batch of the next open got the same id, and a stale id submitted into it or took its
/// events). Ids look nothing like small integers or pointers, so a garbage id is recognised
/// instead of matching some batch.
static NEXT_ID: AtomicU64 = AtomicU64::new(0x6264_0000_0001);

/// The live batches of one session, by id.
#[derive(Debug)]
pub struct BatchTable {
    limit: usize,
    batches: RwLock<HashMap<u64, Shared>>,
}

impl BatchTable {
    /// A table whose batches hold at most `limit` entries each (cuFile's `io_batchsize`).
    pub fn new(limit: usize) -> BatchTable {
        BatchTable { limit, batches: RwLock::default() }
    }

    /// A new batch of `capacity` entries on `driver`; `None` outside `1..=limit`.
    pub fn setup(&self, driver: &Driver, capacity: usize) -> Option<u64> {
        if capacity == 0 || capacity > self.limit {
            return None;
        }
        let batch = driver.batch(capacity).ok()?;
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        self.batches.write().unwrap_or_else(|p| p.into_inner()).insert(id, Arc::new(batch.into()));
        Some(id)
    }

    /// The batch behind `id`.
    pub fn get(&self, id: u64) -> Option<Shared> {
        self.batches.read().unwrap_or_else(|p| p.into_inner()).get(&id).cloned()
    }

    /// Forgets `id` and destroys its batch (cancels what has not started, waits for what is in
    /// flight); false for an unknown id.
    pub fn destroy(&self, id: u64) -> bool {
        let Some(b) = self.batches.write().unwrap_or_else(|p| p.into_inner()).remove(&id) else {
            return false;
        };
        // Outside the table's lock: a status call in progress finishes first.
        lock(&b).destroy();
        true
    }

    /// Destroys every batch (driver close).
    pub fn clear(&self) {
        let all: Vec<Shared> = self
            .batches
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .map(|(_, b)| b)
            .collect();
        for b in all {
            lock(&b).destroy();
        }
    }
}

/// Locks a batch.
pub fn lock(b: &Shared) -> MutexGuard<'_, Batch> {
    b.lock().unwrap_or_else(|p| p.into_inner())
}

/// cuFile's `struct timespec *timeout` as a wait limit: NULL, or fields out of range (negative,
/// nanoseconds ≥ 10⁹, or absurdly large as uninitialised memory gives) never shorten the wait
/// for `min_nr` events: they mean `None` (no limit).
pub fn wait_limit(t: Option<(i64, i64)>) -> Option<Duration> {
    match t {
        Some((s, ns)) if (0..=1_000_000_000).contains(&s) && (0..1_000_000_000).contains(&ns) => {
            Some(Duration::new(s as u64, ns as u32))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonsensical_timespecs_mean_no_limit() {
        assert_eq!(wait_limit(None), None);
        assert_eq!(wait_limit(Some((-1, 0))), None);
        assert_eq!(wait_limit(Some((0, -5))), None);
        assert_eq!(wait_limit(Some((0, 2_000_000_000))), None);
        assert_eq!(wait_limit(Some((i64::MAX, 0))), None);
        assert_eq!(wait_limit(Some((0, 0))), Some(Duration::ZERO));
        assert_eq!(wait_limit(Some((2, 500))), Some(Duration::new(2, 500)));
    }
}
