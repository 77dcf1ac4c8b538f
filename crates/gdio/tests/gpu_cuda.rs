//! Tests on a real NVIDIA GPU. Each skips with a printed reason where there is none (CI);
//! run them on the GPU machine: `cargo test -p gdio --test gpu_cuda` (or the carried test
//! binary) there.

mod common;

use std::sync::Arc;

use common::*;
use gdio::gpu::cuda::CudaRuntime;
use gdio::gpu::GpuRuntime;
use gdio::{Config, DirectIoPolicy, Driver, FileHandle, MemoryKind, OpenOptions};
use rand::Rng;

fn cuda() -> Option<Arc<CudaRuntime>> {
    match CudaRuntime::new() {
        Ok(rt) => Some(Arc::new(rt)),
        Err(e) => {
            gpu_skip(&format!("no CUDA GPU here: {e}"));
            None
        }
    }
}

fn driver(rt: &Arc<CudaRuntime>, config: Config) -> Driver {
    Driver::with_runtime(config, rt.clone() as Arc<dyn GpuRuntime>).unwrap()
}

#[test]
fn gpu_reads_random_ranges_and_verifies() {
    let Some(rt) = cuda() else { return };
    for (where_, d) in dirs() {
        let data = random_bytes(21, 64 << 20);
        let p = write_file(d.path(), "g", &data);
        for (policy, threads, task, bounce, watcher) in [
            (DirectIoPolicy::Off, 8, 1 << 20, 1 << 20, false),
            (DirectIoPolicy::On, 4, 3 << 20, 1 << 20, false),
            (DirectIoPolicy::Auto, 16, 8 << 20, 8 << 20, false),
            // Tasks finished by the completion watcher (the streams' progress words).
            (DirectIoPolicy::Off, 8, 1 << 20, 1 << 20, true),
            (DirectIoPolicy::Auto, 4, 3 << 20, 1 << 20, true),
        ] {
            let drv = driver(
                &rt,
                Config {
                    threads,
                    task_size: task,
                    bounce_buffer_size: bounce,
                    direct_io: policy,
                    completion_watcher: watcher,
                    ..Config::default()
                },
            );
            let f = FileHandle::open(&p).unwrap();
            let mut dev = drv.alloc_device(0, data.len()).unwrap();
            assert_eq!(drv.read(&f, 0, &mut dev, 0, data.len()).unwrap(), data.len());
            assert!(
                dev.to_vec().unwrap() == data,
                "{where_} {policy:?} watcher {watcher}: whole-file read differs"
            );
            let mut r = rng(5);
            for _ in 0..10 {
                let (off, len) = random_range(&mut r, data.len());
                let len = len.min(data.len() - 64);
                let boff = r.random_range(0..64usize);
                let n = drv.read(&f, off, &mut dev, boff, len).unwrap();
                let want = &data[off as usize..(off as usize + len).min(data.len())];
                assert_eq!(n, want.len());
                let mut back = vec![0u8; n];
                dev.copy_to_host(boff, &mut back).unwrap();
                assert!(back == want, "{where_} {policy:?} watcher {watcher} off {off} len {len}");
            }
        }
    }
}

#[test]
fn gpu_writes_read_back() {
    let Some(rt) = cuda() else { return };
    let d = tempfile::tempdir().unwrap();
    for policy in [DirectIoPolicy::Off, DirectIoPolicy::On] {
        let drv = driver(
            &rt,
            Config {
                threads: 8,
                task_size: 2 << 20,
                bounce_buffer_size: 1 << 20,
                direct_io: policy,
                ..Config::default()
            },
        );
        let data = random_bytes(22, (32 << 20) + 12345);
        let mut dev = drv.alloc_device(0, data.len()).unwrap();
        dev.copy_from_host(0, &data).unwrap();
        let p = d.path().join(format!("w{policy:?}"));
        let f = FileHandle::open_with(&p, OpenOptions::new().read(true).write(true).create(true))
            .unwrap();
        assert_eq!(drv.write(&f, 777, &dev, 0, data.len()).unwrap(), data.len());
        let back = std::fs::read(&p).unwrap();
        assert_eq!(back.len(), 777 + data.len());
        assert!(back[777..] == data[..], "{policy:?}");
    }
}

