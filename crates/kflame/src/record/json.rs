//! The `.json` event stream: one JSON object per line and per event.
//!
//! ```text
//! {"ts":1234,"cpu":0,"pid":42,"tid":42,"comm":"burn","event":"cpu-clock","unit":"samples","weight":1,"duration_ns":10101010,"stack":["burn","main","f"]}
//! ```
//! `ts` is CLOCK_MONOTONIC nanoseconds; `duration_ns` is `null` for events without one.

use std::io::{self, Write};

use super::Event;
use crate::fold::Meta;

/// Writes every event as one JSON line.
pub fn write_events<W: Write>(out: &mut W, events: &[Event], meta: &Meta) -> io::Result<()> {
    let event = meta.event.as_deref().unwrap_or("");
    let mut line = String::new();
    for e in events {
        line.clear();
        line.push_str(&format!(
            "{{\"ts\":{},\"cpu\":{},\"pid\":{},\"tid\":{},\"comm\":",
            e.ts, e.cpu, e.pid, e.tid
        ));
        push_str(&mut line, &e.comm);
        line.push_str(",\"event\":");
        push_str(&mut line, event);
        line.push_str(",\"unit\":");
        push_str(&mut line, meta.unit.name());
        line.push_str(&format!(",\"weight\":{},\"duration_ns\":", e.weight));
        match e.duration_ns {
            Some(d) => line.push_str(&d.to_string()),
            None => line.push_str("null"),
        }
        line.push_str(",\"stack\":[");
        for (i, f) in e.stack.iter().enumerate() {
            if i > 0 {
                line.push(',');
            }
            push_str(&mut line, f);
        }
        line.push_str("]}\n");
        out.write_all(line.as_bytes())?;
    }
    Ok(())
}

/// Appends `s` as a JSON string literal.
fn push_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fold::Unit;

    #[test]
    fn escapes_untrusted_names() {
        let e = Event {
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
            "{\"ts\":5,\"cpu\":1,\"pid\":2,\"tid\":3,\"comm\":\"a\\\"b\\\\c\\u0001\",\"event\":\"kmem:mm_page_alloc\",\
             \"unit\":\"bytes\",\"weight\":4096,\"duration_ns\":null,\"stack\":[\"x\",\"y\\n\"]}\n"
        );
    }
}
