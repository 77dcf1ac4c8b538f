//! What the one-time probe learns about a file ([`FileInfo`]) and the types it is made of.
//! Shared by [`super::probe`], which fills them in, and [`super::FileHandle`], which keeps them.

use std::path::PathBuf;

/// What kind of file a handle refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileType {
    /// A regular file.
    Regular,
    /// A block device such as `/dev/nvme0n1`.
    BlockDevice,
    /// Anything else (pipe, character device, socket).
    Other,
}

/// Where the DIO alignment numbers came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AlignSource {
    /// `statx` with `STATX_DIOALIGN` (Linux 6.1+).
    Statx,
    /// The device's logical block size from sysfs or `BLKSSZGET`.
    LogicalBlockSize,
    /// Nothing told; 4096 assumed.
    Assumed,
}

/// The filesystem a file lives on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FsInfo {
    /// `statfs` `f_type` magic.
    pub magic: u64,
    /// Name for the magic (`ext4`, `xfs`, `tmpfs`, ...), or the mount's type name.
    pub name: String,
    /// Where the filesystem is mounted, when mountinfo told.
    pub mount_point: Option<PathBuf>,
    /// The mount source (`/dev/vda1`, ...).
    pub source: Option<String>,
    /// Per-mount options.
    pub mount_options: Vec<String>,
    /// Per-superblock options (`data=ordered` lives here when set).
    pub super_options: Vec<String>,
}

impl FsInfo {
    /// The ext4 journalling mode. ext4 shows `data=` only when it is not the default, so an ext4
    /// mount without it is `ordered`. `None` for other filesystems.
    pub fn ext4_data_mode(&self) -> Option<String> {
        if self.name != "ext4" {
            return None;
        }
        let explicit = self
            .super_options
            .iter()
            .chain(&self.mount_options)
            .find_map(|o| o.strip_prefix("data="));
        Some(explicit.unwrap_or("ordered").to_owned())
    }

    /// True for filesystems that spread data over the network (the ones cuFile's dynamic routing
    /// and per-filesystem RDMA switches are about).
    pub fn is_distributed(&self) -> bool {
        matches!(
            self.name.as_str(),
            "nfs"
                | "nfs4"
                | "lustre"
                | "wekafs"
                | "gpfs"
                | "beegfs"
                | "cifs"
                | "smb3"
                | "ceph"
                | "fuse.glusterfs"
        )
    }
}

/// Whether an `O_DIRECT` descriptor opens on the file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DirectIo {
    /// True when `open(O_DIRECT)` succeeded.
    pub supported: bool,
    /// Why not, when it did not.
    pub reason: Option<String>,
}

/// Everything the probe learnt about a file, once, at open.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileInfo {
    /// The path as given to open.
    pub path: PathBuf,
    /// Regular file or block device.
    pub file_type: FileType,
    /// Size in bytes at open (block devices: the device size).
    pub size: u64,
    /// `major:minor` of the device holding the file (the device itself for a block device).
    pub dev: (u32, u32),
    /// The filesystem.
    pub fs: FsInfo,
    /// `O_DIRECT` support.
    pub direct_io: DirectIo,
    /// Alignment an `O_DIRECT` buffer address needs.
    pub dio_mem_align: u32,
    /// Alignment an `O_DIRECT` file offset and length need.
    pub dio_offset_align: u32,
    /// Where the two alignment numbers came from.
    pub align_source: AlignSource,
}

impl FileInfo {
    /// True for a regular file on a filesystem that keeps its data in memory only (tmpfs,
    /// ramfs), where a write is a copy into pages and no more. A block device node is never
    /// memory-backed, though `/dev` itself is a devtmpfs.
    pub fn is_memory_backed(&self) -> bool {
        self.file_type == FileType::Regular && matches!(self.fs.name.as_str(), "tmpfs" | "ramfs")
    }

    /// True when `offset`, `len` and the buffer address `addr` all meet the DIO alignment.
    pub fn is_dio_aligned(&self, offset: u64, len: u64, addr: u64) -> bool {
        let oa = u64::from(self.dio_offset_align.max(1));
        let ma = u64::from(self.dio_mem_align.max(1));
        offset % oa == 0 && len % oa == 0 && addr % ma == 0
    }
}
