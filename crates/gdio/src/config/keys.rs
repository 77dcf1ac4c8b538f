//! The configuration keys by name: their type, and reading and writing a [`Config`] through
//! them. Every layer (file, environment, code) goes through [`set`], so a value is checked the
//! same way wherever it comes from.

use serde_json::Value;

use super::{Config, DirectIoPolicy, FsConfig};
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
    /// A list of routing choices (`GPU_MEM_NVLINKS`, `GPU_MEM`, `SYS_MEM`, `P2P`); in the
    /// environment, comma-separated.
    RoutingOrder,
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
    ("task_size", KeyKind::Count),
    ("bounce_buffer_size", KeyKind::Count),
    ("buffered_chunk_size", KeyKind::Count),
    ("bounce_buffers_per_thread", KeyKind::Count),
    ("direct_reads_in_flight", KeyKind::Count),
    ("gather_max_pieces", KeyKind::Count),
    ("gather_max_bytes", KeyKind::Count),
    ("gather_piece_size", KeyKind::Count),
    ("gather_batch_copy", KeyKind::Bool),
    ("direct_io", KeyKind::DirectIo),
    ("hot_cache_fraction", KeyKind::Fraction),
    ("page_cache_dma", KeyKind::Bool),
];

/// The per-filesystem keys; their full name is `fs.<filesystem>.<key>`.
pub const FS_KEYS: &[(&str, KeyKind)] =
    &[("posix_gds_min_kb", KeyKind::Count), ("rdma_write_support", KeyKind::Bool)];

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
    Error::new(ErrorKind::Config, format!("{origin}: key {key} must be {want}, not {got}"))
}

fn as_bool(origin: &str, key: &str, v: &Value) -> Result<bool> {
    v.as_bool().ok_or_else(|| type_error(origin, key, "true or false", v))
}

fn as_count(origin: &str, key: &str, v: &Value) -> Result<u64> {
    v.as_u64().ok_or_else(|| type_error(origin, key, "a whole number of at least 0", v))
}

fn as_usize(origin: &str, key: &str, v: &Value) -> Result<usize> {
    let n = as_count(origin, key, v)?;
    usize::try_from(n).map_err(|_| type_error(origin, key, "a smaller number", v))
}

/// Sets `key` to `value` in `config`. `origin` names where the value came from (`config file
/// /etc/gdio.json`, `environment variable GDIO_THREADS`, `code`) for the error message. An
/// unknown key or a value of the wrong type is an error naming the key and the value.
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
        "hot_cache_fraction" => {
            let f = value.as_f64().filter(|f| (0.0..=1.0).contains(f));
            config.hot_cache_fraction =
                f.ok_or_else(|| type_error(origin, key, "a number between 0 and 1", value))?;
        }
        "page_cache_dma" => config.page_cache_dma = as_bool(origin, key, value)?,
        _ => return Err(unknown(origin, key)),
    }
    Ok(())
}

fn unknown(origin: &str, key: &str) -> Error {
    Error::new(ErrorKind::Config, format!("{origin}: unknown key {key}"))
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
        "task_size" => config.task_size.into(),
        "bounce_buffer_size" => config.bounce_buffer_size.into(),
        "buffered_chunk_size" => config.buffered_chunk_size.into(),
        "bounce_buffers_per_thread" => config.bounce_buffers_per_thread.into(),
        "direct_reads_in_flight" => config.direct_reads_in_flight.into(),
        "gather_max_pieces" => config.gather_max_pieces.into(),
        "gather_max_bytes" => config.gather_max_bytes.into(),
        "gather_piece_size" => config.gather_piece_size.into(),
        "gather_batch_copy" => config.gather_batch_copy.into(),
        "direct_io" => serde_json::to_value(config.direct_io).unwrap_or(Value::Null),
        "hot_cache_fraction" => config.hot_cache_fraction.into(),
        "page_cache_dma" => config.page_cache_dma.into(),
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
