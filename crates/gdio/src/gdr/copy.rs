//! Copy routines between host memory and a CPU mapping of GPU memory.
//!
//! A write-combining (WC) mapping of the GPU BAR is uncached MMIO: stores are merged in the
//! CPU's WC buffers into PCIe writes, loads are single uncached reads. The routines here
//! follow GDRCopy 2.6's plan, always aligning the *mapping-side* pointer:
//!
//! 1. the unaligned head (and anything under 16 bytes) is copied with naturally aligned 1, 2,
//!    4 or 8-byte accesses (the width is the largest power of two the address allows);
//! 2. the aligned body goes through 32-byte (AVX/AVX2) and 16-byte (SSE) vector accesses:
//!    non-temporal stores (`movntdq`, `vmovntdq`) towards the mapping, streaming loads
//!    (`movntdqa`, SSE4.1 / AVX2) out of it;
//! 3. the tail again with naturally aligned small accesses;
//! 4. a closing `sfence` (or `mfence` when several mapping types are live in the process).
//!
//! The to-direction never reads the mapping. CPU features are detected at run time; the
//! [`CopyImpl::Scalar`] fallback (aligned 8-byte volatile accesses) runs on every CPU and
//! architecture.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::MappingType;

/// One implementation of the copy routines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CopyImpl {
    /// Naturally aligned volatile accesses of at most 8 bytes; runs everywhere.
    Scalar,
    /// 16-byte non-temporal stores (SSE2) and 16-byte streaming loads (SSE4.1 `movntdqa`).
    Sse41,
    /// Adds 32-byte non-temporal stores (AVX) and 32-byte streaming loads (AVX2).
    Avx2,
}

impl CopyImpl {
    /// Short name, as printed by the tools.
    pub fn name(self) -> &'static str {
        match self {
            CopyImpl::Scalar => "scalar",
            CopyImpl::Sse41 => "sse4.1",
            CopyImpl::Avx2 => "avx2",
        }
    }

    /// Whether this CPU can run the implementation.
    pub fn is_supported(self) -> bool {
        match self {
            CopyImpl::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            CopyImpl::Sse41 => std::arch::is_x86_feature_detected!("sse4.1"),
            #[cfg(target_arch = "x86_64")]
            CopyImpl::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("avx")
                    && std::arch::is_x86_feature_detected!("sse4.1")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// Every implementation this CPU can run, slowest first.
    pub fn available() -> Vec<CopyImpl> {
        [CopyImpl::Scalar, CopyImpl::Sse41, CopyImpl::Avx2]
            .into_iter()
            .filter(|i| i.is_supported())
            .collect()
    }

    /// The implementation used by default: the widest one the CPU has (detected once).
    pub fn best() -> CopyImpl {
        static BEST: OnceLock<CopyImpl> = OnceLock::new();
        *BEST.get_or_init(|| CopyImpl::available().into_iter().last().unwrap_or(CopyImpl::Scalar))
    }
}

/// Live mappings per [`MappingType`], to decide between `sfence` and `mfence`.
static LIVE_MAPPINGS: [AtomicUsize; 4] = [const { AtomicUsize::new(0) }; 4];

/// Records that a mapping of `ty` was created.
pub(crate) fn mapping_created(ty: MappingType) {
    LIVE_MAPPINGS[ty as usize].fetch_add(1, Ordering::Relaxed);
}

/// Records that a mapping of `ty` was removed.
pub(crate) fn mapping_removed(ty: MappingType) {
    LIVE_MAPPINGS[ty as usize].fetch_sub(1, Ordering::Relaxed);
}

fn has_mixed_mappings() -> bool {
    LIVE_MAPPINGS[1..].iter().filter(|c| c.load(Ordering::Relaxed) > 0).count() > 1
}

/// A piece of a copy, as planned by [`plan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Naturally aligned accesses of 1 to 8 bytes.
    Small,
    /// 16-byte vector accesses; the mapping pointer is 16-aligned, the length a multiple of 16.
    V16,
    /// 32-byte vector accesses; the mapping pointer is 32-aligned, the length a multiple of 32.
    V32,
}

