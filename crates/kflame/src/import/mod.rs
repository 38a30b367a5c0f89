//! Readers of other tools' profiles, into folded stacks: pprof (`profile.proto`, gzipped or
//! not: Go's `pprof`, Pyroscope and Parca exports), speedscope's JSON file format and OTLP
//! profiles (`ExportProfilesServiceRequest`), so
//! that they get kflame's viewer, diff and analysis. The collapse format registry detects
//! them by content ([`pprof::detect`], [`speedscope::detect`], [`otlp::detect`]); `Target::collapser` of
//! [`crate::input`] hands them to [`read`].
//!
//! A reader takes the whole file (both formats need it whole) and returns stacks, their
//! [`Meta`] and [`Diagnostics`] for what it skipped, or an [`ImportError`] saying what is
//! wrong with the file. It never panics on input; every size it allocates by is bounded by
//! the input's length or by [`Limits`].

pub mod otlp;
pub mod pprof;
pub mod speedscope;

use crate::diag::Diagnostics;
use rustc_hash::FxHashMap;

use crate::fold::{Meta, OrderedStacks, StackCounts, Stacks, Weight};

/// Which reader.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// pprof `profile.proto`, gzipped or not.
    Pprof,
    /// speedscope JSON.
    Speedscope,
    /// OTLP profiles (`ExportProfilesServiceRequest`), gzipped or not.
    Otlp,
}

/// Bounds on what a file may make a reader allocate, and on how long it may take.
///
/// The defaults are what the command line and the MCP server read with, and what the fuzz
/// targets read with: a hostile file of any kind ends in a few seconds and a few hundred MiB,
/// with an error naming the limit it crossed.
#[derive(Copy, Clone, Debug)]
pub struct Limits {
    /// A profile larger than this once decompressed (it is read whole) is refused.
    pub max_decompressed: usize,
    /// A stack whose folded text is longer is skipped and counted.
    pub max_stack_bytes: usize,
    /// Folded text built in all (each distinct stack once, and once more per run of a
    /// time-ordered profile): a profile whose stacks need more is refused.
    pub max_total_bytes: usize,
    /// The reader stops with [`ImportError::TimedOut`] once this instant has passed.
    pub deadline: Option<std::time::Instant>,
}

/// [`Limits::max_decompressed`] of the defaults: 64 MiB, several times the largest
/// profiles Go, Parca or speedscope write, while their decoded form (a few times the bytes)
/// stays in a few hundred MiB.
pub const MAX_DECOMPRESSED: usize = 64 << 20;

/// [`Limits::max_total_bytes`] of the defaults: 128 MiB of folded text.
pub const MAX_TOTAL_BYTES: usize = 128 << 20;

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_decompressed: MAX_DECOMPRESSED,
            max_stack_bytes: crate::text::MAX_LINE,
            max_total_bytes: MAX_TOTAL_BYTES,
            deadline: None,
        }
    }
}

/// What a reader found.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The stacks.
    pub stacks: Stacks,
    /// Unit and event of the weights.
    pub meta: Meta,
    /// What was skipped (counted per kind, with the index of the first sample as its line).
    pub diag: Diagnostics,
}

/// Why a file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    /// The gzip layer is damaged or too large.
    #[error("gzip decompression failed: {0}")]
    Gzip(String),
    /// The protobuf message could not be decoded.
    #[error("not a valid {what} protobuf message ({detail}); truncated or corrupt?")]
    Protobuf {
        /// The message expected.
        what: &'static str,
        /// The decoder's message.
        detail: String,
    },
    /// The JSON could not be parsed into the format's structure.
    #[error("not a valid speedscope file: {0}")]
    Json(String),
    /// A speedscope file of another schema.
    #[error("speedscope file with `$schema` {found:?}; kflame reads {expected:?}")]
    Schema {
        /// The schema the file names.
        found: String,
        /// The one kflame reads.
        expected: &'static str,
    },
    /// A sample type the profile does not have was asked for.
    #[error(
        "the profile has no sample type `{asked}`; it has {available} (the default: {default}); \
         name one by its type or type/unit"
    )]
    SampleType {
        /// The name asked for.
        asked: String,
        /// The profile's sample types, `type/unit`, comma-separated.
        available: String,
        /// The type read when none is asked for.
        default: String,
    },
    /// Something the format requires is wrong.
    #[error("{0}")]
    Invalid(String),
    /// No sample at all.
    #[error("the profile holds no samples")]
    NoSamples,
    /// The stacks need more memory than [`Limits::max_total_bytes`].
    #[error(
        "the profile's stacks take more than {0} bytes of folded text (the limit of an imported \
         profile); refused"
    )]
    TooLarge(usize),
    /// The file is larger than [`Limits::max_decompressed`] once decompressed.
    #[error("more than {0} bytes once decompressed (the limit of an imported profile); refused")]
    TooLargeDecompressed(usize),
    /// [`Limits::deadline`] passed before the reading ended.
    #[error("reading stopped at its time limit")]
    TimedOut,
}

