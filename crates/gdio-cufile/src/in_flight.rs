//! How a program's synchronous `cuFileRead`/`cuFileWrite` calls overlapped, for the summary the
//! library logs at INFO when the driver closes (or the process exits with it open): calls,
//! bytes asked, the most in flight at once and how many on average, the mean time of a call,
//! and the wall time during which any was in flight,
//! the span over which the engine's worker shares say why the I/O ran at the speed it did
//! ("idle" workers: the program keeps too few requests in flight). Kept only when INFO is
//! enabled at open, so the lock taken twice per call costs nothing otherwise.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use gdio::cpu_steal::CpuTicks;
use gdio::engine::{EngineCounters, WorkerShares};
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
    /// The calls' own times, summed (finished calls only).
    calls: Duration,
    finished: u64,
    /// The machine's CPU ticks at the first call (`/proc/stat`, read once): the hypervisor's
    /// share from there to the summary.
    first_call_ticks: Option<CpuTicks>,
}

/// One call in flight, since when: counted out when dropped.
#[derive(Debug)]
pub struct Entered<'a>(&'a InFlight, Instant);

impl InFlight {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A call of `op` for `size` bytes starts.
    pub fn enter(&self, op: Op, size: usize) -> Entered<'_> {
        let mut s = self.lock();
        let at = Instant::now();
        if s.reads + s.writes == 0 {
            s.first_call_ticks = CpuTicks::now();
        }
        if s.now == 0 {
            s.since = Some(at);
        }
        s.now += 1;
        s.peak = s.peak.max(s.now);
        match op {
            Op::Read => s.reads += 1,
            Op::Write => s.writes += 1,
        }
        s.bytes += size as u64;
        Entered(self, at)
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
            calls: s.calls,
            finished: s.finished,
            ticks: CpuTicks::since_reading(s.first_call_ticks),
        }
    }
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.calls += self.1.elapsed();
        s.finished += 1;
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
    /// The finished calls' own times, summed.
    pub calls: Duration,
    /// Calls finished (the count behind `calls`).
    pub finished: u64,
    /// The machine's CPU ticks from the first call to the summary, where `/proc/stat` could
    /// be read: how much of the CPUs the hypervisor gave to others meanwhile.
    pub ticks: Option<CpuTicks>,
}

