//! cuFile's parameter API (`cuFileGet/SetParameter*`): the values, their ranges, and how they
//! are layered at open — defaults < the cuFile JSON file < `CUFILE_*` variables < values staged
//! with `cuFileSetParameter*` before open. The values gdio itself uses (compat mode, worker
//! threads, P2PDMA) go into gdio's [`LoadedConfig`] as set in code.

use serde_json::Value;

use gdio::LoadedConfig;

/// `CUFileSizeTConfigParameter_t` count.
pub const N_SIZE: usize = 12;
/// `CUFileBoolConfigParameter_t` count.
pub const N_BOOL: usize = 12;
/// `CUFileStringConfigParameter_t` count.
pub const N_STRING: usize = 3;

/// SizeT parameter numbers.
pub mod size {
    #![allow(missing_docs)]
    pub const PROFILE_STATS: usize = 0;
    pub const MAX_IO_QUEUE_DEPTH: usize = 1;
    pub const MAX_IO_THREADS: usize = 2;
    pub const MIN_IO_THRESHOLD_SIZE_KB: usize = 3;
    pub const MAX_REQUEST_PARALLELISM: usize = 4;
    pub const MAX_DIRECT_IO_SIZE_KB: usize = 5;
    pub const MAX_DEVICE_CACHE_SIZE_KB: usize = 6;
    pub const PER_BUFFER_CACHE_SIZE_KB: usize = 7;
    pub const MAX_DEVICE_PINNED_MEM_SIZE_KB: usize = 8;
    pub const IO_BATCHSIZE: usize = 9;
    pub const POLLTHRESHOLD_SIZE_KB: usize = 10;
    pub const BATCH_IO_TIMEOUT_MS: usize = 11;
}

/// Bool parameter numbers.
pub mod flag {
    #![allow(missing_docs)]
    pub const USE_POLL_MODE: usize = 0;
    pub const ALLOW_COMPAT_MODE: usize = 1;
    pub const FORCE_COMPAT_MODE: usize = 2;
    pub const FS_MISC_API_CHECK_AGGRESSIVE: usize = 3;
    pub const EXECUTION_PARALLEL_IO: usize = 4;
    pub const PROFILE_NVTX: usize = 5;
    pub const ALLOW_SYSTEM_MEMORY: usize = 6;
    pub const USE_PCIP2PDMA: usize = 7;
    pub const PREFER_IO_URING: usize = 8;
    pub const FORCE_ODIRECT_MODE: usize = 9;
    pub const SKIP_TOPOLOGY_DETECTION: usize = 10;
    pub const STREAM_MEMOPS_BYPASS: usize = 11;
}

/// String parameter numbers.
pub mod string {
    #![allow(missing_docs)]
    pub const LOGGING_LEVEL: usize = 0;
    pub const ENV_LOGFILE_PATH: usize = 1;
    pub const LOG_DIR: usize = 2;
}

/// Defaults in effect after open (NVIDIA 1.15.1 on the H200 machine, cufile-abi.md §4.3).
const SIZE_DEFAULTS: [u64; N_SIZE] = [0, 128, 4, 8192, 4, 16384, 131072, 1024, 33554432, 128, 4, 5];

/// `cuFileGetParameterMinMaxValue` ranges (NVIDIA 1.15.1, §4.1); `None`: no range (5022).
/// The two GPU-dependent ones are bounded by the 32-bit field of `CUfileDrvProps_t`.
pub const SIZE_RANGES: [Option<(u64, u64)>; N_SIZE] = [
    None,
    Some((1, 256)),
    Some((0, 32)),
    Some((4, 4_294_967_295)),
    Some((0, 8)),
    Some((64, 16384)),
    Some((0, 4_294_967_295)),
    Some((64, 16384)),
    Some((64, 4_294_967_295)),
    Some((1, 256)),
    Some((4, 18_014_398_509_481_980)),
    Some((1, 1000)),
];

/// Range a SizeT parameter may be set to (PROFILE_STATS: the stats levels 0–3).
pub fn settable_range(param: usize) -> Option<(u64, u64)> {
    match param {
        size::PROFILE_STATS => Some((0, 3)),
        p => SIZE_RANGES.get(p).copied().flatten(),
    }
}

