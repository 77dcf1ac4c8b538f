//! The fault-injection harness: every fault through the whole stack (driver, engine, posix
//! loops), into host memory and the simulated GPU, with the data checked afterwards.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::{RngCore, SeedableRng};

use super::{inject, FaultPlan};
use crate::config::{Config, DirectIoPolicy};
use crate::driver::Driver;
use crate::file::{FileHandle, OpenOptions};
use crate::gpu::sim::SimRuntime;
use crate::gpu::DeviceBuffer;

fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    rand::rngs::StdRng::seed_from_u64(seed).fill_bytes(&mut v);
    v
}

fn driver(threads: usize, direct: DirectIoPolicy, task_size: usize) -> Driver {
    driver_with(threads, direct, task_size, crate::config::IoEngine::Auto)
}

fn driver_with(
    threads: usize,
    direct: DirectIoPolicy,
    task_size: usize,
    io_engine: crate::config::IoEngine,
) -> Driver {
    let config = Config {
        io_engine,
        threads,
        write_threads: threads,
        task_size,
        bounce_buffer_size: 16384,
        buffered_chunk_size: 8192,
        direct_io: direct,
        ..Config::default()
    };
    let rt = Arc::new(SimRuntime::new(1, std::time::Duration::from_micros(20)));
    Driver::with_runtime(config, rt).unwrap()
}

fn file(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    p
}

fn rw(p: &Path) -> FileHandle {
    FileHandle::open_with(p, OpenOptions::new().read(true).write(true)).unwrap()
}

/// Reads `len` bytes at `off` into host memory and into the simulated GPU; both results.
fn read_both(
    drv: &Driver,
    f: &FileHandle,
    off: u64,
    len: usize,
) -> [(crate::Result<usize>, Vec<u8>); 2] {
    let mut host = vec![0u8; len];
    let rh = drv.read(f, off, &mut host, 0, len);
    let mut dev = DeviceBuffer::new(drv.runtime(), 0, len).unwrap();
    dev.copy_from_host(0, &vec![0u8; len]).unwrap();
    let rd = drv.read(f, off, &mut dev, 0, len);
    let mut back = vec![0u8; len];
    dev.copy_to_host(0, &mut back).unwrap();
    [(rh, host), (rd, back)]
}

#[test]
fn eio_at_an_offset_names_file_and_range_and_bytes_before_it_are_right() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(1, 300_000);
    let p = file(d.path(), "eio", &data);
    let bad = 123_457u64;
    let inj = inject(&p, FaultPlan { eio_at: Some(bad), ..Default::default() }).unwrap();
    // One worker: tasks run in order, so every byte before the bad one was read.
    let drv = driver(1, DirectIoPolicy::Off, 16384);
    let f = rw(&p);
    for (i, (r, got)) in read_both(&drv, &f, 0, data.len()).into_iter().enumerate() {
        let e = r.unwrap_err();
        assert_eq!(e.errno(), Some(libc::EIO), "{e}");
        assert_eq!(e.path(), Some(p.as_path()));
        let (off, len) = e.range().unwrap();
        assert!(off <= bad && bad < off + len, "range {off}+{len} misses {bad}: {e}");
        // Host memory is read in place: every byte before the bad one arrived. The GPU gets
        // whole bounce chunks, so the tasks before the failing one (16 KiB each) arrived.
        let good = if i == 0 { bad } else { bad / 16384 * 16384 } as usize;
        assert!(got[..good] == data[..good], "bytes before the fault differ");
    }
    assert!(inj.injected() >= 2);
    // Many workers: the error still names the file and a range holding the bad byte.
    let drv = driver(4, DirectIoPolicy::Off, 16384);
    for (r, _) in read_both(&drv, &f, 1000, data.len() - 1000) {
        let e = r.unwrap_err();
        let (off, len) = e.range().unwrap();
        assert!(off <= bad && bad < off + len && e.errno() == Some(libc::EIO), "{e}");
    }
    // Ranges that stop before the bad byte are unaffected.
    for (r, got) in read_both(&drv, &f, 0, bad as usize) {
        assert_eq!(r.unwrap(), bad as usize);
        assert!(got == data[..bad as usize]);
    }
    // A write over the bad byte fails there too, and everything before it reached the file.
    let src = random_bytes(2, 200_000);
    let drv1 = driver(1, DirectIoPolicy::Off, 1 << 20);
    let e = drv1.write(&f, 100_000, &src, 0, src.len()).unwrap_err();
    assert_eq!(e.errno(), Some(libc::EIO), "{e}");
    drop(inj);
    let now = std::fs::read(&p).unwrap();
    assert!(now[..100_000] == data[..100_000]);
    assert!(now[100_000..bad as usize] == src[..(bad - 100_000) as usize]);
    assert!(now[bad as usize..] == data[bad as usize..], "bytes past the fault were written");
}

