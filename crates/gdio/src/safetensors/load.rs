//! Loading a [`Plan`]: one allocation per file and target, filled by a few large aligned read
//! requests over each file's data section (each request spread over the engine's workers),
//! tensors handed out as they land.
//!
//! Layout: per file and target, the byte ranges the plan wants are merged into spans (ranges
//! closer than `merge_gap` are read together with the bytes between), each span widened to
//! [`ALIGN`] in the file and placed at an [`ALIGN`]ed offset of the allocation, so file offset
//! and buffer address share their alignment and cold reads can go `O_DIRECT`. Spans are cut
//! into requests of `request_size` bytes; `requests_in_flight` threads each keep one request
//! in the engine. GPUs that want the same ranges (`--target gpu:0,1`) form one group: each
//! request is read from storage into one member (round robin, so every GPU reads its share
//! over its own link) and copied GPU to GPU into the others, so every byte is read once.
//!
//! Moving to the engine's asynchronous submit API later changes only `run_request`: submit
//! instead of a blocking read, and complete pieces from the completion queue.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::alloc::{Allocation, Allocations, ALIGN};
use super::dtype::Dtype;
use super::index::{Checkpoint, OpenedFiles, TensorLocation};
use super::plan::{Plan, Target};
use crate::driver::Driver;
use crate::error::{Error, ErrorKind, Result};
use crate::file::FileHandle;

/// Tasks per engine worker in one default read request.
const REQUEST_TASKS_PER_WORKER: usize = 8;

/// How a load reads. A field left at its default (0, `None`) takes the driver's configuration
/// (`safetensors_request_bytes`, `safetensors_requests_in_flight`,
/// `safetensors_merge_gap_bytes`, `safetensors_spread_reads`), and where that is 0 too, the
/// value derived from the engine's shape.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Bytes per read request; 0: the configuration's, else `threads × task_bytes() × 8`, so
    /// one request gives every engine worker several tasks (a worker drains its copy pipeline
    /// at the end of each request; `gdio bench` measured its best with 1 GiB requests, two in
    /// flight, on the H200 machine).
    pub request_size: usize,
    /// Read requests in flight at once (each spread over the engine's workers); 0: the
    /// configuration's, else two, or the number of GPUs that share a group if more.
    pub requests_in_flight: usize,
    /// Planned ranges of one file closer than this are read as one span, bytes between
    /// included; 0: the configuration's, else `task_bytes()` of the configuration. Gaps under
    /// a page count as a page (reads are page-aligned, so ranges closer than that share one).
    pub merge_gap: u64,
    /// With several GPUs for one tensor (a replicated load): spread the reads over every
    /// GPU's own host link (each GPU reads a share and copies it to the others), or read every
    /// request into the first GPU and copy it to the others over the GPU-to-GPU link, so each
    /// engine worker keeps one bounce ring. `None`: the configuration's
    /// `safetensors_spread_reads` (false by default: where the CPU's copies out of the page
    /// cache limit the load, as on the H200 pair, 39.9 against 38.0 GB/s on average,
    /// BENCHMARKS.md session 6, the two are alike; spreading is for machines where one host
    /// link is the limit).
    pub spread_reads: Option<bool>,
    /// Set to stop a load in progress (checked before each read request); the load then fails
    /// with "load cancelled" and its memory is freed. A stream dropped early stops its load
    /// without setting this.
    pub cancel: Option<Arc<AtomicBool>>,
}

/// The read shape a load used: [`LoadOptions`] with every default filled in from the
/// configuration and the engine's shape, so that a slow load can be told apart by how it read
/// (`gdio load` prints it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadShape {
    /// Bytes per read request (whole pages).
    pub request_size: u64,
    /// Planned ranges closer than this were read as one span (at least a page).
    pub merge_gap: u64,
    /// Replicated loads: each GPU read a share over its own link.
    pub spread_reads: bool,
    /// Read requests in flight at once, at most (a load of fewer requests keeps fewer).
    pub requests_in_flight: usize,
}

