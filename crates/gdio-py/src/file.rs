//! `gdio.CuFile` (also `gdio.File`): an open file with KvikIO's methods.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyAnyMethods;

use gdio::{Error, ErrorKind, FileHandle, OpenOptions};

use crate::buffer::{acquire, Access, IoBuffer, Memory};
use crate::completion::Completion;
use crate::error::to_py;
use crate::future::Future;
use crate::io::{check_size, split, submit, submit_one, Dir, Part};
use crate::state::{self, Runtime};
use crate::sync_point::StreamWait;

/// A file opened for I/O between it and GPU or host memory.
#[pyclass(module = "gdio", name = "CuFile", frozen)]
pub struct CuFile {
    path: PathBuf,
    flags: String,
    handle: Mutex<Option<Arc<FileHandle>>>,
}

/// KvikIO's flags: `r` read, `w` write (create, truncate), `a` read and write (create), `+`
/// read and write.
fn parse_flags(flags: &str) -> PyResult<OpenOptions> {
    let (mut read, mut write, mut create, mut truncate) = (false, false, false, false);
    for c in flags.chars() {
        match c {
            'r' => read = true,
            'w' => (write, create, truncate) = (true, true, true),
            'a' => (read, write, create) = (true, true, true),
            '+' => (read, write) = (true, true),
            _ => {
                return Err(PyValueError::new_err(format!(
                    "unknown file flag {c:?} in {flags:?}: use \"r\", \"w\", \"a\", \"r+\" or \
                     \"w+\""
                )))
            }
        }
    }
    if !read && !write {
        return Err(PyValueError::new_err(format!(
            "flags {flags:?} open for neither read nor write"
        )));
    }
    Ok(OpenOptions::new().read(read).write(write).create(create).truncate(truncate))
}

/// The runtime, built without the GIL on first use (once built, taken without letting go of
/// the GIL unless another thread holds the state).
pub fn runtime(py: Python<'_>) -> PyResult<Arc<Runtime>> {
    if let Some(rt) = state::current() {
        return Ok(rt);
    }
    py.detach(state::runtime).map_err(to_py)
}

impl CuFile {
    fn handle(&self) -> gdio::Result<Arc<FileHandle>> {
        let h = self.handle.lock().unwrap_or_else(|e| e.into_inner());
        h.clone().ok_or_else(|| {
            Error::new(ErrorKind::InvalidInput, "the file is closed")
                .with_errno(libc::EBADF)
                .with_path(&self.path)
        })
    }

    /// Takes `buf` and checks the range; returns the buffer and the whole request as a part.
    #[allow(clippy::too_many_arguments)]
    fn prepare(
        &self,
        py: Python<'_>,
        dir: Dir,
        buf: &Bound<'_, PyAny>,
        size: Option<usize>,
        file_offset: u64,
        buf_offset: usize,
    ) -> PyResult<(Arc<Runtime>, Arc<FileHandle>, IoBuffer, Part)> {
        let file = self.handle().map_err(to_py)?;
        let rt = runtime(py)?;
        let access = if dir == Dir::Read { Access::Fill } else { Access::Drain };
        let b = acquire(buf, access, &rt.driver)?;
        let size = size.unwrap_or(b.len.saturating_sub(buf_offset));
        check_size(&file, b.len, buf_offset, size, file_offset).map_err(to_py)?;
        let part = Part {
            dir,
            addr: b.addr + buf_offset as u64,
            len: size,
            memory: b.memory,
            file_offset,
            sync: StreamWait::made_now(b.sync),
            tail: false,
        };
        Ok((rt, file, b, part))
    }

