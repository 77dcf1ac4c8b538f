//! Read-ahead for sequential synchronous reads into GPU memory (`read_ahead_bytes`).
//!
//! A client such as KvikIO reads a file into GPU memory from a few threads, each asking for
//! the next few MiB when its last read returns. Between its reads each thread is away, so
//! four or eight of them keep only four or eight reads in flight, and the workers that
//! split those reads sit idle part of the time while every read pays its `pread` and its copy
//! in turn; sixteen reads in flight keep the workers and the link busy (4 MiB × 8 moved
//! 38–47 GB/s where 4 MiB × 16 moved 50, BENCHMARKS.md session 49 run 2).
//!
//! So once [`STREAK`] reads into GPU memory of one length have each started right where the
//! highest end read of the file so far was, with nothing far from it between them (reads
//! within one per allowed caller, `read_ahead_max_callers`, past it are threads that took
//! their ranges in order and entered in a slightly different one, and reads up to twice that
//! behind it are threads the scheduler held back after they took their range), the engine
//! reads the following ranges of that length, up to `read_ahead_bytes`, into memory of its
//! own, on its workers as ordinary reads queued behind the reads already asked for (a cold
//! range through the `O_DIRECT` descriptor, as for the caller), through duplicates of the
//! file's descriptors that live as long as they do. A read that finds its range there waits
//! for that read if it is still going and copies the bytes on the calling thread's stream: no
//! `pread` on its way, no worker. A read anywhere else starts the count again and lets the
//! ranges read ahead of that file go.
//!
//! That memory is GPU memory of the caller's GPU with `read_ahead_gpu_memory` (the workers
//! read ahead as they read for callers: through their bounce buffers and the link, and the
//! caller's copy is device to device), else pinned host memory (the workers read ahead into it
//! with the CPU, and the caller's copy crosses the link).
//!
//! Bytes read ahead are the file's bytes only while the file has not changed since: they are
//! read only of a file whose last change is settled ([`file_stamp`](super::file_stamp)), and
//! handed out only while its size, mtime and ctime are those taken before they were read (one
//! `fstat` per read). Nothing is read ahead while more than `read_ahead_max_callers`
//! synchronous reads into GPU memory are in flight (enough reads keep the workers busy
//! without it), for requests outside `read_ahead_min_request_bytes` and
//! `read_ahead_max_request_bytes`, of network filesystems and FUSE, or into host memory.
//!
//! The memory is one allocation of `read_ahead_bytes`, made at the first read ahead and cut
//! into slots of the length being read; GPU memory serves reads into its own GPU only, and is
//! given back once every file read ahead was read to its end or let go (the GPU memory a
//! program's own allocator may want), to be made again at the next sequence. Ranges of a file
//! nobody read for [`IDLE`] are let go (their slots and the descriptor they hold) at the next
//! read into GPU memory, or when the engine goes; while read-ahead holds GPU memory, one thread
//! of its own (`gdio-read-ahead`, started with the memory, gone with it) lets them go after
//! [`IDLE`] while no read is in flight, without waiting for the next, so a program that stops
//! reading midway (a loader that skips the end of a file, then trains) gets the GPU memory
//! back.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use super::file_stamp::{keepable, stat, Stamp};
use super::job::Counters;
use super::pinned_read::Source;
use super::EngineIo;
use crate::error::Result;
use crate::file::{FileHandle, OpenOptions};
use crate::gpu::{DeviceBuffer, GpuRuntime, PinnedBuffer};
use crate::memory::{BufferRef, MemoryKind};

/// Reads of one length, each right at the highest end read so far, before any is read ahead.
pub(crate) const STREAK: u32 = 3;
/// A file nobody read into GPU memory for this long gives its slots back.
pub(crate) const IDLE: Duration = Duration::from_millis(500);
/// Slots are whole multiples of this.
const SLOT_ALIGN: usize = 64 << 10;

/// The limits of read-ahead, from the config.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    /// Pinned bytes read ahead at most (all files); 0: off.
    pub max_bytes: u64,
    /// Reads shorter than this neither use nor start read-ahead.
    pub min_request: u64,
    /// Reads longer than this neither use nor start read-ahead.
    pub max_request: u64,
    /// Nothing new is read ahead while more synchronous reads into GPU memory are in flight.
    pub max_callers: usize,
    /// How long ago a file's last change must be for it to be read ahead
    /// ([`SETTLE`](super::file_stamp::SETTLE); shorter only in tests).
    pub settle: Duration,
    /// Ranges are read ahead into GPU memory (`read_ahead_gpu_memory`), else pinned host
    /// memory.
    pub gpu_memory: bool,
}

/// The one allocation ranges are read ahead into.
enum Arena {
    /// Pinned host memory: serves reads into any GPU, each copied host to device.
    Host(PinnedBuffer),
    /// Memory of one GPU: serves reads into that GPU, each copied device to device.
    Device(DeviceBuffer),
}

impl Arena {
    fn len(&self) -> usize {
        match self {
            Arena::Host(b) => b.len(),
            Arena::Device(b) => b.len(),
        }
    }

    /// Whether reads into GPU `ordinal` may use it.
    fn serves(&self, ordinal: usize) -> bool {
        match self {
            Arena::Host(_) => true,
            Arena::Device(b) => b.ordinal() == ordinal,
        }
    }