/// Reads `bytes` with the reader of `kind`; stacks in file order when `time_order`, else
/// summed.
pub fn read(kind: Kind, bytes: &[u8], time_order: bool, limits: &Limits) -> Result<Imported, ImportError> {
    read_sample_type(kind, bytes, time_order, None, limits)
}

/// [`read`], with the sample type of a pprof profile named ([`pprof::read_sample_type`]);
/// `sample_type` is for pprof only: given for another kind, it is an error.
pub fn read_sample_type(
    kind: Kind,
    bytes: &[u8],
    time_order: bool,
    sample_type: Option<&str>,
    limits: &Limits,
) -> Result<Imported, ImportError> {
    if sample_type.is_some() && kind != Kind::Pprof {
        return Err(ImportError::Invalid(
            "a sample type is chosen in pprof profiles only; this file has one kind of weight".into(),
        ));
    }
    match kind {
        Kind::Pprof => pprof::read_sample_type(bytes, time_order, sample_type, limits),
        Kind::Speedscope => speedscope::read(bytes, time_order, limits),
        Kind::Otlp => otlp::read(bytes, time_order, limits),
    }
}

/// Stacks being built, with the limits of [`Limits`] applied. Readers resolve each
/// distinct stack of a file once (per location list, stack index, or open frame) into a
/// slot, a stack of folded text interned here, and add weights to slots: a stack repeated
/// by many samples is built once, not once per sample. Every byte of folded text built
/// counts against [`Limits::max_total_bytes`], so that the work and the memory of a file are
/// bounded whatever it repeats.
pub(crate) struct Builder {
    pub(crate) diag: Diagnostics,
    limits: Limits,
    time_order: bool,
    built: usize,
    slots: FxHashMap<Box<[u8]>, u32>,
    /// Per slot: its text's length, weight, and whether anything was added to it.
    info: Vec<(usize, Weight, bool)>,
    /// Time order: (slot, weight) runs, consecutive equal slots merged.
    runs: Vec<(u32, Weight)>,
    ticks: u32,
}

/// The separator of frames in folded text.
pub(crate) const SEP: u8 = b';';

impl Builder {
    pub(crate) fn new(time_order: bool, limits: &Limits) -> Builder {
        Builder {
            diag: Diagnostics::new(),
            limits: *limits,
            time_order,
            built: 0,
            slots: FxHashMap::default(),
            info: Vec::new(),
            runs: Vec::new(),
            ticks: 0,
        }
    }

    /// The longest stack kept, in bytes of folded text.
    pub(crate) fn max_stack(&self) -> usize {
        self.limits.max_stack_bytes
    }

    /// Counts `bytes` of folded text built (a stack, a cached part of stacks) against
    /// [`Limits::max_total_bytes`]; also where the deadline is looked at.
    pub(crate) fn charge(&mut self, bytes: usize) -> Result<(), ImportError> {
        self.built = self.built.saturating_add(bytes);
        if self.built > self.limits.max_total_bytes {
            return Err(ImportError::TooLarge(self.limits.max_total_bytes));
        }
        self.tick()
    }

    /// Fails once the deadline has passed (looked at every 256 calls).
    pub(crate) fn tick(&mut self) -> Result<(), ImportError> {
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks.is_multiple_of(256)
            && let Some(d) = self.limits.deadline
            && std::time::Instant::now() >= d
        {
            return Err(ImportError::TimedOut);
        }
        Ok(())
    }

    /// The slot of the stack whose folded text is `text` (`[no stack]` when empty).
    pub(crate) fn intern(&mut self, text: &[u8]) -> Result<u32, ImportError> {
        let text: &[u8] = if text.is_empty() { b"[no stack]" } else { text };
        self.charge(text.len())?;
        if let Some(&s) = self.slots.get(text) {
            return Ok(s);
        }
        let s = u32::try_from(self.info.len())
            .map_err(|_| ImportError::Invalid("more than 2^32 distinct stacks".into()))?;
        self.slots.insert(text.into(), s);
        self.info.push((text.len(), Weight::ZERO, false));
        Ok(s)
    }

