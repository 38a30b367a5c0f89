//! Stripping the prefixes that logging layers put before a kernel message.
//!
//! Handled, in any sensible combination: syslog priorities `<4>`, raw `/dev/kmsg` records
//! (`6,351,3626185822,-;text`, with an optional `caller=T12` field), syslog and `journalctl
//! -k` lines (`Nov 22 00:32:10 host kernel: `, `host kern.warn kernel: `, RFC 3339
//! `2026-11-22T00:32:10.123+00:00 host kernel: `), `dmesg -x` facility/level
//! (`kern  :warn  : `), timestamps (`[   12.345678]`, `dmesg -T` `[Sun Nov 22 00:32:10
//! 2026]`) and printk caller ids (`[  T123]`, `[    C0]`, right after the timestamp or on
//! their own).

/// A log line with its prefixes removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stripped<'a> {
    /// The kernel's message text (leading indentation kept).
    pub text: &'a [u8],
    /// Printk caller id (`T123`, `C0`), if the line had one.
    pub caller: Option<&'a [u8]>,
    /// False for syslog lines of another program than the kernel (`systemd[1]: ...`).
    pub kernel: bool,
    /// True when a kernel timestamp or kmsg/syslog header was found.
    pub stamped: bool,
    /// The time as printed: dmesg seconds (`3626.182076`), `dmesg -T` or syslog date, or
    /// /dev/kmsg microseconds (all digits).
    pub time: Option<&'a [u8]>,
}

/// Strips the known prefixes of `line`.
pub fn strip(line: &[u8]) -> Stripped<'_> {
    let mut s = Stripped { text: line, caller: None, kernel: true, stamped: false, time: None };
    s.text = priority(s.text);
    if let Some((rest, caller, usec)) = kmsg_record(s.text) {
        s.text = rest;
        s.caller = caller;
        s.stamped = true;
        s.time = Some(usec);
        return s;
    }
    if let Some(rest) = syslog_header(s.text) {
        s.stamped = true;
        let header = s.text[..s.text.len() - rest.len()].trim_ascii();
        s.time = header.iter().rposition(|&b| b == b' ').map(|i| &header[..i]); // without the host
        match facility_level(rest).strip_prefix(b"kernel: ") {
            Some(r) => s.text = r,
            None => {
                s.kernel = false;
                return s;
            }
        }
        s.text = priority(s.text);
    }
    s.text = dmesg_level(s.text);
    if let Some((rest, time)) =
        timestamp(s.text).or_else(|| (!s.stamped).then(|| later_timestamp(s.text)).flatten())
    {
        s.text = rest;
        s.stamped = true;
        s.time = Some(time);
        if let Some(rest) = host_kernel(s.text) {
            s.text = rest; // journalctl -o short-monotonic: `[ 12.3] host kernel: text`
        }
    }
    if let Some((rest, caller)) = caller_id(s.text) {
        s.text = rest;
        s.caller = Some(caller);
    }
    while let Some((rest, time)) = later_timestamp(s.text) {
        // Console output interleaved on one line: the last kernel message wins.
        s.text = rest;
        s.time = Some(time);
        if let Some((rest, caller)) = caller_id(s.text) {
            s.text = rest;
            s.caller = Some(caller);
        }
    }
    s
}

/// `<N>` (syslog priority).
fn priority(s: &[u8]) -> &[u8] {
    if s.first() != Some(&b'<') {
        return s;
    }
    let digits = s[1..].iter().take_while(|b| b.is_ascii_digit()).count();
    if digits > 0 && digits <= 3 && s.get(1 + digits) == Some(&b'>') { &s[2 + digits..] } else { s }
}

/// A raw /dev/kmsg record split up: text, caller id, microseconds.
type KmsgRecord<'a> = (&'a [u8], Option<&'a [u8]>, &'a [u8]);

/// `prio,seq,usec,flags[,caller=T1];text` (raw /dev/kmsg record).
fn kmsg_record(s: &[u8]) -> Option<KmsgRecord<'_>> {
    let semi = memchr::memchr(b';', &s[..s.len().min(80)])?;
    let head = &s[..semi];
    let mut fields = head.split(|&b| b == b',');
    let mut usec: &[u8] = b"";
    for _ in 0..3 {
        let f = fields.next()?;
        if f.is_empty() || !f.iter().all(u8::is_ascii_digit) {
            return None;
        }
        usec = f;
    }
    let flags = fields.next()?;
    if flags.len() > 1 {
        return None;
    }
    let caller = fields.find_map(|f| f.strip_prefix(b"caller="));
    Some((&s[semi + 1..], caller, usec))
}

