//! Stream-ordered I/O on simulated GPUs (whose stream work runs late on its own thread): the
//! I/O starts after earlier stream work, which may write its size and offsets; later stream
//! work sees its bytes; a stream of another context is refused.

mod common;

use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use gdio::gpu::sim::SimRuntime;
use gdio::{DirectIoPolicy, Driver, FileHandle, Op, OpenOptions, StreamIoParams};

fn setup(delay_ms: u64) -> (Arc<SimRuntime>, Driver) {
    let rt = Arc::new(SimRuntime::new(2, Duration::from_millis(delay_ms)));
    let drv = Driver::with_runtime(tiny_config(DirectIoPolicy::Off, 3), rt.clone()).unwrap();
    (rt, drv)
}

/// The caller's parameter memory. The result is an atomic, as a caller who polls it while the
/// I/O runs must read it (the library stores it with release ordering).
struct Params {
    size: usize,
    foff: i64,
    boff: i64,
    bytes: AtomicIsize,
}

impl Params {
    fn new(size: usize, foff: i64, boff: i64) -> Box<Params> {
        Box::new(Params { size, foff, boff, bytes: AtomicIsize::new(-999) })
    }

    fn ptrs(&mut self) -> StreamIoParams {
        StreamIoParams {
            size_p: &self.size,
            file_offset_p: &self.foff,
            buf_offset_p: &self.boff,
            bytes_p: self.bytes.as_ptr(),
            read_at_queue: false,
        }
    }

    /// The result as the I/O stored it.
    fn bytes(&self) -> isize {
        self.bytes.load(Ordering::Acquire)
    }
}

#[test]
fn read_whose_size_and_offset_are_written_by_earlier_stream_work() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(60, 1 << 20);
    let f = Arc::new(FileHandle::open(write_file(d.path(), "s", &data)).unwrap());
    let (rt, drv) = setup(3);
    let stream = rt.create_stream(0).unwrap();
    let dev = drv.alloc_device(0, 1 << 20).unwrap();
    // The real parameters sit in device memory; earlier stream work copies them into the host
    // parameter block, 3 ms late.
    let mut real = Vec::new();
    real.extend_from_slice(&300_000usize.to_ne_bytes());
    real.extend_from_slice(&12_345i64.to_ne_bytes());
    real.extend_from_slice(&777i64.to_ne_bytes());
    let mut pdev = drv.alloc_device(0, real.len()).unwrap();
    pdev.copy_from_host(0, &real).unwrap();
    let mut p = Params::new(0, 0, 0);
    let mut out = vec![0u8; 300_000];
    rt.with_stream(stream, |s| {
        // SAFETY: the parameter fields and `pdev` live until the stream is synchronized below.
        unsafe {
            s.copy_to_host((&mut p.size as *mut usize).cast(), pdev.addr(), 8).unwrap();
            s.copy_to_host((&mut p.foff as *mut i64).cast(), pdev.addr() + 8, 8).unwrap();
            s.copy_to_host((&mut p.boff as *mut i64).cast(), pdev.addr() + 16, 8).unwrap();
        }
    })
    .unwrap();
    let params = p.ptrs();
    // SAFETY: the stream, the parameters and `dev` outlive the stream's run of the I/O.
    unsafe { drv.submit_on_stream(Op::Read, &f, dev.addr(), params, stream) }.unwrap();
    // Later stream work: copy the destination out; it must see the read's bytes.
    rt.with_stream(stream, |s| {
        // SAFETY: `out` and `dev` live until the synchronize right after.
        unsafe { s.copy_to_host(out.as_mut_ptr(), dev.addr() + 777, out.len()).unwrap() };
        s.synchronize().unwrap();
    })
    .unwrap();
    assert_eq!(p.bytes(), 300_000, "result written before later stream work ran");
    assert_eq!(&out[..], &data[12_345..312_345]);
    rt.destroy_stream(stream);
}

