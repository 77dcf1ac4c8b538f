//! [`OpStats`]: per-call counters of a C ABI front end (cuFile's statistics levels 1–3):
//! operations and errors, bytes, latency sums, request-size histograms, registrations, batch
//! calls, and per-GPU totals. Lock-free; recording costs a few atomic adds.
//!
//! [`Stats`](crate::stats::Stats) says which backend served each I/O; this says what the
//! caller asked for and how long it took.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// GPUs tracked one by one (cuFile's `CUfileStatsLevel3_t` holds 16).
pub const MAX_GPUS: usize = 16;
/// Buckets of the size histograms: bucket `i` counts requests of `2^(i-1) < KiB ≤ 2^i`
/// (bucket 0: up to 1 KiB), the last one everything larger.
pub const HIST_BUCKETS: usize = 32;

/// An ok / error pair.
#[derive(Debug, Default)]
pub struct OpCounter {
    /// Calls that succeeded.
    pub ok: AtomicU64,
    /// Calls that failed.
    pub err: AtomicU64,
}

impl OpCounter {
    /// Counts one call.
    pub fn record(&self, ok: bool) {
        if ok { &self.ok } else { &self.err }.fetch_add(1, Relaxed);
    }
    /// `(ok, err)` now.
    pub fn get(&self) -> (u64, u64) {
        (self.ok.load(Relaxed), self.err.load(Relaxed))
    }
    fn reset(&self) {
        self.ok.store(0, Relaxed);
        self.err.store(0, Relaxed);
    }
}

/// Counters of one direction (reads or writes).
#[derive(Debug)]
pub struct DirStats {
    /// Calls.
    pub ops: OpCounter,
    /// Bytes moved by successful calls.
    pub bytes: AtomicU64,
    /// Sum of call latencies, microseconds.
    pub lat_sum_us: AtomicU64,
    /// Request sizes (see [`HIST_BUCKETS`]).
    pub size_hist: [AtomicU64; HIST_BUCKETS],
}

