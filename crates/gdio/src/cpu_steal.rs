//! How much of a virtual machine's CPU time the hypervisor gave to others: the "steal" that
//! Linux counts in `/proc/stat`.
//!
//! In a VM the CPUs that copy out of the page cache are vCPUs, and the host may run other work
//! on the cores behind them. The guest sees that as steal time: ticks in which a vCPU wanted to
//! run and the hypervisor ran something else. On the H100 machines of this workplace
//! (BENCHMARKS.md session 47 run 3, `bench/reader-scaling.c`) the hypervisor took 0.2–0.8 % of
//! the CPUs' time with up to four readers copying out of the page cache and 6.6–20.3 % with
//! twelve to sixteen, while each reader's rate fell from 7 GB/s to under 3. A row that reads
//! slowly while steal is high was slowed by the host, not by gdio; `gdio bench` says so.
//!
//! ```
//! use gdio::cpu_steal::CpuTicks;
//!
//! let before = CpuTicks::parse("cpu  100 0 50 800 10 0 5 35 0 0\n").unwrap();
//! let after = CpuTicks::parse("cpu  300 0 150 1400 10 0 5 135 0 0\n").unwrap();
//! let span = after.since(&before);
//! assert_eq!(span, CpuTicks { total: 1000, steal: 100 });
//! assert_eq!(span.steal_share(), Some(0.1));
//! ```

/// The least CPU ticks over which a steal share is given: ticks are 10 ms, so a span of
/// fewer than this many (one CPU for one second) says too little to tell one percent.
pub const MIN_TICKS: u64 = 100;

/// CPU time of the whole machine, in the ticks of `/proc/stat`'s first line (all CPUs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    /// Every tick counted: user, nice, system, idle, iowait, irq, softirq and steal (guest
    /// time is already inside user and nice, so it is not added again).
    pub total: u64,
    /// Ticks in which a vCPU was ready to run and the hypervisor ran something else.
    pub steal: u64,
}

impl CpuTicks {
    /// The machine's ticks now, or `None` where `/proc/stat` cannot be read or parsed.
    pub fn now() -> Option<CpuTicks> {
        CpuTicks::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// The ticks of the `cpu` line of a `/proc/stat` text: `None` without one, or with fewer
    /// than the eight counters up to steal (kernels before 2.6.11).
    pub fn parse(stat: &str) -> Option<CpuTicks> {
        let line = stat.lines().find(|l| l.split_whitespace().next() == Some("cpu"))?;
        let n: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .take(8)
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        if n.len() < 8 {
            return None;
        }
        Some(CpuTicks { total: n.iter().sum(), steal: n[7] })
    }

    /// The ticks from `start` (a reading of [`CpuTicks::now`]) to now, or `None` where either
    /// reading failed.
    pub fn since_reading(start: Option<CpuTicks>) -> Option<CpuTicks> {
        let start = start?;
        Some(CpuTicks::now()?.since(&start))
    }

    /// The ticks from `before` to `self` (zero where a counter went back).
    pub fn since(&self, before: &CpuTicks) -> CpuTicks {
        CpuTicks {
            total: self.total.saturating_sub(before.total),
            steal: self.steal.saturating_sub(before.steal),
        }
    }

    /// The ticks of two spans together.
    pub fn plus(&self, other: &CpuTicks) -> CpuTicks {
        CpuTicks {
            total: self.total.saturating_add(other.total),
            steal: self.steal.saturating_add(other.steal),
        }
    }

    /// The share of a span's CPU time the hypervisor took, or `None` for a span of fewer
    /// than [`MIN_TICKS`] ticks.
    pub fn steal_share(&self) -> Option<f64> {
        (self.total >= MIN_TICKS).then(|| self.steal.min(self.total) as f64 / self.total as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_line_is_summed_up_to_steal_and_guest_time_left_out() {
        // user nice system idle iowait irq softirq steal guest guest_nice
        let stat = "cpu  7 11 13 1000 17 19 23 29 31 37\ncpu0 1 1 1 1 1 1 1 1 0 0\nintr 5\n";
        let t = CpuTicks::parse(stat).unwrap();
        assert_eq!(t, CpuTicks { total: 7 + 11 + 13 + 1000 + 17 + 19 + 23 + 29, steal: 29 });
    }

    #[test]
    fn a_text_without_a_whole_cpu_line_gives_none() {
        assert_eq!(CpuTicks::parse(""), None);
        assert_eq!(CpuTicks::parse("cpu0 1 2 3 4 5 6 7 8\n"), None);
        assert_eq!(CpuTicks::parse("cpu  1 2 3 4 5 6 7\n"), None, "no steal counter");
        assert_eq!(CpuTicks::parse("cpu  1 2 3 x 5 6 7 8\n"), None);
    }

    #[test]
    fn spans_subtract_add_and_give_a_share_only_when_long_enough() {
        let a = CpuTicks { total: 5_000, steal: 40 };
        let b = CpuTicks { total: 5_400, steal: 100 };
        let span = b.since(&a);
        assert_eq!(span, CpuTicks { total: 400, steal: 60 });
        assert_eq!(span.steal_share(), Some(0.15));
        assert_eq!(a.since(&b), CpuTicks::default(), "counters that went back give zero");
        let short = CpuTicks { total: MIN_TICKS - 1, steal: 50 };
        assert_eq!(short.steal_share(), None);
        let both = short.plus(&CpuTicks { total: 1, steal: 0 });
        assert_eq!(both.steal_share(), Some(50.0 / MIN_TICKS as f64));
    }

    #[test]
    fn a_span_needs_both_readings() {
        assert_eq!(CpuTicks::since_reading(None), None);
        if let Some(start) = CpuTicks::now() {
            let span = CpuTicks::since_reading(Some(start)).expect("read twice");
            assert!(span.steal <= span.total, "{span:?}");
        }
    }

    #[test]
    fn this_machine_reads_and_its_ticks_do_not_go_back() {
        let Some(a) = CpuTicks::now() else {
            return; // no /proc here: nothing to read
        };
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = CpuTicks::now().unwrap();
        assert!(b.total >= a.total && b.steal >= a.steal, "{a:?} then {b:?}");
        assert!(b.steal <= b.total);
    }
}
