//! `gdio check`: what this machine offers and, for each path, what gdio found out about it.

use crate::out::outln;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::ExitCode;

use gdio::{gpu, platform};
use serde_json::{json, Value};

/// Arguments of `gdio check`.
#[derive(Debug, Clone, clap::Args)]
pub struct CheckArgs {
    /// Files or block devices to probe.
    pub paths: Vec<PathBuf>,
    /// Print one JSON object instead of the report.
    #[arg(long)]
    pub json: bool,
    /// Explain decisions for one memory kind only: device or host (works without a GPU).
    #[arg(long)]
    pub memory: Option<crate::explain::MemoryFilter>,
}

/// The machine's GPU runtime and platform. Made before any driver of this process, so that
/// `gpu_runtime_seconds` is what finding the runtime costs a fresh process (loading libcuda
/// and `cuInit`: a fixed cost of the first GPU call, before any I/O).
fn platform_report() -> Value {
    let start = std::time::Instant::now();
    let (rt, why) = gpu::detect();
    let found_in = start.elapsed().as_secs_f64();
    let gpus: Vec<Value> = (0..rt.device_count())
        .map(|i| match rt.device_info(i) {
            Ok(d) => serde_json::to_value(d).unwrap_or(Value::Null),
            Err(e) => json!({ "ordinal": i, "error": e.to_string() }),
        })
        .collect();
    let cuda = rt.driver_version().map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10));
    json!({
        "gpu_runtime": rt.name(),
        "gpu_runtime_seconds": found_in,
        "no_gpu_reason": why,
        "gpus": gpus,
        "cuda_driver_version": cuda,
        "nvidia_driver_version": platform::nvidia_driver_version(),
        "kernel": platform::kernel_release(),
        "nvidia_fs": platform::nvidia_fs(),
        "pci_p2pdma": platform::pci_p2pdma(),
        "libcufile": platform::libcufile(),
        "libcufile_choice": crate::cufile_choice::report(),
        "io_uring": platform::io_uring(),
        "transparent_huge_pages": platform::transparent_huge_pages(),
    })
}

/// What `check` probes for one path: the path itself, or for a directory a 1 MiB file made in
/// it with no name (`O_TMPFILE`, or a random name removed at once), so that the report tells
/// what files there would get and a killed `check` leaves nothing in the directory.
enum Probe {
    Path,
    Dir(std::fs::File),
    DirFailed(String),
}

impl Probe {
    fn of(p: &std::path::Path) -> Probe {
        if !p.is_dir() {
            return Probe::Path;
        }
        match tempfile::tempfile_in(p) {
            Ok(f) => {
                let _ = f.set_len(1 << 20);
                Probe::Dir(f)
            }
            Err(e) => Probe::DirFailed(format!(
                "directory {}: cannot create a probe file in it: {e}",
                p.display()
            )),
        }
    }

    /// The path the library probes.
    fn target(&self, p: &std::path::Path) -> PathBuf {
        match self {
            Probe::Dir(f) => PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd())),
            _ => p.to_path_buf(),
        }
    }
}

fn path_report(p: &std::path::Path, probe: &Probe) -> Value {
    match probe {
        Probe::Path => file_report(p),
        Probe::DirFailed(e) => json!({ "path": p.display().to_string(), "error": e }),
        Probe::Dir(_) => {
            let mut v = file_report(&probe.target(p));
            v["path"] = json!(p.display().to_string());
            v["file_type"] = json!("directory");
            v["probed_via"] = json!("a temporary file in the directory");
            v
        }
    }
}

fn file_report(p: &std::path::Path) -> Value {
    match gdio::file::probe_path(p) {
        Ok(info) => {
            let mut v = serde_json::to_value(&info).unwrap_or(Value::Null);
            if let Some(m) = info.fs.ext4_data_mode() {
                v["fs"]["ext4_data_mode"] = json!(m);
            }
            if let Some(t) = gdio::file::TmpfsPages::probe(&info.fs) {
                let mut pages = serde_json::to_value(&t).unwrap_or(Value::Null);
                pages["small_pages"] = json!(t.small_pages());
                pages["says"] = json!(t.describe());
                v["fs"]["tmpfs_pages"] = pages;
            }
            v
        }
        Err(e) => json!({ "path": p.display().to_string(), "error": e.to_string() }),
    }
}