#[test]
fn eintr_storms_and_short_transfers_lose_nothing() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(3, 250_001);
    for (i, plan) in [
        FaultPlan { eintr_burst: 3, ..Default::default() },
        FaultPlan { short_max: Some(1000), ..Default::default() },
        FaultPlan { short_max: Some(1), ..Default::default() },
        FaultPlan { eintr_burst: 2, short_max: Some(4097), ..Default::default() },
    ]
    .into_iter()
    .enumerate()
    {
        let small = plan.short_max == Some(1);
        let data = if small { &data[..20_000] } else { &data[..] };
        let p = file(d.path(), &format!("storm{i}"), data);
        let inj = inject(&p, plan.clone()).unwrap();
        let drv = driver(3, DirectIoPolicy::Off, 16384);
        let f = rw(&p);
        for (r, got) in read_both(&drv, &f, 7, data.len() - 7) {
            assert_eq!(r.unwrap(), data.len() - 7, "{plan:?}");
            assert!(got == data[7..], "{plan:?}: bytes differ");
        }
        // Writes from host memory and from the GPU, read back without faults.
        let src = random_bytes(4 + i as u64, data.len());
        drv.write(&f, 0, &src[..src.len() / 2], 0, src.len() / 2).unwrap();
        let mut dev = DeviceBuffer::new(drv.runtime(), 0, src.len()).unwrap();
        dev.copy_from_host(0, &src).unwrap();
        let half = src.len() / 2;
        drv.write(&f, half as u64, &dev, half, src.len() - half).unwrap();
        assert!(inj.injected() > 0, "{plan:?} injected nothing");
        drop(inj);
        assert!(std::fs::read(&p).unwrap() == src, "{plan:?}: the file differs after writes");
    }
}

#[test]
fn enospc_after_n_bytes_leaves_exactly_what_the_error_says() {
    let d = tempfile::tempdir().unwrap();
    let old = random_bytes(5, 100_000);
    let src = random_bytes(6, 100_000);
    for (i, limit) in [0u64, 1, 4096, 65_537].into_iter().enumerate() {
        let p = file(d.path(), &format!("full{i}"), &old);
        let inj =
            inject(&p, FaultPlan { enospc_after: Some(limit), ..Default::default() }).unwrap();
        // One task, so the request is one piece: what reached the file is `limit` bytes.
        let drv = driver(1, DirectIoPolicy::Off, 1 << 20);
        let f = rw(&p);
        let e = drv.write(&f, 0, &src, 0, src.len()).unwrap_err();
        assert_eq!(e.errno(), Some(libc::ENOSPC), "{e}");
        assert!(e.to_string().contains(&format!("after {limit} of")), "{e}");
        assert_eq!(inj.written(), limit);
        drop(inj);
        let now = std::fs::read(&p).unwrap();
        let n = limit as usize;
        assert!(now[..n] == src[..n], "the first {n} bytes are not the new ones");
        assert!(now[n..] == old[n..], "bytes past {n} changed");
        // The cached size did not move past what is in the file.
        assert_eq!(f.size(), old.len() as u64);
    }
}

#[test]
fn einval_from_o_direct_falls_back_to_buffered_with_the_data_intact() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(7, 1 << 20);
    let p = file(d.path(), "direct", &data);
    let f = rw(&p);
    if f.direct_fd().is_none() {
        eprintln!("skipped: this filesystem refuses O_DIRECT at open already");
        return;
    }
    let inj = inject(&p, FaultPlan { einval_direct: true, ..Default::default() }).unwrap();
    let drv = driver(2, DirectIoPolicy::On, 1 << 18);
    let mut host = crate::gpu::PinnedBuffer::new(drv.runtime(), 0, data.len()).unwrap();
    let n = drv.read(&f, 0, &mut host, 0, data.len()).unwrap();
    assert_eq!(n, data.len());
    assert!(host.as_slice()[..n] == data[..]);
    for (r, got) in read_both(&drv, &f, 4096, data.len() - 4096) {
        assert_eq!(r.unwrap(), data.len() - 4096);
        assert!(got == data[4096..]);
    }
    let src = random_bytes(8, data.len());
    let mut dev = DeviceBuffer::new(drv.runtime(), 0, src.len()).unwrap();
    dev.copy_from_host(0, &src).unwrap();
    drv.write(&f, 0, &dev, 0, src.len()).unwrap();
    assert!(inj.injected() > 0, "O_DIRECT was never tried");
    assert_eq!(drv.engine().counters().direct_read_bytes, 0);
    assert_eq!(drv.engine().counters().direct_write_bytes, 0);
    drop(inj);
    assert!(std::fs::read(&p).unwrap() == src);
}

