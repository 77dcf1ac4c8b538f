//! Device memory through the ABI on simulated GPUs (`gdio::gpu::sim`, whose copies complete
//! late, so a missing wait reads wrong bytes): registered and unregistered device buffers,
//! concurrent reads, writes, batch and stream-ordered I/O, per-GPU stats.

mod common;

use std::fs::OpenOptions;
use std::ptr::null_mut;
use std::sync::Arc;

use common::*;
use cufile::abi::*;
use cufile::*;
use gdio::gpu::sim::SimRuntime;
use gdio::gpu::GpuRuntime;
use std::time::Duration;

fn sim() -> Arc<SimRuntime> {
    let rt = Arc::new(SimRuntime::new(2, std::time::Duration::from_micros(50)));
    cufile::session::set_runtime_for_tests(Some(rt.clone()));
    rt
}

/// Simulated device memory is host memory: read it directly to check.
fn device_bytes(addr: u64, len: usize) -> Vec<u8> {
    // SAFETY: `addr..addr+len` is a live allocation of the simulated runtime.
    unsafe { std::slice::from_raw_parts(addr as *const u8, len) }.to_vec()
}

#[test]
fn device_memory_reads_writes_batches_and_stats() {
    let _g = serial();
    let rt = sim();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.bin");
    let data = random_bytes(77, 8 << 20);
    std::fs::write(&path, &data).unwrap();
    let f = OpenOptions::new().read(true).write(true).open(&path).unwrap();
    assert_eq!(cuFileSetStatsLevel(3).err, 0);
    let fh = register(&f);
    assert_eq!(cuFileStatsStart().err, 0);
    let len = 8 << 20;
    let dev = rt.alloc_device(1, len).unwrap();
    assert_eq!(cuFileBufRegister(dev as *const _, len, 0).err, 0);
    // 16 threads, each its own quarter-MiB slice of the registered base.
    let fh_u = fh as usize;
    let threads: Vec<_> = (0..16u64)
        .map(|t| {
            std::thread::spawn(move || {
                let off = t * 512 * 1024 + 3;
                let n = cuFileRead(
                    fh_u as CUfileHandle_t,
                    dev as *mut _,
                    500_000,
                    off as i64,
                    off as i64,
                );
                assert_eq!(n, 500_000);
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let got = device_bytes(dev, len);
    for t in 0..16usize {
        let off = t * 512 * 1024 + 3;
        assert_eq!(&got[off..off + 500_000], &data[off..off + 500_000], "slice {t}");
    }
    // An unregistered device buffer on GPU 0, unaligned everything.
    let dev0 = rt.alloc_device(0, 1 << 20).unwrap();
    assert_eq!(cuFileRead(fh, dev0 as *mut _, 700_001, 12_345, 17), 700_001);
    assert_eq!(device_bytes(dev0 + 17, 700_001), data[12_345..12_345 + 700_001]);
    // Device → file.
    let w = random_bytes(78, 300_000);
    // SAFETY: writing into the live simulated allocation.
    unsafe { std::ptr::copy_nonoverlapping(w.as_ptr(), dev0 as *mut u8, w.len()) };
    assert_eq!(cuFileWrite(fh, dev0 as *const _, 300_000, 4096 * 3, 0), 300_000);
    let mut model = data.clone();
    model[4096 * 3..4096 * 3 + 300_000].copy_from_slice(&w);
    assert_eq!(std::fs::read(&path).unwrap(), model);
    // Batch into device memory.
    let mut id: CUfileBatchHandle_t = null_mut();
    assert_eq!(cuFileBatchIOSetUp(&mut id, 2).err, 0);
    let mk = |foff: i64, boff: i64, size: usize, cookie: usize| CUfileIOParams_t {
        mode: BATCH_MODE,
        dev_ptr_base: dev as *mut _,
        file_offset: foff,
        dev_ptr_offset: boff,
        size,
        fh,
        opcode: 0,
        cookie: cookie as *mut _,
    };
    let mut io = [mk(1 << 20, 0, 65_536, 1), mk(5 << 20, 1 << 20, 100_000, 2)];
    assert_eq!(cuFileBatchIOSubmit(id, 2, io.as_mut_ptr(), 0).err, 0);
    let mut ev = [CUfileIOEvents_t { cookie: null_mut(), status: 0, ret: 0 }; 2];
    let mut nr = 2;
    assert_eq!(cuFileBatchIOGetStatus(id, 2, &mut nr, ev.as_mut_ptr(), null_mut()).err, 0);
    assert_eq!(nr, 2);
    assert!(ev.iter().all(|e| e.status == status::COMPLETE));
    assert_eq!(device_bytes(dev, 65_536), model[1 << 20..(1 << 20) + 65_536]);
    assert_eq!(device_bytes(dev + (1 << 20), 100_000), model[5 << 20..(5 << 20) + 100_000]);
    cuFileBatchIODestroy(id);
    // Stream-ordered read on a stream of GPU 0: the result is there once the stream has run.
    let stream = rt.create_stream(0).unwrap();
    let (mut sz, mut fo, mut bo, mut got_n) = (4096usize, 8192i64, 0i64, 0isize);
    let cs = stream as CUstream;
    assert_eq!(
        cuFileReadAsync(fh, dev0 as *mut _, &mut sz, &mut fo, &mut bo, &mut got_n, cs).err,
        0
    );
    rt.with_stream(stream, |s| s.synchronize().unwrap()).unwrap();
    rt.destroy_stream(stream);
    assert_eq!(got_n, 4096);
    assert_eq!(device_bytes(dev0, 4096), model[8192..8192 + 4096]);
    // Per-GPU stats count the device I/O.
    // SAFETY: the stats struct is plain integers.
    let mut l3: Box<CUfileStatsLevel3_t> = Box::new(unsafe { std::mem::zeroed() });
    assert_eq!(cuFileGetStatsL3(&mut *l3).err, 0);
    assert_eq!(l3.num_gpus, 2);
    assert_eq!(l3.per_gpu_stats[1].n_total_reads, 16 + 2);
    assert_eq!(l3.per_gpu_stats[1].read_bytes, 16 * 500_000 + 65_536 + 100_000);
    assert_eq!(l3.per_gpu_stats[0].n_total_reads, 2);
    assert_eq!(l3.per_gpu_stats[0].writes_bytes, 300_000);
    assert_eq!(l3.per_gpu_stats[1].n_mmap, 1);
    assert_eq!(l3.detailed.basic.batch_read_bytes, 165_536);
    assert_eq!(cuFileBufDeregister(dev as *const _).err, 0);
    // A range past the end of its device allocation: 5014, nothing registered.
    assert_eq!(cuFileBufRegister(dev as *const _, len + 1, 0).err, code::CUDA_POINTER_RANGE_ERROR);
    assert_eq!(cuFileBufDeregister(dev as *const _).err, code::MEMORY_NOT_REGISTERED);
    // A sub-range ending exactly at the end is fine (and deregistered again).
    let tail = dev + (len as u64 - 4096);
    assert_eq!(cuFileBufRegister(tail as *const _, 4096, 0).err, 0);
    assert_eq!(cuFileBufDeregister(tail as *const _).err, 0);
    cuFileHandleDeregister(fh);
    assert_eq!(cuFileSetStatsLevel(0).err, 0);
    closed();
    // SAFETY: freeing what alloc_device returned; nothing uses it any more.
    unsafe {
        rt.free_device(1, dev);
        rt.free_device(0, dev0);
    }
    cufile::session::set_runtime_for_tests(None);
}

/// Parameters of one stream-ordered I/O, boxed so their addresses stay put.
struct Args {
    size: usize,
    foff: i64,
    boff: i64,
    bytes: isize,
}

/// Queues on `stream` a late copy of `v` into `*dst` (earlier stream work writing a parameter).
fn late_write<T: Copy>(rt: &SimRuntime, stream: u64, src_dev: u64, dst: *mut T, v: T) {
    let n = std::mem::size_of::<T>();
    // SAFETY: `src_dev` is a live simulated allocation of at least `n` bytes.
    unsafe { std::ptr::copy_nonoverlapping((&v as *const T).cast::<u8>(), src_dev as *mut u8, n) };
    rt.with_stream(stream, |s| {
        // SAFETY: the caller keeps `dst` alive until the stream is synchronized.
        unsafe { s.copy_to_host(dst.cast(), src_dev, n).unwrap() }
    })
    .unwrap();
}

#[test]
fn stream_ordered_io_follows_the_stream_and_its_flags() {
    let _g = serial();
    let rt = Arc::new(SimRuntime::new(2, Duration::from_millis(3)));
    cufile::session::set_runtime_for_tests(Some(rt.clone()));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.bin");
    let data = random_bytes(90, 1 << 20);
    std::fs::write(&path, &data).unwrap();
    let f = OpenOptions::new().read(true).write(true).open(&path).unwrap();
    let fh = register(&f);
    let len = 1 << 20;
    let dev = rt.alloc_device(1, len).unwrap();
    let scratch = rt.alloc_device(1, 64).unwrap();
    let stream = rt.create_stream(1).unwrap();
    let cs = stream as CUstream;
    let sync = || rt.with_stream(stream, |s| s.synchronize().unwrap()).unwrap();

    // Not registered: the size is read when the stream reaches the read, after earlier stream
    // work wrote it (3 ms late).
    let mut a = Box::new(Args { size: 0, foff: 54_321, boff: 77, bytes: -999 });
    late_write(&rt, stream, scratch, &mut a.size, 300_000usize);
    let e =
        cuFileReadAsync(fh, dev as *mut _, &mut a.size, &mut a.foff, &mut a.boff, &mut a.bytes, cs);
    assert_eq!(e.err, 0);
    sync();
    assert_eq!(a.bytes, 300_000);
    assert_eq!(device_bytes(dev + 77, 300_000), data[54_321..354_321]);

    // Three flags are not all four: still read at stream time.
    assert_eq!(cuFileStreamRegister(cs, 0x7).err, 0);
    let mut b = Box::new(Args { size: 10, foff: 4096, boff: 0, bytes: -999 });
    late_write(&rt, stream, scratch + 8, &mut b.foff, 500_000i64);
    let e =
        cuFileReadAsync(fh, dev as *mut _, &mut b.size, &mut b.foff, &mut b.boff, &mut b.bytes, cs);
    assert_eq!(e.err, 0);
    sync();
    assert_eq!(b.bytes, 10);
    assert_eq!(device_bytes(dev, 10), data[500_000..500_010]);
    assert_eq!(cuFileStreamDeregister(cs).err, 0);

    // All four flags: the arguments are read when the read is queued. The stream is held
    // until the call has returned, so the late write of the size lands after it however slow
    // the machine (under valgrind 3 ms pass before the call reads its arguments).
    assert_eq!(cuFileStreamRegister(cs, 0xF).err, 0);
    let mut c = Box::new(Args { size: 8192, foff: 16_384, boff: 4096, bytes: -999 });
    let mut hold = rt.hold_stream(stream).unwrap();
    late_write(&rt, stream, scratch + 16, &mut c.size, 4096usize);
    let e =
        cuFileReadAsync(fh, dev as *mut _, &mut c.size, &mut c.foff, &mut c.boff, &mut c.bytes, cs);
    hold.release();
    assert_eq!(e.err, 0);
    sync();
    assert!(!hold.timed_out(), "cuFileReadAsync waited for its stream");
    assert_eq!((c.bytes, c.size), (8192, 4096));
    assert_eq!(device_bytes(dev + 4096, 8192), data[16_384..16_384 + 8192]);
    assert_eq!(cuFileStreamDeregister(cs).err, 0);

    // A write of bytes earlier stream work put in GPU memory.
    let payload = random_bytes(91, 100_000);
    rt.with_stream(stream, |s| {
        // SAFETY: `payload` and `dev` live until the synchronize below.
        unsafe { s.copy_to_device(dev, payload.as_ptr(), payload.len()).unwrap() }
    })
    .unwrap();
    let mut w = Box::new(Args { size: 100_000, foff: 8192, boff: 0, bytes: -999 });
    let e = cuFileWriteAsync(
        fh,
        dev as *mut _,
        &mut w.size,
        &mut w.foff,
        &mut w.boff,
        &mut w.bytes,
        cs,
    );
    assert_eq!(e.err, 0);
    sync();
    assert_eq!(w.bytes, 100_000);
    let mut model = data.clone();
    model[8192..108_192].copy_from_slice(&payload);
    assert_eq!(std::fs::read(&path).unwrap(), model);

    // I/O errors land in the result with cuFile's encoding; the submission succeeds.
    let ro = OpenOptions::new().read(true).open(&path).unwrap();
    let rh = register(&ro);
    let mut x = Box::new(Args { size: 4096, foff: 0, boff: 0, bytes: -999 });
    let e = cuFileWriteAsync(
        rh,
        dev as *mut _,
        &mut x.size,
        &mut x.foff,
        &mut x.boff,
        &mut x.bytes,
        cs,
    );
    assert_eq!(e.err, 0);
    sync();
    assert_eq!(x.bytes, -(code::INVALID_FILE_OPEN_FLAG as isize));
    // A read past the buffer's allocation: -EINVAL, nothing written.
    let mut y = Box::new(Args { size: 4096, foff: 0, boff: len as i64, bytes: -999 });
    let before = device_bytes(dev, len);
    let e =
        cuFileReadAsync(fh, dev as *mut _, &mut y.size, &mut y.foff, &mut y.boff, &mut y.bytes, cs);
    assert_eq!(e.err, 0);
    sync();
    assert_eq!(y.bytes, -(libc::EINVAL as isize));
    assert_eq!(device_bytes(dev, len), before);
    assert_eq!(std::fs::read(&path).unwrap(), model);

    // A stream of another GPU than the buffer's: refused at submission, result untouched.
    let other = rt.create_stream(0).unwrap();
    let mut z = Box::new(Args { size: 4096, foff: 0, boff: 0, bytes: -999 });
    let e = cuFileReadAsync(
        fh,
        dev as *mut _,
        &mut z.size,
        &mut z.foff,
        &mut z.boff,
        &mut z.bytes,
        other as CUstream,
    );
    assert_eq!(e.err, code::INVALID_VALUE);
    assert_eq!(z.bytes, -999);

    cuFileHandleDeregister(rh);
    cuFileHandleDeregister(fh);
    closed();
    rt.destroy_stream(stream);
    rt.destroy_stream(other);
    // SAFETY: nothing uses these allocations any more.
    unsafe {
        rt.free_device(1, dev);
        rt.free_device(1, scratch);
    }
    cufile::session::set_runtime_for_tests(None);
}

#[test]
fn batch_runs_on_the_engine_cancel_and_destroy_in_flight() {
    let _g = serial();
    let rt = Arc::new(SimRuntime::new(1, Duration::from_millis(2)));
    cufile::session::set_runtime_for_tests(Some(rt.clone()));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.bin");
    let data = random_bytes(92, 4 << 20);
    std::fs::write(&path, &data).unwrap();
    let f = OpenOptions::new().read(true).open(&path).unwrap();
    let fh = register(&f);
    let len = 4 << 20;
    let dev = rt.alloc_device(0, len).unwrap();
    let piece = 256 * 1024;
    let mk = |i: usize| CUfileIOParams_t {
        mode: BATCH_MODE,
        dev_ptr_base: dev as *mut _,
        file_offset: (i * piece) as i64,
        dev_ptr_offset: (i * piece) as i64,
        size: piece,
        fh,
        opcode: 0,
        cookie: (1000 + i) as *mut _,
    };
    let mut id: CUfileBatchHandle_t = null_mut();
    assert_eq!(cuFileBatchIOSetUp(&mut id, 16).err, 0);
    let mut io: Vec<CUfileIOParams_t> = (0..16).map(mk).collect();
    assert_eq!(cuFileBatchIOSubmit(id, 16, io.as_mut_ptr(), 0).err, 0);
    assert_eq!(cuFileBatchIOCancel(id).err, 0);
    // Every entry reported once: complete with its bytes in place, or canceled.
    let mut ev = [CUfileIOEvents_t { cookie: null_mut(), status: 0, ret: 0 }; 16];
    let mut seen = Vec::new();
    while seen.len() < 16 {
        let mut nr = 16;
        let mut t = libc::timespec { tv_sec: 5, tv_nsec: 0 };
        assert_eq!(cuFileBatchIOGetStatus(id, 1, &mut nr, ev.as_mut_ptr(), &mut t).err, 0);
        assert!(nr >= 1);
        for e in &ev[..nr as usize] {
            let i = e.cookie as usize - 1000;
            match e.status {
                status::COMPLETE => {
                    assert_eq!(e.ret, piece);
                    let at = i * piece;
                    assert_eq!(device_bytes(dev + at as u64, piece), data[at..at + piece]);
                }
                status::CANCELED => {}
                s => panic!("entry {i}: status {s:#x}"),
            }
            seen.push(i);
        }
    }
    seen.sort();
    assert_eq!(seen, (0..16).collect::<Vec<_>>());
    // Destroy with entries in flight: waits for them, and the id is gone.
    assert_eq!(cuFileBatchIOSubmit(id, 16, io.as_mut_ptr(), 0).err, 0);
    cuFileBatchIODestroy(id);
    let mut nr = 1;
    assert_eq!(
        cuFileBatchIOGetStatus(id, 0, &mut nr, ev.as_mut_ptr(), null_mut()).err,
        code::INVALID_VALUE
    );
    // Closing the driver with a batch in flight is safe too.
    assert_eq!(cuFileBatchIOSetUp(&mut id, 16).err, 0);
    assert_eq!(cuFileBatchIOSubmit(id, 16, io.as_mut_ptr(), 0).err, 0);
    cuFileHandleDeregister(fh);
    closed();
    // SAFETY: nothing uses the allocation any more (destroy and close waited for the I/O).
    unsafe { rt.free_device(0, dev) };
    cufile::session::set_runtime_for_tests(None);
}