#[test]
fn write_of_bytes_that_earlier_stream_work_put_in_gpu_memory() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("w");
    let f = Arc::new(
        FileHandle::open_with(&path, OpenOptions::new().read(true).write(true).create(true))
            .unwrap(),
    );
    let (rt, drv) = setup(2);
    let stream = rt.create_stream(1).unwrap();
    let payload = random_bytes(61, 200_000);
    let dev = drv.alloc_device(1, 200_000).unwrap();
    let mut p = Params::new(200_000, 4096, 0);
    rt.with_stream(stream, |s| {
        // SAFETY: `payload` and `dev` live until the stream is synchronized below.
        unsafe { s.copy_to_device(dev.addr(), payload.as_ptr(), payload.len()).unwrap() };
    })
    .unwrap();
    let params = p.ptrs();
    // SAFETY: as in the read test.
    unsafe { drv.submit_on_stream(Op::Write, &f, dev.addr(), params, stream) }.unwrap();
    rt.with_stream(stream, |s| s.synchronize().unwrap()).unwrap();
    assert_eq!(p.bytes(), 200_000);
    let got = std::fs::read(&path).unwrap();
    assert_eq!(&got[4096..], &payload[..]);
}

#[test]
fn errors_land_in_the_result_and_foreign_streams_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(62, 100_000);
    let src = write_file(d.path(), "e", &data);
    let f = Arc::new(FileHandle::open(&src).unwrap());
    let (rt, drv) = setup(1);
    let dev = drv.alloc_device(0, 100_000).unwrap();
    let mut p = Params::new(1000, 0, 0);
    // A stream of another runtime (another context), and one of another GPU.
    let other = SimRuntime::new(1, Duration::ZERO);
    let foreign = other.create_stream(0).unwrap();
    let params = p.ptrs();
    // SAFETY: refused before anything is enqueued.
    let e = unsafe { drv.submit_on_stream(Op::Read, &f, dev.addr(), params, foreign) }.unwrap_err();
    assert!(e.to_string().contains("another context"), "{e}");
    let gpu1 = rt.create_stream(1).unwrap();
    // SAFETY: as above.
    let e = unsafe { drv.submit_on_stream(Op::Read, &f, dev.addr(), params, gpu1) }.unwrap_err();
    assert!(e.to_string().contains("GPU 1"), "{e}");
    // Host memory on a stream of another runtime is refused too.
    let host = [0u8; 16];
    // SAFETY: as above.
    let e = unsafe { drv.submit_on_stream(Op::Read, &f, host.as_ptr() as u64, params, foreign) };
    assert!(e.unwrap_err().to_string().contains("another context"));
    // A write through a read-only handle fails when it runs: -EBADF in the result, file intact.
    let s0 = rt.create_stream(0).unwrap();
    // SAFETY: the stream, parameters and `dev` outlive the synchronize below.
    unsafe { drv.submit_on_stream(Op::Write, &f, dev.addr(), params, s0) }.unwrap();
    rt.with_stream(s0, |s| s.synchronize().unwrap()).unwrap();
    assert_eq!(p.bytes(), -(libc::EBADF as isize));
    assert_eq!(std::fs::read(&src).unwrap(), data);
    // A negative offset read from memory at run time: -EINVAL.
    p.foff = -5;
    *p.bytes.get_mut() = 0;
    let params = p.ptrs();
    // SAFETY: as above.
    unsafe { drv.submit_on_stream(Op::Read, &f, dev.addr(), params, s0) }.unwrap();
    rt.with_stream(s0, |s| s.synchronize().unwrap()).unwrap();
    assert_eq!(p.bytes(), -(libc::EINVAL as isize));
}

