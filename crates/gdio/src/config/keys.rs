//! The configuration keys by name: their type, and reading and writing a [`Config`] through
//! them. Every layer (file, environment, code) goes through [`set`], so a value is checked the
//! same way wherever it comes from.

use serde_json::Value;

use super::{Config, DirectIoPolicy, FsConfig, IoEngine};
use crate::error::{Error, ErrorKind, Result};

/// The type of a configuration key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// `true`/`false` (environment: also 1/0/yes/no/on/off, any case).
    Bool,
    /// A whole number ≥ 0.
    Count,
    /// A number between 0 and 1.
    Fraction,
    /// `auto`, `on` or `off`.
    DirectIo,
    /// `auto`, `pread` or `io_uring`.
    IoEngine,
    /// A list of routing choices (`GPU_MEM_NVLINKS`, `GPU_MEM`, `SYS_MEM`, `P2P`); in the
    /// environment, comma-separated.
    RoutingOrder,
    /// A list of HTTP status codes (100–599); in the environment, comma-separated.
    StatusCodes,
}

/// Every key that is not per filesystem, in the order `gdio check` prints them.
pub const KEYS: &[(&str, KeyKind)] = &[
    ("allow_compat_mode", KeyKind::Bool),
    ("force_compat_mode", KeyKind::Bool),
    ("unsupported_file_systems", KeyKind::Bool),
    ("posix_unaligned_writes", KeyKind::Bool),
    ("gds_rdma_write_support", KeyKind::Bool),
    ("use_pci_p2pdma", KeyKind::Bool),
    ("rdma_dynamic_routing", KeyKind::Bool),
    ("rdma_dynamic_routing_order", KeyKind::RoutingOrder),
    ("threads", KeyKind::Count),
    ("write_threads", KeyKind::Count),
    ("file_writers", KeyKind::Count),
    ("task_size", KeyKind::Count),
    ("bounce_buffer_size", KeyKind::Count),
    ("buffered_chunk_size", KeyKind::Count),
    ("bounce_buffers_per_thread", KeyKind::Count),
    ("direct_reads_in_flight", KeyKind::Count),
    ("gather_max_pieces", KeyKind::Count),
    ("gather_max_bytes", KeyKind::Count),
    ("gather_piece_size", KeyKind::Count),
    ("gather_batch_copy", KeyKind::Bool),
    ("gather_scatter", KeyKind::Bool),
    ("gather_writes", KeyKind::Bool),
    ("gather_write_disk_min_bytes", KeyKind::Count),
    ("gather_adjacent_runs", KeyKind::Bool),
    ("batch_queue_group", KeyKind::Count),
    ("completion_spin_us", KeyKind::Count),
    ("completion_poll_us", KeyKind::Count),
    ("completion_callbacks", KeyKind::Bool),
    ("completion_watcher", KeyKind::Bool),
    ("completion_watch_events", KeyKind::Bool),
    ("numa_affinity", KeyKind::Bool),
    ("inline_max_bytes", KeyKind::Count),
    ("inline_max_callers", KeyKind::Count),
    ("split_min_bytes", KeyKind::Count),
    ("split_into_one_buffer", KeyKind::Bool),
    ("split_pieces_per_worker", KeyKind::Count),
    ("split_early_copy", KeyKind::Bool),
    ("split_early_copy_min_bytes", KeyKind::Count),
    ("split_early_copy_parts", KeyKind::Count),
    ("split_early_copy_max_others", KeyKind::Count),
    ("lone_caller_polls", KeyKind::Bool),
    ("polling_callers_max", KeyKind::Count),
    ("copy_streams", KeyKind::Count),
    ("own_stream_max_bytes", KeyKind::Count),
    ("pool_per_gpu", KeyKind::Bool),
    ("save_writes_in_flight", KeyKind::Count),
    ("safetensors_read_ahead_bytes", KeyKind::Count),
    ("safetensors_request_bytes", KeyKind::Count),
    ("safetensors_requests_in_flight", KeyKind::Count),
    ("safetensors_merge_gap_bytes", KeyKind::Count),
    ("safetensors_spread_reads", KeyKind::Bool),
    ("safetensors_overlap_warm", KeyKind::Bool),
    ("safetensors_map_host", KeyKind::Bool),
    ("save_files_in_flight", KeyKind::Count),
    ("http_max_attempts", KeyKind::Count),
    ("http_timeout", KeyKind::Count),
    ("http_status_codes", KeyKind::StatusCodes),
    ("pinned_huge_pages", KeyKind::Bool),
    ("defer_gpu_init", KeyKind::Bool),
    ("direct_io", KeyKind::DirectIo),
    ("io_engine", KeyKind::IoEngine),
    ("hot_cache_fraction", KeyKind::Fraction),
    ("page_cache_dma", KeyKind::Bool),
    ("page_cache_pins_max_bytes", KeyKind::Count),
    ("page_cache_pins_idle_ms", KeyKind::Count),
    ("page_cache_pins_min_request_bytes", KeyKind::Count),
    ("read_ahead_bytes", KeyKind::Count),
    ("read_ahead_min_request_bytes", KeyKind::Count),
    ("read_ahead_max_request_bytes", KeyKind::Count),
    ("read_ahead_max_callers", KeyKind::Count),
    ("read_ahead_gpu_memory", KeyKind::Bool),
];

