//! Times as people write them: RFC 3339 (`2026-11-25T03:14:00Z`, `...+02:00`, fractions of
//! a second), `now`, and relative to now (`-1h`, `-10m`, `-30s`, `-2d`, `-500ms`); and UTC
//! nanoseconds written back as RFC 3339.

/// Why a time could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{input:?} is not a time: {why} (expected RFC 3339 like 2026-11-25T03:14:00Z, `now`, or relative like -1h, -10m, -30s, -2d)"
)]
pub struct TimeError {
    /// What was given.
    pub input: String,
    /// What is wrong.
    pub why: String,
}

fn err(input: &str, why: impl Into<String>) -> TimeError {
    TimeError { input: input.to_string(), why: why.into() }
}

/// Reads a time; relative times count from `now_ns` (UTC ns since the epoch).
pub fn parse_time(s: &str, now_ns: i64) -> Result<i64, TimeError> {
    let t = s.trim();
    if t == "now" {
        return Ok(now_ns);
    }
    if let Some(rest) = t.strip_prefix('-').or_else(|| t.strip_prefix('+')) {
        let d = parse_duration(rest).map_err(|why| err(s, why))?;
        let d = if t.starts_with('-') { -d } else { d };
        return now_ns.checked_add(d).ok_or_else(|| err(s, "out of range"));
    }
    parse_rfc3339(t).map_err(|why| err(s, why))
}

/// Reads a duration: a number with a unit `ns`, `us`, `ms`, `s`, `m`, `h`, `d`, `w`
/// (`7d`, `1.5h`, `90s`), into ns.
pub fn parse_duration(s: &str) -> Result<i64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    if num.is_empty() {
        return Err(format!("{s:?} has no number"));
    }
    let scale: i64 = match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        "w" => 7 * 86_400_000_000_000,
        "" => return Err(format!("{s:?} has no unit (s, m, h, d, ...)")),
        u => return Err(format!("unknown unit {u:?} (ns, us, ms, s, m, h, d, w)")),
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let int: i64 = if int.is_empty() { 0 } else { int.parse().map_err(|_| format!("bad number {num:?}"))? };
    let mut ns = int.checked_mul(scale).ok_or("out of range")?;
    let mut div = 1i64;
    for c in frac.chars() {
        let d = c.to_digit(10).ok_or_else(|| format!("bad number {num:?}"))? as i64;
        div = div.checked_mul(10).ok_or("too many digits")?;
        ns = ns.checked_add(d * scale / div).ok_or("out of range")?;
    }
    Ok(ns)
}

/// Reads a length of time with [`parse_duration`]'s grammar (the one every duration of kflame
/// takes: `--retain 2w`, `for 500ms`, `--cooldown 5m`).
pub fn parse_span(s: &str) -> Result<std::time::Duration, String> {
    let ns = parse_duration(s)?;
    u64::try_from(ns).map(std::time::Duration::from_nanos).map_err(|_| format!("{s:?} is out of range"))
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn num(s: &str, what: &str) -> Result<i64, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("bad {what} {s:?}"));
    }
    s.parse().map_err(|_| format!("bad {what} {s:?}"))
}

