//! Gathered small reads into GPU memory (simulated GPUs, whose copies land late): many small
//! requests of random sizes at random offsets, queued together, share bounce buffers and
//! batched copies; every byte of every destination is checked (and the bytes around them are
//! untouched), completions are waited for out of order, and a piece that fails to read fails
//! only its own request.

mod common;

use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use gdio::gpu::sim::SimRuntime;
use gdio::{BatchEntry, BatchState, Config, DirectIoPolicy, Driver, FileHandle, Op};
use rand::Rng;

fn gather_config(threads: usize, max_pieces: usize) -> Config {
    Config {
        threads,
        bounce_buffer_size: 256 << 10,
        bounce_buffers_per_thread: 2,
        direct_io: DirectIoPolicy::Off,
        gather_max_pieces: max_pieces,
        gather_max_bytes: 256 << 10,
        gather_piece_size: 64 << 10,
        // Small writes are gathered on every filesystem (the tests of that rule set it).
        gather_write_disk_min_bytes: 0,
        ..Config::default()
    }
}

fn driver(config: Config, delay_us: u64) -> Driver {
    Driver::with_runtime(config, Arc::new(SimRuntime::new(1, Duration::from_micros(delay_us))))
        .unwrap()
}

/// The bytes of simulated device memory right now (a simulated GPU's memory is host memory),
/// without the copy that `DeviceBuffer::copy_to_host` queues behind the same delay as the
/// engine's: a request reported done before its copy landed reads wrong bytes here.
fn sim_bytes_now(addr: u64, len: usize) -> Vec<u8> {
    // SAFETY: `addr..addr+len` is a live simulated device allocation (host memory) of the
    // caller's, with no copy into it in flight once its I/O is reported done.
    unsafe { std::slice::from_raw_parts(addr as *const u8, len) }.to_vec()
}

/// One planned read: file index, file offset, place in the device buffer, length.
#[derive(Clone, Copy, Debug)]
struct Plan {
    file: usize,
    off: u64,
    at: u64,
    len: usize,
}

/// `n` reads of 1 byte–64 KiB at random offsets of files of `size` bytes, each at its own place
/// of one device buffer with a random gap before it; returns the plans and the buffer size.
fn plans(seed: u64, n: usize, files: usize, size: usize) -> (Vec<Plan>, u64) {
    let mut r = rng(seed);
    let mut at = 0u64;
    let mut v = Vec::new();
    for i in 0..n {
        let len = if i % 3 == 0 { 4096 } else { r.random_range(1..=64 << 10) };
        let off = r.random_range(0..(size - len) as u64);
        at += r.random_range(0..300);
        v.push(Plan { file: i % files, off, at, len });
        at += len as u64;
    }
    (v, at + 1)
}

/// Submits every plan (as `op`: a read into, or a write from, its device range) in one batch
/// and waits for all events; returns, per event, the cookie, the state and the bytes of its
/// device range taken the moment the event was reported.
fn run_batch(
    drv: &Driver,
    files: &[Arc<FileHandle>],
    plans: &[Plan],
    base: u64,
    op: Op,
) -> Vec<(u64, BatchState, Vec<u8>)> {
    let mut batch = drv.batch(plans.len()).unwrap();
    let entries: Vec<BatchEntry> = plans
        .iter()
        .enumerate()
        .map(|(i, p)| BatchEntry {
            op,
            file: files[p.file].clone(),
            file_offset: p.off,
            buf_base: base,
            buf_offset: p.at,
            len: p.len,
            cookie: i as u64,
            memory: None,
        })
        .collect();
    // SAFETY: the device buffer outlives the batch (the caller waits for every event below,
    // then drops the batch); the entries' device ranges do not overlap.
    unsafe { batch.submit(&entries) }.unwrap();
    let mut events = Vec::new();
    while events.len() < plans.len() {
        let st = batch.get_status(1, plans.len(), Some(Duration::from_secs(120))).unwrap();
        assert!(!st.timed_out, "batch timed out");
        for e in st.events {
            let p = plans[e.cookie as usize];
            let now = sim_bytes_now(base + p.at, p.len);
            events.push((e.cookie, e.state, now));
        }
    }
    events
}