/// The per-filesystem keys; their full name is `fs.<filesystem>.<key>`.
pub const FS_KEYS: &[(&str, KeyKind)] =
    &[("posix_gds_min_kb", KeyKind::Count), ("rdma_write_support", KeyKind::Bool)];

/// The range a numeric key accepts, the same from every layer (file, environment, code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// Smallest value.
    pub min: u64,
    /// Largest value.
    pub max: u64,
}

impl Bound {
    const fn new(min: u64, max: u64) -> Bound {
        Bound { min, max }
    }

    /// Whether `v` is in range.
    pub fn contains(&self, v: u64) -> bool {
        (self.min..=self.max).contains(&v)
    }

    /// The range in words (`a positive integer up to 1024`, `a whole number from 2 to 64`).
    pub fn describe(&self) -> String {
        match self.min {
            1 => format!("a positive integer up to {}", self.max),
            min => format!("a whole number from {min} to {}", self.max),
        }
    }
}

/// One GiB: the largest size any size key takes (a request is split into tasks of at most
/// this, so offset arithmetic in the engine never comes near overflow).
pub const MAX_SIZE: u64 = 1 << 30;

/// The range of every numeric key (README "Configuration bounds" lists the same).
pub const BOUNDS: &[(&str, Bound)] = &[
    ("threads", Bound::new(1, 1024)),
    ("write_threads", Bound::new(1, 1024)),
    ("file_writers", Bound::new(0, 1024)),
    // Any positive size, as KvikIO takes: the engine makes tasks of at least a page and bounce
    // buffers of whole pages (`Config::task_bytes`, `Config::bounce_buffer_bytes`).
    ("task_size", Bound::new(1, MAX_SIZE)),
    ("bounce_buffer_size", Bound::new(1, MAX_SIZE)),
    ("buffered_chunk_size", Bound::new(4096, MAX_SIZE)),
    ("bounce_buffers_per_thread", Bound::new(2, 64)),
    ("direct_reads_in_flight", Bound::new(1, 64)),
    ("gather_max_pieces", Bound::new(0, 4096)),
    ("gather_max_bytes", Bound::new(0, MAX_SIZE)),
    ("gather_piece_size", Bound::new(0, MAX_SIZE)),
    ("gather_write_disk_min_bytes", Bound::new(0, MAX_SIZE)),
    ("batch_queue_group", Bound::new(0, 1 << 20)),
    // At most a second: a longer spin is a busy core, not a faster wake-up.
    ("completion_spin_us", Bound::new(0, 1_000_000)),
    ("completion_poll_us", Bound::new(0, 1000)),
    ("inline_max_bytes", Bound::new(0, MAX_SIZE)),
    ("inline_max_callers", Bound::new(0, 4096)),
    ("split_min_bytes", Bound::new(0, MAX_SIZE)),
    ("split_early_copy_min_bytes", Bound::new(0, MAX_SIZE)),
    ("split_early_copy_parts", Bound::new(2, 16)),
    ("split_early_copy_max_others", Bound::new(0, 4096)),
    // At most 64 TiB of page cache pinned; 0 turns the pins off.
    ("page_cache_pins_max_bytes", Bound::new(0, 1 << 46)),
    // At most a day.
    ("page_cache_pins_idle_ms", Bound::new(0, 86_400_000)),
    ("page_cache_pins_min_request_bytes", Bound::new(0, MAX_SIZE)),
    // At most 64 GiB of pinned host memory read ahead; 0 turns read-ahead off.
    ("read_ahead_bytes", Bound::new(0, 1 << 36)),
    ("read_ahead_min_request_bytes", Bound::new(0, MAX_SIZE)),
    ("read_ahead_max_request_bytes", Bound::new(0, MAX_SIZE)),
    ("read_ahead_max_callers", Bound::new(0, 4096)),
    ("split_pieces_per_worker", Bound::new(1, 64)),
    ("polling_callers_max", Bound::new(1, 64)),
    ("copy_streams", Bound::new(0, 64)),
    ("own_stream_max_bytes", Bound::new(0, MAX_SIZE)),
    ("save_writes_in_flight", Bound::new(1, 256)),
    ("safetensors_read_ahead_bytes", Bound::new(0, MAX_SIZE)),
    ("safetensors_request_bytes", Bound::new(0, MAX_SIZE)),
    ("safetensors_requests_in_flight", Bound::new(0, 256)),
    ("safetensors_merge_gap_bytes", Bound::new(0, MAX_SIZE)),
    ("save_files_in_flight", Bound::new(1, 64)),
    ("http_max_attempts", Bound::new(1, 100)),
    ("http_timeout", Bound::new(1, 86_400)),
    // KiB: up to 1 TiB, so `* 1024` never overflows.
    ("posix_gds_min_kb", Bound::new(0, 1 << 30)),
];

