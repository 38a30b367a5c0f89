//! One line of function_graph output, raw tracefs or `trace-cmd report`, parsed.
//!
//! Raw tracefs (`# tracer: function_graph`), with the optional `funcgraph-abstime` and
//! `funcgraph-proc` columns and the `funcgraph-overhead` delay markers:
//! ```text
//!  360.774522 |   1)    sh-4802     | + 49.370 us   |    } /* d_free */
//! ```
//! `trace-cmd report`:
//! ```text
//!  sysctl-1757  [000]  1718.797855: funcgraph_entry:        0.159 us   |    kmalloc_slab();
//! ```
//! The function text after the last column bar is indented two spaces per nesting level;
//! that indentation is the call depth.

/// What a function-text column says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Call<'a> {
    /// `func() {`: a call with children starts.
    Entry(&'a [u8]),
    /// `func();` with its duration: a call without traced children.
    Leaf(&'a [u8], u64),
    /// `}` with the duration, and the function name when `funcgraph-tail` printed it.
    Exit(Option<&'a [u8]>, u64),
}

/// A parsed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Line<'a> {
    /// A call event on `cpu`, nested `depth` levels deep.
    Call { cpu: u32, task: Option<Task<'a>>, ts: Option<u64>, depth: usize, call: Call<'a> },
    /// `cpu` switched from one task to another (`=> ` line between `----` separators).
    Switch { cpu: u32, from: Option<Task<'a>>, to: Task<'a> },
    /// Something to ignore silently: headers, separators, `/* comments */`, irq markers.
    Ignored,
    /// A `trace-cmd report` line of another event (kept as a note, not an error).
    OtherEvent,
    /// The tracer lost events here (`CPU:N [LOST M EVENTS]`): nesting may jump.
    Lost,
}

/// A task as printed by the tracer: `comm-pid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Task<'a> {
    /// Task name (may contain spaces and dashes).
    pub(crate) comm: &'a [u8],
    /// Thread id.
    pub(crate) pid: u32,
}

/// Deepest nesting accepted: deeper indentation is taken for garbage.
pub(crate) const MAX_DEPTH: usize = 512;

/// Parses one line; `Err` says what was expected.
pub(crate) fn parse(line: &[u8]) -> Result<Line<'_>, String> {
    let t = trim(line);
    if memchr::memchr(b'[', t).is_some() && contains(t, b"[LOST ") && contains(t, b" EVENTS]") {
        return Ok(Line::Lost);
    }
    if t.is_empty() || t[0] == b'#' || t.iter().all(|&b| b == b'-') || is_header(t) {
        return Ok(Line::Ignored);
    }
    if let Some(l) = parse_raw(t)? {
        return Ok(l);
    }
    parse_report(t)
}

fn is_header(t: &[u8]) -> bool {
    t.starts_with(b"cpus=")
        || t.starts_with(b"version =")
        || t.starts_with(b"CPU:")
        || (t.starts_with(b"CPU ") && t.ends_with(b"is empty"))
        || t.starts_with(b"#####")
}

/// Raw tracefs form; `Ok(None)` when the line does not start like it.
fn parse_raw(t: &[u8]) -> Result<Option<Line<'_>>, String> {
    let (ts, rest) = match split_abstime(t) {
        Some((ts, rest)) => (Some(ts), rest),
        None => (None, t),
    };
    let Some((cpu, rest)) = split_cpu(rest) else {
        return no_cpu_column(ts, rest);
    };
    if memchr::memchr(b'=', rest).is_some() {
        if let Some(sw) = parse_switch(cpu, rest) {
            return Ok(Some(sw));
        }
        if contains(rest, b"==========>") || contains(rest, b"<==========") {
            return Ok(Some(Line::Ignored));
        }
    }
    let Some(bar) = memchr::memchr(b'|', rest) else {
        return Err("`duration | function` after the CPU column".into());
    };
    let first = trim(&rest[..bar]);
    let mut text = &rest[bar + 1..];
    let mut task = None;
    let mut dur_col = first;
    if !first.is_empty() && parse_duration(first).is_none() {
        task = Some(parse_task(first).ok_or("a task `comm-pid` in the funcgraph-proc column")?);
        let bar2 = memchr::memchr(b'|', text).ok_or("`| duration | function` after the task")?;
        dur_col = trim(&text[..bar2]);
        text = &text[bar2 + 1..];
    }
    let line = call_line(cpu, task, ts, dur_col, text)?;
    Ok(Some(line))
}

