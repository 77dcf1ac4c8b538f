//! [`WriteGate`]: at most a given number of large buffered writes into one open file at once
//! (`file_writers`). Buffered writes into one file take its inode lock one at a time in ext4,
//! xfs and tmpfs, so writers beyond a few only contend for it (BENCHMARKS.md session 30 run 4).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

/// Counts the writers inside; a writer that would be one too many waits for one to leave.
#[derive(Debug, Default)]
pub(crate) struct WriteGate {
    inside: Mutex<usize>,
    left: Condvar,
    /// The most writers that were inside at once.
    most: AtomicUsize,
}

/// A writer's place inside a [`WriteGate`], given back when dropped.
#[derive(Debug)]
pub(crate) struct WriteTurn<'a> {
    gate: &'a WriteGate,
}

impl WriteGate {
    /// Waits until fewer than `limit` writers are inside (0: no limit), then enters.
    pub(crate) fn enter(&self, limit: usize) -> WriteTurn<'_> {
        // A writer that panicked while holding the lock left the count correct (it is changed
        // only by the lines below, which cannot panic), so a poisoned lock is used as it is.
        let mut inside = self.inside.lock().unwrap_or_else(|e| e.into_inner());
        while limit > 0 && *inside >= limit {
            inside = self.left.wait(inside).unwrap_or_else(|e| e.into_inner());
        }
        *inside += 1;
        self.most.fetch_max(*inside, Ordering::Relaxed);
        WriteTurn { gate: self }
    }

    /// The most writers that were inside at once since the gate was made.
    pub(crate) fn most_at_once(&self) -> usize {
        self.most.load(Ordering::Relaxed)
    }
}

impl Drop for WriteTurn<'_> {
    fn drop(&mut self) {
        let mut inside = self.gate.inside.lock().unwrap_or_else(|e| e.into_inner());
        *inside -= 1;
        drop(inside);
        // Every waiter looks again: handles shared by drivers of different `file_writers`
        // wait with different limits, and the one woken alone might not be one that fits.
        self.gate.left.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::WriteGate;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Runs `threads` threads that each enter `gate` `rounds` times with `limit` and stay a
    /// moment; returns the most that were inside at once, counted by the threads themselves.
    fn crowd(gate: &WriteGate, limit: usize, threads: usize, rounds: usize) -> usize {
        let (now, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    for _ in 0..rounds {
                        let _turn = gate.enter(limit);
                        let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(n, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_micros(200));
                        now.fetch_sub(1, Ordering::SeqCst);
                    }
                });
            }
        });
        most.load(Ordering::SeqCst)
    }

    #[test]
    fn no_more_writers_than_the_limit_are_inside_at_once() {
        for limit in [1, 2, 3] {
            let gate = WriteGate::default();
            let most = crowd(&gate, limit, 12, 20);
            assert!(most <= limit, "limit {limit}: {most} inside at once");
            // Twelve threads that each stay 200 µs fill the gate: its own count is the limit.
            assert_eq!(gate.most_at_once(), limit);
        }
    }

    #[test]
    fn a_limit_of_zero_lets_every_writer_in() {
        let gate = WriteGate::default();
        let most = crowd(&gate, 0, 8, 10);
        assert!(most > 1, "with no limit 8 threads never overlapped");
        assert!(gate.most_at_once() >= most);
    }

    #[test]
    fn a_turn_given_back_lets_the_next_writer_in() {
        let gate = WriteGate::default();
        let first = gate.enter(1);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| drop(gate.enter(1)));
            std::thread::sleep(Duration::from_millis(20));
            assert!(!waiter.is_finished(), "a second writer got in past a limit of 1");
            drop(first);
            waiter.join().unwrap();
        });
        assert_eq!(gate.most_at_once(), 1);
    }

    #[test]
    fn a_writer_that_fits_gets_in_though_one_with_a_smaller_limit_waits_too() {
        let gate = WriteGate::default();
        let (h1, h2, h3) = (gate.enter(0), gate.enter(0), gate.enter(0));
        std::thread::scope(|s| {
            let narrow = s.spawn(|| drop(gate.enter(1)));
            let wide = s.spawn(|| drop(gate.enter(3)));
            std::thread::sleep(Duration::from_millis(20));
            drop(h1);
            // Two inside: the writer whose limit is 3 fits, the one whose limit is 1 does not.
            let t = std::time::Instant::now();
            while !wide.is_finished() && t.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(1));
            }
            assert!(wide.is_finished(), "a writer that fits was left waiting");
            assert!(!narrow.is_finished(), "a writer got in past a limit of 1");
            drop((h2, h3));
            narrow.join().unwrap();
        });
    }
}
