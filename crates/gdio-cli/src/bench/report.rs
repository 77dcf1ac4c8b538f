//! The bench's results: one row per operation, the limits, and how they print.

use serde::Serialize;

use super::pass::Pattern;
use crate::out::outln;
use crate::units::format_size;

/// One measured operation.
#[derive(Debug, Clone, Serialize)]
pub struct OpResult {
    /// `read` or `write`.
    pub op: String,
    /// The row of a sweep (`4 KiB random x 64`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Order of the requests: `seq` or `random`.
    pub pattern: Pattern,
    /// `gpu:N` or `host`.
    pub target: String,
    /// Bytes moved per iteration.
    pub bytes: u64,
    /// Median seconds per iteration.
    pub seconds: f64,
    /// GB/s (10^9 bytes/s) of the median iteration.
    pub gbps: f64,
    /// GB/s of the best iteration.
    pub best_gbps: f64,
    /// Requests per second of the median iteration.
    pub iops: f64,
    /// Every byte matched.
    pub verified: bool,
    /// Iterations timed.
    pub iterations: usize,
    /// Bytes per I/O request.
    pub io_size: u64,
    /// Requests in flight.
    pub queue_depth: usize,
    /// Median per-I/O latency, milliseconds.
    pub latency_p50_ms: f64,
    /// 99th-percentile per-I/O latency, milliseconds.
    pub latency_p99_ms: f64,
    /// CPU seconds (user + system) per iteration, median.
    pub cpu_seconds: f64,
    /// Bytes of the timed iterations that the engine moved through the page cache (buffered).
    pub buffered_bytes: u64,
    /// Bytes of the timed iterations that went through O_DIRECT.
    pub direct_bytes: u64,
    /// Bytes of the timed iterations moved by DMA straight from the page cache.
    pub page_cache_dma_bytes: u64,
    /// Where the engine's workers spent the timed iterations.
    pub workers: WorkerShares,
    /// Page cache dropped before each iteration.
    pub cold: bool,
    /// For writes: seconds of the fsync after the last iteration (not in `seconds`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fsync_seconds: Option<f64>,
    /// Backend that served the I/O.
    pub backend: String,
    /// The limit this row is measured against (reads: the pinned host→device copy, or for
    /// host memory a plain parallel read; writes: a plain parallel `pwrite` of host memory into
    /// the same filesystem, same shape, same run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_gbps: Option<f64>,
    /// Ratio of `gbps` to the matching limit, when one was measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_to_limit: Option<f64>,
}

/// Where the engine's workers spent the timed iterations, as fractions of their time (workers
/// × seconds): the answer to "why is this row slow".
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
}

impl WorkerShares {
    /// The shares of `time` in `threads` workers' `seconds` each.
    pub fn new(threads: usize, seconds: f64, time: gdio::engine::WorkerTime) -> WorkerShares {
        let total = threads as f64 * seconds;
        let share = |ns: u64| if total > 0.0 { ns as f64 / 1e9 / total } else { 0.0 };
        let (file_io, buffer_wait) = (share(time.file_io_ns), share(time.buffer_wait_ns));
        let (copy_queue, draining) = (share(time.copy_queue_ns), share(time.draining_ns));
        let busy = file_io + buffer_wait + copy_queue + draining;
        WorkerShares {
            threads,
            worker_seconds: total,
            file_io,
            buffer_wait,
            copy_queue,
            draining,
            idle: if busy > 0.0 { (1.0 - busy).max(0.0) } else { 0.0 },
            inline: share(time.inline_ns),
            landing_ms: time.mean_landing_ms(),
        }
    }

