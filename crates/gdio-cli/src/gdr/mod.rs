//! `gdio gdr …`: the GDRCopy tools (sanity, copybw, copylat, apiperf) on `gdio::gdr`.
//!
//! Options follow upstream's `gdrcopy_*` tools where they make sense. Each tool takes
//! `--json` for a machine-readable result. Without a usable backend each exits with status 2
//! and one line on stderr naming the missing driver.

mod bench;
mod sanity;

use crate::out::outln;
use std::path::PathBuf;
use std::process::ExitCode;

use gdio::gdr::{BackendChoice, Gdr, GdrOptions, MapFlags};

/// Exit status when no mapping backend (gdrdrv or a dma-buf capable driver) is usable.
pub const EXIT_NO_BACKEND: u8 = 2;

/// The `gdr` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum GdrCommand {
    /// Unit tests of the mapping path on a real GPU (like gdrcopy_sanity).
    Sanity(sanity::SanityArgs),
    /// Write and read bandwidth through a mapping (like gdrcopy_copybw).
    Copybw(bench::CopybwArgs),
    /// Copy latency for sizes 1 B .. max in powers of two (like gdrcopy_copylat).
    Copylat(bench::CopylatArgs),
    /// Latency of pin, map, get_info, unmap and unpin (like gdrcopy_apiperf).
    Apiperf(bench::ApiperfArgs),
}

/// Options every tool shares.
#[derive(clap::Args, Debug, Clone)]
pub struct Common {
    /// CUDA device ordinal.
    #[arg(short = 'd', long = "device", default_value_t = 0)]
    pub gpu: i32,
    /// gdrdrv device node (default /dev/gdrdrv, or $GDIO_GDR_DEVICE; e.g. /dev/mtgdrdrv).
    #[arg(long = "gdr-device")]
    pub gdr_device: Option<PathBuf>,
    /// Backend: auto, gdrdrv or dmabuf.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `--backend` values.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendArg {
    /// gdrdrv, then dma-buf.
    Auto,
    /// Only gdrdrv (or a port at --gdr-device).
    Gdrdrv,
    /// Only the CUDA 13.3+ dma-buf path.
    Dmabuf,
}

/// `-M` values (mapping type to request).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapArg {
    /// Whatever the backend picks.
    Default,
    /// Write-combining.
    Wc,
    /// Cached.
    Cache,
    /// Device.
    Device,
}

impl MapArg {
    fn flags(self) -> MapFlags {
        match self {
            MapArg::Default => MapFlags::Default,
            MapArg::Wc => MapFlags::RequireWc,
            MapArg::Cache => MapFlags::RequireCaching,
            MapArg::Device => MapFlags::RequireDevice,
        }
    }
}

impl Common {
    fn options(&self) -> GdrOptions {
        let mut o = GdrOptions::default().with_env();
        if let Some(p) = &self.gdr_device {
            o.device_path = p.clone();
        }
        match self.backend {
            BackendArg::Auto => {}
            BackendArg::Gdrdrv => o.backend = BackendChoice::Gdrdrv,
            BackendArg::Dmabuf => o.backend = BackendChoice::DmaBuf,
        }
        o
    }

    /// Opens the library or reports why not (one line) and returns the exit code.
    fn open(&self, tool: &str) -> Result<Gdr, ExitCode> {
        Gdr::open_with(&self.options()).map_err(|e| {
            let opts = self.options();
            if self.json {
                let backends = gdio::gdr::probe_backends(&opts);
                let v = serde_json::json!({ "tool": tool, "ok": false, "error": e.to_string(), "backends": backends });
                outln!("{v}");
            }
            eprintln!("gdio gdr {tool}: {e}");
            ExitCode::from(EXIT_NO_BACKEND)
        })
    }
}

/// Runs one `gdr` subcommand.
pub fn run(cmd: GdrCommand) -> ExitCode {
    match cmd {
        GdrCommand::Sanity(a) => sanity::run(a),
        GdrCommand::Copybw(a) => bench::copybw(a),
        GdrCommand::Copylat(a) => bench::copylat(a),
        GdrCommand::Apiperf(a) => bench::apiperf(a),
    }
}

/// Prints an error that happened after open (one line) and returns exit status 1.
fn fail(tool: &str, json: bool, e: &gdio::Error) -> ExitCode {
    if json {
        outln!("{}", serde_json::json!({ "tool": tool, "ok": false, "error": e.to_string() }));
    }
    eprintln!("gdio gdr {tool}: {e}");
    ExitCode::FAILURE
}