/// Splits a copy of `len` bytes at mapping address `dev` into steps (at most six).
fn plan(imp: CopyImpl, dev: usize, len: usize) -> impl Iterator<Item = (Step, usize, usize)> {
    let mut steps = [(Step::Small, 0usize, 0usize); 6];
    let mut n = 0;
    let mut push = |s: Step, off: usize, l: usize| {
        if l > 0 {
            steps[n] = (s, off, l);
            n += 1;
        }
    };
    if imp == CopyImpl::Scalar || len < 16 {
        push(Step::Small, 0, len);
    } else {
        let head = (16 - dev % 16) % 16;
        push(Step::Small, 0, head);
        let mut off = head;
        let mut rem = len - head;
        if imp == CopyImpl::Avx2 {
            if rem >= 16 && (dev + off) % 32 == 16 {
                push(Step::V16, off, 16);
                off += 16;
                rem -= 16;
            }
            let bulk = rem & !31;
            push(Step::V32, off, bulk);
            off += bulk;
            rem -= bulk;
        }
        let bulk = rem & !15;
        push(Step::V16, off, bulk);
        off += bulk;
        rem -= bulk;
        push(Step::Small, off, rem);
    }
    steps.into_iter().take(n)
}

/// Copies `len` bytes from host memory `src` into a mapping at `dst` with `imp`, then fences.
///
/// # Safety
/// `dst` must be valid for `len` bytes of writes and `src` for `len` bytes of reads, the two
/// must not overlap, and `imp` must be supported by this CPU ([`CopyImpl::is_supported`]).
pub unsafe fn copy_to_mapping_with(
    imp: CopyImpl,
    ty: MappingType,
    dst: *mut u8,
    src: *const u8,
    len: usize,
) {
    if len == 0 {
        return;
    }
    match ty {
        MappingType::Caching => {
            // SAFETY: the caller guarantees both ranges are valid and disjoint.
            unsafe { std::ptr::copy_nonoverlapping(src, dst, len) }
        }
        MappingType::Device => {
            // SAFETY: as above; small_to only issues naturally aligned accesses.
            unsafe { small_to(dst, src, len) }
        }
        MappingType::Wc | MappingType::None => {
            for (step, off, l) in plan(imp, dst as usize, len) {
                // SAFETY: each step is inside [0, len); plan() guarantees the alignment and
                // length each vector routine needs; the caller guarantees `imp` is supported.
                unsafe {
                    let (d, s) = (dst.add(off), src.add(off));
                    match step {
                        Step::Small => small_to(d, s, l),
                        Step::V16 => vector::store16(d, s, l),
                        Step::V32 => vector::store32(d, s, l),
                    }
                }
            }
        }
    }
    fence(ty);
}

/// Copies `len` bytes from a mapping at `src` into host memory `dst` with `imp`, then fences.
///
/// # Safety
/// Same contract as [`copy_to_mapping_with`], with `src` the mapping side.
pub unsafe fn copy_from_mapping_with(
    imp: CopyImpl,
    ty: MappingType,
    dst: *mut u8,
    src: *const u8,
    len: usize,
) {
    if len == 0 {
        return;
    }
    match ty {
        MappingType::Caching => {
            // SAFETY: the caller guarantees both ranges are valid and disjoint.
            unsafe { std::ptr::copy_nonoverlapping(src, dst, len) }
        }
        MappingType::Device => {
            // SAFETY: as above; small_from only issues naturally aligned accesses.
            unsafe { small_from(dst, src, len) }
        }
        MappingType::Wc | MappingType::None => {
            for (step, off, l) in plan(imp, src as usize, len) {
                // SAFETY: see copy_to_mapping_with.
                unsafe {
                    let (d, s) = (dst.add(off), src.add(off));
                    match step {
                        Step::Small => small_from(d, s, l),
                        Step::V16 => vector::load16(d, s, l),
                        Step::V32 => vector::load32(d, s, l),
                    }
                }
            }
        }
    }
    fence(ty);
}

/// [`copy_to_mapping_with`] using [`CopyImpl::best`].
///
/// # Safety
/// As [`copy_to_mapping_with`].
pub unsafe fn copy_to_mapping(ty: MappingType, dst: *mut u8, src: *const u8, len: usize) {
    // SAFETY: forwarded contract; best() is supported by construction.
    unsafe { copy_to_mapping_with(CopyImpl::best(), ty, dst, src, len) }
}