const BOOL_DEFAULTS: [bool; N_BOOL] =
    [false, true, false, false, true, false, true, false, false, false, false, false];

/// Default POSIX pool slabs: sizes in KiB and counts.
const SLAB_SIZES: [u64; 3] = [4, 1024, 16384];
const SLAB_COUNTS: [u64; 3] = [128, 64, 64];
/// Most slab entries accepted.
pub const MAX_SLABS: usize = 16;

/// Logging levels, quietest last.
pub const LOG_LEVELS: &[&str] = &["TRACE", "DEBUG", "INFO", "NOTICE", "WARN", "ERROR", "FATAL"];

/// Every parameter value.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// SizeT values.
    pub sizes: [u64; N_SIZE],
    /// Which SizeT values the program itself set with `cuFileSetParameterSizeT` (not the
    /// defaults, not a cufile.json: NVIDIA's stock file sets values for NVIDIA's own library).
    pub staged: [bool; N_SIZE],
    /// Bool values.
    pub bools: [bool; N_BOOL],
    /// String values (`None`: unset).
    pub strings: [Option<String>; N_STRING],
    /// POSIX pool slab sizes (KiB).
    pub slab_sizes: Vec<u64>,
    /// POSIX pool slab counts.
    pub slab_counts: Vec<u64>,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            sizes: SIZE_DEFAULTS,
            staged: [false; N_SIZE],
            bools: BOOL_DEFAULTS,
            strings: [Some("ERROR".into()), None, None],
            slab_sizes: SLAB_SIZES.to_vec(),
            slab_counts: SLAB_COUNTS.to_vec(),
        }
    }
}

/// Values staged with `cuFileSetParameter*` before open.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Staged {
    /// SizeT values.
    pub sizes: [Option<u64>; N_SIZE],
    /// Bool values.
    pub bools: [Option<bool>; N_BOOL],
    /// String values.
    pub strings: [Option<String>; N_STRING],
    /// Slab arrays.
    pub slabs: Option<(Vec<u64>, Vec<u64>)>,
}

impl Staged {
    /// What `cuFileGetParameter*` shows before open: staged values over the defaults.
    pub fn preview(&self) -> Params {
        let mut p = Params::default();
        self.apply(&mut p);
        p
    }

    fn apply(&self, p: &mut Params) {
        for ((v, e), s) in p.sizes.iter_mut().zip(&mut p.staged).zip(&self.sizes) {
            if let Some(s) = s {
                *v = *s;
                *e = true;
            }
        }
        for (v, s) in p.bools.iter_mut().zip(&self.bools) {
            if let Some(s) = s {
                *v = *s;
            }
        }
        for (v, s) in p.strings.iter_mut().zip(&self.strings) {
            if let Some(s) = s {
                *v = Some(s.clone());
            }
        }
        if let Some((s, c)) = &self.slabs {
            p.slab_sizes = s.clone();
            p.slab_counts = c.clone();
        }
    }
}

fn json_u64(v: &Value, path: &[&str]) -> Option<u64> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_u64()
}

fn json_bool(v: &Value, path: &[&str]) -> Option<bool> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_bool()
}

fn json_str(v: &Value, path: &[&str]) -> Option<String> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_str().map(str::to_owned)
}

/// Reads a cuFile JSON file (with `//` comments) into a value; `None` if unreadable (a FIFO,
/// device or file over 1 MiB is refused without blocking: `gdio::config::json::read_text`).
pub fn read_json(path: &std::path::Path) -> Option<Value> {
    let text = gdio::config::json::read_text(path).ok()?;
    serde_json::from_str(&gdio::config::json::strip_comments(&text)).ok()
}

