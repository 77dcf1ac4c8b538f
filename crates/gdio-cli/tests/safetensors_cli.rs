//! `gdio load` and `gdio save` end to end on host memory: JSON, --verify, --tensors, --resave,
//! sharded save, and errors for malformed files; and through GPU memory on simulated GPUs (the
//! hidden `--sim-gpus`): one GPU, two GPUs each getting every tensor (read once and copied, or
//! each reading a share), `--resave` and `gdio save --via gpu:N`.

use std::process::Command;

use gdio::safetensors::{save, Checkpoint, Dtype, SaveOptions, SaveTensor};
use rand::{RngCore, SeedableRng};
use serde_json::Value;

fn gdio() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gdio"))
}

fn json_of(out: &std::process::Output) -> Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// A checkpoint of `n` random bf16 tensors; returns (path, data per tensor).
fn checkpoint(dir: &std::path::Path, n: usize) -> (std::path::PathBuf, Vec<(String, Vec<u8>)>) {
    let mut r = rand::rngs::StdRng::seed_from_u64(11);
    let data: Vec<(String, Vec<u8>)> = (0..n)
        .map(|i| {
            let mut d = vec![0u8; 2 * 64 * (1 + i * 37 % 300)];
            r.fill_bytes(&mut d);
            (format!("model.layers.{i}.weight"), d)
        })
        .collect();
    let tensors: Vec<SaveTensor<'_>> = data
        .iter()
        .map(|(name, d)| {
            SaveTensor::host(name, Dtype::BF16, &[d.len() as u64 / 128, 64], d).unwrap()
        })
        .collect();
    let driver = gdio::Driver::new(gdio::Config::default()).unwrap();
    let p = dir.join("model.safetensors");
    save(&driver, &tensors, &p, &SaveOptions::default()).unwrap();
    (p, data)
}

#[test]
fn load_host_json_verify_patterns_and_resave() {
    let dir = tempfile::tempdir().unwrap();
    let (p, data) = checkpoint(dir.path(), 24);
    let total: usize = data.iter().map(|d| d.1.len()).sum();
    let out = gdio()
        .arg("load")
        .arg(&p)
        .args(["--target", "host", "--verify", "--json"])
        .output()
        .unwrap();
    let v = json_of(&out);
    assert_eq!(v["tensors"], 24);
    assert_eq!(v["bytes"], total);
    assert_eq!(v["verified"], true);
    assert!(v["seconds"].as_f64().unwrap() > 0.0);
    assert!(v["gbps"].as_f64().unwrap() > 0.0);
    // The set-up is broken down: header reads and the (here empty) GPU warm-up, within the total.
    let (open, warm) = (v["open_seconds"].as_f64().unwrap(), v["warm_seconds"].as_f64().unwrap());
    assert!(open > 0.0 && open <= v["seconds"].as_f64().unwrap(), "{v}");
    assert!(warm >= 0.0 && v["transfer_seconds"].as_f64().unwrap() > 0.0, "{v}");
    // Where the load's time went: the file reads were done by workers or inline by the loader.
    let w = &v["workers"];
    assert!(w["file_io"].as_f64().unwrap() + w["inline"].as_f64().unwrap() > 0.0, "{w}");
    // The hypervisor's share of the CPUs during the load: null for a load too short to tell
    // (a hundred CPU ticks), a share otherwise.
    match &v["cpu_steal"] {
        Value::Null => {}
        s => assert!((0.0..=1.0).contains(&s.as_f64().unwrap()), "{v}"),
    }
    assert!(v.as_object().unwrap().contains_key("cpu_steal"), "{v}");

    let resaved = dir.path().join("again.safetensors");
    let out = gdio()
        .arg("load")
        .arg(&p)
        .args([
            "--target",
            "host",
            "--json",
            "--tensors",
            "model.layers.1?.weight,model.layers.3.*",
        ])
        .arg("--resave")
        .arg(&resaved)
        .output()
        .unwrap();
    let v = json_of(&out);
    assert_eq!(v["tensors"], 11);
    let back = Checkpoint::open(&resaved).unwrap();
    let mut names: Vec<_> = back.keys().map(str::to_owned).collect();
    names.sort();
    assert_eq!(names.len(), 11);
    let bytes = std::fs::read(&resaved).unwrap();
    for name in &names {
        let want = &data.iter().find(|d| &d.0 == name).unwrap().1;
        let info = back.info(name).unwrap();
        let s = (back.files()[0].header.data_start + info.data_offsets.0) as usize;
        assert_eq!(&bytes[s..s + want.len()], &want[..], "{name}");
    }
}

