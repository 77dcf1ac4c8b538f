//! Two GPUs reading through host memory at once, in one process: each GPU reads its own half of
//! a cached file (every request lands in that GPU's buffer), either through one engine shared by
//! both GPUs, through one engine per GPU (each with its own workers and bounce rings, sharing
//! the CUDA runtime), or through one engine with a worker pool per GPU (`pool_per_gpu`, what a
//! single `Driver` does with that key). Says whether one process can reach what two processes
//! reach together.
//!
//! `engine_microbench`'s sibling for the GPU machine:
//! `multi_gpu_probe FILE [shared|per-gpu|pool-per-gpu] THREADS REQUEST_MIB IN_FLIGHT PASSES`
//! THREADS: workers of each engine (`shared`: of the one engine). IN_FLIGHT: requests in flight
//! per GPU, each from its own thread. The first pass warms the engines and is not counted.
//! Prints the GB/s of the timed passes (bytes of both GPUs together) after checking 64 KiB at
//! eight places of each GPU's half against the file.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use gdio::{Config, Driver, FileHandle};

fn main() -> gdio::Result<()> {
    let a: Vec<String> = std::env::args().collect();
    let path = a.get(1).cloned().unwrap_or_else(|| "/dev/shm/gdio-bench-8g.bin".into());
    let mode = a.get(2).cloned().unwrap_or_else(|| "shared".into());
    let per_gpu = mode == "per-gpu";
    let threads: usize = a.get(3).and_then(|s| s.parse().ok()).unwrap_or(12);
    let req = a.get(4).and_then(|s| s.parse::<usize>().ok()).unwrap_or(1024) << 20;
    let inflight: usize = a.get(5).and_then(|s| s.parse().ok()).unwrap_or(2);
    let passes: usize = a.get(6).and_then(|s| s.parse().ok()).unwrap_or(4);
    let gpus = 2usize;
    let mut config = Config::load()?.into_config();
    config.threads = threads;
    config.pool_per_gpu = mode == "pool-per-gpu";
    let first = Arc::new(Driver::new(config.clone())?);
    let drivers: Vec<Arc<Driver>> = if per_gpu {
        let second = Driver::with_runtime(config, first.runtime().clone())?;
        vec![first, Arc::new(second)]
    } else {
        vec![first.clone(), first]
    };
    let file = Arc::new(FileHandle::open(&path)?);
    let half = (file.size() as usize / gpus) / req * req;
    let mut bufs = Vec::new();
    for (g, d) in drivers.iter().enumerate() {
        d.prepare_gpu(g)?;
        bufs.push(d.alloc_device(g, half)?);
    }
    let mut timed = 0.0;
    for pass in 0..=passes {
        let t = Instant::now();
        std::thread::scope(|s| -> gdio::Result<()> {
            let mut hs = Vec::new();
            for g in 0..gpus {
                let next = Arc::new(AtomicU64::new(0));
                for _ in 0..inflight {
                    let (d, f, next, base) =
                        (drivers[g].clone(), file.clone(), next.clone(), bufs[g].addr());
                    hs.push(s.spawn(move || -> gdio::Result<()> {
                        loop {
                            let off = next.fetch_add(req as u64, Ordering::Relaxed);
                            if off as usize >= half {
                                return Ok(());
                            }
                            let at = (g * half) as u64 + off;
                            // SAFETY: `base + off .. + req` lies in GPU g's buffer, which
                            // outlives the scope; each offset is claimed by one thread.
                            unsafe { d.read_device_ptr(&f, at, base + off, req)? };
                        }
                    }));
                }
            }
            for h in hs {
                h.join().expect("reader panicked")?;
            }
            Ok(())
        })?;
        if pass > 0 {
            timed += t.elapsed().as_secs_f64();
        }
    }
    use std::os::unix::fs::FileExt;
    let plain = std::fs::File::open(&path).map_err(|e| gdio::Error::from_io(&e, "opening"))?;
    let mut want = vec![0u8; 65536];
    let mut got = vec![0u8; 65536];
    for (g, b) in bufs.iter().enumerate() {
        for k in 0..8 {
            let off = (half - want.len()) / 7 * k;
            plain
                .read_exact_at(&mut want, (g * half + off) as u64)
                .map_err(|e| gdio::Error::from_io(&e, "reading the file"))?;
            b.copy_to_host(off, &mut got)?;
            assert!(want == got, "GPU {g}: bytes at {off} differ from the file");
        }
    }
    println!(
        "{}, {threads} workers each, {} MiB x {inflight} per GPU: {:.2} GB/s over \
         {passes} passes (both GPUs), checked",
        match mode.as_str() {
            "per-gpu" => "per-GPU engines",
            "pool-per-gpu" => "one engine with a pool per GPU",
            _ => "one shared engine",
        },
        req >> 20,
        (half * gpus * passes) as f64 / timed / 1e9
    );
    Ok(())
}
