//! The retry policy with a fault-injecting fastpath on real files and simulated GPUs: ENODEV,
//! EREMOTEIO and ENOTSUP are retried on compat, other errors fail at once, nothing is retried
//! when compat is disallowed. The bytes are checked after every retry.

mod common;

use std::sync::Arc;

use common::*;
use gdio::backend::compat::CompatBackend;
use gdio::backend::fault::FaultBackend;
use gdio::backend::host::HostBackend;
use gdio::backend::Backend;
use gdio::gpu::sim::SimRuntime;
use gdio::{Config, DirectIoPolicy, Driver, FileHandle, OpenOptions};
use rand::Rng;

const LEN: usize = 64 * 4096;

fn config(allow_compat: bool) -> Config {
    Config {
        allow_compat_mode: allow_compat,
        unsupported_file_systems: true,
        ..tiny_config(DirectIoPolicy::Off, 3)
    }
}

/// A driver whose fastpath is a fault backend following `plan`.
fn driver(config: Config, plan: Vec<Option<i32>>, scribble: bool) -> (Driver, Arc<FaultBackend>) {
    let rt = Arc::new(SimRuntime::new(1, std::time::Duration::from_micros(20)));
    let mut fault = None;
    let drv = Driver::with_backends(config, rt, |engine| {
        let mut f = FaultBackend::new(engine.clone(), plan);
        if scribble {
            f = f.scribbling();
        }
        let f = Arc::new(f);
        fault = Some(f.clone());
        vec![
            f as Arc<dyn Backend>,
            Arc::new(CompatBackend::new(engine.clone())),
            Arc::new(HostBackend::new(engine.clone())),
        ]
    })
    .unwrap();
    (drv, fault.unwrap())
}

/// A directory on a filesystem that takes O_DIRECT (the fastpath's file rule needs it).
fn dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn fastpath_serves(drv: &Driver, f: &FileHandle) -> bool {
    drv.explain_handle(f, gdio::backend::Op::Read, gdio::MemoryKind::Device { ordinal: 0 }, true)
        .backend
        == Some("fault")
}

const RETRIED: &[(i32, &str)] =
    &[(libc::ENODEV, "ENODEV"), (libc::EREMOTEIO, "EREMOTEIO"), (libc::EOPNOTSUPP, "ENOTSUP")];
const NOT_RETRIED: &[i32] = &[libc::EIO, libc::EINVAL, libc::EBADF, libc::ENOMEM];

#[test]
fn fastpath_enodev_eremoteio_enotsup_are_retried_on_compat() {
    let d = dir();
    let mut r = rng(7);
    for (i, &(errno, cause)) in RETRIED.iter().enumerate() {
        let data = random_bytes(100 + i as u64, LEN * 4);
        let p = write_file(d.path(), &format!("r{i}"), &data);
        // Read: fails once on the fastpath, served by compat, bytes checked.
        let (drv, fault) = driver(config(true), vec![Some(errno)], false);
        let f = FileHandle::open(&p).unwrap();
        assert!(fastpath_serves(&drv, &f), "the test file must be eligible for the fastpath");
        let off = r.random_range(0..3u64) * 4096 * 16;
        let mut dev = drv.alloc_device(0, LEN).unwrap();
        assert_eq!(drv.read(&f, off, &mut dev, 0, LEN).unwrap(), LEN);
        assert!(
            dev.to_vec().unwrap() == data[off as usize..off as usize + LEN],
            "read after {cause} retry"
        );
        assert_eq!(fault.calls(), 1);
        let s = drv.stats();
        assert_eq!(s.backend("fault").retries.get(cause), Some(&1), "{s:?}");
        assert_eq!(s.backend("fault").errors, 1);
        assert_eq!(s.backend("compat").ops, 1);
        assert_eq!(s.backend("compat").bytes, LEN as u64);
        assert_eq!(
            s.backend("compat").fallbacks.get(&format!("fault failed with {cause}")),
            Some(&1),
            "{s:?}"
        );
        // The next read goes to the fastpath again and succeeds there.
        let mut dev2 = drv.alloc_device(0, LEN).unwrap();
        assert_eq!(drv.read(&f, 0, &mut dev2, 0, LEN).unwrap(), LEN);
        assert!(dev2.to_vec().unwrap() == data[..LEN]);
        assert_eq!(drv.stats().backend("fault").ops, 1);

        // Write: the fastpath scribbles over the range and fails; compat rewrites it.
        let (drv, fault) = driver(config(true), vec![Some(errno)], true);
        let f = FileHandle::open_with(&p, OpenOptions::new().read(true).write(true)).unwrap();
        let new = random_bytes(200 + i as u64, LEN);
        let mut dev = drv.alloc_device(0, LEN).unwrap();
        dev.copy_from_host(0, &new).unwrap();
        let woff = 4096 * 8;
        assert_eq!(drv.write(&f, woff, &dev, 0, LEN).unwrap(), LEN);
        assert_eq!(fault.calls(), 1);
        let mut want = data.clone();
        want[woff as usize..woff as usize + LEN].copy_from_slice(&new);
        assert!(std::fs::read(&p).unwrap() == want, "file after {cause} write retry");
        let s = drv.stats();
        assert_eq!(s.backend("fault").retries.get(cause), Some(&1));
        assert_eq!(s.backend("compat").ops, 1);
    }
}

