//! The format registry: every input format kflame collapses, and content-based detection.

use std::fmt;

/// An input format. The CLI builds the matching collapser with its options.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Already folded stacks (`a;b;c 12`), merged and re-aggregated.
    Folded,
    /// Kernel logs (dmesg, /dev/kmsg, journalctl -k, syslog): one stack per report.
    KernelLog,
    /// `crash` utility `bt` / `foreach bt` output: one stack per task.
    Crash,
}

impl Format {
    /// Every format, in detection priority order (earlier wins ties).
    pub const ALL: &'static [Format] = &[Format::Folded, Format::KernelLog, Format::Crash];

    /// The name used by `--format`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Folded => "folded",
            Format::KernelLog => "kernel-log",
            Format::Crash => "crash",
        }
    }

    /// Other accepted names.
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            Format::Folded => &["collapsed", "stackcollapse"],
            Format::KernelLog => &["dmesg", "kmsg", "kern.log", "oops"],
            Format::Crash => &["crash-bt"],
        }
    }

    /// One line for `--help` and error messages.
    pub fn summary(self) -> &'static str {
        match self {
            Format::Folded => "folded stacks `frame;frame;... count` (FlameGraph)",
            Format::KernelLog => {
                "kernel log with oopses, warnings, hung tasks, lockups... (dmesg, kmsg, syslog)"
            }
            Format::Crash => "crash utility `bt -a` / `foreach bt` output",
        }
    }

    /// Confidence 0-100 that `head` (the first bytes of an input) is in this format.
    pub fn detect(self, head: &[u8]) -> u8 {
        match self {
            Format::Folded => super::folded::detect(head),
            Format::KernelLog => super::kernel_log::detect(head),
            Format::Crash => super::crash::detect(head),
        }
    }

    /// Looks a format up by name or alias.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.iter().copied().find(|f| f.name() == name || f.aliases().contains(&name))
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The most likely format of `head`, if any format is at least fairly confident (score ≥ 30).
pub fn detect(head: &[u8]) -> Option<Format> {
    let mut best: Option<(u8, Format)> = None;
    for &f in Format::ALL {
        let score = f.detect(head);
        if score >= 30 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, f));
        }
    }
    best.map(|(_, f)| f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &f in Format::ALL {
            assert_eq!(Format::from_name(f.name()), Some(f));
        }
    }

    #[test]
    fn detects_folded_and_rejects_noise() {
        assert_eq!(detect(b"a;b 1\na;c 2\n"), Some(Format::Folded));
        assert_eq!(detect(b"hello world\nthis is prose\n"), None);
        assert_eq!(detect(b""), None);
    }
}
