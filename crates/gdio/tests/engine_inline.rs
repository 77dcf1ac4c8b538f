//! `inline_max_bytes`: a synchronous one-task request into or out of GPU memory up to that
//! size runs on its calling thread's own lane, a larger one on the workers. From several
//! threads at once, at random unaligned offsets and lengths (end of file included), with
//! copies that land late: every byte lands where it should, guards around each destination
//! stay untouched, writes change exactly their ranges, and `inline_requests` counts exactly the
//! requests the rule sends to their callers.

mod common;

use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use gdio::gpu::sim::SimRuntime;
use gdio::{Config, DirectIoPolicy, Driver, FileHandle, OpenOptions};
use rand::Rng;

const CALLERS: u64 = 4;
const INLINE_MAX: usize = 256 << 10;

/// Requests up to 256 KiB inline, 64 KiB bounce buffers and chunks (an inline request is
/// several chunks through the lane's two buffers), copies landing 1 ms late.
fn driver(direct: DirectIoPolicy) -> Driver {
    let config = Config {
        threads: 3,
        bounce_buffer_size: 64 << 10,
        buffered_chunk_size: 64 << 10,
        inline_max_bytes: INLINE_MAX,
        // Every caller may run inline at once: this file's first tests are about sizes.
        inline_max_callers: 0,
        direct_io: direct,
        ..Config::default()
    };
    let drv = Driver::with_runtime(config, Arc::new(SimRuntime::new(1, Duration::from_millis(1))))
        .unwrap();
    drv.prepare_gpu(0).unwrap();
    drv
}

#[test]
fn small_reads_run_on_their_callers_large_ones_on_the_workers_and_every_byte_lands() {
    let data = random_bytes(301, (3 << 20) + 999);
    for (what, dir) in dirs() {
        let p = write_file(dir.path(), "inline", &data);
        let f = Arc::new(FileHandle::open(&p).unwrap());
        for direct in [DirectIoPolicy::Off, DirectIoPolicy::On] {
            let drv = driver(direct);
            let small = AtomicU64::new(0);
            std::thread::scope(|s| {
                for t in 0..CALLERS {
                    let (drv, f, data, small) = (&drv, &f, &data, &small);
                    s.spawn(move || {
                        let mut r = rng(t + 10 * direct as u64);
                        for _ in 0..12 {
                            let len = r.random_range(1..=(2 * INLINE_MAX));
                            let off = r.random_range(0..data.len() as u64 - 100);
                            let mut dev = drv.alloc_device(0, len + 128).unwrap();
                            dev.copy_from_host(0, &[0xA5; 64]).unwrap();
                            dev.copy_from_host(len + 64, &[0x5A; 64]).unwrap();
                            let n = drv.read(f, off, &mut dev, 64, len).unwrap();
                            let want = &data[off as usize..(off as usize + len).min(data.len())];
                            assert_eq!(n, want.len(), "{what} {direct:?} at {off}+{len}");
                            if n <= INLINE_MAX {
                                small.fetch_add(1, Ordering::Relaxed);
                            }
                            let mut back = vec![0u8; len + 128];
                            dev.copy_to_host(0, &mut back).unwrap();
                            let at = format!("{what} {direct:?} at {off}+{len}");
                            assert!(back[..64].iter().all(|&b| b == 0xA5), "{at}: head guard");
                            assert!(back[64..64 + n] == *want, "{at}: bytes differ");
                            assert!(
                                back[len + 64..].iter().all(|&b| b == 0x5A),
                                "{at}: tail guard"
                            );
                        }
                    });
                }
            });
            let small = small.load(Ordering::Relaxed);
            assert!(small > 0 && small < CALLERS * 12, "{what}: the random sizes missed a side");
            assert_eq!(
                drv.engine().counters().inline_requests,
                small,
                "{what} {direct:?}: inline requests against requests up to inline_max_bytes"
            );
        }
    }
}