/// `Mon DD HH:MM:SS host ` or `YYYY-MM-DDTHH:MM:SS[.frac](Z|+hh:mm) host `: returns what
/// follows the host name.
fn syslog_header(s: &[u8]) -> Option<&[u8]> {
    let after_time = classic_time(s).or_else(|| rfc3339_time(s))?;
    let rest = after_time.strip_prefix(b" ")?;
    let host_end = memchr::memchr(b' ', rest)?;
    Some(&rest[host_end + 1..])
}

fn classic_time(s: &[u8]) -> Option<&[u8]> {
    const MONTHS: [&[u8]; 12] =
        [b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec"];
    if s.len() < 15 || !MONTHS.contains(&&s[..3]) || s[3] != b' ' {
        return None;
    }
    let day = &s[4..6];
    let ok_day = day.iter().all(|b| b.is_ascii_digit() || *b == b' ');
    let t = &s[7..15];
    let ok_time = t[2] == b':' && t[5] == b':' && t.iter().all(|b| b.is_ascii_digit() || *b == b':');
    (s[6] == b' ' && ok_day && ok_time).then_some(&s[15..])
}

fn rfc3339_time(s: &[u8]) -> Option<&[u8]> {
    if s.len() < 20 || s[4] != b'-' || s[7] != b'-' || s[10] != b'T' || s[13] != b':' || s[16] != b':' {
        return None;
    }
    if !s[..4].iter().all(u8::is_ascii_digit) {
        return None;
    }
    let end = memchr::memchr(b' ', s)?;
    Some(&s[end..])
}

/// `kern.warn ` between a syslog header's host and `kernel: `, as syslog templates that
/// print the facility and level write it (syslog-ng's `$FACILITY.$LEVEL`, rsyslog's
/// `%syslogfacility-text%.%syslogseverity-text%`): what follows.
fn facility_level(s: &[u8]) -> &[u8] {
    const LEVELS: [&[u8]; 9] =
        [b"emerg", b"alert", b"crit", b"err", b"warn", b"warning", b"notice", b"info", b"debug"];
    let Some(r) = s.strip_prefix(b"kern.") else { return s };
    LEVELS.iter().find_map(|l| r.strip_prefix(*l).and_then(|r| r.strip_prefix(b" "))).unwrap_or(s)
}

/// `host kernel: ` after a monotonic timestamp: what follows.
fn host_kernel(s: &[u8]) -> Option<&[u8]> {
    let sp = memchr::memchr(b' ', &s[..s.len().min(80)])?;
    let host = &s[..sp];
    let plausible = !host.is_empty() && host.iter().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(b));
    if plausible { s[sp + 1..].strip_prefix(b"kernel: ") } else { None }
}

/// `kern  :warn  : ` (dmesg -x).
fn dmesg_level(s: &[u8]) -> &[u8] {
    const FACILITIES: [&[u8]; 4] = [b"kern", b"user", b"daemon", b"syslog"];
    if !FACILITIES.iter().any(|f| s.starts_with(f)) {
        return s;
    }
    let Some(c1) = memchr::memchr(b':', &s[..s.len().min(12)]) else { return s };
    let rest = &s[c1 + 1..];
    let Some(c2) = memchr::memchr(b':', &rest[..rest.len().min(10)]) else { return s };
    let level = rest[..c2].trim_ascii();
    if level.is_empty() || !level.iter().all(u8::is_ascii_lowercase) {
        return s;
    }
    let after = &rest[c2 + 1..];
    after.strip_prefix(b" ").unwrap_or(after)
}

/// `[   12.345678] ` or `[Sun Nov 22 00:32:10 2026] `: the rest and the time.
fn timestamp(s: &[u8]) -> Option<(&[u8], &[u8])> {
    if s.first() != Some(&b'[') {
        return None;
    }
    let close = memchr::memchr(b']', &s[..s.len().min(40)])?;
    let inner = s[1..close].trim_ascii();
    let numeric = !inner.is_empty() && inner.iter().all(|b| b.is_ascii_digit() || *b == b'.');
    // `Sun Nov 22 00:32:10 2026`
    let dated = inner.len() == 24
        && inner[..3].iter().all(u8::is_ascii_alphabetic)
        && inner[3] == b' '
        && inner[7] == b' '
        && inner[13] == b':'
        && inner[16] == b':';
    if !(numeric && inner.contains(&b'.') || dated) {
        return None;
    }
    let rest = &s[close + 1..];
    Some((rest.strip_prefix(b" ").unwrap_or(rest), inner))
}

