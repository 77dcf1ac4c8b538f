//! `gdio check`'s libcufile section: which `libcufile.so.0` a process started with this
//! environment gets — gdio's (from `crates/gdio-cufile`) or NVIDIA's — and how to choose.
//!
//! The answer is the loader's own: `dlopen("libcufile.so.0")` in this process (which sees the
//! same `LD_PRELOAD` and `LD_LIBRARY_PATH` a client would), then `dladdr` names the file, and
//! gdio's library is recognised by its `gdio_cufile_version` export.

use std::ffi::{c_char, CStr};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::out::outln;

/// What the loader gives for `libcufile.so.0`, and where gdio's library is.
pub fn report() -> Value {
    let loaded = loaded_library();
    let preload = std::env::var("LD_PRELOAD").unwrap_or_default();
    let preloaded = preload.split([':', ' ']).any(|p| p.ends_with("libcufile.so.0"));
    let ours = gdio_library();
    json!({
        "loaded_file": loaded.as_ref().map(|(p, _)| p.display().to_string()),
        "loaded_is_gdio": loaded.as_ref().map(|(_, g)| *g),
        "preloaded": preloaded,
        "gdio_library": ours.map(|p| p.display().to_string()),
    })
}

/// `(file, is gdio's)` of what `dlopen("libcufile.so.0")` returns here.
fn loaded_library() -> Option<(PathBuf, bool)> {
    // SAFETY: dlopen with a NUL-terminated name; RTLD_LAZY resolves nothing up front. Both
    // libraries are inert at load (gdio's does nothing; NVIDIA's runs C++ static initialisers).
    let h = unsafe { libc::dlopen(c"libcufile.so.0".as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
    if h.is_null() {
        return None;
    }
    // SAFETY: symbol lookups in the handle just opened.
    let sym = unsafe { libc::dlsym(h, c"cuFileDriverOpen".as_ptr()) };
    // SAFETY: as above.
    let is_gdio = !unsafe { libc::dlsym(h, c"gdio_cufile_version".as_ptr()) }.is_null();
    // SAFETY: an all-zero Dl_info is valid to fill.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr fills `info` for an address inside a loaded object.
    let found = !sym.is_null() && unsafe { libc::dladdr(sym, &mut info) } != 0;
    let path = if found && !info.dli_fname.is_null() {
        // SAFETY: dli_fname is a NUL-terminated path owned by the loader.
        PathBuf::from(
            unsafe { CStr::from_ptr(info.dli_fname as *const c_char) }
                .to_string_lossy()
                .into_owned(),
        )
    } else {
        PathBuf::from("libcufile.so.0")
    };
    Some((path, is_gdio))
}

/// gdio's `libcufile.so.0` next to the `gdio` executable (or in `../lib`), if installed there.
fn gdio_library() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [dir.join("libcufile.so.0"), dir.join("libcufile.so"), dir.join("../lib/libcufile.so.0")]
        .into_iter()
        .find(|p| p.exists())
        .map(|p| p.canonicalize().unwrap_or(p))
}

/// Prints the section.
pub fn print(v: &Value) {
    let loaded = match (v["loaded_file"].as_str(), v["loaded_is_gdio"].as_bool()) {
        (Some(f), Some(true)) => format!("gdio's ({f})"),
        (Some(f), _) => format!("NVIDIA's ({f})"),
        _ => "none found by the loader".into(),
    };
    outln!("  libcufile.so.0 here  {loaded}");
    let ours = v["gdio_library"].as_str().map(Path::new);
    let lib = ours
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "/path/to/gdio/libcufile.so.0".into());
    let dir = ours
        .and_then(Path::parent)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "/path/to/gdio".into());
    outln!(
        "  choose gdio's        LD_PRELOAD={lib} works for every client (KvikIO, torch.cuda.gds,"
    );
    outln!("                       cuda-python, DALI); PyTorch needs it: its DT_RPATH finds the");
    outln!(
        "                       nvidia-cufile wheel's copy first. LD_LIBRARY_PATH={dir} works for"
    );
    outln!(
        "                       programs linked with -lcufile and DALI. Unset both for NVIDIA's."
    );
}