/// [`copy_from_mapping_with`] using [`CopyImpl::best`].
///
/// # Safety
/// As [`copy_from_mapping_with`].
pub unsafe fn copy_from_mapping(ty: MappingType, dst: *mut u8, src: *const u8, len: usize) {
    // SAFETY: forwarded contract; best() is supported by construction.
    unsafe { copy_from_mapping_with(CopyImpl::best(), ty, dst, src, len) }
}

fn fence(ty: MappingType) {
    if has_mixed_mappings() {
        std::sync::atomic::fence(Ordering::SeqCst);
        return;
    }
    if matches!(ty, MappingType::Wc | MappingType::None) {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        // SAFETY: sfence has no memory-safety preconditions; SSE is baseline on x86-64.
        unsafe {
            core::arch::x86_64::_mm_sfence()
        }
        // (Miri has no sfence; it models no write-combining either.)
        #[cfg(any(not(target_arch = "x86_64"), miri))]
        std::sync::atomic::fence(Ordering::SeqCst);
    }
}

/// Width of the next naturally aligned access at `addr` with `rem` bytes left.
#[inline(always)]
fn width(addr: usize, rem: usize) -> usize {
    if addr % 8 == 0 && rem >= 8 {
        8
    } else if addr % 4 == 0 && rem >= 4 {
        4
    } else if addr % 2 == 0 && rem >= 2 {
        2
    } else {
        1
    }
}

/// Host → mapping with naturally aligned volatile stores; never loads from `dst`.
///
/// # Safety
/// `dst` valid for `len` writes, `src` valid for `len` reads.
unsafe fn small_to(dst: *mut u8, src: *const u8, len: usize) {
    let mut i = 0;
    while i < len {
        let w = width(dst as usize + i, len - i);
        // SAFETY: i + w <= len; the mapping side is aligned to w by width(); the host side
        // is read unaligned.
        unsafe {
            let (d, s) = (dst.add(i), src.add(i));
            match w {
                8 => std::ptr::write_volatile(
                    d as *mut u64,
                    std::ptr::read_unaligned(s as *const u64),
                ),
                4 => std::ptr::write_volatile(
                    d as *mut u32,
                    std::ptr::read_unaligned(s as *const u32),
                ),
                2 => std::ptr::write_volatile(
                    d as *mut u16,
                    std::ptr::read_unaligned(s as *const u16),
                ),
                _ => std::ptr::write_volatile(d, *s),
            }
        }
        i += w;
    }
}

/// Mapping → host with naturally aligned volatile loads.
///
/// # Safety
/// `dst` valid for `len` writes, `src` valid for `len` reads.
unsafe fn small_from(dst: *mut u8, src: *const u8, len: usize) {
    let mut i = 0;
    while i < len {
        let w = width(src as usize + i, len - i);
        // SAFETY: i + w <= len; the mapping side is aligned to w; the host side is written
        // unaligned.
        unsafe {
            let (d, s) = (dst.add(i), src.add(i));
            match w {
                8 => std::ptr::write_unaligned(
                    d as *mut u64,
                    std::ptr::read_volatile(s as *const u64),
                ),
                4 => std::ptr::write_unaligned(
                    d as *mut u32,
                    std::ptr::read_volatile(s as *const u32),
                ),
                2 => std::ptr::write_unaligned(
                    d as *mut u16,
                    std::ptr::read_volatile(s as *const u16),
                ),
                _ => *d = std::ptr::read_volatile(s),
            }
        }
        i += w;
    }
}

#[cfg(target_arch = "x86_64")]
mod vector {
    use core::arch::x86_64::*;

