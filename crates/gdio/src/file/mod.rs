//! Files: opening, the one-time probe, the mount table, and page-cache residency.

pub mod from_fd;
mod handle;
pub mod mountinfo;
pub mod posix;
pub mod probe;
pub mod residency;

pub use from_fd::FdRefusal;
pub use handle::{FileHandle, OpenOptions};
pub use probe::{probe_path, AlignSource, DirectIo, FileInfo, FileType, FsInfo};
