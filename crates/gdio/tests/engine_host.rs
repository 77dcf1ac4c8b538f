//! The engine on real files (ext4 temp dir and tmpfs), host memory and simulated GPUs:
//! random ranges against `std::fs`, O_DIRECT on and off, unaligned heads and tails, EOF, many
//! threads on one handle, writes read back, and tiny buffers that hit every loop edge.

mod common;

use std::os::unix::fs::FileExt;

use common::*;
use gdio::{DirectIoPolicy, FileHandle, OpenOptions};
use proptest::prelude::*;
use rand::Rng;

const POLICIES: [DirectIoPolicy; 3] =
    [DirectIoPolicy::Off, DirectIoPolicy::On, DirectIoPolicy::Auto];

fn expected(data: &[u8], off: u64, len: usize) -> &[u8] {
    let s = (off as usize).min(data.len());
    let e = (off as usize + len).min(data.len());
    &data[s..e]
}

#[test]
fn random_ranges_into_host_memory_match_std_fs() {
    for (where_, d) in dirs() {
        let data = random_bytes(11, 3 * 1024 * 1024 + 777);
        let p = write_file(d.path(), "r", &data);
        for policy in POLICIES {
            for threads in [1, 3, 8] {
                let drv = sim_driver(tiny_config(policy, threads), 1);
                let f = FileHandle::open(&p).unwrap();
                let mut r = rng(threads as u64 * 31 + policy as u64);
                for _ in 0..25 {
                    let (off, len) = random_range(&mut r, data.len());
                    let pad = r.random_range(0..5000);
                    let mut buf = random_bytes(r.random(), len + pad);
                    let canary = buf.clone();
                    let n = drv.read(&f, off, &mut buf, pad, len).unwrap();
                    let want = expected(&data, off, len);
                    assert_eq!(n, want.len(), "{where_} {policy:?} t{threads} off {off} len {len}");
                    assert_eq!(&buf[pad..pad + n], want, "{where_} {policy:?} off {off} len {len}");
                    assert_eq!(&buf[..pad], &canary[..pad], "bytes before the range were touched");
                    assert_eq!(
                        &buf[pad + n..],
                        &canary[pad + n..],
                        "bytes after the range were touched"
                    );
                }
            }
        }
    }
}

#[test]
fn random_ranges_into_simulated_gpu_through_bounce_buffers() {
    for (where_, d) in dirs() {
        let data = random_bytes(12, 2 * 1024 * 1024 + 4097);
        let p = write_file(d.path(), "g", &data);
        for policy in POLICIES {
            let drv = sim_driver(tiny_config(policy, 4), 2);
            drv.prepare_gpu(1).unwrap();
            assert_eq!(drv.prepare_gpu(2).unwrap_err().kind(), gdio::ErrorKind::NoGpu);
            let f = FileHandle::open(&p).unwrap();
            let mut dev = drv.alloc_device(1, data.len() + 8192).unwrap();
            let mut r = rng(99 + policy as u64);
            for _ in 0..25 {
                let (off, len) = random_range(&mut r, data.len());
                let len = len.min(data.len() + 8192 - 100);
                let boff = r.random_range(0..100usize);
                let poison = random_bytes(r.random(), dev.len());
                dev.copy_from_host(0, &poison).unwrap();
                let n = drv.read(&f, off, &mut dev, boff, len).unwrap();
                let want = expected(&data, off, len);
                assert_eq!(n, want.len());
                let back = dev.to_vec().unwrap();
                assert_eq!(&back[boff..boff + n], want, "{where_} {policy:?} off {off} len {len}");
                assert_eq!(&back[..boff], &poison[..boff]);
                assert_eq!(&back[boff + n..], &poison[boff + n..]);
            }
        }
    }
}

#[test]
fn unaligned_head_and_tail_with_o_direct() {
    for (where_, d) in dirs() {
        let data = random_bytes(13, 1 << 20);
        let p = write_file(d.path(), "u", &data);
        let drv = sim_driver(tiny_config(DirectIoPolicy::On, 2), 1);
        let f = FileHandle::open(&p).unwrap();
        let direct = f.info().direct_io.supported;
        let mut dev = drv.alloc_device(0, 1 << 20).unwrap();
        for (off, len) in [
            (1u64, 4095usize),
            (511, 9000),
            (4095, 4098),
            (4096, 8192),
            (100_001, 500_000),
            (0, 1 << 20),
            (4097, 1),
        ] {
            let mut host = vec![0xEEu8; len];
            assert_eq!(drv.read(&f, off, &mut host, 0, len).unwrap(), len);
            assert_eq!(
                &host[..],
                &data[off as usize..off as usize + len],
                "{where_} host off {off} len {len}"
            );
            assert_eq!(
                drv.read(&f, off, &mut dev, 3, len.min((1 << 20) - 3)).unwrap(),
                len.min((1 << 20) - 3)
            );
            let back = dev.to_vec().unwrap();
            let l = len.min((1 << 20) - 3);
            assert_eq!(
                &back[3..3 + l],
                &data[off as usize..off as usize + l],
                "{where_} dev off {off} len {len}"
            );
        }
        // The aligned middle really went through O_DIRECT where the filesystem has it.
        // Place the destination so that the file's aligned offsets land on aligned addresses.
        let mut backing = vec![0u8; 500_000 + 8192];
        let a = (4096 - backing.as_ptr() as usize % 4096) % 4096;
        let start = (a + 100_001 % 4096) % 4096;
        let host = &mut backing[start..start + 500_000];
        let buf = gdio::BufferRef {
            addr: host.as_mut_ptr() as u64,
            len: host.len(),
            kind: gdio::MemoryKind::Host,
        };
        // SAFETY: `buf` is `host`, a live exclusive slice for the whole call.
        let t = unsafe { drv.engine().read(&f, buf, 100_001) }.unwrap();
        assert_eq!(&host[..], &data[100_001..600_001]);
        if direct {
            assert!(t.direct_bytes >= 400_000, "{where_}: only {} direct bytes", t.direct_bytes);
        } else {
            assert_eq!(t.direct_bytes, 0);
            eprintln!("{where_}: no O_DIRECT on this filesystem; the buffered path was tested");
        }
    }
}

