//! Where the engine's workers spent a span of time, as shares of it, and what that says about
//! the limit: `gdio bench`'s rows, `gdio load`, and the libcufile's summary at close.

use serde::Serialize;

use super::WorkerTime;

/// Where the engine's workers spent a timed span, as fractions of their time (workers ×
/// seconds): the answer to "why is this slow".
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WorkerShares {
    /// Workers of the pool that served the row.
    pub threads: usize,
    /// Worker-seconds of the timed iterations (threads × seconds).
    pub worker_seconds: f64,
    /// In file reads and writes (with the kernel's copy out of or into the page cache).
    pub file_io: f64,
    /// Waiting for a bounce buffer whose copy was still in flight (behind the GPU link).
    pub buffer_wait: f64,
    /// Workers of split reads waiting on each other (a helper for the claimer's buffer, the
    /// claimer for the pieces others read; `split_into_one_buffer`).
    pub split_wait: f64,
    /// Queueing copies and recording their markers (driver calls).
    pub copy_queue: f64,
    /// Nothing queued, waiting for copies in flight to land.
    pub draining: f64,
    /// The rest: no work queued (or bookkeeping between phases).
    pub idle: f64,
    /// The submitting threads running their own small requests inline, in the same unit
    /// (worker-seconds; may pass 1.0 with more callers than workers).
    pub inline: f64,
    /// Mean milliseconds from a task's last copy queued to its landing noticed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub landing_ms: Option<f64>,
    /// Mean milliseconds a request waited for a worker to start it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_wait_ms: Option<f64>,
    /// Mean milliseconds from a request done to its sleeping caller running again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wake_ms: Option<f64>,
    /// Callers that slept until their request was done (the count behind `wake_ms`).
    pub callers_woken: u64,
    /// Callers whose lone read was done while they polled it (`lone_caller_polls`).
    pub callers_polled: u64,
    /// The rate of a worker's file I/O while it ran, in GB/s: the bytes the engine read or
    /// wrote with `pread`/`pwrite` (buffered and `O_DIRECT`) in the span over its workers'
    /// file-I/O time ([`WorkerShares::with_file_bytes`]). Beside the shares it tells a slow
    /// span's workers reading slower (the host's memory, the disk) from workers that read as
    /// fast as on a quick one but waited more. `None` when not given, when no file I/O was
    /// timed, or when callers ran requests inline (their bytes count, their time is not
    /// file I/O).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_io_gbps: Option<f64>,
}

impl WorkerShares {
    /// The shares of `time` in `threads` workers' `seconds` each.
    pub fn new(threads: usize, seconds: f64, time: WorkerTime) -> WorkerShares {
        let total = threads as f64 * seconds;
        let share = |ns: u64| if total > 0.0 { ns as f64 / 1e9 / total } else { 0.0 };
        let (file_io, buffer_wait) = (share(time.file_io_ns), share(time.buffer_wait_ns));
        let (copy_queue, draining) = (share(time.copy_queue_ns), share(time.draining_ns));
        let mut shares = WorkerShares {
            threads,
            worker_seconds: total,
            file_io,
            buffer_wait,
            split_wait: share(time.split_wait_ns),
            copy_queue,
            draining,
            idle: 0.0,
            inline: share(time.inline_ns),
            landing_ms: time.mean_landing_ms(),
            start_wait_ms: time.mean_start_wait_ms(),
            wake_ms: time.mean_wake_ms(),
            callers_woken: time.callers_woken,
            callers_polled: time.callers_polled,
            file_io_gbps: None,
        };
        let busy = shares.busy();
        shares.idle = if busy > 0.0 { (1.0 - busy).max(0.0) } else { 0.0 };
        shares
    }

    /// These shares with the rate of the workers' file I/O ([`WorkerShares::file_io_gbps`]):
    /// `bytes` read or written with `pread`/`pwrite` in the same span
    /// ([`super::EngineCounters::file_bytes`], or a row's own bytes).
    pub fn with_file_bytes(mut self, bytes: u64) -> WorkerShares {
        let secs = self.file_io * self.worker_seconds;
        self.file_io_gbps =
            (secs > 0.0 && bytes > 0 && self.inline == 0.0).then(|| bytes as f64 / secs / 1e9);
        self
    }

    /// The workers' timed share: every phase but idle and the callers' inline time.
    fn busy(&self) -> f64 {
        self.file_io + self.buffer_wait + self.split_wait + self.copy_queue + self.draining
    }

