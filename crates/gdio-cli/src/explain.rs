//! `gdio check PATH…`: which backend would serve reads and writes of each path, for device and
//! host memory, aligned and unaligned, with every other backend's reason, and the effective
//! configuration with the source of each value.

use crate::out::outln;
use std::path::PathBuf;

use gdio::backend::Op;
use gdio::{Driver, LoadedConfig, MemoryKind};
use serde_json::{json, Value};

/// Which memory kinds `gdio check --memory` explains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryFilter {
    /// GPU memory (explained as GPU 0 even on a machine without a GPU).
    Device,
    /// Host memory.
    Host,
}

impl std::str::FromStr for MemoryFilter {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "device" | "gpu" => Ok(MemoryFilter::Device),
            "host" => Ok(MemoryFilter::Host),
            _ => Err(format!("--memory must be device or host, not {s:?}")),
        }
    }
}

/// The explanation as JSON:
/// `{"config":[{"key","value","source","origin"?,"in_effect"?}],"paths":[{"path","error"?,"file"?,
/// "decisions":[{"op","memory","aligned","backend","reason","rejected":[{"backend","reason"}],
/// "scores":[{"backend","score","reason"}]}]}]}`.
pub fn explain_paths(
    driver: &Driver,
    loaded: &LoadedConfig,
    paths: &[PathBuf],
    memory: Option<MemoryFilter>,
) -> Value {
    // Sizes the engine rounds (bounce buffers to whole pages, tasks to at least a page): the
    // size in effect, where it differs from the value set.
    let c = loaded.config();
    let rounded = [
        ("bounce_buffer_size", c.bounce_buffer_size, c.bounce_buffer_bytes(), "buffers of"),
        ("task_size", c.task_size, c.task_bytes(), "tasks of at least"),
    ];
    let config: Vec<Value> = loaded
        .entries()
        .into_iter()
        .map(|e| {
            let mut v = json!({"key": e.key, "value": e.value, "source": e.source.as_str()});
            if let Some(o) = e.origin {
                v["origin"] = json!(o);
            }
            if let Some((_, _, bytes, what)) =
                rounded.iter().find(|(k, set, bytes, _)| *k == e.key && set != bytes)
            {
                v["in_effect"] = json!(format!("{what} {bytes} bytes (whole 4 KiB pages)"));
            }
            v
        })
        .collect();
    let memories: Vec<(&str, MemoryKind)> =
        [("device", MemoryKind::Device { ordinal: 0 }), ("host", MemoryKind::Host)]
            .into_iter()
            .filter(|(name, _)| match memory {
                None => true,
                Some(MemoryFilter::Device) => *name == "device",
                Some(MemoryFilter::Host) => *name == "host",
            })
            .collect();
    let mut out_paths = Vec::new();
    for path in paths {
        let info = match gdio::file::probe_path(path) {
            Ok(i) => i,
            Err(e) => {
                out_paths.push(json!({"path": path.display().to_string(), "error": e.to_string(), "decisions": []}));
                continue;
            }
        };
        let mut decisions = Vec::new();
        for op in [Op::Read, Op::Write] {
            for (mem_name, mem) in &memories {
                for aligned in [true, false] {
                    let d = driver.explain(&info, op, *mem, aligned);
                    decisions.push(json!({
                        "op": op.to_string(),
                        "memory": mem_name,
                        "aligned": aligned,
                        "backend": d.backend,
                        "reason": d.reason(),
                        "rejected": d.rejected.iter().map(|(b, r)| json!({"backend": b, "reason": r})).collect::<Vec<_>>(),
                        "scores": d.scores.iter().map(|(b, s)| json!({"backend": b, "score": s.score, "reason": s.reason})).collect::<Vec<_>>(),
                    }));
                }
            }
        }
        let file = json!({
            "type": info.file_type,
            "size": info.size,
            "fs": info.fs.name,
            "ext4_data": info.fs.ext4_data_mode(),
            "mount_point": info.fs.mount_point,
            "o_direct": info.direct_io.supported,
            "o_direct_reason": info.direct_io.reason,
            "dio_offset_align": info.dio_offset_align,
            "dio_mem_align": info.dio_mem_align,
            "align_source": info.align_source,
        });
        out_paths.push(
            json!({"path": path.display().to_string(), "file": file, "decisions": decisions}),
        );
    }
    json!({
        "config_file": loaded.file().map(|p| p.display().to_string()),
        "explained_size": gdio::driver::EXPLAIN_LEN,
        "config": config,
        "paths": out_paths,
    })
}

