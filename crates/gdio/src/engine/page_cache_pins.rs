//! Page-cache pins: file ranges that are read into GPU memory again and again stay mapped and
//! registered with the GPU, so that every later read of them is one DMA straight out of the
//! page cache, with no `pread` and no CPU copy (the bounce path's ceiling on the H200 is the
//! memory bandwidth its CPU copy shares with the DMA; copies out of registered page-cache
//! pages ran at the link, BENCHMARKS.md session 10 run 1).
//!
//! Registering costs about as much as reading (54 GB/s on ext4's large folios, 14–20 on
//! tmpfs's 4 KiB pages, one thread), so nothing is pinned on a file's first read: the file is
//! counted in [`CHUNK`]s, and a chunk whose bytes have been read twice over
//! (`READS_BEFORE_PIN`) is pinned by a background thread, one chunk at a time and only while the
//! engine has no I/O in flight (`QUIET`): a registration holds the driver's locks, and on the
//! H200 registering an 8 GiB file while KvikIO read it cut that pass from 48 to 21–25 GB/s
//! (ext4) and 10 (tmpfs) (session 36 run 1). A model loaded once pins nothing; a dataset read
//! every epoch, with compute between the reads, is read out of the pins once its chunks are
//! pinned (run 1, all pinned: 55.0 GB/s, the link, for 64 MiB requests against 52.0 through
//! the bounce buffers; 52.0 against 51.1–51.4 for KvikIO's 4 MiB at 16 threads). Reads back
//! to back leave the thread few quiet milliseconds (run 2: KvikIO's six passes and
//! `gdio bench`'s iterations read no faster with the pins on than off), and a registration in
//! the gaps of a training loop may delay its CUDA calls, so the pins are off by default.
//!
//! A pinned page cannot be reclaimed, so the pins have a budget (`page_cache_pins_max_bytes`,
//! 0 turns them off) and a chunk that no read used for `page_cache_pins_idle_ms` is released.
//!
//! Pinned pages are the file's page-cache pages: writes through `write`, another mapping or
//! this file's own writes land in them, and reclaim, compaction and `drop_caches` leave them
//! alone. Only a change that takes pages out of the file (truncate, hole punch, a direct write
//! that invalidates the cache) would leave a pin on pages the file no longer has. Each of
//! those moves the file's ctime, so every read compares the file's size, mtime and ctime
//! (one `fstat`) with what they were when its chunks were pinned and drops the file's pins
//! when they differ; and a file changed less than `SETTLE` before it would be pinned is
//! not pinned yet, so that a coarse timestamp (one tick, or a second or two on some
//! filesystems) cannot hide a later change. Network filesystems and FUSE, whose page cache may
//! lag the server, are never pinned.

use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use super::file_stamp::{keepable, stat, Stamp};
use super::job::Counters;
use super::mapped::Mapping;
use crate::file::{residency, FileHandle};
use crate::gpu::GpuRuntime;

/// The unit a file is counted, pinned and released in: one mapping, one registration (about
/// 0.6 ms on ext4's page cache, 2 ms on tmpfs's 4 KiB pages: what a read arriving meanwhile
/// waits at most).
pub(crate) const CHUNK: u64 = 32 << 20;
/// How long the engine must have had no I/O in flight before a chunk is registered.
const QUIET: Duration = Duration::from_millis(1);
/// A chunk is pinned once this many times its length has been read from it.
const READS_BEFORE_PIN: u64 = 2;
/// One chunk of a file, mapped read-only and registered with the GPU; unregistered and
/// unmapped when the last read holding it lets go.
pub(crate) struct PinnedChunk {
    map: Mapping,
    runtime: Arc<dyn GpuRuntime>,
    ordinal: usize,
}

impl PinnedChunk {
    /// Maps `len` bytes of `fd` at `offset` and registers them with GPU `ordinal`; `Ok(None)`
    /// when not every page of the range is in the page cache (registering would read the rest
    /// from the disk).
    fn pin(
        runtime: &Arc<dyn GpuRuntime>,
        ordinal: usize,
        fd: BorrowedFd<'_>,
        offset: u64,
        len: u64,
    ) -> crate::error::Result<Option<PinnedChunk>> {
        if !residency::residency(fd, offset, len).is_some_and(|r| r.fraction() >= 1.0) {
            return Ok(None);
        }
        // Whole pages of a range below the file's end (the chunk's length comes from the size
        // the stamp was taken with): no page lies wholly past it.
        let map_len = charge(len) as usize;
        let map = Mapping::new(fd, offset, map_len).map_err(|e| {
            crate::error::Error::from_errno(e, "mmap of a page-cache chunk failed")
                .with_range(offset, len)
        })?;
        // SAFETY: the mapping lives until `unregister_host` has returned (Drop unregisters
        // before the mapping is dropped; on error the mapping was never registered).
        unsafe { runtime.register_host(ordinal, map.ptr, map.len, true) }
            .map_err(|e| e.with_range(offset, len))?;
        Ok(Some(PinnedChunk { map, runtime: runtime.clone(), ordinal }))
    }

