//! `gdio gdr sanity`: checks the mapping path end to end on a real GPU, with random data
//! cross-checked against cuMemcpy, and every rule that must be refused.

use crate::out::outln;
use std::process::ExitCode;

use gdio::gdr::{Attribute, DeviceMemory, Gdr, MapFlags, MappingType, PinFlags, GPU_PAGE_SIZE};
use rand::Rng;
use serde::Serialize;

use super::Common;

/// Options of `gdio gdr sanity`.
#[derive(clap::Args, Debug)]
pub struct SanityArgs {
    #[command(flatten)]
    common: Common,
    /// List the tests and exit.
    #[arg(short = 'l', long)]
    list: bool,
    /// Run only this test (repeatable).
    #[arg(short = 't', long = "test")]
    tests: Vec<String>,
    /// Print details of each test.
    #[arg(short = 'v', long)]
    verbose: bool,
}

enum Outcome {
    Pass,
    Fail(String),
    Waived(String),
}

type R = Result<Outcome, gdio::Error>;
type Test = fn(&Gdr, i32, bool) -> R;

const TESTS: &[(&str, Test)] = &[
    ("versions_and_attributes", versions_and_attributes),
    ("basic_pin_map_copy", basic_pin_map_copy),
    ("basic_v1_pin", basic_v1_pin),
    ("basic_v2_forcepcie", basic_v2_forcepcie),
    ("data_validation_offsets", data_validation_offsets),
    ("unaligned_map_refused", unaligned_map_refused),
    ("one_map_per_handle", one_map_per_handle),
    ("unpin_while_mapped", unpin_while_mapped),
    ("managed_memory_refused", managed_memory_refused),
    ("spanning_two_allocations_refused", spanning_two_allocations_refused),
    ("threads_share_handles", threads_share_handles),
    ("mapping_type_request", mapping_type_request),
];

fn random(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    rand::rng().fill(&mut v[..]);
    v
}

fn expect(cond: bool, what: impl Into<String>) -> Result<(), gdio::Error> {
    if cond {
        Ok(())
    } else {
        Err(gdio::Error::new(gdio::ErrorKind::Io, what))
    }
}

/// Allocates `size` bytes plus slack and returns the memory and a 64 KiB-aligned address.
fn alloc(gpu: i32, size: usize) -> gdio::Result<(DeviceMemory, u64)> {
    let m = DeviceMemory::alloc(gpu, size + GPU_PAGE_SIZE as usize)?;
    let base = m.ptr().next_multiple_of(GPU_PAGE_SIZE);
    Ok((m, base))
}

fn versions_and_attributes(g: &Gdr, _gpu: i32, v: bool) -> R {
    let persistent = g.attribute(Attribute::UsePersistentMapping)?;
    let dmabuf = g.attribute(Attribute::UsingDmaBufMmap)?;
    expect(
        (dmabuf == 1) == (g.backend() == gdio::gdr::BackendKind::DmaBuf),
        "USING_DMA_BUF_MMAP disagrees with the backend",
    )?;
    if v {
        outln!(
            "  runtime {:?}, driver {:?}, persistent {persistent}, dma-buf {dmabuf}",
            gdio::gdr::runtime_version(),
            g.driver_version().ok()
        );
    }
    Ok(Outcome::Pass)
}

fn basic_pin_map_copy(g: &Gdr, gpu: i32, v: bool) -> R {
    let size = 1 << 20;
    let (mem, base) = alloc(gpu, size)?;
    let r = g.pin(base, size as u64, PinFlags::DEFAULT)?;
    let info = r.map(MapFlags::Default)?;
    if v {
        outln!("  {info:?}");
    }
    expect(
        info.va == base && info.mapped && info.mapped_size >= size as u64,
        "info does not describe the aligned pin",
    )?;
    let data = random(size);
    r.copy_to_mapping(0, &data)?;
    let mut via_cuda = vec![0u8; size];
    mem.read((base - mem.ptr()) as usize, &mut via_cuda)?;
    expect(via_cuda == data, "cuMemcpyDtoH does not see what was written through the mapping")?;
    let other = random(size);
    mem.write((base - mem.ptr()) as usize, &other)?;
    let mut via_map = vec![0u8; size];
    r.copy_from_mapping(0, &mut via_map)?;
    expect(via_map == other, "the mapping does not see what cuMemcpyHtoD wrote")?;
    r.unmap()?;
    r.unpin()?;
    Ok(Outcome::Pass)
}

fn basic_v1_pin(g: &Gdr, gpu: i32, _v: bool) -> R {
    let (_mem, base) = alloc(gpu, GPU_PAGE_SIZE as usize)?;
    let r = g.pin_v1(base, GPU_PAGE_SIZE, 0, 0)?;
    r.map(MapFlags::Default)?;
    let d = random(4096);
    r.copy_to_mapping(100, &d)?;
    let mut b = vec![0u8; 4096];
    r.copy_from_mapping(100, &mut b)?;
    expect(b == d, "round trip through the v1 pin differs")?;
    Ok(Outcome::Pass)
}

