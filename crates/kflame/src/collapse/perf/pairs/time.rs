//! `perf script` timestamps (`SECONDS.FRACTION`) as exact nanoseconds.

/// `4075.915749675` → 4075915749675 ns; `2001.169107` (µs, perf's default) →
/// 2001169107000 ns. No floating point: the digits are taken as they are. `None` when the
/// text is not `DIGITS[.DIGITS]`, has more than 9 fraction digits, or overflows.
pub fn parse_time_ns(s: &[u8]) -> Option<u64> {
    let (secs, frac) = match memchr::memchr(b'.', s) {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, &b""[..]),
    };
    if secs.is_empty() || frac.len() > 9 {
        return None;
    }
    let mut ns = super::event::parse_u64(secs)?.checked_mul(1_000_000_000)?;
    let mut scale = 100_000_000u64;
    for &b in frac {
        if !b.is_ascii_digit() {
            return None;
        }
        ns = ns.checked_add(u64::from(b - b'0') * scale)?;
        scale /= 10;
    }
    Some(ns)
}

#[cfg(test)]
mod tests {
    use super::parse_time_ns;

    #[test]
    fn exact_digits() {
        assert_eq!(parse_time_ns(b"4075.915749675"), Some(4_075_915_749_675));
        assert_eq!(parse_time_ns(b"2001.169107"), Some(2_001_169_107_000));
        assert_eq!(parse_time_ns(b"0.000000001"), Some(1));
        assert_eq!(parse_time_ns(b"12"), Some(12_000_000_000));
        assert_eq!(parse_time_ns(b"12."), Some(12_000_000_000));
    }

    #[test]
    fn rejects_non_times() {
        assert_eq!(parse_time_ns(b""), None);
        assert_eq!(parse_time_ns(b".5"), None);
        assert_eq!(parse_time_ns(b"1.0000000001"), None);
        assert_eq!(parse_time_ns(b"1.2.3"), None);
        assert_eq!(parse_time_ns(b"99999999999999999999.0"), None);
        assert_eq!(parse_time_ns(b"18446744073.709551616"), None);
    }
}