    /// 16-byte non-temporal stores.
    ///
    /// # Safety
    /// `dst` 16-aligned and valid for `n` writes, `src` valid for `n` reads, `n % 16 == 0`.
    #[target_feature(enable = "sse2")]
    pub unsafe fn store16(dst: *mut u8, src: *const u8, n: usize) {
        debug_assert!(dst as usize % 16 == 0 && n % 16 == 0);
        let mut i = 0;
        while i < n {
            // SAFETY: caller contract; loadu accepts any host alignment.
            unsafe {
                let v = _mm_loadu_si128(src.add(i) as *const __m128i);
                #[cfg(not(miri))]
                _mm_stream_si128(dst.add(i) as *mut __m128i, v);
                // Miri runs no inline assembly (these intrinsics' bodies): an aligned access
                // with the same alignment contract stands in.
                #[cfg(miri)]
                _mm_store_si128(dst.add(i) as *mut __m128i, v);
            }
            i += 16;
        }
    }

    /// 32-byte non-temporal stores.
    ///
    /// # Safety
    /// `dst` 32-aligned and valid for `n` writes, `src` valid for `n` reads, `n % 32 == 0`,
    /// and the CPU has AVX.
    #[target_feature(enable = "avx")]
    pub unsafe fn store32(dst: *mut u8, src: *const u8, n: usize) {
        debug_assert!(dst as usize % 32 == 0 && n % 32 == 0);
        let mut i = 0;
        while i < n {
            // SAFETY: caller contract.
            unsafe {
                let v = _mm256_loadu_si256(src.add(i) as *const __m256i);
                #[cfg(not(miri))]
                _mm256_stream_si256(dst.add(i) as *mut __m256i, v);
                #[cfg(miri)]
                _mm256_store_si256(dst.add(i) as *mut __m256i, v);
            }
            i += 32;
        }
    }

    /// 16-byte streaming loads (`movntdqa`) into registers, stored to the host unaligned.
    ///
    /// # Safety
    /// `src` 16-aligned and valid for `n` reads, `dst` valid for `n` writes, `n % 16 == 0`,
    /// and the CPU has SSE4.1.
    #[target_feature(enable = "sse4.1")]
    pub unsafe fn load16(dst: *mut u8, src: *const u8, n: usize) {
        debug_assert!(src as usize % 16 == 0 && n % 16 == 0);
        let mut i = 0;
        while i < n {
            // SAFETY: caller contract.
            unsafe {
                #[cfg(not(miri))]
                let v = _mm_stream_load_si128(src.add(i) as *const __m128i);
                #[cfg(miri)]
                let v = _mm_load_si128(src.add(i) as *const __m128i);
                _mm_storeu_si128(dst.add(i) as *mut __m128i, v);
            }
            i += 16;
        }
    }