/// How pinned bounce buffers are made under `pinned_huge_pages`, given the GPU runtime and
/// the THP probe.
fn pinned_report(huge: bool, runtime: &Value, thp: &Value) -> Value {
    let available = thp["available"].as_bool() == Some(true);
    let made = match (huge, available) {
        _ if runtime.as_str() != Some("cuda") => {
            "plain host memory (no CUDA runtime: nothing to pin for)".to_owned()
        }
        (false, _) => "cuMemHostAlloc (pinned_huge_pages = false)".to_owned(),
        (true, true) => format!(
            "huge-page memory registered with cuMemHostRegister (transparent huge pages: {})",
            thp["version"].as_str().unwrap_or("on")
        ),
        (true, false) => format!(
            "4 KiB pages registered with cuMemHostRegister ({}): pinning costs about what \
             cuMemHostAlloc costs",
            thp["detail"].as_str().unwrap_or("no transparent huge pages")
        ),
    };
    json!({ "pinned_huge_pages": huge, "made_as": made })
}

/// How engine workers will read under `io_engine`, given the io_uring probe.
fn io_engine_report(engine: gdio::IoEngine, uring: &Value) -> Value {
    let available = uring["available"].as_bool() == Some(true);
    let reads = match (engine, available) {
        (gdio::IoEngine::Pread, _) => "pread".to_owned(),
        (_, false) => format!(
            "pread (io_uring unavailable: {})",
            uring["detail"].as_str().unwrap_or("no detail")
        ),
        (gdio::IoEngine::Auto, true) => {
            "pread for every shape (what measured faster so far)".to_owned()
        }
        (gdio::IoEngine::IoUring, true) => "io_uring for every worker read".to_owned(),
    };
    json!({ "configured": engine.as_str(), "reads": reads })
}

fn yes_no(v: &Value) -> String {
    let a = if v["available"].as_bool() == Some(true) { "yes" } else { "no" };
    let ver = v["version"].as_str().map(|s| format!(" {s}")).unwrap_or_default();
    format!("{a}{ver} ({})", v["detail"].as_str().unwrap_or(""))
}

fn print(report: &Value) {
    let p = &report["platform"];
    outln!("platform");
    let found_ms = p["gpu_runtime_seconds"].as_f64().unwrap_or(0.0) * 1e3;
    outln!(
        "  gpu runtime          {} (found in {found_ms:.1} ms: once per process, at its first \
         GPU call with defer_gpu_init, else when gdio's driver is made)",
        p["gpu_runtime"].as_str().unwrap_or("?")
    );
    if let Some(w) = p["no_gpu_reason"].as_str() {
        outln!("  no GPU because       {w}");
    }
    for g in p["gpus"].as_array().into_iter().flatten() {
        if let Some(e) = g["error"].as_str() {
            outln!("  gpu {}                {e}", g["ordinal"]);
            continue;
        }
        let mem = g["total_memory"].as_u64().unwrap_or(0);
        let link = match (g["pcie_link_speed"].as_str(), g["pcie_link_width"].as_u64()) {
            (Some(s), Some(w)) => format!("PCIe {s} x{w}"),
            _ => "PCIe link unknown".into(),
        };
        let bar1 = g["bar1_size"]
            .as_u64()
            .map(crate::units::format_size)
            .unwrap_or_else(|| "unknown".into());
        outln!(
            "  gpu {}                {} | {} | {} | BAR1 {} | {}",
            g["ordinal"],
            g["name"].as_str().unwrap_or("?"),
            crate::units::format_size(mem),
            link,
            bar1,
            g["pci_bus_id"].as_str().unwrap_or("")
        );
    }
    outln!("  cuda driver          {}", p["cuda_driver_version"].as_str().unwrap_or("none"));
    outln!("  nvidia driver        {}", p["nvidia_driver_version"].as_str().unwrap_or("none"));
    outln!("  kernel               {}", p["kernel"].as_str().unwrap_or("?"));
    outln!("  nvidia-fs            {}", yes_no(&p["nvidia_fs"]));
    outln!("  pci p2pdma           {}", yes_no(&p["pci_p2pdma"]));
    outln!("  libcufile            {}", yes_no(&p["libcufile"]));
    crate::cufile_choice::print(&p["libcufile_choice"]);
    outln!("  io_uring             {}", yes_no(&p["io_uring"]));
    outln!(
        "  io_engine            {}: {}",
        p["io_engine"]["configured"].as_str().unwrap_or("?"),
        p["io_engine"]["reads"].as_str().unwrap_or("?")
    );
    outln!("  pinned buffers       {}", p["pinned_buffers"]["made_as"].as_str().unwrap_or("?"));
    for b in report["gdr"].as_array().into_iter().flatten() {
        let ok = if b["available"].as_bool() == Some(true) { "yes" } else { "no" };
        outln!(
            "  gdr {:<16} {ok} ({})",
            b["name"].as_str().unwrap_or("?"),
            b["reason"].as_str().unwrap_or("")
        );
    }
    for f in report["paths"].as_array().into_iter().flatten() {
        outln!();
        outln!("{}", f["path"].as_str().unwrap_or("?"));
        if let Some(e) = f["error"].as_str() {
            outln!("  error                {e}");
            continue;
        }
        let fs = &f["fs"];
        let opts: Vec<String> = fs["mount_options"]
            .as_array()
            .into_iter()
            .flatten()
            .chain(fs["super_options"].as_array().into_iter().flatten())
            .filter_map(|o| o.as_str().map(str::to_owned))
            .collect();
        outln!("  type                 {}", f["file_type"].as_str().unwrap_or("?"));
        if f["file_type"] != "directory" {
            outln!("  size                 {} bytes", f["size"]);
        }
        outln!(
            "  filesystem           {} (magic 0x{:x}) on {} from {}",
            fs["name"].as_str().unwrap_or("?"),
            fs["magic"].as_u64().unwrap_or(0),
            fs["mount_point"].as_str().unwrap_or("?"),
            fs["source"].as_str().unwrap_or("?")
        );
        outln!("  mount options        {}", opts.join(","));
        if let Some(m) = fs["ext4_data_mode"].as_str() {
            outln!("  ext4 data mode       {m}");
        }
        if let Some(t) = fs["tmpfs_pages"]["says"].as_str() {
            outln!("  tmpfs pages          {t}");
        }
        let d = &f["direct_io"];
        outln!(
            "  O_DIRECT             {}",
            if d["supported"].as_bool() == Some(true) {
                "yes".to_owned()
            } else {
                format!("no: {}", d["reason"].as_str().unwrap_or(""))
            }
        );
        outln!(
            "  DIO alignment        memory {} / offset {} (from {})",
            f["dio_mem_align"],
            f["dio_offset_align"],
            f["align_source"].as_str().unwrap_or("?")
        );
    }
}

