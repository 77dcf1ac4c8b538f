//! Page-cache pins (`page_cache_pins_max_bytes`, off by default): a file read into GPU memory
//! twice over is read out of registered page-cache pages from then on, every byte still the
//! file's; a file that changes is never read out of its old pins; the budget, the idle time,
//! small reads, host memory and freshly written files keep reads on the bounce buffers. On the simulated GPU (its
//! copies are CPU copies out of the same mapping the real GPU would DMA from).

mod common;

use std::time::{Duration, Instant};

use common::*;
use gdio::{Config, Driver, FileHandle};

/// The pins' unit (`engine/page_cache_pins.rs`).
const CHUNK: usize = 32 << 20;
/// A file changed less than this long ago is not pinned yet.
const SETTLE: Duration = Duration::from_millis(2100);

fn config(max_bytes: u64, idle_ms: u64) -> Config {
    Config {
        threads: 4,
        page_cache_pins_max_bytes: max_bytes,
        page_cache_pins_idle_ms: idle_ms,
        page_cache_pins_min_request_bytes: 256 << 10,
        ..Config::default()
    }
}

/// Reads the whole file in `req`-byte requests (the way KvikIO reads: one after another), and
/// checks every byte against `want`.
fn pass(drv: &Driver, f: &FileHandle, dev: &mut gdio::gpu::DeviceBuffer, want: &[u8], req: usize) {
    let mut off = 0;
    while off < want.len() {
        let len = req.min(want.len() - off);
        assert_eq!(drv.read(f, off as u64, dev, off, len).unwrap(), len, "at {off}");
        off += len;
    }
    let mut back = vec![0u8; want.len()];
    dev.copy_to_host(0, &mut back).unwrap();
    assert!(back == want, "bytes differ from the file's");
}