fn basic_v2_forcepcie(g: &Gdr, gpu: i32, _v: bool) -> R {
    if g.attribute(Attribute::SupportPinFlagForcePcie)? == 0 {
        return Ok(Outcome::Waived("FORCE_PCIE is not supported by this driver".into()));
    }
    let (_mem, base) = alloc(gpu, GPU_PAGE_SIZE as usize)?;
    let r = g.pin(base, GPU_PAGE_SIZE, PinFlags::FORCE_PCIE)?;
    let info = r.map(MapFlags::Default)?;
    expect(
        info.mapping_type == MappingType::Wc,
        format!("FORCE_PCIE gave a {} mapping", info.mapping_type.name()),
    )?;
    let d = random(999);
    r.copy_to_mapping(7, &d)?;
    let mut b = vec![0u8; 999];
    r.copy_from_mapping(7, &mut b)?;
    expect(b == d, "round trip with FORCE_PCIE differs")?;
    Ok(Outcome::Pass)
}

fn data_validation_offsets(g: &Gdr, gpu: i32, _v: bool) -> R {
    let size = 4 * GPU_PAGE_SIZE as usize;
    let (mem, base) = alloc(gpu, size)?;
    let r = g.pin(base, size as u64, PinFlags::DEFAULT)?;
    r.map(MapFlags::Default)?;
    let mut rng = rand::rng();
    for _ in 0..200 {
        let off = rng.random_range(0..size);
        let len = rng.random_range(0..=(size - off).min(70_000));
        let d = random(len);
        r.copy_to_mapping(off, &d)?;
        let mut cu = vec![0u8; len];
        mem.read((base - mem.ptr()) as usize + off, &mut cu)?;
        expect(cu == d, format!("offset {off} length {len}: cuMemcpy sees other data"))?;
        let mut b = vec![0u8; len];
        r.copy_from_mapping(off, &mut b)?;
        expect(b == d, format!("offset {off} length {len}: read back differs"))?;
    }
    Ok(Outcome::Pass)
}

fn unaligned_map_refused(g: &Gdr, gpu: i32, _v: bool) -> R {
    let (_mem, base) = alloc(gpu, 2 * GPU_PAGE_SIZE as usize)?;
    let r = g.pin(base + 4096, GPU_PAGE_SIZE, PinFlags::DEFAULT)?;
    let info = r.info()?;
    expect(info.va < base + 4096, "info.va is not the aligned start")?;
    match r.map(MapFlags::Default) {
        Err(e) if e.to_string().contains("aligned") => Ok(Outcome::Pass),
        Err(e) => Ok(Outcome::Fail(format!("refused, but without naming the alignment: {e}"))),
        Ok(_) => Ok(Outcome::Fail("an unaligned pin was mapped".into())),
    }
}

fn one_map_per_handle(g: &Gdr, gpu: i32, _v: bool) -> R {
    let (_mem, base) = alloc(gpu, GPU_PAGE_SIZE as usize)?;
    let r = g.pin(base, GPU_PAGE_SIZE, PinFlags::DEFAULT)?;
    r.map(MapFlags::Default)?;
    expect(r.map(MapFlags::Default).is_err(), "a second map of one handle succeeded")?;
    r.unmap()?;
    expect(r.unmap().is_err(), "unmap of an unmapped handle succeeded")?;
    r.map(MapFlags::Default)?;
    Ok(Outcome::Pass)
}

fn unpin_while_mapped(g: &Gdr, gpu: i32, _v: bool) -> R {
    let (_mem, base) = alloc(gpu, GPU_PAGE_SIZE as usize)?;
    let r = g.pin(base, GPU_PAGE_SIZE, PinFlags::DEFAULT)?;
    r.map(MapFlags::Default)?;
    r.unpin()?;
    expect(!r.is_mapped(), "unpin left the range mapped")?;
    expect(r.copy_to_mapping(0, &[1, 2, 3]).is_err(), "copy after unpin succeeded")?;
    expect(g.pinned_count() == 0, "the handle is still registered")?;
    Ok(Outcome::Pass)
}

fn managed_memory_refused(g: &Gdr, gpu: i32, _v: bool) -> R {
    let m = match DeviceMemory::alloc_managed(gpu, 2 * GPU_PAGE_SIZE as usize) {
        Ok(m) => m,
        Err(e) => return Ok(Outcome::Waived(format!("no managed memory: {e}"))),
    };
    match g.pin(m.ptr(), GPU_PAGE_SIZE, PinFlags::DEFAULT) {
        Err(e) if e.to_string().contains("managed") => Ok(Outcome::Pass),
        Err(e) => Ok(Outcome::Fail(format!("refused, but without saying why: {e}"))),
        Ok(_) => Ok(Outcome::Fail("managed memory was pinned".into())),
    }
}

