//! The file layer: a JSON config file with `//` comments, in gdio's flat form or in cufile.json's.
//!
//! gdio's form puts the keys at the top level (`{"allow_compat_mode": false, "threads": 8}`) and
//! per-filesystem settings under `fs` (`{"fs": {"lustre": {"posix_gds_min_kb": 64}}}`).
//! cufile.json's `properties`, `fs` and `execution` sections are read for the keys that mean the
//! same (`properties.allow_compat_mode`, `fs.generic.posix_unaligned_writes`,
//! `fs.weka.rdma_write_support`, ...). cuFile keys that gdio has no use for (logging, profile,
//! pool sizes, RDMA addresses, `execution.max_io_threads`, ...) are accepted and ignored; any
//! other key is an error naming it. `max_io_threads` sizes NVIDIA's own thread pool (its stock
//! /etc/cufile.json says 4); gdio's worker count is its own key, `threads`.

use std::path::Path;

use serde_json::{Map, Value};

use super::keys;
use crate::error::{Error, ErrorKind, Result};

/// cufile.json sections gdio reads nothing from; everything in them is accepted.
const IGNORED_SECTIONS: &[&str] =
    &["logging", "profile", "denylist", "miscellaneous", "block", "cufile_ext", "gpu_info"];

/// cufile.json `properties` keys that mean the same in gdio.
const PROPERTIES_MAPPED: &[&str] = &[
    "allow_compat_mode",
    "force_compat_mode",
    "gds_rdma_write_support",
    "use_pci_p2pdma",
    "rdma_dynamic_routing",
    "rdma_dynamic_routing_order",
];

/// cufile.json `properties` keys gdio accepts and ignores.
const PROPERTIES_IGNORED: &[&str] = &[
    "max_direct_io_size_kb",
    "max_device_cache_size_kb",
    "per_buffer_cache_size_kb",
    "max_device_pinned_mem_size_kb",
    "posix_pool_slab_size_kb",
    "posix_pool_slab_count",
    "gpu_bounce_buffer_slab_config",
    "use_poll_mode",
    "poll_mode_max_size_kb",
    "io_batchsize",
    "io_priority",
    "allow_system_memory",
    "prefer_io_uring",
    "prefer_iouring",
    "force_odirect_mode",
    "rdma_dev_addr_list",
    "rdma_load_balancing_policy",
    "rdma_dc_key",
    "rdma_access_mask",
    "rdma_peer_affinity_policy",
    "rdma_max_direct_io_size_kb",
    "batch_io_timeout_msecs",
    "skip_topology_detection",
    "stream_memops_bypass",
];

/// cufile.json `execution` keys gdio accepts and ignores. `max_io_threads` is the size of
/// NVIDIA's own pool (4 in its stock file, which would cap gdio's engine at a third of the
/// workers it measured best); gdio's is `threads`.
const EXECUTION_IGNORED: &[&str] = &[
    "max_io_queue_depth",
    "max_io_threads",
    "parallel_io",
    "min_io_threshold_size_kb",
    "max_request_parallelism",
];

/// cufile.json per-filesystem keys gdio accepts and ignores.
const FS_IGNORED: &[&str] = &[
    "gds_write_support",
    "gds_async_support",
    "mount_table",
    "rdma_dev_addr_list",
    "use_pci_p2pdma",
    "top_level_dirs",
    "io_batchsize",
    "rdma_write_support_mode",
];

