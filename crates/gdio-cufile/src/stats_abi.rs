//! Fills cuFile 1.15's statistics structs from [`gdio::op_stats::OpStats`] (what callers asked)
//! and gdio's per-backend [`gdio::StatsSnapshot`] (which path served).

use std::sync::atomic::Ordering::Relaxed;

use gdio::op_stats::{DirStats, OpCounter, MAX_GPUS};

use crate::abi::{CUfileOpCounter_t, CUfilePerGpuStats_t, CUfileStatsLevel1_t};
use crate::session::Session;

fn counter(c: &OpCounter) -> CUfileOpCounter_t {
    let (ok, err) = c.get();
    CUfileOpCounter_t { ok, err }
}

fn per_sec(amount: u64, us: u64) -> u64 {
    if us == 0 {
        0
    } else {
        (amount as u128 * 1_000_000 / us as u128) as u64
    }
}

fn avg(sum: u64, n: u64) -> u64 {
    sum.checked_div(n).unwrap_or(0)
}

fn dir(d: &DirStats) -> (CUfileOpCounter_t, u64, u64) {
    (counter(&d.ops), d.bytes.load(Relaxed), d.lat_sum_us.load(Relaxed))
}

/// Level 1.
pub fn level1(s: &Session) -> CUfileStatsLevel1_t {
    let st = &s.stats;
    let (read_ops, read_bytes, read_lat) = dir(&st.read);
    let (write_ops, write_bytes, write_lat) = dir(&st.write);
    let nr = read_ops.ok + read_ops.err;
    let nw = write_ops.ok + write_ops.err;
    let submit = counter(&st.batch_submit);
    let entries = st.batch_entries.load(Relaxed);
    let submit_us = st.batch_submit_us.load(Relaxed);
    // gdio serves every batch entry through POSIX-style reads today (compat / host backends);
    // the gds backend's share shows in the per-GPU p2p counters.
    CUfileStatsLevel1_t {
        read_ops,
        write_ops,
        hdl_register_ops: counter(&st.handle_register),
        hdl_deregister_ops: counter(&st.handle_deregister),
        buf_register_ops: counter(&st.buf_register),
        buf_deregister_ops: counter(&st.buf_deregister),
        read_bytes,
        write_bytes,
        read_bw_bytes_per_sec: per_sec(read_bytes, read_lat),
        write_bw_bytes_per_sec: per_sec(write_bytes, write_lat),
        read_lat_avg_us: avg(read_lat, nr),
        write_lat_avg_us: avg(write_lat, nw),
        read_ops_per_sec: per_sec(nr, read_lat),
        write_ops_per_sec: per_sec(nw, write_lat),
        read_lat_sum_us: read_lat,
        write_lat_sum_us: write_lat,
        batch_submit_ops: submit,
        batch_complete_ops: counter(&st.batch_complete),
        batch_setup_ops: counter(&st.batch_setup),
        batch_cancel_ops: counter(&st.batch_cancel),
        batch_destroy_ops: counter(&st.batch_destroy),
        batch_enqueued_ops: CUfileOpCounter_t { ok: entries, err: 0 },
        batch_posix_enqueued_ops: CUfileOpCounter_t { ok: entries, err: 0 },
        batch_processed_ops: counter(&st.batch_complete),
        batch_posix_processed_ops: counter(&st.batch_complete),
        batch_total_submit_ops: submit,
        batch_read_bytes: st.batch_read_bytes.load(Relaxed),
        batch_write_bytes: st.batch_write_bytes.load(Relaxed),
        batch_submit_lat_avg_us: avg(submit_us, submit.ok + submit.err),
        batch_submit_lat_sum_us: submit_us,
        ..Default::default()
    }
}

/// Level 2's histograms.
pub fn histograms(s: &Session) -> ([u64; 32], [u64; 32]) {
    let h = |d: &DirStats| std::array::from_fn(|i| d.size_hist[i].load(Relaxed));
    (h(&s.stats.read), h(&s.stats.write))
}

/// Level 3's per-GPU entries (as many as the runtime has GPUs, at most 16).
pub fn per_gpu(s: &Session) -> (u32, [CUfilePerGpuStats_t; 16]) {
    let n = s.driver.runtime().device_count().min(MAX_GPUS);
    let backends = s.driver.stats();
    let fastpath = backends.backend("gds").ops;
    let mut out = [CUfilePerGpuStats_t::default(); 16];
    for (i, o) in out.iter_mut().enumerate().take(n) {
        let g = &s.stats.gpus[i];
        let reads = g.reads.load(Relaxed);
        let writes = g.writes.load(Relaxed);
        let (rb, wb) = (g.read_bytes.load(Relaxed), g.write_bytes.load(Relaxed));
        let (rus, wus) = (g.read_us.load(Relaxed), g.write_us.load(Relaxed));
        *o = CUfilePerGpuStats_t {
            read_bytes: rb,
            read_bw_bytes_per_sec: per_sec(rb, rus),
            read_duration_us: rus,
            n_total_reads: reads,
            n_posix_reads: if fastpath == 0 { reads } else { 0 },
            n_reads_err: g.read_errors.load(Relaxed),
            writes_bytes: wb,
            write_bw_bytes_per_sec: per_sec(wb, wus),
            write_duration_us: wus,
            n_total_writes: writes,
            n_posix_writes: if fastpath == 0 { writes } else { 0 },
            n_writes_err: g.write_errors.load(Relaxed),
            n_mmap: g.registrations.load(Relaxed),
            n_mmap_ok: g.registrations.load(Relaxed),
            reg_bytes: g.registered_bytes.load(Relaxed),
            ..Default::default()
        };
    }
    (n as u32, out)
}
