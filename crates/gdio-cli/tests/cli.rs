//! The `gdio` binary end to end: bench (the main job) and check, their JSON, their errors.

use std::process::Command;

use rand::{RngCore, SeedableRng};
use serde_json::Value;

fn gdio() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gdio"))
}

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

fn random_file(dir: &std::path::Path, len: usize, seed: u64) -> (std::path::PathBuf, Vec<u8>) {
    let mut data = vec![0u8; len];
    rand::rngs::StdRng::seed_from_u64(seed).fill_bytes(&mut data);
    let p = dir.join(format!("data-{seed}.bin"));
    std::fs::write(&p, &data).unwrap();
    (p, data)
}

fn has_gpu() -> bool {
    let out = gdio().args(["check", "--json"]).output().unwrap();
    json_of(&out)["platform"]["gpus"].as_array().is_some_and(|g| !g.is_empty())
}

#[test]
fn bench_rows_say_how_fast_the_workers_file_io_ran() {
    // 4 MiB requests of 1 MiB tasks: the workers, not the callers, read and write.
    let dir = tempfile::tempdir().unwrap();
    let out = gdio()
        .args(["bench", "--size", "8M", "--io-size", "4M", "--task-size", "1M", "--target"])
        .args(["host", "--iterations", "3", "--json", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for r in json_of(&out)["results"].as_array().unwrap() {
        let w = &r["workers"];
        assert_eq!(r["inline_requests"], 0, "{r}");
        let g = w["file_io_gbps"].as_f64().unwrap_or_else(|| panic!("no rate: {w}"));
        // Over the workers' file-I/O time it carried the three timed passes' 8 MiB each.
        let secs = w["file_io"].as_f64().unwrap() * w["worker_seconds"].as_f64().unwrap();
        let bytes = g * 1e9 * secs;
        assert!((bytes / (24 << 20) as f64 - 1.0).abs() < 1e-6, "{bytes} bytes: {w}");
    }
}

#[test]
fn bench_rows_say_how_much_of_the_cpus_the_hypervisor_took() {
    // 4 KiB random reads, one at a time: slow enough that the timed passes span well over the
    // hundred CPU ticks a share needs (`gdio::cpu_steal::MIN_TICKS`).
    let dir = tempfile::tempdir().unwrap();
    let out = gdio()
        .args(["bench", "--size", "64M", "--io-size", "4K", "--pattern", "random"])
        .args(["--queue-depth", "1", "--target", "host", "--mode", "read", "--iterations", "4"])
        .args(["--json", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cpus = std::thread::available_parallelism().unwrap().get() as f64;
    let r = &json_of(&out)["results"][0];
    let ticks = r["seconds"].as_f64().unwrap() * r["iterations"].as_f64().unwrap() * cpus * 100.0;
    match r["cpu_steal"].as_f64() {
        Some(s) => assert!((0.0..=1.0).contains(&s), "{r}"),
        None => assert!(ticks < 200.0, "about {ticks:.0} ticks of timed passes and no share: {r}"),
    }
}

#[test]
fn bench_main_job_verifies_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let out = gdio()
        .args(["bench", "--size", "8M", "--io-size", "1M", "--iterations", "2", "--json", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json_of(&out);
    let results = v["results"].as_array().unwrap();
    let ops: Vec<&str> = results.iter().map(|r| r["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["read", "write"]);
    for r in results {
        assert_eq!(r["bytes"], 8 << 20);
        assert_eq!(r["verified"], true);
        assert!(r["gbps"].as_f64().unwrap() > 0.0);
        assert!(r["seconds"].as_f64().unwrap() > 0.0);
        assert!(r["latency_p99_ms"].as_f64().unwrap() >= r["latency_p50_ms"].as_f64().unwrap());
        let target = r["target"].as_str().unwrap();
        assert!(target == "host" || target.starts_with("gpu:"), "{target}");
        // Where the time went: shares of the workers' time, and somebody (a worker or the
        // caller inline) did the file I/O.
        let w = &r["workers"];
        assert!(w["threads"].as_u64().unwrap() >= 1, "{w}");
        let share = |k: &str| w[k].as_f64().unwrap();
        for k in
            ["file_io", "buffer_wait", "split_wait", "copy_queue", "draining", "idle", "inline"]
        {
            assert!(share(k) >= 0.0, "{k}: {w}");
        }
        let busy = share("file_io")
            + share("buffer_wait")
            + share("split_wait")
            + share("copy_queue")
            + share("draining");
        assert!(busy == 0.0 || (busy + share("idle") - 1.0).abs() < 1e-9 || busy > 1.0, "{w}");
        assert!(share("file_io") + share("inline") > 0.0, "nobody did the I/O: {w}");
        // The completion watcher serves copies to GPUs only.
        let watched = r["watcher_finished_tasks"].as_u64().unwrap();
        assert!(target != "host" || watched == 0, "{target}: {watched} watched");
        // Requests run by their callers are the ones whose time counts as inline.
        let inline = r["inline_requests"].as_u64().unwrap();
        assert_eq!(inline > 0, share("inline") > 0.0, "{inline} inline requests: {w}");
        // The rate of the workers' file I/O: given exactly when they did it and no caller ran
        // requests inline, and over their file-I/O time it carried the timed passes' bytes
        // (two iterations of 8 MiB).
        match w.get("file_io_gbps").and_then(|g| g.as_f64()) {
            Some(g) => {
                assert!(share("file_io") > 0.0 && share("inline") == 0.0, "{w}");
                let secs = share("file_io") * w["worker_seconds"].as_f64().unwrap();
                let bytes = g * 1e9 * secs;
                assert!((bytes / (16 << 20) as f64 - 1.0).abs() < 1e-6, "{bytes} bytes: {w}");
            }
            None => assert!(share("file_io") == 0.0 || share("inline") > 0.0, "{w}"),
        }
        // Only reads into GPU memory are split over free workers.
        let split = r["split_reads"].as_u64().unwrap();
        assert!(split == 0 || (target != "host" && r["op"] == "read"), "{r}");
    }
    assert!(v["limits"]["host_read_gbps"].as_f64().unwrap() > 0.0);
    assert!(v["stats"]["backends"].is_object());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "bench left files behind");
}

#[test]
fn bench_reads_an_existing_file_without_changing_it() {
    let dir = tempfile::tempdir().unwrap();
    let (p, data) = random_file(dir.path(), 3 * 1024 * 1024 + 333, 5);
    let out = gdio()
        .args([
            "bench",
            "--mode",
            "read",
            "--iterations",
            "1",
            "--json",
            "--target",
            "host",
            "--file",
        ])
        .arg(&p)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json_of(&out);
    assert_eq!(v["results"][0]["verified"], true);
    assert_eq!(v["results"][0]["bytes"], data.len());
    assert_eq!(std::fs::read(&p).unwrap(), data);
}

#[test]
fn cold_bench_compares_with_the_plain_direct_read() {
    // The cold row's limit is the plain parallel O_DIRECT read (before and after, averaged),
    // never the page-cache or host-to-device limit.
    let dir = tempfile::tempdir().unwrap();
    let (p, data) = random_file(dir.path(), 8 * 1024 * 1024, 6);
    let out = gdio()
        .args(["bench", "--mode", "read", "--cold", "--iterations", "1", "--json"])
        .args(["--target", "host", "--file"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json_of(&out);
    let r = &v["results"][0];
    assert_eq!(r["verified"], true);
    assert_eq!(r["cold"], true);
    let before = v["limits"]["host_read_direct_gbps"].as_f64().unwrap();
    let after = v["limits"]["host_read_direct_after_gbps"].as_f64().unwrap();
    let limit = r["limit_gbps"].as_f64().unwrap();
    // The JSON limits are rounded to 0.01 GB/s.
    assert!((limit - (before + after) / 2.0).abs() < 0.011, "{limit} vs {before} {after}");
    assert_eq!(std::fs::read(&p).unwrap(), data);
}

#[test]
fn bench_bad_input_exits_2_with_a_reason() {
    let out = gdio().args(["bench", "--file", "/nonexistent/gdio.bin"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/gdio.bin"));
    let out = gdio().args(["bench", "--target", "tpu"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("gpu, gpu:N or host"));
    if !has_gpu() {
        let out = gdio().args(["bench", "--size", "1M", "--target", "gpu:0"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("GPU 0"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn check_explains_device_decisions_and_config_sources() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = random_file(dir.path(), 1 << 20, 6);
    let out = gdio()
        .args(["check", "--json", "--memory", "device"])
        .arg(&p)
        .env("GDIO_THREADS", "3")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json_of(&out);
    let cfg = v["config"].as_array().unwrap();
    let threads = cfg.iter().find(|e| e["key"] == "threads").unwrap();
    assert_eq!(
        (threads["value"].clone(), threads["source"].as_str().unwrap()),
        (Value::from(3), "env")
    );
    let allow = cfg.iter().find(|e| e["key"] == "allow_compat_mode").unwrap();
    assert_eq!(allow["source"], "default");
    let decisions = v["paths"][0]["decisions"].as_array().unwrap();
    assert_eq!(decisions.len(), 4);
    for d in decisions {
        assert_eq!(d["memory"], "device");
        assert_eq!(d["backend"], "compat", "{d}");
        assert!(d["rejected"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["backend"] == "gds" && !r["reason"].as_str().unwrap().is_empty()));
    }
    assert!(v["platform"]["io_uring"]["detail"].is_string());
    assert!(v["paths"][0]["probe"]["dio_offset_align"].as_u64().unwrap() > 0);
    // What finding the GPU runtime cost this fresh process, in seconds.
    let found = v["platform"]["gpu_runtime_seconds"].as_f64().unwrap();
    assert!(found > 0.0 && found < 60.0, "{found}");
}

#[test]
fn check_refuses_a_bad_boolean_naming_the_variable() {
    let out = gdio()
        .args(["check", "--json"])
        .env("HIPFILE_ALLOW_COMPAT_MODE", "maybe")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("HIPFILE_ALLOW_COMPAT_MODE") && err.contains("maybe"), "{err}");
}

// ---- Hardening (issue 8) and the bench's shapes (issue 7) ----

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn assert_no_panic(out: &std::process::Output) {
    let err = stderr_of(out);
    assert!(!err.contains("panicked") && !err.contains("RUST_BACKTRACE"), "{err}");
}

fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A small bench on host memory writing to `out`.
fn bench_write(
    file: &std::path::Path,
    out: &std::path::Path,
    extra: &[&str],
) -> std::process::Output {
    gdio()
        .args([
            "bench",
            "--mode",
            "write",
            "--iterations",
            "1",
            "--warmup",
            "0",
            "--target",
            "host",
            "--io-size",
            "1M",
            "--file",
        ])
        .arg(file)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn out_that_is_the_input_is_refused_through_any_link() {
    let dir = tempfile::tempdir().unwrap();
    let (f, data) = random_file(dir.path(), 3 * 1024 * 1024 + 77, 11);
    let sym = dir.path().join("sym");
    std::os::unix::fs::symlink(&f, &sym).unwrap();
    let hard = dir.path().join("hard");
    std::fs::hard_link(&f, &hard).unwrap();
    for out in [&f, &sym, &hard] {
        for extra in [&[][..], &["--overwrite"][..]] {
            let o = bench_write(&f, out, extra);
            assert_eq!(o.status.code(), Some(2), "{}: {}", out.display(), stderr_of(&o));
            assert!(stderr_of(&o).contains("same device and inode"), "{}", stderr_of(&o));
            assert_eq!(std::fs::read(&f).unwrap(), data, "input changed via {}", out.display());
        }
    }
    assert!(std::fs::symlink_metadata(&sym).unwrap().file_type().is_symlink());
    assert_eq!(listing(dir.path()), ["data-11.bin", "hard", "sym"]);
}

#[test]
fn existing_out_needs_overwrite_and_must_be_writable() {
    let dir = tempfile::tempdir().unwrap();
    let (f, data) = random_file(dir.path(), 2 * 1024 * 1024 + 5, 12);
    let (other, other_data) = random_file(dir.path(), 4096, 13);
    let o = bench_write(&f, &other, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr_of(&o).contains("--overwrite"), "{}", stderr_of(&o));
    assert_eq!(std::fs::read(&other).unwrap(), other_data);
    // A symbolic link as --out is never followed, even with --overwrite.
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&other, &link).unwrap();
    let o = bench_write(&f, &link, &["--overwrite"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr_of(&o).contains("symbolic link"), "{}", stderr_of(&o));
    assert_eq!(std::fs::read(&other).unwrap(), other_data);
    // Read-only: refused even with --overwrite (and even for root).
    std::fs::set_permissions(&other, std::os::unix::fs::PermissionsExt::from_mode(0o444)).unwrap();
    let o = bench_write(&f, &other, &["--overwrite"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr_of(&o).contains("read-only"), "{}", stderr_of(&o));
    assert_eq!(std::fs::read(&other).unwrap(), other_data);
    // Writable with --overwrite: replaced by the input's bytes, verified.
    std::fs::set_permissions(&other, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let o = bench_write(&f, &other, &["--overwrite", "--json"]);
    assert!(o.status.success(), "{}", stderr_of(&o));
    assert_eq!(json_of(&o)["results"][0]["verified"], true);
    assert_eq!(std::fs::read(&other).unwrap(), data);
    assert_eq!(std::fs::read(&f).unwrap(), data);
}

#[test]
fn write_mode_never_touches_the_input_and_refuses_untrusted_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let (f, data) = random_file(dir.path(), 5 * 1024 * 1024 + 3, 14);
    let o = gdio()
        .args([
            "bench",
            "--mode",
            "write",
            "--iterations",
            "2",
            "--target",
            "host",
            "--json",
            "--file",
        ])
        .arg(&f)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr_of(&o));
    let v = json_of(&o);
    assert_eq!(v["results"][0]["verified"], true);
    assert!(v["results"][0]["limit_gbps"].as_f64().unwrap() > 0.0);
    assert!(v["limits"]["host_write_gbps"].as_f64().unwrap() > 0.0);
    // Large buffered writes into the output, at most the default `file_writers` at once.
    let most = v["results"][0]["most_writers_at_once"].as_u64().unwrap();
    assert!((1..=4).contains(&most), "{most} writers at once");
    assert_eq!(std::fs::read(&f).unwrap(), data);
    assert_eq!(listing(dir.path()), ["data-14.bin"], "the bench left its output beside the input");
    // Eight 1 MiB writes in flight take turns one at a time with `file_writers` 1, and the
    // text report says so.
    let o = gdio()
        .env("GDIO_FILE_WRITERS", "1")
        .args(["bench", "--mode", "write", "--target", "host", "--io-size", "1M"])
        .args(["--queue-depth", "8", "--iterations", "1", "--file"])
        .arg(&f)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr_of(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("at most 1 large buffered writes into the file at once"), "{text}");
    assert_eq!(std::fs::read(&f).unwrap(), data);
    for p in ["/proc/self/status", "/sys/kernel/mm/transparent_hugepage/enabled"] {
        if !std::path::Path::new(p).exists() {
            continue;
        }
        let o = gdio()
            .args(["bench", "--mode", "write", "--target", "host", "--file", p])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{p}");
        assert!(stderr_of(&o).contains("does not say how many bytes"), "{p}: {}", stderr_of(&o));
    }
}

#[test]
fn planted_symlinks_at_old_temp_names_are_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let (victim, victim_data) = random_file(dir.path(), 4096, 15);
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    // The names of the old bench for the next few hundred process ids.
    let last: u64 = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1000);
    for pid in last + 1..last + 300 {
        for name in [format!("gdio-bench-{pid}.bin"), format!("gdio-bench-{pid}-out.bin")] {
            std::os::unix::fs::symlink(&victim, tmp.join(name)).unwrap();
        }
    }
    let before = listing(&tmp);
    let o = gdio()
        .args([
            "bench",
            "--size",
            "2M",
            "--io-size",
            "512K",
            "--iterations",
            "1",
            "--target",
            "host",
            "--dir",
        ])
        .arg(&tmp)
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr_of(&o));
    assert_eq!(std::fs::read(&victim).unwrap(), victim_data);
    assert_eq!(listing(&tmp), before, "the bench left or changed files");
}

#[test]
fn make_file_refuses_read_only_and_symlink_targets() {
    let dir = tempfile::tempdir().unwrap();
    let (ro, ro_data) = random_file(dir.path(), 8192, 16);
    std::fs::set_permissions(&ro, std::os::unix::fs::PermissionsExt::from_mode(0o444)).unwrap();
    let o = gdio().args(["make-file", "--size", "1M"]).arg(&ro).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr_of(&o).contains("read-only"), "{}", stderr_of(&o));
    assert_eq!(std::fs::read(&ro).unwrap(), ro_data);
    let (w, w_data) = random_file(dir.path(), 8192, 17);
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&w, &link).unwrap();
    let o = gdio().args(["make-file", "--size", "1M"]).arg(&link).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr_of(&o).contains("symbolic link"), "{}", stderr_of(&o));
    assert_eq!(std::fs::read(&w).unwrap(), w_data);
    // A writable regular file is replaced whole, with the seed's bytes (same seed, same bytes).
    let o = gdio().args(["make-file", "--size", "9M", "--seed", "3"]).arg(&w).output().unwrap();
    assert!(o.status.success(), "{}", stderr_of(&o));
    let a = std::fs::read(&w).unwrap();
    assert_eq!(a.len(), 9 << 20);
    let b_path = dir.path().join("b");
    assert!(gdio()
        .args(["make-file", "--size", "9M", "--seed", "3"])
        .arg(&b_path)
        .status()
        .unwrap()
        .success());
    assert_eq!(std::fs::read(&b_path).unwrap(), a);
    assert!(a.iter().filter(|&&x| x == 0).count() < a.len() / 100);
    assert_eq!(listing(dir.path()), ["b", "data-16.bin", "data-17.bin", "link"]);
}

#[test]
fn make_file_that_fails_midway_leaves_the_target_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let (t, t_data) = random_file(dir.path(), 4096, 18);
    // A file-size limit of 1 MiB (ulimit counts 1024-byte blocks in bash, 512 in some shells):
    // the write of 8 MiB fails with EFBIG part way.
    let script = format!(
        "ulimit -f 1024 && exec '{}' make-file --size 8M '{}'",
        env!("CARGO_BIN_EXE_gdio"),
        t.display()
    );
    let o = Command::new("sh").arg("-c").arg(&script).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr_of(&o));
    let err = stderr_of(&o);
    assert!(err.contains("bytes had reached the file") && err.contains("was not changed"), "{err}");
    assert_no_panic(&o);
    assert_eq!(std::fs::read(&t).unwrap(), t_data);
    assert_eq!(listing(dir.path()), ["data-18.bin"], "partial file left behind");
    let fresh = dir.path().join("fresh");
    let script = format!(
        "ulimit -f 1024 && exec '{}' make-file --size 8M '{}'",
        env!("CARGO_BIN_EXE_gdio"),
        fresh.display()
    );
    let o = Command::new("sh").arg("-c").arg(&script).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr_of(&o));
    assert_eq!(listing(dir.path()), ["data-18.bin"], "partial file left behind");
}

#[test]
fn bad_numbers_exit_2_naming_the_flag() {
    let cases: &[(&[&str], &str)] = &[
        (&["bench", "--size", "1e30"], "--size"),
        (&["bench", "--size", "0"], "--size"),
        (&["bench", "--warmup", "18446744073709551615"], "--warmup"),
        (&["bench", "--iterations", "0"], "--iterations"),
        (&["bench", "--io-size", "0"], "--io-size"),
        (&["bench", "--io-size", "1e30"], "--io-size"),
        (&["bench", "--queue-depth", "0"], "--queue-depth"),
        (&["bench", "--queue-depth", "100000"], "--queue-depth"),
        (&["bench", "--threads", "0"], "--threads"),
        (&["bench", "--threads", "5000"], "--threads"),
        (&["bench", "--task-size", "1"], "--task-size"),
        (&["bench", "--bounce-size", "1e30"], "--bounce-size"),
        (&["make-file", "/nonexistent/x", "--size", "1e30"], "--size"),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (args, flag) in cases {
        let o = gdio().args(*args).arg("--dir").arg(dir.path()).output().unwrap();
        let o = if args[0] == "make-file" { gdio().args(*args).output().unwrap() } else { o };
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr_of(&o));
        assert!(stderr_of(&o).contains(flag), "{args:?}: {}", stderr_of(&o));
        assert_no_panic(&o);
    }
    assert!(listing(dir.path()).is_empty());
}

#[test]
fn a_bench_larger_than_memory_is_refused_before_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let o = gdio()
        .args(["bench", "--target", "host", "--size", "1024T", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr_of(&o));
    assert!(stderr_of(&o).contains("of host memory"), "{}", stderr_of(&o));
    assert!(listing(dir.path()).is_empty());
}

#[test]
fn closed_or_full_stdout_ends_quietly() {
    let script = format!("'{}' check /tmp | head -1", env!("CARGO_BIN_EXE_gdio"));
    let o = Command::new("sh").arg("-c").arg(&script).output().unwrap();
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 1);
    assert_no_panic(&o);
    assert!(stderr_of(&o).is_empty(), "{}", stderr_of(&o));
    if std::path::Path::new("/dev/full").exists() {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let o = gdio().args(["check", "/tmp"]).stdout(full).output().unwrap();
        assert_eq!(o.status.code(), Some(1));
        assert!(stderr_of(&o).contains("cannot write to standard output"), "{}", stderr_of(&o));
        assert_no_panic(&o);
    }
}

#[test]
fn sigterm_during_a_bench_or_make_file_leaves_no_file() {
    for args in [
        &["bench", "--size", "1G", "--io-size", "1M", "--target", "host", "--iterations", "50"][..],
        &["bench", "--size", "1G", "--target", "host", "--file", "new.bin"][..],
        &["make-file", "--size", "4G"][..],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = gdio();
        cmd.args(args).env("TMPDIR", dir.path()).current_dir(dir.path());
        if args[0] == "make-file" {
            cmd.arg(dir.path().join("made"));
        } else {
            cmd.arg("--dir").arg(dir.path());
        }
        let mut child = cmd
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(700));
        // SAFETY: kill on the child's pid, which has not been waited for.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let status = child.wait().unwrap();
        assert!(!status.success(), "{args:?} finished before the signal");
        assert!(listing(dir.path()).is_empty(), "{args:?} left {:?}", listing(dir.path()));
    }
}

#[test]
fn check_leaves_nothing_in_a_directory_and_says_one_thing_when_it_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let o = gdio().args(["check", "--json"]).arg(dir.path()).output().unwrap();
    assert!(o.status.success(), "{}", stderr_of(&o));
    assert_eq!(json_of(&o)["paths"][0]["probe"]["file_type"], "directory");
    assert!(listing(dir.path()).is_empty());
    // An unwritable directory: a read-only mode for an ordinary user, sysfs for root.
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::os::unix::fs::PermissionsExt::from_mode(0o555)).unwrap();
    // SAFETY: geteuid has no preconditions.
    let target =
        if unsafe { libc::geteuid() } == 0 { std::path::PathBuf::from("/sys/kernel") } else { ro };
    let o = gdio().arg("check").arg(&target).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("cannot create a probe file"), "{out}");
    assert!(!out.contains("is a directory, not a file"), "{out}");
}

#[test]
fn random_pattern_is_verified_and_reports_iops() {
    let dir = tempfile::tempdir().unwrap();
    let (p, data) = random_file(dir.path(), 4 * 1024 * 1024 + 1234, 19);
    let o = gdio()
        .args([
            "bench",
            "--mode",
            "both",
            "--pattern",
            "random",
            "--io-size",
            "4K",
            "--queue-depth",
            "16",
            "--iterations",
            "1",
            "--target",
            "host",
            "--json",
            "--file",
        ])
        .arg(&p)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr_of(&o));
    let v = json_of(&o);
    for r in v["results"].as_array().unwrap() {
        assert_eq!(r["pattern"], "random");
        assert_eq!(r["verified"], true);
        assert_eq!(r["io_size"], 4096);
        assert_eq!(r["queue_depth"], 16);
        let iops = r["iops"].as_f64().unwrap();
        let gbps = r["gbps"].as_f64().unwrap();
        // Each pass is ceil(size / 4096) requests: IOPS and GB/s must agree.
        let ios = data.len().div_ceil(4096) as f64;
        assert!((iops / ios - gbps * 1e9 / data.len() as f64).abs() / iops * ios < 0.01, "{r}");
        assert!(r["latency_p99_ms"].as_f64().unwrap() >= r["latency_p50_ms"].as_f64().unwrap());
    }
    assert_eq!(std::fs::read(&p).unwrap(), data);
}

