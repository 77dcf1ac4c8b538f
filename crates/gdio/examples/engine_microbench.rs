//! Microbenchmark of the engine's per-request cost: many small requests in flight on host
//! memory or a simulated GPU, from a file in the page cache.
//!
//! `cargo run --release -p gdio --example engine_microbench -- [host|sim|gpu] SIZE_KIB IN_FLIGHT SECONDS [sync|async|batch|batch-full|cold]`
//!
//! `host`: host memory on a runtime without GPU; `sim`: a simulated GPU; `gpu`: GPU 0 through
//! CUDA (the GPU machine). The file (64 MiB, in `GDIO_BENCH_DIR`, default `/dev/shm`) is read
//! at random offsets aligned to the request size.
//!
//! `sync` keeps IN_FLIGHT requests in flight with that many caller threads each calling
//! `Driver::read`; `async` keeps them in flight from one thread with `Driver::submit_read`;
//! `batch` submits IN_FLIGHT reads at once through `Driver::batch` (cuFile batch semantics),
//! waits for all their events, checks every byte of every read (outside the timed part), and
//! repeats; `batch-full` keeps IN_FLIGHT reads in flight through one `Driver::batch`, as a
//! queue depth: each `get_status` returns at least a quarter of them (`MICRO_REFILL` reads, if
//! set) and as many new reads go
//! out at once, every read into its own slot of a 256 MiB destination; when the slots run out
//! the reads in flight are drained and every byte is checked (outside the timed part) before
//! the slots are used again; `cold` reads a 256 MiB file (put `GDIO_BENCH_DIR` on a disk with `O_DIRECT`, not
//! tmpfs) from start to end in SIZE_KIB requests, IN_FLIGHT of them in flight from one thread,
//! after dropping it from the page cache (`posix_fadvise(DONTNEED)`) before every pass.
//! Prints requests per second (for `batch` and `batch-full`: I/Os per second of the timed part; for `cold`:
//! GB/s of the passes) and GB/s. The engine's knobs come from the environment (`GDIO_THREADS`,
//! `GDIO_GATHER_MAX_PIECES`, ...).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gdio::{Config, Driver, FileHandle};

