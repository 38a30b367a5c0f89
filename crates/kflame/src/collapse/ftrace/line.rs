//! The header of one ftrace / trace-cmd line: `COMM-PID [CPU] FLAGS TIMESTAMP: BODY`.
//!
//! Handled: comms with spaces, dashes, colons and brackets (the pid is split at the last
//! `-` before the CPU column), `<...>-PID` (comm not recorded), the optional `(TGID)` column,
//! 4- or 5-character flag fields or none (trace-cmd), a trace-cmd instance prefix
//! (`inst:   comm-pid`), and bodies `event: payload`, `<stack trace>`, `<user stack trace>`,
//! trace-cmd's `kernel_stack: <stack trace >` and `user_stack: <user stack trace>`, and the
//! function tracer's `func <-caller`.

/// What follows the timestamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Body<'a> {
    /// A trace event: name and printed fields.
    Event {
        /// Event name (no subsystem).
        name: &'a [u8],
        /// Everything after `name: `.
        payload: &'a [u8],
    },
    /// A kernel stack follows (`=> frame` lines).
    KernelStack,
    /// A user stack follows.
    UserStack,
}

/// A parsed line header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header<'a> {
    pub(crate) comm: &'a [u8],
    pub(crate) pid: u32,
    pub(crate) cpu: u32,
    pub(crate) ts_ns: u64,
    pub(crate) body: Body<'a>,
}

/// Parses a line that is not a comment or a stack frame; `Err` says what was wrong.
pub(crate) fn parse_header(line: &[u8]) -> Result<Header<'_>, &'static str> {
    let (task, cpu, after) = find_cpu_column(line).ok_or("no `COMM-PID [CPU]` columns")?;
    let (comm, pid) = split_task(task).ok_or("no `-PID` before the CPU column")?;
    let (ts_ns, body) = split_timestamp(after).ok_or("no `TIMESTAMP:` after the CPU column")?;
    let body = parse_body(body).ok_or("no `event:` or `<stack trace>` after the timestamp")?;
    Ok(Header { comm, pid, cpu, ts_ns, body })
}

/// How far into a line the CPU column may open. The kernel prints the task as `%16s-%-7d`
/// (`TASK_COMM_LEN` is 16), then an optional `(%7s)` TGID column; trace-cmd puts an instance
/// name before it. 512 bytes is far beyond any of them, and bounds the work on a line that is
/// not a trace line: each candidate `[N]` costs a look at the text before it, so an unbounded
/// search is quadratic in the line's length (megabytes of `[0] ` took minutes).
const MAX_CPU_COLUMN: usize = 512;

/// Finds the first `[N]` preceded by `-PID` (and optionally `(TGID)`): returns the task
/// text before it, the CPU, and the rest after `]`.
fn find_cpu_column(line: &[u8]) -> Option<(&[u8], u32, &[u8])> {
    for open in memchr::memchr_iter(b'[', &line[..line.len().min(MAX_CPU_COLUMN)]) {
        let rest = &line[open + 1..];
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || digits > 9 || rest.get(digits) != Some(&b']') {
            continue;
        }
        if open == 0 || !line[open - 1].is_ascii_whitespace() {
            continue;
        }
        let task = strip_tgid(trim_end(&line[..open]));
        if split_task(task).is_some() {
            let cpu = parse_u32(&rest[..digits])?;
            return Some((task, cpu, &rest[digits + 1..]));
        }
    }
    None
}

/// Drops a trailing `(  123)` or `(-----)` TGID column.
fn strip_tgid(s: &[u8]) -> &[u8] {
    if s.last() != Some(&b')') {
        return s;
    }
    match memchr::memrchr(b'(', s) {
        Some(i) if s[i + 1..s.len() - 1].iter().all(|b| b.is_ascii_digit() || b" -".contains(b)) => {
            trim_end(&s[..i])
        }
        _ => s,
    }
}

/// `  lto cgu.10-2357` → (`lto cgu.10`, 2357). A run of two or more spaces inside ends a
/// trace-cmd instance prefix (`inst:    comm-pid`).
fn split_task(task: &[u8]) -> Option<(&[u8], u32)> {
    let dash = memchr::memrchr(b'-', task)?;
    let pid = parse_u32(&task[dash + 1..])?;
    let mut comm = trim_start(&task[..dash]);
    if let Some(i) = comm.windows(2).rposition(|w| w == b"  ") {
        comm = trim_start(&comm[i..]);
    }
    Some((comm, pid))
}