#[test]
fn end_of_file_behaves_like_pread() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(14, 100_000);
    let p = write_file(d.path(), "e", &data);
    let drv = sim_driver(tiny_config(DirectIoPolicy::On, 3), 1);
    let f = FileHandle::open(&p).unwrap();
    let mut buf = vec![0u8; 50_000];
    assert_eq!(drv.read(&f, 90_000, &mut buf, 0, 50_000).unwrap(), 10_000);
    assert_eq!(&buf[..10_000], &data[90_000..]);
    assert_eq!(drv.read(&f, 100_000, &mut buf, 0, 10).unwrap(), 0);
    let e = drv.read(&f, 100_001, &mut buf, 0, 10).unwrap_err();
    assert_eq!(e.kind(), gdio::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("beyond the end"), "{e}");
    // The file grows behind the handle's back: the read sees the new end.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&p)
        .unwrap()
        .write_all_at(&data[..5000], 100_000)
        .unwrap();
    assert_eq!(drv.read(&f, 99_000, &mut buf, 0, 50_000).unwrap(), 6000);
    assert_eq!(&buf[1000..6000], &data[..5000]);
}

#[test]
fn many_threads_read_one_handle() {
    for (_, d) in dirs() {
        let data = random_bytes(15, 4 << 20);
        let p = write_file(d.path(), "m", &data);
        let drv = sim_driver(tiny_config(DirectIoPolicy::Auto, 6), 1);
        let f = FileHandle::open(&p).unwrap();
        std::thread::scope(|s| {
            for t in 0..8u64 {
                let (drv, f, data) = (&drv, &f, &data);
                s.spawn(move || {
                    let mut r = rng(1000 + t);
                    for _ in 0..20 {
                        let (off, len) = random_range(&mut r, data.len());
                        let mut buf = vec![0u8; len];
                        let n = drv.read(f, off, &mut buf, 0, len).unwrap();
                        assert_eq!(&buf[..n], expected(data, off, len));
                    }
                });
            }
        });
    }
}

#[test]
fn writes_from_host_and_simulated_gpu_read_back() {
    for (where_, d) in dirs() {
        for policy in [DirectIoPolicy::Off, DirectIoPolicy::On] {
            let drv = sim_driver(tiny_config(policy, 4), 1);
            let p = d.path().join(format!("w{policy:?}"));
            let f =
                FileHandle::open_with(&p, OpenOptions::new().read(true).write(true).create(true))
                    .unwrap();
            let mut model = random_bytes(16, 1 << 20);
            assert_eq!(drv.write(&f, 0, &model, 0, model.len()).unwrap(), model.len());
            let mut r = rng(17 + policy as u64);
            let mut dev = drv.alloc_device(0, 300_000).unwrap();
            for i in 0..30 {
                let off = r.random_range(0..1_200_000u64);
                let len = r.random_range(1..300_000usize);
                let src = random_bytes(r.random(), len);
                if i % 2 == 0 {
                    drv.write(&f, off, &src, 0, len).unwrap();
                } else {
                    dev.copy_from_host(0, &src).unwrap();
                    assert_eq!(drv.write(&f, off, &dev, 0, len).unwrap(), len);
                }
                let end = off as usize + len;
                if model.len() < end {
                    model.resize(end, 0);
                }
                model[off as usize..end].copy_from_slice(&src);
            }
            assert_eq!(std::fs::read(&p).unwrap(), model, "{where_} {policy:?}");
            let mut back = vec![0u8; model.len()];
            assert_eq!(drv.read(&f, 0, &mut back, 0, model.len()).unwrap(), model.len());
            assert_eq!(back, model);
        }
    }
}

