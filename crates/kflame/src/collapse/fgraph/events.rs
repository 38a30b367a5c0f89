//! Per-call records as JSON lines.
//!
//! One object per completed top-level call, on one line:
//! ```json
//! {"ts":1718.797855000,"cpu":0,"pid":1757,"comm":"sysctl","duration_ns":1789,"stack":["__kmalloc_track_caller"],"event":"function_graph","weight":1789}
//! ```
//! `ts` is the start time in seconds (`null` when the trace has no time column), `pid` and
//! `comm` are `null` when the trace does not name the task, `stack` is the path of the
//! top-level frame (root first: more than one frame only when callers were outside the
//! trace), `weight` what the call adds to the folded output (its duration with self
//! times; more with `--latency total`). Written by [`crate::collapse::events_json`], like
//! every other per-event record.
