//! Asynchronous, batched and vectored I/O on host memory and simulated GPUs (whose copies land
//! late, so a missing wait reads wrong bytes): many requests in flight on one handle and on
//! many, out-of-order completion, cancel, timeouts, `min_nr`, dropping handles and batches
//! with I/O in flight, and every byte checked against `std::fs`.

mod common;

use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use gdio::gpu::sim::SimRuntime;
use gdio::{
    BatchEntry, BatchState, Config, DirectIoPolicy, Driver, ErrorKind, FileHandle, Op, OpenOptions,
};
use rand::Rng;

fn slow_sim_driver(config: Config, delay: Duration) -> Driver {
    Driver::with_runtime(config, Arc::new(SimRuntime::new(1, delay))).unwrap()
}

fn expect(data: &[u8], off: u64, len: usize) -> &[u8] {
    let s = (off as usize).min(data.len());
    &data[s..(s + len).min(data.len())]
}

#[test]
fn many_reads_in_flight_on_one_handle_and_many_host_and_sim() {
    for (where_, d) in dirs() {
        let data = random_bytes(21, 2 * 1024 * 1024 + 333);
        let paths: Vec<_> = (0..3).map(|i| write_file(d.path(), &format!("f{i}"), &data)).collect();
        for policy in [DirectIoPolicy::Off, DirectIoPolicy::Auto] {
            let drv = sim_driver(tiny_config(policy, 4), 1);
            let files: Vec<_> =
                paths.iter().map(|p| Arc::new(FileHandle::open(p).unwrap())).collect();
            let mut r = rng(7 + policy as u64);
            let mut host = Vec::new();
            let mut dev = Vec::new();
            for i in 0..48 {
                let f = &files[i % files.len()];
                let (off, len) = random_range(&mut r, data.len());
                let len = len.min(300_000);
                if i % 2 == 0 {
                    let buf = random_bytes(i as u64, len);
                    host.push((off, len, drv.submit_read(f, off, buf, 0, len).unwrap()));
                } else {
                    let dbuf = drv.alloc_device(0, len.max(1)).unwrap();
                    dev.push((off, len, drv.submit_read(f, off, dbuf, 0, len).unwrap()));
                }
            }
            // Wait in reverse order of submission: completions are independent.
            for (off, len, h) in host.into_iter().rev() {
                let (n, buf) = h.wait();
                let want = expect(&data, off, len);
                assert_eq!(n.unwrap(), want.len(), "{where_} {policy:?} off {off} len {len}");
                assert_eq!(&buf[..want.len()], want, "{where_} {policy:?} off {off} len {len}");
            }
            for (off, len, h) in dev.into_iter().rev() {
                let (n, buf) = h.wait();
                let want = expect(&data, off, len);
                assert_eq!(n.unwrap(), want.len());
                let mut back = vec![0u8; want.len()];
                buf.copy_to_host(0, &mut back).unwrap();
                assert_eq!(back, want, "{where_} {policy:?} dev off {off} len {len}");
            }
        }
    }
}

#[test]
fn completions_come_out_of_order() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(22, 8 * 1024 * 1024);
    let f = Arc::new(FileHandle::open(write_file(d.path(), "o", &data)).unwrap());
    let drv = sim_driver(tiny_config(DirectIoPolicy::Off, 4), 1);
    // A large read first, then a tiny one: the tiny one finishes while the large one runs.
    let big = drv.submit_read(&f, 0, vec![0u8; data.len()], 0, data.len()).unwrap();
    let small = drv.submit_read(&f, 100, vec![0u8; 10], 0, 10).unwrap();
    let (n, b) = small.wait();
    assert_eq!(n.unwrap(), 10);
    assert_eq!(&b[..], &data[100..110]);
    let (n, b) = big.wait();
    assert_eq!(n.unwrap(), data.len());
    assert_eq!(b, data);
}

#[test]
fn poll_is_done_and_wait_timeout_agree() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(23, 1024 * 1024);
    let f = Arc::new(FileHandle::open(write_file(d.path(), "p", &data)).unwrap());
    let drv = slow_sim_driver(tiny_config(DirectIoPolicy::Off, 2), Duration::from_millis(2));
    let dbuf = drv.alloc_device(0, data.len()).unwrap();
    let mut h = drv.submit_read(&f, 0, dbuf, 0, data.len()).unwrap();
    // 128 chunks of 8 KiB at 2 ms each cannot be done after 1 ms.
    assert!(!h.wait_timeout(Duration::from_millis(1)));
    assert!(h.poll().is_none());
    assert!(h.wait_timeout(Duration::from_secs(60)));
    assert!(h.is_done());
    assert_eq!(h.poll().unwrap().unwrap(), data.len());
    let (n, buf) = h.wait();
    assert_eq!(n.unwrap(), data.len());
    assert_eq!(buf.to_vec().unwrap(), data);
}

