//! `file_writers`: large buffered writes into one file wait for their turn, at most that many
//! at once over every request in flight (host memory and simulated GPU memory, tmpfs and the
//! temp dir's filesystem); every byte of the file is checked afterwards, and writes under
//! `FILE_WRITERS_MIN_BYTES` never count.

mod common;

use std::sync::Arc;

use common::*;
use gdio::file::FILE_WRITERS_MIN_BYTES;
use gdio::{Config, DirectIoPolicy, Driver, FileHandle, OpenOptions};
use rand::Rng;

/// `n` writes of `min..=max` bytes into disjoint, randomly placed ranges of a file of `size`
/// bytes, each from its own place of a source of the returned length: (file offset, source
/// offset, length).
fn plans(
    seed: u64,
    n: usize,
    min: usize,
    max: usize,
    size: usize,
) -> (Vec<(u64, usize, usize)>, usize) {
    let mut r = rng(seed);
    let slot = size / n;
    assert!(max <= slot);
    let mut at = 0;
    let v = (0..n)
        .map(|i| {
            let len = r.random_range(min..=max);
            let off = (i * slot + r.random_range(0..=slot - len)) as u64;
            at += r.random_range(0..4096);
            let p = (off, at, len);
            at += len;
            p
        })
        .collect();
    (v, at)
}

/// Runs every plan from 12 threads at once (each takes the next plan), `from_device` out of a
/// simulated GPU's memory, else out of host memory; returns the file's expected bytes and the
/// handle.
fn write_all(
    drv: &Driver,
    path: &std::path::Path,
    before: &[u8],
    plans: &[(u64, usize, usize)],
    src: &[u8],
    from_device: bool,
) -> (Vec<u8>, Arc<FileHandle>) {
    let file =
        Arc::new(FileHandle::open_with(path, OpenOptions::new().read(true).write(true)).unwrap());
    let dev = from_device.then(|| {
        let mut d = drv.alloc_device(0, src.len()).unwrap();
        d.copy_from_host(0, src).unwrap();
        d
    });
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..12 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(off, at, len)) = plans.get(i) else { break };
                let n = match &dev {
                    Some(d) => drv.write(&file, off, d, at, len),
                    None => drv.write(&file, off, src, at, len),
                };
                assert_eq!(n.unwrap(), len, "write {i} at {off}");
            });
        }
    });
    let mut want = before.to_vec();
    for &(off, at, len) in plans {
        want[off as usize..off as usize + len].copy_from_slice(&src[at..at + len]);
    }
    (want, file)
}

fn config(file_writers: usize) -> Config {
    Config {
        threads: 12,
        // Each large request is one task, and every worker may take one: without the limit,
        // twelve writes reach the file at once.
        task_size: 4 << 20,
        write_threads: 12,
        bounce_buffer_size: 1 << 20,
        buffered_chunk_size: 1 << 20,
        direct_io: DirectIoPolicy::Off,
        file_writers,
        ..Config::default()
    }
}

#[test]
fn large_writes_into_one_file_are_held_to_file_writers_at_once_and_land_exactly() {
    for (where_, d) in dirs() {
        let size = 48 << 20;
        for from_device in [false, true] {
            for limit in [1, 2, 0] {
                let what = format!("{where_} limit {limit} device {from_device}");
                // With no limit, whether these writers overlap is up to the scheduler (under
                // ThreadSanitizer on two cores the simulated copies dwarf the `pwrite`s and
                // twenty rounds once ran one at a time): every write is still counted here, and
                // the engine's unit test `slow_large_writes_overlap_without_a_limit_and_keep_to_a_limit`
                // holds each `pwrite` 200 ms to show that they do overlap.
                let seed = 7 + limit as u64;
                let before = random_bytes(seed, size);
                let path = write_file(d.path(), &format!("w{limit}{from_device}"), &before);
                let drv = sim_driver(config(limit), 1);
                let (plans, total) = plans(seed + 1, 24, 1 << 20, 2 << 20, size);
                let src = random_bytes(seed + 2, total);
                let (want, file) = write_all(&drv, &path, &before, &plans, &src, from_device);
                assert!(std::fs::read(&path).unwrap() == want, "{what}: the file differs");
                let most = file.most_writers_at_once();
                let cap = if limit == 0 { 12 } else { limit };
                assert!(most >= 1 && most <= cap, "{what}: {most} writers at once");
            }
        }
    }
}

#[test]
fn small_writes_do_not_count_against_file_writers() {
    for (where_, d) in dirs() {
        let size = 8 << 20;
        let before = random_bytes(21, size);
        let path = write_file(d.path(), "small", &before);
        let drv = sim_driver(config(1), 1);
        let max = FILE_WRITERS_MIN_BYTES as usize - 1;
        let (plans, total) = plans(22, 64, 1, max.min(size / 64), size);
        let src = random_bytes(23, total);
        let (want, file) = write_all(&drv, &path, &before, &plans, &src, false);
        assert!(std::fs::read(&path).unwrap() == want, "{where_}: the file differs");
        assert_eq!(file.most_writers_at_once(), 0, "{where_}: a small write took a turn");
    }
}

#[test]
fn file_writers_is_read_from_the_environment_and_bounded() {
    let vars = |v: &str| vec![("GDIO_FILE_WRITERS".to_string(), v.to_string())];
    assert_eq!(Config::default().file_writers, 2);
    let l = Config::load_from_vars(vars("0")).unwrap();
    assert_eq!(l.config().file_writers, 0);
    let e = Config::load_from_vars(vars("1025")).unwrap_err();
    assert!(e.to_string().contains("file_writers"), "{e}");
    let mut l = Config::load_from_vars(vars("3")).unwrap();
    assert!(l.set("file_writers", -1).is_err());
    assert_eq!(l.config().file_writers, 3, "a refused value changed the config");
}
