//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gdio::gpu::sim::SimRuntime;
use gdio::{Config, DirectIoPolicy, Driver};
use rand::{Rng, RngCore, SeedableRng};

/// Random bytes from a seeded generator.
pub fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut v = vec![0u8; len];
    rng.fill_bytes(&mut v);
    v
}

/// A random number in `range` from a seeded generator.
pub fn rng(seed: u64) -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(seed)
}

/// Where tests put files: the temp dir (ext4 here) and tmpfs.
pub fn dirs() -> Vec<(&'static str, tempfile::TempDir)> {
    let mut v = vec![("tmp", tempfile::tempdir_in(std::env::temp_dir()).unwrap())];
    match tempfile::tempdir_in("/dev/shm") {
        Ok(d) => v.push(("shm", d)),
        Err(e) => eprintln!("skipping tmpfs: /dev/shm unusable ({e})"),
    }
    v
}

/// Writes `data` to `dir/name`.
pub fn write_file(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    p
}

/// A small-knob config that hits every loop edge.
pub fn tiny_config(direct: DirectIoPolicy, threads: usize) -> Config {
    Config {
        threads,
        task_size: 4096 * 3,
        bounce_buffer_size: 8192,
        buffered_chunk_size: 4096,
        bounce_buffers_per_thread: 2,
        direct_io: direct,
        // Tasks of one page on the workers' own streams, larger ones on the shared streams:
        // tests with random lengths run both lanes.
        own_stream_max_bytes: 4096,
        ..Config::default()
    }
}

/// A driver on `gpus` simulated GPUs whose copies lag a little.
pub fn sim_driver(config: Config, gpus: usize) -> Driver {
    let rt = Arc::new(SimRuntime::new(gpus, std::time::Duration::from_micros(20)));
    Driver::with_runtime(config, rt).unwrap()
}

/// A random (offset, len) inside `size` bytes, sometimes running past the end.
pub fn random_range(r: &mut impl Rng, size: usize) -> (u64, usize) {
    let off = r.random_range(0..size.max(1));
    let len = r.random_range(0..(size - off + 5000));
    (off as u64, len)
}

/// A GPU test found no GPU: prints `SKIPPED: why`, or fails the test when `GDIO_REQUIRE_GPU=1`
/// (set on the GPU machine, so that a broken GPU machine cannot look green).
pub fn gpu_skip(why: &str) {
    if std::env::var("GDIO_REQUIRE_GPU").is_ok_and(|v| v == "1") {
        panic!("GDIO_REQUIRE_GPU=1 but this GPU test would be skipped: {why}");
    }
    eprintln!("SKIPPED: {why}");
}

/// Drops `[offset, offset + len)` of `f` from the page cache (`len` 0: to the end of the file),
/// so that the next read of it is cold.
pub fn drop_cache_range(f: &gdio::FileHandle, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    let fd = f.buffered_fd().as_raw_fd();
    // SAFETY: fdatasync and posix_fadvise on a descriptor the handle holds.
    unsafe {
        libc::fdatasync(fd);
        libc::posix_fadvise(fd, offset as i64, len as i64, libc::POSIX_FADV_DONTNEED);
    }
}

/// Reads `[0, want.len())` of `f` into the device buffer `dev` in `req`-byte requests from
/// `threads` threads, each taking the next range when its last read returns (KvikIO's way,
/// through `Engine::read`), and checks every byte against `want`.
pub fn read_in_turn(
    drv: &Driver,
    f: &gdio::FileHandle,
    dev: &gdio::gpu::DeviceBuffer,
    want: &[u8],
    threads: usize,
    req: usize,
) {
    use gdio::memory::{BufferRef, MemoryKind};
    use std::sync::atomic::{AtomicU64, Ordering};
    let next = AtomicU64::new(0);
    let size = want.len() as u64;
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let off = next.fetch_add(req as u64, Ordering::Relaxed);
                if off >= size {
                    break;
                }
                let len = req.min((size - off) as usize);
                let kind = MemoryKind::Device { ordinal: 0 };
                let buf = BufferRef { addr: dev.addr() + off, len, kind };
                // SAFETY: each range of `dev` is read by one thread at a time, and `dev`
                // outlives the scope.
                let t = unsafe { drv.engine().read(f, buf, off) }.unwrap();
                assert_eq!(t.bytes, len as u64, "at {off}");
            });
        }
    });
    let mut back = vec![0u8; want.len()];
    dev.copy_to_host(0, &mut back).unwrap();
    let first_bad = back.iter().zip(want).position(|(a, b)| a != b);
    assert_eq!(first_bad, None, "bytes differ from the file's");
}
