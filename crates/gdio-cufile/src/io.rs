//! `cuFileRead`/`cuFileWrite`: argument checks, the registered-buffer fast lookup, gdio's
//! driver call, and cuFile's return convention (bytes; `-1` with `errno`; `-code`), and the
//! encoding of an error as a negative value for batch events and stream-ordered results.

use std::ffi::c_void;
use std::time::Instant;

use gdio::memory::{BufferRef, KnownBuffer};
use gdio::{Error, ErrorKind, MemoryKind, Op};

use crate::abi::code;
use crate::log::{self, Level};
use crate::session::{self, Session};

/// Sets the calling thread's `errno`.
pub fn set_errno(e: i32) {
    // SAFETY: __errno_location returns the calling thread's errno slot.
    unsafe { *libc::__errno_location() = e };
}

/// cuFile's encoding of a gdio error for the sync calls: `-1` (with `errno` set) for a system
/// error, else `-code`.
fn encode(e: &Error) -> isize {
    match (e.errno(), code_of(e)) {
        (None, Some(c)) => -(c as isize),
        (errno, _) => {
            set_errno(errno.unwrap_or(libc::EIO));
            -1
        }
    }
}

/// A gdio error as the negative value of a batch event's `ret` or an async `*bytes_p`: an I/O on
/// a handle not opened for it is `-INVALID_FILE_OPEN_FLAG` (as `cuFileRead` says), another
/// system error `-errno`, anything else `-code`.
pub fn negative(e: &Error) -> isize {
    match (e.kind(), e.errno()) {
        (ErrorKind::PermissionDenied, Some(libc::EBADF)) => {
            -(code::INVALID_FILE_OPEN_FLAG as isize)
        }
        (_, Some(errno)) => -(errno as isize),
        _ => code_of(e).map_or(-(libc::EIO as isize), |c| -(c as isize)),
    }
}

/// The cuFile code for a gdio error without an errno; `None`: a system error (EIO).
fn code_of(e: &Error) -> Option<i32> {
    Some(match e.kind() {
        ErrorKind::Gpu => code::CUDA_DRIVER_ERROR,
        ErrorKind::NoGpu => code::DEVICE_NOT_FOUND,
        ErrorKind::InvalidInput => code::INVALID_VALUE,
        ErrorKind::Unsupported | ErrorKind::NoBackend => code::IO_NOT_SUPPORTED,
        ErrorKind::PermissionDenied => code::PERMISSION_DENIED,
        _ => return None,
    })
}

/// Read or write `size` bytes between file offset `file_offset` of handle `fh` and memory at
/// `base + buf_offset`, in cuFile's return convention.
pub fn sync_io(
    op: Op,
    fh: *mut c_void,
    base: *const c_void,
    size: usize,
    file_offset: i64,
    buf_offset: i64,
) -> isize {
    let Some(session) = session::current() else {
        log::log(Level::Error, || "I/O with the driver closed (or a stale handle)".into());
        set_errno(libc::EBADF);
        return -1;
    };
    let Some(reg) = session.handle(fh) else {
        log::log(Level::Error, || format!("invalid file handle {fh:?}"));
        set_errno(libc::EBADF);
        return -1;
    };
    if base.is_null() || file_offset < 0 || buf_offset < 0 {
        return -(code::INVALID_VALUE as isize);
    }
    let allowed = match op {
        Op::Read => reg.file.is_readable(),
        Op::Write => reg.file.is_writable(),
    };
    if !allowed {
        return -(code::INVALID_FILE_OPEN_FLAG as isize);
    }
    let size = size.min(isize::MAX as usize);
    if size == 0 {
        return 0;
    }
    let base_addr = base as u64;
    let Some(addr) = base_addr.checked_add(buf_offset as u64) else {
        return -(code::INVALID_VALUE as isize);
    };
    let kind = kind_of(&session, base_addr, buf_offset as u64, size, addr);
    // SAFETY: cuFile's contract makes `addr .. + size` the C caller's memory, valid for the
    // whole call and not used otherwise meanwhile; `kind` comes from its registration or one
    // query. The value serves this synchronous call only.
    let mem = unsafe { KnownBuffer::new(BufferRef { addr, len: size, kind }) };
    let _in_flight = session.in_flight.as_ref().map(|f| f.enter(op, size));
    let start = Instant::now();
    let r = match op {
        Op::Read => {
            let mut m = mem;
            session.driver.read(&reg.file, file_offset as u64, &mut m, 0, size)
        }
        Op::Write => session.driver.write(&reg.file, file_offset as u64, &mem, 0, size),
    };
    let took = start.elapsed();
    if session::stats_on() {
        let res = r.as_ref().map(|n| *n as u64).map_err(|_| ());
        let gpu = kind.device_ordinal();
        match op {
            Op::Read => session.stats.record_read(gpu, size as u64, res, took),
            Op::Write => session.stats.record_write(gpu, size as u64, res, took),
        }
    }
    match r {
        Ok(n) => {
            log::log(Level::Trace, || {
                format!("{op:?} {n} of {size} bytes at {file_offset} ({kind}) in {took:?}")
            });
            n as isize
        }
        Err(e) => {
            log::log(Level::Error, || format!("{op:?}: {e}"));
            encode(&e)
        }
    }
}

/// The kind of `base + off .. + size` when a registration at `base` covers it: known without
/// a driver query (the registration classified it and checked its extent once). Managed
/// memory may move, so it is asked each time.
pub fn registered_kind(session: &Session, base: u64, off: u64, size: usize) -> Option<MemoryKind> {
    let b = session.buffer(base)?;
    if off.saturating_add(size as u64) > b.len as u64 || b.kind == MemoryKind::Managed {
        return None;
    }
    Some(b.kind)
}

/// The kind of memory at `addr`: from the registration at `base` when the range lies inside
/// it, else asked once.
fn kind_of(session: &Session, base: u64, off: u64, size: usize, addr: u64) -> MemoryKind {
    registered_kind(session, base, off, size)
        .unwrap_or_else(|| session.driver.runtime().classify(addr))
}