#[test]
fn gathered_reads_of_many_requests_land_exactly() {
    for (where_, d) in dirs() {
        let size = 3 << 20;
        let datas: Vec<Vec<u8>> = (0..3).map(|i| random_bytes(70 + i, size)).collect();
        let files: Vec<Arc<FileHandle>> = datas
            .iter()
            .enumerate()
            .map(|(i, data)| {
                Arc::new(FileHandle::open(write_file(d.path(), &format!("f{i}"), data)).unwrap())
            })
            .collect();
        // With `gather_scatter` a group goes as one range and its pieces' places in it (the
        // simulated GPU queues a copy per piece from those places).
        for (threads, max_pieces, scatter) in
            [(2, 64, false), (2, 64, true), (1, 7, true), (3, 0, false)]
        {
            let config = Config { gather_scatter: scatter, ..gather_config(threads, max_pieces) };
            let drv = driver(config, 1000);
            let (plans, total) = plans(71 + threads as u64, 400, files.len(), size);
            let mut dev = drv.alloc_device(0, total as usize).unwrap();
            let poison = random_bytes(72, total as usize);
            dev.copy_from_host(0, &poison).unwrap();
            let events = run_batch(&drv, &files, &plans, dev.addr(), Op::Read);
            let mut want = poison.clone();
            for (cookie, state, at_event) in &events {
                let p = plans[*cookie as usize];
                match state {
                    BatchState::Complete(n) => assert_eq!(*n, p.len, "{where_} {p:?}"),
                    s => panic!("{where_} {p:?}: {s:?}"),
                }
                let src = &datas[p.file][p.off as usize..p.off as usize + p.len];
                assert!(at_event == src, "{where_} {p:?}: reported done before its bytes landed");
                want[p.at as usize..p.at as usize + p.len].copy_from_slice(src);
            }
            let back = sim_bytes_now(dev.addr(), total as usize);
            assert!(
                back == want,
                "{where_} threads {threads} gather {max_pieces} scatter {scatter}: bytes differ"
            );
            let gathered = drv.engine().counters().gathered_reads;
            // A simulated GPU has no scatter kernel: its groups always go as copies.
            assert_eq!(drv.engine().counters().scattered_reads, 0, "{where_}");
            if max_pieces == 0 {
                assert_eq!(gathered, 0, "gathering is off");
            } else {
                assert!(gathered > 0, "{where_} threads {threads}: nothing was gathered");
            }
        }
    }
}

#[test]
fn waiting_out_of_order_on_gathered_async_reads() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(80, 1 << 20);
    let f = Arc::new(FileHandle::open(write_file(d.path(), "src", &data)).unwrap());
    let drv = driver(gather_config(2, 64), 1000);
    let mut r = rng(81);
    let mut handles = Vec::new();
    for _ in 0..200 {
        let len = r.random_range(1..=16 << 10);
        let off = r.random_range(0..(data.len() - len) as u64);
        let buf = drv.alloc_device(0, len).unwrap();
        handles.push((off, len, drv.submit_read(&f, off, buf, 0, len).unwrap()));
    }
    // Every other handle, from the back, then the rest: the order of waiting is irrelevant.
    let (odd, even): (Vec<_>, Vec<_>) =
        handles.into_iter().enumerate().partition(|(i, _)| i % 2 == 1);
    for (_, (off, len, h)) in odd.into_iter().rev().chain(even) {
        let (n, buf) = h.wait();
        assert_eq!(n.unwrap(), len);
        assert_eq!(sim_bytes_now(buf.addr(), len), &data[off as usize..off as usize + len]);
    }
    assert!(drv.engine().counters().gathered_reads > 0, "nothing was gathered");
}

