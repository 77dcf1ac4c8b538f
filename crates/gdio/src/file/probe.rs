//! The one-time probe of a file: type, filesystem, mount options, `O_DIRECT`, DIO alignment,
//! size. Its result, [`FileInfo`], is what backends score requests on.

use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use rustix::fs::{AtFlags, StatxFlags};

use super::info::{AlignSource, DirectIo, FileInfo, FileType, FsInfo};
use super::mountinfo::{self, MountEntry};
use super::open;
use crate::error::{Error, Result};

/// Names for the `statfs` magics gdio cares about.
pub fn fs_name(magic: u64) -> Option<&'static str> {
    Some(match magic {
        0xEF53 => "ext4",
        0x5846_5342 => "xfs",
        0x0102_1994 => "tmpfs",
        0x8584_58f6 => "ramfs",
        0x9123_683E => "btrfs",
        0x6969 => "nfs",
        0x0BD0_0BD0 => "lustre",
        0x5753_4653 => "wekafs",
        0x4750_4653 => "gpfs",
        0x1975_0401 => "beegfs",
        0x794C_7630 => "overlayfs",
        0x6573_5546 => "fuse",
        0x6264_6576 => "devtmpfs",
        0x2FC1_2FC1 => "zfs",
        0x5346_544E => "ntfs",
        0x4D44 => "vfat",
        0xFF53_4D42 => "cifs",
        0x0027_e0eb => "cgroup",
        0x9FA0 => "proc",
        0x6265_6572 => "sysfs",
        0x7366_7546 => "virtiofs",
        _ => return None,
    })
}

fn logical_block_size(dev: (u32, u32), fd: BorrowedFd<'_>, is_block: bool) -> Option<u32> {
    if is_block {
        let mut sz: libc::c_int = 0;
        // SAFETY: BLKSSZGET writes one int through the pointer, which points to `sz`.
        let rc =
            unsafe { libc::ioctl(std::os::fd::AsRawFd::as_raw_fd(&fd), libc::BLKSSZGET, &mut sz) };
        if rc == 0 && sz > 0 {
            return Some(sz as u32);
        }
    }
    let p = format!("/sys/dev/block/{}:{}/queue/logical_block_size", dev.0, dev.1);
    let direct = std::fs::read_to_string(&p).ok();
    // A partition has no queue/ of its own: its parent does.
    let text = direct.or_else(|| {
        let link = std::fs::canonicalize(format!("/sys/dev/block/{}:{}", dev.0, dev.1)).ok()?;
        std::fs::read_to_string(link.parent()?.join("queue/logical_block_size")).ok()
    })?;
    text.trim().parse().ok().filter(|v: &u32| *v > 0)
}

/// Probes the file open on `fd`. `direct` is the result of trying to open an `O_DIRECT` twin.
pub fn probe(path: &Path, fd: BorrowedFd<'_>, direct: DirectIo) -> Result<FileInfo> {
    let stx = rustix::fs::statx(
        fd,
        "",
        AtFlags::EMPTY_PATH,
        StatxFlags::TYPE | StatxFlags::SIZE | StatxFlags::DIOALIGN,
    )
    .map_err(|e| Error::from_errno(e.raw_os_error(), "statx failed").with_path(path))?;
    let mode = u32::from(stx.stx_mode) & libc::S_IFMT;
    let file_type = match mode {
        libc::S_IFREG => FileType::Regular,
        libc::S_IFBLK => FileType::BlockDevice,
        _ => FileType::Other,
    };
    let dev = if file_type == FileType::BlockDevice {
        (stx.stx_rdev_major, stx.stx_rdev_minor)
    } else {
        (stx.stx_dev_major, stx.stx_dev_minor)
    };
    let size = if file_type == FileType::BlockDevice {
        // A block device's size is where its end is.
        rustix::fs::seek(fd, rustix::fs::SeekFrom::End(0)).unwrap_or(0)
    } else {
        stx.stx_size
    };

    let sfs = rustix::fs::fstatfs(fd)
        .map_err(|e| Error::from_errno(e.raw_os_error(), "statfs failed").with_path(path))?;
    #[allow(clippy::unnecessary_cast)]
    let magic = sfs.f_type as u64;
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let fs_dev = (stx.stx_dev_major, stx.stx_dev_minor);
    let mount: Option<MountEntry> = mountinfo::lookup(&canonical, fs_dev);
    let name = fs_name(magic)
        .map(str::to_owned)
        .or_else(|| mount.as_ref().map(|m| m.fs_type.clone()))
        .unwrap_or_else(|| format!("unknown(0x{magic:x})"));
    let fs = FsInfo {
        magic,
        name,
        mount_point: mount.as_ref().map(|m| m.mount_point.clone()),
        source: mount.as_ref().map(|m| m.source.clone()),
        mount_options: mount.as_ref().map(|m| m.mount_options.clone()).unwrap_or_default(),
        super_options: mount.as_ref().map(|m| m.super_options.clone()).unwrap_or_default(),
    };

    let has_dioalign =
        stx.stx_mask & StatxFlags::DIOALIGN.bits() != 0 && stx.stx_dio_offset_align != 0;
    let (dio_mem_align, dio_offset_align, align_source) = if has_dioalign {
        (stx.stx_dio_mem_align, stx.stx_dio_offset_align, AlignSource::Statx)
    } else if let Some(lbs) = logical_block_size(fs_dev, fd, file_type == FileType::BlockDevice) {
        (lbs, lbs, AlignSource::LogicalBlockSize)
    } else {
        (4096, 4096, AlignSource::Assumed)
    };

    Ok(FileInfo {
        path: path.to_path_buf(),
        file_type,
        size,
        dev,
        fs,
        direct_io: direct,
        dio_mem_align,
        dio_offset_align,
        align_source,
    })
}

