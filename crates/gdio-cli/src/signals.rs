//! Files that exist under a name only while the tool runs are removed when `SIGINT`, `SIGTERM`
//! or `SIGHUP` ends it. (Most files the tool makes have no name at all while it runs: see
//! `newfile`; this covers the few that must, and the moment between naming and renaming.)
//!
//! An operation that cleans up after itself when cancelled (a safetensors save, whose
//! temporary files the library names) runs under [`CancelOnSignal`] instead: the first signal
//! only raises its flag, the operation stops and removes what it wrote, and then the process
//! ends by that signal ([`CancelOnSignal::finish`]); a second signal ends it at once.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, Ordering};
use std::sync::{Arc, Once, OnceLock};

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

/// The flag a signal raises while a cancellable operation runs. Made once and never freed, so
/// the handler may touch it at any time.
fn cancel_flag() -> &'static Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

/// `cancel_flag()`'s flag while an operation is cancellable (null otherwise).
static ARMED: AtomicPtr<AtomicBool> = AtomicPtr::new(null_mut());
/// The signal that cancelled the operation (0: none).
static CAUGHT: AtomicI32 = AtomicI32::new(0);

/// While this lives, `SIGINT`, `SIGTERM` and `SIGHUP` raise [`CancelOnSignal::flag`] instead of
/// ending the process; [`CancelOnSignal::finish`] then ends it by the signal caught. One at a
/// time (the tool runs one save).
pub struct CancelOnSignal(());

/// Makes the operation that follows cancellable by a signal (see [`CancelOnSignal`]).
pub fn cancel_on_signal() -> CancelOnSignal {
    INSTALL.call_once(install);
    let flag = cancel_flag();
    flag.store(false, Ordering::SeqCst);
    ARMED.store(Arc::as_ptr(flag).cast_mut(), Ordering::SeqCst);
    CancelOnSignal(())
}

impl CancelOnSignal {
    /// The flag to hand to the operation (e.g. `SaveOptions::cancel`).
    pub fn flag(&self) -> Arc<AtomicBool> {
        cancel_flag().clone()
    }

    /// Ends cancellability. When a signal came meanwhile, says what became of `what` (stopped
    /// and cleaned up, or `completed` before it saw the signal), removes the paths registered
    /// with [`remove_on_signal`] and ends the process by that signal; otherwise returns.
    pub fn finish(self, what: &str, completed: bool) {
        ARMED.store(null_mut(), Ordering::SeqCst);
        let sig = CAUGHT.swap(0, Ordering::SeqCst);
        if sig != 0 {
            if completed {
                eprintln!("gdio: signal {sig} came after {what} wrote its last byte: it completed");
            } else {
                eprintln!(
                    "gdio: {what} interrupted by signal {sig}: it stopped and removed what it wrote"
                );
            }
            end_by(sig);
        }
    }
}

impl Drop for CancelOnSignal {
    fn drop(&mut self) {
        ARMED.store(null_mut(), Ordering::SeqCst);
    }
}

/// Removes the registered paths and ends the process by `sig` (its parent sees what happened).
/// Async-signal-safe.
fn end_by(sig: libc::c_int) {
    for slot in &PATHS {
        let p = slot.swap(null_mut(), Ordering::AcqRel);
        if !p.is_null() {
            // SAFETY: a NUL-terminated path from `CString::into_raw`, never freed once swapped
            // out here; `unlink` is async-signal-safe.
            unsafe { libc::unlink(p) };
        }
    }
    // SAFETY: restore the default action and raise again, so that the process ends by the same
    // signal; both calls are async-signal-safe.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    // Caught first: a `finish` on another thread that disarms after this sees it, and one that
    // disarmed before makes the swap below find null, so the signal is never lost.
    CAUGHT.store(sig, Ordering::SeqCst);
    let flag = ARMED.swap(null_mut(), Ordering::SeqCst);
    if flag.is_null() {
        end_by(sig);
        return;
    }
    // SAFETY: `flag` points into `cancel_flag()`'s `Arc`, which is never freed; an atomic store
    // is async-signal-safe. A second signal finds `ARMED` null and ends the process at once.
    unsafe { (*flag).store(true, Ordering::SeqCst) };
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