#[test]
fn a_failing_piece_fails_only_its_own_request() {
    let d = tempfile::tempdir().unwrap();
    let size = 1 << 20;
    let good = random_bytes(90, size);
    let bad = random_bytes(91, size);
    let files = vec![
        Arc::new(FileHandle::open(write_file(d.path(), "good", &good)).unwrap()),
        Arc::new(FileHandle::open(write_file(d.path(), "bad", &bad)).unwrap()),
    ];
    // The second handle's descriptor now refers to a file opened write-only: its reads fail
    // in the worker with EBADF, after the request was accepted.
    let wo = std::fs::File::create(d.path().join("write-only")).unwrap();
    let fd = files[1].buffered_fd().as_raw_fd();
    // SAFETY: replaces a descriptor this test owns (through the handle) with another open one.
    assert!(unsafe { libc::dup2(wo.as_raw_fd(), fd) } >= 0);
    let drv = driver(gather_config(2, 64), 1000);
    let (mut plans, total) = plans(92, 300, 1, size);
    for (i, p) in plans.iter_mut().enumerate() {
        p.file = usize::from(i % 5 == 2);
    }
    let mut dev = drv.alloc_device(0, total as usize).unwrap();
    let poison = random_bytes(93, total as usize);
    dev.copy_from_host(0, &poison).unwrap();
    let events = run_batch(&drv, &files, &plans, dev.addr(), Op::Read);
    let mut want = poison.clone();
    let mut failed = 0;
    for (cookie, state, at_event) in &events {
        let p = plans[*cookie as usize];
        match (p.file, state) {
            (0, BatchState::Complete(n)) => {
                assert_eq!(*n, p.len);
                let src = &good[p.off as usize..p.off as usize + p.len];
                assert!(at_event == src, "{p:?}: reported done before its bytes landed");
                want[p.at as usize..p.at as usize + p.len].copy_from_slice(src);
            }
            (1, BatchState::Failed(e)) => {
                assert_eq!(e.errno(), Some(libc::EBADF), "{e}");
                assert!(e.to_string().contains("bad"), "the error names the file: {e}");
                failed += 1;
            }
            (f, s) => panic!("file {f} {p:?}: unexpected {s:?}"),
        }
    }
    assert_eq!(failed, plans.iter().filter(|p| p.file == 1).count());
    let back = sim_bytes_now(dev.addr(), total as usize);
    assert!(back == want, "good reads wrong, or a failed read wrote into its buffer");
    assert!(drv.engine().counters().gathered_reads > 0, "nothing was gathered");
}

#[test]
fn gathering_leaves_host_reads_and_large_reads_alone() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(95, 2 << 20);
    let f = Arc::new(FileHandle::open(write_file(d.path(), "src", &data)).unwrap());
    let drv = driver(gather_config(2, 64), 100);
    let mut handles = Vec::new();
    for i in 0..64u64 {
        let off = i * 20_000;
        handles.push((off, drv.submit_read(&f, off, vec![0u8; 8192], 0, 8192).unwrap()));
    }
    let big = drv.submit_read(&f, 5, drv.alloc_device(0, 1 << 20).unwrap(), 0, 1 << 20).unwrap();
    for (off, h) in handles {
        let (n, b) = h.wait();
        assert_eq!(n.unwrap(), 8192);
        assert_eq!(&b[..], &data[off as usize..off as usize + 8192]);
    }
    let (n, b) = big.wait();
    assert_eq!(n.unwrap(), 1 << 20);
    let mut back = vec![0u8; 1 << 20];
    b.copy_to_host(0, &mut back).unwrap();
    assert_eq!(back, &data[5..5 + (1 << 20)]);
    assert_eq!(drv.engine().counters().gathered_reads, 0);
}

