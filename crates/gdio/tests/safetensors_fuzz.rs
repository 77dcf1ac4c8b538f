//! Structured fuzzing of the safetensors header and index parsers (proptest, beside the
//! coverage-guided libFuzzer targets in `fuzz/`, whose corpus `safetensors_fuzz_regressions.rs`
//! replays). Inputs are the corpus in `fuzz/corpus/` mutated
//! (bytes flipped, inserted, deleted, JSON tokens spliced in, the length prefix fixed up or
//! not) and headers generated from random tensor lists. Properties: the parsers never panic;
//! the header parser agrees with the `safetensors` crate's `read_metadata` on every input
//! (same tensors when both accept; where they differ, only on duplicate keys, which the crate
//! silently collapses). `GDIO_FUZZ_CASES=N` sets the number of cases (default 3000 each).

use std::path::PathBuf;

use gdio::safetensors::{parse_index, parse_prefix};
use proptest::prelude::*;

fn corpus(kind: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(kind);
    let mut v: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    v.sort();
    assert!(!v.is_empty(), "corpus {} is empty", dir.display());
    v
}

fn cases() -> u32 {
    std::env::var("GDIO_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(3000)
}

const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "0",
    "-1",
    "1e400",
    "18446744073709551615",
    "18446744073709551616",
    "4294967296",
    "null",
    "true",
    "\"F4\"",
    "\"F6_E3M2\"",
    "\"BF16\"",
    "\"C64\"",
    "\"F8_E8M0\"",
    "\"XX\"",
    "\"__metadata__\"",
    "\"dtype\"",
    "\"shape\"",
    "\"data_offsets\"",
    "[0,0]",
    "[]",
    "\"a\"",
    "\\u0000",
    "\u{1F600}",
];

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Token(usize, usize),
    Delete(usize, usize),
    Truncate(usize),
    FixPrefix,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(i, b)| Mutation::Insert(i, b)),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(i, t)| Mutation::Token(i, t)),
        (any::<usize>(), 1usize..16).prop_map(|(i, n)| Mutation::Delete(i, n)),
        any::<usize>().prop_map(Mutation::Truncate),
        Just(Mutation::FixPrefix),
    ]
}

fn apply(mut b: Vec<u8>, muts: &[Mutation], header: bool) -> Vec<u8> {
    // Mutations land mostly in the JSON (after the prefix) so they test the parser, not just
    // the length check.
    let body = if header { 8.min(b.len()) } else { 0 };
    for m in muts {
        let span = b.len().saturating_sub(body).max(1);
        match m {
            Mutation::Flip(i, v) => {
                if !b.is_empty() {
                    let i = i % b.len();
                    b[i] ^= v | 1;
                }
            }
            Mutation::Insert(i, x) => {
                let i = body + i % span;
                let i = i.min(b.len());
                b.splice(i..i, x.iter().copied());
            }
            Mutation::Token(i, t) => {
                let i = (body + i % span).min(b.len());
                b.splice(i..i, TOKENS[*t].bytes());
            }
            Mutation::Delete(i, n) => {
                let i = (body + i % span).min(b.len());
                let e = (i + n).min(b.len());
                b.drain(i..e);
            }
            Mutation::Truncate(n) => {
                let n = n % (b.len() + 1);
                b.truncate(n);
            }
            Mutation::FixPrefix => {
                if header && b.len() >= 8 {
                    // Re-derive the length from where the JSON object appears to end.
                    if let Some(end) = b[8..].iter().rposition(|&c| c == b'}') {
                        b[..8].copy_from_slice(&((end + 1) as u64).to_le_bytes());
                    }
                }
            }
        }
    }
    b
}

/// The header parser and the crate agree on `b`.
fn agree(b: &[u8]) -> Result<(), TestCaseError> {
    let mine = parse_prefix(b, b.len() as u64, None);
    let theirs = safetensors::SafeTensors::read_metadata(b);
    match (&mine, &theirs) {
        (Ok(h), Ok((_, m))) => {
            let names = m.offset_keys();
            prop_assert_eq!(h.tensors.len(), names.len());
            for t in &h.tensors {
                let i = m.info(&t.name);
                prop_assert!(i.is_some(), "{} missing from the crate's view", t.name);
                let i = i.unwrap();
                prop_assert_eq!(i.dtype, t.dtype);
                let shape: Vec<u64> = i.shape.iter().map(|&d| d as u64).collect();
                prop_assert_eq!(&shape, &t.shape);
                prop_assert_eq!((i.data_offsets.0 as u64, i.data_offsets.1 as u64), t.data_offsets);
            }
        }
        (Err(e), Ok(_)) => {
            prop_assert!(e.to_string().contains("duplicate key"), "only gdio refuses: {e}");
        }
        (Ok(_), Err(e)) => {
            return Err(TestCaseError::fail(format!("only the crate refuses: {e:?}")));
        }
        (Err(e), Err(_)) => {
            prop_assert!(e.to_string().starts_with("malformed safetensors file"), "{e}");
        }
    }
    Ok(())
}

