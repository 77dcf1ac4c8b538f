//! Counters per backend: operations, bytes, errors, retries with their causes, fallbacks with
//! their reasons. Updated by the driver on every I/O, readable at any time
//! ([`Driver::stats`](crate::Driver::stats)).

use std::collections::BTreeMap;
use std::sync::Mutex;

/// Distinct retry causes or fallback reasons kept per backend; later ones count as `other`.
const MAX_REASONS: usize = 64;

/// The counters of one backend.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct BackendStats {
    /// I/Os this backend completed.
    pub ops: u64,
    /// Bytes those I/Os moved.
    pub bytes: u64,
    /// I/Os this backend failed.
    pub errors: u64,
    /// Failures of this backend (a fastpath) retried on a fallback, by cause (`ENODEV`, ...).
    pub retries: BTreeMap<String, u64>,
    /// I/Os this backend (a fallback) served in place of a fastpath, by the fastpath's reason.
    pub fallbacks: BTreeMap<String, u64>,
}

impl BackendStats {
    /// Sum of the retries over all causes.
    pub fn retry_count(&self) -> u64 {
        self.retries.values().sum()
    }
    /// Sum of the fallbacks over all reasons.
    pub fn fallback_count(&self) -> u64 {
        self.fallbacks.values().sum()
    }
}

/// A copy of every backend's counters at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct StatsSnapshot {
    /// Counters by backend name.
    pub backends: BTreeMap<String, BackendStats>,
}

impl StatsSnapshot {
    /// The counters of `backend` (zeros if it never ran).
    pub fn backend(&self, backend: &str) -> BackendStats {
        self.backends.get(backend).cloned().unwrap_or_default()
    }
}

/// Live counters, shared by every thread doing I/O through one driver.
#[derive(Debug, Default)]
pub struct Stats {
    inner: Mutex<StatsSnapshot>,
}

fn bump(map: &mut BTreeMap<String, u64>, key: &str) {
    if map.contains_key(key) || map.len() < MAX_REASONS {
        *map.entry(key.to_owned()).or_default() += 1;
    } else {
        *map.entry("other".to_owned()).or_default() += 1;
    }
}

impl Stats {
    fn with(&self, backend: &str, f: impl FnOnce(&mut BackendStats)) {
        let mut s = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        f(s.backends.entry(backend.to_owned()).or_default());
    }

    /// `backend` completed an I/O of `bytes` bytes.
    pub fn record_ok(&self, backend: &str, bytes: u64) {
        self.with(backend, |b| {
            b.ops += 1;
            b.bytes += bytes;
        });
    }

    /// `backend` failed an I/O.
    pub fn record_error(&self, backend: &str) {
        self.with(backend, |b| b.errors += 1);
    }

    /// A failure of `backend` was retried on a fallback because of `cause`.
    pub fn record_retry(&self, backend: &str, cause: &str) {
        self.with(backend, |b| bump(&mut b.retries, cause));
    }

    /// `backend` served an I/O a fastpath did not, for `reason`.
    pub fn record_fallback(&self, backend: &str, reason: &str) {
        self.with(backend, |b| bump(&mut b.fallbacks, reason));
    }

    /// A copy of the counters now.
    pub fn snapshot(&self) -> StatsSnapshot {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Sets every counter back to zero.
    pub fn reset(&self) {
        *self.inner.lock().unwrap_or_else(|p| p.into_inner()) = StatsSnapshot::default();
    }
}
