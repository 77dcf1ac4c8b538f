//! Builds the C programs of `tests/c/` against `include/cufile.h` and the freshly built
//! library (linked as `-lcufile`, loaded by its soname `libcufile.so.0`), runs them, and checks
//! the soname and the 43 exports.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The 43 public functions of cufile.h 1.15.
const SYMBOLS: &[&str] = &[
    "cuFileDriverOpen",
    "cuFileDriverClose",
    "cuFileDriverClose_v2",
    "cuFileUseCount",
    "cuFileDriverGetProperties",
    "cuFileDriverSetPollMode",
    "cuFileDriverSetMaxDirectIOSize",
    "cuFileDriverSetMaxCacheSize",
    "cuFileDriverSetMaxPinnedMemSize",
    "cuFileGetVersion",
    "cuFileGetParameterSizeT",
    "cuFileGetParameterBool",
    "cuFileGetParameterString",
    "cuFileSetParameterSizeT",
    "cuFileSetParameterBool",
    "cuFileSetParameterString",
    "cuFileGetParameterMinMaxValue",
    "cuFileSetParameterPosixPoolSlabArray",
    "cuFileGetParameterPosixPoolSlabArray",
    "cuFileHandleRegister",
    "cuFileHandleDeregister",
    "cuFileBufRegister",
    "cuFileBufDeregister",
    "cuFileRead",
    "cuFileWrite",
    "cuFileBatchIOSetUp",
    "cuFileBatchIOSubmit",
    "cuFileBatchIOGetStatus",
    "cuFileBatchIOCancel",
    "cuFileBatchIODestroy",
    "cuFileReadAsync",
    "cuFileWriteAsync",
    "cuFileStreamRegister",
    "cuFileStreamDeregister",
    "cuFileSetStatsLevel",
    "cuFileGetStatsLevel",
    "cuFileStatsStart",
    "cuFileStatsStop",
    "cuFileStatsReset",
    "cuFileGetStatsL1",
    "cuFileGetStatsL2",
    "cuFileGetStatsL3",
    "cuFileGetBARSizeInKB",
];

#[path = "../../test-support/cdylib.rs"]
mod cdylib;
use cdylib::profile_dir;

/// The built library, brought up to date first: `cargo test` builds the crate's rlib for the
/// tests, not its cdylib, so a library left from an earlier build would be tested otherwise.
/// Without cargo (a test binary run on its own), the library there is used as it is.
fn library() -> PathBuf {
    static BUILT: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    let so = profile_dir().join("libcufile.so");
    BUILT.get_or_init(|| match cdylib::build_lib("gdio-cufile", &profile_dir()) {
        Ok(built) => assert!(built, "cargo build -p gdio-cufile --lib failed"),
        Err(e) => eprintln!("no cargo ({e}): testing the library already built"),
    });
    assert!(so.exists(), "{} missing", so.display());
    so
}

fn tool(name: &str) -> bool {
    Command::new(name).arg("--version").output().is_ok_and(|o| o.status.success())
}

/// A directory with the library as libcufile.so.0 and libcufile.so -> libcufile.so.0.
fn link_dir(tag: &str) -> PathBuf {
    let dir = profile_dir().join(format!("cufile-c-test-{tag}"));
    let lib = dir.join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    let _ = std::fs::remove_file(lib.join("libcufile.so.0"));
    let _ = std::fs::remove_file(lib.join("libcufile.so"));
    std::fs::copy(library(), lib.join("libcufile.so.0")).unwrap();
    std::os::unix::fs::symlink("libcufile.so.0", lib.join("libcufile.so")).unwrap();
    dir
}

fn compile(src: &str, exe: &Path, link: Option<&Path>) {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cmd = Command::new(&cc);
    cmd.args(["-std=c11", "-Wall", "-Werror", "-O1", "-I"])
        .arg(manifest.join("include"))
        .arg(manifest.join("tests/c").join(src))
        .arg("-o")
        .arg(exe);
    if let Some(l) = link {
        cmd.arg("-L").arg(l).arg("-lcufile");
    }
    cmd.arg("-ldl").arg("-pthread");
    let out = cmd.output().expect("run cc");
    assert!(out.status.success(), "cc {src} failed:\n{}", String::from_utf8_lossy(&out.stderr));
}