/// After `]`: optional flags, then `SECONDS.FRACTION:`; returns ns and the body.
fn split_timestamp(s: &[u8]) -> Option<(u64, &[u8])> {
    let (first, rest) = next_token(s)?;
    if let Some(ts) = first.strip_suffix(b":").and_then(parse_ts) {
        return Some((ts, rest));
    }
    if first.len() > 6 {
        return None;
    }
    let (second, rest) = next_token(rest)?;
    Some((parse_ts(second.strip_suffix(b":")?)?, rest))
}

fn parse_body(s: &[u8]) -> Option<Body<'_>> {
    let s = trim_start(s);
    if let Some(b) = stack_marker(s) {
        return Some(b);
    }
    if let Some(b) = function_call(s) {
        return Some(b);
    }
    let colon = memchr::memchr(b':', s)?;
    let name = &s[..colon];
    if name.is_empty() || name.iter().any(|b| b.is_ascii_whitespace()) {
        return None;
    }
    let payload = trim(&s[colon + 1..]);
    if (name == b"kernel_stack" || name == b"user_stack")
        && let Some(b) = stack_marker(payload)
    {
        return Some(b);
    }
    Some(Body::Event { name, payload })
}

/// The function tracer's `func <-caller` (with `options/func_stack_trace`, stacks follow):
/// an event named after the function, the caller as payload.
fn function_call(s: &[u8]) -> Option<Body<'_>> {
    let arrow = memchr::memmem::find(s, b" <-")?;
    let name = trim_end(&s[..arrow]);
    if name.is_empty() || name.iter().any(|b| b.is_ascii_whitespace() || *b == b':') {
        return None;
    }
    Some(Body::Event { name, payload: trim(&s[arrow + 3..]) })
}

fn stack_marker(s: &[u8]) -> Option<Body<'static>> {
    if s.starts_with(b"<stack trace") {
        Some(Body::KernelStack)
    } else if s.starts_with(b"<user stack trace") {
        Some(Body::UserStack)
    } else {
        None
    }
}

/// `2654.092714` → ns (fractions beyond 9 digits are truncated); a plain integer (counter
/// clocks) is taken as is.
pub(crate) fn parse_ts(s: &[u8]) -> Option<u64> {
    let (int, frac) = match memchr::memchr(b'.', s) {
        Some(d) => (&s[..d], &s[d + 1..]),
        None => (s, &b""[..]),
    };
    if int.is_empty() || !int.iter().chain(frac).all(u8::is_ascii_digit) {
        return None;
    }
    let secs: u64 = std::str::from_utf8(int).ok()?.parse().ok()?;
    if frac.is_empty() && memchr::memchr(b'.', s).is_none() {
        return Some(secs);
    }
    let mut ns = 0u64;
    for i in 0..9 {
        ns = ns * 10 + frac.get(i).map_or(0, |d| u64::from(d - b'0'));
    }
    secs.checked_mul(1_000_000_000)?.checked_add(ns)
}

fn next_token(s: &[u8]) -> Option<(&[u8], &[u8])> {
    let s = trim_start(s);
    if s.is_empty() {
        return None;
    }
    let end = s.iter().position(|b| *b == b' ' || *b == b'\t').unwrap_or(s.len());
    Some((&s[..end], &s[end..]))
}

fn parse_u32(s: &[u8]) -> Option<u32> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

pub(crate) fn trim_start(s: &[u8]) -> &[u8] {
    let i = s.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(s.len());
    &s[i..]
}

pub(crate) fn trim_end(s: &[u8]) -> &[u8] {
    let i = s.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(0, |i| i + 1);
    &s[..i]
}