    #[allow(clippy::too_many_arguments)]
    fn start(
        &self,
        py: Python<'_>,
        dir: Dir,
        buf: &Bound<'_, PyAny>,
        size: Option<usize>,
        file_offset: u64,
        buf_offset: usize,
        task_size: Option<usize>,
    ) -> PyResult<Future> {
        let (rt, file, b, whole) = self.prepare(py, dir, buf, size, file_offset, buf_offset)?;
        if task_size.is_none_or(|t| t == 0 || t >= whole.len) {
            // One part (the common case): no lists on the way.
            let completion = Arc::new(Completion::new(1, b.keep));
            submit_one(&rt, &file, 0, whole, &completion);
            return Ok(Future::new(completion));
        }
        let parts: Vec<(usize, Part)> = split(whole, task_size)
            .into_iter()
            .map(|p| ((p.addr - whole.addr) as usize, p))
            .collect();
        let completion = Arc::new(Completion::new(parts.len(), b.keep));
        submit(&rt, &file, parts, &completion);
        Ok(Future::new(completion))
    }

    #[allow(clippy::too_many_arguments)]
    fn blocking(
        &self,
        py: Python<'_>,
        dir: Dir,
        buf: &Bound<'_, PyAny>,
        size: Option<usize>,
        file_offset: u64,
        buf_offset: usize,
        task_size: Option<usize>,
    ) -> PyResult<usize> {
        if task_size.is_some_and(|t| t > 0) {
            let f = self.start(py, dir, buf, size, file_offset, buf_offset, task_size)?;
            return f.get_blocking(py);
        }
        let (rt, file, b, part) = self.prepare(py, dir, buf, size, file_offset, buf_offset)?;
        let r = py.detach(|| part.run(&rt.driver, &file));
        drop(b);
        r.map_err(to_py)
    }