/// A timestamp after other output on the same console line (`syzkaller login: [ 1.2] BUG:`,
/// `** 93 printk messages dropped ** [ 1.2] ...`): what follows it.
fn later_timestamp(s: &[u8]) -> Option<(&[u8], &[u8])> {
    memchr::memchr_iter(b'[', s).skip_while(|&i| i == 0).find_map(|i| timestamp(&s[i..]))
}

/// `[  T123] ` / `[    C0] ` (printk caller id).
fn caller_id(s: &[u8]) -> Option<(&[u8], &[u8])> {
    if s.first() != Some(&b'[') {
        return None;
    }
    let close = memchr::memchr(b']', &s[..s.len().min(16)])?;
    let inner = s[1..close].trim_ascii_start();
    let ok = inner.len() >= 2 && matches!(inner[0], b'T' | b'C') && inner[1..].iter().all(u8::is_ascii_digit);
    if !ok {
        return None;
    }
    let rest = &s[close + 1..];
    Some((rest.strip_prefix(b" ").unwrap_or(rest), inner))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: &str) -> (String, Option<String>, bool) {
        let s = strip(line.as_bytes());
        let t = String::from_utf8_lossy(s.text).into_owned();
        (t, s.caller.map(|c| String::from_utf8_lossy(c).into_owned()), s.kernel)
    }

    #[test]
    fn every_prefix_style() {
        let cases = [
            "[ 3626.185837] Call Trace:",
            "[  584.319520][   T31] Call Trace:",
            "[    1.000000] [ T31] Call Trace:",
            "<4>[ 3626.185837] Call Trace:",
            "6,352,3626185837,-;Call Trace:",
            "6,352,3626185837,-,caller=T31;Call Trace:",
            "Nov 22 00:32:10 myhost kernel: Call Trace:",
            "Nov  2 00:32:10 myhost kernel: [ 3626.185837] Call Trace:",
            "2026-11-22T00:32:10.123456+00:00 myhost kernel: Call Trace:",
            "kern  :warn  : [ 3626.185837] Call Trace:",
            "[Sun Nov 22 00:32:10 2026] Call Trace:",
            "[ 3626.185837] myhost kernel: Call Trace:",
            "2026-11-22T00:32:10+0000 myhost kernel: Call Trace:",
            "Call Trace:",
            "Nov 22 00:32:10 myhost kern.warn kernel: [ 3626.185837] Call Trace:",
        ];
        for c in cases {
            assert_eq!(text(c).0, "Call Trace:", "{c}");
            assert!(text(c).2, "{c}");
        }
        assert_eq!(text(cases[1]).1.as_deref(), Some("T31"));
        let time = |l: &str| strip(l.as_bytes()).time.map(|t| String::from_utf8_lossy(t).into_owned());
        assert_eq!(time(cases[0]).as_deref(), Some("3626.185837"));
        assert_eq!(time(cases[4]).as_deref(), Some("3626185837"));
        assert_eq!(time(cases[6]).as_deref(), Some("Nov 22 00:32:10"));
        assert_eq!(time(cases[7]).as_deref(), Some("3626.185837"));
        assert_eq!(time(cases[8]).as_deref(), Some("2026-11-22T00:32:10.123456+00:00"));
        assert_eq!(time(cases[10]).as_deref(), Some("Sun Nov 22 00:32:10 2026"));
        assert_eq!(text(cases[5]).1.as_deref(), Some("T31"));
        assert_eq!(text("[   12.5][    C0]  <IRQ>").0, " <IRQ>");
        assert_eq!(
            text("[ 1.5] BUG: soft lockup - CPU#0 stuck for 135s! [syzkaller670324:3527]").0,
            "BUG: soft lockup - CPU#0 stuck for 135s! [syzkaller670324:3527]"
        );
        assert_eq!(text("syzkaller login: [   16.305150] INFO: x").0, "INFO: x");
        assert_eq!(text("bytes[   76.471107][ T1] BUG: y").0, "BUG: y");
    }

    #[test]
    fn other_programs_and_lookalikes() {
        assert!(!text("Nov 22 00:32:10 myhost systemd[1]: Started foo.").2);
        assert_eq!(text("[<ffffffff81000000>] foo+0x1/0x2").0, "[<ffffffff81000000>] foo+0x1/0x2");
        assert_eq!(text("[ffff] text").0, "[ffff] text");
        assert_eq!(text("1,2;x").0, "1,2;x");
    }
}