/// `duration | function` without a CPU column (`nofuncgraph-cpu`): CPU 0 stands for all.
fn no_cpu_column(ts: Option<u64>, rest: &[u8]) -> Result<Option<Line<'_>>, String> {
    let Some(bar) = memchr::memchr(b'|', rest) else {
        return if ts.is_some() { Err("a CPU column `N)` after the time".into()) } else { Ok(None) };
    };
    let dur = trim(&rest[..bar]);
    if !dur.is_empty() && parse_duration(dur).is_none() {
        return if ts.is_some() { Err("a CPU column `N)` after the time".into()) } else { Ok(None) };
    }
    call_line(0, None, ts, dur, &rest[bar + 1..]).map(Some)
}

/// `trace-cmd report` form: `comm-pid [cpu] (flags) ts: event: payload`.
fn parse_report(t: &[u8]) -> Result<Line<'_>, String> {
    let (task, cpu, rest) = split_report_prefix(t)
        .ok_or("a function_graph line (`N) duration | func`) or `comm-pid [cpu] ts: event:`")?;
    let (ts, rest) = split_report_ts(rest).ok_or("a timestamp `seconds.micros:` after the CPU")?;
    let rest = trim(rest);
    let (event, payload) = match memchr::memchr(b':', rest) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => return Err("an event name ending in `:`".into()),
    };
    if event != b"funcgraph_entry" && event != b"funcgraph_exit" {
        return Ok(Line::OtherEvent);
    }
    let bar = memchr::memchr(b'|', payload).ok_or("`duration | function` after the event")?;
    call_line(cpu, Some(task), Some(ts), trim(&payload[..bar]), &payload[bar + 1..])
}

fn call_line<'a>(
    cpu: u32,
    task: Option<Task<'a>>,
    ts: Option<u64>,
    dur_col: &[u8],
    text: &'a [u8],
) -> Result<Line<'a>, String> {
    let dur = if dur_col.is_empty() {
        None
    } else {
        Some(parse_duration(dur_col).ok_or_else(|| "a duration like `+ 12.345 us`".to_string())?)
    };
    let indent = text.iter().take_while(|&&b| b == b' ').count();
    let body = trim(text);
    if body.starts_with(b"/*") {
        return Ok(Line::Ignored);
    }
    let depth = indent.saturating_sub(1) / 2;
    if depth > MAX_DEPTH {
        return Err(format!("a call depth below {MAX_DEPTH}, found an indentation of {indent}"));
    }
    let call = parse_call(body, dur)?;
    Ok(Line::Call { cpu, task, ts, depth, call })
}

fn parse_call(body: &[u8], dur: Option<u64>) -> Result<Call<'_>, String> {
    if let Some(tail) = body.strip_prefix(b"}") {
        let dur = dur.ok_or("a duration on a `}` line")?;
        return Ok(Call::Exit(tail_name(tail), dur));
    }
    let paren = memchr::memchr(b'(', body).ok_or("`func() {`, `func();` or `}`")?;
    let name = trim(&body[..paren]);
    if name.is_empty() {
        return Err("a function name before `(`".into());
    }
    if body.ends_with(b"{") {
        return Ok(Call::Entry(name));
    }
    if contains(&body[paren..], b";") {
        let dur = dur.ok_or("a duration on a leaf call `func();`")?;
        return Ok(Call::Leaf(name, dur));
    }
    Err("`func() {`, `func();` or `}`".into())
}

