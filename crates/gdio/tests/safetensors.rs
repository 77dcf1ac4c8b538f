//! gdio::safetensors on host memory and simulated GPUs: every dtype, empty and scalar tensors,
//! one file and shards, index files, patterns and plans, malformed headers, truncated files,
//! save/load round trips, interrupted saves, several GPUs.

mod common;
mod st;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use gdio::safetensors::{
    load, load_stream, parse_index, parse_prefix, save, Checkpoint, Dtype, LoadOptions, Loaded,
    Plan, SaveOptions, SaveTensor, Target, ALL_DTYPES,
};
use gdio::{DirectIoPolicy, Driver, ErrorKind};
use st::{random_tensors, raw_file, write_with_crate, T};

fn host_driver() -> Arc<Driver> {
    Arc::new(common::sim_driver(common::tiny_config(DirectIoPolicy::Auto, 3), 0))
}

fn sim(gpus: usize) -> Arc<Driver> {
    Arc::new(common::sim_driver(common::tiny_config(DirectIoPolicy::Auto, 3), gpus))
}

/// Small requests so a load takes many of them.
fn small_requests() -> LoadOptions {
    LoadOptions {
        request_size: 3 * 4096,
        requests_in_flight: 3,
        merge_gap: 0,
        spread_reads: Some(true),
        cancel: None,
    }
}

/// Every tensor of `want` is in `loaded` on `target` with the same dtype, shape and bytes.
fn assert_loaded(loaded: &Loaded, want: &[T], target: Target) {
    for t in want {
        let v = loaded.get(&t.name, target).unwrap_or_else(|| panic!("{} not loaded", t.name));
        assert_eq!(v.dtype, t.dtype, "{}", t.name);
        assert_eq!(v.shape, t.shape, "{}", t.name);
        assert_eq!(v.target, target);
        assert_eq!(loaded.to_vec(v).unwrap(), t.data, "bytes of {} on {target}", t.name);
        if target == Target::Host {
            assert_eq!(loaded.host_bytes(v).unwrap(), &t.data[..]);
        }
    }
}

#[test]
fn every_dtype_loads_to_host_and_gpu_as_the_crate_wrote_it() {
    let driver = sim(1);
    for (label, dir) in common::dirs() {
        let tensors = random_tensors(1, ALL_DTYPES.len() * 3, 20_000);
        assert!(tensors.iter().any(|t| t.data.is_empty()), "an empty tensor");
        assert!(tensors.iter().any(|t| t.shape.is_empty()), "a zero-dimensional tensor");
        let path = dir.path().join("m.safetensors");
        let meta = HashMap::from([("format".to_owned(), "pt".to_owned())]);
        write_with_crate(&path, &tensors, Some(meta));
        let ckpt = Checkpoint::open(&path).unwrap();
        assert_eq!(ckpt.len(), tensors.len());
        assert_eq!(ckpt.metadata().get("format").map(String::as_str), Some("pt"));
        for target in [Target::Host, Target::Gpu(0)] {
            let plan = Plan::all(&ckpt, &[target]);
            for opts in [LoadOptions::default(), small_requests()] {
                let loaded = load(&driver, &ckpt, &plan, &opts).unwrap();
                assert_eq!(loaded.views().len(), tensors.len(), "{label}");
                assert_eq!(loaded.allocations().len(), 1, "one allocation per file and target");
                assert_loaded(&loaded, &tensors, target);
                let total: u64 = tensors.iter().map(|t| t.data.len() as u64).sum();
                assert!(loaded.bytes_read() >= total);
                assert!(loaded.bytes_read() < total + 2 * 4096 + 8 + 8192);
            }
        }
    }
}

#[test]
fn stream_hands_out_each_view_once_before_the_end() {
    let driver = sim(1);
    let dir = tempfile::tempdir().unwrap();
    let tensors = random_tensors(2, 40, 60_000);
    let path = dir.path().join("m.safetensors");
    write_with_crate(&path, &tensors, None);
    let ckpt = Checkpoint::open(&path).unwrap();
    let plan = Plan::all(&ckpt, &[Target::Gpu(0)]);
    let mut stream = load_stream(&driver, &ckpt, &plan, &small_requests()).unwrap();
    let mut names = Vec::new();
    while let Some(v) = stream.next() {
        let v = v.unwrap();
        // The bytes are in place when the view is handed out.
        let want = tensors.iter().find(|t| t.name == v.name).unwrap();
        assert_eq!(stream.to_vec(&v).unwrap(), want.data, "{}", v.name);
        names.push(v.name);
    }
    let loaded = stream.finish().unwrap();
    names.sort();
    let mut want: Vec<_> = tensors.iter().map(|t| t.name.clone()).collect();
    want.sort();
    assert_eq!(names, want);
    assert_eq!(loaded.views().len(), tensors.len());
}

/// Views come out as their bytes land, not at the end: with copies that land late (a
/// simulated GPU whose every copy waits 2 ms), the first view is handed out long before the
/// last request has landed.
#[test]
fn loads_of_one_tensor_run_on_the_calling_thread_and_keep_its_lane() {
    // `safe_open.get_tensor` in any order is one load per tensor: each must reuse the calling
    // thread's lane (stream and pinned buffers) for its small read, not make one on a thread
    // of its own every time (on the H200 that cost 2 ms per tensor).
    let driver = sim(1);
    let dir = tempfile::tempdir().unwrap();
    let tensors: Vec<T> =
        random_tensors(7, 24, 1000).into_iter().filter(|t| !t.data.is_empty()).collect();
    let path = dir.path().join("m.safetensors");
    write_with_crate(&path, &tensors, None);
    let ckpt = Checkpoint::open(&path).unwrap();
    let before = driver.engine().counters();
    let mut order: Vec<&T> = tensors.iter().collect();
    order.reverse();
    for t in &order {
        let mut plan = Plan::new();
        plan.add(&ckpt, &t.name, Target::Gpu(0)).unwrap();
        let loaded = load(&driver, &ckpt, &plan, &LoadOptions::default()).unwrap();
        assert_loaded(&loaded, std::slice::from_ref(*t), Target::Gpu(0));
    }
    let after = driver.engine().counters();
    assert_eq!(
        after.inline_requests - before.inline_requests,
        order.len() as u64,
        "every one-tensor load ran inline"
    );
    assert!(
        after.caller_lanes_made - before.caller_lanes_made <= 1,
        "{} lanes made for {} loads on one thread",
        after.caller_lanes_made - before.caller_lanes_made,
        order.len()
    );
}

