//! [`PinnedRange`]: a pinned range of GPU memory (`gdr_mh_t`): its info, its one mapping into
//! the CPU, copies through the mapping, unpinning.

use std::sync::{Arc, MutexGuard};

use super::state::{einval, lock, Backend, Handle, HandleState, Inner, Mapping, PinKind};
use super::*;
use crate::error::{Error, ErrorKind, Result};

/// A pinned range of GPU memory (`gdr_mh_t`), optionally mapped into the CPU. Unpinned on
/// drop (unmapping first). `Send + Sync`; copies on one handle are serialised by its lock.
#[derive(Debug)]
pub struct PinnedRange {
    pub(super) gdr: Arc<Inner>,
    pub(super) h: Arc<Handle>,
}

impl PinnedRange {
    /// An id unique within its [`Gdr`].
    pub fn id(&self) -> u64 {
        self.h.id
    }

    /// The address passed to pin.
    pub fn addr(&self) -> u64 {
        self.h.addr
    }

    /// The size passed to pin.
    pub fn size(&self) -> u64 {
        self.h.size
    }

    /// Offset of [`PinnedRange::addr`] inside the mapping (`addr - info.va`).
    pub fn addr_offset(&self) -> usize {
        (self.h.addr - self.h.va) as usize
    }

    fn state(&self) -> Result<MutexGuard<'_, HandleState>> {
        self.gdr.check_process()?;
        let st = lock(&self.h.state);
        if st.pin.is_none() {
            return Err(einval("the handle was unpinned"));
        }
        Ok(st)
    }

    /// `gdr_get_info_v2`.
    pub fn info(&self) -> Result<MapInfo> {
        let st = self.state()?;
        let (mut tm_cycles, mut cycles_per_ms) = (0, 0);
        if let (Backend::Gdrdrv(d), Some(PinKind::Gdrdrv(kh))) = (&self.gdr.backend, &st.pin) {
            let i = d.info(*kh)?;
            tm_cycles = i.tm_cycles;
            cycles_per_ms = i.tsc_khz;
        }
        let ty = st.mapping.as_ref().map_or(MappingType::None, |m| m.ty);
        Ok(MapInfo {
            va: self.h.va,
            mapped_size: self.h.mapped_size,
            page_size: self.h.page_size,
            tm_cycles,
            cycles_per_ms,
            mapped: ty != MappingType::None,
            wc_mapping: ty == MappingType::Wc,
            mapping_type: ty,
        })
    }

    /// `gdr_get_callback_flag`: true once the driver's free callback fired (non-persistent
    /// gdrdrv mode only; always false with persistent mapping and dma-buf).
    pub fn callback_flag(&self) -> Result<bool> {
        let st = self.state()?;
        match (&self.gdr.backend, &st.pin) {
            (Backend::Gdrdrv(d), Some(PinKind::Gdrdrv(kh))) => d.callback_flag(*kh),
            _ => Ok(false),
        }
    }

    /// Maps the whole pinned range ([`MapInfo::mapped_size`] bytes); see [`PinnedRange::map_len`].
    pub fn map(&self, flags: MapFlags) -> Result<MapInfo> {
        self.map_len(flags, self.h.mapped_size as usize)?;
        self.info()
    }

    /// `gdr_map_v2`: maps the first `len` bytes (rounded up to the host page) of the pinned
    /// range and returns the mapping's address, which corresponds to [`MapInfo::va`].
    pub fn map_len(&self, flags: MapFlags, len: usize) -> Result<*mut u8> {
        let mut st = self.state()?;
        if st.mapping.is_some() {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "the handle is already mapped: one mapping per handle, unmap it first",
            )
            .with_errno(libc::EAGAIN));
        }
        if self.h.addr != self.h.va {
            let what = match self.gdr.backend {
                Backend::Gdrdrv(_) => "64 KiB GPU page",
                Backend::DmaBuf(_) => "host page",
            };
            return Err(einval(format!(
                "pinned address 0x{:x} is not aligned to the {what} (aligned start 0x{:x}): map needs an aligned pin; over-allocate by 64 KiB - 1 and round the address up",
                self.h.addr, self.h.va
            )));
        }
        let page = host_page_size();
        let len = len
            .max(1)
            .checked_next_multiple_of(page)
            .ok_or_else(|| einval("map length overflows"))?;
        if len as u64 > self.h.mapped_size.next_multiple_of(page as u64) {
            return Err(einval(format!(
                "map length {len} exceeds the pinned {} bytes",
                self.h.mapped_size
            )));
        }
        let wanted = flags.wanted();
        let (addr, ty) = match (&self.gdr.backend, &st.pin) {
            (Backend::Gdrdrv(d), Some(PinKind::Gdrdrv(kh))) => {
                if flags != MapFlags::Default {
                    d.request_mapping_type(*kh, wanted as u32)?;
                }
                let p = d.mmap(*kh, len)?;
                let unmap = || {
                    // SAFETY: p/len were just returned by mmap and are not shared yet.
                    unsafe { libc::munmap(p as *mut libc::c_void, len) };
                };
                let ty = match d.info(*kh) {
                    Ok(i) => MappingType::from_raw(i.mapping_type).unwrap_or(MappingType::None),
                    Err(e) => {
                        unmap();
                        return Err(e);
                    }
                };
                if ty == MappingType::None {
                    unmap();
                    return Err(Error::new(
                        ErrorKind::Io,
                        "gdrdrv reports the handle unmapped right after mmap",
                    )
                    .with_errno(libc::EAGAIN));
                }
                if flags != MapFlags::Default && ty != wanted {
                    unmap();
                    return Err(einval(format!("gdrdrv gave a {} mapping, not the {} one asked for (gdrdrv may be too old)", ty.name(), wanted.name())));
                }
                (p as usize, ty)
            }
            (Backend::DmaBuf(d), Some(PinKind::DmaBuf(pin))) => {
                if flags != MapFlags::Default && wanted != pin.mapping_type {
                    return Err(einval(format!(
                        "the dma-buf backend maps this range as {}, fixed at pin time; {} cannot be requested",
                        pin.mapping_type.name(),
                        wanted.name()
                    )));
                }
                (d.mmap(pin, len)? as usize, pin.mapping_type)
            }
            _ => return Err(einval("the handle does not belong to this backend")),
        };
        st.mapping = Some(Mapping { addr, len, ty });
        copy::mapping_created(ty);
        Ok(addr as *mut u8)
    }

    /// Whether the range is mapped.
    pub fn is_mapped(&self) -> bool {
        lock(&self.h.state).mapping.is_some()
    }

    /// The mapping's address and length, when mapped. Dereferencing it is up to the caller
    /// (prefer [`PinnedRange::copy_to_mapping`] / [`PinnedRange::copy_from_mapping`]).
    pub fn mapping(&self) -> Option<(*mut u8, usize)> {
        lock(&self.h.state).mapping.as_ref().map(|m| (m.addr as *mut u8, m.len))
    }

    /// `gdr_unmap`.
    pub fn unmap(&self) -> Result<()> {
        let mut st = self.state()?;
        self.gdr.unmap_locked(&mut st)
    }

    fn usable_len(&self, m: &Mapping) -> usize {
        m.len.min(self.h.mapped_size as usize)
    }

    fn bounds(&self, st: &HandleState, offset: usize, len: usize) -> Result<(usize, MappingType)> {
        let m = st
            .mapping
            .as_ref()
            .ok_or_else(|| einval("the handle is not mapped: call map first"))?;
        let usable = self.usable_len(m);
        match offset.checked_add(len) {
            Some(end) if end <= usable => Ok((m.addr + offset, m.ty)),
            _ => Err(einval(format!("range {offset}+{len} is outside the {usable}-byte mapping"))),
        }
    }

    /// `gdr_copy_to_mapping`: copies `src` to `offset` bytes past the mapping's start
    /// ([`MapInfo::va`]) with write-combining stores and a closing fence.
    pub fn copy_to_mapping(&self, offset: usize, src: &[u8]) -> Result<()> {
        let st = self.state()?;
        let (dst, ty) = self.bounds(&st, offset, src.len())?;
        // SAFETY: [dst, dst + len) lies inside our live mapping (checked above, and the lock
        // keeps it mapped); src is a host slice, which cannot overlap device memory.
        unsafe { copy::copy_to_mapping(ty, dst as *mut u8, src.as_ptr(), src.len()) };
        Ok(())
    }

    /// `gdr_copy_from_mapping`: fills `dst` from `offset` bytes past the mapping's start.
    pub fn copy_from_mapping(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        let st = self.state()?;
        let (src, ty) = self.bounds(&st, offset, dst.len())?;
        // SAFETY: as in copy_to_mapping.
        unsafe { copy::copy_from_mapping(ty, dst.as_mut_ptr(), src as *const u8, dst.len()) };
        Ok(())
    }

    /// `gdr_unpin_buffer`: unmaps if mapped, then unpins. Later calls on this handle fail
    /// with "unpinned" (dropping it afterwards is fine).
    pub fn unpin(&self) -> Result<()> {
        self.gdr.check_process()?;
        self.gdr.unpin(&self.h)
    }
}