#[test]
fn batch_entries_queued_in_groups_land_exactly_around_refused_entries() {
    let d = tempfile::tempdir().unwrap();
    let size = 2 << 20;
    let data = random_bytes(96, size);
    let files = vec![Arc::new(FileHandle::open(write_file(d.path(), "src", &data)).unwrap())];
    // Each entry queued alone (0, 1), in groups of 7 (the last group partial), and all at once.
    for group in [0usize, 1, 7, 4096] {
        let drv = driver(Config { batch_queue_group: group, ..gather_config(2, 64) }, 300);
        let (mut plans, total) = plans(97 + group as u64, 300, 1, size);
        // Every 13th entry starts beyond the end of the file: refused when it is submitted,
        // between entries that are held for queueing and must still run.
        for p in plans.iter_mut().step_by(13) {
            p.off = size as u64 + 4096;
        }
        let mut dev = drv.alloc_device(0, total as usize).unwrap();
        let poison = random_bytes(98, total as usize);
        dev.copy_from_host(0, &poison).unwrap();
        let events = run_batch(&drv, &files, &plans, dev.addr(), Op::Read);
        assert_eq!(events.len(), plans.len());
        let mut want = poison.clone();
        for (cookie, state, at_event) in &events {
            let p = plans[*cookie as usize];
            match state {
                BatchState::Complete(n) if p.off < size as u64 => {
                    assert_eq!(*n, p.len, "group {group} {p:?}");
                    let src = &data[p.off as usize..p.off as usize + p.len];
                    assert!(at_event == src, "group {group} {p:?}: done before its bytes landed");
                    want[p.at as usize..p.at as usize + p.len].copy_from_slice(src);
                }
                BatchState::Failed(e) if p.off >= size as u64 => {
                    assert_eq!(e.errno(), Some(libc::EINVAL), "{e}");
                    assert!(e.to_string().contains("beyond the end"), "{e}");
                }
                s => panic!("group {group} {p:?}: unexpected {s:?}"),
            }
        }
        let back = sim_bytes_now(dev.addr(), total as usize);
        assert!(back == want, "group {group}: bytes differ, or a refused entry wrote");
        if group > 1 {
            assert!(drv.engine().counters().gathered_reads > 0, "group {group}: nothing gathered");
        }
    }
}

#[test]
fn a_scattered_group_with_a_piece_outside_its_range_is_refused_whole() {
    use gdio::gpu::GpuRuntime;
    let rt = SimRuntime::new(1, Duration::from_micros(200));
    let mut stream = rt.new_stream(0, 2).unwrap();
    let src = random_bytes(80, 10_000);
    let dev = rt.alloc_device(0, 20_000).unwrap();
    let poison = random_bytes(81, 20_000);
    // SAFETY: `poison`, `src` and `back` outlive the synchronizes; the device ranges lie in `dev`.
    unsafe { stream.copy_to_device(dev, poison.as_ptr(), poison.len()) }.unwrap();
    let bad = [(dev, 0u32, 100u32), (dev + 5000, 9_990, 11)];
    // SAFETY: as above.
    let err = unsafe { stream.copy_to_device_scattered(src.as_ptr(), src.len(), &bad) };
    let msg = err.unwrap_err().to_string();
    assert!(msg.contains("11 bytes at offset 9990") && msg.contains("10000-byte group"), "{msg}");
    let good = [(dev + 7, 3u32, 5000u32), (dev + 9000, 9_000, 1000)];
    // SAFETY: as above.
    let kernel = unsafe { stream.copy_to_device_scattered(src.as_ptr(), src.len(), &good) };
    assert!(!kernel.unwrap(), "a simulated GPU has no kernel: the pieces go as copies");
    let mut back = vec![0u8; poison.len()];
    // SAFETY: as above.
    unsafe { stream.copy_to_host(back.as_mut_ptr(), dev, back.len()) }.unwrap();
    stream.synchronize().unwrap();
    let mut want = poison.clone();
    want[7..5007].copy_from_slice(&src[3..5003]);
    want[9000..10_000].copy_from_slice(&src[9000..10_000]);
    assert!(back == want, "the refused group wrote, or the accepted one missed, some bytes");
    // SAFETY: allocated above; the stream is drained.
    unsafe { rt.free_device(0, dev) };
}

/// `n` writes of 1 byte–64 KiB to disjoint random ranges of a file of `size` bytes (each from
/// its own place of one device buffer, with a random gap before it), in a shuffled order;
/// returns the plans and the buffer size.
fn write_plans(seed: u64, n: usize, size: usize) -> (Vec<Plan>, u64) {
    let mut r = rng(seed);
    let slot = size / n;
    let mut at = 0u64;
    let mut v = Vec::new();
    for i in 0..n {
        let len = if i % 3 == 0 { 4096.min(slot) } else { r.random_range(1..=slot.min(64 << 10)) };
        let off = (i * slot + r.random_range(0..=slot - len)) as u64;
        at += r.random_range(0..300);
        v.push(Plan { file: 0, off, at, len });
        at += len as u64;
    }
    for i in (1..v.len()).rev() {
        v.swap(i, r.random_range(0..=i));
    }
    (v, at + 1)
}