/// A NULL or misaligned parameter pointer (reading or writing through one is undefined
/// behaviour) is refused when the I/O is submitted, naming it: nothing is read into the
/// buffer and the memory behind the other pointers is not written.
#[test]
fn null_or_misaligned_parameter_pointers_are_refused_before_anything_runs() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(66, 100_000);
    let f = Arc::new(FileHandle::open(write_file(d.path(), "m", &data)).unwrap());
    let (rt, drv) = setup(1);
    let s0 = rt.create_stream(0).unwrap();
    let mut dev = drv.alloc_device(0, 100_000).unwrap();
    let junk = random_bytes(67, 100_000);
    dev.copy_from_host(0, &junk).unwrap();
    // Four 8-byte slots in memory aligned to 8, holding the size, offsets and a result
    // sentinel; a pointer one byte in is misaligned.
    let mut slots = [1000u64, 0, 0, (-999i64) as u64];
    let base = slots.as_mut_ptr().cast::<u8>();
    let good = |i: usize| base.wrapping_add(8 * i);
    let cases: [(&str, StreamIoParams); 5] = std::array::from_fn(|case| {
        let mut p = StreamIoParams {
            size_p: good(0).cast(),
            file_offset_p: good(1).cast(),
            buf_offset_p: good(2).cast(),
            bytes_p: good(3).cast(),
            read_at_queue: case % 2 == 0,
        };
        match case {
            0 => p.size_p = good(0).wrapping_add(1).cast(),
            1 => p.file_offset_p = good(1).wrapping_add(3).cast(),
            2 => p.buf_offset_p = good(2).wrapping_add(4).cast(),
            3 => p.bytes_p = good(3).wrapping_add(1).cast(),
            _ => p.bytes_p = std::ptr::null_mut(),
        }
        let what = ["size", "file offset", "buffer offset", "result", "result"][case];
        (what, p)
    });
    for (what, params) in cases {
        // SAFETY: refused before anything is read, written or queued; the stream and `dev`
        // outlive the synchronize below.
        let e =
            unsafe { drv.submit_on_stream(Op::Read, &f, dev.addr(), params, s0) }.expect_err(what);
        assert_eq!(e.kind(), gdio::ErrorKind::InvalidInput, "{what}: {e}");
        assert_eq!(e.errno(), Some(libc::EINVAL), "{what}: {e}");
        assert!(e.to_string().contains(&format!("the {what} pointer")), "{e}");
    }
    rt.with_stream(s0, |s| s.synchronize().unwrap()).unwrap();
    assert_eq!(dev.to_vec().unwrap(), junk, "a refused I/O wrote the buffer");
    assert_eq!(slots, [1000u64, 0, 0, (-999i64) as u64], "a refused I/O wrote its parameters");
    // The same memory, aligned, reads.
    let params = StreamIoParams {
        size_p: good(0).cast(),
        file_offset_p: good(1).cast(),
        buf_offset_p: good(2).cast(),
        bytes_p: good(3).cast(),
        read_at_queue: false,
    };
    // SAFETY: `slots` and `dev` outlive the synchronize below.
    unsafe { drv.submit_on_stream(Op::Read, &f, dev.addr(), params, s0) }.unwrap();
    rt.with_stream(s0, |s| s.synchronize().unwrap()).unwrap();
    assert_eq!(slots[3] as i64, 1000);
    assert_eq!(dev.to_vec().unwrap()[..1000], data[..1000]);
    assert_eq!(dev.to_vec().unwrap()[1000..], junk[1000..]);
}