#[test]
fn a_load_pins_gpu_buffers_before_allocating_or_at_each_worker_s_first_read() {
    let dir = tempfile::tempdir().unwrap();
    let tensors = random_tensors(11, 30, 5000);
    let path = dir.path().join("m.safetensors");
    write_with_crate(&path, &tensors, None);
    let ckpt = Checkpoint::open(&path).unwrap();
    for lazy in [true, false] {
        let config = gdio::Config {
            safetensors_overlap_warm: lazy,
            ..common::tiny_config(DirectIoPolicy::Auto, 3)
        };
        let driver = Arc::new(common::sim_driver(config, 2));
        // Host loads need no GPU buffers.
        let host = load(&driver, &ckpt, &Plan::all(&ckpt, &[Target::Host]), &small_requests());
        assert_loaded(&host.unwrap(), &tensors, Target::Host);
        assert!(!driver.gpu_prepared(0) && !driver.gpu_prepared(1), "lazy {lazy}");
        let plan = Plan::all(&ckpt, &[Target::Gpu(1)]);
        let first = load_stream(&driver, &ckpt, &plan, &small_requests()).unwrap();
        let first = first.finish().unwrap();
        assert_loaded(&first, &tensors, Target::Gpu(1));
        // Not lazy: every worker's buffers for the load's GPU, and only those, before the
        // reads; lazy: each worker makes its own at its first task, the load waits for none.
        assert_eq!(driver.gpu_prepared(1), !lazy, "lazy {lazy}");
        assert!(!driver.gpu_prepared(0), "lazy {lazy}: only for the load's GPUs");
        if lazy {
            assert_eq!(first.times().warm, std::time::Duration::ZERO);
        }
        // Made once per process: the next load waits for nothing.
        let again = load(&driver, &ckpt, &plan, &small_requests()).unwrap();
        assert_loaded(&again, &tensors, Target::Gpu(1));
        assert_eq!(again.times().warm, std::time::Duration::ZERO, "lazy {lazy}");
    }
}

#[test]
fn a_checkpoint_keeps_reading_the_files_its_first_load_opened() {
    // Loads after the first reuse its file handles (no open and probe per tensor), so a file
    // replaced on disk meanwhile does not mix into tensors laid out by the old header: the
    // safetensors package, which maps the file at open, behaves the same.
    let driver = host_driver();
    let dir = tempfile::tempdir().unwrap();
    let old = random_tensors(11, 8, 3000);
    let new = random_tensors(12, 8, 3000);
    let path = dir.path().join("m.safetensors");
    write_with_crate(&path, &old, None);
    let ckpt = Checkpoint::open(&path).unwrap();
    let one = |t: &T| {
        let mut plan = Plan::new();
        plan.add(&ckpt, &t.name, Target::Host).unwrap();
        load(&driver, &ckpt, &plan, &LoadOptions::default()).unwrap()
    };
    assert_loaded(&one(&old[0]), &old[..1], Target::Host);
    let other = dir.path().join("other.safetensors");
    write_with_crate(&other, &new, None);
    std::fs::rename(&other, &path).unwrap();
    for t in &old[1..] {
        assert_loaded(&one(t), std::slice::from_ref(t), Target::Host);
    }
    // Its handles are the ones loads read through: the same one every time, on the old file
    // (a read through it gives the old bytes), and a file number it lacks is an error.
    let h = ckpt.file_handle(0).unwrap();
    assert!(Arc::ptr_eq(&h, &ckpt.file_handle(0).unwrap()));
    let data_start = ckpt.files()[0].header.data_start;
    let (t0, (b, e)) =
        ckpt.tensors().map(|(_, i)| (i.name.clone(), i.data_offsets)).next().unwrap();
    let mut buf = vec![0u8; (e - b) as usize];
    let n = buf.len();
    assert_eq!(driver.read(&h, data_start + b, &mut buf, 0, n).unwrap(), n);
    assert_eq!(buf, old.iter().find(|t| t.name == t0).unwrap().data);
    let err = ckpt.file_handle(1).unwrap_err();
    assert!(err.to_string().contains("no file 1 in this checkpoint of 1 files"), "{err}");
    // A checkpoint opened now reads the new file.
    let fresh = Checkpoint::open(&path).unwrap();
    let loaded =
        load(&driver, &fresh, &Plan::all(&fresh, &[Target::Host]), &LoadOptions::default())
            .unwrap();
    assert_loaded(&loaded, &new, Target::Host);
}

#[test]
fn the_first_views_come_out_before_the_load_is_done() {
    let dir = tempfile::tempdir().unwrap();
    let tensors = random_tensors(12, 48, 20_000);
    let path = dir.path().join("m.safetensors");
    write_with_crate(&path, &tensors, None);
    let ckpt = Checkpoint::open(&path).unwrap();
    let rt = Arc::new(gdio::gpu::sim::SimRuntime::new(1, std::time::Duration::from_millis(2)));
    let driver =
        Arc::new(Driver::with_runtime(common::tiny_config(DirectIoPolicy::Off, 3), rt).unwrap());
    let plan = Plan::all(&ckpt, &[Target::Gpu(0)]);
    let start = std::time::Instant::now();
    let mut stream = load_stream(&driver, &ckpt, &plan, &small_requests()).unwrap();
    // The first view with bytes (an empty tensor has nothing to wait for).
    let (mut first, mut to_first, mut seen) = (None, std::time::Duration::ZERO, 0);
    for v in stream.by_ref() {
        let v = v.unwrap();
        seen += 1;
        if first.is_none() && v.len > 0 {
            to_first = start.elapsed();
            first = Some(v);
        }
    }
    let first = first.unwrap();
    let loaded = stream.finish().unwrap();
    let total = start.elapsed();
    assert_eq!(seen, tensors.len());
    assert_loaded(&loaded, &tensors, Target::Gpu(0));
    let want = tensors.iter().find(|t| t.name == first.name).unwrap();
    assert_eq!(loaded.to_vec(&first).unwrap(), want.data);
    assert!(
        to_first * 3 < total,
        "the first view took {to_first:?} of a {total:?} load: handed out only at the end?"
    );
}

#[test]
fn shards_with_index_directory_and_list_open_the_same() {
    let driver = host_driver();
    let dir = tempfile::tempdir().unwrap();
    let tensors = random_tensors(3, 30, 30_000);
    let src: Vec<SaveTensor<'_>> = tensors
        .iter()
        .map(|t| SaveTensor::host(&t.name, t.dtype, &t.shape, &t.data).unwrap())
        .collect();
    let opts = SaveOptions { max_shard_size: 40_000, ..SaveOptions::default() };
    let saved = save(&driver, &src, dir.path().join("model.safetensors"), &opts).unwrap();
    assert!(saved.files.len() > 2, "{} shards", saved.files.len());
    let index = saved.index.clone().unwrap();
    assert!(index.ends_with("model.safetensors.index.json"));
    let idx = parse_index(&std::fs::read(&index).unwrap(), None).unwrap();
    assert_eq!(idx.weight_map.len(), tensors.len());
    assert_eq!(idx.metadata["total_size"], saved.data_bytes);
    // Each shard is a valid file for the safetensors crate.
    for f in &saved.files {
        let bytes = std::fs::read(f).unwrap();
        safetensors::SafeTensors::deserialize(&bytes).unwrap();
    }
    let by_index = Checkpoint::open(&index).unwrap();
    let by_dir = Checkpoint::open(dir.path()).unwrap();
    let by_list = Checkpoint::open_all(&saved.files).unwrap();
    for ckpt in [&by_index, &by_dir, &by_list] {
        assert_eq!(ckpt.files().len(), saved.files.len());
        let loaded =
            load(&driver, ckpt, &Plan::all(ckpt, &[Target::Host]), &small_requests()).unwrap();
        assert_eq!(loaded.allocations().len(), saved.files.len());
        assert_loaded(&loaded, &tensors, Target::Host);
    }
    assert!(by_index.index().is_some());
    assert!(by_list.index().is_none());
}

