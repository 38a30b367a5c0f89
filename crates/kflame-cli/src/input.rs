//! Opening inputs: files or stdin (`-`), decompressed on the fly when they are gzip, zstd or
//! xz data (recognised by their magic numbers, not their names), with their first whole
//! lines available for format detection without losing them; and the hints given when an
//! input holds nothing of what was expected.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use kflame::collapse::{Content, Format, content, looks_binary};
use kflame::text::MAX_LINE;

/// Bytes read at least for format detection.
pub(crate) const HEAD_LEN: usize = 64 * 1024;

/// Whole lines read at least for format detection (when lines are longer than
/// [`HEAD_LEN`] / this, the head grows to hold them, up to [`HEAD_MAX`]).
const HEAD_LINES: usize = 8;

/// The largest head: the first line always fits whole unless it is over the line cap.
const HEAD_MAX: usize = MAX_LINE + HEAD_LEN;

/// xz decoder memory limit, in KiB: dictionaries up to 256 MiB (`xz -9` uses 64 MiB); a
/// header asking for more is refused rather than trusted.
const XZ_MEM_LIMIT_KIB: u32 = 256 * 1024;

/// How an input was compressed; it is read decompressed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Compression {
    Gzip,
    Zstd,
    Xz,
}

impl Compression {
    fn name(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::Xz => "xz",
        }
    }
}

/// An opened input: its display name, its head, and a reader positioned at the start.
pub(crate) struct Input {
    /// File name or `<stdin>`, used in every message about this input.
    pub(crate) name: String,
    /// Path of a file read as it is (None for stdin and for compressed files); binary
    /// formats (perf.data) reopen it.
    pub(crate) path: Option<PathBuf>,
    /// The first bytes, decompressed: at least [`HEAD_LEN`] and [`HEAD_LINES`] whole lines
    /// when the input has them, at most [`HEAD_MAX`].
    pub(crate) head: Vec<u8>,
    /// True when the head is the whole input.
    pub(crate) complete: bool,
    rest: Box<dyn Read + Send>,
}

impl Input {
    /// Opens `path` (`-` for stdin), decompressing it when needed, and reads its head.
    pub(crate) fn open(path: &str) -> Result<Input> {
        let (name, file_path, raw): (String, Option<PathBuf>, Box<dyn Read + Send>) = if path == "-" {
            ("<stdin>".into(), None, Box::new(io::stdin()))
        } else {
            let f = File::open(path).with_context(|| format!("cannot open {path}"))?;
            if f.metadata().is_ok_and(|m| m.is_dir()) {
                bail!("{path} is a directory, expected a file");
            }
            (path.to_string(), Some(PathBuf::from(path)), Box::new(f))
        };
        let (compression, mut reader) = decompressed(raw).with_context(|| format!("cannot read {name}"))?;
        let mut head = Vec::with_capacity(HEAD_LEN);
        let complete = read_head(&mut reader, &mut head).with_context(|| format!("cannot read {name}"))?;
        let path = if compression.is_some() { None } else { file_path };
        Ok(Input { name, path, head, complete, rest: reader })
    }

    /// True when the input has no bytes at all (after decompression).
    pub(crate) fn is_empty(&self) -> bool {
        self.complete && self.head.is_empty()
    }

    /// The head cut after its last whole line (all of it when it is the whole input, or
    /// holds no newline): what format detection looks at.
    pub(crate) fn detect_head(&self) -> &[u8] {
        if self.complete {
            return &self.head;
        }
        match memchr_last_newline(&self.head) {
            Some(i) => &self.head[..=i],
            None => &self.head,
        }
    }

    /// The format of this input, if one is detected.
    pub(crate) fn detect(&self) -> Option<Format> {
        kflame::collapse::detect(self.detect_head())
    }

    /// What this input is, for hints once it has been read: taken from the head before the
    /// input is consumed (at most [`HEAD_LEN`] and whole lines, so it is cheap).
    pub(crate) fn sample(&self) -> Sample {
        let head = self.detect_head();
        let cut = if head.len() <= HEAD_LEN {
            head.len()
        } else {
            memchr_last_newline(&head[..HEAD_LEN]).map_or(HEAD_LEN, |i| i + 1)
        };
        Sample { name: self.name.clone(), head: head[..cut].to_vec() }
    }

    /// The whole input as a reader, head included.
    pub(crate) fn reader(self) -> impl Read + Send {
        io::Cursor::new(self.head).chain(self.rest)
    }
}

fn memchr_last_newline(s: &[u8]) -> Option<usize> {
    s.iter().rposition(|&b| b == b'\n')
}

/// `raw` read through a decoder when its first bytes are a gzip, zstd or xz magic number.
fn decompressed(mut raw: Box<dyn Read + Send>) -> io::Result<(Option<Compression>, Box<dyn Read + Send>)> {
    let mut magic = [0u8; 6];
    let mut n = 0;
    while n < magic.len() {
        match raw.read(&mut magic[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let whole = io::Cursor::new(magic[..n].to_vec()).chain(raw);
    let compression = match content(&magic[..n]) {
        Content::Gzip => Compression::Gzip,
        Content::Zstd => Compression::Zstd,
        Content::Xz => Compression::Xz,
        _ => return Ok((None, Box::new(whole))),
    };
    let decoder: Box<dyn Read + Send> = match compression {
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(whole)),
        Compression::Zstd => Box::new(ZstdFrames::new(whole)),
        Compression::Xz => Box::new(lzma_rust2::XzReader::new_mem_limit(whole, true, XZ_MEM_LIMIT_KIB)),
    };
    Ok((Some(compression), Box::new(Decoding { inner: decoder, what: compression.name() })))
}

/// A decoder whose errors say which decompression failed.
struct Decoding {
    inner: Box<dyn Read + Send>,
    what: &'static str,
}

impl Read for Decoding {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).map_err(|e| {
            if e.kind() == io::ErrorKind::Interrupted {
                e
            } else {
                io::Error::new(e.kind(), format!("{} decompression failed: {e}", self.what))
            }
        })
    }
}