#[test]
fn gpu_pointer_classification_and_cudarc_slices() {
    let Some(rt) = cuda() else { return };
    let drv = driver(&rt, Config::default());
    let dev = drv.alloc_device(0, 4096).unwrap();
    assert_eq!(rt.classify(dev.addr()), MemoryKind::Device { ordinal: 0 });
    let host = vec![0u8; 4096];
    assert_eq!(rt.classify(host.as_ptr() as u64), MemoryKind::Host);
    let pinned = gdio::PinnedBuffer::new(drv.runtime(), 0, 4096).unwrap();
    assert_eq!(rt.classify(pinned.as_ptr() as u64), MemoryKind::PinnedHost);

    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(23, 1 << 20);
    let p = write_file(d.path(), "c", &data);
    let f = FileHandle::open(&p).unwrap();
    let ctx = rt.context(0).unwrap();
    let stream = ctx.default_stream();
    let mut slice = stream.alloc_zeros::<u8>(1 << 20).unwrap();
    assert_eq!(drv.read_cuda_slice(&f, 0, &mut slice, 0, 1 << 20).unwrap(), 1 << 20);
    let back = stream.clone_dtoh(&slice).unwrap();
    assert!(back == data);
    // A host pointer given where device memory is needed is refused, and the reverse.
    let mut h = vec![0u8; 4096];
    // SAFETY: live buffers of 4096 bytes.
    let e = unsafe { drv.read_device_ptr(&f, 0, h.as_mut_ptr() as u64, 4096) }.unwrap_err();
    assert!(e.to_string().contains("needs device memory"), "{e}");
    // SAFETY: as above.
    let e = unsafe { drv.read_host_ptr(&f, 0, dev.addr() as *mut u8, 4096) }.unwrap_err();
    assert!(e.to_string().contains("needs host memory"), "{e}");
    // A GPU that does not exist.
    let e = drv.alloc_device(rt.device_count() + 1, 10).unwrap_err();
    assert_eq!(e.kind(), gdio::ErrorKind::NoGpu);
}

#[test]
fn gpu_many_async_reads_in_flight_complete_out_of_order() {
    let Some(rt) = cuda() else { return };
    let d = tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap());
    let data = random_bytes(50, 32 << 20);
    let f = Arc::new(FileHandle::open(write_file(d.path(), "a", &data)).unwrap());
    let drv = driver(&rt, Config { threads: 8, ..Config::default() });
    let mut r = rng(51);
    for size in [4096usize, 65536, 1 << 20, 4 << 20] {
        let mut hs = Vec::new();
        for _ in 0..64 {
            let off = r.random_range(0..(data.len() - size) as u64 / 4096) * 4096;
            let dev = drv.alloc_device(0, size).unwrap();
            hs.push((off, drv.submit_read(&f, off, dev, 0, size).unwrap()));
        }
        for (off, h) in hs.into_iter().rev() {
            let (n, dev) = h.wait();
            assert_eq!(n.unwrap(), size);
            assert!(
                dev.to_vec().unwrap() == data[off as usize..off as usize + size],
                "size {size}"
            );
        }
    }
    // Dropping handles with I/O in flight, then freeing their buffers: no fault, no stray write.
    for _ in 0..8 {
        let dev = drv.alloc_device(0, 8 << 20).unwrap();
        drop(drv.submit_read(&f, 0, dev, 0, 8 << 20).unwrap());
    }
}

