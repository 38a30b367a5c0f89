//! Metadata that travels with folded output: the unit of the weights, the event.
//!
//! Folded files stay FlameGraph-compatible: metadata is written as comment lines at the top,
//! `# key=value`, one per line. `flamegraph.pl` and inferno skip such lines as unparsable;
//! kflame reads them back:
//!
//! ```text
//! # unit=bytes
//! # event=kmem:mm_page_alloc
//! swapper;...;__alloc_pages 4096
//! ```
//!
//! A header is written whenever the producer declares a unit, except perf periods, so that
//! the output of `kflame collapse` on `perf script` text stays byte for byte that of
//! `stackcollapse-perf.pl`. A file without a header ([`Unit::Unspecified`], what FlameGraph's
//! tools write) is taken as sample counts or periods: it merges with `samples` or `period`
//! files, and is refused next to bytes, nanoseconds or any other unit ([`MetaMerge`]).

use std::fmt;

/// What one unit of weight means.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Unit {
    /// Not declared: folded text without a `# unit=` header, as FlameGraph's tools write it.
    /// Sample counts or perf periods; shown as "samples".
    #[default]
    Unspecified,
    /// Sample counts, declared (`# unit=samples`).
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
    /// The name used in `# unit=` headers and on the command line ("samples" for
    /// [`Unit::Unspecified`], which is never written).
    pub fn name(&self) -> &str {
        match self {
            Unit::Unspecified | Unit::Samples => "samples",
            Unit::Period => "period",
            Unit::Bytes => "bytes",
            Unit::Nanoseconds => "ns",
            Unit::Events => "events",
            Unit::Other(s) => s,
        }
    }

    /// Reads a unit name (`samples`, `period`, `bytes`, `ns`, `events`, or anything else;
    /// empty for none).
    pub fn from_name(s: &str) -> Unit {
        match s.trim() {
            "" => Unit::Unspecified,
            "samples" | "sample" => Unit::Samples,
            "period" | "periods" => Unit::Period,
            "bytes" | "byte" | "B" => Unit::Bytes,
            "ns" | "nanoseconds" | "nsecs" => Unit::Nanoseconds,
            "events" | "count" | "counts" => Unit::Events,
            other => Unit::Other(other.to_string()),
        }
    }

    /// True for the weights FlameGraph's tools assume: sample counts or perf periods,
    /// declared or not.
    pub fn is_flamegraph_native(&self) -> bool {
        matches!(self, Unit::Unspecified | Unit::Samples | Unit::Period)
    }

    /// True when weights in `self` and in `other` can be added: the same unit, or an
    /// undeclared one next to samples or periods.
    pub fn adds_to(&self, other: &Unit) -> bool {
        self == other
            || (*self == Unit::Unspecified && other.is_flamegraph_native())
            || (*other == Unit::Unspecified && self.is_flamegraph_native())
    }

    /// How the unit is described in messages: `bytes`, or `no unit header (samples)`.
    pub fn describe(&self) -> String {
        match self {
            Unit::Unspecified => "no unit header (sample counts, as FlameGraph's tools write)".to_string(),
            u => format!("unit {u}"),
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

    /// True when nothing is declared (no unit, no event).
    pub fn is_default(&self) -> bool {
        self.unit == Unit::Unspecified && self.event.is_none()
    }

    /// True when no header is written: the unit is undeclared or perf periods (which
    /// FlameGraph's tools assume, so that perf script output stays byte-compatible).
    pub fn is_flamegraph_native(&self) -> bool {
        matches!(self.unit, Unit::Unspecified | Unit::Period)
    }

    /// The header lines, each ending in `\n`; empty when the unit is undeclared or periods.
    pub fn header(&self) -> String {
        if self.is_flamegraph_native() { String::new() } else { self.declared_header() }
    }

    /// The unit line and, when known, the event line, whatever the unit: for output that
    /// always says what it measured (a recording, a stored history), so that kflame refuses
    /// to merge it with other units. flamegraph.pl skips the lines.
    pub fn declared_header(&self) -> String {
        let mut s = format!("# unit={}\n", self.unit);
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

    /// Merges metadata of another input; units that cannot be added ([`Unit::adds_to`]) are
    /// an error text. [`MetaMerge`] does the same for named inputs, with messages naming both.
    pub fn merge(&mut self, other: &Meta) -> Result<(), String> {
        if !self.unit.adds_to(&other.unit) {
            return Err(format!(
                "inputs have different units ({} and {}); their weights cannot be added",
                self.unit.describe(),
                other.unit.describe()
            ));
        }
        self.absorb(other);
        Ok(())
    }

    /// Takes `other`'s unit when this one is undeclared; keeps the event both agree on.
    fn absorb(&mut self, other: &Meta) {
        if self.unit == Unit::Unspecified {
            self.unit = other.unit.clone();
        }
        self.event = match (self.event.take(), &other.event) {
            (None, e) => e.clone(),
            (Some(a), Some(b)) if a != *b => None,
            (a, _) => a,
        };
    }
}

/// Two inputs whose units cannot be added.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitConflict {
    /// The earlier input (the one that declared the unit in use) and its unit.
    pub first: (String, Unit),
    /// The input that conflicts with it, and its unit.
    pub second: (String, Unit),
}

impl UnitConflict {
    /// `a.folded has unit samples and b.folded has unit bytes`.
    pub fn inputs(&self) -> String {
        let ((a, ua), (b, ub)) = (&self.first, &self.second);
        format!("{a} has {} and {b} has {}", ua.describe(), ub.describe())
    }
}

impl fmt::Display for UnitConflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: their weights cannot be added", self.inputs())
    }
}