    /// Adds `weight` to the stack of `slot`.
    pub(crate) fn add(&mut self, slot: u32, weight: Weight) -> Result<(), ImportError> {
        self.tick()?;
        let Some(info) = self.info.get_mut(slot as usize) else {
            return Err(ImportError::Invalid("internal: a stack slot out of range".into()));
        };
        info.2 = true;
        if !self.time_order {
            info.1 += weight;
            return Ok(());
        }
        let len = info.0;
        match self.runs.last_mut() {
            Some((s, w)) if *s == slot => *w += weight,
            _ => {
                self.charge(len)?;
                self.runs.push((slot, weight));
            }
        }
        Ok(())
    }

    /// Counts the sample `index` as skipped for a stack longer than the limit.
    pub(crate) fn too_long(&mut self, index: u64) {
        let max = self.limits.max_stack_bytes;
        self.diag.skip("stack too long", index, || format!("a stack of at most {max} bytes"));
    }

    /// The stacks: summed, or the runs in order.
    pub(crate) fn finish(self) -> (Stacks, Diagnostics) {
        if !self.time_order {
            let mut counts = StackCounts::new();
            counts.reserve(self.info.iter().filter(|i| i.2).count());
            for (text, s) in self.slots {
                let (_, w, used) = self.info[s as usize];
                if used {
                    counts.add_boxed(text, w);
                }
            }
            return (Stacks::Counts(counts), self.diag);
        }
        let mut texts: Vec<Box<[u8]>> = vec![Box::default(); self.info.len()];
        for (text, s) in self.slots {
            texts[s as usize] = text;
        }
        let mut ordered = OrderedStacks::new();
        for (s, w) in self.runs {
            ordered.push(&texts[s as usize], w);
        }
        (Stacks::Ordered(ordered), self.diag)
    }
}

/// The length of `name` as a frame of folded text ([`push_frame`]).
pub(crate) fn frame_len(name: &str) -> usize {
    if name.is_empty() { UNKNOWN.len() } else { name.len() }
}

/// The text of a frame without a name.
const UNKNOWN: &[u8] = b"[unknown]";

/// A location's frames as folded text (caller first), or why it gives none; `E` is the
/// reference its profile could not resolve.
pub(crate) enum Part<E> {
    Text(Box<[u8]>),
    /// Longer than a stack may be: its length.
    Long(usize),
    /// A line refers to a function (or name) the profile does not have.
    Bad(E),
}

/// The frames of a location whose `lines` (callee first, as pprof and OTLP list them) are
/// named by `resolve`: caller first, or its `address` when it has no line. Its length is
/// known before it is built, so that a location longer than a stack costs no text.
pub(crate) fn location_part<'a, L, E>(
    b: &mut Builder,
    lines: &[L],
    address: u64,
    resolve: impl Fn(&L) -> Result<&'a str, E>,
) -> Result<Part<E>, ImportError> {
    let mut len = 0usize;
    for line in lines {
        match resolve(line) {
            Ok(name) => len = len.saturating_add(frame_len(name) + 1),
            Err(e) => return Ok(Part::Bad(e)),
        }
    }
    if lines.is_empty() {
        let text = format!("0x{address:x}");
        b.charge(text.len())?;
        return Ok(Part::Text(text.into_bytes().into()));
    }
    let len = len - 1;
    if len > b.max_stack() {
        return Ok(Part::Long(len));
    }
    b.charge(len)?;
    let mut text = Vec::with_capacity(len);
    for name in lines.iter().rev().filter_map(|l| resolve(l).ok()) {
        push_next(&mut text, name);
    }
    Ok(Part::Text(text.into()))
}

/// Appends `name` as the next frame of `buf` (after a separator unless `buf` is empty).
pub(crate) fn push_next(buf: &mut Vec<u8>, name: &str) {
    if !buf.is_empty() {
        buf.push(SEP);
    }
    push_frame(buf, name);
}

/// A frame name as folded text: `;` (the frame separator) becomes `:`, line breaks become
/// spaces, an empty name `[unknown]`.
fn push_frame(buf: &mut Vec<u8>, name: &str) {
    if name.is_empty() {
        buf.extend_from_slice(UNKNOWN);
        return;
    }
    buf.extend(name.bytes().map(|b| match b {
        b';' => b':',
        b'\n' | b'\r' => b' ',
        b => b,
    }));
}

/// A non-negative finite number as an exact weight (rounded to the 9 decimals a weight
/// keeps); `None` for a negative, infinite or NaN one.
pub(crate) fn weight_of_f64(v: f64) -> Option<Weight> {
    if !v.is_finite() || v < 0.0 {
        return None;
    }
    Weight::parse(format!("{v:.9}").as_bytes()).ok()
}
