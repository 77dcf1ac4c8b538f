//! Read-ahead through the ABI (`GDIO_READ_AHEAD_BYTES`, set small here where the 256 MiB
//! default would hold the whole test file): KvikIO's way of reading a file into GPU memory
//! (threads each calling `cuFileRead` for the next range) on a simulated GPU, every byte the
//! file's, and the summary at close saying how many reads came out of read-ahead. A binary of
//! its own: it sets environment variables.

mod common;

use std::ffi::c_void;
use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use cufile::*;
use gdio::gpu::sim::SimRuntime;
use gdio::gpu::GpuRuntime;

/// The request length: KvikIO's task size scaled down.
const REQ: usize = 256 << 10;

/// Simulated device memory is host memory: read it directly to check.
fn device_bytes(addr: u64, len: usize) -> Vec<u8> {
    // SAFETY: `addr..addr+len` is a live allocation of the simulated runtime.
    unsafe { std::slice::from_raw_parts(addr as *const u8, len) }.to_vec()
}

/// Reads the file behind `fh` (`size` bytes) into `dev` from `threads` threads taking the next
/// range in turn, and returns the number of calls.
fn read_in_turn(fh: CUfileHandle_t, dev: u64, size: usize, threads: usize) -> u64 {
    let next = AtomicU64::new(0);
    let h = fh as usize;
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let off = next.fetch_add(REQ as u64, Ordering::Relaxed) as usize;
                if off >= size {
                    break;
                }
                let len = REQ.min(size - off);
                let p = dev as *mut c_void;
                let n = cuFileRead(h as CUfileHandle_t, p, len, off as i64, off as i64);
                assert_eq!(n, len as isize, "at {off}");
            });
        }
    });
    size.div_ceil(REQ) as u64
}

#[test]
fn kvikio_s_sequential_reads_come_out_of_read_ahead_byte_exact_and_the_summary_says_so() {
    let _g = serial();
    let rt = Arc::new(SimRuntime::new(1, Duration::from_micros(50)));
    cufile::session::set_runtime_for_tests(Some(rt.clone()));
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cufile-gdio.log");
    // SAFETY: the only test of this binary; nothing else reads the environment meanwhile.
    unsafe {
        std::env::set_var("GDIO_READ_AHEAD_BYTES", (2 << 20).to_string());
        std::env::set_var("GDIO_READ_AHEAD_MIN_REQUEST_BYTES", (64 << 10).to_string());
        std::env::set_var("CUFILE_LOGFILE_PATH", &log);
        std::env::set_var("CUFILE_LOGGING_LEVEL", "INFO");
    }
    let size = 40 * REQ + 5_555;
    let data = random_bytes(90, size);
    let path = dir.path().join("data.bin");
    std::fs::write(&path, &data).unwrap();
    // A file changed in the last two seconds is not read ahead.
    std::thread::sleep(Duration::from_millis(2100));
    assert_eq!(cuFileDriverOpen().err, 0);
    let f = File::open(&path).unwrap();
    let fh = register(&f);
    let dev = rt.alloc_device(0, size).unwrap();
    let mut calls = 0;
    for threads in [1, 4] {
        calls += read_in_turn(fh, dev, size, threads);
        assert!(device_bytes(dev, size) == data, "{threads} threads: bytes differ from the file's");
    }
    cuFileHandleDeregister(fh);
    assert_eq!(cuFileDriverClose_v2().err, 0);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let line = text.lines().find(|l| l.contains("synchronous I/O:")).expect("a summary");
    assert!(line.contains(&format!("synchronous I/O: {calls} reads, 0 writes")), "{line}");
    let served: u64 = line
        .split("; ")
        .find(|p| p.contains(" reads out of read-ahead ("))
        .and_then(|p| p.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no read-ahead in {line}"));
    assert!(served >= calls / 2, "{served} of {calls} reads out of read-ahead: {line}");
    // SAFETY: the device memory is not used after this.
    unsafe { rt.free_device(0, dev) };
    cufile::session::set_runtime_for_tests(None);
}
