//! What a worker does with one task: read a file range into host memory or, through its bounce
//! ring, into GPU memory; write host or GPU memory to a file range.

use super::job::{DirectChoice, Job, TaskResult};
use super::lane::Lane;
use super::plan::{pieces, Task};
use super::ring::{Shape, WorkerRing};
use super::split_read::SplitRead;
use super::worker_time::{timed, Phase};
use crate::error::{Error, Result};
use crate::file::uring::{self, Ring};
use crate::file::{posix, residency, FileHandle, FILE_WRITERS_MIN_BYTES};

/// The alignment a job's direct pieces use: the larger of the DIO offset and memory alignment.
pub(crate) fn direct_align(file: &FileHandle) -> u64 {
    let i = file.info();
    u64::from(i.dio_offset_align.max(i.dio_mem_align).max(1))
}

/// How a read task travels, decided once per task (at most one page-cache query).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadPath {
    /// Buffered reads out of the page cache.
    Buffered,
    /// `O_DIRECT` for the aligned middle.
    Direct,
    /// DMA straight from the page cache (GPU memory only).
    Mapped,
}

/// Windows of [`RESIDENCY_WINDOW`] bytes a read task's page-cache check asks
/// ([`residency::sampled`]), spread from its first byte to its last; a task no longer than
/// all of them is asked whole. `cachestat` walks every page it is asked about: 29 µs for a
/// 4 MiB task and 61 µs for an 8 MiB one on the build machine's ext4 (5 % of the `pread` it
/// decides), 10.8 and 21.1 µs on the H200 host's tmpfs, 0.2–0.3 µs on its ext4, whose large
/// folios are few entries (`bench/cachestat-cost.c`, BENCHMARKS.md session 37 run 9, where
/// KvikIO and `gdio bench` from that ext4 read the same either way; from tmpfs, run 10, 4 MiB × 8
/// 41.1 against 38.7 GB/s on the means, 1 GiB × 2 51.5 against 51.0). 8 windows of 16 KiB cost
/// 4 µs at most however large the task; a task read once, or never, is all in or all out of
/// the page cache, and the check only chooses between two ways of reading the same bytes.
const RESIDENCY_WINDOWS: u64 = 8;
/// Bytes in each window of a read task's page-cache check.
const RESIDENCY_WINDOW: u64 = 16 << 10;

/// The path of a read task: `O_DIRECT` per the policy (under `auto`, when the range is less
/// than the hot fraction cached), page-cache DMA for a hot range when the job asks for it.
pub(crate) fn read_path(job: &Job, task: &Task, device: bool) -> ReadPath {
    let file = job.file();
    let can_direct = file.direct_fd().is_some();
    let wants_mapped = job.page_cache_dma && device;
    let hot_fraction = match job.direct {
        DirectChoice::WhenCold(h) => h,
        DirectChoice::Always if !wants_mapped => {
            return if can_direct { ReadPath::Direct } else { ReadPath::Buffered }
        }
        DirectChoice::Never if !wants_mapped => return ReadPath::Buffered,
        _ => 0.5,
    };
    let fd = file.buffered_fd();
    let hot = residency::sampled(fd, task.offset, task.len, RESIDENCY_WINDOWS, RESIDENCY_WINDOW)
        .map(|r| r.fraction() >= hot_fraction);
    match (hot, job.direct) {
        (Some(true), _) if wants_mapped => ReadPath::Mapped,
        (_, DirectChoice::Always) if can_direct => ReadPath::Direct,
        (Some(false), DirectChoice::WhenCold(_)) if can_direct => ReadPath::Direct,
        _ => ReadPath::Buffered,
    }
}

pub(crate) fn io_error(file: &FileHandle, what: &str, errno: i32, offset: u64, len: u64) -> Error {
    Error::from_errno(errno, what.to_owned()).with_path(file.path()).with_range(offset, len)
}

