//! The format registry: every input format kflame collapses, and content-based detection.

use std::fmt;

/// An input format. The CLI builds the matching collapser with its options.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Already folded stacks (`a;b;c 12`), merged and re-aggregated.
    Folded,
    /// perf.data recorded by `perf record`, read directly (binary; not line-based).
    PerfData,
}

impl Format {
    /// Every format, in detection priority order (earlier wins ties).
    pub const ALL: &'static [Format] = &[Format::Folded, Format::PerfData];

    /// The name used by `--format`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Folded => "folded",
            Format::PerfData => "perf-data",
        }
    }

    /// Other accepted names.
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            Format::Folded => &["collapsed", "stackcollapse"],
            Format::PerfData => &["perf.data", "perfdata"],
        }
    }

    /// One line for `--help` and error messages.
    pub fn summary(self) -> &'static str {
        match self {
            Format::Folded => "folded stacks `frame;frame;... count` (FlameGraph)",
            Format::PerfData => "perf.data from `perf record`, symbolized in-process (no perf needed)",
        }
    }

    /// Confidence 0-100 that `head` (the first bytes of an input) is in this format.
    pub fn detect(self, head: &[u8]) -> u8 {
        match self {
            Format::Folded => super::folded::detect(head),
            Format::PerfData => {
                if crate::perf_data::is_perf_data(head) {
                    100
                } else {
                    0
                }
            }
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
        assert_eq!(detect(b"PERFILE2\x68\0\0\0\0\0\0\0"), Some(Format::PerfData));
    }
}