#[test]
fn patterns_rows_and_byte_slices_load_only_what_was_asked() {
    let driver = sim(2);
    let dir = tempfile::tempdir().unwrap();
    let mut r = common::rng(4);
    let mut tensors = Vec::new();
    for i in 0..12 {
        tensors.push(st::random_tensor(&mut r, &format!("layer.{i}.w"), Dtype::BF16, 200_000));
        tensors.push(st::random_tensor(&mut r, &format!("layer.{i}.b"), Dtype::F32, 2_000));
    }
    let path = dir.path().join("m.safetensors");
    write_with_crate(&path, &tensors, None);
    let ckpt = Checkpoint::open(&path).unwrap();

    let plan = Plan::matching(&ckpt, &["layer.1?.w", "layer.3.*"], &[Target::Gpu(1)]).unwrap();
    let loaded = load(&driver, &ckpt, &plan, &small_requests()).unwrap();
    let mut names: Vec<_> = loaded.views().iter().map(|v| v.name.clone()).collect();
    names.sort();
    assert_eq!(names, ["layer.10.w", "layer.11.w", "layer.3.b", "layer.3.w"]);
    let want: Vec<T> = tensors.iter().filter(|t| names.contains(&t.name)).cloned().collect();
    assert_loaded(&loaded, &want, Target::Gpu(1));
    // Far apart tensors are not read with everything between them.
    let total: u64 = tensors.iter().map(|t| t.data.len() as u64).sum();
    assert!(loaded.bytes_read() < total / 2, "{} of {total}", loaded.bytes_read());

    let e = Plan::matching(&ckpt, &["nope.*"], &[Target::Host]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.to_string().contains("nope.*"), "{e}");

    // A tensor-parallel split: rank 0 gets the first rows on GPU 0, rank 1 the rest on GPU 1,
    // plus a flat byte slice on the host.
    let w = tensors.iter().find(|t| t.name == "layer.5.w" && t.shape.len() == 2).unwrap();
    let rows = w.shape[0];
    let row_bytes = w.data.len() as u64 / rows;
    let half = rows / 2;
    let mut plan = Plan::new();
    plan.add_rows(&ckpt, "layer.5.w", Target::Gpu(0), 0..half).unwrap();
    plan.add_rows(&ckpt, "layer.5.w", Target::Gpu(1), half..rows).unwrap();
    plan.add_bytes(&ckpt, "layer.5.w", Target::Host, 2..10).unwrap();
    assert!(plan.add_bytes(&ckpt, "layer.5.w", Target::Host, 1..10).is_err(), "half a bf16");
    assert!(plan.add_rows(&ckpt, "layer.5.w", Target::Host, 0..rows + 1).is_err());
    let loaded = load(&driver, &ckpt, &plan, &LoadOptions::default()).unwrap();
    let v0 = loaded.get("layer.5.w", Target::Gpu(0)).unwrap();
    let v1 = loaded.get("layer.5.w", Target::Gpu(1)).unwrap();
    let vh = loaded.get("layer.5.w", Target::Host).unwrap();
    assert_eq!(v0.shape, [half, w.shape[1]]);
    assert_eq!(v1.shape, [rows - half, w.shape[1]]);
    assert_eq!(vh.shape, [4]);
    let split = (half * row_bytes) as usize;
    assert_eq!(loaded.to_vec(v0).unwrap(), w.data[..split]);
    assert_eq!(loaded.to_vec(v1).unwrap(), w.data[split..]);
    assert_eq!(loaded.host_bytes(vh).unwrap(), &w.data[2..10]);
}

#[test]
fn two_gpus_get_everything_and_storage_is_read_once() {
    let driver = sim(2);
    let dir = tempfile::tempdir().unwrap();
    let tensors = random_tensors(5, 50, 80_000);
    let paths: Vec<_> = (0..2)
        .map(|i| {
            let p = dir.path().join(format!("s{i}.safetensors"));
            let part: Vec<T> = tensors.iter().skip(i).step_by(2).cloned().collect();
            write_with_crate(&p, &part, None);
            p
        })
        .collect();
    let ckpt = Checkpoint::open_all(&paths).unwrap();
    let targets = Target::parse_list("gpu:0,1").unwrap();
    assert_eq!(targets, [Target::Gpu(0), Target::Gpu(1)]);
    let loaded = load(&driver, &ckpt, &Plan::all(&ckpt, &targets), &small_requests()).unwrap();
    assert_eq!(loaded.allocations().len(), 4, "one per file and GPU");
    assert_loaded(&loaded, &tensors, Target::Gpu(0));
    assert_loaded(&loaded, &tensors, Target::Gpu(1));
    let total = ckpt.total_bytes();
    assert!(
        loaded.bytes_read() < total + 4 * 4096 + 100,
        "{} read for {total}",
        loaded.bytes_read()
    );
    assert_eq!(loaded.bytes_loaded(), 2 * total);
    // Both GPUs read from storage (their shares), as the engine's counters by kind show.
    let stats = driver.stats();
    assert!(stats.backends.values().map(|b| b.ops).sum::<u64>() >= 4);

    // The host runtime cannot copy between GPUs: an error, not a crash.
    let host = gdio::gpu::host::HostRuntime::new("no GPU in this test");
    // SAFETY: the host runtime refuses before touching memory.
    let e = unsafe { gdio::gpu::GpuRuntime::copy_peer(&host, 1, 0x1000, 0, 0x2000, 8) };
    assert_eq!(e.unwrap_err().kind(), ErrorKind::Unsupported);
}

#[test]
fn two_gpus_read_on_the_first_by_default_or_spread_their_reads() {
    let dir = tempfile::tempdir().unwrap();
    let tensors = random_tensors(6, 40, 90_000);
    let p = dir.path().join("m.safetensors");
    write_with_crate(&p, &tensors, None);
    let ckpt = Checkpoint::open_all(&[p]).unwrap();
    let targets = Target::parse_list("gpu:0,1").unwrap();
    for spread in [true, false] {
        let rt = Arc::new(gdio::gpu::sim::SimRuntime::new(2, std::time::Duration::ZERO));
        let config = common::tiny_config(DirectIoPolicy::Auto, 3);
        let driver = Arc::new(Driver::with_runtime(config, rt.clone()).unwrap());
        let opts = LoadOptions { spread_reads: Some(spread), ..small_requests() };
        let loaded = load(&driver, &ckpt, &Plan::all(&ckpt, &targets), &opts).unwrap();
        assert_loaded(&loaded, &tensors, Target::Gpu(0));
        assert_loaded(&loaded, &tensors, Target::Gpu(1));
        let (to1, to0) = (rt.peer_bytes(0, 1), rt.peer_bytes(1, 0));
        assert_eq!(to1 + to0, loaded.bytes_read(), "every byte read crosses to the other GPU");
        if spread {
            assert!(to0 > 0 && to1 > 0, "both GPUs read a share: {to0} / {to1}");
        } else {
            assert_eq!(to0, 0, "GPU 1 read nothing: it only receives");
        }
    }
}