/// Reads `[off, off+len)` into `dst`, the aligned middle with `O_DIRECT` when `direct` and
/// `dst` lines up. Returns (bytes read, of which direct); fewer bytes only at end of file.
///
/// # Safety
/// `dst` must be valid for writes of `len` bytes.
unsafe fn read_range(
    file: &FileHandle,
    dst: *mut u8,
    off: u64,
    len: u64,
    direct: bool,
    align: u64,
) -> Result<(u64, u64)> {
    let bfd = file.buffered_fd();
    let p = pieces(off, len, align);
    let direct_fd =
        file.direct_fd().filter(|_| direct && p.middle > 0 && (dst as u64 + p.head) % align == 0);
    let Some(dfd) = direct_fd else {
        // SAFETY: the caller's range.
        return unsafe { posix::pread_full_raw(bfd, dst, len as usize, off) }
            .map(|n| (n as u64, 0))
            .map_err(|e| io_error(file, "buffered read failed", e, off, len));
    };
    // Head, then the direct middle, then the tail, each only while the one before came back
    // whole; what the three results mean is `direct_range_result`'s (shared with the ring,
    // which issues all three at once).
    let whole =
        |r: &std::result::Result<usize, i32>, want: u64| matches!(r, Ok(n) if *n as u64 == want);
    let mut got = [Ok(0); 3];
    // SAFETY: head, middle and tail are consecutive sub-ranges of the caller's range.
    unsafe {
        let (mid, tail) = (dst.add(p.head as usize), dst.add((p.head + p.middle) as usize));
        got[0] = posix::pread_full_raw(bfd, dst, p.head as usize, off);
        if whole(&got[0], p.head) {
            got[1] = posix::pread_full_raw(dfd, mid, p.middle as usize, off + p.head);
            if whole(&got[1], p.middle) {
                let tail_off = off + p.head + p.middle;
                got[2] = posix::pread_full_raw(bfd, tail, p.tail as usize, tail_off);
            }
        }
        direct_range_result(file, (dst as usize, off, len), &got, align)
    }
}

/// Reads one piece of a split task (`split_into_one_buffer`) into `dst`: [`read_range`] with
/// the file's direct alignment.
///
/// # Safety
/// `dst` must be valid for writes of `len` bytes, and no other thread may touch them meanwhile.
pub(crate) unsafe fn read_piece(
    file: &FileHandle,
    dst: *mut u8,
    off: u64,
    len: u64,
    direct: bool,
) -> Result<(u64, u64)> {
    // SAFETY: the caller's range.
    unsafe { read_range(file, dst, off, len, direct, direct_align(file)) }
}

/// [`read_range`] of every range of `ranges` (buffer address, file offset, length) at once
/// through `ring`: each range's buffered head and tail and its `O_DIRECT` middle all in one
/// submission. Returns per range what [`read_range`] returns for it.
///
/// # Safety
/// Each range's buffer must be valid for writes of its length, and no two may overlap.
unsafe fn read_ranges_uring(
    file: &FileHandle,
    ring: &mut Ring,
    ranges: &[(usize, u64, u64)],
    direct: bool,
    align: u64,
) -> Vec<Result<(u64, u64)>> {
    let bfd = file.buffered_fd();
    // Per range: one buffered read, or three (head, direct middle, tail; empty ones finish
    // without a system call).
    let mut ops: Vec<uring::Read<'_>> = Vec::with_capacity(ranges.len() * 3);
    let mut first: Vec<(usize, bool)> = Vec::with_capacity(ranges.len());
    for &(dst, off, len) in ranges {
        let p = pieces(off, len, align);
        let dst = dst as *mut u8;
        let dfd = file
            .direct_fd()
            .filter(|_| direct && p.middle > 0 && (dst as u64 + p.head) % align == 0);
        first.push((ops.len(), dfd.is_some()));
        let Some(dfd) = dfd else {
            ops.push(uring::Read { fd: bfd, offset: off, len: len as usize, dst });
            continue;
        };
        // SAFETY: head, middle and tail are consecutive sub-ranges of the range.
        let (mid, tail) =
            unsafe { (dst.add(p.head as usize), dst.add((p.head + p.middle) as usize)) };
        ops.push(uring::Read { fd: bfd, offset: off, len: p.head as usize, dst });
        ops.push(uring::Read { fd: dfd, offset: off + p.head, len: p.middle as usize, dst: mid });
        let tail_off = off + p.head + p.middle;
        ops.push(uring::Read { fd: bfd, offset: tail_off, len: p.tail as usize, dst: tail });
    }
    // SAFETY: the ranges are valid and disjoint (caller), and so are their pieces.
    let got = unsafe { ring.read_all(&ops) };
    ranges
        .iter()
        .zip(first)
        .map(|(&range, (at, is_direct))| {
            if !is_direct {
                let (_, off, len) = range;
                return got[at]
                    .map(|n| (n as u64, 0))
                    .map_err(|e| io_error(file, "buffered read failed", e, off, len));
            }
            // SAFETY: the range's buffer is valid for writes (caller) and no longer in flight.
            unsafe { direct_range_result(file, range, &got[at..at + 3], align) }
        })
        .collect()
}

