//! The gdrdrv kernel ABI: ioctl numbers and argument structs of `gdrdrv.h` (GDRCopy 2.6).
//!
//! Everything here is `#[repr(C)]` and mirrors the upstream header field by field; the tests
//! at the bottom compare every size, offset and ioctl number with the values the unmodified
//! header gives on x86-64. Ports of gdrdrv that keep this ABI under another device node (for
//! example Moore Threads' `mtgdrdrv`) use the same numbers.

/// `GDRDRV_IOCTL`: the ioctl type byte.
pub const GDRDRV_IOCTL: u32 = 0xDA;

/// Shift of the major part in gdrdrv / gdrapi version words.
pub const MAJOR_VERSION_SHIFT: u32 = 16;
/// Mask of the minor part in version words.
pub const MINOR_VERSION_MASK: u32 = (1 << MAJOR_VERSION_SHIFT) - 1;

/// Packs a version as `(major << 16) | minor`.
pub const fn version(major: u32, minor: u32) -> u32 {
    (major << MAJOR_VERSION_SHIFT) | minor
}

/// Oldest gdrdrv this library talks to (2.0).
pub const MINIMUM_GDRDRV_VERSION: u32 = version(2, 0);
/// gdrdrv version that added `GET_INFO_V2`.
pub const GDRDRV_MINIMUM_VERSION_WITH_GET_INFO_V2: u32 = version(2, 4);
/// gdrdrv version that added `GET_ATTR`.
pub const GDRDRV_MINIMUM_VERSION_WITH_GET_ATTR: u32 = version(2, 5);
/// gdrdrv version that added `PIN_BUFFER_V2`.
pub const GDRDRV_MINIMUM_VERSION_WITH_PIN_BUFFER_V2: u32 = version(2, 5);
/// gdrdrv version that added `REQ_MAPPING_TYPE`.
pub const GDRDRV_MINIMUM_VERSION_WITH_REQ_MAPPING_TYPE: u32 = version(2, 5);

/// `gdr_mr_type_t`: no mapping.
pub const GDR_MR_NONE: u32 = 0;
/// `gdr_mr_type_t`: write-combining mapping.
pub const GDR_MR_WC: u32 = 1;
/// `gdr_mr_type_t`: cached mapping (coherent platforms).
pub const GDR_MR_CACHING: u32 = 2;
/// `gdr_mr_type_t`: device (strongly ordered) mapping.
pub const GDR_MR_DEVICE: u32 = 3;

/// `GDRDRV_ATTR_USE_PERSISTENT_MAPPING`.
pub const GDRDRV_ATTR_USE_PERSISTENT_MAPPING: u32 = 1;
/// `GDRDRV_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE`.
pub const GDRDRV_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE: u32 = 2;
/// `GDRDRV_PIN_BUFFER_FLAG_FORCE_PCIE`.
pub const GDRDRV_PIN_BUFFER_FLAG_FORCE_PCIE: u32 = 1;

/// `GDRDRV_IOC_PIN_BUFFER_PARAMS`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct PinBufferParams {
    /// In: GPU virtual address.
    pub addr: u64,
    /// In: length in bytes.
    pub size: u64,
    /// In: deprecated P2P token (must be 0 in persistent mode).
    pub p2p_token: u64,
    /// In: deprecated VA space (must be 0 in persistent mode).
    pub va_space: u32,
    /// Out: the driver's handle.
    pub handle: u64,
}

/// `GDRDRV_IOC_PIN_BUFFER_V2_PARAMS`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct PinBufferV2Params {
    /// In: GPU virtual address.
    pub addr: u64,
    /// In: length in bytes.
    pub size: u64,
    /// In: `GDRDRV_PIN_BUFFER_FLAG_*`.
    pub flags: u32,
    /// Padding, zero.
    pub pad: u32,
    /// Out: the driver's handle.
    pub handle: u64,
}

/// `GDRDRV_IOC_UNPIN_BUFFER_PARAMS`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct UnpinBufferParams {
    /// In: handle to unpin.
    pub handle: u64,
}

/// `GDRDRV_IOC_GET_CB_FLAG_PARAMS`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct GetCbFlagParams {
    /// In: handle.
    pub handle: u64,
    /// Out: 1 once the free callback fired.
    pub flag: u32,
}

/// `GDRDRV_IOC_GET_INFO_PARAMS`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct GetInfoParams {
    /// In: handle.
    pub handle: u64,
    /// Out: GPU-page-aligned start.
    pub va: u64,
    /// Out: aligned length.
    pub mapped_size: u64,
    /// Out: GPU page size.
    pub page_size: u32,
    /// Out: deprecated.
    pub tsc_khz: u32,
    /// Out: deprecated.
    pub tm_cycles: u64,
    /// Out: 1 when mapped.
    pub mapped: u32,
    /// Out: 1 when the mapping is write-combining.
    pub wc_mapping: u32,
}