/// The range of numeric key `key` (flat or `fs.<name>.<key>`), `None` for other keys.
pub fn bound(key: &str) -> Option<Bound> {
    let k = split_fs_key(key).map_or(key, |(_, k)| k);
    BOUNDS.iter().find(|(n, _)| *n == k).map(|(_, b)| *b)
}

/// Checks the value of a numeric key against its [`Bound`]; `origin` names where it came from.
pub fn check_bound(origin: &str, key: &str, v: &Value) -> Result<()> {
    let Some(b) = bound(key) else { return Ok(()) };
    match v.as_u64() {
        Some(n) if b.contains(n) => Ok(()),
        _ => Err(type_error(origin, key, &b.describe(), v)),
    }
}

/// The routing choices cuFile knows for `rdma_dynamic_routing_order`.
pub const ROUTING_CHOICES: &[&str] = &["GPU_MEM_NVLINKS", "GPU_MEM", "SYS_MEM", "P2P"];

/// gdio's name for a filesystem cufile.json names differently (`weka` → `wekafs`).
pub fn fs_name(name: &str) -> String {
    match name {
        "weka" => "wekafs".to_owned(),
        other => other.to_ascii_lowercase(),
    }
}

/// Splits `fs.<name>.<key>` into the filesystem and the per-filesystem key.
pub fn split_fs_key(key: &str) -> Option<(&str, &str)> {
    let rest = key.strip_prefix("fs.")?;
    let (name, k) = rest.rsplit_once('.')?;
    (!name.is_empty()).then_some((name, k))
}

/// The type of `key` (flat or `fs.<name>.<key>`), `None` for an unknown key.
pub fn kind(key: &str) -> Option<KeyKind> {
    if let Some((_, k)) = split_fs_key(key) {
        return FS_KEYS.iter().find(|(n, _)| *n == k).map(|(_, t)| *t);
    }
    KEYS.iter().find(|(n, _)| *n == key).map(|(_, t)| *t)
}

fn type_error(origin: &str, key: &str, want: &str, got: &Value) -> Error {
    // `origin` names the key as its source wrote it; say gdio's name when that differs.
    let named = if origin.contains(key) { String::new() } else { format!(" (gdio key {key})") };
    let negative = if got.as_f64().is_some_and(|n| n < 0.0) { " (a negative value)" } else { "" };
    Error::new(ErrorKind::Config, format!("{origin}{named}: must be {want}, not {got}{negative}"))
}