/// `tests/c/SRC.c` built into a directory of its own beside the library (linked with
/// `-lcufile` when `link`, else loaded by path); `None`, saying so, without a C compiler.
fn c_program(src: &str, link: bool) -> Option<(PathBuf, PathBuf)> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    if !tool(&cc) {
        eprintln!("skipped: no C compiler ({cc})");
        return None;
    }
    let dir = link_dir(src);
    let exe = dir.join(src);
    compile(&format!("{src}.c"), &exe, link.then(|| dir.join("lib")).as_deref());
    Some((dir, exe))
}

#[test]
fn c_program_calls_every_function() {
    let Some((dir, exe)) = c_program("api", true) else { return };
    let lib = dir.join("lib");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let run = Command::new(&exe)
        .arg(&work)
        .current_dir(&work)
        .env("LD_LIBRARY_PATH", &lib)
        .env_remove("CUFILE_ENV_PATH_JSON")
        .output()
        .expect("run the C test");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "C test failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("OK"), "{stdout}");
    assert!(!work.join("cufile.log").exists(), "no log file in the working directory");
    if tool("readelf") {
        let d = Command::new("readelf").arg("-d").arg(&exe).output().unwrap();
        assert!(
            String::from_utf8_lossy(&d.stdout).contains("[libcufile.so.0]"),
            "NEEDED is not libcufile.so.0"
        );
    }
}

#[test]
fn loading_starts_no_thread_and_opens_no_file() {
    let Some((dir, exe)) = c_program("inert", false) else { return };
    let run = Command::new(&exe)
        .arg(dir.join("lib/libcufile.so.0"))
        .current_dir(&dir)
        .output()
        .expect("run the inert test");
    let out =
        format!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "{out}");
    assert!(out.contains("OK"), "{out}");
}

#[test]
fn a_program_that_exits_with_the_driver_open_gets_the_summary_at_info() {
    let Some((dir, exe)) = c_program("summary_at_exit", true) else { return };
    let lib = dir.join("lib");
    let data: Vec<u8> =
        (0..3u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let file = dir.join("data.bin");
    std::fs::write(&file, &data).unwrap();
    let log = dir.join("cufile-gdio.log");
    let _ = std::fs::remove_file(&log);
    let run = |level: &str| {
        Command::new(&exe)
            .arg(&file)
            .arg("fork")
            .current_dir(&dir)
            .env("LD_LIBRARY_PATH", &lib)
            .env("CUFILE_LOGGING_LEVEL", level)
            .env("CUFILE_LOGFILE_PATH", &log)
            .env_remove("CUFILE_ENV_PATH_JSON")
            .output()
            .expect("run the at-exit program")
    };
    let out = run("INFO");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("OK"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let want = format!(
        "at exit, the driver still open: synchronous I/O: 32 reads, 0 writes, {} bytes asked",
        32 * 65_536
    );
    assert!(text.contains(&want), "{text}");
    assert_eq!(text.matches("synchronous I/O").count(), 1, "once, not by the forked child: {text}");
    // At the default level (ERROR) nothing is kept or logged.
    std::fs::remove_file(&log).unwrap();
    let out = run("ERROR");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_to_string(&log).unwrap_or_default().is_empty());
}

#[test]
fn soname_and_symbols() {
    let so = library();
    if !tool("readelf") || Command::new("nm").arg("--version").output().is_err() {
        eprintln!("skipped: readelf/nm not installed");
        return;
    }
    assert_eq!(SYMBOLS.len(), 43);
    let d = Command::new("readelf").arg("-d").arg(&so).output().unwrap();
    let d = String::from_utf8_lossy(&d.stdout);
    assert!(d.contains("Library soname: [libcufile.so.0]"), "{d}");
    assert!(!d.contains("VERDEF"), "no symbol versioning: {d}");
    let nm = Command::new("nm").args(["-D", "--defined-only"]).arg(&so).output().unwrap();
    let nm = String::from_utf8_lossy(&nm.stdout);
    let exported: Vec<&str> = nm.lines().filter_map(|l| l.split_whitespace().nth(2)).collect();
    for s in SYMBOLS {
        assert!(exported.contains(s), "{s} is not exported");
    }
    let ours: Vec<&&str> = exported.iter().filter(|s| s.starts_with("cuFile")).collect();
    assert_eq!(ours.len(), 43, "exactly the 43 public cuFile functions: {ours:?}");
}
