//! One timed pass: requests of one shape (size, number in flight, sequential or random order)
//! over `[0, size)`, issued from the bench's own threads, each byte exactly once; the mover is
//! gdio (the sync `Driver` API) or a plain `pread`/`pwrite` for the limits.

use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use gdio::cpu_steal::CpuTicks;
use gdio::{Driver, FileHandle};

use super::data::on_threads;
use super::progress::Progress;

/// The order of the requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// Offsets in increasing order (each thread takes the next one).
    Seq,
    /// Offsets aligned to the I/O size in a random order that covers every one exactly once.
    Random,
}

impl Pattern {
    /// `seq` or `random`.
    pub fn label(self) -> &'static str {
        match self {
            Pattern::Seq => "seq",
            Pattern::Random => "random",
        }
    }
}

/// The shape of the requests of a pass.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Bytes per request (the last one may be shorter).
    pub io_size: u64,
    /// Requests in flight (threads issuing them).
    pub depth: usize,
    /// Order.
    pub pattern: Pattern,
}

/// What moves the bytes of one request.
pub enum Mover<'a> {
    /// gdio, into or out of `base` (device or host address).
    Gdio { driver: &'a Driver, file: &'a FileHandle, base: u64, device: bool, write: bool },
    /// A plain `pread` into host memory at `base` (the host-target limit).
    PlainRead { fd: BorrowedFd<'a>, base: usize },
    /// A plain `pwrite` from host memory `ring`: the bytes at the same offset when it holds
    /// the whole range, else reused in a ring (the write limit).
    PlainWrite { fd: BorrowedFd<'a>, ring: &'a [u8] },
}

impl Mover<'_> {
    fn io(&self, off: u64, n: usize) -> Result<usize, String> {
        let os = |e: i32| std::io::Error::from_raw_os_error(e).to_string();
        match *self {
            // SAFETY: [base+off, base+off+n) lies inside the caller's memory of `size` bytes,
            // which outlives the pass; each request covers its own range.
            Mover::Gdio { driver, file, base, device, write } => unsafe {
                match (write, device) {
                    (false, true) => driver.read_device_ptr(file, off, base + off, n),
                    (false, false) => driver.read_host_ptr(file, off, (base + off) as *mut u8, n),
                    (true, true) => driver.write_device_ptr(file, off, base + off, n),
                    (true, false) => driver.write_host_ptr(file, off, (base + off) as *const u8, n),
                }
            }
            .map_err(|e| e.to_string()),
            // SAFETY: as above, host memory of at least `size` bytes.
            Mover::PlainRead { fd, base } => unsafe {
                gdio::file::posix::pread_full_raw(fd, (base + off as usize) as *mut u8, n, off)
            }
            .map_err(|e| format!("pread at offset {off} failed: {}", os(e))),
            Mover::PlainWrite { fd, ring } => {
                let mut done = 0usize;
                while done < n {
                    let p = ((off + done as u64) % ring.len() as u64) as usize;
                    let m = (n - done).min(ring.len() - p);
                    gdio::file::posix::pwrite_all(fd, &ring[p..p + m], off + done as u64)
                        .map_err(|(_, e)| format!("pwrite at offset {off} failed: {}", os(e)))?;
                    done += m;
                }
                Ok(n)
            }
        }
    }
}

/// Per-request latencies in buckets of 1/32 of an octave (about 2 %): memory stays the same
/// whatever the number of requests.
#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Vec<u64>,
}

const PER_OCTAVE: f64 = 32.0;
const BUCKETS: usize = 48 * 32; // up to 2^48 ns: three days

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: vec![0; BUCKETS] }
    }
}

impl Histogram {
    /// Adds one latency.
    pub fn record(&mut self, seconds: f64) {
        let ns = (seconds * 1e9).max(1.0);
        let b = (ns.log2() * PER_OCTAVE) as usize;
        self.counts[b.min(BUCKETS - 1)] += 1;
    }

    /// Adds all of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }

    /// Requests recorded.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The latency below which a fraction `q` of the requests fall, in milliseconds.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        let total = self.count();
        if total == 0 {
            return 0.0;
        }
        let rank = ((total as f64 - 1.0) * q).round() as u64;
        let mut seen = 0;
        for (b, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen > rank {
                return 2f64.powf((b as f64 + 0.5) / PER_OCTAVE) / 1e6;
            }
        }
        0.0
    }
}

