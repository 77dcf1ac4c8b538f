//! Every export called through Rust on host memory: lifecycle, parameters, handles, buffers,
//! sync, batch and stream-ordered I/O, stats, and each error path with its number.

mod common;

use std::ffi::{c_int, c_uint, c_void};
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::ptr::{null, null_mut};

use common::*;
use cufile::abi::{code, status, *};
use cufile::params::{flag, size, string};
use cufile::*;

fn data_file(dir: &tempfile::TempDir, name: &str, data: &[u8]) -> std::path::PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, data).unwrap();
    p
}

fn rw(p: &std::path::Path) -> File {
    OpenOptions::new().read(true).write(true).open(p).unwrap()
}

#[test]
fn lifecycle_is_reference_counted() {
    let _g = serial();
    let mut v = 0;
    assert_eq!(cuFileGetVersion(&mut v), CUfileError_t::OK);
    assert_eq!(v, 1150);
    assert_eq!(cuFileGetVersion(null_mut()).err, code::INVALID_VALUE);
    assert_eq!(cuFileUseCount(), 0);
    assert_eq!(cuFileDriverClose_v2().err, code::DRIVER_NOT_INITIALIZED);
    // Properties before open do not open.
    let mut p = CUfileDrvProps_t::default();
    assert_eq!(cuFileDriverGetProperties(&mut p).err, 0);
    assert_eq!(cuFileUseCount(), 0);
    assert_eq!((p.nvfs.major_version, p.nvfs.minor_version), (0, 0));
    assert_eq!(p.max_batch_io_size, 128);
    assert_eq!(cuFileDriverGetProperties(null_mut()).err, code::INVALID_VALUE);
    assert_eq!(cuFileDriverOpen().err, 0);
    assert_eq!(cuFileDriverOpen().err, 0);
    assert_eq!(cuFileUseCount(), 2);
    let mut p = CUfileDrvProps_t::default();
    assert_eq!(cuFileDriverGetProperties(&mut p).err, 0);
    assert_ne!(p.nvfs.dcontrolflags & CONTROL_ALLOW_COMPAT_MODE, 0, "compat is allowed by default");
    assert_ne!(p.fflags & FEATURE_BATCH_IO, 0);
    assert_eq!(cuFileDriverClose_v2().err, 0);
    assert_eq!(cuFileUseCount(), 1);
    assert_eq!(cuFileDriverClose().err, 0);
    assert_eq!(cuFileUseCount(), 0);
    assert_eq!(cuFileDriverClose_v2().err, code::DRIVER_NOT_INITIALIZED);
    assert_eq!(cuFileDriverClose().err, code::DRIVER_NOT_INITIALIZED);
}

#[test]
fn registration_opens_implicitly_and_close_invalidates_handles() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let data = random_bytes(1, 10_000);
    let f = File::open(data_file(&dir, "a", &data)).unwrap();
    // NULLs fail without opening.
    let mut fh: CUfileHandle_t = null_mut();
    assert_eq!(
        cuFileHandleRegister(null_mut(), &mut descr(f.as_raw_fd())).err,
        code::INVALID_VALUE
    );
    assert_eq!(cuFileHandleRegister(&mut fh, null_mut()).err, code::INVALID_VALUE);
    assert_eq!(cuFileUseCount(), 0);
    let fh = register(&f);
    assert_eq!(cuFileUseCount(), 1);
    assert_eq!(cuFileDriverOpen().err, 0);
    assert_eq!(cuFileUseCount(), 2);
    let mut buf = vec![0u8; 100];
    assert_eq!(cuFileRead(fh, buf.as_mut_ptr().cast(), 100, 5, 0), 100);
    assert_eq!(buf, data[5..105]);
    closed();
    // After the last close the handle is gone: -1 with errno, buffer untouched.
    let mut buf2 = vec![7u8; 100];
    assert_eq!(cuFileRead(fh, buf2.as_mut_ptr().cast(), 100, 0, 0), -1);
    assert_eq!(errno(), libc::EBADF);
    assert!(buf2.iter().all(|&b| b == 7));
    // Opened again, another file registered: the old handle does not name it (handle numbers
    // are never given twice in a process), and a write through it changes nothing.
    let other = random_bytes(2, 10_000);
    let g = rw(&data_file(&dir, "b", &other));
    let gh = register(&g);
    assert_ne!(gh, fh);
    assert_eq!(cuFileRead(fh, buf2.as_mut_ptr().cast(), 100, 0, 0), -1);
    assert_eq!(errno(), libc::EBADF);
    assert!(buf2.iter().all(|&b| b == 7));
    assert_eq!(cuFileWrite(fh, buf2.as_ptr().cast(), 100, 0, 0), -1);
    assert_eq!(std::fs::read(dir.path().join("b")).unwrap(), other);
    cuFileHandleDeregister(gh);
    closed();
    // Buffer registration opens implicitly too.
    assert_eq!(cuFileBufRegister(buf2.as_ptr().cast(), 100, 0).err, 0);
    assert_eq!(cuFileUseCount(), 1);
    closed();
}

