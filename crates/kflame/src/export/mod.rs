//! Writers of other tools' profile formats: folded stacks in, the bytes of one file out.
//!
//! | module | format | read by |
//! |---|---|---|
//! | [`speedscope`] | speedscope's JSON file format (one sampled profile) | speedscope |
//! | [`pprof`] | gzipped `profile.proto` | `go tool pprof`, Pyroscope, Parca |
//! | [`otlp`] | OpenTelemetry `ExportProfilesServiceRequest` (development profiles signal), protobuf | OTLP profile collectors |
//! | [`chrome`] | Chrome's Trace Event Format (JSON, complete `X` events) | Perfetto, `chrome://tracing` |
//!
//! Each writer takes a [`Profile`]: the stacks (summed, or in time order for flame charts)
//! and their [`Meta`] (unit, event), and maps the unit onto the format's own honestly
//! ([`sample_type`]): sample counts stay counts, CPU periods of `cpu-clock`/`task-clock` are
//! nanoseconds of CPU, bytes are allocated bytes, wall-time durations are nanoseconds.
//! Nothing is printed; errors say what cannot be written and why.

pub mod chrome;
pub mod otlp;
pub mod pprof;
pub mod speedscope;

use std::io::{self, Write};
use std::path::Path;

use crate::fold::{Meta, Stacks, Unit, Weight};

/// A format kflame writes besides folded text, SVG and HTML.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// speedscope's JSON file format.
    Speedscope,
    /// pprof's gzipped `profile.proto`.
    Pprof,
    /// An OTLP `ExportProfilesServiceRequest` (protobuf, not compressed).
    Otlp,
    /// Chrome / Perfetto Trace Event Format JSON.
    ChromeTrace,
}

impl Format {
    /// Every format.
    pub const ALL: &'static [Format] =
        &[Format::Speedscope, Format::Pprof, Format::Otlp, Format::ChromeTrace];

    /// The name of `--format`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Speedscope => "speedscope",
            Format::Pprof => "pprof",
            Format::Otlp => "otlp",
            Format::ChromeTrace => "chrome-trace",
        }
    }

    /// The file name ending that asks for this format (what [`Format::from_path`] knows).
    pub fn extension(self) -> &'static str {
        match self {
            Format::Speedscope => ".speedscope.json",
            Format::Pprof => ".pb.gz",
            Format::Otlp => ".otlp.pb",
            Format::ChromeTrace => ".trace.json",
        }
    }

    /// The format a file name asks for, by its ending (any case): `.speedscope.json`,
    /// `.pb.gz` or `.pprof`, `.otlp.pb` or `.otlp`, `.trace.json` or `.chrome-trace.json`.
    pub fn from_path(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        let ends = |suffix: &str| name.len() > suffix.len() && name.ends_with(suffix);
        if ends(".speedscope.json") {
            Some(Format::Speedscope)
        } else if ends(".pb.gz") || ends(".pprof") {
            Some(Format::Pprof)
        } else if ends(".otlp.pb") || ends(".otlp") {
            Some(Format::Otlp)
        } else if ends(".trace.json") || ends(".chrome-trace.json") {
            Some(Format::ChromeTrace)
        } else {
            None
        }
    }
}

/// What a writer writes: stacks and what their weights are.
#[derive(Clone, Copy, Debug)]
pub struct Profile<'a> {
    /// The stacks: summed (one sample per distinct stack) or in time order (one sample per
    /// run of identical stacks, in order, with each sample's time where it was kept:
    /// [`crate::fold::OrderedStacks::sample_times`], written by [`otlp`]).
    pub stacks: &'a Stacks,
    /// Unit and event of the weights.
    pub meta: &'a Meta,
    /// A name for the profile (the input file), if any.
    pub name: Option<&'a str>,
}

/// Why a profile could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// A weight with a fraction, in a format whose values are integers.
    #[error(
        "{format} values are integers, and the stack `{stack}` weighs {weight}: \
         write whole weights (a scaled differential profile has fractions)"
    )]
    Fraction {
        /// The format.
        format: &'static str,
        /// The stack (shortened).
        stack: String,
        /// Its weight.
        weight: Weight,
    },
    /// A weight larger than the format's integers.
    #[error("{format} values are 64-bit integers, and the stack `{stack}` weighs {weight}")]
    Overflow {
        /// The format.
        format: &'static str,
        /// The stack (shortened).
        stack: String,
        /// Its weight.
        weight: Weight,
    },
    /// Writing failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Writes `profile` in `format` to `out`.