/// Probes a path without keeping it open (used by `gdio check`).
pub fn probe_path(path: &Path) -> Result<FileInfo> {
    let file = open::open_for_probe(path)?;
    let direct = open::try_open_direct(path, &file, false);
    probe(path, file.as_fd(), direct.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ext4_data_mode_defaults_to_ordered() {
        let mut fs = FsInfo {
            magic: 0xEF53,
            name: "ext4".into(),
            mount_point: None,
            source: None,
            mount_options: vec!["rw".into()],
            super_options: vec!["errors=remount-ro".into()],
        };
        assert_eq!(fs.ext4_data_mode().as_deref(), Some("ordered"));
        fs.super_options.push("data=journal".into());
        assert_eq!(fs.ext4_data_mode().as_deref(), Some("journal"));
        fs.name = "xfs".into();
        assert_eq!(fs.ext4_data_mode(), None);
    }

    #[test]
    fn probes_a_tmp_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![7u8; 12345]).unwrap();
        let info = probe_path(&p).unwrap();
        assert_eq!(info.file_type, FileType::Regular);
        assert_eq!(info.size, 12345);
        assert!(info.dio_offset_align.is_power_of_two());
        assert!(info.dio_mem_align.is_power_of_two());
        assert!(!info.fs.name.is_empty());
    }

    #[test]
    fn probes_shm_as_tmpfs() {
        let dir = match tempfile::tempdir_in("/dev/shm") {
            Ok(d) => d,
            Err(e) => {
                eprintln!("skipped: no /dev/shm ({e})");
                return;
            }
        };
        let p = dir.path().join("f");
        std::fs::write(&p, b"abc").unwrap();
        let info = probe_path(&p).unwrap();
        assert_eq!(info.fs.name, "tmpfs");
        assert_eq!(info.fs.mount_point.as_deref(), Some(Path::new("/dev/shm")));
        assert!(info.is_memory_backed());
    }

    #[test]
    fn only_regular_files_on_tmpfs_and_ramfs_are_memory_backed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"abc").unwrap();
        let mut info = probe_path(&p).unwrap();
        for (magic, name, want) in [
            (0xEF53, "ext4", false),
            (0x5846_5342, "xfs", false),
            (0x6969, "nfs", false),
            (0x0102_1994, "tmpfs", true),
            (0x8584_58f6, "ramfs", true),
        ] {
            info.fs.magic = magic;
            info.fs.name = name.into();
            assert_eq!(fs_name(magic), Some(name));
            assert_eq!(info.is_memory_backed(), want, "{name}");
        }
        // A device node lives on /dev's devtmpfs, or on tmpfs in a container: its data does not.
        info.file_type = FileType::BlockDevice;
        assert!(!info.is_memory_backed());
    }
}
