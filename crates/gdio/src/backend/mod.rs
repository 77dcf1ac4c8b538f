//! Backends: the ways an I/O can be served, each scoring a request as cuFile and hipFile do
//! (100 for a fastpath that can serve it, 1 for a fallback that can, -1 to reject, always with
//! a reason), and the selection and retry policy between them.

pub mod compat;
#[doc(hidden)]
pub mod fault;
pub mod gds;
pub mod host;
pub mod rules;
pub mod select;

pub use select::{Decision, RETRY_ERRNOS};

/// The request vocabulary lives below both the backends and the engine ([`crate::request`]);
/// re-exported here where callers have always found it.
pub use crate::request::{Op, Request};

use std::fmt;

use crate::config::Config;
use crate::error::Result;
use crate::file::{FileHandle, FileInfo};
use crate::memory::BufferRef;

/// Score of a fastpath that can serve a request.
pub const SCORE_FASTPATH: i32 = 100;
/// Score of a fallback that can serve a request.
pub const SCORE_FALLBACK: i32 = 1;
/// Score of a backend that cannot serve a request.
pub const SCORE_REJECT: i32 = -1;

/// Why a backend accepts or rejects a request: a fixed sentence where nothing varies (no
/// allocation on the path every I/O takes), else one built for the request.
pub type Reason = std::borrow::Cow<'static, str>;

/// A backend's answer to a request.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Score {
    /// 100, 1 or -1.
    pub score: i32,
    /// Why: for a reject, the first rule that ruled the backend out.
    pub reason: Reason,
}

impl Score {
    /// A fastpath accepting.
    pub fn fastpath(reason: impl Into<Reason>) -> Score {
        Score { score: SCORE_FASTPATH, reason: reason.into() }
    }
    /// A fallback accepting.
    pub fn fallback(reason: impl Into<Reason>) -> Score {
        Score { score: SCORE_FALLBACK, reason: reason.into() }
    }
    /// A reject.
    pub fn reject(reason: impl Into<Reason>) -> Score {
        Score { score: SCORE_REJECT, reason: reason.into() }
    }
    /// True when the backend can serve.
    pub fn accepts(&self) -> bool {
        self.score > 0
    }
}

/// One way of serving I/O.
pub trait Backend: Send + Sync + fmt::Debug {
    /// Short name (`gds`, `compat`, `host`).
    fn name(&self) -> &'static str;
    /// Scores `req` under `config`.
    fn score(&self, req: &Request<'_>, config: &Config) -> Score;
    /// Reads `dst.len` bytes at `offset` into `dst`; returns the bytes read (fewer at EOF).
    ///
    /// # Safety
    /// `dst` must describe memory of this process (host, or device memory of the driver's
    /// GPUs) valid for writes of `dst.len` bytes and not accessed by anything else until the
    /// call returns.
    unsafe fn read(&self, file: &FileHandle, dst: BufferRef, offset: u64) -> Result<usize>;
    /// Writes `src.len` bytes from `src` at `offset`; returns the bytes written.
    ///
    /// # Safety
    /// `src` must describe memory of this process valid for reads of `src.len` bytes until the
    /// call returns.
    unsafe fn write(&self, file: &FileHandle, src: BufferRef, offset: u64) -> Result<usize>;
    /// The engine this backend runs its I/O on, when it runs every request there: the driver
    /// then submits asynchronous, batched and vectored I/O to it directly. `None` for a backend
    /// with its own I/O path (such I/O runs synchronously when it is submitted).
    fn engine(&self) -> Option<&std::sync::Arc<crate::engine::Engine>> {
        None
    }
    /// True for a fastpath: its runtime failures with a retryable errno may be retried on a
    /// fallback ([`select`]).
    fn is_fastpath(&self) -> bool {
        false
    }
    /// Called with the open file before each request is scored. A fastpath registers the file
    /// here (once) and remembers a failure, which its score then reports as the reject reason.
    /// Never fails and never panics.
    fn prepare(&self, _file: &FileHandle) {}
    /// Like [`Backend::prepare`] for a file that is not open (`gdio check`): a fastpath may
    /// open the path itself to try a registration.
    fn prepare_path(&self, _info: &FileInfo) {}
    /// Why this backend can serve nothing on this machine under `config` (a missing kernel
    /// module, library or driver), whatever the file; `None` when it may serve some requests
    /// (each request's score still decides).
    fn unavailable(&self, _config: &Config) -> Option<Reason> {
        None
    }
}
