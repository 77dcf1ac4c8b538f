//! Backends and what they report: which to use ([`GdrOptions`]), whether each is usable
//! here ([`probe_backends`]), and what a pinned range is ([`MapInfo`]).

use std::path::PathBuf;

use serde::Serialize;

use super::*;
use super::{backend_dmabuf::Dmabuf, backend_gdrdrv::Gdrdrv};

/// Which backend a [`Gdr`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum BackendKind {
    /// The gdrdrv kernel driver or a port with its ABI.
    Gdrdrv,
    /// `cuMemGetHandleForAddressRange` dma-buf fd + `mmap` (CUDA 13.3+).
    DmaBuf,
}

impl BackendKind {
    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Gdrdrv => "gdrdrv",
            BackendKind::DmaBuf => "dma-buf",
        }
    }
}

/// Which backends [`Gdr::open_with`] may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BackendChoice {
    /// gdrdrv first, then dma-buf.
    #[default]
    Auto,
    /// Only gdrdrv (or a port at [`GdrOptions::device_path`]).
    Gdrdrv,
    /// Only dma-buf.
    DmaBuf,
}

/// Configuration of the mapping path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GdrOptions {
    /// gdrdrv device node: `/dev/gdrdrv`, or a port's node such as `/dev/mtgdrdrv`.
    pub device_path: PathBuf,
    /// Allowed backends.
    pub backend: BackendChoice,
}

impl Default for GdrOptions {
    fn default() -> Self {
        GdrOptions { device_path: PathBuf::from(DEFAULT_DEVICE), backend: BackendChoice::Auto }
    }
}

impl GdrOptions {
    /// Applies `GDIO_GDR_DEVICE` (device node) and `GDRCOPY_USE_DMABUF_MMAP=1` (dma-buf only).
    pub fn with_env(mut self) -> Self {
        if let Some(p) = std::env::var_os(DEVICE_ENV).filter(|p| !p.is_empty()) {
            self.device_path = PathBuf::from(p);
        }
        if std::env::var(FORCE_DMABUF_ENV).is_ok_and(|v| v.trim() == "1") {
            self.backend = BackendChoice::DmaBuf;
        }
        self
    }
}

/// Whether one backend is usable here, and why (for `gdio check`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackendStatus {
    /// `gdrdrv` or `dma-buf`.
    pub name: String,
    /// Usable now.
    pub available: bool,
    /// What was found, or what is missing and how to get it.
    pub reason: String,
}

/// Probes every backend without keeping anything open.
pub fn probe_backends(opts: &GdrOptions) -> Vec<BackendStatus> {
    let gdrdrv = match Gdrdrv::open(&opts.device_path) {
        Ok(d) => BackendStatus {
            name: "gdrdrv".into(),
            available: true,
            reason: format!(
                "gdrdrv {} at {}",
                backend_gdrdrv::fmt_version(d.version),
                d.path().display()
            ),
        },
        Err(e) => BackendStatus { name: "gdrdrv".into(), available: false, reason: e.to_string() },
    };
    let dmabuf = match Dmabuf::open() {
        Ok(d) => BackendStatus {
            name: "dma-buf".into(),
            available: true,
            reason: format!(
                "CUDA driver API {} supports dma-buf export and CPU mmap",
                d.driver_version
            ),
        },
        Err(e) => BackendStatus { name: "dma-buf".into(), available: false, reason: e.to_string() },
    };
    vec![gdrdrv, dmabuf]
}

/// Details of a pinned range (`gdr_info_v2_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MapInfo {
    /// Aligned start of the pinned range; a mapping's first byte is this address.
    pub va: u64,
    /// Aligned length of the pinned range.
    pub mapped_size: u64,
    /// Page size of the pin (64 KiB with gdrdrv, the host page with dma-buf).
    pub page_size: u32,
    /// Deprecated upstream; 0 under dma-buf.
    pub tm_cycles: u64,
    /// Deprecated upstream; 0 under dma-buf.
    pub cycles_per_ms: u32,
    /// Whether the range is mapped now.
    pub mapped: bool,
    /// Whether the mapping is write-combining.
    pub wc_mapping: bool,
    /// The mapping type ([`MappingType::None`] when not mapped).
    pub mapping_type: MappingType,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_reports_each_backend_with_a_reason() {
        let opts = GdrOptions { device_path: "/nonexistent/gdrdrv".into(), ..Default::default() };
        let st = probe_backends(&opts);
        assert_eq!(st.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["gdrdrv", "dma-buf"]);
        assert!(!st[0].available);
        assert!(
            st[0].reason.contains("/nonexistent/gdrdrv")
                && st[0].reason.contains("gdrdrv kernel module"),
            "{}",
            st[0].reason
        );
        for s in &st {
            assert!(!s.reason.is_empty());
            eprintln!("{}: {} ({})", s.name, s.available, s.reason);
        }
    }

    #[test]
    fn options_default_and_env() {
        let o = GdrOptions::default();
        assert_eq!(o.device_path, PathBuf::from("/dev/gdrdrv"));
        assert_eq!(o.backend, BackendChoice::Auto);
    }
}