#[test]
fn sweep_runs_every_row_verified_and_names_the_weakest() {
    let dir = tempfile::tempdir().unwrap();
    let o = gdio()
        .args([
            "bench",
            "--sweep",
            "--size",
            "16M",
            "--iterations",
            "1",
            "--warmup",
            "0",
            "--target",
            "host",
            "--json",
            "--dir",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr_of(&o));
    let v = json_of(&o);
    let rows = v["results"].as_array().unwrap();
    let table = [
        "4 KiB random x 64",
        "64 KiB x 64",
        "1 MiB x 32",
        "4 MiB x 16",
        "16 MiB x 8",
        "64 MiB x 4",
        "1 GiB x 2",
    ];
    // The default --mode (both): every read row, then every write row.
    let labels: Vec<(&str, &str)> =
        rows.iter().map(|r| (r["op"].as_str().unwrap(), r["label"].as_str().unwrap())).collect();
    let want: Vec<(&str, &str)> =
        ["read", "write"].iter().flat_map(|op| table.iter().map(move |l| (*op, *l))).collect();
    assert_eq!(labels, want);
    let depths: Vec<u64> = rows.iter().map(|r| r["queue_depth"].as_u64().unwrap()).collect();
    assert_eq!(depths, [64, 64, 32, 16, 8, 4, 2].repeat(2));
    for r in rows {
        assert_eq!(r["verified"], true, "{r}");
        assert!(
            r["io_size"].as_u64().unwrap()
                <= (16 << 20) / r["queue_depth"].as_u64().unwrap().max(1)
                || r["io_size"] == 4096
        );
        assert!(r["limit_gbps"].as_f64().unwrap() > 0.0);
        for k in ["op", "pattern", "gbps", "iops", "latency_p50_ms", "latency_p99_ms"] {
            assert!(!r[k].is_null(), "{k} missing in {r}");
        }
    }
    assert_eq!(
        (rows[0]["pattern"].as_str(), rows[7]["pattern"].as_str()),
        (Some("random"), Some("random"))
    );
    // Each row said on stderr that it finished, in order, with its rate: a sweep stopped
    // part-way still tells what it measured.
    let err = stderr_of(&o);
    let done: Vec<&str> = err.lines().filter(|l| l.starts_with("gdio bench: row ")).collect();
    assert_eq!(done.len(), 14, "{err}");
    for (i, (line, r)) in done.iter().zip(rows).enumerate() {
        let head = format!(
            "gdio bench: row {} of 14, {} {}: {:.2} GB/s",
            i + 1,
            r["op"].as_str().unwrap(),
            r["label"].as_str().unwrap(),
            r["gbps"].as_f64().unwrap()
        );
        assert!(line.starts_with(&head), "{line:?} is not {head:?}...");
        assert!(line.contains(", verified ("), "{line}");
    }
    let weakest = rows
        .iter()
        .min_by(|a, b| {
            a["ratio_to_limit"].as_f64().unwrap().total_cmp(&b["ratio_to_limit"].as_f64().unwrap())
        })
        .unwrap();
    let summary = v["summary"].as_str().unwrap();
    assert!(
        summary.starts_with(&format!(
            "weakest row: {} {}",
            weakest["op"].as_str().unwrap(),
            weakest["label"].as_str().unwrap()
        )),
        "{summary}"
    );
    assert!(listing(dir.path()).is_empty());
}

#[test]
fn sweep_of_one_mode_runs_only_its_rows_and_writes_verified_bytes_to_its_out_file() {
    let dir = tempfile::tempdir().unwrap();
    let (input, data) = random_file(dir.path(), (3 << 20) + 123, 41);
    let out = dir.path().join("out.bin");
    for (mode, op) in [("read", "read"), ("write", "write")] {
        let o = gdio()
            .args(["bench", "--sweep", "--mode", mode, "--iterations", "1", "--warmup", "0"])
            .args(["--target", "host", "--json", "--file"])
            .arg(&input)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{mode}: {}", stderr_of(&o));
        let v = json_of(&o);
        let rows = v["results"].as_array().unwrap();
        assert_eq!(rows.len(), 7, "{mode}");
        for r in rows {
            assert_eq!((r["op"].as_str(), &r["verified"]), (Some(op), &serde_json::json!(true)));
            assert!(r["limit_gbps"].as_f64().unwrap() > 0.0, "{r}");
        }
        // Per-row limits only: no one write limit that the last row would have overwritten.
        assert!(v["limits"].get("host_write_gbps").is_none());
    }
    // The input is untouched; the out file holds what the last write row wrote: every byte.
    assert_eq!(std::fs::read(&input).unwrap(), data);
    assert_eq!(std::fs::read(&out).unwrap(), data);
}

#[test]
fn file_that_does_not_exist_is_created_then_removed_unless_keep() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("new.bin");
    let o = gdio()
        .args([
            "bench",
            "--size",
            "3M",
            "--io-size",
            "1M",
            "--iterations",
            "1",
            "--target",
            "host",
            "--json",
            "--file",
        ])
        .arg(&p)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr_of(&o));
    let v = json_of(&o);
    assert_eq!(v["results"][0]["bytes"], 3 << 20);
    assert!(v["results"].as_array().unwrap().iter().all(|r| r["verified"] == true));
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
    let o = gdio()
        .args([
            "bench",
            "--size",
            "3M",
            "--io-size",
            "1M",
            "--iterations",
            "1",
            "--target",
            "host",
            "--keep",
            "--mode",
            "read",
            "--file",
        ])
        .arg(&p)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr_of(&o));
    let kept = std::fs::read(&p).unwrap();
    assert_eq!(kept.len(), 3 << 20);
    assert!(kept.iter().filter(|&&x| x == 0).count() < kept.len() / 100);
    // Run again on the kept file: it exists now, is read and stays as it was.
    let o = gdio()
        .args(["bench", "--iterations", "1", "--target", "host", "--file"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr_of(&o));
    assert_eq!(std::fs::read(&p).unwrap(), kept);
}