    /// Where slot bytes `at..at + len` lie, as a buffer to read into.
    fn buffer(&self, at: usize, len: usize) -> BufferRef {
        match self {
            Arena::Host(b) => {
                BufferRef { addr: b.as_ptr() as u64 + at as u64, len, kind: MemoryKind::PinnedHost }
            }
            Arena::Device(b) => BufferRef {
                addr: b.addr() + at as u64,
                len,
                kind: MemoryKind::Device { ordinal: b.ordinal() },
            },
        }
    }

    /// Where slot bytes from `at` lie, as a source to copy from.
    fn source(&self, at: usize) -> Source {
        match self {
            // SAFETY: callers pass offsets of slots, inside the allocation.
            Arena::Host(b) => Source::Host(unsafe { b.as_ptr().add(at) }),
            Arena::Device(b) => Source::Device(b.addr() + at as u64),
        }
    }
}

/// Starts a read of `[offset, offset + buf.len)` of a file into `buf`, a slot of read-ahead's
/// memory (pinned host memory, or GPU memory).
pub(crate) type Start<'a> = &'a dyn Fn(&Arc<FileHandle>, BufferRef, u64) -> Result<EngineIo>;

/// A range read ahead (or being read): its read, then its slot.
struct Staged {
    /// Declared first: dropped (waited for) before anything lets the slot go.
    io: EngineIo,
    slot: usize,
    len: u64,
}

/// A slot whose read-ahead was let go while its read may still run.
struct Retiring {
    io: EngineIo,
    slot: usize,
}

/// One file's sequential reads.
struct Stream {
    stamp: Stamp,
    /// The length of the reads counted in `streak`.
    len: u64,
    /// The highest end read so far.
    frontier: u64,
    streak: u32,
    /// Where the next range read ahead starts.
    ahead: u64,
    chunks: BTreeMap<u64, Staged>,
    touched: Instant,
}

impl Stream {
    fn new(stamp: Stamp, offset: u64, len: u64, now: Instant) -> Stream {
        Stream {
            stamp,
            len,
            frontier: offset + len,
            streak: 1,
            ahead: offset + len,
            chunks: BTreeMap::new(),
            touched: now,
        }
    }
}

struct State {
    /// The engine is going: the idle thread stops.
    closed: bool,
    /// The idle thread ([`idle_reaper`]) runs.
    reaper: bool,
    /// Declared before the arena: their reads are waited for before it is freed.
    files: HashMap<(u64, u64), Stream>,
    retiring: Vec<Retiring>,
    arena: Option<Arena>,
    /// The arena could not be made (a locked-memory limit): read-ahead stays off.
    no_arena: bool,
    /// Bytes per slot (0 before the arena exists).
    slot_len: usize,
    /// Slots neither read into nor handed out.
    free: Vec<usize>,
    /// Slots handed out to readers now.
    taken: usize,
}

impl State {
    /// Nothing is read ahead, being read, handed out or retiring.
    fn idle(&self) -> bool {
        self.taken == 0
            && self.retiring.is_empty()
            && self.files.values().all(|s| s.chunks.is_empty())
    }

    /// Lets the arena go (until the next read ahead makes one) when it is GPU memory, nothing
    /// is handed out or waits to be, and every file read ahead was read to its end or let go:
    /// waits for the reads of ranges let go that still run (canceled: the tasks in flight
    /// finish), then frees it.
    fn give_back_gpu_memory(&mut self) {
        let done = self.files.values().all(|s| s.frontier >= s.stamp.size && s.chunks.is_empty());
        if !matches!(self.arena, Some(Arena::Device(_))) || !done || self.taken > 0 {
            return;
        }
        // Each drop waits for its read.
        self.retiring.clear();
        self.arena = None;
        self.slot_len = 0;
        self.free.clear();
    }

    fn slots(&self) -> usize {
        match &self.arena {
            Some(a) if self.slot_len > 0 => a.len() / self.slot_len,
            _ => 0,
        }
    }

    /// Lets go of `staged` (a read ahead nobody used): counted, canceled if not started, its
    /// slot free once its read is over.
    fn retire(&mut self, staged: Staged, counters: &Counters) {
        counters.read_ahead_unused.fetch_add(staged.len, Ordering::Relaxed);
        staged.io.cancel();
        self.retiring.push(Retiring { io: staged.io, slot: staged.slot });
    }

    /// Frees the slots of retired reads that are over.
    fn reap(&mut self) {
        let mut i = 0;
        while i < self.retiring.len() {
            if self.retiring[i].io.is_done() {
                let r = self.retiring.swap_remove(i);
                self.free.push(r.slot);
            } else {
                i += 1;
            }
        }
    }

    /// Lets go of files nobody read for [`IDLE`], then of GPU memory nothing needs.
    fn forget_idle(&mut self, now: Instant, counters: &Counters) {
        let idle: Vec<_> = self
            .files
            .iter()
            .filter(|(_, s)| now.duration_since(s.touched) >= IDLE)
            .map(|(k, _)| *k)
            .collect();
        for k in idle {
            self.drop_stream(k, true, counters);
        }
        self.reap();
        self.give_back_gpu_memory();
    }

    /// Retires every range of the stream at `key` and forgets the stream when `forget`.
    fn drop_stream(&mut self, key: (u64, u64), forget: bool, counters: &Counters) {
        let chunks = match self.files.get_mut(&key) {
            Some(s) => std::mem::take(&mut s.chunks),
            None => return,
        };
        for (_, c) in chunks {
            self.retire(c, counters);
        }
        if forget {
            self.files.remove(&key);
        }
    }
}