#[test]
fn dropping_handles_with_io_in_flight_waits_for_it() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(24, 1024 * 1024);
    let f = Arc::new(FileHandle::open(write_file(d.path(), "d", &data)).unwrap());
    let drv = slow_sim_driver(tiny_config(DirectIoPolicy::Off, 3), Duration::from_micros(300));
    for round in 0..6 {
        let dbuf = drv.alloc_device(0, data.len()).unwrap();
        let h = drv.submit_read(&f, 0, dbuf, 0, data.len()).unwrap();
        let hb = drv.submit_read(&f, 7, vec![0u8; 500_000], 0, 500_000).unwrap();
        // Dropping frees the device buffer and the vector only after the I/O is over; the
        // sim runtime frees device memory on drop, so a copy landing later would write into
        // freed memory (and classify would no longer know the range).
        if round % 2 == 0 {
            drop(h);
            drop(hb);
        } else {
            drop(hb);
            drop(h);
        }
    }
    // The engine is still sound afterwards: a fresh read is exact.
    let (n, b) = drv.submit_read(&f, 3, vec![0u8; 1000], 0, 1000).unwrap().wait();
    assert_eq!(n.unwrap(), 1000);
    assert_eq!(&b[..], &data[3..1003]);
    // A forgotten handle leaks its buffer instead of freeing it under the I/O.
    let h = drv.submit_read(&f, 0, vec![0u8; 4096], 0, 4096).unwrap();
    std::mem::forget(h);
}

#[test]
fn async_writes_land_and_are_read_back() {
    for (where_, d) in dirs() {
        let p = d.path().join("w");
        let f = Arc::new(
            FileHandle::open_with(&p, OpenOptions::new().read(true).write(true).create(true))
                .unwrap(),
        );
        let drv = sim_driver(tiny_config(DirectIoPolicy::Off, 4), 1);
        let mut expect_file = vec![0u8; 1 << 20];
        let mut hs = Vec::new();
        for i in 0..16usize {
            let chunk = random_bytes(100 + i as u64, 65536);
            let off = (i * 65536) as u64;
            expect_file[i * 65536..(i + 1) * 65536].copy_from_slice(&chunk);
            if i % 2 == 0 {
                hs.push(drv.submit_write(&f, off, chunk, 0, 65536).unwrap().wait().0);
            } else {
                let mut dbuf = drv.alloc_device(0, 65536).unwrap();
                dbuf.copy_from_host(0, &chunk).unwrap();
                hs.push(drv.submit_write(&f, off, dbuf, 0, 65536).unwrap().wait().0);
            }
        }
        for r in hs {
            assert_eq!(r.unwrap(), 65536);
        }
        assert_eq!(std::fs::read(&p).unwrap(), expect_file, "{where_}");
        assert_eq!(f.size(), 1 << 20);
    }
}

#[test]
fn cancel_before_and_after_completion() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(25, 4 * 1024 * 1024);
    let f = Arc::new(FileHandle::open(write_file(d.path(), "c", &data)).unwrap());
    // One worker and slow copies: most of a 4 MiB read has not started when we cancel.
    let drv = slow_sim_driver(tiny_config(DirectIoPolicy::Off, 1), Duration::from_millis(1));
    let dbuf = drv.alloc_device(0, data.len()).unwrap();
    let h = drv.submit_read(&f, 0, dbuf, 0, data.len()).unwrap();
    assert!(h.cancel());
    let (r, _buf) = h.wait();
    let e = r.unwrap_err();
    assert_eq!(e.errno(), Some(libc::ECANCELED), "{e}");
    // After completion, cancel changes nothing.
    let h = drv.submit_read(&f, 5, vec![0u8; 100], 0, 100).unwrap();
    assert!(h.wait_timeout(Duration::from_secs(60)));
    assert!(!h.cancel());
    let (r, b) = h.wait();
    assert_eq!(r.unwrap(), 100);
    assert_eq!(&b[..], &data[5..105]);
}

fn batch_entry(
    f: &Arc<FileHandle>,
    op: Op,
    off: u64,
    base: u64,
    bo: u64,
    len: usize,
) -> BatchEntry {
    BatchEntry {
        op,
        file: f.clone(),
        file_offset: off,
        buf_base: base,
        buf_offset: bo,
        len,
        cookie: off ^ 0x5a5a,
        memory: None,
    }
}

