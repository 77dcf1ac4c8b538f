//! The rules every fastpath and fallback applies, from cuFile's compatibility-mode table and
//! hipFile's fastpath score, each returning the reason it rules a backend out.
//!
//! A fastpath checks, in this order, and the first rule that fails names the reject:
//! 1. configuration: `force_compat_mode`; the switches that send an I/O to POSIX even when
//!    compat is disallowed (`fs.<fs>.posix_gds_min_kb`, `fs.<fs>.rdma_write_support=false`);
//!    `gds_rdma_write_support=false` for writes; dynamic routing with `SYS_MEM` first for
//!    distributed filesystems; `posix_unaligned_writes` for unaligned writes;
//! 2. platform (driver, library): checked by each fastpath itself;
//! 3. file: an `O_DIRECT` descriptor; a regular file or block device; a regular file on ext4
//!    `data=ordered` or xfs unless `unsupported_file_systems`;
//! 4. memory kind: device memory;
//! 5. alignment and size: file offset and size multiples of the statx DIO offset alignment, the
//!    buffer address a multiple of the DIO memory alignment.

use crate::backend::{Op, Reason, Request};
use crate::config::Config;
use crate::file::{FileInfo, FileType};
use crate::memory::MemoryKind;

/// cuFile's page boundary for `posix_unaligned_writes`.
pub const PAGE: u64 = 4096;

/// Switches that send an I/O to POSIX (compat) even when `allow_compat_mode` is false:
/// `posix_gds_min_kb` for small I/O and `rdma_write_support=false` for writes, per filesystem.
pub fn forced_posix(req: &Request<'_>, config: &Config) -> Option<Reason> {
    let fs_name = req.file.fs.name.as_str();
    let fs = config.fs_config(fs_name);
    if fs.posix_gds_min_kb > 0 && req.len <= fs.posix_gds_min_kb.saturating_mul(1024) {
        return Some(
            format!(
            "{} bytes is at most fs.{fs_name}.posix_gds_min_kb={} KiB: small I/O on {fs_name} goes through POSIX (even with compat disallowed)",
            req.len, fs.posix_gds_min_kb
            )
            .into(),
        );
    }
    if req.op == Op::Write && !fs.rdma_write_support {
        return Some(
            format!(
            "fs.{fs_name}.rdma_write_support=false: writes on {fs_name} go through POSIX (even with compat disallowed)"
            )
            .into(),
        );
    }
    None
}

/// The configuration rules of a fastpath: the first one that rules it out, if any.
pub fn config_rule(req: &Request<'_>, config: &Config) -> Option<Reason> {
    if config.force_compat_mode {
        return Some("force_compat_mode=true: every I/O goes through compat".into());
    }
    if let Some(why) = forced_posix(req, config) {
        return Some(why);
    }
    if req.op == Op::Write && !config.gds_rdma_write_support {
        return Some(
            "gds_rdma_write_support=false: direct writes are off, writes go through compat".into(),
        );
    }
    if config.rdma_dynamic_routing
        && req.file.fs.is_distributed()
        && config.rdma_dynamic_routing_order.first().map(String::as_str) == Some("SYS_MEM")
    {
        return Some(
            format!(
            "rdma_dynamic_routing with rdma_dynamic_routing_order starting at SYS_MEM: I/O on the distributed filesystem {} goes through compat",
            req.file.fs.name
            )
            .into(),
        );
    }
    if req.op == Op::Write
        && config.posix_unaligned_writes
        && (req.file_offset % PAGE != 0 || req.len % PAGE != 0)
    {
        return Some(
            format!(
            "posix_unaligned_writes=true: write at offset {} of {} bytes is not 4 KiB aligned, it goes through compat",
            req.file_offset, req.len
            )
            .into(),
        );
    }
    None
}

/// True when a regular file's filesystem is one a fastpath is known to be safe on (ext4 with
/// `data=ordered`, xfs). The reason says why not otherwise.
pub fn supported_fs(file: &FileInfo) -> Result<(), Reason> {
    match (file.fs.name.as_str(), file.fs.ext4_data_mode()) {
        ("xfs", _) => Ok(()),
        ("ext4", Some(mode)) if mode == "ordered" => Ok(()),
        ("ext4", Some(mode)) => Err(format!(
            "ext4 mounted data={mode}: the fastpath needs data=ordered (set unsupported_file_systems=true to allow it anyway)"
        )
        .into()),
        (name, _) => Err(format!(
            "{name} is not a filesystem the fastpath is known to be safe on (ext4 data=ordered, xfs); set unsupported_file_systems=true to allow it anyway"
        )
        .into()),
    }
}

/// The file rules of a fastpath.
pub fn file_rule(file: &FileInfo, config: &Config) -> Option<Reason> {
    if !file.direct_io.supported {
        let why = file.direct_io.reason.as_deref().unwrap_or("open(O_DIRECT) failed");
        return Some(format!("no O_DIRECT descriptor: {why}").into());
    }
    match file.file_type {
        FileType::BlockDevice => None,
        FileType::Other => Some("not a regular file or block device".into()),
        FileType::Regular if config.unsupported_file_systems => None,
        FileType::Regular => supported_fs(file).err(),
    }
}

/// The memory-kind rule of a fastpath: device memory only.
pub fn memory_rule(memory: MemoryKind) -> Option<Reason> {
    match memory {
        MemoryKind::Device { .. } => None,
        MemoryKind::Host => Some("host memory: the fastpath needs device memory".into()),
        MemoryKind::PinnedHost => Some("pinned memory: the fastpath needs device memory".into()),
        MemoryKind::Managed => Some("managed memory: the fastpath needs device memory".into()),
    }
}

/// The alignment and size rules of a fastpath.
pub fn alignment_rule(req: &Request<'_>) -> Option<Reason> {
    let (oa, ma) = (u64::from(req.file.dio_offset_align), u64::from(req.file.dio_mem_align));
    if oa == 0 || ma == 0 {
        return Some("the file has no direct-I/O alignment (statx reported 0)".into());
    }
    if req.file_offset % oa != 0 {
        return Some(
            format!(
                "file offset {} is not a multiple of the DIO offset alignment {oa}",
                req.file_offset
            )
            .into(),
        );
    }
    if req.len % oa != 0 {
        return Some(
            format!("size {} is not a multiple of the DIO offset alignment {oa}", req.len).into(),
        );
    }
    if req.buf_addr % ma != 0 {
        return Some(
            format!(
                "buffer address 0x{:x} is not a multiple of the DIO memory alignment {ma}",
                req.buf_addr
            )
            .into(),
        );
    }
    None
}

/// File, memory and alignment rules together, in order (the part after the platform check).
pub fn request_rule(req: &Request<'_>, config: &Config) -> Option<Reason> {
    file_rule(req.file, config).or_else(|| memory_rule(req.memory)).or_else(|| alignment_rule(req))
}

/// The configuration rule of a fallback (compat): it serves only when compat is allowed or
/// forced, or a switch sends the I/O to POSIX anyway.
pub fn fallback_config_rule(req: &Request<'_>, config: &Config) -> Option<Reason> {
    if config.allow_compat_mode || config.force_compat_mode || forced_posix(req, config).is_some() {
        None
    } else {
        Some("compat mode is disallowed (allow_compat_mode=false)".into())
    }
}
