//! Which path gdio's I/O took and why, for Python: the driver's counters (per backend, and how
//! the engine moved the bytes and spent its workers' time) and the backend selection's
//! decision for a file, as JSON that `gdio.stats()` and `gdio.explain()` hand back as dicts.

use std::path::PathBuf;

use gdio::{MemoryKind, Op};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::json;

use crate::error::to_py;
use crate::file::runtime;

/// Counters of the current driver as JSON: `backends` (ops, bytes, errors, retries by cause,
/// fallbacks by reason) and `engine` (bytes buffered, `O_DIRECT` and by page-cache DMA, gathered,
/// split, watched and inline requests, `worker_time` in nanoseconds).
#[pyfunction]
pub fn stats_json(py: Python<'_>) -> PyResult<String> {
    let rt = runtime(py)?;
    let d = &rt.driver;
    let v = json!({
        "runtime": d.runtime().name(),
        "backends": d.stats().backends,
        "engine": d.engine().counters(),
    });
    Ok(v.to_string())
}

/// The decision for an `op` (`"read"` or `"write"`) of the file at `path` into or out of GPU
/// `device` (`None`: host memory), at an offset, size and buffer address that meet the file's
/// `O_DIRECT` alignment (`aligned`) or miss it, as JSON: `backend` (or null), `reason`,
/// `scores` and `rejected` (each backend with its score and reason), and the file facts the
/// rules used.
#[pyfunction]
#[pyo3(signature = (path, op, device, aligned))]
pub fn explain_json(
    py: Python<'_>,
    path: PathBuf,
    op: &str,
    device: Option<usize>,
    aligned: bool,
) -> PyResult<String> {
    let op = match op {
        "read" => Op::Read,
        "write" => Op::Write,
        other => {
            return Err(PyValueError::new_err(format!(
                "op must be 'read' or 'write', not {other:?}"
            )))
        }
    };
    let memory = match device {
        Some(ordinal) => MemoryKind::Device { ordinal },
        None => MemoryKind::Host,
    };
    let rt = runtime(py)?;
    let info = gdio::file::probe_path(&path).map_err(to_py)?;
    let d = py.detach(|| rt.driver.explain(&info, op, memory, aligned));
    let v = json!({
        "path": path.display().to_string(),
        "op": op.to_string(),
        "memory": match device { Some(o) => format!("gpu:{o}"), None => "host".to_owned() },
        "aligned": aligned,
        "backend": d.backend,
        "reason": d.reason(),
        "scores": d.scores.iter().map(|(b, s)| json!({"backend": b, "score": s.score, "reason": s.reason})).collect::<Vec<_>>(),
        "rejected": d.rejected.iter().map(|(b, r)| json!({"backend": b, "reason": r})).collect::<Vec<_>>(),
        "file": {
            "size": info.size,
            "fs": info.fs.name,
            "o_direct": info.direct_io.supported,
            "o_direct_reason": info.direct_io.reason,
            "dio_offset_align": info.dio_offset_align,
        },
        "why_no_gpu": rt.driver.why_no_gpu(),
    });
    Ok(v.to_string())
}
