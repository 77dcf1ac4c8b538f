//! A progress bar on a terminal, shown only once a run has lasted a second.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Counts bytes done; draws a bar on stderr after a second when stderr is a terminal.
pub struct Progress {
    done: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    ticker: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// A progress counter for `total` bytes labelled `what`; draws nothing when `quiet`.
    pub fn new(what: String, total: u64, quiet: bool) -> Progress {
        let done = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        // A thread the system refuses means no bar, nothing worse.
        let ticker = (!quiet && std::io::stderr().is_terminal())
            .then(|| {
                let (done, stop) = (done.clone(), stop.clone());
                std::thread::Builder::new().name("gdio-progress".into()).spawn(move || {
                    let start = std::time::Instant::now();
                    let mut bar: Option<ProgressBar> = None;
                    while !stop.load(Ordering::Acquire) {
                        std::thread::sleep(Duration::from_millis(100));
                        if bar.is_none() && start.elapsed() >= Duration::from_secs(1) {
                            let b = ProgressBar::with_draw_target(
                                Some(total),
                                ProgressDrawTarget::stderr(),
                            );
                            let style = ProgressStyle::with_template(
                            "{msg:>12} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
                        )
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .progress_chars("=> ");
                            b.set_style(style);
                            b.set_message(what.clone());
                            bar = Some(b);
                        }
                        if let Some(b) = &bar {
                            b.set_position(done.load(Ordering::Relaxed));
                        }
                    }
                    if let Some(b) = bar {
                        b.finish_and_clear();
                    }
                })
            })
            .and_then(Result::ok);
        Progress { done, stop, ticker }
    }

    /// Adds `n` bytes done.
    pub fn add(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
    }
}
