//! Element types of the safetensors format and their sizes.
//!
//! The type itself is the `safetensors` crate's [`Dtype`] (the format's own list: `BOOL`, `U8`,
//! `I8`, `F8_E4M3`, `F8_E5M2`, `F8_E8M0`, `F8_E4M3FNUZ`, `F8_E5M2FNUZ`, `F4`, `F6_E2M3`,
//! `F6_E3M2`, `I16`, `U16`, `F16`, `BF16`, `I32`, `U32`, `F32`, `C64`, `F64`, `I64`, `U64`).
//! Sub-byte types (`F4`: 4 bits, `F6_*`: 6 bits) are packed: a tensor's byte size is its element
//! count times the bit size divided by 8, and a count whose bits do not fill whole bytes is
//! malformed.

pub use ::safetensors::Dtype;

/// Every dtype the format defines, in the crate's order.
pub const ALL_DTYPES: [Dtype; 22] = [
    Dtype::BOOL,
    Dtype::F4,
    Dtype::F6_E2M3,
    Dtype::F6_E3M2,
    Dtype::U8,
    Dtype::I8,
    Dtype::F8_E5M2,
    Dtype::F8_E4M3,
    Dtype::F8_E8M0,
    Dtype::F8_E4M3FNUZ,
    Dtype::F8_E5M2FNUZ,
    Dtype::I16,
    Dtype::U16,
    Dtype::F16,
    Dtype::BF16,
    Dtype::I32,
    Dtype::U32,
    Dtype::F32,
    Dtype::C64,
    Dtype::F64,
    Dtype::I64,
    Dtype::U64,
];

/// The dtype named `name` as the header spells it (`BF16`), or `None` for an unknown name.
pub fn dtype_from_name(name: &str) -> Option<Dtype> {
    serde_json::from_value(serde_json::Value::String(name.to_owned())).ok()
}

/// The header spelling of `dtype` (`BF16`).
pub fn dtype_name(dtype: Dtype) -> String {
    dtype.to_string()
}

/// Bytes that `elements` elements of `dtype` take, or `None` when the count overflows or the
/// bits do not fill whole bytes (an odd number of `F4` elements).
pub fn byte_size(dtype: Dtype, elements: u64) -> Option<u64> {
    let bits = elements.checked_mul(dtype.bitsize() as u64)?;
    (bits % 8 == 0).then_some(bits / 8)
}

/// Elements of a tensor of `shape` (1 for a zero-dimensional tensor), or `None` on overflow.
pub fn element_count(shape: &[u64]) -> Option<u64> {
    shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_round_trips_its_name_and_has_a_size() {
        for d in ALL_DTYPES {
            assert_eq!(dtype_from_name(&dtype_name(d)), Some(d));
            assert!(d.bitsize() >= 4 && d.bitsize() <= 64);
        }
        assert_eq!(dtype_from_name("F128"), None);
        assert_eq!(dtype_from_name("bf16"), None);
    }

    #[test]
    fn packed_sizes() {
        assert_eq!(byte_size(Dtype::F4, 6), Some(3));
        assert_eq!(byte_size(Dtype::F4, 3), None);
        assert_eq!(byte_size(Dtype::F6_E2M3, 4), Some(3));
        assert_eq!(byte_size(Dtype::F6_E2M3, 2), None);
        assert_eq!(byte_size(Dtype::C64, 3), Some(24));
        assert_eq!(byte_size(Dtype::U64, u64::MAX), None);
        assert_eq!(element_count(&[]), Some(1));
        assert_eq!(element_count(&[3, 0, 7]), Some(0));
        assert_eq!(element_count(&[u64::MAX, 2]), None);
    }
}
