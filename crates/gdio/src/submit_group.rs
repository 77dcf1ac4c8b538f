//! Submissions queued together: [`SubmitGroup`] holds the engine jobs of many
//! [`Driver::submit_then`]-style submissions and queues them for the workers in groups
//! (`batch_queue_group` at a time, and the rest when the group is flushed or dropped), as a
//! batch does. A front end that hands the engine many small I/Os at once (the Python futures a
//! stream synchronization released) pays one queue lock and one round of wake-ups per group
//! instead of one per I/O, and the workers find a queue deep enough to gather small reads
//! into shared copies.

use std::sync::Arc;

use crate::driver::Driver;
use crate::engine::Bulk;
use crate::error::Result;
use crate::file::FileHandle;
use crate::memory::BufferRef;
use crate::request::Op;

/// Engine submissions held and queued together; whatever it still holds is queued when it
/// is dropped. Made by [`Driver::submit_group`].
pub struct SubmitGroup<'d> {
    driver: &'d Driver,
    bulk: Bulk,
}

impl std::fmt::Debug for SubmitGroup<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubmitGroup").finish_non_exhaustive()
    }
}

impl<'d> SubmitGroup<'d> {
    pub(crate) fn new(driver: &'d Driver) -> SubmitGroup<'d> {
        SubmitGroup { driver, bulk: Bulk::default() }
    }

    /// [`Driver::submit_then`] into this group: an I/O the engine serves is queued with the
    /// group's others (at the latest when the group is flushed or dropped); one a backend
    /// serves synchronously runs now, and `done` runs on this thread. When this returns an
    /// error, `done` is never called.
    ///
    /// # Safety
    /// As [`Driver::submit_then`]: `buf` is memory of `buf.kind` of this process, valid for
    /// `op` and not otherwise accessed until `done` has been called; a device range lies in one
    /// allocation of that GPU.
    pub unsafe fn submit_then(
        &mut self,
        op: Op,
        file: &Arc<FileHandle>,
        file_offset: u64,
        buf: BufferRef,
        done: Box<dyn FnOnce(Result<usize>) + Send>,
    ) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe {
            self.driver.submit_then_into(op, file, file_offset, buf, done, Some(&mut self.bulk))
        }
    }

    /// Queues every I/O the group holds now.
    pub fn flush(&mut self) {
        self.bulk.flush();
    }
}