#[test]
fn batch_mixes_reads_and_writes_with_failing_entries_among_good_ones() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(26, 1 << 20);
    let src = write_file(d.path(), "src", &data);
    let rf = Arc::new(FileHandle::open(&src).unwrap());
    let wp = d.path().join("dst");
    let wf = Arc::new(
        FileHandle::open_with(&wp, OpenOptions::new().read(true).write(true).create(true)).unwrap(),
    );
    let drv = sim_driver(tiny_config(DirectIoPolicy::Off, 4), 1);
    let dev = drv.alloc_device(0, 1 << 20).unwrap();
    let payload = random_bytes(27, 256 * 1024);
    let mut host_out = random_bytes(37, 256 * 1024);
    let untouched = random_bytes(38, 4096);
    let mut scratch = untouched.clone();
    let mut batch = drv.batch(8).unwrap();
    let mut r = rng(28);
    let mut entries = Vec::new();
    let mut want_reads = Vec::new();
    for i in 0..4u64 {
        let off = r.random_range(0..(1u64 << 20) - 70_000);
        let mut e = batch_entry(&rf, Op::Read, off, dev.addr(), i * 70_000, 60_000);
        e.cookie = 100 + i;
        want_reads.push((e.cookie, off, i * 70_000));
        entries.push(e);
    }
    let mut w = batch_entry(&wf, Op::Write, 4096, payload.as_ptr() as u64, 0, payload.len());
    w.cookie = 200;
    entries.push(w);
    let mut h = batch_entry(&rf, Op::Read, 9, host_out.as_mut_ptr() as u64, 0, host_out.len());
    h.cookie = 201;
    entries.push(h);
    // Two entries that fail while running: a write through a read-only handle, and a read at
    // an offset past the end of the file.
    let mut bad_w = batch_entry(&rf, Op::Write, 0, payload.as_ptr() as u64, 0, 100);
    bad_w.cookie = 300;
    entries.push(bad_w);
    let mut bad_r = batch_entry(&rf, Op::Read, 5 << 20, scratch.as_mut_ptr() as u64, 0, 4096);
    bad_r.cookie = 301;
    entries.push(bad_r);
    // SAFETY: every buffer lives until the batch has reported its entry (below); none overlap.
    unsafe { batch.submit(&entries) }.unwrap();
    let mut events = Vec::new();
    while events.len() < entries.len() {
        let st = batch.get_status(1, 8, None).unwrap();
        assert!(!st.events.is_empty() && !st.timed_out);
        events.extend(st.events);
    }
    events.sort_by_key(|e| e.cookie);
    let cookies: Vec<u64> = events.iter().map(|e| e.cookie).collect();
    assert_eq!(cookies, vec![100, 101, 102, 103, 200, 201, 300, 301], "each reported once");
    // Each event names its entry's operation, memory and size (front ends count with them).
    let shape: Vec<(Op, Option<usize>, usize)> =
        events.iter().map(|e| (e.op, e.memory.device_ordinal(), e.len)).collect();
    let entry_shape: Vec<(Op, Option<usize>, usize)> = {
        let mut es: Vec<_> = entries.iter().collect();
        es.sort_by_key(|e| e.cookie);
        es.iter()
            .map(|e| (e.op, drv.runtime().classify(e.buf_base).device_ordinal(), e.len))
            .collect()
    };
    assert_eq!(shape, entry_shape);
    for ev in &events {
        match (ev.cookie, &ev.state) {
            (300, BatchState::Failed(e)) => assert_eq!(e.errno(), Some(libc::EBADF), "{e}"),
            (301, BatchState::Failed(e)) => assert_eq!(e.errno(), Some(libc::EINVAL), "{e}"),
            (c, BatchState::Complete(n)) if c < 300 => {
                if let Some(&(_, off, bo)) = want_reads.iter().find(|w| w.0 == c) {
                    assert_eq!(*n, 60_000);
                    let mut back = vec![0u8; 60_000];
                    dev.copy_to_host(bo as usize, &mut back).unwrap();
                    assert_eq!(back, &data[off as usize..off as usize + 60_000]);
                } else {
                    assert_eq!(*n, 256 * 1024);
                }
            }
            (c, s) => panic!("entry {c}: unexpected {s:?}"),
        }
    }
    assert_eq!(&host_out[..], &data[9..9 + host_out.len()]);
    assert_eq!(scratch, untouched, "the failing read touched its buffer");
    let got = std::fs::read(&wp).unwrap();
    assert_eq!(&got[4096..], &payload[..]);
    assert_eq!(&got[..4096], &[0u8; 4096][..]);
    assert_eq!(std::fs::read(&src).unwrap(), data, "the failing write changed the file");
}

#[test]
fn batch_cancel_reports_each_entry_complete_or_canceled() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(29, 1 << 20);
    let f = Arc::new(FileHandle::open(write_file(d.path(), "src", &data)).unwrap());
    let drv = slow_sim_driver(tiny_config(DirectIoPolicy::Off, 1), Duration::from_millis(1));
    let dev = drv.alloc_device(0, 1 << 20).unwrap();
    let mut batch = drv.batch(8).unwrap();
    let entries: Vec<_> = (0..8u64)
        .map(|i| batch_entry(&f, Op::Read, i * 131_072, dev.addr(), i * 131_072, 131_072))
        .collect();
    // SAFETY: `dev` outlives the batch.
    unsafe { batch.submit(&entries) }.unwrap();
    batch.cancel().unwrap();
    let st = batch.get_status(8, 8, Some(Duration::from_secs(60))).unwrap();
    assert!(!st.timed_out);
    assert_eq!(st.events.len(), 8);
    let back = dev.to_vec().unwrap();
    let mut canceled = 0;
    for ev in st.events {
        let i = entries.iter().position(|e| e.cookie == ev.cookie).unwrap();
        let r = i * 131_072..(i + 1) * 131_072;
        match ev.state {
            BatchState::Complete(n) => {
                assert_eq!(n, 131_072);
                assert_eq!(&back[r.clone()], &data[r]);
            }
            BatchState::Canceled => canceled += 1,
            BatchState::Failed(e) => panic!("{e}"),
        }
    }
    // One worker, 1 ms per 8 KiB chunk: the later entries had not started.
    assert!(canceled > 0);
    // Cancel after completion: the next batch completes whole.
    // SAFETY: as above.
    unsafe { batch.submit(&entries[..2]) }.unwrap();
    let st = batch.get_status(2, 2, None).unwrap();
    batch.cancel().unwrap();
    assert!(st.events.iter().all(|e| matches!(e.state, BatchState::Complete(131_072))));
}

