//! Weights and percentages as people read them: `1,234 samples`, `1.50 MiB`, `2.35 ms`.
//! (The embedded script formats tooltips with the same rules.)

use crate::fold::{Unit, Weight};

/// How weights are written in titles.
#[derive(Clone, Debug)]
pub struct WeightFormat {
    /// Unit of the weights.
    pub unit: Unit,
    /// Explicit count name (`--countname`); the unit's own wording otherwise.
    pub count_name: Option<String>,
    /// Scale applied to every displayed weight (`--factor`).
    pub factor: f64,
}

impl WeightFormat {
    /// The count name written after plain numbers.
    pub fn count_name(&self) -> &str {
        match (&self.count_name, &self.unit) {
            (Some(n), _) => n,
            (None, Unit::Samples) => "samples",
            (None, unit) => unit.name(),
        }
    }

    /// True when weights are shown with a scaled unit (bytes, ns) rather than a count name.
    pub fn scaled(&self) -> bool {
        self.count_name.is_none() && matches!(self.unit, Unit::Bytes | Unit::Nanoseconds)
    }

    /// `1,234 samples`, `1.50 MiB`, `2.35 ms`.
    pub fn weight(&self, w: Weight) -> String {
        let v = w.as_f64() * self.factor;
        match (&self.unit, self.scaled()) {
            (Unit::Bytes, true) => bytes(v),
            (Unit::Nanoseconds, true) => nanos(v),
            _ => format!("{} {}", self.number(w), self.count_name()),
        }
    }

    fn number(&self, w: Weight) -> String {
        if self.factor == 1.0 {
            let s = w.to_string();
            let (int, frac) = s.split_once('.').map_or((s.as_str(), None), |(i, f)| (i, Some(f)));
            let mut out = thousands(int);
            if let Some(f) = frac {
                out.push('.');
                out.push_str(f);
            }
            out
        } else {
            thousands(&format!("{:.0}", (w.as_f64() * self.factor).round()))
        }
    }
}

fn thousands(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn bytes(v: f64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if v < 1024.0 {
        return format!("{v:.0} B");
    }
    let mut x = v / 1024.0;
    let mut i = 0;
    while x >= 1024.0 && i + 1 < UNITS.len() {
        x /= 1024.0;
        i += 1;
    }
    format!("{x:.2} {}", UNITS[i])
}

fn nanos(v: f64) -> String {
    match v {
        v if v < 1e3 => format!("{v:.0} ns"),
        v if v < 1e6 => format!("{:.2} us", v / 1e3),
        v if v < 1e9 => format!("{:.2} ms", v / 1e6),
        v => format!("{:.2} s", v / 1e9),
    }
}

/// `12.34` (two decimals, as FlameGraph writes percentages).
pub fn percent(part: f64, whole: f64) -> String {
    if whole <= 0.0 { "0.00".into() } else { format!("{:.2}", 100.0 * part / whole) }
}

/// `+1.23`, `-0.50` or `0.00` (differential change as a percentage of the total).
pub fn signed_percent(part: f64, whole: f64) -> String {
    let p = if whole <= 0.0 { 0.0 } else { 100.0 * part / whole };
    if (p * 100.0).round() == 0.0 { "0.00".into() } else { format!("{p:+.2}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(unit: Unit) -> WeightFormat {
        WeightFormat { unit, count_name: None, factor: 1.0 }
    }

    #[test]
    fn formats_each_unit() {
        assert_eq!(fmt(Unit::Samples).weight(Weight::from_u64(1234567)), "1,234,567 samples");
        assert_eq!(fmt(Unit::Samples).weight(Weight::parse(b"1234.5").unwrap()), "1,234.5 samples");
        assert_eq!(fmt(Unit::Bytes).weight(Weight::from_u64(1536 * 1024)), "1.50 MiB");
        assert_eq!(fmt(Unit::Bytes).weight(Weight::from_u64(100)), "100 B");
        assert_eq!(fmt(Unit::Nanoseconds).weight(Weight::from_u64(2_350_000)), "2.35 ms");
        assert_eq!(fmt(Unit::Nanoseconds).weight(Weight::from_u64(1500)), "1.50 us");
        let f = WeightFormat { unit: Unit::Samples, count_name: Some("pages".into()), factor: 2.5 };
        assert_eq!(f.weight(Weight::from_u64(1)), "3 pages");
        assert_eq!(signed_percent(0.0, 5.0), "0.00");
        assert_eq!(signed_percent(-1.0, 5.0), "-20.00");
    }
}