#[test]
fn parameters_stage_before_open_and_refuse_after() {
    let _g = serial();
    // Before open: defaults, ranges, staging.
    let mut v = 0usize;
    assert_eq!(cuFileGetParameterSizeT(size::IO_BATCHSIZE as c_int, &mut v).err, 0);
    assert_eq!(v, 128);
    assert_eq!(cuFileGetParameterSizeT(99, &mut v).err, code::INVALID_VALUE);
    assert_eq!(cuFileGetParameterSizeT(-1, &mut v).err, code::INVALID_VALUE);
    assert_eq!(cuFileGetParameterSizeT(0, null_mut()).err, code::INVALID_VALUE);
    assert_eq!(cuFileSetParameterSizeT(99, 1).err, code::INVALID_VALUE);
    assert_eq!(cuFileSetParameterSizeT(size::POLLTHRESHOLD_SIZE_KB as c_int, 64).err, 0);
    assert_eq!(cuFileGetParameterSizeT(size::POLLTHRESHOLD_SIZE_KB as c_int, &mut v).err, 0);
    assert_eq!(v, 64);
    // Out of range: refused, value unchanged.
    assert_eq!(
        cuFileSetParameterSizeT(size::MAX_DIRECT_IO_SIZE_KB as c_int, 10).err,
        code::INVALID_VALUE
    );
    assert_eq!(cuFileGetParameterSizeT(size::MAX_DIRECT_IO_SIZE_KB as c_int, &mut v).err, 0);
    assert_eq!(v, 16384);
    assert_eq!(cuFileSetParameterSizeT(size::MAX_DIRECT_IO_SIZE_KB as c_int, 1024).err, 0);
    let (mut lo, mut hi) = (0usize, 0usize);
    assert_eq!(cuFileGetParameterMinMaxValue(size::IO_BATCHSIZE as c_int, &mut lo, &mut hi).err, 0);
    assert_eq!((lo, hi), (1, 256));
    assert_eq!(
        cuFileGetParameterMinMaxValue(size::POLLTHRESHOLD_SIZE_KB as c_int, &mut lo, &mut hi).err,
        0
    );
    assert_eq!((lo, hi), (4, 18_014_398_509_481_980));
    assert_eq!(
        cuFileGetParameterMinMaxValue(size::PROFILE_STATS as c_int, &mut lo, &mut hi).err,
        code::INVALID_VALUE
    );
    assert_eq!(cuFileGetParameterMinMaxValue(1, null_mut(), &mut hi).err, code::INVALID_VALUE);
    let mut b = false;
    assert_eq!(cuFileSetParameterBool(flag::PROFILE_NVTX as c_int, true).err, 0);
    assert_eq!(cuFileGetParameterBool(flag::PROFILE_NVTX as c_int, &mut b).err, 0);
    assert!(b);
    assert_eq!(cuFileSetParameterBool(12, true).err, code::INVALID_VALUE);
    assert_eq!(
        cuFileSetParameterString(string::LOGGING_LEVEL as c_int, c"LOUD".as_ptr()).err,
        code::INVALID_VALUE
    );
    assert_eq!(cuFileSetParameterString(string::LOGGING_LEVEL as c_int, c"warn".as_ptr()).err, 0);
    assert_eq!(
        cuFileSetParameterString(string::LOGGING_LEVEL as c_int, null()).err,
        code::INVALID_VALUE
    );
    let mut s = [0 as std::ffi::c_char; 64];
    if std::env::var_os("CUFILE_LOGFILE_PATH").is_none() {
        assert_eq!(
            cuFileGetParameterString(string::ENV_LOGFILE_PATH as c_int, s.as_mut_ptr(), 64).err,
            code::INVALID_VALUE
        );
    }
    assert_eq!(cuFileGetParameterString(string::LOGGING_LEVEL as c_int, s.as_mut_ptr(), 64).err, 0);
    assert_eq!(
        cuFileGetParameterString(string::LOGGING_LEVEL as c_int, s.as_mut_ptr(), 2).err,
        code::INVALID_VALUE
    );
    // Slabs: default len 3; staged len 2.
    let (mut sz, mut ct) = ([0usize; 8], [0usize; 8]);
    assert_eq!(cuFileGetParameterPosixPoolSlabArray(sz.as_mut_ptr(), ct.as_mut_ptr(), 3).err, 0);
    assert_eq!((&sz[..3], &ct[..3]), (&[4, 1024, 16384][..], &[128, 64, 64][..]));
    assert_eq!(
        cuFileGetParameterPosixPoolSlabArray(sz.as_mut_ptr(), ct.as_mut_ptr(), 8).err,
        code::INVALID_VALUE
    );
    // Many GiB of slabs are fine: they are never allocated.
    let big = [1usize << 30, 16 << 30];
    assert_eq!(
        cuFileSetParameterPosixPoolSlabArray(big.as_ptr(), [64usize, 64].as_ptr(), 2).err,
        0
    );
    assert_eq!(
        cuFileSetParameterPosixPoolSlabArray(big.as_ptr(), [0usize, 1].as_ptr(), 2).err,
        code::INVALID_VALUE
    );
    assert_eq!(
        cuFileSetParameterPosixPoolSlabArray(big.as_ptr(), [1usize, 1].as_ptr(), 0).err,
        code::INVALID_VALUE
    );
    assert_eq!(
        cuFileGetParameterPosixPoolSlabArray(sz.as_mut_ptr(), ct.as_mut_ptr(), 3).err,
        code::INVALID_VALUE
    );
    cuFileDriverSetPollMode(true, 8);

    // Open applies them; setting is refused now.
    assert_eq!(cuFileDriverOpen().err, 0);
    assert_eq!(cuFileGetParameterSizeT(size::MAX_DIRECT_IO_SIZE_KB as c_int, &mut v).err, 0);
    assert_eq!(v, 1024);
    assert_eq!(cuFileGetParameterPosixPoolSlabArray(sz.as_mut_ptr(), ct.as_mut_ptr(), 2).err, 0);
    assert_eq!((&sz[..2], &ct[..2]), (&big[..], &[64, 64][..]));
    let mut p = CUfileDrvProps_t::default();
    assert_eq!(cuFileDriverGetProperties(&mut p).err, 0);
    assert_eq!(p.nvfs.poll_thresh_size, 8, "the legacy setter came after the staged value");
    assert_eq!(p.nvfs.max_direct_io_size, 1024);
    assert_ne!(p.nvfs.dcontrolflags & CONTROL_USE_POLL_MODE, 0);
    assert_eq!(
        cuFileSetParameterSizeT(size::POLLTHRESHOLD_SIZE_KB as c_int, 64).err,
        code::DRIVER_ALREADY_OPEN
    );
    assert_eq!(
        cuFileSetParameterBool(flag::PROFILE_NVTX as c_int, false).err,
        code::DRIVER_ALREADY_OPEN
    );
    assert_eq!(
        cuFileSetParameterString(string::LOG_DIR as c_int, c"/tmp".as_ptr()).err,
        code::DRIVER_ALREADY_OPEN
    );
    assert_eq!(
        cuFileSetParameterPosixPoolSlabArray(big.as_ptr(), big.as_ptr(), 2).err,
        code::DRIVER_ALREADY_OPEN
    );
    // Legacy setters work after open and show in the properties.
    assert_eq!(cuFileDriverSetPollMode(false, 16).err, 0);
    assert_eq!(cuFileDriverSetMaxDirectIOSize(2048).err, 0);
    assert_eq!(cuFileDriverSetMaxCacheSize(4096).err, 0);
    assert_eq!(cuFileDriverSetMaxPinnedMemSize(8192).err, 0);
    assert_eq!(cuFileDriverGetProperties(&mut p).err, 0);
    assert_eq!((p.nvfs.poll_thresh_size, p.nvfs.max_direct_io_size), (16, 2048));
    assert_eq!((p.max_device_cache_size, p.max_device_pinned_mem_size), (4096, 8192));
    assert_eq!(p.nvfs.dcontrolflags & CONTROL_USE_POLL_MODE, 0);
    closed();
    // Staging was consumed by that open.
    assert_eq!(cuFileGetParameterSizeT(size::MAX_DIRECT_IO_SIZE_KB as c_int, &mut v).err, 0);
    assert_eq!(v, 16384);
}