#[test]
fn batch_bad_input_is_refused_and_nothing_is_written() {
    let d = tempfile::tempdir().unwrap();
    let wp = d.path().join("w");
    let wf = Arc::new(
        FileHandle::open_with(&wp, OpenOptions::new().read(true).write(true).create(true)).unwrap(),
    );
    let drv = sim_driver(tiny_config(DirectIoPolicy::Off, 2), 1);
    assert_eq!(drv.batch(0).unwrap_err().kind(), ErrorKind::InvalidInput);
    let e = Op::from_cufile(7).unwrap_err();
    assert!(e.to_string().contains("unknown opcode 7"), "{e}");
    assert_eq!(Op::from_cufile(1).unwrap(), Op::Write);
    let payload = random_bytes(30, 8192);
    let good = batch_entry(&wf, Op::Write, 0, payload.as_ptr() as u64, 0, 4096);
    let mut batch = drv.batch(2).unwrap();
    // Over capacity.
    let three = vec![good.clone(), good.clone(), good.clone()];
    // SAFETY: payload outlives the batch.
    let e = unsafe { batch.submit(&three) }.unwrap_err();
    assert!(e.to_string().contains("do not fit"), "{e}");
    // Null buffer.
    let null = batch_entry(&wf, Op::Write, 0, 0, 0, 4096);
    // SAFETY: as above (the null entry is refused before anything runs).
    let e = unsafe { batch.submit(&[good.clone(), null]) }.unwrap_err();
    assert!(e.to_string().contains("null buffer"), "{e}");
    // A range that starts in device memory and runs past it.
    let dev2 = drv.alloc_device(0, 4096).unwrap();
    let over = batch_entry(&wf, Op::Write, 0, dev2.addr(), 0, 8192);
    // SAFETY: refused before anything runs.
    let e = unsafe { batch.submit(&[over]) }.unwrap_err();
    assert!(e.to_string().contains("not memory allocated on GPU 0"), "{e}");
    // The same buffer base twice in one call (its kind asked once): the entry whose range runs
    // past the allocation is still refused, and so is the whole call.
    let inside = batch_entry(&wf, Op::Write, 0, dev2.addr(), 0, 2048);
    let past = batch_entry(&wf, Op::Write, 4096, dev2.addr(), 2048, 4096);
    // SAFETY: refused before anything runs.
    let e = unsafe { batch.submit(&[inside, past]) }.unwrap_err();
    assert!(e.to_string().contains("batch entry 1") && e.to_string().contains("GPU 0"), "{e}");
    assert_eq!(std::fs::metadata(&wp).unwrap().len(), 0, "nothing was written");
    // nr = 0, and status on a destroyed batch.
    assert!(batch.get_status(0, 0, None).is_err());
    batch.destroy();
    let e = batch.get_status(1, 1, Some(Duration::ZERO)).unwrap_err();
    assert!(e.to_string().contains("destroyed"), "{e}");
    // SAFETY: refused (destroyed) before anything runs.
    assert!(unsafe { batch.submit(&[good]) }.is_err());
    batch.destroy();
    assert_eq!(std::fs::metadata(&wp).unwrap().len(), 0);
}

#[test]
fn batch_min_nr_timeout_and_drop_with_io_in_flight() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(31, 2 << 20);
    let f = Arc::new(FileHandle::open(write_file(d.path(), "m", &data)).unwrap());
    let drv = slow_sim_driver(tiny_config(DirectIoPolicy::Off, 2), Duration::from_millis(1));
    let dev = drv.alloc_device(0, 2 << 20).unwrap();
    let mut batch = drv.batch(16).unwrap();
    let entries: Vec<_> = (0..8u64)
        .map(|i| batch_entry(&f, Op::Read, i * 262_144, dev.addr(), i * 262_144, 262_144))
        .collect();
    // SAFETY: `dev` outlives the batch (dropped after it, below).
    unsafe { batch.submit(&entries) }.unwrap();
    // 256 chunks of 8 KiB at 1 ms on 2 workers: nothing is done after 1 ms.
    let st = batch.get_status(8, 8, Some(Duration::from_millis(1))).unwrap();
    assert!(st.timed_out && st.events.len() < 8);
    let mut seen = st.events.len();
    // min_nr larger than what is outstanding cannot hang: it is capped.
    while seen < 8 {
        let st = batch.get_status(100, 3, None).unwrap();
        assert!(!st.timed_out);
        assert!(st.events.len() <= 3);
        assert!(st.events.len() >= (8 - seen).min(3), "returned before min_nr");
        seen += st.events.len();
    }
    assert_eq!(batch.outstanding(), 0);
    assert_eq!(dev.to_vec().unwrap(), data);
    // Drop with I/O in flight: blocks until it is over, then the buffer may go.
    // SAFETY: `dev` is dropped after the batch.
    unsafe { batch.submit(&entries) }.unwrap();
    drop(batch);
    drop(dev);
    // Destroy right after submit.
    let dev = drv.alloc_device(0, 2 << 20).unwrap();
    let mut batch = drv.batch(8).unwrap();
    let entries: Vec<_> = (0..8u64)
        .map(|i| batch_entry(&f, Op::Read, i * 262_144, dev.addr(), i * 262_144, 262_144))
        .collect();
    // SAFETY: as above.
    unsafe { batch.submit(&entries) }.unwrap();
    batch.destroy();
    drop(dev);
}

