//! `Fixes:` trailers: `Fixes: 1234567890ab ("subject of the introducing commit")`.
//!
//! Commit messages are written by hand, so the parser accepts what kernel history really
//! holds (any case of `Fixes:`, 7 to 40 hex digits, the subject with or without its quotes
//! and parentheses, a subject wrapped onto the next line) and returns nothing for a line that
//! is not a trailer. It never panics on any input (a fuzz target checks).

/// One `Fixes:` trailer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixesTrailer {
    /// The abbreviated (or full) hash of the introducing commit, lower case, as written.
    pub hash: String,
    /// The subject it quotes, without the `("...")` around it; empty when none is given.
    pub subject: String,
}

/// Every `Fixes:` trailer in a commit message, in order.
pub fn parse_fixes(message: &str) -> Vec<FixesTrailer> {
    let lines: Vec<&str> = message.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if let Some(mut t) = parse_line(line) {
            // A long subject is sometimes wrapped: `Fixes: abc ("first half` / `second half")`.
            if t.1
                && !t.0.subject.is_empty()
                && let Some(next) = lines.get(i + 1)
                && let Some(rest) = next.trim().strip_suffix("\")")
                && parse_line(next).is_none()
            {
                t.0.subject.push(' ');
                t.0.subject.push_str(rest.trim());
            }
            out.push(t.0);
        }
    }
    out
}

/// One line: the trailer and whether its subject is left open (no closing `")`).
fn parse_line(line: &str) -> Option<(FixesTrailer, bool)> {
    let line = line.trim_start();
    let head = line.get(..6)?;
    if !head.eq_ignore_ascii_case("fixes:") {
        return None;
    }
    let rest = line[6..].trim_start();
    let hex_len = rest.bytes().take_while(u8::is_ascii_hexdigit).count();
    if !(7..=40).contains(&hex_len) {
        return None;
    }
    // The hash must end there (not `Fixes: deadbeefcafe-ish`).
    let after = &rest[hex_len..];
    if after.chars().next().is_some_and(|c| c.is_alphanumeric() || c == '_') {
        return None;
    }
    let hash = rest[..hex_len].to_ascii_lowercase();
    let mut subject = after.trim();
    let mut open = false;
    if let Some(s) = subject.strip_prefix('(') {
        subject = s;
        if let Some(s) = subject.strip_suffix(')') {
            subject = s;
        } else {
            open = true;
        }
        subject = subject.trim();
        if let Some(s) = subject.strip_prefix('"') {
            subject = s.strip_suffix('"').unwrap_or(s);
        }
    } else if let Some(s) = subject.strip_prefix('"') {
        subject = s.strip_suffix('"').unwrap_or(s);
    }
    Some((FixesTrailer { hash, subject: subject.trim().to_string() }, open))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_trailers() {
        let msg = "libbpf: fix X\n\nBody.\n\nFixes: fa28dcb82a38 (\"bpf: Introduce helper bpf_get_task_stack()\")\n\
                   fixes: 0123456 (\"a (nested) subject\")\nSigned-off-by: A <a@b>\n";
        let t = parse_fixes(msg);
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].hash, "fa28dcb82a38");
        assert_eq!(t[0].subject, "bpf: Introduce helper bpf_get_task_stack()");
        assert_eq!(t[1].subject, "a (nested) subject");
    }

    #[test]
    fn wrapped_and_odd_forms() {
        let t = parse_fixes("Fixes: ABCDEF0123 (\"libbpf: a very long\n  subject wrapped\")\n");
        assert_eq!(t[0].hash, "abcdef0123");
        assert_eq!(t[0].subject, "libbpf: a very long subject wrapped");
        let t = parse_fixes("Fixes: abcdef0123\n");
        assert_eq!(t[0].subject, "");
        assert!(parse_fixes("Fixes: the bug in foo()\n").is_empty());
        assert!(parse_fixes("Fixes: abc\n").is_empty());
        assert!(parse_fixes("Fixes: abcdef0123xyz (\"s\")\n").is_empty());
        assert!(parse_fixes("Fixes:").is_empty());
        assert!(parse_fixes("Fixé").is_empty());
    }
}