#[test]
fn staged_compat_off_reaches_gdio_and_the_properties() {
    let _g = serial();
    assert_eq!(cuFileSetParameterBool(flag::ALLOW_COMPAT_MODE as c_int, false).err, 0);
    assert_eq!(cuFileDriverOpen().err, 0);
    let mut p = CUfileDrvProps_t::default();
    assert_eq!(cuFileDriverGetProperties(&mut p).err, 0);
    assert_eq!(p.nvfs.dcontrolflags & CONTROL_ALLOW_COMPAT_MODE, 0);
    let s = cufile::session::current().unwrap();
    assert!(!s.driver.config().allow_compat_mode);
    closed();
}

#[test]
fn handle_errors_have_nvidias_numbers() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let p = data_file(&dir, "f", &random_bytes(2, 4096));
    let d = File::open(dir.path()).unwrap();
    assert_eq!(register_err(d.as_raw_fd()), code::INVALID_FILE_TYPE);
    let a = OpenOptions::new().append(true).open(&p).unwrap();
    assert_eq!(register_err(a.as_raw_fd()), code::INVALID_FILE_OPEN_FLAG);
    // O_PATH allows no I/O at all: the same number.
    let o = OpenOptions::new().read(true).custom_flags(libc::O_PATH).open(&p).unwrap();
    assert_eq!(register_err(o.as_raw_fd()), code::INVALID_FILE_OPEN_FLAG);
    assert_eq!(register_err(-1), code::INVALID_VALUE);
    assert_eq!(register_err(1_000_000), code::INVALID_VALUE);
    let (r, w) = {
        let mut fds = [0; 2];
        // SAFETY: pipe fills two ints.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        (fds[0], fds[1])
    };
    assert_eq!(register_err(r), code::INVALID_FILE_TYPE);
    // SAFETY: closing the pipe we made.
    unsafe {
        libc::close(r);
        libc::close(w);
    }
    let f = File::open(&p).unwrap();
    let mut fh: CUfileHandle_t = null_mut();
    let mut win = CUfileDescr_t { type_: 2, ..descr(f.as_raw_fd()) };
    assert_eq!(cuFileHandleRegister(&mut fh, &mut win).err, code::IO_NOT_SUPPORTED);
    let mut bad = CUfileDescr_t { type_: 9, ..descr(f.as_raw_fd()) };
    assert_eq!(cuFileHandleRegister(&mut fh, &mut bad).err, code::INVALID_VALUE);
    let h = register(&f);
    assert_eq!(register_err(f.as_raw_fd()), code::HANDLE_ALREADY_REGISTERED);
    cuFileHandleDeregister(h);
    // Deregistered: the fd registers again; garbage handles are ignored.
    let h = register(&f);
    cuFileHandleDeregister(0xdead_beef as CUfileHandle_t);
    cuFileHandleDeregister(null_mut());
    cuFileHandleDeregister(h);
    cuFileHandleDeregister(h);
    // O_DIRECT descriptors register too, where the filesystem allows O_DIRECT.
    if let Ok(od) = OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(&p) {
        let h = register(&od);
        let mut buf = vec![0u8; 777];
        assert_eq!(
            cuFileRead(h, buf.as_mut_ptr().cast(), 777, 3, 0),
            777,
            "unaligned read on an O_DIRECT fd"
        );
        assert_eq!(buf, std::fs::read(&p).unwrap()[3..780]);
        cuFileHandleDeregister(h);
    }
    closed();
}

