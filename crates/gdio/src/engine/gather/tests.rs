//! Runs of adjacent pieces in a gathered group: how a run's bytes split among its pieces, and
//! a run that fails part-way (an injected `EIO` inside one piece) failing only that piece's
//! request, for reads and for writes (simulated GPU, sequential requests queued in one batch).

use std::sync::Arc;
use std::time::Duration;

use rand::{RngCore, SeedableRng};

use super::run_shares;
use crate::file::fault::{self, FaultPlan};
use crate::gpu::sim::SimRuntime;
use crate::{BatchEntry, BatchState, Config, DirectIoPolicy, Driver, FileHandle, Op, OpenOptions};

#[test]
fn a_runs_bytes_go_to_its_pieces_in_order() {
    let shares = |n: usize, lens: &[usize]| run_shares(n, lens.iter().copied()).collect::<Vec<_>>();
    assert_eq!(shares(12_288, &[4096, 4096, 4096]), [4096, 4096, 4096]);
    assert_eq!(shares(10_000, &[4096, 4096, 4096]), [4096, 4096, 1808]);
    assert_eq!(shares(8192, &[4096, 4096, 4096]), [4096, 4096, 0]);
    assert_eq!(shares(0, &[512, 1024]), [0, 0]);
    assert_eq!(shares(700, &[512, 1024, 512]), [512, 188, 0]);
    assert!(shares(5, &[]).is_empty());
}

/// Random bytes from a seed.
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    rand::rngs::StdRng::seed_from_u64(seed).fill_bytes(&mut v);
    v
}

/// 48 sequential requests of 4–28 KiB from file offset 0, each at its own place of a device
/// buffer (with a gap of 100 bytes before it): (file offset, length, device offset), and the
/// buffer size.
fn sequential() -> (Vec<(u64, usize, u64)>, usize) {
    let (mut off, mut at, mut v) = (0u64, 0u64, Vec::new());
    for i in 0..48u64 {
        let len = 4096 * (1 + (i * 5 % 7)) as usize;
        at += 100;
        v.push((off, len, at));
        off += len as u64;
        at += len as u64;
    }
    (v, at as usize + 1)
}

/// Runs every request of `plans` as `op` in one batch; returns each one's final state.
fn run(
    drv: &Driver,
    file: &Arc<FileHandle>,
    plans: &[(u64, usize, u64)],
    base: u64,
    op: Op,
) -> Vec<BatchState> {
    let mut batch = drv.batch(plans.len()).unwrap();
    let entries: Vec<BatchEntry> = plans
        .iter()
        .enumerate()
        .map(|(i, &(off, len, at))| BatchEntry {
            op,
            file: file.clone(),
            file_offset: off,
            buf_base: base,
            buf_offset: at,
            len,
            cookie: i as u64,
            memory: None,
        })
        .collect();
    // SAFETY: the device buffer outlives the batch (every event is waited for below); the
    // entries' device ranges do not overlap.
    unsafe { batch.submit(&entries) }.unwrap();
    let mut states = vec![None; plans.len()];
    let mut seen = 0;
    while seen < plans.len() {
        let st = batch.get_status(1, plans.len(), Some(Duration::from_secs(60))).unwrap();
        assert!(!st.timed_out, "batch timed out");
        for e in st.events {
            states[e.cookie as usize] = Some(e.state);
            seen += 1;
        }
    }
    states.into_iter().map(Option::unwrap).collect()
}

fn driver() -> Driver {
    let config = Config {
        threads: 1,
        bounce_buffer_size: 1 << 20,
        gather_max_bytes: 1 << 20,
        gather_max_pieces: 64,
        gather_piece_size: 64 << 10,
        gather_write_disk_min_bytes: 0,
        direct_io: DirectIoPolicy::Off,
        ..Config::default()
    };
    Driver::with_runtime(config, Arc::new(SimRuntime::new(1, Duration::from_micros(200)))).unwrap()
}