/// The load's shape keys, set the way a Python user sets them (`GDIO_*` variables), drive a
/// load that passes no options: spreading over both GPUs' links and the merge gap, read back
/// byte for byte; an option given in code still wins over its key.
#[test]
fn the_load_shape_keys_drive_a_load_without_options() {
    let dir = tempfile::tempdir().unwrap();
    let tensors = random_tensors(16, 24, 30_000);
    let p = dir.path().join("m.safetensors");
    write_with_crate(&p, &tensors, None);
    let ckpt = Checkpoint::open_all(&[p]).unwrap();
    let targets = Target::parse_list("gpu:0,1").unwrap();
    let loaded_with = |vars: &[(&str, &str)], opts: &LoadOptions, plan: &Plan| {
        let mut l = gdio::Config::load_from_vars(
            vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>(),
        )
        .unwrap();
        // The small engine shape of the other tests: many requests per load.
        let tiny = common::tiny_config(DirectIoPolicy::Auto, 3);
        l.set("threads", tiny.threads).unwrap();
        l.set("task_size", tiny.task_size).unwrap();
        let rt = Arc::new(gdio::gpu::sim::SimRuntime::new(2, std::time::Duration::ZERO));
        let driver = Arc::new(Driver::with_runtime(l.into_config(), rt.clone()).unwrap());
        let loaded = load(&driver, &ckpt, plan, opts).unwrap();
        (loaded, rt)
    };
    let all = Plan::all(&ckpt, &targets);
    let spread =
        [("GDIO_SAFETENSORS_SPREAD_READS", "yes"), ("GDIO_SAFETENSORS_REQUEST_BYTES", "8192")];
    for (vars, opts, both_read) in [
        (&spread[..], LoadOptions::default(), true),
        (&[][..], LoadOptions::default(), false),
        (&spread[..], LoadOptions { spread_reads: Some(false), ..LoadOptions::default() }, false),
    ] {
        let (loaded, rt) = loaded_with(vars, &opts, &all);
        assert_loaded(&loaded, &tensors, Target::Gpu(0));
        assert_loaded(&loaded, &tensors, Target::Gpu(1));
        let (to1, to0) = (rt.peer_bytes(0, 1), rt.peer_bytes(1, 0));
        assert_eq!(to1 + to0, loaded.bytes_read(), "{vars:?} {opts:?}");
        assert_eq!(to0 > 0, both_read, "{vars:?} {opts:?}: GPU 1 sent {to0}, GPU 0 {to1}");
    }
    // Every other tensor into the host: a merge gap wider than the file reads one span, the
    // skipped tensors' bytes included; a gap of one byte reads only what is wanted (each range
    // widened to whole pages).
    let mut half = Plan::new();
    let wanted: Vec<T> = tensors.iter().step_by(2).cloned().collect();
    for t in &wanted {
        half.add(&ckpt, &t.name, Target::Host).unwrap();
    }
    let (wide, _) = loaded_with(
        &[("GDIO_SAFETENSORS_MERGE_GAP_BYTES", "1073741824")],
        &LoadOptions::default(),
        &half,
    );
    let (narrow, _) =
        loaded_with(&[("GDIO_SAFETENSORS_MERGE_GAP_BYTES", "1")], &LoadOptions::default(), &half);
    assert_loaded(&wide, &wanted, Target::Host);
    assert_loaded(&narrow, &wanted, Target::Host);
    let wanted_bytes: u64 = wanted.iter().map(|t| t.data.len() as u64).sum();
    assert!(wide.bytes_read() > wanted_bytes, "{} {wanted_bytes}", wide.bytes_read());
    assert!(
        narrow.bytes_read() < wide.bytes_read(),
        "{} {}",
        narrow.bytes_read(),
        wide.bytes_read()
    );
    assert!(narrow.bytes_read() <= wanted_bytes + wanted.len() as u64 * 2 * 4096);
    // A bad value is refused when the configuration is read, naming the variable.
    let e = gdio::Config::load_from_vars(vec![(
        "GDIO_SAFETENSORS_REQUESTS_IN_FLIGHT".to_string(),
        "1000".to_string(),
    )])
    .unwrap_err();
    assert!(e.to_string().contains("GDIO_SAFETENSORS_REQUESTS_IN_FLIGHT"), "{e}");
}

/// `LoadOptions::cancel`: set before the load, nothing is read and the load fails saying so;
/// set after the first tensor of a stream, the stream ends with that error well before the
/// rest; a load with the flag clear is unaffected.
#[test]
fn a_cancel_flag_stops_a_load() {
    let dir = tempfile::tempdir().unwrap();
    let tensors = random_tensors(21, 40, 60_000);
    let p = dir.path().join("m.safetensors");
    write_with_crate(&p, &tensors, None);
    let ckpt = Checkpoint::open(&p).unwrap();
    let plan = Plan::all(&ckpt, &[Target::Gpu(0)]);
    let driver = sim(1);
    let flag = Arc::new(AtomicBool::new(true));
    let opts = LoadOptions {
        request_size: 4096,
        requests_in_flight: 1,
        cancel: Some(flag.clone()),
        ..LoadOptions::default()
    };
    let e = load(&driver, &ckpt, &plan, &opts).unwrap_err();
    assert!(e.to_string().contains("load cancelled"), "{e}");

    flag.store(false, std::sync::atomic::Ordering::SeqCst);
    let mut stream = load_stream(&driver, &ckpt, &plan, &opts).unwrap();
    let first = stream.next().unwrap().unwrap();
    flag.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut seen = 1;
    let mut ended = None;
    for v in stream.by_ref() {
        match v {
            Ok(_) => seen += 1,
            Err(e) => {
                ended = Some(e);
                break;
            }
        }
    }
    let e = ended.unwrap_or_else(|| panic!("the stream ran to its end ({seen} tensors)"));
    assert!(e.to_string().contains("load cancelled"), "{e}");
    assert!(seen < tensors.len(), "{seen} of {}", tensors.len());
    assert!(!first.name.is_empty());

    flag.store(false, std::sync::atomic::Ordering::SeqCst);
    let loaded = load(&driver, &ckpt, &plan, &opts).unwrap();
    assert_loaded(&loaded, &tensors, Target::Gpu(0));
}

#[test]
fn handles_are_send_and_sync_for_bindings() {
    fn both<T: Send + Sync>() {}
    both::<Checkpoint>();
    both::<Plan>();
    both::<gdio::safetensors::LoadStream>();
    both::<Loaded>();
    both::<gdio::safetensors::TensorView>();
    both::<SaveTensor<'static>>();
}

