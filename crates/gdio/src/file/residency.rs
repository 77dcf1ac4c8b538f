//! How much of a file range is in the page cache: `cachestat(2)` (Linux 6.5+), or `mincore` on
//! a mapping of the range where `cachestat` is missing. Decides buffered vs `O_DIRECT` reads
//! when the direct-I/O policy is `auto`.

use std::os::fd::{AsRawFd, BorrowedFd};

#[repr(C)]
#[derive(Default)]
struct CachestatRange {
    off: u64,
    len: u64,
}

#[repr(C)]
#[derive(Default)]
struct Cachestat {
    nr_cache: u64,
    nr_dirty: u64,
    nr_writeback: u64,
    nr_evicted: u64,
    nr_recently_evicted: u64,
}

#[cfg(target_arch = "x86_64")]
const SYS_CACHESTAT: libc::c_long = 451;
#[cfg(target_arch = "aarch64")]
const SYS_CACHESTAT: libc::c_long = 451;

/// Page-cache residency of a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Residency {
    /// Pages of the range in the page cache.
    pub cached_pages: u64,
    /// Pages in the range.
    pub total_pages: u64,
}

impl Residency {
    /// Fraction of the range that is cached, 0.0 to 1.0 (1.0 for an empty range).
    pub fn fraction(&self) -> f64 {
        if self.total_pages == 0 {
            1.0
        } else {
            self.cached_pages as f64 / self.total_pages as f64
        }
    }
}

fn page_size() -> u64 {
    crate::memory::page_size() as u64
}

/// Residency by `cachestat(2)`; `None` where the kernel lacks it.
fn by_cachestat(fd: BorrowedFd<'_>, offset: u64, len: u64) -> Option<Residency> {
    let range = CachestatRange { off: offset, len };
    let mut cs = Cachestat::default();
    // SAFETY: cachestat reads one `CachestatRange` and writes one `Cachestat`, both live locals
    // with the kernel's layout.
    let rc = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            fd.as_raw_fd(),
            &range as *const CachestatRange,
            &mut cs as *mut Cachestat,
            0u32,
        )
    };
    if rc != 0 {
        return None;
    }
    let ps = page_size();
    let first = offset / ps;
    let last = (offset + len).div_ceil(ps);
    Some(Residency { cached_pages: cs.nr_cache, total_pages: last - first })
}

/// Residency by mapping the range and asking `mincore`.
fn by_mincore(fd: BorrowedFd<'_>, offset: u64, len: u64) -> Option<Residency> {
    let ps = page_size();
    let start = offset / ps * ps;
    let map_len = (offset + len - start).div_ceil(ps) * ps;
    // SAFETY: a fresh shared read-only mapping of the file; nothing else refers to it and it is
    // unmapped below before returning.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            map_len as usize,
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            start as i64,
        )
    };
    if addr == libc::MAP_FAILED {
        return None;
    }
    let pages = (map_len / ps) as usize;
    let mut vec = vec![0u8; pages];
    // SAFETY: `addr` is the mapping made above, `vec` has one byte per page of it.
    let rc = unsafe { libc::mincore(addr, map_len as usize, vec.as_mut_ptr()) };
    // SAFETY: unmapping exactly the mapping made above.
    unsafe { libc::munmap(addr, map_len as usize) };
    if rc != 0 {
        return None;
    }
    let cached = vec.iter().filter(|b| **b & 1 != 0).count() as u64;
    Some(Residency { cached_pages: cached, total_pages: pages as u64 })
}

/// Residency of `[offset, offset+len)` of the file on `fd`, or `None` when neither method works.
pub fn residency(fd: BorrowedFd<'_>, offset: u64, len: u64) -> Option<Residency> {
    if len == 0 {
        return Some(Residency { cached_pages: 0, total_pages: 0 });
    }
    by_cachestat(fd, offset, len).or_else(|| by_mincore(fd, offset, len))
}

/// Residency of `windows` evenly spaced windows of `window` bytes across `[offset, offset +
/// len)` (the first and the last among them), in pages: a cost that does not grow with the
/// range, where [`residency`] walks every page of it (a few milliseconds per GB). A range no
/// longer than the windows together is measured whole. What it says of the pages between the
/// windows is a guess: a file read through once, or never, is all in or all out, and one
/// partly evicted under memory pressure rarely keeps every window.
pub fn sampled(
    fd: BorrowedFd<'_>,
    offset: u64,
    len: u64,
    windows: u64,
    window: u64,
) -> Option<Residency> {
    let ps = page_size();
    let window = window.max(1).next_multiple_of(ps);
    let windows = windows.max(1);
    if len <= windows.saturating_mul(window) {
        return residency(fd, offset, len);
    }
    let mut total = Residency { cached_pages: 0, total_pages: 0 };
    let span = len - window;
    for i in 0..windows {
        let at = if windows == 1 { 0 } else { span / (windows - 1) * i };
        let r = residency(fd, offset + at, window)?;
        total.cached_pages += r.cached_pages;
        total.total_pages += r.total_pages;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn freshly_written_file_is_cached() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, vec![0x5au8; 1 << 20]).unwrap();
        let f = std::fs::File::open(&p).unwrap();
        let r = residency(f.as_fd(), 0, 1 << 20).unwrap();
        assert_eq!(r.total_pages, (1 << 20) / page_size());
        assert!(r.fraction() > 0.99, "{r:?}");
        let m = by_mincore(f.as_fd(), 4096, 8192).unwrap();
        assert_eq!(m.total_pages, 8192 / page_size());
    }

    #[test]
    fn a_sample_sees_a_hole_in_a_window_and_measures_short_ranges_whole() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        let ps = page_size();
        // 64 pages, all written (cached) but the last, a hole.
        // Readable too: where `cachestat` is missing (valgrind knows no such call), `mincore`
        // maps the file for reading.
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&p)
            .unwrap();
        f.set_len(64 * ps).unwrap();
        use std::os::unix::fs::FileExt;
        f.write_all_at(&vec![0x5au8; (63 * ps) as usize], 0).unwrap();
        let r = sampled(f.as_fd(), 0, 64 * ps, 4, ps).unwrap();
        assert_eq!(r.total_pages, 4, "four windows of one page: {r:?}");
        assert_eq!(r.cached_pages, 3, "the last window is the hole: {r:?}");
        // The windows cover the range: measured whole, as `residency`.
        let whole = sampled(f.as_fd(), 0, 64 * ps, 64, ps).unwrap();
        assert_eq!(whole, residency(f.as_fd(), 0, 64 * ps).unwrap());
        assert_eq!(whole.total_pages, 64);
        // A window that is not a whole page is made one.
        assert_eq!(sampled(f.as_fd(), 0, 64 * ps, 2, 100).unwrap().total_pages, 2);
    }
}
