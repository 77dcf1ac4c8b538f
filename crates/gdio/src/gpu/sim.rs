//! GPUs simulated in host memory. Device allocations are host allocations the runtime
//! remembers; streams run their copies on a thread of their own, later than they are queued,
//! so code that reuses a buffer before waiting for its copy reads wrong bytes in tests.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU32;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};

use super::host::{alloc_aligned, free_aligned};
use super::BoxedWord;
use super::{DeviceInfo, GpuRuntime, GpuStream, ProgressWord, StreamGate};
use crate::error::{Error, ErrorKind, Result};
use crate::memory::MemoryKind;

#[derive(Debug, Default)]
struct Allocations {
    device: BTreeMap<u64, (usize, usize)>,
    pinned: BTreeMap<u64, usize>,
}

/// A caller's stream: its GPU ordinal and the stream.
type UserStream = (usize, Arc<Mutex<SimStream>>);

/// A runtime with `devices` simulated GPUs.
#[derive(Clone)]
pub struct SimRuntime {
    devices: usize,
    allocs: Arc<Mutex<Allocations>>,
    copy_delay: std::time::Duration,
    /// Callers' streams by handle, with their GPU ordinal.
    streams: Arc<Mutex<BTreeMap<u64, UserStream>>>,
    /// Bytes copied GPU to GPU, by (from, to).
    peer_bytes: Arc<Mutex<BTreeMap<(usize, usize), u64>>>,
    /// Pointer queries answered (`classify`, `device_allocation`): each a driver call on a
    /// real GPU.
    pointer_queries: Arc<std::sync::atomic::AtomicU64>,
    /// Streams made by [`GpuRuntime::new_stream`], each a queue of its own (forks share one).
    queues_made: Arc<std::sync::atomic::AtomicU64>,
    /// Progress-word writes queued on any stream ([`GpuStream::signal`]).
    words_written: Arc<std::sync::atomic::AtomicU64>,
    /// Taken (shared) by every call that creates a resource (allocations, registrations,
    /// streams); [`SimRuntime::hold_resource_creation`] takes it exclusively, as the CUDA
    /// driver holds such calls in every thread while one thread waits in a pageable copy.
    creation: Arc<std::sync::RwLock<()>>,
}

impl std::fmt::Debug for SimRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimRuntime").field("devices", &self.devices).finish()
    }
}

/// A caller's stream held by [`SimRuntime::hold_stream`]; dropping it releases the stream.
#[derive(Debug)]
pub struct StreamHold {
    release: Option<mpsc::Sender<()>>,
    timed_out: Arc<std::sync::atomic::AtomicBool>,
}

impl StreamHold {
    /// Lets the stream go on.
    pub fn release(&mut self) {
        self.release = None;
    }