    /// The first byte of the chunk's mapping.
    pub(crate) fn ptr(&self) -> *const u8 {
        self.map.ptr
    }

    /// What the chunk costs the budget: its mapping's length.
    fn bytes(&self) -> u64 {
        self.map.len as u64
    }
}

impl Drop for PinnedChunk {
    fn drop(&mut self) {
        // SAFETY: registered in `pin`; whoever copied from it held this value until its copy
        // was complete, so no copy is in flight. The mapping is unmapped after this, when the
        // field drops.
        if let Err(e) = unsafe { self.runtime.unregister_host(self.ordinal, self.map.ptr) } {
            tracing::debug!(error = %e, "unregistering a page-cache chunk failed");
        }
    }
}

/// The pinned chunks that hold a read's range: `(chunk, offset in the chunk, length)` in file
/// order. Holding it keeps the chunks registered, and the engine busy for the background
/// thread.
pub(crate) struct PinnedSpan {
    pub(crate) pieces: Vec<(Arc<PinnedChunk>, usize, usize)>,
    inner: Arc<Inner>,
}

impl Drop for PinnedSpan {
    fn drop(&mut self) {
        self.inner.spans.fetch_sub(1, Ordering::Relaxed);
    }
}

enum Chunk {
    /// Not pinned; this many bytes of it have been read.
    Counting(u64),
    /// Waiting for (or in) the background thread.
    Queued,
    Pinned {
        pin: Arc<PinnedChunk>,
        used: Instant,
    },
}

struct FilePins {
    stamp: Stamp,
    chunks: HashMap<u64, Chunk>,
    /// The file, for the background thread to map (one descriptor per file, not per chunk).
    fd: Option<Arc<OwnedFd>>,
    /// Registration failed for this file (a filesystem the driver cannot pin): not tried again
    /// until the file changes.
    refused: bool,
    /// The last read that looked at this file.
    touched: Instant,
}

impl FilePins {
    fn new(stamp: Stamp, now: Instant) -> FilePins {
        FilePins { stamp, chunks: HashMap::new(), fd: None, refused: false, touched: now }
    }

    /// Whether a chunk of the file is pinned or about to be.
    fn holds_pins(&self) -> bool {
        self.chunks.values().any(|c| !matches!(c, Chunk::Counting(_)))
    }
}

/// A chunk for the background thread to pin.
struct Work {
    key: (u64, u64),
    chunk: u64,
    fd: Arc<OwnedFd>,
    stamp: Stamp,
    ordinal: usize,
}

#[derive(Default)]
struct State {
    files: HashMap<(u64, u64), FilePins>,
    /// Above this many files, those without pins that no read looked at for the idle time
    /// are forgotten (their counts start again from nothing).
    forget_above: usize,
    /// Bytes pinned and queued to be pinned (what the budget counts).
    committed: u64,
    work: VecDeque<Work>,
    /// Chunks to unregister (off the readers' threads: it can take tens of milliseconds).
    release: Vec<Arc<PinnedChunk>>,
    stop: bool,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// A file's chunks' length: [`CHUNK`], less at the end of the file.
fn chunk_len(size: u64, chunk: u64) -> u64 {
    size.saturating_sub(chunk * CHUNK).min(CHUNK)
}

/// What a chunk of `len` file bytes costs the budget: its mapping, whole pages.
fn charge(len: u64) -> u64 {
    let page = crate::memory::page_size() as u64;
    len.div_ceil(page) * page
}

/// The engine's page-cache pins (see the module doc).
pub(crate) struct PageCachePins {
    inner: Arc<Inner>,
}

/// What the pins may hold and for which reads (the `page_cache_pins_*` keys).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    /// The most bytes pinned at once; 0: never pin.
    pub max_bytes: u64,
    /// A chunk no read used for this long is released.
    pub idle: Duration,
    /// Reads smaller than this neither use nor count the pins.
    pub min_request: u64,
}

