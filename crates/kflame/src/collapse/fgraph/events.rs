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
//! times; more with `--latency total`). The keys are those of the other trace collapsers'
//! per-event records.

use super::track::TopCall;

/// Appends the JSON line of one top-level call to `out`.
pub(crate) fn write_json(
    out: &mut Vec<u8>,
    cpu: u32,
    pid: Option<u32>,
    comm: Option<&[u8]>,
    call: &TopCall,
    duration_ns: u64,
    weight: u64,
) {
    out.extend_from_slice(b"{\"ts\":");
    match call.start_ns {
        Some(ns) => {
            out.extend_from_slice(format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000).as_bytes())
        }
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(format!(",\"cpu\":{cpu},\"pid\":").as_bytes());
    match pid {
        Some(p) => out.extend_from_slice(p.to_string().as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"comm\":");
    match comm {
        Some(c) => json_string(out, c),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(format!(",\"duration_ns\":{duration_ns},\"stack\":[").as_bytes());
    for (i, &id) in call.root.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        json_string(out, super::frame_name(call, id));
    }
    out.extend_from_slice(format!("],\"event\":\"function_graph\",\"weight\":{weight}}}\n").as_bytes());
}

/// Writes `s` as a JSON string (invalid UTF-8 replaced, control characters escaped).
pub(crate) fn json_string(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for c in String::from_utf8_lossy(s).chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            c if (c as u32) < 0x20 => out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes()),
            c => {
                let mut b = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
        }
    }
    out.push(b'"');
}

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

    #[test]
    fn escapes_untrusted_text() {
        let mut v = Vec::new();
        json_string(&mut v, b"a\"b\\c\n\xff");
        assert_eq!(String::from_utf8(v).unwrap(), "\"a\\\"b\\\\c\\u000a\u{fffd}\"");
    }
}
