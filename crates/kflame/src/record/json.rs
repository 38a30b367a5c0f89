//! The `.json` event stream: one JSON object per line and per event, in the schema of every
//! kflame event stream ([`crate::events`]):
//!
//! ```text
//! {"ts":5.000010101,"cpu":0,"pid":42,"comm":"burn","duration_ns":10101010,"stack":["burn","main","f"],"event":"cpu-clock","weight":1}
//! ```
//! `ts` is CLOCK_MONOTONIC in seconds (9 fraction digits); `duration_ns` is `null` for
//! events without one; the unit of `weight` is the recording's (`# unit=` of the folded
//! output). A mode that keeps latency histograms (`--runq`) ends with one line per CPU,
//! its non-empty log2 buckets in µs (`lo` included, `hi` excluded), as bcc's `runqlat`:
//!
//! ```text
//! {"histogram":"runq","cpu":0,"unit":"us","buckets":[{"lo":0,"hi":2,"count":12},{"lo":4,"hi":8,"count":3}]}
//! ```

use std::io::{self, Write};

use super::{CpuHistogram, Event};
use crate::events::{EventSink, JsonLines};
use crate::fold::Meta;

/// Writes every event as one JSON line (through [`JsonLines`], the sink of every kflame event
/// stream).
pub fn write_events<W: Write>(out: &mut W, events: &[Event], meta: &Meta) -> io::Result<()> {
    let name = meta.event.as_deref().unwrap_or("");
    let mut sink = JsonLines::new(out);
    for e in events {
        sink.event(&e.record(name));
    }
    sink.finish().map(drop)
}

/// Writes one JSON line per CPU histogram of the mode `name`.
pub fn write_histograms<W: Write>(out: &mut W, name: &str, histograms: &[CpuHistogram]) -> io::Result<()> {
    for h in histograms {
        write!(out, "{{\"histogram\":\"{name}\",\"cpu\":{},\"unit\":\"us\",\"buckets\":[", h.cpu)?;
        let mut first = true;
        for (slot, &count) in h.log2_us.iter().enumerate().filter(|(_, c)| **c > 0) {
            let lo = if slot == 0 { 0 } else { 1u64 << slot };
            let hi = 1u64 << (slot + 1);
            let sep = if first { "" } else { "," };
            write!(out, "{sep}{{\"lo\":{lo},\"hi\":{hi},\"count\":{count}}}")?;
            first = false;
        }
        out.write_all(b"]}\n")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fold::Unit;

    /// pid -1 (a task the kernel could no longer name) is an unknown pid, as in every other
    /// event stream, not 4294967295.
    #[test]
    fn unknown_pid_is_null() {
        let e = Event {
            kind: crate::events::EventKind::Sample,
            ts: 1,
            cpu: 0,
            pid: u32::MAX,
            tid: u32::MAX,
            comm: ":-1".into(),
            duration_ns: None,
            weight: 1,
            stack: vec![":-1".into()],
        };
        let mut out = Vec::new();
        write_events(&mut out, &[e], &Meta::default()).unwrap();
        let line = String::from_utf8(out).unwrap();
        assert!(line.contains(",\"pid\":null,\"comm\":\":-1\","), "{line}");
    }

    #[test]
    fn escapes_untrusted_names() {
        let e = Event {
            kind: crate::events::EventKind::Sample,
            ts: 5,
            cpu: 1,
            pid: 2,
            tid: 3,
            comm: "a\"b\\c\u{1}".into(),
            duration_ns: None,
            weight: 4096,
            stack: vec!["x".into(), "y\n".into()],
        };
        let mut out = Vec::new();
        write_events(&mut out, &[e], &Meta { unit: Unit::Bytes, event: Some("kmem:mm_page_alloc".into()) })
            .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"ts\":0.000000005,\"cpu\":1,\"pid\":2,\"comm\":\"a\\\"b\\\\c\\u0001\",\"duration_ns\":null,\
             \"stack\":[\"x\",\"y\\n\"],\"event\":\"kmem:mm_page_alloc\",\"weight\":4096}\n"
        );
    }

    /// Slot i of a log2 µs histogram is [2^i, 2^(i+1)) µs, slot 0 from 0 (bcc's runqlat
    /// prints them `0 -> 1`, `2 -> 3`, `4 -> 7`); empty slots are left out.
    #[test]
    fn histograms_are_one_line_per_cpu() {
        let hs =
            [CpuHistogram { cpu: 0, log2_us: vec![12, 0, 3] }, CpuHistogram { cpu: 1, log2_us: vec![0; 4] }];
        let mut out = Vec::new();
        write_histograms(&mut out, "runq", &hs).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"histogram\":\"runq\",\"cpu\":0,\"unit\":\"us\",\"buckets\":[{\"lo\":0,\"hi\":2,\"count\":12},{\"lo\":4,\"hi\":8,\"count\":3}]}\n\
             {\"histogram\":\"runq\",\"cpu\":1,\"unit\":\"us\",\"buckets\":[]}\n"
        );
    }
}