#[test]
fn a_read_run_that_fails_part_way_fails_only_the_piece_it_failed_in() {
    let d = tempfile::tempdir().unwrap();
    let (plans, total) = sequential();
    let size = plans.iter().map(|p| p.1).sum::<usize>();
    let data = bytes(1, size);
    let path = d.path().join("seq");
    std::fs::write(&path, &data).unwrap();
    let file = Arc::new(FileHandle::open(&path).unwrap());
    // Inside request 20 (neither at its first nor its last byte).
    let (bad_off, bad_len, _) = plans[20];
    let eio = bad_off + bad_len as u64 / 2;
    let drv = driver();
    let mut dev = drv.alloc_device(0, total).unwrap();
    let poison = bytes(2, total);
    dev.copy_from_host(0, &poison).unwrap();
    let armed =
        fault::inject(&path, FaultPlan { eio_at: Some(eio), ..Default::default() }).unwrap();
    let states = run(&drv, &file, &plans, dev.addr(), Op::Read);
    drop(armed);
    let mut want = poison.clone();
    for (i, (&(off, len, at), state)) in plans.iter().zip(&states).enumerate() {
        match state {
            BatchState::Complete(n) if i != 20 => {
                assert_eq!(*n, len, "request {i}");
                want[at as usize..at as usize + len]
                    .copy_from_slice(&data[off as usize..off as usize + len]);
            }
            BatchState::Failed(e) if i == 20 => assert_eq!(e.errno(), Some(libc::EIO), "{e}"),
            s => panic!("request {i} at {off}: unexpected {s:?}"),
        }
    }
    let mut back = vec![0u8; total];
    dev.copy_to_host(0, &mut back).unwrap();
    assert!(back == want, "a good piece is wrong, or the failed one wrote into its buffer");
    let c = drv.engine().counters();
    assert!(c.adjacent_pieces > 0, "no run formed ({} gathered)", c.gathered_reads);
}

#[test]
fn a_write_run_that_fails_part_way_fails_only_the_piece_it_failed_in() {
    let d = tempfile::tempdir().unwrap();
    let (plans, total) = sequential();
    let size = plans.iter().map(|p| p.1).sum::<usize>();
    let poison = bytes(3, size);
    let path = d.path().join("seq");
    std::fs::write(&path, &poison).unwrap();
    let file =
        Arc::new(FileHandle::open_with(&path, OpenOptions::new().read(true).write(true)).unwrap());
    let (bad_off, bad_len, _) = plans[20];
    let eio = bad_off + bad_len as u64 / 2;
    let drv = driver();
    let mut dev = drv.alloc_device(0, total).unwrap();
    let src = bytes(4, total);
    dev.copy_from_host(0, &src).unwrap();
    let armed =
        fault::inject(&path, FaultPlan { eio_at: Some(eio), ..Default::default() }).unwrap();
    let states = run(&drv, &file, &plans, dev.addr(), Op::Write);
    drop(armed);
    let mut want = poison.clone();
    for (i, (&(off, len, at), state)) in plans.iter().zip(&states).enumerate() {
        let piece = &src[at as usize..at as usize + len];
        match state {
            BatchState::Complete(n) if i != 20 => {
                assert_eq!(*n, len, "request {i}");
                want[off as usize..off as usize + len].copy_from_slice(piece);
            }
            BatchState::Failed(e) if i == 20 => {
                assert_eq!(e.errno(), Some(libc::EIO), "{e}");
                // The bytes before the bad one reached the file, as a plain pwrite's would.
                let before = (eio - off) as usize;
                want[off as usize..eio as usize].copy_from_slice(&piece[..before]);
            }
            s => panic!("request {i} at {off}: unexpected {s:?}"),
        }
    }
    assert!(std::fs::read(&path).unwrap() == want, "the file is not what the writes made it");
    let c = drv.engine().counters();
    assert!(c.adjacent_pieces > 0, "no run formed ({} gathered)", c.gathered_writes);
}
