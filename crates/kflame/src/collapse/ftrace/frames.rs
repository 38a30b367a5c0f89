//! Stack frame lines (` => frame`, leaf first) and their clean-up.
//!
//! Forms seen: ` => do_syscall_64` (6.x), ` => __alloc_pages_nodemask+0x233/0x320
//! <ffffffff812871c3>` (older ftrace), `=> xfs_buf_get_map (ffffffffc065ed5c)` (trace-cmd),
//! ` => func+0x10/0x20 [xfs]` (module), ` =>  <00007f89f4024350>` (unsymbolized user
//! frame), ` => /lib/libc.so.6[+0x1234]` (`sym-userobj`), and garbage: ` => 0` (end of an old
//! user stack), ` => ??`, bare hex addresses.

/// The text after `=>` if `line` is a frame line.
pub(crate) fn frame_text(line: &[u8]) -> Option<&[u8]> {
    let t = super::line::trim_start(line);
    t.strip_prefix(b"=>").map(super::line::trim)
}

/// A cleaned frame name, or `None` for a frame to drop (`0` end markers, empty lines).
/// Unsymbolized kernel addresses become `[unknown]`; user addresses are kept as `0x…` so
/// that a symbolizer can resolve them later.
pub(crate) fn clean_frame(raw: &[u8], user: bool) -> Option<String> {
    let raw = super::line::trim(raw);
    if raw.is_empty() || raw == b"0" || raw == b"0x0" {
        return None;
    }
    if let Some(addr) = address(raw) {
        return Some(if user { format!("0x{}", String::from_utf8_lossy(addr)) } else { "[unknown]".into() });
    }
    if raw == b"??" {
        return Some("[unknown]".to_string());
    }
    let name = strip_suffixes(raw);
    Some(sanitize(if name.is_empty() { raw } else { name }))
}

/// `ffffffff81000130`, `0xffff...`, `<00007f...>`, `(ffff...)` → the hex digits without
/// leading zeros.
fn address(s: &[u8]) -> Option<&[u8]> {
    let s = s.strip_prefix(b"<").and_then(|s| s.strip_suffix(b">")).unwrap_or(s);
    let s = s.strip_prefix(b"(").and_then(|s| s.strip_suffix(b")")).unwrap_or(s);
    let hex = s.strip_prefix(b"0x").unwrap_or(s);
    let long = hex.len() >= 8 || s.starts_with(b"0x");
    if long && !hex.is_empty() && hex.len() <= 16 && hex.iter().all(u8::is_ascii_hexdigit) {
        let zeros = hex.iter().take_while(|b| **b == b'0').count();
        return Some(if zeros == hex.len() { b"0" } else { &hex[zeros..] });
    }
    None
}

/// Drops ` <addr>`, ` (addr)`, ` [module]` and `+0xoff/0xsize` suffixes of a symbol (a
/// user object path `/lib/x.so[+0x1234]` keeps its offset: it is the only location).
fn strip_suffixes(s: &[u8]) -> &[u8] {
    let mut name = s;
    if let Some(i) = name.iter().position(|b| *b == b' ' || *b == b'\t') {
        name = &name[..i];
    }
    if name.first() != Some(&b'/')
        && let Some(i) = memchr::memmem::find(name, b"+0x")
    {
        name = &name[..i];
    }
    name
}

/// The frame as text; it must not contain the folded separator or line breaks.
fn sanitize(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    if s.contains([';', '\n', '\r']) {
        s.replace(';', ":").replace(['\n', '\r'], " ")
    } else {
        s.into_owned()
    }
}

/// Frames the tracing machinery adds at the leaf of every event stack.
const TRACE_FRAME_PREFIXES: &[&str] = &[
    "trace_event_raw_event_",
    "perf_trace_",
    "__traceiter_",
    "trace_event_buffer_",
    "event_triggers_call",
    "event_hist_trigger",
    "action_trace",
    "__trace_stack",
    "__ftrace_trace_stack",
    "trace_buffer_unlock_commit",
    "__bpf_trace_",
    "__uprobe_trace_func",
    "uprobe_dispatcher",
    "handler_chain",
    "__kprobe_trace_func",
    "kprobe_trace_func",
    "kprobe_dispatcher",
    "kretprobe_dispatcher",
];

/// Removes the tracing machinery's frames from the leaf end of a leaf-first kernel stack,
/// so that the leaf is the function that hit the tracepoint (as perf shows it).
pub(crate) fn strip_trace_frames(leaf_first: &mut Vec<String>) {
    let n = leaf_first.iter().take_while(|f| TRACE_FRAME_PREFIXES.iter().any(|p| f.starts_with(p))).count();
    if n < leaf_first.len() {
        leaf_first.drain(..n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean(s: &str, user: bool) -> Option<String> {
        clean_frame(frame_text(s.as_bytes()).unwrap(), user)
    }

    #[test]
    fn frame_forms() {
        assert_eq!(clean(" => do_syscall_64", false).as_deref(), Some("do_syscall_64"));
        let old = " => __alloc_pages_nodemask+0x233/0x320 <ffffffff812871c3>";
        assert_eq!(clean(old, false).as_deref(), Some("__alloc_pages_nodemask"));
        assert_eq!(clean("=> xfs_buf_get_map (ffffffffc065ed5c)", false).as_deref(), Some("xfs_buf_get_map"));
        assert_eq!(clean(" => xfs_iread+0x10/0x20 [xfs]", false).as_deref(), Some("xfs_iread"));
        assert_eq!(
            clean(" => zap_pte_range.isra.0+0x2a5/0x7d0 <ffffffff81265155>", false).as_deref(),
            Some("zap_pte_range.isra.0")
        );
        assert_eq!(clean(" =>  <00007f89f4024350>", true).as_deref(), Some("0x7f89f4024350"));
        assert_eq!(clean(" => ffffffff81000130", false).as_deref(), Some("[unknown]"));
        assert_eq!(clean(" => /lib/libc.so.6[+0x1234]", true).as_deref(), Some("/lib/libc.so.6[+0x1234]"));
        assert_eq!(clean(" => 0", true), None);
        assert_eq!(clean(" => ", false), None);
        assert_eq!(clean(" => ??", true).as_deref(), Some("[unknown]"));
        assert_eq!(clean(" => add", false).as_deref(), Some("add"));
        assert_eq!(clean(" => a;b", false).as_deref(), Some("a:b"));
        assert!(frame_text(b"bash-1 [000] 1.0: <stack trace>").is_none());
    }

    #[test]
    fn strips_tracing_frames_at_the_leaf_only() {
        let mut s: Vec<String> =
            ["trace_event_raw_event_sched_switch", "__traceiter_sched_switch", "__schedule", "schedule"]
                .map(String::from)
                .to_vec();
        strip_trace_frames(&mut s);
        assert_eq!(s, ["__schedule", "schedule"]);
        let mut only = vec!["trace_event_raw_event_x".to_string()];
        strip_trace_frames(&mut only);
        assert_eq!(only.len(), 1, "a stack of only tracing frames is kept as it is");
    }
}
