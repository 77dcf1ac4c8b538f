//! Configuration layers: defaults < file < environment < code, strict booleans, errors that
//! name the key or variable, and a cufile.json with comments.

use std::sync::Mutex;

use gdio::{Config, DirectIoPolicy, ErrorKind, LoadedConfig, Source};
use serde_json::json;

/// Serializes the one test that touches the process environment with anything else that might.
static ENV: Mutex<()> = Mutex::new(());

fn vars(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

fn entry(l: &LoadedConfig, key: &str) -> (serde_json::Value, Source) {
    let e =
        l.entries().into_iter().find(|e| e.key == key).unwrap_or_else(|| panic!("no entry {key}"));
    (e.value, e.source)
}

#[test]
fn defaults_alone() {
    let l =
        Config::load_from_vars(vars(&[("PATH", "/bin"), ("GDIO_UNRELATED_THING", "x")])).unwrap();
    assert_eq!(l.config(), &Config::default());
    assert!(l.entries().iter().all(|e| e.source == Source::Default));
    assert_eq!(entry(&l, "allow_compat_mode"), (json!(true), Source::Default));
    assert_eq!(entry(&l, "gds_rdma_write_support"), (json!(true), Source::Default));
    assert_eq!(entry(&l, "fs.wekafs.rdma_write_support"), (json!(false), Source::Default));
    assert_eq!(entry(&l, "fs.lustre.posix_gds_min_kb"), (json!(0), Source::Default));
    assert!(l.file().is_none());
}

#[test]
fn file_then_env_then_code() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("gdio.json");
    std::fs::write(
        &p,
        r#"{
            // gdio's own flat form
            "allow_compat_mode": false,
            "threads": 3,
            "task_size": 65536,
            "direct_io": "on",
            "fs": {"lustre": {"posix_gds_min_kb": 64}}
        }"#,
    )
    .unwrap();
    let path = p.to_str().unwrap();
    let mut l = Config::load_from_vars(vars(&[
        ("GDIO_CONFIG", path),
        ("GDIO_THREADS", "5"),
        ("GDIO_FORCE_COMPAT_MODE", "ON"),
    ]))
    .unwrap();
    assert_eq!(l.file(), Some(p.as_path()));
    assert_eq!(entry(&l, "allow_compat_mode"), (json!(false), Source::File));
    assert_eq!(entry(&l, "threads"), (json!(5), Source::Env));
    assert_eq!(entry(&l, "task_size"), (json!(65536), Source::File));
    assert_eq!(entry(&l, "force_compat_mode"), (json!(true), Source::Env));
    assert_eq!(entry(&l, "fs.lustre.posix_gds_min_kb"), (json!(64), Source::File));
    assert_eq!(l.config().direct_io, DirectIoPolicy::On);
    let origin = l.entries().into_iter().find(|e| e.key == "threads").unwrap().origin;
    assert_eq!(origin.as_deref(), Some("GDIO_THREADS"));

    l.set("threads", 7).unwrap();
    l.set("fs.wekafs.rdma_write_support", true).unwrap();
    assert_eq!(entry(&l, "threads"), (json!(7), Source::Code));
    assert_eq!(entry(&l, "fs.wekafs.rdma_write_support"), (json!(true), Source::Code));
    assert_eq!(l.config().threads, 7);

    // Bad values from code are refused and change nothing.
    let before = l.clone();
    let e = l.set("threads", 0).unwrap_err();
    assert!(e.to_string().contains("threads"), "{e}");
    let e = l.set("threads", "many").unwrap_err();
    assert!(e.to_string().contains("threads") && e.to_string().contains("many"), "{e}");
    let e = l.set("no_such_key", true).unwrap_err();
    assert!(e.to_string().contains("no_such_key"), "{e}");
    assert_eq!(l, before);

    // JSON output keeps the sources.
    let v = serde_json::to_value(l.entries()).unwrap();
    assert!(v.as_array().unwrap().iter().any(|e| e["key"] == "threads" && e["source"] == "code"));
}

