//! `inline_callers_min` and `inline_chunk_size`: when many synchronous requests are in flight
//! at once, each one-task request into or out of GPU memory runs on its calling thread, in
//! chunks that overlap reads with copies. The bytes must land exactly as through the workers
//! (random unaligned offsets and lengths, end of file included, guards around every
//! destination, copies that land late), writes must leave every byte outside their ranges as
//! it was, and a lone caller must still go to the workers.

mod common;

use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use gdio::gpu::sim::SimRuntime;
use gdio::{Config, DirectIoPolicy, Driver, FileHandle, OpenOptions};
use rand::Rng;

const CALLERS: usize = 4;

/// Inline for crowds of `min` callers or more, nothing inline by size, 64 KiB inline chunks
/// (a request is several chunks), copies that land 2 ms late (so the callers' requests overlap, and a
/// missing wait reads wrong bytes).
fn driver(min: usize, direct: DirectIoPolicy) -> Driver {
    let config = Config {
        threads: 3,
        task_size: 1 << 20,
        bounce_buffer_size: 256 << 10,
        inline_max_bytes: 0,
        inline_callers_min: min,
        inline_chunk_size: 64 << 10,
        direct_io: direct,
        ..Config::default()
    };
    let drv = Driver::with_runtime(config, Arc::new(SimRuntime::new(1, Duration::from_millis(2))))
        .unwrap();
    drv.prepare_gpu(0).unwrap();
    drv
}

#[test]
fn a_crowd_of_callers_reads_on_its_own_threads_and_every_byte_lands() {
    let data = random_bytes(301, 5 * (1 << 20) + 999);
    for (what, dir) in dirs() {
        let p = write_file(dir.path(), "crowd", &data);
        let f = Arc::new(FileHandle::open(&p).unwrap());
        for (min, direct) in
            [(0, DirectIoPolicy::Off), (3, DirectIoPolicy::Off), (3, DirectIoPolicy::On)]
        {
            let drv = driver(min, direct);
            std::thread::scope(|s| {
                for t in 0..CALLERS as u64 {
                    let (drv, f, data) = (&drv, &f, &data);
                    s.spawn(move || {
                        let mut r = rng(min as u64 * 100 + t + direct as u64 * 10);
                        for round in 0..6 {
                            let len = r.random_range(1..=(1 << 20));
                            let off = r.random_range(0..data.len() as u64 - 100);
                            let mut dev = drv.alloc_device(0, len + 128).unwrap();
                            dev.copy_from_host(0, &[0xA5; 64]).unwrap();
                            dev.copy_from_host(len + 64, &[0x5A; 64]).unwrap();
                            let n = drv.read(f, off, &mut dev, 64, len).unwrap();
                            let want = &data[off as usize..(off as usize + len).min(data.len())];
                            assert_eq!(n, want.len(), "{what} min {min} {direct:?} round {round}");
                            let mut back = vec![0u8; len + 128];
                            dev.copy_to_host(0, &mut back).unwrap();
                            assert!(
                                back[..64].iter().all(|&b| b == 0xA5),
                                "{what} min {min} {direct:?}: head guard"
                            );
                            assert!(
                                back[64..64 + n] == *want,
                                "{what} min {min} {direct:?}: bytes differ at {off}+{len}"
                            );
                            assert!(
                                back[len + 64..].iter().all(|&b| b == 0x5A),
                                "{what} min {min} {direct:?}: tail guard after {off}+{len}"
                            );
                        }
                    });
                }
            });
            let c = drv.engine().counters();
            if min == 0 {
                assert_eq!(c.inline_requests, 0, "{what}: inline with inline_callers_min 0");
            } else {
                assert!(
                    c.inline_requests > 0,
                    "{what} {direct:?}: no request of the crowd ran inline"
                );
            }
        }
    }
}

#[test]
fn a_lone_caller_is_served_by_the_workers_whatever_inline_callers_min_says() {
    let data = random_bytes(302, 3 << 20);
    let dir = tempfile::tempdir().unwrap();
    let p = write_file(dir.path(), "lone", &data);
    let f = FileHandle::open(&p).unwrap();
    let drv = driver(2, DirectIoPolicy::Off);
    let mut r = rng(9);
    for _ in 0..5 {
        let len = r.random_range((256 << 10)..=(1 << 20));
        let off = r.random_range(0..(2 << 20));
        let mut dev = drv.alloc_device(0, len).unwrap();
        assert_eq!(drv.read(&f, off, &mut dev, 0, len).unwrap(), len);
        let mut back = vec![0u8; len];
        dev.copy_to_host(0, &mut back).unwrap();
        assert!(back == data[off as usize..][..len], "bytes differ at {off}+{len}");
    }
    assert_eq!(drv.engine().counters().inline_requests, 0, "one caller is no crowd");
}

#[test]
fn a_crowd_of_writers_writes_exactly_its_ranges_from_its_own_threads() {
    let size = 6usize << 20;
    let old = random_bytes(303, size);
    for (what, dir) in dirs() {
        let p = write_file(dir.path(), "writes", &old);
        let f =
            Arc::new(FileHandle::open_with(&p, OpenOptions::new().read(true).write(true)).unwrap());
        let drv = driver(3, DirectIoPolicy::Off);
        // Each caller owns a quarter of the file (1.5 MiB) and writes random ranges inside it.
        let written: Vec<Vec<(u64, Vec<u8>)>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..CALLERS)
                .map(|t| {
                    let (drv, f) = (&drv, &f);
                    s.spawn(move || {
                        let quarter = size / CALLERS;
                        let mut r = rng(40 + t as u64);
                        let mut done = Vec::new();
                        for round in 0..4 {
                            let len = r.random_range(1..=quarter / 2);
                            let off = (t * quarter + r.random_range(0..quarter - len)) as u64;
                            let bytes = random_bytes(1000 + t as u64 * 10 + round, len);
                            let mut dev = drv.alloc_device(0, len).unwrap();
                            dev.copy_from_host(0, &bytes).unwrap();
                            assert_eq!(drv.write(f, off, &dev, 0, len).unwrap(), len, "{what}");
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
        assert!(drv.engine().counters().inline_requests > 0, "{what}: no write ran inline");
    }
}

#[test]
fn inline_knobs_are_checked_where_they_enter() {
    let vars = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
    let e = Config::load_from_vars(vars("GDIO_INLINE_CHUNK_SIZE", "100")).unwrap_err();
    assert!(e.to_string().contains("inline_chunk_size"), "{e}");
    let e = Config::load_from_vars(vars("GDIO_INLINE_CALLERS_MIN", "many")).unwrap_err();
    assert!(e.to_string().contains("inline_callers_min"), "{e}");
    let c = Config::load_from_vars(vars("GDIO_INLINE_CALLERS_MIN", "8")).unwrap();
    assert_eq!(c.config().inline_callers_min, 8);
}
