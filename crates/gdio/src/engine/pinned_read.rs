//! Reads served out of memory the engine holds (page-cache pins, [`super::page_cache_pins`],
//! and read-ahead, [`super::read_ahead`], in pinned host memory or in GPU memory of the
//! engine's own): one copy per piece the range crosses (host→device out of pinned memory,
//! device→device out of GPU memory), queued on the calling thread's own stream and waited for
//! before the call returns. No worker, no bounce buffer, no CPU copy: many callers at once
//! keep as many copies in flight as they have threads.

use std::cell::RefCell;
use std::sync::Arc;

use super::caller_lane::{key_of, retain_live};
use super::lane::{wait_marker, Polling};
use super::page_cache_pins::PinnedSpan;
use crate::error::Result;
use crate::gpu::{GpuRuntime, GpuStream};

/// Where a piece of a held read comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// Registered (pinned) host memory: a host→device copy.
    Host(*const u8),
    /// GPU memory of the destination's GPU: a device→device copy.
    Device(u64),
}

struct Owned {
    /// The runtime's address (see `caller_lane`: streams are reused only for it).
    runtime: usize,
    ordinal: usize,
    stream: Box<dyn GpuStream>,
}

thread_local! {
    static STREAMS: RefCell<Vec<Owned>> = const { RefCell::new(Vec::new()) };
}

/// Drops the calling thread's streams of runtimes that no engine uses any more.
pub(crate) fn release_unused() {
    let _ = STREAMS.try_with(|cell| {
        if let Ok(mut streams) = cell.try_borrow_mut() {
            retain_live(&mut streams, 0, |o| o.runtime);
        }
    });
}

/// Copies `span` into GPU `ordinal` at device address `dst` and returns the bytes copied, on
/// the calling thread's stream for that GPU (made on its first such read), waiting for the
/// copies as the workers wait for theirs (`polling`: poll the marker, then block; many
/// callers in `cuStreamSynchronize` at once ran 1 MiB × 32 at half the rate, session 36 run 1). `None` when the
/// thread cannot have one (it is exiting, or is in this function already): the caller reads
/// the other way.
pub(crate) fn read(
    runtime: &Arc<dyn GpuRuntime>,
    ordinal: usize,
    span: &PinnedSpan,
    dst: u64,
    polling: Polling,
) -> Option<Result<u64>> {
    let pieces: Vec<(Source, usize)> = span
        .pieces
        .iter()
        // SAFETY: the span was cut from the chunk's mapping, which holds `start + len` bytes.
        .map(|(chunk, start, len)| (Source::Host(unsafe { chunk.ptr().add(*start) }), *len))
        .collect();
    // SAFETY: the chunks stay registered while `span` holds them, past this call; the caller
    // promises the span's length of device memory at `dst` is its to write.
    unsafe { read_pieces(runtime, ordinal, &pieces, dst, polling) }
}

/// Copies `pieces` (registered host memory, or memory of GPU `ordinal`), one after another,
/// into GPU `ordinal` at device address `dst` and returns the bytes copied, on the calling
/// thread's stream as [`read`] does; `None` when the thread cannot have a stream (the caller
/// reads the other way).
///
/// # Safety
/// Each piece is registered (pinned) host memory, or device memory of GPU `ordinal` apart from
/// the destination, that stays valid and unchanged until this returns; `dst` and the pieces'
/// total length after it are device memory the caller may write.
pub(crate) unsafe fn read_pieces(
    runtime: &Arc<dyn GpuRuntime>,
    ordinal: usize,
    pieces: &[(Source, usize)],
    dst: u64,
    polling: Polling,
) -> Option<Result<u64>> {
    let key = key_of(runtime);
    STREAMS
        .try_with(|cell| {
            let mut streams = cell.try_borrow_mut().ok()?;
            retain_live(&mut streams, key, |o| o.runtime);
            let i = match streams.iter().position(|o| o.runtime == key && o.ordinal == ordinal) {
                Some(i) => i,
                None => {
                    let made =
                        runtime.bind_thread(ordinal).and_then(|()| runtime.new_stream(ordinal, 1));
                    match made {
                        Ok(stream) => streams.push(Owned { runtime: key, ordinal, stream }),
                        Err(e) => return Some(Err(e)),
                    }
                    streams.len() - 1
                }
            };
            // SAFETY: forwarded contract.
            Some(unsafe { copy(runtime, ordinal, &mut *streams[i].stream, pieces, dst, polling) })
        })
        .ok()
        .flatten()
}

/// # Safety
/// As [`read_pieces`].
unsafe fn copy(
    runtime: &Arc<dyn GpuRuntime>,
    ordinal: usize,
    stream: &mut dyn GpuStream,
    pieces: &[(Source, usize)],
    dst: u64,
    polling: Polling,
) -> Result<u64> {
    runtime.bind_thread(ordinal)?;
    // SAFETY: forwarded contract: the pieces stay valid past the wait in `copy_pieces`.
    unsafe { copy_pieces(stream, pieces.iter().copied(), dst, polling)? };
    Ok(pieces.iter().map(|p| p.1 as u64).sum())
}