fn open_rw(path: &std::path::Path) -> Arc<FileHandle> {
    Arc::new(FileHandle::open_with(path, gdio::OpenOptions::new().read(true).write(true)).unwrap())
}

#[test]
fn gathered_writes_of_many_requests_reach_the_file_exactly() {
    for (where_, d) in dirs() {
        let size = 3 << 20;
        // A group goes as one batched copy (`gather_batch_copy`) or as a copy per piece.
        for (threads, gather_writes, max_pieces, batch_copy) in [
            (2, true, 64, true),
            (2, true, 64, false),
            (1, true, 7, true),
            (3, true, 64, true),
            (2, false, 64, true),
        ] {
            let poison = random_bytes(100 + threads as u64, size);
            let name = format!("w{threads}{gather_writes}{max_pieces}{batch_copy}");
            let path = write_file(d.path(), &name, &poison);
            let files = vec![open_rw(&path)];
            let config = Config {
                gather_writes,
                gather_batch_copy: batch_copy,
                ..gather_config(threads, max_pieces)
            };
            let drv = driver(config, 1000);
            let (plans, total) = write_plans(101 + threads as u64, 300, size);
            let mut dev = drv.alloc_device(0, total as usize).unwrap();
            let src = random_bytes(102, total as usize);
            dev.copy_from_host(0, &src).unwrap();
            let mut want = poison.clone();
            for (cookie, state, _) in run_batch(&drv, &files, &plans, dev.addr(), Op::Write) {
                let p = plans[cookie as usize];
                match state {
                    BatchState::Complete(n) => assert_eq!(n, p.len, "{where_} {p:?}"),
                    s => panic!("{where_} {p:?}: {s:?}"),
                }
                want[p.off as usize..p.off as usize + p.len]
                    .copy_from_slice(&src[p.at as usize..p.at as usize + p.len]);
            }
            let got = std::fs::read(&path).unwrap();
            assert!(
                got == want,
                "{where_} threads {threads} gather {gather_writes} batch {batch_copy}: file differs"
            );
            let c = drv.engine().counters();
            assert_eq!(c.gathered_reads, 0, "{where_}");
            if gather_writes {
                assert!(c.gathered_writes > 0, "{where_} threads {threads}: nothing was gathered");
            } else {
                assert_eq!(c.gathered_writes, 0, "{where_}: gather_writes is off");
            }
        }
    }
}

/// `n` writes of `len` bytes each to disjoint, randomly placed slots of a file of `size`
/// bytes, from their own places of one device buffer, in a shuffled order.
fn fixed_write_plans(seed: u64, n: usize, len: usize, size: usize) -> (Vec<Plan>, u64) {
    let mut r = rng(seed);
    let slot = size / n;
    assert!(slot >= len);
    let mut at = 0u64;
    let mut v: Vec<Plan> = (0..n)
        .map(|i| {
            let off = (i * slot + r.random_range(0..=slot - len)) as u64;
            at += r.random_range(0..300) + len as u64;
            Plan { file: 0, off, at: at - len as u64, len }
        })
        .collect();
    for i in (1..v.len()).rev() {
        v.swap(i, r.random_range(0..=i));
    }
    (v, at + 1)
}

