//! System errors while the I/O runs, through the ABI, on host memory and on simulated GPUs
//! (gdio's fault-injection seam under `pread`/`pwrite`): a bad sector (`EIO`) and a full disk
//! (`ENOSPC`) come back in cuFile's conventions (`-1` with `errno` from the sync calls, `-errno`
//! in a batch event's `ret` and an async call's `*bytes_p`) and never as a short count, while
//! signal storms and short system calls are absorbed: the call returns every byte, right.

mod common;

use std::fs::OpenOptions;
use std::ptr::null_mut;
use std::sync::Arc;

use common::*;
use cufile::abi::*;
use cufile::*;
use gdio::file::fault::{inject, FaultPlan};
use gdio::gpu::sim::SimRuntime;
use gdio::gpu::GpuRuntime;

fn sim() -> Arc<SimRuntime> {
    let rt = Arc::new(SimRuntime::new(1, std::time::Duration::from_micros(50)));
    cufile::session::set_runtime_for_tests(Some(rt.clone()));
    rt
}

fn device_bytes(addr: u64, len: usize) -> Vec<u8> {
    // SAFETY: `addr..addr+len` is a live allocation of the simulated runtime.
    unsafe { std::slice::from_raw_parts(addr as *const u8, len) }.to_vec()
}

fn fill_device(addr: u64, bytes: &[u8]) {
    // SAFETY: the caller's simulated allocation holds at least `bytes.len()` bytes from `addr`.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), addr as *mut u8, bytes.len()) };
}

#[test]
fn a_bad_sector_is_minus_one_with_eio_from_sync_reads_and_minus_eio_from_batch_and_async() {
    let _g = serial();
    let rt = sim();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sick.bin");
    let data = random_bytes(901, 4 << 20);
    std::fs::write(&path, &data).unwrap();
    let f = OpenOptions::new().read(true).open(&path).unwrap();
    let fh = register(&f);
    let bad = (2 << 20) + 12_345;
    let plan = inject(&path, FaultPlan { eio_at: Some(bad), ..Default::default() }).unwrap();

    // Host memory: a read across the bad byte fails whole; one before it succeeds.
    let mut host = random_bytes(902, 1 << 20);
    assert_eq!(cuFileRead(fh, host.as_mut_ptr().cast(), 1 << 20, (bad - 1000) as i64, 0), -1);
    assert_eq!(errno(), libc::EIO);
    let before_host = host.clone();
    assert_eq!(cuFileRead(fh, host.as_mut_ptr().cast(), 300_000, 7, 11), 300_000);
    assert_eq!(host[11..300_011], data[7..300_007]);
    assert_eq!(host[..11], before_host[..11], "bytes outside the read untouched");

    // Device memory, registered and not.
    let len = 2 << 20;
    let dev = rt.alloc_device(0, len).unwrap();
    assert_eq!(cuFileBufRegister(dev as *const _, len, 0).err, 0);
    assert_eq!(cuFileRead(fh, dev as *mut _, 1 << 20, (bad - (1 << 19)) as i64, 4096), -1);
    assert_eq!(errno(), libc::EIO);
    assert_eq!(cuFileRead(fh, dev as *mut _, 1 << 20, 3, 1 << 20), 1 << 20);
    assert_eq!(device_bytes(dev + (1 << 20), 1 << 20), data[3..(1 << 20) + 3]);
    let plain = rt.alloc_device(0, 1 << 20).unwrap();
    assert_eq!(cuFileRead(fh, plain as *mut _, 65_536, (bad - 10) as i64, 0), -1);
    assert_eq!(errno(), libc::EIO);

    // A batch: the entry across the bad byte fails with -EIO, the others complete with their bytes.
    let mut id: CUfileBatchHandle_t = null_mut();
    assert_eq!(cuFileBatchIOSetUp(&mut id, 3).err, 0);
    let mk = |foff: u64, boff: i64, size: usize, cookie: usize| CUfileIOParams_t {
        mode: BATCH_MODE,
        dev_ptr_base: dev as *mut _,
        file_offset: foff as i64,
        dev_ptr_offset: boff,
        size,
        fh,
        opcode: 0,
        cookie: cookie as *mut _,
    };
    let mut io =
        [mk(100, 0, 65_536, 1), mk(bad - 5, 200_000, 4096, 2), mk(3 << 20, 400_000, 70_001, 3)];
    assert_eq!(cuFileBatchIOSubmit(id, 3, io.as_mut_ptr(), 0).err, 0);
    let mut ev = [CUfileIOEvents_t { cookie: null_mut(), status: 0, ret: 0 }; 3];
    let mut nr = 3;
    assert_eq!(cuFileBatchIOGetStatus(id, 3, &mut nr, ev.as_mut_ptr(), null_mut()).err, 0);
    assert_eq!(nr, 3);
    for e in &ev {
        match e.cookie as usize {
            2 => assert_eq!((e.status, e.ret as isize), (status::FAILED, -(libc::EIO as isize))),
            1 => assert_eq!((e.status, e.ret), (status::COMPLETE, 65_536)),
            3 => assert_eq!((e.status, e.ret), (status::COMPLETE, 70_001)),
            c => panic!("unknown cookie {c}"),
        }
    }
    assert_eq!(device_bytes(dev, 65_536), data[100..65_636]);
    assert_eq!(device_bytes(dev + 400_000, 70_001), data[3 << 20..(3 << 20) + 70_001]);
    cuFileBatchIODestroy(id);

    // Stream-ordered: *bytes_read_p is -EIO once the stream has run it.
    let stream = rt.create_stream(0).unwrap();
    let (mut sz, mut fo, mut bo, mut got) = (8192usize, (bad - 100) as i64, 0i64, 0isize);
    assert_eq!(
        cuFileReadAsync(fh, dev as *mut _, &mut sz, &mut fo, &mut bo, &mut got, stream as CUstream)
            .err,
        0
    );
    rt.with_stream(stream, |s| s.synchronize().unwrap()).unwrap();
    rt.destroy_stream(stream);
    assert_eq!(got, -(libc::EIO as isize));

    assert!(plan.injected() >= 5, "every failing call reached the bad byte: {}", plan.injected());
    drop(plan);
    // The plan gone, the same read works.
    assert_eq!(cuFileRead(fh, host.as_mut_ptr().cast(), 1 << 20, (bad - 1000) as i64, 0), 1 << 20);
    assert_eq!(host[..], data[(bad - 1000) as usize..(bad - 1000) as usize + (1 << 20)]);
    assert_eq!(cuFileBufDeregister(dev as *const _).err, 0);
    cuFileHandleDeregister(fh);
    // SAFETY: both allocations are this test's, and nothing uses them any more.
    unsafe {
        rt.free_device(0, dev);
        rt.free_device(0, plain);
    }
}

