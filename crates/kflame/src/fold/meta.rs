//! Metadata that travels with folded output: the unit of the weights, the event.
//!
//! Folded files stay FlameGraph-compatible: metadata is written as comment lines at the top,
//! `# key=value`, one per line, and only when the weights are not what FlameGraph's tools
//! assume (sample counts or perf periods): bytes, nanoseconds, event counts. So the output of
//! `kflame collapse` on `perf script` text is byte for byte that of `stackcollapse-perf.pl`.
//! `flamegraph.pl` and inferno skip such lines as unparsable; kflame reads them back:
//!
//! ```text
//! # unit=bytes
//! # event=kmem:mm_page_alloc
//! swapper;...;__alloc_pages 4096
//! ```

use std::fmt;

/// What one unit of weight means.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Unit {
    /// Sample counts (the FlameGraph default, "samples").
    #[default]
    Samples,
    /// Summed event periods (perf's period column; for cpu-clock, nanoseconds of CPU).
    Period,
    /// Bytes (allocation sizes).
    Bytes,
    /// Nanoseconds of wall time (latency, off-CPU time).
    Nanoseconds,
    /// Event counts (one per event, not sampled).
    Events,
    /// Anything else, named by the producer.
    Other(String),
}

impl Unit {
    /// The name used in `# unit=` headers and on the command line.
    pub fn name(&self) -> &str {
        match self {
            Unit::Samples => "samples",
            Unit::Period => "period",
            Unit::Bytes => "bytes",
            Unit::Nanoseconds => "ns",
            Unit::Events => "events",
            Unit::Other(s) => s,
        }
    }

    /// Reads a unit name (`samples`, `period`, `bytes`, `ns`, `events`, or anything else).
    pub fn from_name(s: &str) -> Unit {
        match s.trim() {
            "samples" | "sample" | "" => Unit::Samples,
            "period" | "periods" => Unit::Period,
            "bytes" | "byte" | "B" => Unit::Bytes,
            "ns" | "nanoseconds" | "nsecs" => Unit::Nanoseconds,
            "events" | "count" | "counts" => Unit::Events,
            other => Unit::Other(other.to_string()),
        }
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Metadata of a folded profile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    /// Unit of the weights.
    pub unit: Unit,
    /// The event the stacks were taken on (`cpu-clock`, `kmem:mm_page_alloc`), if known.
    pub event: Option<String>,
}

impl Meta {
    /// Metadata with just a unit.
    pub fn with_unit(unit: Unit) -> Meta {
        Meta { unit, event: None }
    }

    /// True when nothing needs to be written (plain samples, no event).
    pub fn is_default(&self) -> bool {
        self.unit == Unit::Samples && self.event.is_none()
    }

    /// True when the weights are what FlameGraph's tools assume (samples or perf periods),
    /// so that no header is written.
    pub fn is_flamegraph_native(&self) -> bool {
        matches!(self.unit, Unit::Samples | Unit::Period)
    }

    /// The header lines, each ending in `\n`; empty when the weights are samples or periods.
    pub fn header(&self) -> String {
        let mut s = String::new();
        if self.is_flamegraph_native() {
            return s;
        }
        s.push_str(&format!("# unit={}\n", self.unit));
        if let Some(e) = &self.event {
            s.push_str(&format!("# event={}\n", e.replace('\n', " ")));
        }
        s
    }

    /// Applies one `# key=value` comment line; returns false when it is not metadata.
    pub fn apply_comment(&mut self, line: &[u8]) -> bool {
        let Some(rest) = line.strip_prefix(b"#") else {
            return false;
        };
        let rest = String::from_utf8_lossy(rest);
        let Some((key, value)) = rest.trim().split_once('=') else {
            return false;
        };
        match key.trim() {
            "unit" => self.unit = Unit::from_name(value),
            "event" => self.event = Some(value.trim().to_string()),
            _ => return false,
        }
        true
    }

    /// Merges metadata of another input; a conflicting unit is reported as an error text.
    pub fn merge(&mut self, other: &Meta) -> Result<(), String> {
        if self.is_default() {
            *self = other.clone();
            return Ok(());
        }
        if other.is_default() {
            return Ok(());
        }
        if self.unit != other.unit {
            return Err(format!(
                "inputs have different units ({} and {}); their weights cannot be added",
                self.unit, other.unit
            ));
        }
        if self.event != other.event {
            self.event = None;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip() {
        let m = Meta { unit: Unit::Bytes, event: Some("kmem:mm_page_alloc".into()) };
        let mut back = Meta::default();
        for line in m.header().lines() {
            assert!(back.apply_comment(line.as_bytes()));
        }
        assert_eq!(back, m);
        assert_eq!(Meta::default().header(), "");
        let period = Meta { unit: Unit::Period, event: Some("cpu-clock".into()) };
        assert_eq!(period.header(), "", "perf periods stay byte-compatible with FlameGraph");
    }
}