    /// What held the row back, in words, from the largest share: idle workers want more
    /// requests in flight, waits for buffers point at the GPU link, file I/O at the CPU's
    /// copy out of the page cache or at the disk. `None` when nothing was timed.
    pub fn verdict(&self) -> Option<&'static str> {
        let busy = [
            (self.file_io, "file I/O (the kernel's copy out of the page cache, or the disk)"),
            (self.buffer_wait, "the GPU link (copies in flight held the bounce buffers)"),
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
        let mut s = if self.file_io + self.buffer_wait + self.copy_queue + self.draining == 0.0 {
            format!(
                "the callers ran every request inline ({} of {} workers' time); the workers had \
                 none",
                pct(self.inline),
                self.threads
            )
        } else {
            format!(
                "{} workers: file I/O {}, waiting for buffers {}, queueing copies {}, draining \
                 {}, idle {}{}",
                self.threads,
                pct(self.file_io),
                pct(self.buffer_wait),
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
        if let Some(ms) = self.landing_ms {
            s += &format!("; copies landed {ms:.3} ms after queueing");
        }
        if let Some(v) = self.verdict() {
            s += &format!("; most time: {v}");
        }
        s
    }
}

/// Everything one bench run measured.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// The operations.
    pub results: Vec<OpResult>,
    /// Limits measured in the same run.
    pub limits: serde_json::Map<String, serde_json::Value>,
    /// The file read, its filesystem, and the engine settings.
    pub setup: serde_json::Map<String, serde_json::Value>,
    /// The library's counters after the run.
    pub stats: serde_json::Value,
    /// For a sweep: the weakest row against its limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

impl BenchReport {
    /// Prints the human table.
    pub fn print(&self) {
        if self.summary.is_some() {
            return self.print_sweep();
        }
        for (k, v) in &self.setup {
            outln!("{k:>16}: {}", v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string()));
        }
        outln!();
        outln!(
            "{:<6} {:<7} {:>10} {:>9} {:>9} {:>9} {:>10} {:>10} {:>8} {:>8}  backend",
            "op",
            "target",
            "bytes",
            "GB/s",
            "best",
            "limit×",
            "p50 ms",
            "p99 ms",
            "cpu s",
            "verified"
        );
        for r in &self.results {
            outln!(
                "{:<6} {:<7} {:>10} {:>9.2} {:>9.2} {:>9} {:>10.2} {:>10.2} {:>8.2} {:>8}  {}",
                r.op,
                r.target,
                format_size(r.bytes),
                r.gbps,
                r.best_gbps,
                r.ratio_to_limit.map(|x| format!("{x:.2}")).unwrap_or_else(|| "-".into()),
                r.latency_p50_ms,
                r.latency_p99_ms,
                r.cpu_seconds,
                if r.verified { "yes" } else { "NO" },
                r.backend,
            );
            outln!(
                "{:<6} path: {} buffered, {} O_DIRECT, {} page-cache DMA",
                "",
                format_size(r.buffered_bytes),
                format_size(r.direct_bytes),
                format_size(r.page_cache_dma_bytes)
            );
            outln!(
                "{:<6} {} requests of {} x {} in flight: {:.0} per second; limit {}",
                "",
                r.pattern.label(),
                format_size(r.io_size),
                r.queue_depth,
                r.iops,
                r.limit_gbps.map(|l| format!("{l:.2} GB/s")).unwrap_or_else(|| "-".into())
            );
            if let Some(f) = r.fsync_seconds {
                outln!("{:<6} fsync after the last write: {f:.3} s (not in the GB/s)", "");
            }
            if r.workers.verdict().is_some() {
                outln!("{:<6} {}", "", r.workers.line());
            }
        }
        outln!();
        outln!("limits measured in this run:");
        for (k, v) in &self.limits {
            outln!("  {k:<28} {v}");
        }
        if let Some(b) = self.stats["backends"].as_object() {
            outln!();
            outln!("backends (library counters for the whole run):");
            for (name, c) in b {
                outln!(
                    "  {name:<8} ops {:>6}  bytes {:>10}  errors {}  retries {}  fallbacks {}",
                    c["ops"],
                    format_size(c["bytes"].as_u64().unwrap_or(0)),
                    c["errors"],
                    c["retries"],
                    c["fallbacks"]
                );
            }
        }
    }

    /// Prints a sweep: one line per row, then the weakest row.
    fn print_sweep(&self) {
        for (k, v) in &self.setup {
            outln!("{k:>16}: {}", v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string()));
        }
        outln!();
        outln!(
            "{:<20} {:>9} {:>9} {:>11} {:>9} {:>9} {:>8} {:>7} {:>8}",
            "row",
            "request",
            "GB/s",
            "IOPS",
            "p50 ms",
            "p99 ms",
            "limit",
            "limit×",
            "verified"
        );
        for r in &self.results {
            outln!(
                "{:<20} {:>9} {:>9.2} {:>11.0} {:>9.3} {:>9.3} {:>8.2} {:>7} {:>8}",
                r.label.as_deref().unwrap_or(&r.op),
                format_size(r.io_size),
                r.gbps,
                r.iops,
                r.latency_p50_ms,
                r.latency_p99_ms,
                r.limit_gbps.unwrap_or(0.0),
                r.ratio_to_limit.map(|x| format!("{x:.2}")).unwrap_or_else(|| "-".into()),
                if r.verified { "yes" } else { "NO" },
            );
        }
        outln!();
        outln!("where the workers' time went:");
        for r in self.results.iter().filter(|r| r.workers.verdict().is_some()) {
            outln!("  {:<20} {}", r.label.as_deref().unwrap_or(&r.op), r.workers.line());
        }
        outln!();
        outln!("limits measured in this run:");
        for (k, v) in &self.limits {
            outln!("  {k:<28} {v}");
        }
        if let Some(s) = &self.summary {
            outln!();
            outln!("{s}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gdio::engine::WorkerTime;

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

        // Mostly idle: the verdict asks for more in flight.
        let idle = WorkerTime { file_io_ns: 1_000_000_000, buffer_wait_ns: 0, ..t };
        assert!(WorkerShares::new(4, 2.0, idle).verdict().is_some_and(|v| v.contains("more")));
        // Buffers: the GPU link.
        let link = WorkerTime { buffer_wait_ns: 5_000_000_000, file_io_ns: 1_000_000_000, ..t };
        assert!(WorkerShares::new(4, 2.0, link).verdict().is_some_and(|v| v.contains("GPU link")));
        // Callers that ran everything inline: the workers had nothing.
        let inline = WorkerTime { inline_ns: 40_000_000_000, ..WorkerTime::default() };
        let w = WorkerShares::new(4, 2.0, inline);
        assert_eq!(w.idle, 0.0);
        assert!(w.verdict().is_some_and(|v| v.contains("inline")));
        assert!(w.line().starts_with("the callers ran every request inline (500% of 4"));
        // Nothing timed: no verdict.
        assert_eq!(WorkerShares::new(4, 2.0, WorkerTime::default()).verdict(), None);
    }
}
