//! What buffer registration saves: µs per `cuFileRead` call, and per entry of batches of 64
//! reads, of 4 KiB and 64 KiB from a cached file into registered and unregistered memory, on
//! host memory and on a simulated GPU (`gdio::gpu::sim`, no delay), one thread. Entries of one
//! batch read into the same buffer range (the timing is what matters, not the bytes).
//!
//! `cargo run --release -p gdio-cufile --example registered_read [calls]`
//! (the GPU machine: the same with `GDIO_REGISTERED_READ_CUDA=1` for the real GPU).

use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cufile::abi::*;
use cufile::*;
use gdio::gpu::sim::SimRuntime;
use gdio::gpu::GpuRuntime;

const FILE_LEN: usize = 64 << 20;

fn time_reads(fh: CUfileHandle_t, base: u64, size: usize, calls: usize) -> f64 {
    let slots = (FILE_LEN / size) as u64;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let start = Instant::now();
    for _ in 0..calls {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let off = (x % slots) * size as u64;
        let n = cuFileRead(fh, base as *mut _, size, off as i64, 0);
        assert_eq!(n, size as isize, "cuFileRead failed");
    }
    start.elapsed().as_secs_f64() * 1e6 / calls as f64
}

/// µs per entry of batches of 64 reads of `size` bytes (submit, then wait for all 64).
fn time_batches(fh: CUfileHandle_t, base: u64, size: usize, calls: usize) -> f64 {
    let n = 64usize;
    let slots = (FILE_LEN / size) as u64;
    let mut id: CUfileBatchHandle_t = std::ptr::null_mut();
    assert_eq!(cuFileBatchIOSetUp(&mut id, n as u32).err, 0);
    let mut io: Vec<CUfileIOParams_t> = (0..n)
        .map(|i| CUfileIOParams_t {
            mode: BATCH_MODE,
            dev_ptr_base: base as *mut _,
            file_offset: ((i as u64 * 7919) % slots * size as u64) as i64,
            dev_ptr_offset: 0,
            size,
            fh,
            opcode: 0,
            cookie: i as *mut _,
        })
        .collect();
    let mut ev = vec![CUfileIOEvents_t { cookie: std::ptr::null_mut(), status: 0, ret: 0 }; n];
    let rounds = (calls / n).max(1);
    let start = Instant::now();
    for _ in 0..rounds {
        assert_eq!(cuFileBatchIOSubmit(id, n as u32, io.as_mut_ptr(), 0).err, 0);
        let mut done = 0;
        while done < n {
            let mut nr = n as u32;
            let e = cuFileBatchIOGetStatus(id, 1, &mut nr, ev.as_mut_ptr(), std::ptr::null_mut());
            assert_eq!(e.err, 0);
            assert!(ev[..nr as usize].iter().all(|e| e.status == status::COMPLETE));
            done += nr as usize;
        }
    }
    cuFileBatchIODestroy(id);
    start.elapsed().as_secs_f64() * 1e6 / (rounds * n) as f64
}

fn run(label: &str, runtime: Option<Arc<dyn GpuRuntime>>, calls: usize, path: &std::path::Path) {
    cufile::session::set_runtime_for_tests(runtime.clone());
    assert_eq!(cuFileDriverOpen().err, 0);
    let f = OpenOptions::new().read(true).open(path).expect("open");
    let mut descr = CUfileDescr_t {
        type_: HANDLE_TYPE_OPAQUE_FD,
        handle: f.as_raw_fd() as usize as *mut _,
        fs_ops: std::ptr::null(),
    };
    let mut fh: CUfileHandle_t = std::ptr::null_mut();
    assert_eq!(cuFileHandleRegister(&mut fh, &mut descr).err, 0);
    let len = 64 << 10;
    let mut host = vec![0u8; len];
    let base = match &runtime {
        Some(rt) => rt.alloc_device(0, len).expect("alloc"),
        None => host.as_mut_ptr() as u64,
    };
    for size in [4 << 10, 64 << 10] {
        time_reads(fh, base, size, calls / 10); // warm up
        let unreg = time_reads(fh, base, size, calls);
        assert_eq!(cuFileBufRegister(base as *const _, len, 0).err, 0);
        let reg = time_reads(fh, base, size, calls);
        let breg = time_batches(fh, base, size, calls);
        assert_eq!(cuFileBufDeregister(base as *const _).err, 0);
        let bunreg = time_batches(fh, base, size, calls);
        println!(
            "{label:<8} {:>3} KiB cuFileRead: unregistered {unreg:>7.2} µs/call, registered \
             {reg:>7.2} ({:>5.1}% saved) | batch of 64: unregistered {bunreg:>6.2} µs/entry, \
             registered {breg:>6.2} ({:>5.1}% saved)",
            size >> 10,
            100.0 * (unreg - reg) / unreg,
            100.0 * (bunreg - breg) / bunreg
        );
    }
    cuFileHandleDeregister(fh);
    assert_eq!(cuFileDriverClose_v2().err, 0);
    if let Some(rt) = &runtime {
        // SAFETY: the driver is closed; nothing uses the allocation.
        unsafe { rt.free_device(0, base) };
    }
    cufile::session::set_runtime_for_tests(None);
}

fn main() {
    let calls: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let dir = std::env::temp_dir().join(format!("gdio-regread-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("data.bin");
    let data: Vec<u8> = (0..FILE_LEN).map(|i| (i * 31 + 7) as u8).collect();
    std::fs::write(&path, &data).expect("write test file");
    if std::env::var_os("GDIO_REGISTERED_READ_CUDA").is_some() {
        let (rt, why) = gdio::gpu::detect();
        match why {
            None => run("cuda", Some(rt), calls, &path),
            Some(w) => eprintln!("no CUDA GPU: {w}"),
        }
    } else {
        run("host", None, calls, &path);
        run("sim-gpu", Some(Arc::new(SimRuntime::new(1, Duration::ZERO))), calls, &path);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
