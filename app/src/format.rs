//! Number formatting for the pages: bytes in binary units, counts with thousands separators,
//! rates, durations and ages.

/// `1234567` → `"1,234,567"`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `x` rounded to `decimals` places: `fixed(2.345, 1)` → `"2.3"`, `fixed(-0.04, 1)` → `"0.0"`;
/// NaN reads 0. The pages format every fraction with this rather than `{:.N}`: the standard
/// float formatting is some 20 KB of the Wasm, integer digits are nearly free.
pub fn fixed(x: f64, decimals: u32) -> String {
    let scale = 10u64.pow(decimals.min(9));
    // Saturating: NaN becomes 0, infinities and huge values the largest u64.
    let n = (x.abs() * scale as f64).round() as u64;
    let mut out = String::new();
    if x < 0.0 && n > 0 {
        out.push('-');
    }
    out.push_str(&(n / scale).to_string());
    if scale > 1 {
        let frac = (n % scale).to_string();
        out.push('.');
        for _ in frac.len()..decimals.min(9) as usize {
            out.push('0');
        }
        out.push_str(&frac);
    }
    out
}

/// `1536` → `"1.50 KiB"`; below 1 KiB, plain bytes.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    let decimals = if value < 10.0 {
        2
    } else if value < 100.0 {
        1
    } else {
        0
    };
    format!("{} {}", fixed(value, decimals), UNITS[unit])
}

/// A rate with three significant digits: `0.512`, `12.3`, `1,234`.
pub fn rate(per_s: f64) -> String {
    if per_s >= 1000.0 {
        thousands(per_s.round() as u64)
    } else if per_s >= 100.0 {
        fixed(per_s, 0)
    } else if per_s >= 10.0 {
        fixed(per_s, 1)
    } else if per_s > 0.0 {
        fixed(per_s, 2)
    } else {
        "0".into()
    }
}

/// A duration in its two largest units: `45 s`, `3 min`, `2 h 5 min`, `4 d 3 h`.
pub fn duration(secs: u64) -> String {
    let (d, h, m) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60);
    if d > 0 {
        format!("{d} d {h} h")
    } else if h > 0 {
        format!("{h} h {m} min")
    } else if m > 0 {
        format!("{m} min")
    } else {
        format!("{secs} s")
    }
}

/// A measured time in seconds: under a minute with one decimal (`0.2 s`, `12.5 s`, where a
/// whole number of seconds would say `0 s`), else as [`duration`].
pub fn seconds(secs: f64) -> String {
    if secs < 59.95 {
        format!("{} s", fixed(secs.max(0.0), 1))
    } else {
        duration(secs.round() as u64)
    }
}

/// How long before `now_ms` `then_ms` was: `just now`, `5 min ago`; `—` when unknown.
pub fn ago(then_ms: u64, now_ms: u64) -> String {
    if then_ms == 0 {
        return "—".into();
    }
    let secs = now_ms.saturating_sub(then_ms) / 1000;
    if secs < 60 {
        "just now".into()
    } else {
        format!("{} ago", duration(secs))
    }
}

/// A fraction as a percentage with one decimal: `0.9731` → `97.3%`; `—` for none.
pub fn percent(f: Option<f64>) -> String {
    match f {
        Some(f) => format!("{}%", fixed(f * 100.0, 1)),
        None => "—".into(),
    }
}

/// `s` in lower case, to compare names regardless of case. In the browser it is the JS engine's
/// `toLowerCase` (the same Unicode mapping as `str::to_lowercase`, whose tables and code would
/// be some 10 KB of the Wasm).
pub fn lower(s: &str) -> String {
    #[cfg(feature = "hydrate")]
    return String::from(js_sys::JsString::from(s).to_lower_case());
    #[cfg(not(feature = "hydrate"))]
    return s.to_lowercase();
}

/// `s` percent-encoded for a query string or a path segment.
pub fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn bytes_picks_binary_units() {
        assert_eq!(bytes(12), "12 B");
        assert_eq!(bytes(1536), "1.50 KiB");
        assert_eq!(bytes(200 * 1024 * 1024), "200 MiB");
        assert_eq!(bytes(5 * 1024 * 1024 * 1024), "5.00 GiB");
    }

    #[test]
    fn rates_durations_and_ages_read_naturally() {
        assert_eq!(rate(0.0), "0");
        assert_eq!(rate(0.5123), "0.51");
        assert_eq!(rate(12.34), "12.3");
        assert_eq!(rate(1234.4), "1,234");
        assert_eq!(duration(45), "45 s");
        assert_eq!(duration(7500), "2 h 5 min");
        assert_eq!(duration(3 * 86_400 + 7200), "3 d 2 h");
        assert_eq!(seconds(0.2235), "0.2 s");
        assert_eq!(seconds(12.46), "12.5 s");
        assert_eq!(seconds(125.0), "2 min");
        assert_eq!(ago(0, 5), "—");
        assert_eq!(ago(1_000, 301_000), "5 min ago");
        assert_eq!(percent(Some(0.9731)), "97.3%");
    }

    #[test]
    fn fixed_rounds_to_its_decimals() {
        assert_eq!(fixed(2.345, 1), "2.3");
        assert_eq!(fixed(2.35, 0), "2");
        assert_eq!(fixed(0.05, 2), "0.05");
        assert_eq!(fixed(1.005, 3), "1.005");
        assert_eq!(fixed(9.999, 2), "10.00");
        assert_eq!(fixed(-1.25, 1), "-1.3");
        assert_eq!(fixed(-0.04, 1), "0.0");
        assert_eq!(fixed(f64::NAN, 1), "0.0");
        assert_eq!(fixed(1234.5, 0), "1235");
    }
}