impl LoadShape {
    /// `options` over `cfg`'s keys over the values derived from the engine's shape.
    /// `requests_in_flight` stays 0 (not known yet) unless set: [`LoadShape::for_groups`]
    /// fills it in once the layout says how many GPUs share a group.
    fn resolve(options: &LoadOptions, cfg: &crate::config::Config) -> LoadShape {
        let pick = |option: u64, key: usize| if option != 0 { option } else { key as u64 };
        let request_size = match pick(options.request_size as u64, cfg.safetensors_request_bytes) {
            0 => (cfg.threads as u64)
                .saturating_mul(cfg.task_bytes() as u64)
                .saturating_mul(REQUEST_TASKS_PER_WORKER as u64),
            n => n,
        }
        .max(ALIGN);
        // At least a page: spans are widened to whole pages, and two spans less than a page
        // apart would share one, which the layout cannot place (their tensors never came out).
        let merge_gap = match pick(options.merge_gap, cfg.safetensors_merge_gap_bytes) {
            0 => cfg.task_bytes() as u64,
            n => n,
        }
        .max(ALIGN);
        LoadShape {
            request_size: request_size / ALIGN * ALIGN,
            merge_gap,
            spread_reads: options.spread_reads.unwrap_or(cfg.safetensors_spread_reads),
            requests_in_flight: pick(
                options.requests_in_flight as u64,
                cfg.safetensors_requests_in_flight,
            ) as usize,
        }
    }

    /// The shape for a layout whose widest group has `widest` GPUs: two requests in flight,
    /// or one per GPU of that group if more, unless set.
    fn for_groups(self, widest: usize) -> LoadShape {
        let requests_in_flight = match self.requests_in_flight {
            0 => widest.max(2),
            n => n,
        };
        LoadShape { requests_in_flight, ..self }
    }
}

/// A loaded tensor (or slice of one): where its bytes are. The memory belongs to the
/// [`Loaded`] (or [`LoadStream`]) that handed it out and lives as long as that does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorView {
    /// Tensor name.
    pub name: String,
    /// Element type.
    pub dtype: Dtype,
    /// Shape of what was loaded.
    pub shape: Vec<u64>,
    /// Where it is.
    pub target: Target,
    /// Address: a host pointer, or a CUDA device pointer on GPU `target`.
    pub addr: u64,
    /// Bytes.
    pub len: u64,
    /// The tensor in the checkpoint.
    pub location: TensorLocation,
    /// Which bytes of the tensor these are (`0..size` for all).
    pub bytes: Range<u64>,
    /// Which allocation holds it (index into [`Loaded::allocations`]).
    pub allocation: usize,
    /// Offset of the bytes in that allocation.
    pub offset: u64,
}

impl TensorView {
    /// The GPU ordinal for device memory.
    pub fn ordinal(&self) -> Option<usize> {
        self.target.gpu()
    }
}

/// Where a load's time went before its reads, so that a slow load says why.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadTimes {
    /// Allocating the memory the load fills.
    pub allocate: Duration,
    /// Waiting for the engine workers' streams and pinned bounce buffers for the load's GPUs
    /// (made once per process); zero where each worker makes its own at its first task
    /// (`safetensors_overlap_warm`).
    pub warm: Duration,
}

/// A finished load: the allocations and every view, in plan order.
#[derive(Debug)]
pub struct Loaded {
    allocations: Allocations,
    views: Vec<TensorView>,
    bytes_read: u64,
    times: LoadTimes,
    shape: LoadShape,
}

impl Loaded {
    /// Every view, in the order they landed.
    pub fn views(&self) -> &[TensorView] {
        &self.views
    }

    /// The view of tensor `name` on `target` (the first, if the plan loaded several slices).
    pub fn get(&self, name: &str, target: Target) -> Option<&TensorView> {
        self.views.iter().find(|v| v.name == name && v.target == target)
    }

    /// The allocations (one per file and target).
    pub fn allocations(&self) -> &[Allocation] {
        &self.allocations
    }

    /// Bytes read from storage (each byte once, however many GPUs got it; includes the bytes
    /// between merged ranges and alignment).
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// Bytes placed in memory (the plan's bytes, counting each target).
    pub fn bytes_loaded(&self) -> u64 {
        self.views.iter().map(|v| v.len).sum()
    }