#[test]
fn vectored_reads_match_std_fs() {
    for (where_, d) in dirs() {
        let data = random_bytes(32, 3 * 1024 * 1024 + 17);
        let p = write_file(d.path(), "v", &data);
        let f = FileHandle::open(&p).unwrap();
        let std_f = std::fs::File::open(&p).unwrap();
        for policy in [DirectIoPolicy::Off, DirectIoPolicy::On, DirectIoPolicy::Auto] {
            let drv = sim_driver(tiny_config(policy, 3), 1);
            let mut r = rng(33 + policy as u64);
            let mut pieces = Vec::new();
            let mut bo = 0usize;
            for _ in 0..40 {
                let off = r.random_range(0..data.len() as u64 + 10);
                let len = r.random_range(0..90_000usize);
                let off = off.min(data.len() as u64);
                pieces.push((off, bo, len));
                bo += len + r.random_range(0..100usize);
            }
            let mut host = random_bytes(34, bo);
            let canary = host.clone();
            let got = drv.read_vectored(&f, &mut host, &pieces).unwrap();
            let mut dev = drv.alloc_device(0, bo).unwrap();
            let got_dev = drv.read_vectored(&f, &mut dev, &pieces).unwrap();
            let dev_bytes = dev.to_vec().unwrap();
            let mut covered = vec![false; bo];
            for (i, &(off, b, len)) in pieces.iter().enumerate() {
                let mut want = vec![0u8; len];
                let n = std_f.read_at(&mut want, off).unwrap_or(0);
                let n = if (off as usize) < data.len() {
                    let mut t = 0;
                    while t < len.min(data.len() - off as usize) {
                        t += std_f.read_at(&mut want[t..], off + t as u64).unwrap();
                    }
                    t
                } else {
                    n
                };
                assert_eq!(got[i], n, "{where_} {policy:?} piece {i}");
                assert_eq!(got_dev[i], n);
                assert_eq!(&host[b..b + n], &want[..n], "{where_} {policy:?} piece {i}");
                assert_eq!(&dev_bytes[b..b + n], &want[..n], "{where_} {policy:?} dev piece {i}");
                covered[b..b + n].iter_mut().for_each(|c| *c = true);
            }
            for (i, c) in covered.iter().enumerate() {
                if !c {
                    assert_eq!(host[i], canary[i], "byte {i} outside every piece was touched");
                }
            }
            // Overlapping pieces are refused before anything is read.
            let e = drv.read_vectored(&f, &mut host, &[(0, 0, 100), (0, 50, 100)]).unwrap_err();
            assert!(e.to_string().contains("overlap"), "{e}");
        }
    }
}

#[test]
fn random_data_random_offsets_async_host_and_sim_every_byte() {
    let d = tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap());
    let data = random_bytes(35, 5 * 1024 * 1024 + 1234);
    let f = Arc::new(FileHandle::open(write_file(d.path(), "r", &data)).unwrap());
    let drv = sim_driver(tiny_config(DirectIoPolicy::Auto, 4), 1);
    let mut r = rng(36);
    for _ in 0..5 {
        let mut hs = Vec::new();
        for _ in 0..64 {
            let (off, len) = random_range(&mut r, data.len());
            let len = len.min(200_000);
            let pad = r.random_range(0..100usize);
            let buf = random_bytes(r.random(), len + pad);
            hs.push((off, len, pad, buf.clone(), drv.submit_read(&f, off, buf, pad, len).unwrap()));
        }
        for (off, len, pad, canary, h) in hs {
            let (n, buf) = h.wait();
            let want = expect(&data, off, len);
            assert_eq!(n.unwrap(), want.len());
            assert_eq!(&buf[pad..pad + want.len()], want);
            assert_eq!(&buf[..pad], &canary[..pad]);
            assert_eq!(&buf[pad + want.len()..], &canary[pad + want.len()..]);
        }
    }
}

#[test]
fn cold_reads_with_several_direct_reads_in_flight_per_worker() {
    for (where_, d) in dirs() {
        let data = random_bytes(41, 3 * 1024 * 1024 + 5555);
        let p = write_file(d.path(), "cold", &data);
        let f = FileHandle::open(&p).unwrap();
        for in_flight in [1, 3, 5] {
            let config =
                Config { direct_reads_in_flight: in_flight, ..tiny_config(DirectIoPolicy::On, 2) };
            let drv = sim_driver(config, 1);
            let mut r = rng(42 + in_flight as u64);
            for _ in 0..10 {
                let (off, len) = random_range(&mut r, data.len());
                let mut dev = drv.alloc_device(0, len.max(1)).unwrap();
                let n = drv.read(&f, off, &mut dev, 0, len).unwrap();
                let want = expect(&data, off, len);
                assert_eq!(n, want.len());
                let mut back = vec![0u8; n];
                dev.copy_to_host(0, &mut back).unwrap();
                assert_eq!(back, want, "{where_} in flight {in_flight} off {off} len {len}");
            }
        }
    }
    let e = gdio::Config { direct_reads_in_flight: 0, ..Config::default() }.validate().unwrap_err();
    assert!(e.to_string().contains("direct_reads_in_flight"), "{e}");
}

#[test]
fn batch_trusts_a_kind_the_caller_vouches_for() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(81, 1 << 20);
    let f = Arc::new(FileHandle::open(write_file(d.path(), "v", &data)).unwrap());
    let drv = sim_driver(tiny_config(DirectIoPolicy::Off, 2), 2);
    let dev = drv.alloc_device(1, 1 << 20).unwrap();
    let mut batch = drv.batch(4).unwrap();
    let entries: Vec<BatchEntry> = (0..4u64)
        .map(|i| {
            let mut e = batch_entry(&f, Op::Read, i * 4096 + 7, dev.addr(), i * 8192, 4096);
            e.memory = Some(gdio::MemoryKind::Device { ordinal: 1 });
            e
        })
        .collect();
    // SAFETY: `dev` outlives the batch; the entries are device memory of GPU 1, as vouched.
    unsafe { batch.submit(&entries) }.unwrap();
    let st = batch.get_status(4, 4, Some(Duration::from_secs(60))).unwrap();
    assert_eq!(st.events.len(), 4);
    let back = dev.to_vec().unwrap();
    for ev in &st.events {
        assert!(matches!(ev.state, BatchState::Complete(4096)), "{:?}", ev.state);
        assert_eq!(ev.memory, gdio::MemoryKind::Device { ordinal: 1 });
        let i = entries.iter().position(|e| e.cookie == ev.cookie).unwrap() as u64;
        let (off, bo) = ((i * 4096 + 7) as usize, (i * 8192) as usize);
        assert_eq!(back[bo..bo + 4096], data[off..off + 4096]);
    }
}