/// A zstd stream of one or more frames (as `zstd` writes them, or several files
/// concatenated), skippable frames skipped. Window sizes over 100 MiB are refused by the
/// decoder, which keeps its memory bounded.
struct ZstdFrames<R: Read> {
    source: BufReader<R>,
    decoder: ruzstd::decoding::FrameDecoder,
    in_frame: bool,
}

impl<R: Read> ZstdFrames<R> {
    fn new(source: R) -> ZstdFrames<R> {
        ZstdFrames {
            source: BufReader::new(source),
            decoder: ruzstd::decoding::FrameDecoder::new(),
            in_frame: false,
        }
    }
}

impl<R: Read> Read for ZstdFrames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use ruzstd::decoding::BlockDecodingStrategy;
        use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.in_frame {
                let d = &mut self.decoder;
                while d.can_collect() < buf.len() && !d.is_finished() {
                    let more = buf.len() - d.can_collect();
                    d.decode_blocks(&mut self.source, BlockDecodingStrategy::UptoBytes(more))
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                }
                let n = d.read(buf)?;
                if n > 0 {
                    return Ok(n);
                }
                self.in_frame = false;
            }
            if self.source.fill_buf()?.is_empty() {
                return Ok(0);
            }
            match self.decoder.reset(&mut self.source) {
                Ok(()) => self.in_frame = true,
                Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                    length,
                    ..
                })) => {
                    io::copy(&mut (&mut self.source).take(u64::from(length)), &mut io::sink())?;
                }
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
            }
        }
    }
}

/// Reads the head of an input into `head`: at least [`HEAD_LEN`] bytes and [`HEAD_LINES`]
/// whole lines when the input has them, at most [`HEAD_MAX`] (text only: a binary head is
/// not extended). Returns true when the input ended within it.
fn read_head(reader: &mut dyn Read, head: &mut Vec<u8>) -> io::Result<bool> {
    let mut want = HEAD_LEN;
    loop {
        let before = head.len();
        let limit = (want - before) as u64;
        reader.take(limit).read_to_end(head)?;
        if head.len() - before < limit as usize {
            return Ok(true);
        }
        let lines = head.iter().filter(|&&b| b == b'\n').count();
        if lines >= HEAD_LINES || looks_binary(head) || head.len() >= HEAD_MAX {
            return Ok(false);
        }
        want = (want * 2).min(HEAD_MAX);
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
    use std::io::Write;

    fn open_bytes(name: &str, data: &[u8]) -> Input {
        let dir = std::env::temp_dir().join(format!("kflame-input-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::File::create(&path).unwrap().write_all(data).unwrap();
        Input::open(path.to_str().unwrap()).unwrap()
    }

    fn read_all(input: Input) -> Vec<u8> {
        let mut out = Vec::new();
        input.reader().read_to_end(&mut out).unwrap();
        out
    }

    #[test]
    fn gzip_members_are_read_through() {
        let text = b"a;b 1\na;c 2\n";
        let mut gz = Vec::new();
        for _ in 0..2 {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(text).unwrap();
            gz.extend(e.finish().unwrap());
        }
        let input = open_bytes("two-members.gz", &gz);
        assert!(input.path.is_none(), "a compressed file is not reopened as it is");
        assert_eq!(input.detect(), Some(Format::Folded));
        assert_eq!(read_all(input), text.repeat(2));
    }

    #[test]
    fn corrupt_compressed_data_is_an_error_naming_the_decoder() {
        let mut gz = vec![0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0, 3];
        gz.extend_from_slice(&[0xff; 64]);
        let dir = std::env::temp_dir().join(format!("kflame-input-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("corrupt.gz");
        std::fs::write(&path, &gz).unwrap();
        let err = format!("{:#}", Input::open(path.to_str().unwrap()).err().expect("an error"));
        assert!(err.contains("corrupt.gz") && err.contains("gzip decompression failed"), "{err}");
    }

    #[test]
    fn head_holds_whole_lines_however_long() {
        let first = format!("{} 1\n", "frame;".repeat(20_000));
        assert!(first.len() > HEAD_LEN);
        let mut data = first.clone().into_bytes();
        data.extend_from_slice(b"a;b 2\n".repeat(10).as_slice());
        data.extend_from_slice(&vec![b'x'; HEAD_MAX]);
        let input = open_bytes("long-first-line.folded", &data);
        assert!(!input.complete);
        assert!(input.detect_head().starts_with(first.as_bytes()));
        assert!(input.detect_head().ends_with(b"a;b 2\n"));
        assert_eq!(input.detect(), Some(Format::Folded));
        assert_eq!(read_all(input), data);
    }

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
        assert!(sample(b"\x17\x08\x44tracing6").hint(ReadAs::Folded).contains("trace-cmd report -i x"));
        assert!(sample(b"PERFILE2").hint(ReadAs::Folded).contains("kflame collapse x"));
    }
}