    /// True when the stream went on after 30 s without being released (a call under test
    /// waited for its own stream); meaningful once the stream has passed the hold.
    pub fn timed_out(&self) -> bool {
        self.timed_out.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Stream handles are unique across every runtime of the process, so a stream of another
/// runtime (another "context") is recognised as such.
static NEXT_SIM_STREAM: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl SimRuntime {
    /// `devices` simulated GPUs whose copies start `copy_delay` after they are dequeued.
    pub fn new(devices: usize, copy_delay: std::time::Duration) -> Self {
        SimRuntime {
            devices,
            allocs: Arc::default(),
            copy_delay,
            streams: Arc::default(),
            peer_bytes: Arc::default(),
            pointer_queries: Arc::default(),
            queues_made: Arc::default(),
            words_written: Arc::default(),
            creation: Arc::default(),
        }
    }

    /// Streams made so far with a queue of their own ([`GpuRuntime::new_stream`]; a
    /// [`GpuStream::fork`] shares its parent's).
    pub fn queues_made(&self) -> u64 {
        self.queues_made.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Progress-word writes queued so far on this runtime's streams ([`GpuStream::signal`]):
    /// each a stream operation after a copy on a real GPU.
    pub fn words_written(&self) -> u64 {
        self.words_written.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Holds back every call that creates a resource (device and pinned allocations, host
    /// registrations, streams), in every thread, until the guard drops: what the CUDA driver
    /// does while a thread waits in a copy to or from pageable memory (H200, driver 580,
    /// `bench/pageable-gate-probe.c`). Copies and stream work go on.
    pub fn hold_resource_creation(&self) -> std::sync::RwLockWriteGuard<'_, ()> {
        self.creation.write().unwrap_or_else(|p| p.into_inner())
    }

    fn creating(&self) -> std::sync::RwLockReadGuard<'_, ()> {
        self.creation.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Pointer queries answered so far ([`GpuRuntime::classify`],
    /// [`GpuRuntime::device_allocation`]): each a driver call on a real GPU.
    pub fn pointer_queries(&self) -> u64 {
        self.pointer_queries.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Bytes copied so far from simulated GPU `from` to GPU `to` ([`GpuRuntime::copy_peer`]).
    pub fn peer_bytes(&self, from: usize, to: usize) -> u64 {
        let m = self.peer_bytes.lock().unwrap_or_else(|p| p.into_inner());
        m.get(&(from, to)).copied().unwrap_or(0)
    }

    /// A stream of the caller's on GPU `ordinal` (as an application's `CUstream`); returns its
    /// handle for [`SimRuntime::with_stream`] and stream-ordered I/O.
    pub fn create_stream(&self, ordinal: usize) -> Result<u64> {
        self.check_ordinal(ordinal)?;
        let id = NEXT_SIM_STREAM.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let s =
            Arc::new(Mutex::new(SimStream::new(1, self.copy_delay, self.words_written.clone())));
        self.streams.lock().unwrap_or_else(|p| p.into_inner()).insert(id, (ordinal, s));
        Ok(id)
    }

    /// Queues work on the caller's stream `id`.
    pub fn with_stream<T>(&self, id: u64, f: impl FnOnce(&mut dyn GpuStream) -> T) -> Result<T> {
        let s = self.user_stream(id)?.1;
        let mut g = s.lock().unwrap_or_else(|p| p.into_inner());
        Ok(f(&mut *g))
    }

    /// Holds the caller's stream `id` here: what is queued on it after this call runs only once
    /// [`StreamHold::release`] is called (or the hold dropped), or after 30 s at the latest,
    /// which [`StreamHold::timed_out`] then reports. Tests use it to keep earlier stream work
    /// pending while a call reads its arguments, however slow the machine (valgrind).
    pub fn hold_stream(&self, id: u64) -> Result<StreamHold> {
        let (release, held) = mpsc::channel::<()>();
        let timed_out = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = timed_out.clone();
        self.with_stream(id, |s| {
            s.notify(Box::new(move || {
                let waited = held.recv_timeout(std::time::Duration::from_secs(30));
                if waited == Err(mpsc::RecvTimeoutError::Timeout) {
                    flag.store(true, std::sync::atomic::Ordering::SeqCst);
                }
            }))
        })??;
        Ok(StreamHold { release: Some(release), timed_out })
    }

    /// Destroys the caller's stream `id` after its work has finished.
    pub fn destroy_stream(&self, id: u64) {
        self.streams.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
    }

    fn user_stream(&self, id: u64) -> Result<UserStream> {
        self.streams.lock().unwrap_or_else(|p| p.into_inner()).get(&id).cloned().ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidInput,
                format!("stream {id} is not a stream of this runtime (another context?)"),
            )
            .with_errno(libc::EINVAL)
        })
    }

    fn check_ordinal(&self, ordinal: usize) -> Result<()> {
        if ordinal >= self.devices {
            return Err(Error::new(
                ErrorKind::NoGpu,
                format!(
                    "GPU {ordinal} does not exist: this machine has {} simulated GPUs",
                    self.devices
                ),
            ));
        }
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Allocations> {
        self.allocs.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl GpuRuntime for SimRuntime {
    fn name(&self) -> &'static str {
        "sim"
    }
    fn device_count(&self) -> usize {
        self.devices
    }
    fn device_info(&self, ordinal: usize) -> Result<DeviceInfo> {
        self.check_ordinal(ordinal)?;
        Ok(DeviceInfo {
            ordinal,
            name: "simulated GPU".into(),
            total_memory: 0,
            pci_bus_id: None,
            pcie_link_speed: None,
            pcie_link_width: None,
            bar1_size: None,
        })
    }
    fn driver_version(&self) -> Option<i32> {
        None
    }
    fn classify(&self, addr: u64) -> MemoryKind {
        self.pointer_queries.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let a = self.lock();
        if let Some((&start, &(ordinal, len))) = a.device.range(..=addr).next_back() {
            if addr < start + len as u64 {
                return MemoryKind::Device { ordinal };
            }
        }
        if let Some((&start, &len)) = a.pinned.range(..=addr).next_back() {
            if addr < start + len as u64 {
                return MemoryKind::PinnedHost;
            }
        }
        MemoryKind::Host
    }
    fn device_allocation(&self, addr: u64) -> Option<(u64, u64)> {
        self.pointer_queries.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let a = self.lock();
        let (&start, &(_, len)) = a.device.range(..=addr).next_back()?;
        (addr < start + len as u64).then_some((start, len as u64))
    }
    fn alloc_device(&self, ordinal: usize, len: usize) -> Result<u64> {
        self.check_ordinal(ordinal)?;
        let _creating = self.creating();
        let p = alloc_aligned(len)? as u64;
        self.lock().device.insert(p, (ordinal, len.max(1)));
        Ok(p)
    }
    unsafe fn free_device(&self, _ordinal: usize, addr: u64) {
        if let Some((_, len)) = self.lock().device.remove(&addr) {
            // SAFETY: `addr` was returned by `alloc_aligned(len)` in `alloc_device`.
            unsafe { free_aligned(addr as *mut u8, len) };
        }
    }
    fn alloc_pinned(&self, ordinal: usize, len: usize) -> Result<*mut u8> {
        self.check_ordinal(ordinal)?;
        let _creating = self.creating();
        let p = alloc_aligned(len)?;
        self.lock().pinned.insert(p as u64, len.max(1));
        Ok(p)
    }
    unsafe fn free_pinned(&self, ptr: *mut u8, len: usize) {
        if self.lock().pinned.remove(&(ptr as u64)).is_some() {
            // SAFETY: `ptr` was returned by `alloc_aligned(len)` in `alloc_pinned`.
            unsafe { free_aligned(ptr, len) };
        }
    }
    fn new_stream(&self, ordinal: usize, slots: usize) -> Result<Box<dyn GpuStream>> {
        self.check_ordinal(ordinal)?;
        let _creating = self.creating();
        self.queues_made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let words = self.words_written.clone();
        Ok(Box::new(SimStream::new(slots.max(1), self.copy_delay, words)))
    }
    fn bind_thread(&self, ordinal: usize) -> Result<()> {
        self.check_ordinal(ordinal)
    }
    unsafe fn register_host(
        &self,
        ordinal: usize,
        ptr: *mut u8,
        len: usize,
        _read_only: bool,
    ) -> Result<()> {
        self.check_ordinal(ordinal)?;
        let _creating = self.creating();
        if ptr as usize % 4096 != 0 || len == 0 {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "host registration needs a page-aligned, non-empty range",
            ));
        }
        Ok(())
    }
    unsafe fn unregister_host(&self, ordinal: usize, _ptr: *mut u8) -> Result<()> {
        self.check_ordinal(ordinal)
    }
    unsafe fn copy_peer(
        &self,
        dst_ordinal: usize,
        dst: u64,
        src_ordinal: usize,
        src: u64,
        len: usize,
    ) -> Result<()> {
        self.check_ordinal(dst_ordinal)?;
        self.check_ordinal(src_ordinal)?;
        for (o, a) in [(dst_ordinal, dst), (src_ordinal, src)] {
            if self.classify(a) != (MemoryKind::Device { ordinal: o }) {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    format!("address 0x{a:x} is not memory of simulated GPU {o}"),
                ));
            }
        }
        // SAFETY: the caller promised both ranges are device memory of this runtime (simulated
        // in host memory), valid for `len` bytes and not written by anyone else meanwhile.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len) };
        let mut m = self.peer_bytes.lock().unwrap_or_else(|p| p.into_inner());
        *m.entry((src_ordinal, dst_ordinal)).or_default() += len as u64;
        Ok(())
    }
    unsafe fn stream_ordinal(&self, stream: u64) -> Result<usize> {
        Ok(self.user_stream(stream)?.0)
    }
    unsafe fn launch_gated_host_fn(
        &self,
        ordinal: usize,
        stream: u64,
        start: Box<dyn FnOnce(StreamGate) + Send>,
    ) -> Result<()> {
        self.check_ordinal(ordinal)?;
        let (owner, s) = self.user_stream(stream)?;
        if owner != ordinal {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("stream {stream} belongs to GPU {owner}'s context, not GPU {ordinal}'s"),
            )
            .with_errno(libc::EINVAL));
        }
        // The simulated stream's thread runs `start`, then blocks until the gate opens: later
        // work on the stream waits, as behind CUDA's wait-value.
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let g2 = gate.clone();
        let opener = StreamGate::new(Box::new(move || {
            *g2.0.lock().unwrap_or_else(|p| p.into_inner()) = true;
            g2.1.notify_all();
        }));
        let run = Box::new(move || {
            start(opener);
            let mut open = gate.0.lock().unwrap_or_else(|p| p.into_inner());
            while !*open {
                open = gate.1.wait(open).unwrap_or_else(|p| p.into_inner());
            }
        });
        let g = s.lock().unwrap_or_else(|p| p.into_inner());
        g.send(Op::Host(run))
    }
}

