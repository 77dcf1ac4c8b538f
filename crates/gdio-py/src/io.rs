//! One read or write of a file range into a buffer range, on the synchronous driver, and its
//! split into parts that futures run on the pool.

use std::sync::Arc;

use gdio::memory::{BufferRef, KnownBuffer};
use gdio::{Driver, Error, ErrorKind, FileHandle, MemoryKind, Op, SubmitGroup};

use crate::buffer::Memory;
use crate::completion::Completion;
use crate::state::Runtime;
use crate::sync_point::{StreamWait, Then};

/// Read (file → buffer) or write (buffer → file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// File → buffer.
    Read,
    /// Buffer → file.
    Write,
}

/// One contiguous transfer. The buffer memory is kept alive by whoever built it (the future's
/// completion, or the blocking call's frame).
#[derive(Debug, Clone, Copy)]
pub struct Part {
    /// Direction.
    pub dir: Dir,
    /// Buffer address of the first byte.
    pub addr: u64,
    /// Bytes.
    pub len: usize,
    /// Where the buffer is.
    pub memory: Memory,
    /// File offset.
    pub file_offset: u64,
    /// The producer's stream to wait for first, as of when the part was made.
    pub sync: Option<StreamWait>,
    /// A later part of a split read: starting at or past the end of the file reads 0 bytes
    /// (the request as a whole started inside the file), not an error.
    pub tail: bool,
}

impl Part {
    /// Runs the transfer now on this thread. Returns the bytes moved.
    pub fn run(&self, driver: &Driver, file: &FileHandle) -> gdio::Result<usize> {
        if self.len == 0 {
            return Ok(0);
        }
        if self.tail
            && self.dir == Dir::Read
            && self.file_offset >= file.size()
            && self.file_offset >= file.refresh_size()?
        {
            return Ok(0);
        }
        self.wait_for_stream(driver, file)?;
        let (f, off, a, n) = (file, self.file_offset, self.addr, self.len);
        // GPU memory whose ordinal the import already found: no second pointer query per part
        // (one per 64 KiB future adds up).
        let known = |ordinal| {
            // SAFETY: as below; the value serves this one synchronous call.
            unsafe {
                KnownBuffer::new(BufferRef {
                    addr: a,
                    len: n,
                    kind: MemoryKind::Device { ordinal },
                })
            }
        };
        // SAFETY: `addr..addr+len` lies inside memory taken from a Python object by
        // `buffer::acquire` (bounds checked by `split`), kept alive by its `Keepalive` until
        // this part reports; reads were refused on read-only memory there.
        unsafe {
            match (self.dir, self.memory) {
                (Dir::Read, Memory::Host) => driver.read_host_ptr(f, off, a as *mut u8, n),
                (Dir::Read, Memory::Device(o)) => driver.read(f, off, &mut known(o), 0, n),
                (Dir::Read, Memory::Any) => driver.read_raw(f, off, a, n),
                (Dir::Write, Memory::Host) => driver.write_host_ptr(f, off, a as *const u8, n),
                (Dir::Write, Memory::Device(o)) => driver.write(f, off, &known(o), 0, n),
                (Dir::Write, Memory::Any) => driver.write_raw(f, off, a, n),
            }
        }
    }

    /// Waits for the producer's stream, if the part names one; an error says which transfer
    /// it held up.
    fn wait_for_stream(&self, driver: &Driver, file: &FileHandle) -> gdio::Result<()> {
        let Some(w) = self.sync else { return Ok(()) };
        w.wait(driver).map_err(|e| self.stream_error(e, file))
    }

    /// A failed wait for the producer's stream, saying which transfer it held up.
    fn stream_error(&self, e: Error, file: &FileHandle) -> Error {
        e.with_range(self.file_offset, self.len as u64).with_path(file.path())
    }

    /// Runs the transfer, turning a panic into an error (a future must always complete).
    pub fn run_caught(&self, driver: &Driver, file: &FileHandle) -> gdio::Result<usize> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run(driver, file)))
            .unwrap_or_else(|_| {
                Err(Error::new(ErrorKind::Io, "internal error: the I/O worker panicked")
                    .with_path(file.path())
                    .with_range(self.file_offset, self.len as u64))
            })
    }
}

/// Checks that `size` bytes fit in a buffer of `buf_len` bytes after `buf_offset`.
pub fn check_size(
    file: &FileHandle,
    buf_len: usize,
    buf_offset: usize,
    size: usize,
    file_offset: u64,
) -> gdio::Result<()> {
    match buf_offset.checked_add(size) {
        Some(end) if end <= buf_len => Ok(()),
        _ => Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "buffer of {buf_len} bytes is too short for {size} bytes at buffer offset \
                 {buf_offset}"
            ),
        )
        .with_errno(libc::EINVAL)
        .with_path(file.path())
        .with_range(file_offset, size as u64)),
    }
}