/// What a range read with `O_DIRECT` in the middle returns, from the results of its buffered
/// head, `O_DIRECT` middle and buffered tail (`got`, in that order; [`read_range`] issues them
/// one after the other, the ring all at once): a short head or middle ends the range there
/// (the results after it are not looked at), and a middle the filesystem refused (`EINVAL`)
/// is read again buffered together with the tail.
///
/// # Safety
/// The range's buffer `(dst, off, len)` must be valid for writes of `len` bytes.
unsafe fn direct_range_result(
    file: &FileHandle,
    (dst, off, len): (usize, u64, u64),
    got: &[Result<usize, i32>],
    align: u64,
) -> Result<(u64, u64)> {
    let buffered_err = |e, off, len| io_error(file, "buffered read failed", e, off, len);
    let p = pieces(off, len, align);
    let head = got[0].map_err(|e| buffered_err(e, off, p.head))? as u64;
    if head < p.head {
        return Ok((head, 0));
    }
    let mid_off = off + p.head;
    let mid = match got[1] {
        Ok(n) => n as u64,
        // The filesystem refused this alignment after all: read the rest buffered.
        Err(libc::EINVAL) => {
            tracing::debug!(
                path = %file.path().display(),
                mid_off,
                "O_DIRECT read refused (EINVAL); reading buffered"
            );
            let rest = p.middle + p.tail;
            let mid_dst = (dst as *mut u8).wrapping_add(p.head as usize);
            // SAFETY: the middle and tail of this range's buffer (contract).
            let n = unsafe {
                posix::pread_full_raw(file.buffered_fd(), mid_dst, rest as usize, mid_off)
            }
            .map_err(|e| buffered_err(e, mid_off, rest))?;
            return Ok((p.head + n as u64, 0));
        }
        Err(e) => return Err(io_error(file, "O_DIRECT read failed", e, mid_off, p.middle)),
    };
    if mid < p.middle {
        return Ok((p.head + mid, mid));
    }
    let tail = got[2].map_err(|e| buffered_err(e, mid_off + p.middle, p.tail))?;
    Ok((p.head + p.middle + tail as u64, p.middle))
}