    fn vectored(
        &self,
        py: Python<'_>,
        dir: Dir,
        bufs: &Bound<'_, PyAny>,
        file_offsets: &Bound<'_, PyAny>,
        sizes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Future> {
        let file = self.handle().map_err(to_py)?;
        let rt = runtime(py)?;
        let bufs: Vec<Bound<'_, PyAny>> = bufs.try_iter()?.collect::<PyResult<_>>()?;
        let offsets: Vec<u64> =
            file_offsets.try_iter()?.map(|o| o?.extract()).collect::<PyResult<_>>()?;
        let sizes: Option<Vec<usize>> = match sizes {
            Some(s) if !s.is_none() => {
                Some(s.try_iter()?.map(|o| o?.extract()).collect::<PyResult<_>>()?)
            }
            _ => None,
        };
        if offsets.len() != bufs.len() || sizes.as_ref().is_some_and(|s| s.len() != bufs.len()) {
            return Err(PyValueError::new_err(format!(
                "{} buffers but {} file offsets{}: give one of each per buffer",
                bufs.len(),
                offsets.len(),
                sizes.as_ref().map(|s| format!(" and {} sizes", s.len())).unwrap_or_default()
            )));
        }
        let access = if dir == Dir::Read { Access::Fill } else { Access::Drain };
        let mut keep = Vec::with_capacity(bufs.len());
        let mut parts = Vec::with_capacity(bufs.len());
        let mut at = 0usize;
        for (i, buf) in bufs.iter().enumerate() {
            let b = acquire(buf, access, &rt.driver)?;
            let size = sizes.as_ref().map_or(b.len, |s| s[i]);
            check_size(&file, b.len, 0, size, offsets[i]).map_err(to_py)?;
            parts.push((
                at,
                Part {
                    dir,
                    addr: b.addr,
                    len: size,
                    memory: b.memory,
                    file_offset: offsets[i],
                    sync: StreamWait::made_now(b.sync),
                    tail: false,
                },
            ));
            at += size;
            keep.push(b.keep);
        }
        let completion =
            Arc::new(Completion::new(parts.len(), crate::buffer::Keepalive::join(keep)));
        submit(&rt, &file, parts, &completion);
        Ok(Future::new(completion))
    }

    /// Stream-ordered I/O (`cuFileReadAsync`'s semantics, `gdio::stream_io`): queued on
    /// `stream` behind the work already there, later work on `stream` waits for it; returns at
    /// once with a future that completes when the bytes have landed (or reached the file).
    /// A `__cuda_array_interface__` buffer's own stream (other than `stream`) is waited for
    /// first, on this thread.
    #[allow(clippy::too_many_arguments)]
    fn stream_ordered(
        &self,
        py: Python<'_>,
        dir: Dir,
        buf: &Bound<'_, PyAny>,
        stream: u64,
        size: Option<usize>,
        file_offset: u64,
        dev_offset: usize,
    ) -> PyResult<Future> {
        let (rt, file, b, part) = self.prepare(py, dir, buf, size, file_offset, dev_offset)?;
        if !matches!(part.memory, Memory::Device(_) | Memory::Any) {
            return Err(to_py(
                Error::new(
                    ErrorKind::InvalidInput,
                    "raw_read_async/raw_write_async need device memory",
                )
                .with_errno(libc::EINVAL)
                .with_path(file.path())
                .with_range(file_offset, part.len as u64),
            ));
        }
        // The caller's `stream` orders the I/O (KvikIO's contract): the legacy default stream
        // that DLPack and torch buffers name is not waited for, or the call would block behind
        // the default stream's work. A `__cuda_array_interface__` stream other than `stream` is
        // the producer's own: waited for here, as the interface asks.
        if let Some((o, s)) =
            b.sync.filter(|&(_, s)| s != crate::stream::LEGACY as u64 && s != stream)
        {
            py.detach(|| crate::stream::synchronize(&rt.driver, o, s)).map_err(to_py)?;
        }
        let offset = i64::try_from(file_offset).map_err(|_| {
            to_py(
                Error::new(ErrorKind::InvalidInput, "file offset past the largest file offset")
                    .with_errno(libc::EINVAL)
                    .with_path(file.path())
                    .with_range(file_offset, part.len as u64),
            )
        })?;
        // The parameters and the result slot: owned by the done hook, which the engine drops
        // only after it wrote the result (the Python future may be gone by then).
        let slots = Box::new(StreamSlots {
            size: part.len,
            file_offset: offset,
            buf_offset: 0,
            bytes: std::sync::atomic::AtomicIsize::new(0),
        });
        let params = gdio::StreamIoParams {
            size_p: &slots.size,
            file_offset_p: &slots.file_offset,
            buf_offset_p: &slots.buf_offset,
            bytes_p: slots.bytes.as_ptr(),
            read_at_queue: true,
        };
        let completion = Arc::new(Completion::new(1, b.keep));
        let told = completion.clone();
        let done: gdio::stream_io::StreamIoDone = Box::new(move |_size, r, _took| {
            let _owner = &slots;
            // The future's callbacks take the GIL: not on this thread, which holds the
            // stream's gate (a Python thread holding the GIL may be waiting for the stream).
            // Only if no thread can be started does it finish here.
            let (c, outcome) = (told.clone(), r.clone());
            let spawned = std::thread::Builder::new()
                .name("gdio-stream-done".into())
                .spawn(move || c.part_done(0, outcome));
            if spawned.is_err() {
                told.part_done(0, r.clone());
            }
            gdio::stream_io::default_result(r)
        });
        let op = match dir {
            Dir::Read => gdio::Op::Read,
            Dir::Write => gdio::Op::Write,
        };
        // SAFETY: the parameters live in the done hook (above); the buffer is kept alive by the
        // completion until the future's outcome is collected after the I/O; `stream` is the
        // caller's CUDA stream handle (KvikIO's contract).
        unsafe {
            rt.driver.submit_on_stream_with(op, &file, part.addr, params, stream, Some(done))
        }
        .map_err(|e| to_py(e.with_range(file_offset, part.len as u64)))?;
        Ok(Future::new(completion))
    }
}

/// A stream-ordered I/O's parameters and result, as `cuFileReadAsync` reads them from memory.
struct StreamSlots {
    size: usize,
    file_offset: i64,
    buf_offset: i64,
    bytes: std::sync::atomic::AtomicIsize,
}

#[pymethods]
impl CuFile {
    /// Opens `file` with KvikIO's `flags` (`"r"`, `"w"`, `"a"`, `"+"`).
    #[new]
    #[pyo3(signature = (file, flags="r"))]
    fn py_new(py: Python<'_>, file: PathBuf, flags: &str) -> PyResult<Self> {
        let opts = parse_flags(flags)?;
        let path = file.clone();
        let h = py.detach(move || FileHandle::open_with(&path, opts)).map_err(to_py)?;
        Ok(CuFile { path: file, flags: flags.to_owned(), handle: Mutex::new(Some(Arc::new(h))) })
    }

