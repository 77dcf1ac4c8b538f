//! Bad input: each case gets an error that names what was wrong, nothing crashes, and nothing
//! is written.

mod common;

use std::os::unix::fs::PermissionsExt;

use common::*;
use gdio::{DirectIoPolicy, ErrorKind, FileHandle, OpenOptions};

#[test]
fn missing_file() {
    let e = FileHandle::open("/nonexistent-gdio/weights.bin").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.to_string().contains("/nonexistent-gdio/weights.bin"));
    assert_eq!(e.errno(), Some(libc::ENOENT));
}

#[test]
fn directory() {
    let d = tempfile::tempdir().unwrap();
    for e in [FileHandle::open(d.path()).unwrap_err(), FileHandle::create(d.path()).unwrap_err()] {
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.to_string().contains("directory"), "{e}");
    }
}

#[test]
fn read_only_file_opened_for_writing_is_refused_and_untouched() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(1, 10_000);
    let p = write_file(d.path(), "ro", &data);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
    let e = FileHandle::open_with(&p, OpenOptions::new().write(true).truncate(true)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PermissionDenied);
    assert_eq!(std::fs::read(&p).unwrap(), data);
}

#[test]
fn write_through_read_only_handle_fails_and_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(2, 10_000);
    let p = write_file(d.path(), "f", &data);
    let drv = sim_driver(tiny_config(DirectIoPolicy::Off, 2), 1);
    let f = FileHandle::open(&p).unwrap();
    let src = random_bytes(3, 5000);
    let e = drv.write(&f, 0, &src, 0, 5000).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PermissionDenied);
    assert!(e.to_string().contains("read-only"), "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), data);
}

#[test]
fn buffer_shorter_than_length() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(4, 10_000);
    let p = write_file(d.path(), "f", &data);
    let drv = sim_driver(tiny_config(DirectIoPolicy::Off, 2), 1);
    let f = FileHandle::open_with(&p, OpenOptions::new().read(true).write(true)).unwrap();
    let mut small = vec![7u8; 100];
    let e = drv.read(&f, 0, &mut small, 0, 101).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("too short"), "{e}");
    assert_eq!(small, vec![7u8; 100]);
    let e = drv.read(&f, 0, &mut small, 50, 51).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let e = drv.write(&f, 0, &small, 1, 100).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let dev = drv.alloc_device(0, 100).unwrap();
    let e = drv.write(&f, 0, &dev, 0, 200).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert_eq!(std::fs::read(&p).unwrap(), data, "nothing may be written");
}

#[test]
fn offset_beyond_eof() {
    let d = tempfile::tempdir().unwrap();
    let p = write_file(d.path(), "f", &random_bytes(5, 4096));
    let drv = sim_driver(tiny_config(DirectIoPolicy::Off, 2), 1);
    let f = FileHandle::open(&p).unwrap();
    let mut buf = vec![0u8; 10];
    let e = drv.read(&f, 1 << 40, &mut buf, 0, 10).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("beyond the end of the file (4096 bytes)"), "{e}");
    assert_eq!(e.range(), Some((1 << 40, 10)));
}

#[test]
fn gpu_ordinal_that_does_not_exist() {
    let drv = sim_driver(tiny_config(DirectIoPolicy::Off, 2), 1);
    let e = drv.alloc_device(5, 100).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoGpu);
    assert!(e.to_string().contains("GPU 5"), "{e}");
    // And with the real runtime detection on this machine (no GPU in CI): a clear error.
    let real = gdio::Driver::new(gdio::Config::default()).unwrap();
    let n = real.runtime().device_count();
    let e = real.alloc_device(n + 3, 100).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoGpu);
    assert!(e.to_string().contains(&format!("GPU {}", n + 3)), "{e}");
}

#[test]
fn host_pointer_where_device_memory_is_needed_and_the_reverse() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(6, 8192);
    let p = write_file(d.path(), "f", &data);
    let drv = sim_driver(tiny_config(DirectIoPolicy::Off, 2), 1);
    let f = FileHandle::open_with(&p, OpenOptions::new().read(true).write(true)).unwrap();
    let mut host = vec![1u8; 4096];
    // SAFETY: `host` is a live 4096-byte buffer.
    let e = unsafe { drv.read_device_ptr(&f, 0, host.as_mut_ptr() as u64, 4096) }.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("needs device memory"), "{e}");
    assert_eq!(host, vec![1u8; 4096]);
    let dev = drv.alloc_device(0, 4096).unwrap();
    // SAFETY: a live 4096-byte device allocation.
    let e = unsafe { drv.write_host_ptr(&f, 0, dev.addr() as *const u8, 4096) }.unwrap_err();
    assert!(e.to_string().contains("needs host memory"), "{e}");
    // SAFETY: null is refused before use.
    let e = unsafe { drv.read_raw(&f, 0, 0, 16) }.unwrap_err();
    assert!(e.to_string().contains("null"), "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), data, "nothing may be written");
}

#[test]
fn offset_plus_length_overflow_is_refused_everywhere_and_changes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let data = random_bytes(40, 10_000);
    let p = write_file(d.path(), "f", &data);
    let drv = sim_driver(tiny_config(DirectIoPolicy::Off, 2), 1);
    let f = FileHandle::open_with(&p, OpenOptions::new().read(true).write(true)).unwrap();
    let mut host = random_bytes(41, 4096);
    let mut dev = drv.alloc_device(0, 4096).unwrap();
    for off in [u64::MAX - 3, u64::MAX, i64::MAX as u64 - 100, i64::MAX as u64] {
        let check = |e: gdio::Error| {
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
            assert_eq!(e.range(), Some((off, 4096)), "{e}");
            let s = e.to_string();
            assert!(s.contains(&format!("offset {off}")) && s.contains("length 4096"), "{s}");
        };
        check(drv.write(&f, off, &host, 0, 4096).unwrap_err());
        check(drv.read(&f, off, &mut host, 0, 4096).unwrap_err());
        check(drv.write(&f, off, &dev, 0, 4096).unwrap_err());
        check(drv.read(&f, off, &mut dev, 0, 4096).unwrap_err());
        // SAFETY: `host` is a live buffer of 4096 bytes, used by nothing else meanwhile.
        unsafe {
            check(drv.write_host_ptr(&f, off, host.as_ptr(), 4096).unwrap_err());
            check(drv.read_host_ptr(&f, off, host.as_mut_ptr(), 4096).unwrap_err());
            check(drv.write_raw(&f, off, host.as_ptr() as u64, 4096).unwrap_err());
            check(drv.read_raw(&f, off, host.as_mut_ptr() as u64, 4096).unwrap_err());
        }
        assert_eq!(f.size(), 10_000, "the cached size must not move");
    }
    assert_eq!(std::fs::read(&p).unwrap(), data, "nothing may be written");
    // The handle still works.
    let src = random_bytes(42, 4096);
    drv.write(&f, 100, &src, 0, 4096).unwrap();
    let mut back = vec![0u8; 4096];
    assert_eq!(drv.read(&f, 100, &mut back, 0, 4096).unwrap(), 4096);
    assert_eq!(back, src);
}