#[test]
fn faults_reach_io_uring_reads_as_they_reach_pread() {
    use crate::config::IoEngine;
    let uring = crate::platform::io_uring().available;
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(9, 300_000);
    for engine in [IoEngine::IoUring, IoEngine::Pread] {
        // EIO: the error names the file and a range holding the bad byte; bytes before it
        // arrived (host memory, one worker: tasks in order).
        let p = file(d.path(), &format!("eio-{engine:?}"), &data);
        let f = rw(&p);
        let bad = 123_457u64;
        let inj = inject(&p, FaultPlan { eio_at: Some(bad), ..Default::default() }).unwrap();
        let drv = driver_with(1, DirectIoPolicy::Off, 16384, engine);
        for (i, (r, got)) in read_both(&drv, &f, 0, data.len()).into_iter().enumerate() {
            let e = r.unwrap_err();
            assert_eq!(e.errno(), Some(libc::EIO), "{engine:?}: {e}");
            assert_eq!(e.path(), Some(p.as_path()));
            let (off, len) = e.range().unwrap();
            assert!(off <= bad && bad < off + len, "{engine:?}: {off}+{len} misses {bad}: {e}");
            let good = if i == 0 { bad } else { bad / 16384 * 16384 } as usize;
            assert!(got[..good] == data[..good], "{engine:?}: bytes before the fault differ");
        }
        drop(inj);
        // EINTR storms and short reads lose nothing, buffered and O_DIRECT.
        let plan = FaultPlan { eintr_burst: 2, short_max: Some(4097), ..Default::default() };
        let inj = inject(&p, plan).unwrap();
        for direct in [DirectIoPolicy::Off, DirectIoPolicy::On] {
            let drv = driver_with(3, direct, 16384, engine);
            for (r, got) in read_both(&drv, &f, 7, data.len() - 7) {
                assert_eq!(r.unwrap(), data.len() - 7, "{engine:?} {direct:?}");
                assert!(got == data[7..], "{engine:?} {direct:?}: bytes differ");
            }
            let used = drv.engine().counters().io_uring_reads;
            match engine {
                IoEngine::IoUring if uring => assert!(used > 0, "the ring was not used"),
                _ => assert_eq!(used, 0),
            }
        }
        assert!(inj.injected() > 0);
        drop(inj);
        // EINVAL from O_DIRECT: read buffered instead, data intact.
        if f.direct_fd().is_some() {
            let plan = FaultPlan { einval_direct: true, ..Default::default() };
            let inj = inject(&p, plan).unwrap();
            let drv = driver_with(2, DirectIoPolicy::On, 1 << 16, engine);
            for (r, got) in read_both(&drv, &f, 4096, data.len() - 4096) {
                assert_eq!(r.unwrap(), data.len() - 4096, "{engine:?}");
                assert!(got == data[4096..], "{engine:?}: bytes differ");
            }
            assert!(inj.injected() > 0, "O_DIRECT was never tried");
            assert_eq!(drv.engine().counters().direct_read_bytes, 0);
        }
    }
}

/// One worker, 1 MiB tasks, chunks and bounce buffers, nothing run inline, buffered reads, no
/// spinning: which tasks finish when is then up to the completion mechanisms under test.
fn one_worker_1mib_tasks() -> Config {
    Config {
        threads: 1,
        task_size: 1 << 20,
        bounce_buffer_size: 1 << 20,
        buffered_chunk_size: 1 << 20,
        inline_max_bytes: 0,
        direct_io: DirectIoPolicy::Off,
        completion_spin_us: 0,
        ..Config::default()
    }
}

/// A driver on one simulated GPU whose copies take `copy`, its workers' lanes made.
fn sim_driver_warm(config: Config, copy: std::time::Duration) -> Driver {
    sim_driver_warm_on(config, Arc::new(SimRuntime::new(1, copy)))
}

fn sim_driver_warm_on(config: Config, rt: Arc<SimRuntime>) -> Driver {
    let drv = Driver::with_runtime(config, rt).unwrap();
    drv.prepare_gpu(0).unwrap();
    drv
}