impl std::error::Error for UnitConflict {}

/// Merges the metadata of several named inputs (files), remembering which input set the
/// unit, so that a conflict names both inputs and both units.
///
/// Units add up when they are equal, or when one input has no header and the other is in
/// samples or periods ([`Unit::adds_to`]). Otherwise [`MetaMerge::add`] fails, unless mixing
/// is allowed: then an input without a header is counted in the other's unit, and two
/// declared units that differ leave the result without a unit (plain numbers); either way a
/// warning says so.
#[derive(Clone, Debug, Default)]
pub struct MetaMerge {
    meta: Meta,
    /// The input that declared `meta.unit`, or the first input without a header.
    unit_from: Option<String>,
    allow_mixed: bool,
    /// Set once two declared units were mixed: the result has no unit from then on.
    mixed: bool,
}

impl MetaMerge {
    /// A merger; `allow_mixed` turns unit conflicts into warnings.
    pub fn new(allow_mixed: bool) -> MetaMerge {
        MetaMerge { allow_mixed, ..MetaMerge::default() }
    }

    /// Adds the metadata of input `name`. `has_stacks` is false for an input that
    /// contributed no weight (empty): its unit cannot conflict, and is only used when no other
    /// input declares one. Returns a warning to show when units were mixed on request.
    pub fn add(&mut self, name: &str, meta: &Meta, has_stacks: bool) -> Result<Option<String>, UnitConflict> {
        if !has_stacks {
            if self.unit_from.is_none() && meta.unit != Unit::Unspecified {
                self.meta.unit = meta.unit.clone();
            }
            return Ok(None);
        }
        if self.mixed {
            self.meta.event = None;
            return Ok(None);
        }
        let Some(from) = self.unit_from.clone() else {
            self.meta = meta.clone();
            self.unit_from = Some(name.to_string());
            return Ok(None);
        };
        let current = self.meta.unit.clone();
        if current.adds_to(&meta.unit) {
            if current == Unit::Unspecified && meta.unit != Unit::Unspecified {
                self.unit_from = Some(name.to_string());
            }
            self.meta.absorb(meta);
            return Ok(None);
        }
        let conflict = UnitConflict {
            first: (from.clone(), current.clone()),
            second: (name.to_string(), meta.unit.clone()),
        };
        if !self.allow_mixed {
            return Err(conflict);
        }
        let warning = if current == Unit::Unspecified {
            self.meta.unit = meta.unit.clone();
            self.unit_from = Some(name.to_string());
            format!(
                "{}; added anyway as asked, the weights of {from} counted as {}",
                conflict.inputs(),
                meta.unit
            )
        } else if meta.unit == Unit::Unspecified {
            format!(
                "{}; added anyway as asked, the weights of {name} counted as {current}",
                conflict.inputs()
            )
        } else {
            self.mixed = true;
            self.meta = Meta::default();
            format!("{}; added anyway as asked, as plain numbers without a unit", conflict.inputs())
        };
        Ok(Some(warning))
    }

    /// The merged metadata.
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// The merged metadata, by value.
    pub fn into_meta(self) -> Meta {
        self.meta
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
        let cpu = Meta { unit: Unit::Samples, event: Some("cpu-clock".into()) };
        assert_eq!(cpu.header(), "# unit=samples\n# event=cpu-clock\n", "declared samples are written");
        let mut back = Meta::default();
        assert!(back.apply_comment(b"# unit=samples"));
        assert_eq!(back.unit, Unit::Samples);
    }

    fn meta(unit: Unit) -> Meta {
        Meta::with_unit(unit)
    }

