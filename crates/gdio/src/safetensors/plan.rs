//! What to load where: a list of (tensor or byte slice of a tensor → memory) items.

use std::fmt;
use std::ops::Range;

use super::dtype::{byte_size, element_count};
use super::index::{Checkpoint, TensorLocation};
use crate::error::{Error, ErrorKind, Result};

/// Where a loaded tensor goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// Host memory (page-aligned, pageable).
    Host,
    /// Memory of GPU `n`.
    Gpu(usize),
}

impl Target {
    /// The GPU ordinal, for a GPU target.
    pub fn gpu(self) -> Option<usize> {
        match self {
            Target::Gpu(n) => Some(n),
            Target::Host => None,
        }
    }

    /// Parses a target list as the CLI takes it: `host`, `gpu` (GPU 0), `gpu:N`, or `gpu:0,1`
    /// (the same tensors on each listed GPU).
    pub fn parse_list(text: &str) -> Result<Vec<Target>> {
        let bad = || {
            Error::new(
                ErrorKind::InvalidInput,
                format!("target {text:?} is not host, gpu, gpu:N or gpu:N,M,..."),
            )
        };
        let t = text.trim();
        if t == "host" || t == "cpu" {
            return Ok(vec![Target::Host]);
        }
        if t == "gpu" || t == "cuda" {
            return Ok(vec![Target::Gpu(0)]);
        }
        let rest = t.strip_prefix("gpu:").or_else(|| t.strip_prefix("cuda:")).ok_or_else(bad)?;
        let mut out = Vec::new();
        for n in rest.split(',') {
            let n: usize = n.trim().parse().map_err(|_| bad())?;
            if out.contains(&Target::Gpu(n)) {
                return Err(bad());
            }
            out.push(Target::Gpu(n));
        }
        Ok(out)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Host => f.write_str("host"),
            Target::Gpu(n) => write!(f, "gpu:{n}"),
        }
    }
}

/// One thing to load: all or a byte slice of one tensor, into one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanItem {
    /// The tensor.
    pub location: TensorLocation,
    /// Where it goes.
    pub target: Target,
    /// Bytes of the tensor to load (`0..len` for all of it).
    pub bytes: Range<u64>,
    /// Shape of what is loaded (the tensor's shape, or the slice's).
    pub shape: Vec<u64>,
}

/// A load plan: items in the order they were added. The same tensor may appear for several
/// targets (GPUs that all get it are filled by reading the bytes once and copying between
/// GPUs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    items: Vec<PlanItem>,
}

impl Plan {
    /// An empty plan.
    pub fn new() -> Plan {
        Plan::default()
    }

    /// Every tensor of `ckpt` onto every target in `targets`.
    pub fn all(ckpt: &Checkpoint, targets: &[Target]) -> Plan {
        let mut p = Plan::new();
        for (loc, info) in ckpt.tensors() {
            for &target in targets {
                p.items.push(PlanItem {
                    location: loc,
                    target,
                    bytes: 0..info.len(),
                    shape: info.shape.clone(),
                });
            }
        }
        p
    }

    /// The tensors whose names match any of `patterns` (`*` and `?` wildcards; a pattern
    /// without wildcards is an exact name) onto every target in `targets`. A pattern that
    /// matches nothing is an error naming it.
    pub fn matching(ckpt: &Checkpoint, patterns: &[&str], targets: &[Target]) -> Result<Plan> {
        let globs: Vec<wildmatch::WildMatch> =
            patterns.iter().map(|p| wildmatch::WildMatch::new(p)).collect();
        let mut used = vec![false; globs.len()];
        let mut p = Plan::new();
        for (loc, info) in ckpt.tensors() {
            let mut hit = false;
            for (g, u) in globs.iter().zip(used.iter_mut()) {
                if g.matches(&info.name) {
                    *u = true;
                    hit = true;
                }
            }
            if hit {
                for &target in targets {
                    p.items.push(PlanItem {
                        location: loc,
                        target,
                        bytes: 0..info.len(),
                        shape: info.shape.clone(),
                    });
                }
            }
        }
        if let Some(i) = used.iter().position(|u| !u) {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("no tensor matches {:?}", patterns[i]),
            ));
        }
        Ok(p)
    }

    /// Adds all of tensor `name` for `target`.
    pub fn add(&mut self, ckpt: &Checkpoint, name: &str, target: Target) -> Result<&mut Plan> {
        let (loc, info) = find(ckpt, name)?;
        self.items.push(PlanItem {
            location: loc,
            target,
            bytes: 0..info.len(),
            shape: info.shape.clone(),
        });
        Ok(self)
    }

    /// Adds rows `rows` (indices along dimension 0) of tensor `name` for `target`: the
    /// contiguous slice a tensor-parallel rank of a row-split weight needs.
    pub fn add_rows(
        &mut self,
        ckpt: &Checkpoint,
        name: &str,
        target: Target,
        rows: Range<u64>,
    ) -> Result<&mut Plan> {
        let (loc, info) = find(ckpt, name)?;
        let Some((&dim0, rest)) = info.shape.split_first() else {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("tensor {name:?} is zero-dimensional: it has no rows"),
            ));
        };
        if rows.start > rows.end || rows.end > dim0 {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("rows {rows:?} are outside tensor {name:?} of {dim0} rows"),
            ));
        }
        let row_elems = element_count(rest).unwrap_or(0);
        let row_bytes = |r: u64| byte_size(info.dtype, r * row_elems);
        let (Some(b), Some(e)) = (row_bytes(rows.start), row_bytes(rows.end)) else {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("rows {rows:?} of tensor {name:?} do not start on a byte boundary"),
            ));
        };
        let mut shape = info.shape.clone();
        shape[0] = rows.end - rows.start;
        self.items.push(PlanItem { location: loc, target, bytes: b..e, shape });
        Ok(self)
    }

    /// Adds bytes `bytes` of tensor `name` for `target`, as a flat run of elements; the range
    /// must start and end on element boundaries.
    pub fn add_bytes(
        &mut self,
        ckpt: &Checkpoint,
        name: &str,
        target: Target,
        bytes: Range<u64>,
    ) -> Result<&mut Plan> {
        let (loc, info) = find(ckpt, name)?;
        let bits = info.dtype.bitsize() as u64;
        let on_element = |b: u64| (b * 8) % bits == 0;
        if bytes.start > bytes.end || bytes.end > info.len() {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("bytes {bytes:?} are outside tensor {name:?} of {} bytes", info.len()),
            ));
        }
        if !on_element(bytes.start) || !on_element(bytes.end) {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("bytes {bytes:?} of tensor {name:?} cut through an element"),
            ));
        }
        let shape = vec![(bytes.end - bytes.start) * 8 / bits];
        self.items.push(PlanItem { location: loc, target, bytes, shape });
        Ok(self)
    }

    /// The items.
    pub fn items(&self) -> &[PlanItem] {
        &self.items
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when the plan loads nothing.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Bytes the plan puts into memory (counting each target).
    pub fn bytes(&self) -> u64 {
        self.items.iter().map(|i| i.bytes.end - i.bytes.start).sum()
    }
}

fn find<'a>(
    ckpt: &'a Checkpoint,
    name: &str,
) -> Result<(TensorLocation, &'a super::header::TensorInfo)> {
    let loc = ckpt.locate(name).ok_or_else(|| {
        Error::new(ErrorKind::NotFound, format!("tensor {name:?} is not in the checkpoint"))
    })?;
    Ok((loc, ckpt.info_at(loc)))
}