impl Params {
    /// Applies the keys of a cufile.json that map to parameters.
    pub fn apply_json(&mut self, j: &Value) {
        let sizes: [(usize, &[&str]); 11] = [
            (size::PROFILE_STATS, &["profile", "cufile_stats"]),
            (size::MAX_IO_QUEUE_DEPTH, &["execution", "max_io_queue_depth"]),
            (size::MAX_IO_THREADS, &["execution", "max_io_threads"]),
            (size::MIN_IO_THRESHOLD_SIZE_KB, &["execution", "min_io_threshold_size_kb"]),
            (size::MAX_REQUEST_PARALLELISM, &["execution", "max_request_parallelism"]),
            (size::MAX_DIRECT_IO_SIZE_KB, &["properties", "max_direct_io_size_kb"]),
            (size::MAX_DEVICE_CACHE_SIZE_KB, &["properties", "max_device_cache_size_kb"]),
            (size::PER_BUFFER_CACHE_SIZE_KB, &["properties", "per_buffer_cache_size_kb"]),
            (size::MAX_DEVICE_PINNED_MEM_SIZE_KB, &["properties", "max_device_pinned_mem_size_kb"]),
            (size::IO_BATCHSIZE, &["properties", "io_batchsize"]),
            (size::BATCH_IO_TIMEOUT_MS, &["properties", "batch_io_timeout_msecs"]),
        ];
        for (i, path) in sizes {
            if let Some(v) = json_u64(j, path) {
                self.sizes[i] = v;
            }
        }
        if let Some(v) = json_u64(j, &["properties", "poll_mode_max_size_kb"]) {
            self.sizes[size::POLLTHRESHOLD_SIZE_KB] = v;
        }
        let bools: [(usize, &[&str]); 11] = [
            (flag::USE_POLL_MODE, &["properties", "use_poll_mode"]),
            (flag::ALLOW_COMPAT_MODE, &["properties", "allow_compat_mode"]),
            (flag::FORCE_COMPAT_MODE, &["properties", "force_compat_mode"]),
            (flag::FS_MISC_API_CHECK_AGGRESSIVE, &["fs", "misc", "api_check_aggressive"]),
            (flag::EXECUTION_PARALLEL_IO, &["execution", "parallel_io"]),
            (flag::PROFILE_NVTX, &["profile", "nvtx"]),
            (flag::ALLOW_SYSTEM_MEMORY, &["properties", "allow_system_memory"]),
            (flag::USE_PCIP2PDMA, &["properties", "use_pci_p2pdma"]),
            (flag::PREFER_IO_URING, &["properties", "prefer_io_uring"]),
            (flag::FORCE_ODIRECT_MODE, &["properties", "force_odirect_mode"]),
            (flag::SKIP_TOPOLOGY_DETECTION, &["properties", "skip_topology_detection"]),
        ];
        for (i, path) in bools {
            if let Some(v) = json_bool(j, path) {
                self.bools[i] = v;
            }
        }
        if let Some(v) = json_bool(j, &["properties", "stream_memops_bypass"]) {
            self.bools[flag::STREAM_MEMOPS_BYPASS] = v;
        }
        if let Some(v) = json_str(j, &["logging", "level"]) {
            self.strings[string::LOGGING_LEVEL] = Some(v);
        }
        if let Some(v) = json_str(j, &["logging", "dir"]) {
            self.strings[string::LOG_DIR] = Some(v);
        }
        let arr = |k: &str| -> Option<Vec<u64>> {
            j.get("properties")?.get(k)?.as_array()?.iter().map(Value::as_u64).collect()
        };
        if let (Some(s), Some(c)) = (arr("posix_pool_slab_size_kb"), arr("posix_pool_slab_count")) {
            if !s.is_empty() && s.len() == c.len() && s.len() <= MAX_SLABS {
                self.slab_sizes = s;
                self.slab_counts = c;
            }
        }
    }