enum Op {
    Copy {
        dst: usize,
        src: usize,
        len: usize,
    },
    /// Many copies, late by one delay (as one driver call would be).
    Batch(Vec<(usize, usize, usize)>),
    Host(Box<dyn FnOnce() + Send>),
    Mark {
        marks: Arc<Marks>,
        slot: usize,
        seq: u64,
    },
}

struct Marks {
    done: Mutex<(Vec<u64>, u64)>,
    cv: Condvar,
}

impl super::MarkerSource for Marks {
    fn reached(&self, slot: usize, seq: u64) -> bool {
        let g = self.done.lock().unwrap_or_else(|p| p.into_inner());
        g.0.get(slot).is_some_and(|&done| done >= seq)
    }
}

/// The thread that runs a simulated stream's queue; joined by the last stream on it.
struct QueueThread(Mutex<Option<std::thread::JoinHandle<()>>>);

struct SimStream {
    tx: Option<mpsc::Sender<Op>>,
    /// Set in stream order by [`GpuStream::signal`] (made with the stream).
    progress: ProgressWord,
    worker: Option<Arc<QueueThread>>,
    marks: Arc<Marks>,
    /// The runtime's count of progress-word writes.
    words: Arc<std::sync::atomic::AtomicU64>,
    recorded: Vec<u64>,
    seq: u64,
}