/// The function named in a `} /* func */` tail (funcgraph-tail), without a retval part.
fn tail_name(tail: &[u8]) -> Option<&[u8]> {
    let inner = trim(tail).strip_prefix(b"/*")?.strip_suffix(b"*/")?;
    let inner = trim(inner);
    let end = inner.iter().position(|&b| b == b' ' || b == b'=').unwrap_or(inner.len());
    let name = &inner[..end];
    (!name.is_empty()).then_some(name)
}

/// `+ 12.345 us`, `12.345 us`, `! 140.417 us`, `@ 119760.2 us` (microseconds) to ns.
pub(crate) fn parse_duration(col: &[u8]) -> Option<u64> {
    let mut s = trim(col);
    if let Some((&m, rest)) = s.split_first()
        && b"+!#*@$".contains(&m)
    {
        s = trim(rest);
    }
    let num = trim(s.strip_suffix(b"us")?);
    decimal_scaled(num, 3)
}

/// A decimal number times 10^`digits` (exact; extra fractional digits are rejected).
fn decimal_scaled(num: &[u8], digits: u32) -> Option<u64> {
    let (int, frac) = match memchr::memchr(b'.', num) {
        Some(i) => (&num[..i], &num[i + 1..]),
        None => (num, &[][..]),
    };
    if int.is_empty() || frac.len() > digits as usize {
        return None;
    }
    let mut v: u64 = 0;
    for &b in int.iter().chain(frac) {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    v.checked_mul(10u64.checked_pow(digits - frac.len() as u32)?)
}

/// `360.774522 |` at the start (funcgraph-abstime): time in ns and the rest.
fn split_abstime(t: &[u8]) -> Option<(u64, &[u8])> {
    let bar = memchr::memchr(b'|', t)?;
    let ts = decimal_scaled(trim(&t[..bar]), 9)?;
    Some((ts, &t[bar + 1..]))
}

/// `12)` at the start: CPU and the rest.
fn split_cpu(t: &[u8]) -> Option<(u32, &[u8])> {
    let t = trim(t);
    let digits = t.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 6 || t.get(digits) != Some(&b')') {
        return None;
    }
    let cpu = std::str::from_utf8(&t[..digits]).ok()?.parse().ok()?;
    Some((cpu, &t[digits + 1..]))
}

/// ` 0)  platfor-3210  =>  vmstat-2854` between separator lines.
fn parse_switch(cpu: u32, rest: &[u8]) -> Option<Line<'_>> {
    let arrow = find(rest, b"=>")?;
    let from = parse_task(trim(&rest[..arrow]));
    let to = parse_task(trim(&rest[arrow + 2..]))?;
    Some(Line::Switch { cpu, from, to })
}

/// `comm-pid`, split at the last dash (comms may contain dashes).
pub(crate) fn parse_task(s: &[u8]) -> Option<Task<'_>> {
    let dash = s.iter().rposition(|&b| b == b'-')?;
    let pid = std::str::from_utf8(&s[dash + 1..]).ok()?.parse().ok()?;
    Some(Task { comm: &s[..dash], pid })
}

/// `comm-pid [cpu]`: the task, the CPU and what follows.
fn split_report_prefix(t: &[u8]) -> Option<(Task<'_>, u32, &[u8])> {
    let mut from = 0;
    while let Some(i) = find(&t[from..], b" [").map(|i| i + from) {
        let after = &t[i + 2..];
        let digits = after.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0 && after.get(digits) == Some(&b']') {
            let task = parse_task(trim(&t[..i]))?;
            let cpu = std::str::from_utf8(&after[..digits]).ok()?.parse().ok()?;
            return Some((task, cpu, &after[digits + 1..]));
        }
        from = i + 2;
    }
    None
}