/// KvikIO takes any task and bounce-buffer size (its tests use 3 bytes, 1 KiB, 12345): gdio
/// too, reading and writing the same bytes as with its defaults.
#[test]
fn any_task_and_bounce_buffer_size_reads_and_writes_exactly() {
    for (where_, d) in dirs() {
        for (task_size, bounce_buffer_size) in [(3, 1024), (1024, 2048), (12345, 4097), (1, 1)] {
            for policy in [DirectIoPolicy::Off, DirectIoPolicy::Auto] {
                let config = gdio::Config {
                    threads: 3,
                    task_size,
                    bounce_buffer_size,
                    direct_io: policy,
                    ..gdio::Config::default()
                };
                let drv = sim_driver(config, 1);
                let name = format!("k{task_size}-{bounce_buffer_size}-{policy:?}");
                let p = d.path().join(&name);
                let f = FileHandle::open_with(
                    &p,
                    OpenOptions::new().read(true).write(true).create(true),
                )
                .unwrap();
                let mut r = rng(task_size as u64 * 7 + bounce_buffer_size as u64);
                let mut model = random_bytes(r.random(), 70_000);
                let mut dev = drv.alloc_device(0, 40_000).unwrap();
                dev.copy_from_host(0, &model[..40_000]).unwrap();
                assert_eq!(drv.write(&f, 0, &dev, 0, 40_000).unwrap(), 40_000);
                assert_eq!(drv.write(&f, 40_000, &model, 40_000, 30_000).unwrap(), 30_000);
                for _ in 0..6 {
                    let off = r.random_range(0..60_000u64);
                    let len = r.random_range(1..20_000usize);
                    let src = random_bytes(r.random(), len);
                    dev.copy_from_host(0, &src).unwrap();
                    assert_eq!(drv.write(&f, off, &dev, 0, len).unwrap(), len);
                    let end = off as usize + len;
                    if model.len() < end {
                        model.resize(end, 0);
                    }
                    model[off as usize..end].copy_from_slice(&src);
                    let (roff, rlen) = random_range(&mut r, model.len());
                    let rlen = rlen.min(40_000);
                    let poison = random_bytes(r.random(), 40_000);
                    dev.copy_from_host(0, &poison).unwrap();
                    let n = drv.read(&f, roff, &mut dev, 0, rlen).unwrap();
                    let want = expected(&model, roff, rlen);
                    assert_eq!(n, want.len(), "{where_} {name} off {roff} len {rlen}");
                    let back = dev.to_vec().unwrap();
                    assert_eq!(&back[..n], want, "{where_} {name} off {roff} len {rlen}");
                    assert_eq!(&back[n..], &poison[n..], "{where_} {name}: bytes past the read");
                }
                assert_eq!(std::fs::read(&p).unwrap(), model, "{where_} {name}");
                let mut back = vec![0u8; model.len()];
                assert_eq!(drv.read(&f, 0, &mut back, 0, model.len()).unwrap(), model.len());
                assert_eq!(back, model, "{where_} {name}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn proptest_any_range_any_knobs(
        seed in any::<u64>(),
        size in 1usize..600_000,
        off_frac in 0.0f64..1.0,
        len in 0usize..700_000,
        task_size in 1usize..6 * 4096,
        bounce_buffer_size in 1usize..5 * 4096,
        threads in 1usize..6,
        direct in 0u8..3,
        device in any::<bool>(),
    ) {
        let d = tempfile::tempdir().unwrap();
        let data = random_bytes(seed, size);
        let p = write_file(d.path(), "p", &data);
        let policy = POLICIES[direct as usize];
        let config = gdio::Config {
            threads,
            task_size,
            bounce_buffer_size,
            direct_io: policy,
            ..gdio::Config::default()
        };
        let drv = sim_driver(config, 1);
        let f = FileHandle::open(&p).unwrap();
        let off = (off_frac * size as f64) as u64;
        let want = expected(&data, off, len).to_vec();
        if device {
            let mut dev = drv.alloc_device(0, len.max(1)).unwrap();
            let n = drv.read(&f, off, &mut dev, 0, len).unwrap();
            prop_assert_eq!(n, want.len());
            prop_assert_eq!(&dev.to_vec().unwrap()[..n], &want[..]);
        } else {
            let mut buf = vec![0u8; len];
            let n = drv.read(&f, off, &mut buf, 0, len).unwrap();
            prop_assert_eq!(n, want.len());
            prop_assert_eq!(&buf[..n], &want[..]);
        }
    }
}

#[test]
fn page_cache_dma_path_reads_hot_ranges_exactly() {
    for (where_, d) in dirs() {
        let data = random_bytes(18, (3 << 20) + 999);
        let p = write_file(d.path(), "pc", &data);
        let config = gdio::Config { page_cache_dma: true, ..tiny_config(DirectIoPolicy::Auto, 4) };
        let drv = sim_driver(config, 1);
        let f = FileHandle::open(&p).unwrap();
        let mut dev = drv.alloc_device(0, data.len()).unwrap();
        let mut r = rng(19);
        for _ in 0..30 {
            let (off, len) = random_range(&mut r, data.len());
            let len = len.min(data.len());
            let n = drv.read(&f, off, &mut dev, 0, len).unwrap();
            let want = expected(&data, off, len);
            assert_eq!(n, want.len());
            let mut back = vec![0u8; n];
            dev.copy_to_host(0, &mut back).unwrap();
            assert!(back == want, "{where_} off {off} len {len}");
        }
    }
}
