//! Byte sizes on the command line (`1G`, `8GiB`, `512M`, `4096`) and in reports.

/// Parses a size: a number with an optional K, M, G or T suffix (powers of 1024; `B`, `iB`
/// and lower case accepted).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let body = lower.trim_end_matches('b').trim_end_matches('i');
    let (num, mult) = match body.chars().last() {
        Some('k') => (&body[..body.len() - 1], 1u64 << 10),
        Some('m') => (&body[..body.len() - 1], 1 << 20),
        Some('g') => (&body[..body.len() - 1], 1 << 30),
        Some('t') => (&body[..body.len() - 1], 1 << 40),
        _ => (body, 1),
    };
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a size (examples: 4096, 64K, 512M, 8G)"))?;
    if n.is_nan() || n < 0.0 || !n.is_finite() {
        return Err(format!("{s:?} is not a size"));
    }
    let bytes = (n * mult as f64).round();
    // 2^64 is the first f64 past u64::MAX.
    if bytes >= 18_446_744_073_709_551_616.0 {
        return Err(format!("{s:?} is too large (more than 16 EiB)"));
    }
    Ok(bytes as u64)
}

/// A clap value parser for a size in `[lo, hi]`; the error names the flag, the value and the
/// range.
pub fn bounded_size(
    flag: &'static str,
    lo: u64,
    hi: u64,
) -> impl Fn(&str) -> Result<u64, String> + Clone {
    move |s| {
        let v = parse_size(s).map_err(|e| format!("{flag} {e}"))?;
        if v < lo || v > hi {
            return Err(format!(
                "{flag} {s:?} is {v} bytes: it must be between {} and {}",
                format_size(lo),
                format_size(hi)
            ));
        }
        Ok(v)
    }
}

/// A clap value parser for a count in `[lo, hi]`; the error names the flag, the value and the
/// range.
pub fn bounded_count(
    flag: &'static str,
    lo: usize,
    hi: usize,
) -> impl Fn(&str) -> Result<usize, String> + Clone {
    move |s| {
        let v: usize = s
            .trim()
            .parse()
            .map_err(|_| format!("{flag} {s:?} is not a whole number between {lo} and {hi}"))?;
        if v < lo || v > hi {
            return Err(format!("{flag} {v} is out of range: it must be between {lo} and {hi}"));
        }
        Ok(v)
    }
}

/// Formats bytes with a binary unit.
pub fn format_size(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", U[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("64K").unwrap(), 65536);
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("8GiB").unwrap(), 8 << 30);
        assert_eq!(parse_size("1.5m").unwrap(), 3 << 19);
        assert!(parse_size("abc").is_err());
        assert!(parse_size("-1G").is_err());
        assert_eq!(format_size(1 << 30), "1.0 GiB");
        assert!(parse_size("1e30").unwrap_err().contains("too large"));
        assert!(parse_size("2P").is_err()); // no P suffix
        assert!(parse_size("16777216T").is_err()); // 2^64
        assert_eq!(parse_size("16383T").unwrap(), 16383 << 40);
    }

    #[test]
    fn bounds_name_the_flag() {
        let io = bounded_size("--io-size", 1, 1 << 30);
        assert!(io("0").unwrap_err().contains("--io-size"));
        assert!(io("2G").unwrap_err().contains("between"));
        assert_eq!(io("4K").unwrap(), 4096);
        let n = bounded_count("--warmup", 0, 1000);
        assert!(n("18446744073709551615").unwrap_err().contains("--warmup"));
        assert!(n("-1").unwrap_err().contains("--warmup"));
        assert_eq!(n("0").unwrap(), 0);
    }
}
