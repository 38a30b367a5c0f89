//! The folded-stack model: the one data structure every collapser produces and every
//! renderer consumes.
//!
//! A folded stack is a line `root;caller;...;leaf WEIGHT` (FlameGraph's format). Stacks are
//! kept as bytes, exactly as the producer wrote them (symbol and comm names are not always
//! UTF-8); renderers decode them lossily for display only.
//!
//! Two aggregations exist:
//! - [`StackCounts`]: stack → summed weight, written sorted (the default; deterministic and
//!   independent of thread count and input order);
//! - [`OrderedStacks`]: stacks in input (time) order with identical *consecutive* stacks
//!   merged, for flame charts.

mod counts;
pub mod diff;
mod meta;
pub mod read;
pub mod tree;
mod weight;
pub mod write;

pub use counts::{OrderedStacks, StackCounts, Stacks, common_prefix};
pub use meta::{Meta, MetaMerge, Unit, UnitConflict};
pub use weight::{Weight, WeightError};