/// Writes `[off, off+len)` from `src`, the aligned middle with `O_DIRECT` when `direct` and
/// `src` lines up. Returns the direct bytes. On error nothing more is written, and the error
/// comes with the bytes of this range that reached the file. A buffered `pwrite` of at least
/// [`FILE_WRITERS_MIN_BYTES`] first waits for its turn among `writers` into the file
/// (`file_writers`; 0: none waits, each is only counted).
///
/// # Safety
/// `src` must be valid for reads of `len` bytes.
pub(crate) unsafe fn write_range(
    file: &FileHandle,
    src: *const u8,
    off: u64,
    len: u64,
    direct: bool,
    align: u64,
    writers: usize,
) -> std::result::Result<u64, (u64, Error)> {
    let buffered = |src: *const u8, off: u64, len: u64| -> std::result::Result<(), (u64, Error)> {
        // Counted even with no limit, so that the handle tells how crowded its writes were.
        let _turn = (len >= FILE_WRITERS_MIN_BYTES).then(|| file.write_turn(writers));
        // SAFETY: the caller's range covers these bytes.
        unsafe { posix::pwrite_all_raw(file.buffered_fd(), src, len as usize, off) }.map_err(
            |(done, e)| {
                let err = io_error(
                    file,
                    &format!(
                        "write failed after {done} of {len} bytes of this piece reached the file"
                    ),
                    e,
                    off,
                    len,
                );
                (done as u64, err)
            },
        )
    };
    let p = pieces(off, len, align);
    let direct_fd =
        file.direct_fd().filter(|_| direct && p.middle > 0 && (src as u64 + p.head) % align == 0);
    let Some(dfd) = direct_fd else {
        buffered(src, off, len)?;
        return Ok(0);
    };
    let plus = |before: u64| move |(done, e): (u64, Error)| (before + done, e);
    // SAFETY: head, middle and tail are consecutive sub-ranges of the caller's range.
    unsafe {
        buffered(src, off, p.head)?;
        let mid_src = src.add(p.head as usize);
        let mid_off = off + p.head;
        if let Err((done, e)) = posix::pwrite_all_raw(dfd, mid_src, p.middle as usize, mid_off) {
            if e == libc::EINVAL && done == 0 {
                buffered(mid_src, mid_off, p.middle + p.tail).map_err(plus(p.head))?;
                return Ok(0);
            }
            let err = io_error(
                file,
                &format!("O_DIRECT write failed after {done} of {} bytes", p.middle),
                e,
                mid_off,
                p.middle,
            );
            return Err((p.head + done as u64, err));
        }
        buffered(mid_src.add(p.middle as usize), mid_off + p.middle, p.tail)
            .map_err(plus(p.head + p.middle))?;
    }
    Ok(p.middle)
}

/// Reads a task straight into host memory (through `ring` when it has one for a read).
pub(crate) fn read_to_host(
    job: &Job,
    task: Task,
    path: ReadPath,
    ring: &mut WorkerRing,
) -> Result<TaskResult> {
    let file = job.file();
    let dst = (job.buf.addr + task.rel) as *mut u8;
    let direct = path == ReadPath::Direct;
    let align = direct_align(file);
    let (bytes, direct_bytes) = match ring.for_reads(1, Shape::Single) {
        // SAFETY: the task lies inside the job's buffer, which the submitter keeps valid and
        // exclusive until the job is done.
        Some(r) => unsafe {
            read_ranges_uring(file, r, &[(dst as usize, task.offset, task.len)], direct, align)
        }
        .pop()
        .unwrap_or(Ok((0, 0)))?,
        // SAFETY: as above.
        None => unsafe { read_range(file, dst, task.offset, task.len, direct, align)? },
    };
    Ok(TaskResult { bytes, direct_bytes, mapped_bytes: 0 })
}

/// Writes a task straight from host memory. On error, the result holds the bytes that reached
/// the file.
pub(crate) fn write_from_host(job: &Job, task: Task) -> (TaskResult, Option<Error>) {
    let file = job.file();
    let src = (job.buf.addr + task.rel) as *const u8;
    let direct = matches!(job.direct, DirectChoice::Always);
    // SAFETY: the task lies inside the job's buffer, valid until the job is done.
    match unsafe {
        write_range(file, src, task.offset, task.len, direct, direct_align(file), job.file_writers)
    } {
        Ok(direct_bytes) => (TaskResult { bytes: task.len, direct_bytes, mapped_bytes: 0 }, None),
        Err((done, e)) => (TaskResult { bytes: done, ..TaskResult::default() }, Some(e)),
    }
}