    /// Where the time before the reads went.
    pub fn times(&self) -> LoadTimes {
        self.times
    }

    /// How the load read: request size, requests in flight, merge gap, spreading.
    pub fn shape(&self) -> LoadShape {
        self.shape
    }

    /// The bytes of a host view (`None` for device memory or a view of another load).
    pub fn host_bytes(&self, view: &TensorView) -> Option<&[u8]> {
        host_bytes(&self.allocations, view)
    }

    /// A view's bytes copied to a `Vec`, from host or device memory.
    pub fn to_vec(&self, view: &TensorView) -> Result<Vec<u8>> {
        to_vec(&self.allocations, view)
    }

    /// Lends the device bytes of `view` to `f` as a cudarc `CudaView<u8>` on `stream` (a
    /// stream of the view's GPU). The memory stays gdio's: it is not freed when `f` returns.
    pub fn with_cuda_view<R>(
        &self,
        view: &TensorView,
        stream: &Arc<cudarc::driver::CudaStream>,
        f: impl FnOnce(&cudarc::driver::CudaView<'_, u8>) -> R,
    ) -> Result<R> {
        let foreign = || {
            Error::new(
                ErrorKind::InvalidInput,
                format!("view of {:?} is not from this load", view.name),
            )
        };
        alloc_of(&self.allocations, view).ok_or_else(foreign)?;
        let ordinal = stream.context().ordinal();
        if view.target != Target::Gpu(ordinal) {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "view of {:?} is on {}, the stream on GPU {ordinal}",
                    view.name, view.target
                ),
            ));
        }
        let len = usize::try_from(view.len).map_err(|_| foreign())?;
        // SAFETY: `addr..addr+len` is device memory of this load's allocation on the stream's
        // GPU (checked above), alive while `self` is borrowed. The slice is never dropped as a
        // CudaSlice (ManuallyDrop, then `leak`), so cudarc never frees gdio's memory, even if
        // `f` panics.
        let slice =
            std::mem::ManuallyDrop::new(unsafe { stream.upgrade_device_ptr::<u8>(view.addr, len) });
        let r = f(&slice.slice(..));
        let _ = std::mem::ManuallyDrop::into_inner(slice).leak();
        Ok(r)
    }
}

fn alloc_of<'a>(allocs: &'a [Allocation], v: &TensorView) -> Option<&'a Allocation> {
    allocs.get(v.allocation).filter(|a| a.addr() + v.offset == v.addr)
}

fn host_bytes<'a>(allocs: &'a [Allocation], v: &TensorView) -> Option<&'a [u8]> {
    alloc_of(allocs, v)?.host_slice(v.offset, v.len)
}

fn to_vec(allocs: &[Allocation], v: &TensorView) -> Result<Vec<u8>> {
    let a = alloc_of(allocs, v).ok_or_else(|| {
        Error::new(ErrorKind::InvalidInput, format!("view of {:?} is not from this load", v.name))
    })?;
    let len = usize::try_from(v.len)
        .map_err(|_| Error::new(ErrorKind::InvalidInput, "view too large for this machine"))?;
    let mut out = vec![0u8; len];
    a.copy_to_host(v.offset, &mut out)?;
    Ok(out)
}

/// Loads `plan` and returns when every tensor is in place. The requests run on the calling
/// thread (and, where several are in flight, on threads this call starts and joins): no
/// loader thread, so a load of one request reuses the caller's resources for small reads
/// (its stream and pinned buffers) from one call to the next, as a `get_tensor` per tensor
/// does.
pub fn load(
    driver: &Arc<Driver>,
    ckpt: &Checkpoint,
    plan: &Plan,
    options: &LoadOptions,
) -> Result<Loaded> {
    let (state, mut views) = start(driver, ckpt, plan, options)?;
    let allocations = state.allocations.clone();
    let (tx, rx) = mpsc::channel();
    let (times, shape) = (state.times, state.shape);
    let bytes_read = state.run(tx)?;
    views.extend(rx.try_iter());
    Ok(Loaded { allocations, views, bytes_read, times, shape })
}

