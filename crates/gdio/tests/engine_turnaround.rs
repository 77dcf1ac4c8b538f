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
    // Only a lone caller polls: three callers beside each other sleep and are woken.
    let config = Config {
        threads: 3,
        task_size: 1 << 20,
        split_min_bytes: 0,
        polling_callers_max: 1,
        ..Config::default()
    };
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

/// `lone_caller_polls`: a caller whose read is alone in flight polls until it is done and is
/// never put to sleep (no wake counted), with the file's bytes landed and the bytes around the
/// destination untouched; with the key off, or without a core to spare for the caller (as many
/// workers as cores), it sleeps. (A caller beside another open read: the fault-injection tests,
/// `callers_beside_other_open_reads_sleep_unless_the_cores_hold_them_and_alone_they_poll`.)
#[test]
fn a_lone_caller_polls_instead_of_sleeping() {
    let data = random_bytes(23, 20 * 1024 * 1024 + 999);
    let dir = tempfile::tempdir().unwrap();
    let f = Arc::new(FileHandle::open(write_file(dir.path(), "lone", &data)).unwrap());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // One worker leaves a core for the caller on any machine of two cores or more; as many
    // workers as cores leave none.
    for (polls, threads) in [(true, 1), (false, 1), (true, cores)] {
        let may_poll = polls && threads < cores;
        let config = Config {
            threads,
            lone_caller_polls: polls,
            // Long enough for any simulated read: a lone caller never runs out of spin.
            completion_spin_us: 1_000_000,
            ..Config::default()
        };
        let drv = Arc::new(sim_driver(config, 1));
        drv.prepare_gpu(0).unwrap();
        let read = |seed: u64| {
            let mut r = rng(seed);
            let len = r.random_range((1 << 20)..=(8 << 20));
            let off = r.random_range(0..(data.len() - len) as u64);
            let mut dev = drv.alloc_device(0, len + 128).unwrap();
            dev.copy_from_host(0, &[0xA5; 64]).unwrap();
            dev.copy_from_host(len + 64, &[0x5A; 64]).unwrap();
            assert_eq!(drv.read(&f, off, &mut dev, 64, len).unwrap(), len);
            let mut back = vec![0u8; len + 128];
            dev.copy_to_host(0, &mut back).unwrap();
            assert!(back[..64].iter().all(|&b| b == 0xA5), "head guard at {off}+{len}");
            assert!(back[64..64 + len] == data[off as usize..off as usize + len], "{off}+{len}");
            assert!(back[len + 64..].iter().all(|&b| b == 0x5A), "tail guard at {off}+{len}");
        };
        let before = drv.engine().counters().worker_time;
        for i in 0..6 {
            read(70 + i);
        }
        let lone = drv.engine().counters().worker_time.since(&before);
        assert_eq!(lone.requests_started, 6, "{lone:?}");
        if may_poll {
            assert_eq!(lone.callers_woken, 0, "a lone caller slept: {lone:?}");
            assert_eq!(lone.callers_polled, 6, "{lone:?}");
        } else {
            assert_eq!(lone.callers_polled, 0, "polls {polls}, {threads} workers: {lone:?}");
            assert!(
                lone.callers_woken >= 1,
                "polls {polls}, {threads} workers: none slept: {lone:?}"
            );
        }
    }
}

#[test]
fn lone_caller_polls_is_read_from_the_environment() {
    let vars = |v: &str| vec![("GDIO_LONE_CALLER_POLLS".to_string(), v.to_string())];
    let on = !Config::default().lone_caller_polls;
    let l = Config::load_from_vars(vars(if on { "true" } else { "false" })).unwrap();
    assert_eq!(l.config().lone_caller_polls, on);
    let e = Config::load_from_vars(vars("sometimes")).unwrap_err();
    assert!(e.to_string().contains("LONE_CALLER_POLLS"), "{e}");
}

#[test]
fn polling_callers_max_is_read_from_the_environment_and_bounded() {
    let vars = |v: &str| vec![("GDIO_POLLING_CALLERS_MAX".to_string(), v.to_string())];
    let want = Config::default().polling_callers_max % 64 + 1;
    let l = Config::load_from_vars(vars(&want.to_string())).unwrap();
    assert_eq!(l.config().polling_callers_max, want);
    for bad in ["0", "65", "two"] {
        let e = Config::load_from_vars(vars(bad)).unwrap_err();
        assert!(e.to_string().contains("POLLING_CALLERS_MAX"), "{bad}: {e}");
    }
}
