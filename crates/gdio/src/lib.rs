//! gdio: move bytes between files and GPU or host memory at the hardware limit.
#![warn(missing_docs)]

pub mod error;
pub mod gdr;

pub use error::{Error, ErrorKind, Result};