impl SimStream {
    fn new(
        slots: usize,
        delay: std::time::Duration,
        words: Arc<std::sync::atomic::AtomicU64>,
    ) -> Self {
        let (tx, rx) = mpsc::channel::<Op>();
        let worker = std::thread::spawn(move || {
            for op in rx {
                match op {
                    Op::Copy { dst, src, len } => {
                        if !delay.is_zero() {
                            std::thread::sleep(delay);
                        }
                        // SAFETY: the queuing caller promised both ranges stay valid until the
                        // copy is known complete, which is after this runs.
                        unsafe {
                            std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, len)
                        };
                    }
                    Op::Batch(copies) => {
                        if !delay.is_zero() {
                            std::thread::sleep(delay);
                        }
                        for (dst, src, len) in copies {
                            // SAFETY: as for `Op::Copy`, for every entry.
                            unsafe {
                                std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, len)
                            };
                        }
                    }
                    Op::Host(f) => {
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
                    }
                    Op::Mark { marks, slot, seq } => {
                        let mut g = marks.done.lock().unwrap_or_else(|p| p.into_inner());
                        g.0[slot] = seq;
                        g.1 = seq;
                        marks.cv.notify_all();
                    }
                }
            }
        });
        let worker = Arc::new(QueueThread(Mutex::new(Some(worker))));
        Self::on_queue(tx, worker, slots, words)
    }

    /// A stream with `slots` markers of its own on the queue `tx` that `worker` runs.
    fn on_queue(
        tx: mpsc::Sender<Op>,
        worker: Arc<QueueThread>,
        slots: usize,
        words: Arc<std::sync::atomic::AtomicU64>,
    ) -> Self {
        SimStream {
            tx: Some(tx),
            progress: ProgressWord::new(Arc::new(BoxedWord(AtomicU32::new(0)))),
            worker: Some(worker),
            marks: Arc::new(Marks {
                done: Mutex::new((vec![0; slots + 1], 0)),
                cv: Condvar::new(),
            }),
            recorded: vec![0; slots + 1],
            seq: 0,
            words,
        }
    }

    fn send(&self, op: Op) -> Result<()> {
        self.tx
            .as_ref()
            .and_then(|t| t.send(op).ok())
            .ok_or_else(|| Error::new(ErrorKind::Gpu, "simulated stream worker is gone"))
    }

    fn wait_slot(&mut self, slot: usize) -> Result<()> {
        let want = self.recorded[slot];
        let mut g = self.marks.done.lock().unwrap_or_else(|p| p.into_inner());
        while g.0[slot] < want {
            g = self.marks.cv.wait(g).unwrap_or_else(|p| p.into_inner());
        }
        Ok(())
    }
}