    /// What held the row back, in words, from the largest share: idle workers want more
    /// requests in flight, waits for buffers point at the GPU link, file I/O at the CPU's
    /// copy out of the page cache or at the disk. `None` when nothing was timed.
    pub fn verdict(&self) -> Option<&'static str> {
        let busy = [
            (self.file_io, "file I/O (the kernel's copy out of the page cache, or the disk)"),
            (self.buffer_wait, "the GPU link (copies in flight held the bounce buffers)"),
            (
                self.split_wait,
                "split reads: their workers waiting on each other for a claimer's buffer or \
                 the last pieces (`split_pieces_per_worker`, `split_into_one_buffer`)",
            ),
            (self.copy_queue, "queueing copies in the GPU driver"),
            (self.inline, "the callers, running their small requests inline"),
            (
                self.idle + self.draining,
                "too little work: more or larger requests in flight would use idle workers",
            ),
        ];
        let (share, words) = busy.into_iter().fold((0.0, ""), |a, b| if b.0 > a.0 { b } else { a });
        (share > 0.0).then_some(words)
    }

    /// One line: the shares in percent, the mean landing time and the verdict.
    pub fn line(&self) -> String {
        let pct = |x: f64| format!("{:.0}%", x * 100.0);
        let mut s = if self.busy() == 0.0 {
            format!(
                "the callers ran every request inline ({} of {} workers' time); the workers had \
                 none",
                pct(self.inline),
                self.threads
            )
        } else {
            format!(
                "{} workers: file I/O {}, waiting for buffers {}{}, queueing copies {}, \
                 draining {}, idle {}{}",
                self.threads,
                pct(self.file_io),
                pct(self.buffer_wait),
                if self.split_wait > 0.0 {
                    format!(", waiting on split partners {}", pct(self.split_wait))
                } else {
                    String::new()
                },
                pct(self.copy_queue),
                pct(self.draining),
                pct(self.idle),
                if self.inline > 0.0 {
                    format!(" (callers inline {})", pct(self.inline))
                } else {
                    String::new()
                },
            )
        };
        if let Some(r) = self.file_io_gbps {
            s += &format!("; a worker's file I/O ran at {r:.2} GB/s");
        }
        if let Some(ms) = self.landing_ms {
            s += &format!("; copies landed {ms:.3} ms after queueing");
        }
        if let Some(ms) = self.start_wait_ms {
            s += &format!("; requests waited {ms:.3} ms for a worker");
        }
        if let Some(ms) = self.wake_ms {
            s += &format!(
                "; {} callers woke {ms:.3} ms after their request was done",
                self.callers_woken
            );
        }
        if self.callers_polled > 0 {
            s += &format!(
                "; {} callers polled their read alone in flight until it was done (no wake-up)",
                self.callers_polled
            );
        }
        if let Some(v) = self.verdict() {
            s += &format!("; most time: {v}");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_shares_are_fractions_of_worker_seconds_and_name_the_largest() {
        // 4 workers for 2 s = 8 worker-seconds: 4 s reading, 2 s waiting for buffers, 1 s
        // draining, the remaining 1 s idle.
        let t = WorkerTime {
            file_io_ns: 4_000_000_000,
            buffer_wait_ns: 2_000_000_000,
            draining_ns: 1_000_000_000,
            landing_ns: 3_000_000,
            copies_landed: 2,
            start_wait_ns: 300_000,
            requests_started: 3,
            wake_ns: 50_000,
            callers_woken: 2,
            ..WorkerTime::default()
        };
        let w = WorkerShares::new(4, 2.0, t);
        assert_eq!(w.worker_seconds, 8.0);
        assert_eq!((w.file_io, w.buffer_wait, w.draining, w.idle), (0.5, 0.25, 0.125, 0.125));
        assert_eq!(w.landing_ms, Some(1.5));
        assert!(w.verdict().is_some_and(|v| v.starts_with("file I/O")));
        let line = w.line();
        assert!(line.contains("file I/O 50%") && line.contains("idle 12%"), "{line}");
        assert!(line.contains("1.500 ms"), "{line}");
        assert!(line.contains("requests waited 0.100 ms for a worker"), "{line}");
        assert!(line.contains("; 2 callers woke 0.025 ms after their request was done"), "{line}");
        assert!(!line.contains("polled"), "{line}");
        let polled = WorkerShares::new(4, 2.0, WorkerTime { callers_polled: 7, ..t }).line();
        assert!(
            polled.contains("; 7 callers polled their read alone in flight until it was done"),
            "{polled}"
        );

        // Mostly idle: the verdict asks for more in flight.
        let idle = WorkerTime { file_io_ns: 1_000_000_000, buffer_wait_ns: 0, ..t };
        assert!(WorkerShares::new(4, 2.0, idle).verdict().is_some_and(|v| v.contains("more")));
        // Buffers: the GPU link.
        let link = WorkerTime { buffer_wait_ns: 5_000_000_000, file_io_ns: 1_000_000_000, ..t };
        assert!(WorkerShares::new(4, 2.0, link).verdict().is_some_and(|v| v.contains("GPU link")));
        // Split reads' workers waiting on each other: named in the line and the verdict.
        let split = WorkerTime { split_wait_ns: 5_000_000_000, file_io_ns: 1_000_000_000, ..t };
        let w = WorkerShares::new(4, 2.0, split);
        assert_eq!((w.split_wait, w.idle), (0.625, 0.0), "{w:?}");
        assert!(w.verdict().is_some_and(|v| v.starts_with("split reads")));
        assert!(w.line().contains("waiting on split partners 62%"), "{}", w.line());
        assert!(!WorkerShares::new(4, 2.0, t).line().contains("split"), "no split, no word");
        // Callers that ran everything inline: the workers had nothing.
        let inline = WorkerTime { inline_ns: 40_000_000_000, ..WorkerTime::default() };
        let w = WorkerShares::new(4, 2.0, inline);
        assert_eq!(w.idle, 0.0);
        assert!(w.verdict().is_some_and(|v| v.contains("inline")));
        assert!(w.line().starts_with("the callers ran every request inline (500% of 4"));
        // Nothing timed: no verdict.
        assert_eq!(WorkerShares::new(4, 2.0, WorkerTime::default()).verdict(), None);
    }

    #[test]
    fn the_file_io_rate_is_the_bytes_over_the_workers_file_io_time_and_only_that() {
        // 4 workers for 2 s, 4 s of them in file I/O: 6 GB moved is 1.5 GB/s per worker.
        let t = WorkerTime { file_io_ns: 4_000_000_000, ..WorkerTime::default() };
        let w = WorkerShares::new(4, 2.0, t);
        assert_eq!(w.file_io_gbps, None, "no bytes given, no rate");
        assert!(!w.line().contains("GB/s"), "{}", w.line());
        let w = w.with_file_bytes(6_000_000_000);
        let r = w.file_io_gbps.expect("a rate");
        assert!((r - 1.5).abs() < 1e-9, "{r}");
        assert!(w.line().contains("; a worker's file I/O ran at 1.50 GB/s"), "{}", w.line());
        // A slower row: the same bytes in twice the file-I/O time read half as fast, whatever
        // the idle share.
        let slow = WorkerTime { file_io_ns: 8_000_000_000, ..WorkerTime::default() };
        let r2 = WorkerShares::new(8, 2.0, slow).with_file_bytes(6_000_000_000).file_io_gbps;
        assert!(r2.is_some_and(|r2| (r2 - 0.75).abs() < 1e-9), "{r2:?}");
        // No file I/O timed, no bytes, or callers inline (bytes without their time): none.
        let none = WorkerShares::new(4, 2.0, WorkerTime::default()).with_file_bytes(1 << 30);
        assert_eq!(none.file_io_gbps, None);
        assert_eq!(WorkerShares::new(4, 2.0, t).with_file_bytes(0).file_io_gbps, None);
        let inline = WorkerTime { inline_ns: 1_000_000, ..t };
        assert_eq!(WorkerShares::new(4, 2.0, inline).with_file_bytes(1 << 30).file_io_gbps, None);
        // In the JSON only when known.
        let j = serde_json::to_value(WorkerShares::new(4, 2.0, t)).unwrap();
        assert!(j.get("file_io_gbps").is_none(), "{j}");
        let j = serde_json::to_value(WorkerShares::new(4, 2.0, t).with_file_bytes(6_000_000_000));
        assert_eq!(j.unwrap()["file_io_gbps"], 1.5);
    }

    #[test]
    fn the_file_bytes_are_every_pread_and_pwrite_not_page_cache_dma() {
        let c = super::super::EngineCounters {
            buffered_read_bytes: 1,
            direct_read_bytes: 20,
            buffered_write_bytes: 300,
            direct_write_bytes: 4000,
            page_cache_dma_bytes: 50000,
            ..Default::default()
        };
        assert_eq!(c.file_bytes(), 4321);
    }
}