#[test]
fn writes_from_gpu_memory_inline_or_not_change_exactly_their_ranges() {
    let size = 4usize << 20;
    let old = random_bytes(303, size);
    for (what, dir) in dirs() {
        let p = write_file(dir.path(), "writes", &old);
        let f =
            Arc::new(FileHandle::open_with(&p, OpenOptions::new().read(true).write(true)).unwrap());
        let drv = driver(DirectIoPolicy::Off);
        let small = AtomicU64::new(0);
        // Each caller owns a quarter of the file and writes random ranges inside it.
        let written: Vec<Vec<(u64, Vec<u8>)>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..CALLERS as usize)
                .map(|t| {
                    let (drv, f, small) = (&drv, &f, &small);
                    s.spawn(move || {
                        let quarter = size / CALLERS as usize;
                        let mut r = rng(40 + t as u64);
                        let mut done = Vec::new();
                        for round in 0..6 {
                            let len = r.random_range(1..=(2 * INLINE_MAX));
                            let off = (t * quarter + r.random_range(0..quarter - len)) as u64;
                            let bytes = random_bytes(1000 + t as u64 * 10 + round, len);
                            let mut dev = drv.alloc_device(0, len).unwrap();
                            dev.copy_from_host(0, &bytes).unwrap();
                            assert_eq!(drv.write(f, off, &dev, 0, len).unwrap(), len, "{what}");
                            if len <= INLINE_MAX {
                                small.fetch_add(1, Ordering::Relaxed);
                            }
                            done.push((off, bytes));
                        }
                        done
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut want = old.clone();
        for (off, bytes) in written.iter().flatten() {
            want[*off as usize..][..bytes.len()].copy_from_slice(bytes);
        }
        let mut got = vec![0u8; size];
        std::fs::File::open(&p).unwrap().read_exact_at(&mut got, 0).unwrap();
        assert!(got == want, "{what}: the file differs from its writes");
        assert_eq!(
            drv.engine().counters().inline_requests,
            small.load(Ordering::Relaxed),
            "{what}"
        );
    }
}

#[test]
fn inline_max_bytes_zero_sends_every_gpu_request_to_the_workers() {
    let data = random_bytes(302, 1 << 20);
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(dir.path(), "none", &data);
    let f = FileHandle::open(&p).unwrap();
    let config = Config { inline_max_bytes: 0, ..Config::default() };
    let drv = Driver::with_runtime(config, Arc::new(SimRuntime::new(1, Duration::ZERO))).unwrap();
    let mut r = rng(9);
    for _ in 0..8 {
        read_random_small(&drv, &f, &data[..(900 << 10) + (64 << 10)], &mut r);
    }
    assert_eq!(drv.engine().counters().inline_requests, 0);
}

/// Reads 1 to 64 KiB at a random offset of `data` (the file's first bytes) into GPU memory
/// and checks every byte.
fn read_random_small(drv: &Driver, f: &FileHandle, data: &[u8], r: &mut rand::rngs::StdRng) {
    let len = r.random_range(1..=(64 << 10));
    let off = r.random_range(0..(data.len() - len) as u64);
    let mut dev = drv.alloc_device(0, len).unwrap();
    assert_eq!(drv.read(f, off, &mut dev, 0, len).unwrap(), len);
    assert!(dev.to_vec().unwrap() == data[off as usize..][..len], "bytes differ at {off}+{len}");
}

/// `inline_max_callers`: with eight callers at once and a limit of two, small reads go to the
/// workers (counted in `inline_busy`); every read is either inline or busy, and every byte
/// lands. A lone caller runs inline, before the crowd and after it (the count comes back),
/// a new thread too.
#[test]
fn callers_beyond_inline_max_callers_hand_small_reads_to_the_workers() {
    let data = random_bytes(303, 4 << 20);
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(dir.path(), "callers", &data);
    let f = FileHandle::open(&p).unwrap();
    let config = Config {
        threads: 3,
        inline_max_bytes: INLINE_MAX,
        inline_max_callers: 2,
        ..Config::default()
    };
    let drv = Driver::with_runtime(config, Arc::new(SimRuntime::new(1, Duration::from_millis(1))))
        .unwrap();
    drv.prepare_gpu(0).unwrap();
    let read = |r: &mut rand::rngs::StdRng| read_random_small(&drv, &f, &data, r);
    let mut r = rng(11);
    for _ in 0..6 {
        read(&mut r);
    }
    let c = drv.engine().counters();
    assert_eq!((c.inline_requests, c.inline_busy), (6, 0), "a lone caller runs inline");
    let barrier = std::sync::Barrier::new(8);
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let (read, barrier) = (&read, &barrier);
            s.spawn(move || {
                let mut r = rng(20 + t);
                barrier.wait();
                for _ in 0..10 {
                    read(&mut r);
                }
            });
        }
    });
    let c = drv.engine().counters();
    assert_eq!(c.inline_requests + c.inline_busy, 6 + 80, "{c:?}");
    assert!(c.inline_busy > 0, "eight callers, a limit of two, none sent to the workers: {c:?}");
    for _ in 0..4 {
        read(&mut r);
    }
    let after = drv.engine().counters();
    assert_eq!(after.inline_requests, c.inline_requests + 4, "alone again: {after:?}");
    assert_eq!(after.inline_busy, c.inline_busy, "alone again: {after:?}");
    // After a crowd, a new thread alone makes its lane and runs inline (with other small
    // callers in flight it would not: `Engine::may_make_lane`'s unit test).
    std::thread::scope(|s| {
        s.spawn(|| read(&mut rng(97)));
    });
    let alone = drv.engine().counters();
    assert_eq!(alone.caller_lanes_made, after.caller_lanes_made + 1, "alone: {alone:?}");
    assert_eq!(alone.inline_requests, after.inline_requests + 1, "alone: {alone:?}");
}