fn parse_rfc3339(s: &str) -> Result<i64, String> {
    let (date, rest) = s.split_once(['T', 't', ' ']).ok_or("no `T` between date and time")?;
    let mut dp = date.split('-');
    let (y, m, d) = match (dp.next(), dp.next(), dp.next(), dp.next()) {
        (Some(y), Some(m), Some(d), None) if y.len() == 4 => {
            (num(y, "year")?, num(m, "month")?, num(d, "day")?)
        }
        _ => return Err("date is not YYYY-MM-DD".into()),
    };
    let days_in = [
        31,
        if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&m) || d < 1 || d > days_in[(m - 1) as usize] {
        return Err(format!("no such date {date}"));
    }
    let zpos = rest.find(['Z', 'z', '+', '-']).ok_or("no time zone (Z or +HH:MM)")?;
    let (clock, zone) = rest.split_at(zpos);
    let (hms, frac) = clock.split_once('.').unwrap_or((clock, ""));
    let mut cp = hms.split(':');
    let (h, mi, se) = match (cp.next(), cp.next(), cp.next(), cp.next()) {
        (Some(h), Some(mi), Some(se), None) => (num(h, "hour")?, num(mi, "minute")?, num(se, "second")?),
        _ => return Err("time is not HH:MM:SS".into()),
    };
    if h > 23 || mi > 59 || se > 60 {
        return Err(format!("no such time {hms}"));
    }
    let mut frac_ns = 0i64;
    if !frac.is_empty() {
        if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("bad fraction of a second {frac:?} (at most 9 digits)"));
        }
        frac_ns = num(frac, "fraction")? * 10i64.pow(9 - frac.len() as u32);
    }
    let offset_s = match zone {
        "Z" | "z" => 0,
        z => {
            let sign = if z.starts_with('-') { -1 } else { 1 };
            let (oh, om) = z[1..].split_once(':').ok_or("zone is not +HH:MM")?;
            let (oh, om) = (num(oh, "zone hour")?, num(om, "zone minute")?);
            if oh > 23 || om > 59 {
                return Err(format!("no such zone offset {z}"));
            }
            sign * (oh * 3600 + om * 60)
        }
    };
    let secs = days_from_civil(y, m, d) * 86_400 + h * 3600 + mi * 60 + se - offset_s;
    secs.checked_mul(1_000_000_000).and_then(|v| v.checked_add(frac_ns)).ok_or_else(|| "out of range".into())
}

/// `2026-11-25T03:14:00.123456789Z` (fraction digits only as many as needed: none, 3, 6
/// or 9).
pub fn format_time(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let frac = ns.rem_euclid(1_000_000_000);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    let mut s = format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}", sod / 3600, sod / 60 % 60, sod % 60);
    if frac != 0 {
        if frac % 1_000_000 == 0 {
            s.push_str(&format!(".{:03}", frac / 1_000_000));
        } else if frac % 1000 == 0 {
            s.push_str(&format!(".{:06}", frac / 1000));
        } else {
            s.push_str(&format!(".{frac:09}"));
        }
    }
    s.push('Z');
    s
}

/// Now, UTC ns since the epoch.
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_and_back() {
        // 2026-11-25T03:14:00Z, computed independently: 20782 days after the epoch.
        let t = parse_time("2026-11-25T03:14:00Z", 0).unwrap();
        assert_eq!(t, (20782 * 86_400 + 3 * 3600 + 14 * 60) * 1_000_000_000);
        assert_eq!(format_time(t), "2026-11-25T03:14:00Z");
        assert_eq!(parse_time("2026-11-25T05:14:00.5+02:00", 0).unwrap(), t + 500_000_000);
        assert_eq!(format_time(t + 123_456_789), "2026-11-25T03:14:00.123456789Z");
        assert_eq!(format_time(0), "1970-01-01T00:00:00Z");
        assert_eq!(parse_time("2024-02-29T00:00:00Z", 0).map(format_time).unwrap(), "2024-02-29T00:00:00Z");
        assert!(parse_time("2025-02-29T00:00:00Z", 0).is_err());
        assert!(parse_time("2026-11-25T03:14:00", 0).is_err());
        assert!(parse_time("yesterday", 0).is_err());
    }

    #[test]
    fn relative_times() {
        let now = 1_000_000 * 1_000_000_000;
        assert_eq!(parse_time("now", now).unwrap(), now);
        assert_eq!(parse_time("-1h", now).unwrap(), now - 3_600_000_000_000);
        assert_eq!(parse_time("-10m", now).unwrap(), now - 600_000_000_000);
        assert_eq!(parse_time("-1.5s", now).unwrap(), now - 1_500_000_000);
        assert_eq!(parse_duration("7d").unwrap(), 7 * 86_400_000_000_000);
        assert!(parse_time("-10", now).is_err());
        assert!(parse_time("-10y", now).is_err());
    }
}