#[test]
fn fixed_parameters_are_read_at_queue_time_and_the_allocation_end_holds() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(63, 1 << 20);
    let f = Arc::new(FileHandle::open(write_file(d.path(), "q", &data)).unwrap());
    // The earlier stream work must still be pending when the I/O is queued (under valgrind a
    // 3 ms delay was not always enough, and the queued size read 5000): the stream is held
    // until the submission has returned.
    let (rt, drv) = setup(3);
    let stream = rt.create_stream(0).unwrap();
    let dev = drv.alloc_device(0, 1 << 20).unwrap();
    let mut pdev = drv.alloc_device(0, 8).unwrap();
    pdev.copy_from_host(0, &5000usize.to_ne_bytes()).unwrap();
    // Earlier stream work changes the size; with read_at_queue the queued value (3000) holds.
    let mut p = Params::new(3000, 100, 10);
    let mut hold = rt.hold_stream(stream).unwrap();
    rt.with_stream(stream, |s| {
        // SAFETY: `p` and `pdev` live until the stream is synchronized below.
        unsafe { s.copy_to_host((&mut p.size as *mut usize).cast(), pdev.addr(), 8).unwrap() };
    })
    .unwrap();
    let mut params = p.ptrs();
    params.read_at_queue = true;
    let seen = Arc::new(std::sync::Mutex::new(None));
    let s2 = seen.clone();
    let done: gdio::stream_io::StreamIoDone = Box::new(move |size, r, _took| {
        *s2.lock().unwrap() = Some((size, r.as_ref().ok().copied()));
        -77
    });
    // SAFETY: the stream, parameters and `dev` outlive the synchronize below.
    unsafe { drv.submit_on_stream_with(Op::Read, &f, dev.addr(), params, stream, Some(done)) }
        .unwrap();
    hold.release();
    rt.with_stream(stream, |s| s.synchronize().unwrap()).unwrap();
    assert!(!hold.timed_out(), "the submission waited for its stream");
    // The hook saw the size and result and chose the stored value.
    assert_eq!(*seen.lock().unwrap(), Some((3000, Some(3000))));
    assert_eq!((p.size, p.bytes()), (5000, -77));
    assert_eq!(dev.to_vec().unwrap()[10..3010], data[100..3100]);
    // A size read at run time that runs past the allocation: -EINVAL, nothing written.
    let before = dev.to_vec().unwrap();
    p.size = 4096;
    p.boff = (1 << 20) - 100;
    *p.bytes.get_mut() = 0;
    let params = p.ptrs();
    // SAFETY: as above.
    unsafe { drv.submit_on_stream(Op::Read, &f, dev.addr(), params, stream) }.unwrap();
    rt.with_stream(stream, |s| s.synchronize().unwrap()).unwrap();
    assert_eq!(p.bytes(), -(libc::EINVAL as isize));
    assert_eq!(dev.to_vec().unwrap(), before);
    rt.destroy_stream(stream);
}

#[test]
fn without_a_gpu_the_null_stream_runs_host_io_at_once() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(64, 50_000);
    let f = Arc::new(FileHandle::open(write_file(d.path(), "h", &data)).unwrap());
    let drv = Driver::with_runtime(
        tiny_config(DirectIoPolicy::Off, 2),
        Arc::new(gdio::gpu::host::HostRuntime::new("tests: no GPU")),
    )
    .unwrap();
    let mut out = vec![0u8; 50_000];
    let mut p = Params::new(20_000, 777, 5);
    let params = p.ptrs();
    // SAFETY: `out` and `p` live past the call, which runs the read before returning.
    unsafe { drv.submit_on_stream(Op::Read, &f, out.as_mut_ptr() as u64, params, 0) }.unwrap();
    assert_eq!(p.bytes(), 20_000);
    assert_eq!(&out[5..20_005], &data[777..20_777]);
    // Any other stream cannot exist here.
    let params = p.ptrs();
    // SAFETY: refused before anything runs.
    let e = unsafe { drv.submit_on_stream(Op::Read, &f, out.as_mut_ptr() as u64, params, 0x1234) };
    assert_eq!(e.unwrap_err().kind(), gdio::ErrorKind::NoGpu);
}

