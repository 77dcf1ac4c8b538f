//! Stress: 8 threads × 8 handles, mixed reads and writes into host memory and the simulated
//! GPU, every byte checked. Each thread owns one stripe of every file and writes only there, so
//! it always knows what its stripe must hold; reads of other stripes check the bytes that no
//! one writes (the files' untouched tails).
//!
//! Runs `GDIO_STRESS_SECS` seconds (default 8, for CI). The long version, on the GPU machine:
//! `GDIO_STRESS_SECS=600 cargo test --release -p gdio --test stress -- --nocapture` (or the
//! prebuilt test binary with the same variable).

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use gdio::{DirectIoPolicy, FileHandle, OpenOptions};
use rand::Rng;

const FILES: usize = 8;
const THREADS: usize = 8;
const STRIPE: usize = 256 << 10;
/// Bytes after the stripes that nobody writes: every thread reads them and checks them.
const TAIL: usize = 128 << 10;

#[test]
fn eight_threads_eight_handles_mixed_io_every_byte_checked() {
    stress(false);
}

/// The same with the completion watcher finishing tasks while their workers read on.
#[test]
fn eight_threads_eight_handles_mixed_io_with_the_completion_watcher() {
    stress(true);
}

fn stress(completion_watcher: bool) {
    let secs: u64 =
        std::env::var("GDIO_STRESS_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(8);
    let d = tempfile::tempdir().unwrap();
    let size = THREADS * STRIPE + TAIL;
    let initial: Vec<Vec<u8>> = (0..FILES).map(|i| random_bytes(100 + i as u64, size)).collect();
    let handles: Arc<Vec<FileHandle>> = Arc::new(
        (0..FILES)
            .map(|i| {
                let p = write_file(d.path(), &format!("s{i}"), &initial[i]);
                FileHandle::open_with(&p, OpenOptions::new().read(true).write(true)).unwrap()
            })
            .collect(),
    );
    let config = gdio::Config {
        write_threads: 4,
        completion_watcher,
        ..tiny_config(DirectIoPolicy::Auto, 6)
    };
    let drv = Arc::new(sim_driver(config, 1));
    let initial = Arc::new(initial);
    let bytes = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (drv, handles, initial, bytes) =
                (drv.clone(), handles.clone(), initial.clone(), bytes.clone());
            std::thread::spawn(move || {
                let mut r = rng(1000 + t as u64);
                // What this thread's stripe of each file holds.
                let mut mine: Vec<Vec<u8>> =
                    (0..FILES).map(|i| initial[i][t * STRIPE..(t + 1) * STRIPE].to_vec()).collect();
                let mut dev = drv.alloc_device(0, STRIPE).unwrap();
                let mut host = vec![0u8; STRIPE];
                let mut ops = 0u64;
                while Instant::now() < deadline {
                    let i = r.random_range(0..FILES);
                    let f = &handles[i];
                    let on_gpu = r.random_bool(0.5);
                    let off = r.random_range(0..STRIPE);
                    let len = r.random_range(1..=STRIPE - off);
                    let at = (t * STRIPE + off) as u64;
                    match r.random_range(0..3) {
                        0 => {
                            let src = random_bytes(r.random(), len);
                            if on_gpu {
                                dev.copy_from_host(0, &src).unwrap();
                                drv.write(f, at, &dev, 0, len).unwrap();
                            } else {
                                drv.write(f, at, &src, 0, len).unwrap();
                            }
                            mine[i][off..off + len].copy_from_slice(&src);
                        }
                        1 => {
                            let n = if on_gpu {
                                let n = drv.read(f, at, &mut dev, 0, len).unwrap();
                                dev.copy_to_host(0, &mut host[..n]).unwrap();
                                n
                            } else {
                                drv.read(f, at, &mut host, 0, len).unwrap()
                            };
                            assert_eq!(n, len);
                            assert!(
                                host[..n] == mine[i][off..off + len],
                                "thread {t} file {i} stripe bytes {off}+{len} differ (gpu {on_gpu})"
                            );
                        }
                        _ => {
                            // The tail nobody writes, read to past the end of the file.
                            let off = r.random_range(0..TAIL);
                            let at = (THREADS * STRIPE + off) as u64;
                            let len = STRIPE.min(TAIL - off + 1000);
                            let n = if on_gpu {
                                let n = drv.read(f, at, &mut dev, 0, len).unwrap();
                                dev.copy_to_host(0, &mut host[..n]).unwrap();
                                n
                            } else {
                                drv.read(f, at, &mut host, 0, len).unwrap()
                            };
                            assert_eq!(n, TAIL - off);
                            assert!(host[..n] == initial[i][THREADS * STRIPE + off..]);
                        }
                    }
                    bytes.fetch_add(len as u64, Ordering::Relaxed);
                    ops += 1;
                }
                (t, ops, mine)
            })
        })
        .collect();
    let mut stripes = vec![vec![Vec::new(); THREADS]; FILES];
    let mut total_ops = 0;
    for w in workers {
        let (t, ops, mine) = w.join().expect("a stress thread panicked");
        total_ops += ops;
        for (i, s) in mine.into_iter().enumerate() {
            stripes[i][t] = s;
        }
    }
    // Every byte of every file, read back with std::fs.
    for (i, h) in handles.iter().enumerate() {
        let now = std::fs::read(h.path()).unwrap();
        assert_eq!(now.len(), size);
        for (t, s) in stripes[i].iter().enumerate() {
            assert!(now[t * STRIPE..(t + 1) * STRIPE] == s[..], "file {i} stripe {t} differs");
        }
        assert!(now[THREADS * STRIPE..] == initial[i][THREADS * STRIPE..]);
    }
    eprintln!(
        "stress (watcher {completion_watcher}): {total_ops} operations, {:.1} MB moved in {secs} s, every byte checked",
        bytes.load(Ordering::Relaxed) as f64 / 1e6
    );
    assert!(total_ops > THREADS as u64, "too few operations to mean anything");
}
