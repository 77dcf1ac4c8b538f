//! How a caller of a synchronous request waits for the workers: a blocked thread wakes tens of
//! microseconds after its request completes, which a client issuing request after request from
//! a few threads (KvikIO's 4 MiB tasks through `cuFileRead`, `gdio bench` threads) pays on every
//! one, while the workers sit idle. So a caller first polls the request's done flag for up to
//! `completion_spin_us`, but only while a core is spare: at most `cores - threads` callers spin
//! at once (the workers doing the I/O keep their cores); the others block at once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::job::Job;

/// The spinning allowance of one engine's callers.
#[derive(Debug)]
pub(crate) struct CallerWait {
    spin: Duration,
    /// Callers that may spin at once.
    max: usize,
    spinning: AtomicUsize,
}

impl CallerWait {
    /// `spin` per wait, with `threads` workers on `cores` cores (no spinning unless a core is
    /// left over).
    pub(crate) fn new(spin: Duration, threads: usize, cores: usize) -> CallerWait {
        CallerWait {
            spin,
            max: cores.saturating_sub(threads.max(1)),
            spinning: AtomicUsize::new(0),
        }
    }

    /// Blocks until `job` is done: spinning first when allowed.
    pub(crate) fn wait(&self, job: &Job) {
        if job.is_done() {
            return;
        }
        if !self.spin.is_zero() && self.enter() {
            let start = Instant::now();
            while start.elapsed() < self.spin {
                if job.is_done() {
                    self.spinning.fetch_sub(1, Ordering::AcqRel);
                    return;
                }
                std::hint::spin_loop();
            }
            self.spinning.fetch_sub(1, Ordering::AcqRel);
        }
        job.wait_until(None);
    }

    /// Takes a spinning place if one is free.
    fn enter(&self) -> bool {
        let mut n = self.spinning.load(Ordering::Acquire);
        while n < self.max {
            match self.spinning.compare_exchange_weak(n, n + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(now) => n = now,
            }
        }
        false
    }

    /// Callers spinning now.
    #[cfg(test)]
    pub(crate) fn spinning(&self) -> usize {
        self.spinning.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_spare_core_means_no_spinning() {
        let w = CallerWait::new(Duration::from_millis(5), 12, 12);
        assert!(!w.enter());
        let w = CallerWait::new(Duration::from_millis(5), 12, 14);
        assert!(w.enter() && w.enter());
        assert!(!w.enter(), "only cores - threads callers spin at once");
        assert_eq!(w.spinning(), 2);
    }
}