struct Inner {
    runtime: Arc<dyn GpuRuntime>,
    budget: Budget,
    /// The engine's counters: its jobs in flight say whether it has I/O in flight.
    counters: Arc<Counters>,
    state: Mutex<State>,
    wake: Condvar,
    /// Bytes registered now (for the counters).
    pinned: AtomicU64,
    /// Reads out of the pins in flight.
    spans: AtomicUsize,
    /// Set when the pins are dropped: the background thread stops waiting for a quiet engine.
    stopping: AtomicBool,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the engine has I/O in flight (jobs, or reads out of the pins).
    fn busy(&self) -> bool {
        self.counters.jobs_in_flight.load(Ordering::Relaxed) + self.spans.load(Ordering::Relaxed)
            > 0
    }

    /// Waits until the engine has had no I/O in flight for [`QUIET`], or `at_most` has passed;
    /// false when the pins are being dropped.
    fn wait_quiet(&self, at_most: Duration) -> bool {
        let start = Instant::now();
        let mut quiet_since: Option<Instant> = None;
        loop {
            if self.stopping.load(Ordering::Relaxed) {
                return false;
            }
            let now = Instant::now();
            if now.duration_since(start) >= at_most {
                return true;
            }
            if self.busy() {
                quiet_since = None;
            } else if now.duration_since(*quiet_since.get_or_insert(now)) >= QUIET {
                return true;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

impl PageCachePins {
    /// Pins over `runtime` within `budget`, registering only while `counters` show no job
    /// in flight. Starts nothing: the background thread starts with the first chunk to pin.
    pub(crate) fn new(
        runtime: Arc<dyn GpuRuntime>,
        budget: Budget,
        counters: Arc<Counters>,
    ) -> Self {
        let inner = Inner {
            runtime,
            budget,
            counters,
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            pinned: AtomicU64::new(0),
            spans: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
        };
        PageCachePins { inner: Arc::new(inner) }
    }

    /// Bytes of page cache registered with the GPU now.
    pub(crate) fn pinned_bytes(&self) -> u64 {
        self.inner.pinned.load(Ordering::Relaxed)
    }

    /// The pins holding all of `[offset, offset + len)` of `file` for a read into GPU
    /// `ordinal`, or `None` (then the read goes through the bounce buffers, and counts towards
    /// pinning the chunks it reads).
    pub(crate) fn cover(
        &self,
        file: &FileHandle,
        offset: u64,
        len: u64,
        ordinal: usize,
    ) -> Option<PinnedSpan> {
        let inner = &self.inner;
        let budget = inner.budget;
        if budget.max_bytes == 0 || len < budget.min_request.max(1) || !keepable(file) {
            return None;
        }
        let (key, stamp) = stat(file.buffered_fd())?;
        let len = len.min(stamp.size.saturating_sub(offset));
        if len == 0 {
            return None;
        }
        let now = Instant::now();
        let mut guard = inner.lock();
        let state = &mut *guard;
        if state.files.len() > state.forget_above.max(1024) {
            forget_idle_files(state, now, budget.idle);
        }
        let pins = state.files.entry(key).or_insert_with(|| FilePins::new(stamp, now));
        pins.touched = now;
        if pins.stamp != stamp {
            // The file changed: its pins may hold pages it no longer has.
            for (_, c) in pins.chunks.drain() {
                if let Chunk::Pinned { pin, .. } = c {
                    state.committed -= pin.bytes();
                    state.release.push(pin);
                }
                // A queued chunk: the background thread finds the stamp changed and lets
                // it go.
            }
            *pins = FilePins::new(stamp, now);
            inner.wake.notify_all();
        }
        let (first, last) = (offset / CHUNK, (offset + len - 1) / CHUNK);
        if (first..=last).all(|c| matches!(pins.chunks.get(&c), Some(Chunk::Pinned { .. }))) {
            let mut pieces = Vec::with_capacity((last - first + 1) as usize);
            let mut at = offset;
            for c in first..=last {
                if let Some(Chunk::Pinned { pin, used }) = pins.chunks.get_mut(&c) {
                    *used = now;
                    let end = (offset + len).min((c + 1) * CHUNK);
                    pieces.push((pin.clone(), (at - c * CHUNK) as usize, (end - at) as usize));
                    at = end;
                }
            }
            inner.spans.fetch_add(1, Ordering::Relaxed);
            return Some(PinnedSpan { pieces, inner: inner.clone() });
        }
        let wants_pins = !pins.refused && stamp.settled(SystemTime::now());
        let mut queued = false;
        for c in first..=last {
            let whole = chunk_len(stamp.size, c);
            let read = (offset + len).min(c * CHUNK + whole) - offset.max(c * CHUNK);
            let entry = pins.chunks.entry(c).or_insert(Chunk::Counting(0));
            let Chunk::Counting(bytes) = entry else { continue };
            *bytes += read;
            let cost = charge(whole);
            if !wants_pins
                || *bytes < READS_BEFORE_PIN * whole
                || state.committed + cost > budget.max_bytes
            {
                continue;
            }
            let fd = match &pins.fd {
                Some(fd) => fd.clone(),
                None => match file.buffered_fd().try_clone_to_owned() {
                    Ok(fd) => pins.fd.insert(Arc::new(fd)).clone(),
                    Err(_) => continue,
                },
            };
            *entry = Chunk::Queued;
            state.committed += cost;
            state.work.push_back(Work { key, chunk: c, fd, stamp, ordinal });
            queued = true;
        }
        if queued {
            if state.thread.is_none() {
                let me = inner.clone();
                let spawned = std::thread::Builder::new()
                    .name("gdio-pins".into())
                    .spawn(move || background(&me));
                match spawned {
                    Ok(h) => state.thread = Some(h),
                    Err(e) => {
                        // No thread, no pins: give the budget back and stop trying.
                        tracing::debug!(error = %e, "no thread for page-cache pins");
                        for w in state.work.drain(..) {
                            state.committed -= charge(chunk_len(w.stamp.size, w.chunk));
                        }
                        for p in state.files.values_mut() {
                            p.chunks.clear();
                            p.refused = true;
                        }
                        return None;
                    }
                }
            }
            inner.wake.notify_all();
        }
        None
    }
}

/// Forgets files with no chunk pinned or queued that no read looked at for `idle`, and sets
/// the count above which this is done again to twice what is left, so the work stays in
/// proportion to the files read.
fn forget_idle_files(state: &mut State, now: Instant, idle: Duration) {
    state.files.retain(|_, p| p.holds_pins() || now.duration_since(p.touched) < idle);
    state.forget_above = 2 * state.files.len();
}

impl Drop for PageCachePins {
    fn drop(&mut self) {
        self.inner.stopping.store(true, Ordering::Relaxed);
        let handle = {
            let mut state = self.inner.lock();
            state.stop = true;
            state.thread.take()
        };
        self.inner.wake.notify_all();
        if let Some(h) = handle {
            let _ = h.join();
        }
        // Every chunk no read holds is unregistered here, with the files' table.
        let (files, release) = {
            let mut state = self.inner.lock();
            (std::mem::take(&mut state.files), std::mem::take(&mut state.release))
        };
        drop(files);
        drop(release);
        self.inner.pinned.store(0, Ordering::Relaxed);
    }
}

/// The background thread: pins queued chunks, releases changed and idle ones, until the pins
/// are dropped.
fn background(inner: &Inner) {
    loop {
        let (work, release) = {
            let mut state = inner.lock();
            loop {
                if state.stop {
                    return;
                }
                expire_idle(inner, &mut state);
                if !state.work.is_empty() || !state.release.is_empty() {
                    break;
                }
                // Sleep until work arrives or the next pin could go idle.
                let any_pinned = inner.pinned.load(Ordering::Relaxed) > 0;
                let wait = if any_pinned {
                    inner.budget.idle.max(Duration::from_millis(10))
                } else {
                    Duration::from_secs(3600)
                };
                state = inner.wake.wait_timeout(state, wait).unwrap_or_else(|p| p.into_inner()).0;
            }
            (state.work.pop_front(), std::mem::take(&mut state.release))
        };
        // Unregistering holds the driver's locks too (1.5–58 ms a call on the H200, session 11),
        // but pins must not outlive a change of their file for long: a second at most.
        if !release.is_empty() && !inner.wait_quiet(Duration::from_secs(1)) {
            return;
        }
        for pin in release {
            let bytes = pin.bytes();
            drop(pin);
            inner.pinned.fetch_sub(bytes, Ordering::Relaxed);
        }
        if let Some(w) = work {
            if !inner.wait_quiet(Duration::MAX) {
                return;
            }
            pin_one(inner, w);
        }
    }
}

/// Moves pins no read used for `idle` to the release list.
fn expire_idle(inner: &Inner, state: &mut State) {
    let now = Instant::now();
    let mut freed = 0;
    let mut release = Vec::new();
    for pins in state.files.values_mut() {
        for c in pins.chunks.values_mut() {
            if let Chunk::Pinned { pin, used } = c {
                if now.duration_since(*used) >= inner.budget.idle {
                    freed += pin.bytes();
                    if let Chunk::Pinned { pin, .. } = std::mem::replace(c, Chunk::Counting(0)) {
                        release.push(pin);
                    }
                }
            }
        }
    }
    state.committed -= freed;
    state.release.extend(release);
}

/// Pins one queued chunk, unless its file changed meanwhile.
fn pin_one(inner: &Inner, w: Work) {
    let offset = w.chunk * CHUNK;
    let len = chunk_len(w.stamp.size, w.chunk);
    let pinned = PinnedChunk::pin(&inner.runtime, w.ordinal, w.fd.as_fd(), offset, len);
    // The file must not have changed while it was mapped and registered.
    let same = stat(w.fd.as_fd()).is_some_and(|(_, s)| s == w.stamp);
    let cost = charge(len);
    let mut guard = inner.lock();
    let state = &mut *guard;
    // Whatever happens next, the queued charge ends here; a pin kept is charged again.
    state.committed -= cost;
    let pins = state.files.get_mut(&w.key).filter(|p| p.stamp == w.stamp && same);
    match (pins, pinned) {
        (Some(pins), Ok(Some(pin))) => {
            inner.pinned.fetch_add(cost, Ordering::Relaxed);
            state.committed += cost;
            pins.chunks.insert(w.chunk, Chunk::Pinned { pin: Arc::new(pin), used: Instant::now() });
        }
        (None, Ok(Some(pin))) => {
            // Changed meanwhile (the entry was reset or forgotten): nothing stays pinned.
            inner.pinned.fetch_add(cost, Ordering::Relaxed);
            state.release.push(Arc::new(pin));
        }
        (Some(pins), Ok(None)) => {
            // Not all in the page cache: count again from nothing.
            pins.chunks.insert(w.chunk, Chunk::Counting(0));
        }
        (Some(pins), Err(e)) => {
            tracing::debug!(error = %e, "page-cache pins: registration refused; not pinning this file");
            pins.chunks.insert(w.chunk, Chunk::Counting(0));
            pins.refused = true;
        }
        (None, _) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_pinned_only_while_the_engine_has_no_io_in_flight() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        let data: Vec<u8> =
            (0..4u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        std::thread::sleep(super::super::file_stamp::SETTLE + Duration::from_millis(100));
        let f = FileHandle::open(&p).unwrap();
        let counters: Arc<Counters> = Arc::default();
        counters.jobs_in_flight.store(1, Ordering::Relaxed);
        let rt = Arc::new(crate::gpu::sim::SimRuntime::new(1, Duration::ZERO));
        let budget =
            Budget { max_bytes: 1 << 30, idle: Duration::from_secs(60), min_request: 1 << 20 };
        let pins = PageCachePins::new(rt, budget, counters.clone());
        for _ in 0..2 {
            for off in (0..4u64 << 20).step_by(1 << 20) {
                assert!(pins.cover(&f, off, 1 << 20, 0).is_none(), "pinned at once");
            }
        }
        assert!(pins.cover(&f, 0, (1 << 20) - 1, 0).is_none(), "below the smallest request");
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(pins.pinned_bytes(), 0, "pinned while a job was alive");
        counters.jobs_in_flight.store(0, Ordering::Relaxed);
        let start = Instant::now();
        while pins.pinned_bytes() != 4 << 20 {
            assert!(start.elapsed() < Duration::from_secs(10), "never pinned");
            std::thread::sleep(Duration::from_millis(5));
        }
        let span = pins.cover(&f, 1 << 20, 2 << 20, 0).expect("pinned");
        assert_eq!((span.pieces.len(), span.pieces[0].1, span.pieces[0].2), (1, 1 << 20, 2 << 20));
        // SAFETY: the span holds the chunk mapped; its bytes are the file's.
        let bytes =
            unsafe { std::slice::from_raw_parts(span.pieces[0].0.ptr().add(1 << 20), 2 << 20) };
        assert!(bytes == &data[1 << 20..3 << 20]);
        // A read out of the pins in flight keeps the engine busy for the background thread.
        assert!(pins.inner.busy());
        drop(span);
        assert!(!pins.inner.busy());
    }

    #[test]
    fn chunks_are_whole_but_the_last_and_cost_whole_pages() {
        let page = crate::memory::page_size() as u64;
        assert_eq!(chunk_len(3 * CHUNK, 2), CHUNK);
        assert_eq!(chunk_len(2 * CHUNK + 5, 2), 5);
        assert_eq!(chunk_len(2 * CHUNK, 2), 0);
        assert_eq!(charge(5), page);
        assert_eq!(charge(CHUNK), CHUNK);
        assert_eq!(charge(page + 1), 2 * page);
    }
}
