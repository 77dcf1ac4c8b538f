//! `split_min_bytes`: a one-task read into GPU memory spread over idle workers lands the same
//! bytes as the file holds, at random unaligned offsets and lengths (end of file included),
//! with the split on and off and into one bounce buffer, while other reads keep workers busy;
//! bytes around every destination stay untouched. The keys of the one-buffer split read from
//! the environment and bounded.

mod common;

use std::sync::Arc;

use common::*;
use gdio::{Config, FileHandle};
use rand::Rng;

#[test]
fn split_reads_land_exactly_with_the_split_on_and_off() {
    let data = random_bytes(91, 24 * 1024 * 1024 + 777);
    for (what, dir) in dirs() {
        let p = write_file(dir.path(), "split", &data);
        let f = Arc::new(FileHandle::open(&p).unwrap());
        // 1 MiB bounce buffers: pieces in their readers' buffers; 8 MiB: into one buffer.
        let cases = [(0usize, 1 << 20), (1 << 20, 1 << 20), (2 << 20, 1 << 20), (1 << 20, 8 << 20)];
        for (split, bounce) in cases {
            let config = Config {
                threads: 6,
                task_size: 8 << 20,
                bounce_buffer_size: bounce,
                split_min_bytes: split,
                ..Config::default()
            };
            let drv = Arc::new(sim_driver(config, 1));
            drv.prepare_gpu(0).unwrap();
            let mut r = rng(split as u64 + 5);
            // Two threads at once, so that reads find some workers busy and some idle.
            std::thread::scope(|s| {
                for t in 0..2u64 {
                    let (drv, f, data) = (drv.clone(), f.clone(), &data);
                    let seed: u64 = r.random::<u64>() ^ bounce as u64;
                    s.spawn(move || {
                        let mut r = rng(seed + t);
                        for _ in 0..6 {
                            let len = r.random_range((2 << 20)..=(8 << 20));
                            let off = r.random_range(0..data.len() as u64 - 1024);
                            // 64 bytes of guard on each side of the destination.
                            let mut dev = drv.alloc_device(0, len + 128).unwrap();
                            dev.copy_from_host(0, &[0xA5; 64]).unwrap();
                            dev.copy_from_host(len + 64, &[0x5A; 64]).unwrap();
                            let n = drv.read(&f, off, &mut dev, 64, len).unwrap();
                            let want = &data[off as usize..(off as usize + len).min(data.len())];
                            assert_eq!(n, want.len(), "{what} split {split} off {off} len {len}");
                            let mut back = vec![0u8; len + 128];
                            dev.copy_to_host(0, &mut back).unwrap();
                            assert!(back[..64].iter().all(|&b| b == 0xA5), "{what}: head guard");
                            assert!(
                                back[64..64 + n] == *want,
                                "{what} split {split}: bytes differ at {off}+{len}"
                            );
                            assert!(
                                back[len + 64..].iter().all(|&b| b == 0x5A),
                                "{what}: tail guard"
                            );
                        }
                    });
                }
            });
            let n = drv.engine().counters().split_reads;
            if split == 0 {
                assert_eq!(n, 0, "{what}: split with split_min_bytes 0");
            } else {
                assert!(n > 0, "{what}: no read was split with split_min_bytes {split}");
            }
        }
    }
}

#[test]
fn the_one_buffer_keys_are_read_from_the_environment_and_bounded() {
    let vars = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
    let d = Config::default();
    assert!(d.split_into_one_buffer);
    assert_eq!(d.split_pieces_per_worker, 8);
    let l = Config::load_from_vars(vars("GDIO_SPLIT_INTO_ONE_BUFFER", "false")).unwrap();
    assert!(!l.config().split_into_one_buffer);
    assert!(d.split_early_copy);
    assert_eq!(d.split_early_copy_min_bytes, 4 << 20);
    let l = Config::load_from_vars(vars("GDIO_SPLIT_EARLY_COPY", "false")).unwrap();
    assert!(!l.config().split_early_copy);
    let l = Config::load_from_vars(vars("GDIO_SPLIT_EARLY_COPY_MIN_BYTES", "2097152")).unwrap();
    assert_eq!(l.config().split_early_copy_min_bytes, 2 << 20);
    assert_eq!(d.split_early_copy_parts, 2);
    let l = Config::load_from_vars(vars("GDIO_SPLIT_EARLY_COPY_PARTS", "4")).unwrap();
    assert_eq!(l.config().split_early_copy_parts, 4);
    assert_eq!(d.split_early_copy_max_others, 0, "early copies for reads alone, as measured");
    let l = Config::load_from_vars(vars("GDIO_SPLIT_EARLY_COPY_MAX_OTHERS", "3")).unwrap();
    assert_eq!(l.config().split_early_copy_max_others, 3);
    for bad in ["-1", "4097", "few"] {
        let e = Config::load_from_vars(vars("GDIO_SPLIT_EARLY_COPY_MAX_OTHERS", bad)).unwrap_err();
        assert!(e.to_string().contains("SPLIT_EARLY_COPY_MAX_OTHERS"), "{bad}: {e}");
    }
    for bad in ["0", "1", "17", "many"] {
        let e = Config::load_from_vars(vars("GDIO_SPLIT_EARLY_COPY_PARTS", bad)).unwrap_err();
        assert!(e.to_string().contains("SPLIT_EARLY_COPY_PARTS"), "{bad}: {e}");
    }
    for bad in ["-1", "2147483648", "big"] {
        let e = Config::load_from_vars(vars("GDIO_SPLIT_EARLY_COPY_MIN_BYTES", bad)).unwrap_err();
        assert!(e.to_string().contains("SPLIT_EARLY_COPY_MIN_BYTES"), "{bad}: {e}");
    }
    let e = Config::load_from_vars(vars("GDIO_SPLIT_EARLY_COPY", "soon")).unwrap_err();
    assert!(e.to_string().contains("SPLIT_EARLY_COPY"), "{e}");
    let l = Config::load_from_vars(vars("GDIO_SPLIT_PIECES_PER_WORKER", "2")).unwrap();
    assert_eq!(l.config().split_pieces_per_worker, 2);
    for bad in ["0", "65", "two"] {
        let e = Config::load_from_vars(vars("GDIO_SPLIT_PIECES_PER_WORKER", bad)).unwrap_err();
        assert!(e.to_string().contains("split_pieces_per_worker"), "{bad}: {e}");
    }
    let e = Config::load_from_vars(vars("GDIO_SPLIT_INTO_ONE_BUFFER", "maybe")).unwrap_err();
    assert!(e.to_string().contains("SPLIT_INTO_ONE_BUFFER"), "{e}");
    let mut l = Config::load_from_vars(vars("GDIO_SPLIT_PIECES_PER_WORKER", "3")).unwrap();
    assert!(l.set("split_pieces_per_worker", 0).is_err());
    assert_eq!(l.config().split_pieces_per_worker, 3, "a refused value changed the config");
}