    /// Closes the file (I/O in flight finishes first; the descriptor closes after it).
    fn close(&self) {
        self.handle.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.handle.lock().unwrap_or_else(|e| e.into_inner()).is_none()
    }

    /// The file's path.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// The descriptor's flags (`fcntl(F_GETFL)`: `os.O_RDONLY`, `os.O_WRONLY` or `os.O_RDWR`
    /// with `os.O_APPEND` and the others, as KvikIO's `open_flags()` returns them); the mode
    /// string given to the constructor is `mode`.
    fn open_flags(&self) -> PyResult<i32> {
        use std::os::fd::AsRawFd;
        let h = self.handle().map_err(to_py)?;
        // SAFETY: F_GETFL takes no argument and only reads the descriptor's flags; the handle
        // keeps the descriptor open for the call.
        let flags = unsafe { libc::fcntl(h.buffered_fd().as_raw_fd(), libc::F_GETFL) };
        if flags < 0 {
            return Err(to_py(
                gdio::Error::from_errno(
                    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO),
                    "fcntl(F_GETFL) failed",
                )
                .with_path(&self.path),
            ));
        }
        Ok(flags)
    }

    /// The mode string the file was opened with (`"r"`, `"w"`, `"a"`, `"r+"`, `"w+"`).
    #[getter]
    fn mode(&self) -> String {
        self.flags.clone()
    }

    /// The file descriptor (buffered).
    fn fileno(&self) -> PyResult<i32> {
        use std::os::fd::AsRawFd;
        Ok(self.handle().map_err(to_py)?.buffered_fd().as_raw_fd())
    }

    /// The file's size in bytes now.
    fn nbytes(&self) -> PyResult<u64> {
        self.handle().and_then(|h| h.refresh_size()).map_err(to_py)
    }

    /// Whether the file can be read with O_DIRECT.
    fn is_direct_io_supported(&self) -> PyResult<bool> {
        Ok(self.handle().map_err(to_py)?.direct_fd().is_some())
    }

    /// Starts reading `size` bytes (default: the buffer's size) at `file_offset` into `buf`;
    /// with `task_size`, in parts of that many bytes run in parallel.
    #[pyo3(signature = (buf, size=None, file_offset=0, task_size=None))]
    fn pread(
        &self,
        py: Python<'_>,
        buf: &Bound<'_, PyAny>,
        size: Option<usize>,
        file_offset: u64,
        task_size: Option<usize>,
    ) -> PyResult<Future> {
        self.start(py, Dir::Read, buf, size, file_offset, 0, task_size)
    }

    /// Starts writing `size` bytes of `buf` at `file_offset`.
    #[pyo3(signature = (buf, size=None, file_offset=0, task_size=None))]
    fn pwrite(
        &self,
        py: Python<'_>,
        buf: &Bound<'_, PyAny>,
        size: Option<usize>,
        file_offset: u64,
        task_size: Option<usize>,
    ) -> PyResult<Future> {
        self.start(py, Dir::Write, buf, size, file_offset, 0, task_size)
    }

    /// Reads and returns the bytes read (fewer than `size` only at the end of the file).
    #[pyo3(signature = (buf, size=None, file_offset=0, task_size=None))]
    fn read(
        &self,
        py: Python<'_>,
        buf: &Bound<'_, PyAny>,
        size: Option<usize>,
        file_offset: u64,
        task_size: Option<usize>,
    ) -> PyResult<usize> {
        self.blocking(py, Dir::Read, buf, size, file_offset, 0, task_size)
    }