/// Queues one copy per piece, each to the device bytes right after the last, then a marker,
/// and waits for it. On any failure it synchronizes the stream before it returns the error,
/// so that no copy still reads the pieces or writes the caller's buffer after the call.
///
/// # Safety
/// As [`read_pieces`], with `stream` a stream of the destination's GPU.
unsafe fn copy_pieces(
    stream: &mut dyn GpuStream,
    pieces: impl Iterator<Item = (Source, usize)>,
    dst: u64,
    polling: Polling,
) -> Result<()> {
    let mut at = dst;
    let queued = (|| {
        for (src, len) in pieces {
            match src {
                // SAFETY: forwarded contract: registered host memory, kept until this returns.
                Source::Host(p) => unsafe { stream.copy_to_device(at, p, len)? },
                // SAFETY: forwarded contract: device memory of the stream's GPU, apart from
                // the destination, kept until this returns.
                Source::Device(a) => unsafe { stream.copy_within_device(at, a, len)? },
            }
            at += len as u64;
        }
        stream.record(0)?;
        wait_marker(stream, polling, 0)
    })();
    if queued.is_err() {
        // Wait for what was queued before the pins or the caller's buffer can go.
        let _ = stream.synchronize();
    }
    queued
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Error, ErrorKind};

    /// A stream that logs what it is asked and fails the call named in `fail`.
    #[derive(Default)]
    struct Logged {
        calls: Vec<String>,
        fail: Option<&'static str>,
        copies: usize,
    }

    impl Logged {
        fn step(&mut self, call: String, name: &'static str) -> Result<()> {
            self.calls.push(call);
            match self.fail {
                Some(f) if f == name => Err(Error::new(ErrorKind::Gpu, format!("{name} failed"))),
                _ => Ok(()),
            }
        }
    }

    impl GpuStream for Logged {
        unsafe fn copy_to_device(&mut self, dst: u64, src: *const u8, len: usize) -> Result<()> {
            self.copies += 1;
            let name = if self.copies == 2 { "second copy" } else { "copy" };
            self.step(format!("copy {dst} {} {len}", src as usize), name)
        }
        unsafe fn copy_within_device(&mut self, dst: u64, src: u64, len: usize) -> Result<()> {
            self.copies += 1;
            let name = if self.copies == 2 { "second copy" } else { "copy" };
            self.step(format!("device copy {dst} {src} {len}"), name)
        }
        unsafe fn copy_to_host(&mut self, _: *mut u8, _: u64, _: usize) -> Result<()> {
            unreachable!("a pinned read copies to the device only")
        }
        fn record(&mut self, slot: usize) -> Result<()> {
            self.step(format!("record {slot}"), "record")
        }
        fn wait(&mut self, slot: usize) -> Result<()> {
            self.step(format!("wait {slot}"), "wait")
        }
        fn query(&mut self, slot: usize) -> Result<bool> {
            self.step(format!("query {slot}"), "query").map(|()| false)
        }
        fn synchronize(&mut self) -> Result<()> {
            self.step("synchronize".into(), "synchronize")
        }
        fn slots(&self) -> usize {
            1
        }
    }

    fn run(fail: Option<&'static str>) -> (Result<()>, Vec<String>) {
        let mut s = Logged { fail, ..Logged::default() };
        // One piece of each kind: pinned host memory, then GPU memory.
        let pieces =
            [(Source::Host(4096usize as *const u8), 1000usize), (Source::Device(65536), 24)];
        // No spin: the marker is asked once, then waited for.
        let polling = Polling { spin: std::time::Duration::ZERO, every: std::time::Duration::ZERO };
        // SAFETY: the logged stream dereferences nothing.
        let r = unsafe { copy_pieces(&mut s, pieces.into_iter(), 1 << 20, polling) };
        (r, s.calls)
    }

    #[test]
    fn pieces_land_one_after_another_each_copied_by_its_kind_and_the_marker_is_waited_for() {
        let (r, calls) = run(None);
        assert!(r.is_ok());
        let want = ["copy 1048576 4096 1000", "device copy 1049576 65536 24", "record 0", "wait 0"];
        assert_eq!(calls, want);
    }

    #[test]
    fn a_failure_after_a_copy_was_queued_synchronizes_before_it_returns() {
        for fail in ["second copy", "record", "wait"] {
            let (r, calls) = run(Some(fail));
            let e = r.expect_err(fail);
            assert!(e.to_string().contains(fail), "{fail}: {e}");
            assert_eq!(calls.last().map(String::as_str), Some("synchronize"), "{fail}: {calls:?}");
        }
        // The first copy failing leaves nothing queued, and is still safe.
        let (r, calls) = run(Some("copy"));
        assert!(r.is_err());
        assert_eq!(calls, ["copy 1048576 4096 1000", "synchronize"]);
    }
}
