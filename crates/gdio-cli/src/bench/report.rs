//! The bench's results: one row per operation, the limits, and how they print.

use serde::Serialize;

use super::pass::Pattern;
use crate::out::outln;
use crate::units::format_size;
use gdio::engine::WorkerShares;

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
    /// The share of the machine's CPU time that the hypervisor gave to other work while the
    /// timed iterations ran (steal in `/proc/stat`, all CPUs; `gdio::cpu_steal`); absent
    /// where it cannot be read or the iterations were too short to tell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_steal: Option<f64>,
    /// Bytes of the timed iterations that the engine moved through the page cache (buffered).
    pub buffered_bytes: u64,
    /// Bytes of the timed iterations that went through O_DIRECT.
    pub direct_bytes: u64,
    /// Bytes of the timed iterations moved by DMA straight from the page cache.
    pub page_cache_dma_bytes: u64,
    /// Reads of the timed iterations served out of page-cache pins (chunks read twice over,
    /// registered with the GPU: `page_cache_pins_max_bytes`), one DMA each on the bench's
    /// own threads.
    pub pinned_reads: u64,
    /// Reads into GPU memory of the timed iterations served out of read-ahead
    /// (`read_ahead_bytes`: ranges the workers read ahead of a sequence of reads, copied to
    /// the GPU on the bench's own threads).
    pub read_ahead_reads: u64,
    /// Tasks of the timed iterations that the completion watcher finished the moment their
    /// copies landed (`completion_watcher`: requests of one or two tasks into GPU memory).
    pub watcher_finished_tasks: u64,
    /// Requests of the timed iterations that ran on the bench's own threads instead of the
    /// engine's workers (`inline_max_bytes`).
    pub inline_requests: u64,
    /// Requests of the timed iterations small enough for the bench's threads that went to the
    /// workers for a crowd of callers (`inline_max_callers`; `EngineCounters::inline_busy`).
    pub inline_busy: u64,
    /// One-task reads into GPU memory of the timed iterations that the engine split over its
    /// free workers (`split_min_bytes`).
    pub split_reads: u64,
    /// Pieces of those split reads that a worker read into another worker's bounce buffer
    /// (`split_into_one_buffer`; `EngineCounters::split_pieces_helped`).
    pub split_pieces_helped: u64,
    /// Of those split reads, the ones whose first parts went to the GPU before the rest was
    /// read (`split_early_copy`; `EngineCounters::split_early_copies`).
    pub split_early_copies: u64,
    /// Small reads into GPU memory of the timed iterations that went in gathered groups
    /// (`gather_max_pieces`).
    pub gathered_reads: u64,
    /// Of those, the ones whose group the scatter kernel sent (`gather_scatter`).
    pub scattered_reads: u64,
    /// Small writes out of GPU memory of the timed iterations that went in gathered groups
    /// (`gather_writes`).
    pub gathered_writes: u64,
    /// Gathered pieces of the timed iterations that went in one `pread`/`pwrite` with the
    /// piece before them (`gather_adjacent_runs`).
    pub adjacent_pieces: u64,
    /// Where the engine's workers spent the timed iterations.
    pub workers: WorkerShares,
    /// Page cache dropped before each iteration.
    pub cold: bool,
    /// For writes: seconds of the fsync after the last iteration (not in `seconds`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fsync_seconds: Option<f64>,
    /// For writes: the most buffered writes of 1 MiB or more the engine had in flight into the
    /// output file at once (`FileHandle::most_writers_at_once`; `file_writers` caps it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub most_writers_at_once: Option<usize>,
    /// Backend that served the I/O.
    pub backend: String,
    /// The limit this row is measured against (reads: the pinned host→device copy, or for
    /// host memory a plain parallel read; writes: a plain parallel `pwrite` of host memory into
    /// the same filesystem, same shape, same run, and for GPU memory the pinned device→host
    /// copy where that is lower).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_gbps: Option<f64>,
    /// Ratio of `gbps` to the matching limit, when one was measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_to_limit: Option<f64>,
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
                "{:<6} path: {} buffered, {} O_DIRECT, {} page-cache DMA{}",
                "",
                format_size(r.buffered_bytes),
                format_size(r.direct_bytes),
                format_size(r.page_cache_dma_bytes),
                [
                    (r.pinned_reads, "reads out of page-cache pins"),
                    (r.read_ahead_reads, "reads out of read-ahead"),
                    (r.watcher_finished_tasks, "tasks finished by the completion watcher"),
                    (r.inline_requests, "requests run by their callers"),
                    (r.inline_busy, "small ones sent to the workers for a crowd of callers"),
                    (r.split_reads, "reads split over free workers"),
                    (r.split_pieces_helped, "pieces read into another worker's buffer"),
                    (r.split_early_copies, "split reads copied early, part by part"),
                    (r.gathered_reads, "small reads gathered"),
                    (r.scattered_reads, "gathered reads sent by the scatter kernel"),
                    (r.gathered_writes, "small writes gathered"),
                    (r.adjacent_pieces, "gathered pieces in one call with the one before"),
                ]
                .iter()
                .filter(|(n, _)| *n > 0)
                .map(|(n, what)| format!("; {n} {what}"))
                .collect::<String>()
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
            let host_read = HostRead {
                gbps: self.limits.get("host_read_gbps").and_then(|v| v.as_f64()),
                threads: self.limits.get("host_read_threads").and_then(|v| v.as_u64()),
            };
            let into_gpu = r.op == "read" && r.target.starts_with("gpu");
            let buffered_read = (into_gpu && r.buffered_bytes > 0).then_some(r.gbps);
            let worker = r.workers.file_io_gbps;
            if let Some(line) = host_side(buffered_read, r.limit_gbps, &host_read, worker) {
                outln!("{:<6} {line}", "");
            }
            if let Some(f) = r.fsync_seconds {
                outln!("{:<6} fsync after the last write: {f:.3} s (not in the GB/s)", "");
            }
            if let Some(n) = r.most_writers_at_once.filter(|n| *n > 0) {
                outln!(
                    "{:<6} at most {n} large buffered writes into the file at once (file_writers)",
                    ""
                );
            }
            if r.workers.verdict().is_some() {
                outln!("{:<6} {}", "", r.workers.line());
            }
            if let Some(line) = crate::steal::line(r.cpu_steal, "this row ran") {
                outln!("{:<6} {line}", "");
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
            "{:<6} {:<20} {:>9} {:>9} {:>11} {:>9} {:>9} {:>8} {:>7} {:>8}",
            "op",
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
                "{:<6} {:<20} {:>9} {:>9.2} {:>11.0} {:>9.3} {:>9.3} {:>8.2} {:>7} {:>8}",
                r.op,
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
            outln!(
                "  {:<6} {:<20} {}",
                r.op,
                r.label.as_deref().unwrap_or(&r.op),
                r.workers.line()
            );
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

/// The host's plain parallel read of the file into host memory, as `gdio bench` measured it
/// (its `host_read_gbps` and `host_read_threads` limits).
struct HostRead {
    /// GB/s of all its threads together.
    gbps: Option<f64>,
    /// How many threads read.
    threads: Option<u64>,
}

/// For a read into GPU memory (`buffered_read_gbps`: its GB/s, when some of it went through the
/// page cache; `link_gbps`: its limit, the pinned copy), how it compares with this host's own
/// plain parallel read of the file into host memory (`host`): every byte is copied by the CPU
/// out of the page cache before it crosses the link, so where that read is slower than the
/// link and this one comes close to it, the host side is what holds the read back, not gdio
/// and not the link (session 45's H100 host read 0.67 × its link with its workers 78 % of
/// their time in `pread`, BENCHMARKS.md). With the workers' own rate inside their reads
/// (`worker_gbps`), it also says when they copied slower than each thread of the plain read
/// did at least (its GB/s over its threads): what the workers have that the plain read has
/// not is the GPU's DMA out of host memory right behind their copies, which alone took the
/// CPUs' copies from 5–6 to 3.3–4.7 GB/s each on session 49's H100 (`bench/split-pread.c`).
fn host_side(
    buffered_read_gbps: Option<f64>,
    link_gbps: Option<f64>,
    host: &HostRead,
    worker_gbps: Option<f64>,
) -> Option<String> {
    let gbps = buffered_read_gbps?;
    let host_gbps = host.gbps.filter(|h| *h > 0.0)?;
    let of = gbps / host_gbps;
    let mut line = format!(
        "host side: a plain parallel read of the file into host memory measured \
         {host_gbps:.2} GB/s; this read moved {of:.2} x that into the GPU"
    );
    if link_gbps.is_some_and(|link| host_gbps < link) && of >= HOST_BOUND_SHARE {
        line += " (the CPU's copies out of the page cache, not the link, bound it on this host)";
    }
    if let (Some(w), Some(n)) = (worker_gbps, host.threads.filter(|n| *n > 0)) {
        let each = host_gbps / n as f64;
        if w < each * WORKER_SLOW_SHARE {
            line += &format!(
                "; its workers copied out of the page cache at {w:.2} GB/s each, against at \
                 least {each:.2} for each of the plain read's {n} threads: the GPU's copies out \
                 of host memory ran beside theirs and share the host's memory with them"
            );
        }
    }
    Some(line)
}

/// The share of the host's plain read from which a read into GPU memory counts as held back by
/// the host side.
const HOST_BOUND_SHARE: f64 = 0.85;

/// The share of a plain-read thread's rate under which the workers' copies count as slowed.
const WORKER_SLOW_SHARE: f64 = 0.85;

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain read of `gbps` by twelve threads.
    fn host(gbps: Option<f64>) -> HostRead {
        HostRead { gbps, threads: Some(12) }
    }

    #[test]
    fn a_gpu_read_is_compared_with_the_host_read_and_blamed_only_near_it() {
        // The H100 host of session 45: the host read under the link, the read close to it.
        let line = host_side(Some(34.98), Some(52.51), &host(Some(33.0)), None).expect("a line");
        assert!(line.contains("measured 33.00 GB/s") && line.contains("1.06 x that"), "{line}");
        assert!(line.contains("not the link, bound it"), "{line}");
        // Far under the host read: compared, not blamed on it.
        let line = host_side(Some(20.0), Some(52.51), &host(Some(40.0)), None).unwrap();
        assert!(line.contains("0.50 x") && !line.contains("bound it"), "{line}");
        // A host read faster than the link: the link is the limit already shown.
        let line = host_side(Some(50.0), Some(52.0), &host(Some(60.0)), None).unwrap();
        assert!(!line.contains("bound it"), "{line}");
        // No link measured: compared only.
        assert!(!host_side(Some(30.0), None, &host(Some(31.0)), None)
            .unwrap()
            .contains("bound it"));
    }

    #[test]
    fn workers_copying_slower_than_the_plain_reads_threads_are_said_to_share_the_memory() {
        // Session 49's H100: 4 MiB x 4 at 21.64 GB/s, a worker at 3.52, the plain read 72.
        let line = host_side(Some(21.64), Some(54.0), &host(Some(72.0)), Some(3.52)).unwrap();
        let want = "its workers copied out of the page cache at 3.52 GB/s each, against at \
                    least 6.00 for each of the plain read's 12 threads";
        assert!(line.contains(want) && line.contains("share the host's memory"), "{line}");
        // Within 0.85 of a plain-read thread (5.2 of 6.0): nothing said.
        let near = host_side(Some(21.64), Some(54.0), &host(Some(72.0)), Some(5.2)).unwrap();
        assert!(!near.contains("its workers"), "{near}");
        // No thread count, or no worker rate (no bytes read by the workers): nothing said.
        let unknown = HostRead { gbps: Some(72.0), threads: None };
        assert!(!host_side(Some(20.0), Some(54.0), &unknown, Some(1.0))
            .unwrap()
            .contains("its workers"));
        let zero = HostRead { gbps: Some(72.0), threads: Some(0) };
        assert!(!host_side(Some(20.0), Some(54.0), &zero, Some(1.0))
            .unwrap()
            .contains("its workers"));
        assert!(!host_side(Some(20.0), Some(54.0), &host(Some(72.0)), None)
            .unwrap()
            .contains("its workers"));
    }

    #[test]
    fn no_line_without_a_buffered_gpu_read_or_a_host_read() {
        // Host targets, writes and all-O_DIRECT reads pass no buffered read.
        assert_eq!(host_side(None, Some(50.0), &host(Some(30.0)), Some(1.0)), None);
        // Cold runs measure host_read_direct_gbps instead.
        assert_eq!(host_side(Some(20.0), Some(50.0), &host(None), Some(1.0)), None);
        assert_eq!(host_side(Some(20.0), Some(50.0), &host(Some(0.0)), Some(1.0)), None);
    }
}
