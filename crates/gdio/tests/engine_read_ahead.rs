//! Read-ahead (`read_ahead_bytes`): sequential reads into GPU memory, from one thread or from
//! several taking the next range in turn as KvikIO's do, are served out of ranges the workers
//! read ahead, every byte the file's; a file that changes or shrinks after it was read ahead
//! is read afresh; random reads, host memory, a crowd of callers and the key at 0 read nothing
//! ahead. Ranges are read ahead into GPU memory (the default) or pinned host memory
//! (`read_ahead_gpu_memory`). On the simulated GPU (its copies are CPU copies out of the same
//! memory the real GPU would DMA from).

mod common;

use std::os::unix::fs::FileExt;
use std::time::Duration;

use common::*;
use gdio::{Config, Driver, FileHandle};
use rand::seq::SliceRandom;

/// A file changed less than this long ago is not read ahead (`engine/file_stamp.rs`).
const SETTLE: Duration = Duration::from_millis(2100);
/// The request length of these tests.
const REQ: usize = 256 << 10;

fn config(read_ahead: u64, max_callers: usize) -> Config {
    Config {
        threads: 4,
        read_ahead_bytes: read_ahead,
        read_ahead_min_request_bytes: 64 << 10,
        read_ahead_max_callers: max_callers,
        ..Config::default()
    }
}

/// [`config`], reading ahead into GPU memory or pinned host memory.
fn config_in(read_ahead: u64, max_callers: usize, gpu_memory: bool) -> Config {
    Config { read_ahead_gpu_memory: gpu_memory, ..config(read_ahead, max_callers) }
}

/// [`read_in_turn`] in `REQ`-byte requests.
fn pass(drv: &Driver, f: &FileHandle, dev: &gdio::gpu::DeviceBuffer, want: &[u8], threads: usize) {
    read_in_turn(drv, f, dev, want, threads, REQ)
}

#[test]
fn sequential_reads_are_served_out_of_read_ahead_with_every_byte_the_files() {
    let dirs = dirs();
    // Not a multiple of the request: the last range read ahead is short.
    let size = 40 * REQ + 12_345;
    let files: Vec<_> = dirs
        .iter()
        .enumerate()
        .map(|(i, (w, d))| (*w, write_file(d.path(), "ra", &random_bytes(200 + i as u64, size))))
        .collect();
    std::thread::sleep(SETTLE);
    for (i, (where_, p)) in files.iter().enumerate() {
        let data = random_bytes(200 + i as u64, size);
        for (threads, gpu_memory) in [(1, true), (4, true), (1, false), (4, false)] {
            let drv = sim_driver(config_in(2 << 20, 8, gpu_memory), 1);
            let f = FileHandle::open(p).unwrap();
            let dev = drv.alloc_device(0, size).unwrap();
            pass(&drv, &f, &dev, &data, threads);
            let c = drv.engine().counters();
            let ranges = size.div_ceil(REQ) as u64;
            assert!(
                c.read_ahead_reads >= ranges / 2,
                "{where_}, {threads} threads: {} of {ranges} reads out of read-ahead",
                c.read_ahead_reads
            );
            assert!(c.read_ahead_bytes >= c.read_ahead_reads * 12_345, "{where_}: {c:?}");
            assert!(c.read_ahead_bytes <= size as u64);
            if gpu_memory {
                // Read to the end of the file: its GPU memory went back.
                assert_eq!((c.read_ahead_pinned_bytes, c.read_ahead_gpu_bytes), (0, 0), "{c:?}");
            } else {
                assert_eq!(c.read_ahead_pinned_bytes, 2 << 20, "{where_}: one allocation");
            }
            // Nothing is read ahead past the end of the file, and what was read ahead was
            // used but for ranges the reads had already asked for themselves.
            assert!(c.read_ahead_started_bytes <= size as u64, "{where_}: {c:?}");
            assert!(
                c.read_ahead_unused_bytes <= (threads as u64 + 1) * REQ as u64,
                "{where_}, {threads} threads: {c:?}"
            );
            // A second pass starts the sequence again and reads every byte right once more.
            let again = drv.alloc_device(0, size).unwrap();
            pass(&drv, &f, &again, &data, threads);
            assert!(drv.engine().counters().read_ahead_reads > c.read_ahead_reads);
        }
    }
}

