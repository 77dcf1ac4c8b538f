//! The request vocabulary shared by the backends and the engine: the direction of an I/O
//! ([`Op`]) and what is known about a request before it runs ([`Request`]). It sits below both,
//! so neither imports the other's words.

use std::fmt;

use crate::file::FileInfo;
use crate::memory::MemoryKind;

/// Direction of an I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// File → memory.
    Read,
    /// Memory → file.
    Write,
}

impl Op {
    /// The operation of a `CUfileOpcode_t` (`CUFILE_READ` = 0, `CUFILE_WRITE` = 1); any other
    /// value is an error naming it.
    pub fn from_cufile(opcode: u32) -> crate::error::Result<Op> {
        match opcode {
            0 => Ok(Op::Read),
            1 => Ok(Op::Write),
            n => Err(crate::error::Error::new(
                crate::error::ErrorKind::InvalidInput,
                format!("unknown opcode {n}: 0 reads (CUFILE_READ), 1 writes (CUFILE_WRITE)"),
            )
            .with_errno(libc::EINVAL)),
        }
    }
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
