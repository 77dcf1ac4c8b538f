//! Builds `tests/c/no_driver.c` with the system C compiler against the freshly built
//! `libgdrapi.so`, runs it, and checks the soname and the exported symbols.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Every function of gdrapi.h 2.6 (plus the old `gdr_get_info` symbol).
const SYMBOLS: &[&str] = &[
    "gdr_open",
    "gdr_close",
    "gdr_pin_buffer",
    "gdr_pin_buffer_v2",
    "gdr_unpin_buffer",
    "gdr_get_callback_flag",
    "gdr_get_info",
    "gdr_get_info_v2",
    "gdr_map",
    "gdr_map_v2",
    "gdr_unmap",
    "gdr_copy_to_mapping",
    "gdr_copy_from_mapping",
    "gdr_runtime_get_version",
    "gdr_driver_get_version",
    "gdr_get_attribute",
    "gdr_get_mapping_type_string",
];

#[path = "../../test-support/cdylib.rs"]
mod cdylib;
use cdylib::profile_dir;

/// The built library, brought up to date first: `cargo test` builds the crate's rlib for the
/// tests, not its cdylib, so a library left from an earlier build would be tested otherwise.
/// Without cargo (a test binary run on its own), the library there is used as it is.
fn library() -> PathBuf {
    static BUILT: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    let so = profile_dir().join("libgdrapi.so");
    BUILT.get_or_init(|| match cdylib::build_lib("gdio-gdrapi", &profile_dir()) {
        Ok(built) => assert!(built, "cargo build -p gdio-gdrapi --lib failed"),
        Err(e) => eprintln!("no cargo ({e}): testing the library already built"),
    });
    assert!(so.exists(), "{} missing", so.display());
    so
}

fn tool(name: &str) -> Option<()> {
    Command::new(name).arg("--version").output().ok().filter(|o| o.status.success()).map(|_| ())
}

#[test]
fn c_program_runs_against_the_library_without_a_driver() {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    if tool(&cc).is_none() {
        eprintln!("skipped: no C compiler ({cc})");
        return;
    }
    let so = library();
    let dir = tempfile_dir();
    // Link through a libgdrapi.so.2 name, as a program built against upstream would.
    let link_dir = dir.join("lib");
    std::fs::create_dir_all(&link_dir).unwrap();
    let _ = std::fs::remove_file(link_dir.join("libgdrapi.so.2"));
    let _ = std::fs::remove_file(link_dir.join("libgdrapi.so"));
    std::fs::copy(&so, link_dir.join("libgdrapi.so.2")).unwrap();
    std::os::unix::fs::symlink("libgdrapi.so.2", link_dir.join("libgdrapi.so")).unwrap();
    let exe = dir.join("no_driver");
    build_and_run(&cc, &[], &exe, &link_dir);
    // Again under AddressSanitizer and UBSan on the C side, where the compiler has them: the C
    // program's reads and writes of what the library hands it are checked (the Rust library
    // itself is not instrumented: that needs a nightly compiler, see README "Testing").
    let asan_flags = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-g"];
    if sanitizer_works(&cc, &asan_flags, &dir) {
        build_and_run(&cc, &asan_flags, &dir.join("no_driver_asan"), &link_dir);
    } else {
        eprintln!("skipped the AddressSanitizer run: {cc} cannot build with -fsanitize=address");
    }
    // The program must have loaded the library by its soname.
    if tool("readelf").is_some() {
        let d = Command::new("readelf").arg("-d").arg(&exe).output().unwrap();
        assert!(
            String::from_utf8_lossy(&d.stdout).contains("[libgdrapi.so.2]"),
            "NEEDED is not libgdrapi.so.2"
        );
    }
}

/// Compiles tests/c/no_driver.c with `flags` into `exe`, linked against `link_dir`, runs it
/// without a driver and checks that it passed.
fn build_and_run(cc: &str, flags: &[&str], exe: &Path, link_dir: &Path) {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(cc)
        .arg("-std=c99")
        .arg("-Wall")
        .arg("-Werror")
        .args(flags)
        .arg("-I")
        .arg(manifest.join("include"))
        .arg(manifest.join("tests/c/no_driver.c"))
        .arg("-o")
        .arg(exe)
        .arg("-L")
        .arg(link_dir)
        .arg("-lgdrapi")
        .output()
        .expect("run cc");
    assert!(out.status.success(), "cc {flags:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let run = Command::new(exe)
        .env("LD_LIBRARY_PATH", link_dir)
        .env("GDIO_GDR_DEVICE", "/nonexistent/gdrdrv")
        // Leak checking needs ptrace, which containers often refuse; errors still abort.
        .env("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=1")
        .env("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
        .output()
        .expect("run the C test");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "C test {flags:?} failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("OK") || stdout.contains("SKIP"), "{stdout}");
}

/// Whether `cc` builds and runs a trivial program with `flags`.
fn sanitizer_works(cc: &str, flags: &[&str], dir: &Path) -> bool {
    let src = dir.join("san_probe.c");
    let exe = dir.join("san_probe");
    std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
    let built = Command::new(cc).args(flags).arg(&src).arg("-o").arg(&exe).output();
    built.is_ok_and(|o| o.status.success())
        && Command::new(&exe).output().is_ok_and(|o| o.status.success())
}

#[test]
fn soname_and_symbols() {
    let so = library();
    if tool("readelf").is_none() || Command::new("nm").arg("--version").output().is_err() {
        eprintln!("skipped: readelf/nm not installed");
        return;
    }
    let d = Command::new("readelf").arg("-d").arg(&so).output().unwrap();
    let d = String::from_utf8_lossy(&d.stdout);
    assert!(d.contains("Library soname: [libgdrapi.so.2]"), "{d}");
    let nm = Command::new("nm").args(["-D", "--defined-only"]).arg(&so).output().unwrap();
    let nm = String::from_utf8_lossy(&nm.stdout);
    let exported: Vec<&str> = nm.lines().filter_map(|l| l.split_whitespace().nth(2)).collect();
    for s in SYMBOLS {
        assert!(exported.contains(s), "{s} is not exported");
    }
}

fn tempfile_dir() -> PathBuf {
    let d = profile_dir().join("gdrapi-c-test");
    std::fs::create_dir_all(&d).unwrap();
    d
}
