//! `libgdrapi.so.2`: the C ABI of GDRCopy's `gdrapi.h` 2.6, implemented on [`gdio::gdr`].
//!
//! Programs built against upstream GDRCopy run on this library unchanged. Differences that
//! only make it safer:
//!
//! - no panic crosses the ABI (every body runs under `catch_unwind`; a panic returns `EIO`);
//! - `gdr_t` and `gdr_mh_t` values are validated: unknown, closed or NULL ones give `EINVAL`
//!   instead of undefined behaviour, and NULL out-pointers give `EINVAL`;
//! - copies check that `[map_d_ptr, map_d_ptr + size)` lies inside the handle's mapping;
//! - every call is thread-safe;
//! - `gdr_driver_get_version` under the dma-buf backend returns `EBADF` (upstream asserts).
//!
//! Return conventions are upstream's: 0 on success, a positive `errno` value on failure,
//! `NULL` from `gdr_open` when no backend works.

#![allow(non_camel_case_types)]
// `c_ulong` is u64 on LP64 but u32 elsewhere, so the casts are not redundant in general.
#![allow(clippy::unnecessary_cast)]
// The exported functions keep upstream's safe-looking C prototypes; their pointer contract
// is the C one documented in gdrapi.h, and every pointer is checked for NULL (and handles
// and states against the registries) before use.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use std::collections::{HashMap, HashSet};
use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use gdio::gdr::{Attribute, Gdr, MapFlags, MapInfo, MappingType, PinFlags, PinnedRange};
use gdio::{Error, ErrorKind};

/// Opaque library state (`struct gdr`).
pub struct gdr {
    gdr: Gdr,
}

/// `gdr_t`.
pub type gdr_t = *mut gdr;

/// `gdr_mh_t`: the handle of a pinned range.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct gdr_mh_t {
    /// Opaque value.
    pub h: c_ulong,
}

/// `gdr_info_v2_t` (`gdr_info_t`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct gdr_info_v2_t {
    /// Aligned start of the pinned range.
    pub va: u64,
    /// Aligned length.
    pub mapped_size: u64,
    /// Page size.
    pub page_size: u32,
    /// Deprecated.
    pub tm_cycles: u64,
    /// Deprecated.
    pub cycles_per_ms: u32,
    /// Bit-fields `unsigned mapped:1; unsigned wc_mapping:1;` (bit 0 and bit 1).
    pub flags: c_uint,
    /// `gdr_mapping_type_t`.
    pub mapping_type: c_uint,
}

/// `gdr_info_v1_t`, used by the old `gdr_get_info` symbol.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct gdr_info_v1_t {
    /// Aligned start of the pinned range.
    pub va: u64,
    /// Aligned length.
    pub mapped_size: u64,
    /// Page size.
    pub page_size: u32,
    /// Deprecated.
    pub tm_cycles: u64,
    /// Deprecated.
    pub cycles_per_ms: u32,
    /// Bit-fields `mapped:1; wc_mapping:1`.
    pub flags: c_uint,
}

const GDR_API_MAJOR_VERSION: c_int = 2;
const GDR_API_MINOR_VERSION: c_int = 6;

struct Entry {
    owner: usize,
    range: PinnedRange,
}

fn states() -> MutexGuard<'static, HashSet<usize>> {
    static S: OnceLock<Mutex<HashSet<usize>>> = OnceLock::new();
    S.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner())
}

fn handles() -> MutexGuard<'static, HashMap<u64, Arc<Entry>>> {
    static H: OnceLock<Mutex<HashMap<u64, Arc<Entry>>>> = OnceLock::new();
    H.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner())
}

static NEXT_HANDLE: AtomicU64 = AtomicU64::new(1);

fn log(msg: &str) {
    if std::env::var_os("GDRCOPY_ENABLE_LOGGING").is_some() {
        eprintln!("GDRCOPY: {msg}");
    }
}