/// The engine's read-ahead.
pub(crate) struct ReadAhead {
    budget: Budget,
    runtime: Arc<dyn GpuRuntime>,
    counters: Arc<Counters>,
    /// Shared with the idle thread while read-ahead holds GPU memory.
    shared: Arc<Shared>,
    /// The idle thread last started (joined when the engine goes).
    reaper: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// Read-ahead's state and the idle thread's wake-up.
struct Shared {
    /// Synchronous reads into GPU memory of read-ahead's lengths in flight now
    /// ([`ReadAhead::enter`]).
    callers: AtomicUsize,
    state: Mutex<State>,
    /// Signalled when the engine goes.
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The idle thread: every [`IDLE`], while no read of read-ahead's lengths is in flight (a read
/// that takes long, a cold one or one on a loaded machine, is not its file left idle), lets go
/// of the files nobody read for that long and then of the GPU memory (once every file is let
/// go or read to its end); ends when read-ahead holds no GPU memory any more, or the engine
/// goes.
fn idle_reaper(shared: Arc<Shared>, counters: Arc<Counters>) {
    let mut state = shared.lock();
    while !state.closed && matches!(state.arena, Some(Arena::Device(_))) {
        state = shared.wake.wait_timeout(state, IDLE).unwrap_or_else(|p| p.into_inner()).0;
        if !state.closed && shared.callers.load(Ordering::Acquire) == 0 {
            state.forget_idle(Instant::now(), &counters);
        }
    }
    state.reaper = false;
}

/// A synchronous read into GPU memory of read-ahead's lengths, counted in flight until dropped.
pub(crate) struct Caller<'a>(&'a AtomicUsize);

impl Drop for Caller<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A range read ahead, handed to the read that asked for it: its bytes are the caller's to
/// copy once [`Taken::wait`] says so; the slot goes back when this is dropped, its bytes
/// counted as served ([`Taken::served`]) or unused.
pub(crate) struct Taken<'a> {
    /// Declared first: waited for before the slot goes back.
    io: Option<EngineIo>,
    slot: usize,
    src: Source,
    len: u64,
    served: bool,
    owner: &'a ReadAhead,
}

impl Taken<'_> {
    /// Waits for the read ahead and returns where its bytes are (pinned host memory, or
    /// memory of the GPU the caller reads into), or `None` when it failed or was short (the
    /// caller reads the usual way).
    pub(crate) fn wait(&self) -> Option<(Source, usize)> {
        let io = self.io.as_ref()?;
        match io.wait() {
            Ok(t) if t.bytes == self.len => Some((self.src, self.len as usize)),
            _ => None,
        }
    }

    /// The caller's copy of the bytes landed: they count as served, not unused.
    pub(crate) fn served(mut self) {
        self.served = true;
        self.owner.counters.read_ahead_bytes.fetch_add(self.len, Ordering::Relaxed);
    }
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        if !self.served {
            self.owner.counters.read_ahead_unused.fetch_add(self.len, Ordering::Relaxed);
        }
        // Wait for the read before the slot can be read into again.
        drop(self.io.take());
        let mut state = self.owner.lock();
        state.taken -= 1;
        state.free.push(self.slot);
        state.give_back_gpu_memory();
    }
}

impl ReadAhead {
    /// Read-ahead within `budget`, its arena pinned through `runtime` at the first read ahead,
    /// counted in `counters`.
    pub(crate) fn new(
        runtime: Arc<dyn GpuRuntime>,
        budget: Budget,
        counters: Arc<Counters>,
    ) -> Self {
        ReadAhead {
            budget,
            runtime,
            counters,
            shared: Arc::new(Shared {
                callers: AtomicUsize::new(0),
                state: Mutex::new(State {
                    closed: false,
                    reaper: false,
                    files: HashMap::new(),
                    retiring: Vec::new(),
                    arena: None,
                    no_arena: false,
                    slot_len: 0,
                    free: Vec::new(),
                    taken: 0,
                }),
                wake: Condvar::new(),
            }),
            reaper: Mutex::new(None),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.lock()
    }

    /// Whether reads of `len` bytes may use or start read-ahead.
    fn wants(&self, len: u64) -> bool {
        let b = &self.budget;
        b.max_bytes > 0 && len > 0 && len >= b.min_request && len <= b.max_request
    }

    /// Counts a synchronous read of `len` bytes into GPU memory in flight until the guard is
    /// dropped, when read-ahead is on and reads of its length may use it (nothing to count
    /// otherwise: many small callers would share the counter's cache line for nothing).
    pub(crate) fn enter(&self, len: u64) -> Option<Caller<'_>> {
        if !self.wants(len) {
            return None;
        }
        self.shared.callers.fetch_add(1, Ordering::AcqRel);
        Some(Caller(&self.shared.callers))
    }

    /// Synchronous reads into GPU memory of read-ahead's lengths in flight now.
    pub(crate) fn callers(&self) -> usize {
        self.shared.callers.load(Ordering::Acquire)
    }

    /// Bytes of pinned host memory and of GPU memory read-ahead holds now (its one
    /// allocation, once made, until GPU memory is given back).
    pub(crate) fn held_bytes(&self) -> (u64, u64) {
        match &self.lock().arena {
            Some(Arena::Host(a)) => (a.len() as u64, 0),
            Some(Arena::Device(a)) => (0, a.len() as u64),
            None => (0, 0),
        }
    }