impl Default for DirStats {
    fn default() -> Self {
        DirStats {
            ops: OpCounter::default(),
            bytes: AtomicU64::new(0),
            lat_sum_us: AtomicU64::new(0),
            size_hist: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

/// The histogram bucket of a request of `bytes`.
pub fn size_bucket(bytes: u64) -> usize {
    let kib = bytes.div_ceil(1024).max(1);
    let b = (64 - (kib - 1).leading_zeros()) as usize;
    b.min(HIST_BUCKETS - 1)
}

impl DirStats {
    fn record(&self, requested: u64, result: Result<u64, ()>, took: Duration) {
        self.ops.record(result.is_ok());
        if let Ok(n) = result {
            self.bytes.fetch_add(n, Relaxed);
        }
        self.lat_sum_us.fetch_add(took.as_micros() as u64, Relaxed);
        self.size_hist[size_bucket(requested)].fetch_add(1, Relaxed);
    }
    fn reset(&self) {
        self.ops.reset();
        self.bytes.store(0, Relaxed);
        self.lat_sum_us.store(0, Relaxed);
        for h in &self.size_hist {
            h.store(0, Relaxed);
        }
    }
}

/// Totals of one GPU.
#[derive(Debug, Default)]
pub struct GpuTotals {
    /// Bytes read into this GPU.
    pub read_bytes: AtomicU64,
    /// Reads into this GPU.
    pub reads: AtomicU64,
    /// Failed reads.
    pub read_errors: AtomicU64,
    /// Microseconds spent in reads.
    pub read_us: AtomicU64,
    /// Bytes written from this GPU.
    pub write_bytes: AtomicU64,
    /// Writes from this GPU.
    pub writes: AtomicU64,
    /// Failed writes.
    pub write_errors: AtomicU64,
    /// Microseconds spent in writes.
    pub write_us: AtomicU64,
    /// Buffers registered on this GPU.
    pub registrations: AtomicU64,
    /// Bytes registered on this GPU.
    pub registered_bytes: AtomicU64,
}

/// Every counter of a front end.
#[derive(Debug, Default)]
pub struct OpStats {
    /// Reads.
    pub read: DirStats,
    /// Writes.
    pub write: DirStats,
    /// File registrations.
    pub handle_register: OpCounter,
    /// File deregistrations.
    pub handle_deregister: OpCounter,
    /// Buffer registrations.
    pub buf_register: OpCounter,
    /// Buffer deregistrations.
    pub buf_deregister: OpCounter,
    /// Batch set-ups.
    pub batch_setup: OpCounter,
    /// Batch submits.
    pub batch_submit: OpCounter,
    /// Batch entries that ended (ok = completed, err = failed).
    pub batch_complete: OpCounter,
    /// Batch cancels.
    pub batch_cancel: OpCounter,
    /// Batch destroys.
    pub batch_destroy: OpCounter,
    /// Batch entries submitted.
    pub batch_entries: AtomicU64,
    /// Bytes read by batch entries.
    pub batch_read_bytes: AtomicU64,
    /// Bytes written by batch entries.
    pub batch_write_bytes: AtomicU64,
    /// Microseconds spent in batch submits.
    pub batch_submit_us: AtomicU64,
    /// Per GPU.
    pub gpus: [GpuTotals; MAX_GPUS],
}

impl OpStats {
    /// Counts a read of `requested` bytes into memory of GPU `gpu` (None: host) that moved
    /// `result` bytes (Err: failed) in `took`.
    pub fn record_read(
        &self,
        gpu: Option<usize>,
        requested: u64,
        result: Result<u64, ()>,
        took: Duration,
    ) {
        self.read.record(requested, result, took);
        if let Some(g) = gpu.and_then(|g| self.gpus.get(g)) {
            g.reads.fetch_add(1, Relaxed);
            g.read_us.fetch_add(took.as_micros() as u64, Relaxed);
            match result {
                Ok(n) => g.read_bytes.fetch_add(n, Relaxed),
                Err(()) => g.read_errors.fetch_add(1, Relaxed),
            };
        }
    }

    /// Counts a write, like [`OpStats::record_read`].
    pub fn record_write(
        &self,
        gpu: Option<usize>,
        requested: u64,
        result: Result<u64, ()>,
        took: Duration,
    ) {
        self.write.record(requested, result, took);
        if let Some(g) = gpu.and_then(|g| self.gpus.get(g)) {
            g.writes.fetch_add(1, Relaxed);
            g.write_us.fetch_add(took.as_micros() as u64, Relaxed);
            match result {
                Ok(n) => g.write_bytes.fetch_add(n, Relaxed),
                Err(()) => g.write_errors.fetch_add(1, Relaxed),
            };
        }
    }

    /// Sets every counter back to zero.
    pub fn reset(&self) {
        self.read.reset();
        self.write.reset();
        for c in [
            &self.handle_register,
            &self.handle_deregister,
            &self.buf_register,
            &self.buf_deregister,
            &self.batch_setup,
            &self.batch_submit,
            &self.batch_complete,
            &self.batch_cancel,
            &self.batch_destroy,
        ] {
            c.reset();
        }
        for a in [
            &self.batch_entries,
            &self.batch_read_bytes,
            &self.batch_write_bytes,
            &self.batch_submit_us,
        ] {
            a.store(0, Relaxed);
        }
        for g in &self.gpus {
            for a in [
                &g.read_bytes,
                &g.reads,
                &g.read_errors,
                &g.read_us,
                &g.write_bytes,
                &g.writes,
                &g.write_errors,
                &g.write_us,
                &g.registrations,
                &g.registered_bytes,
            ] {
                a.store(0, Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_log2_kib() {
        assert_eq!(size_bucket(1), 0);
        assert_eq!(size_bucket(1024), 0);
        assert_eq!(size_bucket(1025), 1);
        assert_eq!(size_bucket(4096), 2);
        assert_eq!(size_bucket(4097), 3);
        assert_eq!(size_bucket(1 << 20), 10);
        assert_eq!(size_bucket(u64::MAX), HIST_BUCKETS - 1);
    }

    #[test]
    fn records_and_resets() {
        let s = OpStats::default();
        s.record_read(Some(1), 4096, Ok(4000), Duration::from_micros(7));
        s.record_read(None, 10, Err(()), Duration::from_micros(3));
        s.record_write(Some(99), 1 << 20, Ok(1 << 20), Duration::from_micros(5));
        assert_eq!(s.read.ops.get(), (1, 1));
        assert_eq!(s.read.bytes.load(Relaxed), 4000);
        assert_eq!(s.read.lat_sum_us.load(Relaxed), 10);
        assert_eq!(s.read.size_hist[2].load(Relaxed), 1);
        assert_eq!(s.read.size_hist[0].load(Relaxed), 1);
        assert_eq!(s.gpus[1].read_bytes.load(Relaxed), 4000);
        assert_eq!(s.write.bytes.load(Relaxed), 1 << 20);
        s.reset();
        assert_eq!(s.read.ops.get(), (0, 0));
        assert_eq!(s.gpus[1].read_bytes.load(Relaxed), 0);
    }
}