pub(crate) fn trim(s: &[u8]) -> &[u8] {
    trim_start(trim_end(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(line: &str) -> (String, u32, u32, u64, String, String) {
        let h = parse_header(line.as_bytes()).unwrap();
        let Body::Event { name, payload } = h.body else { panic!("not an event: {line}") };
        let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (s(h.comm), h.pid, h.cpu, h.ts_ns, s(name), s(payload))
    }

    #[test]
    fn five_column_flags_and_comm_with_space() {
        let e = event("      lto cgu.10-2357    [000] .....  2654.092714: mm_page_alloc: page=0 order=0");
        assert_eq!(
            e,
            (
                "lto cgu.10".into(),
                2357,
                0,
                2_654_092_714_000,
                "mm_page_alloc".into(),
                "page=0 order=0".into()
            )
        );
    }

    #[test]
    fn four_column_flags_tgid_and_unknown_comm() {
        let e = event("           <...>-503310 [001] .... 800755.732210: kmalloc: bytes_alloc=8");
        assert_eq!((e.0.as_str(), e.1, e.2), ("<...>", 503310, 1));
        let e = event("            bash-1977  ( 1977) [000] d..1 17284.993652: sys_enter: NR 1 (1)");
        assert_eq!((e.0.as_str(), e.1, e.4.as_str()), ("bash", 1977, "sys_enter"));
        let e = event("  kworker/u4:2-12 (-----) [1] d..2 5.5: sched_switch: x");
        assert_eq!((e.0.as_str(), e.1, e.2, e.3), ("kworker/u4:2", 12, 1, 5_500_000_000));
    }

    #[test]
    fn comms_with_dashes_colons_and_brackets() {
        let e = event("    tmux: server-156889  [000] ..... 193427.742347: mm_page_alloc: order=0");
        assert_eq!((e.0.as_str(), e.1), ("tmux: server", 156889));
        let e = event("  my-app-v2-77 [003] ..... 1.000001: ev: a=1");
        assert_eq!((e.0.as_str(), e.1), ("my-app-v2", 77));
        let e = event("  [weird] x-5 [002] ..... 1.5: ev: [7] a");
        assert_eq!((e.0.as_str(), e.1, e.2, e.5.as_str()), ("[weird] x", 5, 2, "[7] a"));
    }

    #[test]
    fn trace_cmd_forms() {
        let e = event("<...>-187168 [003] 14540.343835: mm_page_alloc:        page=0x3070e0 order=1");
        assert_eq!((e.0.as_str(), e.1, e.2, e.5.as_str()), ("<...>", 187168, 3, "page=0x3070e0 order=1"));
        let e = event("ceotest:          burn-fp-8431  [000]  3369.428324: mm_page_alloc:        order=0");
        assert_eq!((e.0.as_str(), e.1), ("burn-fp", 8431));
        let h = parse_header(b"  swift-object-se-18999 [005] 3693413.521874: kernel_stack:   <stack trace >")
            .unwrap();
        assert_eq!((h.body, h.comm, h.pid), (Body::KernelStack, &b"swift-object-se"[..], 18999));
        let h = parse_header(b"  a-1 [0] 1.0: user_stack:   <user stack trace>").unwrap();
        assert_eq!(h.body, Body::UserStack);
    }

    #[test]
    fn function_tracer_lines() {
        let e = event("            bash-1977  [000] .... 17284.993652: sys_close <-system_call_fastpath");
        assert_eq!((e.4.as_str(), e.5.as_str()), ("sys_close", "system_call_fastpath"));
    }

    #[test]
    fn stack_markers_and_garbage() {
        let h =
            parse_header(b"         burn-fp-2713    [000] .....  2664.872807: <user stack trace>").unwrap();
        assert_eq!((h.body, h.ts_ns), (Body::UserStack, 2_664_872_807_000));
        assert!(parse_header(b"bash-1 [000] ..... 1.0").is_err());
        assert!(parse_header(b"bash-1 [000] ..... 1.0:").is_err());
        assert!(parse_header(b"hello world").is_err());
        assert!(parse_header(b"x [1] 2.0: e: p").is_err());
        assert!(parse_header(b"    bash-12 [00").is_err());
    }

    #[test]
    fn timestamps() {
        assert_eq!(parse_ts(b"1.5"), Some(1_500_000_000));
        assert_eq!(parse_ts(b"0.0000000019"), Some(1));
        assert_eq!(parse_ts(b"123"), Some(123));
        assert_eq!(parse_ts(b"1.x"), None);
        assert_eq!(parse_ts(b"99999999999999999999.0"), None);
    }
}
