//! Workers sharing copy streams (`copy_streams`): reads into and writes out of simulated GPU
//! memory (whose copies land late, so a marker waited for on the wrong stream reads wrong
//! bytes) from many threads at once, with the workers' lanes on one stream per worker, on one
//! shared stream, and on three, and small tasks on the workers' own streams beside them
//! (`own_stream_max_bytes`), every byte checked against `std::fs`.

mod common;

use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use gdio::gpu::sim::SimRuntime;
use gdio::{Config, DirectIoPolicy, Driver, FileHandle, OpenOptions};
use rand::Rng;

fn driver(copy_streams: usize) -> (Driver, SimRuntime) {
    driver_own(copy_streams, 0)
}

/// `own_stream_max_bytes` of `own` (tasks are 12 KiB at most).
fn driver_own(copy_streams: usize, own: usize) -> (Driver, SimRuntime) {
    let rt = SimRuntime::new(1, Duration::from_micros(50));
    let config = Config {
        copy_streams,
        own_stream_max_bytes: own,
        // Every request to the workers, none on its caller's own lane.
        inline_max_bytes: 0,
        ..tiny_config(DirectIoPolicy::Off, 4)
    };
    (Driver::with_runtime(config, Arc::new(rt.clone())).unwrap(), rt)
}

#[test]
fn workers_take_turns_on_the_shared_streams_asked_for() {
    for (copy_streams, queues) in [(0, 4), (1, 1), (3, 3), (8, 4)] {
        let (drv, rt) = driver(copy_streams);
        drv.prepare_gpu(0).unwrap();
        // With more shared streams than workers, only those the workers took were made.
        assert_eq!(rt.queues_made(), queues, "copy_streams {copy_streams}");
    }
}

#[test]
fn reads_and_writes_from_many_threads_land_whole_on_shared_streams() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(41, 3 * 1024 * 1024 + 777);
    let src = write_file(d.path(), "src", &data);
    for (copy_streams, own) in [(0, 0), (1, 0), (3, 0), (1, 8192), (3, 4096)] {
        let (drv, _) = driver_own(copy_streams, own);
        let f = Arc::new(FileHandle::open(&src).unwrap());
        let out_path = d.path().join(format!("out{copy_streams}-{own}"));
        std::fs::write(&out_path, vec![0x5a; data.len()]).unwrap();
        let out = Arc::new(
            FileHandle::open_with(&out_path, OpenOptions::new().read(true).write(true)).unwrap(),
        );
        let region = data.len() / 8;
        std::thread::scope(|s| {
            for t in 0..8usize {
                let (drv, f, out, data) = (&drv, &f, &out, &data);
                s.spawn(move || {
                    let mut r = rng(100 + t as u64 + 10 * copy_streams as u64 + own as u64);
                    for i in 0..12 {
                        let off = r.random_range(0..data.len() as u64);
                        let len = r.random_range(1..200_000usize);
                        let mut buf = drv.alloc_device(0, len).unwrap();
                        let n = drv.read(f, off, &mut buf, 0, len).unwrap();
                        let end = (off as usize + len).min(data.len());
                        assert_eq!(n, end - off as usize, "thread {t} read {i}");
                        let mut back = vec![0u8; n];
                        buf.copy_to_host(0, &mut back).unwrap();
                        assert_eq!(back, data[off as usize..end], "thread {t} read {i} at {off}");
                    }
                    // Each thread writes its own eighth of the output file from GPU memory.
                    let at = t * region;
                    let piece = &data[at..at + region];
                    let mut dbuf = drv.alloc_device(0, region).unwrap();
                    dbuf.copy_from_host(0, piece).unwrap();
                    assert_eq!(drv.write(out, at as u64, &dbuf, 0, region).unwrap(), region);
                });
            }
        });
        let mut got = vec![0u8; data.len()];
        std::fs::File::open(&out_path).unwrap().read_exact_at(&mut got, 0).unwrap();
        assert_eq!(got[..8 * region], data[..8 * region], "copy_streams {copy_streams}, own {own}");
        assert!(got[8 * region..].iter().all(|&b| b == 0x5a), "nothing written past the regions");
    }
}

/// Reads of (offset, length) into GPU memory from one thread each; returns the buffers
/// (checked afterwards: a copy back to the host makes a stream of its own).
fn read_all(
    drv: &Driver,
    f: &FileHandle,
    per_thread: &[Vec<(usize, usize)>],
) -> Vec<(usize, gdio::DeviceBuffer)> {
    std::thread::scope(|s| {
        let hs: Vec<_> = per_thread
            .iter()
            .map(|reads| {
                s.spawn(move || {
                    let one = |&(off, len): &(usize, usize)| {
                        let mut buf = drv.alloc_device(0, len).unwrap();
                        assert_eq!(drv.read(f, off as u64, &mut buf, 0, len).unwrap(), len);
                        (off, buf)
                    };
                    reads.iter().map(one).collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn small_tasks_queue_on_streams_of_the_workers_own_and_large_ones_on_the_shared() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(43, 8 << 20);
    let src = write_file(d.path(), "src", &data);
    let f = FileHandle::open(&src).unwrap();
    let task = 4096 * 3;
    let check = |got: Vec<(usize, gdio::DeviceBuffer)>| {
        for (off, buf) in got {
            let mut back = vec![0u8; buf.len()];
            buf.copy_to_host(0, &mut back).unwrap();
            assert_eq!(back, data[off..off + back.len()], "{} bytes at {off}", back.len());
        }
    };
    // Eight whole 12 KiB tasks per request, from four threads.
    let large: Vec<Vec<_>> =
        (0..4).map(|t| (0..16).map(|i| ((t * 16 + i) * 8 * task, 8 * task)).collect()).collect();
    // One-page reads at random offsets, from eight threads.
    let small: Vec<Vec<_>> = (0..8u64)
        .map(|t| {
            let mut r = rng(200 + t);
            (0..64)
                .map(|_| (r.random_range(0..data.len() - 4096), r.random_range(1..=4096)))
                .collect()
        })
        .collect();
    // (copy_streams, own_stream_max_bytes, queues after large reads, after small reads: at
    // most). No warm-up: the workers make their lanes at their first work.
    for (copy_streams, own, large_q, most) in [(1, 8192, 1, 5), (1, 0, 1, 1), (0, 8192, 4, 4)] {
        let (drv, rt) = driver_own(copy_streams, own);
        let got = read_all(&drv, &f, &large);
        let made = rt.queues_made();
        assert!(made <= large_q, "copy_streams {copy_streams}, own {own}: large tasks: {made}");
        check(got);
        let before = rt.queues_made();
        let got = read_all(&drv, &f, &small);
        let made = rt.queues_made() - before + large_q;
        check(got);
        assert!(made <= most, "copy_streams {copy_streams}, own {own}: {made} streams");
        if own > 0 && copy_streams > 0 {
            assert!(made > large_q, "small reads made no stream of a worker's own");
        } else {
            assert!(made <= large_q, "copy_streams {copy_streams}, own {own}: small reads: {made}");
        }
    }
    // A warm-up (what a stream-ordered I/O does before it holds its caller's stream, behind
    // which nothing may be made) makes both lanes of every worker: small reads make no more.
    let (drv, rt) = driver_own(1, 8192);
    drv.prepare_gpu(0).unwrap();
    assert_eq!(rt.queues_made(), 1 + 4, "the shared stream and one of each worker's own");
    let got = read_all(&drv, &f, &small);
    assert_eq!(rt.queues_made(), 5, "small reads after the warm-up made a stream");
    check(got);
}