/// One worker, every read of file b sleeping `SLOW` (600 ms). The worker is busy in Z (a read of
/// b) while A (a read of a) and B (another read of b) queue behind it; it then reads A, queues
/// A's copy (the simulated copy takes 30 ms) and starts B. With completion callbacks, or with
/// the completion watcher, A completes when its copy lands (about 630 ms in); with neither, only
/// when the worker is back from B, which cannot be before 2 × `SLOW` (1200 ms) in: the bound
/// between the two is that sleep, not a guess at how fast the rest runs (under valgrind A's
/// fast path has taken 660 ms of a 400 ms sleep).
#[test]
fn a_request_completes_when_its_copy_lands_not_when_its_worker_is_free() {
    use std::time::{Duration, Instant};
    let d = tempfile::tempdir().unwrap();
    let a_data = random_bytes(90, 1 << 20);
    let b_data = random_bytes(91, 1 << 20);
    let fa = Arc::new(FileHandle::open(file(d.path(), "a", &a_data)).unwrap());
    let pb = file(d.path(), "b", &b_data);
    let fb = Arc::new(FileHandle::open(&pb).unwrap());
    const SLOW: Duration = Duration::from_millis(600);
    // Z's and B's reads, one after the other on the one worker.
    let b_read_done = 2 * SLOW;
    // The watcher told by the markers recorded after the copies (on the shared copy stream),
    // and by the progress word (asked so, or on the worker's own stream: `own_stream_max_bytes`
    // covers the 1 MiB tasks unless it is 0).
    for (callbacks, watcher, events, shared) in [
        (true, false, true, true),
        (false, true, true, true),
        (false, true, false, true),
        (false, true, true, false),
        (false, false, true, true),
    ] {
        let config = Config {
            completion_callbacks: callbacks,
            completion_watcher: watcher,
            completion_watch_events: events,
            own_stream_max_bytes: if shared { 0 } else { 1 << 20 },
            ..one_worker_1mib_tasks()
        };
        let rt = Arc::new(SimRuntime::new(1, Duration::from_millis(30)));
        let drv = sim_driver_warm_on(config, rt.clone());
        let plan = FaultPlan { read_delay: Some(SLOW), ..FaultPlan::default() };
        let _slow = inject(&pb, plan).unwrap();
        let dev = || drv.alloc_device(0, 1 << 20).unwrap();
        let t0 = Instant::now();
        let hz = drv.submit_read(&fb, 0, dev(), 0, 1 << 20).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let ha = drv.submit_read(&fa, 0, dev(), 0, 1 << 20).unwrap();
        let hb = drv.submit_read(&fb, 0, dev(), 0, 1 << 20).unwrap();
        let (n, buf) = ha.wait();
        let a_took = t0.elapsed();
        assert_eq!(n.unwrap(), 1 << 20);
        assert_eq!(buf.to_vec().unwrap(), a_data);
        for h in [hz, hb] {
            let (n, buf) = h.wait();
            assert_eq!(n.unwrap(), 1 << 20);
            assert_eq!(buf.to_vec().unwrap(), b_data);
        }
        let by_watcher = drv.engine().counters().watcher_finished;
        assert_eq!(by_watcher > 0, watcher, "the watcher (events {events}) finished {by_watcher}");
        // Told by the markers, the shared stream writes no progress word after the copies.
        let words = rt.words_written();
        let by_word = watcher && !(events && shared);
        assert_eq!(words > 0, by_word, "{words} words (events {events}, shared {shared})");
        if callbacks || watcher {
            assert!(
                a_took < b_read_done,
                "A took {a_took:?}: it waited for B's read (callbacks {callbacks}, watcher \
                 {watcher}, events {events}, shared {shared})"
            );
        } else {
            // The gap the callbacks close (and proof that this test tells the two apart).
            assert!(a_took >= b_read_done, "A took {a_took:?}");
        }
    }
}

