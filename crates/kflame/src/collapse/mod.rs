//! Collapsers: one file per input format, all driven by one [`engine`].
//!
//! A collapser is a line-oriented state machine implementing [`Collapse`]. The engine feeds
//! it blocks of whole lines and owns everything else: reading, cutting the input at record
//! boundaries, running chunks on several threads, counting lines, merging results
//! deterministically. A format gets multi-threading by answering [`Collapse::split_point`]
//! and [`Collapse::fork`]; formats whose records depend on each other (event/stack pairing,
//! function_graph nesting) simply don't, and run sequentially.
//!
//! Adding a format: a file here implementing [`Collapse`], a variant of [`Format`] with its
//! detector, a fixture folder under `tests/data/`, a fuzz target.

pub mod bcc;
pub mod bpftrace;

pub mod crash;
pub mod engine;
pub mod events_json;
pub mod fgraph;
pub mod folded;
mod format;
pub mod ftrace;
pub mod kernel_log;
pub mod options;
pub mod outliers;
pub mod pairing;
pub mod perf;
pub mod proc_stacks;
pub mod stap;
#[cfg(test)]
pub(crate) mod testkit;

pub use crate::text::lines;

pub use engine::{Engine, Order};
pub use format::{Content, Format, content, detect, is_perf_data, looks_binary};

use crate::diag::Diagnostics;
use crate::fold::{Meta, Stacks};

/// What a collapser produces: stacks, diagnostics and metadata.
#[derive(Debug, Clone)]
pub struct Output {
    /// The collapsed stacks.
    pub stacks: Stacks,
    /// What was skipped or worth noting.
    pub diag: Diagnostics,
    /// Unit and event of the weights (set by the engine from [`Collapse::meta`] at the end).
    pub meta: Meta,
}

impl Output {
    /// An empty output aggregating in the given order.
    pub fn new(order: Order) -> Output {
        Output { stacks: order.empty_stacks(), diag: Diagnostics::new(), meta: Meta::default() }
    }
}

/// A parser for one input format.
///
/// The engine calls [`collapse`](Collapse::collapse) with consecutive blocks of whole lines
/// (each ending in `\n`, except possibly the last block of the input), then
/// [`finish`](Collapse::finish) at the end of input. In parallel mode every chunk is
/// followed by `finish`, and a worker's instance may then receive a later, non-adjacent
/// chunk: `finish` must flush the pending record and reset per-record state.
pub trait Collapse: Send {
    /// Parses a block of lines; `first_line` is the 1-based line number of its first line.
    fn collapse(&mut self, chunk: &[u8], first_line: u64, out: &mut Output);

    /// End of input (or of a parallel chunk): emits any pending record.
    fn finish(&mut self, out: &mut Output);

    /// Metadata of the output (unit, event), known once the input has been seen.
    fn meta(&self) -> Meta {
        Meta::default()
    }

    /// Looks at the head of the input before anything is collapsed (e.g. to choose the
    /// default event filter), so that forked workers agree.
    fn prepare(&mut self, _head: &[u8]) {}

    /// Where `buf` (whole lines) can be cut so that the part before and the part after
    /// collapse independently: an offset just after a `\n`, or `None` if no such place
    /// exists in `buf`. Only consulted when [`fork`](Collapse::fork) returns `Some`.
    fn split_point(&self, _buf: &[u8]) -> Option<usize> {
        None
    }

    /// A fresh instance with the same configuration, for another worker thread. `None`
    /// (the default) makes the format sequential.
    fn fork(&self) -> Option<Box<dyn Collapse>> {
        None
    }
}