#[test]
fn other_fastpath_errors_fail_at_once() {
    let d = dir();
    for (i, &errno) in NOT_RETRIED.iter().enumerate() {
        let data = random_bytes(300 + i as u64, LEN * 2);
        let p = write_file(d.path(), &format!("n{i}"), &data);
        let (drv, fault) = driver(config(true), vec![Some(errno), Some(errno)], false);
        let f = FileHandle::open_with(&p, OpenOptions::new().read(true).write(true)).unwrap();
        let mut dev = drv.alloc_device(0, LEN).unwrap();
        dev.copy_from_host(0, &vec![0x5Au8; LEN]).unwrap();
        let e = drv.read(&f, 0, &mut dev, 0, LEN).unwrap_err();
        assert_eq!(e.errno(), Some(errno), "{e}");
        assert!(dev.to_vec().unwrap() == vec![0x5Au8; LEN], "nothing may land in the buffer");
        dev.copy_from_host(0, &random_bytes(9, LEN)).unwrap();
        let e = drv.write(&f, 0, &dev, 0, LEN).unwrap_err();
        assert_eq!(e.errno(), Some(errno), "{e}");
        assert!(std::fs::read(&p).unwrap() == data, "nothing may be written");
        assert_eq!(fault.calls(), 2);
        let s = drv.stats();
        assert!(s.backend("fault").retries.is_empty(), "{s:?}");
        assert_eq!(s.backend("fault").errors, 2);
        assert_eq!(s.backend("compat").ops, 0);
    }
}

#[test]
fn nothing_is_retried_when_compat_is_disallowed() {
    let d = dir();
    let data = random_bytes(400, LEN * 2);
    let p = write_file(d.path(), "x", &data);
    let (drv, fault) = driver(config(false), vec![Some(libc::ENODEV)], false);
    let f = FileHandle::open(&p).unwrap();
    let mut dev = drv.alloc_device(0, LEN).unwrap();
    let e = drv.read(&f, 0, &mut dev, 0, LEN).unwrap_err();
    assert_eq!(e.errno(), Some(libc::ENODEV));
    assert!(e.to_string().contains("allow_compat_mode=false"), "{e}");
    assert_eq!(fault.calls(), 1);
    assert!(drv.stats().backend("fault").retries.is_empty());
    assert_eq!(drv.stats().backend("compat").ops, 0);
    // The next aligned read is served by the fastpath; unaligned ones have no backend.
    assert_eq!(drv.read(&f, 0, &mut dev, 0, LEN).unwrap(), LEN);
    assert!(dev.to_vec().unwrap() == data[..LEN]);
    let e = drv.read(&f, 1, &mut dev, 0, LEN).unwrap_err();
    assert_eq!(e.kind(), gdio::ErrorKind::NoBackend);
    assert!(
        e.to_string().contains("fault:")
            && e.to_string().contains("compat:")
            && e.to_string().contains("host:"),
        "{e}"
    );
}

#[test]
fn fallback_failure_is_never_retried() {
    let d = dir();
    let data = random_bytes(500, LEN);
    let p = write_file(d.path(), "y", &data);
    // The fastpath fails with ENODEV, compat then fails too (offset past the end of the file).
    let (drv, fault) = driver(config(true), vec![Some(libc::ENODEV)], false);
    let f = FileHandle::open(&p).unwrap();
    let mut dev = drv.alloc_device(0, 4096).unwrap();
    let e = drv.read(&f, (LEN * 4) as u64, &mut dev, 0, 4096).unwrap_err();
    assert_eq!(e.errno(), Some(libc::EINVAL), "{e}");
    assert_eq!(fault.calls(), 1, "the fastpath is not tried again");
    let s = drv.stats();
    assert_eq!(s.backend("compat").errors, 1);
    assert_eq!(s.backend("fault").retries.get("ENODEV"), Some(&1));
    // An unaligned read goes to compat directly; its failure is not retried anywhere.
    let e = drv.read(&f, (LEN * 4 + 1) as u64, &mut dev, 0, 100).unwrap_err();
    assert_eq!(e.errno(), Some(libc::EINVAL));
    assert_eq!(fault.calls(), 1);
    assert_eq!(drv.stats().backend("compat").errors, 2);
}

#[test]
fn random_faults_keep_the_bytes_right() {
    let d = dir();
    let mut r = rng(11);
    let size = LEN * 8;
    let data = random_bytes(600, size);
    let p = write_file(d.path(), "z", &data);
    let plan: Vec<Option<i32>> = (0..200)
        .map(|_| match r.random_range(0..4) {
            0 => Some(libc::ENODEV),
            1 => Some(libc::EREMOTEIO),
            _ => None,
        })
        .collect();
    let retries = plan.iter().filter(|x| x.is_some()).count() as u64;
    let (drv, _fault) = driver(config(true), plan, true);
    let f = FileHandle::open_with(&p, OpenOptions::new().read(true).write(true)).unwrap();
    let mut model = data.clone();
    let mut dev = drv.alloc_device(0, LEN).unwrap();
    let mut fast_ops = 0u64;
    for i in 0..200 {
        let blocks = r.random_range(1..=(LEN / 4096));
        let len = blocks * 4096;
        let off = r.random_range(0..=(size - len) / 4096) * 4096;
        if i % 2 == 0 {
            let fresh = random_bytes(1000 + i, len);
            dev.copy_from_host(0, &fresh).unwrap();
            assert_eq!(drv.write(&f, off as u64, &dev, 0, len).unwrap(), len);
            model[off..off + len].copy_from_slice(&fresh);
        } else {
            assert_eq!(drv.read(&f, off as u64, &mut dev, 0, len).unwrap(), len);
            assert!(
                dev.to_vec().unwrap()[..len] == model[off..off + len],
                "read {i} at {off}+{len}"
            );
        }
        fast_ops += 1;
    }
    assert!(std::fs::read(&p).unwrap() == model, "file differs from the model");
    let s = drv.stats();
    let fault = s.backend("fault");
    assert_eq!(fault.retry_count(), retries);
    assert_eq!(fault.ops + s.backend("compat").ops, fast_ops);
    assert_eq!(s.backend("compat").fallback_count(), retries);
}