/// Starts loading `plan` and returns an iterator of the views in completion order; call
/// [`LoadStream::finish`] (after or instead of iterating) for the [`Loaded`]. Memory is
/// allocated before this returns, so an allocation failure is an error here.
pub fn load_stream(
    driver: &Arc<Driver>,
    ckpt: &Checkpoint,
    plan: &Plan,
    options: &LoadOptions,
) -> Result<LoadStream> {
    let (state, ready) = start(driver, ckpt, plan, options)?;
    let allocations = state.allocations.clone();
    let cancel = state.cancel.clone();
    let (times, shape) = (state.times, state.shape);
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::Builder::new()
        .name("gdio-st-load".into())
        .spawn(move || state.run(tx))
        .map_err(|e| Error::from_io(&e, "cannot start the loader thread"))?;
    Ok(LoadStream {
        rx: Some(Mutex::new(rx)),
        ready: ready.into_iter().collect(),
        handle: Some(handle),
        allocations,
        cancel,
        seen: Vec::with_capacity(plan.len()),
        failed: None,
        bytes_read: 0,
        times,
        shape,
    })
}

/// Lays the load out and allocates its memory: the run to make, and the views of empty
/// tensors (ready at once).
fn start(
    driver: &Arc<Driver>,
    ckpt: &Checkpoint,
    plan: &Plan,
    options: &LoadOptions,
) -> Result<(Run, Vec<TensorView>)> {
    let cfg = driver.config();
    let shape = LoadShape::resolve(options, cfg);
    let layout =
        Layout::build(ckpt, plan, shape.merge_gap, shape.request_size, shape.spread_reads)?;
    // The engine workers' streams and pinned buffers for the load's GPUs (once per process):
    // each worker makes its own at its first task of the load, so that the first reads start
    // while the last workers still pin theirs (`safetensors_overlap_warm`), or all of them now.
    let mut warm = Duration::ZERO;
    if !cfg.safetensors_overlap_warm {
        let mut gpus: Vec<usize> = layout
            .groups
            .iter()
            .flat_map(|g| g.members.iter().filter_map(|t| t.gpu()))
            .filter(|&n| !driver.gpu_prepared(n))
            .collect();
        gpus.sort_unstable();
        gpus.dedup();
        let warming = Instant::now();
        for &n in &gpus {
            driver.prepare_gpu(n)?;
        }
        if !gpus.is_empty() {
            warm = warming.elapsed();
        }
    }
    let allocating = Instant::now();
    let mut allocations = Vec::new();
    for g in &layout.groups {
        for &t in &g.members {
            allocations.push(Allocation::new(driver, t, g.alloc_len as usize)?);
        }
    }
    let allocate = allocating.elapsed();
    let allocations: Allocations = Arc::new(allocations);
    let widest = layout.groups.iter().map(|g| g.members.len()).max().unwrap_or(1);
    let shape = shape.for_groups(widest);
    let state = Run {
        driver: driver.clone(),
        files: ckpt.opened_files(),
        layout,
        allocations,
        cancel: Arc::new(AtomicBool::new(false)),
        stop: options.cancel.clone(),
        shape,
        times: LoadTimes { allocate, warm },
    };
    // Views of empty items are ready at once.
    let mut ready = Vec::new();
    for (gi, g) in state.layout.groups.iter().enumerate() {
        for (ii, it) in g.items.iter().enumerate() {
            if it.pieces_left.load(Ordering::Relaxed) == 0 {
                for m in 0..g.members.len() {
                    ready.push(state.view(gi, ii, m));
                }
            }
        }
    }
    Ok((state, ready))
}

/// The views of a load as they land (completion order); see [`load_stream`].
pub struct LoadStream {
    // In a mutex so the stream is Sync (bindings such as PyO3 want that).
    rx: Option<Mutex<mpsc::Receiver<TensorView>>>,
    ready: std::collections::VecDeque<TensorView>,
    handle: Option<JoinHandle<Result<u64>>>,
    allocations: Allocations,
    cancel: Arc<AtomicBool>,
    seen: Vec<TensorView>,
    failed: Option<Error>,
    bytes_read: u64,
    times: LoadTimes,
    shape: LoadShape,
}