#[test]
fn idle_workers_and_batch_waiters_that_poll_before_sleeping_miss_nothing() {
    // One worker (so it may poll: a core of its own here), bursts of small batch reads into
    // host memory and a simulated GPU with random pauses between them, shorter and longer than
    // the polling window: work that arrives while a worker polls, while it sleeps, and while a
    // waiter polls or sleeps, all land byte for byte.
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(41, 1 << 20);
    let f = Arc::new(FileHandle::open(write_file(d.path(), "p", &data)).unwrap());
    let config = Config { completion_spin_us: 300, ..tiny_config(DirectIoPolicy::Off, 1) };
    let mut r = rng(42);
    for drv in [
        Driver::with_runtime(config.clone(), Arc::new(gdio::gpu::host::HostRuntime::new("t")))
            .unwrap(),
        slow_sim_driver(config.clone(), Duration::from_micros(30)),
    ] {
        let dev = drv.alloc_device(0, 64 * 4096).ok();
        let mut host = vec![0u8; 64 * 4096];
        let base = dev.as_ref().map_or(host.as_mut_ptr() as u64, |b| b.addr());
        let mut batch = drv.batch(64).unwrap();
        for _ in 0..40 {
            let n = r.random_range(1..=64usize);
            let offs: Vec<u64> = (0..n).map(|_| r.random_range(0..(1u64 << 20) - 4096)).collect();
            let entries: Vec<_> = offs
                .iter()
                .enumerate()
                .map(|(i, &o)| batch_entry(&f, Op::Read, o, base, i as u64 * 4096, 4096))
                .collect();
            // SAFETY: the destination outlives the batch, whose entries are all reported below
            // before it is read or reused.
            unsafe { batch.submit(&entries) }.unwrap();
            let mut got = 0;
            while got < n {
                let st = batch.get_status(n - got, n, Some(Duration::from_secs(30))).unwrap();
                assert!(!st.timed_out, "a completion was missed");
                got += st.events.len();
            }
            let bytes = match &dev {
                Some(b) => b.to_vec().unwrap(),
                None => host.clone(),
            };
            for (i, &o) in offs.iter().enumerate() {
                let at = i * 4096;
                assert!(bytes[at..at + 4096] == data[o as usize..o as usize + 4096], "read {i}");
            }
            std::thread::sleep(Duration::from_micros(r.random_range(0..800)));
        }
    }
}

/// A batch of many small reads into one device buffer asks the runtime about that buffer once
/// per `submit` (its kind and its allocation), not twice per entry, and still lands every
/// byte where it belongs; an entry that runs past the allocation is still refused.
#[test]
fn batch_entries_of_one_device_buffer_cost_one_pointer_query_each_submit() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(77, 4 << 20);
    let p = write_file(d.path(), "q", &data);
    let f = Arc::new(FileHandle::open(&p).unwrap());
    let rt = Arc::new(SimRuntime::new(1, Duration::ZERO));
    let drv = Driver::with_runtime(tiny_config(DirectIoPolicy::Off, 4), rt.clone()).unwrap();
    let n = 256usize;
    let dev = drv.alloc_device(0, n * 4096).unwrap();
    let mut r = rng(78);
    let offs: Vec<u64> = (0..n).map(|_| r.random_range(0..(4u64 << 20) - 4096)).collect();
    let entries: Vec<BatchEntry> = offs
        .iter()
        .enumerate()
        .map(|(k, &off)| batch_entry(&f, Op::Read, off, dev.addr(), (k * 4096) as u64, 4096))
        .collect();
    let mut batch = drv.batch(n).unwrap();
    let before = rt.pointer_queries();
    // SAFETY: `dev` outlives the batch; every entry has a slot of its own.
    unsafe { batch.submit(&entries) }.unwrap();
    let asked = rt.pointer_queries() - before;
    assert!(asked <= 2, "{asked} pointer queries for {n} entries of one buffer");
    let st = batch.get_status(n, n, None).unwrap();
    assert_eq!(st.events.len(), n);
    assert!(st.events.iter().all(|e| matches!(e.state, BatchState::Complete(4096))));
    let mut back = vec![0u8; n * 4096];
    dev.copy_to_host(0, &mut back).unwrap();
    for (k, &off) in offs.iter().enumerate() {
        let want = &data[off as usize..off as usize + 4096];
        assert!(back[k * 4096..(k + 1) * 4096] == *want, "slot {k} (file offset {off})");
    }
    // The last entry runs one byte past the allocation: refused, nothing submitted.
    let past = batch_entry(&f, Op::Read, 0, dev.addr(), (n * 4096 - 4095) as u64, 4096);
    // SAFETY: refused before anything runs.
    let e = unsafe { batch.submit(&[entries[0].clone(), past]) }.unwrap_err();
    assert!(e.to_string().contains("batch entry 1"), "{e}");
    assert_eq!(batch.outstanding(), 0);
}

