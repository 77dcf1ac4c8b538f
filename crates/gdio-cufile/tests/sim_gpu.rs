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
    // Stream-ordered read on the default stream.
    let (mut sz, mut fo, mut bo, mut got_n) = (4096usize, 8192i64, 0i64, 0isize);
    assert_eq!(
        cuFileReadAsync(fh, dev0 as *mut _, &mut sz, &mut fo, &mut bo, &mut got_n, null_mut()).err,
        0
    );
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