    /// A synchronous read of `len` bytes at `offset` of `file` into GPU `ordinal`: counts it
    /// towards its file's sequence, reads ahead of it with `start` when the sequence is long
    /// enough, and returns the range read ahead that holds it, if one does. A read that
    /// reaches the end of the file, shorter than the sequence's others (KvikIO asks for what
    /// is left), counts as one of them: the last range read ahead is as short.
    pub(crate) fn look(
        &self,
        file: &FileHandle,
        offset: u64,
        len: u64,
        ordinal: usize,
        start: Start<'_>,
    ) -> Option<Taken<'_>> {
        let b = self.budget;
        let to_end = b.max_bytes > 0 && len > 0 && offset.saturating_add(len) >= file.size();
        if !(self.wants(len) || to_end && len < b.max_request) || !keepable(file) {
            return None;
        }
        let (key, stamp) = stat(file.buffered_fd())?;
        let now = Instant::now();
        let mut guard = self.lock();
        let state = &mut *guard;
        state.reap();
        state.forget_idle(now, &self.counters);
        let counters = &*self.counters;
        if state.files.get(&key).is_some_and(|s| s.stamp != stamp) {
            state.drop_stream(key, true, counters);
        }
        let len = match state.files.get(&key) {
            Some(s) if len < s.len && offset.saturating_add(len) >= stamp.size => s.len,
            _ if self.wants(len) => len,
            _ => return None,
        };
        let fresh = !state.files.contains_key(&key);
        let stream = state.files.entry(key).or_insert_with(|| Stream::new(stamp, offset, len, now));
        stream.touched = now;
        // What of the read lies in the file: the last range read ahead is short.
        let in_file = len.min(stamp.size.saturating_sub(offset));
        let hit = match stream.chunks.get(&offset) {
            Some(c) if c.len == in_file => stream.chunks.remove(&offset),
            _ => None,
        };
        // A read that starts right at the highest end read so far continues the sequence;
        // one within a read per caller allowed in flight past it (threads that took their
        // ranges in order enter in a slightly different one), or within twice that behind it
        // (a thread held back by the scheduler after it took its range, while the others went
        // on: what `left_behind` still keeps), leaves the count as it is; anywhere else starts
        // it again.
        let spread = (self.budget.max_callers as u64 + 1) * len;
        let near = len == stream.len
            && offset.saturating_add(2 * spread) >= stream.frontier
            && offset <= stream.frontier.saturating_add(spread);
        let continues = len == stream.len && offset == stream.frontier;
        if fresh {
            // Counted as the sequence's first read by `Stream::new`.
        } else if continues {
            stream.streak = stream.streak.saturating_add(1);
            stream.frontier = offset + len;
        } else if near {
            stream.frontier = stream.frontier.max(offset + len);
        } else {
            state.drop_stream(key, false, counters);
            if let Some(s) = state.files.get_mut(&key) {
                *s = Stream::new(stamp, offset, len, now);
            }
        }
        // The range found is handed out now, before anything is read ahead: a slot out keeps
        // the arena from being cut again or made on another GPU. A range in another GPU's
        // memory (read ahead before this sequence moved to this GPU) is let go.
        let hit = match hit {
            Some(c) => match &state.arena {
                Some(a) if a.serves(ordinal) => {
                    state.taken += 1;
                    Some((a.source(c.slot * state.slot_len), c))
                }
                _ => {
                    state.retire(c, counters);
                    None
                }
            },
            None => None,
        };
        self.left_behind(state, key, counters);
        let continuing = state.files.get(&key).is_some_and(|s| s.streak >= STREAK);
        if continuing
            && self.callers() <= b.max_callers
            && stamp.settled_for(SystemTime::now(), b.settle)
        {
            self.top_up(state, key, file, ordinal, start);
        }
        let Some((src, staged)) = hit else {
            // The last read of a file, read to its end, may be one that found nothing.
            state.give_back_gpu_memory();
            return None;
        };
        self.counters.read_ahead_reads.fetch_add(1, Ordering::Relaxed);
        let (io, slot, len) = (Some(staged.io), staged.slot, staged.len);
        Some(Taken { io, slot, src, len, served: false, owner: self })
    }

    /// Retires ranges of `key`'s stream that the reads have passed by far: nobody asks for
    /// them any more.
    fn left_behind(&self, state: &mut State, key: (u64, u64), counters: &Counters) {
        let Some(s) = state.files.get_mut(&key) else { return };
        // Reads further behind than twice the callers allowed in flight are not coming.
        let callers = self.budget.max_callers as u64 + 1;
        let behind = s.frontier.saturating_sub(2 * callers * s.len);
        let old: Vec<u64> = s.chunks.range(..behind).map(|(o, _)| *o).collect();
        let gone: Vec<Staged> = old.into_iter().filter_map(|o| s.chunks.remove(&o)).collect();
        for c in gone {
            state.retire(c, counters);
        }
    }

    /// Makes the arena at the first read ahead (GPU memory on `ordinal`, or pinned), makes it
    /// again on `ordinal` when it is another GPU's and idle, and cuts it into slots of `len`
    /// bytes when no slot is in use; false when there is no slot for reads of `len` bytes
    /// into GPU `ordinal`.
    fn slots_for(&self, state: &mut State, len: u64, ordinal: usize) -> bool {
        let want = (len as usize).div_ceil(SLOT_ALIGN) * SLOT_ALIGN;
        if state.no_arena {
            return false;
        }
        if state.arena.as_ref().is_some_and(|a| !a.serves(ordinal)) {
            if !state.idle() {
                return false;
            }
            state.arena = None;
            state.slot_len = 0;
            state.free.clear();
        }
        if state.arena.is_none() {
            match self.make_arena(ordinal) {
                Some(a) => state.arena = Some(a),
                None => {
                    state.no_arena = true;
                    return false;
                }
            }
            if matches!(state.arena, Some(Arena::Device(_))) && !state.reaper {
                self.start_reaper(state);
            }
        }
        if state.slot_len == want {
            return true;
        }
        if !state.idle() {
            return false;
        }
        state.slot_len = want;
        state.free = (0..state.slots()).rev().collect();
        state.slots() > 0
    }

    /// Starts the idle thread (GPU memory was just made); without it, GPU memory is given
    /// back only at reads.
    fn start_reaper(&self, state: &mut State) {
        let (shared, counters) = (self.shared.clone(), self.counters.clone());
        let started = std::thread::Builder::new()
            .name("gdio-read-ahead".into())
            .spawn(move || idle_reaper(shared, counters));
        match started {
            Ok(handle) => {
                state.reaper = true;
                // A handle replaced here is of a thread that ended (it cleared `reaper`).
                *self.reaper.lock().unwrap_or_else(|p| p.into_inner()) = Some(handle);
            }
            Err(e) => tracing::debug!(error = %e, "no idle thread for read-ahead's GPU memory"),
        }
    }

    /// One allocation of `read_ahead_bytes`: GPU memory on `ordinal` with
    /// `read_ahead_gpu_memory` (pinned host memory where the GPU has none to spare), else
    /// pinned; `None` when neither can be had.
    fn make_arena(&self, ordinal: usize) -> Option<Arena> {
        let bytes = (self.budget.max_bytes as usize).div_ceil(SLOT_ALIGN) * SLOT_ALIGN;
        if self.budget.gpu_memory {
            match DeviceBuffer::new(&self.runtime, ordinal, bytes) {
                Ok(a) => return Some(Arena::Device(a)),
                Err(e) => tracing::info!(
                    error = %e,
                    bytes,
                    "no GPU memory for read-ahead: reading ahead into pinned host memory"
                ),
            }
        }
        match PinnedBuffer::new(&self.runtime, ordinal, bytes) {
            Ok(a) => Some(Arena::Host(a)),
            Err(e) => {
                tracing::info!(error = %e, bytes, "no pinned memory for read-ahead: it stays off");
                None
            }
        }
    }

    /// Reads ahead of `key`'s stream into the free slots, up to `read_ahead_bytes` past the
    /// highest end read.
    fn top_up(
        &self,
        state: &mut State,
        key: (u64, u64),
        file: &FileHandle,
        ordinal: usize,
        start: Start<'_>,
    ) {
        let Some(len) = state.files.get(&key).map(|s| s.len) else { return };
        if !self.slots_for(state, len, ordinal) {
            return;
        }
        let (slot_len, max) = (state.slot_len as u64, self.budget.max_bytes);
        let Some(s) = state.files.get_mut(&key) else { return };
        s.ahead = s.ahead.max(s.frontier);
        if state.free.is_empty() || s.ahead >= s.stamp.size {
            return;
        }
        // The reads ahead hold the handle: the duplicate closes with the last of them.
        let Some(handle) = own_handle(file) else { return };
        while s.ahead < s.stamp.size && s.ahead < s.frontier + max {
            let Some(slot) = state.free.pop() else { break };
            let n = len.min(s.stamp.size - s.ahead);
            let buf = match &state.arena {
                Some(a) => a.buffer(slot * slot_len as usize, n as usize),
                None => break,
            };
            match start(&handle, buf, s.ahead) {
                Ok(io) => {
                    self.counters.read_ahead_started.fetch_add(n, Ordering::Relaxed);
                    s.chunks.insert(s.ahead, Staged { io, slot, len: n });
                    s.ahead += n;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "a read ahead could not start");
                    state.free.push(slot);
                    break;
                }
            }
        }
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        self.lock().closed = true;
        self.shared.wake.notify_all();
        if let Some(reaper) = self.reaper.get_mut().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = reaper.join();
        }
        // Every read ahead is waited for (the drops of its `EngineIo`) before the arena goes,
        // here, while the engine's workers still run: whichever thread lets go of `Shared`
        // last finds nothing in it.
        let mut state = self.lock();
        for s in state.files.values_mut() {
            for c in s.chunks.values() {
                c.io.cancel();
            }
        }
        let files = std::mem::take(&mut state.files);
        let retiring = std::mem::take(&mut state.retiring);
        let arena = state.arena.take();
        drop(state);
        drop((files, retiring));
        drop(arena);
    }
}

