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