#[test]
fn host_memory_is_ordered_on_the_streams_gpu() {
    // cuFileReadAsync/WriteAsync on host memory with a GPU present: the I/O runs in stream
    // order on the stream's GPU (GPU 1 here), the size read when the stream reaches it.
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(64, 300_000);
    let f = Arc::new(FileHandle::open(write_file(d.path(), "h", &data)).unwrap());
    let (rt, drv) = setup(2);
    let stream = rt.create_stream(1).unwrap();
    let mut host = vec![0u8; 300_000];
    let mut p = Params::new(1, 12_345, 7);
    let mut pdev = drv.alloc_device(1, 8).unwrap();
    pdev.copy_from_host(0, &250_000usize.to_ne_bytes()).unwrap();
    rt.with_stream(stream, |s| {
        // SAFETY: `p` and `pdev` live until the stream is synchronized below.
        unsafe { s.copy_to_host((&mut p.size as *mut usize).cast(), pdev.addr(), 8).unwrap() };
    })
    .unwrap();
    let params = p.ptrs();
    // SAFETY: `host`, `p` and the stream outlive the synchronize below; nothing else touches
    // `host` meanwhile.
    unsafe { drv.submit_on_stream(Op::Read, &f, host.as_mut_ptr() as u64, params, stream) }
        .unwrap();
    rt.with_stream(stream, |s| s.synchronize().unwrap()).unwrap();
    assert_eq!(p.bytes(), 250_000);
    assert_eq!(&host[7..250_007], &data[12_345..262_345]);
    assert!(host[..7].iter().chain(&host[250_007..]).all(|&b| b == 0), "bytes outside written");
    // And a write from host memory, at an offset, lands in the file.
    let out = d.path().join("hw");
    std::fs::write(&out, vec![0u8; 8192]).unwrap();
    let wf =
        Arc::new(FileHandle::open_with(&out, OpenOptions::new().read(true).write(true)).unwrap());
    let payload = random_bytes(65, 5000);
    let mut q = Params::new(5000, 1000, 0);
    let params = q.ptrs();
    // SAFETY: as above.
    unsafe { drv.submit_on_stream(Op::Write, &wf, payload.as_ptr() as u64, params, stream) }
        .unwrap();
    rt.with_stream(stream, |s| s.synchronize().unwrap()).unwrap();
    assert_eq!(q.bytes(), 5000);
    let got = std::fs::read(&out).unwrap();
    assert_eq!(&got[1000..6000], &payload[..]);
    assert!(got[..1000].iter().chain(&got[6000..]).all(|&b| b == 0));
}

/// A front end without caller memory (Python's `raw_read_async`): the done hook owns the
/// parameters and the result slot; the submitter keeps nothing. The hook is dropped only after
/// the result is written into the memory it owns (memcheck runs this test: a write after the
/// free would fail it).
#[test]
fn parameters_owned_by_the_done_hook_live_until_the_result_is_written() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(64, 1 << 20);
    let f = Arc::new(FileHandle::open(write_file(d.path(), "h", &data)).unwrap());
    let (rt, drv) = setup(3);
    let stream = rt.create_stream(0).unwrap();
    let dev = drv.alloc_device(0, 1 << 20).unwrap();
    for round in 0..4u64 {
        let (foff, len) = (1000 + round as i64 * 4099, 70_000 + round as usize * 333);
        let mut owned = Params::new(len, foff, 0);
        let mut params = owned.ptrs();
        params.read_at_queue = true;
        let (tx, rx) = std::sync::mpsc::channel();
        let weak = {
            let slot = Arc::new(std::sync::Mutex::new(owned));
            let weak = Arc::downgrade(&slot);
            let done: gdio::stream_io::StreamIoDone = Box::new(move |size, r, _took| {
                let _still_here = slot.lock().unwrap().size;
                tx.send((size, r.as_ref().ok().copied())).unwrap();
                1234
            });
            // SAFETY: the parameters live in `slot`, which the hook owns until the result is
            // written; the stream and `dev` outlive the synchronize below.
            unsafe {
                drv.submit_on_stream_with(Op::Read, &f, dev.addr(), params, stream, Some(done))
            }
            .unwrap();
            weak
        };
        rt.with_stream(stream, |s| s.synchronize().unwrap()).unwrap();
        assert_eq!(rx.recv().unwrap(), (len, Some(len)));
        // Gone once the I/O is done: the hook was the last owner.
        let start = std::time::Instant::now();
        while weak.strong_count() > 0 && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(weak.strong_count(), 0, "the hook and its memory were dropped");
        let back = dev.to_vec().unwrap();
        assert_eq!(back[..len], data[foff as usize..foff as usize + len], "round {round}");
    }
}