#[test]
fn a_refused_thread_is_an_error_not_a_panic() {
    // RLIMIT_NPROC of 8 (as an unprivileged user: root is exempt from it) and 64 requests in
    // flight, each from its own thread.
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777))
        .unwrap();
    let script = format!(
        "ulimit -u 8 && exec '{}' bench --size 8M --io-size 4K --queue-depth 64 --target host --iterations 1 --dir '{}'",
        env!("CARGO_BIN_EXE_gdio"),
        dir.path().display()
    );
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut cmd = if root { Command::new("setpriv") } else { Command::new("bash") };
    if root {
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "bash"]);
    }
    let o = cmd.arg("-c").arg(&script).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr_of(&o));
    assert!(
        stderr_of(&o).contains("refused") || stderr_of(&o).contains("thread"),
        "{}",
        stderr_of(&o)
    );
    assert_no_panic(&o);
    assert!(listing(dir.path()).is_empty());
}

#[test]
fn simulated_gpu_bench_verifies_every_path_through_device_memory() {
    let dir = tempfile::tempdir().unwrap();
    let (p, data) = random_file(dir.path(), 9 * 1024 * 1024 + 4321, 20);
    let runs: &[&[&str]] = &[
        // Write without a read first: the device memory is loaded from the input file.
        &["--mode", "write", "--io-size", "1M", "--file", p.to_str().unwrap()],
        // Generated input, random order, read then write.
        &[
            "--mode",
            "both",
            "--pattern",
            "random",
            "--io-size",
            "64K",
            "--queue-depth",
            "8",
            "--size",
            "5M",
        ],
        // 8 workers, twice `write_threads`: the write rows' shares are of every worker.
        &["--sweep", "--size", "8M", "--warmup", "0", "--threads", "8"],
    ];
    for args in runs {
        let o = gdio()
            .args(["bench", "--sim-gpu", "--iterations", "1", "--json", "--dir"])
            .arg(dir.path())
            .args(*args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr_of(&o));
        let v = json_of(&o);
        assert!(v["limits"]["pinned_h2d_gbps"].as_f64().unwrap() > 0.0);
        for r in v["results"].as_array().unwrap() {
            assert_eq!(r["target"], "gpu:0", "{args:?}");
            assert_eq!(r["verified"], true, "{args:?}: {r}");
            // Shares of the workers' time: each in [0, 1], together at most the whole.
            let w = &r["workers"];
            let shares: Vec<f64> =
                ["file_io", "buffer_wait", "split_wait", "copy_queue", "draining", "idle"]
                    .iter()
                    .map(|k| w[k].as_f64().unwrap_or_else(|| panic!("{k} missing in {w}")))
                    .collect();
            assert!(shares.iter().all(|x| (0.0..=1.0).contains(x)), "{args:?}: {w}");
            assert!(shares.iter().sum::<f64>() <= 1.01, "{args:?}: {w}");
        }
    }
    assert_eq!(std::fs::read(&p).unwrap(), data);
    assert_eq!(listing(dir.path()), ["data-20.bin"]);
}