/// The watcher finishes only the tasks of requests of one or two tasks (and of split reads):
/// a read of three or more is left to its workers, while they read on (one worker, each read
/// of the file slow).
#[test]
fn the_completion_watcher_leaves_requests_of_many_tasks_to_their_workers() {
    use std::time::Duration;
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(92, 4 << 20);
    let p = file(d.path(), "many", &data);
    let f = Arc::new(FileHandle::open(&p).unwrap());
    let config = Config { split_min_bytes: 0, completion_watcher: true, ..one_worker_1mib_tasks() };
    let drv = sim_driver_warm(config, Duration::from_millis(20));
    let plan = FaultPlan { read_delay: Some(Duration::from_millis(50)), ..FaultPlan::default() };
    let _slow = inject(&p, plan).unwrap();
    for (len, watched) in [(3 << 20, false), (4 << 20, false), (2 << 20, true)] {
        let before = drv.engine().counters().watcher_finished;
        let h = drv.submit_read(&f, 0, drv.alloc_device(0, len).unwrap(), 0, len).unwrap();
        let (n, buf) = h.wait();
        assert_eq!(n.unwrap(), len);
        assert!(buf.to_vec().unwrap() == data[..len], "{len} bytes differ");
        let by_watcher = drv.engine().counters().watcher_finished - before;
        // A two-task read: its first task's copy lands while the worker reads the second.
        assert_eq!(by_watcher > 0, watched, "{len} bytes: the watcher finished {by_watcher}");
    }
}

#[test]
fn eio_inside_a_split_read_fails_it_in_any_piece_and_the_next_read_is_right() {
    // One 1 MiB task, split into 4 pieces of 256 KiB over idle workers: the bad byte lies in
    // each piece in turn, and whichever worker runs that piece meets it; pieces in buffers of
    // their readers (64 KiB buffers: the task does not fit one) and in one buffer, with its
    // first half copied early (`split_early_copy`: a bad byte in the second half fails the
    // read after that copy is queued), and with its first three quarters copied as each is
    // read (`split_early_copy_parts` 4).
    for (one_buffer, parts) in [(false, 0), (true, 0), (true, 2), (true, 4)] {
        eio_inside_a_split_read(one_buffer, parts);
    }
}

/// `parts`: the early copies' runs (`split_early_copy_parts`); 0: no early copy.
fn eio_inside_a_split_read(one_buffer: bool, parts: usize) {
    let early = parts > 0;
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(7, 3 << 20);
    let p = file(d.path(), "split", &data);
    let config = Config {
        threads: 4,
        task_size: 1 << 20,
        bounce_buffer_size: if one_buffer { 1 << 20 } else { 64 << 10 },
        split_min_bytes: 256 << 10,
        split_into_one_buffer: one_buffer,
        split_early_copy: early,
        split_early_copy_min_bytes: 0,
        split_early_copy_parts: parts.max(2),
        direct_io: DirectIoPolicy::Off,
        ..Config::default()
    };
    let rt = Arc::new(SimRuntime::new(1, std::time::Duration::from_micros(20)));
    let drv = Driver::with_runtime(config, rt).unwrap();
    drv.prepare_gpu(0).unwrap();
    let f = rw(&p);
    let base = 1u64 << 20;
    // A read is split only over workers idle when it comes (under memcheck the workers of the
    // previous read may still be finishing): wait for all four.
    let settle = || drv.engine().wait_idle(4);
    for piece in 0..4u64 {
        let bad = base + piece * (256 << 10) + 4097;
        let inj = inject(&p, FaultPlan { eio_at: Some(bad), ..Default::default() }).unwrap();
        let mut dev = DeviceBuffer::new(drv.runtime(), 0, 1 << 20).unwrap();
        settle();
        dev.copy_from_host(0, &vec![0x3C; 1 << 20]).unwrap();
        let e = drv.read(&f, base, &mut dev, 0, 1 << 20).unwrap_err();
        assert_eq!(e.errno(), Some(libc::EIO), "{e}");
        // Whatever landed before the error is the file's; nothing else was touched.
        let mut seen = vec![0u8; 1 << 20];
        dev.copy_to_host(0, &mut seen).unwrap();
        for (i, (&b, &want)) in seen.iter().zip(&data[base as usize..]).enumerate() {
            assert!(b == want || b == 0x3C, "one buffer {one_buffer}: byte {i} is neither");
        }
        assert_eq!(e.path(), Some(p.as_path()));
        let (off, len) = e.range().unwrap();
        assert!(off <= bad && bad < off + len, "range {off}+{len} misses {bad}: {e}");
        assert!(inj.injected() >= 1);
        drop(inj);
        // The lanes that met the error are whole again: the same read now lands exactly.
        settle();
        let n = drv.read(&f, base, &mut dev, 0, 1 << 20).unwrap();
        assert_eq!(n, 1 << 20);
        let mut back = vec![0u8; 1 << 20];
        dev.copy_to_host(0, &mut back).unwrap();
        assert!(back == data[base as usize..][..1 << 20], "bytes differ after piece {piece}");
    }
    let c = drv.engine().counters();
    assert!(c.split_reads >= 8, "{c:?}");
    if !one_buffer {
        assert_eq!(c.split_pieces_helped, 0, "pieces in their readers' buffers: {c:?}");
    }
    // Early: the four good reads, and those whose bad byte lies past the first run (a bad
    // byte in the first run leaves nothing to copy early): halves, the two in the second
    // half; quarters, the three past the first quarter.
    let want = match parts {
        0 => 0,
        2 => 6,
        _ => 7,
    };
    assert_eq!(c.split_early_copies, want, "{parts} parts: {c:?}");
}

