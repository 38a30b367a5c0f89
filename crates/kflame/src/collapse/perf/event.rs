//! Event (sample header) lines of `perf script`:
//!
//! ```text
//! java 25607 4794564.109216: cycles:
//! java 12688 [002] 6544038.708352: cpu-clock:
//! V8 WorkerThread 24636/25607 [000] 94564.109216: cycles:
//! vote   913    72.176760:     257597 cycles:uppp:
//! false 64414 20110.539270:      34467 cycles:u:  ffffffff9aa3c8de [unknown] ([unknown])
//! perf 14446/14446 [001]  2007.580214:          1 kmem:mm_page_alloc: page=0x16fe6d order=0 ...
//! ```
//!
//! Fields: comm (may contain spaces), `TID` or `PID/TID`, optional `[CPU]`, optional
//! `TIME:`, optional period, then `EVENT:` followed by a tracepoint payload or, when the
//! sample has a single frame, that frame.

use super::bytes::{is_blank, trim, trim_start};

/// The parts of an event line; all slices borrow the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventLine<'a> {
    /// Process (thread) name, possibly with spaces.
    pub(crate) comm: &'a [u8],
    /// Process id when perf printed `PID/TID`.
    pub(crate) pid: Option<&'a [u8]>,
    /// Thread id (the only id in perf's default output).
    pub(crate) tid: &'a [u8],
    /// The CPU between brackets (`001`), when perf printed one.
    pub(crate) cpu: Option<&'a [u8]>,
    /// The timestamp without its colon (`2007.580214`), when perf printed one.
    pub(crate) time: Option<&'a [u8]>,
    /// The sample period, when perf printed one.
    pub(crate) period: Option<u64>,
    /// Event name as printed (`cycles:u`, `kmem:kmalloc`), without the final `:`.
    pub(crate) event: Option<&'a [u8]>,
    /// What follows the event name: a tracepoint payload or a single frame.
    pub(crate) trailer: &'a [u8],
}

/// Parses an event line, or `None` when the line has no `comm TID` shape.
///
/// A comm may contain words made of digits (`Web Content 2 1234 ...`): each all-digit word
/// is tried as the thread id, and the first one followed by a well-formed event wins; without
/// any, the first all-digit word is taken (as `stackcollapse-perf.pl` does).
pub(crate) fn parse(line: &[u8]) -> Option<EventLine<'_>> {
    let line = trim(line);
    // A fold without early exit, so that it vectorizes.
    if line.iter().fold(false, |bad, &b| bad | ((b < 0x20 && b != b'\t') || b == 0x7f)) {
        // perf prints no control characters: this is binary data, not a header.
        return None;
    }
    let mut fallback = None;
    let mut pos = word_end(line, 0);
    while pos < line.len() {
        let start = skip_blank(line, pos);
        let end = word_end(line, start);
        if end == line.len() {
            break;
        }
        if let Some((pid, tid)) = split_ids(&line[start..end]) {
            let comm = trim(&line[..start]);
            let ev = fields(comm, pid, tid, &line[end..]);
            if ev.event.is_some() {
                return Some(ev);
            }
            fallback.get_or_insert(ev);
        }
        pos = end;
    }
    fallback
}

/// A sample header where a frame could also be: perf pads the comm of a header on the left
/// with spaces (samples recorded without call chains come one line each, all indented)
/// and indents its frames with a tab. A space-indented line that reads as a header with an
/// event is one, even when it would also read as a frame (`dd 23154 [000] ...`: a hex
/// "address" `dd`).
pub(crate) fn padded_header(line: &[u8]) -> Option<EventLine<'_>> {
    if line.first() != Some(&b' ') {
        return None;
    }
    parse(line).filter(|e| e.event.is_some())
}

/// Parses what follows the ids: `[CPU] TIME: PERIOD EVENT: TRAILER`, each part optional.
fn fields<'a>(comm: &'a [u8], pid: Option<&'a [u8]>, tid: &'a [u8], rest: &'a [u8]) -> EventLine<'a> {
    let mut r = trim_start(rest);
    let (mut cpu, mut time) = (None, None);
    if r.first() == Some(&b'[')
        && let Some(close) = memchr::memchr(b']', r)
    {
        cpu = Some(trim(&r[1..close]));
        r = trim_start(&r[close + 1..]);
    }
    let tok = first_word(r);
    if tok.len() > 1 && tok.ends_with(b":") && is_time(&tok[..tok.len() - 1]) {
        time = Some(&tok[..tok.len() - 1]);
        r = trim_start(&r[tok.len()..]);
    }
    let mut period = None;
    let tok = first_word(r);
    if !tok.is_empty() && tok.len() < r.len() && tok.iter().all(u8::is_ascii_digit) {
        period = parse_u64(tok);
        r = trim_start(&r[tok.len()..]);
    }
    let tok = first_word(r);
    let (event, trailer) = if tok.len() > 1 && tok.ends_with(b":") {
        (Some(&tok[..tok.len() - 1]), trim(&r[tok.len()..]))
    } else {
        (None, r)
    };
    EventLine { comm, pid, tid, cpu, time, period, event, trailer }
}

