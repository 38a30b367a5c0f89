//! Inputs of the command line: opened by the library ([`kflame::open`]: files or stdin,
//! decompressed, with a head for format detection), named at most once as stdin, and the
//! hints given when an input holds nothing of what was expected.

use anyhow::{Result, bail};
use kflame::collapse::{Content, Format, content, looks_binary};

pub(crate) use kflame::open::{HEAD_LEN, Input};

/// What the command line asks of an input beyond the library's.
pub(crate) trait InputExt {
    /// What this input is, for hints once it has been read: taken from the head before the
    /// input is consumed (at most [`HEAD_LEN`] and whole lines, so it is cheap).
    fn sample(&self) -> Sample;
}

impl InputExt for Input {
    fn sample(&self) -> Sample {
        let head = self.detect_head();
        let cut = if head.len() <= HEAD_LEN {
            head.len()
        } else {
            head[..HEAD_LEN].iter().rposition(|&b| b == b'\n').map_or(HEAD_LEN, |i| i + 1)
        };
        Sample { name: self.name.clone(), head: head[..cut].to_vec() }
    }
}

/// The inputs named on the command line; stdin when none. Stdin can be read once only, so
/// it may be named at most once.
pub(crate) fn paths_or_stdin(files: &[String]) -> Result<Vec<String>> {
    if files.iter().filter(|f| *f == "-").count() > 1 {
        bail!("stdin (`-`) is named more than once: it can be read only once; save it to a file");
    }
    Ok(if files.is_empty() { vec!["-".to_string()] } else { files.to_vec() })
}

/// Opens a folded input of `flamegraph` or `diff`. An empty input is a warning (`None`): it
/// holds no stacks, but it is not wrong. An input that is not text and holds no folded line
/// in its head (binary data, perf.data, a trace-cmd .dat file) fails at once, with what it
/// is, rather than being read to its end.
pub(crate) fn open_folded(path: &str) -> Result<Option<(Input, Sample)>> {
    let input = Input::open(path)?;
    if input.is_empty() {
        crate::output::message(format!("warning: {} is empty", input.name));
        return Ok(None);
    }
    let sample = input.sample();
    let head = input.detect_head();
    let folded_line = || {
        kflame::collapse::lines(head, 1)
            .any(|(_, l)| kflame::fold::read::parse_line(l).is_ok_and(|x| x.is_some()))
    };
    if looks_binary(head) && !folded_line() {
        bail!("{}: not folded stacks{}", input.name, sample.hint(ReadAs::Folded));
    }
    Ok(Some((input, sample)))
}

/// Fails when a folded input gave no stack but had malformed lines (its diagnostics,
/// printed already, say which): what it looks like instead, and what to do.
pub(crate) fn check_folded(sample: &Sample, stacks: u64, diag: &kflame::diag::Diagnostics) -> Result<()> {
    let skipped = diag.skipped();
    if stacks == 0 && skipped > 0 {
        let lines = if skipped == 1 { "line" } else { "lines" };
        bail!(
            "{}: no stacks found, only {skipped} malformed {lines}{}",
            sample.name,
            sample.hint(ReadAs::Folded)
        );
    }
    Ok(())
}

/// The start of an input, kept to say what it is once it has been read.
pub(crate) struct Sample {
    name: String,
    head: Vec<u8>,
}

/// What an input was read as, for [`Sample::hint`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum ReadAs {
    /// Folded stacks, the input of `flamegraph` and `diff` (no `--format` there).
    Folded,
    /// `collapse --format FORMAT`.
    Forced(Format),
    /// `collapse` without `--format`, in the format detected.
    Detected(Format),
}

impl ReadAs {
    fn format(self) -> Format {
        match self {
            ReadAs::Folded => Format::Folded,
            ReadAs::Forced(f) | ReadAs::Detected(f) => f,
        }
    }
}