    /// Applies the `CUFILE_*` variables NVIDIA's library reads that map to parameters.
    pub fn apply_env(&mut self, var: impl Fn(&str) -> Option<String>) {
        let b = |name: &str| var(name).and_then(|v| gdio::config::env::parse_bool(name, &v).ok());
        let bools = [
            ("CUFILE_ALLOW_COMPAT_MODE", flag::ALLOW_COMPAT_MODE),
            ("CUFILE_FORCE_COMPAT_MODE", flag::FORCE_COMPAT_MODE),
            ("CUFILE_USE_PCIP2PDMA", flag::USE_PCIP2PDMA),
            ("CUFILE_SKIP_TOPOLOGY_DETECTION", flag::SKIP_TOPOLOGY_DETECTION),
            ("CUFILE_STREAM_MEMOPS_BYPASS", flag::STREAM_MEMOPS_BYPASS),
            ("CUFILE_NVTX", flag::PROFILE_NVTX),
        ];
        for (name, i) in bools {
            if let Some(v) = b(name) {
                self.bools[i] = v;
            }
        }
        let sizes = [
            ("CUFILE_MAX_DEVICE_CACHE_SIZE", size::MAX_DEVICE_CACHE_SIZE_KB),
            ("CUFILE_PER_BUFFER_CACHE_SIZE", size::PER_BUFFER_CACHE_SIZE_KB),
        ];
        for (name, i) in sizes {
            if let Some(v) = var(name).and_then(|v| v.trim().parse::<u64>().ok()) {
                self.sizes[i] = v;
            }
        }
        if let Some(v) = var("CUFILE_LOGGING_LEVEL") {
            self.strings[string::LOGGING_LEVEL] = Some(v);
        }
        if let Some(v) = var("CUFILE_LOGFILE_PATH") {
            self.strings[string::ENV_LOGFILE_PATH] = Some(v);
        }
    }

    /// Applies staged values (they win over file and environment).
    pub fn apply_staged(&mut self, s: &Staged) {
        s.apply(self);
    }