/// A read-only handle on `file`'s descriptors (duplicated), for reads that outlive the
/// caller's borrow of `file`; `None` when its buffered descriptor is `O_DIRECT` (a registered
/// descriptor that could not be reopened: ranges of any length could not be read through it).
fn own_handle(file: &FileHandle) -> Option<Arc<FileHandle>> {
    let flags = rustix::fs::fcntl_getfl(file.buffered_fd()).ok()?;
    if flags.contains(rustix::fs::OFlags::DIRECT) {
        return None;
    }
    let fd = file.buffered_fd().try_clone_to_owned().ok()?;
    // The `O_DIRECT` descriptor too, when there is one: a cold range is then read ahead the
    // way the engine reads it for the caller (`direct_io`), not through the page cache.
    let direct = file.direct_fd().and_then(|d| d.try_clone_to_owned().ok());
    let handle = FileHandle::from_parts(
        std::fs::File::from(fd),
        direct.map(std::fs::File::from),
        file.info().clone(),
        OpenOptions::new().read(true),
    );
    Some(Arc::new(handle))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::engine::Engine;
    use crate::error::{Error, ErrorKind};
    use crate::gpu::sim::SimRuntime;
    use crate::request::Op;
    use rand::{RngCore, SeedableRng};

    const LEN: u64 = 256 << 10;

    struct Setup {
        engine: Engine,
        ahead: ReadAhead,
        file: FileHandle,
        data: Vec<u8>,
        dir: tempfile::TempDir,
    }

    /// An engine on two simulated GPUs to run the reads ahead, a read-ahead of `slots` slots
    /// of [`LEN`] in GPU memory whose files must have settled for `settle`, and a file of
    /// 16 × [`LEN`] random bytes.
    fn setup(slots: u64, settle: Duration) -> Setup {
        setup_in(slots, settle, true)
    }

    /// As [`setup`], the slots in GPU memory or not (`gpu_memory`).
    fn setup_in(slots: u64, settle: Duration, gpu_memory: bool) -> Setup {
        let rt: Arc<dyn GpuRuntime> = Arc::new(SimRuntime::new(2, Duration::ZERO));
        let engine = Engine::new(rt.clone(), &Config { threads: 2, ..Config::default() });
        let budget = Budget {
            max_bytes: slots * LEN,
            min_request: 1,
            max_request: 1 << 30,
            max_callers: 4,
            settle,
            gpu_memory,
        };
        let ahead = ReadAhead::new(rt, budget, Arc::default());
        let dir = tempfile::tempdir().unwrap();
        let mut data = vec![0u8; 16 * LEN as usize];
        rand::rngs::StdRng::seed_from_u64(7).fill_bytes(&mut data);
        let path = dir.path().join("f");
        std::fs::write(&path, &data).unwrap();
        let file = FileHandle::open(&path).unwrap();
        Setup { engine, ahead, file, data, dir }
    }

    impl Setup {
        /// Looks up a read of [`LEN`] at range `k`, reading ahead with `start`.
        fn look(&self, k: u64, start: Start<'_>) -> Option<Taken<'_>> {
            self.ahead.look(&self.file, k * LEN, LEN, 0, start)
        }

        /// Waits (up to 10 s) until every slot is free, none handed out or retiring.
        fn all_free(&self) {
            let t0 = Instant::now();
            loop {
                let mut s = self.ahead.lock();
                s.reap();
                let staged: usize = s.files.values().map(|f| f.chunks.len()).sum();
                if s.free.len() == s.slots() && s.taken == 0 && staged == 0 {
                    return;
                }
                drop(s);
                assert!(t0.elapsed() < Duration::from_secs(10), "slots never came back");
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }

    /// The `n` bytes a range read ahead holds at `src` (simulated GPU memory is host memory).
    fn bytes(src: Source, n: usize) -> Vec<u8> {
        let p = match src {
            Source::Host(p) => p,
            Source::Device(a) => a as *const u8,
        };
        // SAFETY: the slot holds `n` bytes read ahead while its `Taken` lives, which outlives
        // this call; the simulated runtime's GPU memory is host memory.
        unsafe { std::slice::from_raw_parts(p, n) }.to_vec()
    }

    /// Descriptors of this process open on `path`.
    fn open_on(path: &std::path::Path) -> usize {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|p| p == path)
            .count()
    }

    /// Starts reads ahead on the engine, as [`Engine::read_ahead`] does.
    fn on(engine: &Engine) -> impl Fn(&Arc<FileHandle>, BufferRef, u64) -> Result<EngineIo> + '_ {
        // SAFETY: `b` is a slot of the read-ahead's arena, untouched until the read is over.
        move |f, b, at| unsafe { engine.submit(Op::Read, f, b, at) }
    }

    #[test]
    fn a_sequence_of_three_reads_ahead_and_hands_out_the_files_bytes_then_every_slot_comes_back() {
        let s = setup(4, Duration::ZERO);
        let start = on(&s.engine);
        let path = s.dir.path().join("f");
        let fds = open_on(&path);
        for k in 0..3 {
            assert!(s.look(k, &start).is_none(), "range {k} was never read ahead");
        }
        // One duplicate of each of the file's descriptors (buffered, and O_DIRECT where the
        // filesystem gave one).
        let dups = 1 + usize::from(s.file.direct_fd().is_some());
        assert_eq!(open_on(&path), fds + dups, "the reads ahead hold one duplicate of each");
        let c = &s.ahead.counters;
        assert_eq!(c.read_ahead_started.load(Ordering::Relaxed), 4 * LEN, "four slots' worth");
        for k in 3..7 {
            let taken = s.look(k, &start).expect("read ahead");
            let (src, n) = taken.wait().expect("whole");
            assert!(matches!(src, Source::Device(_)), "{src:?}: not GPU memory");
            assert_eq!(n as u64, LEN);
            let at = (k * LEN) as usize;
            assert!(bytes(src, n) == s.data[at..at + n], "range {k} differs from the file");
            taken.served();
        }
        assert_eq!(c.read_ahead_reads.load(Ordering::Relaxed), 4);
        // A read far from the sequence lets what was read ahead go, and starts counting again.
        assert!(s.look(15, &start).is_none());
        assert!(s.look(2, &start).is_none());
        s.all_free();
        let unused = c.read_ahead_unused.load(Ordering::Relaxed);
        let started = c.read_ahead_started.load(Ordering::Relaxed);
        assert_eq!(started - 4 * LEN, unused, "every range started after the hits went unused");
        assert_eq!(c.read_ahead_bytes.load(Ordering::Relaxed), 4 * LEN, "the four served");
        // Nothing past the end of the file is read ahead.
        for k in 12..16 {
            let _ = s.look(k, &start);
        }
        s.all_free();
        assert_eq!(s.ahead.lock().files.values().map(|f| f.ahead).max(), Some(16 * LEN));
        // A worker lets go of a job a moment after it is done: wait for the last one.
        let t0 = Instant::now();
        while open_on(&path) != fds {
            assert!(t0.elapsed() < Duration::from_secs(10), "the duplicate outlived the reads");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    #[test]
    fn a_straggler_behind_the_sequence_keeps_what_was_read_ahead_and_one_far_behind_lets_it_go() {
        let s = setup(4, Duration::ZERO);
        let start = on(&s.engine);
        let c = &s.ahead.counters;
        for k in 0..3 {
            assert!(s.look(k, &start).is_none());
        }
        for k in 3..8 {
            let taken = s.look(k, &start).expect("read ahead");
            assert!(taken.wait().is_some());
            taken.served();
        }
        // Range 0 again, eight ranges behind the highest end read (within twice the five
        // ranges the four callers allowed may spread over): a thread the scheduler held back.
        assert!(s.look(0, &start).is_none());
        assert_eq!(c.read_ahead_unused.load(Ordering::Relaxed), 0, "nothing let go");
        let taken = s.look(8, &start).expect("the sequence went on");
        let (src, n) = taken.wait().expect("whole");
        assert!(bytes(src, n) == s.data[8 * LEN as usize..9 * LEN as usize]);
        taken.served();
        // Eleven ranges behind is another reader: the sequence starts again.
        for k in 9..11 {
            assert!(s.look(k, &start).is_some_and(|t| t.wait().is_some()));
        }
        assert!(s.look(0, &start).is_none());
        s.all_free();
        assert!(c.read_ahead_unused.load(Ordering::Relaxed) > 0, "the ranges ahead let go");
        assert_eq!(s.ahead.lock().files.values().map(|f| f.streak).max(), Some(1));
    }

    #[test]
    fn gpu_memory_serves_reads_into_its_own_gpu_and_is_given_back_at_the_end_of_the_file() {
        let s = setup(4, Duration::ZERO);
        let start = on(&s.engine);
        let look = |k: u64, ordinal| s.ahead.look(&s.file, k * LEN, LEN, ordinal, &start);
        for k in 0..3 {
            assert!(look(k, 0).is_none());
        }
        assert_eq!(s.ahead.held_bytes(), (0, 4 * LEN), "four slots of GPU 0's memory");
        // The sequence goes on into GPU 1: GPU 0's ranges are not handed to it, and once they
        // are let go the memory is made again on GPU 1.
        for k in 3..7 {
            assert!(look(k, 1).is_none(), "range {k} of GPU 0 handed to a read into GPU 1");
        }
        assert_eq!(s.ahead.counters.read_ahead_unused.load(Ordering::Relaxed), 4 * LEN);
        // Once their reads are over (the memory is made again only when nothing is out).
        s.all_free();
        assert!(look(7, 1).is_none(), "range 7 was never read ahead");
        for k in 8..16 {
            let t = look(k, 1).expect("read ahead into GPU 1's memory");
            let (src, n) = t.wait().expect("whole");
            let Source::Device(addr) = src else { panic!("range {k} in {src:?}") };
            assert_eq!(s.ahead.runtime.classify(addr), MemoryKind::Device { ordinal: 1 });
            let at = (k * LEN) as usize;
            assert!(bytes(src, n) == s.data[at..at + n], "range {k} differs from the file");
            t.served();
        }
        // Read to its end, nothing out: the GPU memory went back.
        s.all_free();
        assert_eq!(s.ahead.held_bytes(), (0, 0), "GPU memory kept after the end of the file");
        // A new sequence makes it again.
        for k in 0..4 {
            let _ = look(k, 0);
        }
        assert_eq!(s.ahead.held_bytes(), (0, 4 * LEN));
    }

    #[test]
    fn gpu_memory_of_a_sequence_left_midway_goes_back_without_another_read_once_none_runs() {
        let s = setup(4, Duration::ZERO);
        let start = on(&s.engine);
        for k in 0..5 {
            let _ = s.look(k, &start);
        }
        assert_eq!(s.ahead.held_bytes(), (0, 4 * LEN));
        assert!(s.ahead.lock().reaper, "no idle thread while GPU memory is held");
        // A read that takes long (in flight, counted by `enter`) is not its file left idle.
        let caller = s.ahead.enter(LEN).expect("a length read ahead");
        std::thread::sleep(3 * IDLE);
        assert_eq!(s.ahead.held_bytes(), (0, 4 * LEN), "let go under a read in flight");
        assert_eq!(s.ahead.counters.read_ahead_unused.load(Ordering::Relaxed), 2 * LEN);
        drop(caller);
        // Nobody reads again: the idle thread lets the file go, then the memory, then ends.
        let t0 = Instant::now();
        while s.ahead.held_bytes() != (0, 0) || s.ahead.lock().reaper {
            assert!(t0.elapsed() < 20 * IDLE, "GPU memory kept: {:?}", s.ahead.held_bytes());
            std::thread::sleep(Duration::from_millis(20));
        }
        let c = &s.ahead.counters;
        let started = c.read_ahead_started.load(Ordering::Relaxed);
        let used = c.read_ahead_bytes.load(Ordering::Relaxed);
        assert_eq!(c.read_ahead_unused.load(Ordering::Relaxed), started - used, "all accounted");
        // The next sequence makes the memory and the thread again.
        for k in 0..4 {
            let _ = s.look(k, &start);
        }
        assert_eq!(s.ahead.held_bytes(), (0, 4 * LEN));
        assert!(s.ahead.lock().reaper);
    }

    #[test]
    fn pinned_memory_serves_reads_into_any_gpu_and_is_kept() {
        let s = setup_in(4, Duration::ZERO, false);
        let start = on(&s.engine);
        for k in 0..3 {
            assert!(s.look(k, &start).is_none());
        }
        for k in 3..16 {
            let ordinal = (k % 2) as usize;
            let t = s.ahead.look(&s.file, k * LEN, LEN, ordinal, &start).expect("read ahead");
            let (src, n) = t.wait().expect("whole");
            assert!(matches!(src, Source::Host(_)), "range {k} in {src:?}");
            let at = (k * LEN) as usize;
            assert!(bytes(src, n) == s.data[at..at + n], "range {k} differs from the file");
            t.served();
        }
        s.all_free();
        assert_eq!(s.ahead.held_bytes(), (4 * LEN, 0), "pinned memory is kept");
    }

    #[test]
    fn a_read_ahead_that_fails_or_comes_back_short_hands_out_nothing_and_keeps_its_slot() {
        let s = setup(2, Duration::ZERO);
        let refuse = |_: &Arc<FileHandle>, _: BufferRef, _: u64| -> Result<EngineIo> {
            Err(Error::new(ErrorKind::Io, "refused"))
        };
        for k in 0..5 {
            assert!(s.look(k, &refuse).is_none());
        }
        assert_eq!(s.ahead.counters.read_ahead_started.load(Ordering::Relaxed), 0);
        s.all_free();
        // Reads ahead a page short: handed out, but `wait` says to read the usual way.
        let short = |f: &Arc<FileHandle>, b: BufferRef, at: u64| {
            let b = BufferRef { len: b.len - 4096, ..b };
            // SAFETY: a shorter range of the slot.
            unsafe { s.engine.submit(Op::Read, f, b, at) }
        };
        // The sequence goes on: ranges 6 and 7 are read ahead, short.
        assert!(s.look(5, &short).is_none());
        let taken = s.look(6, &short).expect("handed out");
        assert!(taken.wait().is_none(), "a short read ahead was used");
        drop(taken);
        let c = &s.ahead.counters;
        let unused = c.read_ahead_unused.load(Ordering::Relaxed);
        assert!(unused >= LEN - 4096, "the short range handed out counts as unused: {unused}");
        // Far past the sequence: what it read ahead goes.
        assert!(s.look(15, &short).is_none());
        s.all_free();
    }

    #[test]
    fn an_unsettled_file_an_o_direct_descriptor_and_odd_lengths_read_nothing_ahead() {
        let s = setup(4, Duration::from_secs(3600));
        let start = on(&s.engine);
        for k in 0..8 {
            assert!(s.look(k, &start).is_none());
        }
        assert_eq!(s.ahead.counters.read_ahead_started.load(Ordering::Relaxed), 0, "unsettled");
        assert!(s.ahead.lock().arena.is_none(), "pinned memory made for nothing");

        let s = setup(4, Duration::ZERO);
        let start = on(&s.engine);
        // Lengths outside the budget's, and a sequence whose length changes each time.
        let small = ReadAhead::new(
            s.ahead.runtime.clone(),
            Budget { min_request: LEN + 1, ..s.ahead.budget },
            Arc::default(),
        );
        for k in 0..8 {
            assert!(small.look(&s.file, k * LEN, LEN, 0, &start).is_none());
        }
        assert_eq!(small.counters.read_ahead_started.load(Ordering::Relaxed), 0, "too small");
        let mut at = 0;
        for len in [LEN, LEN + 4096, LEN, LEN + 4096, LEN] {
            assert!(s.ahead.look(&s.file, at, len, 0, &start).is_none());
            at += len;
        }
        assert_eq!(s.ahead.counters.read_ahead_started.load(Ordering::Relaxed), 0, "lengths");

        // A registered O_DIRECT descriptor that could not be reopened: no handle to read
        // ahead through (tmpfs and some filesystems refuse O_DIRECT: nothing to check there).
        use std::os::unix::fs::OpenOptionsExt;
        let path = s.dir.path().join("f");
        let direct =
            std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(&path);
        if let Ok(direct) = direct {
            let h = FileHandle::from_parts(
                direct,
                None,
                s.file.info().clone(),
                crate::file::OpenOptions::new().read(true),
            );
            assert!(own_handle(&h).is_none(), "an O_DIRECT handle to read ahead through");
        }
        // The handle read ahead through keeps the O_DIRECT descriptor where the file has one,
        // so that cold ranges are read ahead as the engine reads them (`direct_io`).
        let own = own_handle(&s.file).expect("a handle to read ahead through");
        assert_eq!(own.direct_fd().is_some(), s.file.direct_fd().is_some());
        if let Some(d) = own.direct_fd() {
            let flags = rustix::fs::fcntl_getfl(d).unwrap();
            assert!(flags.contains(rustix::fs::OFlags::DIRECT), "the duplicate is O_DIRECT");
        }
    }
}
