//! Scattered copies on CUDA: one launch of a small kernel (`scatter.ptx`, written by hand,
//! compiled by the driver at load) puts every piece of a gathered group at its destination,
//! instead of a DMA copy per piece, reading the group's host range straight over the link: it
//! must be mapped into the GPU's address space, as gdio's pinned bounce buffers are. (Copying
//! the range into GPU memory first and scattering from there was slower than a copy per
//! piece on the H200: BENCHMARKS.md session 23 run 3.)
//!
//! The kernel module is loaded once per context, on first use.

use std::ffi::c_void;
use std::sync::{Arc, Mutex, Weak};

use cudarc::driver::sys;
use cudarc::driver::CudaContext;

use super::cuda_error::check;
use crate::error::Result;

/// Pieces one launch carries (its descriptors are the kernel's parameters: 16 bytes each).
pub(super) const MAX_PIECES: usize = 64;

/// Threads per block; a block moves one piece, or a share of a large one.
const BLOCK_THREADS: u32 = 256;

/// Bytes one block should move at least before a piece gets another block.
const BYTES_PER_BLOCK: usize = 16 << 10;

/// The most blocks one piece gets.
const MAX_BLOCKS_PER_PIECE: usize = 32;

/// The kernel, NUL-terminated as `cuModuleLoadData` wants PTX text.
static PTX: &str = concat!(include_str!("scatter.ptx"), "\0");

/// One piece: where it goes, where it starts in the group's host range, how long it is. The layout
/// is the kernel's descriptor (`{ u64 dst; u32 src_off; u32 len }`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Desc {
    dst: u64,
    src_off: u32,
    len: u32,
}

/// The kernel of each context once looked for: its function, or `None` when the driver would
/// not load it (then that context's groups go as batched copies). A module lives as long as
/// its context, which lives (retained) as long as the `CudaContext` here does: an entry whose
/// context was dropped is forgotten, since a later context may get the same handle.
type Loaded = (Weak<CudaContext>, Option<usize>);
static FUNCTIONS: Mutex<Vec<Loaded>> = Mutex::new(Vec::new());

/// The scatter kernel of `ctx` (current on this thread), loaded on first use; `None` when the
/// driver refused it (said once per context, in the log).
pub(super) fn function(ctx: &Arc<CudaContext>) -> Option<sys::CUfunction> {
    let mut loaded = FUNCTIONS.lock().unwrap_or_else(|e| e.into_inner());
    loaded.retain(|(c, _)| c.strong_count() > 0);
    if let Some((_, f)) = loaded.iter().find(|(c, _)| std::ptr::eq(c.as_ptr(), Arc::as_ptr(ctx))) {
        return f.map(|f| f as sys::CUfunction);
    }
    let f = match load() {
        Ok(f) => Some(f),
        Err(e) => {
            tracing::warn!(error = %e, "scattered copies unavailable; gathered reads go as batched copies");
            None
        }
    };
    loaded.push((Arc::downgrade(ctx), f.map(|f| f as usize)));
    f
}

/// Loads the module into the current context and finds the kernel.
fn load() -> Result<sys::CUfunction> {
    let mut module: sys::CUmodule = std::ptr::null_mut();
    // SAFETY: `PTX` is NUL-terminated PTX text; writes one module handle; the context is
    // current (the caller bound it).
    let r = unsafe { sys::cuModuleLoadData(&mut module, PTX.as_ptr().cast()) };
    check(r, "cuModuleLoadData (gdio's scatter kernel)")?;
    let mut f: sys::CUfunction = std::ptr::null_mut();
    // SAFETY: the module was just loaded; the name is NUL-terminated.
    let r = unsafe { sys::cuModuleGetFunction(&mut f, module, c"gdio_scatter".as_ptr()) };
    check(r, "cuModuleGetFunction (gdio_scatter)")?;
    Ok(f)
}

/// The device address of host memory at `src`, where the driver mapped it (pinned memory
/// registered or allocated with `DEVICEMAP`); `None` for any other memory.
fn mapped(src: *const u8) -> Option<u64> {
    let mut dev: sys::CUdeviceptr = 0;
    // SAFETY: writes one device pointer; fails (harmlessly) for memory the driver did not map.
    let r = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dev, src as *mut c_void, 0) };
    (r == sys::CUresult::CUDA_SUCCESS && dev != 0).then_some(dev)
}

