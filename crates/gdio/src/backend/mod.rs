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

use std::fmt;

use crate::config::Config;
use crate::error::Result;
use crate::file::{FileHandle, FileInfo};
use crate::memory::{BufferRef, MemoryKind};

/// Direction of an I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// File → memory.
    Read,
    /// Memory → file.
    Write,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Read => "read",
            Op::Write => "write",
        })
    }
}

/// What a backend is asked to score: everything known about an I/O before it runs.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// Read or write.
    pub op: Op,
    /// The file's probe.
    pub file: &'a FileInfo,
    /// Kind of memory on the other side.
    pub memory: MemoryKind,
    /// Byte offset in the file.
    pub file_offset: u64,
    /// Address of the buffer (host virtual or device).
    pub buf_addr: u64,
    /// Bytes to move.
    pub len: u64,
}

/// Score of a fastpath that can serve a request.
pub const SCORE_FASTPATH: i32 = 100;
/// Score of a fallback that can serve a request.
pub const SCORE_FALLBACK: i32 = 1;
/// Score of a backend that cannot serve a request.
pub const SCORE_REJECT: i32 = -1;

/// A backend's answer to a request.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Score {
    /// 100, 1 or -1.
    pub score: i32,
    /// Why: for a reject, the first rule that ruled the backend out.
    pub reason: String,
}

impl Score {
    /// A fastpath accepting.
    pub fn fastpath(reason: impl Into<String>) -> Score {
        Score { score: SCORE_FASTPATH, reason: reason.into() }
    }
    /// A fallback accepting.
    pub fn fallback(reason: impl Into<String>) -> Score {
        Score { score: SCORE_FALLBACK, reason: reason.into() }
    }
    /// A reject.
    pub fn reject(reason: impl Into<String>) -> Score {
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
    fn read(&self, file: &FileHandle, dst: BufferRef, offset: u64) -> Result<usize>;
    /// Writes `src.len` bytes from `src` at `offset`; returns the bytes written.
    fn write(&self, file: &FileHandle, src: BufferRef, offset: u64) -> Result<usize>;
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
}