    /// Writes and returns the bytes written.
    #[pyo3(signature = (buf, size=None, file_offset=0, task_size=None))]
    fn write(
        &self,
        py: Python<'_>,
        buf: &Bound<'_, PyAny>,
        size: Option<usize>,
        file_offset: u64,
        task_size: Option<usize>,
    ) -> PyResult<usize> {
        self.blocking(py, Dir::Write, buf, size, file_offset, 0, task_size)
    }

    /// Vectored read: buffer `i` gets `sizes[i]` bytes (default: its size) from
    /// `file_offsets[i]`; one future for all, whose result is the total bytes read.
    #[pyo3(signature = (bufs, file_offsets, sizes=None))]
    fn preadv(
        &self,
        py: Python<'_>,
        bufs: &Bound<'_, PyAny>,
        file_offsets: &Bound<'_, PyAny>,
        sizes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Future> {
        self.vectored(py, Dir::Read, bufs, file_offsets, sizes)
    }

    /// Vectored write, like `preadv`.
    #[pyo3(signature = (bufs, file_offsets, sizes=None))]
    fn pwritev(
        &self,
        py: Python<'_>,
        bufs: &Bound<'_, PyAny>,
        file_offsets: &Bound<'_, PyAny>,
        sizes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Future> {
        self.vectored(py, Dir::Write, bufs, file_offsets, sizes)
    }

    /// KvikIO's stream-ordered read into device memory at `dev_offset` of `buf`: queued on
    /// `stream` (it starts after the work already there; later work waits for it); the future
    /// (`check_bytes_done()`, `get()`) gives the bytes read once they have landed.
    #[pyo3(signature = (buf, stream, size=None, file_offset=0, dev_offset=0))]
    fn raw_read_async(
        &self,
        py: Python<'_>,
        buf: &Bound<'_, PyAny>,
        stream: u64,
        size: Option<usize>,
        file_offset: u64,
        dev_offset: usize,
    ) -> PyResult<Future> {
        self.stream_ordered(py, Dir::Read, buf, stream, size, file_offset, dev_offset)
    }

    /// KvikIO's stream-ordered write, like `raw_read_async`.
    #[pyo3(signature = (buf, stream, size=None, file_offset=0, dev_offset=0))]
    fn raw_write_async(
        &self,
        py: Python<'_>,
        buf: &Bound<'_, PyAny>,
        stream: u64,
        size: Option<usize>,
        file_offset: u64,
        dev_offset: usize,
    ) -> PyResult<Future> {
        self.stream_ordered(py, Dir::Write, buf, stream, size, file_offset, dev_offset)
    }

    /// KvikIO's single-call read into device memory at `dev_offset`.
    #[pyo3(signature = (buf, size=None, file_offset=0, dev_offset=0))]
    fn raw_read(
        &self,
        py: Python<'_>,
        buf: &Bound<'_, PyAny>,
        size: Option<usize>,
        file_offset: u64,
        dev_offset: usize,
    ) -> PyResult<usize> {
        self.blocking(py, Dir::Read, buf, size, file_offset, dev_offset, None)
    }

    /// KvikIO's single-call write from device memory at `dev_offset`.
    #[pyo3(signature = (buf, size=None, file_offset=0, dev_offset=0))]
    fn raw_write(
        &self,
        py: Python<'_>,
        buf: &Bound<'_, PyAny>,
        size: Option<usize>,
        file_offset: u64,
        dev_offset: usize,
    ) -> PyResult<usize> {
        self.blocking(py, Dir::Write, buf, size, file_offset, dev_offset, None)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { "closed" } else { "open" };
        format!(
            "<gdio.CuFile {:?} flags={:?} {state}>",
            self.path.display().to_string(),
            self.flags
        )
    }
}

/// The open handle of a `CuFile` (for `get_page_cache_info`).
pub fn handle_of(f: &CuFile) -> PyResult<Arc<FileHandle>> {
    f.handle().map_err(to_py)
}
