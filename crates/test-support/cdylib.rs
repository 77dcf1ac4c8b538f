//! For tests that load a library the workspace builds as a cdylib (`libcufile.so`,
//! `libgdrapi.so`): `cargo test` builds a crate's rlib, not its cdylib, so such a test builds
//! the library itself, for its own profile and `--target`. Not a crate: each test includes this
//! file with `#[path = "…/crates/test-support/cdylib.rs"]`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// target/[TRIPLE/]PROFILE/ of this test binary (which lives in its deps/).
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent().and_then(Path::parent).expect("target dir").to_path_buf()
}

/// `cargo build -q -p PACKAGE --lib` into `profile_dir` (a profile folder of `target/`, or of
/// `target/TRIPLE/` when the tests were built with `--target`, which the build then gets too).
/// `Err` when cargo cannot be started (a test binary run on its own), else whether it built.
pub fn build_lib(package: &str, profile_dir: &Path) -> std::io::Result<bool> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "-q", "-p", package, "--lib"]);
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let triple = profile_dir.parent().and_then(Path::file_name).and_then(|t| t.to_str());
    if let Some(t) = triple.filter(|t| t.starts_with(std::env::consts::ARCH)) {
        cmd.args(["--target", t]);
    }
    Ok(cmd.status()?.success())
}
