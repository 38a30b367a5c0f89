//! Flame graph rendering: folded stacks → frames → SVG.
//!
//! ```text
//! folded text ──▶ Profile (interned frames, FlameGraph order or time order)
//!             ──▶ layout (merged frames, exact positions, narrow frames pruned)
//!             ──▶ svg (colours from a palette, titles, embedded script and style)
//! ```
//!
//! [`Options`] carries every `flamegraph.pl` option with the same meaning. Output is
//! deterministic for the same input and options: colours come from a seeded generator
//! unless [`palette::Variation`] says otherwise. The interactive part of the SVG (zoom,
//! search, tooltips, URL state) is plain JavaScript in `assets/`, embedded at build time.

pub mod attr;
pub mod json;
pub mod layout;
pub mod options;
pub mod output;
pub mod palette;
pub mod profile;
pub mod svg;
pub mod text;

pub use options::{MinWidth, NameAttrs, Options};
pub use output::OutputKind;
pub use palette::{Background, Palette, PaletteMap, Variation};
pub use profile::{Profile, ReadError};
pub use svg::{Summary, write_svg};

pub mod html;