impl Summary {
    /// One line for the log: the calls, how many of the engine's reads were split over its
    /// free workers, then where its `threads` workers spent the busy time (`engine`: its
    /// counters over the session), with the verdict.
    pub fn line(&self, threads: usize, engine: &EngineCounters) -> String {
        let secs = self.busy.as_secs_f64();
        let gbps = if secs > 0.0 { self.bytes as f64 / secs / 1e9 } else { 0.0 };
        let mean = self.bytes / (self.reads + self.writes).max(1);
        // Calls in flight on average over the busy time, and a call's mean time: a program
        // that keeps fewer in flight than its threads spends the rest outside the library.
        let calls = self.calls.as_secs_f64();
        let average = if secs > 0.0 { calls / secs } else { 0.0 };
        let call_ms = calls * 1e3 / self.finished.max(1) as f64;
        let early = match engine.split_early_copies {
            0 => String::new(),
            n => format!("; {n} reads copied early, part by part"),
        };
        let ahead = match engine.read_ahead_started_bytes {
            0 => String::new(),
            started => format!(
                "; {} reads out of read-ahead ({started} bytes read ahead, {} of them unused)",
                engine.read_ahead_reads, engine.read_ahead_unused_bytes
            ),
        };
        // In a VM the CPUs' copies out of the page cache slow with the host's other work.
        let steal = match self.ticks.and_then(|t| t.steal_share()) {
            Some(x) => format!(
                "; the hypervisor ran other work on this VM's CPUs {:.1} % of their time since \
                 the first call (steal in /proc/stat)",
                x * 100.0
            ),
            None => String::new(),
        };
        format!(
            "synchronous I/O: {} reads, {} writes, {} bytes asked (mean {} bytes), up to {} in \
             flight at once ({:.1} on average, a call {:.3} ms), {:.3} s with any in flight \
             ({:.2} GB/s); the engine split {} reads over free workers ({} pieces read into another worker's \
             buffer{}); {} reads out of page-cache pins ({} bytes pinned now){}; {}{}",
            self.reads,
            self.writes,
            self.bytes,
            mean,
            self.peak,
            average,
            call_ms,
            secs,
            gbps,
            engine.split_reads,
            engine.split_pieces_helped,
            early,
            engine.pinned_reads,
            engine.page_cache_pinned_bytes,
            ahead,
            WorkerShares::new(threads, secs, engine.worker_time)
                .with_file_bytes(engine.file_bytes())
                .line(),
            steal,
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
        assert_eq!((s.reads, s.writes, s.bytes, s.peak, s.finished), (2, 1, 160, 2, 3));
        // Two calls of 20 ms side by side and one alone: 60 ms of calls in about 40 ms busy.
        assert!(s.calls >= Duration::from_millis(60) && s.calls >= s.busy, "{s:?}");
        assert!(s.busy >= Duration::from_millis(40), "{s:?}");
        // However late the sleeps wake, the gap of at least 50 ms between the calls is not busy.
        assert!(s.busy + Duration::from_millis(50) <= total, "{s:?} of {total:?}");
        let time = gdio::engine::WorkerTime { file_io_ns: 80_000_000, ..Default::default() };
        let engine = EngineCounters {
            split_reads: 3,
            split_pieces_helped: 5,
            pinned_reads: 2,
            page_cache_pinned_bytes: 64 << 20,
            worker_time: time,
            ..Default::default()
        };
        let line = s.line(4, &engine);
        assert!(line.starts_with("synchronous I/O: 2 reads, 1 writes, 160 bytes asked"), "{line}");
        assert!(line.contains("up to 2 in flight") && line.contains("4 workers"), "{line}");
        let split = "the engine split 3 reads over free workers (5 pieces read into another \
                     worker's buffer); 2 reads out of page-cache pins (67108864 bytes pinned \
                     now); 4 workers";
        assert!(line.contains(split), "{line}");
        let early = EngineCounters { split_early_copies: 2, ..engine };
        let with_early = s.line(4, &early);
        let split = "(5 pieces read into another worker's buffer; 2 reads copied early, part \
                     by part); 2 reads out of page-cache pins";
        assert!(with_early.contains(split), "{with_early}");
        let ahead = EngineCounters {
            read_ahead_reads: 7,
            read_ahead_started_bytes: 9 << 20,
            read_ahead_unused_bytes: 1 << 20,
            ..engine
        };
        let with_ahead = s.line(4, &ahead);
        let words = "(67108864 bytes pinned now); 7 reads out of read-ahead (9437184 bytes read \
                     ahead, 1048576 of them unused); 4 workers";
        assert!(with_ahead.contains(words), "{with_ahead}");
        let average = s.calls.as_secs_f64() / s.busy.as_secs_f64();
        assert!(line.contains(&format!("({average:.1} on average, a call ")), "{line}");
        assert!(average > 1.0 && average <= 2.0, "{s:?}");
    }

    #[test]
    fn the_summary_says_the_hypervisors_share_since_the_first_call() {
        let f = InFlight::default();
        drop(f.enter(Op::Read, 4096));
        let s = f.summary();
        if CpuTicks::now().is_some() {
            assert!(s.ticks.is_some(), "read at the first call and at the summary: {s:?}");
        }
        let engine = EngineCounters::default();
        let with = |ticks| Summary { ticks, ..s }.line(4, &engine);
        let line = with(Some(CpuTicks { total: 1_600, steal: 96 }));
        assert!(
            line.ends_with(
                "; the hypervisor ran other work on this VM's CPUs 6.0 % of their time since \
                 the first call (steal in /proc/stat)"
            ),
            "{line}"
        );
        // Too few ticks to tell, or none read: nothing said.
        assert!(!with(Some(CpuTicks { total: 50, steal: 25 })).contains("hypervisor"));
        assert!(!with(None).contains("hypervisor"));
    }
}