/// Maps an error to the positive errno upstream would return.
fn code(e: &Error) -> c_int {
    log(&e.to_string());
    if let Some(errno) = e.errno() {
        return errno;
    }
    match e.kind() {
        ErrorKind::NotFound => libc::ENOENT,
        ErrorKind::PermissionDenied => libc::EACCES,
        ErrorKind::Unsupported => libc::EOPNOTSUPP,
        ErrorKind::NoBackend | ErrorKind::NoGpu => libc::ENODEV,
        ErrorKind::Io => libc::EIO,
        _ => libc::EINVAL,
    }
}

/// Runs `f`, turning a panic into `EIO`.
fn guard(f: impl FnOnce() -> c_int) -> c_int {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        log("internal error (panic caught at the C ABI)");
        libc::EIO
    })
}

/// The state behind `g`, if `g` is a live `gdr_t`.
fn state<'a>(g: gdr_t) -> Option<&'a gdr> {
    if g.is_null() || !states().contains(&(g as usize)) {
        return None;
    }
    // SAFETY: g is registered, so it came from Box::into_raw in gdr_open and has not been
    // freed (gdr_close unregisters before freeing). Concurrent gdr_close on the same g while
    // another call is in flight is a caller bug upstream too.
    Some(unsafe { &*g })
}

fn entry(g: Option<gdr_t>, h: gdr_mh_t) -> Result<Arc<Entry>, c_int> {
    let e = handles().get(&(h.h as u64)).cloned().ok_or(libc::EINVAL)?;
    match g {
        Some(g) if e.owner != g as usize => Err(libc::EINVAL),
        _ => Ok(e),
    }
}

fn ret<T>(r: gdio::Result<T>) -> Result<T, c_int> {
    r.map_err(|e| code(&e))
}

fn done(r: Result<(), c_int>) -> c_int {
    r.err().unwrap_or(0)
}

/// `gdr_t gdr_open(void)`: NULL when no backend works (set `GDRCOPY_ENABLE_LOGGING` to see why).
#[no_mangle]
pub extern "C" fn gdr_open() -> gdr_t {
    catch_unwind(|| match Gdr::open() {
        Ok(g) => {
            let p = Box::into_raw(Box::new(gdr { gdr: g }));
            states().insert(p as usize);
            p
        }
        Err(e) => {
            log(&e.to_string());
            std::ptr::null_mut()
        }
    })
    .unwrap_or(std::ptr::null_mut())
}

/// `int gdr_close(gdr_t g)`: unpins every handle of `g` and frees it.
#[no_mangle]
pub extern "C" fn gdr_close(g: gdr_t) -> c_int {
    guard(|| {
        if g.is_null() || !states().remove(&(g as usize)) {
            return libc::EINVAL;
        }
        let mine: Vec<Arc<Entry>> = {
            let mut hs = handles();
            let ids: Vec<u64> =
                hs.iter().filter(|(_, e)| e.owner == g as usize).map(|(id, _)| *id).collect();
            ids.into_iter().filter_map(|id| hs.remove(&id)).collect()
        };
        let mut rc = 0;
        for e in mine {
            if let Err(err) = e.range.unpin() {
                if rc == 0 {
                    rc = code(&err);
                }
            }
        }
        // SAFETY: g was registered (just removed), so it is a live Box from gdr_open that no
        // other path frees.
        drop(unsafe { Box::from_raw(g) });
        rc
    })
}

fn register(g: gdr_t, range: PinnedRange, out: *mut gdr_mh_t) -> c_int {
    let id = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed);
    handles().insert(id, Arc::new(Entry { owner: g as usize, range }));
    // SAFETY: out was checked non-NULL by the caller; the C contract makes it writable.
    unsafe { out.write(gdr_mh_t { h: id as c_ulong }) };
    0
}