#[test]
fn buffer_registration_rules() {
    let _g = serial();
    let buf = vec![0u8; 1 << 20];
    let base: *const c_void = buf.as_ptr().cast();
    assert_eq!(cuFileBufRegister(null(), 10, 0).err, code::INVALID_VALUE);
    assert_eq!(cuFileBufRegister(base, 0, 0).err, code::INVALID_VALUE);
    assert_eq!(cuFileBufDeregister(base).err, code::DRIVER_NOT_INITIALIZED);
    assert_eq!(cuFileBufRegister(base, 1 << 20, 999).err, 0, "flags are not validated");
    assert_eq!(cuFileBufRegister(base, 1 << 20, 0).err, code::MEMORY_ALREADY_REGISTERED);
    // SAFETY: 4096 is inside the vector.
    let sub = unsafe { base.byte_add(4096) };
    assert_eq!(cuFileBufRegister(sub, 4096, 0).err, 0, "a sub-range registers");
    assert_eq!(cuFileBufDeregister(sub).err, 0);
    assert_eq!(cuFileBufDeregister(sub).err, code::MEMORY_NOT_REGISTERED);
    assert_eq!(cuFileBufDeregister(null()).err, code::INVALID_VALUE);
    assert_eq!(cuFileBufDeregister(base).err, 0);
    assert_eq!(cuFileBufDeregister(base).err, code::MEMORY_NOT_REGISTERED);
    closed();
}

#[test]
fn read_write_conventions() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let data = random_bytes(3, 300_000);
    let p = data_file(&dir, "d", &data);
    let f = rw(&p);
    let fh = register(&f);
    let mut buf = vec![0u8; 400_000];
    assert_eq!(cuFileBufRegister(buf.as_ptr().cast(), buf.len(), 0).err, 0);
    // Random offsets, buffer offsets inside the registered base.
    let mut rng_state = 12345u64;
    let mut next = |m: u64| {
        rng_state = rng_state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (rng_state >> 33) % m
    };
    for _ in 0..50 {
        let off = next(290_000);
        let len = 1 + next(9_000) as usize;
        let boff = next(300_000) as i64;
        let n = cuFileRead(fh, buf.as_mut_ptr().cast(), len, off as i64, boff);
        let want = len.min(data.len() - off as usize);
        assert_eq!(n, want as isize);
        assert_eq!(
            &buf[boff as usize..boff as usize + want],
            &data[off as usize..off as usize + want]
        );
    }
    // Short only at the end of the file; nothing past it.
    assert_eq!(cuFileRead(fh, buf.as_mut_ptr().cast(), 1000, 299_500, 0), 500);
    assert_eq!(cuFileRead(fh, buf.as_mut_ptr().cast(), 1000, 300_000, 0), 0);
    assert_eq!(cuFileRead(fh, buf.as_mut_ptr().cast(), 0, 0, 0), 0);
    // Writes complete.
    let w = random_bytes(4, 50_000);
    assert_eq!(cuFileWrite(fh, w.as_ptr().cast(), 40_000, 1000, 10_000), 40_000);
    let mut model = data.clone();
    model[1000..41_000].copy_from_slice(&w[10_000..50_000]);
    assert_eq!(std::fs::read(&p).unwrap(), model);
    // Past the end grows the file.
    assert_eq!(cuFileWrite(fh, w.as_ptr().cast(), 100, 300_100, 0), 100);
    model.resize(300_100, 0);
    model.extend_from_slice(&w[..100]);
    assert_eq!(std::fs::read(&p).unwrap(), model);
    // Errors: nothing read or written.
    let before = buf.clone();
    assert_eq!(cuFileRead(fh, null_mut(), 10, 0, 0), -(code::INVALID_VALUE as isize));
    assert_eq!(cuFileRead(fh, buf.as_mut_ptr().cast(), 10, -1, 0), -(code::INVALID_VALUE as isize));
    assert_eq!(cuFileRead(fh, buf.as_mut_ptr().cast(), 10, 0, -5), -(code::INVALID_VALUE as isize));
    assert_eq!(cuFileRead(0x1234 as CUfileHandle_t, buf.as_mut_ptr().cast(), 10, 0, 0), -1);
    assert_eq!(errno(), libc::EBADF);
    assert_eq!(cuFileRead(null_mut(), buf.as_mut_ptr().cast(), 10, 0, 0), -1);
    assert_eq!(buf, before);
    assert_eq!(cuFileWrite(null_mut(), w.as_ptr().cast(), 10, 0, 0), -1);
    // A read-only handle refuses writes and a write-only one reads: 5019, file unchanged.
    let ro = File::open(&p).unwrap();
    let rh = register(&ro);
    assert_eq!(
        cuFileWrite(rh, w.as_ptr().cast(), 10, 0, 0),
        -(code::INVALID_FILE_OPEN_FLAG as isize)
    );
    let wo = OpenOptions::new().write(true).open(&p).unwrap();
    let wh = register(&wo);
    assert_eq!(
        cuFileRead(wh, buf.as_mut_ptr().cast(), 10, 0, 0),
        -(code::INVALID_FILE_OPEN_FLAG as isize)
    );
    assert_eq!(buf, before);
    assert_eq!(std::fs::read(&p).unwrap(), model);
    assert_eq!(cuFileWrite(wh, w.as_ptr().cast(), 10, 5, 0), 10);
    model[5..15].copy_from_slice(&w[..10]);
    assert_eq!(std::fs::read(&p).unwrap(), model);
    closed();
}

