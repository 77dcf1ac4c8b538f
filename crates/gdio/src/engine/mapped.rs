//! DMA straight from the page cache: map a hot file range, register the mapping with the GPU
//! (read-only), and copy from it with no CPU copy at all. Used for ranges that are already in
//! the page cache when `page_cache_dma` is on; cold ranges would fault page by page.
//!
//! A file may shrink after it was opened (another process truncates it). Touching a mapped page
//! wholly past the end of the file raises SIGBUS, so a task asks the file for its size now
//! (`fstat`, not the size probed at open), maps and copies only bytes below it, and asks again
//! after the copy: bytes the file lost meanwhile are not counted, so the caller gets the true
//! byte count, as `pread` would give. What stays open: a truncation in the microseconds between
//! the first `fstat` and the copy. A real GPU copies from pages the registration pinned (stale
//! bytes, not counted); a runtime that copies with the CPU would fault there.

use std::os::fd::AsRawFd;

use super::job::{Job, TaskResult};
use super::lane::Lane;
use super::plan::Task;
use crate::error::{Error, Result};
use crate::gpu::GpuRuntime;

/// A read-only shared mapping of a file range, unmapped on drop (also what a page-cache pin
/// holds, `page_cache_pins`).
pub(super) struct Mapping {
    pub(super) ptr: *mut u8,
    pub(super) len: usize,
}

// SAFETY: the mapping is owned by this value alone and only read; unmapping may run on any
// thread.
unsafe impl Send for Mapping {}
// SAFETY: as above; shared holders only read the pointer.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` at `offset` (page-aligned) read-only, its cached pages mapped
    /// at once; the errno on failure.
    pub(super) fn new(
        fd: std::os::fd::BorrowedFd<'_>,
        offset: u64,
        len: usize,
    ) -> std::result::Result<Mapping, i32> {
        // SAFETY: a fresh shared read-only mapping; nothing else refers to it; it is unmapped in
        // Drop. MAP_POPULATE maps the (cached) pages now instead of faulting them in later.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                offset as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO));
        }
        Ok(Mapping { ptr: p.cast(), len })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `new`.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// The file's size now. Block devices do not shrink and `fstat` says 0 for them: their
/// probed size stands.
fn size_now(file: &crate::file::FileHandle) -> Result<u64> {
    if file.info().file_type == crate::file::FileType::BlockDevice {
        return Ok(file.size());
    }
    rustix::fs::fstat(file.buffered_fd()).map(|st| st.st_size as u64).map_err(|e| {
        Error::from_errno(e.raw_os_error(), "fstat before a page-cache DMA failed")
            .with_path(file.path())
    })
}

/// Reads a task into GPU memory by DMA from the page cache. Returns fewer bytes than the task
/// asked for when the file ends first (it may have shrunk since it was opened).
pub(crate) fn read_to_device(
    job: &Job,
    task: Task,
    lane: &mut Lane,
    runtime: &dyn GpuRuntime,
    ordinal: usize,
) -> Result<TaskResult> {
    let file = job.file();
    // Only bytes below the end of the file now: every mapped page then holds some of them, and
    // no page lies wholly past the end (SIGBUS).
    let len = task.len.min(size_now(file)?.saturating_sub(task.offset));
    if len == 0 {
        return Ok(TaskResult::default());
    }
    let page = crate::memory::page_size() as u64;
    let start = task.offset / page * page;
    let shift = (task.offset - start) as usize;
    let map_len = (shift as u64 + len).div_ceil(page) * page;
    let map = Mapping::new(file.buffered_fd(), start, map_len as usize).map_err(|e| {
        Error::from_errno(e, "mmap of the file range failed")
            .with_path(file.path())
            .with_range(task.offset, task.len)
    })?;
    // SAFETY: the mapping stays alive until after the unregister below.
    unsafe { runtime.register_host(ordinal, map.ptr, map.len, true) }
        .map_err(|e| e.with_path(file.path()).with_range(task.offset, task.len))?;
    let dst = job.buf.addr + task.rel;
    // SAFETY: the registered mapping covers `shift + len` bytes; the device range lies inside
    // the job's buffer (len <= task.len); we synchronize before unregistering and unmapping.
    let copied = unsafe { lane.stream.copy_to_device(dst, map.ptr.add(shift), len as usize) }
        .and_then(|_| lane.stream.synchronize());
    // SAFETY: the copy is complete (or failed); the mapping is still alive.
    let unreg = unsafe { runtime.unregister_host(ordinal, map.ptr) };
    copied?;
    unreg?;
    // Bytes the file lost during the copy are not data: count only what is still below the end.
    let bytes = len.min(size_now(file)?.saturating_sub(task.offset));
    Ok(TaskResult { bytes, direct_bytes: 0, mapped_bytes: bytes })
}