/// A header JSON built from random (name, dtype, shape, offsets) entries, some consistent,
/// some not, with random data bytes after it.
fn generated() -> impl Strategy<Value = Vec<u8>> {
    let dtype = prop_oneof![
        Just("F4"),
        Just("F6_E2M3"),
        Just("U8"),
        Just("BF16"),
        Just("F32"),
        Just("C64"),
        Just("F8_E4M3"),
        Just("BOOL"),
        Just("Q3"),
    ];
    let entry =
        ("[a-c]{1,2}", dtype, proptest::collection::vec(0u64..6, 0..3), any::<bool>(), 0u64..4);
    (proptest::collection::vec(entry, 0..5), 0usize..3, any::<bool>()).prop_map(
        |(entries, extra, meta)| {
            let mut parts = Vec::new();
            if meta {
                parts.push("\"__metadata__\":{\"k\":\"v\"}".to_owned());
            }
            let mut off = 0u64;
            for (name, dt, shape, consistent, skew) in entries {
                let n: u64 = shape.iter().product();
                let bits = match dt {
                    "F4" => 4,
                    "F6_E2M3" => 6,
                    "U8" | "F8_E4M3" | "BOOL" => 8,
                    "BF16" => 16,
                    "F32" => 32,
                    _ => 64,
                };
                let len = n * bits / 8;
                let (b, e) = if consistent { (off, off + len) } else { (off, off + len + skew) };
                off = e;
                let shape: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
                parts.push(format!(
                    "\"{name}\":{{\"dtype\":\"{dt}\",\"shape\":[{}],\"data_offsets\":[{b},{e}]}}",
                    shape.join(",")
                ));
            }
            let json = format!("{{{}}}", parts.join(","));
            let mut v = (json.len() as u64).to_le_bytes().to_vec();
            v.extend_from_slice(json.as_bytes());
            v.extend(std::iter::repeat_n(7u8, off as usize));
            // 0: exact, 1: a trailing byte, 2: truncated by one.
            match extra {
                1 => v.push(7),
                2 => {
                    v.pop();
                }
                _ => {}
            }
            v
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_headers_never_panic_and_agree_with_the_crate(
        seed in 0usize..64,
        muts in proptest::collection::vec(mutation(), 0..6),
    ) {
        let c = corpus("header");
        let b = apply(c[seed % c.len()].clone(), &muts, true);
        agree(&b)?;
    }

    #[test]
    fn generated_headers_agree_with_the_crate(b in generated()) {
        agree(&b)?;
    }

    #[test]
    fn mutated_indexes_never_panic(
        seed in 0usize..64,
        muts in proptest::collection::vec(mutation(), 0..6),
    ) {
        let c = corpus("index");
        let b = apply(c[seed % c.len()].clone(), &muts, false);
        if let Ok(idx) = parse_index(&b, None) {
            for f in idx.weight_map.values() {
                prop_assert!(stays_inside(f), "{f}");
            }
        }
    }
}

/// A shard name that cannot leave the index's folder: only plain components.
fn stays_inside(f: &str) -> bool {
    let p = std::path::Path::new(f);
    p.components().all(|c| matches!(c, std::path::Component::Normal(_))) && !f.is_empty()
}

/// Inputs the fuzzers found, kept as regression tests.
#[test]
fn regressions() {
    // `m..safetensors` is a plain name (the property once mistook `..` inside a name for a
    // parent component); `../m` and `a/../../m` are not.
    let idx = parse_index(br#"{"weight_map":{"a":"m..safetensors"}}"#, None).unwrap();
    assert!(stays_inside(&idx.weight_map["a"]));
    for bad in [r#"{"weight_map":{"a":"../m"}}"#, r#"{"weight_map":{"a":"x/../../m"}}"#] {
        assert!(parse_index(bad.as_bytes(), None).is_err(), "{bad}");
    }
    // `"__metadata__": null` is accepted by the crate (an absent map): accept it too.
    let json = r#"{"__metadata__":null}"#;
    let mut b = (json.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(json.as_bytes());
    agree(&b).unwrap();
}
