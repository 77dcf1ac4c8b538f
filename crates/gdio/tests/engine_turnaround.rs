//! The engine's turn-around times (`WorkerTime::start_wait_ns`, `wake_ns`): every request a
//! worker starts counts once for how long it waited for the worker, every caller that slept
//! until its request was done counts once for how late it ran again, and the reads behind
//! them land the file's bytes.

mod common;

use std::sync::Arc;

use common::*;
use gdio::{Config, FileHandle};
use rand::Rng;

#[test]
fn each_request_counts_one_start_and_each_sleeping_caller_one_wake() {
    let data = random_bytes(17, 12 * 1024 * 1024 + 4321);
    let dir = tempfile::tempdir().unwrap();
    let f = Arc::new(FileHandle::open(write_file(dir.path(), "t", &data)).unwrap());
    let config = Config { threads: 3, task_size: 1 << 20, split_min_bytes: 0, ..Config::default() };
    let drv = Arc::new(sim_driver(config, 1));
    drv.prepare_gpu(0).unwrap();
    let before = drv.engine().counters().worker_time;
    let (threads, per_thread) = (3u64, 5);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (drv, f, data) = (drv.clone(), f.clone(), &data);
            s.spawn(move || {
                let mut r = rng(40 + t);
                for _ in 0..per_thread {
                    // Larger than `inline_max_bytes` (a worker serves it, its caller waits), of one to
                    // three tasks (a start counts the first).
                    let len = r.random_range((1 << 20)..=(3 << 20));
                    let off = r.random_range(0..(data.len() - len) as u64);
                    let mut dev = drv.alloc_device(0, len).unwrap();
                    assert_eq!(drv.read(&f, off, &mut dev, 0, len).unwrap(), len);
                    let mut back = vec![0u8; len];
                    dev.copy_to_host(0, &mut back).unwrap();
                    assert!(back == data[off as usize..off as usize + len], "bytes at {off}+{len}");
                }
            });
        }
    });
    let t = drv.engine().counters().worker_time.since(&before);
    let requests = threads * per_thread as u64;
    assert_eq!(t.requests_started, requests, "{t:?}");
    assert!(t.callers_woken >= 1 && t.callers_woken <= requests, "{t:?}");
    let start = t.mean_start_wait_ms().unwrap();
    let wake = t.mean_wake_ms().unwrap();
    assert!(start < 1000.0 && wake < 1000.0, "{t:?}");
}