impl Sample {
    /// What the input looks like and what to do, when that differs from how it was read
    /// (`; ` and a sentence), else the empty string.
    pub(crate) fn hint(&self, read_as: ReadAs) -> String {
        let name = &self.name;
        let text = match content(&self.head) {
            Content::Empty => return String::new(),
            Content::Gzip | Content::Zstd | Content::Xz => {
                "it is still compressed after decompression (compressed twice?)".to_string()
            }
            Content::Bzip2 => format!(
                "it is bzip2-compressed, which kflame does not read: decompress it first \
                 (`bzip2 -dc {name} | kflame ...`); gzip, zstd and xz are read as they are"
            ),
            Content::PerfData => match read_as {
                // Read as what it is: its own notes say why nothing came of it.
                _ if read_as.format() == Format::PerfData => return String::new(),
                ReadAs::Folded => {
                    format!(
                        "it is a perf.data file: fold it first, `kflame collapse {name} | kflame flamegraph`"
                    )
                }
                _ => "it is a perf.data file: leave --format out (or use --format perf-data)".to_string(),
            },
            Content::TraceCmdDat => format!(
                "it is a binary trace-cmd .dat file: turn it into text first, \
                 `trace-cmd report -i {name} | kflame collapse`"
            ),
            // pprof and OTLP profiles are binary: read as one, their notes say what was
            // skipped.
            Content::Binary if matches!(read_as.format(), Format::Pprof | Format::Otlp) => {
                return String::new();
            }
            Content::Binary => "it looks like binary data, not text".to_string(),
            Content::Text(Some(f)) if f != read_as.format() => match read_as {
                ReadAs::Folded if f == Format::PerfScript => {
                    "this looks like perf script text: run `kflame collapse` first".to_string()
                }
                ReadAs::Folded => format!("it looks like {f} input: run `kflame collapse` on it first"),
                ReadAs::Forced(_) => {
                    format!("it looks like {f} input: leave --format out, or use --format {f}")
                }
                ReadAs::Detected(_) => return String::new(),
            },
            Content::Text(_) => return String::new(),
        };
        format!("; {text}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdin_at_most_once() {
        assert!(paths_or_stdin(&["-".into(), "-".into()]).is_err());
        assert_eq!(paths_or_stdin(&[]).unwrap(), ["-"]);
        assert_eq!(paths_or_stdin(&["a".into(), "-".into()]).unwrap(), ["a", "-"]);
    }

    #[test]
    fn hints_say_what_an_input_is() {
        let sample = |head: &[u8]| Sample { name: "x".into(), head: head.to_vec() };
        let perf =
            b"dd 29776 666709.771979:   10101010 cpu-clock: \n\t ffffffff81 sys_read ([kernel.kallsyms])\n\n";
        assert_eq!(
            sample(perf).hint(ReadAs::Folded),
            "; this looks like perf script text: run `kflame collapse` first"
        );
        assert!(
            sample(b"a;b 1\na;c 2\n").hint(ReadAs::Forced(Format::PerfScript)).contains("--format folded")
        );
        assert_eq!(sample(b"a;b 1\n").hint(ReadAs::Folded), "");
        assert!(sample(&[0u8; 100]).hint(ReadAs::Folded).contains("binary"));
        // A pprof profile is binary: read as one, it gets no hint that it is not text.
        let pprof = b"\x0a\x04\x08\x01\x10\x02\x12\x06\x0a\x01\x01\x12\x01\x01\x00\xff";
        assert!(sample(pprof).hint(ReadAs::Folded).contains("binary"));
        assert_eq!(sample(pprof).hint(ReadAs::Detected(Format::Pprof)), "");
        assert_eq!(sample(pprof).hint(ReadAs::Forced(Format::Otlp)), "");
        assert!(sample(b"\x17\x08\x44tracing6").hint(ReadAs::Folded).contains("trace-cmd report -i x"));
        assert!(sample(b"PERFILE2").hint(ReadAs::Folded).contains("kflame collapse x"));
    }
}
