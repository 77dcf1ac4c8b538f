//! The io_uring read path (`io_engine`): forced io_uring, forced `pread` and `auto` read the
//! same bytes as the file holds, into host memory and simulated GPUs, buffered and
//! `O_DIRECT` (a cold file on a filesystem that has it), at random unaligned offsets and sizes
//! with short reads at end of file; gathered groups and several cold reads in flight go
//! through the worker's ring; bad requests fail with errors naming the range; bytes around
//! every destination stay untouched.

mod common;

use common::*;
use gdio::{Config, DirectIoPolicy, FileHandle, IoEngine};
use rand::Rng;

fn expect(data: &[u8], off: u64, len: usize) -> &[u8] {
    let s = (off as usize).min(data.len());
    &data[s..(s + len).min(data.len())]
}

/// Whether this machine can set up io_uring (else the engine reads with `pread`, which the
/// tests still check byte for byte).
fn uring() -> bool {
    let p = gdio::platform::io_uring();
    if !p.available {
        eprintln!("io_uring unavailable ({}): checking the pread fallback only", p.detail);
    }
    p.available
}

#[test]
fn forced_io_uring_and_pread_read_the_same_bytes() {
    let have = uring();
    for (where_, d) in dirs() {
        let data = random_bytes(71, 2 * 1024 * 1024 + 777);
        let p = write_file(d.path(), "same", &data);
        let f = FileHandle::open(&p).unwrap();
        for engine in [IoEngine::IoUring, IoEngine::Pread, IoEngine::Auto] {
            for direct in [DirectIoPolicy::Off, DirectIoPolicy::On] {
                let config = Config {
                    io_engine: engine,
                    direct_reads_in_flight: 3,
                    ..tiny_config(direct, 3)
                };
                let drv = sim_driver(config, 1);
                let mut r = rng(72);
                for i in 0..12 {
                    let (off, len) = random_range(&mut r, data.len());
                    let want = expect(&data, off, len);
                    let what = format!("{where_} {engine:?} {direct:?} #{i} off {off} len {len}");
                    // Host memory, with canaries on both sides at an unaligned place.
                    let pad = 1 + r.random_range(0..600);
                    let mut host = vec![0xa5u8; len + 2 * pad];
                    let n = drv.read(&f, off, &mut host, pad, len).unwrap();
                    assert_eq!(n, want.len(), "{what}");
                    assert!(host[pad..pad + n] == *want, "{what}: host bytes differ");
                    assert!(host[..pad].iter().all(|&b| b == 0xa5), "{what}: before touched");
                    assert!(host[pad + n..].iter().all(|&b| b == 0xa5), "{what}: after touched");
                    // A simulated GPU.
                    let mut dev = drv.alloc_device(0, len + pad).unwrap();
                    dev.copy_from_host(0, &vec![0x5au8; len + pad]).unwrap();
                    let n = drv.read(&f, off, &mut dev, pad, len).unwrap();
                    assert_eq!(n, want.len(), "{what}");
                    let mut back = vec![0u8; len + pad];
                    dev.copy_to_host(0, &mut back).unwrap();
                    assert!(back[pad..pad + n] == *want, "{what}: device bytes differ");
                    assert!(back[..pad].iter().all(|&b| b == 0x5a), "{what}: before touched");
                    assert!(back[pad + n..].iter().all(|&b| b == 0x5a), "{what}: after touched");
                }
                let c = drv.engine().counters();
                match engine {
                    IoEngine::IoUring if have => assert!(c.io_uring_reads > 0, "ring unused"),
                    IoEngine::Pread => assert_eq!(c.io_uring_reads, 0),
                    _ => {}
                }
                if have {
                    assert_eq!(drv.engine().io_uring_unavailable(), None);
                }
            }
        }
    }
}

#[test]
fn cold_o_direct_reads_go_through_the_ring_several_at_once() {
    let have = uring();
    // The temp dir (ext4 here) has O_DIRECT; tmpfs has not.
    let d = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let data = random_bytes(73, 6 * 1024 * 1024 + 4096 + 13);
    let p = write_file(d.path(), "cold", &data);
    let f = FileHandle::open(&p).unwrap();
    if f.direct_fd().is_none() {
        eprintln!("skipped: {} has no O_DIRECT", d.path().display());
        return;
    }
    for engine in [IoEngine::IoUring, IoEngine::Auto, IoEngine::Pread] {
        let config = Config {
            io_engine: engine,
            threads: 2,
            task_size: 2 << 20,
            bounce_buffer_size: 256 << 10,
            direct_reads_in_flight: 4,
            direct_io: DirectIoPolicy::Auto,
            ..Config::default()
        };
        let drv = sim_driver(config, 1);
        // Unaligned start and an end past EOF: buffered head and tail, direct middle.
        for (off, len) in [(0u64, data.len()), (4097, data.len()), (1 << 20, 3 << 20)] {
            drop_cache_range(&f, 0, 0);
            let want = expect(&data, off, len);
            let mut dev = drv.alloc_device(0, len).unwrap();
            let n = drv.read(&f, off, &mut dev, 0, len).unwrap();
            assert_eq!(n, want.len(), "{engine:?} off {off}");
            let mut back = vec![0u8; n];
            dev.copy_to_host(0, &mut back).unwrap();
            assert!(back == want, "{engine:?} off {off}: bytes differ");
        }
        let c = drv.engine().counters();
        assert!(c.direct_read_bytes > 0, "{engine:?}: the cold reads were not O_DIRECT");
        match engine {
            IoEngine::IoUring if have => assert!(c.io_uring_reads > 0, "the ring was not used"),
            // `auto` keeps `pread` for cold chunks too (measured faster on the H200).
            IoEngine::Auto | IoEngine::Pread => assert_eq!(c.io_uring_reads, 0, "{engine:?}"),
            _ => {}
        }
    }
}

