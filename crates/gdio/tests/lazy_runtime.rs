//! `defer_gpu_init`: a driver whose GPU runtime is found at the first call that needs one.
//! Reads and writes of host memory (slices, raw pointers, asynchronous, batches, a safetensors
//! load onto the CPU) never find it; the first GPU allocation does, and GPU reads then work as
//! on any driver.

mod common;
mod st;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use gdio::gpu::lazy::LazyRuntime;
use gdio::gpu::sim::SimRuntime;
use gdio::safetensors::{load, Checkpoint, LoadOptions, Plan, Target, ALL_DTYPES};
use gdio::{Config, DirectIoPolicy, Driver, ErrorKind, FileHandle};

/// A driver on a simulated GPU found when first needed, and how many times it was found.
fn lazy_driver() -> (Driver, Arc<AtomicUsize>) {
    let found = Arc::new(AtomicUsize::new(0));
    let f = found.clone();
    let lazy = LazyRuntime::new(
        Box::new(move || {
            f.fetch_add(1, Ordering::SeqCst);
            (Arc::new(SimRuntime::new(1, std::time::Duration::from_micros(20))), None)
        }),
        // As in a process that has not loaded libcuda: no GPU memory can exist yet.
        Box::new(|| false),
    );
    let config = common::tiny_config(DirectIoPolicy::Auto, 3);
    (Driver::with_lazy_runtime(config, Arc::new(lazy)).unwrap(), found)
}

#[test]
fn host_io_never_finds_the_gpu_runtime_and_the_first_gpu_call_does() {
    let (driver, found) = lazy_driver();
    let dir = tempfile::tempdir().unwrap();
    let data = common::random_bytes(71, 300_001);
    let path = common::write_file(dir.path(), "f", &data);
    let fh = Arc::new(FileHandle::open(&path).unwrap());
    let mut r = common::rng(72);

    // Slices, at random offsets.
    for _ in 0..20 {
        let (off, len) = common::random_range(&mut r, data.len());
        let mut got = vec![0u8; len];
        let n = driver.read(&fh, off, &mut got[..], 0, len).unwrap();
        let end = (off as usize + len).min(data.len());
        assert_eq!(&got[..n], &data[off as usize..end]);
    }
    // Raw host pointers.
    let mut raw = vec![0u8; 65_536];
    // SAFETY: `raw` is ours, writable, and untouched until the call returns.
    let n = unsafe { driver.read_host_ptr(&fh, 1234, raw.as_mut_ptr(), raw.len()) }.unwrap();
    assert_eq!(&raw[..n], &data[1234..1234 + n]);
    // Asynchronous, owned buffers.
    let h = driver.submit_read(&fh, 4096, vec![0u8; 100_000], 0, 100_000).unwrap();
    let (n, back) = h.wait();
    let n = n.unwrap();
    assert_eq!(&back[..n], &data[4096..4096 + n]);
    // Writes, read back.
    let out_path = dir.path().join("out");
    let out = FileHandle::create(&out_path).unwrap();
    assert_eq!(driver.write(&out, 777, &data[..], 0, data.len()).unwrap(), data.len());
    drop(out);
    let written = std::fs::read(&out_path).unwrap();
    assert_eq!(&written[777..], &data[..]);
    assert_eq!(found.load(Ordering::SeqCst), 0, "host I/O found no runtime");
    assert!(!driver.gpu_runtime_found());

    // The first GPU call finds it, once.
    let mut dev = driver.alloc_device(0, data.len()).unwrap();
    assert!(driver.gpu_runtime_found());
    assert_eq!(driver.read(&fh, 0, &mut dev, 0, data.len()).unwrap(), data.len());
    let mut back = vec![0u8; data.len()];
    dev.copy_to_host(0, &mut back).unwrap();
    assert_eq!(back, data, "a GPU read after the runtime was found");
    assert_eq!(driver.runtime().name(), "sim");
    assert_eq!(driver.why_no_gpu(), None);
    assert_eq!(found.load(Ordering::SeqCst), 1, "found once");
}

#[test]
fn a_safetensors_load_onto_the_cpu_never_finds_the_gpu_runtime() {
    let (driver, found) = lazy_driver();
    let driver = Arc::new(driver);
    let dir = tempfile::tempdir().unwrap();
    let tensors = st::random_tensors(73, ALL_DTYPES.len() * 2, 5_000);
    let path = dir.path().join("m.safetensors");
    st::write_with_crate(&path, &tensors, None);
    let ckpt = Checkpoint::open(&path).unwrap();
    let plan = Plan::all(&ckpt, &[Target::Host]);
    let loaded = load(&driver, &ckpt, &plan, &LoadOptions::default()).unwrap();
    for t in &tensors {
        let v = loaded.get(&t.name, Target::Host).unwrap();
        assert_eq!(loaded.host_bytes(v).unwrap(), &t.data[..], "{}", t.name);
    }
    assert_eq!(found.load(Ordering::SeqCst), 0, "a CPU load found no runtime");
    // A load onto the GPU finds it and gets the same bytes.
    let loaded = load(&driver, &ckpt, &Plan::all(&ckpt, &[Target::Gpu(0)]), &Default::default());
    let loaded = loaded.unwrap();
    for t in &tensors {
        let v = loaded.get(&t.name, Target::Gpu(0)).unwrap();
        assert_eq!(loaded.to_vec(v).unwrap(), t.data, "{} on the GPU", t.name);
    }
    assert_eq!(found.load(Ordering::SeqCst), 1);
}

#[test]
fn the_machine_s_runtime_deferred_says_why_there_is_no_gpu_when_asked() {
    // On the build machine (no libcuda): host reads work without looking for CUDA; a GPU call
    // then looks, finds none and says why, as a driver that looked at once does.
    if std::path::Path::new("/dev/nvidiactl").exists() {
        return;
    }
    let driver = Driver::new(Config { defer_gpu_init: true, ..Config::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = common::random_bytes(74, 50_000);
    let fh = FileHandle::open(common::write_file(dir.path(), "f", &data)).unwrap();
    let mut got = vec![0u8; data.len()];
    assert_eq!(driver.read(&fh, 0, &mut got[..], 0, data.len()).unwrap(), data.len());
    assert_eq!(got, data);
    assert!(!driver.gpu_runtime_found(), "a host read looked for CUDA");
    let e = driver.alloc_device(0, 4096).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoGpu);
    let eager = Driver::new(Config { defer_gpu_init: false, ..Config::default() }).unwrap();
    assert_eq!(driver.why_no_gpu(), eager.why_no_gpu());
    assert!(driver.why_no_gpu().is_some() && driver.gpu_runtime_found());
}
