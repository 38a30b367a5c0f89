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

/// Bounds on what a file may make a reader allocate.
#[derive(Copy, Clone, Debug)]
pub struct Limits {
    /// A gzipped profile larger than this once decompressed is refused.
    pub max_decompressed: usize,
    /// A stack whose folded text is longer is skipped and counted.
    pub max_stack_bytes: usize,
    /// All stacks' folded text together: a profile whose stacks need more is refused.
    pub max_total_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_decompressed: 4 << 30,
            max_stack_bytes: crate::text::MAX_LINE,
            max_total_bytes: usize::MAX,
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
    #[error("the profile's stacks take more than {0} bytes of folded text; refused")]
    TooLarge(usize),
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

/// Stacks being built, with the limits of [`Limits`] applied.
pub(crate) struct Builder {
    pub(crate) stacks: Stacks,
    pub(crate) diag: Diagnostics,
    limits: Limits,
    total_bytes: usize,
    buf: Vec<u8>,
}

impl Builder {
    pub(crate) fn new(time_order: bool, limits: &Limits) -> Builder {
        Builder {
            stacks: if time_order {
                Stacks::Ordered(OrderedStacks::new())
            } else {
                Stacks::Counts(StackCounts::new())
            },
            diag: Diagnostics::new(),
            limits: *limits,
            total_bytes: 0,
            buf: Vec::new(),
        }
    }

    /// Adds the stack of `frames` (root first) with `weight`; `index` is the sample's
    /// number for messages.
    pub(crate) fn add<'a>(
        &mut self,
        index: u64,
        frames: impl Iterator<Item = &'a str>,
        weight: Weight,
    ) -> Result<(), ImportError> {
        self.buf.clear();
        for (i, f) in frames.enumerate() {
            if i > 0 {
                self.buf.push(b';');
            }
            push_frame(&mut self.buf, f);
            if self.buf.len() > self.limits.max_stack_bytes {
                let max = self.limits.max_stack_bytes;
                self.diag.skip("stack too long", index, || format!("a stack of at most {max} bytes"));
                return Ok(());
            }
        }
        if self.buf.is_empty() {
            self.buf.extend_from_slice(b"[no stack]");
        }
        let new = self.stacks.len();
        self.stacks.add(&self.buf, weight);
        if self.stacks.len() > new {
            self.total_bytes = self.total_bytes.saturating_add(self.buf.len());
            if self.total_bytes > self.limits.max_total_bytes {
                return Err(ImportError::TooLarge(self.limits.max_total_bytes));
            }
        }
        Ok(())
    }
}

/// A frame name as folded text: `;` (the frame separator) becomes `:`, line breaks become
/// spaces, an empty name `[unknown]`.
fn push_frame(buf: &mut Vec<u8>, name: &str) {
    if name.is_empty() {
        buf.extend_from_slice(b"[unknown]");
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
