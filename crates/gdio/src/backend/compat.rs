//! The compat backend: GPU memory served by POSIX reads and writes through pinned host bounce
//! buffers (the engine). Every machine has it; it is the fallback of every fastpath.

use std::sync::Arc;

use super::{rules, Backend, Request, Score};
use crate::config::Config;
use crate::engine::Engine;
use crate::error::Result;
use crate::file::FileHandle;
use crate::memory::{BufferRef, MemoryKind};

/// POSIX I/O through pinned bounce buffers, for device memory.
#[derive(Debug, Clone)]
pub struct CompatBackend {
    engine: Arc<Engine>,
}

impl CompatBackend {
    /// A compat backend running on `engine`.
    pub fn new(engine: Arc<Engine>) -> Self {
        CompatBackend { engine }
    }
}

impl Backend for CompatBackend {
    fn name(&self) -> &'static str {
        "compat"
    }

    fn score(&self, req: &Request<'_>, config: &Config) -> Score {
        if let Some(why) = rules::fallback_config_rule(req, config) {
            return Score::reject(why);
        }
        match req.memory {
            MemoryKind::Device { .. } => Score::fallback("POSIX I/O through pinned bounce buffers"),
            MemoryKind::Managed => {
                Score::reject("managed memory is not supported; use device or host memory")
            }
            MemoryKind::Host | MemoryKind::PinnedHost => {
                Score::reject("host memory is served in place by the host backend")
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