impl std::fmt::Debug for LoadStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadStream").field("delivered", &self.seen.len()).finish()
    }
}

impl LoadStream {
    /// The allocations being filled (views point into them).
    pub fn allocations(&self) -> &[Allocation] {
        &self.allocations
    }

    /// The bytes of a host view this stream handed out.
    pub fn host_bytes(&self, view: &TensorView) -> Option<&[u8]> {
        host_bytes(&self.allocations, view)
    }

    /// A handed-out view's bytes copied to a `Vec`, from host or device memory.
    pub fn to_vec(&self, view: &TensorView) -> Result<Vec<u8>> {
        to_vec(&self.allocations, view)
    }

    fn join(&mut self) -> Result<()> {
        self.rx = None;
        if let Some(h) = self.handle.take() {
            self.bytes_read = h.join().unwrap_or_else(|_| {
                Err(Error::new(ErrorKind::Io, "the safetensors loader thread panicked"))
            })?;
        }
        Ok(())
    }

    /// Waits for the rest and returns every view (in plan order is not promised: in the
    /// order they landed) with the memory.
    pub fn finish(mut self) -> Result<Loaded> {
        for v in self.by_ref() {
            v?;
        }
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        self.join()?;
        let views = std::mem::take(&mut self.seen);
        Ok(Loaded {
            allocations: self.allocations.clone(),
            views,
            bytes_read: self.bytes_read,
            times: self.times,
            shape: self.shape,
        })
    }
}

impl Iterator for LoadStream {
    type Item = Result<TensorView>;

    fn next(&mut self) -> Option<Result<TensorView>> {
        if let Some(v) = self.ready.pop_front() {
            self.seen.push(v.clone());
            return Some(Ok(v));
        }
        let got = self.rx.as_ref()?.lock().unwrap_or_else(|p| p.into_inner()).recv();
        match got {
            Ok(v) => {
                self.seen.push(v.clone());
                Some(Ok(v))
            }
            Err(_) => match self.join() {
                Ok(_) => None,
                Err(e) => {
                    self.failed = Some(e.clone());
                    Some(Err(e))
                }
            },
        }
    }
}

impl Drop for LoadStream {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
        let _ = self.join();
    }
}

/// One planned range in a group.
struct Item {
    name: String,
    dtype: Dtype,
    shape: Vec<u64>,
    location: TensorLocation,
    bytes: Range<u64>,
    /// Offset in each member's allocation.
    offset: u64,
    /// Requests still to land before the range is complete.
    pieces_left: AtomicUsize,
}

/// One read request.
struct Piece {
    group: usize,
    file_offset: u64,
    len: u64,
    alloc_offset: u64,
    /// Which member reads it from storage.
    reader: usize,
}

/// The targets of one file that want the same ranges, and their shared layout.
struct Group {
    file: usize,
    members: Vec<Target>,
    /// Index of member 0's allocation; member m's is `first_alloc + m`.
    first_alloc: usize,
    alloc_len: u64,
    items: Vec<Item>,
}

/// A wanted file range `[start, end)` and the plan item that wants it.
type Wanted = (u64, u64, usize);

struct Layout {
    paths: Vec<PathBuf>,
    groups: Vec<Group>,
    pieces: Vec<Piece>,
}

