//! A load's layout under random plans and random read shapes: any subset of a checkpoint's
//! tensors, whole or as byte ranges, into the host, one simulated GPU or two (replicated),
//! through `load` or `load_stream`, with request sizes from one page up, merge gaps from one
//! byte up (under a page, spans would share a page), 0–4 requests in flight and spreading on
//! or off. Every planned range must come out once, on its target, equal to the file's bytes.

mod common;
mod st;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use gdio::safetensors::{load, load_stream, Checkpoint, LoadOptions, Loaded, Plan, Target};
use gdio::{DirectIoPolicy, Driver};
use proptest::prelude::*;
use st::{random_tensors, write_with_crate, T};

/// One checkpoint for every case (written once; the cases only read it).
fn checkpoint() -> &'static (tempfile::TempDir, Vec<T>) {
    static CKPT: OnceLock<(tempfile::TempDir, Vec<T>)> = OnceLock::new();
    CKPT.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let tensors = random_tensors(41, 36, 6_000);
        write_with_crate(&dir.path().join("m.safetensors"), &tensors, None);
        (dir, tensors)
    })
}

/// Bytes per whole element run: the smallest byte count that ends on an element boundary.
fn unit_bytes(bits: u64) -> u64 {
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    bits * 8 / gcd(bits, 8) / 8
}

/// What a case wants of tensor `i`: nothing, all of it, or a range given as two fractions.
#[derive(Debug, Clone)]
enum Want {
    Skip,
    Whole,
    Part(f64, f64),
}

fn want() -> impl Strategy<Value = Want> {
    prop_oneof![
        2 => Just(Want::Skip),
        2 => Just(Want::Whole),
        1 => (0.0..1.0f64, 0.0..1.0f64).prop_map(|(a, b)| Want::Part(a.min(b), a.max(b))),
    ]
}

fn options() -> impl Strategy<Value = LoadOptions> {
    (
        prop_oneof![Just(0usize), 1usize..70_000],
        0usize..5,
        prop_oneof![Just(0u64), 1u64..5000, 5000u64..200_000],
        prop_oneof![Just(None), Just(Some(true)), Just(Some(false))],
    )
        .prop_map(|(request_size, requests_in_flight, merge_gap, spread_reads)| LoadOptions {
            request_size,
            requests_in_flight,
            merge_gap,
            spread_reads,
            cancel: None,
        })
}

/// (name, target) → the byte ranges planned for it.
type Planned = BTreeMap<(String, Target), Vec<(u64, u64)>>;

fn check(loaded: &Loaded, planned: &Planned, tensors: &[T]) -> Result<(), TestCaseError> {
    let mut got: Planned = BTreeMap::new();
    for v in loaded.views() {
        let t = tensors.iter().find(|t| t.name == v.name).unwrap();
        let want = &t.data[v.bytes.start as usize..v.bytes.end as usize];
        prop_assert_eq!(v.len, v.bytes.end - v.bytes.start, "{}", v.name);
        let bytes = loaded.to_vec(v).unwrap();
        prop_assert!(bytes == want, "bytes {:?} of {} on {} differ", v.bytes, v.name, v.target);
        got.entry((v.name.clone(), v.target)).or_default().push((v.bytes.start, v.bytes.end));
    }
    for r in got.values_mut() {
        r.sort_unstable();
    }
    prop_assert_eq!(&got, planned, "every planned range once, nothing else");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn any_plan_at_any_shape_loads_every_planned_byte_once(
        wants in proptest::collection::vec(want(), 36),
        targets in prop_oneof![Just("host"), Just("gpu:0"), Just("gpu:0,1")],
        opts in options(),
        streamed in any::<bool>(),
    ) {
        let (dir, tensors) = checkpoint();
        let ckpt = Checkpoint::open(dir.path().join("m.safetensors")).unwrap();
        let targets = Target::parse_list(targets).unwrap();
        let gpus = targets.iter().filter(|t| t.gpu().is_some()).count();
        let driver: Arc<Driver> =
            Arc::new(common::sim_driver(common::tiny_config(DirectIoPolicy::Auto, 3), gpus));
        let mut plan = Plan::new();
        let mut planned: Planned = BTreeMap::new();
        for (t, w) in tensors.iter().zip(&wants) {
            let len = t.data.len() as u64;
            let range = match *w {
                Want::Skip => continue,
                Want::Whole => 0..len,
                Want::Part(a, b) => {
                    let u = unit_bytes(t.dtype.bitsize() as u64);
                    let at = |f: f64| ((len / u) as f64 * f) as u64 * u;
                    at(a)..at(b)
                }
            };
            for &target in &targets {
                if matches!(w, Want::Whole) {
                    plan.add(&ckpt, &t.name, target).unwrap();
                } else {
                    plan.add_bytes(&ckpt, &t.name, target, range.clone()).unwrap();
                }
                planned.entry((t.name.clone(), target)).or_default().push((range.start, range.end));
            }
        }
        let loaded = if streamed {
            load_stream(&driver, &ckpt, &plan, &opts).unwrap().finish().unwrap()
        } else {
            load(&driver, &ckpt, &plan, &opts).unwrap()
        };
        check(&loaded, &planned, tensors)?;
        let shape = loaded.shape();
        prop_assert!(shape.request_size >= 4096 && shape.request_size % 4096 == 0, "{shape:?}");
        prop_assert!(shape.merge_gap >= 4096, "{shape:?}");
        prop_assert!(shape.requests_in_flight >= 1, "{shape:?}");
    }
}

#[test]
fn unit_bytes_end_on_element_boundaries() {
    assert_eq!([4, 6, 8, 16, 32, 64].map(unit_bytes), [1, 3, 1, 2, 4, 8]);
}
