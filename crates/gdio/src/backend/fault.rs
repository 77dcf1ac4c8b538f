//! A fault-injecting fastpath for tests: it scores like every fastpath (the shared rules of
//! [`rules`](super::rules)), fails the calls it is told to with a chosen errno, and otherwise
//! serves the bytes itself through the engine, so tests can check the data after every retry.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::{rules, Backend, Request, Score};
use crate::config::Config;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::file::FileHandle;
use crate::memory::BufferRef;

/// A fastpath that fails chosen calls.
#[derive(Debug)]
pub struct FaultBackend {
    engine: Arc<Engine>,
    /// Errno of each coming call: `Some(e)` fails it with `e`, `None` serves it. Calls past the
    /// end of the plan are served.
    plan: Mutex<VecDeque<Option<i32>>>,
    calls: AtomicU64,
    /// When true, a failing write first writes garbage over the range (a partial DMA), so a
    /// test sees whether the retry rewrites it.
    scribble: bool,
}

impl FaultBackend {
    /// A fault backend serving through `engine`, failing calls as `plan` says.
    pub fn new(engine: Arc<Engine>, plan: impl IntoIterator<Item = Option<i32>>) -> FaultBackend {
        FaultBackend {
            engine,
            plan: Mutex::new(plan.into_iter().collect()),
            calls: AtomicU64::new(0),
            scribble: false,
        }
    }

    /// Makes failing writes scribble over the range first.
    pub fn scribbling(mut self) -> Self {
        self.scribble = true;
        self
    }

    /// Appends to the plan.
    pub fn push(&self, next: Option<i32>) {
        self.plan.lock().unwrap_or_else(|p| p.into_inner()).push_back(next);
    }

    /// Calls made so far (read or write).
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    fn next(&self) -> Option<i32> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.plan.lock().unwrap_or_else(|p| p.into_inner()).pop_front().flatten()
    }
}

impl Backend for FaultBackend {
    fn name(&self) -> &'static str {
        "fault"
    }

    fn is_fastpath(&self) -> bool {
        true
    }

    fn score(&self, req: &Request<'_>, config: &Config) -> Score {
        match rules::config_rule(req, config).or_else(|| rules::request_rule(req, config)) {
            Some(why) => Score::reject(why),
            None => Score::fastpath("fault-injecting test fastpath"),
        }
    }

    unsafe fn read(&self, file: &FileHandle, dst: BufferRef, offset: u64) -> Result<usize> {
        if let Some(errno) = self.next() {
            return Err(Error::from_errno(errno, "injected fault on read")
                .with_path(file.path())
                .with_range(offset, dst.len as u64));
        }
        // SAFETY: forwarded contract.
        Ok(unsafe { self.engine.read(file, dst, offset) }?.bytes as usize)
    }

    unsafe fn write(&self, file: &FileHandle, src: BufferRef, offset: u64) -> Result<usize> {
        if let Some(errno) = self.next() {
            if self.scribble && file.is_writable() {
                let junk = vec![0xA5u8; src.len];
                let _ = rustix::io::pwrite(file.buffered_fd(), &junk, offset);
            }
            return Err(Error::from_errno(errno, "injected fault on write")
                .with_path(file.path())
                .with_range(offset, src.len as u64));
        }
        // SAFETY: forwarded contract.
        Ok(unsafe { self.engine.write(file, src, offset) }?.bytes as usize)
    }
}