#[test]
fn handle_deregistered_by_another_thread_never_crashes() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let data = random_bytes(5, 1 << 20);
    let f = File::open(data_file(&dir, "x", &data)).unwrap();
    let fh = register(&f) as usize;
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        let mut ok = 0;
        loop {
            let n = cuFileRead(fh as CUfileHandle_t, buf.as_mut_ptr().cast(), 65536, 4096, 0);
            if n == -1 {
                return ok;
            }
            assert_eq!(n, 65536);
            assert_eq!(buf, data[4096..4096 + 65536]);
            ok += 1;
        }
    });
    std::thread::sleep(std::time::Duration::from_millis(50));
    cuFileHandleDeregister(fh as CUfileHandle_t);
    let ok = reader.join().unwrap();
    assert!(ok > 0);
    closed();
}

fn empty_events(n: usize) -> Vec<CUfileIOEvents_t> {
    vec![CUfileIOEvents_t { cookie: null_mut(), status: 0, ret: 0 }; n]
}

#[test]
fn batch_semantics_on_host_memory() {
    let _g = serial();
    let mut id: CUfileBatchHandle_t = null_mut();
    assert_eq!(cuFileBatchIOSetUp(&mut id, 4).err, code::DRIVER_NOT_INITIALIZED);
    let dir = tempfile::tempdir().unwrap();
    let data = random_bytes(6, 200_000);
    let p = data_file(&dir, "b", &data);
    let f = rw(&p);
    let fh = register(&f);
    assert_eq!(cuFileBatchIOSetUp(&mut id, 0).err, code::INVALID_VALUE);
    assert_eq!(cuFileBatchIOSetUp(&mut id, 129).err, code::INVALID_VALUE);
    assert_eq!(cuFileBatchIOSetUp(null_mut(), 4).err, code::INVALID_VALUE);
    assert_eq!(cuFileBatchIOSetUp(&mut id, 4).err, 0);
    let mut buf = vec![0u8; 100_000];
    let w = random_bytes(7, 5000);
    let mut wbuf = w.clone();
    let mut io = vec![
        params(0, fh, buf.as_mut_ptr(), 1000, 0, 30_000, 11),
        params(1, fh, wbuf.as_mut_ptr(), 150_000, 1000, 4000, 12),
        params(0, fh, buf.as_mut_ptr(), 190_000, 50_000, 20_000, 13),
    ];
    assert_eq!(cuFileBatchIOSubmit(id, 3, io.as_mut_ptr(), 0).err, 0);
    let mut ev = empty_events(4);
    let mut nr: c_uint = 4;
    // min_nr > nr is refused.
    assert_eq!(
        cuFileBatchIOGetStatus(id, 5, &mut nr, ev.as_mut_ptr(), null_mut()).err,
        code::INVALID_VALUE
    );
    // A nonsensical timeout still returns all min_nr events.
    let mut t = libc::timespec { tv_sec: -3, tv_nsec: -1 };
    nr = 4;
    assert_eq!(cuFileBatchIOGetStatus(id, 3, &mut nr, ev.as_mut_ptr(), &mut t).err, 0);
    assert_eq!(nr, 3);
    let mut by_cookie: Vec<(usize, i32, usize)> =
        ev[..3].iter().map(|e| (e.cookie as usize, e.status, e.ret)).collect();
    by_cookie.sort();
    assert_eq!(
        by_cookie,
        vec![
            (11, status::COMPLETE, 30_000),
            (12, status::COMPLETE, 4000),
            (13, status::COMPLETE, 10_000)
        ]
    );
    assert_eq!(&buf[..30_000], &data[1000..31_000]);
    assert_eq!(&buf[50_000..60_000], &data[190_000..]);
    let mut model = data.clone();
    model[150_000..154_000].copy_from_slice(&w[1000..5000]);
    assert_eq!(std::fs::read(&p).unwrap(), model);
    // Capacity: 5 entries into a batch of 4.
    let mut five: Vec<CUfileIOParams_t> =
        (0..5).map(|i| params(0, fh, buf.as_mut_ptr(), 0, 0, 10, i)).collect();
    assert_eq!(cuFileBatchIOSubmit(id, 5, five.as_mut_ptr(), 0).err, code::BATCH_FULL);
    // One invalid entry: nothing runs (the write would have changed the file).
    let mut mixed = vec![
        params(1, fh, wbuf.as_mut_ptr(), 0, 0, 100, 21),
        params(0, 0x77 as CUfileHandle_t, buf.as_mut_ptr(), 0, 0, 10, 22),
    ];
    assert_eq!(cuFileBatchIOSubmit(id, 2, mixed.as_mut_ptr(), 0).err, code::INVALID_VALUE);
    mixed[1] = params(5, fh, buf.as_mut_ptr(), 0, 0, 10, 22);
    assert_eq!(cuFileBatchIOSubmit(id, 2, mixed.as_mut_ptr(), 0).err, code::INVALID_VALUE);
    mixed[1].opcode = 0;
    mixed[1].mode = 0;
    assert_eq!(cuFileBatchIOSubmit(id, 2, mixed.as_mut_ptr(), 0).err, code::INVALID_VALUE);
    assert_eq!(std::fs::read(&p).unwrap(), model);
    assert_eq!(cuFileBatchIOSubmit(id, 0, mixed.as_mut_ptr(), 0).err, code::INVALID_VALUE);
    assert_eq!(cuFileBatchIOSubmit(id, 1, null_mut(), 0).err, code::INVALID_VALUE);
    // A failing entry reports FAILED with a negative ret.
    let wo = OpenOptions::new().write(true).open(&p).unwrap();
    let wh = register(&wo);
    let mut bad = vec![params(0, wh, buf.as_mut_ptr(), 0, 0, 10, 31)];
    assert_eq!(cuFileBatchIOSubmit(id, 1, bad.as_mut_ptr(), 0).err, 0);
    nr = 4;
    let mut t = libc::timespec { tv_sec: 1, tv_nsec: 0 };
    assert_eq!(cuFileBatchIOGetStatus(id, 1, &mut nr, ev.as_mut_ptr(), &mut t).err, 0);
    assert_eq!(nr, 1);
    assert_eq!((ev[0].cookie as usize, ev[0].status), (31, status::FAILED));
    assert_eq!(ev[0].ret as isize, -(code::INVALID_FILE_OPEN_FLAG as isize));
    // Nothing in flight: returns at once with 0 events.
    nr = 4;
    assert_eq!(cuFileBatchIOGetStatus(id, 2, &mut nr, ev.as_mut_ptr(), null_mut()).err, 0);
    assert_eq!(nr, 0);
    assert_eq!(
        cuFileBatchIOGetStatus(id, 0, null_mut(), ev.as_mut_ptr(), null_mut()).err,
        code::INVALID_VALUE
    );
    // Cancel right after submit, then destroy.
    assert_eq!(cuFileBatchIOSubmit(id, 1, io.as_mut_ptr(), 0).err, 0);
    assert_eq!(cuFileBatchIOCancel(id).err, 0);
    cuFileBatchIODestroy(id);
    nr = 4;
    assert_eq!(
        cuFileBatchIOGetStatus(id, 0, &mut nr, ev.as_mut_ptr(), null_mut()).err,
        code::INVALID_VALUE
    );
    assert_eq!(cuFileBatchIOCancel(id).err, code::INVALID_VALUE);
    assert_eq!(cuFileBatchIOSubmit(id, 1, io.as_mut_ptr(), 0).err, code::INVALID_VALUE);
    cuFileBatchIODestroy(id);
    cuFileBatchIODestroy(0x5555 as CUfileBatchHandle_t);
    closed();
    // A batch kept past the last close: its id names no batch of the next open.
    let _ = register(&f);
    let mut kept: CUfileBatchHandle_t = null_mut();
    assert_eq!(cuFileBatchIOSetUp(&mut kept, 2).err, 0);
    closed();
    let fh = register(&f);
    let mut fresh: CUfileBatchHandle_t = null_mut();
    assert_eq!(cuFileBatchIOSetUp(&mut fresh, 2).err, 0);
    assert_ne!(kept, fresh, "a batch id given twice");
    assert_eq!(cuFileBatchIOCancel(kept).err, code::INVALID_VALUE);
    let mut one = vec![params(0, fh, buf.as_mut_ptr(), 0, 0, 10, 1)];
    assert_eq!(cuFileBatchIOSubmit(kept, 1, one.as_mut_ptr(), 0).err, code::INVALID_VALUE);
    cuFileBatchIODestroy(fresh);
    closed();
}

