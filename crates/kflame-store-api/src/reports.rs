//! The kernel reports of a history grouped into bugs: every reader that shows them (the web
//! server's Reports view and a report's "seen before", the MCP tools) groups them here, so
//! that a bug counts the same everywhere.
//!
//! The key a report groups under is the caller's (the analyzer's signature, the title in syzkaller's form;
//! this crate knows no analyzer), given with the kernel release the report names.

use std::collections::{BTreeSet, HashMap};

use crate::Event;

/// One stored report, as a group lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportRef {
    /// When it was logged, UTC ns.
    pub time_ns: i64,
    /// Its host.
    pub host: String,
    /// Its stored title.
    pub title: String,
}

/// The reports of one key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportGroup {
    /// The key (signature).
    pub signature: String,
    /// How many reports have it.
    pub count: usize,
    /// The earliest and latest of them, UTC ns.
    pub first_seen: i64,
    /// Latest.
    pub last_seen: i64,
    /// Their hosts.
    pub hosts: BTreeSet<String>,
    /// The kernel releases they name.
    pub kernels: BTreeSet<String>,
    /// Distinct stored titles, in order of first appearance (at most [`TITLES`]).
    pub titles: Vec<String>,
    /// The latest reports, newest first (at most the `listed` asked for; all are counted).
    pub latest: Vec<ReportRef>,
}

/// Titles kept per group.
pub const TITLES: usize = 8;

/// A report's key, from the stored report (an [`Event::Report`]: its host and time name it,
/// so that a caller can keep keys; its kind, title and text make it): the signature and the
/// kernel release it names, or `None` to group it by kind and title (`kind:title`).
pub type Sign<'a> = dyn FnMut(&Event) -> Option<(String, Option<String>)> + 'a;

/// The reports among `events` whose host `host_ok` accepts, grouped by `sign`'s key, most
/// frequent first (ties: first seen first), each listing its latest `listed`.
pub fn group_reports<'e>(
    events: impl IntoIterator<Item = &'e Event>,
    host_ok: impl Fn(&str) -> bool,
    sign: &mut Sign<'_>,
    listed: usize,
) -> Vec<ReportGroup> {
    let mut groups: Vec<ReportGroup> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for e in events {
        let Event::Report { host, time_ns, kind, title, .. } = e else { continue };
        if !host_ok(host) {
            continue;
        }
        let (signature, kernel) = sign(e).unwrap_or_else(|| (format!("{kind}:{title}"), None));
        let i = *index.entry(signature.clone()).or_insert_with(|| {
            groups.push(ReportGroup {
                signature,
                count: 0,
                first_seen: *time_ns,
                last_seen: *time_ns,
                hosts: BTreeSet::new(),
                kernels: BTreeSet::new(),
                titles: Vec::new(),
                latest: Vec::new(),
            });
            groups.len() - 1
        });
        let g = &mut groups[i];
        g.count += 1;
        g.first_seen = g.first_seen.min(*time_ns);
        g.last_seen = g.last_seen.max(*time_ns);
        if !g.hosts.contains(host) {
            g.hosts.insert(host.clone());
        }
        g.kernels.extend(kernel);
        if g.titles.len() < TITLES && !g.titles.contains(title) {
            g.titles.push(title.clone());
        }
        g.latest.push(ReportRef { time_ns: *time_ns, host: host.clone(), title: title.clone() });
    }
    for g in &mut groups {
        g.latest.sort_by(|a, b| b.time_ns.cmp(&a.time_ns).then_with(|| a.host.cmp(&b.host)));
        g.latest.truncate(listed);
    }
    groups.sort_by_key(|g| (std::cmp::Reverse(g.count), g.first_seen));
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(host: &str, s: i64, title: &str, text: &str) -> Event {
        Event::Report {
            host: host.into(),
            time_ns: s * 1_000_000_000,
            kind: "warning".into(),
            title: title.into(),
            stack: String::new(),
            text: text.into(),
        }
    }

    #[test]
    fn reports_group_by_the_key_given_else_kind_and_title() {
        let events = vec![
            report("a", 5, "WARNING in f", "f on 6.1"),
            report("b", 3, "WARNING in f", "f on 6.8"),
            report("a", 9, "WARNING at x.c", "nothing known"),
            report("c", 7, "WARNING in f", "f on 6.1"),
            Event::Trigger {
                id: crate::TriggerId(1),
                host: "a".into(),
                time_ns: 1,
                rule: "r".into(),
                metric: "m".into(),
                value: 1.0,
                threshold: 0.5,
            },
        ];
        let mut sign = |e: &Event| match e {
            Event::Report { text, .. } => {
                text.strip_prefix("f on ").map(|k| ("warning:f".to_string(), Some(k.to_string())))
            }
            _ => None,
        };
        let g = group_reports(&events, |_| true, &mut sign, 2);
        assert_eq!(g.len(), 2);
        assert_eq!(
            (g[0].signature.as_str(), g[0].count, g[0].first_seen, g[0].last_seen),
            ("warning:f", 3, 3_000_000_000, 7_000_000_000)
        );
        assert_eq!(g[0].hosts.iter().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(g[0].kernels.iter().collect::<Vec<_>>(), ["6.1", "6.8"]);
        assert_eq!(g[0].titles, ["WARNING in f"]);
        // The latest two, newest first; all three counted.
        assert_eq!(g[0].latest.iter().map(|r| r.time_ns / 1_000_000_000).collect::<Vec<_>>(), [7, 5]);
        assert_eq!(g[1].signature, "warning:WARNING at x.c");
        // Hosts narrowed.
        let g = group_reports(&events, |h| h == "b", &mut sign, 10);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].count, 1);
    }
}