fn as_bool(origin: &str, key: &str, v: &Value) -> Result<bool> {
    v.as_bool().ok_or_else(|| type_error(origin, key, "true or false", v))
}

fn as_count(origin: &str, key: &str, v: &Value) -> Result<u64> {
    check_bound(origin, key, v)?;
    v.as_u64().ok_or_else(|| type_error(origin, key, "a whole number of at least 0", v))
}

fn as_usize(origin: &str, key: &str, v: &Value) -> Result<usize> {
    let n = as_count(origin, key, v)?;
    usize::try_from(n).map_err(|_| type_error(origin, key, "a smaller number", v))
}

/// Sets `key` to `value` in `config`. `origin` names where the value came from and the name it
/// had there (`config file /etc/cufile.json, key fs.weka.rdma_write_support`, `environment
/// variable GDIO_THREADS`, `code, key threads`) for the error message. An unknown key, a value
/// of the wrong type or out of its [`Bound`] is an error naming the source, the key and the
/// value; `config` is unchanged then.
pub fn set(config: &mut Config, key: &str, value: &Value, origin: &str) -> Result<()> {
    if let Some((name, k)) = split_fs_key(key) {
        let name = fs_name(name);
        let mut fs = config.fs_config(&name);
        match k {
            "posix_gds_min_kb" => fs.posix_gds_min_kb = as_count(origin, key, value)?,
            "rdma_write_support" => fs.rdma_write_support = as_bool(origin, key, value)?,
            _ => return Err(unknown(origin, key)),
        }
        config.fs.insert(name, fs);
        return Ok(());
    }
    match key {
        "allow_compat_mode" => config.allow_compat_mode = as_bool(origin, key, value)?,
        "force_compat_mode" => config.force_compat_mode = as_bool(origin, key, value)?,
        "unsupported_file_systems" => {
            config.unsupported_file_systems = as_bool(origin, key, value)?
        }
        "posix_unaligned_writes" => config.posix_unaligned_writes = as_bool(origin, key, value)?,
        "gds_rdma_write_support" => config.gds_rdma_write_support = as_bool(origin, key, value)?,
        "use_pci_p2pdma" => config.use_pci_p2pdma = as_bool(origin, key, value)?,
        "rdma_dynamic_routing" => config.rdma_dynamic_routing = as_bool(origin, key, value)?,
        "rdma_dynamic_routing_order" => {
            let want = "a list of GPU_MEM_NVLINKS, GPU_MEM, SYS_MEM, P2P";
            let arr = value.as_array().ok_or_else(|| type_error(origin, key, want, value))?;
            let mut order = Vec::with_capacity(arr.len());
            for item in arr {
                match item.as_str() {
                    Some(s) if ROUTING_CHOICES.contains(&s.trim()) => {
                        order.push(s.trim().to_owned())
                    }
                    _ => return Err(type_error(origin, key, want, value)),
                }
            }
            config.rdma_dynamic_routing_order = order;
        }
        "threads" => config.threads = as_usize(origin, key, value)?,
        "write_threads" => config.write_threads = as_usize(origin, key, value)?,
        "file_writers" => config.file_writers = as_usize(origin, key, value)?,
        "task_size" => config.task_size = as_usize(origin, key, value)?,
        "bounce_buffer_size" => config.bounce_buffer_size = as_usize(origin, key, value)?,
        "buffered_chunk_size" => config.buffered_chunk_size = as_usize(origin, key, value)?,
        "bounce_buffers_per_thread" => {
            config.bounce_buffers_per_thread = as_usize(origin, key, value)?
        }
        "direct_reads_in_flight" => config.direct_reads_in_flight = as_usize(origin, key, value)?,
        "gather_max_pieces" => config.gather_max_pieces = as_usize(origin, key, value)?,
        "gather_max_bytes" => config.gather_max_bytes = as_usize(origin, key, value)?,
        "gather_piece_size" => config.gather_piece_size = as_usize(origin, key, value)?,
        "gather_batch_copy" => config.gather_batch_copy = as_bool(origin, key, value)?,
        "gather_scatter" => config.gather_scatter = as_bool(origin, key, value)?,
        "gather_writes" => config.gather_writes = as_bool(origin, key, value)?,
        "gather_adjacent_runs" => config.gather_adjacent_runs = as_bool(origin, key, value)?,
        "gather_write_disk_min_bytes" => {
            config.gather_write_disk_min_bytes = as_usize(origin, key, value)?
        }
        "completion_spin_us" => config.completion_spin_us = as_count(origin, key, value)?,
        "completion_poll_us" => config.completion_poll_us = as_count(origin, key, value)?,
        "completion_callbacks" => config.completion_callbacks = as_bool(origin, key, value)?,
        "completion_watcher" => config.completion_watcher = as_bool(origin, key, value)?,
        "completion_watch_events" => config.completion_watch_events = as_bool(origin, key, value)?,
        "numa_affinity" => config.numa_affinity = as_bool(origin, key, value)?,
        "inline_max_bytes" => config.inline_max_bytes = as_usize(origin, key, value)?,
        "inline_max_callers" => config.inline_max_callers = as_usize(origin, key, value)?,
        "batch_queue_group" => config.batch_queue_group = as_usize(origin, key, value)?,
        "split_min_bytes" => config.split_min_bytes = as_usize(origin, key, value)?,
        "split_into_one_buffer" => config.split_into_one_buffer = as_bool(origin, key, value)?,
        "split_early_copy" => config.split_early_copy = as_bool(origin, key, value)?,
        "split_early_copy_min_bytes" => {
            config.split_early_copy_min_bytes = as_usize(origin, key, value)? as u64
        }
        "split_early_copy_parts" => config.split_early_copy_parts = as_usize(origin, key, value)?,
        "split_early_copy_max_others" => {
            config.split_early_copy_max_others = as_usize(origin, key, value)?;
        }
        "lone_caller_polls" => config.lone_caller_polls = as_bool(origin, key, value)?,
        "polling_callers_max" => config.polling_callers_max = as_usize(origin, key, value)?,
        "split_pieces_per_worker" => {
            config.split_pieces_per_worker = as_usize(origin, key, value)?;
        }
        "copy_streams" => config.copy_streams = as_usize(origin, key, value)?,
        "own_stream_max_bytes" => config.own_stream_max_bytes = as_usize(origin, key, value)?,
        "pool_per_gpu" => config.pool_per_gpu = as_bool(origin, key, value)?,
        "save_writes_in_flight" => config.save_writes_in_flight = as_usize(origin, key, value)?,
        "safetensors_read_ahead_bytes" => {
            config.safetensors_read_ahead_bytes = as_usize(origin, key, value)?
        }
        "safetensors_request_bytes" => {
            config.safetensors_request_bytes = as_usize(origin, key, value)?
        }
        "safetensors_requests_in_flight" => {
            config.safetensors_requests_in_flight = as_usize(origin, key, value)?
        }
        "safetensors_merge_gap_bytes" => {
            config.safetensors_merge_gap_bytes = as_usize(origin, key, value)?
        }
        "safetensors_spread_reads" => {
            config.safetensors_spread_reads = as_bool(origin, key, value)?
        }
        "save_files_in_flight" => config.save_files_in_flight = as_usize(origin, key, value)?,
        "http_max_attempts" => config.http_max_attempts = as_usize(origin, key, value)?,
        "http_timeout" => config.http_timeout = as_count(origin, key, value)?,
        "http_status_codes" => {
            let want = "a list of HTTP status codes (100 to 599)";
            let arr = value.as_array().ok_or_else(|| type_error(origin, key, want, value))?;
            let codes = arr
                .iter()
                .map(|v| v.as_u64().filter(|c| (100..=599).contains(c)).map(|c| c as u16))
                .collect::<Option<Vec<u16>>>()
                .ok_or_else(|| type_error(origin, key, want, value))?;
            config.http_status_codes = codes;
        }
        "pinned_huge_pages" => config.pinned_huge_pages = as_bool(origin, key, value)?,
        "defer_gpu_init" => config.defer_gpu_init = as_bool(origin, key, value)?,
        "safetensors_map_host" => config.safetensors_map_host = as_bool(origin, key, value)?,
        "safetensors_overlap_warm" => {
            config.safetensors_overlap_warm = as_bool(origin, key, value)?
        }
        "direct_io" => {
            let s = value
                .as_str()
                .ok_or_else(|| type_error(origin, key, "\"auto\", \"on\" or \"off\"", value))?;
            config.direct_io = match s.to_ascii_lowercase().as_str() {
                "auto" => DirectIoPolicy::Auto,
                "on" => DirectIoPolicy::On,
                "off" => DirectIoPolicy::Off,
                _ => return Err(type_error(origin, key, "\"auto\", \"on\" or \"off\"", value)),
            };
        }
        "io_engine" => {
            let want = "\"auto\", \"pread\" or \"io_uring\"";
            let s = value.as_str().ok_or_else(|| type_error(origin, key, want, value))?;
            config.io_engine =
                s.parse::<IoEngine>().map_err(|_| type_error(origin, key, want, value))?;
        }
        "hot_cache_fraction" => {
            let f = value.as_f64().filter(|f| (0.0..=1.0).contains(f));
            config.hot_cache_fraction =
                f.ok_or_else(|| type_error(origin, key, "a number between 0 and 1", value))?;
        }
        "page_cache_dma" => config.page_cache_dma = as_bool(origin, key, value)?,
        "page_cache_pins_max_bytes" => {
            config.page_cache_pins_max_bytes = as_usize(origin, key, value)? as u64
        }
        "page_cache_pins_idle_ms" => {
            config.page_cache_pins_idle_ms = as_usize(origin, key, value)? as u64
        }
        "page_cache_pins_min_request_bytes" => {
            config.page_cache_pins_min_request_bytes = as_usize(origin, key, value)? as u64
        }
        "read_ahead_bytes" => config.read_ahead_bytes = as_usize(origin, key, value)? as u64,
        "read_ahead_min_request_bytes" => {
            config.read_ahead_min_request_bytes = as_usize(origin, key, value)? as u64
        }
        "read_ahead_max_request_bytes" => {
            config.read_ahead_max_request_bytes = as_usize(origin, key, value)? as u64
        }
        "read_ahead_max_callers" => config.read_ahead_max_callers = as_usize(origin, key, value)?,
        "read_ahead_gpu_memory" => config.read_ahead_gpu_memory = as_bool(origin, key, value)?,
        _ => return Err(unknown(origin, key)),
    }
    Ok(())
}

