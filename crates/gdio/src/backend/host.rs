//! The host backend: `pread`/`pwrite` straight into and out of host memory, no bounce, split
//! over the engine's workers.

use std::sync::Arc;

use super::{Backend, Request, Score};
use crate::config::Config;
use crate::engine::Engine;
use crate::error::Result;
use crate::file::FileHandle;
use crate::memory::{BufferRef, MemoryKind};

/// POSIX I/O in place, for host memory.
#[derive(Debug, Clone)]
pub struct HostBackend {
    engine: Arc<Engine>,
}

impl HostBackend {
    /// A host backend running on `engine`.
    pub fn new(engine: Arc<Engine>) -> Self {
        HostBackend { engine }
    }
}

impl Backend for HostBackend {
    fn name(&self) -> &'static str {
        "host"
    }

    fn score(&self, req: &Request<'_>, _config: &Config) -> Score {
        match req.memory {
            MemoryKind::Host | MemoryKind::PinnedHost => {
                Score::fallback("pread/pwrite straight into host memory")
            }
            MemoryKind::Device { .. } => {
                Score::reject("device memory needs a GPU path (gds or compat)")
            }
            MemoryKind::Managed => {
                Score::reject("managed memory is not supported; use device or host memory")
            }
        }
    }

    unsafe fn read(&self, file: &FileHandle, dst: BufferRef, offset: u64) -> Result<usize> {
        // SAFETY: forwarded contract.
        Ok(unsafe { self.engine.read(file, dst, offset) }?.bytes as usize)
    }

    unsafe fn write(&self, file: &FileHandle, src: BufferRef, offset: u64) -> Result<usize> {
        // SAFETY: forwarded contract.
        Ok(unsafe { self.engine.write(file, src, offset) }?.bytes as usize)
    }

    fn engine(&self) -> Option<&Arc<Engine>> {
        Some(&self.engine)
    }
}