/// `split_into_one_buffer`: the pieces of a split read go into the bounce buffer of the worker
/// that claimed the task, read by it and by the free workers the job was queued for (every
/// read sleeps 2 ms, so the others take pieces while the first reads), and the task lands in
/// one copy (with `split_early_copy`, two: the first half as soon as it is read). Random
/// unaligned offsets and lengths, the end of the file included, buffered and `O_DIRECT`, one
/// piece per worker or three; guard bytes around every destination stay untouched; the waits
/// of the split's workers on each other are timed.
#[test]
fn split_reads_into_one_buffer_land_exactly_with_pieces_read_by_other_workers() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(23, (5 << 20) + 1234);
    let p = file(d.path(), "one-buffer", &data);
    let slow =
        FaultPlan { read_delay: Some(std::time::Duration::from_millis(2)), ..Default::default() };
    let _armed = inject(&p, slow).unwrap();
    let mut r = rand::rngs::StdRng::seed_from_u64(29);
    // Early copies (in `parts` runs) for reads of at least `early_min` bytes (0: every one).
    for (direct, one_buffer, per, early, early_min, parts) in [
        (DirectIoPolicy::Off, true, 1, false, 0, 2),
        (DirectIoPolicy::On, true, 1, false, 0, 2),
        (DirectIoPolicy::Off, true, 3, false, 0, 2),
        (DirectIoPolicy::On, true, 3, false, 0, 2),
        (DirectIoPolicy::Off, false, 1, false, 0, 2),
        (DirectIoPolicy::Off, true, 3, true, 0, 2),
        (DirectIoPolicy::On, true, 3, true, 0, 2),
        (DirectIoPolicy::Off, false, 1, true, 0, 2),
        (DirectIoPolicy::Off, true, 3, true, 640 << 10, 2),
        (DirectIoPolicy::On, true, 1, true, 640 << 10, 2),
        (DirectIoPolicy::Off, true, 3, true, 0, 4),
        (DirectIoPolicy::On, true, 3, true, 0, 4),
        // More runs than pieces: a copy per piece.
        (DirectIoPolicy::Off, true, 1, true, 0, 16),
    ] {
        let config = Config {
            threads: 4,
            task_size: 1 << 20,
            bounce_buffer_size: (1 << 20) + 4096,
            split_min_bytes: 128 << 10,
            split_into_one_buffer: one_buffer,
            split_pieces_per_worker: per,
            split_early_copy: early,
            split_early_copy_min_bytes: early_min,
            split_early_copy_parts: parts,
            direct_io: direct,
            ..Config::default()
        };
        let drv = sim_driver_warm(config, std::time::Duration::from_micros(20));
        let f = rw(&p);
        // Reads long enough for an early copy and not at the end of the file, and how many
        // of them copied early.
        let (mut long, mut long_early) = (0, 0);
        for i in 0..12 {
            let len = rand::Rng::random_range(&mut r, (256 << 10) + 1..=1 << 20);
            // The last reads run past the end of the file.
            let off = if i >= 10 {
                data.len() as u64 - rand::Rng::random_range(&mut r, 1..len as u64)
            } else {
                rand::Rng::random_range(&mut r, 0..(data.len() - len) as u64)
            };
            drv.engine().wait_idle(4);
            let mut dev = DeviceBuffer::new(drv.runtime(), 0, len + 128).unwrap();
            dev.copy_from_host(0, &vec![0xC3; len + 128]).unwrap();
            let before = drv.engine().counters().split_early_copies;
            let n = drv.read(&f, off, &mut dev, 64, len).unwrap();
            let copied_early = drv.engine().counters().split_early_copies - before;
            if len < early_min as usize {
                assert_eq!(copied_early, 0, "{direct:?}: a {len}-byte read copied early");
            } else if early && one_buffer && i < 10 {
                long += 1;
                long_early += copied_early;
            }
            let want = &data[off as usize..(off as usize + len).min(data.len())];
            assert_eq!(n, want.len(), "{direct:?} {one_buffer}: {off}+{len}");
            let mut back = vec![0u8; len + 128];
            dev.copy_to_host(0, &mut back).unwrap();
            assert!(back[64..64 + n] == *want, "{direct:?} {one_buffer}: bytes differ {off}+{len}");
            assert!(back[..64].iter().chain(&back[64 + n..]).all(|&b| b == 0xC3), "guards");
        }
        let c = drv.engine().counters();
        assert!(c.split_reads >= 10, "{direct:?} {one_buffer}: {c:?}");
        // Every split read's claimer waits for the pieces others took (timed even when they
        // are done already); pieces in buffers of their own wait on nobody.
        let waited = c.worker_time.split_wait_ns;
        if one_buffer {
            assert!(c.split_pieces_helped >= 10, "{direct:?}: others read no pieces: {c:?}");
            assert!(waited > 0, "{direct:?}: no split wait timed: {c:?}");
        } else {
            assert_eq!((c.split_pieces_helped, waited), (0, 0), "{c:?}");
        }
        // Each read here is alone in flight: with the key on, the reads into one buffer copy
        // their first half early (a head piece at the end of the file may come short, and
        // then the read keeps one copy); pieces with copies of their own never do.
        if early && one_buffer && early_min == 0 {
            assert!(c.split_early_copies >= 8, "{direct:?}: {c:?}");
        } else if early && one_buffer {
            // Reads below the floor never copied early (asserted per read above); those
            // above it did, but for a read that found a worker still busy.
            assert!((3..10).contains(&long), "{long} of 10 reads above {early_min}: reseed");
            assert!(long_early + 1 >= long, "{long_early} of {long} long reads early: {c:?}");
        } else {
            assert_eq!(c.split_early_copies, 0, "{direct:?} {one_buffer}: {c:?}");
        }
    }
}

