//! Opening inputs: files or stdin (`-`), decompressed on the fly when they are gzip, zstd or
//! xz data (recognised by their magic numbers, not their names), with their first whole
//! lines available for format detection without losing them; and the collapse of an opened
//! input by the collapser its format and options configure. Front ends (the command line,
//! the MCP server) open every input through here.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::PathBuf;

use crate::collapse::{Content, Engine, Format, Order, Output, content, looks_binary};
use crate::import::{self, Kind, Limits};
use crate::input::Collapser;
use crate::perf_data;
use crate::text::MAX_LINE;

/// Bytes read at least for format detection.
pub const HEAD_LEN: usize = 64 * 1024;

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
pub struct Input {
    /// File name or `<stdin>`, used in every message about this input.
    pub name: String,
    /// Path of a file read as it is (None for stdin and for compressed files); binary
    /// formats (perf.data) reopen it.
    pub path: Option<PathBuf>,
    /// The first bytes, decompressed: at least [`HEAD_LEN`] and [`HEAD_LINES`] whole lines
    /// when the input has them, at most [`HEAD_MAX`].
    pub head: Vec<u8>,
    /// True when the head is the whole input.
    pub complete: bool,
    /// How it was compressed, if it was.
    compression: Option<Compression>,
    /// The bounds of the readers that take the input whole (other tools' profiles).
    limits: Limits,
    rest: Box<dyn Read + Send>,
}

impl Input {
    /// Opens `path` (`-` for stdin), decompressing it when needed, and reads its head.
    pub fn open(path: &str) -> io::Result<Input> {
        if path == "-" {
            return Input::from_reader("<stdin>".into(), None, Box::new(io::stdin()));
        }
        let f = File::open(path).map_err(|e| io::Error::new(e.kind(), format!("cannot open {path}: {e}")))?;
        if f.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{path} is a directory, expected a file"),
            ));
        }
        Input::from_reader(path.to_string(), Some(PathBuf::from(path)), Box::new(f))
    }

    /// An input read from `raw`, named `name` in messages; `path` is the file it was opened
    /// from, if any (binary formats reopen it).
    pub fn from_reader(name: String, path: Option<PathBuf>, raw: Box<dyn Read + Send>) -> io::Result<Input> {
        let cannot = |e: io::Error| io::Error::new(e.kind(), format!("cannot read {name}: {e}"));
        let (compression, mut reader) = decompressed(raw).map_err(cannot)?;
        let mut head = Vec::with_capacity(HEAD_LEN);
        let complete = read_head(&mut reader, &mut head).map_err(cannot)?;
        let path = if compression.is_some() { None } else { path };
        Ok(Input { name, path, head, complete, compression, limits: Limits::default(), rest: reader })
    }

    /// This input read with `limits` when it is another tool's profile (a deadline, other
    /// bounds) rather than [`Limits::default`].
    pub fn with_limits(mut self, limits: Limits) -> Input {
        self.limits = limits;
        self
    }

    /// True when the input has no bytes at all (after decompression).
    pub fn is_empty(&self) -> bool {
        self.complete && self.head.is_empty()
    }

    /// The head cut after its last whole line (all of it when it is the whole input, or
    /// holds no newline): what format detection looks at.
    pub fn detect_head(&self) -> &[u8] {
        if self.complete {
            return &self.head;
        }
        match memchr_last_newline(&self.head) {
            Some(i) => &self.head[..=i],
            None => &self.head,
        }
    }

    /// The format of this input, if one is detected.
    pub fn detect(&self) -> Option<Format> {
        crate::collapse::detect(self.detect_head())
    }

    /// The whole input as a reader, head included. With a deadline in its limits, reading
    /// fails once it has passed (`TimedOut`, "reading stopped at its time limit"), so that
    /// text collapsed for a caller that gave up stops within one block.
    pub fn reader(self) -> Box<dyn Read + Send> {
        let whole = io::Cursor::new(self.head).chain(self.rest);
        match self.limits.deadline {
            // Without one, nothing between the reader and the engine: a wrapper of `read`
            // alone makes every block's buffer zeroed before it is read into (the default
            // `read_buf`), some 10% of collapsing perf script text.
            None => Box::new(whole),
            Some(at) => Box::new(Deadline { at, inner: whole }),
        }
    }

    /// Collapses the whole input with `collapser` (from
    /// [`crate::collapse::options::Target::collapser`]) in `engine`'s order: text through
    /// the [`Engine`], perf.data through its reader (the file mapped when the input is one,
    /// else read into memory), other tools' profiles through [`import::read`]. Errors name
    /// the input and carry their causes.
    pub fn collapse(self, engine: &Engine, collapser: Collapser) -> Result<Output, OpenError> {
        let name = self.name.clone();
        let order = engine.order;
        let err = |what: &str, e: &dyn std::error::Error| {
            OpenError(format!("reading {what}{name}: {}", crate::diag::error_chain(e)))
        };
        match collapser {
            Collapser::Lines(c) => engine.run(c, self.reader()).map_err(|e| err("", &e)),
            Collapser::PerfData(opts) => match self.path.clone() {
                Some(path) => {
                    perf_data::collapse_file(&path, &opts, order).map_err(|e| err("perf.data ", &e))
                }
                None => {
                    // Read whole: a pipe holds what its writer wrote, but a compressed file
                    // can inflate without bound, so it is capped.
                    let cap = self.compression.map(|c| (MAX_PERF_DATA_DECOMPRESSED, c));
                    let data = read_capped(self.reader(), cap.map_or(usize::MAX, |c| c.0))
                        .map_err(|e| err("", &e))?;
                    let Some(data) = data else {
                        let (cap, c) = cap.unwrap_or((0, Compression::Gzip));
                        return Err(OpenError(format!(
                            "reading perf.data {name}: more than {cap} bytes once {}-decompressed, the \
                             limit of a compressed perf.data file (it is read into memory); decompress \
                             it to a file first, which is mapped whatever its size",
                            c.name()
                        )));
                    };
                    perf_data::collapse_bytes(&data, &opts, order).map_err(|e| err("perf.data ", &e))
                }
            },
            Collapser::Import(kind, sample_type) => {
                let what = match kind {
                    Kind::Pprof => "pprof profile ",
                    Kind::Speedscope => "speedscope file ",
                    Kind::Otlp => "OTLP profiles request ",
                };
                let limits = self.limits;
                let cap = limits.max_decompressed;
                let Some(data) = read_capped(self.reader(), cap).map_err(|e| err("", &e))? else {
                    return Err(err(what, &import::ImportError::TooLargeDecompressed(cap)));
                };
                let time_order = order == Order::Time;
                let got = import::read_sample_type(kind, &data, time_order, sample_type.as_deref(), &limits)
                    .map_err(|e| err(what, &e))?;
                Ok(Output { stacks: got.stacks, diag: got.diag, meta: got.meta })
            }
        }
    }
}

