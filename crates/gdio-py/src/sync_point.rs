//! Shared stream synchronizations. A part whose producer named a stream (torch and DLPack: the
//! legacy default stream) may touch its memory only after the work queued on that stream
//! before the part was made is done. One `cuStreamSynchronize` that *began* after the part was
//! made covers it, so parts that wait together share one: 100,000 64 KiB futures made in a
//! burst cost a few synchronizations, not one each.
//!
//! Order comes from one counter: a part takes a [`ticket`] when it is made (after its
//! producer queued its work), a synchronization takes a number when it begins, and a point
//! remembers the largest beginning that has finished. A part is covered when that number is
//! above its ticket.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Tickets and beginnings, in one order (0 is never handed out).
static CLOCK: AtomicU64 = AtomicU64::new(1);

/// A ticket for a part made now: a synchronization that begins later covers it.
pub fn ticket() -> u64 {
    CLOCK.fetch_add(1, Ordering::SeqCst)
}

/// The synchronizations of one stream.
#[derive(Debug, Default)]
pub struct SyncPoint {
    /// The beginning of the latest synchronization that finished (0: none yet).
    done_begin: AtomicU64,
    /// One synchronization of this stream at a time: who waits behind it is usually covered
    /// by it.
    running: Mutex<()>,
}

impl SyncPoint {
    /// Returns once a synchronization that began after `ticket` has finished: an earlier
    /// one's, or `sync` run here. An error of `sync` is returned and covers nothing.
    pub fn since<E>(&self, ticket: u64, sync: impl FnOnce() -> Result<(), E>) -> Result<(), E> {
        if self.done_begin.load(Ordering::SeqCst) > ticket {
            return Ok(());
        }
        let _one = self.running.lock().unwrap_or_else(|p| p.into_inner());
        if self.done_begin.load(Ordering::SeqCst) > ticket {
            return Ok(());
        }
        let begin = CLOCK.fetch_add(1, Ordering::SeqCst);
        sync()?;
        self.done_begin.fetch_max(begin, Ordering::SeqCst);
        Ok(())
    }
}

/// What a part waits for before it touches its memory: stream `stream` of GPU `ordinal`, as
/// of when the part was made.
#[derive(Debug, Clone, Copy)]
pub struct StreamWait {
    ordinal: usize,
    stream: u64,
    ticket: u64,
}

impl StreamWait {
    /// The wait of a part made now, for the stream `(ordinal, handle)` its producer named
    /// (`None`: nothing to wait for, and no ticket taken).
    pub fn made_now(stream: Option<(usize, u64)>) -> Option<StreamWait> {
        stream.map(|(ordinal, stream)| StreamWait { ordinal, stream, ticket: ticket() })
    }

    /// Returns once a synchronization of the stream that began after the part was made has
    /// finished, this thread's or another's.
    pub fn wait(&self, driver: &gdio::Driver) -> gdio::Result<()> {
        point(self.ordinal, self.stream)
            .since(self.ticket, || crate::stream::synchronize(driver, self.ordinal, self.stream))
    }
}

/// The point of stream `stream` of GPU `ordinal` (made at its first use, kept for the
/// process: a handle reused by a new stream is still ordered right, since a point only ever
/// covers tickets older than a synchronization of that handle).
fn point(ordinal: usize, stream: u64) -> Arc<SyncPoint> {
    /// Each stream's point, by (GPU ordinal, stream handle).
    type Points = HashMap<(usize, u64), Arc<SyncPoint>>;
    static POINTS: OnceLock<Mutex<Points>> = OnceLock::new();
    let mut points = POINTS.get_or_init(Mutex::default).lock().unwrap_or_else(|p| p.into_inner());
    points.entry((ordinal, stream)).or_default().clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    #[test]
    fn a_ticket_is_covered_only_by_a_synchronization_that_began_after_it() {
        let p = SyncPoint::default();
        let runs = AtomicUsize::new(0);
        let sync = || -> Result<(), ()> {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok(())
        };
        let t1 = ticket();
        p.since(t1, sync).unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        // Made after that synchronization began: needs its own.
        let t2 = ticket();
        p.since(t2, sync).unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        // Two parts made, then one synchronization: it covers both.
        let (t3, t4) = (ticket(), ticket());
        p.since(t4, sync).unwrap();
        p.since(t3, sync).unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 3);
        // Old tickets stay covered.
        p.since(t1, sync).unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn a_failed_synchronization_covers_nothing() {
        let p = SyncPoint::default();
        let t = ticket();
        assert_eq!(p.since(t, || Err("busy")), Err("busy"));
        let mut ran = false;
        p.since(t, || -> Result<(), ()> {
            ran = true;
            Ok(())
        })
        .unwrap();
        assert!(ran, "the ticket was taken as covered after a failure");
    }

    /// Many threads, each queueing "work" on a simulated stream, then making a part and
    /// waiting for it: when the wait returns, a synchronization has seen that work done (what
    /// a real one guarantees), and the parts shared synchronizations.
    #[test]
    fn concurrent_parts_share_synchronizations_and_each_sees_its_work_done() {
        let p = SyncPoint::default();
        let queued = AtomicU64::new(0);
        let completed = AtomicU64::new(0);
        let runs = AtomicUsize::new(0);
        let parts = 8 * 50;
        std::thread::scope(|s| {
            for _ in 0..8 {
                let (p, queued, completed, runs) = (&p, &queued, &completed, &runs);
                s.spawn(move || {
                    for _ in 0..50 {
                        let mine = queued.fetch_add(1, Ordering::SeqCst) + 1;
                        let t = ticket();
                        p.since(t, || -> Result<(), ()> {
                            // A stream synchronization: everything queued when it began is
                            // done when it returns.
                            let seen = queued.load(Ordering::SeqCst);
                            std::thread::sleep(Duration::from_micros(200));
                            completed.fetch_max(seen, Ordering::SeqCst);
                            runs.fetch_add(1, Ordering::SeqCst);
                            Ok(())
                        })
                        .unwrap();
                        let done = completed.load(Ordering::SeqCst);
                        assert!(
                            done >= mine,
                            "work {mine} not done when its part went on ({done})"
                        );
                    }
                });
            }
        });
        let runs = runs.load(Ordering::SeqCst);
        assert!(runs >= 1 && runs < parts, "{runs} synchronizations for {parts} parts");
    }
}
