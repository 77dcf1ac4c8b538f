//! The limits a bench result is measured against, in the same run: the pinned host↔device copy
//! bandwidth of the GPU, and a plain parallel read of the same file into host memory.

use std::fs::File;
use std::time::{Duration, Instant};

use gdio::gpu::{DeviceBuffer, PinnedBuffer};
use gdio::Driver;

/// Copy bandwidth between pinned host memory and GPU `ordinal`, in GB/s (10^9 bytes/s):
/// `copies` back-to-back copies of `chunk` bytes on one stream, best of three rounds.
pub fn pinned_copy_gbps(
    driver: &Driver,
    ordinal: usize,
    to_device: bool,
    chunk: usize,
    copies: usize,
) -> Result<f64, String> {
    let rt = driver.runtime();
    let mut host = PinnedBuffer::new(rt, ordinal, chunk).map_err(|e| e.to_string())?;
    super::data::fill_random(host.as_mut_slice(), 9, 4)?;
    let dev = DeviceBuffer::new(rt, ordinal, chunk).map_err(|e| e.to_string())?;
    let mut stream = rt.new_stream(ordinal, 1).map_err(|e| e.to_string())?;
    let mut best = 0.0f64;
    for round in 0..4 {
        let t = Instant::now();
        for _ in 0..copies {
            // SAFETY: both buffers are live for `chunk` bytes and we synchronize before they drop.
            unsafe {
                if to_device {
                    stream.copy_to_device(dev.addr(), host.as_ptr(), chunk)
                } else {
                    stream.copy_to_host(host.as_mut_ptr(), dev.addr(), chunk)
                }
            }
            .map_err(|e| e.to_string())?;
        }
        stream.synchronize().map_err(|e| e.to_string())?;
        let secs = t.elapsed().as_secs_f64();
        if round > 0 {
            best = best.max((chunk * copies) as f64 / secs / 1e9);
        }
    }
    Ok(best)
}

/// How many passes the plain parallel read of the file takes before its best counts as the
/// host's limit. A page-cached read of the default 1 GiB file takes about 20 ms on the H200's
/// host, and the best of two such passes read 58.72 and 47.66 GB/s in two runs of one call
/// (session 46), so a cached read goes on past `min_passes` until `min_secs` of reading is
/// timed, up to `max_passes`. A cold read (`--cold`: the page cache dropped before each pass,
/// every byte from the disk) takes its passes from the run's iterations, at most two.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostReadPasses {
    /// Passes always taken.
    pub min_passes: usize,
    /// Timed reading after which no further pass starts once `min_passes` are done.
    pub min_secs: f64,
    /// Passes never exceeded.
    pub max_passes: usize,
}

impl HostReadPasses {
    /// The passes for a bench of `iterations` timed iterations, cold or from the page cache.
    pub fn for_run(iterations: usize, cold: bool) -> HostReadPasses {
        if cold {
            let n = iterations.clamp(1, 2);
            return HostReadPasses { min_passes: n, min_secs: 0.0, max_passes: n };
        }
        HostReadPasses { min_passes: 3, min_secs: 0.25, max_passes: 12 }
    }

    /// Whether another pass starts after `done` passes that read for `timed` in all.
    pub fn another(&self, done: usize, timed: Duration) -> bool {
        done < self.min_passes || (done < self.max_passes && timed.as_secs_f64() < self.min_secs)
    }
}

/// The host's plain parallel read of `size` bytes of `file` (named `what` in errors) on
/// `threads` threads into `into`, in GB/s: the best pass of `passes` ([`HostReadPasses`]), the
/// page cache dropped before each pass when `cold`.
pub fn host_read_gbps(
    file: &File,
    what: &str,
    size: u64,
    threads: usize,
    cold: bool,
    into: &mut super::data::ReadInto<'_>,
    passes: HostReadPasses,
) -> Result<f64, String> {
    let mut best = 0.0f64;
    let mut timed = Duration::ZERO;
    let mut done = 0;
    while passes.another(done, timed) {
        if cold {
            super::data::drop_cache(file, what)?;
        }
        let t = Instant::now();
        let got = super::data::plain_read(file, what, size, threads, cold, into)?;
        let took = t.elapsed();
        timed += took;
        done += 1;
        best = best.max(got as f64 / took.as_secs_f64().max(1e-9) / 1e9);
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_read_takes_three_passes_then_goes_on_until_a_quarter_second_is_timed() {
        let p = HostReadPasses::for_run(3, false);
        let ms = Duration::from_millis;
        assert!(p.another(2, ms(900)), "fewer than three passes: always another");
        assert!(p.another(3, ms(60)), "three short passes: another");
        assert!(!p.another(3, ms(250)), "a quarter second timed: done");
        assert!(!p.another(12, ms(1)), "never more than twelve");
        assert!(p.another(11, ms(1)));
    }

    #[test]
    fn a_cold_read_takes_its_passes_from_the_iterations_at_most_two() {
        for (iterations, want) in [(0, 1), (1, 1), (2, 2), (3, 2), (9, 2)] {
            let p = HostReadPasses::for_run(iterations, true);
            let n = (0..).take_while(|&d| p.another(d, Duration::ZERO)).count();
            assert_eq!(n, want, "{iterations} iterations: passes until no other starts");
        }
    }

    #[test]
    fn the_limit_is_the_best_pass_of_a_read_that_returns_the_files_bytes() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut bytes = vec![0u8; 3 << 20];
        super::super::data::fill_random(&mut bytes, 46, 2).unwrap();
        std::fs::File::create(&path).unwrap().write_all(&bytes).unwrap();
        let f = File::open(&path).unwrap();
        let mut mem = vec![0u8; bytes.len()];
        let passes = HostReadPasses { min_passes: 2, min_secs: 0.0, max_passes: 2 };
        let mut into = super::super::data::ReadInto::Memory(&mut mem);
        let gbps =
            host_read_gbps(&f, "f", bytes.len() as u64, 2, false, &mut into, passes).unwrap();
        assert!(gbps > 0.0 && gbps.is_finite(), "{gbps}");
        assert!(mem == bytes, "the read put the file's bytes in place");
    }
}
