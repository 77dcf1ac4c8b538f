//! copybw, copylat and apiperf.

use crate::out::outln;
use std::process::ExitCode;
use std::time::Instant;

use gdio::gdr::{copy::CopyImpl, DeviceMemory, Gdr, MapInfo, PinFlags, PinnedRange, GPU_PAGE_SIZE};
use rand::Rng;
use serde::Serialize;

use super::{fail, Common, MapArg};

/// Options of `gdio gdr copybw`.
#[derive(clap::Args, Debug)]
pub struct CopybwArgs {
    #[command(flatten)]
    common: Common,
    /// Allocation size in bytes.
    #[arg(short = 's', long, default_value_t = 128 * 1024)]
    size: usize,
    /// Copy size in bytes (default: the allocation size minus the offset).
    #[arg(short = 'c', long)]
    copy_size: Option<usize>,
    /// Offset into the mapping, in bytes.
    #[arg(short = 'o', long, default_value_t = 0)]
    offset: usize,
    /// Write iterations.
    #[arg(short = 'w', long, default_value_t = 10000)]
    write_iters: u32,
    /// Read iterations.
    #[arg(short = 'r', long, default_value_t = 100)]
    read_iters: u32,
    /// Mapping type to request.
    #[arg(short = 'M', long, value_enum, default_value_t = MapArg::Default)]
    mapping: MapArg,
}

/// Options of `gdio gdr copylat`.
#[derive(clap::Args, Debug)]
pub struct CopylatArgs {
    #[command(flatten)]
    common: Common,
    /// Largest copy size in bytes (sizes 1, 2, 4, … up to it).
    #[arg(short = 's', long, default_value_t = 16 << 20)]
    size: usize,
    /// Write iterations per size.
    #[arg(short = 'w', long, default_value_t = 10000)]
    write_iters: u32,
    /// Read iterations per size.
    #[arg(short = 'r', long, default_value_t = 100)]
    read_iters: u32,
    /// Also time cuMemcpy H2D / D2H for comparison.
    #[arg(short = 'c', long)]
    cumemcpy: bool,
    /// Mapping type to request.
    #[arg(short = 'M', long, value_enum, default_value_t = MapArg::Default)]
    mapping: MapArg,
}

/// Options of `gdio gdr apiperf`.
#[derive(clap::Args, Debug)]
pub struct ApiperfArgs {
    #[command(flatten)]
    common: Common,
    /// Largest buffer size (sizes 64 KiB, 128 KiB, … up to it).
    #[arg(short = 's', long, default_value_t = 64 * 1024)]
    size: usize,
    /// Measured iterations per size.
    #[arg(short = 'n', long, default_value_t = 100)]
    iters: u32,
    /// Warm-up iterations per size.
    #[arg(short = 'w', long, default_value_t = 10)]
    warmup: u32,
    /// Mapping type to request.
    #[arg(short = 'M', long, value_enum, default_value_t = MapArg::Default)]
    mapping: MapArg,
}

/// GPU memory with a 64 KiB-aligned pinned and mapped range of `size` bytes.
struct Setup {
    _mem: DeviceMemory,
    range: PinnedRange,
    info: MapInfo,
}

fn setup(g: &Gdr, gpu: i32, size: usize, mapping: MapArg) -> gdio::Result<Setup> {
    let mem = DeviceMemory::alloc(gpu, size + GPU_PAGE_SIZE as usize)?;
    let base = mem.ptr().next_multiple_of(GPU_PAGE_SIZE);
    let range = g.pin(base, size as u64, PinFlags::DEFAULT)?;
    let info = range.map(mapping.flags())?;
    Ok(Setup { _mem: mem, range, info })
}

fn random(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    rand::rng().fill(&mut v[..]);
    v
}

fn print_info(g: &Gdr, info: &MapInfo) {
    outln!("backend: {}; copy routines: {}", g.backend().name(), CopyImpl::best().name());
    outln!("info.va: {:x}", info.va);
    outln!("info.mapped_size: {}", info.mapped_size);
    outln!("info.page_size: {}", info.page_size);
    outln!("info.mapped: {}", u8::from(info.mapped));
    outln!("info.wc_mapping: {}", u8::from(info.wc_mapping));
    outln!("info.mapping_type: {}", info.mapping_type.name());
}

