//! Logging as cuFile's: `CUFILE_LOGGING_LEVEL` (or a staged `logging_level`) sets what is
//! written, `CUFILE_LOGFILE_PATH` where. At INFO the file gets the driver's opening, each
//! registered file (its path, filesystem, O_DIRECT twin, on tmpfs how its pages are kept) and,
//! at close, the paths the I/O took with their byte counts; at ERROR only the failures, each
//! naming what failed; staged DEBUG adds buffer registrations. Nothing is written into the working directory (NVIDIA's library
//! writes `cufile.log` there). A binary of its own: it sets environment variables.

mod common;

use std::ffi::{c_int, c_void, CString};
use std::fs::File;
use std::os::fd::{AsRawFd, IntoRawFd};

use common::*;
use cufile::params::string;
use cufile::*;
use rand::{Rng, SeedableRng};

fn log_of(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn the_level_and_the_file_come_from_the_environment_and_staged_values() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cufile-gdio.log");
    let data = random_bytes(41, 3 << 20);
    let file = dir.path().join("data.bin");
    std::fs::write(&file, &data).unwrap();
    let in_cwd = std::env::current_dir().unwrap().join("cufile.log");
    let cwd_had_log = in_cwd.exists();

    // INFO: the opening, the registration, the close with the paths taken.
    // SAFETY: the only test of this binary; nothing else reads the environment meanwhile.
    unsafe {
        std::env::set_var("CUFILE_LOGFILE_PATH", &log);
        std::env::set_var("CUFILE_LOGGING_LEVEL", "INFO");
    }
    assert_eq!(cuFileDriverOpen().err, 0);
    let f = File::open(&file).unwrap();
    let fh = register(&f);
    let mut buf = vec![0u8; 1 << 20];
    let off = 777_777;
    let n = cuFileRead(fh, buf.as_mut_ptr() as *mut c_void, buf.len(), off, 0);
    assert_eq!(n, buf.len() as isize);
    assert_eq!(&buf[..], &data[off as usize..off as usize + buf.len()]);
    // Four threads at once, eight reads each at random offsets: the summary at close counts
    // them, with how many were in flight together and where the workers' time went.
    let h = fh as usize;
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let data = &data;
            s.spawn(move || {
                let mut r = rand::rngs::StdRng::seed_from_u64(t);
                let mut b = vec![0u8; 65_536];
                for _ in 0..8 {
                    let at = r.random_range(0..data.len() - b.len());
                    let p = b.as_mut_ptr() as *mut c_void;
                    let n = cuFileRead(h as CUfileHandle_t, p, b.len(), at as i64, 0);
                    assert_eq!(n, b.len() as isize);
                    assert_eq!(&b[..], &data[at..at + b.len()]);
                }
            });
        }
    });
    cuFileHandleDeregister(fh);
    // A file on tmpfs: its registration says how tmpfs keeps its pages.
    let shm = tempfile::NamedTempFile::new_in("/dev/shm").ok();
    let shm_fd = shm.as_ref().map(|t| {
        let fh = register(t.as_file());
        cuFileHandleDeregister(fh);
        t.as_file().as_raw_fd()
    });
    assert_eq!(cuFileDriverClose_v2().err, 0);
    let text = log_of(&log);
    let tmpfs = |p: &std::path::Path| gdio::file::probe_path(p).unwrap().fs.name == "tmpfs";
    if let (Some(t), Some(fd)) = (&shm, shm_fd) {
        let line = text.lines().find(|l| l.contains(&format!("registered fd {fd}: "))).unwrap();
        assert_eq!(line.contains("; tmpfs pages: "), tmpfs(t.path()), "{line}");
    }
    let line = text.lines().find(|l| l.contains(&format!("registered fd {}: ", f.as_raw_fd())));
    assert_eq!(line.unwrap().contains("tmpfs pages: "), tmpfs(&file), "{text}");
    let asked = buf.len() + 4 * 8 * 65_536;
    let want = format!("driver closed: synchronous I/O: 33 reads, 0 writes, {asked} bytes asked");
    assert!(text.contains(&want), "{text}");
    let line = text.lines().find(|l| l.contains(&want)).unwrap();
    let peak: usize =
        line.split("up to ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!((1..=4).contains(&peak), "{line}");
    // Host memory: small reads run on the calling threads (`inline_max_bytes`), and say so.
    assert!(line.contains("workers' time") && line.contains("most time:"), "{line}");
    // Their bytes count but their time is not the workers' file I/O: no rate for it.
    if line.contains("(callers inline") || line.contains("callers ran every request inline") {
        assert!(!line.contains("file I/O ran at"), "{line}");
    }
    assert!(text.contains("gdio-cufile INFO: driver open"), "{text}");
    let registered = format!("registered fd {}: {}", f.as_raw_fd(), file.display());
    assert!(text.contains(&registered), "{text}");
    assert!(text.contains("O_DIRECT twin"), "{text}");
    assert!(text.contains("driver closed; paths taken:"), "{text}");
    assert!(text.contains(&format!("{asked} bytes,")), "the close names the bytes: {text}");
    assert!(!text.contains("ERROR"), "{text}");

    // ERROR: only the failures, each saying what failed.
    std::fs::remove_file(&log).unwrap();
    // SAFETY: as above.
    unsafe { std::env::set_var("CUFILE_LOGGING_LEVEL", "ERROR") };
    assert_eq!(cuFileDriverOpen().err, 0);
    let closed_fd = {
        let fd = File::open(&file).unwrap().into_raw_fd();
        // SAFETY: `fd` is ours and closed once, here.
        unsafe { libc::close(fd) };
        fd
    };
    assert_ne!(register_err(closed_fd), 0);
    let stale = 0x1234 as CUfileHandle_t;
    assert!(cuFileRead(stale, buf.as_mut_ptr() as *mut c_void, 4096, 0, 0) < 0);
    let fh = register(&f);
    cuFileHandleDeregister(fh);
    assert_eq!(cuFileDriverClose_v2().err, 0);
    let text = log_of(&log);
    assert!(text.contains("gdio-cufile ERROR"), "{text}");
    assert!(!text.contains("synchronous I/O"), "no summary at ERROR: {text}");
    assert!(text.contains("invalid file handle"), "{text}");
    assert!(!text.contains("INFO"), "INFO lines at ERROR: {text}");

    // A staged level over the variable, for the next open: DEBUG adds buffer registrations.
    std::fs::remove_file(&log).unwrap();
    let debug = CString::new("DEBUG").unwrap();
    assert_eq!(cuFileSetParameterString(string::LOGGING_LEVEL as c_int, debug.as_ptr()).err, 0);
    assert_eq!(cuFileDriverOpen().err, 0);
    assert_eq!(cuFileBufRegister(buf.as_ptr() as *const c_void, buf.len(), 0).err, 0);
    assert_eq!(cuFileBufDeregister(buf.as_ptr() as *const c_void).err, 0);
    assert_eq!(cuFileDriverClose_v2().err, 0);
    let text = log_of(&log);
    assert!(text.contains(&format!("registered {} bytes of", buf.len())), "{text}");

    assert_eq!(in_cwd.exists(), cwd_had_log, "a log file appeared in the working directory");
    // SAFETY: as above.
    unsafe {
        std::env::remove_var("CUFILE_LOGFILE_PATH");
        std::env::remove_var("CUFILE_LOGGING_LEVEL");
    }
}