/// Usable bytes of a bounce buffer and the in-buffer shift for a chunk at `off`. A direct chunk
/// is placed so that aligned file offsets land on aligned buffer addresses, and it ends on an
/// aligned offset, so the chunks after the first are whole aligned blocks of the buffer's size.
fn chunk_geometry(
    lane: &Lane,
    direct: bool,
    align: u64,
    off: u64,
    buffered_chunk: u64,
) -> (u64, u64) {
    let size = lane.buffer_size() as u64;
    if direct && align < size / 2 {
        let shift = off % align;
        (size - shift, shift)
    } else if direct {
        (size, 0)
    } else {
        (size.min(buffered_chunk), 0)
    }
}

/// What a worker did with a task whose copies may still be in flight.
pub(crate) struct Ran {
    /// Bytes read (and queued for copying) so far.
    pub result: TaskResult,
    /// The marker (sequence number, slot) recorded after the task's last copy, if any.
    pub last: Option<(u64, usize)>,
    /// The error that ended the task early.
    pub error: Option<Error>,
}

/// Reads a task into GPU memory through the lane's bounce ring: read chunk into a pinned buffer,
/// queue its copy, move on to the next buffer while the copy runs. The task's bytes have landed
/// when the marker in `Ran::last` is reached.
/// Several chunks read at once go through the worker's `ring` when it has one for them.
pub(crate) fn read_to_device(
    job: &Job,
    task: Task,
    lane: &mut Lane,
    path: ReadPath,
    ring: &mut WorkerRing,
) -> Ran {
    let mut ran = Ran { result: TaskResult::default(), last: None, error: None };
    if let Err(e) = read_chunks(job, task, lane, path, &mut ran, ring) {
        ran.error = Some(e);
    }
    ran
}

/// A chunk of a task read into a bounce buffer: (slot, buffer address, file offset, bytes).
type Chunk = (usize, usize, u64, u64);

