//! gdio moves bytes between files and GPU (or host) memory at the speed of the slowest wire in
//! the path, on any Linux machine, and says which path every I/O took and why.
//!
//! A [`Driver`] holds the configuration, the GPU runtime (CUDA through cudarc, loaded at run
//! time, or host memory only), the engine and the backends. Every read or write is scored by
//! each backend as cuFile and hipFile do (100 fastpath, 1 fallback, -1 reject with a reason);
//! the highest serves it. Where storage cannot DMA into the GPU (no nvidia-fs, no P2PDMA, a
//! container, a VM), the `compat` backend reads through pinned bounce buffers on a pool of
//! workers, overlapping each read with the previous chunk's copy to the GPU.
//!
//! ```
//! use gdio::{Config, Driver, FileHandle, OpenOptions};
//!
//! # fn main() -> gdio::Result<()> {
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("weights.bin");
//! let data: Vec<u8> = (0..1_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
//! std::fs::write(&path, &data).unwrap();
//!
//! let driver = Driver::new(Config::default())?;
//! let file = FileHandle::open(&path)?;
//!
//! if driver.runtime().device_count() > 0 {
//!     // File → GPU 0, like cuFileRead(fh, buf, size, file_offset, buf_offset).
//!     let mut gpu = driver.alloc_device(0, data.len())?;
//!     let n = driver.read(&file, 0, &mut gpu, 0, data.len())?;
//!     assert_eq!(gpu.to_vec()?, data[..n]);
//! } else {
//!     // No GPU here: the same call reads into host memory, in place.
//!     let mut host = vec![0u8; data.len()];
//!     let n = driver.read(&file, 0, &mut host, 0, data.len())?;
//!     assert_eq!(host[..n], data[..]);
//! }
//!
//! // Which backend served, and why the others did not.
//! let stats = driver.stats();
//! assert_eq!(stats.backends.values().map(|b| b.ops).sum::<u64>(), 1);
//!
//! // Write it back out.
//! let out = FileHandle::open_with(dir.path().join("out.bin"), OpenOptions::new().write(true).read(true).create(true))?;
//! driver.write(&out, 0, &data, 0, data.len())?;
//! assert_eq!(std::fs::read(dir.path().join("out.bin")).unwrap(), data);
//! # Ok(())
//! # }
//! ```
//!
//! Modules: [`config`] (layered settings), [`mod@file`] (open and probe), [`backend`] (scoring,
//! selection, retry; `gds`, `compat`, `host`), [`engine`] (tasks, workers, bounce buffers),
//! [`gpu`] (the runtime trait: CUDA, host, simulated), [`gdr`] (CPU mappings of GPU memory,
//! GDRCopy-compatible), [`stats`], [`platform`] (what the machine offers).
#![warn(missing_docs)]

pub mod backend;
pub mod batch;
pub mod config;
pub mod cpu_steal;
pub mod driver;
pub mod engine;
pub mod error;
pub mod file;
pub mod gdr;
pub mod gpu;
pub mod memory;
pub mod op_stats;
pub mod platform;
pub mod request;
pub mod safetensors;
pub mod stats;
pub mod stream_io;
pub mod submit;
pub mod submit_group;

pub use batch::{Batch, BatchEntry, BatchEvent, BatchState, BatchStatus};
pub use config::{Config, ConfigEntry, DirectIoPolicy, IoEngine, LoadedConfig, Source};
pub use driver::{Decision, Driver};
pub use error::{CodeDomain, Error, ErrorKind, Result};
pub use file::{FileHandle, FileInfo, OpenOptions};
pub use gpu::{DeviceBuffer, PinnedBuffer};
pub use memory::{BufferRef, IoBuf, IoBufMut, KnownBuffer, MemoryKind};
pub use request::Op;
pub use stats::{BackendStats, StatsSnapshot};
pub use stream_io::StreamIoParams;
pub use submit::IoHandle;
pub use submit_group::SubmitGroup;