#[test]
fn a_file_that_changes_or_shrinks_after_it_was_read_ahead_is_read_afresh() {
    let d = tempfile::tempdir().unwrap();
    let size = 32 * REQ;
    let old = random_bytes(300, size);
    let p = write_file(d.path(), "changes", &old);
    std::thread::sleep(SETTLE);
    let drv = sim_driver(config(2 << 20, 8), 1);
    let f = FileHandle::open(&p).unwrap();
    let mut dev = drv.alloc_device(0, size).unwrap();
    // Half the file, one range after another: the ranges after it are read ahead.
    let half = size / 2;
    for off in (0..half).step_by(REQ) {
        assert_eq!(drv.read(&f, off as u64, &mut dev, off, REQ).unwrap(), REQ);
    }
    let before = drv.engine().counters();
    assert!(before.read_ahead_started_bytes > 0, "nothing read ahead: {before:?}");
    // Another writer rewrites the second half.
    let new = random_bytes(301, size - half);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&p)
        .unwrap()
        .write_all_at(&new, half as u64)
        .unwrap();
    for off in (half..size).step_by(REQ) {
        assert_eq!(drv.read(&f, off as u64, &mut dev, off, REQ).unwrap(), REQ);
    }
    let mut back = vec![0u8; size];
    dev.copy_to_host(0, &mut back).unwrap();
    assert!(back[..half] == old[..half], "the first half differs");
    assert!(
        back[half..] == new[..],
        "a read after the write returned the bytes read ahead before it"
    );
    let after = drv.engine().counters();
    assert!(after.read_ahead_unused_bytes > 0, "the ranges read ahead were not let go: {after:?}");

    // Shrunk under the reads: nothing past the new end comes back, nothing before it stale.
    std::thread::sleep(SETTLE);
    let drv = sim_driver(config(2 << 20, 8), 1);
    let f = FileHandle::open(&p).unwrap();
    let mut whole = old[..half].to_vec();
    whole.extend_from_slice(&new);
    for off in (0..half).step_by(REQ) {
        assert_eq!(drv.read(&f, off as u64, &mut dev, off, REQ).unwrap(), REQ);
    }
    assert!(drv.engine().counters().read_ahead_started_bytes > 0);
    let cut = half + REQ + 1000;
    std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(cut as u64).unwrap();
    assert_eq!(drv.read(&f, half as u64, &mut dev, half, REQ).unwrap(), REQ);
    let n = drv.read(&f, (half + REQ) as u64, &mut dev, half + REQ, REQ).unwrap();
    assert_eq!(n, 1000, "a read across the new end is short");
    // As without read-ahead: the handle keeps the size it last saw, and no bytes come back.
    let past = drv.read(&f, (half + 2 * REQ) as u64, &mut dev, half + 2 * REQ, REQ);
    assert_eq!(past.unwrap(), 0, "a read past the new end");
    dev.copy_to_host(0, &mut back).unwrap();
    assert!(back[half..cut] == whole[half..cut], "bytes before the new end differ");
}

#[test]
fn random_reads_host_memory_a_crowd_and_the_key_at_zero_read_nothing_ahead() {
    let d = tempfile::tempdir().unwrap();
    let size = 256 * REQ;
    let data = random_bytes(400, size);
    let p = write_file(d.path(), "random", &data);
    std::thread::sleep(SETTLE);
    let started = |drv: &Driver| drv.engine().counters().read_ahead_started_bytes;

    // Random ranges, one thread: never three in a row at the highest end.
    let drv = sim_driver(config(2 << 20, 8), 1);
    let f = FileHandle::open(&p).unwrap();
    let mut dev = drv.alloc_device(0, size).unwrap();
    let mut order: Vec<usize> = (0..size / REQ).collect();
    order.shuffle(&mut rng(401));
    for &k in &order {
        assert_eq!(drv.read(&f, (k * REQ) as u64, &mut dev, k * REQ, REQ).unwrap(), REQ);
    }
    let mut back = vec![0u8; size];
    dev.copy_to_host(0, &mut back).unwrap();
    assert!(back == data);
    assert_eq!(started(&drv), 0, "random reads were read ahead of");

    // Host memory, in order.
    let mut host = vec![0u8; size];
    for off in (0..size).step_by(REQ) {
        assert_eq!(drv.read(&f, off as u64, &mut host[..], off, REQ).unwrap(), REQ);
    }
    assert!(host == data);
    assert_eq!(started(&drv), 0, "reads into host memory were read ahead of");

    // In order, but more callers than `read_ahead_max_callers` (0: any caller is too many),
    // and in order with the key at 0.
    for cfg in [config(2 << 20, 0), config(0, 8)] {
        let drv = sim_driver(cfg, 1);
        let dev = drv.alloc_device(0, size).unwrap();
        pass(&drv, &f, &dev, &data, 2);
        let c = drv.engine().counters();
        let held = c.read_ahead_pinned_bytes + c.read_ahead_gpu_bytes;
        assert_eq!((c.read_ahead_started_bytes, held), (0, 0), "{c:?}");
    }
}