impl Layout {
    fn build(
        ckpt: &Checkpoint,
        plan: &Plan,
        merge_gap: u64,
        request_size: u64,
        spread_reads: bool,
    ) -> Result<Layout> {
        use std::collections::BTreeMap;
        let files = ckpt.files();
        // file → target → its items' (file range, plan index)
        let mut by_file: BTreeMap<usize, BTreeMap<Target, Vec<Wanted>>> = BTreeMap::new();
        for (pi, it) in plan.items().iter().enumerate() {
            let f = files.get(it.location.file).ok_or_else(|| {
                Error::new(ErrorKind::InvalidInput, "plan item is not from this checkpoint")
            })?;
            let info = f.header.tensors.get(it.location.tensor).ok_or_else(|| {
                Error::new(ErrorKind::InvalidInput, "plan item is not from this checkpoint")
            })?;
            if it.bytes.start > it.bytes.end || it.bytes.end > info.len() {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    format!("plan range {:?} is outside tensor {:?}", it.bytes, info.name),
                ));
            }
            let start = f.header.data_start + info.data_offsets.0 + it.bytes.start;
            let end = f.header.data_start + info.data_offsets.0 + it.bytes.end;
            by_file
                .entry(it.location.file)
                .or_default()
                .entry(it.target)
                .or_default()
                .push((start, end, pi));
        }
        let mut groups = Vec::new();
        let mut pieces = Vec::new();
        let mut next_alloc = 0;
        for (file, targets) in by_file {
            let file_len = files[file].header.data_start + files[file].header.data_len;
            // Targets with identical ranges share a group (GPUs only: host stays alone).
            let mut grouped: Vec<(Vec<Target>, Vec<Wanted>)> = Vec::new();
            for (t, mut ranges) in targets {
                ranges.sort();
                let key: Vec<(u64, u64)> = ranges.iter().map(|r| (r.0, r.1)).collect();
                let same = grouped.iter_mut().find(|(m, r)| {
                    t != Target::Host
                        && m[0] != Target::Host
                        && r.iter().map(|x| (x.0, x.1)).eq(key.iter().copied())
                });
                match same {
                    Some((m, _)) => m.push(t),
                    None => grouped.push((vec![t], ranges)),
                }
            }
            for (members, ranges) in grouped {
                // Spans: merged, aligned ranges; (file_start, file_end, alloc_offset).
                let mut spans: Vec<(u64, u64)> = Vec::new();
                for &(s, e, _) in &ranges {
                    if s == e {
                        continue;
                    }
                    match spans.last_mut() {
                        Some(last) if s <= last.1.saturating_add(merge_gap) => {
                            last.1 = last.1.max(e)
                        }
                        _ => spans.push((s, e)),
                    }
                }
                let mut placed = Vec::with_capacity(spans.len());
                let mut alloc_len = 0u64;
                for (s, e) in spans {
                    let s = s / ALIGN * ALIGN;
                    let e = e.div_ceil(ALIGN).saturating_mul(ALIGN).min(file_len);
                    placed.push((s, e, alloc_len));
                    alloc_len += (e - s).div_ceil(ALIGN) * ALIGN;
                }
                let gi = groups.len();
                let mut items = Vec::with_capacity(ranges.len());
                let mut first_piece = pieces.len();
                let mut reader = 0;
                for &(s, e, a) in &placed {
                    let mut off = s;
                    while off < e {
                        let len = request_size.min(e - off);
                        pieces.push(Piece {
                            group: gi,
                            file_offset: off,
                            len,
                            alloc_offset: a + (off - s),
                            reader,
                        });
                        if spread_reads {
                            reader = (reader + 1) % members.len();
                        }
                        off += len;
                    }
                }
                for &(s, e, pi) in &ranges {
                    let it = &plan.items()[pi];
                    let info = ckpt.info_at(it.location);
                    let span = placed.iter().find(|p| p.0 <= s && e <= p.1);
                    let offset = span.map_or(0, |p| p.2 + (s - p.0));
                    let mut n = 0;
                    if s < e {
                        while first_piece < pieces.len()
                            && pieces[first_piece].file_offset + pieces[first_piece].len <= s
                        {
                            first_piece += 1;
                        }
                        n = pieces[first_piece..]
                            .iter()
                            .take_while(|p| p.file_offset < e)
                            .filter(|p| p.file_offset + p.len > s)
                            .count();
                    }
                    items.push(Item {
                        name: info.name.clone(),
                        dtype: info.dtype,
                        shape: it.shape.clone(),
                        location: it.location,
                        bytes: it.bytes.clone(),
                        offset,
                        pieces_left: AtomicUsize::new(n),
                    });
                }
                let nm = members.len();
                groups.push(Group { file, members, first_alloc: next_alloc, alloc_len, items });
                next_alloc += nm;
            }
        }
        let paths = files.iter().map(|f| f.path.clone()).collect();
        Ok(Layout { paths, groups, pieces })
    }
}