#[test]
fn stream_ordered_io_and_stream_registration() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let data = random_bytes(8, 100_000);
    let p = data_file(&dir, "s", &data);
    let f = rw(&p);
    let mut buf = vec![0u8; 100_000];
    let (mut size, mut foff, mut boff, mut bytes) = (5000usize, 777i64, 100i64, 0isize);
    // Bogus handle: 5022 and -EINVAL in the result.
    let e = cuFileReadAsync(
        0x99 as CUfileHandle_t,
        buf.as_mut_ptr().cast(),
        &mut size,
        &mut foff,
        &mut boff,
        &mut bytes,
        null_mut(),
    );
    assert_eq!((e.err, bytes), (code::INVALID_VALUE, -(libc::EINVAL as isize)));
    let fh = register(&f);
    assert_eq!(
        cuFileReadAsync(
            fh,
            buf.as_mut_ptr().cast(),
            &mut size,
            &mut foff,
            &mut boff,
            null_mut(),
            null_mut()
        )
        .err,
        code::INVALID_VALUE
    );
    let e = cuFileReadAsync(
        fh,
        buf.as_mut_ptr().cast(),
        &mut size,
        &mut foff,
        &mut boff,
        &mut bytes,
        null_mut(),
    );
    assert_eq!((e.err, bytes), (0, 5000));
    assert_eq!(&buf[100..5100], &data[777..5777]);
    // Misaligned parameter or result pointers: 5022 (in the result too, written unaligned),
    // nothing read into the buffer and the parameters left as they were.
    let before = buf.clone();
    let mut raw = [0u64; 6];
    let base = raw.as_mut_ptr().cast::<u8>();
    let at = |i: usize| base.wrapping_add(i);
    for case in 0..4 {
        // SAFETY: `raw` has 48 bytes; every slot below, shifted or not, ends inside it.
        unsafe {
            at(8).cast::<usize>().write_unaligned(5000);
            at(16).cast::<i64>().write_unaligned(777);
            at(24).cast::<i64>().write_unaligned(100);
        }
        let shift = |slot: usize, which: usize| at(slot + usize::from(case == which));
        let e = cuFileReadAsync(
            fh,
            buf.as_mut_ptr().cast(),
            shift(8, 0).cast(),
            shift(16, 1).cast(),
            shift(24, 2).cast(),
            shift(32, 3).cast(),
            null_mut(),
        );
        assert_eq!(e.err, code::INVALID_VALUE, "case {case}");
        // SAFETY: inside `raw`, as above.
        let result = unsafe { shift(32, 3).cast::<isize>().read_unaligned() };
        assert_eq!(result, -(code::INVALID_VALUE as isize), "case {case}");
        assert_eq!(buf, before, "case {case}: a refused read wrote the buffer");
    }
    let w = random_bytes(9, 3000);
    let mut wb = w.clone();
    let (mut ws, mut wo, mut wbo) = (2000usize, 10i64, 1000i64);
    let e = cuFileWriteAsync(
        fh,
        wb.as_mut_ptr().cast(),
        &mut ws,
        &mut wo,
        &mut wbo,
        &mut bytes,
        null_mut(),
    );
    assert_eq!((e.err, bytes), (0, 2000));
    let mut model = data.clone();
    model[10..2010].copy_from_slice(&w[1000..3000]);
    assert_eq!(std::fs::read(&p).unwrap(), model);
    // Read on a write-only handle: submission ok, 5019 in the result.
    let wof = OpenOptions::new().write(true).open(&p).unwrap();
    let wh = register(&wof);
    let e = cuFileReadAsync(
        wh,
        buf.as_mut_ptr().cast(),
        &mut size,
        &mut foff,
        &mut boff,
        &mut bytes,
        null_mut(),
    );
    assert_eq!((e.err, bytes), (0, -(code::INVALID_FILE_OPEN_FLAG as isize)));
    // Registration bookkeeping, KvikIO's flag loop.
    for flags in [0x0, 0x1, 0x2, 0x4, 0x8, 0xF, 0x10] {
        let s = 0x1234 as CUstream;
        assert_eq!(cuFileStreamRegister(s, flags).err, 0);
        assert_eq!(cuFileStreamRegister(s, flags).err, code::INVALID_VALUE);
        // No CUDA here: a real stream cannot be waited for.
        let e = cuFileReadAsync(
            fh,
            buf.as_mut_ptr().cast(),
            &mut size,
            &mut foff,
            &mut boff,
            &mut bytes,
            s,
        );
        assert_eq!(e.err, code::CUDA_DRIVER_ERROR);
        assert_eq!(cuFileStreamDeregister(s).err, 0);
        assert_eq!(cuFileStreamDeregister(s).err, code::INVALID_VALUE);
    }
    assert_eq!(cuFileStreamRegister(null_mut(), 0).err, 0);
    assert_eq!(cuFileStreamDeregister(null_mut()).err, 0);
    closed();
}

