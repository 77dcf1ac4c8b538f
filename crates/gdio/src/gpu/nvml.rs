//! The few NVML facts the CUDA driver API does not give: BAR1 size. `libnvidia-ml.so.1` is
//! loaded at run time; where it is missing the answer is simply unknown.

use std::ffi::{c_char, c_int, CString};
use std::sync::OnceLock;

#[repr(C)]
#[derive(Default)]
struct Bar1Memory {
    total: u64,
    free: u64,
    used: u64,
}

type Init = unsafe extern "C" fn() -> c_int;
type HandleByBusId = unsafe extern "C" fn(*const c_char, *mut *mut std::ffi::c_void) -> c_int;
type Bar1Info = unsafe extern "C" fn(*mut std::ffi::c_void, *mut Bar1Memory) -> c_int;

struct Nvml {
    lib: libloading::Library,
}

fn nvml() -> Option<&'static Nvml> {
    static NVML: OnceLock<Option<Nvml>> = OnceLock::new();
    NVML.get_or_init(|| {
        // SAFETY: loading the NVIDIA management library runs its initialisers, which have no
        // preconditions.
        let lib = unsafe { libloading::Library::new("libnvidia-ml.so.1") }.ok()?;
        // SAFETY: nvmlInit_v2 has this signature in nvml.h and may be called more than once.
        let init: libloading::Symbol<Init> = unsafe { lib.get(b"nvmlInit_v2\0") }.ok()?;
        // SAFETY: calling the function looked up above.
        (unsafe { init() } == 0).then_some(())?;
        Some(Nvml { lib })
    })
    .as_ref()
}

/// BAR1 size in bytes of the GPU at PCI bus id `bus` (`0000:3b:00.0`), if NVML tells.
pub fn bar1_size(bus: &str) -> Option<u64> {
    let n = nvml()?;
    let bus = CString::new(bus).ok()?;
    // SAFETY: signatures as in nvml.h; the handle is an opaque pointer NVML fills in.
    unsafe {
        let by_bus: libloading::Symbol<HandleByBusId> =
            n.lib.get(b"nvmlDeviceGetHandleByPciBusId_v2\0").ok()?;
        let bar1: libloading::Symbol<Bar1Info> =
            n.lib.get(b"nvmlDeviceGetBAR1MemoryInfo\0").ok()?;
        let mut dev: *mut std::ffi::c_void = std::ptr::null_mut();
        if by_bus(bus.as_ptr(), &mut dev) != 0 {
            return None;
        }
        let mut mem = Bar1Memory::default();
        (bar1(dev, &mut mem) == 0 && mem.total > 0).then_some(mem.total)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn unknown_bus_or_no_nvml_is_none() {
        assert_eq!(super::bar1_size("ffff:ff:1f.7"), None);
    }
}