#[test]
fn cufile_json_sample_with_comments() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cufile.json");
    std::fs::write(
        &p,
        r#"{
    // NOTE : Application can override custom configuration via export CUFILE_ENV_PATH_JSON=<filepath>
    // e.g : export CUFILE_ENV_PATH_JSON="/home/<xxx>/cufile.json"
    "logging": {
        // log directory, if not enabled will create log file under current working directory
        //"dir": "/home/<xxxx>",
        "level": "ERROR"
    },
    "profile": { "nvtx": false, "cufile_stats": 0 },
    "execution" : {
        "max_io_queue_depth": 128,
        "max_io_threads": 4,
        "parallel_io" : true,
        "min_io_threshold_size_kb" : 8192,
        "max_request_parallelism" : 4
    },
    "properties": {
        "max_direct_io_size_kb" : 16384,
        "max_device_cache_size_kb" : 131072,
        "max_device_pinned_mem_size_kb" : 33554432,
        "use_poll_mode" : false,
        "poll_mode_max_size_kb": 4,
        "use_pci_p2pdma": true,
        "allow_compat_mode": true,
        "gds_rdma_write_support": false,
        "io_batchsize": 128,
        "io_priority": "default",
        "rdma_dev_addr_list": [ ],
        "rdma_load_balancing_policy": "RoundRobin",
        "rdma_dynamic_routing": true,
        "rdma_dynamic_routing_order": [ "SYS_MEM" ]
    },
    "fs": {
        "generic": {
            // for unaligned writes, setting it to true will use POSIX
            "posix_unaligned_writes" : true
        },
        "lustre": { "posix_gds_min_kb" : 128 },
        "beegfs": { "posix_gds_min_kb" : 0 },
        "gpfs": { "gds_write_support": false, "gds_async_support": true },
        "weka": { "rdma_write_support" : true }
    },
    "denylist": { "drivers": [ ], "devices": [ ], "mounts": [ ], "filesystems": [ ] },
    "miscellaneous": { "api_check_aggressive": false }
}"#,
    )
    .unwrap();
    let l = Config::load_from_vars(vars(&[("CUFILE_ENV_PATH_JSON", p.to_str().unwrap())])).unwrap();
    let c = l.config();
    assert!(
        c.use_pci_p2pdma
            && c.allow_compat_mode
            && !c.gds_rdma_write_support
            && c.posix_unaligned_writes
    );
    assert!(c.rdma_dynamic_routing);
    assert_eq!(c.rdma_dynamic_routing_order, vec!["SYS_MEM".to_owned()]);
    // max_io_threads sizes NVIDIA's pool: gdio keeps its own worker count.
    assert_eq!(c.threads, Config::default().threads);
    assert_eq!(c.fs_config("lustre").posix_gds_min_kb, 128);
    assert!(c.fs_config("wekafs").rdma_write_support);
    assert_eq!(entry(&l, "fs.wekafs.rdma_write_support"), (json!(true), Source::File));
    assert_eq!(entry(&l, "posix_unaligned_writes"), (json!(true), Source::File));
    assert_eq!(entry(&l, "hot_cache_fraction").1, Source::Default);

    // GDIO_CONFIG beats CUFILE_ENV_PATH_JSON.
    let q = dir.path().join("gdio.json");
    std::fs::write(&q, r#"{"threads": 9}"#).unwrap();
    let l = Config::load_from_vars(vars(&[
        ("CUFILE_ENV_PATH_JSON", p.to_str().unwrap()),
        ("GDIO_CONFIG", q.to_str().unwrap()),
    ]))
    .unwrap();
    assert_eq!(l.config().threads, 9);
    assert!(!l.config().posix_unaligned_writes);
}