/// `TID` or `PID/TID`, decimal; perf prints `-1` for samples of tasks that had exited.
fn split_ids(word: &[u8]) -> Option<(Option<&[u8]>, &[u8])> {
    let digits = |s: &[u8]| {
        let s = s.strip_prefix(b"-").unwrap_or(s);
        !s.is_empty() && s.iter().all(u8::is_ascii_digit)
    };
    match memchr::memchr(b'/', word) {
        None if digits(word) => Some((None, word)),
        Some(i) if digits(&word[..i]) && digits(&word[i + 1..]) => Some((Some(&word[..i]), &word[i + 1..])),
        _ => None,
    }
}

fn is_time(s: &[u8]) -> bool {
    s.first().is_some_and(u8::is_ascii_digit) && s.iter().all(|&b| b.is_ascii_digit() || b == b'.')
}

/// Parses decimal digits; `None` on overflow.
pub(crate) fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((b - b'0') as u64)?;
    }
    Some(v)
}

fn first_word(s: &[u8]) -> &[u8] {
    &s[..word_end(s, 0)]
}

fn word_end(s: &[u8], from: usize) -> usize {
    s[from..].iter().position(|&b| is_blank(b)).map_or(s.len(), |i| from + i)
}

fn skip_blank(s: &[u8], from: usize) -> usize {
    s[from..].iter().position(|&b| !is_blank(b)).map_or(s.len(), |i| from + i)
}

/// The event name without perf's modifier suffix (`cycles:uppp` → `cycles`,
/// `cpu-clock:uhH` → `cpu-clock`); tracepoint names (`kmem:kmalloc`) are kept whole.
pub(crate) fn event_key(name: &[u8]) -> &[u8] {
    match memchr::memrchr(b':', name) {
        Some(i) if i + 1 < name.len() && name[i + 1..].iter().all(|b| b"ukhHGpPSDIWe".contains(b)) => {
            &name[..i]
        }
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> EventLine<'_> {
        parse(s.as_bytes()).unwrap()
    }

    #[test]
    fn perf_3_to_6_variants() {
        let e = p("java 25607 4794564.109216: cycles:");
        assert_eq!(
            (e.comm, e.pid, e.tid, e.event),
            (&b"java"[..], None, &b"25607"[..], Some(&b"cycles"[..]))
        );
        let e = p("V8 WorkerThread 24636/25607 [000] 94564.109216: cycles:");
        assert_eq!((e.comm, e.pid, e.tid), (&b"V8 WorkerThread"[..], Some(&b"24636"[..]), &b"25607"[..]));
        let e = p("vote   913    72.176760:     257597 cycles:uppp:");
        assert_eq!((e.period, e.event), (Some(257597), Some(&b"cycles:uppp"[..])));
        let e = p("func_ab 15294 cpu-clock: ");
        assert_eq!((e.period, e.event, e.trailer), (None, Some(&b"cpu-clock"[..]), &b""[..]));
        let e = p(
            "           false 39654 19115.489713:          1 cycles:u:  ffffffff9b201293 [unknown] ([unknown])",
        );
        assert_eq!(e.trailer, b"ffffffff9b201293 [unknown] ([unknown])");
        let e = p("perf 14446/14446 [001]  2007.580214:          1 kmem:mm_page_alloc: page=0x1 order=0");
        assert_eq!((e.event, e.trailer), (Some(&b"kmem:mm_page_alloc"[..]), &b"page=0x1 order=0"[..]));
    }

    #[test]
    fn exited_task_placeholder() {
        let e = p(":-1    -1 [001]  2237.924427:    1003009 cpu-clock:pppH: ");
        assert_eq!((e.comm, e.tid, e.period), (&b":-1"[..], &b"-1"[..], Some(1003009)));
        assert_eq!(e.event, Some(&b"cpu-clock:pppH"[..]));
    }

    #[test]
    fn comm_with_digit_words() {
        let e = p("Web Content 2 1234 [001] 10.5: cpu-clock:");
        assert_eq!((e.comm, e.tid, e.event), (&b"Web Content 2"[..], &b"1234"[..], Some(&b"cpu-clock"[..])));
    }

    #[test]
    fn rejects_stack_and_noise_lines() {
        assert!(parse(b"\tffffffff8103ce3b native_safe_halt ([kernel.kallsyms])").is_none());
        assert!(parse(b"a;b;c 12").is_none());
        assert!(parse(b"").is_none());
        assert!(parse(b"x\x08y 12 1.0: cycles:").is_none());
    }

    #[test]
    fn event_keys() {
        assert_eq!(event_key(b"cycles:uppp"), b"cycles");
        assert_eq!(event_key(b"cpu-clock:uhH"), b"cpu-clock");
        assert_eq!(event_key(b"kmem:kmalloc"), b"kmem:kmalloc");
        assert_eq!(event_key(b"sched:sched_switch"), b"sched:sched_switch");
        assert_eq!(event_key(b"cycles"), b"cycles");
    }
}