impl Drop for PinnedRange {
    fn drop(&mut self) {
        if self.gdr.check_process().is_ok() && lock(&self.h.state).pin.is_some() {
            let _ = self.gdr.unpin(&self.h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs only where a backend and a GPU exist: pin, map, copy both ways, check the data
    /// against cuMemcpy, and the error paths.
    #[test]
    fn roundtrip_on_a_real_mapping() {
        let g = match Gdr::open() {
            Ok(g) => g,
            Err(e) => {
                eprintln!("skipped: {e}");
                return;
            }
        };
        let mem = DeviceMemory::alloc(0, 4 << 20).expect("cuMemAlloc");
        let base = mem.ptr().next_multiple_of(GPU_PAGE_SIZE);
        let size = (1u64 << 20) as usize;
        let p = g.pin(base, size as u64, PinFlags::DEFAULT).expect("pin");
        p.map(MapFlags::Default).expect("map");
        assert!(p.map(MapFlags::Default).is_err(), "second map must fail");
        let data: Vec<u8> = (0..size).map(|i| (i * 131 + 7) as u8).collect();
        p.copy_to_mapping(0, &data).unwrap();
        let mut back = vec![0u8; size];
        mem.read((base - mem.ptr()) as usize, &mut back).unwrap();
        assert_eq!(back, data);
        let mut via_map = vec![0u8; 4099];
        p.copy_from_mapping(13, &mut via_map).unwrap();
        assert_eq!(via_map, &data[13..13 + 4099]);
        p.unpin().unwrap();
    }
}
