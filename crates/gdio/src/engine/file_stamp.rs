//! What identifies a file's contents between two looks at it: its size, mtime and ctime
//! (one `fstat`). Page-cache pins and read-ahead keep bytes of a file past the read that
//! fetched them, and hand them out only while the file's stamp is still the one taken before
//! they were fetched.
//!
//! Every change to a file's data moves its mtime or ctime (a write, truncate, hole punch, a
//! direct write), but a timestamp is coarse (a clock tick, a second or two on some
//! filesystems): a change in the same tick as the look before it would leave the stamp as it
//! was. So bytes are kept only of a file whose last change is at least [`SETTLE`] in the past:
//! any later change then stamps a time that differs from it. Network filesystems and FUSE,
//! whose page cache may lag the server and whose timestamps the server sets, never qualify
//! ([`keepable`]).

use std::os::fd::BorrowedFd;
use std::time::{Duration, SystemTime};

use crate::file::{FileHandle, FileType};

/// A file whose ctime is less than this old keeps no bytes past a read (see the module doc).
pub(crate) const SETTLE: Duration = Duration::from_secs(2);

/// The file's size, mtime and ctime: when any of them moves, bytes kept of it go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub size: u64,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

impl Stamp {
    fn of(st: &rustix::fs::Stat) -> Stamp {
        Stamp {
            size: st.st_size as u64,
            mtime: (st.st_mtime, st.st_mtime_nsec as i64),
            ctime: (st.st_ctime, st.st_ctime_nsec as i64),
        }
    }

    /// Whether the file's last change is at least [`SETTLE`] in the past.
    pub(crate) fn settled(&self, now: SystemTime) -> bool {
        self.settled_for(now, SETTLE)
    }

    /// Whether the file's last change is at least `settle` in the past (a ctime too far in
    /// the future to represent is not).
    pub(crate) fn settled_for(&self, now: SystemTime, settle: Duration) -> bool {
        let since_epoch =
            Duration::new(self.ctime.0.max(0) as u64, self.ctime.1.clamp(0, 999_999_999) as u32);
        SystemTime::UNIX_EPOCH
            .checked_add(since_epoch)
            .and_then(|changed| now.duration_since(changed).ok())
            .is_some_and(|d| d >= settle)
    }
}

/// The file's identity (device, inode) and stamp now.
pub(crate) fn stat(fd: BorrowedFd<'_>) -> Option<((u64, u64), Stamp)> {
    let st = rustix::fs::fstat(fd).ok()?;
    Some(((st.st_dev, st.st_ino), Stamp::of(&st)))
}

/// Whether bytes of `file` may be kept past a read: a regular file on a local filesystem.
pub(crate) fn keepable(file: &FileHandle) -> bool {
    let info = file.info();
    info.file_type == FileType::Regular
        && !info.fs.is_distributed()
        && !info.fs.name.starts_with("fuse")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(ctime: (i64, i64)) -> Stamp {
        Stamp { size: 1, mtime: ctime, ctime }
    }

    #[test]
    fn a_file_is_settled_only_two_seconds_after_its_last_change() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert!(stamp((1_000_000 - 3, 0)).settled(now));
        assert!(stamp((1_000_000 - 2, 0)).settled(now));
        assert!(!stamp((1_000_000 - 2, 1)).settled(now), "a nanosecond short");
        assert!(!stamp((1_000_000, 0)).settled(now));
        assert!(!stamp((1_000_010, 0)).settled(now), "a ctime in the future");
        assert!(stamp((-5, 0)).settled(now), "before the epoch");
        assert!(!stamp((i64::MAX, 999_999_999)).settled(now), "beyond what time can hold");
        assert!(stamp((1_000_000, 0)).settled_for(now, Duration::ZERO));
        assert!(!stamp((1_000_000, 0)).settled_for(now, Duration::from_nanos(1)));
    }
}
