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
//!
//! Two ways to wait. A thread that may block (a synchronous call, a pool job) waits in
//! [`StreamWait::wait`], running the synchronization itself when none covers it yet. A future's
//! part headed for the engine queues a continuation instead ([`StreamWait::then`]): one
//! drainer per stream takes every continuation queued so far, waits for one synchronization
//! that began after all of them were made, and runs them. The thread making futures then
//! pays a push onto the stream's queue per part, not a hand-off to a pool thread (which, with
//! pool threads taking one quick part each, contended for the pool's queue with the thread
//! making them: 6.0–6.5 µs per torch future on the H200, session 13).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Tickets and beginnings, in one order (0 is never handed out).
static CLOCK: AtomicU64 = AtomicU64::new(1);

/// A ticket for a part made now: a synchronization that begins later covers it.
pub fn ticket() -> u64 {
    CLOCK.fetch_add(1, Ordering::SeqCst)
}

/// What runs once a part's stream has been synchronized for it, with that synchronization's
/// result (an error covers nothing: the part must fail with it) and the round's group of
/// engine submissions (the parts a synchronization released reach the workers together).
pub type Then = Box<dyn FnOnce(gdio::Result<()>, &mut gdio::SubmitGroup<'_>) + Send>;

/// Continuations queued on one stream, and whether a drainer is on its way to them.
#[derive(Default)]
struct Queued {
    /// `(ticket, continuation)` in the order queued.
    parts: Vec<(u64, Then)>,
    /// A drainer runs (or has been handed to a thread): a new part only joins the queue.
    draining: bool,
}

/// The synchronizations of one stream.
#[derive(Default)]
pub struct SyncPoint {
    /// The beginning of the latest synchronization that finished (0: none yet).
    done_begin: AtomicU64,
    /// One synchronization of this stream at a time: who waits behind it is usually covered
    /// by it.
    running: Mutex<()>,
    /// Parts waiting for a synchronization without a thread each ([`StreamWait::then`]).
    queued: Mutex<Queued>,
}

impl std::fmt::Debug for SyncPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyncPoint").field("done_begin", &self.done_begin).finish_non_exhaustive()
    }
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

    /// Queues `then` for a synchronization that begins after `ticket`. Returns true when no
    /// drainer is on its way: the caller must then run [`SyncPoint::drain`] on a thread that
    /// may block (and must, or the queue waits for the next part that starts one).
    fn enqueue(&self, ticket: u64, then: Then) -> bool {
        let mut q = self.queued.lock().unwrap_or_else(|p| p.into_inner());
        q.parts.push((ticket, then));
        !std::mem::replace(&mut q.draining, true)
    }

    /// Until the queue is empty: takes every queued part, waits for a synchronization that
    /// began after the newest of them was made (`sync` runs it unless one already covers
    /// them), and runs their continuations with its result, in the order they were queued,
    /// with one group of `driver`'s submissions per round. Parts queued meanwhile wait for the
    /// next round's synchronization.
    fn drain(&self, driver: &gdio::Driver, sync: impl Fn() -> gdio::Result<()>) {
        loop {
            let parts = {
                let mut q = self.queued.lock().unwrap_or_else(|p| p.into_inner());
                if q.parts.is_empty() {
                    q.draining = false;
                    return;
                }
                std::mem::take(&mut q.parts)
            };
            let newest = parts.iter().map(|(t, _)| *t).max().unwrap_or(0);
            let r = self.since(newest, &sync);
            let mut group = driver.submit_group();
            for (_, then) in parts {
                // A continuation that panicked has lost its part; the others, and the parts
                // queued after them, still run (a panic here would leave `draining` set and
                // every later part of this stream waiting for ever).
                let (r, g) = (r.clone(), &mut group);
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || then(r, g)));
            }
        }
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

    /// Runs `then` once a synchronization of the stream that began after the part was made
    /// has finished, without a thread waiting for this part: it joins the stream's queue, and
    /// when no drainer is on its way one is handed to `spawn` (which must run it on a thread
    /// that may block, such as the future pool's). `then` runs on that drainer's thread.
    pub fn then(
        &self,
        driver: &Arc<gdio::Driver>,
        spawn: impl FnOnce(Box<dyn FnOnce() + Send>),
        then: Then,
    ) {
        let p = point(self.ordinal, self.stream);
        if p.enqueue(self.ticket, then) {
            let (driver, ordinal, stream) = (driver.clone(), self.ordinal, self.stream);
            spawn(Box::new(move || {
                p.drain(&driver, || crate::stream::synchronize(&driver, ordinal, stream))
            }));
        }
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

    /// Queues `n` parts on `p` from this thread, each made after "work" was queued on the
    /// simulated stream, draining on spawned threads as `StreamWait::then` does; returns when
    /// every continuation ran. Each continuation checks that its work was done by then.
    fn queue_parts(p: &Arc<SyncPoint>, sim: &Arc<SimStream>, n: usize, ran: &Arc<AtomicUsize>) {
        let mut drainers = Vec::new();
        for _ in 0..n {
            let mine = sim.queued.fetch_add(1, Ordering::SeqCst) + 1;
            let (sim2, ran2) = (sim.clone(), ran.clone());
            let then: Then = Box::new(move |r, _| {
                r.unwrap();
                let done = sim2.completed.load(Ordering::SeqCst);
                assert!(done >= mine, "work {mine} not done when its part went on ({done})");
                ran2.fetch_add(1, Ordering::SeqCst);
            });
            if p.enqueue(ticket(), then) {
                let (p, sim) = (p.clone(), sim.clone());
                drainers.push(std::thread::spawn(move || p.drain(driver(), || sim.synchronize())));
            }
        }
        for d in drainers {
            d.join().unwrap();
        }
    }

    /// A driver on the host (the rounds' submission groups; these tests submit nothing).
    fn driver() -> &'static gdio::Driver {
        static D: OnceLock<gdio::Driver> = OnceLock::new();
        D.get_or_init(|| gdio::Driver::new(gdio::Config::default()).unwrap())
    }

    /// A stream whose synchronization sees done everything queued when it began.
    #[derive(Default)]
    struct SimStream {
        queued: AtomicU64,
        completed: AtomicU64,
        syncs: AtomicUsize,
    }

    impl SimStream {
        fn synchronize(&self) -> gdio::Result<()> {
            let seen = self.queued.load(Ordering::SeqCst);
            std::thread::sleep(Duration::from_micros(300));
            self.completed.fetch_max(seen, Ordering::SeqCst);
            self.syncs.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    #[test]
    fn queued_parts_run_after_their_work_and_share_synchronizations() {
        let (p, sim) = (Arc::new(SyncPoint::default()), Arc::new(SimStream::default()));
        let ran = Arc::new(AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..4 {
                let (p, sim, ran) = (&p, &sim, &ran);
                s.spawn(move || queue_parts(p, sim, 500, ran));
            }
        });
        assert_eq!(ran.load(Ordering::SeqCst), 2000);
        let syncs = sim.syncs.load(Ordering::SeqCst);
        assert!((1..2000).contains(&syncs), "{syncs} synchronizations for 2000 parts");
        // Drained: the next part starts a drainer again.
        assert!(!p.queued.lock().unwrap().draining);
        queue_parts(&p, &sim, 1, &ran);
        assert_eq!(ran.load(Ordering::SeqCst), 2001);
    }

    #[test]
    fn a_failed_synchronization_fails_its_round_and_the_next_round_synchronizes_again() {
        let p = SyncPoint::default();
        let results = Arc::new(Mutex::new(Vec::new()));
        let push = |tag: &'static str| -> Then {
            let results = results.clone();
            Box::new(move |r, _| results.lock().unwrap().push((tag, r.map_err(|e| e.to_string()))))
        };
        assert!(p.enqueue(ticket(), push("a")));
        assert!(!p.enqueue(ticket(), push("b")), "a second drainer for one queue");
        p.drain(driver(), || Err(gdio::Error::new(gdio::ErrorKind::Io, "stream busy")));
        assert!(p.enqueue(ticket(), push("c")));
        p.drain(driver(), || Ok(()));
        let got = results.lock().unwrap().clone();
        assert_eq!(got.len(), 3);
        assert!(got[0].0 == "a" && got[1].0 == "b" && got[2] == ("c", Ok(())), "{got:?}");
        assert!(got[0].1.as_ref().unwrap_err().contains("stream busy"), "{got:?}");
        assert!(got[1].1.as_ref().unwrap_err().contains("stream busy"), "{got:?}");
    }

    #[test]
    fn a_continuation_that_panics_leaves_the_others_and_the_queue_working() {
        let p = SyncPoint::default();
        let ran = Arc::new(AtomicUsize::new(0));
        let count = || -> Then {
            let ran = ran.clone();
            Box::new(move |r, _| {
                r.unwrap();
                ran.fetch_add(1, Ordering::SeqCst);
            })
        };
        assert!(p.enqueue(ticket(), count()));
        p.enqueue(ticket(), Box::new(|_, _| panic!("lost part")));
        p.enqueue(ticket(), count());
        p.drain(driver(), || Ok(()));
        assert_eq!(ran.load(Ordering::SeqCst), 2);
        assert!(p.enqueue(ticket(), count()), "the queue stayed marked as draining");
        p.drain(driver(), || Ok(()));
        assert_eq!(ran.load(Ordering::SeqCst), 3);
    }

    /// A blocking waiter's synchronization covered the older of two queued parts: the round
    /// must still synchronize for the newer one.
    #[test]
    fn a_round_waits_for_its_newest_part() {
        let (p, sim) = (SyncPoint::default(), Arc::new(SimStream::default()));
        let ran = Arc::new(AtomicUsize::new(0));
        let check = |mine: u64| -> Then {
            let (ran, sim) = (ran.clone(), sim.clone());
            Box::new(move |r, _| {
                r.unwrap();
                let done = sim.completed.load(Ordering::SeqCst);
                assert!(done >= mine, "work {mine} not done when its part went on ({done})");
                ran.fetch_add(1, Ordering::SeqCst);
            })
        };
        let a_work = sim.queued.fetch_add(1, Ordering::SeqCst) + 1;
        let a = ticket();
        assert!(p.enqueue(a, check(a_work)));
        p.since(a, || sim.synchronize()).unwrap();
        let b_work = sim.queued.fetch_add(1, Ordering::SeqCst) + 1;
        assert!(!p.enqueue(ticket(), check(b_work)));
        p.drain(driver(), || sim.synchronize());
        assert_eq!(ran.load(Ordering::SeqCst), 2);
        assert_eq!(sim.syncs.load(Ordering::SeqCst), 2);
    }
}