impl GpuStream for SimStream {
    unsafe fn copy_to_device(&mut self, dst: u64, src: *const u8, len: usize) -> Result<()> {
        self.send(Op::Copy { dst: dst as usize, src: src as usize, len })
    }
    unsafe fn copy_to_device_batch(&mut self, copies: &[(u64, *const u8, usize)]) -> Result<()> {
        let c = copies.iter().map(|&(d, s, n)| (d as usize, s as usize, n)).collect();
        self.send(Op::Batch(c))
    }
    unsafe fn copy_to_host(&mut self, dst: *mut u8, src: u64, len: usize) -> Result<()> {
        self.send(Op::Copy { dst: dst as usize, src: src as usize, len })
    }
    unsafe fn copy_within_device(&mut self, dst: u64, src: u64, len: usize) -> Result<()> {
        self.send(Op::Copy { dst: dst as usize, src: src as usize, len })
    }
    unsafe fn copy_to_host_batch(&mut self, copies: &[(*mut u8, u64, usize)]) -> Result<()> {
        let c = copies.iter().map(|&(d, s, n)| (d as usize, s as usize, n)).collect();
        self.send(Op::Batch(c))
    }
    fn record(&mut self, slot: usize) -> Result<()> {
        self.seq += 1;
        self.recorded[slot] = self.seq;
        self.send(Op::Mark { marks: self.marks.clone(), slot, seq: self.seq })
    }
    fn wait(&mut self, slot: usize) -> Result<()> {
        self.wait_slot(slot)
    }
    fn query(&mut self, slot: usize) -> Result<bool> {
        let want = self.recorded[slot];
        Ok(self.marks.done.lock().unwrap_or_else(|p| p.into_inner()).0[slot] >= want)
    }
    fn synchronize(&mut self) -> Result<()> {
        let last = self.recorded.len() - 1;
        self.record(last)?;
        self.wait_slot(last)
    }
    fn slots(&self) -> usize {
        self.recorded.len() - 1
    }
    fn landing(&mut self, slot: usize) -> Option<super::Landing> {
        let seq = *self.recorded.get(slot)?;
        let queue = Arc::as_ptr(self.worker.as_ref()?) as usize;
        let marks: Arc<dyn super::MarkerSource> = self.marks.clone();
        (seq > 0).then(|| super::Landing::new(marks, slot, seq, queue))
    }
    fn fork(&mut self, slots: usize) -> Result<Box<dyn GpuStream>> {
        let (Some(tx), Some(worker)) = (self.tx.clone(), self.worker.clone()) else {
            return Err(Error::new(ErrorKind::Gpu, "simulated stream worker is gone"));
        };
        let words = self.words.clone();
        Ok(Box::new(SimStream::on_queue(tx, worker, slots.max(1), words)))
    }
    fn notify(&mut self, f: Box<dyn FnOnce() + Send>) -> Result<()> {
        self.send(Op::Host(f))
    }
    fn progress(&mut self) -> Result<Option<ProgressWord>> {
        Ok(Some(self.progress.clone()))
    }
    fn signal(&mut self, value: u32) -> Result<()> {
        self.words.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let word = self.progress.clone();
        self.send(Op::Host(Box::new(move || word.store(value))))
    }
}