#[test]
fn a_file_written_just_now_is_not_read_ahead_and_dropping_the_engine_mid_read_ahead_is_safe() {
    let d = tempfile::tempdir().unwrap();
    let size = 24 * REQ;
    let data = random_bytes(500, size);
    let p = write_file(d.path(), "fresh", &data);
    let drv = sim_driver(config(2 << 20, 8), 1);
    let f = FileHandle::open(&p).unwrap();
    let dev = drv.alloc_device(0, size).unwrap();
    pass(&drv, &f, &dev, &data, 1);
    assert_eq!(drv.engine().counters().read_ahead_started_bytes, 0, "a fresh file was read ahead");

    std::thread::sleep(SETTLE);
    let drv = sim_driver(config(4 << 20, 8), 1);
    let f = FileHandle::open(&p).unwrap();
    let mut dev = drv.alloc_device(0, size).unwrap();
    for off in (0..4 * REQ).step_by(REQ) {
        assert_eq!(drv.read(&f, off as u64, &mut dev, off, REQ).unwrap(), REQ);
    }
    assert!(drv.engine().counters().read_ahead_started_bytes > 0);
    // Reads ahead still queued or running when the engine goes: waited for, no crash.
    drop(drv);
}

#[test]
fn two_sequences_of_other_lengths_at_once_share_the_slots_and_read_every_byte_right() {
    let d = tempfile::tempdir().unwrap();
    let (a_req, b_req) = (REQ, 192 << 10);
    let (a_size, b_size) = (48 * a_req + 999, 64 * b_req + 4097);
    let a = random_bytes(600, a_size);
    let b = random_bytes(601, b_size);
    let (pa, pb) = (write_file(d.path(), "a", &a), write_file(d.path(), "b", &b));
    std::thread::sleep(SETTLE);
    // Six slots of the first length: both sequences want them, and the second's length
    // cuts them anew only once the first holds none.
    let max = 6 * REQ as u64;
    for gpu_memory in [true, false] {
        let drv = sim_driver(Config { threads: 3, ..config_in(max, 8, gpu_memory) }, 1);
        let (fa, fb) = (FileHandle::open(&pa).unwrap(), FileHandle::open(&pb).unwrap());
        let da = drv.alloc_device(0, a_size).unwrap();
        let db = drv.alloc_device(0, b_size).unwrap();
        for round in 0..3 {
            std::thread::scope(|s| {
                s.spawn(|| read_in_turn(&drv, &fa, &da, &a, 3, a_req));
                s.spawn(|| read_in_turn(&drv, &fb, &db, &b, 2 + round, b_req));
            });
        }
        let c = drv.engine().counters();
        assert!(c.read_ahead_reads > 0, "{c:?}");
        // Every byte read ahead was served, let go, or is still held (at most the slots).
        let accounted = c.read_ahead_bytes + c.read_ahead_unused_bytes;
        assert!(c.read_ahead_started_bytes >= accounted, "{c:?}");
        assert!(c.read_ahead_started_bytes - accounted <= max, "{c:?}");
        // Pinned memory is kept; GPU memory went back once both files were read to the end.
        let held = (c.read_ahead_pinned_bytes, c.read_ahead_gpu_bytes);
        assert_eq!(held, if gpu_memory { (0, 0) } else { (max, 0) }, "{c:?}");
    }
}