struct Run {
    driver: Arc<Driver>,
    /// The checkpoint's files, opened once for all its loads.
    files: OpenedFiles,
    layout: Layout,
    allocations: Allocations,
    cancel: Arc<AtomicBool>,
    /// The caller's `LoadOptions::cancel`.
    stop: Option<Arc<AtomicBool>>,
    shape: LoadShape,
    times: LoadTimes,
}

impl Run {
    /// The load is to stop: an error, a dropped stream, or the caller's flag.
    fn stopped(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
            || self.stop.as_ref().is_some_and(|c| c.load(Ordering::Relaxed))
    }

    fn view(&self, gi: usize, ii: usize, member: usize) -> TensorView {
        let g = &self.layout.groups[gi];
        let it = &g.items[ii];
        let allocation = g.first_alloc + member;
        TensorView {
            name: it.name.clone(),
            dtype: it.dtype,
            shape: it.shape.clone(),
            target: g.members[member],
            addr: self.allocations[allocation].addr() + it.offset,
            len: it.bytes.end - it.bytes.start,
            location: it.location,
            bytes: it.bytes.clone(),
            allocation,
            offset: it.offset,
        }
    }

    /// Runs every request; returns the bytes read from storage.
    fn run(self, tx: mpsc::Sender<TensorView>) -> Result<u64> {
        let mut handles: Vec<Option<Arc<FileHandle>>> = Vec::new();
        handles.resize_with(self.layout.paths.len(), || None);
        for g in &self.layout.groups {
            if handles[g.file].is_none() {
                handles[g.file] = Some(self.files.get(g.file, &self.layout.paths[g.file])?);
            }
        }
        let next = AtomicUsize::new(0);
        let read = AtomicU64::new(0);
        let first_error: Mutex<Option<Error>> = Mutex::new(None);
        let tx = Mutex::new(tx);
        // Each reader takes the next request until none is left; the running thread is one
        // of them, so a load of one request starts no thread.
        let reader = || loop {
            if self.stopped() {
                return;
            }
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(p) = self.layout.pieces.get(i) else { return };
            let g = &self.layout.groups[p.group];
            let Some(fh) = handles[g.file].as_ref() else { return };
            match self.run_request(fh, g, p) {
                Ok(()) => {
                    read.fetch_add(p.len, Ordering::Relaxed);
                    self.complete(p, &tx);
                }
                Err(e) => {
                    self.cancel.store(true, Ordering::Relaxed);
                    let mut fe = first_error.lock().unwrap_or_else(|x| x.into_inner());
                    fe.get_or_insert(e);
                    return;
                }
            }
        };
        let readers = self.shape.requests_in_flight.min(self.layout.pieces.len()).max(1);
        std::thread::scope(|s| {
            for _ in 1..readers {
                s.spawn(reader);
            }
            reader();
        });
        if let Some(e) = first_error.into_inner().unwrap_or_else(|x| x.into_inner()) {
            return Err(e);
        }
        if self.stopped() {
            return Err(Error::new(ErrorKind::Io, "load cancelled"));
        }
        Ok(read.into_inner())
    }

    /// Reads one request into its reader's allocation and copies it to the other members.
    fn run_request(&self, fh: &FileHandle, g: &Group, p: &Piece) -> Result<()> {
        let src = &self.allocations[g.first_alloc + p.reader];
        let addr = src.addr() + p.alloc_offset;
        let len = p.len as usize;
        let got = match g.members[p.reader] {
            // SAFETY: `addr..addr+len` lies inside an allocation this load owns (the layout
            // placed the piece there) and nothing else writes it while the load runs.
            Target::Host => unsafe {
                self.driver.read_host_ptr(fh, p.file_offset, addr as *mut u8, len)?
            },
            // SAFETY: as above, on the GPU.
            Target::Gpu(_) => unsafe { self.driver.read_device_ptr(fh, p.file_offset, addr, len)? },
        };
        if got != len {
            return Err(Error::new(
                ErrorKind::Io,
                format!(
                    "file ended after {got} of {len} bytes: it shrank after its header was read"
                ),
            )
            .with_path(fh.path())
            .with_range(p.file_offset, p.len));
        }
        let Target::Gpu(from) = g.members[p.reader] else { return Ok(()) };
        for (m, t) in g.members.iter().enumerate() {
            if m == p.reader {
                continue;
            }
            let Target::Gpu(to) = *t else { continue };
            let dst = self.allocations[g.first_alloc + m].addr() + p.alloc_offset;
            // SAFETY: both ranges are the same piece of two allocations of this load with the
            // same layout; the source was just filled and nothing else writes either.
            unsafe { self.driver.runtime().copy_peer(to, dst, from, addr, len)? };
        }
        Ok(())
    }

