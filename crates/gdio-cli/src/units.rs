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
    Ok((n * mult as f64).round() as u64)
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
    }
}