#[test]
fn file_errors_name_the_key_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str)] = &[
        (r#"{"allow_compat": true}"#, "unknown key allow_compat"),
        (r#"{"allow_compat_mod": true}"#, "did you mean allow_compat_mode?"),
        (
            r#"{"properties": {"allow_compat_mod": true}}"#,
            "unknown key properties.allow_compat_mod",
        ),
        (r#"{"fs": {"lustre": {"posix_gds_min": 1}}}"#, "unknown key fs.lustre.posix_gds_min"),
        (r#"{"execution": {"max_threads": 1}}"#, "unknown key execution.max_threads"),
        (r#"{"allow_compat_mode": "yes"}"#, "key allow_compat_mode: must be true or false"),
        (
            r#"{"threads": -1}"#,
            "key threads: must be a positive integer up to 1024, not -1 (a negative value)",
        ),
        (
            r#"{"properties": {"force_compat_mode": 1}}"#,
            "key properties.force_compat_mode: must be true or false",
        ),
        (r#"{"rdma_dynamic_routing_order": ["RAM"]}"#, "key rdma_dynamic_routing_order"),
        (r#"{"direct_io": "sometimes"}"#, "key direct_io"),
        (r#"{"hot_cache_fraction": 2}"#, "key hot_cache_fraction"),
        (r#"{"threads": 1,}"#, "not valid JSON at line 1"),
        (r#"[1]"#, "must be a JSON object"),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let p = dir.path().join(format!("c{i}.json"));
        std::fs::write(&p, text).unwrap();
        let e = Config::load_from_vars(vars(&[("GDIO_CONFIG", p.to_str().unwrap())])).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config);
        let s = e.to_string();
        assert!(s.contains(want) && s.contains(p.to_str().unwrap()), "{text}: {s}");
    }
    let missing = dir.path().join("missing.json");
    let e =
        Config::load_from_vars(vars(&[("GDIO_CONFIG", missing.to_str().unwrap())])).unwrap_err();
    let s = e.to_string();
    assert!(s.contains("missing.json") && s.contains("GDIO_CONFIG"), "{s}");
}

#[test]
fn env_booleans_are_strict_and_vendor_variables_mean_what_they_document() {
    for (text, want) in [
        ("true", true),
        ("FALSE", false),
        ("1", true),
        ("0", false),
        ("Yes", true),
        ("no", false),
        ("on", true),
        ("OFF", false),
    ] {
        let l = Config::load_from_vars(vars(&[("HIPFILE_ALLOW_COMPAT_MODE", text)])).unwrap();
        assert_eq!(l.config().allow_compat_mode, want, "{text}");
        assert_eq!(l.source("allow_compat_mode"), Source::Env);
    }
    for bad in ["maybe", "2", "", "tru"] {
        for var in [
            "HIPFILE_ALLOW_COMPAT_MODE",
            "CUFILE_FORCE_COMPAT_MODE",
            "GDIO_UNSUPPORTED_FILE_SYSTEMS",
            "GDIO_FS_WEKAFS_RDMA_WRITE_SUPPORT",
        ] {
            let e = Config::load_from_vars(vars(&[(var, bad)])).unwrap_err();
            let s = e.to_string();
            assert!(s.contains(var) && s.contains(&format!("{bad:?}")), "{var}={bad}: {s}");
        }
    }
    let l = Config::load_from_vars(vars(&[
        ("HIPFILE_FORCE_COMPAT_MODE", "true"),
        ("HIPFILE_UNSUPPORTED_FILE_SYSTEMS", "1"),
        ("CUFILE_ALLOW_COMPAT_MODE", "false"),
    ]))
    .unwrap();
    assert!(
        l.config().force_compat_mode
            && l.config().unsupported_file_systems
            && !l.config().allow_compat_mode
    );
    // GDIO_ beats the vendor variables; HIPFILE_ beats CUFILE_.
    let l = Config::load_from_vars(vars(&[
        ("CUFILE_ALLOW_COMPAT_MODE", "false"),
        ("HIPFILE_ALLOW_COMPAT_MODE", "true"),
    ]))
    .unwrap();
    assert!(l.config().allow_compat_mode);
    let l = Config::load_from_vars(vars(&[
        ("HIPFILE_ALLOW_COMPAT_MODE", "true"),
        ("GDIO_ALLOW_COMPAT_MODE", "0"),
    ]))
    .unwrap();
    assert!(!l.config().allow_compat_mode);
    // Numbers and lists.
    let l = Config::load_from_vars(vars(&[
        ("GDIO_TASK_SIZE", "1048576"),
        ("GDIO_HOT_CACHE_FRACTION", "0.25"),
        ("GDIO_RDMA_DYNAMIC_ROUTING_ORDER", "SYS_MEM,GPU_MEM"),
        ("GDIO_FS_BEEGFS_POSIX_GDS_MIN_KB", "32"),
        ("GDIO_DIRECT_IO", "off"),
    ]))
    .unwrap();
    let c = l.config();
    assert_eq!(
        (c.task_size, c.hot_cache_fraction, c.direct_io),
        (1 << 20, 0.25, DirectIoPolicy::Off)
    );
    assert_eq!(c.rdma_dynamic_routing_order, vec!["SYS_MEM".to_owned(), "GPU_MEM".to_owned()]);
    assert_eq!(c.fs_config("beegfs").posix_gds_min_kb, 32);
    let e = Config::load_from_vars(vars(&[("GDIO_THREADS", "lots")])).unwrap_err();
    assert!(e.to_string().contains("GDIO_THREADS") && e.to_string().contains("lots"));
    let e = Config::load_from_vars(vars(&[("GDIO_THREADS", "0")])).unwrap_err();
    assert!(e.to_string().contains("threads"));
}

#[test]
fn load_reads_the_process_environment() {
    let _g = ENV.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("gdio.json");
    std::fs::write(&p, r#"{"threads": 6, "posix_unaligned_writes": true}"#).unwrap();
    std::env::set_var("GDIO_CONFIG", &p);
    std::env::set_var("GDIO_THREADS", "2");
    let l = Config::load();
    std::env::remove_var("GDIO_CONFIG");
    std::env::remove_var("GDIO_THREADS");
    let l = l.unwrap();
    assert_eq!(l.config().threads, 2);
    assert!(l.config().posix_unaligned_writes);
    assert_eq!(l.source("threads"), Source::Env);
    assert_eq!(l.source("posix_unaligned_writes"), Source::File);
}

#[test]
fn a_config_built_in_code_reports_its_changes_as_code() {
    let l =
        LoadedConfig::from(Config { threads: 11, force_compat_mode: true, ..Config::default() });
    assert_eq!(l.source("threads"), Source::Code);
    assert_eq!(l.source("force_compat_mode"), Source::Code);
    assert_eq!(l.source("allow_compat_mode"), Source::Default);
}

#[test]
fn cufile_json_errors_name_the_key_the_file_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cufile.json");
    std::fs::write(&p, r#"{"fs": {"generic": {"posix_unaligned_writes": "maybe"}}}"#).unwrap();
    let e =
        Config::load_from_vars(vars(&[("CUFILE_ENV_PATH_JSON", p.to_str().unwrap())])).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
    let s = e.to_string();
    assert!(
        s.contains("fs.generic.posix_unaligned_writes") && s.contains(p.to_str().unwrap()),
        "{s}"
    );
    assert!(s.contains("maybe"), "{s}");
}

#[test]
fn numeric_values_are_bounded_from_every_layer() {
    // Environment: the variable, the value and the range.
    let big = u64::MAX.to_string();
    for (var, val) in [
        ("GDIO_TASK_SIZE", big.as_str()),
        ("GDIO_TASK_SIZE", "1e30"),
        ("GDIO_THREADS", "0"),
        ("GDIO_BOUNCE_BUFFER_SIZE", "0"),
        ("GDIO_BOUNCE_BUFFERS_PER_THREAD", "1"),
        ("GDIO_FS_LUSTRE_POSIX_GDS_MIN_KB", big.as_str()),
        ("GDIO_HOT_CACHE_FRACTION", "1.5"),
    ] {
        let e = Config::load_from_vars(vars(&[(var, val)])).unwrap_err().to_string();
        assert!(e.contains(var) && e.contains(val), "{var}={val}: {e}");
    }
    // File.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("gdio.json");
    std::fs::write(&p, format!(r#"{{"task_size": {}}}"#, usize::MAX)).unwrap();
    let e = Config::load_from_vars(vars(&[("GDIO_CONFIG", p.to_str().unwrap())]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("key task_size") && e.contains(p.to_str().unwrap()), "{e}");
    // Code, through LoadedConfig::set: refused, config unchanged.
    let mut l = LoadedConfig::defaults();
    let e = l.set("task_size", usize::MAX as u64).unwrap_err().to_string();
    assert!(e.contains("code") && e.contains("task_size") && e.contains("up to 1073741824"), "{e}");
    assert_eq!(l.config(), &Config::default());
    // Code, through a Config literal: the driver refuses it before any I/O can divide by zero.
    let c = Config { task_size: usize::MAX, ..Config::default() };
    let e = gdio::Driver::with_runtime(
        c,
        std::sync::Arc::new(gdio::gpu::sim::SimRuntime::new(1, std::time::Duration::ZERO)),
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
    assert!(e.to_string().contains("task_size"), "{e}");
}

#[test]
fn config_file_that_is_a_fifo_or_device_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.json");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let fifo = fifo.to_str().unwrap().to_owned();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r: Vec<String> = [fifo.as_str(), "/dev/zero", "/dev/urandom"]
            .iter()
            .map(|p| Config::load_from_vars(vars(&[("GDIO_CONFIG", p)])).unwrap_err().to_string())
            .collect();
        let _ = tx.send(r);
    });
    let r = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("reading a FIFO or device as the config file blocked or ran away");
    assert!(r[0].contains("FIFO") && r[0].contains("GDIO_CONFIG"), "{}", r[0]);
    assert!(r[1].contains("character device") && r[1].contains("/dev/zero"), "{}", r[1]);
    assert!(r[2].contains("character device"), "{}", r[2]);
}

#[test]
fn unknown_gdio_variables_are_reported_with_a_suggestion() {
    let l =
        Config::load_from_vars(vars(&[("GDIO_TASKSIZE", "65536"), ("GDIO_THREADS", "4")])).unwrap();
    let u = l.unknown_env();
    assert_eq!(u.len(), 1);
    assert_eq!(u[0].var, "GDIO_TASKSIZE");
    assert_eq!(u[0].suggestion.as_deref(), Some("GDIO_TASK_SIZE"));
    // The misspelt value changed nothing.
    assert_eq!(l.config().task_size, Config::default().task_size);
}

#[test]
fn io_engine_from_every_layer_and_bad_values_named() {
    use gdio::IoEngine;
    let l = Config::load_from_vars(vars(&[])).unwrap();
    assert_eq!(entry(&l, "io_engine"), (json!("auto"), Source::Default));
    assert_eq!(l.config().io_engine, IoEngine::Auto);

    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("gdio.json");
    std::fs::write(&p, r#"{"io_engine": "io_uring"}"#).unwrap();
    let path = p.to_str().unwrap();
    let l = Config::load_from_vars(vars(&[("GDIO_CONFIG", path)])).unwrap();
    assert_eq!(entry(&l, "io_engine"), (json!("io_uring"), Source::File));
    assert_eq!(l.config().io_engine, IoEngine::IoUring);

    let mut l =
        Config::load_from_vars(vars(&[("GDIO_CONFIG", path), ("GDIO_IO_ENGINE", " PREAD ")]))
            .unwrap();
    assert_eq!(entry(&l, "io_engine"), (json!("pread"), Source::Env));
    assert_eq!(l.config().io_engine, IoEngine::Pread);
    l.set("io_engine", "auto").unwrap();
    assert_eq!(entry(&l, "io_engine"), (json!("auto"), Source::Code));

    // Bad values name the key, the value and where it came from; the config is unchanged.
    let e = Config::load_from_vars(vars(&[("GDIO_IO_ENGINE", "aio")])).unwrap_err();
    let s = e.to_string();
    assert_eq!(e.kind(), ErrorKind::Config);
    assert!(s.contains("GDIO_IO_ENGINE") && s.contains("aio") && s.contains("io_uring"), "{s}");
    std::fs::write(&p, r#"{"io_engine": true}"#).unwrap();
    let e = Config::load_from_vars(vars(&[("GDIO_CONFIG", path)])).unwrap_err();
    let s = e.to_string();
    assert!(s.contains("key io_engine") && s.contains("pread"), "{s}");
    let before = l.config().clone();
    let s = l.set("io_engine", "uring").unwrap_err().to_string();
    assert!(s.contains("io_engine") && s.contains("uring"), "{s}");
    assert_eq!(l.config(), &before);
    assert_eq!("io-uring".parse::<IoEngine>(), Ok(IoEngine::IoUring));
}

#[test]
fn sizes_are_taken_as_set_and_the_engine_rounds_them_to_pages() {
    // KvikIO takes any positive size; the engine's tasks are at least a page (a task size of
    // 1 byte would otherwise make a 1 GiB request into a billion tasks) and its bounce buffers
    // whole pages.
    for (task, bounce, task_bytes, bounce_bytes) in [
        (1, 1, 4096, 4096),
        (199, 1000, 4096, 4096),
        (4097, 4097, 4097, 8192),
        (8 << 20, 4 << 20, 8 << 20, 4 << 20),
    ] {
        let mut l = LoadedConfig::defaults();
        l.set("task_size", task as u64).unwrap();
        l.set("bounce_buffer_size", bounce as u64).unwrap();
        let c = l.config();
        assert_eq!((c.task_size, c.bounce_buffer_size), (task, bounce));
        assert_eq!((c.task_bytes(), c.bounce_buffer_bytes()), (task_bytes, bounce_bytes));
    }
}
