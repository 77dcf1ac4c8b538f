//! `gdio check`'s libcufile section names the library the loader gives a process for
//! `libcufile.so.0`, and whether it is gdio's: gdio's through `LD_LIBRARY_PATH` and through
//! `LD_PRELOAD`, none without either (no NVIDIA library on a machine like CI's), and a stand-in
//! for NVIDIA's (a library with cuFile's entry point but not gdio's version export, built here
//! with the C compiler) as not gdio's. gdio's library is the workspace's `libcufile.so` (built
//! here when missing, as the C ABI tests do).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

#[path = "../../test-support/cdylib.rs"]
mod cdylib;

fn choice(env: &[(&str, &Path)]) -> Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gdio"));
    cmd.args(["check", "--json"]).env_remove("LD_PRELOAD").env_remove("LD_LIBRARY_PATH");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["platform"]["libcufile_choice"].clone()
}

/// The workspace's `libcufile.so` beside the `gdio` executable, built first when this test run
/// did not build it (`cargo test -p gdio-cli` alone does not).
fn gdio_cufile() -> PathBuf {
    let dir = cdylib::profile_dir();
    let lib = dir.join("libcufile.so");
    if !lib.exists() {
        let built = cdylib::build_lib("gdio-cufile", &dir).expect("cargo build");
        assert!(built, "cannot build gdio-cufile");
    }
    assert!(lib.exists(), "{} missing", lib.display());
    lib
}

#[test]
fn check_names_the_libcufile_the_loader_gives_and_whose_it_is() {
    let lib = gdio_cufile();
    let d = tempfile::tempdir().unwrap();
    let ours = d.path().join("ours");
    std::fs::create_dir(&ours).unwrap();
    std::os::unix::fs::symlink(&lib, ours.join("libcufile.so.0")).unwrap();

    let v = choice(&[]);
    assert_eq!(v["loaded_file"], Value::Null, "{v}");
    assert_eq!(v["preloaded"], false);
    let v = choice(&[("LD_LIBRARY_PATH", &ours)]);
    assert_eq!(v["loaded_is_gdio"], true, "{v}");
    assert_eq!(
        v["loaded_file"].as_str().map(Path::new),
        Some(ours.join("libcufile.so.0").as_path())
    );
    assert_eq!(v["preloaded"], false);
    let v = choice(&[("LD_PRELOAD", &ours.join("libcufile.so.0"))]);
    assert_eq!(
        (v["loaded_is_gdio"].as_bool(), v["preloaded"].as_bool()),
        (Some(true), Some(true)),
        "{v}"
    );

    // A library with cuFile's entry point and not gdio's export: reported as NVIDIA's.
    let theirs = d.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    let src = d.path().join("stand_in.c");
    std::fs::write(&src, "int cuFileDriverOpen(void) { return 0; }\n").unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let st = Command::new(cc)
        .args(["-shared", "-fPIC", "-o"])
        .arg(theirs.join("libcufile.so.0"))
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success(), "the C compiler could not build the stand-in");
    let v = choice(&[("LD_LIBRARY_PATH", &theirs)]);
    assert_eq!(v["loaded_is_gdio"], false, "{v}");
    assert_eq!(
        v["loaded_file"].as_str().map(Path::new),
        Some(theirs.join("libcufile.so.0").as_path())
    );
}
