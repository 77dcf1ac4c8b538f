//! Anonymous host memory on transparent huge pages, for pinning with `cuMemHostRegister`.
//!
//! Pinning costs a load its warm-up: every worker pins its bounce buffers before the first
//! read. On the H200 machine (2026-11-30, `pinned_alloc_microbench`, BENCHMARKS.md session 5)
//! 96 MiB in 4 MiB buffers took 55 ms through `cuMemHostAlloc` from 12 threads and 11 ms as
//! huge-page memory registered from 12 threads, and host→device copies from either ran at the
//! same 49 GB/s. A region is aligned to 2 MiB so that the kernel can back it with huge pages,
//! never inherited by a child process (`MADV_DONTFORK`: a child of `fork` must not share pages
//! the GPU writes), and faulted in before it is registered.

use std::ffi::c_void;

use rustix::mm::{self, Advice, MapFlags, ProtFlags};

/// The huge page size the alignment targets.
const HUGE: usize = 2 << 20;

/// Maps `len` bytes (rounded up to 4 KiB) of zeroed anonymous memory at a 2 MiB boundary,
/// asks for huge pages, keeps it out of child processes and faults every page in. Returns the
/// address and the mapped length (what [`unmap`] takes).
pub(crate) fn map(len: usize) -> std::io::Result<(*mut u8, usize)> {
    let len = len.max(1).next_multiple_of(4096);
    let span = len + HUGE;
    // SAFETY: a fresh private anonymous mapping of `span` bytes; nothing else refers to it.
    let raw = unsafe {
        mm::mmap_anonymous(
            std::ptr::null_mut(),
            span,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::PRIVATE,
        )
    }?;
    let start = (raw as usize).next_multiple_of(HUGE);
    let head = start - raw as usize;
    let tail = span - head - len;
    // SAFETY: the head and tail lie inside the mapping just made and are not used.
    unsafe {
        if head > 0 {
            mm::munmap(raw, head)?;
        }
        if tail > 0 {
            mm::munmap((start + len) as *mut c_void, tail)?;
        }
    }
    let p = start as *mut c_void;
    // SAFETY: advice on the mapping this function owns. Huge pages are a wish (the kernel may
    // have them off); keeping the pages out of children is not.
    unsafe {
        let _ = mm::madvise(p, len, Advice::LinuxHugepage);
        if let Err(e) = mm::madvise(p, len, Advice::LinuxDontFork) {
            let _ = mm::munmap(p, len);
            return Err(e.into());
        }
    }
    for off in (0..len).step_by(4096) {
        // SAFETY: inside the mapping, which is readable and writable.
        unsafe { p.cast::<u8>().add(off).write_volatile(0) };
    }
    Ok((p.cast(), len))
}

/// Unmaps what [`map`] returned.
///
/// # Safety
/// `(ptr, len)` came from [`map`], is unregistered, and nothing uses it any more.
pub(crate) unsafe fn unmap(ptr: *mut u8, len: usize) {
    // SAFETY: forwarded contract.
    let _ = unsafe { mm::munmap(ptr.cast(), len) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_are_aligned_zeroed_writable_and_sized() {
        for len in [1usize, 4096, 5000, 4 << 20, (4 << 20) + 1] {
            let (p, mapped) = map(len).unwrap();
            assert_eq!(p as usize % HUGE, 0, "{len}: not on a 2 MiB boundary");
            assert!(mapped >= len && mapped % 4096 == 0 && mapped - len < 4096, "{len}: {mapped}");
            // SAFETY: the mapping holds `mapped` bytes, readable and writable.
            let s = unsafe { std::slice::from_raw_parts_mut(p, mapped) };
            assert!(s.iter().all(|&b| b == 0));
            s.iter_mut().enumerate().for_each(|(i, b)| *b = (i % 251) as u8);
            assert!(s.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
            // SAFETY: from `map`, never registered, unused from here on.
            unsafe { unmap(p, mapped) };
        }
    }
}