fn s(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

/// Prints what [`explain_paths`] returned as tables for people.
pub fn print_explain(v: &Value) {
    outln!(
        "configuration{}:",
        v["config_file"].as_str().map(|f| format!(" (file {f})")).unwrap_or_default()
    );
    let rows = v["config"].as_array().cloned().unwrap_or_default();
    let w = rows.iter().map(|e| s(&e["key"]).len()).max().unwrap_or(0);
    for e in &rows {
        let origin = e.get("origin").map(|o| format!(" ({})", s(o))).unwrap_or_default();
        let effect = e.get("in_effect").map(|o| format!("; {}", s(o))).unwrap_or_default();
        outln!(
            "  {:<w$}  {:<24}  {}{}{}",
            s(&e["key"]),
            s(&e["value"]),
            s(&e["source"]),
            origin,
            effect
        );
    }
    let size = v["explained_size"].as_u64().unwrap_or(0);
    for p in v["paths"].as_array().cloned().unwrap_or_default() {
        outln!();
        outln!("{}", s(&p["path"]));
        if let Some(e) = p.get("error") {
            outln!("  cannot check: {}", s(e));
            continue;
        }
        let f = &p["file"];
        outln!(
            "  {} on {}{}, O_DIRECT {}, DIO alignment offset {} memory {} ({})",
            s(&f["type"]),
            s(&f["fs"]),
            f["ext4_data"].as_str().map(|m| format!(" data={m}")).unwrap_or_default(),
            if f["o_direct"].as_bool() == Some(true) {
                "yes".to_owned()
            } else {
                format!("no: {}", s(&f["o_direct_reason"]))
            },
            s(&f["dio_offset_align"]),
            s(&f["dio_mem_align"]),
            s(&f["align_source"]),
        );
        outln!("  a {size}-byte I/O:");
        for d in p["decisions"].as_array().cloned().unwrap_or_default() {
            let what = format!(
                "{} {} {}",
                s(&d["op"]),
                s(&d["memory"]),
                if d["aligned"].as_bool() == Some(true) { "aligned" } else { "unaligned" }
            );
            let backend =
                if d["backend"].is_null() { "NONE (fails)".to_owned() } else { s(&d["backend"]) };
            outln!("    {what:<24} -> {backend}");
            for r in d["rejected"].as_array().cloned().unwrap_or_default() {
                outln!("      {:<7} no: {}", s(&r["backend"]), s(&r["reason"]));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_shape() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![0u8; 8192]).unwrap();
        let loaded = LoadedConfig::defaults();
        let rt = std::sync::Arc::new(gdio::gpu::sim::SimRuntime::new(1, std::time::Duration::ZERO));
        let driver = Driver::with_runtime(loaded.config().clone(), rt).unwrap();
        let v = explain_paths(&driver, &loaded, &[p.clone(), dir.path().join("missing")], None);
        assert!(v["config"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["key"] == "allow_compat_mode" && e["source"] == "default"));
        let d = v["paths"][0]["decisions"].as_array().unwrap();
        assert_eq!(d.len(), 8);
        for x in d {
            assert!(x["op"] == "read" || x["op"] == "write");
            assert!(x["aligned"].is_boolean());
            let want = if x["memory"] == "device" { "compat" } else { "host" };
            assert_eq!(x["backend"], want, "{x}");
            assert!(x["rejected"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["backend"] == "gds" && r["reason"].is_string()));
        }
        assert!(v["paths"][1]["error"].is_string());
        let v = explain_paths(&driver, &loaded, &[p], Some(MemoryFilter::Host));
        assert_eq!(v["paths"][0]["decisions"].as_array().unwrap().len(), 4);
        print_explain(&v);
    }

    #[test]
    fn sizes_the_engine_rounds_say_the_size_in_effect() {
        let dir = tempfile::tempdir().unwrap();
        let rt = std::sync::Arc::new(gdio::gpu::sim::SimRuntime::new(1, std::time::Duration::ZERO));
        let bounce = |v: &Value| {
            v["config"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["key"] == "bounce_buffer_size")
                .cloned()
        };
        let mut loaded = LoadedConfig::defaults();
        let driver = Driver::with_runtime(loaded.config().clone(), rt.clone()).unwrap();
        let whole = explain_paths(&driver, &loaded, &[dir.path().to_path_buf()], None);
        assert!(bounce(&whole).unwrap().get("in_effect").is_none());
        loaded.set("bounce_buffer_size", 1000u64).unwrap();
        loaded.set("task_size", 199u64).unwrap();
        let driver = Driver::with_runtime(loaded.config().clone(), rt).unwrap();
        let v = explain_paths(&driver, &loaded, &[dir.path().to_path_buf()], None);
        let e = bounce(&v).unwrap();
        assert_eq!(e["value"], 1000);
        assert_eq!(e["in_effect"], "buffers of 4096 bytes (whole 4 KiB pages)");
        let t = v["config"].as_array().unwrap().iter().find(|e| e["key"] == "task_size").unwrap();
        assert_eq!(t["value"], 199);
        assert_eq!(t["in_effect"], "tasks of at least 4096 bytes (whole 4 KiB pages)");
    }
}