#[test]
fn gathered_groups_read_their_pieces_in_one_submission_when_forced() {
    let have = uring();
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(75, 4 << 20);
    let p = write_file(d.path(), "g", &data);
    let f = std::sync::Arc::new(FileHandle::open(&p).unwrap());
    for engine in [IoEngine::IoUring, IoEngine::Auto, IoEngine::Pread] {
        let config = Config {
            io_engine: engine,
            threads: 1,
            bounce_buffer_size: 256 << 10,
            direct_io: DirectIoPolicy::Off,
            gather_max_pieces: 64,
            gather_max_bytes: 256 << 10,
            gather_piece_size: 64 << 10,
            ..Config::default()
        };
        let drv = sim_driver(config, 1);
        let mut r = rng(76);
        for round in 0..8 {
            let n = 48;
            let plans: Vec<(u64, usize, usize)> = (0..n)
                .map(|i| {
                    let len = r.random_range(1..=8192);
                    let off = r.random_range(0..(data.len() + 100) as u64);
                    (off, len, i * 8192)
                })
                .collect();
            let dev = drv.alloc_device(0, n * 8192).unwrap();
            let mut batch = drv.batch(n).unwrap();
            let entries: Vec<gdio::BatchEntry> = plans
                .iter()
                .enumerate()
                .map(|(i, &(off, len, at))| gdio::BatchEntry {
                    op: gdio::Op::Read,
                    file: f.clone(),
                    file_offset: off.min(data.len() as u64),
                    buf_base: dev.addr(),
                    buf_offset: at as u64,
                    len,
                    cookie: i as u64,
                    memory: None,
                })
                .collect();
            // SAFETY: the device buffer outlives the batch (every event is waited for
            // below); the entries' ranges do not overlap.
            unsafe { batch.submit(&entries) }.unwrap();
            let mut got = 0;
            while got < n {
                let st = batch.get_status(1, n, Some(std::time::Duration::from_secs(60))).unwrap();
                assert!(!st.timed_out);
                got += st.events.len();
                for e in st.events {
                    let (off, len, _) = plans[e.cookie as usize];
                    let want = expect(&data, off.min(data.len() as u64), len).len();
                    match e.state {
                        gdio::BatchState::Complete(k) => assert_eq!(k, want, "round {round}"),
                        s => panic!("round {round} read {}: {s:?}", e.cookie),
                    }
                }
            }
            drop(batch);
            let mut back = vec![0u8; n * 8192];
            dev.copy_to_host(0, &mut back).unwrap();
            for &(off, len, at) in &plans {
                let want = expect(&data, off.min(data.len() as u64), len);
                assert!(back[at..at + want.len()] == *want, "{engine:?} round {round} off {off}");
            }
        }
        let c = drv.engine().counters();
        if engine == IoEngine::IoUring && have && c.gathered_reads > 0 {
            assert!(c.io_uring_reads > 0, "gathered pieces did not use the ring");
        }
        if engine != IoEngine::IoUring {
            // `auto` reads gathered page-cache pieces with pread (no win measured).
            assert_eq!(c.io_uring_reads, 0, "{engine:?}");
        }
    }
}

#[test]
fn bad_requests_fail_with_the_range_named() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(77, 100_000);
    let p = write_file(d.path(), "bad", &data);
    let f = FileHandle::open(&p).unwrap();
    let config = Config { io_engine: IoEngine::IoUring, ..tiny_config(DirectIoPolicy::Off, 2) };
    let drv = sim_driver(config, 1);
    // An offset past the end of the file.
    let mut host = vec![7u8; 64 << 10];
    let e = drv.read(&f, 200_000, &mut host, 0, 64 << 10).unwrap_err();
    assert_eq!(e.errno(), Some(libc::EINVAL), "{e}");
    assert_eq!(e.range(), Some((200_000, 64 << 10)), "{e}");
    assert_eq!(e.path(), Some(p.as_path()));
    assert!(host.iter().all(|&b| b == 7), "a failed read wrote into the buffer");
    // A handle opened for writing only.
    let w = FileHandle::open_with(&p, gdio::OpenOptions::new().write(true)).unwrap();
    let e = drv.read(&w, 0, &mut host, 0, 40_000).unwrap_err();
    assert_eq!(e.errno(), Some(libc::EBADF), "{e}");
    assert_eq!(e.range(), Some((0, 40_000)), "{e}");
    // The same driver still reads correctly afterwards.
    let n = drv.read(&f, 99_000, &mut host, 0, 64 << 10).unwrap();
    assert_eq!(n, 1000);
    assert!(host[..n] == data[99_000..]);
}