pub fn write(format: Format, profile: &Profile<'_>, out: &mut dyn Write) -> Result<(), ExportError> {
    match format {
        Format::Speedscope => speedscope::write(profile, out),
        Format::Pprof => pprof::write(profile, out),
        Format::Otlp => otlp::write(profile, out),
        Format::ChromeTrace => chrome::write(profile, out),
    }
}

/// pprof's and OTLP's (type, unit) of a sample value for kflame's unit and event.
///
/// | kflame | type, unit |
/// |---|---|
/// | no header, `samples` | `samples`, `count` |
/// | `period` of `cpu-clock` / `task-clock` | `cpu`, `nanoseconds` |
/// | `period` of another event | the event, `count` |
/// | `bytes` | `alloc_space`, `bytes` |
/// | `ns` of an off-CPU (`sched_switch`) profile | `off_cpu`, `nanoseconds` |
/// | `ns` otherwise (syscall, probe, function_graph latency) | `latency`, `nanoseconds` |
/// | `events` | `events`, `count` |
/// | another unit | `value`, that unit |
pub fn sample_type(meta: &Meta) -> (String, String) {
    let event = meta.event.as_deref().unwrap_or("");
    let (t, u): (&str, &str) = match &meta.unit {
        Unit::Unspecified | Unit::Samples => ("samples", "count"),
        Unit::Period if matches!(event_name(event), "cpu-clock" | "task-clock") => ("cpu", "nanoseconds"),
        Unit::Period if !event.is_empty() => (event, "count"),
        Unit::Period => ("period", "count"),
        Unit::Bytes => ("alloc_space", "bytes"),
        Unit::Nanoseconds if event.contains("sched_switch") || event.contains("off") => {
            ("off_cpu", "nanoseconds")
        }
        Unit::Nanoseconds => ("latency", "nanoseconds"),
        Unit::Events => ("events", "count"),
        Unit::Other(u) => ("value", u),
    };
    (t.to_string(), u.to_string())
}

/// `cpu-clock` from `cpu-clock:ppp` or `cpu-clock:u`.
fn event_name(event: &str) -> &str {
    event.split(':').next().unwrap_or(event)
}

/// The first 120 bytes of a stack, for messages.
pub(crate) fn shown(stack: &[u8]) -> String {
    crate::fold::read::show(&stack[stack.len().saturating_sub(120)..])
}

/// `w` as a whole non-negative `i64`, or why not.
pub(crate) fn integer(format: &'static str, stack: &[u8], w: Weight) -> Result<i64, ExportError> {
    if !w.is_integer() {
        return Err(ExportError::Fraction { format, stack: shown(stack), weight: w });
    }
    let (whole, _) = w.to_parts();
    i64::try_from(whole).map_err(|_| ExportError::Overflow { format, stack: shown(stack), weight: w })
}

/// The frames of a folded stack (`a;b;c`), root first, as text (lossy UTF-8: every format
/// here stores names as UTF-8 strings).
pub(crate) fn frames(stack: &[u8]) -> impl Iterator<Item = std::borrow::Cow<'_, str>> {
    stack.split(|&b| b == b';').map(String::from_utf8_lossy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_from_file_name() {
        let f = |p: &str| Format::from_path(Path::new(p));
        assert_eq!(f("out/cpu.speedscope.json"), Some(Format::Speedscope));
        assert_eq!(f("CPU.PB.GZ"), Some(Format::Pprof));
        assert_eq!(f("a.pprof"), Some(Format::Pprof));
        assert_eq!(f("a.otlp.pb"), Some(Format::Otlp));
        assert_eq!(f("a.trace.json"), Some(Format::ChromeTrace));
        for none in ["a.json", "a.svg", ".pb.gz", "a.gz", "a"] {
            assert_eq!(f(none), None, "{none}");
        }
        for &fmt in Format::ALL {
            assert_eq!(f(&format!("x{}", fmt.extension())), Some(fmt));
        }
    }

    #[test]
    fn units_map_onto_sample_types() {
        let m = |unit, event: Option<&str>| sample_type(&Meta { unit, event: event.map(String::from) });
        assert_eq!(m(Unit::Unspecified, None), ("samples".into(), "count".into()));
        assert_eq!(m(Unit::Period, Some("cpu-clock:ppp")), ("cpu".into(), "nanoseconds".into()));
        assert_eq!(m(Unit::Period, Some("cycles")), ("cycles".into(), "count".into()));
        assert_eq!(m(Unit::Bytes, Some("kmem:mm_page_alloc")), ("alloc_space".into(), "bytes".into()));
        assert_eq!(
            m(Unit::Nanoseconds, Some("sched:sched_switch")),
            ("off_cpu".into(), "nanoseconds".into())
        );
        assert_eq!(m(Unit::Nanoseconds, Some("syscalls")), ("latency".into(), "nanoseconds".into()));
    }
}
