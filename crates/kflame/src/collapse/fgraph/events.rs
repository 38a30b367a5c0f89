//! Per-call records as JSON lines, and human-readable durations.
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

/// `850ns`, `12.345us`, `2.345ms`, `1.234s`: three decimals in the largest fitting unit
/// (truncated, never rounded up into the next unit).
pub fn format_duration(ns: u64) -> String {
    let (div, unit) = match ns {
        0..1_000 => return format!("{ns}ns"),
        1_000..1_000_000 => (1_000, "us"),
        1_000_000..1_000_000_000 => (1_000_000, "ms"),
        _ => (1_000_000_000, "s"),
    };
    format!("{}.{:03}{unit}", ns / div, ns % div * 1000 / div)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(format_duration(850), "850ns");
        assert_eq!(format_duration(12_345), "12.345us");
        assert_eq!(format_duration(2_345_678), "2.345ms");
        assert_eq!(format_duration(33_998_590_000), "33.998s");
    }
}
