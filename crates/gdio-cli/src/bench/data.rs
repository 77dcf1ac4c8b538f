//! Bench data: page-aligned host buffers, worker threads whose creation can fail, the random
//! bytes of generated files (chunk by chunk, from a seed), plain parallel reads and writes, and
//! digests of 8 MiB chunks, so that verifying never needs a second copy of the data.

use std::alloc::Layout;
use std::fs::File;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rand::{RngCore, SeedableRng};

/// The unit of generation, digests and plain I/O.
pub const CHUNK: usize = 8 << 20;

/// A page-aligned host buffer (usable with `O_DIRECT`).
pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: owns its allocation exclusively.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared references only read.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// `len` bytes, aligned to 4096, contents unspecified until written.
    pub fn new(len: usize) -> Result<AlignedBuf, String> {
        let layout = Layout::from_size_align(len.max(1), 4096).map_err(|e| e.to_string())?;
        // SAFETY: non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            return Err(format!("out of memory allocating {len} bytes"));
        }
        Ok(AlignedBuf { ptr, len })
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: live allocation of `len` bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: live allocation of `len` bytes, exclusively borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// The address of the first byte.
    pub fn addr(&self) -> usize {
        self.ptr as usize
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if let Ok(layout) = Layout::from_size_align(self.len.max(1), 4096) {
            // SAFETY: allocated with this layout in `new`.
            unsafe { std::alloc::dealloc(self.ptr, layout) };
        }
    }
}

/// Runs `f(i)` for `i` in `0..n` on `n` scoped threads. A thread the OS refuses (a pids limit)
/// is an error naming how many started, not a panic; the threads already started finish.
pub fn on_threads<F>(n: usize, f: F) -> Result<(), String>
where
    F: Fn(usize) -> Result<(), String> + Sync,
{
    let n = n.max(1);
    std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(n);
        let mut refused = None;
        for i in 0..n {
            let f = &f;
            match std::thread::Builder::new().spawn_scoped(s, move || f(i)) {
                Ok(h) => handles.push(h),
                Err(e) => {
                    refused = Some(format!(
                        "the system refused thread {} of {n}: {e} (a limit on processes or \
                         threads? use fewer --threads or a smaller --queue-depth)",
                        i + 1
                    ));
                    break;
                }
            }
        }
        let mut first = refused;
        for h in handles {
            let r = h.join().unwrap_or_else(|_| Err("a worker thread panicked".into()));
            if let (None, Err(e)) = (&first, r) {
                first = Some(e);
            }
        }
        first.map_or(Ok(()), Err)
    })
}

/// Runs `f(chunk_index, offset, len)` over `len` bytes in `CHUNK` pieces on `threads` threads;
/// stops at the first error.
pub fn parallel_chunks(
    len: u64,
    threads: usize,
    f: impl Fn(u64, u64, usize) -> Result<(), String> + Sync,
) -> Result<(), String> {
    parallel_chunks_on(len, threads, |_, k, off, n| f(k, off, n))
}

/// [`parallel_chunks`] that also tells `f` which of the `threads` threads (`0..threads`) runs
/// the chunk: `f(thread, chunk_index, offset, len)`.
pub fn parallel_chunks_on(
    len: u64,
    threads: usize,
    f: impl Fn(usize, u64, u64, usize) -> Result<(), String> + Sync,
) -> Result<(), String> {
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    on_threads(threads, |thread| {
        while !stop.load(Ordering::Relaxed) {
            let k = next.fetch_add(1, Ordering::Relaxed);
            let off = k * CHUNK as u64;
            if off >= len {
                break;
            }
            let n = (len - off).min(CHUNK as u64) as usize;
            if let Err(e) = f(thread, k, off, n) {
                stop.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
        Ok(())
    })
}

/// Chunk `k` of the random bytes made from `seed` (each chunk from its own stream, so any
/// chunk can be made again alone).
pub fn generate_chunk(seed: u64, k: u64, out: &mut [u8]) {
    rand::rngs::SmallRng::seed_from_u64(
        seed ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1),
    )
    .fill_bytes(out);
}

/// Fills `buf` with random bytes from `seed` (chunk `k` of `buf` is [`generate_chunk`]`(seed,
/// k)`), in parallel.
pub fn fill_random(buf: &mut [u8], seed: u64, threads: usize) -> Result<(), String> {
    let base = buf.as_mut_ptr() as usize;
    parallel_chunks(buf.len() as u64, threads, |k, off, n| {
        // SAFETY: chunk `k` of `buf`, exclusively borrowed for this call; the chunks of
        // different threads do not overlap.
        let out = unsafe { std::slice::from_raw_parts_mut((base + off as usize) as *mut u8, n) };
        generate_chunk(seed, k, out);
        Ok(())
    })
}

/// The digest of one chunk.
pub fn digest(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

fn os_err(e: i32) -> std::io::Error {
    std::io::Error::from_raw_os_error(e)
}

/// Writes `size` random bytes from `seed` into `file` (`what` names it in errors) with
/// parallel `pwrite`s, one `CHUNK` per thread in memory; returns the digest of every chunk. On
/// an error, says how many bytes reached the file.
pub fn write_generated(
    file: &File,
    what: &str,
    size: u64,
    seed: u64,
    threads: usize,
) -> Result<Vec<u64>, String> {
    let digests: Vec<AtomicU64> =
        (0..size.div_ceil(CHUNK as u64)).map(|_| AtomicU64::new(0)).collect();
    let written = AtomicU64::new(0);
    let r = parallel_chunks(size, threads, |k, off, n| {
        thread_local!(static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) });
        BUF.with(|b| {
            let mut b = b.borrow_mut();
            b.resize(CHUNK, 0);
            let buf = &mut b[..n];
            generate_chunk(seed, k, buf);
            digests[k as usize].store(digest(buf), Ordering::Relaxed);
            match gdio::file::posix::pwrite_all(file.as_fd(), buf, off) {
                Ok(()) => {
                    written.fetch_add(n as u64, Ordering::Relaxed);
                    Ok(())
                }
                Err((done, e)) => {
                    written.fetch_add(done as u64, Ordering::Relaxed);
                    Err(format!("write to {what} at offset {off} failed: {}", os_err(e)))
                }
            }
        })
    });
    if let Err(e) = r {
        return Err(format!("{e} ({} of {size} bytes had reached the file)", written.into_inner()));
    }
    Ok(digests.into_iter().map(AtomicU64::into_inner).collect())
}