#[test]
fn gpu_batch_4k_random_reads_with_a_failing_entry() {
    let Some(rt) = cuda() else { return };
    let d = tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap());
    let data = random_bytes(52, 16 << 20);
    let f = Arc::new(FileHandle::open(write_file(d.path(), "b", &data)).unwrap());
    let drv = driver(&rt, Config::default());
    let n = 256usize;
    let dev = drv.alloc_device(0, n * 4096).unwrap();
    let mut batch = drv.batch(n + 1).unwrap();
    let mut r = rng(53);
    let mut entries: Vec<gdio::BatchEntry> = (0..n)
        .map(|i| gdio::BatchEntry {
            op: gdio::Op::Read,
            file: f.clone(),
            file_offset: r.random_range(0..(data.len() as u64 / 4096)) * 4096,
            buf_base: dev.addr(),
            buf_offset: (i * 4096) as u64,
            len: 4096,
            cookie: i as u64,
            memory: None,
        })
        .collect();
    let mut bad = entries[0].clone();
    bad.file_offset = 1 << 40;
    bad.cookie = 9999;
    entries.push(bad);
    // SAFETY: `dev` outlives the batch's reporting of every entry.
    unsafe { batch.submit(&entries) }.unwrap();
    let mut seen = 0;
    while seen < entries.len() {
        let st = batch.get_status(1, entries.len(), None).unwrap();
        for ev in &st.events {
            match &ev.state {
                gdio::BatchState::Complete(len) => assert_eq!(*len, 4096),
                gdio::BatchState::Failed(e) => assert_eq!(ev.cookie, 9999, "{e}"),
                s => panic!("{s:?}"),
            }
        }
        seen += st.events.len();
    }
    let back = dev.to_vec().unwrap();
    for e in &entries[..n] {
        let o = e.file_offset as usize;
        let b = e.buf_offset as usize;
        assert!(back[b..b + 4096] == data[o..o + 4096], "entry {}", e.cookie);
    }
}

#[test]
fn gpu_vectored_reads_match_the_file() {
    let Some(rt) = cuda() else { return };
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(54, 8 << 20);
    let f = FileHandle::open(write_file(d.path(), "v", &data)).unwrap();
    let drv = driver(&rt, Config::default());
    let mut r = rng(55);
    let mut pieces = Vec::new();
    let mut bo = 0;
    for _ in 0..100 {
        let len = r.random_range(1..200_000usize);
        let off = r.random_range(0..(data.len() - len) as u64);
        pieces.push((off, bo, len));
        bo += len;
    }
    let mut dev = drv.alloc_device(0, bo).unwrap();
    let got = drv.read_vectored(&f, &mut dev, &pieces).unwrap();
    let back = dev.to_vec().unwrap();
    for (i, &(off, b, len)) in pieces.iter().enumerate() {
        assert_eq!(got[i], len);
        assert!(back[b..b + len] == data[off as usize..off as usize + len], "piece {i}");
    }
}