/// `gdio gdr copybw`.
pub fn copybw(a: CopybwArgs) -> ExitCode {
    let g = match a.common.open("copybw") {
        Ok(g) => g,
        Err(code) => return code,
    };
    let run = || -> gdio::Result<serde_json::Value> {
        let s = setup(&g, a.common.gpu, a.size, a.mapping)?;
        let copy = a.copy_size.unwrap_or(a.size.saturating_sub(a.offset));
        let data = random(copy);
        if !a.common.json {
            print_info(&g, &s.info);
            outln!("writing test, size={copy} offset={} num_iters={}", a.offset, a.write_iters);
        }
        let t = Instant::now();
        for _ in 0..a.write_iters {
            s.range.copy_to_mapping(a.offset, &data)?;
        }
        let wbw = copy as f64 * f64::from(a.write_iters) / t.elapsed().as_secs_f64() / 1e6;
        if !a.common.json {
            outln!("write BW: {wbw:.2}MB/s");
            outln!("reading test, size={copy} offset={} num_iters={}", a.offset, a.read_iters);
        }
        let mut back = vec![0u8; copy];
        let t = Instant::now();
        for _ in 0..a.read_iters {
            s.range.copy_from_mapping(a.offset, &mut back)?;
        }
        let rbw = copy as f64 * f64::from(a.read_iters) / t.elapsed().as_secs_f64() / 1e6;
        if !a.common.json {
            outln!("read BW: {rbw:.2}MB/s");
        }
        if back != data {
            return Err(gdio::Error::new(
                gdio::ErrorKind::Io,
                "data read back through the mapping differs from what was written",
            ));
        }
        Ok(serde_json::json!({
            "tool": "copybw", "ok": true, "backend": g.backend().name(), "info": s.info,
            "copy_size": copy, "offset": a.offset,
            "write_iters": a.write_iters, "write_mb_s": wbw,
            "read_iters": a.read_iters, "read_mb_s": rbw,
        }))
    };
    match run() {
        Ok(v) => {
            if a.common.json {
                outln!("{v}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail("copybw", a.common.json, &e),
    }
}

/// Median and minimum of per-operation times in µs, from up to 100 buckets of iterations.
#[derive(Debug, Serialize, Clone, Copy)]
struct Lat {
    p50_us: f64,
    p0_us: f64,
}

fn measure(iters: u32, mut op: impl FnMut() -> gdio::Result<()>) -> gdio::Result<Lat> {
    let iters = iters.max(1);
    let buckets = iters.min(100);
    let per = iters / buckets;
    let mut t = Vec::with_capacity(buckets as usize);
    for _ in 0..buckets {
        let s = Instant::now();
        for _ in 0..per {
            op()?;
        }
        t.push(s.elapsed().as_secs_f64() * 1e6 / f64::from(per));
    }
    t.sort_by(f64::total_cmp);
    Ok(Lat { p50_us: t[t.len() / 2], p0_us: t[0] })
}

#[derive(Debug, Serialize)]
struct LatRow {
    size: usize,
    write: Lat,
    read: Lat,
    #[serde(skip_serializing_if = "Option::is_none")]
    cumemcpy_h2d: Option<Lat>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cumemcpy_d2h: Option<Lat>,
}

/// `gdio gdr copylat`.
pub fn copylat(a: CopylatArgs) -> ExitCode {
    let g = match a.common.open("copylat") {
        Ok(g) => g,
        Err(code) => return code,
    };
    let run = || -> gdio::Result<serde_json::Value> {
        let s = setup(&g, a.common.gpu, a.size, a.mapping)?;
        let data = random(a.size);
        let mut back = vec![0u8; a.size];
        if !a.common.json {
            print_info(&g, &s.info);
            outln!("CPU-observed API time, not GPU visibility time.");
            outln!(
                "{:>12} {:>14} {:>14} {:>14} {:>14}",
                "Size(B)",
                "write P50(us)",
                "write P0(us)",
                "read P50(us)",
                "read P0(us)"
            );
        }
        let mut rows = Vec::new();
        let mut size = 1usize;
        while size <= a.size {
            let w = measure(a.write_iters, || s.range.copy_to_mapping(0, &data[..size]))?;
            let r = measure(a.read_iters, || s.range.copy_from_mapping(0, &mut back[..size]))?;
            if back[..size] != data[..size] {
                return Err(gdio::Error::new(
                    gdio::ErrorKind::Io,
                    format!("data read back at size {size} differs from what was written"),
                ));
            }
            let (h2d, d2h) = if a.cumemcpy {
                let off = s.range.addr() - s._mem.ptr();
                (
                    Some(measure(a.write_iters.min(1000), || {
                        s._mem.write(off as usize, &data[..size])
                    })?),
                    Some(measure(a.read_iters, || s._mem.read(off as usize, &mut back[..size]))?),
                )
            } else {
                (None, None)
            };
            if !a.common.json {
                outln!(
                    "{size:>12} {:>14.3} {:>14.3} {:>14.3} {:>14.3}",
                    w.p50_us,
                    w.p0_us,
                    r.p50_us,
                    r.p0_us
                );
                if let (Some(h), Some(d)) = (h2d, d2h) {
                    outln!(
                        "{:>12} {:>14.3} {:>14.3} {:>14.3} {:>14.3}   (cuMemcpy)",
                        "",
                        h.p50_us,
                        h.p0_us,
                        d.p50_us,
                        d.p0_us
                    );
                }
            }
            rows.push(LatRow { size, write: w, read: r, cumemcpy_h2d: h2d, cumemcpy_d2h: d2h });
            size *= 2;
        }
        Ok(
            serde_json::json!({ "tool": "copylat", "ok": true, "backend": g.backend().name(), "info": s.info, "rows": rows }),
        )
    };
    match run() {
        Ok(v) => {
            if a.common.json {
                outln!("{v}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail("copylat", a.common.json, &e),
    }
}

#[derive(Debug, Serialize, Default)]
struct ApiRow {
    size: usize,
    pin_us: f64,
    map_us: f64,
    get_info_us: f64,
    unmap_us: f64,
    unpin_us: f64,
}

/// `gdio gdr apiperf`.
pub fn apiperf(a: ApiperfArgs) -> ExitCode {
    let g = match a.common.open("apiperf") {
        Ok(g) => g,
        Err(code) => return code,
    };
    let run = || -> gdio::Result<serde_json::Value> {
        let max = a.size.max(GPU_PAGE_SIZE as usize);
        let mem = DeviceMemory::alloc(a.common.gpu, max + GPU_PAGE_SIZE as usize)?;
        let base = mem.ptr().next_multiple_of(GPU_PAGE_SIZE);
        if !a.common.json {
            outln!("backend: {}", g.backend().name());
            outln!(
                "{:>12} {:>10} {:>10} {:>12} {:>10} {:>10}   (average us)",
                "Size(B)",
                "pin",
                "map",
                "get_info",
                "unmap",
                "unpin"
            );
        }
        let mut rows = Vec::new();
        let mut size = GPU_PAGE_SIZE as usize;
        while size <= max {
            let mut row = ApiRow { size, ..Default::default() };
            for i in 0..a.warmup + a.iters {
                let t0 = Instant::now();
                let r = g.pin(base, size as u64, PinFlags::DEFAULT)?;
                let t1 = Instant::now();
                r.map(a.mapping.flags())?;
                let t2 = Instant::now();
                r.info()?;
                let t3 = Instant::now();
                r.unmap()?;
                let t4 = Instant::now();
                r.unpin()?;
                let t5 = Instant::now();
                if i >= a.warmup {
                    let us = |x: Instant, y: Instant| {
                        (y - x).as_secs_f64() * 1e6 / f64::from(a.iters.max(1))
                    };
                    row.pin_us += us(t0, t1);
                    row.map_us += us(t1, t2);
                    row.get_info_us += us(t2, t3);
                    row.unmap_us += us(t3, t4);
                    row.unpin_us += us(t4, t5);
                }
            }
            if !a.common.json {
                outln!(
                    "{size:>12} {:>10.2} {:>10.2} {:>12.2} {:>10.2} {:>10.2}",
                    row.pin_us,
                    row.map_us,
                    row.get_info_us,
                    row.unmap_us,
                    row.unpin_us
                );
            }
            rows.push(row);
            size *= 2;
        }
        Ok(
            serde_json::json!({ "tool": "apiperf", "ok": true, "backend": g.backend().name(), "rows": rows }),
        )
    };
    match run() {
        Ok(v) => {
            if a.common.json {
                outln!("{v}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail("apiperf", a.common.json, &e),
    }
}
