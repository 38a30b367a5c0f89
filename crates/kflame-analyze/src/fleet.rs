//! Kernel reports of many hosts grouped by signature (the title in syzkaller's form, as `kflame analyze`
//! groups them): is this oops on one box or on four hundred, since when, on which kernels.

use std::collections::{BTreeMap, BTreeSet};

use kflame::report::reports;

use crate::reports::signature;

/// One stored report: who logged it, when, and its text.
#[derive(Clone, Copy, Debug)]
pub struct HostReport<'a> {
    /// Host name.
    pub host: &'a str,
    /// When it was logged, UTC ns.
    pub time_ns: i64,
    /// The kind the writer gave it (used when the text gives no report).
    pub kind: &'a str,
    /// Its title as stored.
    pub title: &'a str,
    /// The report's lines.
    pub text: &'a str,
}

/// Reports of one signature across hosts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FleetGroup {
    /// `kind:culprit` or `kind:title`.
    pub signature: String,
    /// Report kind.
    pub kind: String,
    /// The first report's title.
    pub title: String,
    /// The culprit function, when one was found.
    pub culprit: Option<String>,
    /// Reports in the group.
    pub count: u64,
    /// Reports per host.
    pub hosts: BTreeMap<String, u64>,
    /// First and last time seen, UTC ns.
    pub first_ns: i64,
    /// See `first_ns`.
    pub last_ns: i64,
    /// Kernel versions the reports name.
    pub kernels: BTreeSet<String>,
}

/// Groups reports by signature; the groups on most hosts first, then the most frequent,
/// then the earliest.
pub fn fleet_groups<'a>(all: impl IntoIterator<Item = HostReport<'a>>) -> Vec<FleetGroup> {
    let mut groups: Vec<FleetGroup> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    for r in all {
        let parsed = reports(r.text.as_bytes()).filter_map(Result::ok).next();
        let (sig, culprit, kind, kernel) = match &parsed {
            Some(p) => {
                let (sig, c) = signature(p);
                (sig, c.map(|c| c.function), p.kind().name().to_string(), p.kernel.clone())
            }
            None => (format!("{}:{}", r.kind, r.title), None, r.kind.to_string(), None),
        };
        let i = *index.entry(sig.clone()).or_insert_with(|| {
            groups.push(FleetGroup {
                signature: sig,
                kind,
                title: r.title.to_string(),
                culprit,
                count: 0,
                hosts: BTreeMap::new(),
                first_ns: r.time_ns,
                last_ns: r.time_ns,
                kernels: BTreeSet::new(),
            });
            groups.len() - 1
        });
        let g = &mut groups[i];
        g.count += 1;
        *g.hosts.entry(r.host.to_string()).or_insert(0) += 1;
        g.first_ns = g.first_ns.min(r.time_ns);
        g.last_ns = g.last_ns.max(r.time_ns);
        g.kernels.extend(kernel);
    }
    groups.sort_by(|a, b| {
        b.hosts.len().cmp(&a.hosts.len()).then(b.count.cmp(&a.count)).then(a.first_ns.cmp(&b.first_ns))
    });
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    const WARN: &str = "------------[ cut here ]------------
WARNING: CPU: 1 PID: 77 at mm/vmscan.c:512 shrink_slab+0x1f/0x300
Modules linked in:
CPU: 1 PID: 77 Comm: kswapd0 Not tainted 6.1.0-18-amd64 #1 Debian 6.1.76-1
RIP: 0010:shrink_slab+0x1f/0x300
Call Trace:
 <TASK>
 shrink_node+0x2a0/0x6b0
 balance_pgdat+0x2f0/0x6c0
 kswapd+0x1f3/0x3c0
 </TASK>
---[ end trace 0000000000000000 ]---
";

    #[test]
    fn groups_count_hosts_times_and_kernels() {
        let other = WARN.replace("6.1.0-18-amd64", "6.1.0-21-amd64");
        let all = [
            HostReport { host: "web1", time_ns: 30, kind: "warning", title: "t", text: WARN },
            HostReport { host: "web2", time_ns: 10, kind: "warning", title: "t", text: &other },
            HostReport { host: "web1", time_ns: 50, kind: "warning", title: "t", text: WARN },
            HostReport {
                host: "db1",
                time_ns: 20,
                kind: "oom",
                title: "Out of memory: Killed process 9",
                text: "garbage",
            },
        ];
        let g = fleet_groups(all);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].signature, "WARNING in shrink_slab");
        assert_eq!(g[0].culprit.as_deref(), Some("shrink_slab"));
        assert_eq!((g[0].count, g[0].hosts.len(), g[0].first_ns, g[0].last_ns), (3, 2, 10, 50));
        assert_eq!(g[0].hosts["web1"], 2);
        assert_eq!(g[0].kernels.iter().cloned().collect::<Vec<_>>(), ["6.1.0-18-amd64", "6.1.0-21-amd64"]);
        // A text that gives no report keeps the stored kind and title.
        assert_eq!(g[1].signature, "oom:Out of memory: Killed process 9");
    }
}
