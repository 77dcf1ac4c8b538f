//! `gdio bench --sweep`: the request shapes real clients use, from 4 KiB at random offsets to
//! 1 GiB, read and written (`--mode`), each verified and set beside its limit (reads: the
//! pinned host→device copy for GPU memory, a plain `pread` of the same shape for host memory;
//! writes: a plain `pwrite` of host memory with the same shape into the same filesystem, and
//! for GPU memory at most the pinned device→host copy); the summary names the weakest.

use std::time::Instant;

use serde_json::Value;

use super::pass::{Pattern, Shape};
use super::report::{BenchReport, OpResult};
use super::run::{Bench, Target};
use super::{BenchArgs, Mode};
use crate::units::format_size;

/// The rows: bytes per request, requests in flight, order.
pub const ROWS: [(u64, usize, Pattern); 7] = [
    (4 << 10, 64, Pattern::Random),
    (64 << 10, 64, Pattern::Seq),
    (1 << 20, 32, Pattern::Seq),
    (4 << 20, 16, Pattern::Seq),
    (16 << 20, 8, Pattern::Seq),
    (64 << 20, 4, Pattern::Seq),
    (1 << 30, 2, Pattern::Seq),
];

/// A row's request size on a file of `size` bytes: as in the table, but no larger than the
/// file split among the requests in flight (a multiple of 4096, at least 4096), so that a small
/// `--size` still keeps every request in flight busy.
pub fn scaled_io_size(io: u64, depth: usize, size: u64) -> u64 {
    let share = (size / depth as u64) / 4096 * 4096;
    io.min(share.max(4096))
}

fn row_label(io: u64, depth: usize, pattern: Pattern) -> String {
    let io = format_size(io).replace(".0 ", " ");
    match pattern {
        Pattern::Random => format!("{io} random x {depth}"),
        Pattern::Seq => format!("{io} x {depth}"),
    }
}

/// The row with the smallest ratio to its limit.
pub fn weakest(rows: &[OpResult]) -> Option<&OpResult> {
    rows.iter()
        .filter(|r| r.ratio_to_limit.is_some())
        .min_by(|a, b| a.ratio_to_limit.unwrap_or(0.0).total_cmp(&b.ratio_to_limit.unwrap_or(0.0)))
}

/// One read row against its limit: the pinned host→device copy for GPU memory, a plain
/// `pread` of the same shape for host memory.
fn read_row(b: &mut Bench, shape: Shape) -> Result<OpResult, String> {
    let limit = match b.target() {
        Target::Gpu(_) => b.limits.get("pinned_h2d_gbps").and_then(Value::as_f64),
        Target::Host => Some(b.plain_read_shape(shape)?),
    };
    b.read(shape, limit)
}

/// Labels a finished row and says on stderr that it finished (row `n` of `rows`, with its
/// result and how long it took with its limit and verification), so that a sweep stopped
/// part-way, or a script waiting on it, still learns every row done so far.
fn finished(mut r: OpResult, label: &str, n: usize, rows: usize, start: Instant) -> OpResult {
    eprintln!("{}", progress_line(&r, label, n, rows, start.elapsed().as_secs_f64()));
    r.label = Some(label.to_string());
    r
}

/// `gdio bench: row 3 of 14, read 1 MiB x 32: 41.02 GB/s = 0.74 x the limit of 55.13 GB/s,
/// verified (12.3 s with its limit and check)`.
fn progress_line(r: &OpResult, label: &str, n: usize, rows: usize, secs: f64) -> String {
    let limit = match (r.ratio_to_limit, r.limit_gbps) {
        (Some(x), Some(l)) => format!(" = {x:.2} x the limit of {l:.2} GB/s"),
        _ => String::new(),
    };
    let check = if r.verified { "verified" } else { "VERIFICATION FAILED" };
    format!(
        "gdio bench: row {n} of {rows}, {} {label}: {:.2} GB/s{limit}, {check} ({secs:.1} s with its limit and check)",
        r.op, r.gbps
    )
}

/// Runs every row: the reads, then the writes (as `--mode` asks).
pub fn run(args: &BenchArgs) -> Result<BenchReport, String> {
    let mut b = Bench::prepare(args)?;
    let size = b.size();
    let shapes = ROWS.map(|(io, depth, pattern)| {
        (
            Shape { io_size: scaled_io_size(io, depth, size), depth, pattern },
            row_label(io, depth, pattern),
        )
    });
    let reads = matches!(args.mode, Mode::Read | Mode::Both);
    let writes = matches!(args.mode, Mode::Write | Mode::Both);
    let rows = shapes.len() * (reads as usize + writes as usize);
    let mut results = Vec::new();
    if reads {
        for (shape, label) in &shapes {
            let start = Instant::now();
            let r = read_row(&mut b, *shape).map_err(|e| format!("read row {label}: {e}"))?;
            results.push(finished(r, label, results.len() + 1, rows, start));
        }
    }
    if writes {
        for (shape, label) in &shapes {
            let start = Instant::now();
            let r = b.write(*shape).map_err(|e| format!("write row {label}: {e}"))?;
            results.push(finished(r, label, results.len() + 1, rows, start));
        }
    }
    let summary = weakest(&results).map(|w| {
        format!(
            "weakest row: {} {} ({} requests) at {:.2} GB/s = {:.2} x the limit of {:.2} GB/s",
            w.op,
            w.label.as_deref().unwrap_or("?"),
            format_size(w.io_size),
            w.gbps,
            w.ratio_to_limit.unwrap_or(0.0),
            w.limit_gbps.unwrap_or(0.0)
        )
    });
    Ok(BenchReport {
        results,
        limits: b.limits.clone(),
        setup: b.setup.clone(),
        stats: b.stats(),
        summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_scale_to_small_files() {
        assert_eq!(scaled_io_size(1 << 30, 2, 8 << 30), 1 << 30);
        assert_eq!(scaled_io_size(1 << 30, 2, 64 << 20), 32 << 20);
        assert_eq!(scaled_io_size(4 << 10, 64, 64 << 20), 4 << 10);
        assert_eq!(scaled_io_size(64 << 20, 4, 1000), 4096);
        assert_eq!(row_label(4 << 10, 64, Pattern::Random), "4 KiB random x 64");
        assert_eq!(row_label(1 << 30, 2, Pattern::Seq), "1 GiB x 2");
    }
}