#[test]
fn small_writes_into_files_on_disk_are_gathered_only_from_the_disk_minimum() {
    let mut saw_disk = false;
    for (where_, d) in dirs() {
        let size = 4 << 20;
        // Below and at the minimum, and 32 and 48 KiB under the default one; into tmpfs all are
        // gathered.
        let default_min = Config::default().gather_write_disk_min_bytes;
        for (len, min) in [
            (4096, 64 << 10),
            (16 << 10, 64 << 10),
            (64 << 10, 64 << 10),
            (32 << 10, default_min),
            (48 << 10, default_min),
        ] {
            let poison = random_bytes(120 + len as u64, size);
            let path = write_file(d.path(), &format!("m{len}"), &poison);
            let files = vec![open_rw(&path)];
            let memory = files[0].info().is_memory_backed();
            saw_disk |= !memory;
            let config = Config {
                gather_writes: true,
                gather_write_disk_min_bytes: min,
                ..gather_config(2, 64)
            };
            let drv = driver(config, 1000);
            let (plans, total) = fixed_write_plans(121 + len as u64, 48, len, size);
            let mut dev = drv.alloc_device(0, total as usize).unwrap();
            let src = random_bytes(122 + len as u64, total as usize);
            dev.copy_from_host(0, &src).unwrap();
            let mut want = poison.clone();
            for (cookie, state, _) in run_batch(&drv, &files, &plans, dev.addr(), Op::Write) {
                let p = plans[cookie as usize];
                assert!(
                    matches!(state, BatchState::Complete(n) if n == len),
                    "{where_} {p:?}: {state:?}"
                );
                want[p.off as usize..p.off as usize + p.len]
                    .copy_from_slice(&src[p.at as usize..p.at as usize + p.len]);
            }
            assert!(
                std::fs::read(&path).unwrap() == want,
                "{where_} {len}-byte writes: file differs"
            );
            let gathered = drv.engine().counters().gathered_writes;
            if memory || len >= min {
                assert!(gathered > 0, "{where_} {len}-byte writes: nothing was gathered");
            } else {
                assert_eq!(
                    gathered,
                    0,
                    "{where_} ({}) {len}-byte writes were gathered",
                    files[0].info().fs.name
                );
            }
        }
    }
    if !saw_disk {
        eprintln!("the temp dir is memory-backed here: the on-disk half was not tested");
    }
}

#[test]
fn a_failing_gathered_write_fails_only_its_own_request() {
    let d = tempfile::tempdir().unwrap();
    let size = 1 << 20;
    let poison = random_bytes(110, size);
    let good_path = write_file(d.path(), "good", &poison);
    let bad_path = write_file(d.path(), "bad", &poison);
    let files = vec![open_rw(&good_path), open_rw(&bad_path)];
    // The second handle's descriptor now refers to a file opened read-only: its writes fail in
    // the worker with EBADF, after the request was accepted.
    let ro_path = write_file(d.path(), "read-only", b"");
    let ro = std::fs::File::open(&ro_path).unwrap();
    let fd = files[1].buffered_fd().as_raw_fd();
    // SAFETY: replaces a descriptor this test owns (through the handle) with another open one.
    assert!(unsafe { libc::dup2(ro.as_raw_fd(), fd) } >= 0);
    let drv = driver(Config { gather_writes: true, ..gather_config(2, 64) }, 1000);
    let (mut plans, total) = write_plans(111, 200, size);
    for (i, p) in plans.iter_mut().enumerate() {
        p.file = usize::from(i % 5 == 2);
    }
    let mut dev = drv.alloc_device(0, total as usize).unwrap();
    let src = random_bytes(112, total as usize);
    dev.copy_from_host(0, &src).unwrap();
    let mut want = poison.clone();
    let mut failed = 0;
    for (cookie, state, _) in run_batch(&drv, &files, &plans, dev.addr(), Op::Write) {
        let p = plans[cookie as usize];
        match (p.file, state) {
            (0, BatchState::Complete(n)) => {
                assert_eq!(n, p.len);
                want[p.off as usize..p.off as usize + p.len]
                    .copy_from_slice(&src[p.at as usize..p.at as usize + p.len]);
            }
            (1, BatchState::Failed(e)) => {
                assert_eq!(e.errno(), Some(libc::EBADF), "{e}");
                assert!(e.to_string().contains("bad"), "the error names the file: {e}");
                failed += 1;
            }
            (f, s) => panic!("file {f} {p:?}: unexpected {s:?}"),
        }
    }
    assert_eq!(failed, plans.iter().filter(|p| p.file == 1).count());
    assert!(std::fs::read(&good_path).unwrap() == want, "good writes wrong");
    assert_eq!(std::fs::read(&bad_path).unwrap(), poison, "the bad handle's file changed");
    assert!(std::fs::read(&ro_path).unwrap().is_empty(), "the read-only file was written");
    assert!(drv.engine().counters().gathered_writes > 0, "nothing was gathered");
}