/// `int gdr_pin_buffer(gdr_t, unsigned long addr, size_t size, uint64_t p2p_token, uint32_t va_space, gdr_mh_t *handle)`.
#[no_mangle]
pub extern "C" fn gdr_pin_buffer(
    g: gdr_t,
    addr: c_ulong,
    size: usize,
    p2p_token: u64,
    va_space: u32,
    handle: *mut gdr_mh_t,
) -> c_int {
    guard(|| {
        let Some(s) = state(g) else { return libc::EINVAL };
        if handle.is_null() {
            return libc::EINVAL;
        }
        match s.gdr.pin_v1(addr as u64, size as u64, p2p_token, va_space) {
            Ok(r) => register(g, r, handle),
            Err(e) => code(&e),
        }
    })
}

/// `int gdr_pin_buffer_v2(gdr_t, unsigned long addr, size_t size, uint32_t flags, gdr_mh_t *handle)`.
#[no_mangle]
pub extern "C" fn gdr_pin_buffer_v2(
    g: gdr_t,
    addr: c_ulong,
    size: usize,
    flags: u32,
    handle: *mut gdr_mh_t,
) -> c_int {
    guard(|| {
        let Some(s) = state(g) else { return libc::EINVAL };
        if handle.is_null() {
            return libc::EINVAL;
        }
        let Some(flags) = PinFlags::from_bits(flags) else { return libc::EINVAL };
        match s.gdr.pin(addr as u64, size as u64, flags) {
            Ok(r) => register(g, r, handle),
            Err(e) => code(&e),
        }
    })
}

/// `int gdr_unpin_buffer(gdr_t, gdr_mh_t)`: unmaps first if still mapped.
#[no_mangle]
pub extern "C" fn gdr_unpin_buffer(g: gdr_t, handle: gdr_mh_t) -> c_int {
    guard(|| {
        if state(g).is_none() {
            return libc::EINVAL;
        }
        let e = {
            let mut hs = handles();
            match hs.get(&(handle.h as u64)) {
                Some(e) if e.owner == g as usize => hs.remove(&(handle.h as u64)),
                _ => None,
            }
        };
        match e {
            Some(e) => done(ret(e.range.unpin())),
            None => libc::EINVAL,
        }
    })
}

/// `int gdr_get_callback_flag(gdr_t, gdr_mh_t, int *flag)`.
#[no_mangle]
pub extern "C" fn gdr_get_callback_flag(g: gdr_t, handle: gdr_mh_t, flag: *mut c_int) -> c_int {
    guard(|| {
        if state(g).is_none() || flag.is_null() {
            return libc::EINVAL;
        }
        done(entry(Some(g), handle).and_then(|e| ret(e.range.callback_flag())).map(|f| {
            // SAFETY: flag is non-NULL and writable per the C contract.
            unsafe { flag.write(c_int::from(f)) }
        }))
    })
}

fn info_of(g: gdr_t, handle: gdr_mh_t) -> Result<MapInfo, c_int> {
    if state(g).is_none() {
        return Err(libc::EINVAL);
    }
    entry(Some(g), handle).and_then(|e| ret(e.range.info()))
}

fn bits(i: &MapInfo) -> c_uint {
    c_uint::from(i.mapped) | (c_uint::from(i.wc_mapping) << 1)
}

/// `int gdr_get_info_v2(gdr_t, gdr_mh_t, gdr_info_v2_t *info)`.
#[no_mangle]
pub extern "C" fn gdr_get_info_v2(g: gdr_t, handle: gdr_mh_t, info: *mut gdr_info_v2_t) -> c_int {
    guard(|| {
        if info.is_null() {
            return libc::EINVAL;
        }
        done(info_of(g, handle).map(|i| {
            let out = gdr_info_v2_t {
                va: i.va,
                mapped_size: i.mapped_size,
                page_size: i.page_size,
                tm_cycles: i.tm_cycles,
                cycles_per_ms: i.cycles_per_ms,
                flags: bits(&i),
                mapping_type: i.mapping_type as c_uint,
            };
            // SAFETY: info is non-NULL and points to a gdr_info_v2_t per the C contract.
            unsafe { info.write(out) }
        }))
    })
}

