//! Checkpoints for the safetensors tests, written by the `safetensors` crate's serializer (so
//! the format is the reference one) from seeded random data.
#![allow(dead_code)]

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use gdio::safetensors::{Dtype, ALL_DTYPES};
use rand::Rng;

/// One tensor: name, dtype, shape, bytes.
#[derive(Debug, Clone)]
pub struct T {
    pub name: String,
    pub dtype: Dtype,
    pub shape: Vec<u64>,
    pub data: Vec<u8>,
}

/// The crate wants `&[usize]` shapes.
pub struct Tv<'a>(&'a T, Vec<usize>);

impl safetensors::View for Tv<'_> {
    fn dtype(&self) -> Dtype {
        self.0.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.1
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.0.data)
    }
    fn data_len(&self) -> usize {
        self.0.data.len()
    }
}

/// A random tensor of `dtype` named `name`: sometimes empty, sometimes zero-dimensional.
pub fn random_tensor(r: &mut impl Rng, name: &str, dtype: Dtype, max_elems: u64) -> T {
    let bits = dtype.bitsize() as u64;
    // Element counts that fill whole bytes: 2 for 4-bit types, 4 for 6-bit ones.
    let unit = match bits {
        4 => 2,
        6 => 4,
        _ => 1,
    };
    let shape: Vec<u64> = match r.random_range(0..8) {
        0 => vec![r.random_range(1..4), 0, r.random_range(1..4)],
        1 if unit == 1 => vec![],
        _ => {
            let rows = r.random_range(1..=8u64);
            let cols = (r.random_range(1..=max_elems / 8 + 1)).div_ceil(unit) * unit;
            vec![rows, cols]
        }
    };
    let n: u64 = shape.iter().product();
    let len = (n * bits / 8) as usize;
    let mut data = vec![0u8; len];
    r.fill_bytes(&mut data);
    T { name: name.to_owned(), dtype, shape, data }
}

/// `n` random tensors cycling through every dtype.
pub fn random_tensors(seed: u64, n: usize, max_elems: u64) -> Vec<T> {
    let mut r = crate::common::rng(seed);
    (0..n)
        .map(|i| {
            let d = ALL_DTYPES[i % ALL_DTYPES.len()];
            random_tensor(&mut r, &format!("layer.{}.w{}", i / 4, i % 4), d, max_elems)
        })
        .collect()
}

/// Writes `tensors` to `path` with the `safetensors` crate.
pub fn write_with_crate(path: &Path, tensors: &[T], meta: Option<HashMap<String, String>>) {
    let views: Vec<(String, Tv<'_>)> = tensors
        .iter()
        .map(|t| (t.name.clone(), Tv(t, t.shape.iter().map(|&d| d as usize).collect())))
        .collect();
    safetensors::serialize_to_file(views, meta, path).unwrap();
}

/// Builds a file by hand: header JSON as given, then `data`.
pub fn raw_file(json: &str, data: &[u8]) -> Vec<u8> {
    let mut v = (json.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(json.as_bytes());
    v.extend_from_slice(data);
    v
}
