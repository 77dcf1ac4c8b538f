use super::*;
use std::thread;

fn entry(cookie: u64, size: u64) -> BatchEntry<u32> {
    BatchEntry {
        op: BatchOp::Read,
        handle: 7,
        buf_base: 0x1000,
        buf_offset: 0,
        file_offset: cookie * 100,
        size,
        cookie,
    }
}

/// Completes each entry at once with its size, as the temporary sync executor does.
fn sync_exec(work: Vec<(BatchEntry<u32>, Completion)>) {
    for (e, c) in work {
        c.complete(EntryStatus::Complete(e.size));
    }
}

#[test]
fn setup_capacity_limits() {
    let t = BatchTable::new(128);
    assert_eq!(t.setup(0), Err(BatchError::InvalidValue));
    assert_eq!(t.setup(129), Err(BatchError::InvalidValue));
    let a = t.setup(128).unwrap();
    let b = t.setup(1).unwrap();
    assert_ne!(a, b);
    assert_eq!(t.len(), 2);
    assert!(t.destroy(a));
    assert!(!t.destroy(a));
    assert_eq!(t.submit(a, vec![entry(1, 1)], &sync_exec), Err(BatchError::InvalidValue));
}

#[test]
fn events_echo_cookies_and_full_is_refused() {
    let t = BatchTable::new(128);
    let id = t.setup(4).unwrap();
    t.submit(id, (1..=3).map(|c| entry(c, c * 10)).collect(), &sync_exec).unwrap();
    // 3 in flight (not yet reported) + 2 > 4.
    assert_eq!(t.submit(id, vec![entry(8, 1), entry(9, 1)], &sync_exec), Err(BatchError::Full));
    assert_eq!(t.submit::<u32>(id, vec![], &sync_exec), Err(BatchError::InvalidValue));
    assert_eq!(t.status(id, 3, 2, Wait::UntilMinNr), Err(BatchError::InvalidValue));
    let ev = t.status(id, 2, 2, Wait::UntilMinNr).unwrap();
    assert_eq!(
        ev,
        vec![
            BatchEvent { cookie: 1, status: EntryStatus::Complete(10) },
            BatchEvent { cookie: 2, status: EntryStatus::Complete(20) }
        ]
    );
    // Reported entries free capacity.
    t.submit(id, vec![entry(8, 1), entry(9, 2)], &sync_exec).unwrap();
    let ev = t.status(id, 0, 10, Wait::For(Duration::ZERO)).unwrap();
    assert_eq!(ev.iter().map(|e| e.cookie).collect::<Vec<_>>(), vec![3, 8, 9]);
    // Nothing in flight: min_nr is capped, so this returns at once with nothing.
    assert!(t.status(id, 4, 4, Wait::UntilMinNr).unwrap().is_empty());
}

#[test]
fn nonsensical_timeout_waits_for_min_nr() {
    assert_eq!(Wait::from_timespec(None), Wait::UntilMinNr);
    assert_eq!(Wait::from_timespec(Some((-1, 0))), Wait::UntilMinNr);
    assert_eq!(Wait::from_timespec(Some((0, 2_000_000_000))), Wait::UntilMinNr);
    assert_eq!(Wait::from_timespec(Some((i64::MAX, 0))), Wait::UntilMinNr);
    assert_eq!(Wait::from_timespec(Some((0, 0))), Wait::For(Duration::ZERO));

    let t = Arc::new(BatchTable::new(8));
    let id = t.setup(8).unwrap();
    let held: Arc<Mutex<Vec<Completion>>> = Arc::default();
    let h2 = held.clone();
    let exec = move |w: Vec<(BatchEntry<u32>, Completion)>| {
        h2.lock().unwrap().extend(w.into_iter().map(|(_, c)| c));
    };
    t.submit(id, vec![entry(1, 5), entry(2, 6)], &exec).unwrap();
    // A valid short timeout returns fewer than min_nr.
    assert!(t.status(id, 2, 2, Wait::For(Duration::from_millis(10))).unwrap().is_empty());
    let t2 = t.clone();
    let waiter = thread::spawn(move || t2.status(id, 2, 2, Wait::from_timespec(Some((-5, -5)))));
    thread::sleep(Duration::from_millis(50));
    let cs = held.lock().unwrap().clone();
    cs[1].complete(EntryStatus::Failed(-5));
    thread::sleep(Duration::from_millis(50));
    assert!(!waiter.is_finished(), "returned before min_nr events");
    cs[0].complete(EntryStatus::Complete(5));
    cs[0].complete(EntryStatus::Complete(99)); // a second report is ignored
    let ev = waiter.join().unwrap().unwrap();
    assert_eq!(
        ev,
        vec![
            BatchEvent { cookie: 2, status: EntryStatus::Failed(-5) },
            BatchEvent { cookie: 1, status: EntryStatus::Complete(5) }
        ]
    );
}

#[test]
fn cancel_reports_pending_and_destroy_wakes_waiters() {
    let t = Arc::new(BatchTable::new(8));
    let id = t.setup(8).unwrap();
    let held: Arc<Mutex<Vec<Completion>>> = Arc::default();
    let h2 = held.clone();
    let exec = move |w: Vec<(BatchEntry<u32>, Completion)>| {
        h2.lock().unwrap().extend(w.into_iter().map(|(_, c)| c));
    };
    t.submit(id, vec![entry(1, 5), entry(2, 6)], &exec).unwrap();
    held.lock().unwrap()[0].complete(EntryStatus::Complete(5));
    t.cancel(id).unwrap();
    // A completion after cancel is ignored.
    held.lock().unwrap()[1].complete(EntryStatus::Complete(6));
    let ev = t.status(id, 2, 8, Wait::UntilMinNr).unwrap();
    assert_eq!(ev[0], BatchEvent { cookie: 1, status: EntryStatus::Complete(5) });
    assert_eq!(ev[1], BatchEvent { cookie: 2, status: EntryStatus::Canceled });
    assert_eq!(t.cancel(12345), Err(BatchError::InvalidValue));

    t.submit(id, vec![entry(3, 1)], &exec).unwrap();
    let t2 = t.clone();
    let waiter = thread::spawn(move || t2.status(id, 1, 1, Wait::UntilMinNr));
    thread::sleep(Duration::from_millis(30));
    t.destroy(id);
    assert_eq!(waiter.join().unwrap(), Err(BatchError::InvalidValue));
    assert!(t.is_empty());
}