/// Waits (up to 10 s) until the engine has `bytes` of page cache pinned.
fn wait_pinned(drv: &Driver, bytes: u64) {
    let start = Instant::now();
    while drv.engine().counters().page_cache_pinned_bytes != bytes {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "pinned {} bytes, want {bytes}",
            drv.engine().counters().page_cache_pinned_bytes
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn page_rounded(n: usize) -> u64 {
    let page = rustix::param::page_size();
    n.div_ceil(page) as u64 * page as u64
}

#[test]
fn a_file_read_twice_over_is_read_out_of_pins_from_then_on_with_every_byte_the_files() {
    let dirs = dirs();
    // Two chunks: a whole one and a tail that is not a multiple of a page.
    let size = CHUNK + (3 << 20) + 12_345;
    let files: Vec<_> = dirs
        .iter()
        .enumerate()
        .map(|(i, (w, d))| (*w, write_file(d.path(), "pins", &random_bytes(70 + i as u64, size))))
        .collect();
    std::thread::sleep(SETTLE);
    for (i, (where_, p)) in files.iter().enumerate() {
        let data = random_bytes(70 + i as u64, size);
        let drv = sim_driver(config(1 << 30, 60_000), 1);
        let f = FileHandle::open(p).unwrap();
        let mut dev = drv.alloc_device(0, size).unwrap();
        let requests = size.div_ceil(4 << 20) as u64;
        pass(&drv, &f, &mut dev, &data, 4 << 20);
        // Read once: nothing is pinned, however long the engine stays idle.
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(drv.engine().counters().page_cache_pinned_bytes, 0, "{where_}: read once");
        pass(&drv, &f, &mut dev, &data, 4 << 20);
        assert_eq!(drv.engine().counters().pinned_reads, 0, "{where_}: read once or twice only");
        // Both chunks have been read twice over: the background thread pins them.
        wait_pinned(&drv, CHUNK as u64 + page_rounded(size - CHUNK));
        let before = drv.engine().counters();
        pass(&drv, &f, &mut dev, &data, 4 << 20);
        let after = drv.engine().counters();
        assert_eq!(after.pinned_reads - before.pinned_reads, requests, "{where_}: every read");
        assert_eq!(after.page_cache_dma_bytes - before.page_cache_dma_bytes, size as u64);
        assert_eq!(after.buffered_read_bytes, before.buffered_read_bytes, "{where_}: no pread");
        // Random ranges, across the chunk boundary and up to the end of the file, into random
        // places of the buffer.
        let mut r = rng(7 + i as u64);
        for _ in 0..40 {
            use rand::Rng;
            let len = r.random_range((256 << 10)..(8 << 20));
            let off = r.random_range((CHUNK - (6 << 20))..(size - (256 << 10)));
            let at = r.random_range(0..(size - len));
            let before = drv.engine().counters().pinned_reads;
            let n = drv.read(&f, off as u64, &mut dev, at, len).unwrap();
            let want = &data[off..(off + len).min(size)];
            assert_eq!(n, want.len(), "{where_}: {len} at {off}");
            let mut back = vec![0u8; n];
            dev.copy_to_host(at, &mut back).unwrap();
            assert!(back == want, "{where_}: bytes differ, {len} at {off} into {at}");
            assert_eq!(drv.engine().counters().pinned_reads, before + 1, "{where_}: pinned");
        }
    }
}

#[test]
fn a_file_that_changes_is_never_read_out_of_its_old_pins_and_they_are_released() {
    for (i, (where_, d)) in dirs().into_iter().enumerate() {
        let size = 24 << 20;
        let data = random_bytes(80 + i as u64, size);
        let p = write_file(d.path(), "changes", &data);
        std::thread::sleep(SETTLE);
        let drv = sim_driver(config(1 << 30, 60_000), 1);
        let f = FileHandle::open(&p).unwrap();
        let mut dev = drv.alloc_device(0, size).unwrap();
        pass(&drv, &f, &mut dev, &data, 1 << 20);
        pass(&drv, &f, &mut dev, &data, 1 << 20);
        wait_pinned(&drv, size as u64);
        // Another writer truncates the file and writes new bytes into the same inode.
        let new = random_bytes(90 + i as u64, size - 5000);
        std::fs::write(&p, &new).unwrap();
        let f = FileHandle::open(&p).unwrap();
        let before = drv.engine().counters().pinned_reads;
        pass(&drv, &f, &mut dev, &new, 1 << 20);
        assert_eq!(drv.engine().counters().pinned_reads, before, "{where_}: old pins used");
        wait_pinned(&drv, 0);
    }
}

#[test]
fn pins_keep_to_their_budget_and_idle_time() {
    for (i, (where_, d)) in dirs().into_iter().enumerate() {
        // A whole chunk and a 3 MiB tail.
        let size = CHUNK + (3 << 20);
        let data = random_bytes(100 + i as u64, size);
        let p = write_file(d.path(), "budget", &data);
        std::thread::sleep(SETTLE);
        let f = FileHandle::open(&p).unwrap();
        // No budget: never pinned.
        let drv = sim_driver(config(0, 60_000), 1);
        let mut dev = drv.alloc_device(0, size).unwrap();
        for _ in 0..3 {
            pass(&drv, &f, &mut dev, &data, 4 << 20);
        }
        let c = drv.engine().counters();
        assert_eq!((c.pinned_reads, c.page_cache_pinned_bytes), (0, 0), "{where_}: budget 0");
        // 16 MiB: the tail fits, the whole chunk never does.
        let drv = sim_driver(config(16 << 20, 60_000), 1);
        let mut dev = drv.alloc_device(0, size).unwrap();
        pass(&drv, &f, &mut dev, &data, 4 << 20);
        pass(&drv, &f, &mut dev, &data, 4 << 20);
        wait_pinned(&drv, 3 << 20);
        for _ in 0..2 {
            pass(&drv, &f, &mut dev, &data, 4 << 20);
            let c = drv.engine().counters();
            assert_eq!(c.page_cache_pinned_bytes, 3 << 20, "{where_}: over the budget");
        }
        assert_eq!(drv.engine().counters().pinned_reads, 2, "{where_}: the tail's reads only");
        // Two seconds idle: released, and the next read goes through the bounce buffers. The
        // whole chunk only: each chunk's idle time starts when it is pinned, and under
        // ThreadSanitizer on two cores the tail's read can come more than two seconds after the
        // whole chunk was pinned, which then goes before the tail is pinned.
        let drv = sim_driver(config(1 << 30, 2000), 1);
        let mut dev = drv.alloc_device(0, size).unwrap();
        pass(&drv, &f, &mut dev, &data[..CHUNK], 4 << 20);
        pass(&drv, &f, &mut dev, &data[..CHUNK], 4 << 20);
        wait_pinned(&drv, CHUNK as u64);
        wait_pinned(&drv, 0);
        let before = drv.engine().counters().pinned_reads;
        pass(&drv, &f, &mut dev, &data, 4 << 20);
        assert_eq!(drv.engine().counters().pinned_reads, before, "{where_}: released pins used");
    }
}

#[test]
fn small_reads_host_memory_and_fresh_files_are_never_pinned() {
    for (i, (where_, d)) in dirs().into_iter().enumerate() {
        let size = 8 << 20;
        let data = random_bytes(110 + i as u64, size);
        // Written just now: not settled, however often it is read (this test reads it for far
        // less than the two seconds it takes to settle).
        let p = write_file(d.path(), "fresh", &data);
        let drv = sim_driver(config(1 << 30, 60_000), 1);
        let f = FileHandle::open(&p).unwrap();
        let mut dev = drv.alloc_device(0, size).unwrap();
        for _ in 0..4 {
            pass(&drv, &f, &mut dev, &data, 1 << 20);
        }
        let c = drv.engine().counters();
        assert_eq!((c.pinned_reads, c.page_cache_pinned_bytes), (0, 0), "{where_}: fresh file");
        std::thread::sleep(SETTLE);
        // Settled, but read in pieces below `page_cache_pins_min_request_bytes`, or into host
        // memory.
        for _ in 0..4 {
            pass(&drv, &f, &mut dev, &data, 128 << 10);
            let mut host = vec![0u8; size];
            assert_eq!(drv.read(&f, 0, &mut host[..], 0, size).unwrap(), size);
            assert!(host == data, "{where_}: host read");
        }
        std::thread::sleep(Duration::from_millis(100));
        let c = drv.engine().counters();
        assert_eq!((c.pinned_reads, c.page_cache_pinned_bytes), (0, 0), "{where_}: small/host");
        // The defaults: no pins at all.
        let drv = sim_driver(Config { threads: 4, ..Config::default() }, 1);
        for _ in 0..3 {
            pass(&drv, &f, &mut dev, &data, 4 << 20);
        }
        std::thread::sleep(Duration::from_millis(100));
        let c = drv.engine().counters();
        assert_eq!((c.pinned_reads, c.page_cache_pinned_bytes), (0, 0), "{where_}: defaults");
        // The default smallest request (4 MiB): 1 MiB reads stay on the bounce buffers, 4 MiB
        // reads are pinned after two passes.
        let defaults =
            Config { threads: 4, page_cache_pins_max_bytes: 1 << 30, ..Config::default() };
        assert_eq!(defaults.page_cache_pins_min_request_bytes, 4 << 20);
        let drv = sim_driver(defaults, 1);
        for _ in 0..3 {
            pass(&drv, &f, &mut dev, &data, 1 << 20);
        }
        std::thread::sleep(Duration::from_millis(100));
        let c = drv.engine().counters();
        assert_eq!((c.pinned_reads, c.page_cache_pinned_bytes), (0, 0), "{where_}: 1 MiB reads");
        pass(&drv, &f, &mut dev, &data, 4 << 20);
        pass(&drv, &f, &mut dev, &data, 4 << 20);
        wait_pinned(&drv, size as u64);
        pass(&drv, &f, &mut dev, &data, 4 << 20);
        assert_eq!(drv.engine().counters().pinned_reads, 2, "{where_}: 4 MiB reads");
    }
}
