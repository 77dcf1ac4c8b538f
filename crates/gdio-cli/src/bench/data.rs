//! Bench data: page-aligned host buffers, parallel random fill, parallel plain file reads and
//! writes, and byte-for-byte comparison.

use std::alloc::Layout;
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rand::{RngCore, SeedableRng};

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
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if let Ok(layout) = Layout::from_size_align(self.len.max(1), 4096) {
            // SAFETY: allocated with this layout in `new`.
            unsafe { std::alloc::dealloc(self.ptr, layout) };
        }
    }
}

const CHUNK: usize = 8 << 20;

/// Fills `buf` with random bytes from `seed`, in parallel.
pub fn fill_random(buf: &mut [u8], seed: u64, threads: usize) {
    let chunks: Vec<(usize, &mut [u8])> = buf.chunks_mut(CHUNK).enumerate().collect();
    let per = chunks.len().div_ceil(threads.max(1)).max(1);
    let mut groups: Vec<Vec<(usize, &mut [u8])>> = Vec::new();
    let mut it = chunks.into_iter();
    loop {
        let g: Vec<_> = it.by_ref().take(per).collect();
        if g.is_empty() {
            break;
        }
        groups.push(g);
    }
    std::thread::scope(|s| {
        for g in groups {
            s.spawn(move || {
                for (i, c) in g {
                    let mut rng = rand::rngs::SmallRng::seed_from_u64(
                        seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                    );
                    rng.fill_bytes(c);
                }
            });
        }
    });
}

/// Runs `f(offset, len)` over `len` bytes in `CHUNK` pieces on `threads` threads.
fn parallel_chunks(
    len: u64,
    threads: usize,
    f: impl Fn(u64, usize) -> Result<(), String> + Sync,
) -> Result<(), String> {
    let next = AtomicU64::new(0);
    let err = std::sync::Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let off = next.fetch_add(CHUNK as u64, Ordering::Relaxed);
                if off >= len {
                    break;
                }
                let n = (len - off).min(CHUNK as u64) as usize;
                if let Err(e) = f(off, n) {
                    *err.lock().unwrap() = Some(e);
                    break;
                }
            });
        }
    });
    match err.into_inner().unwrap() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn create(path: &Path) -> Result<std::fs::File, String> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))
}

fn write_at(f: &std::fs::File, path: &Path, data: &[u8], off: u64) -> Result<(), String> {
    gdio::file::posix::pwrite_all(f.as_fd(), data, off).map_err(|(_, e)| {
        format!("write to {} failed: {}", path.display(), std::io::Error::from_raw_os_error(e))
    })
}

/// Writes `data` to `path` (created or truncated) with parallel `pwrite`s.
pub fn write_file(path: &Path, data: &[u8], threads: usize) -> Result<(), String> {
    let f = create(path)?;
    f.set_len(data.len() as u64).map_err(|e| format!("cannot size {}: {e}", path.display()))?;
    parallel_chunks(data.len() as u64, threads, |off, n| {
        write_at(&f, path, &data[off as usize..off as usize + n], off)
    })
}

/// Writes `size` random bytes from `seed` to `path` (created or truncated), 256 MiB at a time,
/// each piece filled in parallel; memory use stays at one piece whatever the size.
pub fn make_random_file(path: &Path, size: u64, seed: u64) -> Result<(), String> {
    let f = create(path)?;
    let chunk = 256u64 << 20;
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(4);
    let mut buf = vec![0u8; chunk.min(size.max(1)) as usize];
    let mut off = 0u64;
    while off < size {
        let n = (size - off).min(chunk) as usize;
        fill_random(&mut buf[..n], seed ^ (off / chunk).wrapping_mul(0x9E37_79B9), threads);
        write_at(&f, path, &buf[..n], off)?;
        off += n as u64;
    }
    Ok(())
}

/// Reads the first `len` bytes of `path` into `buf` with parallel `pread`s (with `O_DIRECT`
/// when `direct`; then `buf` must hold `len` rounded up to 4096); the plain parallel read the
/// bench compares gdio with. Returns the bytes read.
pub fn plain_read(
    path: &Path,
    buf: &mut [u8],
    len: u64,
    threads: usize,
    direct: bool,
) -> Result<u64, String> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    let f = o.open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let cap = buf.len();
    if (direct && (len.div_ceil(4096) * 4096) as usize > cap) || len as usize > cap {
        return Err(format!("plain read buffer of {cap} bytes is too small for {len}"));
    }
    let base = buf.as_mut_ptr() as usize;
    let total = AtomicU64::new(0);
    parallel_chunks(len, threads, |off, n| {
        // O_DIRECT needs an aligned length: read whole blocks, the last one may come up short.
        let want = if direct { n.div_ceil(4096) * 4096 } else { n };
        // SAFETY: [off, off+want) is inside `buf` (checked above: chunks start at multiples of
        // 4096 and `cap` covers the rounded length); chunks do not overlap.
        let got = unsafe {
            gdio::file::posix::pread_full_raw(
                f.as_fd(),
                (base + off as usize) as *mut u8,
                want,
                off,
            )
        }
        .map_err(|e| {
            format!("read of {} failed: {}", path.display(), std::io::Error::from_raw_os_error(e))
        })?;
        total.fetch_add(got.min(n) as u64, Ordering::Relaxed);
        Ok(())
    })?;
    Ok(total.into_inner())
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
pub fn drop_cache(path: &Path) -> Result<&'static str, String> {
    // SAFETY: sync takes no arguments.
    unsafe { libc::sync() };
    if std::fs::write("/proc/sys/vm/drop_caches", "3\n").is_ok() {
        return Ok("drop_caches");
    }
    let f =
        std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    // SAFETY: advisory call on a valid descriptor.
    let rc = unsafe {
        libc::posix_fadvise(std::os::fd::AsRawFd::as_raw_fd(&f), 0, 0, libc::POSIX_FADV_DONTNEED)
    };
    if rc == 0 {
        Ok("fadvise_dontneed")
    } else {
        Err(format!(
            "cannot drop the page cache of {}: {}",
            path.display(),
            std::io::Error::from_raw_os_error(rc)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_write_read_compare() {
        let mut a = AlignedBuf::new(20 << 20).unwrap();
        fill_random(a.as_mut_slice(), 42, 3);
        assert!(a.as_slice().iter().any(|&b| b != 0));
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        write_file(&p, a.as_slice(), 3).unwrap();
        let mut b = AlignedBuf::new(20 << 20).unwrap();
        assert_eq!(plain_read(&p, b.as_mut_slice(), 20 << 20, 3, false).unwrap(), 20 << 20);
        assert_eq!(plain_read(&p, b.as_mut_slice(), 20 << 20, 3, true).unwrap(), 20 << 20);
        assert_eq!(first_difference(a.as_slice(), b.as_slice()), None);
        b.as_mut_slice()[12345] ^= 1;
        assert_eq!(first_difference(a.as_slice(), b.as_slice()), Some(12345));
    }
}