/// `pool_per_gpu`: one batch with reads into GPU 0, GPU 1 and host memory, and async reads
/// and writes of GPU 1, each served by its GPU's pool; every byte lands where it should.
#[test]
fn a_pool_per_gpu_serves_batches_and_handles_across_gpus() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(91, 3 << 20);
    let rf = Arc::new(FileHandle::open(write_file(d.path(), "src", &data)).unwrap());
    let config = Config { pool_per_gpu: true, ..tiny_config(DirectIoPolicy::Off, 3) };
    let drv = sim_driver(config, 2);
    let (dev0, dev1) =
        (drv.alloc_device(0, 1 << 20).unwrap(), drv.alloc_device(1, 1 << 20).unwrap());
    let mut host = vec![0u8; 1 << 20];
    let mut r = rng(92);
    let mut batch = drv.batch(64).unwrap();
    let mut entries = Vec::new();
    let mut want = Vec::new();
    for i in 0..48u64 {
        let (base, which) = match i % 3 {
            0 => (dev0.addr(), 0),
            1 => (dev1.addr(), 1),
            _ => (host.as_mut_ptr() as u64, 2),
        };
        let len = r.random_range(1..20_000usize);
        let off = r.random_range(0..(data.len() - len) as u64);
        let bo = (i / 3) * 20_000;
        let mut e = batch_entry(&rf, Op::Read, off, base, bo, len);
        e.cookie = i;
        want.push((which, off, bo, len));
        entries.push(e);
    }
    // SAFETY: every buffer lives until the batch reported all entries; ranges do not overlap.
    unsafe { batch.submit(&entries) }.unwrap();
    let mut done = 0;
    while done < entries.len() {
        let st = batch.get_status(1, 64, None).unwrap();
        for ev in st.events {
            assert!(matches!(ev.state, BatchState::Complete(n) if n == want[ev.cookie as usize].3));
            done += 1;
        }
    }
    for &(which, off, bo, len) in &want {
        let mut back = vec![0u8; len];
        match which {
            0 => dev0.copy_to_host(bo as usize, &mut back).unwrap(),
            1 => dev1.copy_to_host(bo as usize, &mut back).unwrap(),
            _ => back.copy_from_slice(&host[bo as usize..bo as usize + len]),
        }
        assert_eq!(back, &data[off as usize..off as usize + len], "{which} {off} {len}");
    }
    assert_eq!(drv.engine().pools(), 2, "GPU 1 had a pool of its own");
    // A large read into GPU 1 (many tasks on its pool), written back out from GPU 1.
    let mut big = drv.alloc_device(1, data.len()).unwrap();
    assert_eq!(drv.read(&rf, 0, &mut big, 0, data.len()).unwrap(), data.len());
    let wp = d.path().join("out");
    let wf =
        FileHandle::open_with(&wp, OpenOptions::new().read(true).write(true).create(true)).unwrap();
    assert_eq!(drv.write(&wf, 0, &big, 0, data.len()).unwrap(), data.len());
    assert_eq!(std::fs::read(&wp).unwrap(), data);
}

/// `Driver::submit_then`: hundreds of small reads and writes of simulated GPU memory in flight
/// at once with nothing waiting on them (the engine gathers the reads), each completion
/// reported once with its byte count, every byte checked; an I/O that fails reports its error
/// through the callback; a submission refused at once returns the error and never calls back.
#[test]
fn submit_then_reports_every_io_once_and_the_bytes_land() {
    use gdio::memory::BufferRef;
    use gdio::MemoryKind;
    use std::sync::mpsc;
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(91, 4 << 20);
    let path = write_file(d.path(), "then", &data);
    let drv = slow_sim_driver(tiny_config(DirectIoPolicy::Off, 4), Duration::from_micros(300));
    let f = Arc::new(FileHandle::open(&path).unwrap());
    let n = 300;
    let piece = 16 << 10;
    let dev = drv.alloc_device(0, n * piece).unwrap();
    let mut r = rng(92);
    let offs: Vec<u64> = (0..n).map(|_| r.random_range(0..(4 << 20) - piece as u64)).collect();
    let (tx, rx) = mpsc::channel();
    for (i, &off) in offs.iter().enumerate() {
        let tx = tx.clone();
        let buf = BufferRef {
            addr: dev.addr() + (i * piece) as u64,
            len: piece,
            kind: MemoryKind::Device { ordinal: 0 },
        };
        // SAFETY: each piece is its own range of `dev`, which outlives every completion
        // (all are received below before it drops).
        unsafe {
            drv.submit_then(Op::Read, &f, off, buf, Box::new(move |res| tx.send((i, res)).unwrap()))
        }
        .unwrap();
    }
    let mut seen = vec![false; n];
    for _ in 0..n {
        let (i, res) = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        assert!(!seen[i], "piece {i} reported twice");
        seen[i] = true;
        assert_eq!(res.unwrap(), piece);
    }
    assert!(rx.recv_timeout(Duration::from_millis(50)).is_err(), "no extra report");
    let mut got = vec![0u8; n * piece];
    dev.copy_to_host(0, &mut got).unwrap();
    for (i, &off) in offs.iter().enumerate() {
        assert_eq!(&got[i * piece..(i + 1) * piece], expect(&data, off, piece), "piece {i}");
    }

    // Writes from GPU memory, then read back.
    let wpath = d.path().join("then-w");
    let wf = Arc::new(
        FileHandle::open_with(&wpath, OpenOptions::new().read(true).write(true).create(true))
            .unwrap(),
    );
    for i in 0..64 {
        let tx = tx.clone();
        let buf = BufferRef {
            addr: dev.addr() + (i * piece) as u64,
            len: piece,
            kind: MemoryKind::Device { ordinal: 0 },
        };
        // SAFETY: as above.
        unsafe {
            drv.submit_then(
                Op::Write,
                &wf,
                (i * piece) as u64,
                buf,
                Box::new(move |res| tx.send((i, res)).unwrap()),
            )
        }
        .unwrap();
    }
    for _ in 0..64 {
        assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap().1.unwrap(), piece);
    }
    assert_eq!(std::fs::read(&wpath).unwrap(), got[..64 * piece]);

    // A read that starts past the end of the file: the error comes through the callback or
    // at once, never both, and never silently.
    let buf = BufferRef { addr: dev.addr(), len: 4096, kind: MemoryKind::Device { ordinal: 0 } };
    let tx2 = tx.clone();
    // SAFETY: as above.
    let sub = unsafe {
        drv.submit_then(
            Op::Read,
            &f,
            5 << 20,
            buf,
            Box::new(move |res| tx2.send((0, res)).unwrap()),
        )
    };
    match sub {
        Ok(()) => assert!(rx.recv_timeout(Duration::from_secs(10)).unwrap().1.is_err()),
        Err(e) => {
            assert!(e.to_string().contains("offset"), "{e}");
            assert!(rx.recv_timeout(Duration::from_millis(100)).is_err(), "error reported twice");
        }
    }
    // A write on a read-only handle is refused at submission: no callback.
    let tx3 = tx.clone();
    // SAFETY: refused before anything touches the buffer.
    let e = unsafe {
        drv.submit_then(Op::Write, &f, 0, buf, Box::new(move |res| tx3.send((0, res)).unwrap()))
    }
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PermissionDenied);
    assert!(rx.recv_timeout(Duration::from_millis(100)).is_err(), "refused I/O called back");
}

