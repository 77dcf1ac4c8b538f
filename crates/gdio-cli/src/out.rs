//! Standard output that never panics: a closed pipe ends the program quietly (as `cat` and
//! other Unix tools do), a full disk or another write error is one line on stderr and exit 1.

use std::io::Write;

/// Prints one line on stdout, like `println!`, through [`line`].
macro_rules! outln {
    () => { $crate::out::line(format_args!("")) };
    ($($t:tt)*) => { $crate::out::line(format_args!($($t)*)) };
}
pub(crate) use outln;

/// Restores the default action of `SIGPIPE` (Rust ignores it, so that a write to a closed pipe
/// becomes `EPIPE`), so that `gdio check | head -1` ends as quietly as `cat` does; and ignores
/// `SIGXFSZ`, so that a file-size limit becomes an `EFBIG` error the tool reports (and cleans up
/// after) instead of a kill.
pub fn init() {
    // SAFETY: setting the disposition of two signals at the start of `main`, before any thread.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Writes `args` and a newline to stdout; on failure ends the process without a panic.
pub fn line(args: std::fmt::Arguments<'_>) {
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_fmt(args).and_then(|_| o.write_all(b"\n")).and_then(|_| o.flush()) {
        failed(&e);
    }
}

/// Ends the process after a failed write to stdout: quietly for a closed pipe, with one line
/// on stderr for anything else (a full disk: `gdio check > /dev/full`).
pub fn failed(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(141); // 128 + SIGPIPE, what a shell shows for `cat` in the same spot
    }
    let _ = writeln!(std::io::stderr(), "gdio: cannot write to standard output: {e}");
    std::process::exit(1);
}
