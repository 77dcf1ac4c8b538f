//! A write that fails part-way reports the bytes of the whole request that reached the file,
//! not only the failing piece. The file-size limit (`RLIMIT_FSIZE`, with `SIGXFSZ` ignored)
//! makes `pwrite` fail with `EFBIG` at a chosen offset, as a full disk fails with `ENOSPC`.
//! One test per binary: the limit applies to the whole process.

mod common;

use common::*;
use gdio::{DirectIoPolicy, FileHandle, OpenOptions};

#[test]
fn failed_write_counts_every_byte_that_reached_the_file() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("w");
    let f =
        FileHandle::open_with(&p, OpenOptions::new().read(true).write(true).create(true)).unwrap();
    let len = 8usize << 20;
    let limit: u64 = (3 << 20) + (1 << 19);
    let data = random_bytes(40, len);
    // SAFETY: ignoring SIGXFSZ and lowering this process's file-size limit; no memory involved.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let lim = libc::rlimit { rlim_cur: limit, rlim_max: libc::RLIM_INFINITY };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0);
    }
    for threads in [1, 4] {
        let config = gdio::Config {
            task_size: 1 << 20,
            write_threads: threads,
            ..tiny_config(DirectIoPolicy::Off, threads)
        };
        let drv = sim_driver(config, 1);
        let e = drv.write(&f, 0, &data, 0, len).unwrap_err();
        assert_eq!(e.errno(), Some(libc::EFBIG), "{e}");
        let on_disk = std::fs::metadata(&p).unwrap().len();
        assert_eq!(on_disk, limit);
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("{limit} of the {len} bytes of this write reached the file")),
            "{msg}"
        );
        assert_eq!(std::fs::read(&p).unwrap(), &data[..limit as usize]);
        f.set_len(0).unwrap();
    }
}
