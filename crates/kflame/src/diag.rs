//! Counted, located diagnostics: what a parser skipped and why.
//!
//! Parsers never print and never stop at a bad line. They record each problem under a
//! *kind* (a short stable name such as `"weird stack line"`); the first occurrence keeps its
//! line number and a message saying what was expected. Diagnostics of parallel chunks merge
//! deterministically (counts add up, the earliest first occurrence wins), so the report is
//! the same for 1 or N threads.

use std::collections::BTreeMap;
use std::fmt;

/// `e` and its causes, `: `-separated (as `anyhow` prints them with `{:#}`), a cause that
/// its error already prints left out: what a message of a library error shows.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !s.contains(&text) {
            s.push_str(": ");
            s.push_str(&text);
        }
        cause = c.source();
    }
    s
}

/// How serious a diagnostic is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Information worth telling (e.g. "events other than cpu-clock were skipped").
    Note,
    /// Input that was skipped because it did not parse.
    Skipped,
}

/// One kind of problem: how often, and where first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Severity of this kind.
    pub severity: Severity,
    /// Number of occurrences (lines, records or events, as the kind says).
    pub count: u64,
    /// 1-based line of the first occurrence (0 when not tied to a line).
    pub first_line: u64,
    /// What was found and what was expected, for the first occurrence.
    pub message: String,
}

/// Problems found in one input, by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics {
    entries: BTreeMap<&'static str, Entry>,
}

impl Diagnostics {
    /// No problems yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a skipped line of `kind` at `line`; `message` is built only for the first.
    #[inline]
    pub fn skip(&mut self, kind: &'static str, line: u64, message: impl FnOnce() -> String) {
        self.add(Severity::Skipped, kind, line, 1, message)
    }

    /// Records a note of `kind`.
    #[inline]
    pub fn note(&mut self, kind: &'static str, line: u64, message: impl FnOnce() -> String) {
        self.add(Severity::Note, kind, line, 1, message)
    }

    /// Records `count` occurrences of `kind`.
    pub fn add(
        &mut self,
        severity: Severity,
        kind: &'static str,
        line: u64,
        count: u64,
        message: impl FnOnce() -> String,
    ) {
        match self.entries.get_mut(kind) {
            Some(e) => {
                e.count += count;
                if line != 0 && (e.first_line == 0 || line < e.first_line) {
                    e.first_line = line;
                    e.message = message();
                }
            }
            None => {
                self.entries.insert(kind, Entry { severity, count, first_line: line, message: message() });
            }
        }
    }

    /// Merges another chunk's diagnostics.
    pub fn merge(&mut self, other: Diagnostics) {
        for (kind, e) in other.entries {
            let Entry { severity, count, first_line, message } = e;
            self.add(severity, kind, first_line, count, || message);
        }
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Total occurrences of skipped input.
    pub fn skipped(&self) -> u64 {
        self.entries.values().filter(|e| e.severity == Severity::Skipped).map(|e| e.count).sum()
    }

    /// The entry of one kind.
    pub fn get(&self, kind: &str) -> Option<&Entry> {
        self.entries.get(kind)
    }

    /// All entries, by kind name.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &Entry)> {
        self.entries.iter().map(|(k, e)| (*k, e))
    }

    /// A printable report naming `source` (a file name or `<stdin>`), one line per kind.
    pub fn report<'a>(&'a self, source: &'a str) -> Report<'a> {
        Report { diag: self, source }
    }
}

/// Display adapter for [`Diagnostics::report`].
pub struct Report<'a> {
    diag: &'a Diagnostics,
    source: &'a str,
}

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (kind, e) in self.diag.iter() {
            let loc = if e.first_line > 0 {
                format!("{}:{}", self.source, e.first_line)
            } else {
                self.source.to_string()
            };
            match e.severity {
                Severity::Skipped => {
                    let what = if e.count == 1 { "line" } else { "lines" };
                    writeln!(f, "{loc}: skipped {} {what} ({kind}); first: {}", e.count, e.message)?
                }
                Severity::Note => writeln!(f, "{loc}: note: {} ({kind}, {}x)", e.message, e.count)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keeps_earliest_first_occurrence() {
        let mut a = Diagnostics::new();
        a.skip("weird", 50, || "late".into());
        let mut b = Diagnostics::new();
        b.skip("weird", 7, || "early".into());
        b.skip("weird", 9, || "ignored".into());
        a.merge(b);
        let e = a.get("weird").unwrap();
        assert_eq!((e.count, e.first_line, e.message.as_str()), (3, 7, "early"));
        let text = a.report("x.txt").to_string();
        assert!(text.contains("x.txt:7: skipped 3 lines (weird); first: early"), "{text}");
    }
}