/// Skips an optional flags field and reads `seconds.frac:`.
fn split_report_ts(rest: &[u8]) -> Option<(u64, &[u8])> {
    for (start, word) in words(rest).take(3) {
        if let Some(num) = word.strip_suffix(b":")
            && let Some(ts) = decimal_scaled(num, 9)
        {
            return Some((ts, &rest[start + word.len()..]));
        }
    }
    None
}

/// Whitespace-separated words with their offsets.
fn words(s: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < s.len() && s[i] == b' ' {
            i += 1;
        }
        if i >= s.len() {
            return None;
        }
        let start = i;
        while i < s.len() && s[i] != b' ' {
            i += 1;
        }
        Some((start, &s[start..i]))
    })
}

fn trim(s: &[u8]) -> &[u8] {
    s.trim_ascii()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    find(hay, needle).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(l: &[u8]) -> (u32, Option<u64>, usize, Call<'_>) {
        match parse(l).unwrap() {
            Line::Call { cpu, ts, depth, call, .. } => (cpu, ts, depth, call),
            other => panic!("not a call: {other:?}"),
        }
    }

    #[test]
    fn raw_forms() {
        assert_eq!(call(b" 0)               |  sys_open() {"), (0, None, 0, Call::Entry(b"sys_open")));
        assert_eq!(call(b" 0)   1.382 us    |      f();"), (0, None, 2, Call::Leaf(b"f", 1382)));
        assert_eq!(
            call(b" 3) * 33998.59 us |  } /* schedule_preempt_disabled */"),
            (3, None, 0, Call::Exit(Some(b"schedule_preempt_disabled"), 33_998_590))
        );
        assert_eq!(
            call(b"  360.774522 |   1)   0.541 us    |    }"),
            (1, Some(360_774_522_000), 1, Call::Exit(None, 541))
        );
        match parse(b"  0)    sh-4802     | + 49.370 us   |                }").unwrap() {
            Line::Call { task: Some(t), call: Call::Exit(None, 49_370), depth: 7, .. } => {
                assert_eq!((t.comm, t.pid), (&b"sh"[..], 4802))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn report_form() {
        let l = b"  sysctl-1757  [000]  1718.797855: funcgraph_entry:        0.159 us   |          kmalloc_slab();";
        match parse(l).unwrap() {
            Line::Call { cpu: 0, task: Some(t), ts: Some(1_718_797_855_000), depth: 4, call } => {
                assert_eq!(t.comm, b"sysctl");
                assert_eq!(call, Call::Leaf(b"kmalloc_slab", 159));
            }
            other => panic!("{other:?}"),
        }
        let other = b"<idle>-0     [000] 157412.933974: irq_handler_entry:    irq=48 name=eth0";
        assert_eq!(parse(other).unwrap(), Line::OtherEvent);
    }

    #[test]
    fn separators_switches_and_markers() {
        assert_eq!(parse(b" ------------------------------------------").unwrap(), Line::Ignored);
        match parse(b" 0)  platfor-3210  =>  vmstat-2854  ").unwrap() {
            Line::Switch { cpu: 0, from: Some(f), to } => assert_eq!((f.pid, to.pid), (3210, 2854)),
            other => panic!("{other:?}"),
        }
        assert_eq!(parse(b" 0)   ==========> |").unwrap(), Line::Ignored);
        assert_eq!(parse(b" 1)               |  /* my comment */").unwrap(), Line::Ignored);
    }

    #[test]
    fn without_cpu_column_and_lost_events() {
        assert_eq!(call(b"   1.382 us    |      f();"), (0, None, 2, Call::Leaf(b"f", 1382)));
        assert_eq!(call(b"               |  g() {"), (0, None, 0, Call::Entry(b"g")));
        assert_eq!(parse(b"CPU:1 [LOST 23 EVENTS]").unwrap(), Line::Lost);
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse(b"hello world").is_err());
        assert!(parse(b" 0)   1.3x us |  f();").is_err());
        assert!(parse(b" 0)               |  f();").is_err());
    }
}
