//! Files that exist under a name only while the tool runs are removed when `SIGINT`, `SIGTERM`
//! or `SIGHUP` ends it. (Most files the tool makes have no name at all while it runs: see
//! `newfile`; this covers the few that must, and the moment between naming and renaming.)

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Once;

const SLOTS: usize = 32;
static PATHS: [AtomicPtr<libc::c_char>; SLOTS] = [const { AtomicPtr::new(null_mut()) }; SLOTS];
static INSTALL: Once = Once::new();
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// A path that a signal removes; dropping this forgets it (the file stays).
pub struct RemoveOnSignal(usize);

/// Registers `path` for removal when a signal ends the process. `None` when all slots are
/// taken (the file then stays after a signal, as it would without this).
pub fn remove_on_signal(path: &Path) -> Option<RemoveOnSignal> {
    INSTALL.call_once(install);
    let c = CString::new(path.as_os_str().as_bytes()).ok()?.into_raw();
    for (i, slot) in PATHS.iter().enumerate() {
        if slot.compare_exchange(null_mut(), c, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            return Some(RemoveOnSignal(i));
        }
    }
    // SAFETY: `c` came from `CString::into_raw` above and was not stored anywhere.
    drop(unsafe { CString::from_raw(c) });
    None
}

impl Drop for RemoveOnSignal {
    fn drop(&mut self) {
        let p = PATHS[self.0].swap(null_mut(), Ordering::AcqRel);
        if !p.is_null() {
            // SAFETY: every non-null slot holds a pointer from `CString::into_raw`, taken out of
            // the slot by exactly one swap (this one, or the handler's, which never frees).
            drop(unsafe { CString::from_raw(p) });
        }
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    for slot in &PATHS {
        let p = slot.swap(null_mut(), Ordering::AcqRel);
        if !p.is_null() {
            // SAFETY: a NUL-terminated path from `CString::into_raw`, never freed once swapped
            // out here; `unlink` is async-signal-safe.
            unsafe { libc::unlink(p) };
        }
    }
    // SAFETY: restore the default action and raise again, so that the process ends by the same
    // signal (its parent sees what happened); both calls are async-signal-safe.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

fn install() {
    for sig in SIGNALS {
        // SAFETY: sigaction on zeroed structs: first read the current action, leave an ignored
        // signal ignored (`nohup`), else install `on_signal`.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                || old.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut new.sa_mask);
            new.sa_flags = libc::SA_RESTART;
            libc::sigaction(sig, &new, std::ptr::null_mut());
        }
    }
}