/// One `CHUNK` buffer per thread of a plain read, allocated and written once (every page
/// faulted in) before any timed pass, and reused by every pass: a buffer allocated by each
/// pass's threads would time the kernel's page faults and zeroing beside the read (2-core
/// build machine, 4 threads, 1 GiB, `bench/plain-read-scratch-probe.c`: tmpfs 21.8–27.6 GB/s
/// with fresh buffers against 29.6–33.5 with kept ones, the ext4 page cache 24.6–32.3 against
/// 31.6–40.6; huge pages added nothing).
pub struct ReadScratch {
    bufs: Vec<AlignedBuf>,
}

impl ReadScratch {
    /// `threads` buffers of `CHUNK` bytes, every page written.
    pub fn new(threads: usize) -> Result<ReadScratch, String> {
        let bufs = (0..threads.max(1))
            .map(|_| {
                let mut b = AlignedBuf::new(CHUNK)?;
                b.as_mut_slice().fill(0xA5);
                Ok(b)
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(ReadScratch { bufs })
    }
}

/// Where a plain read puts the bytes (kept across passes: `plain_read` borrows it).
pub enum ReadInto<'a> {
    /// Into this memory, the file's bytes at their own offsets (it must hold `len`, rounded up
    /// to 4096 with `O_DIRECT`).
    Memory(&'a mut [u8]),
    /// Into each thread's buffer of the scratch, chunk after chunk (memory stays the same
    /// whatever the size), on as many threads as the scratch has buffers.
    Scratch(ReadScratch),
}

/// Reads the first `len` bytes of `file` with parallel `pread`s of `CHUNK` (the plain read
/// the bench compares gdio with) into `into`, on `threads` threads (with
/// [`ReadInto::Scratch`], the scratch's). With `direct`, `file` must be open with `O_DIRECT`.
/// Returns the bytes read; a file that ends early is an error (its size cannot be trusted).
pub fn plain_read(
    file: &File,
    what: &str,
    len: u64,
    threads: usize,
    direct: bool,
    into: &mut ReadInto<'_>,
) -> Result<u64, String> {
    // O_DIRECT needs an aligned length: read whole blocks, the last one may come up short.
    let whole = |n: u64| if direct { n.div_ceil(4096) * 4096 } else { n };
    // Chunks land at their offsets from `base`, or each in its thread's buffer of `bufs`.
    let (base, bufs, threads) = match into {
        ReadInto::Memory(d) => {
            if whole(len) > d.len() as u64 {
                return Err(format!(
                    "plain read buffer of {} bytes is too small for {len}",
                    d.len()
                ));
            }
            (Some(d.as_mut_ptr() as usize), Vec::new(), threads)
        }
        ReadInto::Scratch(s) => {
            let bufs: Vec<usize> = s.bufs.iter().map(AlignedBuf::addr).collect();
            let n = bufs.len();
            (None, bufs, n)
        }
    };
    let total = AtomicU64::new(0);
    parallel_chunks_on(len, threads, |thread, _, off, n| {
        let want = whole(n as u64) as usize;
        let ptr = match base {
            Some(b) => (b + off as usize) as *mut u8,
            None => bufs[thread] as *mut u8,
        };
        // SAFETY: [ptr, ptr+want) lies in the caller's memory (its length was checked above
        // against `len` rounded as `want` is; chunks start at multiples of CHUNK and do not
        // overlap), or in this thread's own CHUNK-byte scratch buffer (`want` <= CHUNK, a
        // multiple of 4096), which the exclusive borrow of `into` gives this thread alone.
        let got = unsafe { gdio::file::posix::pread_full_raw(file.as_fd(), ptr, want, off) }
            .map_err(|e| format!("read of {what} at offset {off} failed: {}", os_err(e)))?;
        if got < n {
            return Err(format!(
                "{what} ended early: {got} bytes at offset {off} where its size promised {n} (a \
                 file in /proc or /sys, or one truncated meanwhile: its size cannot be trusted)"
            ));
        }
        total.fetch_add(n as u64, Ordering::Relaxed);
        Ok(())
    })?;
    Ok(total.into_inner())
}

/// The digest of every `CHUNK` of the first `len` bytes of `file`, read with parallel
/// `pread`s, one buffer per thread. A file that ends early is an error.
pub fn file_digests(file: &File, what: &str, len: u64, threads: usize) -> Result<Vec<u64>, String> {
    let digests: Vec<AtomicU64> =
        (0..len.div_ceil(CHUNK as u64)).map(|_| AtomicU64::new(0)).collect();
    parallel_chunks(len, threads, |k, off, n| {
        let mut buf = vec![0u8; n];
        let got = gdio::file::posix::pread_full(file.as_fd(), &mut buf, off)
            .map_err(|e| format!("read of {what} at offset {off} failed: {}", os_err(e)))?;
        if got < n {
            return Err(format!(
                "{what} ended early: {got} bytes at offset {off} where its size promised {n} (its \
                 size cannot be trusted)"
            ));
        }
        digests[k as usize].store(digest(&buf), Ordering::Relaxed);
        Ok(())
    })?;
    Ok(digests.into_iter().map(AtomicU64::into_inner).collect())
}

/// The first offset where `a` and `b` differ, or `None` when they are equal.
pub fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    if a.len() != b.len() {
        return Some(a.len().min(b.len()));
    }
    a.chunks(1 << 20).zip(b.chunks(1 << 20)).enumerate().find_map(|(i, (x, y))| {
        (x != y).then(|| i * (1 << 20) + x.iter().zip(y).position(|(p, q)| p != q).unwrap_or(0))
    })
}

/// Drops the page cache (all of it when root, else this file's pages).
pub fn drop_cache(file: &File, what: &str) -> Result<&'static str, String> {
    // SAFETY: sync takes no arguments.
    unsafe { libc::sync() };
    if std::fs::write("/proc/sys/vm/drop_caches", "3\n").is_ok() {
        return Ok("drop_caches");
    }
    // SAFETY: advisory call on a valid descriptor.
    let rc = unsafe {
        libc::posix_fadvise(std::os::fd::AsRawFd::as_raw_fd(file), 0, 0, libc::POSIX_FADV_DONTNEED)
    };
    if rc == 0 {
        Ok("fadvise_dontneed")
    } else {
        Err(format!("cannot drop the page cache of {what}: {}", os_err(rc)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generate_write_read_digest() {
        let f = tempfile::tempfile().unwrap();
        let size = 2 * CHUNK as u64 + 12345;
        let d = write_generated(&f, "f", size, 42, 3).unwrap();
        assert_eq!(d.len(), 3);
        assert_eq!(file_digests(&f, "f", size, 2).unwrap(), d);
        let mut whole = AlignedBuf::new(size.div_ceil(4096) as usize * 4096).unwrap();
        let mut into = ReadInto::Memory(whole.as_mut_slice());
        assert_eq!(plain_read(&f, "f", size, 3, false, &mut into).unwrap(), size);
        let mut c1 = vec![0u8; CHUNK];
        generate_chunk(42, 1, &mut c1);
        assert_eq!(&whole.as_slice()[CHUNK..2 * CHUNK], &c1[..]);
        assert_eq!(digest(&whole.as_slice()[CHUNK..2 * CHUNK]), d[1]);
        assert_ne!(d[0], d[1]);
        // A read past the end is an error, not uninitialised bytes counted as data.
        let mut scratch = ReadInto::Scratch(ReadScratch::new(2).unwrap());
        let e = plain_read(&f, "f", size + 4096, 2, false, &mut scratch).unwrap_err();
        assert!(e.contains("ended early"), "{e}");
        // Into one thread's scratch the chunks come in order: the last one's bytes stay there,
        // and the same buffer serves every pass.
        let mut one = ReadInto::Scratch(ReadScratch::new(1).unwrap());
        let ReadInto::Scratch(s) = &one else { unreachable!() };
        let at = s.bufs[0].addr();
        let tail = whole.as_slice()[2 * CHUNK..size as usize].to_vec();
        for _ in 0..2 {
            assert_eq!(plain_read(&f, "f", size, 4, false, &mut one), Ok(size));
            let ReadInto::Scratch(s) = &one else { unreachable!() };
            assert_eq!(s.bufs[0].addr(), at);
            assert_eq!(&s.bufs[0].as_slice()[..tail.len()], &tail[..]);
        }
        let mut c = c1.clone();
        c[777] ^= 1;
        assert_eq!(first_difference(&c, &c1), Some(777));
    }
}
