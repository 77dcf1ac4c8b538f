//! The flags and enums of gdrapi.h: mapping types, pin and map flags, attributes.

use serde::Serialize;

/// How the CPU sees a mapping (`gdr_mapping_type_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[repr(u32)]
pub enum MappingType {
    /// Not mapped.
    None = 0,
    /// Write-combining: fast stores, slow uncached loads (x86 over PCIe).
    Wc = 1,
    /// Cached (coherent platforms such as Grace).
    Caching = 2,
    /// Device memory type (strongly ordered; ARM hosts behind BlueField-3).
    Device = 3,
}

impl MappingType {
    /// The upstream name (`gdr_get_mapping_type_string`).
    pub fn name(self) -> &'static str {
        match self {
            MappingType::None => "None",
            MappingType::Wc => "Write Combining",
            MappingType::Caching => "Caching",
            MappingType::Device => "Device",
        }
    }

    /// From the numeric `gdr_mapping_type_t`.
    pub fn from_raw(v: u32) -> Option<MappingType> {
        Some(match v {
            0 => MappingType::None,
            1 => MappingType::Wc,
            2 => MappingType::Caching,
            3 => MappingType::Device,
            _ => return None,
        })
    }
}

/// Flags of [`Gdr::pin`](super::Gdr::pin) (`gdr_pin_flags_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PinFlags(u32);

impl PinFlags {
    /// `GDR_PIN_FLAG_DEFAULT`.
    pub const DEFAULT: PinFlags = PinFlags(0);
    /// `GDR_PIN_FLAG_FORCE_PCIE`: a BAR1 (PCIe) mapping even on coherent platforms.
    pub const FORCE_PCIE: PinFlags = PinFlags(1);

    /// From raw bits; `None` for unknown bits.
    pub fn from_bits(bits: u32) -> Option<PinFlags> {
        (bits & !1 == 0).then_some(PinFlags(bits))
    }

    /// The raw bits.
    pub fn bits(self) -> u32 {
        self.0
    }

    /// Whether all bits of `other` are set.
    pub fn contains(self, other: PinFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

/// What [`PinnedRange::map`](super::PinnedRange::map) asks for (`gdr_map_flags`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MapFlags {
    /// `GDR_MAP_FLAG_DEFAULT`: whatever the backend picks.
    #[default]
    Default,
    /// `GDR_MAP_FLAG_REQ_WC_MAPPING`.
    RequireWc,
    /// `GDR_MAP_FLAG_REQ_CACHE_MAPPING`.
    RequireCaching,
    /// `GDR_MAP_FLAG_REQ_DEVICE_MAPPING`.
    RequireDevice,
}

impl MapFlags {
    /// From the numeric flag (0..=3).
    pub fn from_raw(v: i32) -> Option<MapFlags> {
        Some(match v {
            0 => MapFlags::Default,
            1 => MapFlags::RequireWc,
            2 => MapFlags::RequireCaching,
            3 => MapFlags::RequireDevice,
            _ => return None,
        })
    }

    pub(super) fn wanted(self) -> MappingType {
        match self {
            MapFlags::Default => MappingType::None,
            MapFlags::RequireWc => MappingType::Wc,
            MapFlags::RequireCaching => MappingType::Caching,
            MapFlags::RequireDevice => MappingType::Device,
        }
    }
}

/// System-wide attributes (`gdr_attr_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Attribute {
    /// `GDR_ATTR_USE_PERSISTENT_MAPPING`: pins survive `cuMemFree` until unpinned.
    UsePersistentMapping = 1,
    /// `GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE`.
    SupportPinFlagForcePcie = 2,
    /// `GDR_ATTR_USING_DMA_BUF_MMAP`: the dma-buf backend is in use.
    UsingDmaBufMmap = 3,
}

impl Attribute {
    /// From the numeric attribute.
    pub fn from_raw(v: u32) -> Option<Attribute> {
        Some(match v {
            1 => Attribute::UsePersistentMapping,
            2 => Attribute::SupportPinFlagForcePcie,
            3 => Attribute::UsingDmaBufMmap,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gdr::{runtime_version, GPU_PAGE_SIZE};
    #[test]
    fn enums_match_upstream_numbers() {
        assert_eq!(MappingType::Wc as u32, 1);
        assert_eq!(MappingType::from_raw(3), Some(MappingType::Device));
        assert_eq!(MappingType::from_raw(4), None);
        assert_eq!(MappingType::Wc.name(), "Write Combining");
        assert_eq!(MapFlags::from_raw(2), Some(MapFlags::RequireCaching));
        assert_eq!(MapFlags::from_raw(4), None);
        assert_eq!(PinFlags::from_bits(1), Some(PinFlags::FORCE_PCIE));
        assert_eq!(PinFlags::from_bits(2), None);
        assert_eq!(Attribute::from_raw(3), Some(Attribute::UsingDmaBufMmap));
        assert_eq!(runtime_version(), (2, 6));
        assert_eq!(GPU_PAGE_SIZE, 65536);
    }
}
