//! `/proc/pressure/{cpu,memory,io}` (PSI): `some avg10=1.23 avg60=... total=...` and the
//! same for `full` (the `full` line of `cpu` exists since 5.13, all zeros at system level).

use std::path::Path;

use super::{Problem, Value, bad};

#[derive(Clone, Debug, Default)]
pub(super) struct Pressure {
    some: Option<f64>,
    full: Option<f64>,
}

pub(super) fn parse(text: &str, file: &Path, problems: &mut Vec<Problem>) -> Option<Pressure> {
    let mut p = Pressure::default();
    for (i, line) in text.lines().enumerate() {
        let mut f = line.split_whitespace();
        let slot = match f.next() {
            Some("some") => &mut p.some,
            Some("full") => &mut p.full,
            Some(_) => {
                problems.push(bad(file, i + 1, "expected `some avg10=...` or `full avg10=...`"));
                continue;
            }
            None => continue,
        };
        match f.find_map(|kv| kv.strip_prefix("avg10=")).and_then(|v| v.parse().ok()) {
            Some(v) => *slot = Some(v),
            None => problems.push(bad(file, i + 1, "expected an `avg10=PERCENT` field")),
        }
    }
    Some(p)
}

impl Pressure {
    /// `psi.RESOURCE.some` and `.full`.
    pub(super) fn values(&self, resource: &str, out: &mut Vec<Value>) {
        let name = |kind: &str| super::info(&format!("psi.{resource}.{kind}")).map(|m| m.name);
        for (kind, v) in [("some", self.some), ("full", self.full)] {
            if let (Some(name), Some(value)) = (name(kind), v) {
                out.push(Value { name, label: String::new(), value });
            }
        }
    }
}