#[test]
fn check_says_how_tmpfs_keeps_its_pages_on_the_directorys_own_mount() {
    let Ok(dir) = tempfile::tempdir_in("/dev/shm") else {
        return; // no /dev/shm here
    };
    let o = gdio().args(["check", "--json"]).arg(dir.path()).output().unwrap();
    assert!(o.status.success(), "{}", stderr_of(&o));
    let fs = json_of(&o)["paths"][0]["probe"]["fs"].clone();
    if fs["name"] != "tmpfs" {
        return;
    }
    // The probe reads an unlinked file through /proc/self/fd: the mount is still /dev/shm's.
    assert_eq!(fs["mount_point"], "/dev/shm", "{fs}");
    let option = fs["super_options"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|o| o.as_str().and_then(|o| o.strip_prefix("huge=")).map(str::to_owned));
    let system = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/shmem_enabled")
        .unwrap_or_default();
    let pages = &fs["tmpfs_pages"];
    let want_small = if system.contains("[deny]") {
        true
    } else if system.contains("[force]") {
        false
    } else {
        !matches!(option.as_deref(), Some("always" | "within_size"))
    };
    assert_eq!(pages["small_pages"], want_small, "{pages} (huge={option:?}, {system})");
    let says = pages["says"].as_str().unwrap();
    assert_eq!(says.starts_with("4 KiB pages"), want_small, "{says}");
    let text = gdio().arg("check").arg(dir.path()).output().unwrap();
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(out.contains(&format!("tmpfs pages          {says}")), "{out}");
    assert!(out.contains("on /dev/shm from"), "{out}");
}

#[test]
fn bench_on_tmpfs_says_how_its_pages_are_kept_and_elsewhere_says_nothing() {
    let shm = tempfile::tempdir_in("/dev/shm").ok();
    let other = tempfile::tempdir().unwrap();
    for dir in shm.iter().map(|d| d.path()).chain([other.path()]) {
        let o = gdio()
            .args(["bench", "--sim-gpu", "--iterations", "1", "--json", "--mode", "read"])
            .args(["--size", "4M", "--dir"])
            .arg(dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}: {}", dir.display(), stderr_of(&o));
        let v = json_of(&o);
        let setup = &v["setup"];
        let tmpfs = setup["filesystem"] == "tmpfs";
        assert_eq!(setup["tmpfs_pages"].is_string(), tmpfs, "{}: {setup}", dir.display());
        if tmpfs {
            let says = setup["tmpfs_pages"].as_str().unwrap();
            assert!(says.starts_with("4 KiB pages") || says.starts_with("huge pages"), "{says}");
        }
        assert_eq!(v["results"][0]["verified"], true);
    }
}
