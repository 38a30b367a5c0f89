//! The `.json` event stream: one JSON object per line and per event, in the schema of every
//! kflame event stream ([`crate::events`]):
//!
//! ```text
//! {"ts":5.000010101,"cpu":0,"pid":42,"comm":"burn","duration_ns":10101010,"stack":["burn","main","f"],"event":"cpu-clock","weight":1}
//! ```
//! `ts` is CLOCK_MONOTONIC in seconds (9 fraction digits); `duration_ns` is `null` for
//! events without one; the unit of `weight` is the recording's (`# unit=` of the folded
//! output). A mode aggregated in the kernel (`--off-cpu`, `--locks`, `--runq`, `--bio` by
//! BPF) ends with one line per latency histogram (per task state, lock kind, CPU, disk), its
//! non-empty buckets of [`crate::latency`] in ns (`lo` included, `hi` excluded), the largest
//! wait and the sum:
//!
//! ```text
//! {"histogram":"runq","label":"cpu0","unit":"ns","buckets":[{"lo":1024,"hi":1280,"count":12}],"count":12,"max_ns":1210,"sum_ns":13400}
//! ```

use std::io::{self, Write};

use super::Event;
use crate::events::{EventSink, JsonLines};
use crate::fold::Meta;
use crate::latency::{self, LatencyReading};

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

/// Writes one JSON line per latency histogram.
pub fn write_histograms<W: Write>(out: &mut W, histograms: &[LatencyReading]) -> io::Result<()> {
    for h in histograms {
        let label = serde_json::to_string(&h.label).map_err(io::Error::other)?;
        write!(out, "{{\"histogram\":\"{}\",\"label\":{label},\"unit\":\"ns\",\"buckets\":[", h.kind)?;
        let mut first = true;
        for (slot, &count) in h.histogram.counts.iter().enumerate().filter(|(_, c)| **c > 0) {
            let (lo, hi) = (latency::slot_lower(slot), latency::slot_upper(slot));
            let sep = if first { "" } else { "," };
            write!(out, "{sep}{{\"lo\":{lo},\"hi\":{hi},\"count\":{count}}}")?;
            first = false;
        }
        let (n, max, sum) = (h.histogram.total(), h.histogram.max_ns, h.histogram.sum_ns);
        writeln!(out, "],\"count\":{n},\"max_ns\":{max},\"sum_ns\":{sum}}}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fold::Unit;
    use crate::latency::LatencyKind;

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
    fn histograms_are_one_line_per_label() {
        let mut h = crate::latency::Histogram::default();
        for ns in [1100, 1200, 5000] {
            h.record(ns);
        }
        let hs = [
            LatencyReading { kind: LatencyKind::Runq, label: "cpu0".into(), histogram: h, slow: 0 },
            LatencyReading {
                kind: LatencyKind::Lock,
                label: "rwsem:W".into(),
                histogram: crate::latency::Histogram::default(),
                slow: 0,
            },
        ];
        let mut out = Vec::new();
        write_histograms(&mut out, &hs).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"histogram\":\"runq\",\"label\":\"cpu0\",\"unit\":\"ns\",\"buckets\":[{\"lo\":1024,\"hi\":1280,\"count\":2},\
             {\"lo\":4096,\"hi\":5120,\"count\":1}],\"count\":3,\"max_ns\":5000,\"sum_ns\":7300}\n\
             {\"histogram\":\"lock\",\"label\":\"rwsem:W\",\"unit\":\"ns\",\"buckets\":[],\"count\":0,\"max_ns\":0,\"sum_ns\":0}\n"
        );
    }
}