/// A permutation of `0..n` (a Feistel network over the next power of four, walking cycles
/// until the value falls inside): random order, every index once, no memory.
pub struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Permutation {
    /// A permutation of `0..n` chosen by `seed`.
    pub fn new(n: u64, seed: u64) -> Permutation {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let keys = [mix(seed), mix(seed ^ 1), mix(seed ^ 2), mix(seed ^ 3)];
        Permutation { n, half_bits, keys }
    }

    /// The `i`-th index.
    pub fn at(&self, i: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let mut x = i;
        loop {
            let (mut l, mut r) = (x >> self.half_bits, x & mask);
            for k in self.keys {
                (l, r) = (r, l ^ (mix(r ^ k) & mask));
            }
            x = (l << self.half_bits) | r;
            if x < self.n {
                return x;
            }
        }
    }
}

/// What one pass measured.
pub struct Pass {
    /// Wall-clock seconds.
    pub seconds: f64,
    /// CPU seconds of the process (user + system).
    pub cpu: f64,
    /// Latencies.
    pub hist: Histogram,
    /// Requests done.
    pub ios: u64,
    /// The machine's CPU ticks over the pass (how much the hypervisor took), where
    /// `/proc/stat` could be read before and after.
    pub ticks: Option<CpuTicks>,
}

/// CPU seconds of this process so far.
pub fn cpu_seconds() -> f64 {
    // SAFETY: rusage is plain old data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage into the zeroed local.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Moves `[0, size)` once in requests of `shape`, `shape.depth` threads each issuing one at a
/// time; a short transfer or an error stops the pass and is returned.
pub fn run(
    mover: &Mover<'_>,
    size: u64,
    shape: Shape,
    seed: u64,
    progress: &Progress,
) -> Result<Pass, String> {
    let io = shape.io_size.max(1);
    let count = size.div_ceil(io);
    let perm = Permutation::new(count, seed);
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let hist = Mutex::new(Histogram::default());
    let cpu0 = cpu_seconds();
    let ticks0 = CpuTicks::now();
    let t0 = Instant::now();
    let r = on_threads(shape.depth, |_| {
        let mut mine = Histogram::default();
        let result = (|| {
            while !stop.load(Ordering::Relaxed) {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    break;
                }
                let block = match shape.pattern {
                    Pattern::Seq => i,
                    Pattern::Random => perm.at(i),
                };
                let off = block * io;
                let n = io.min(size - off) as usize;
                let t = Instant::now();
                let got = mover.io(off, n)?;
                mine.record(t.elapsed().as_secs_f64());
                if got != n {
                    return Err(format!("short transfer at offset {off}: {got} of {n} bytes"));
                }
                progress.add(n as u64);
            }
            Ok(())
        })();
        if result.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        hist.lock().unwrap_or_else(|p| p.into_inner()).merge(&mine);
        result
    });
    let seconds = t0.elapsed().as_secs_f64();
    let ticks = CpuTicks::since_reading(ticks0);
    r?;
    let hist = hist.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok(Pass { seconds, cpu: cpu_seconds() - cpu0, ios: hist.count(), hist, ticks })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutation_covers_every_index_once_out_of_order() {
        for n in [1u64, 2, 3, 5, 64, 1000, 4097] {
            let p = Permutation::new(n, 7);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let x = p.at(i);
                assert!(!seen[x as usize], "n={n}: {x} twice");
                seen[x as usize] = true;
            }
            if n >= 64 {
                let in_place = (0..n).filter(|&i| p.at(i) == i).count();
                assert!(in_place < n as usize / 8, "n={n}: {in_place} fixed points");
            }
        }
    }

    #[test]
    fn histogram_quantiles_within_a_few_percent() {
        let mut h = Histogram::default();
        for i in 1..=1000 {
            h.record(i as f64 * 1e-6); // 1 µs .. 1 ms
        }
        assert_eq!(h.count(), 1000);
        let p50 = h.quantile_ms(0.5);
        let p99 = h.quantile_ms(0.99);
        assert!((p50 - 0.5).abs() < 0.5 * 0.03, "{p50}");
        assert!((p99 - 0.99).abs() < 0.99 * 0.03, "{p99}");
    }
}