/// `int gdr_get_info(gdr_t, gdr_mh_t, gdr_info_v1_t *info)`: the pre-2.4 symbol, kept for
/// ABI compatibility (works under both backends here).
#[no_mangle]
pub extern "C" fn gdr_get_info(g: gdr_t, handle: gdr_mh_t, info: *mut gdr_info_v1_t) -> c_int {
    guard(|| {
        if info.is_null() {
            return libc::EINVAL;
        }
        done(info_of(g, handle).map(|i| {
            let out = gdr_info_v1_t {
                va: i.va,
                mapped_size: i.mapped_size,
                page_size: i.page_size,
                tm_cycles: i.tm_cycles,
                cycles_per_ms: i.cycles_per_ms,
                flags: bits(&i),
            };
            // SAFETY: info is non-NULL and points to a gdr_info_v1_t per the C contract.
            unsafe { info.write(out) }
        }))
    })
}

/// `int gdr_map_v2(gdr_t, gdr_mh_t, void **va, size_t size, int flags)`.
#[no_mangle]
pub extern "C" fn gdr_map_v2(
    g: gdr_t,
    handle: gdr_mh_t,
    va: *mut *mut c_void,
    size: usize,
    flags: c_int,
) -> c_int {
    guard(|| {
        if state(g).is_none() || va.is_null() {
            return libc::EINVAL;
        }
        let Some(flags) = MapFlags::from_raw(flags) else { return libc::EINVAL };
        done(entry(Some(g), handle).and_then(|e| ret(e.range.map_len(flags, size))).map(|p| {
            // SAFETY: va is non-NULL and writable per the C contract.
            unsafe { va.write(p as *mut c_void) }
        }))
    })
}

/// `int gdr_map(gdr_t, gdr_mh_t, void **va, size_t size)`: `gdr_map_v2` with the default flag.
#[no_mangle]
pub extern "C" fn gdr_map(g: gdr_t, handle: gdr_mh_t, va: *mut *mut c_void, size: usize) -> c_int {
    gdr_map_v2(g, handle, va, size, 0)
}

/// `int gdr_unmap(gdr_t, gdr_mh_t, void *va, size_t size)`: `va` must be what `gdr_map` gave.
#[no_mangle]
pub extern "C" fn gdr_unmap(g: gdr_t, handle: gdr_mh_t, va: *mut c_void, _size: usize) -> c_int {
    guard(|| {
        if state(g).is_none() {
            return libc::EINVAL;
        }
        done(entry(Some(g), handle).and_then(|e| match e.range.mapping() {
            Some((p, _)) if std::ptr::eq(p as *const u8, va as *const u8) => ret(e.range.unmap()),
            _ => Err(libc::EINVAL),
        }))
    })
}

/// Offset of `ptr` inside the mapping of `e`, or EINVAL when not mapped / outside.
fn offset_in(e: &Entry, ptr: usize) -> Result<usize, c_int> {
    let (base, _) = e.range.mapping().ok_or(libc::EINVAL)?;
    ptr.checked_sub(base as usize).ok_or(libc::EINVAL)
}

/// `int gdr_copy_to_mapping(gdr_mh_t, void *map_d_ptr, const void *h_ptr, size_t size)`.
#[no_mangle]
pub extern "C" fn gdr_copy_to_mapping(
    handle: gdr_mh_t,
    map_d_ptr: *mut c_void,
    h_ptr: *const c_void,
    size: usize,
) -> c_int {
    guard(|| {
        done(entry(None, handle).and_then(|e| {
            let off = offset_in(&e, map_d_ptr as usize)?;
            if size == 0 {
                return Ok(());
            }
            if h_ptr.is_null() {
                return Err(libc::EINVAL);
            }
            // SAFETY: the C caller guarantees h_ptr is readable for size bytes; the mapping
            // side is bounds-checked by copy_to_mapping.
            let src = unsafe { std::slice::from_raw_parts(h_ptr as *const u8, size) };
            ret(e.range.copy_to_mapping(off, src))
        }))
    })
}