#[test]
fn stats_count_real_io() {
    let _g = serial();
    assert_eq!(cuFileSetStatsLevel(5).err, code::INVALID_VALUE);
    assert_eq!(cuFileSetStatsLevel(-1).err, code::INVALID_VALUE);
    assert_eq!(cuFileSetStatsLevel(0).err, 0);
    let mut lvl = 9;
    assert_eq!(cuFileGetStatsLevel(&mut lvl).err, 0);
    assert_eq!(lvl, 0);
    assert_eq!(cuFileGetStatsLevel(null_mut()).err, code::INVALID_VALUE);
    assert_eq!(cuFileStatsStart().err, code::DRIVER_NOT_INITIALIZED);
    assert_eq!(cuFileDriverOpen().err, 0);
    assert_eq!(cuFileStatsStart().err, code::INTERNAL_ERROR);
    let mut l1: CUfileStatsLevel1_t = Default::default();
    assert_eq!(cuFileGetStatsL1(&mut l1).err, code::INVALID_VALUE);
    assert_eq!(cuFileSetStatsLevel(3).err, 0);
    assert_eq!(cuFileStatsStart().err, 0);
    let dir = tempfile::tempdir().unwrap();
    let data = random_bytes(10, 100_000);
    let f = rw(&data_file(&dir, "st", &data));
    let fh = register(&f);
    let mut buf = vec![0u8; 8192];
    for i in 0..3 {
        assert_eq!(cuFileRead(fh, buf.as_mut_ptr().cast(), 4096, i * 4096, 0), 4096);
    }
    assert_eq!(cuFileWrite(fh, buf.as_ptr().cast(), 8192, 0, 0), 8192);
    assert_eq!(cuFileRead(null_mut(), buf.as_mut_ptr().cast(), 1, 0, 0), -1);
    assert_eq!(cuFileGetStatsL1(&mut l1).err, 0);
    assert_eq!((l1.read_ops.ok, l1.write_ops.ok), (3, 1));
    assert_eq!((l1.read_bytes, l1.write_bytes), (3 * 4096, 8192));
    assert_eq!(l1.hdl_register_ops.ok, 1);
    let mut l2: Box<CUfileStatsLevel2_t> = Box::new(unsafe_zeroed());
    assert_eq!(cuFileGetStatsL2(&mut *l2).err, 0);
    assert_eq!(l2.read_size_kb_hist[2], 3);
    assert_eq!(l2.write_size_kb_hist[3], 1);
    let mut l3: Box<CUfileStatsLevel3_t> = Box::new(unsafe_zeroed());
    assert_eq!(cuFileGetStatsL3(&mut *l3).err, 0);
    assert_eq!(l3.detailed.basic.read_bytes, 3 * 4096);
    assert_eq!(l3.num_gpus, 0);
    assert_eq!(cuFileGetStatsL3(null_mut()).err, code::INVALID_VALUE);
    assert_eq!(cuFileStatsStop().err, 0);
    assert_eq!(cuFileRead(fh, buf.as_mut_ptr().cast(), 4096, 0, 0), 4096);
    assert_eq!(cuFileGetStatsL1(&mut l1).err, 0);
    assert_eq!(l1.read_ops.ok, 3, "stopped stats do not count");
    assert_eq!(cuFileStatsReset().err, 0);
    assert_eq!(cuFileGetStatsL1(&mut l1).err, 0);
    assert_eq!((l1.read_ops.ok, l1.read_bytes), (0, 0));
    assert_eq!(cuFileSetStatsLevel(1).err, 0);
    assert_eq!(cuFileGetStatsL2(&mut *l2).err, code::INVALID_VALUE);
    assert_eq!(cuFileSetStatsLevel(0).err, 0);
    closed();
    assert_eq!(cuFileStatsReset().err, code::DRIVER_NOT_INITIALIZED);
    assert_eq!(cuFileStatsStop().err, code::DRIVER_NOT_INITIALIZED);
}

