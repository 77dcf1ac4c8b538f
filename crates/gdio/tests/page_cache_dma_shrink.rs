//! The page-cache DMA path on a file that shrank after it was opened: the read reports the true
//! byte count, the bytes it reports are the file's, and nothing past the end is touched (a
//! mapped page past the end of a file raises SIGBUS, which would kill this test process).

mod common;

use common::*;
use gdio::{DirectIoPolicy, FileHandle};

#[test]
fn read_after_truncation_reports_the_true_count_without_sigbus() {
    let page = rustix::param::page_size();
    for (where_, d) in dirs() {
        let data = random_bytes(60, (1 << 20) + 999);
        // New sizes: across several pages, inside a page, on a page boundary, empty, one byte.
        let sizes = [page * 3 + 17, page / 2, page * 8, 0, 1, (1 << 20) - 1];
        for (i, &new_size) in sizes.iter().enumerate() {
            let p = write_file(d.path(), &format!("shrink{i}"), &data);
            // Every range counts as hot, so every task takes the mapped path.
            let config = gdio::Config {
                page_cache_dma: true,
                hot_cache_fraction: 0.0,
                ..tiny_config(DirectIoPolicy::Auto, 4)
            };
            let drv = sim_driver(config, 1);
            // Probe at the full size, then shrink the file under the open handle.
            let f = FileHandle::open(&p).unwrap();
            assert_eq!(f.size(), data.len() as u64);
            std::fs::OpenOptions::new()
                .write(true)
                .open(&p)
                .unwrap()
                .set_len(new_size as u64)
                .unwrap();
            let mut dev = drv.alloc_device(0, data.len()).unwrap();
            let n = drv.read(&f, 0, &mut dev, 0, data.len()).unwrap();
            assert_eq!(n, new_size, "{where_}: shrunk to {new_size}");
            let mut back = vec![0u8; n];
            dev.copy_to_host(0, &mut back).unwrap();
            assert!(back == data[..n], "{where_}: bytes differ after shrinking to {new_size}");
            // From an offset inside what is left, and from one past it.
            if new_size > 100 {
                let n = drv.read(&f, 100, &mut dev, 0, data.len() - 100).unwrap();
                assert_eq!(n, new_size - 100);
                let mut back = vec![0u8; n];
                dev.copy_to_host(0, &mut back).unwrap();
                assert!(back == data[100..new_size]);
            }
            let stats = drv.engine().counters();
            assert!(stats.page_cache_dma_bytes > 0 || new_size == 0, "mapped path not taken");
        }
    }
}