/// Runs `gdio check`.
pub fn main(args: CheckArgs) -> ExitCode {
    let loaded = match crate::config::load() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("gdio check: {e}");
            return ExitCode::from(2);
        }
    };
    let mut platform = platform_report();
    let driver = match gdio::Driver::from_loaded(loaded.clone()) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("gdio check: {e}");
            return ExitCode::from(2);
        }
    };
    // Directories are explained through a probe file made inside them.
    let probes: Vec<Probe> = args.paths.iter().map(|p| Probe::of(p)).collect();
    let targets: Vec<PathBuf> =
        args.paths.iter().zip(&probes).map(|(p, pr)| pr.target(p)).collect();
    let mut explained = crate::explain::explain_paths(&driver, &loaded, &targets, args.memory);
    let reports: Vec<Value> =
        args.paths.iter().zip(&probes).map(|(p, pr)| path_report(p, pr)).collect();
    let failed = reports.iter().any(|p| p.get("error").is_some());
    if let Some(paths) = explained["paths"].as_array_mut() {
        for (i, p) in paths.iter_mut().enumerate() {
            p["path"] = json!(args.paths[i].display().to_string());
            if let Some(e) = reports[i].get("error") {
                p["error"] = e.clone(); // one reason per path, the same in both parts
            }
            p["probe"] = reports[i].clone();
        }
    }
    platform["io_engine"] = io_engine_report(loaded.config().io_engine, &platform["io_uring"]);
    platform["pinned_buffers"] = pinned_report(
        loaded.config().pinned_huge_pages,
        &platform["gpu_runtime"],
        &platform["transparent_huge_pages"],
    );
    let report = json!({
        "platform": platform,
        "gdr": gdr_report(),
        "config": explained["config"],
        "paths": explained["paths"],
    });
    if args.json {
        outln!("{report}");
    } else {
        print(&json!({ "platform": report["platform"], "gdr": report["gdr"], "paths": reports }));
        outln!();
        crate::explain::print_explain(&explained);
    }
    drop(probes);
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The GPU-mapping (GDRCopy) backends and why each is or is not usable.
fn gdr_report() -> Value {
    let opts = gdio::gdr::GdrOptions::default().with_env();
    serde_json::to_value(gdio::gdr::probe_backends(&opts)).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_buffers_line_follows_the_key_the_runtime_and_huge_pages() {
        let thp_on = json!({"available": true, "version": "madvise"});
        let thp_off = json!({"available": false, "detail": "/sys/x says never"});
        let cuda = json!("cuda");
        let line = |huge, rt: &Value, thp: &Value| {
            pinned_report(huge, rt, thp)["made_as"].as_str().unwrap_or_default().to_owned()
        };
        assert!(line(true, &cuda, &thp_on).contains("huge-page memory registered"));
        assert!(line(true, &cuda, &thp_on).contains("madvise"));
        let off = line(true, &cuda, &thp_off);
        assert!(off.contains("4 KiB pages") && off.contains("never"), "{off}");
        assert!(line(false, &cuda, &thp_on).starts_with("cuMemHostAlloc"));
        assert!(line(true, &json!("host"), &thp_on).contains("no CUDA runtime"));
    }
}