fn unsafe_zeroed<T: Copy>() -> T {
    // SAFETY: the stats structs are plain integers and arrays of them.
    unsafe { std::mem::zeroed() }
}

#[test]
fn bar_size_without_a_gpu_is_invalid_value() {
    let _g = serial();
    let mut kb = 0usize;
    assert_eq!(cuFileGetBARSizeInKB(0, null_mut()).err, code::INVALID_VALUE);
    assert_eq!(cuFileGetBARSizeInKB(-1, &mut kb).err, code::INVALID_VALUE);
    let e = cuFileGetBARSizeInKB(0, &mut kb);
    if e.err == 0 {
        assert!(kb > 0, "a GPU reports its BAR1");
    } else {
        assert_eq!(e.err, code::INVALID_VALUE);
    }
    assert_eq!(cuFileGetBARSizeInKB(64, &mut kb).err, code::INVALID_VALUE);
}

/// A system error while the I/O runs (here the kernel refusing memory the process may not
/// write or read: `EFAULT`) is `-1` with `errno`, as `cuFileRead`'s contract says; the file
/// and the memory stay as they were.
#[test]
fn a_system_error_during_io_is_minus_one_with_errno() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let data = random_bytes(93, 64 * 1024);
    let p = data_file(&dir, "e", &data);
    let f = rw(&p);
    let fh = register(&f);
    // SAFETY: a fresh private anonymous mapping of two pages, unmapped below; read-only for
    // the read, no access at all for the write.
    let page = unsafe {
        libc::mmap(
            null_mut(),
            8192,
            libc::PROT_READ,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(page, libc::MAP_FAILED);
    assert_eq!(cuFileRead(fh, page, 8192, 0, 0), -1);
    assert_eq!(errno(), libc::EFAULT);
    // SAFETY: the mapping is readable; it still holds the zeros it was made with.
    assert!(unsafe { std::slice::from_raw_parts(page as *const u8, 8192) }.iter().all(|&b| b == 0));
    // SAFETY: as above.
    assert_eq!(unsafe { libc::mprotect(page, 8192, libc::PROT_NONE) }, 0);
    assert_eq!(cuFileWrite(fh, page, 4096, 1000, 0), -1);
    assert_eq!(errno(), libc::EFAULT);
    assert_eq!(std::fs::read(&p).unwrap(), data, "the failed write changed the file");
    cuFileHandleDeregister(fh);
    // SAFETY: the mapping made above, used by nothing any more.
    assert_eq!(unsafe { libc::munmap(page, 8192) }, 0);
}
