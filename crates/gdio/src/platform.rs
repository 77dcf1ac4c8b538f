//! What this machine offers for moving data to GPUs: the nvidia-fs kernel module, kernel PCI
//! P2PDMA, libcufile, io_uring. Read from `/proc`, `/sys` and the dynamic loader; cheap, no GPU
//! needed.

/// A fact about the platform with the evidence for it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Probe {
    /// Present or not.
    pub available: bool,
    /// Version, when one was found.
    pub version: Option<String>,
    /// What was looked at, or why it is missing.
    pub detail: String,
}

impl Probe {
    fn yes(version: Option<String>, detail: impl Into<String>) -> Probe {
        Probe { available: true, version, detail: detail.into() }
    }
    fn no(detail: impl Into<String>) -> Probe {
        Probe { available: false, version: None, detail: detail.into() }
    }
}

/// Whether the nvidia-fs kernel module (GPUDirect Storage) is loaded.
pub fn nvidia_fs() -> Probe {
    if let Ok(text) = std::fs::read_to_string("/proc/driver/nvidia-fs/version") {
        let version =
            text.lines().find_map(|l| l.strip_prefix("version:").map(|v| v.trim().to_owned()));
        return Probe::yes(version, "/proc/driver/nvidia-fs/version");
    }
    let node = std::fs::read_dir("/dev").ok().and_then(|d| {
        d.flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|n| n.starts_with("nvidia-fs"))
    });
    if let Some(n) = node {
        return Probe::yes(None, format!("/dev/{n}"));
    }
    Probe::no("nvidia-fs is not loaded (no /proc/driver/nvidia-fs/version, no /dev/nvidia-fs*)")
}

/// Whether the kernel supports PCI peer-to-peer DMA, which cuFile's P2PDMA mode (CUDA 12.8+, no
/// nvidia-fs) needs: `CONFIG_PCI_P2PDMA=y|m` in `/boot/config-$(uname -r)` or the kernel build
/// tree's `.config`, else `p2pdma_pgmap_ops` in `/proc/kallsyms`.
pub fn pci_p2pdma() -> Probe {
    let release = kernel_release();
    for p in [format!("/boot/config-{release}"), format!("/lib/modules/{release}/build/.config")] {
        if let Ok(text) = std::fs::read_to_string(&p) {
            let on = text.lines().any(|l| l == "CONFIG_PCI_P2PDMA=y" || l == "CONFIG_PCI_P2PDMA=m");
            return if on {
                Probe::yes(None, format!("CONFIG_PCI_P2PDMA in {p}"))
            } else {
                Probe::no(format!("CONFIG_PCI_P2PDMA is not set in {p}"))
            };
        }
    }
    match std::fs::read_to_string("/proc/kallsyms") {
        Ok(t) if t.contains(" p2pdma_pgmap_ops") => {
            Probe::yes(None, "p2pdma_pgmap_ops in /proc/kallsyms")
        }
        _ => Probe::no("no kernel config to read and no p2pdma symbol in /proc/kallsyms"),
    }
}

/// Whether anonymous memory can get transparent huge pages when it asks (`madvise` or
/// `always` in `/sys/kernel/mm/transparent_hugepage/enabled`): gdio's pinned buffers ask
/// (`pinned_huge_pages`), and pinning them costs a fifth as much with huge pages.
pub fn transparent_huge_pages() -> Probe {
    let path = "/sys/kernel/mm/transparent_hugepage/enabled";
    match std::fs::read_to_string(path) {
        Ok(text) => thp_from_setting(&text, path),
        Err(e) => Probe::no(format!("{path}: {e}")),
    }
}

/// The chosen word of a sysfs setting that lists every choice and brackets the one in effect
/// (`always [madvise] never`); `None` when none is bracketed.
pub(crate) fn sysfs_choice(text: &str) -> Option<&str> {
    text.split_whitespace().find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
}

/// The probe for the text of the THP `enabled` file (the chosen mode is in brackets).
fn thp_from_setting(text: &str, path: &str) -> Probe {
    let mode = sysfs_choice(text).unwrap_or("unknown");
    match mode {
        "always" | "madvise" => Probe::yes(Some(mode.to_owned()), path.to_owned()),
        _ => Probe::no(format!("{path} says {mode}")),
    }
}

/// Whether io_uring can be set up (kernel support and not disabled by sysctl or seccomp).
pub fn io_uring() -> Probe {
    #[repr(C)]
    struct Params([u32; 30]);
    let mut params = Params([0; 30]);
    // SAFETY: io_uring_setup reads and writes one `io_uring_params` (120 bytes, zeroed here).
    let fd = unsafe { libc::syscall(libc::SYS_io_uring_setup, 1u32, &mut params as *mut Params) };
    if fd >= 0 {
        // SAFETY: closing the descriptor we just got.
        unsafe { libc::close(fd as i32) };
        return Probe::yes(None, "io_uring_setup succeeded");
    }
    let e = std::io::Error::last_os_error();
    let disabled = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled").ok();
    Probe::no(match disabled {
        Some(v) if v.trim() != "0" => {
            format!("io_uring is disabled (kernel.io_uring_disabled={})", v.trim())
        }
        _ => format!("io_uring_setup failed: {e}"),
    })
}

/// The NVIDIA kernel driver version from `/proc/driver/nvidia/version`.
pub fn nvidia_driver_version() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    let line = text.lines().next()?;
    line.split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
        .map(str::to_owned)
}

/// The running kernel's release.
pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// Whether libcufile (NVIDIA GPUDirect Storage) can be loaded, and its version
/// (`cuFileGetVersion`: 1000*major + 10*minor), without opening the cuFile driver.
pub fn libcufile() -> Probe {
    for name in [c"libcufile.so.0", c"libcufile.so"] {
        // SAFETY: dlopen with a NUL-terminated name; RTLD_LAZY resolves nothing up front.
        let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
        if h.is_null() {
            continue;
        }
        // SAFETY: looking up a symbol in the handle just opened.
        let sym = unsafe { libc::dlsym(h, c"cuFileGetVersion".as_ptr()) };
        let version = (!sym.is_null()).then(|| {
            let mut v: libc::c_int = 0;
            // SAFETY: cuFileGetVersion(int*) per cufile.h; it writes one int and needs no open
            // driver. The returned struct (err, cu_err) is two ints, read as a u64 and ignored.
            let f: extern "C" fn(*mut libc::c_int) -> u64 = unsafe { std::mem::transmute(sym) };
            let _ = f(&mut v);
            format!("{}.{}", v / 1000, (v % 1000) / 10)
        });
        return Probe::yes(version, format!("loaded {}", name.to_string_lossy()));
    }
    Probe::no("libcufile.so.0 not found by the dynamic loader (GPUDirect Storage is not installed)")
}

#[cfg(test)]
mod tests {

    #[test]
    fn thp_setting_is_read_from_the_bracketed_mode() {
        let p = "/sys/x";
        assert_eq!(
            thp_from_setting("always [madvise] never\n", p).version.as_deref(),
            Some("madvise")
        );
        assert!(thp_from_setting("[always] madvise never", p).available);
        let never = thp_from_setting("always madvise [never]\n", p);
        assert!(!never.available && never.detail.contains("never"), "{never:?}");
        assert!(!thp_from_setting("", p).available);
    }

    use super::*;

    #[test]
    fn probes_answer_without_panicking() {
        let u = io_uring();
        assert!(!u.detail.is_empty());
        let n = nvidia_fs();
        assert!(!n.detail.is_empty());
        assert!(!pci_p2pdma().detail.is_empty());
        assert!(!kernel_release().is_empty());
    }
}
