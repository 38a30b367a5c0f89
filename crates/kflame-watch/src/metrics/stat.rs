//! `/proc/stat`: CPU time per CPU and in total, context switches, forks, runnable and
//! blocked tasks. CPU shares are computed as `mpstat` computes them: each field's increase
//! over the increase of the sum of user, nice, system, idle, iowait, irq, softirq and steal
//! (guest time is already inside user and nice, and is taken out of `%usr`/`%nice`).

use std::path::Path;

use super::{Problem, Value, bad};

/// The ten CPU time counters of a `cpu` line, in clock ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// user (guest included)
    pub user: u64,
    /// nice (guest_nice included)
    pub nice: u64,
    /// system
    pub system: u64,
    /// idle
    pub idle: u64,
    /// iowait
    pub iowait: u64,
    /// irq
    pub irq: u64,
    /// softirq
    pub softirq: u64,
    /// steal
    pub steal: u64,
    /// guest
    pub guest: u64,
    /// guest_nice
    pub guest_nice: u64,
}

impl CpuTimes {
    fn total(&self) -> u64 {
        self.user + self.nice + self.system + self.idle + self.iowait + self.irq + self.softirq + self.steal
    }
}

#[derive(Clone, Debug, Default)]
pub(super) struct Stat {
    total: Option<CpuTimes>,
    cpus: Vec<(String, CpuTimes)>,
    ctxt: Option<u64>,
    processes: Option<u64>,
    running: Option<u64>,
    blocked: Option<u64>,
}

pub(super) fn parse(text: &str, file: &Path, problems: &mut Vec<Problem>) -> Option<Stat> {
    let mut s = Stat::default();
    for (i, line) in text.lines().enumerate() {
        let mut f = line.split_whitespace();
        let Some(key) = f.next() else { continue };
        if let Some(rest) = key.strip_prefix("cpu") {
            let n: Vec<u64> = f.map_while(|x| x.parse().ok()).collect();
            if n.len() < 4 || (!rest.is_empty() && rest.parse::<u32>().is_err()) {
                problems.push(bad(file, i + 1, format!("expected `{key}` and at least 4 tick counts")));
                continue;
            }
            let g = |k: usize| n.get(k).copied().unwrap_or(0);
            let t = CpuTimes {
                user: g(0),
                nice: g(1),
                system: g(2),
                idle: g(3),
                iowait: g(4),
                irq: g(5),
                softirq: g(6),
                steal: g(7),
                guest: g(8),
                guest_nice: g(9),
            };
            match rest.is_empty() {
                true => s.total = Some(t),
                false => s.cpus.push((key.to_string(), t)),
            }
            continue;
        }
        let slot = match key {
            "ctxt" => &mut s.ctxt,
            "processes" => &mut s.processes,
            "procs_running" => &mut s.running,
            "procs_blocked" => &mut s.blocked,
            _ => continue,
        };
        match f.next().and_then(|x| x.parse().ok()) {
            Some(v) => *slot = Some(v),
            None => problems.push(bad(file, i + 1, format!("expected `{key} NUMBER`"))),
        }
    }
    if s.total.is_none() {
        problems.push(bad(file, 0, "no `cpu` line: not /proc/stat"));
        return None;
    }
    Some(s)
}

/// The shares of one CPU (or the total) between two reads, as mpstat.
fn shares(label: &str, a: &CpuTimes, b: &CpuTimes, out: &mut Vec<Value>) {
    let d = |x: u64, y: u64| y.saturating_sub(x) as f64;
    let total = b.total().saturating_sub(a.total()) as f64;
    if total <= 0.0 {
        return; // no tick between the reads (or a CPU gone offline): nothing to say
    }
    let pct = |v: f64| 100.0 * v / total;
    let guest = d(a.guest, b.guest);
    let gnice = d(a.guest_nice, b.guest_nice);
    let usr = (d(a.user, b.user) - guest).max(0.0);
    let nice = (d(a.nice, b.nice) - gnice).max(0.0);
    let idle = d(a.idle, b.idle);
    let iowait = d(a.iowait, b.iowait);
    let mut push =
        |name: &'static str, v: f64| out.push(Value { name, label: label.to_string(), value: pct(v) });
    push("cpu", (total - idle - iowait).max(0.0));
    push("cpu.usr", usr);
    push("cpu.nice", nice);
    push("cpu.sys", d(a.system, b.system));
    push("cpu.iowait", iowait);
    push("cpu.irq", d(a.irq, b.irq));
    push("cpu.soft", d(a.softirq, b.softirq));
    push("cpu.steal", d(a.steal, b.steal));
    push("cpu.guest", guest + gnice);
    push("cpu.idle", idle);
}

/// Everything needing two reads; rates need the interval in seconds.
pub(super) fn values(prev: &Stat, cur: &Stat, interval: Option<f64>, out: &mut Vec<Value>) {
    if let (Some(a), Some(b)) = (&prev.total, &cur.total) {
        shares("", a, b, out);
    }
    for (name, b) in &cur.cpus {
        if let Some((_, a)) = prev.cpus.iter().find(|(n, _)| n == name) {
            shares(name, a, b, out);
        }
    }
    let Some(secs) = interval else { return };
    for (name, a, b) in [("ctxt", prev.ctxt, cur.ctxt), ("forks", prev.processes, cur.processes)] {
        if let (Some(a), Some(b)) = (a, b) {
            out.push(Value { name, label: String::new(), value: b.saturating_sub(a) as f64 / secs });
        }
    }
}

/// Values of one read alone.
pub(super) fn instant(cur: &Stat, out: &mut Vec<Value>) {
    for (name, v) in [("procs.running", cur.running), ("procs.blocked", cur.blocked)] {
        if let Some(v) = v {
            out.push(Value { name, label: String::new(), value: v as f64 });
        }
    }
}