/// `int gdr_copy_from_mapping(gdr_mh_t, void *h_ptr, const void *map_d_ptr, size_t size)`.
#[no_mangle]
pub extern "C" fn gdr_copy_from_mapping(
    handle: gdr_mh_t,
    h_ptr: *mut c_void,
    map_d_ptr: *const c_void,
    size: usize,
) -> c_int {
    guard(|| {
        done(entry(None, handle).and_then(|e| {
            let off = offset_in(&e, map_d_ptr as usize)?;
            if size == 0 {
                return Ok(());
            }
            if h_ptr.is_null() {
                return Err(libc::EINVAL);
            }
            // SAFETY: the C caller guarantees h_ptr is writable for size bytes and not part
            // of the mapping; the mapping side is bounds-checked by copy_from_mapping.
            let dst = unsafe { std::slice::from_raw_parts_mut(h_ptr as *mut u8, size) };
            ret(e.range.copy_from_mapping(off, dst))
        }))
    })
}

/// `void gdr_runtime_get_version(int *major, int *minor)`: 2.6. NULL pointers are skipped.
#[no_mangle]
pub extern "C" fn gdr_runtime_get_version(major: *mut c_int, minor: *mut c_int) {
    // SAFETY: non-NULL pointers are writable ints per the C contract.
    unsafe {
        if !major.is_null() {
            major.write(GDR_API_MAJOR_VERSION);
        }
        if !minor.is_null() {
            minor.write(GDR_API_MINOR_VERSION);
        }
    }
}

/// `int gdr_driver_get_version(gdr_t, int *major, int *minor)`: the gdrdrv version; `EBADF`
/// under the dma-buf backend.
#[no_mangle]
pub extern "C" fn gdr_driver_get_version(g: gdr_t, major: *mut c_int, minor: *mut c_int) -> c_int {
    guard(|| {
        let Some(s) = state(g) else { return libc::EINVAL };
        if major.is_null() || minor.is_null() {
            return libc::EINVAL;
        }
        done(ret(s.gdr.driver_version()).map(|(ma, mi)| {
            // SAFETY: both pointers are non-NULL and writable per the C contract.
            unsafe {
                major.write(ma as c_int);
                minor.write(mi as c_int);
            }
        }))
    })
}

/// `int gdr_get_attribute(gdr_t, gdr_attr_t attr, int *v)`.
#[no_mangle]
pub extern "C" fn gdr_get_attribute(g: gdr_t, attr: c_int, v: *mut c_int) -> c_int {
    guard(|| {
        let Some(s) = state(g) else { return libc::EINVAL };
        if v.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: v is non-NULL and writable per the C contract.
        unsafe { v.write(0) };
        let Some(a) = u32::try_from(attr).ok().and_then(Attribute::from_raw) else {
            return libc::EINVAL;
        };
        done(ret(s.gdr.attribute(a)).map(|x| {
            // SAFETY: as above.
            unsafe { v.write(x as c_int) }
        }))
    })
}

