//! gdio: move bytes between files and GPU or host memory at the hardware limit.
#![warn(missing_docs)]

pub mod backend;
pub mod config;
pub mod driver;
pub mod engine;
pub mod error;
pub mod file;
pub mod gdr;
pub mod gpu;
pub mod memory;
pub mod platform;
pub mod stats;

pub use config::{Config, ConfigEntry, DirectIoPolicy, LoadedConfig, Source};
pub use driver::{Decision, Driver};
pub use gpu::{DeviceBuffer, PinnedBuffer};
pub use error::{Error, ErrorKind, Result};
pub use file::{FileHandle, FileInfo, OpenOptions};
pub use memory::{BufferRef, IoBuf, IoBufMut, MemoryKind};
pub use stats::{BackendStats, StatsSnapshot};
