//! Six threads call the library at random at the same time: opens and closes (each thread
//! closes only what it opened, so the last close can come while other threads' I/O is in
//! flight), registrations and deregistrations of two shared read-only files, reads (plain and
//! stream-ordered) and batches through whatever handle was last seen (live, deregistered or closed under it), buffer
//! registrations. Nothing may crash or hang; every call answers with a number its contract
//! allows; every read that succeeds has the file's bytes. `GDIO_RACE_MS` sets how long
//! (default 1500 ms).

mod common;

use std::ffi::{c_uint, c_void};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use cufile::abi::{code, status, *};
use cufile::*;
use rand::{Rng, SeedableRng};

const THREADS: u64 = 6;
const SIZE: usize = 1 << 20;

#[test]
fn threads_racing_opens_closes_registrations_and_io_never_crash_or_misread() {
    let _g = serial();
    let ms = std::env::var("GDIO_RACE_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(1500);
    let dir = tempfile::tempdir().unwrap();
    // Refused calls log at ERROR: into a file, not over the test output.
    // SAFETY: the only test of this binary, before its threads start.
    unsafe { std::env::set_var("CUFILE_LOGFILE_PATH", dir.path().join("cufile.log")) };
    let data: Arc<Vec<Vec<u8>>> = Arc::new((0..2).map(|i| random_bytes(700 + i, SIZE)).collect());
    let files: Arc<Vec<File>> = Arc::new(
        data.iter()
            .enumerate()
            .map(|(i, d)| {
                let p = dir.path().join(format!("r{i}"));
                std::fs::write(&p, d).unwrap();
                File::open(&p).unwrap()
            })
            .collect(),
    );
    // The handle each file was last registered under (0: none yet), shared by all threads.
    let seen: Arc<Vec<AtomicU64>> = Arc::new((0..2).map(|_| AtomicU64::new(0)).collect());
    let good_reads = Arc::new(AtomicUsize::new(0));
    let until = Instant::now() + Duration::from_millis(ms);
    let gpu = std::path::Path::new("/dev/nvidiactl").exists();
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (data, files, seen, good) =
                (data.clone(), files.clone(), seen.clone(), good_reads.clone());
            std::thread::spawn(move || {
                let mut r = rand::rngs::StdRng::seed_from_u64(9000 + t);
                let mut opened = 0;
                let mut buf = vec![0u8; 256 * 1024];
                while Instant::now() < until {
                    let i = r.random_range(0..2usize);
                    match r.random_range(0..10) {
                        0 => {
                            assert_eq!(cuFileDriverOpen().err, 0);
                            opened += 1;
                        }
                        1 if opened > 0 => {
                            assert_eq!(cuFileDriverClose_v2().err, 0);
                            opened -= 1;
                        }
                        2 => {
                            let mut fh: CUfileHandle_t = null_mut();
                            let mut d = descr(files[i].as_raw_fd());
                            let e = cuFileHandleRegister(&mut fh, &mut d).err;
                            assert!(e == 0 || e == code::HANDLE_ALREADY_REGISTERED, "{e}");
                            if e == 0 {
                                seen[i].store(fh as u64, Ordering::Relaxed);
                            }
                        }
                        3 => cuFileHandleDeregister(seen[i].load(Ordering::Relaxed) as _),
                        4 => {
                            let p = buf.as_ptr() as *const c_void;
                            let e = cuFileBufRegister(p, buf.len(), 0).err;
                            assert!(e == 0 || e == code::MEMORY_ALREADY_REGISTERED, "{e}");
                            let e = cuFileBufDeregister(p).err;
                            let ok = [0, code::MEMORY_NOT_REGISTERED, code::DRIVER_NOT_INITIALIZED];
                            assert!(ok.contains(&e), "{e}");
                        }
                        5 | 6 => {
                            // A batch of two reads through the last handle seen.
                            let fh = seen[i].load(Ordering::Relaxed) as CUfileHandle_t;
                            let mut id: CUfileBatchHandle_t = null_mut();
                            if cuFileBatchIOSetUp(&mut id, 2).err != 0 {
                                continue;
                            }
                            let (o1, o2) =
                                (r.random_range(0..SIZE - 8192), r.random_range(0..SIZE - 8192));
                            let base = buf.as_mut_ptr();
                            let mut io = [
                                params(0, fh, base, o1 as i64, 0, 8192, 1),
                                params(0, fh, base, o2 as i64, 8192, 8192, 2),
                            ];
                            if cuFileBatchIOSubmit(id, 2, io.as_mut_ptr(), 0).err == 0 {
                                let mut ev =
                                    vec![
                                        CUfileIOEvents_t { cookie: null_mut(), status: 0, ret: 0 };
                                        2
                                    ];
                                let mut nr: c_uint = 2;
                                let e = cuFileBatchIOGetStatus(
                                    id,
                                    2,
                                    &mut nr,
                                    ev.as_mut_ptr(),
                                    null_mut(),
                                )
                                .err;
                                // The last close may destroy the batch under us: then no events.
                                if e == 0 {
                                    for ev in &ev[..nr as usize] {
                                        if ev.status == status::COMPLETE {
                                            let (at, off) = if ev.cookie as usize == 1 {
                                                (0, o1)
                                            } else {
                                                (8192, o2)
                                            };
                                            assert_eq!(
                                                &buf[at..at + 8192],
                                                &data[i][off..off + 8192]
                                            );
                                        }
                                    }
                                }
                            }
                            cuFileBatchIODestroy(id);
                        }
                        // Stream-ordered on the null stream, where no GPU owns it (the
                        // I/O runs before the call returns).
                        7 if !gpu => {
                            let fh = seen[i].load(Ordering::Relaxed) as CUfileHandle_t;
                            let mut size = r.random_range(1..buf.len());
                            let off = r.random_range(0..SIZE - size);
                            let (mut fo, mut bo, mut got) = (off as i64, 0i64, 0isize);
                            let p = buf.as_mut_ptr().cast();
                            let e = cuFileReadAsync(
                                fh,
                                p,
                                &mut size,
                                &mut fo,
                                &mut bo,
                                &mut got,
                                null_mut(),
                            )
                            .err;
                            if e == 0 {
                                assert_eq!(got as usize, size, "thread {t}");
                                assert_eq!(&buf[..size], &data[i][off..off + size], "thread {t}");
                                good.fetch_add(1, Ordering::Relaxed);
                            } else {
                                assert_eq!(
                                    (e, got),
                                    (code::INVALID_VALUE, -(libc::EINVAL as isize))
                                );
                            }
                        }
                        _ => {
                            let fh = seen[i].load(Ordering::Relaxed) as CUfileHandle_t;
                            let size = r.random_range(1..buf.len());
                            let off = r.random_range(0..SIZE - size);
                            let n = cuFileRead(fh, buf.as_mut_ptr().cast(), size, off as i64, 0);
                            if n >= 0 {
                                assert_eq!(n as usize, size);
                                assert_eq!(&buf[..size], &data[i][off..off + size], "thread {t}");
                                good.fetch_add(1, Ordering::Relaxed);
                            } else {
                                assert_eq!((n, errno()), (-1, libc::EBADF), "thread {t}");
                            }
                        }
                    }
                }
                for _ in 0..opened {
                    assert_eq!(cuFileDriverClose_v2().err, 0);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a racing thread failed");
    }
    closed();
    let good = good_reads.load(Ordering::Relaxed);
    eprintln!("{good} reads succeeded while handles and the driver came and went");
    assert!(good > 0, "no read ever succeeded");
}