impl Drop for SimStream {
    fn drop(&mut self) {
        // As a CUDA stream's drop: what this stream queued is done before it goes (the pinned
        // buffers its copies read may be freed next), even while other forks keep the queue.
        if self.tx.is_some() {
            let _ = self.synchronize();
        }
        drop(self.tx.take());
        // The last stream on the queue (its sender dropped above, as every other's was) joins
        // the thread, which ends once the queue has no sender left.
        if let Some(Ok(w)) = self.worker.take().map(Arc::try_unwrap) {
            if let Some(h) = w.0.into_inner().unwrap_or_else(|p| p.into_inner()) {
                let _ = h.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_arrive_after_wait_and_pointers_classify() {
        let rt = SimRuntime::new(2, std::time::Duration::from_millis(1));
        let d = rt.alloc_device(1, 4096).unwrap();
        assert_eq!(rt.classify(d + 100), MemoryKind::Device { ordinal: 1 });
        let p = rt.alloc_pinned(0, 4096).unwrap();
        assert_eq!(rt.classify(p as u64 + 4095), MemoryKind::PinnedHost);
        let src: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut s = rt.new_stream(1, 2).unwrap();
        // SAFETY: d is a 4096-byte device allocation; src holds 4096 bytes.
        unsafe { s.copy_to_device(d, src.as_ptr(), 4096).unwrap() };
        s.record(0).unwrap();
        s.wait(0).unwrap();
        let mut back = vec![0u8; 4096];
        // SAFETY: back holds 4096 bytes; d is a 4096-byte device allocation.
        unsafe { s.copy_to_host(back.as_mut_ptr(), d, 4096).unwrap() };
        s.synchronize().unwrap();
        assert_eq!(back, src);
        assert!(rt.alloc_device(2, 1).is_err());
        // SAFETY: d and p came from this runtime and are freed once.
        unsafe {
            rt.free_device(1, d);
            rt.free_pinned(p, 4096);
        }
        assert_eq!(rt.classify(d), MemoryKind::Host);
    }

    #[test]
    fn a_landing_is_reached_with_its_marker_and_names_the_forks_queue() {
        let rt = SimRuntime::new(1, std::time::Duration::from_millis(30));
        let mut root = rt.new_stream(0, 1).unwrap();
        let mut a = root.fork(2).unwrap();
        let mut other = rt.new_stream(0, 1).unwrap();
        assert!(a.landing(0).is_none(), "nothing recorded in slot 0 yet");
        let d = rt.alloc_device(0, 4096).unwrap();
        let src: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
        // SAFETY: d is a 4096-byte device allocation; src holds 4096 bytes and lives until
        // the marker below is waited for.
        unsafe { a.copy_to_device(d, src.as_ptr(), 4096).unwrap() };
        a.record(0).unwrap();
        let landing = a.landing(0).unwrap();
        let from_thread = landing.clone();
        // Asked from another thread, as the completion watcher does.
        let early = std::thread::spawn(move || from_thread.reached()).join().unwrap();
        assert!(!early, "a 30 ms copy cannot have landed yet");
        a.wait(0).unwrap();
        assert!(landing.reached());
        other.record(0).unwrap();
        let elsewhere = other.landing(0).unwrap();
        assert_ne!(landing.queue(), elsewhere.queue(), "two queues, two numbers");
        // SAFETY: as above.
        unsafe { root.copy_to_device(d, src.as_ptr(), 4096).unwrap() };
        root.record(0).unwrap();
        assert_eq!(landing.queue(), root.landing(0).unwrap().queue(), "a fork queues on its root");
        root.synchronize().unwrap();
        other.synchronize().unwrap();
        drop((a, root, other));
        // A landing outlives its stream: still answers, from the markers it keeps.
        assert!(landing.reached());
        // SAFETY: d came from this runtime and is freed once.
        unsafe { rt.free_device(0, d) };
    }

    #[test]
    fn forks_queue_in_one_order_and_keep_their_own_markers() {
        // Copies of 250 ms: the check that the first is not done yet must hold under Miri too,
        // which took over 2 ms to interpret the lines between the copy and the query.
        let rt = SimRuntime::new(1, std::time::Duration::from_millis(250));
        let mut root = rt.new_stream(0, 1).unwrap();
        let mut a = root.fork(2).unwrap();
        let mut b = root.fork(2).unwrap();
        assert_eq!(rt.queues_made(), 1, "forks make no queue of their own");
        let d = rt.alloc_device(0, 4096).unwrap();
        let first: Vec<u8> = (0..4096u32).map(|i| (i * 13 + 1) as u8).collect();
        let second: Vec<u8> = (0..4096u32).map(|i| (i * 5 + 9) as u8).collect();
        // SAFETY: d is a 4096-byte device allocation; both sources hold 4096 bytes and live
        // until the markers below are waited for.
        unsafe {
            a.copy_to_device(d, first.as_ptr(), 4096).unwrap();
            b.copy_to_device(d, second.as_ptr(), 4096).unwrap();
        }
        a.record(0).unwrap();
        b.record(1).unwrap();
        // `a` recorded nothing in slot 1: its marker is not `b`'s.
        assert!(a.query(1).unwrap());
        assert!(!a.query(0).unwrap(), "a copy of 250 ms cannot be done yet");
        b.wait(1).unwrap();
        // One queue: `a`'s marker, queued before `b`'s, is reached once `b`'s is.
        assert!(a.query(0).unwrap(), "a's earlier marker is reached once b's later one is");
        let mut back = vec![0u8; 4096];
        // SAFETY: back holds 4096 bytes; d is a 4096-byte device allocation.
        unsafe { a.copy_to_host(back.as_mut_ptr(), d, 4096).unwrap() };
        a.synchronize().unwrap();
        assert_eq!(back, second, "the copy queued last landed last");
        // The root can go first: the queue lives while a fork does.
        drop(root);
        // SAFETY: as above.
        unsafe { b.copy_to_device(d, first.as_ptr(), 4096).unwrap() };
        b.synchronize().unwrap();
        drop(a);
        drop(b);
        // SAFETY: d came from this runtime and is freed once.
        unsafe { rt.free_device(0, d) };
    }
}
