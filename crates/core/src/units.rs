//! Sizes (K/M/G/T, binary, as stress-ng and cgroupfs read them) and durations (ns/us/ms/s/m).

/// Parse "512M", "2G", "4096", "1.5G" into bytes (binary multiples, like memory.limit_in_bytes).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("empty size".into());
    }
    let (num, mult) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        None => (t, 1u64),
        Some((i, _)) => {
            let unit = t[i..].to_ascii_uppercase();
            let m = match unit.trim_end_matches("IB").trim_end_matches('B') {
                "" => 1,
                "K" => 1 << 10,
                "M" => 1 << 20,
                "G" => 1 << 30,
                "T" => 1 << 40,
                _ => return Err(format!("bad size unit in {}: use K, M, G or T", clip(s))),
            };
            (&t[..i], m)
        }
    };
    let v: f64 = num.trim().parse().map_err(|_| {
        format!(
            "bad size {}: expected a number with an optional K/M/G/T suffix",
            clip(s)
        )
    })?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!(
            "bad size {}: must be a non-negative number",
            clip(s)
        ));
    }
    let bytes = (v * mult as f64).round();
    // 2^64 itself is not representable: `as u64` would saturate silently.
    if bytes >= u64::MAX as f64 {
        return Err(format!("bad size {}: does not fit in 64 bits", clip(s)));
    }
    Ok(bytes as u64)
}

/// Parse "60s", "500ms", "2m", "100us", "10ns" into nanoseconds. A bare number is seconds.
pub fn parse_duration_ns(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .char_indices()
        .find(|(_, c)| c.is_ascii_alphabetic())
        .map(|(i, _)| i)
        .unwrap_or(t.len());
    let (num, unit) = (&t[..split], &t[split..]);
    let mult: f64 = match unit {
        "" | "s" => 1e9,
        "ms" => 1e6,
        "us" => 1e3,
        "ns" => 1.0,
        "m" | "min" => 60e9,
        _ => {
            return Err(format!(
                "bad duration unit in {}: use ns, us, ms, s or m",
                clip(s)
            ))
        }
    };
    let v: f64 = num.trim().parse().map_err(|_| {
        format!(
            "bad duration {}: expected a number with a unit such as 20s or 500ms",
            clip(s)
        )
    })?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("bad duration {}: must be non-negative", clip(s)));
    }
    let ns = (v * mult).round();
    if ns >= u64::MAX as f64 {
        return Err(format!(
            "bad duration {}: does not fit in 64 bits of ns",
            clip(s)
        ));
    }
    Ok(ns as u64)
}

/// Longest stretch of user input quoted back in an error message.
pub const CLIP_CHARS: usize = 100;

/// `s` quoted for an error message: at most [`CLIP_CHARS`] characters, with the full length
/// said when it was cut, so a 100 KB value does not come back verbatim.
pub fn clip(s: &str) -> String {
    let n = s.chars().count();
    if n <= CLIP_CHARS {
        format!("{s:?}")
    } else {
        let head: String = s.chars().take(CLIP_CHARS).collect();
        format!("{head:?}... ({n} characters)")
    }
}

/// A multi-line message (e.g. a TOML parser's, which quotes the offending line) with every
/// line clipped by [`clip_raw`].
pub fn clip_lines(msg: &str) -> String {
    msg.lines().map(clip_raw).collect::<Vec<_>>().join("\n")
}

/// Like [`clip`] but unquoted (for keys and `--set` arguments shown as written).
pub fn clip_raw(s: &str) -> String {
    let n = s.chars().count();
    if n <= CLIP_CHARS {
        s.to_string()
    } else {
        let head: String = s.chars().take(CLIP_CHARS).collect();
        format!("{head}... ({n} characters)")
    }
}

/// Human form of a byte count, for tables and messages.
pub fn fmt_size(b: u64) -> String {
    const U: [(&str, u64); 4] = [
        ("T", 1 << 40),
        ("G", 1 << 30),
        ("M", 1 << 20),
        ("K", 1 << 10),
    ];
    for (name, m) in U {
        if b >= m && b.is_multiple_of(m) {
            return format!("{}{}", b / m, name);
        }
    }
    for (name, m) in U {
        if b >= m {
            return format!("{:.1}{}", b as f64 / m as f64, name);
        }
    }
    format!("{b}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512M").unwrap(), 512 << 20);
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert_eq!(parse_size("2g").unwrap(), 2 << 30);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert_eq!(parse_size("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert!(parse_size("2X").is_err());
        assert!(parse_size("G").is_err());
        assert!(parse_size("-1G").is_err());
        // 9223372036854775807K: would saturate to 2^64 - 1.
        let e = parse_size("9223372036854775807K").unwrap_err();
        assert!(e.contains("does not fit in 64 bits"), "{e}");
        assert!(parse_size(&"9".repeat(100_000)).unwrap_err().len() < 300);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("60s").unwrap(), 60_000_000_000);
        assert_eq!(parse_duration_ns("500ms").unwrap(), 500_000_000);
        assert_eq!(parse_duration_ns("2m").unwrap(), 120_000_000_000);
        assert_eq!(parse_duration_ns("8").unwrap(), 8_000_000_000);
        assert!(parse_duration_ns("5h").is_err());
        assert!(parse_duration_ns("s").is_err());
        assert!(parse_duration_ns("inf").is_err());
        let e = parse_duration_ns("1000000000m").unwrap_err();
        assert!(e.contains("does not fit"), "{e}");
    }

    #[test]
    fn formatting() {
        assert_eq!(fmt_size(512 << 20), "512M");
        assert_eq!(fmt_size(3 << 29), "1536M");
        assert_eq!(fmt_size(1500), "1.5K");
        assert_eq!(fmt_size(100), "100");
    }
}