/// `GDRDRV_IOC_GET_INFO_V2_PARAMS`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct GetInfoV2Params {
    /// In: handle.
    pub handle: u64,
    /// Out: GPU-page-aligned start.
    pub va: u64,
    /// Out: aligned length.
    pub mapped_size: u64,
    /// Out: GPU page size.
    pub page_size: u32,
    /// Out: deprecated.
    pub tsc_khz: u32,
    /// Out: deprecated.
    pub tm_cycles: u64,
    /// Out: `gdr_mr_type_t`.
    pub mapping_type: u32,
}

/// `GDRDRV_IOC_GET_ATTR_PARAMS`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct GetAttrParams {
    /// In: `GDRDRV_ATTR_*`.
    pub attr: u32,
    /// Out: value.
    pub val: u32,
}

/// `GDRDRV_IOC_REQ_MAPPING_TYPE_PARAMS`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct ReqMappingTypeParams {
    /// In: handle.
    pub handle: u64,
    /// In: `gdr_mr_type_t` wanted for the next mmap.
    pub mapping_type: u32,
}

/// `GDRDRV_IOC_GET_VERSION_PARAMS`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct GetVersionParams {
    /// Out: driver version word.
    pub gdrdrv_version: u32,
    /// Out: oldest libgdrapi the driver accepts.
    pub minimum_gdr_api_version: u32,
}

const IOC_NRBITS: u32 = 8;
const IOC_TYPEBITS: u32 = 8;
const IOC_SIZEBITS: u32 = 14;
const IOC_NRSHIFT: u32 = 0;
const IOC_TYPESHIFT: u32 = IOC_NRSHIFT + IOC_NRBITS;
const IOC_SIZESHIFT: u32 = IOC_TYPESHIFT + IOC_TYPEBITS;
const IOC_DIRSHIFT: u32 = IOC_SIZESHIFT + IOC_SIZEBITS;
const IOC_WRITE: u32 = 1;
const IOC_READ: u32 = 2;

/// Linux `_IOWR(type, nr, size)` (asm-generic encoding, used by x86-64 and arm64).
pub const fn iowr(ty: u32, nr: u32, size: usize) -> u32 {
    ((IOC_READ | IOC_WRITE) << IOC_DIRSHIFT)
        | (ty << IOC_TYPESHIFT)
        | (nr << IOC_NRSHIFT)
        | ((size as u32) << IOC_SIZESHIFT)
}

/// Upstream encodes `sizeof(struct X *)` for most commands (a quirk kept for ABI).
const PTR: usize = std::mem::size_of::<*const u8>();

/// `GDRDRV_IOC_PIN_BUFFER` (encodes the struct size).
pub const IOC_PIN_BUFFER: u32 = iowr(GDRDRV_IOCTL, 1, std::mem::size_of::<PinBufferParams>());
/// `GDRDRV_IOC_UNPIN_BUFFER`.
pub const IOC_UNPIN_BUFFER: u32 = iowr(GDRDRV_IOCTL, 2, PTR);
/// `GDRDRV_IOC_GET_CB_FLAG`.
pub const IOC_GET_CB_FLAG: u32 = iowr(GDRDRV_IOCTL, 3, PTR);
/// `GDRDRV_IOC_GET_INFO`.
pub const IOC_GET_INFO: u32 = iowr(GDRDRV_IOCTL, 4, PTR);
/// `GDRDRV_IOC_GET_INFO_V2`.
pub const IOC_GET_INFO_V2: u32 = iowr(GDRDRV_IOCTL, 5, PTR);
/// `GDRDRV_IOC_GET_ATTR`.
pub const IOC_GET_ATTR: u32 = iowr(GDRDRV_IOCTL, 6, PTR);
/// `GDRDRV_IOC_PIN_BUFFER_V2` (encodes the struct size).
pub const IOC_PIN_BUFFER_V2: u32 = iowr(GDRDRV_IOCTL, 7, std::mem::size_of::<PinBufferV2Params>());
/// `GDRDRV_IOC_REQ_MAPPING_TYPE`.
pub const IOC_REQ_MAPPING_TYPE: u32 = iowr(GDRDRV_IOCTL, 8, PTR);
/// `GDRDRV_IOC_GET_VERSION`.
pub const IOC_GET_VERSION: u32 = iowr(GDRDRV_IOCTL, 255, PTR);