/// Sequential requests over `files` files of `size` bytes, in blocks of eight per file in turn:
/// each starts where the one before it on its file ended, mostly whole multiples of 512 bytes
/// (so that gathered pieces lie next to each other in the bounce buffer too) and now and then
/// an odd length (which ends a run); each goes to its own place of one device buffer, with a
/// random gap before it. The last requests of a file run past its end when `past_end` is set
/// (short reads). Returns the plans and the buffer size.
fn seq_plans(seed: u64, files: usize, size: usize, past_end: bool) -> (Vec<Plan>, u64) {
    let mut r = rng(seed);
    let mut next = vec![0u64; files];
    let (mut at, mut v) = (0u64, Vec::new());
    let end = if past_end { size as u64 } else { size as u64 - (64 << 10) };
    while next.iter().any(|n| *n < end) {
        for (f, next) in next.iter_mut().enumerate() {
            for _ in 0..8 {
                if *next >= end {
                    break;
                }
                let len = if r.random_range(0..10) == 0 {
                    r.random_range(1..=20_000)
                } else {
                    512 * r.random_range(1..=64)
                };
                at += r.random_range(0..300);
                v.push(Plan { file: f, off: *next, at, len });
                *next += len as u64;
                at += len as u64;
            }
        }
    }
    (v, at + 1)
}

#[test]
fn sequential_gathered_reads_go_in_runs_and_land_exactly() {
    let d = tempfile::tempdir().unwrap();
    // Not a multiple of anything: the last requests of each file end past it.
    let size = (1 << 20) + 4321;
    let datas: Vec<Vec<u8>> = (0..3).map(|i| random_bytes(130 + i, size)).collect();
    let files: Vec<Arc<FileHandle>> = datas
        .iter()
        .enumerate()
        .map(|(i, data)| {
            Arc::new(FileHandle::open(write_file(d.path(), &format!("s{i}"), data)).unwrap())
        })
        .collect();
    // The third handle's descriptor now refers to a file of the same size opened write-only:
    // its runs fail as a whole and each of its pieces again on its own, with EBADF.
    let wo_path = write_file(d.path(), "write-only", &datas[2]);
    let wo = std::fs::OpenOptions::new().write(true).open(wo_path).unwrap();
    // SAFETY: replaces a descriptor this test owns (through the handle) with another open one.
    assert!(unsafe { libc::dup2(wo.as_raw_fd(), files[2].buffered_fd().as_raw_fd()) } >= 0);
    for (runs, threads) in [(true, 2), (true, 1), (false, 2)] {
        let drv = driver(Config { gather_adjacent_runs: runs, ..gather_config(threads, 64) }, 500);
        let (plans, total) = seq_plans(131 + threads as u64, files.len(), size, true);
        let mut dev = drv.alloc_device(0, total as usize).unwrap();
        let poison = random_bytes(132, total as usize);
        dev.copy_from_host(0, &poison).unwrap();
        let mut want = poison.clone();
        let (mut short, mut failed) = (0, 0);
        for (cookie, state, at_event) in run_batch(&drv, &files, &plans, dev.addr(), Op::Read) {
            let p = plans[cookie as usize];
            match (p.file, state) {
                (0 | 1, BatchState::Complete(n)) => {
                    let end = (p.off as usize + p.len).min(size);
                    assert_eq!(n, end - p.off as usize, "runs {runs} {p:?}");
                    short += usize::from(n < p.len);
                    let src = &datas[p.file][p.off as usize..end];
                    assert!(at_event[..n] == *src, "runs {runs} {p:?}: wrong or late bytes");
                    want[p.at as usize..p.at as usize + n].copy_from_slice(src);
                }
                (2, BatchState::Failed(e)) => {
                    assert_eq!(e.errno(), Some(libc::EBADF), "{e}");
                    assert!(e.to_string().contains("s2"), "the error names the file: {e}");
                    failed += 1;
                }
                (f, s) => panic!("runs {runs} file {f} {p:?}: unexpected {s:?}"),
            }
        }
        assert_eq!(failed, plans.iter().filter(|p| p.file == 2).count(), "runs {runs}");
        assert!(short >= 1, "no request ran past the end of a file");
        let back = sim_bytes_now(dev.addr(), total as usize);
        assert!(back == want, "runs {runs}: bytes differ, or a short or failed read wrote more");
        let c = drv.engine().counters();
        assert!(c.gathered_reads > 0, "runs {runs} threads {threads}: nothing was gathered");
        if runs {
            assert!(c.adjacent_pieces > 0, "threads {threads}: no two pieces shared a read");
        } else {
            assert_eq!(c.adjacent_pieces, 0, "gather_adjacent_runs is off");
        }
    }
}