/// Arms a plan that makes every read of `path` sleep `delay` first (a slow disk).
fn slow_reads(path: &Path, delay: std::time::Duration) -> super::Injection {
    inject(path, FaultPlan { read_delay: Some(delay), ..FaultPlan::default() }).unwrap()
}

/// Reads `want.len()` bytes of `f` at `off` into new memory of the simulated GPU and checks
/// that they are `want`.
fn read_to_gpu_checked(drv: &Driver, f: &FileHandle, off: u64, want: &[u8]) {
    let mut dev = drv.alloc_device(0, want.len()).unwrap();
    assert_eq!(drv.read(f, off, &mut dev, 0, want.len()).unwrap(), want.len());
    assert_eq!(dev.to_vec().unwrap(), want, "bytes at {off}");
}

/// Waits (up to 30 s) until a worker of `drv` has started a request since `started` requests
/// had been, while the read on `a` has not ended: a read of a slow file is then open.
fn until_a_worker_starts<T>(drv: &Driver, started: u64, a: &std::thread::ScopedJoinHandle<'_, T>) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while drv.engine().counters().worker_time.requests_started == started {
        assert!(!a.is_finished(), "A's read ended before a worker started it");
        assert!(std::time::Instant::now() < deadline, "no worker started A's read in 30 s");
        std::thread::yield_now();
    }
}