/// Queues on `stream` (its context current, `f` its [`function`]) the kernel launches that put
/// each `(dst, offset in src, len)` piece of the `len` host bytes at `src` at `dst`, the kernel
/// reading `src` in place. Returns false, having queued nothing, when the driver has not
/// mapped `src` into the GPU's address space (then the caller copies the pieces).
///
/// # Safety
/// `src` must be valid for reads of `len` bytes and each piece's `dst` a device range of its
/// length, all until the stream has run past this work; every piece must lie inside `len`
/// (checked by [`super::check_pieces`]).
pub(super) unsafe fn queue(
    f: sys::CUfunction,
    stream: sys::CUstream,
    src: *const u8,
    pieces: &[(u64, u32, u32)],
) -> Result<bool> {
    let Some(base) = mapped(src) else { return Ok(false) };
    for group in pieces.chunks(MAX_PIECES) {
        let mut descs = [Desc::default(); MAX_PIECES];
        let mut longest = 0usize;
        for (d, &(dst, src_off, n)) in descs.iter_mut().zip(group) {
            *d = Desc { dst, src_off, len: n };
            longest = longest.max(n as usize);
        }
        let mut base_arg: u64 = base;
        let mut count: u32 = group.len() as u32;
        let mut params: [*mut c_void; 3] = [
            (&mut base_arg as *mut u64).cast(),
            (&mut count as *mut u32).cast(),
            descs.as_mut_ptr().cast(),
        ];
        let blocks = longest.div_ceil(BYTES_PER_BLOCK).clamp(1, MAX_BLOCKS_PER_PIECE) as u32;
        // SAFETY: the kernel takes (u64, u32, 1024-byte descriptor array), which `params`
        // points at (copied by the launch); the pieces' ranges are valid per the contract and
        // the source bytes are in place before the kernel runs (same stream, in order).
        let r = unsafe {
            sys::cuLaunchKernel(
                f,
                count,
                blocks,
                1,
                BLOCK_THREADS,
                1,
                1,
                0,
                stream,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        check(r, "cuLaunchKernel (gdio_scatter)")?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_text_declares_what_the_launch_passes() {
        assert_eq!(std::mem::size_of::<Desc>(), 16, "the kernel reads 16-byte descriptors");
        let body = PTX.strip_suffix('\0').expect("NUL-terminated");
        assert!(!body.contains('\0'), "one NUL, at the end");
        assert!(body.contains(".visible .entry gdio_scatter("));
        assert!(body.contains(".param .u64 source,"));
        assert!(body.contains(".param .u32 count,"));
        let descs = format!(".param .align 8 .b8 descs[{}]", MAX_PIECES * 16);
        assert!(body.contains(&descs), "the kernel's descriptor array is not {descs}");
    }

    /// NVIDIA's assembler accepts the kernel for the oldest and newest targets gdio runs on
    /// (the driver compiles the same text at load). `.ci/run` fetches `ptxas` and names it in
    /// `GDIO_PTXAS`; elsewhere one on `PATH` is used, or the test says it skipped.
    #[test]
    fn ptxas_assembles_the_kernel() {
        let ptxas = std::env::var_os("GDIO_PTXAS").map(std::path::PathBuf::from).or_else(|| {
            std::env::split_paths(&std::env::var_os("PATH")?)
                .map(|d| d.join("ptxas"))
                .find(|p| p.is_file())
        });
        let Some(ptxas) = ptxas else {
            eprintln!("SKIPPED: no ptxas (set GDIO_PTXAS; .ci/run fetches one)");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("scatter.ptx");
        std::fs::write(&src, PTX.trim_end_matches('\0')).unwrap();
        let mut assembled = Vec::new();
        for arch in ["sm_70", "sm_80", "sm_90"] {
            let out = std::process::Command::new(&ptxas)
                .arg(format!("-arch={arch}"))
                .arg(&src)
                .arg("-o")
                .arg(dir.path().join(format!("{arch}.cubin")))
                .output()
                .unwrap_or_else(|e| panic!("cannot run {}: {e}", ptxas.display()));
            let stderr = String::from_utf8_lossy(&out.stderr);
            // CUDA 13's ptxas no longer targets Volta (the driver still compiles the text for
            // it): a target this ptxas does not know is not a fault of the kernel.
            if !out.status.success() && stderr.contains("is not defined for option 'gpu-name'") {
                eprintln!("this ptxas does not target {arch}: {stderr}");
                continue;
            }
            assert!(out.status.success(), "ptxas -arch={arch} refused the kernel: {stderr}");
            assembled.push(arch);
        }
        assert!(assembled.contains(&"sm_90"), "sm_90 not assembled: {assembled:?}");
    }
}
