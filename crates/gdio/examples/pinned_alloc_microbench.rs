//! Microbenchmark of making pinned host memory on GPU 0: what the engine's bounce buffers cost
//! to set up (a load's warm-up pins `threads × bounce_buffers_per_thread` buffers before its
//! first read), and whether the memory each way is as fast to copy from.
//!
//! `cargo run --release -p gdio --example pinned_alloc_microbench --`
//! `[TOTAL_MIB] [PIECE_MIB] [THREADS]`
//!
//! Ways, each making TOTAL_MIB (default 96) in pieces of PIECE_MIB (default 4):
//! `hostalloc` (`cuMemHostAlloc`, PORTABLE, one call per piece, one thread), `hostalloc-par`
//! (the same from THREADS threads at once, default 12, as the workers' warm-up does),
//! `hostalloc-one` (one call for the whole, sliced), `register-thp` (one anonymous mapping
//! with transparent huge pages asked for, touched, then one `cuMemHostRegister`),
//! `register-4k` (the same with huge pages refused), `register-thp-par` (each of THREADS
//! threads maps and registers its share). Prints milliseconds to make the memory, to free
//! it, and the host→device copy rate from it (PIECE_MIB copies, 4 passes).

use std::ffi::c_void;
use std::time::Instant;

use cudarc::driver::sys;

fn check(r: sys::CUresult, what: &str) {
    if r != sys::CUresult::CUDA_SUCCESS {
        eprintln!("{what}: {r:?}");
        std::process::exit(1);
    }
}

/// A made region: where it is, and how to undo it.
struct Region {
    ptr: *mut u8,
    len: usize,
    kind: Kind,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    HostAlloc,
    Registered,
}

// SAFETY: a region is plain memory handed between the threads that make and copy it.
unsafe impl Send for Region {}

fn host_alloc(len: usize) -> Region {
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: writes one pointer.
    check(unsafe { sys::cuMemHostAlloc(&mut p, len, sys::CU_MEMHOSTALLOC_PORTABLE) }, "alloc");
    Region { ptr: p.cast(), len, kind: Kind::HostAlloc }
}

fn register(len: usize, huge: bool) -> Region {
    // SAFETY: a fresh private anonymous mapping; checked below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert!(p != libc::MAP_FAILED, "mmap of {len} bytes");
    let advice = if huge { libc::MADV_HUGEPAGE } else { libc::MADV_NOHUGEPAGE };
    // SAFETY: advice on the mapping just made.
    unsafe { libc::madvise(p, len, advice) };
    // Touch every page so that registering finds them present.
    for off in (0..len).step_by(4096) {
        // SAFETY: inside the mapping.
        unsafe { p.cast::<u8>().add(off).write_volatile(1) };
    }
    // SAFETY: the range stays mapped until unregistered in `free`.
    check(unsafe { sys::cuMemHostRegister_v2(p, len, sys::CU_MEMHOSTREGISTER_PORTABLE) }, "reg");
    Region { ptr: p.cast(), len, kind: Kind::Registered }
}

fn free(r: Region) {
    match r.kind {
        // SAFETY: from cuMemHostAlloc, freed once.
        Kind::HostAlloc => unsafe {
            sys::cuMemFreeHost(r.ptr.cast());
        },
        // SAFETY: registered and mapped by `register`, undone once.
        Kind::Registered => unsafe {
            sys::cuMemHostUnregister(r.ptr.cast());
            libc::munmap(r.ptr.cast(), r.len);
        },
    }
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let total = args.first().copied().unwrap_or(96) << 20;
    let piece = args.get(1).copied().unwrap_or(4) << 20;
    let threads = args.get(2).copied().unwrap_or(12);
    let mut ctx: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: plain driver calls with out-pointers.
    unsafe {
        check(sys::cuInit(0), "cuInit");
        let mut dev = 0;
        check(sys::cuDeviceGet(&mut dev, 0), "cuDeviceGet");
        check(sys::cuDevicePrimaryCtxRetain(&mut ctx, dev), "retain");
        check(sys::cuCtxSetCurrent(ctx), "set current");
    }
    let mut dst: sys::CUdeviceptr = 0;
    // SAFETY: writes one device pointer.
    check(unsafe { sys::cuMemAlloc_v2(&mut dst, piece) }, "cuMemAlloc");
    let ways = [
        "hostalloc",
        "hostalloc-par",
        "hostalloc-one",
        "register-thp",
        "register-4k",
        "register-thp-par",
    ];
    println!("{total} bytes in pieces of {piece}, {threads} threads for the parallel ways");
    println!(
        "{:<18} {:>10} {:>10} {:>10} {:>10}",
        "way", "make ms", "free ms", "H2D GB/s", "D2H GB/s"
    );
    for way in ways {
        let t = Instant::now();
        let regions: Vec<Region> = match way {
            "hostalloc" => (0..total / piece).map(|_| host_alloc(piece)).collect(),
            "hostalloc-one" => vec![host_alloc(total)],
            "register-thp" => vec![register(total, true)],
            "register-4k" => vec![register(total, false)],
            _ => std::thread::scope(|s| {
                let ctx_addr = ctx as usize;
                let hs: Vec<_> = (0..threads)
                    .map(|_| {
                        s.spawn(move || {
                            // SAFETY: makes the primary context (alive all along) current here.
                            unsafe { sys::cuCtxSetCurrent(ctx_addr as sys::CUcontext) };
                            let share = (total / threads).max(piece);
                            if way == "hostalloc-par" {
                                (0..share / piece).map(|_| host_alloc(piece)).collect::<Vec<_>>()
                            } else {
                                vec![register(share, true)]
                            }
                        })
                    })
                    .collect();
                hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
            }),
        };
        let make = t.elapsed().as_secs_f64() * 1e3;
        // Copy rates: every piece of every region to the device and back, 4 passes each.
        let mut rates = [0.0f64; 2];
        for (way, rate) in rates.iter_mut().enumerate() {
            let t = Instant::now();
            let mut bytes = 0usize;
            for _ in 0..4 {
                for r in &regions {
                    for off in (0..r.len).step_by(piece) {
                        let n = piece.min(r.len - off);
                        // SAFETY: the host range lies inside the region, the device one holds
                        // `piece` bytes.
                        let res = unsafe {
                            if way == 0 {
                                sys::cuMemcpyHtoD_v2(dst, r.ptr.add(off).cast(), n)
                            } else {
                                sys::cuMemcpyDtoH_v2(r.ptr.add(off).cast(), dst, n)
                            }
                        };
                        check(res, "cuMemcpy");
                        bytes += n;
                    }
                }
            }
            *rate = bytes as f64 / t.elapsed().as_secs_f64() / 1e9;
        }
        let t = Instant::now();
        regions.into_iter().for_each(free);
        let freed = t.elapsed().as_secs_f64() * 1e3;
        println!("{way:<18} {make:>10.2} {freed:>10.2} {:>10.2} {:>10.2}", rates[0], rates[1]);
    }
}