fn spanning_two_allocations_refused(g: &Gdr, gpu: i32, _v: bool) -> R {
    let a = DeviceMemory::alloc(gpu, GPU_PAGE_SIZE as usize)?;
    match g.pin(a.ptr(), 2 * GPU_PAGE_SIZE, PinFlags::DEFAULT) {
        Err(e) if e.to_string().contains("spans two allocations") => Ok(Outcome::Pass),
        Err(e) => Ok(Outcome::Fail(format!("refused, but without saying why: {e}"))),
        Ok(_) => Ok(Outcome::Fail("a range past the end of its allocation was pinned".into())),
    }
}

fn threads_share_handles(g: &Gdr, gpu: i32, _v: bool) -> R {
    let size = 8 * 4096;
    let (_mem, base) = alloc(gpu, size)?;
    let r = g.pin(base, size as u64, PinFlags::DEFAULT)?;
    r.map(MapFlags::Default)?;
    let datas: Vec<Vec<u8>> = (0..8).map(|_| random(4096)).collect();
    let failed = std::thread::scope(|s| {
        let mut handles = Vec::new();
        for (i, d) in datas.iter().enumerate() {
            let r = &r;
            let h = std::thread::Builder::new().spawn_scoped(s, move || {
                (0..100).try_for_each(|_| r.copy_to_mapping(i * 4096, d).map_err(|e| e.to_string()))
            });
            match h {
                Ok(h) => handles.push(h),
                Err(e) => return Some(format!("the system refused a thread: {e}")),
            }
        }
        handles.into_iter().find_map(|h| match h.join() {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e),
            Err(_) => Some("a copy thread panicked".into()),
        })
    });
    if let Some(e) = failed {
        return Ok(Outcome::Fail(e));
    }
    for (i, d) in datas.iter().enumerate() {
        let mut b = vec![0u8; 4096];
        r.copy_from_mapping(i * 4096, &mut b)?;
        expect(&b == d, format!("slot {i} differs after concurrent copies"))?;
    }
    Ok(Outcome::Pass)
}

fn mapping_type_request(g: &Gdr, gpu: i32, _v: bool) -> R {
    let (_mem, base) = alloc(gpu, GPU_PAGE_SIZE as usize)?;
    let r = g.pin(base, GPU_PAGE_SIZE, PinFlags::DEFAULT)?;
    let dflt = r.map(MapFlags::Default)?.mapping_type;
    r.unmap()?;
    let want = match dflt {
        MappingType::Wc => MapFlags::RequireWc,
        MappingType::Caching => MapFlags::RequireCaching,
        MappingType::Device => MapFlags::RequireDevice,
        MappingType::None => return Ok(Outcome::Fail("the default mapping has type None".into())),
    };
    let got = r.map(want)?.mapping_type;
    expect(got == dflt, format!("asked for {}, got {}", dflt.name(), got.name()))?;
    Ok(Outcome::Pass)
}

#[derive(Serialize)]
struct Row {
    name: &'static str,
    result: &'static str,
    detail: String,
}

/// `gdio gdr sanity`.
pub fn run(a: SanityArgs) -> ExitCode {
    if a.list {
        for (name, _) in TESTS {
            outln!("{name}");
        }
        return ExitCode::SUCCESS;
    }
    if let Some(bad) = a.tests.iter().find(|t| !TESTS.iter().any(|(n, _)| n == t)) {
        eprintln!("gdio gdr sanity: unknown test {bad:?}; list them with -l");
        return ExitCode::FAILURE;
    }
    let g = match a.common.open("sanity") {
        Ok(g) => g,
        Err(code) => return code,
    };
    if !a.common.json {
        outln!("backend: {}", g.backend().name());
    }
    let mut rows = Vec::new();
    for (name, test) in TESTS {
        if !a.tests.is_empty() && !a.tests.iter().any(|t| t == name) {
            continue;
        }
        let (result, detail) = match test(&g, a.common.gpu, a.verbose && !a.common.json) {
            Ok(Outcome::Pass) => ("passed", String::new()),
            Ok(Outcome::Waived(w)) => ("waived", w),
            Ok(Outcome::Fail(f)) => ("failed", f),
            Err(e) => ("failed", e.to_string()),
        };
        if !a.common.json {
            if detail.is_empty() {
                outln!("{name}: {result}");
            } else {
                outln!("{name}: {result} ({detail})");
            }
        }
        rows.push(Row { name, result, detail });
    }
    let count = |r: &str| rows.iter().filter(|x| x.result == r).count();
    let (passed, failed, waived) = (count("passed"), count("failed"), count("waived"));
    if a.common.json {
        outln!(
            "{}",
            serde_json::json!({ "tool": "sanity", "ok": failed == 0, "backend": g.backend().name(),
                "total": rows.len(), "passed": passed, "failed": failed, "waived": waived, "tests": rows })
        );
    } else {
        outln!("Total: {}, Passed: {passed}, Failed: {failed}, Waived: {waived}", rows.len());
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