/// `lone_caller_polls`: a synchronous read alone in flight has its caller poll until it is
/// done, but a read opened beside another stops polling and sleeps, and so does the other,
/// unless `polling_callers_max` lets two poll and the cores hold them. One worker; file a's
/// reads sleep 600 ms (a slow disk), so A's read is open while B reads file b (B queues behind
/// it). With `polling_callers_max` 1 both callers sleep and are woken; with 2, on four cores or
/// more (the worker, the watcher, two callers), both poll to the end. Alone again, B polls.
/// The bytes land either way.
#[test]
fn callers_beside_other_open_reads_sleep_unless_the_cores_hold_them_and_alone_they_poll() {
    use std::time::Duration;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let d = tempfile::tempdir().unwrap();
    let a_data = random_bytes(92, 1 << 20);
    let b_data = random_bytes(93, 3 << 20);
    let pa = file(d.path(), "a", &a_data);
    let fa = FileHandle::open(&pa).unwrap();
    let fb = FileHandle::open(file(d.path(), "b", &b_data)).unwrap();
    for max in [1, 2] {
        let config = Config {
            lone_caller_polls: true,
            polling_callers_max: max,
            // Longer than A's read: A would poll to its end if no other read opened.
            completion_spin_us: 1_000_000,
            ..one_worker_1mib_tasks()
        };
        let drv = sim_driver_warm(config, Duration::from_millis(1));
        let slow = slow_reads(&pa, Duration::from_millis(600));
        let read = |f: &FileHandle, off: u64, want: &[u8]| read_to_gpu_checked(&drv, f, off, want);
        let before = drv.engine().counters().worker_time;
        std::thread::scope(|s| {
            let a = s.spawn(|| read(&fa, 0, &a_data));
            // Once the worker has started A's read, it is open for the 600 ms of its pread.
            until_a_worker_starts(&drv, before.requests_started, &a);
            read(&fb, 4096, &b_data[4096..(1 << 20) + 4096]);
        });
        let crowd = drv.engine().counters().worker_time.since(&before);
        assert_eq!(crowd.requests_started, 2, "{crowd:?}");
        let both_poll = max == 2 && cores >= 4;
        let want = if both_poll { (2, 0) } else { (0, 2) };
        assert_eq!((crowd.callers_polled, crowd.callers_woken), want, "max {max}: {crowd:?}");
        drop(slow);
        let before = drv.engine().counters().worker_time;
        read(&fb, 777, &b_data[777..777 + (1 << 20)]);
        let alone = drv.engine().counters().worker_time.since(&before);
        // Polling needs a core beside the one worker.
        let polled = u64::from(cores > 1);
        assert_eq!((alone.callers_polled, alone.callers_woken), (polled, 1 - polled), "{alone:?}");
    }
}

/// `split_early_copy_max_others`: a split read beside another open read into GPU memory copies
/// its first half early only when the key allows that many others; alone it copies early
/// either way. Four workers; every read of file a sleeps 3 s (B's split read, memcheck
/// included, is done long before), so A (32 KiB of a: too short to split even alone, below
/// the early floor) holds one worker and counts as open while B (1 MiB of b, one task) is
/// split over the other three. The bytes land either way.
#[test]
fn a_split_read_beside_others_copies_early_only_as_the_key_allows() {
    use std::time::Duration;
    let d = tempfile::tempdir().unwrap();
    let a_data = random_bytes(94, 1 << 20);
    let b_data = random_bytes(95, 4 << 20);
    let pa = file(d.path(), "a", &a_data);
    let fa = FileHandle::open(&pa).unwrap();
    let fb = FileHandle::open(file(d.path(), "b", &b_data)).unwrap();
    for max_others in [0, 1] {
        let config = Config {
            threads: 4,
            bounce_buffer_size: 1 << 20,
            split_min_bytes: 128 << 10,
            split_early_copy_min_bytes: 1 << 20,
            split_early_copy_max_others: max_others,
            ..one_worker_1mib_tasks()
        };
        let drv = sim_driver_warm(config, Duration::from_millis(1));
        let slow = slow_reads(&pa, Duration::from_secs(3));
        let read = |f: &FileHandle, off: u64, want: &[u8]| read_to_gpu_checked(&drv, f, off, want);
        let early = || drv.engine().counters().split_early_copies;
        let started = drv.engine().counters().worker_time.requests_started;
        let (mut beside, mut split) = (0, 0);
        std::thread::scope(|s| {
            let a = s.spawn(|| read(&fa, 4096, &a_data[4096..4096 + (32 << 10)]));
            // Once a worker has started A's read, it is open for the 3 s of its pread.
            until_a_worker_starts(&drv, started, &a);
            let (e, sp) = (early(), drv.engine().counters().split_reads);
            // One whole task (tasks end on multiples of `task_size` in the file).
            read(&fb, 1 << 20, &b_data[1 << 20..2 << 20]);
            assert!(!a.is_finished(), "A ended before B: B was not beside it");
            (beside, split) = (early() - e, drv.engine().counters().split_reads - sp);
        });
        assert_eq!(split, 1, "max_others {max_others}: B was not split beside A");
        assert_eq!(beside, u64::from(max_others >= 1), "max_others {max_others}");
        drop(slow);
        // Alone, B copies early whatever the key: once every worker waits for work again (a
        // slow machine, ThreadSanitizer's, can still hold B's last helpers, and a read split
        // over fewer than two free workers is not split at all).
        drv.engine().wait_idle(4);
        let e = early();
        read(&fb, 3 << 20, &b_data[3 << 20..]);
        assert_eq!(early() - e, 1, "max_others {max_others}: alone, no early copy");
    }
}