fn read_chunks(
    job: &Job,
    task: Task,
    lane: &mut Lane,
    path: ReadPath,
    ran: &mut Ran,
    ring: &mut WorkerRing,
) -> Result<()> {
    let file = job.file();
    let align = direct_align(file);
    let direct = path == ReadPath::Direct;
    if let Some(split) = &job.split_read {
        // Direct pieces keep aligned file offsets on aligned buffer addresses, as chunks do.
        let shift = if direct { task.offset % align } else { 0 };
        if shift + task.len <= lane.buffer_size() as u64 {
            return read_split(job, task, lane, split, (shift, direct), ran);
        }
        // The task does not fit one buffer after all: this worker reads it alone.
        split.close();
    }
    // Cold ranges: several O_DIRECT reads at once, each into its own bounce buffer.
    if direct {
        lane.ensure_buffers(job.direct_in_flight + 1)?;
    }
    let group = if direct { job.direct_in_flight.clamp(1, lane.buffers.len() - 1) } else { 1 };
    let mut chunks: Vec<Chunk> = Vec::with_capacity(group);
    while ran.result.bytes < task.len {
        chunks.clear();
        let mut pos = ran.result.bytes;
        while chunks.len() < group && pos < task.len {
            let off = task.offset + pos;
            let (cap, shift) = chunk_geometry(lane, direct, align, off, job.buffered_chunk);
            let n = cap.min(task.len - pos);
            let slot = timed(job.clock(), Phase::BufferWait, || lane.take_slot())?;
            // SAFETY: `shift + n <= buffer size` by `chunk_geometry`; the slot's previous copy
            // is done.
            let buf = unsafe { lane.buffers[slot].as_mut_ptr().add(shift as usize) };
            chunks.push((slot, buf as usize, off, n));
            pos += n;
        }
        let read = |&(_, buf, off, n): &Chunk| {
            // SAFETY: each chunk's bounce range has room for `n` bytes and belongs to this
            // chunk alone until its copy is queued below.
            unsafe { read_range(file, buf as *mut u8, off, n, direct, align) }
        };
        let shape = if direct && chunks.len() > 1 { Shape::ColdInFlight } else { Shape::Single };
        let results: Vec<Result<(u64, u64)>> =
            timed(job.clock(), Phase::FileIo, || match ring.for_reads(chunks.len(), shape) {
                Some(r) => {
                    let ranges: Vec<(usize, u64, u64)> =
                        chunks.iter().map(|&(_, buf, off, n)| (buf, off, n)).collect();
                    // SAFETY: as for `read` above; the chunks' bounce ranges are disjoint.
                    unsafe { read_ranges_uring(file, r, &ranges, direct, align) }
                }
                None if chunks.len() == 1 => vec![read(&chunks[0])],
                None => read_concurrently(&chunks, &read),
            });
        for (&(slot, buf, _, n), r) in chunks.iter().zip(results) {
            let (got, d) = r?;
            if got > 0 {
                let dst = job.buf.addr + task.rel + ran.result.bytes;
                ran.last = Some(timed(job.clock(), Phase::CopyQueue, || -> Result<_> {
                    // SAFETY: the device range lies inside the job's buffer; the pinned source
                    // stays untouched until the slot's marker is waited for.
                    unsafe { lane.stream.copy_to_device(dst, buf as *const u8, got as usize)? };
                    Ok((lane.record(slot)?, slot))
                })?);
            }
            ran.result.bytes += got;
            ran.result.direct_bytes += d;
            if got < n {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// The owner's side of a split task (`split_into_one_buffer`): one bounce buffer for the
/// whole task, pieces read into it by this worker and the free ones the job was queued for,
/// then one copy of every byte read.
fn read_split(
    job: &Job,
    task: Task,
    lane: &mut Lane,
    split: &SplitRead,
    (shift, direct): (u64, bool),
    ran: &mut Ran,
) -> Result<()> {
    let slot = match timed(job.clock(), Phase::BufferWait, || lane.take_slot()) {
        Ok(slot) => slot,
        Err(e) => {
            split.close();
            return Err(e);
        }
    };
    // SAFETY: `shift + task.len <= buffer size` (checked by the caller); the slot's previous
    // copy is done.
    let base = unsafe { lane.buffers[slot].as_mut_ptr().add(shift as usize) };
    let dst = job.buf.addr + task.rel;
    // The early copies (`split_early_copy`): bytes queued so far, or why queueing failed.
    // Queued by the owner between its pieces or while it waits on its helpers (then counted
    // in `split_wait_ns`).
    let mut early: Result<u64> = Ok(0);
    let (result, error) = split.run(job, base as usize, direct, |upto| {
        let Ok(from) = early else { return };
        // SAFETY: the device range lies inside the job's buffer; every piece up to `upto` is
        // read in full and no reader touches those bytes again; the pinned source stays
        // untouched until the slot's marker, recorded after the last copy below (or the
        // lane's settling after an error), is waited for.
        early = unsafe {
            lane.stream.copy_to_device(
                dst + from,
                base.add(from as usize).cast_const(),
                (upto - from) as usize,
            )
        }
        .map(|()| upto);
    });
    ran.result = result;
    // An early copy that failed to queue fails the task (the worker settles the lane).
    let queued = early?;
    if queued > 0 {
        job.count_early_copy();
    }
    // Every piece read in full up to the first short or failed one: the early copies' bytes
    // (if any) lie within them.
    let rest = result.bytes.saturating_sub(queued);
    if rest > 0 || queued > 0 {
        ran.last = Some(timed(job.clock(), Phase::CopyQueue, || -> Result<_> {
            if rest > 0 {
                // SAFETY: as for the early copies: the range lies inside the job's buffer and
                // after their bytes; every piece's reader is done with the pinned source.
                unsafe {
                    lane.stream.copy_to_device(
                        dst + queued,
                        base.add(queued as usize).cast_const(),
                        rest as usize,
                    )?
                };
            }
            Ok((lane.record(slot)?, slot))
        })?);
    }
    error.map_or(Ok(()), Err)
}

/// Reads every chunk at once: the first on this thread, the others on scoped threads (a
/// thread costs microseconds; a cold read of a bounce buffer, milliseconds). A thread the OS
/// refuses reads its chunk here, after the others.
fn read_concurrently(
    chunks: &[Chunk],
    read: &(dyn Fn(&Chunk) -> Result<(u64, u64)> + Sync),
) -> Vec<Result<(u64, u64)>> {
    std::thread::scope(|s| {
        let helpers: Vec<_> = chunks[1..]
            .iter()
            .map(|c| std::thread::Builder::new().spawn_scoped(s, move || read(c)).ok())
            .collect();
        let mut out = vec![read(&chunks[0])];
        for (c, h) in chunks[1..].iter().zip(helpers) {
            let r = h.and_then(|h| h.join().ok()).unwrap_or_else(|| read(c));
            out.push(r);
        }
        out
    })
}

/// Writes a task from GPU memory: copy chunk N+1 to a pinned buffer while chunk N is written.
/// On error, the result holds the bytes that reached the file; copies may still be in flight
/// (the caller settles the lane).
pub(crate) fn write_from_device(
    job: &Job,
    task: Task,
    lane: &mut Lane,
) -> (TaskResult, Option<Error>) {
    let mut res = TaskResult::default();
    let err = write_chunks(job, task, lane, &mut res).err();
    (res, err)
}

fn write_chunks(job: &Job, task: Task, lane: &mut Lane, res: &mut TaskResult) -> Result<()> {
    let file = job.file();
    let align = direct_align(file);
    let direct = matches!(job.direct, DirectChoice::Always) && file.direct_fd().is_some();
    let mut pending: Option<(usize, *const u8, u64, u64)> = None;
    let mut queued = 0u64;
    let flush =
        |lane: &mut Lane, p: (usize, *const u8, u64, u64), res: &mut TaskResult| -> Result<()> {
            timed(job.clock(), Phase::BufferWait, || lane.stream.wait(p.0))?;
            // SAFETY: the pinned range holds `p.3` bytes copied from the device (waited for above).
            match timed(job.clock(), Phase::FileIo, || unsafe {
                write_range(file, p.1, p.2, p.3, direct, align, job.file_writers)
            }) {
                Ok(d) => {
                    res.direct_bytes += d;
                    res.bytes += p.3;
                    Ok(())
                }
                Err((done, e)) => {
                    res.bytes += done;
                    Err(e)
                }
            }
        };
    while queued < task.len {
        let off = task.offset + queued;
        let (cap, shift) = chunk_geometry(lane, direct, align, off, job.buffered_chunk);
        let n = cap.min(task.len - queued);
        let slot = timed(job.clock(), Phase::BufferWait, || lane.take_slot())?;
        // SAFETY: `shift + n <= buffer size` by `chunk_geometry`; the slot is free.
        let buf = unsafe { lane.buffers[slot].as_mut_ptr().add(shift as usize) };
        let src = job.buf.addr + task.rel + queued;
        timed(job.clock(), Phase::CopyQueue, || -> Result<()> {
            // SAFETY: the device range lies inside the job's buffer; `buf` has room for `n`
            // bytes and is not read before the slot's marker is waited for.
            unsafe { lane.stream.copy_to_host(buf, src, n as usize)? };
            lane.record(slot)?;
            Ok(())
        })?;
        if let Some(p) = pending.take() {
            flush(lane, p, res)?;
        }
        pending = Some((slot, buf as *const u8, off, n));
        queued += n;
    }
    if let Some(p) = pending.take() {
        flush(lane, p, res)?;
    }
    Ok(())
}