/// `int gdr_get_mapping_type_string(gdr_mapping_type_t, const char **pstr)`.
#[no_mangle]
pub extern "C" fn gdr_get_mapping_type_string(
    mapping_type: c_int,
    pstr: *mut *const c_char,
) -> c_int {
    guard(|| {
        if pstr.is_null() {
            return libc::EINVAL;
        }
        let s: &'static [u8] =
            match u32::try_from(mapping_type).ok().and_then(MappingType::from_raw) {
                Some(MappingType::None) => b"None\0",
                Some(MappingType::Wc) => b"Write Combining\0",
                Some(MappingType::Caching) => b"Caching\0",
                Some(MappingType::Device) => b"Device\0",
                None => return libc::EINVAL,
            };
        // SAFETY: pstr is non-NULL and writable; the string is a static NUL-terminated literal.
        unsafe { pstr.write(s.as_ptr() as *const c_char) };
        0
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn info_layouts_match_the_c_header() {
        // Values of gdrapi.h 2.6 on x86-64 / arm64 (LP64): the two bit-fields share one
        // unsigned int at 36; the enum follows at 40.
        assert_eq!(size_of::<gdr_info_v2_t>(), 48);
        assert_eq!(offset_of!(gdr_info_v2_t, va), 0);
        assert_eq!(offset_of!(gdr_info_v2_t, mapped_size), 8);
        assert_eq!(offset_of!(gdr_info_v2_t, page_size), 16);
        assert_eq!(offset_of!(gdr_info_v2_t, tm_cycles), 24);
        assert_eq!(offset_of!(gdr_info_v2_t, cycles_per_ms), 32);
        assert_eq!(offset_of!(gdr_info_v2_t, flags), 36);
        assert_eq!(offset_of!(gdr_info_v2_t, mapping_type), 40);
        assert_eq!(size_of::<gdr_info_v1_t>(), 40);
        assert_eq!(offset_of!(gdr_info_v1_t, flags), 36);
        assert_eq!(size_of::<gdr_mh_t>(), size_of::<c_ulong>());
    }

    #[test]
    fn bad_handles_and_null_pointers_give_einval() {
        let bogus = 0x1234usize as gdr_t;
        let mh = gdr_mh_t { h: 987_654 };
        let mut out = gdr_mh_t { h: 0 };
        let mut v: c_int = 7;
        let mut p: *mut c_void = std::ptr::null_mut();
        assert_eq!(gdr_close(std::ptr::null_mut()), libc::EINVAL);
        assert_eq!(gdr_close(bogus), libc::EINVAL);
        assert_eq!(gdr_pin_buffer(bogus, 0x10000, 65536, 0, 0, &mut out), libc::EINVAL);
        assert_eq!(
            gdr_pin_buffer_v2(std::ptr::null_mut(), 0x10000, 65536, 0, &mut out),
            libc::EINVAL
        );
        assert_eq!(gdr_unpin_buffer(bogus, mh), libc::EINVAL);
        assert_eq!(gdr_get_callback_flag(bogus, mh, &mut v), libc::EINVAL);
        assert_eq!(gdr_map(bogus, mh, &mut p, 65536), libc::EINVAL);
        assert_eq!(gdr_unmap(bogus, mh, p, 65536), libc::EINVAL);
        assert_eq!(
            gdr_copy_to_mapping(mh, 0x1000 as *mut c_void, b"abc".as_ptr() as *const c_void, 3),
            libc::EINVAL
        );
        let mut buf = [0u8; 3];
        assert_eq!(
            gdr_copy_from_mapping(mh, buf.as_mut_ptr() as *mut c_void, 0x1000 as *const c_void, 3),
            libc::EINVAL
        );
        assert_eq!(gdr_driver_get_version(bogus, &mut v, &mut v), libc::EINVAL);
        assert_eq!(gdr_get_attribute(bogus, 1, &mut v), libc::EINVAL);
        let mut info = gdr_info_v2_t::default();
        assert_eq!(gdr_get_info_v2(bogus, mh, &mut info), libc::EINVAL);
        assert_eq!(gdr_get_info_v2(bogus, mh, std::ptr::null_mut()), libc::EINVAL);
    }

    #[test]
    fn versions_and_strings() {
        let (mut a, mut b) = (0, 0);
        gdr_runtime_get_version(&mut a, &mut b);
        assert_eq!((a, b), (2, 6));
        gdr_runtime_get_version(std::ptr::null_mut(), std::ptr::null_mut());
        let mut s: *const c_char = std::ptr::null();
        assert_eq!(gdr_get_mapping_type_string(1, &mut s), 0);
        // SAFETY: s points to a static NUL-terminated string.
        assert_eq!(unsafe { std::ffi::CStr::from_ptr(s) }.to_str().unwrap(), "Write Combining");
        assert_eq!(gdr_get_mapping_type_string(9, &mut s), libc::EINVAL);
        assert_eq!(gdr_get_mapping_type_string(0, std::ptr::null_mut()), libc::EINVAL);
    }
}