fn unknown(origin: &str, key: &str) -> Error {
    let hint = nearest(key, KEYS.iter().map(|(k, _)| *k).chain(FS_KEYS.iter().map(|(k, _)| *k)))
        .map(|k| format!(" (did you mean {k}?)"))
        .unwrap_or_default();
    Error::new(ErrorKind::Config, format!("{origin}: unknown key {key}{hint}"))
}

/// The candidate nearest to `word` by edit distance (case-insensitive), if it is close: at
/// most a third of the word's length away (typos, not other words).
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let w = word.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (strsim::levenshtein(&w, &c.to_ascii_lowercase()), c))
        .filter(|(d, _)| *d > 0 && *d <= (w.len() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// The value of `key` in `config`, `None` for an unknown key.
pub fn get(config: &Config, key: &str) -> Option<Value> {
    if let Some((name, k)) = split_fs_key(key) {
        let FsConfig { posix_gds_min_kb, rdma_write_support } = config.fs_config(&fs_name(name));
        return match k {
            "posix_gds_min_kb" => Some(posix_gds_min_kb.into()),
            "rdma_write_support" => Some(rdma_write_support.into()),
            _ => None,
        };
    }
    Some(match key {
        "allow_compat_mode" => config.allow_compat_mode.into(),
        "force_compat_mode" => config.force_compat_mode.into(),
        "unsupported_file_systems" => config.unsupported_file_systems.into(),
        "posix_unaligned_writes" => config.posix_unaligned_writes.into(),
        "gds_rdma_write_support" => config.gds_rdma_write_support.into(),
        "use_pci_p2pdma" => config.use_pci_p2pdma.into(),
        "rdma_dynamic_routing" => config.rdma_dynamic_routing.into(),
        "rdma_dynamic_routing_order" => config.rdma_dynamic_routing_order.clone().into(),
        "threads" => config.threads.into(),
        "write_threads" => config.write_threads.into(),
        "file_writers" => config.file_writers.into(),
        "task_size" => config.task_size.into(),
        "bounce_buffer_size" => config.bounce_buffer_size.into(),
        "buffered_chunk_size" => config.buffered_chunk_size.into(),
        "bounce_buffers_per_thread" => config.bounce_buffers_per_thread.into(),
        "direct_reads_in_flight" => config.direct_reads_in_flight.into(),
        "gather_max_pieces" => config.gather_max_pieces.into(),
        "gather_max_bytes" => config.gather_max_bytes.into(),
        "gather_piece_size" => config.gather_piece_size.into(),
        "gather_batch_copy" => config.gather_batch_copy.into(),
        "gather_scatter" => config.gather_scatter.into(),
        "gather_writes" => config.gather_writes.into(),
        "gather_adjacent_runs" => config.gather_adjacent_runs.into(),
        "gather_write_disk_min_bytes" => config.gather_write_disk_min_bytes.into(),
        "completion_spin_us" => config.completion_spin_us.into(),
        "completion_poll_us" => config.completion_poll_us.into(),
        "completion_callbacks" => config.completion_callbacks.into(),
        "completion_watcher" => config.completion_watcher.into(),
        "completion_watch_events" => config.completion_watch_events.into(),
        "numa_affinity" => config.numa_affinity.into(),
        "inline_max_bytes" => config.inline_max_bytes.into(),
        "inline_max_callers" => config.inline_max_callers.into(),
        "batch_queue_group" => config.batch_queue_group.into(),
        "split_min_bytes" => config.split_min_bytes.into(),
        "split_into_one_buffer" => config.split_into_one_buffer.into(),
        "split_pieces_per_worker" => config.split_pieces_per_worker.into(),
        "split_early_copy" => config.split_early_copy.into(),
        "split_early_copy_min_bytes" => config.split_early_copy_min_bytes.into(),
        "split_early_copy_parts" => config.split_early_copy_parts.into(),
        "split_early_copy_max_others" => config.split_early_copy_max_others.into(),
        "lone_caller_polls" => config.lone_caller_polls.into(),
        "polling_callers_max" => config.polling_callers_max.into(),
        "copy_streams" => config.copy_streams.into(),
        "own_stream_max_bytes" => config.own_stream_max_bytes.into(),
        "pool_per_gpu" => config.pool_per_gpu.into(),
        "save_writes_in_flight" => config.save_writes_in_flight.into(),
        "safetensors_read_ahead_bytes" => config.safetensors_read_ahead_bytes.into(),
        "safetensors_request_bytes" => config.safetensors_request_bytes.into(),
        "safetensors_requests_in_flight" => config.safetensors_requests_in_flight.into(),
        "safetensors_merge_gap_bytes" => config.safetensors_merge_gap_bytes.into(),
        "safetensors_spread_reads" => config.safetensors_spread_reads.into(),
        "save_files_in_flight" => config.save_files_in_flight.into(),
        "http_max_attempts" => config.http_max_attempts.into(),
        "http_timeout" => config.http_timeout.into(),
        "http_status_codes" => config.http_status_codes.clone().into(),
        "pinned_huge_pages" => config.pinned_huge_pages.into(),
        "defer_gpu_init" => config.defer_gpu_init.into(),
        "safetensors_overlap_warm" => config.safetensors_overlap_warm.into(),
        "safetensors_map_host" => config.safetensors_map_host.into(),
        "direct_io" => serde_json::to_value(config.direct_io).unwrap_or(Value::Null),
        "io_engine" => config.io_engine.as_str().into(),
        "hot_cache_fraction" => config.hot_cache_fraction.into(),
        "page_cache_dma" => config.page_cache_dma.into(),
        "page_cache_pins_max_bytes" => config.page_cache_pins_max_bytes.into(),
        "page_cache_pins_idle_ms" => config.page_cache_pins_idle_ms.into(),
        "page_cache_pins_min_request_bytes" => config.page_cache_pins_min_request_bytes.into(),
        "read_ahead_bytes" => config.read_ahead_bytes.into(),
        "read_ahead_min_request_bytes" => config.read_ahead_min_request_bytes.into(),
        "read_ahead_max_request_bytes" => config.read_ahead_max_request_bytes.into(),
        "read_ahead_max_callers" => config.read_ahead_max_callers.into(),
        "read_ahead_gpu_memory" => config.read_ahead_gpu_memory.into(),
        _ => return None,
    })
}

/// Every key of `config`, flat keys first, then `fs.<name>.<key>` for each filesystem listed.
pub fn all(config: &Config) -> Vec<String> {
    let mut v: Vec<String> = KEYS.iter().map(|(k, _)| (*k).to_owned()).collect();
    for name in config.fs.keys() {
        for (k, _) in FS_KEYS {
            v.push(format!("fs.{name}.{k}"));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_numeric_key_has_a_bound_and_the_default_is_in_it() {
        let c = Config::default();
        for (k, kind) in KEYS.iter().chain(FS_KEYS) {
            if *kind == KeyKind::Count {
                let b = bound(k).unwrap_or_else(|| panic!("{k} has no bound"));
                let key = if FS_KEYS.iter().any(|(n, _)| n == k) {
                    format!("fs.ext4.{k}")
                } else {
                    (*k).to_owned()
                };
                let v = get(&c, &key).unwrap().as_u64().unwrap();
                assert!(b.contains(v), "default {key} = {v} outside {b:?}");
            }
        }
    }

    #[test]
    fn out_of_range_is_refused_and_leaves_config_unchanged() {
        for (key, bad) in [
            ("task_size", serde_json::json!(u64::MAX)),
            ("task_size", serde_json::json!(usize::MAX as u64 - 4095)),
            ("task_size", serde_json::json!(0)),
            ("threads", serde_json::json!(0)),
            ("threads", serde_json::json!(1025)),
            ("write_threads", serde_json::json!(0)),
            ("file_writers", serde_json::json!(1025)),
            ("file_writers", serde_json::json!(-1)),
            ("save_writes_in_flight", serde_json::json!(0)),
            ("save_writes_in_flight", serde_json::json!(257)),
            ("save_files_in_flight", serde_json::json!(0)),
            ("safetensors_requests_in_flight", serde_json::json!(257)),
            ("safetensors_request_bytes", serde_json::json!(-4096)),
            ("safetensors_spread_reads", serde_json::json!("sometimes")),
            ("http_max_attempts", serde_json::json!(0)),
            ("http_timeout", serde_json::json!(0)),
            ("http_status_codes", serde_json::json!([503, 99])),
            ("http_status_codes", serde_json::json!("503")),
            ("bounce_buffer_size", serde_json::json!(0)),
            ("bounce_buffer_size", serde_json::json!(2u64 << 30)),
            ("buffered_chunk_size", serde_json::json!(1)),
            ("bounce_buffers_per_thread", serde_json::json!(1)),
            ("bounce_buffers_per_thread", serde_json::json!(1000)),
            ("fs.lustre.posix_gds_min_kb", serde_json::json!(u64::MAX)),
            ("threads", serde_json::json!(-1)),
            ("threads", serde_json::json!(1e30)),
            ("threads", serde_json::json!(2.5)),
        ] {
            let mut c = Config::default();
            let e = set(&mut c, key, &bad, "code, key K").unwrap_err().to_string();
            assert!(e.contains("code, key K") && e.contains(&bad.to_string()), "{e}");
            assert!(e.contains(key), "{e}");
            assert_eq!(c, Config::default(), "{key} = {bad}");
        }
    }

    #[test]
    fn unknown_keys_suggest_the_nearest() {
        let mut c = Config::default();
        let e = set(&mut c, "thread", &Value::from(3), "code").unwrap_err().to_string();
        assert!(e.contains("did you mean threads?"), "{e}");
        let e = set(&mut c, "zzzz", &Value::from(3), "code").unwrap_err().to_string();
        assert!(!e.contains("did you mean"), "{e}");
        assert_eq!(nearest("TASK_SIZ", ["task_size", "threads"]), Some("task_size"));
    }
}