    /// Puts the values gdio's own engine uses into its configuration (as set in code).
    pub fn apply_to_config(&self, loaded: &mut LoadedConfig) -> Vec<String> {
        let mut problems = Vec::new();
        let mut set = |key: &str, v: Value| {
            if let Err(e) = loaded.set(key, v) {
                problems.push(format!("{key}: {e}"));
            }
        };
        set("allow_compat_mode", self.bools[flag::ALLOW_COMPAT_MODE].into());
        set("force_compat_mode", self.bools[flag::FORCE_COMPAT_MODE].into());
        set("use_pci_p2pdma", self.bools[flag::USE_PCIP2PDMA].into());
        // `max_io_threads` sizes NVIDIA's own thread pool (its stock /etc/cufile.json says 4,
        // which capped gdio's engine at 4 workers: 0.6 × the same reads through the Rust API on
        // the H200). gdio's engine keeps its measured `threads` (GDIO_THREADS or GDIO_CONFIG
        // change it) unless the program itself sets `max_io_threads` with
        // cuFileSetParameterSizeT.
        let threads = self.sizes[size::MAX_IO_THREADS];
        if threads > 0 && self.staged[size::MAX_IO_THREADS] {
            set("threads", threads.into());
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_apply_in_order() {
        let j: Value = serde_json::from_str(&gdio::config::json::strip_comments(
            r#"{ // comment
              "logging": {"level": "INFO"},
              "execution": {"max_io_threads": 6},
              "properties": {"max_direct_io_size_kb": 1024, "allow_compat_mode": false,
                             "posix_pool_slab_size_kb": [4, 64], "posix_pool_slab_count": [8, 2]}}"#,
        ))
        .unwrap();
        let mut p = Params::default();
        p.apply_json(&j);
        assert_eq!(p.sizes[size::MAX_DIRECT_IO_SIZE_KB], 1024);
        assert_eq!(p.sizes[size::MAX_IO_THREADS], 6);
        assert!(!p.bools[flag::ALLOW_COMPAT_MODE]);
        assert_eq!(p.slab_sizes, vec![4, 64]);
        p.apply_env(|k| (k == "CUFILE_ALLOW_COMPAT_MODE").then(|| "true".to_owned()));
        assert!(p.bools[flag::ALLOW_COMPAT_MODE]);
        assert_eq!(p.strings[string::LOGGING_LEVEL].as_deref(), Some("INFO"));
        let mut s = Staged::default();
        s.sizes[size::MAX_DIRECT_IO_SIZE_KB] = Some(64);
        p.apply_staged(&s);
        assert_eq!(p.sizes[size::MAX_DIRECT_IO_SIZE_KB], 64);
        let mut loaded = LoadedConfig::defaults();
        let ours = loaded.config().threads;
        assert!(p.apply_to_config(&mut loaded).is_empty());
        assert_eq!(loaded.config().threads, ours, "a cufile.json sizes NVIDIA's pool, not gdio's");
        assert!(loaded.config().allow_compat_mode);
    }

    #[test]
    fn default_max_io_threads_leaves_gdio_threads_alone() {
        // NVIDIA's default (4) is not a choice the user made: gdio keeps its own worker count.
        let p = Params::default();
        assert_eq!(p.sizes[size::MAX_IO_THREADS], 4);
        let mut loaded = LoadedConfig::defaults();
        let ours = loaded.config().threads;
        assert!(p.apply_to_config(&mut loaded).is_empty());
        assert_eq!(loaded.config().threads, ours);
        // A value staged with cuFileSetParameterSizeT is a choice: it applies.
        let mut p = Params::default();
        let mut s = Staged::default();
        s.sizes[size::MAX_IO_THREADS] = Some(3);
        p.apply_staged(&s);
        let mut loaded = LoadedConfig::defaults();
        assert!(p.apply_to_config(&mut loaded).is_empty());
        assert_eq!(loaded.config().threads, 3);
    }

    /// Every `CUFILE_*` variable read at open lands in its parameter; a value that does not
    /// parse leaves the parameter as it was; the ones gdio's engine acts on reach its config.
    #[test]
    fn every_variable_lands_in_its_parameter_and_bad_values_change_nothing() {
        let env: std::collections::HashMap<&str, &str> = [
            ("CUFILE_ALLOW_COMPAT_MODE", "false"),
            ("CUFILE_FORCE_COMPAT_MODE", "true"),
            ("CUFILE_USE_PCIP2PDMA", "1"),
            ("CUFILE_SKIP_TOPOLOGY_DETECTION", "yes"),
            ("CUFILE_STREAM_MEMOPS_BYPASS", "true"),
            ("CUFILE_NVTX", "on"),
            ("CUFILE_MAX_DEVICE_CACHE_SIZE", " 4096 "),
            ("CUFILE_PER_BUFFER_CACHE_SIZE", "2048"),
            ("CUFILE_LOGGING_LEVEL", "TRACE"),
            ("CUFILE_LOGFILE_PATH", "/tmp/x.log"),
        ]
        .into_iter()
        .collect();
        let mut p = Params::default();
        p.apply_env(|k| env.get(k).map(|v| v.to_string()));
        assert!(!p.bools[flag::ALLOW_COMPAT_MODE]);
        for f in [
            flag::FORCE_COMPAT_MODE,
            flag::USE_PCIP2PDMA,
            flag::SKIP_TOPOLOGY_DETECTION,
            flag::STREAM_MEMOPS_BYPASS,
            flag::PROFILE_NVTX,
        ] {
            assert!(p.bools[f], "flag {f}");
        }
        assert_eq!(p.sizes[size::MAX_DEVICE_CACHE_SIZE_KB], 4096);
        assert_eq!(p.sizes[size::PER_BUFFER_CACHE_SIZE_KB], 2048);
        assert_eq!(p.strings[string::LOGGING_LEVEL].as_deref(), Some("TRACE"));
        assert_eq!(p.strings[string::ENV_LOGFILE_PATH].as_deref(), Some("/tmp/x.log"));
        let mut loaded = LoadedConfig::defaults();
        assert!(p.apply_to_config(&mut loaded).is_empty());
        let c = loaded.config();
        assert!(!c.allow_compat_mode && c.force_compat_mode && c.use_pci_p2pdma);

        let before = p.clone();
        let bad: std::collections::HashMap<&str, &str> = [
            ("CUFILE_FORCE_COMPAT_MODE", "maybe"),
            ("CUFILE_USE_PCIP2PDMA", ""),
            ("CUFILE_MAX_DEVICE_CACHE_SIZE", "12x"),
            ("CUFILE_PER_BUFFER_CACHE_SIZE", "-5"),
        ]
        .into_iter()
        .collect();
        p.apply_env(|k| bad.get(k).map(|v| v.to_string()));
        assert_eq!(p.bools, before.bools);
        assert_eq!(p.sizes, before.sizes);
    }
}