#[cfg(all(test, target_pointer_width = "64"))]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn ioctl_numbers_match_upstream_literals() {
        // Literal values of the unmodified gdrdrv.h on x86-64 (two also appear in gdrcopy #242).
        assert_eq!(IOC_PIN_BUFFER, 0xC028_DA01);
        assert_eq!(IOC_UNPIN_BUFFER, 0xC008_DA02);
        assert_eq!(IOC_GET_CB_FLAG, 0xC008_DA03);
        assert_eq!(IOC_GET_INFO, 0xC008_DA04);
        assert_eq!(IOC_GET_INFO_V2, 0xC008_DA05);
        assert_eq!(IOC_GET_ATTR, 0xC008_DA06);
        assert_eq!(IOC_PIN_BUFFER_V2, 0xC020_DA07);
        assert_eq!(IOC_REQ_MAPPING_TYPE, 0xC008_DA08);
        assert_eq!(IOC_GET_VERSION, 0xC008_DAFF);
    }

    #[test]
    fn iowr_formula_fields() {
        let v = iowr(0xDA, 0x42, 0x123);
        assert_eq!(v >> 30, 3, "dir = read|write");
        assert_eq!((v >> 16) & 0x3fff, 0x123, "size");
        assert_eq!((v >> 8) & 0xff, 0xDA, "type");
        assert_eq!(v & 0xff, 0x42, "nr");
    }

    #[test]
    fn struct_sizes_match_upstream() {
        assert_eq!(size_of::<PinBufferParams>(), 40);
        assert_eq!(size_of::<UnpinBufferParams>(), 8);
        assert_eq!(size_of::<GetCbFlagParams>(), 16);
        assert_eq!(size_of::<GetInfoParams>(), 48);
        assert_eq!(size_of::<GetInfoV2Params>(), 48);
        assert_eq!(size_of::<GetAttrParams>(), 8);
        assert_eq!(size_of::<PinBufferV2Params>(), 32);
        assert_eq!(size_of::<ReqMappingTypeParams>(), 16);
        assert_eq!(size_of::<GetVersionParams>(), 8);
    }

    #[test]
    fn field_offsets_match_upstream() {
        assert_eq!(offset_of!(PinBufferParams, addr), 0);
        assert_eq!(offset_of!(PinBufferParams, size), 8);
        assert_eq!(offset_of!(PinBufferParams, p2p_token), 16);
        assert_eq!(offset_of!(PinBufferParams, va_space), 24);
        assert_eq!(offset_of!(PinBufferParams, handle), 32);

        assert_eq!(offset_of!(PinBufferV2Params, addr), 0);
        assert_eq!(offset_of!(PinBufferV2Params, size), 8);
        assert_eq!(offset_of!(PinBufferV2Params, flags), 16);
        assert_eq!(offset_of!(PinBufferV2Params, pad), 20);
        assert_eq!(offset_of!(PinBufferV2Params, handle), 24);

        assert_eq!(offset_of!(UnpinBufferParams, handle), 0);
        assert_eq!(offset_of!(GetCbFlagParams, handle), 0);
        assert_eq!(offset_of!(GetCbFlagParams, flag), 8);

        assert_eq!(offset_of!(GetInfoParams, handle), 0);
        assert_eq!(offset_of!(GetInfoParams, va), 8);
        assert_eq!(offset_of!(GetInfoParams, mapped_size), 16);
        assert_eq!(offset_of!(GetInfoParams, page_size), 24);
        assert_eq!(offset_of!(GetInfoParams, tsc_khz), 28);
        assert_eq!(offset_of!(GetInfoParams, tm_cycles), 32);
        assert_eq!(offset_of!(GetInfoParams, mapped), 40);
        assert_eq!(offset_of!(GetInfoParams, wc_mapping), 44);

        assert_eq!(offset_of!(GetInfoV2Params, handle), 0);
        assert_eq!(offset_of!(GetInfoV2Params, va), 8);
        assert_eq!(offset_of!(GetInfoV2Params, mapped_size), 16);
        assert_eq!(offset_of!(GetInfoV2Params, page_size), 24);
        assert_eq!(offset_of!(GetInfoV2Params, tsc_khz), 28);
        assert_eq!(offset_of!(GetInfoV2Params, tm_cycles), 32);
        assert_eq!(offset_of!(GetInfoV2Params, mapping_type), 40);

        assert_eq!(offset_of!(GetAttrParams, attr), 0);
        assert_eq!(offset_of!(GetAttrParams, val), 4);
        assert_eq!(offset_of!(ReqMappingTypeParams, handle), 0);
        assert_eq!(offset_of!(ReqMappingTypeParams, mapping_type), 8);
        assert_eq!(offset_of!(GetVersionParams, gdrdrv_version), 0);
        assert_eq!(offset_of!(GetVersionParams, minimum_gdr_api_version), 4);
    }

    #[test]
    fn constants_match_upstream() {
        assert_eq!(GDRDRV_IOCTL, 0xDA);
        assert_eq!(version(2, 6), 0x0002_0006);
        assert_eq!(MINIMUM_GDRDRV_VERSION, 0x0002_0000);
        assert_eq!((GDR_MR_NONE, GDR_MR_WC, GDR_MR_CACHING, GDR_MR_DEVICE), (0, 1, 2, 3));
        assert_eq!(GDRDRV_ATTR_USE_PERSISTENT_MAPPING, 1);
        assert_eq!(GDRDRV_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE, 2);
        assert_eq!(GDRDRV_PIN_BUFFER_FLAG_FORCE_PCIE, 1);
    }
}