/// Removes `//` comments that are outside strings; keeps line breaks so error positions hold.
pub fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => {
                    if let Some(n) = chars.next() {
                        out.push(n);
                    }
                }
                '"' => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if c == '/' && chars.peek() == Some(&'/') {
            for n in chars.by_ref() {
                if n == '\n' {
                    out.push('\n');
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// One setting a config file makes.
#[derive(Debug, Clone, PartialEq)]
pub struct FileSetting {
    /// The gdio key it sets (`threads`).
    pub key: String,
    /// The value.
    pub value: Value,
    /// The key as the file writes it (`execution.max_io_threads`), for error messages.
    pub written: String,
}

fn setting(key: impl Into<String>, value: &Value, written: impl Into<String>) -> FileSetting {
    FileSetting { key: key.into(), value: value.clone(), written: written.into() }
}

/// Reads the text of a config file: a regular file of at most
/// [`MAX_CONFIG_BYTES`](crate::file::MAX_CONFIG_BYTES). A FIFO, a device (`/dev/zero`), a
/// directory or a larger file is refused at once, without blocking or reading it, with an error
/// naming the file. Every reader of a cufile.json (gdio's config, the libcufile ABI) uses this.
pub fn read_text(path: &Path) -> Result<String> {
    crate::file::open::read_small_text(path, crate::file::MAX_CONFIG_BYTES)
        .map_err(|e| e.with_kind(ErrorKind::Config))
}

/// Reads and parses the config file at `path` into settings, in file order.
pub fn read(path: &Path) -> Result<Vec<FileSetting>> {
    let text = read_text(path)?;
    parse(&text, &path.display().to_string())
}

/// Parses config-file text; `name` names the file in errors.
pub fn parse(text: &str, name: &str) -> Result<Vec<FileSetting>> {
    let origin = format!("config file {name}");
    let value: Value = serde_json::from_str(&strip_comments(text)).map_err(|e| {
        Error::new(
            ErrorKind::Config,
            format!("{origin}: not valid JSON at line {}, column {}: {e}", e.line(), e.column()),
        )
    })?;
    let Value::Object(top) = value else {
        return Err(Error::new(
            ErrorKind::Config,
            format!("{origin}: must be a JSON object {{...}}"),
        ));
    };
    let mut out = Vec::new();
    for (k, v) in &top {
        match k.as_str() {
            "properties" => section(&origin, k, v, &mut out, |key| {
                if PROPERTIES_MAPPED.contains(&key) {
                    Some(Some(key.to_owned()))
                } else if PROPERTIES_IGNORED.contains(&key) {
                    Some(None)
                } else {
                    None
                }
            })?,
            "execution" => section(&origin, k, v, &mut out, |key| {
                EXECUTION_IGNORED.contains(&key).then_some(None)
            })?,
            "fs" => fs_section(&origin, v, &mut out)?,
            s if IGNORED_SECTIONS.contains(&s) => {}
            key if keys::kind(key).is_some() => out.push(setting(key, v, key)),
            key => return Err(unknown(&origin, key, key)),
        }
    }
    Ok(out)
}

/// An unknown key `full` (last part `last`), with the nearest key this place knows.
fn unknown(origin: &str, full: &str, last: &str) -> Error {
    let known = keys::KEYS
        .iter()
        .chain(keys::FS_KEYS)
        .map(|(k, _)| *k)
        .chain(PROPERTIES_IGNORED.iter().copied())
        .chain(EXECUTION_IGNORED.iter().copied())
        .chain(FS_IGNORED.iter().copied())
        .chain(["posix_unaligned_writes"]);
    let hint =
        keys::nearest(last, known).map(|k| format!(" (did you mean {k}?)")).unwrap_or_default();
    Error::new(ErrorKind::Config, format!("{origin}: unknown key {full}{hint}"))
}

fn object<'a>(origin: &str, path: &str, v: &'a Value) -> Result<&'a Map<String, Value>> {
    v.as_object().ok_or_else(|| {
        Error::new(
            ErrorKind::Config,
            format!("{origin}: key {path} must be an object {{...}}, not {v}"),
        )
    })
}

/// Reads a cufile.json section; `map` gives `Some(Some(gdio key))` for a mapped key,
/// `Some(None)` for an ignored one and `None` for an unknown one.
fn section(
    origin: &str,
    name: &str,
    v: &Value,
    out: &mut Vec<FileSetting>,
    map: impl Fn(&str) -> Option<Option<String>>,
) -> Result<()> {
    for (k, val) in object(origin, name, v)? {
        match map(k) {
            Some(Some(key)) => out.push(setting(key, val, format!("{name}.{k}"))),
            Some(None) => {}
            None => return Err(unknown(origin, &format!("{name}.{k}"), k)),
        }
    }
    Ok(())
}

fn fs_section(origin: &str, v: &Value, out: &mut Vec<FileSetting>) -> Result<()> {
    for (fs, settings) in object(origin, "fs", v)? {
        for (k, val) in object(origin, &format!("fs.{fs}"), settings)? {
            let full = format!("fs.{fs}.{k}");
            if k == "posix_unaligned_writes" {
                // cufile.json keeps it under fs.generic; gdio has one switch for all.
                out.push(setting("posix_unaligned_writes", val, full));
            } else if keys::FS_KEYS.iter().any(|(n, _)| n == k) {
                out.push(setting(format!("fs.{}.{k}", keys::fs_name(fs)), val, full));
            } else if !FS_IGNORED.contains(&k.as_str()) {
                return Err(unknown(origin, &full, k));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_outside_strings_only() {
        let t = "{ // c\n \"a//b\": \"x // y\" // z\n}";
        let s = strip_comments(t);
        let v: Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v["a//b"], "x // y");
    }

    #[test]
    fn unknown_keys_are_named() {
        let e = parse(r#"{"properties": {"allow_compat_mod": true}}"#, "f.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("properties.allow_compat_mod") && e.contains("f.json"), "{e}");
        let e = parse(r#"{"thread": 3}"#, "f.json").unwrap_err().to_string();
        assert!(e.contains("unknown key thread") && e.contains("did you mean threads?"), "{e}");
        let e =
            parse(r#"{"fs": {"lustre": {"posix_gds_min": 3}}}"#, "f.json").unwrap_err().to_string();
        assert!(e.contains("fs.lustre.posix_gds_min"), "{e}");
    }

    #[test]
    fn mapped_keys_remember_how_the_file_wrote_them() {
        let s = parse(
            r#"{"execution": {"max_io_threads": 0}, "fs": {"weka": {"rdma_write_support": true}}}"#,
            "f",
        )
        .unwrap();
        assert_eq!(s.len(), 1, "execution.max_io_threads is NVIDIA's pool size, not gdio's");
        assert_eq!(s[0].key, "fs.wekafs.rdma_write_support");
        assert_eq!(s[0].written, "fs.weka.rdma_write_support");
    }
}