    #[test]
    fn undeclared_units_add_to_samples_and_periods_only() {
        let (none, samples, period, bytes) =
            (meta(Unit::Unspecified), meta(Unit::Samples), meta(Unit::Period), meta(Unit::Bytes));
        let mut m = none.clone();
        m.merge(&samples).unwrap();
        assert_eq!(m.unit, Unit::Samples);
        let mut m = period.clone();
        m.merge(&none).unwrap();
        assert_eq!(m.unit, Unit::Period);
        let mut m = none.clone();
        let e = m.merge(&bytes).unwrap_err();
        assert!(e.contains("no unit header") && e.contains("unit bytes"), "{e}");
        assert!(samples.clone().merge(&bytes).is_err());
        assert!(samples.clone().merge(&period).is_err());
    }

    #[test]
    fn conflicts_name_both_inputs_and_units() {
        let mut m = MetaMerge::new(false);
        assert_eq!(m.add("cpu.folded", &meta(Unit::Samples), true), Ok(None));
        assert_eq!(m.add("old.folded", &meta(Unit::Unspecified), true), Ok(None));
        let e = m.add("mem.folded", &Meta { unit: Unit::Bytes, event: None }, true).unwrap_err();
        assert_eq!(e.first, ("cpu.folded".to_string(), Unit::Samples));
        assert_eq!(e.second, ("mem.folded".to_string(), Unit::Bytes));
        assert_eq!(
            e.to_string(),
            "cpu.folded has unit samples and mem.folded has unit bytes: their weights cannot be added"
        );
        assert_eq!(m.meta().unit, Unit::Samples);

        // The input that declared the unit is named, not the first one.
        let mut m = MetaMerge::new(false);
        m.add("flamegraph-pl.folded", &meta(Unit::Unspecified), true).unwrap();
        m.add("a.folded", &meta(Unit::Samples), true).unwrap();
        let e = m.add("b.folded", &meta(Unit::Nanoseconds), true).unwrap_err();
        assert_eq!(e.first.0, "a.folded");

        // Without a header next to bytes: refused too, naming the headerless file.
        let mut m = MetaMerge::new(false);
        m.add("perf.folded", &meta(Unit::Unspecified), true).unwrap();
        let e = m.add("mem.folded", &meta(Unit::Bytes), true).unwrap_err();
        assert!(e.to_string().starts_with("perf.folded has no unit header"), "{e}");
    }

    #[test]
    fn empty_inputs_do_not_conflict() {
        let mut m = MetaMerge::new(false);
        m.add("empty.folded", &meta(Unit::Unspecified), false).unwrap();
        m.add("mem.folded", &meta(Unit::Bytes), true).unwrap();
        m.add("empty-ns.folded", &meta(Unit::Nanoseconds), false).unwrap();
        assert_eq!(m.meta().unit, Unit::Bytes);
        let mut m = MetaMerge::new(false);
        m.add("empty-bytes.folded", &meta(Unit::Bytes), false).unwrap();
        assert_eq!(m.meta().unit, Unit::Bytes, "the header of an empty input is kept when alone");
    }

    #[test]
    fn mixing_on_request_warns() {
        let mut m = MetaMerge::new(true);
        m.add("perf.folded", &meta(Unit::Unspecified), true).unwrap();
        let w = m.add("mem.folded", &meta(Unit::Bytes), true).unwrap().unwrap();
        assert!(w.contains("added anyway as asked, the weights of perf.folded counted as bytes"), "{w}");
        assert_eq!(m.meta().unit, Unit::Bytes);
        let w = m.add("lat.folded", &meta(Unit::Nanoseconds), true).unwrap().unwrap();
        assert!(w.starts_with("mem.folded has unit bytes and lat.folded has unit ns"), "{w}");
        assert!(w.contains("plain numbers"), "{w}");
        assert_eq!(m.meta().unit, Unit::Unspecified);
        assert_eq!(m.add("more.folded", &meta(Unit::Bytes), true), Ok(None), "once mixed, stays unitless");
        assert_eq!(m.into_meta(), Meta::default());
    }

    #[test]
    fn events_are_kept_when_inputs_agree() {
        let mut m = MetaMerge::new(false);
        let cpu = Meta { unit: Unit::Samples, event: Some("cpu-clock".into()) };
        m.add("a", &cpu, true).unwrap();
        m.add("b", &cpu, true).unwrap();
        assert_eq!(m.meta(), &cpu);
        m.add("c", &Meta { unit: Unit::Samples, event: Some("cycles".into()) }, true).unwrap();
        assert_eq!(m.meta().event, None);
    }
}