    fn complete(&self, p: &Piece, tx: &Mutex<mpsc::Sender<TensorView>>) {
        let g = &self.layout.groups[p.group];
        let (ps, pe) = (p.file_offset, p.file_offset + p.len);
        let mut done = Vec::new();
        for (ii, it) in g.items.iter().enumerate() {
            let len = it.bytes.end - it.bytes.start;
            if len == 0 {
                continue;
            }
            // The item's place in the allocation tells which pieces cover it.
            let (s, e) = (it.offset, it.offset + len);
            let (a, b) = (p.alloc_offset, p.alloc_offset + (pe - ps));
            if s < b && a < e && it.pieces_left.fetch_sub(1, Ordering::AcqRel) == 1 {
                done.push(ii);
            }
        }
        let tx = tx.lock().unwrap_or_else(|x| x.into_inner());
        for ii in done {
            for m in 0..g.members.len() {
                let _ = tx.send(self.view(p.group, ii, m));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn cfg() -> Config {
        Config { threads: 6, task_size: 2 << 20, ..Config::default() }
    }

    #[test]
    fn unset_options_and_keys_take_the_engine_shape() {
        let c = cfg();
        let s = LoadShape::resolve(&LoadOptions::default(), &c);
        let derived = 6 * c.task_bytes() as u64 * REQUEST_TASKS_PER_WORKER as u64;
        assert_eq!(s.request_size, derived);
        assert_eq!(s.merge_gap, c.task_bytes() as u64);
        assert!(!s.spread_reads);
        let in_flight = |w| s.for_groups(w).requests_in_flight;
        assert_eq!((in_flight(1), in_flight(2), in_flight(5)), (2, 2, 5));
    }

    #[test]
    fn keys_override_the_engine_shape_and_options_override_keys() {
        let c = Config {
            safetensors_request_bytes: (3 << 20) + 100,
            safetensors_requests_in_flight: 7,
            safetensors_merge_gap_bytes: 12_345,
            safetensors_spread_reads: true,
            ..cfg()
        };
        let s = LoadShape::resolve(&LoadOptions::default(), &c);
        // Requests stay whole pages: the key's 3 MiB + 100 is cut to 3 MiB.
        assert_eq!(s.request_size, 3 << 20);
        assert_eq!(s.merge_gap, 12_345);
        assert!(s.spread_reads);
        let in_flight = |w| s.for_groups(w).requests_in_flight;
        assert_eq!((in_flight(1), in_flight(9)), (7, 7), "a set count ignores the GPUs");
        let o = LoadOptions {
            request_size: 5 * 4096,
            requests_in_flight: 1,
            merge_gap: 3 * ALIGN,
            spread_reads: Some(false),
            cancel: None,
        };
        let s = LoadShape::resolve(&o, &c);
        assert_eq!((s.request_size, s.merge_gap, s.spread_reads), (5 * 4096, 3 * ALIGN, false));
        assert_eq!(s.for_groups(4).requests_in_flight, 1);
    }

    #[test]
    fn a_request_and_a_merge_gap_are_at_least_one_page() {
        let c = Config { safetensors_request_bytes: 1, safetensors_merge_gap_bytes: 1, ..cfg() };
        let s = LoadShape::resolve(&LoadOptions::default(), &c);
        assert_eq!((s.request_size, s.merge_gap), (ALIGN, ALIGN));
        let o = LoadOptions { request_size: 4095, merge_gap: 4095, ..LoadOptions::default() };
        let s = LoadShape::resolve(&o, &cfg());
        assert_eq!((s.request_size, s.merge_gap), (ALIGN, ALIGN));
    }
}