#[test]
fn sequential_gathered_writes_go_in_runs_and_reach_the_file_exactly() {
    let d = tempfile::tempdir().unwrap();
    let size = 1 << 20;
    let poisons: Vec<Vec<u8>> = (0..3).map(|i| random_bytes(140 + i, size)).collect();
    for (runs, threads) in [(true, 2), (true, 1), (false, 2)] {
        let paths: Vec<_> = poisons
            .iter()
            .enumerate()
            .map(|(i, p)| write_file(d.path(), &format!("w{runs}{threads}-{i}"), p))
            .collect();
        let files: Vec<Arc<FileHandle>> = paths.iter().map(|p| open_rw(p)).collect();
        // The third handle's descriptor now refers to a file opened read-only: its runs fail
        // as a whole and each of its pieces again on its own, with EBADF.
        let ro_path = write_file(d.path(), &format!("ro{runs}{threads}"), b"");
        let ro = std::fs::File::open(&ro_path).unwrap();
        // SAFETY: replaces a descriptor this test owns (through the handle) with another one.
        assert!(unsafe { libc::dup2(ro.as_raw_fd(), files[2].buffered_fd().as_raw_fd()) } >= 0);
        let config = Config {
            gather_writes: true,
            gather_adjacent_runs: runs,
            ..gather_config(threads, 64)
        };
        let drv = driver(config, 500);
        let (plans, total) = seq_plans(141 + threads as u64, files.len(), size, false);
        let mut dev = drv.alloc_device(0, total as usize).unwrap();
        let src = random_bytes(142, total as usize);
        dev.copy_from_host(0, &src).unwrap();
        let mut want = poisons.clone();
        let mut failed = 0;
        for (cookie, state, _) in run_batch(&drv, &files, &plans, dev.addr(), Op::Write) {
            let p = plans[cookie as usize];
            match (p.file, state) {
                (0 | 1, BatchState::Complete(n)) => {
                    assert_eq!(n, p.len, "runs {runs} {p:?}");
                    want[p.file][p.off as usize..p.off as usize + p.len]
                        .copy_from_slice(&src[p.at as usize..p.at as usize + p.len]);
                }
                (2, BatchState::Failed(e)) => {
                    assert_eq!(e.errno(), Some(libc::EBADF), "{e}");
                    failed += 1;
                }
                (f, s) => panic!("runs {runs} file {f} {p:?}: unexpected {s:?}"),
            }
        }
        assert_eq!(failed, plans.iter().filter(|p| p.file == 2).count(), "runs {runs}");
        for (i, path) in paths.iter().enumerate() {
            assert!(std::fs::read(path).unwrap() == want[i], "runs {runs}: file {i} differs");
        }
        assert!(std::fs::read(&ro_path).unwrap().is_empty(), "the read-only file was written");
        let c = drv.engine().counters();
        assert!(c.gathered_writes > 0, "runs {runs} threads {threads}: nothing was gathered");
        if runs {
            assert!(c.adjacent_pieces > 0, "threads {threads}: no two pieces shared a write");
        } else {
            assert_eq!(c.adjacent_pieces, 0, "gather_adjacent_runs is off");
        }
    }
}
