//! Files: opening, the one-time probe, the mount table, page-cache residency, and how tmpfs
//! keeps its pages.

#[cfg(any(test, feature = "fault-injection"))]
pub mod fault;
pub mod from_fd;
mod handle;
pub mod info;
pub mod mountinfo;
pub(crate) mod open;
pub mod posix;
pub mod probe;
pub mod residency;
pub mod tmpfs_pages;
pub mod uring;
mod write_gate;

pub use from_fd::FdRefusal;
pub use handle::{FileHandle, OpenOptions, FILE_WRITERS_MIN_BYTES, MAX_FILE_END};
pub use info::{AlignSource, DirectIo, FileInfo, FileType, FsInfo};
pub use open::MAX_CONFIG_BYTES;
pub use probe::probe_path;
pub use tmpfs_pages::TmpfsPages;
