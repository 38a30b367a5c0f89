//! `/proc/meminfo`: available memory, page cache, dirty and writeback pages, slab, swap.

use std::path::Path;

use super::{Problem, Value, bad};

#[derive(Clone, Debug, Default)]
pub(super) struct MemInfo {
    total: Option<u64>,
    available: Option<u64>,
    cached: Option<u64>,
    dirty: Option<u64>,
    writeback: Option<u64>,
    slab: Option<u64>,
    swap_total: Option<u64>,
    swap_free: Option<u64>,
}

/// Lines are `Name:   1234 kB` (bytes after multiplying by 1024) or a bare count.
pub(super) fn parse(text: &str, file: &Path, problems: &mut Vec<Problem>) -> Option<MemInfo> {
    let mut m = MemInfo::default();
    for (i, line) in text.lines().enumerate() {
        let Some((key, rest)) = line.split_once(':') else {
            if !line.trim().is_empty() {
                problems.push(bad(file, i + 1, "expected `Name: VALUE kB`"));
            }
            continue;
        };
        let slot = match key {
            "MemTotal" => &mut m.total,
            "MemAvailable" => &mut m.available,
            "Cached" => &mut m.cached,
            "Dirty" => &mut m.dirty,
            "Writeback" => &mut m.writeback,
            "Slab" => &mut m.slab,
            "SwapTotal" => &mut m.swap_total,
            "SwapFree" => &mut m.swap_free,
            _ => continue,
        };
        let mut f = rest.split_whitespace();
        let v = f.next().and_then(|x| x.parse::<u64>().ok());
        let scale = match f.next() {
            Some("kB") => 1024,
            None => 1,
            Some(_) => 0,
        };
        match v {
            Some(v) if scale > 0 => *slot = Some(v * scale),
            _ => problems.push(bad(file, i + 1, format!("expected `{key}: NUMBER kB`"))),
        }
    }
    if m.total.is_none() {
        problems.push(bad(file, 0, "no MemTotal line: not /proc/meminfo"));
        return None;
    }
    Some(m)
}

impl MemInfo {
    pub(super) fn values(&self, out: &mut Vec<Value>) {
        let mut push = |name: &'static str, v: Option<f64>| {
            if let Some(value) = v {
                out.push(Value { name, label: String::new(), value });
            }
        };
        let f = |v: Option<u64>| v.map(|x| x as f64);
        let total = self.total.filter(|&t| t > 0);
        push("mem.available", self.available.zip(total).map(|(a, t)| 100.0 * a as f64 / t as f64));
        push("mem.available_bytes", f(self.available));
        push("mem.cached", f(self.cached));
        push("mem.dirty", f(self.dirty));
        push("mem.writeback", f(self.writeback));
        push("mem.slab", f(self.slab));
        if let (Some(t), Some(free)) = (self.swap_total.filter(|&t| t > 0), self.swap_free) {
            let used = t.saturating_sub(free);
            push("swap.used", Some(100.0 * used as f64 / t as f64));
            push("swap.used_bytes", Some(used as f64));
        }
    }
}
