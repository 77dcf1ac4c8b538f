//! `gdio gdr …` on a machine without a mapping backend: each tool exits with status 2 and
//! one stderr line naming the missing driver; `--json` prints one parseable object.
//! Where a backend exists, the test only checks that sanity passes.

use std::process::Command;

const TOOLS: &[&str] = &["sanity", "copybw", "copylat", "apiperf"];

fn gdio() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gdio"))
}

fn backend_usable() -> bool {
    gdio::gdr::probe_backends(&gdio::gdr::GdrOptions::default().with_env())
        .iter()
        .any(|b| b.available)
}

#[test]
fn tools_fail_cleanly_without_a_backend() {
    if backend_usable() {
        let out = gdio().args(["gdr", "sanity"]).output().unwrap();
        assert!(out.status.success(), "sanity failed:\n{}", String::from_utf8_lossy(&out.stdout));
        return;
    }
    for tool in TOOLS {
        let out = gdio().args(["gdr", tool, "-d", "0"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{tool}: exit status");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{tool}: one line expected, got:\n{err}");
        assert!(err.contains("gdrdrv"), "{tool}: does not name gdrdrv: {err}");
        assert!(
            err.contains("13.3") && err.contains("dma-buf"),
            "{tool}: does not name the dma-buf driver: {err}"
        );
        assert!(out.stdout.is_empty(), "{tool}: unexpected stdout");
    }
}

#[test]
fn json_form_without_a_backend() {
    if backend_usable() {
        eprintln!("skipped: a backend is usable here");
        return;
    }
    for tool in TOOLS {
        let out = gdio().args(["gdr", tool, "--json"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        let v: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("one JSON object on stdout");
        assert_eq!(v["ok"], false);
        assert_eq!(v["tool"], *tool);
        let backends = v["backends"].as_array().expect("backends");
        assert_eq!(backends.len(), 2);
        for b in backends {
            assert_eq!(b["available"], false);
            assert!(!b["reason"].as_str().unwrap().is_empty());
        }
    }
}

#[test]
fn port_device_node_is_named() {
    if backend_usable() {
        eprintln!("skipped: a backend is usable here");
        return;
    }
    let out = gdio()
        .args(["gdr", "copylat", "--backend", "gdrdrv", "--gdr-device", "/dev/mtgdrdrv"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/dev/mtgdrdrv") && err.contains("mtgdrdrv"), "{err}");
    let out =
        gdio().args(["gdr", "sanity"]).env("GDIO_GDR_DEVICE", "/dev/mtgdrdrv").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("/dev/mtgdrdrv"));
}

#[test]
fn sanity_lists_tests_and_rejects_unknown_ones() {
    let out = gdio().args(["gdr", "sanity", "-l"]).output().unwrap();
    assert!(out.status.success());
    let list = String::from_utf8_lossy(&out.stdout);
    assert!(list.lines().any(|l| l == "basic_pin_map_copy"));
    assert!(list.lines().any(|l| l == "managed_memory_refused"));
    let out = gdio().args(["gdr", "sanity", "-t", "no_such_test"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
}
