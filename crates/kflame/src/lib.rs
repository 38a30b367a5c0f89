//! # kflame
//!
//! Turns what the Linux kernel tells you (sampled stacks, trace events, oops logs, crash
//! dumps) into folded stacks, and folded stacks into flame graphs.
//!
//! The library owns mechanism, the `kflame` binary owns policy: nothing here parses command
//! lines, prints, or exits. Data flows one way:
//!
//! ```text
//! input bytes ──▶ collapse::<format> (via collapse::Engine) ──▶ fold::Stacks + Meta
//!             ──▶ fold::write (folded text) or a renderer
//! ```
//!
//! - [`fold`]: the folded-stack model (exact [`fold::Weight`]s, aggregation, read/write).
//! - [`collapse`]: the [`collapse::Collapse`] trait, the parallel engine, the format registry
//!   and one module per input format.
//! - [`diag`]: counted, located diagnostics for malformed input.
//! - [`events`]: per-event records (samples, system calls, off-CPU waits, calls) and the
//!   [`events::EventSink`] they go to (JSON lines, or a store).
//! - [`text`]: the line length cap every text reader keeps to, and a capped line reader.
//! - [`render`]: folded stacks to flame graphs (layout, palettes, interactive SVG, and the
//!   self-contained HTML viewer in `render::html`).
//! - [`report`]: kernel reports (oopses, warnings, hung tasks, lockups, sanitizer reports)
//!   extracted from logs as structured data, by a streaming extractor.
//! - [`symbols`]: kallsyms, ELF symbol tables and address spaces (perf's naming rules).
//! - [`perf_data`]: perf.data read directly into folded stacks.
//! - [`record`]: live recording through `perf_event_open`, tracefs and `/proc`.
//! - [`export`] / [`import`]: other tools' profile formats (speedscope, pprof, Chrome
//!   trace) written from folded stacks and read into them.

pub mod collapse;
pub mod diag;
pub mod events;
pub mod export;
pub mod fold;
#[doc(hidden)]
pub mod fuzzing;
pub mod import;
pub mod input;
pub mod latency;
pub mod open;
mod par;
pub mod perf_data;
mod proto;
pub mod record;
pub mod render;
pub mod report;
pub mod symbols;
pub mod text;
mod tracefmt;
mod unwind;
