//! Records the git commit the Python package is built from, for `gdio.__git_commit__` (empty
//! when the source is not a git checkout or git is not installed).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_default();
    println!("cargo:rustc-env=GDIO_GIT_COMMIT={commit}");
    // Build again when HEAD moves: a checkout (HEAD) or a commit on the branch (its ref, loose
    // or packed). Only files that exist: cargo takes a missing one as changed on every build.
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for p in watched {
        match git(&["rev-parse", "--git-path", &p]) {
            Some(path) if std::path::Path::new(&path).exists() => {
                println!("cargo:rerun-if-changed={path}")
            }
            _ => {}
        }
    }
}