/// The result the stream-ordered I/O behind `p` reports within 10 s while every GPU resource
/// creation is held back, as the caller's pageable copy queued behind the I/O makes the CUDA
/// driver do until that copy is done; then lets creation go and waits for the stream.
fn result_while_creation_is_held(rt: &SimRuntime, stream: u64, p: &Params) -> isize {
    let held = rt.hold_resource_creation();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    // Polled while the I/O runs: an atomic load of what the library stores atomically.
    let result = || p.bytes();
    while (result() == -999 || result() == -(libc::EAGAIN as isize))
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    let finished = result();
    drop(held);
    rt.with_stream(stream, |s| s.synchronize().unwrap()).unwrap();
    finished
}

/// A caller that queues a copy into pageable memory behind a stream-ordered I/O makes the
/// CUDA driver hold back every GPU resource creation in the process until that copy is done,
/// which is after the I/O: the I/O must create none (here: a fresh engine whose workers have
/// no lane yet, and a read spread over all of them).
#[test]
fn the_io_creates_no_gpu_resource_while_it_holds_the_stream() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(62, 4 << 20);
    let f = Arc::new(FileHandle::open(write_file(d.path(), "p", &data)).unwrap());
    let (rt, drv) = setup(1);
    let stream = rt.create_stream(0).unwrap();
    let dev = drv.alloc_device(0, 4 << 20).unwrap();
    let mut p = Params::new(3 << 20, 5, 7);
    let params = p.ptrs();
    // SAFETY: the stream, the parameters and `dev` outlive the stream's run of the I/O.
    unsafe { drv.submit_on_stream(Op::Read, &f, dev.addr(), params, stream) }.unwrap();
    let finished = result_while_creation_is_held(&rt, stream, &p);
    assert_eq!(finished, 3 << 20, "the I/O waited for a resource the caller's copy held back");
    let mut out = vec![0u8; 3 << 20];
    dev.copy_to_host(7, &mut out).unwrap();
    assert_eq!(&out[..], &data[5..5 + (3 << 20)]);
    rt.destroy_stream(stream);
}

/// The same for a write out of GPU memory: the workers' lanes made before the I/O was queued
/// serve writes too (a lane of its own for writes, made at the first write, once hung the C
/// test program's stream-ordered write on the H200 behind its pageable copy).
#[test]
fn a_write_creates_no_gpu_resource_while_it_holds_the_stream() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(63, 4 << 20);
    let path = write_file(d.path(), "w", &vec![0x33; 4 << 20]);
    let f = Arc::new(
        FileHandle::open_with(&path, gdio::OpenOptions::new().read(true).write(true)).unwrap(),
    );
    let (rt, drv) = setup(1);
    let stream = rt.create_stream(0).unwrap();
    let mut dev = drv.alloc_device(0, 4 << 20).unwrap();
    dev.copy_from_host(0, &data).unwrap();
    let mut p = Params::new(3 << 20, 11, 9);
    let params = p.ptrs();
    // SAFETY: the stream, the parameters and `dev` outlive the stream's run of the I/O.
    unsafe { drv.submit_on_stream(Op::Write, &f, dev.addr(), params, stream) }.unwrap();
    let finished = result_while_creation_is_held(&rt, stream, &p);
    assert_eq!(finished, 3 << 20, "the write waited for a resource the caller's copy held back");
    let back = std::fs::read(&path).unwrap();
    assert_eq!(back[11..11 + (3 << 20)], data[9..9 + (3 << 20)]);
    assert!(back[..11].iter().chain(&back[11 + (3 << 20)..]).all(|&b| b == 0x33));
    rt.destroy_stream(stream);
}