/// The largest perf.data read into memory from a compressed input: 256 MiB (its buffer grows
/// to twice that at most).
pub const MAX_PERF_DATA_DECOMPRESSED: usize = 256 << 20;

/// All of `r`, or `None` when it holds more than `cap` bytes (read no further than that).
/// The buffer grows by an eighth at a time rather than doubling, so that it ends near what
/// was read and the cap, not twice it.
fn read_capped(r: impl Read, cap: usize) -> io::Result<Option<Vec<u8>>> {
    let mut r = r.take((cap as u64).saturating_add(1));
    let mut data = Vec::new();
    loop {
        let start = data.len();
        let chunk = 64 << 10;
        if data.capacity() < start + chunk {
            data.reserve_exact((start / 8).max(chunk));
        }
        data.resize(start + chunk, 0);
        match r.read(&mut data[start..]) {
            Ok(0) => {
                data.truncate(start);
                break;
            }
            Ok(n) => data.truncate(start + n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => data.truncate(start),
            Err(e) => return Err(e),
        }
    }
    Ok(if data.len() > cap { None } else { Some(data) })
}

/// A collapse that failed: the message names the input and what went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct OpenError(pub String);

/// A reader that fails once `at` has passed.
struct Deadline<R> {
    at: std::time::Instant,
    inner: R,
}

impl<R: Read> Read for Deadline<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if std::time::Instant::now() >= self.at {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "reading stopped at its time limit"));
        }
        self.inner.read(buf)
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
}
