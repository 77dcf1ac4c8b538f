//! `direct_io = auto` decides per task, by how much of the task's range is in the page cache
//! (sampled: `engine/transfer.rs` `RESIDENCY_WINDOWS`): hot tasks read through the page cache,
//! cold ones with `O_DIRECT`, in one request, every byte the file's.

mod common;

use common::*;
use gdio::{Config, DirectIoPolicy, FileHandle};

const TASK: usize = 2 << 20;

#[test]
fn auto_reads_hot_tasks_buffered_and_cold_tasks_direct_in_one_request() {
    // The temp dir (ext4 here) has O_DIRECT; tmpfs has not.
    let d = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let data = random_bytes(91, 6 * TASK);
    let p = write_file(d.path(), "halves", &data);
    let f = FileHandle::open(&p).unwrap();
    if f.direct_fd().is_none() {
        eprintln!("skipped: {} has no O_DIRECT", d.path().display());
        return;
    }
    let config = Config {
        threads: 3,
        task_size: TASK,
        bounce_buffer_size: TASK,
        direct_io: DirectIoPolicy::Auto,
        ..Config::default()
    };
    let drv = sim_driver(config, 1);
    // Tasks 1, 3 and 4 cold; 0, 2 and 5 in the page cache.
    for task in [1, 3, 4] {
        drop_cache_range(&f, (task * TASK) as u64, TASK as u64);
    }
    let cold = gdio::file::residency::residency(f.buffered_fd(), TASK as u64, TASK as u64);
    if cold.is_some_and(|r| r.cached_pages > 0) {
        eprintln!("skipped: the kernel kept the dropped range cached ({cold:?})");
        return;
    }
    let mut dev = drv.alloc_device(0, data.len()).unwrap();
    assert_eq!(drv.read(&f, 0, &mut dev, 0, data.len()).unwrap(), data.len());
    let mut back = vec![0u8; data.len()];
    dev.copy_to_host(0, &mut back).unwrap();
    assert!(back == data, "bytes differ from the file's");
    let c = drv.engine().counters();
    assert_eq!(c.direct_read_bytes, 3 * TASK as u64, "the cold tasks, with O_DIRECT");
    assert_eq!(c.buffered_read_bytes, 3 * TASK as u64, "the hot tasks, through the page cache");
}