/// `Driver::submit_group`: reads held in a group are not queued until the group fills
/// (`batch_queue_group`), is flushed or is dropped; then each reports once with its bytes,
/// which land exactly (random offsets into simulated GPU memory). A submission refused at once
/// returns its error and never calls back, and leaves the group's other I/Os working.
#[test]
fn a_submit_group_holds_its_ios_until_it_fills_flushes_or_drops() {
    use gdio::memory::BufferRef;
    use gdio::MemoryKind;
    use std::sync::mpsc;
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(93, 2 << 20);
    let path = write_file(d.path(), "group", &data);
    let cfg = Config { batch_queue_group: 16, ..tiny_config(DirectIoPolicy::Off, 4) };
    let drv = sim_driver(cfg, 1);
    let f = Arc::new(FileHandle::open(&path).unwrap());
    let piece = 8 << 10;
    let n = 40;
    let dev = drv.alloc_device(0, n * piece).unwrap();
    let mut r = rng(94);
    let offs: Vec<u64> = (0..n).map(|_| r.random_range(0..(2 << 20) - piece as u64)).collect();
    let (tx, rx) = mpsc::channel();
    let submit = |g: &mut gdio::SubmitGroup<'_>, i: usize, off: u64| {
        let tx = tx.clone();
        let buf = BufferRef {
            addr: dev.addr() + (i * piece) as u64,
            len: piece,
            kind: MemoryKind::Device { ordinal: 0 },
        };
        // SAFETY: each piece is its own range of `dev`, which outlives every completion (all
        // are received below before it drops).
        unsafe {
            g.submit_then(Op::Read, &f, off, buf, Box::new(move |res| tx.send((i, res)).unwrap()))
        }
    };
    let mut seen = vec![false; n];
    let take = |k: usize, seen: &mut Vec<bool>| {
        for _ in 0..k {
            let (i, res) = rx.recv_timeout(Duration::from_secs(30)).unwrap();
            assert!(!seen[i], "piece {i} reported twice");
            seen[i] = true;
            assert_eq!(res.unwrap(), piece, "piece {i}");
        }
    };
    {
        let mut g = drv.submit_group();
        // Fewer than a group: held.
        for (i, &off) in offs.iter().enumerate().take(10) {
            submit(&mut g, i, off).unwrap();
        }
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err(), "a held read ran");
        g.flush();
        take(10, &mut seen);
        // A refused submission (past the end of the file): its error now, no callback.
        let e = submit(&mut g, 39, 3 << 20);
        if let Err(e) = e {
            assert!(e.to_string().contains("offset"), "{e}");
        } else {
            let (i, res) = rx.recv_timeout(Duration::from_secs(30)).unwrap();
            assert!(i == 39 && res.is_err(), "a read past the end succeeded");
        }
        // More than a group: the first 16 go out as soon as they are held; the rest when
        // the group drops.
        for (i, &off) in offs.iter().enumerate().take(39).skip(10) {
            submit(&mut g, i, off).unwrap();
        }
        take(16, &mut seen);
    }
    take(13, &mut seen);
    assert!(rx.recv_timeout(Duration::from_millis(50)).is_err(), "no extra report");
    let mut got = vec![0u8; n * piece];
    dev.copy_to_host(0, &mut got).unwrap();
    for (i, &off) in offs.iter().enumerate().take(39) {
        assert_eq!(&got[i * piece..(i + 1) * piece], expect(&data, off, piece), "piece {i}");
    }
}