#[test]
fn save_shards_through_host_memory() {
    let dir = tempfile::tempdir().unwrap();
    let (p, data) = checkpoint(dir.path(), 10);
    let out_path = dir.path().join("out").join("m.safetensors");
    std::fs::create_dir(out_path.parent().unwrap()).unwrap();
    let out = gdio()
        .arg("save")
        .arg(&p)
        .arg("--out")
        .arg(&out_path)
        .args(["--via", "host", "--shard-size", "20K", "--fsync", "--json"])
        .output()
        .unwrap();
    let v = json_of(&out);
    let files = v["files"].as_array().unwrap();
    assert!(files.len() > 1, "{v}");
    let index = v["index"].as_str().unwrap();
    let out =
        gdio().args(["load", index, "--target", "host", "--verify", "--json"]).output().unwrap();
    let w = json_of(&out);
    assert_eq!(w["tensors"], data.len());
    assert_eq!(w["verified"], true);
}

#[test]
fn malformed_files_and_bad_arguments_fail_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = checkpoint(dir.path(), 3);
    let len = std::fs::metadata(&p).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(len - 1).unwrap();
    let out = gdio().arg("load").arg(&p).args(["--target", "host"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("truncated") && err.contains("model.layers.2.weight"), "{err}");
    for target in ["tpu", "gpu:x"] {
        let out = gdio().arg("load").arg(&p).args(["--target", target]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{target}");
    }
}

/// The bytes of every tensor of the checkpoint at `path` (any layout), by name.
fn tensors_of(path: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let ck = Checkpoint::open(path).unwrap();
    let mut out: Vec<(String, Vec<u8>)> = ck
        .keys()
        .map(|name| {
            let loc = ck.locate(name).unwrap();
            let (file, info) = (&ck.files()[loc.file], ck.info_at(loc));
            let bytes = std::fs::read(&file.path).unwrap();
            let s = (file.header.data_start + info.data_offsets.0) as usize;
            let e = (file.header.data_start + info.data_offsets.1) as usize;
            (name.to_owned(), bytes[s..e].to_vec())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn load_and_save_through_simulated_gpus() {
    let dir = tempfile::tempdir().unwrap();
    let (p, mut data) = checkpoint(dir.path(), 24);
    data.sort();
    let total: usize = data.iter().map(|d| d.1.len()).sum();
    // (arguments, environment, the shape the load reports: request bytes or 0 for the
    // derived size, requests in flight, spread).
    let spread_keys =
        [("GDIO_SAFETENSORS_SPREAD_READS", "on"), ("GDIO_SAFETENSORS_REQUEST_BYTES", "20480")];
    type Run<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], u64, u64, bool);
    let runs: [Run<'_>; 6] = [
        (&["--target", "gpu:0", "--sim-gpus", "1"], &[], 0, 2, false),
        (
            &["--target", "gpu", "--sim-gpus", "1", "--request-size", "12K", "--requests", "3"],
            &[],
            12288,
            3,
            false,
        ),
        (&["--target", "gpu:0,1", "--sim-gpus", "2"], &[], 0, 2, false),
        (&["--target", "gpu:1,0", "--sim-gpus", "2", "--spread-reads"], &[], 0, 2, true),
        // The keys, as a Python user would set them, and the options over them.
        (&["--target", "gpu:0,1", "--sim-gpus", "2"], &spread_keys, 20480, 2, true),
        (
            &["--target", "gpu:0,1", "--sim-gpus", "2", "--request-size", "8K"],
            &[("GDIO_SAFETENSORS_REQUESTS_IN_FLIGHT", "5"), spread_keys[1]],
            8192,
            5,
            false,
        ),
    ];
    for (args, env, request, in_flight, spread) in runs {
        let out = gdio()
            .arg("load")
            .arg(&p)
            .args(args)
            .args(["--verify", "--json"])
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let v = json_of(&out);
        let gpus = if args.contains(&"2") { 2 } else { 1 };
        assert_eq!(v["tensors"], 24, "{args:?}");
        assert_eq!(v["views"], 24 * gpus, "{args:?}");
        assert_eq!(v["checkpoint_bytes"], total, "{args:?}");
        assert_eq!(v["bytes"], total * gpus, "{args:?}: every GPU holds every byte");
        assert_eq!(v["verified"], true, "{args:?}: {v}");
        let shape = &v["shape"];
        if request != 0 {
            assert_eq!(shape["request_bytes"], request, "{args:?} {env:?}: {shape}");
        } else {
            assert!(shape["request_bytes"].as_u64().unwrap() >= 1 << 20, "{shape}");
        }
        assert_eq!(shape["requests_in_flight"], in_flight, "{args:?} {env:?}: {shape}");
        assert_eq!(shape["spread_reads"], spread, "{args:?} {env:?}: {shape}");
    }
    // The text output says how the load read.
    let out = gdio()
        .arg("load")
        .arg(&p)
        .args(["--target", "gpu:0,1", "--sim-gpus", "2"])
        .envs(spread_keys)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("read in requests of 20.0 KiB, 2 in flight, each GPU reading a share"),
        "{text}"
    );

    // Resaved from GPU 1's copies: the same tensors, byte for byte.
    let resaved = dir.path().join("again.safetensors");
    let out = gdio()
        .arg("load")
        .arg(&p)
        .args([
            "--target",
            "gpu:1",
            "--sim-gpus",
            "2",
            "--json",
            "--tensors",
            "model.layers.1?.weight",
        ])
        .arg("--resave")
        .arg(&resaved)
        .output()
        .unwrap();
    assert_eq!(json_of(&out)["tensors"], 10);
    // model.layers.1?.weight: one more digit after the 1.
    let picked = |n: &str| {
        let mid = n.strip_prefix("model.layers.1").and_then(|r| r.strip_suffix(".weight"));
        mid.is_some_and(|m| m.len() == 1)
    };
    let want: Vec<_> = data.iter().filter(|d| picked(&d.0)).cloned().collect();
    assert_eq!(want.len(), 10);
    assert_eq!(tensors_of(&resaved), want);

    // `gdio save` through GPU memory, in shards: every tensor back, byte for byte.
    let out_path = dir.path().join("out").join("m.safetensors");
    std::fs::create_dir(out_path.parent().unwrap()).unwrap();
    let out = gdio()
        .arg("save")
        .arg(&p)
        .arg("--out")
        .arg(&out_path)
        .args(["--via", "gpu:0", "--sim-gpus", "1", "--shard-size", "20K", "--json"])
        .output()
        .unwrap();
    let v = json_of(&out);
    assert!(v["files"].as_array().unwrap().len() > 1, "{v}");
    let index = std::path::PathBuf::from(v["index"].as_str().unwrap());
    assert_eq!(tensors_of(&index), data);

    // A GPU the machine does not have: an error naming it, nothing on standard output.
    let out = gdio()
        .arg("load")
        .arg(&p)
        .args(["--target", "gpu:2", "--sim-gpus", "2", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains('2'), "{err}");
}

/// `SIGINT` in the middle of `gdio save` (seen by its temporary file appearing): the save
/// stops, removes its temporary files and writes nothing under the final names, and the tool
/// ends by the signal with a line saying so. Where the signal comes too late (the save done),
/// the files must be whole; tried until one lands mid-save.
#[test]
fn a_signal_mid_save_leaves_no_file_behind() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let mut r = rand::rngs::StdRng::seed_from_u64(5);
    let data: Vec<Vec<u8>> = (0..48)
        .map(|_| {
            let mut d = vec![0u8; 4 << 20];
            r.fill_bytes(&mut d);
            d
        })
        .collect();
    let names: Vec<String> = (0..data.len()).map(|i| format!("w.{i}")).collect();
    let tensors: Vec<SaveTensor<'_>> = data
        .iter()
        .zip(&names)
        .map(|(d, n)| SaveTensor::host(n, Dtype::U8, &[d.len() as u64], d).unwrap())
        .collect();
    let src = dir.path().join("src.safetensors");
    let driver = gdio::Driver::new(gdio::Config::default()).unwrap();
    save(&driver, &tensors, &src, &SaveOptions::default()).unwrap();
    let outdir = dir.path().join("out");
    std::fs::create_dir(&outdir).unwrap();
    let out_path = outdir.join("m.safetensors");
    let leftovers = || -> Vec<String> {
        std::fs::read_dir(&outdir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    let mut cancelled = false;
    for _attempt in 0..8 {
        for name in leftovers() {
            std::fs::remove_file(outdir.join(name)).unwrap();
        }
        let mut cmd = gdio();
        cmd.arg("save")
            .arg(&src)
            .arg("--out")
            .arg(&out_path)
            .args(["--via", "host", "--shard-size", "64M"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        // SAFETY: between fork and exec only `signal`, which is async-signal-safe. A test run
        // in the background inherits SIGINT ignored (the tool then leaves it so, as `nohup`
        // asks); a terminal's Ctrl-C finds it at its default.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            })
        };
        let mut child = cmd.spawn().unwrap();
        let start = std::time::Instant::now();
        let mut signalled = false;
        while start.elapsed() < std::time::Duration::from_secs(60) {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            if leftovers().iter().any(|n| n.contains(".gdio-tmp-")) {
                // SAFETY: kill(2) on our own child's pid.
                unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
                signalled = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        let out = child.wait_with_output().unwrap();
        let left = leftovers();
        assert!(
            !left.iter().any(|n| n.contains(".gdio-tmp-")),
            "temporary files left: {left:?} (status {:?})",
            out.status
        );
        if signalled && out.status.signal() == Some(libc::SIGINT) && left.is_empty() {
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("interrupted by signal 2"), "{err}");
            cancelled = true;
            break;
        }
        // Too late: the save completed, every tensor whole, and the tool still ended by the
        // signal, saying so.
        if !left.is_empty() {
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!signalled || err.contains("it completed"), "{left:?}: {err}");
            let index = outdir.join("m.safetensors.index.json");
            assert_eq!(tensors_of_index(&index).len(), data.len(), "{left:?}");
        }
    }
    assert!(cancelled, "no signal landed mid-save in 8 tries");
}

/// The tensors of a sharded checkpoint, by its index, each checked whole.
fn tensors_of_index(index: &std::path::Path) -> Vec<String> {
    let ck = Checkpoint::open(index).unwrap();
    ck.keys().map(str::to_owned).collect()
}