fn main() -> gdio::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let mem = args.get(1).map(String::as_str).unwrap_or("host").to_owned();
    let kib: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(64);
    let inflight: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(64);
    let secs: f64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let mode = args.get(5).map(String::as_str).unwrap_or("sync").to_owned();
    let size = kib * 1024;
    let file_len: usize = if mode == "cold" { 256 << 20 } else { 64 << 20 };
    let dir = std::env::var("GDIO_BENCH_DIR").unwrap_or_else(|_| "/dev/shm".into());
    let path = std::path::Path::new(&dir).join(format!("gdio-microbench-{}", std::process::id()));
    let data: Vec<u8> = (0..file_len).map(pattern).collect();
    std::fs::write(&path, &data).map_err(|e| gdio::Error::from_io(&e, "writing the bench file"))?;
    let config = Config::load()?.into_config();
    let driver = Arc::new(match mem.as_str() {
        "sim" => Driver::with_runtime(
            config,
            Arc::new(gdio::gpu::sim::SimRuntime::new(1, Duration::ZERO)),
        )?,
        "gpu" => Driver::new(config)?,
        _ => Driver::with_runtime(config, Arc::new(gdio::gpu::host::HostRuntime::new("bench")))?,
    });
    let file = Arc::new(FileHandle::open(&path)?);
    if mem == "gpu" {
        driver.prepare_gpu(0)?;
    }
    let _ = std::fs::remove_file(&path);
    let done = Arc::new(AtomicU64::new(0));
    let slots = (file_len / size) as u64;
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs_f64(secs);
    let run = bench_mode(&mode, &mem, &driver, &file, &done, size, inflight, slots, deadline);
    run?;
    if mode == "batch" || mode == "batch-full" || mode == "cold" {
        return Ok(());
    }
    let el = t0.elapsed().as_secs_f64();
    let n = done.load(Ordering::Relaxed) as f64;
    println!(
        "{mem} {mode} {kib} KiB x {inflight}: {:.0} req/s, {:.2} GB/s, {:.1} us/req",
        n / el,
        n * size as f64 / el / 1e9,
        el / n * 1e6 * inflight as f64
    );
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn bench_mode(
    mode: &str,
    mem: &str,
    driver: &Arc<Driver>,
    file: &Arc<FileHandle>,
    done: &Arc<AtomicU64>,
    size: usize,
    inflight: usize,
    slots: u64,
    deadline: Instant,
) -> gdio::Result<()> {
    if mode == "cold" {
        return bench_cold(mem, driver, file, size, inflight, deadline);
    }
    if mode == "batch-full" {
        return bench_batch_full(mem, driver, file, size, inflight, slots, deadline);
    }
    if mode == "batch" {
        return bench_batch(mem, driver, file, done, size, inflight, slots, deadline);
    }
    if mode == "async" {
        return bench_async(mem, driver, file, done, size, inflight, slots, deadline);
    }
    let mut threads = Vec::new();
    for t in 0..inflight {
        let (driver, file, done, mem) =
            (driver.clone(), file.clone(), done.clone(), mem.to_owned());
        threads.push(std::thread::spawn(move || -> gdio::Result<()> {
            let mut host = vec![0u8; size];
            let mut dev = if mem != "host" { Some(driver.alloc_device(0, size)?) } else { None };
            let mut i = t as u64 * 7919;
            while Instant::now() < deadline {
                i = (i * 6_364_136_223_846_793_005 + 1_442_695_040_888_963_407) >> 1;
                let off = (i % slots) * size as u64;
                match dev.as_mut() {
                    Some(d) => driver.read(&file, off, d, 0, size)?,
                    None => driver.read(&file, off, &mut host, 0, size)?,
                };
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        }));
    }
    for t in threads {
        t.join().expect("bench thread panicked")?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn bench_async(
    mem: &str,
    driver: &Arc<Driver>,
    file: &Arc<FileHandle>,
    done: &Arc<AtomicU64>,
    size: usize,
    inflight: usize,
    slots: u64,
    deadline: Instant,
) -> gdio::Result<()> {
    enum H {
        Host(gdio::IoHandle<Vec<u8>>),
        Dev(gdio::IoHandle<gdio::DeviceBuffer>),
    }
    let mut i = 1u64;
    let mut next_off = || {
        i = (i * 6_364_136_223_846_793_005 + 1_442_695_040_888_963_407) >> 1;
        (i % slots) * size as u64
    };
    let mut q = std::collections::VecDeque::new();
    for _ in 0..inflight {
        let h = if mem != "host" {
            H::Dev(driver.submit_read(file, next_off(), driver.alloc_device(0, size)?, 0, size)?)
        } else {
            H::Host(driver.submit_read(file, next_off(), vec![0u8; size], 0, size)?)
        };
        q.push_back(h);
    }
    while let Some(h) = q.pop_front() {
        let again = Instant::now() < deadline;
        match h {
            H::Host(h) => {
                let (r, buf) = h.wait();
                r?;
                if again {
                    q.push_back(H::Host(driver.submit_read(file, next_off(), buf, 0, size)?));
                }
            }
            H::Dev(h) => {
                let (r, buf) = h.wait();
                r?;
                if again {
                    q.push_back(H::Dev(driver.submit_read(file, next_off(), buf, 0, size)?));
                }
            }
        }
        done.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// Passes over the whole file, each after dropping it from the page cache: SIZE requests in
/// order, IN_FLIGHT in flight; host memory is checked after each pass (outside the timing).
fn bench_cold(
    mem: &str,
    driver: &Arc<Driver>,
    file: &Arc<FileHandle>,
    size: usize,
    inflight: usize,
    deadline: Instant,
) -> gdio::Result<()> {
    use std::os::fd::AsRawFd;
    let len = file.size();
    let mut host = vec![0u8; len as usize];
    let dev = if mem != "host" { Some(driver.alloc_device(0, len as usize)?) } else { None };
    let base = dev.as_ref().map_or(host.as_mut_ptr() as u64, |d| d.addr());
    let (mut bytes, mut io_time, mut passes) = (0u64, Duration::ZERO, 0);
    while passes == 0 || Instant::now() < deadline {
        let fd = file.buffered_fd().as_raw_fd();
        // SAFETY: fdatasync and posix_fadvise on a descriptor the handle holds.
        unsafe {
            libc::fdatasync(fd);
            libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED);
        }
        let t = Instant::now();
        let mut batch = driver.batch(inflight)?;
        let mut next = 0u64;
        let mut in_flight = 0usize;
        while next < len || in_flight > 0 {
            let entries: Vec<gdio::BatchEntry> = (in_flight..inflight)
                .map_while(|_| {
                    (next < len).then(|| {
                        let off = next;
                        next += size as u64;
                        gdio::BatchEntry {
                            op: gdio::Op::Read,
                            file: file.clone(),
                            file_offset: off,
                            buf_base: base,
                            buf_offset: off,
                            len: size.min((len - off) as usize),
                            cookie: off,
                            memory: None,
                        }
                    })
                })
                .collect();
            in_flight += entries.len();
            if !entries.is_empty() {
                // SAFETY: the destination covers the whole file and outlives the batch;
                // entries are disjoint ranges of it, none reused before its event is reported.
                unsafe { batch.submit(&entries)? };
            }
            let st = batch.get_status(1, inflight, None)?;
            for e in &st.events {
                if !matches!(e.state, gdio::BatchState::Complete(_)) {
                    panic!("read at {}: {:?}", e.cookie, e.state);
                }
            }
            in_flight -= st.events.len();
        }
        io_time += t.elapsed();
        bytes += len;
        passes += 1;
        if dev.is_none() {
            let bad = host.iter().enumerate().position(|(j, &b)| b != pattern(j));
            if let Some(j) = bad {
                panic!("cold pass {passes}: wrong byte at {j}");
            }
        }
    }
    println!(
        "{mem} cold {} KiB x {inflight}: {:.2} GB/s over {passes} passes of {} MiB",
        size / 1024,
        bytes as f64 / io_time.as_secs_f64() / 1e9,
        len >> 20
    );
    Ok(())
}

/// The byte the bench file holds at offset `i`.
fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(2_654_435_761) >> 13) as u8
}

#[allow(clippy::too_many_arguments)]
fn bench_batch(
    mem: &str,
    driver: &Arc<Driver>,
    file: &Arc<FileHandle>,
    done: &Arc<AtomicU64>,
    size: usize,
    inflight: usize,
    slots: u64,
    deadline: Instant,
) -> gdio::Result<()> {
    let total = size * inflight;
    let mut host = vec![0u8; total];
    let dev = if mem != "host" { Some(driver.alloc_device(0, total)?) } else { None };
    let base = dev.as_ref().map_or(host.as_mut_ptr() as u64, |d| d.addr());
    let mut batch = driver.batch(inflight)?;
    let mut i = 1u64;
    let mut io_time = Duration::ZERO;
    let mut offs = vec![0u64; inflight];
    while Instant::now() < deadline {
        let entries: Vec<gdio::BatchEntry> = (0..inflight)
            .map(|k| {
                i = (i * 6_364_136_223_846_793_005 + 1_442_695_040_888_963_407) >> 1;
                offs[k] = (i % slots) * size as u64;
                gdio::BatchEntry {
                    op: gdio::Op::Read,
                    file: file.clone(),
                    file_offset: offs[k],
                    buf_base: base,
                    buf_offset: (k * size) as u64,
                    len: size,
                    cookie: k as u64,
                    memory: None,
                }
            })
            .collect();
        let t = Instant::now();
        // SAFETY: the destination (host vector or device buffer) outlives the batch and is not
        // touched until every event of this round has been reported; entries do not overlap.
        unsafe { batch.submit(&entries)? };
        let mut got = 0;
        while got < inflight {
            let st = batch.get_status(inflight - got, inflight, None)?;
            for e in &st.events {
                match &e.state {
                    gdio::BatchState::Complete(n) if *n == size => {}
                    s => panic!("read {} of the batch: {s:?}", e.cookie),
                }
            }
            got += st.events.len();
        }
        io_time += t.elapsed();
        done.fetch_add(inflight as u64, Ordering::Relaxed);
        if let Some(d) = &dev {
            d.copy_to_host(0, &mut host)?;
        }
        for (k, &off) in offs.iter().enumerate() {
            let chunk = &host[k * size..(k + 1) * size];
            let bad = chunk.iter().enumerate().position(|(j, &b)| b != pattern(off as usize + j));
            if let Some(j) = bad {
                panic!("read {k} (file offset {off}): wrong byte at {j}");
            }
        }
    }
    drop(batch);
    let n = done.load(Ordering::Relaxed) as f64;
    println!(
        "{mem} batch {} KiB x {inflight}: {:.0} IOPS in I/O time ({:.2} GB/s), every byte verified",
        size / 1024,
        n / io_time.as_secs_f64(),
        n * size as f64 / io_time.as_secs_f64() / 1e9
    );
    Ok(())
}

/// `batch-full`: IN_FLIGHT reads kept in flight through one batch; each read lands in a slot of
/// its own until the destination is full, then everything is drained and checked.
fn bench_batch_full(
    mem: &str,
    driver: &Arc<Driver>,
    file: &Arc<FileHandle>,
    size: usize,
    inflight: usize,
    slots: u64,
    deadline: Instant,
) -> gdio::Result<()> {
    let region = (256usize << 20).max(size * inflight * 2) / size * size;
    let nslots = region / size;
    let mut host = vec![0u8; region];
    let mut dev = if mem != "host" { Some(driver.alloc_device(0, region)?) } else { None };
    let base = dev.as_ref().map_or(host.as_mut_ptr() as u64, |d| d.addr());
    let mut batch = driver.batch(inflight)?;
    let mut offs = vec![u64::MAX; nslots];
    let (mut i, mut done, mut io_time, mut rounds) = (1u64, 0u64, Duration::ZERO, 0u64);
    let refill = std::env::var("MICRO_REFILL")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(inflight / 4)
        .clamp(1, inflight);
    while done == 0 || Instant::now() < deadline {
        let t = Instant::now();
        let (mut next, mut in_flight) = (0usize, 0usize);
        while next < nslots || in_flight > 0 {
            let room = (inflight - in_flight).min(nslots - next);
            if room > 0 {
                let entries: Vec<gdio::BatchEntry> = (next..next + room)
                    .map(|k| {
                        i = (i * 6_364_136_223_846_793_005 + 1_442_695_040_888_963_407) >> 1;
                        offs[k] = (i % slots) * size as u64;
                        gdio::BatchEntry {
                            op: gdio::Op::Read,
                            file: file.clone(),
                            file_offset: offs[k],
                            buf_base: base,
                            buf_offset: (k * size) as u64,
                            len: size,
                            cookie: k as u64,
                            memory: None,
                        }
                    })
                    .collect();
                // SAFETY: the destination (host vector or device buffer) outlives the batch;
                // each entry has a slot of its own, not read until every entry is reported.
                unsafe { batch.submit(&entries)? };
                next += room;
                in_flight += room;
            }
            let want = if next < nslots { refill.min(in_flight) } else { in_flight };
            let st = batch.get_status(want, inflight, None)?;
            for e in &st.events {
                match &e.state {
                    gdio::BatchState::Complete(n) if *n == size => {}
                    s => panic!("read into slot {} of the batch: {s:?}", e.cookie),
                }
            }
            in_flight -= st.events.len();
            done += st.events.len() as u64;
        }
        io_time += t.elapsed();
        rounds += 1;
        if let Some(d) = &dev {
            d.copy_to_host(0, &mut host)?;
        }
        for (k, &off) in offs.iter().enumerate() {
            let chunk = &host[k * size..(k + 1) * size];
            let bad = chunk.iter().enumerate().position(|(j, &b)| b != pattern(off as usize + j));
            if let Some(j) = bad {
                panic!("read into slot {k} (file offset {off}): wrong byte at {j}");
            }
        }
        host.fill(0);
        if let Some(d) = dev.as_mut() {
            d.copy_from_host(0, &host)?;
        }
    }
    drop(batch);
    println!(
        "{mem} batch-full {} KiB x {inflight}: {:.0} IOPS in I/O time ({:.2} GB/s, {} reads in \
         {rounds} passes over {nslots} slots), every byte verified",
        size / 1024,
        done as f64 / io_time.as_secs_f64(),
        done as f64 * size as f64 / io_time.as_secs_f64() / 1e9,
        done
    );
    Ok(())
}