#[test]
fn targets_parse() {
    assert_eq!(Target::parse_list("host").unwrap(), [Target::Host]);
    assert_eq!(Target::parse_list("gpu").unwrap(), [Target::Gpu(0)]);
    assert_eq!(Target::parse_list("gpu:3").unwrap(), [Target::Gpu(3)]);
    for bad in ["gpu:", "gpu:a", "gpu:0,0", "tpu", ""] {
        assert!(Target::parse_list(bad).is_err(), "{bad}");
    }
}

/// Writes `bytes` as `name` in `dir` and expects opening it to fail with `want` in the text,
/// naming the file.
fn expect_bad(dir: &Path, name: &str, bytes: &[u8], want: &str) {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    let e = Checkpoint::open(&p).unwrap_err();
    let text = e.to_string();
    assert!(text.contains(want), "{name}: {text:?} lacks {want:?}");
    assert_eq!(e.path(), Some(p.as_path()), "{name}: {text}");
    assert!(matches!(e.kind(), ErrorKind::InvalidInput), "{name}: {e:?}");
    // The same bytes through the in-memory parser: an error, never a panic.
    assert!(parse_prefix(bytes, bytes.len() as u64, None).is_err(), "{name}");
}

#[test]
fn every_kind_of_malformed_header_is_an_error_naming_file_and_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ok = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
    assert!(parse_prefix(&raw_file(ok, &[0; 8]), 16 + ok.len() as u64, None).is_ok());
    expect_bad(d, "short", &[1, 2, 3], "too short");
    expect_bad(d, "huge", &u64::MAX.to_le_bytes(), "exceeds the limit");
    let mut past = 1000u64.to_le_bytes().to_vec();
    past.extend_from_slice(b"{}");
    expect_bad(d, "past", &past, "runs past the end");
    let mut utf = 4u64.to_le_bytes().to_vec();
    utf.extend_from_slice(&[b'{', 0xff, 0xfe, b'}']);
    expect_bad(d, "utf8", &utf, "not UTF-8");
    expect_bad(d, "json", &raw_file(r#"{"a":"#, &[]), "not valid JSON");
    // Each field of an entry missing or of the wrong type: an error naming the tensor.
    let fields = [
        ("onebyte", r#"{"#, "header length 1 cannot hold a JSON object"),
        (
            "dtype-number",
            r#"{"t.a":{"dtype":7,"shape":[1],"data_offsets":[0,1]}}"#,
            "tensor \"t.a\": \"dtype\" is not a string",
        ),
        (
            "dtype-missing",
            r#"{"t.b":{"shape":[1],"data_offsets":[0,1]}}"#,
            "tensor \"t.b\": no \"dtype\"",
        ),
        (
            "shape-missing",
            r#"{"t.c":{"dtype":"U8","data_offsets":[0,1]}}"#,
            "tensor \"t.c\": no \"shape\"",
        ),
        (
            "shape-string",
            r#"{"t.d":{"dtype":"U8","shape":"1","data_offsets":[0,1]}}"#,
            "tensor \"t.d\": \"shape\" is not an array",
        ),
        (
            "offsets-object",
            r#"{"t.e":{"dtype":"U8","shape":[1],"data_offsets":{"a":0}}}"#,
            "tensor \"t.e\": \"data_offsets\" is not an array",
        ),
        (
            "offsets-float",
            r#"{"t.f":{"dtype":"U8","shape":[1],"data_offsets":[0,1.5]}}"#,
            "tensor \"t.f\": \"data_offsets\" are not non-negative integers",
        ),
        (
            "offsets-negative",
            r#"{"t.g":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}}"#,
            "tensor \"t.g\": \"data_offsets\" are not non-negative integers",
        ),
        (
            "metadata-array",
            r#"{"__metadata__":[1],"t.h":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#,
            "\"__metadata__\" is not a JSON object",
        ),
        ("entry-number", r#"{"t.i":5}"#, "tensor \"t.i\": entry is not a JSON object"),
    ];
    for (name, json, want) in fields {
        expect_bad(d, name, &raw_file(json, &[0; 8]), want);
    }
    expect_bad(d, "array", &raw_file("[1,2]", &[]), "not valid JSON");
    expect_bad(
        d,
        "dtype",
        &raw_file(r#"{"w.q":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}}"#, &[0; 16]),
        "tensor \"w.q\": unknown dtype \"F128\"",
    );
    expect_bad(
        d,
        "size",
        &raw_file(r#"{"w.k":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#, &[0; 8]),
        "tensor \"w.k\": shape [3] of F32 is 12 bytes",
    );
    expect_bad(
        d,
        "overflow",
        &raw_file(
            r#"{"big":{"dtype":"F64","shape":[4294967296,4294967296,16],"data_offsets":[0,8]}}"#,
            &[0; 8],
        ),
        "tensor \"big\": shape [4294967296, 4294967296, 16] overflows",
    );
    expect_bad(
        d,
        "bitsoverflow",
        &raw_file(
            r#"{"big":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,8]}}"#,
            &[0; 8],
        ),
        "tensor \"big\"",
    );
    expect_bad(
        d,
        "f4odd",
        &raw_file(r#"{"q":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}"#, &[0; 2]),
        "tensor \"q\": 3 elements of F4 do not fill whole bytes",
    );
    expect_bad(
        d,
        "backwards",
        &raw_file(r#"{"r":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}}"#, &[0; 4]),
        "tensor \"r\": data_offsets [4, 0] end before they begin",
    );
    expect_bad(
        d,
        "arity",
        &raw_file(r#"{"r":{"dtype":"U8","shape":[4],"data_offsets":[0,4,8]}}"#, &[0; 4]),
        "tensor \"r\": \"data_offsets\" has 3 values",
    );
    expect_bad(
        d,
        "negative",
        &raw_file(r#"{"r":{"dtype":"U8","shape":[-4],"data_offsets":[0,4]}}"#, &[0; 4]),
        "tensor \"r\": \"shape\" holds something other",
    );
    expect_bad(
        d,
        "missing",
        &raw_file(r#"{"r":{"dtype":"U8","shape":[4]}}"#, &[0; 4]),
        "tensor \"r\": no \"data_offsets\"",
    );
    expect_bad(
        d,
        "overlap",
        &raw_file(
            r#"{"x":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},"y":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}}"#,
            &[0; 8],
        ),
        "tensor \"y\": data_offsets [4, 8] overlap tensor \"x\"",
    );
    expect_bad(
        d,
        "hole",
        &raw_file(
            r#"{"x":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"y":{"dtype":"U8","shape":[2],"data_offsets":[6,8]}}"#,
            &[0; 8],
        ),
        "tensor \"y\": data_offsets [6, 8] leave a hole of 2 bytes",
    );
    expect_bad(
        d,
        "dup",
        &raw_file(
            r#"{"x":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"x":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}}"#,
            &[0; 8],
        ),
        "duplicate key \"x\"",
    );
    expect_bad(
        d,
        "trailing",
        &raw_file(r#"{"x":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}"#, &[0; 9]),
        "trailing bytes",
    );
    expect_bad(
        d,
        "meta",
        &raw_file(r#"{"__metadata__":{"a":1}}"#, &[]),
        "\"__metadata__\" value of \"a\" is not a string",
    );
    expect_bad(
        d,
        "entry",
        &raw_file(r#"{"t":[1]}"#, &[]),
        "tensor \"t\": entry is not a JSON object",
    );
    // __metadata__ alone with an empty data section is a valid, empty file.
    let p = d.join("empty");
    std::fs::write(&p, raw_file(r#"{"__metadata__":{"a":"b"}}"#, &[])).unwrap();
    let c = Checkpoint::open(&p).unwrap();
    assert!(c.is_empty());
    assert_eq!(c.metadata()["a"], "b");
}

#[test]
fn a_file_truncated_mid_tensor_names_the_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let tensors = random_tensors(6, 10, 10_000);
    let path = dir.path().join("m.safetensors");
    write_with_crate(&path, &tensors, None);
    let len = std::fs::metadata(&path).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(len - 3).unwrap();
    let e = Checkpoint::open(&path).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("run past") && text.contains("truncated"), "{text}");
    let ckpt_bytes = std::fs::read(&path).unwrap();
    let hdr = safetensors::SafeTensors::read_metadata(&ckpt_bytes);
    assert!(hdr.is_err(), "the crate agrees");
    // The last tensor by offset is the one cut.
    let (_, meta) = {
        let mut b = ckpt_bytes.clone();
        b.extend_from_slice(&[0; 3]);
        safetensors::SafeTensors::read_metadata(&b).unwrap()
    };
    // The first tensor (by offset) that ends past the cut is the one named.
    let data_len = meta.data_len() as u64 - 3;
    let cut = meta
        .offset_keys()
        .into_iter()
        .find(|k| meta.info(k).unwrap().data_offsets.1 as u64 > data_len)
        .unwrap();
    assert!(text.contains(&format!("{cut:?}")), "{text} should name {cut}");
}

#[test]
fn index_files_that_lie_or_escape_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let t = random_tensors(7, 4, 1000);
    write_with_crate(&d.join("a.safetensors"), &t, None);
    let cases = [
        (r#"{"weight_map":{"x":"../a.safetensors"}}"#, "not a plain name"),
        (r#"{"weight_map":{"x":"/etc/passwd"}}"#, "not a plain name"),
        (r#"{"weight_map":{"x":1}}"#, "file name is not a string"),
        (r#"{"metadata":{}}"#, "no \"weight_map\""),
        (r#"{"weight_map":{"x":"a.safetensors","x":"a.safetensors"}}"#, "duplicate key"),
        (r#"{"weight_map":{"nope":"a.safetensors"}}"#, "tensor \"nope\" is not in any shard"),
        (r#"{"weight_map":[]}"#, "expected a JSON object"),
    ];
    for (i, (json, want)) in cases.iter().enumerate() {
        let p = d.join(format!("c{i}.safetensors.index.json"));
        std::fs::write(&p, json).unwrap();
        let e = Checkpoint::open(&p).unwrap_err();
        assert!(e.to_string().contains(want), "{json}: {e}");
        assert_eq!(e.path(), Some(p.as_path()));
    }
    // A shard's tensor the index leaves out (a stale index) is still there, as transformers
    // loads every tensor of the shards an index names; listing all of them opens the same.
    let p = d.join("short.safetensors.index.json");
    for listed in [&t[1..], &t[..]] {
        let names: Vec<String> =
            listed.iter().map(|t| format!("{:?}:\"a.safetensors\"", t.name)).collect();
        std::fs::write(&p, format!("{{\"weight_map\":{{{}}}}}", names.join(","))).unwrap();
        let ck = Checkpoint::open(&p).unwrap();
        assert_eq!(ck.len(), t.len());
        let plan = Plan::all(&ck, &[Target::Host]);
        let loaded = load(&host_driver(), &ck, &plan, &small_requests()).unwrap();
        assert_loaded(&loaded, &t, Target::Host);
    }
    // Two files with one tensor name.
    write_with_crate(&d.join("b.safetensors"), &t[..1], None);
    let e = Checkpoint::open_all(&[d.join("a.safetensors"), d.join("b.safetensors")]).unwrap_err();
    assert!(e.to_string().contains("is in both"), "{e}");
}

fn tensors_of(t: &[T]) -> Vec<SaveTensor<'_>> {
    t.iter().map(|t| SaveTensor::host(&t.name, t.dtype, &t.shape, &t.data).unwrap()).collect()
}

#[test]
fn save_then_load_round_trips_through_gpu_and_the_crate_reads_it() {
    let driver = sim(1);
    for (label, dir) in common::dirs() {
        let tensors = random_tensors(8, 45, 40_000);
        let src = dir.path().join("src.safetensors");
        write_with_crate(&src, &tensors, None);
        let ckpt = Checkpoint::open(&src).unwrap();
        let loaded =
            load(&driver, &ckpt, &Plan::all(&ckpt, &[Target::Gpu(0)]), &small_requests()).unwrap();
        // Resave in data order from the GPU (adjacent views are written in one request).
        let mut views: Vec<_> = loaded.views().to_vec();
        views.sort_by_key(|v| v.addr);
        let out: Vec<SaveTensor<'_>> =
            views.iter().map(|v| SaveTensor::from_view(&loaded, v).unwrap()).collect();
        let dst = dir.path().join("dst.safetensors");
        let meta = BTreeMap::from([("k".to_owned(), "v".to_owned())]);
        let opts = SaveOptions { fsync: true, metadata: meta, ..SaveOptions::default() };
        let saved = save(&driver, &out, &dst, &opts).unwrap();
        assert_eq!(saved.files, std::slice::from_ref(&dst));
        let bytes = std::fs::read(&dst).unwrap();
        assert_eq!(saved.total_bytes, bytes.len() as u64);
        let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        assert_eq!(st.len(), tensors.len(), "{label}");
        for t in &tensors {
            let v = st.tensor(&t.name).unwrap();
            assert_eq!(v.dtype(), t.dtype);
            assert_eq!(v.data(), &t.data[..], "{label} {}", t.name);
        }
        let back = Checkpoint::open(&dst).unwrap();
        assert_eq!(back.metadata()["k"], "v");
        let again =
            load(&driver, &back, &Plan::all(&back, &[Target::Host]), &LoadOptions::default())
                .unwrap();
        assert_loaded(&again, &tensors, Target::Host);
        // No temporary files left.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.contains("gdio-tmp")), "{names:?}");
    }
}

/// Tensors in GPU allocations of their own (a user's model), saved with writes in flight and
/// one at a time: the same file, which the crate reads back as written. A simulated GPU whose
/// copies lag makes a write that returned before its copies landed store stale bytes.
#[test]
fn separate_device_tensors_save_the_same_bytes_with_writes_in_flight_or_one_at_a_time() {
    use gdio::gpu::GpuRuntime;
    let rt = Arc::new(gdio::gpu::sim::SimRuntime::new(1, std::time::Duration::from_micros(200)));
    let tensors = random_tensors(31, 90, 30_000);
    let addrs: Vec<u64> = tensors
        .iter()
        .map(|t| {
            let a = rt.alloc_device(0, t.data.len().max(1)).unwrap();
            // SAFETY: a fresh simulated allocation of at least `t.data.len()` bytes.
            unsafe { std::ptr::copy_nonoverlapping(t.data.as_ptr(), a as *mut u8, t.data.len()) };
            a
        })
        .collect();
    // SAFETY: each address is a live simulated allocation holding its tensor's bytes.
    let src: Vec<SaveTensor<'_>> = tensors
        .iter()
        .zip(&addrs)
        .map(|(t, &a)| unsafe {
            SaveTensor::device(&t.name, t.dtype, &t.shape, 0, a, t.data.len() as u64).unwrap()
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for in_flight in [1, 8, 64] {
        let config = gdio::Config {
            save_writes_in_flight: in_flight,
            write_threads: 3,
            ..common::tiny_config(DirectIoPolicy::Auto, 3)
        };
        let driver = Driver::with_runtime(config, rt.clone()).unwrap();
        let dst = dir.path().join(format!("w{in_flight}.safetensors"));
        save(&driver, &src, &dst, &SaveOptions::default()).unwrap();
        files.push(std::fs::read(&dst).unwrap());
    }
    assert!(files.iter().all(|f| f == &files[0]), "the same bytes at every setting");
    let st = safetensors::SafeTensors::deserialize(&files[0]).unwrap();
    assert_eq!(st.len(), tensors.len());
    for t in &tensors {
        assert_eq!(st.tensor(&t.name).unwrap().data(), &t.data[..], "{}", t.name);
    }
    // A tensor in the middle that is not device memory: refused, the writes already in
    // flight finish (their memory is still borrowed), nothing appears under the final name.
    let mut bad_src = src.clone();
    // SAFETY: the address is not device memory of the simulated GPU, so the driver refuses it
    // before any copy.
    bad_src
        .insert(45, unsafe { SaveTensor::device("bad", Dtype::U8, &[64], 0, 0x10, 64).unwrap() });
    let driver =
        Driver::with_runtime(common::tiny_config(DirectIoPolicy::Auto, 3), rt.clone()).unwrap();
    let dst = dir.path().join("bad.safetensors");
    let e = save(&driver, &bad_src, &dst, &SaveOptions::default()).unwrap_err();
    assert!(e.to_string().contains("device memory"), "{e}");
    assert!(!dst.exists());
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 3, "no temporary file left: {names:?}");
    for a in addrs {
        // SAFETY: allocated above, no I/O in flight.
        unsafe { rt.free_device(0, a) };
    }
}

/// Shards written side by side (up to `save_files_in_flight`) are the same files as shards
/// written one after another, and load back as saved.
#[test]
fn sharded_saves_write_the_same_shards_one_at_a_time_or_side_by_side() {
    let tensors = random_tensors(41, 60, 20_000);
    let src = tensors_of(&tensors);
    let mut snaps = Vec::new();
    for at_once in [1, 3, 64] {
        let config = gdio::Config {
            save_files_in_flight: at_once,
            ..common::tiny_config(DirectIoPolicy::Auto, 3)
        };
        let driver = Arc::new(
            Driver::with_runtime(
                config,
                Arc::new(gdio::gpu::sim::SimRuntime::new(1, std::time::Duration::from_micros(20))),
            )
            .unwrap(),
        );
        let dir = tempfile::tempdir().unwrap();
        let opts = SaveOptions { max_shard_size: 150_000, ..SaveOptions::default() };
        let saved = save(&driver, &src, dir.path().join("m.safetensors"), &opts).unwrap();
        assert!(saved.files.len() >= 5, "{} shards", saved.files.len());
        let ckpt = Checkpoint::open(saved.index.as_ref().unwrap()).unwrap();
        let loaded =
            load(&driver, &ckpt, &Plan::all(&ckpt, &[Target::Host]), &LoadOptions::default())
                .unwrap();
        assert_loaded(&loaded, &tensors, Target::Host);
        let snap: Vec<_> = snapshot(dir.path())
            .into_iter()
            .map(|(p, b)| (p.file_name().unwrap().to_owned(), b))
            .collect();
        snaps.push(snap);
    }
    assert_eq!(snaps[0], snaps[1]);
    assert_eq!(snaps[0], snaps[2]);
}

#[test]
fn an_interrupted_save_never_leaves_a_partial_file_under_the_final_name() {
    let driver = sim(1);
    let dir = tempfile::tempdir().unwrap();
    let tensors = random_tensors(9, 20, 50_000);
    let dst = dir.path().join("out.safetensors");
    let old = b"the previous checkpoint".to_vec();
    std::fs::write(&dst, &old).unwrap();
    let mut src = tensors_of(&tensors);
    // A tensor whose device memory does not exist, after others were written: the write
    // fails midway.
    // SAFETY: the address is not device memory of the simulated GPU, so the driver refuses it
    // before any copy.
    let bad = unsafe { SaveTensor::device("bad", Dtype::U8, &[64], 0, 0x10, 64).unwrap() };
    src.insert(15, bad);
    let e = save(&driver, &src, &dst, &SaveOptions::default()).unwrap_err();
    assert!(e.to_string().contains("device memory"), "{e}");
    assert_eq!(std::fs::read(&dst).unwrap(), old, "final name untouched");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(left, std::slice::from_ref(&dst), "no temporary file left");

    // Cancelled midway, sharded: no shard and no index appear.
    let cancel = Arc::new(AtomicBool::new(true));
    let opts = SaveOptions { cancel: Some(cancel), max_shard_size: 1, ..SaveOptions::default() };
    let e =
        save(&driver, &tensors_of(&tensors), dir.path().join("s.safetensors"), &opts).unwrap_err();
    assert!(e.to_string().contains("cancelled"), "{e}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(left, std::slice::from_ref(&dst));

    // Bad input is refused before anything is written.
    let e = SaveTensor::host("x", Dtype::F32, &[3], &[0; 8]).unwrap_err();
    assert!(e.to_string().contains("needs 12 bytes"), "{e}");
    let dup = [
        SaveTensor::host("x", Dtype::U8, &[1], &[1]).unwrap(),
        SaveTensor::host("x", Dtype::U8, &[1], &[2]).unwrap(),
    ];
    assert!(save(&driver, &dup, &dst, &SaveOptions::default()).is_err());
    assert_eq!(std::fs::read(&dst).unwrap(), old);
}

/// Every file in `dir` with its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut all: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    all.sort();
    all
}

#[test]
fn a_sharded_save_that_fails_midway_leaves_the_previous_checkpoint_whole() {
    let driver = sim(1);
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join("model.safetensors");
    let index = dir.path().join("model.safetensors.index.json");
    // The checkpoint already there: 12 shards of one tensor each.
    let first = random_tensors(31, 12, 20_000);
    let opts = SaveOptions { max_shard_size: 1, ..SaveOptions::default() };
    let saved = save(&driver, &tensors_of(&first), &dst, &opts).unwrap();
    assert_eq!(saved.files.len(), 12, "{:?}", saved.files);
    let before = snapshot(dir.path());

    // A new save of other tensors with the same shard names whose 11th shard fails: ten
    // shards were complete when it failed.
    let second = random_tensors(32, 12, 20_000);
    let mut src = tensors_of(&second);
    // SAFETY: the address is not device memory of the simulated GPU, so the driver refuses it
    // before any copy.
    let bad = unsafe { SaveTensor::device("bad", Dtype::U8, &[64], 0, 0x10, 64).unwrap() };
    let at = src.len() - 2;
    src[at] = bad;
    let e = save(&driver, &src, &dst, &opts).unwrap_err();
    assert!(e.to_string().contains("device memory"), "{e}");
    assert_eq!(snapshot(dir.path()), before, "every final name as it was, no temporary file");
    let ckpt = Checkpoint::open(&index).unwrap();
    let loaded = load(&driver, &ckpt, &Plan::all(&ckpt, &[Target::Host]), &small_requests());
    assert_loaded(&loaded.unwrap(), &first, Target::Host);

    // A name given twice across shards is refused before anything is written.
    let mut dup = tensors_of(&second);
    dup.push(SaveTensor::host(&second[0].name, Dtype::U8, &[1], &[7]).unwrap());
    let e = save(&driver, &dup, &dst, &opts).unwrap_err();
    assert!(e.to_string().contains("is given twice"), "{e}");
    assert_eq!(snapshot(dir.path()), before);

    // And the save that succeeds replaces it whole.
    save(&driver, &tensors_of(&second), &dst, &opts).unwrap();
    let ckpt = Checkpoint::open(&index).unwrap();
    let loaded = load(&driver, &ckpt, &Plan::all(&ckpt, &[Target::Host]), &small_requests());
    assert_loaded(&loaded.unwrap(), &second, Target::Host);
}

#[test]
fn cuda_views_lend_loaded_gpu_memory() {
    let driver = Arc::new(Driver::new(gdio::Config::default()).unwrap());
    if driver.runtime().device_count() == 0 {
        return common::gpu_skip("no GPU: cudarc views need one");
    }
    let dir = tempfile::tempdir().unwrap();
    let tensors = random_tensors(10, 30, 100_000);
    let path = dir.path().join("m.safetensors");
    write_with_crate(&path, &tensors, None);
    let ckpt = Checkpoint::open(&path).unwrap();
    let loaded =
        load(&driver, &ckpt, &Plan::all(&ckpt, &[Target::Gpu(0)]), &LoadOptions::default())
            .unwrap();
    assert_loaded(&loaded, &tensors, Target::Gpu(0));
    let ctx = cudarc::driver::CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    for t in tensors.iter().filter(|t| !t.data.is_empty()) {
        let v = loaded.get(&t.name, Target::Gpu(0)).unwrap();
        let got = loaded.with_cuda_view(v, &stream, |cv| stream.clone_dtoh(cv).unwrap()).unwrap();
        assert_eq!(got, t.data, "{}", t.name);
    }
    // The memory is still gdio's and intact after the views were returned.
    assert_loaded(&loaded, &tensors, Target::Gpu(0));
}

#[test]
fn real_gpus_load_save_and_share_a_checkpoint() {
    let driver = Arc::new(Driver::new(gdio::Config::default()).unwrap());
    let n = driver.runtime().device_count();
    if n == 0 {
        return common::gpu_skip("no GPU");
    }
    let dir = tempfile::tempdir().unwrap();
    let tensors = random_tensors(12, 60, 2_000_000);
    let path = dir.path().join("m.safetensors");
    write_with_crate(&path, &tensors, None);
    let ckpt = Checkpoint::open(&path).unwrap();
    let opts = LoadOptions { request_size: 1 << 20, ..LoadOptions::default() };
    let loaded = load(&driver, &ckpt, &Plan::all(&ckpt, &[Target::Gpu(0)]), &opts).unwrap();
    assert_loaded(&loaded, &tensors, Target::Gpu(0));
    // GPU → file through the engine's write path, read back by the crate.
    let out: Vec<SaveTensor<'_>> =
        loaded.views().iter().map(|v| SaveTensor::from_view(&loaded, v).unwrap()).collect();
    let dst = dir.path().join("out.safetensors");
    save(&driver, &out, &dst, &SaveOptions { fsync: true, ..SaveOptions::default() }).unwrap();
    let bytes = std::fs::read(&dst).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    for t in &tensors {
        assert_eq!(st.tensor(&t.name).unwrap().data(), &t.data[..], "{}", t.name);
    }
    if n < 2 {
        // Not a skip under GDIO_REQUIRE_GPU: one GPU is a complete GPU machine.
        eprintln!("one GPU: the two-GPU share was not run");
        return;
    }
    let targets = [Target::Gpu(0), Target::Gpu(1)];
    let loaded = load(&driver, &ckpt, &Plan::all(&ckpt, &targets), &opts).unwrap();
    assert_loaded(&loaded, &tensors, Target::Gpu(0));
    assert_loaded(&loaded, &tensors, Target::Gpu(1));
    assert!(loaded.bytes_read() < ckpt.total_bytes() + 64 * 1024);
}

/// Renames cut short: the 3rd shard's final name is a folder, so its rename fails after two
/// new shards replaced old ones of the same names. The error names that shard; the previous
/// checkpoint's index is gone rather than mapping the mix (loading by it fails, it does not
/// load old and new tensors side by side); no temporary file is left; and a save that then
/// completes gives the new checkpoint whole.
#[test]
fn renames_cut_short_leave_no_index_over_a_mix_of_shards() {
    let driver = sim(1);
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join("model.safetensors");
    let index = dir.path().join("model.safetensors.index.json");
    let opts = SaveOptions { max_shard_size: 1, ..SaveOptions::default() };
    let first = random_tensors(41, 5, 20_000);
    save(&driver, &tensors_of(&first), &dst, &opts).unwrap();
    assert!(Checkpoint::open(&index).is_ok());

    let third = dir.path().join("model-00003-of-00005.safetensors");
    std::fs::remove_file(&third).unwrap();
    std::fs::create_dir(&third).unwrap();
    std::fs::write(third.join("keep"), b"x").unwrap(); // a folder a file cannot replace
    let second = random_tensors(42, 5, 20_000);
    let e = save(&driver, &tensors_of(&second), &dst, &opts).unwrap_err();
    assert!(e.to_string().contains("model-00003-of-00005"), "{e}");
    assert!(!index.exists(), "the old index still maps a mix of old and new shards");
    assert!(Checkpoint::open(&index).is_err());
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("model-0000"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");

    std::fs::remove_dir_all(&third).unwrap();
    save(&driver, &tensors_of(&second), &dst, &opts).unwrap();
    let ckpt = Checkpoint::open(&index).unwrap();
    let loaded = load(&driver, &ckpt, &Plan::all(&ckpt, &[Target::Host]), &small_requests());
    assert_loaded(&loaded.unwrap(), &second, Target::Host);
}
