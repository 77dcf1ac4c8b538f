//! How every command that writes creates its file: the target is checked first (a symbolic
//! link, something that is not a regular file, or a read-only file is refused), the data goes
//! into a file with no name (`O_TMPFILE`; where the filesystem lacks it, an unpredictable name
//! made with `O_EXCL` and removed on error or signal), and only a complete file is renamed into
//! place. A failed or killed write leaves the target as it was and nothing beside it.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rand::Rng;

use crate::signals::{self, RemoveOnSignal};

/// Refuses to write `path` when it is a symbolic link, not a regular file, or read-only (no
/// write permission bit: refused even for root). A missing path is fine.
pub fn check_target(path: &Path) -> Result<(), String> {
    let md = match std::fs::symlink_metadata(path) {
        Ok(md) => md,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let ft = md.file_type();
    if ft.is_symlink() {
        return Err(format!(
            "{} is a symbolic link: refusing to write through it (give the file it points to)",
            path.display()
        ));
    }
    if !ft.is_file() {
        return Err(format!(
            "{} exists and is not a regular file: refusing to replace it",
            path.display()
        ));
    }
    if md.mode() & 0o222 == 0 {
        return Err(format!(
            "{} is read-only (mode {:o}): refusing to replace it",
            path.display(),
            md.mode() & 0o7777
        ));
    }
    Ok(())
}

/// The directory a file at `path` lives in.
pub fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// A file being written for `target`; it gets the name only in [`NewFile::commit`].
pub struct NewFile {
    file: File,
    target: PathBuf,
    /// The fallback: a temporary name, removed on drop and on a signal.
    named: Option<(tempfile::TempPath, Option<RemoveOnSignal>)>,
}

fn cstr(p: &Path) -> Result<CString, String> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| format!("{}: path contains a NUL byte", p.display()))
}

impl NewFile {
    /// Checks `target` ([`check_target`]) and opens an unnamed file beside it.
    pub fn create(target: &Path) -> Result<NewFile, String> {
        check_target(target)?;
        let dir = parent_dir(target);
        let cdir = cstr(&dir)?;
        // SAFETY: a NUL-terminated path; the returned descriptor is owned by the File below.
        let fd = unsafe {
            libc::open(cdir.as_ptr(), libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC, 0o644)
        };
        if fd >= 0 {
            // SAFETY: `fd` is a fresh descriptor that nothing else owns.
            let file = unsafe { File::from_raw_fd(fd) };
            return Ok(NewFile { file, target: target.to_path_buf(), named: None });
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EOPNOTSUPP) | Some(libc::EISDIR) | Some(libc::EINVAL) => {}
            _ => return Err(format!("cannot create a file in {}: {e}", dir.display())),
        }
        let t = tempfile::Builder::new()
            .prefix(&format!(
                ".{}.gdio-",
                target.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()
            ))
            .permissions(std::fs::Permissions::from_mode(0o644))
            .tempfile_in(&dir)
            .map_err(|e| format!("cannot create a file in {}: {e}", dir.display()))?;
        let (file, path) = t.into_parts();
        let guard = signals::remove_on_signal(&path);
        Ok(NewFile { file, target: target.to_path_buf(), named: Some((path, guard)) })
    }

    /// The open file.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Flushes the data to the device and gives the file its name, replacing what was there.
    pub fn commit(self) -> Result<(), String> {
        let target = self.target.clone();
        self.file
            .sync_all()
            .map_err(|e| format!("fsync of the new {} failed: {e}", target.display()))?;
        check_target(&target)?; // still nothing we must not replace
        match self.named {
            Some((path, guard)) => {
                path.persist(&target).map_err(|e| {
                    format!("cannot rename the new file to {}: {}", target.display(), e.error)
                })?;
                drop(guard);
                Ok(())
            }
            None => link_unnamed(&self.file, &target),
        }
    }
}

/// Gives an `O_TMPFILE` file a random name beside `target`, then renames it onto `target`.
fn link_unnamed(file: &File, target: &Path) -> Result<(), String> {
    let dir = parent_dir(target);
    let proc_path = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd())).unwrap_or_default();
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut last = None;
    for _ in 0..16 {
        let tmp = dir.join(format!(".{name}.gdio-{:016x}", rand::rng().random::<u64>()));
        let ctmp = cstr(&tmp)?;
        let guard = signals::remove_on_signal(&tmp);
        // SAFETY: NUL-terminated paths; linkat through /proc follows the magic link to the open
        // file (works without CAP_DAC_READ_SEARCH, unlike AT_EMPTY_PATH).
        let mut rc = unsafe {
            libc::linkat(
                libc::AT_FDCWD,
                proc_path.as_ptr(),
                libc::AT_FDCWD,
                ctmp.as_ptr(),
                libc::AT_SYMLINK_FOLLOW,
            )
        };
        if rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT) {
            let empty = CString::default();
            // SAFETY: as above, linking the descriptor itself (needs CAP_DAC_READ_SEARCH).
            rc = unsafe {
                libc::linkat(
                    file.as_raw_fd(),
                    empty.as_ptr(),
                    libc::AT_FDCWD,
                    ctmp.as_ptr(),
                    libc::AT_EMPTY_PATH,
                )
            };
        }
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EEXIST) {
                last = Some(e);
                continue;
            }
            return Err(format!("cannot name the new file in {}: {e}", dir.display()));
        }
        if let Err(e) = std::fs::rename(&tmp, target) {
            let _ = std::fs::remove_file(&tmp);
            return Err(format!("cannot rename the new file to {}: {e}", target.display()));
        }
        drop(guard);
        return Ok(());
    }
    Err(format!(
        "cannot name the new file in {}: {}",
        dir.display(),
        last.map(|e| e.to_string()).unwrap_or_default()
    ))
}