#[test]
fn a_full_disk_fails_the_write_with_enospc_and_leaves_the_rest_of_the_file_as_it_was() {
    let _g = serial();
    let rt = sim();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("full.bin");
    let data = random_bytes(903, 2 << 20);
    std::fs::write(&path, &data).unwrap();
    let f = OpenOptions::new().read(true).write(true).open(&path).unwrap();
    let fh = register(&f);
    let limit = 100_000u64;
    let plan =
        inject(&path, FaultPlan { enospc_after: Some(limit), ..Default::default() }).unwrap();
    let w = random_bytes(904, 1 << 20);
    let dev = rt.alloc_device(0, 1 << 20).unwrap();
    fill_device(dev, &w);
    let off = 333_333usize;
    // A write is whole or an error, never a short count.
    assert_eq!(cuFileWrite(fh, dev as *const _, 1 << 20, off as i64, 0), -1);
    assert_eq!(errno(), libc::ENOSPC);
    assert_eq!(cuFileWrite(fh, w.as_ptr().cast(), 500_000, off as i64, 0), -1);
    assert_eq!(errno(), libc::ENOSPC);
    drop(plan);
    let got = std::fs::read(&path).unwrap();
    assert_eq!(got.len(), data.len(), "the file did not grow");
    assert_eq!(got[..off], data[..off], "bytes before the write untouched");
    let end = off + (1 << 20);
    assert_eq!(got[end..], data[end..], "bytes after the write untouched");
    // What did reach the file is the caller's, never other bytes.
    for (i, (&g, (&old, &new))) in
        got[off..end].iter().zip(data[off..end].iter().zip(&w)).enumerate()
    {
        assert!(g == old || g == new, "byte {} is neither the old nor the written value", off + i);
    }
    cuFileHandleDeregister(fh);
    // SAFETY: the allocation is this test's, and nothing uses it any more.
    unsafe { rt.free_device(0, dev) };
}

#[test]
fn signal_storms_and_short_system_calls_still_return_every_byte() {
    let _g = serial();
    let rt = sim();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flaky.bin");
    let data = random_bytes(905, 3 << 20);
    std::fs::write(&path, &data).unwrap();
    let f = OpenOptions::new().read(true).write(true).open(&path).unwrap();
    let fh = register(&f);
    let plan =
        inject(&path, FaultPlan { eintr_burst: 3, short_max: Some(4093), ..Default::default() })
            .unwrap();
    let dev = rt.alloc_device(0, 2 << 20).unwrap();
    assert_eq!(cuFileRead(fh, dev as *mut _, 1_500_001, 77, 5), 1_500_001);
    assert_eq!(device_bytes(dev + 5, 1_500_001), data[77..1_500_078]);
    let mut host = vec![0u8; 700_000];
    assert_eq!(cuFileRead(fh, host.as_mut_ptr().cast(), 700_000, 2_000_000, 0), 700_000);
    assert_eq!(host[..], data[2_000_000..2_700_000]);
    let w = random_bytes(906, 600_000);
    fill_device(dev, &w);
    assert_eq!(cuFileWrite(fh, dev as *const _, 600_000, 1_000_003, 0), 600_000);
    assert!(plan.injected() > 100, "the storm reached the calls: {}", plan.injected());
    drop(plan);
    let mut model = data.clone();
    model[1_000_003..1_600_003].copy_from_slice(&w);
    assert_eq!(std::fs::read(&path).unwrap(), model);
    cuFileHandleDeregister(fh);
    // SAFETY: the allocation is this test's, and nothing uses it any more.
    unsafe { rt.free_device(0, dev) };
}
