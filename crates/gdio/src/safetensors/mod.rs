//! Safetensors checkpoints: open, validate, load into GPU or host memory, save.
//!
//! - [`header`]: one file's header, parsed and validated without trusting it.
//! - [`index`]: a [`Checkpoint`] of one file, a list, a directory or a
//!   `*.safetensors.index.json`.
//! - [`plan`]: what goes where ([`Plan`], [`Target`]): all tensors, those matching name
//!   patterns, or a caller's list of tensors and tensor slices per device.
//! - [`mod@load`]: one allocation per file and target, filled by large aligned reads, tensors
//!   handed out as they land ([`load_stream`]), several GPUs filled by reading each byte once
//!   and copying between GPUs.
//! - [`mod@save`]: GPU or host tensors to a file or a sharded checkpoint, through a temporary name.
//!
//! ```
//! use std::sync::Arc;
//! use gdio::safetensors::{load, save, Checkpoint, Dtype, LoadOptions, Plan, SaveOptions, SaveTensor, Target};
//!
//! # fn main() -> gdio::Result<()> {
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("model.safetensors");
//! let driver = Arc::new(gdio::Driver::new(gdio::Config::default())?);
//!
//! let w: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
//! let b: Vec<u8> = vec![1, 2, 3, 4, 5, 6, 7, 8];
//! let tensors = [
//!     SaveTensor::host("w", Dtype::BF16, &[32, 64], &w)?,
//!     SaveTensor::host("b", Dtype::F32, &[2], &b)?,
//! ];
//! save(&driver, &tensors, &path, &SaveOptions::default())?;
//!
//! let ckpt = Checkpoint::open(&path)?;
//! let plan = Plan::matching(&ckpt, &["w"], &[Target::Host])?;
//! let loaded = load(&driver, &ckpt, &plan, &LoadOptions::default())?;
//! let view = loaded.get("w", Target::Host).unwrap();
//! assert_eq!(view.shape, [32, 64]);
//! assert_eq!(loaded.host_bytes(view).unwrap(), &w[..]);
//! # Ok(())
//! # }
//! ```

mod alloc;
pub mod dtype;
pub mod header;
pub mod index;
pub mod load;
pub mod plan;
pub mod save;

pub use alloc::{Allocation, ALIGN};
pub use dtype::{byte_size, dtype_from_name, dtype_name, element_count, Dtype, ALL_DTYPES};
pub use header::{parse_header, parse_prefix, read_header, FileHeader, Header, TensorInfo};
pub use index::{parse_index, Checkpoint, Index, TensorLocation};
pub use load::{
    load, load_stream, LoadOptions, LoadShape, LoadStream, LoadTimes, Loaded, TensorView,
};
pub use plan::{Plan, PlanItem, Target};
pub use save::{build_header, save, SaveOptions, SaveTensor, Saved};
