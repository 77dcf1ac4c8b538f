//! `gdio::gpu::pinned_bytes_held`: every pinned buffer counts while it lives (the engine's
//! bounce buffers, made at a GPU's first I/O, and a caller's own), and dropping the driver
//! gives all of them back; the lane a calling thread made for its small inline requests goes
//! at that thread's next request on another driver, or when it asks
//! (`release_unused_caller_lanes`). A binary of its own: the count is process-wide.

mod common;

use std::sync::Arc;

use common::*;
use gdio::gpu::{pinned_bytes_held, PinnedBuffer};
use gdio::{DirectIoPolicy, FileHandle};

static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn pinned_buffers_count_while_they_live_and_a_dropped_driver_gives_them_back() {
    let _g = ONE.lock().unwrap_or_else(|p| p.into_inner());
    assert_eq!(pinned_bytes_held(), 0);
    let config = tiny_config(DirectIoPolicy::Off, 3);
    let per_lane = config.bounce_buffer_size * config.bounce_buffers_per_thread;
    let drv = sim_driver(config, 1);
    assert_eq!(pinned_bytes_held(), 0, "no bounce buffers before the first GPU I/O");
    let own = PinnedBuffer::new(drv.runtime(), 0, 12_345).unwrap();
    assert_eq!(pinned_bytes_held(), 12_345);

    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(5, 1 << 20);
    let path = write_file(d.path(), "p", &data);
    let f = Arc::new(FileHandle::open(&path).unwrap());
    let mut dev = drv.alloc_device(0, data.len()).unwrap();
    assert_eq!(drv.read(&f, 0, &mut dev, 0, data.len()).unwrap(), data.len());
    let mut back = vec![0u8; data.len()];
    dev.copy_to_host(0, &mut back).unwrap();
    assert_eq!(back, data);
    let held = pinned_bytes_held();
    assert!(held >= 12_345 + per_lane, "{held} bytes: the workers' bounce buffers are not counted");

    drop(own);
    assert_eq!(pinned_bytes_held(), held - 12_345);
    drop(dev);
    drop(drv);
    assert_eq!(pinned_bytes_held(), 0, "a dropped driver kept pinned memory");
}

#[test]
fn a_calling_thread_s_inline_lane_goes_when_its_driver_is_gone() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(6, 64 << 10);
    let path = write_file(d.path(), "q", &data);
    let f = Arc::new(FileHandle::open(&path).unwrap());
    let small_read = |drv: &gdio::Driver| {
        let mut dev = drv.alloc_device(0, 4096).unwrap();
        assert_eq!(drv.read(&f, 8192, &mut dev, 0, 4096).unwrap(), 4096);
        let mut back = vec![0u8; 4096];
        dev.copy_to_host(0, &mut back).unwrap();
        assert_eq!(back, data[8192..12288]);
        drv.engine().counters().inline_requests
    };
    // One thread at a time on the count: this binary's other test runs on its own thread.
    let _g = ONE.lock().unwrap_or_else(|p| p.into_inner());
    let base = pinned_bytes_held();
    let config = tiny_config(DirectIoPolicy::Off, 2);
    let lane = 2 * config.bounce_buffer_size;
    let a = sim_driver(config.clone(), 1);
    assert_eq!(small_read(&a), 1, "a small read runs on its caller");
    assert_eq!(pinned_bytes_held(), base + lane, "the caller's lane: two bounce buffers");
    drop(a);
    assert_eq!(pinned_bytes_held(), base + lane, "the lane outlives its driver until asked");
    gdio::engine::release_unused_caller_lanes();
    assert_eq!(pinned_bytes_held(), base);

    // Left behind again, then taken away by this thread's next inline request elsewhere.
    let b = sim_driver(config.clone(), 1);
    small_read(&b);
    drop(b);
    let c = sim_driver(config, 1);
    small_read(&c);
    assert_eq!(pinned_bytes_held(), base + lane, "the dropped driver's lane is gone");
    gdio::engine::release_unused_caller_lanes();
    assert_eq!(pinned_bytes_held(), base + lane, "a live driver's lane stays");
    drop(c);
    gdio::engine::release_unused_caller_lanes();
    assert_eq!(pinned_bytes_held(), base);
}