#[test]
fn gpu_stream_ordered_read_runs_between_earlier_and_later_stream_work() {
    use cudarc::driver::DevicePtr;
    let Some(rt) = cuda() else { return };
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(56, 16 << 20);
    let f = Arc::new(FileHandle::open(write_file(d.path(), "s", &data)).unwrap());
    let drv = driver(&rt, Config::default());
    let ctx = rt.context(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let mut slice = stream.alloc_zeros::<u8>(16 << 20).unwrap();
    for round in 0..4 {
        let len = (4 << 20) + round * 12_345;
        let (size, foff, boff) = (len, (round * 1_000_003) as i64, (round * 4096) as i64);
        let mut bytes: isize = -999;
        // Earlier stream work: zero the whole buffer. If the read ran first, zeros would win.
        stream.memset_zeros(&mut slice).unwrap();
        let base = {
            let (p, _sync) = slice.device_ptr(&stream);
            p
        };
        let params = gdio::StreamIoParams {
            size_p: &size,
            file_offset_p: &foff,
            buf_offset_p: &boff,
            bytes_p: &mut bytes,
            read_at_queue: false,
        };
        // SAFETY: the stream, parameters and slice live until the synchronize below.
        unsafe {
            drv.submit_on_stream(gdio::Op::Read, &f, base, params, stream.cu_stream() as u64)
        }
        .unwrap();
        // Later stream work: an asynchronous copy into pinned memory (a copy into pageable
        // memory would block this thread inside the driver while the I/O is still queued).
        // SAFETY: a fresh pinned allocation, written only by the copy below.
        let mut pinned = unsafe { ctx.alloc_pinned::<u8>(16 << 20) }.unwrap();
        stream.memcpy_dtoh(&slice, &mut pinned).unwrap();
        stream.synchronize().unwrap();
        let back = pinned.as_slice().unwrap().to_vec();
        assert_eq!(bytes, len as isize);
        let (fo, bo) = (foff as usize, boff as usize);
        assert!(back[bo..bo + len] == data[fo..fo + len], "round {round}");
        assert!(back[..bo].iter().all(|&b| b == 0));
    }
}

/// Submits `(file offset, offset in the device buffer at base, len)` entries as `op` in one
/// batch and waits until every one is complete with all its bytes (the entries' device ranges
/// must not overlap, nor their file ranges for writes).
fn run_batch_complete(
    drv: &Driver,
    f: &Arc<FileHandle>,
    plan: &[(u64, u64, usize)],
    base: u64,
    op: gdio::Op,
) {
    let n = plan.len();
    let mut batch = drv.batch(n).unwrap();
    let entries: Vec<gdio::BatchEntry> = plan
        .iter()
        .enumerate()
        .map(|(i, &(off, bo, len))| gdio::BatchEntry {
            op,
            file: f.clone(),
            file_offset: off,
            buf_base: base,
            buf_offset: bo,
            len,
            cookie: i as u64,
            memory: None,
        })
        .collect();
    // SAFETY: the caller's device buffer outlives the batch, whose every event is waited for
    // below; the entries' ranges do not overlap.
    unsafe { batch.submit(&entries) }.unwrap();
    let mut seen = 0;
    while seen < n {
        let st = batch.get_status(1, n, None).unwrap();
        for e in &st.events {
            let len = plan[e.cookie as usize].2;
            assert!(matches!(e.state, gdio::BatchState::Complete(m) if m == len), "{e:?}");
        }
        seen += st.events.len();
    }
}

#[test]
fn gpu_gathered_small_reads_land_exactly_batched_one_by_one_and_scattered() {
    let Some(rt) = cuda() else { return };
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(61, 8 << 20);
    let f = Arc::new(FileHandle::open(write_file(d.path(), "g", &data)).unwrap());
    for (batch_copy, scatter) in [(true, false), (false, false), (false, true)] {
        let config = Config {
            threads: 2,
            direct_io: DirectIoPolicy::Off,
            gather_max_pieces: 64,
            gather_batch_copy: batch_copy,
            gather_scatter: scatter,
            ..Config::default()
        };
        let drv = driver(&rt, config);
        let mut r = rng(62);
        let n = 512;
        let mut plan = Vec::new();
        let mut at = 0u64;
        for i in 0..n {
            let len: usize = if i % 2 == 0 { 4096 } else { r.random_range(1..=65_536) };
            let off = r.random_range(0..(data.len() - len) as u64);
            at += r.random_range(0..600);
            plan.push((off, at, len));
            at += len as u64;
        }
        let mut dev = drv.alloc_device(0, at as usize).unwrap();
        let poison = random_bytes(63, at as usize);
        dev.copy_from_host(0, &poison).unwrap();
        run_batch_complete(&drv, &f, &plan, dev.addr(), gdio::Op::Read);
        let mut want = poison.clone();
        for &(off, bo, len) in &plan {
            want[bo as usize..bo as usize + len]
                .copy_from_slice(&data[off as usize..off as usize + len]);
        }
        let back = dev.to_vec().unwrap();
        assert!(back == want, "batch_copy {batch_copy} scatter {scatter}: bytes differ");
        let c = drv.engine().counters();
        assert!(c.gathered_reads > 0, "nothing was gathered");
        // Every group went the way the key says (the driver loads the kernel here).
        let want_scattered = if scatter { c.gathered_reads } else { 0 };
        assert_eq!(c.scattered_reads, want_scattered, "batch_copy {batch_copy} scatter {scatter}");
    }
}

#[test]
fn gpu_gathered_small_writes_reach_the_file_exactly() {
    let Some(rt) = cuda() else { return };
    let d = tempfile::tempdir().unwrap();
    let size = 8 << 20;
    // A group as one `cuMemcpyBatchAsync` or as a copy call per piece; and not gathered.
    for (gather_writes, batch_copy) in [(true, true), (true, false), (false, true)] {
        let poison = random_bytes(64, size);
        let path = write_file(d.path(), &format!("w{gather_writes}{batch_copy}"), &poison);
        let f = Arc::new(
            FileHandle::open_with(&path, OpenOptions::new().read(true).write(true)).unwrap(),
        );
        let config = Config {
            threads: 2,
            direct_io: DirectIoPolicy::Off,
            gather_writes,
            // Small writes are gathered on every filesystem here, whatever the temp dir is on.
            gather_write_disk_min_bytes: 0,
            gather_batch_copy: batch_copy,
            ..Config::default()
        };
        let drv = driver(&rt, config);
        let mut r = rng(65);
        // 512 writes to disjoint slots of the file, from their own places of one device
        // buffer, queued in a shuffled order.
        let n = 512;
        let slot = size / n;
        let mut plan = Vec::new();
        let mut at = 0u64;
        for i in 0..n {
            let len: usize = if i % 2 == 0 { 4096 } else { r.random_range(1..=slot) };
            let off = (i * slot + r.random_range(0..=slot - len)) as u64;
            at += r.random_range(0..600);
            plan.push((off, at, len));
            at += len as u64;
        }
        for i in (1..n).rev() {
            plan.swap(i, r.random_range(0..=i));
        }
        let src = random_bytes(66, at as usize);
        let mut dev = drv.alloc_device(0, at as usize).unwrap();
        dev.copy_from_host(0, &src).unwrap();
        run_batch_complete(&drv, &f, &plan, dev.addr(), gdio::Op::Write);
        let mut want = poison.clone();
        for &(off, bo, len) in &plan {
            want[off as usize..off as usize + len]
                .copy_from_slice(&src[bo as usize..bo as usize + len]);
        }
        assert!(
            std::fs::read(&path).unwrap() == want,
            "gather_writes {gather_writes} batch_copy {batch_copy}: file differs"
        );
        let gathered = drv.engine().counters().gathered_writes;
        assert_eq!(
            gathered > 0,
            gather_writes,
            "gather_writes {gather_writes}: {gathered} gathered"
        );
    }
}

#[test]
fn gpu_scattered_copies_put_every_piece_in_place_and_nothing_else() {
    let Some(rt) = cuda() else { return };
    let mut r = rng(64);
    let mut stream = rt.new_stream(0, 2).unwrap();
    // Rounds: many small pieces (more than one launch carries), a few large ones, and pieces
    // whose destinations and sources are and are not 16-byte aligned.
    for (round, (n, max_len, align)) in
        [(150, 4096, 1), (70, 70_000, 16), (5, 3 << 20, 16), (40, 9000, 4)].into_iter().enumerate()
    {
        let mut pieces = Vec::new();
        let (mut src_at, mut dst_at) = (0usize, 0usize);
        for _ in 0..n {
            let len = r.random_range(1..=max_len);
            src_at = src_at.next_multiple_of(align) + align * r.random_range(0..3);
            dst_at += r.random_range(0..100) * align;
            pieces.push((dst_at, src_at, len));
            src_at += len;
            dst_at += len;
        }
        // Even rounds: pageable memory (a copy per piece); odd: pinned memory, which the
        // kernel reads in place.
        let data = random_bytes(65 + round as u64, src_at);
        let pinned = (round % 2 == 1).then(|| rt.alloc_pinned(0, src_at).unwrap());
        let src: &[u8] = match pinned {
            // SAFETY: a fresh pinned allocation of `src_at` bytes, freed at the end of the round.
            Some(p) => unsafe {
                std::ptr::copy_nonoverlapping(data.as_ptr(), p, src_at);
                std::slice::from_raw_parts(p, src_at)
            },
            None => &data,
        };
        let dev = rt.alloc_device(0, dst_at).unwrap();
        let poison = random_bytes(90 + round as u64, dst_at);
        let descs: Vec<(u64, u32, u32)> =
            pieces.iter().map(|&(d, s, len)| (dev + d as u64, s as u32, len as u32)).collect();
        let mut back = vec![0u8; dst_at];
        // SAFETY: `poison`, `src` and `back` outlive the synchronize below; every device range
        // lies inside `dev`, every piece inside `src`.
        let kernel = unsafe {
            stream.copy_to_device(dev, poison.as_ptr(), dst_at).unwrap();
            let kernel = stream.copy_to_device_scattered(src.as_ptr(), src.len(), &descs).unwrap();
            stream.copy_to_host(back.as_mut_ptr(), dev, dst_at).unwrap();
            kernel
        };
        assert_eq!(kernel, pinned.is_some(), "round {round}: the kernel reads pinned memory only");
        stream.synchronize().unwrap();
        let mut want = poison.clone();
        for &(d, s, len) in &pieces {
            want[d..d + len].copy_from_slice(&src[s..s + len]);
        }
        assert!(back == want, "round {round}: scattered bytes differ");
        // A piece that ends past the range is refused, and nothing of the group is queued.
        let bad = [(dev, 0u32, 16u32), (dev + 64, (src.len() - 8) as u32, 16)];
        // SAFETY: refused before anything is queued.
        let err = unsafe { stream.copy_to_device_scattered(src.as_ptr(), src.len(), &bad) };
        assert!(err.unwrap_err().to_string().contains("ends past"), "round {round}");
        // SAFETY: as above.
        unsafe { stream.copy_to_host(back.as_mut_ptr(), dev, dst_at).unwrap() };
        stream.synchronize().unwrap();
        assert!(back == want, "round {round}: a refused group changed device memory");
        // SAFETY: allocated above, nothing queued on them any more.
        unsafe {
            rt.free_device(0, dev);
            if let Some(p) = pinned {
                rt.free_pinned(p, src_at);
            }
        }
    }
}

/// Whether GPU `ordinal`'s primary context exists in this process.
fn primary_context_active(ordinal: i32) -> bool {
    use cudarc::driver::sys;
    let (mut dev, mut flags, mut active) = (0, 0u32, 0i32);
    // SAFETY: the CUDA runtime above loaded and initialised libcuda; plain out-pointers.
    unsafe {
        assert_eq!(sys::cuDeviceGet(&mut dev, ordinal), sys::CUresult::CUDA_SUCCESS);
        assert_eq!(
            sys::cuDevicePrimaryCtxGetState(dev, &mut flags, &mut active),
            sys::CUresult::CUDA_SUCCESS
        );
    }
    active != 0
}

#[test]
fn gpu_work_on_gpu_1_makes_no_context_on_gpu_0() {
    // A rank that uses only GPU 1 must not pay for (or fill) a context on GPU 0: reads, writes,
    // pointer queries and batches on GPU 1 memory, from the calling thread and the workers.
    let Some(rt) = cuda() else { return };
    if rt.device_count() < 2 {
        eprintln!("SKIPPED: needs two GPUs (this machine has {})", rt.device_count());
        return;
    }
    if primary_context_active(0) {
        eprintln!("SKIPPED: GPU 0 already has a context in this process (run this test alone)");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(61, (16 << 20) + 123);
    let p = write_file(d.path(), "g1", &data);
    let drv = driver(&rt, Config { threads: 4, ..Config::default() });
    let f = FileHandle::open_with(&p, OpenOptions::new().read(true).write(true)).unwrap();
    let mut dev = drv.alloc_device(1, data.len()).unwrap();
    assert_eq!(rt.classify(dev.addr()), MemoryKind::Device { ordinal: 1 });
    assert_eq!(drv.read(&f, 0, &mut dev, 0, data.len()).unwrap(), data.len());
    assert!(dev.to_vec().unwrap() == data, "GPU 1 read differs");
    let mut r = rng(9);
    for _ in 0..8 {
        let (off, len) = random_range(&mut r, data.len());
        let n = drv.read(&f, off, &mut dev, 0, len).unwrap();
        let mut back = vec![0u8; n];
        dev.copy_to_host(0, &mut back).unwrap();
        assert!(back == data[off as usize..off as usize + n], "GPU 1 read at {off}+{len}");
    }
    assert_eq!(drv.write(&f, 4096, &dev, 0, 1 << 20).unwrap(), 1 << 20);
    assert!(!primary_context_active(0), "gdio made a context on GPU 0 for work on GPU 1");
}

/// A marker's landing, asked from another thread (as the completion watcher asks it): not
/// reached while a large copy runs behind a long queue, reached once the stream is past it,
/// still answering after its stream is gone; forks name their root's queue. The bytes copied
/// are checked.
#[test]
fn gpu_landings_answer_from_any_thread_and_outlive_their_stream() {
    let Some(rt) = cuda() else { return };
    let len = 256usize << 20;
    let data = random_bytes(77, len);
    let pinned = rt.alloc_pinned(0, len).unwrap();
    // SAFETY: a fresh pinned allocation of `len` bytes, freed at the end.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), pinned, len) };
    let dev = rt.alloc_device(0, len).unwrap();
    let mut root = rt.new_stream(0, 1).unwrap();
    let mut s = root.fork(2).unwrap();
    // SAFETY: both ranges hold `len` bytes and live until the stream is synchronized below.
    unsafe {
        for _ in 0..8 {
            s.copy_to_device(dev, pinned, len).unwrap();
        }
    }
    s.record(1).unwrap();
    let landing = s.landing(1).expect("CUDA streams share their markers");
    assert!(s.landing(0).is_none(), "slot 0 was never recorded");
    let asked = landing.clone();
    // 2 GiB behind the marker: far more than the microseconds this thread takes to ask.
    assert!(!std::thread::spawn(move || asked.reached()).join().unwrap());
    s.wait(1).unwrap();
    let asked = landing.clone();
    assert!(std::thread::spawn(move || asked.reached()).join().unwrap());
    root.record(0).unwrap();
    assert_eq!(root.landing(0).unwrap().queue(), landing.queue(), "a fork queues on its root");
    let mut back = vec![0u8; len];
    // SAFETY: `back` holds `len` bytes; `dev` is a `len`-byte device allocation.
    unsafe { s.copy_to_host(back.as_mut_ptr(), dev, len).unwrap() };
    s.synchronize().unwrap();
    assert!(back == data, "the bytes copied differ");
    drop((s, root));
    assert!(landing.reached(), "a landing keeps its events after its stream");
    drop(landing);
    // SAFETY: allocated above by this runtime, freed once.
    unsafe {
        rt.free_device(0, dev);
        rt.free_pinned(pinned, len);
    }
}

/// Page-cache pins on the real GPU (`page_cache_pins_max_bytes`): once a file has been read
/// twice over and its chunks are registered (read-only `cuMemHostRegister` of a populated
/// mapping), every 4 MiB read is one DMA out of the page cache, every byte the file's, with no
/// `pread`; random ranges across the chunk boundary land in place; a file rewritten in place
/// is read with its new bytes, never out of its old pins, which are then released.
#[test]
fn gpu_page_cache_pins_serve_reads_byte_exact_and_drop_changed_files() {
    use std::time::{Duration, Instant};
    let Some(rt) = cuda() else { return };
    const CHUNK: usize = 32 << 20;
    let wait_pinned = |drv: &Driver, bytes: u64| {
        let start = Instant::now();
        while drv.engine().counters().page_cache_pinned_bytes != bytes {
            let now = drv.engine().counters().page_cache_pinned_bytes;
            assert!(start.elapsed() < Duration::from_secs(20), "pinned {now}, want {bytes}");
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    let pass = |drv: &Driver, f: &FileHandle, dev: &mut gdio::gpu::DeviceBuffer, want: &[u8]| {
        for off in (0..want.len()).step_by(4 << 20) {
            let len = (4usize << 20).min(want.len() - off);
            assert_eq!(drv.read(f, off as u64, dev, off, len).unwrap(), len, "at {off}");
        }
        assert!(dev.to_vec().unwrap()[..want.len()] == *want, "bytes differ from the file's");
    };
    for (i, (where_, d)) in dirs().into_iter().enumerate() {
        let size = 2 * CHUNK + (5 << 20) + 777;
        let data = random_bytes(130 + i as u64, size);
        let p = write_file(d.path(), "pins", &data);
        // A file changed in the last two seconds is not pinned.
        std::thread::sleep(Duration::from_millis(2100));
        let config = Config {
            page_cache_pins_max_bytes: 1 << 30,
            page_cache_pins_min_request_bytes: 1 << 20,
            ..Config::default()
        };
        let drv = driver(&rt, config);
        let f = FileHandle::open(&p).unwrap();
        let mut dev = drv.alloc_device(0, size).unwrap();
        pass(&drv, &f, &mut dev, &data);
        pass(&drv, &f, &mut dev, &data);
        let page = rustix::param::page_size();
        let pinned = (2 * CHUNK + (size - 2 * CHUNK).div_ceil(page) * page) as u64;
        wait_pinned(&drv, pinned);
        let before = drv.engine().counters();
        pass(&drv, &f, &mut dev, &data);
        let after = drv.engine().counters();
        assert_eq!(after.pinned_reads - before.pinned_reads, size.div_ceil(4 << 20) as u64);
        assert_eq!(after.buffered_read_bytes, before.buffered_read_bytes, "{where_}: pread");
        let mut r = rng(131 + i as u64);
        for _ in 0..30 {
            let len = r.random_range((1 << 20)..(16 << 20));
            let off = r.random_range((CHUNK - (8 << 20))..(size - (1 << 20)));
            let at = r.random_range(0..(size - len));
            let n = drv.read(&f, off as u64, &mut dev, at, len).unwrap();
            let want = &data[off..(off + len).min(size)];
            assert_eq!(n, want.len(), "{where_}: {len} at {off}");
            let mut back = vec![0u8; n];
            dev.copy_to_host(at, &mut back).unwrap();
            assert!(back == want, "{where_}: {len} at {off} into {at} differs");
        }
        assert_eq!(drv.engine().counters().pinned_reads - after.pinned_reads, 30, "{where_}");
        // Rewritten in place (same inode, other bytes, other length): the new bytes come back.
        let new = random_bytes(140 + i as u64, size - 9000);
        std::fs::write(&p, &new).unwrap();
        let before = drv.engine().counters().pinned_reads;
        pass(&drv, &f, &mut dev, &new);
        assert_eq!(drv.engine().counters().pinned_reads, before, "{where_}: old pins read");
        wait_pinned(&drv, 0);
    }
}

/// Read-ahead (`read_ahead_bytes`, 64 MiB here) on the real GPU: 4 MiB reads in order, from
/// one thread and from eight taking the next range in turn (KvikIO's way), are served out of
/// ranges read ahead into GPU memory (copied device to device; given back once the file was
/// read to its end) and into pinned host memory (`read_ahead_gpu_memory` false; kept) with
/// every byte the file's; a file rewritten in place while ranges of it are read ahead is read
/// with its new bytes, never out of what was read ahead before.
#[test]
fn gpu_read_ahead_serves_sequential_reads_byte_exact_and_drops_changed_files() {
    let Some(rt) = cuda() else { return };
    const REQ: usize = 4 << 20;
    let pass = |drv: &Driver, f: &FileHandle, dev: &gdio::gpu::DeviceBuffer, want: &[u8], t| {
        read_in_turn(drv, f, dev, want, t, REQ)
    };
    for (i, (where_, d)) in dirs().into_iter().enumerate() {
        let size = 48 * REQ + 4321;
        let data = random_bytes(150 + i as u64, size);
        let p = write_file(d.path(), "ahead", &data);
        for gpu_memory in [true, false] {
            std::fs::write(&p, &data).unwrap();
            // A file changed in the last two seconds is not read ahead.
            std::thread::sleep(std::time::Duration::from_millis(2100));
            let config = Config {
                read_ahead_bytes: 64 << 20,
                read_ahead_gpu_memory: gpu_memory,
                ..Config::default()
            };
            let drv = driver(&rt, config);
            let f = FileHandle::open(&p).unwrap();
            let dev = drv.alloc_device(0, size).unwrap();
            for threads in [1, 8] {
                let before = drv.engine().counters().read_ahead_reads;
                pass(&drv, &f, &dev, &data, threads);
                let c = drv.engine().counters();
                let at = format!("{where_}, {threads} threads, GPU memory {gpu_memory}");
                assert!(c.read_ahead_reads - before >= 24, "{at}: {c:?}");
                let held = (c.read_ahead_pinned_bytes, c.read_ahead_gpu_bytes);
                assert_eq!(held, if gpu_memory { (0, 0) } else { (64 << 20, 0) }, "{at}: {c:?}");
            }
            // Half the file in order, so that the ranges after it are read ahead; then another
            // writer rewrites the file, and a pass reads every byte of the new one.
            pass(&drv, &f, &dev, &data[..24 * REQ], 1);
            let new = random_bytes(160 + i as u64, size - 5000);
            std::fs::write(&p, &new).unwrap();
            pass(&drv, &f, &dev, &new, 8);
            let c = drv.engine().counters();
            assert!(c.read_ahead_unused_bytes > 0, "{where_}, GPU memory {gpu_memory}: {c:?}");
        }
    }
}
