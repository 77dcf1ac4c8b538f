//! Files: opening, the one-time probe, the mount table, and page-cache residency.

mod handle;
pub mod mountinfo;
pub mod posix;
pub mod probe;
pub mod residency;

pub use handle::{FileHandle, OpenOptions};
pub use probe::{probe_path, AlignSource, DirectIo, FileInfo, FileType, FsInfo};
