//! How a program's synchronous `cuFileRead`/`cuFileWrite` calls overlapped, for the summary the
//! library logs at INFO when the driver closes (or the process exits with it open): calls,
//! bytes asked, the most in flight at once, and the wall time during which any was in flight,
//! the span over which the engine's worker shares say why the I/O ran at the speed it did
//! ("idle" workers: the program keeps too few requests in flight). Kept only when INFO is
//! enabled at open, so the lock taken twice per call costs nothing otherwise.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use gdio::engine::{WorkerShares, WorkerTime};
use gdio::Op;

/// The synchronous calls of one session.
#[derive(Debug, Default)]
pub struct InFlight {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    now: usize,
    peak: usize,
    reads: u64,
    writes: u64,
    bytes: u64,
    since: Option<Instant>,
    busy: Duration,
}

/// One call in flight: counted out when dropped.
#[derive(Debug)]
pub struct Entered<'a>(&'a InFlight);

impl InFlight {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A call of `op` for `size` bytes starts.
    pub fn enter(&self, op: Op, size: usize) -> Entered<'_> {
        let mut s = self.lock();
        if s.now == 0 {
            s.since = Some(Instant::now());
        }
        s.now += 1;
        s.peak = s.peak.max(s.now);
        match op {
            Op::Read => s.reads += 1,
            Op::Write => s.writes += 1,
        }
        s.bytes += size as u64;
        Entered(self)
    }

    /// What the calls so far add up to (a stretch still in flight counts up to now).
    pub fn summary(&self) -> Summary {
        let s = self.lock();
        let open = s.since.map_or(Duration::ZERO, |t| t.elapsed());
        Summary {
            reads: s.reads,
            writes: s.writes,
            bytes: s.bytes,
            peak: s.peak,
            busy: s.busy + open,
        }
    }
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.now -= 1;
        if s.now == 0 {
            if let Some(t) = s.since.take() {
                s.busy += t.elapsed();
            }
        }
    }
}

/// The synchronous calls of a session, added up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// `cuFileRead` calls.
    pub reads: u64,
    /// `cuFileWrite` calls.
    pub writes: u64,
    /// Bytes the calls asked for.
    pub bytes: u64,
    /// The most calls in flight at once.
    pub peak: usize,
    /// Wall time during which at least one call was in flight.
    pub busy: Duration,
}

impl Summary {
    /// One line for the log: the calls, then where the engine's `threads` workers spent the
    /// busy time (`time`: their time over the session), with the verdict.
    pub fn line(&self, threads: usize, time: WorkerTime) -> String {
        let secs = self.busy.as_secs_f64();
        let gbps = if secs > 0.0 { self.bytes as f64 / secs / 1e9 } else { 0.0 };
        let mean = self.bytes / (self.reads + self.writes).max(1);
        format!(
            "synchronous I/O: {} reads, {} writes, {} bytes asked (mean {} bytes), up to {} in \
             flight at once, {:.3} s with any in flight ({:.2} GB/s); {}",
            self.reads,
            self.writes,
            self.bytes,
            mean,
            self.peak,
            secs,
            gbps,
            WorkerShares::new(threads, secs, time).line(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_time_is_the_union_of_the_calls_and_the_peak_their_overlap() {
        let f = InFlight::default();
        let start = Instant::now();
        {
            let _a = f.enter(Op::Read, 100);
            let _b = f.enter(Op::Read, 50);
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(50));
        {
            let _c = f.enter(Op::Write, 10);
            std::thread::sleep(Duration::from_millis(20));
        }
        let s = f.summary();
        let total = start.elapsed();
        assert_eq!((s.reads, s.writes, s.bytes, s.peak), (2, 1, 160, 2));
        assert!(s.busy >= Duration::from_millis(40), "{s:?}");
        // However late the sleeps wake, the gap of at least 50 ms between the calls is not busy.
        assert!(s.busy + Duration::from_millis(50) <= total, "{s:?} of {total:?}");
        let line = s.line(4, WorkerTime { file_io_ns: 80_000_000, ..WorkerTime::default() });
        assert!(line.starts_with("synchronous I/O: 2 reads, 1 writes, 160 bytes asked"), "{line}");
        assert!(line.contains("up to 2 in flight") && line.contains("4 workers"), "{line}");
    }
}