/// Splits `whole` into parts of at most `task_size` bytes (one part when `None`).
pub fn split(whole: Part, task_size: Option<usize>) -> Vec<Part> {
    let step = task_size.filter(|t| *t > 0 && *t < whole.len).unwrap_or(whole.len.max(1));
    (0..whole.len.max(1))
        .step_by(step)
        .map(|at| Part {
            addr: whole.addr + at as u64,
            len: step.min(whole.len - at.min(whole.len)),
            file_offset: whole.file_offset + at as u64,
            tail: at > 0,
            ..whole
        })
        .collect()
}

/// Submits `parts` (each with its offset in the request) to the runtime's pool, reporting to
/// `completion`.
pub fn submit(
    rt: &Arc<Runtime>,
    file: &Arc<FileHandle>,
    parts: Vec<(usize, Part)>,
    completion: &Arc<Completion>,
) {
    for (at, part) in parts {
        submit_one(rt, file, at, part, completion);
    }
}

/// Submits one `part` at offset `at` of the request, reporting to `completion`: a part of GPU
/// memory to the engine (no thread waits for it, and the engine's workers may gather many small
/// reads into one copy); when its producer named a stream, it first joins that stream's queue
/// and goes to the engine after one synchronization shared by every part queued before it
/// began (`StreamWait::then`). Anything else goes to the runtime's pool, whose workers call the
/// synchronous driver.
pub fn submit_one(
    rt: &Arc<Runtime>,
    file: &Arc<FileHandle>,
    at: usize,
    part: Part,
    completion: &Arc<Completion>,
) {
    if let (Memory::Device(ordinal), false) = (part.memory, part.tail) {
        if part.len > 0 && !rt.pool_only {
            let Some(wait) = part.sync else {
                return submit_to_engine(rt, file, at, part, ordinal, completion, None);
            };
            let (rt2, file, completion) = (rt.clone(), file.clone(), completion.clone());
            let then: Then = Box::new(move |synced, group| match synced {
                Ok(()) => {
                    submit_to_engine(&rt2, &file, at, part, ordinal, &completion, Some(group))
                }
                Err(e) => completion.part_done(at, Err(part.stream_error(e, &file))),
            });
            wait.then(&rt.driver, |drain| rt.dispatch.submit(drain), then);
            return;
        }
    }
    let (driver, file, completion) = (rt.driver.clone(), file.clone(), completion.clone());
    rt.dispatch.submit(Box::new(move || {
        let r = part.run_caught(&driver, &file);
        completion.part_done(at, r);
    }));
}

/// Hands a part of GPU memory of `ordinal` (its stream, if any, already synchronized) to the
/// engine, whose completion reports to `completion`; in `group` when given (queued with the
/// group's other submissions).
fn submit_to_engine(
    rt: &Arc<Runtime>,
    file: &Arc<FileHandle>,
    at: usize,
    part: Part,
    ordinal: usize,
    completion: &Arc<Completion>,
    group: Option<&mut SubmitGroup<'_>>,
) {
    let buf = BufferRef { addr: part.addr, len: part.len, kind: MemoryKind::Device { ordinal } };
    let op = match part.dir {
        Dir::Read => Op::Read,
        Dir::Write => Op::Write,
    };
    let (c, pool) = (completion.clone(), rt.clone());
    let done = Box::new(move |r: gdio::Result<usize>| {
        // On an engine worker: Python callbacks go to the pool, which may take the GIL.
        c.part_done_then(at, r, |callbacks| pool.dispatch.submit(callbacks));
    });
    // The buffer: `addr..addr+len` lies in GPU memory of `ordinal` taken from a Python object
    // by `buffer::acquire` (bounds checked by `split`) and kept alive by the completion's
    // `Keepalive` until this part reports, which is after `done` ran; reads were refused on
    // read-only memory there.
    let submitted = match group {
        // SAFETY: the buffer, as above.
        Some(g) => unsafe { g.submit_then(op, file, part.file_offset, buf, done) },
        // SAFETY: the buffer, as above.
        None => unsafe { rt.driver.submit_then(op, file, part.file_offset, buf, done) },
    };
    if let Err(e) = submitted {
        completion.part_done(at, Err(e));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(len: usize) -> Part {
        Part {
            dir: Dir::Read,
            addr: 1000,
            len,
            memory: Memory::Host,
            file_offset: 50,
            sync: None,
            tail: false,
        }
    }

    #[test]
    fn split_covers_the_range_once() {
        for (len, task) in [(10, Some(3)), (9, Some(3)), (10, None), (10, Some(0)), (0, Some(4))] {
            let parts = split(part(len), task);
            let total: usize = parts.iter().map(|p| p.len).sum();
            assert_eq!(total, len, "{len} {task:?}");
            let mut next = 0;
            for p in &parts {
                assert_eq!(p.addr, 1000 + next as u64);
                assert_eq!(p.file_offset, 50 + next as u64);
                next += p.len;
            }
        }
        assert_eq!(split(part(10), Some(3)).len(), 4);
    }
}