    /// 32-byte streaming loads (`vmovntdqa`).
    ///
    /// # Safety
    /// `src` 32-aligned and valid for `n` reads, `dst` valid for `n` writes, `n % 32 == 0`,
    /// and the CPU has AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn load32(dst: *mut u8, src: *const u8, n: usize) {
        debug_assert!(src as usize % 32 == 0 && n % 32 == 0);
        let mut i = 0;
        while i < n {
            // SAFETY: caller contract.
            unsafe {
                #[cfg(not(miri))]
                let v = _mm256_stream_load_si256(src.add(i) as *const __m256i);
                #[cfg(miri)]
                let v = _mm256_load_si256(src.add(i) as *const __m256i);
                _mm256_storeu_si256(dst.add(i) as *mut __m256i, v);
            }
            i += 32;
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod vector {
    //! Other architectures run only [`super::CopyImpl::Scalar`], whose plan has no vector
    //! steps; these forward to the aligned scalar loops for completeness.

    /// # Safety
    /// As `super::small_to`.
    pub unsafe fn store16(dst: *mut u8, src: *const u8, n: usize) {
        // SAFETY: forwarded contract.
        unsafe { super::small_to(dst, src, n) }
    }
    /// # Safety
    /// As `super::small_to`.
    pub unsafe fn store32(dst: *mut u8, src: *const u8, n: usize) {
        // SAFETY: forwarded contract.
        unsafe { super::small_to(dst, src, n) }
    }
    /// # Safety
    /// As `super::small_from`.
    pub unsafe fn load16(dst: *mut u8, src: *const u8, n: usize) {
        // SAFETY: forwarded contract.
        unsafe { super::small_from(dst, src, n) }
    }
    /// # Safety
    /// As `super::small_from`.
    pub unsafe fn load32(dst: *mut u8, src: *const u8, n: usize) {
        // SAFETY: forwarded contract.
        unsafe { super::small_from(dst, src, n) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::{Rng, SeedableRng};

    const GUARD: usize = 64;
    /// Random bytes the checks draw from (smaller under Miri, which interprets the filling).
    const POOL: usize = if cfg!(miri) { 64 << 10 } else { 4 << 20 };

    /// Reusable buffers: a pool of random bytes and two 64-aligned work areas, so that every
    /// check costs only memcpy/memcmp outside the routine under test.
    struct Scratch {
        pool: Vec<u8>,
        map_store: Vec<u128>,
        host_store: Vec<u128>,
    }

    impl Scratch {
        fn new(max_len: usize) -> Scratch {
            let mut rng = rand::rngs::StdRng::seed_from_u64(0x6764_696f);
            let mut pool = vec![0u8; POOL + max_len + 4 * GUARD];
            rng.fill(&mut pool[..]);
            let words = (max_len + 4 * GUARD) / 16 + 8;
            Scratch { pool, map_store: vec![0; words], host_store: vec![0; words] }
        }

        /// Copies `len` bytes in the given direction with the mapping side at `map_off`
        /// (mod 64) and the host side at `host_off`; checks the destination against the
        /// source (as `copy_from_slice` would leave it), that no byte around it changed, and
        /// that the source is untouched.
        #[allow(clippy::too_many_arguments)]
        fn check(
            &mut self,
            imp: CopyImpl,
            ty: MappingType,
            to_mapping: bool,
            map_off: usize,
            host_off: usize,
            len: usize,
            seed: usize,
        ) {
            let span = len + 2 * GUARD;
            let (mi, hi) = (seed % POOL, (seed.wrapping_mul(31) + 17) % POOL);
            let map_init = &self.pool[mi..mi + span];
            let host_init = &self.pool[hi..hi + span];
            let map_all = aligned(&mut self.map_store, span);
            map_all.copy_from_slice(map_init);
            let host_all = aligned(&mut self.host_store, span);
            host_all.copy_from_slice(host_init);
            let (m, h) = (GUARD + map_off, GUARD + host_off);
            let ctx = || {
                format!("{} {ty:?} to_mapping={to_mapping} map_off={map_off} host_off={host_off} len={len}", imp.name())
            };
            let map_all = aligned(&mut self.map_store, span);
            let map_ptr = map_all[m..].as_mut_ptr();
            let host_all = aligned(&mut self.host_store, span);
            let host_ptr = host_all[h..].as_mut_ptr();
            // SAFETY: both ranges are in bounds of distinct buffers; imp is supported.
            unsafe {
                if to_mapping {
                    copy_to_mapping_with(imp, ty, map_ptr, host_ptr, len)
                } else {
                    copy_from_mapping_with(imp, ty, host_ptr, map_ptr, len)
                }
            }
            let map_all = &aligned(&mut self.map_store, span)[..];
            let host_all = &aligned(&mut self.host_store, span)[..];
            let (dst, dst_init, d, src, src_init, s) = if to_mapping {
                (map_all, map_init, m, host_all, host_init, h)
            } else {
                (host_all, host_init, h, map_all, map_init, m)
            };
            assert!(dst[d..d + len] == src_init[s..s + len], "data differs: {}", ctx());
            assert!(
                dst[..d] == dst_init[..d] && dst[d + len..] == dst_init[d + len..],
                "wrote outside the range: {}",
                ctx()
            );
            assert!(src == src_init, "source changed: {}", ctx());
        }
    }

    /// The first `span` bytes of `store` after rounding its start up to 64 bytes.
    fn aligned(store: &mut [u128], span: usize) -> &mut [u8] {
        let bytes = store.len() * 16;
        let p = store.as_mut_ptr() as *mut u8;
        let skip = p.align_offset(64);
        assert!(skip + span <= bytes);
        // SAFETY: [p + skip, p + skip + span) lies inside `store`, which is borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(p.add(skip), span) }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "too long to interpret: see edge_lengths_and_offsets_of_every_routine"
    )]
    fn every_length_and_alignment_up_to_4096() {
        let mut s = Scratch::new(4096 + 64);
        for imp in CopyImpl::available() {
            for len in 0..=4096usize {
                for map_off in 0..64usize {
                    let host_off = (len * 13 + map_off * 7) % 64;
                    let seed = len * 64 + map_off;
                    s.check(imp, MappingType::Wc, true, map_off, host_off, len, seed);
                    s.check(imp, MappingType::Wc, false, map_off, host_off, len, seed ^ 0x5555);
                }
            }
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "too long to interpret: see edge_lengths_and_offsets_of_every_routine"
    )]
    fn every_host_alignment_small_lengths() {
        let mut s = Scratch::new(200);
        for imp in CopyImpl::available() {
            for len in 0..=100usize {
                for map_off in 0..64usize {
                    for host_off in 0..64usize {
                        let seed = (len * 64 + map_off) * 64 + host_off;
                        s.check(imp, MappingType::Wc, true, map_off, host_off, len, seed);
                        s.check(imp, MappingType::Wc, false, map_off, host_off, len, seed);
                    }
                }
            }
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "too long to interpret: see edge_lengths_and_offsets_of_every_routine"
    )]
    fn device_and_caching_types() {
        let mut s = Scratch::new(5000);
        for ty in [MappingType::Device, MappingType::Caching] {
            for len in [0usize, 1, 3, 7, 8, 15, 16, 17, 63, 100, 4095] {
                for off in 0..16 {
                    s.check(CopyImpl::best(), ty, true, off, (off * 3) % 16, len, len + off);
                    s.check(CopyImpl::best(), ty, false, off, (off * 5) % 16, len, len * 3 + off);
                }
            }
        }
    }

    /// Every routine at the lengths and offsets around its access widths (1 to 32 bytes) and
    /// at a page, both directions, every mapping type: small enough for Miri (`./test.sh
    /// miri`), which checks the routines' pointer arithmetic and aligned accesses for
    /// undefined behaviour where the exhaustive tests above would take hours to interpret.
    #[test]
    fn edge_lengths_and_offsets_of_every_routine() {
        let lens = [0usize, 1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 129, 4096];
        let offs = [0usize, 1, 7, 8, 15, 16, 31, 32, 63];
        let mut s = Scratch::new(4096);
        for imp in CopyImpl::available() {
            for ty in [MappingType::Wc, MappingType::Device, MappingType::Caching] {
                for (i, &len) in lens.iter().enumerate() {
                    for (j, &map_off) in offs.iter().enumerate() {
                        let host_off = offs[(i + 2 * j + 1) % offs.len()];
                        let seed = (i * 64 + j) * 97;
                        s.check(imp, ty, true, map_off, host_off, len, seed);
                        s.check(imp, ty, false, map_off, host_off, len, seed ^ 0x5555);
                    }
                }
            }
        }
    }

    #[test]
    fn plan_aligns_the_mapping_side() {
        for imp in [CopyImpl::Scalar, CopyImpl::Sse41, CopyImpl::Avx2] {
            for dev in 0..128usize {
                for len in 0..300usize {
                    let mut next = 0;
                    for (step, off, l) in plan(imp, dev, len) {
                        assert_eq!(off, next, "steps are contiguous");
                        match step {
                            Step::V16 => assert!((dev + off) % 16 == 0 && l % 16 == 0),
                            Step::V32 => assert!((dev + off) % 32 == 0 && l % 32 == 0),
                            Step::Small => assert!(imp == CopyImpl::Scalar || l < 16 || len < 16),
                        }
                        next = off + l;
                    }
                    assert_eq!(next, len);
                }
            }
        }
    }

    #[test]
    fn best_is_supported() {
        assert!(CopyImpl::best().is_supported());
        assert!(CopyImpl::available().contains(&CopyImpl::Scalar));
        eprintln!("copy routines on this CPU: {:?}", CopyImpl::available());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn random_large_lengths(len in 4097usize..(1 << 20), map_off in 0usize..64, host_off in 0usize..64, seed in 0usize..POOL, to in any::<bool>()) {
            let mut s = Scratch::new(1 << 20);
            for imp in CopyImpl::available() {
                s.check(imp, MappingType::Wc, to, map_off, host_off, len, seed);
            }
        }
    }
}
