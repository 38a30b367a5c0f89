//! Hosts' labels over time. A writer labels its host (`role=db,kernel=6.1.0-13-amd64`) with
//! a row when it starts writing and once a day, timed by the data it writes; a host upgraded
//! in place carries its old `kernel=` until its watcher writes again on the new kernel. So a
//! host's labels are a series of stretches ([`LabelSpan`]), and a question about the hosts
//! of a label ("kernel 6.1 against kernel 6.8") is about those stretches, not about hosts
//! as they are today.

use crate::{Profile, ProfileQuery, Query, StoreError};
use kflame::fold::{StackCounts, Stacks};

/// A stretch of time over which a host carried one set of labels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelSpan {
    /// Host name.
    pub host: String,
    /// Its labels (`key=value,...`, as its writer was given them; empty when none).
    pub labels: String,
    /// Start (inclusive), UTC ns.
    pub from_ns: i64,
    /// End (exclusive), UTC ns.
    pub to_ns: i64,
}

impl LabelSpan {
    /// True when the stretch carries `label` (`key=value`).
    pub fn has(&self, label: &str) -> bool {
        self.labels.split(',').any(|l| l.trim() == label.trim())
    }

    /// The value of label `key` (`6.1.0-13-amd64` of `kernel`), when it has one.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.labels.split(',').find_map(|l| l.trim().strip_prefix(key)?.strip_prefix('='))
    }

    /// True when the stretch covers the whole of `[from_ns, to_ns)`.
    pub fn covers(&self, from_ns: i64, to_ns: i64) -> bool {
        self.from_ns <= from_ns && self.to_ns >= to_ns
    }
}

/// The stretches of `[from_ns, to_ns)` that `rows` (`(host, time, labels)`: each a writer's
/// labels from that time on, in any order) make. A host's labels at an instant are those of
/// its latest row at or before it; before its first row, those of its first (what a host
/// wrote before any row of its own reached the store had no other). Rows that repeat the
/// labels before them continue a stretch. Sorted by host, then time; a host whose rows all
/// come at or after `to_ns` has none.
pub fn spans(mut rows: Vec<(String, i64, String)>, from_ns: i64, to_ns: i64) -> Vec<LabelSpan> {
    rows.sort();
    let mut out: Vec<LabelSpan> = Vec::new();
    let mut i = 0;
    while i < rows.len() {
        let host = rows[i].0.clone();
        let end = i + rows[i..].iter().take_while(|r| r.0 == host).count();
        let mine = &rows[i..end];
        i = end;
        // The row in force at `from_ns` (the first when none is), then those after it.
        let first = mine.iter().rposition(|r| r.1 <= from_ns).unwrap_or(0);
        let mut start = from_ns;
        let mut labels = &mine[first].2;
        for r in &mine[first + 1..] {
            if r.1 >= to_ns {
                break;
            }
            if r.2 != *labels {
                if r.1 > start {
                    out.push(LabelSpan {
                        host: host.clone(),
                        labels: labels.clone(),
                        from_ns: start,
                        to_ns: r.1,
                    });
                }
                start = start.max(r.1);
                labels = &r.2;
            }
        }
        if start < to_ns && mine[first].1 < to_ns {
            out.push(LabelSpan { host, labels: labels.clone(), from_ns: start, to_ns });
        }
    }
    out
}

/// The stretches of `spans` that carry every label of `want` (any, when it is empty), of
/// the hosts `keep` chooses.
pub fn matching<'a>(
    spans: &'a [LabelSpan],
    want: &[String],
    keep: impl Fn(&str) -> bool,
) -> Vec<&'a LabelSpan> {
    spans.iter().filter(|s| keep(&s.host) && want.iter().all(|w| s.has(w))).collect()
}

/// The values of label `key` over `spans` (`kernel`: what a side of a comparison ran),
/// sorted, each once.
pub fn values<'a>(spans: impl IntoIterator<Item = &'a LabelSpan>, key: &str) -> Vec<String> {
    let mut v: Vec<String> = spans.into_iter().filter_map(|s| s.value(key)).map(str::to_string).collect();
    v.sort();
    v.dedup();
    v
}

/// The first stretch of `a` and of `b` of one host that overlap: a host at a time chosen
/// twice.
pub fn overlap<'a>(a: &[&'a LabelSpan], b: &[&'a LabelSpan]) -> Option<(&'a LabelSpan, &'a LabelSpan)> {
    a.iter()
        .flat_map(|x| b.iter().map(move |y| (*x, *y)))
        .find(|(x, y)| x.host == y.host && x.from_ns < y.to_ns && y.from_ns < x.to_ns)
}

/// The merged profile of `q` (its kind, capture and cgroup; not its hosts) over `spans`:
/// each host's samples of its stretches. Stretches of one time range are read together, in
/// one query of their hosts.
pub fn profile_of(db: &dyn Query, q: &ProfileQuery<'_>, spans: &[&LabelSpan]) -> Result<Profile, StoreError> {
    let mut ranges: Vec<(i64, i64, Vec<String>)> = Vec::new();
    for s in spans {
        let (from, to) = (s.from_ns.max(q.from_ns), s.to_ns.min(q.to_ns));
        if from >= to {
            continue;
        }
        match ranges.iter_mut().find(|r| r.0 == from && r.1 == to) {
            Some(r) => r.2.push(s.host.clone()),
            None => ranges.push((from, to, vec![s.host.clone()])),
        }
    }
    let mut merged: Option<Profile> = None;
    for (from_ns, to_ns, hosts) in &ranges {
        let p = db.profile(&ProfileQuery {
            from_ns: *from_ns,
            to_ns: *to_ns,
            host: None,
            hosts: Some(hosts),
            ..*q
        })?;
        match &mut merged {
            None => merged = Some(p),
            Some(m) => merge(m, p),
        }
    }
    Ok(merged.unwrap_or_else(|| Profile {
        stacks: Stacks::Counts(StackCounts::new()),
        meta: kflame::fold::Meta::default(),
        samples: 0,
        buckets: 0,
        mixed_units: 0,
    }))
}

/// Adds `other` to `into`: the stacks summed; buckets of another unit than the first
/// profile with samples counted in `mixed_units` and left out, as a backend does.
fn merge(into: &mut Profile, other: Profile) {
    if into.samples == 0 && into.stacks.is_empty() {
        let (buckets, mixed) = (into.buckets, into.mixed_units);
        *into = other;
        into.buckets += buckets;
        into.mixed_units += mixed;
        return;
    }
    if other.samples == 0 && other.stacks.is_empty() {
        into.buckets += other.buckets;
        into.mixed_units += other.mixed_units;
        return;
    }
    if other.meta.unit != into.meta.unit {
        into.mixed_units += other.buckets + other.mixed_units;
        return;
    }
    let mut counts = std::mem::replace(&mut into.stacks, Stacks::Counts(StackCounts::new())).into_counts();
    counts.merge(other.stacks.into_counts());
    into.stacks = Stacks::Counts(counts);
    into.samples += other.samples;
    into.buckets += other.buckets;
    into.mixed_units += other.mixed_units;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(h: &str, t: i64, l: &str) -> (String, i64, String) {
        (h.to_string(), t, l.to_string())
    }

    fn span(h: &str, from_ns: i64, to_ns: i64, l: &str) -> LabelSpan {
        LabelSpan { host: h.to_string(), labels: l.to_string(), from_ns, to_ns }
    }

    #[test]
    fn a_host_upgraded_in_place_carries_each_kernel_over_its_own_stretch() {
        let rows = vec![
            row("web1", 50, "kernel=6.1"),
            row("web1", 150, "kernel=6.1"),
            row("web1", 230, "kernel=6.8"),
            row("web1", 300, "kernel=6.8"),
            row("db1", 120, "kernel=6.1"),
            row("late", 400, "kernel=6.8"),
        ];
        assert_eq!(
            spans(rows, 100, 400),
            [
                span("db1", 100, 400, "kernel=6.1"),
                span("web1", 100, 230, "kernel=6.1"),
                span("web1", 230, 400, "kernel=6.8")
            ]
        );
    }

    #[test]
    fn a_change_before_or_at_the_range_start_is_in_force_from_it() {
        let rows = vec![row("h", 10, "a=1"), row("h", 100, "a=2"), row("h", 200, "a=1")];
        assert_eq!(spans(rows.clone(), 100, 150), [span("h", 100, 150, "a=2")]);
        assert_eq!(
            spans(rows.clone(), 0, 1000),
            [span("h", 0, 100, "a=1"), span("h", 100, 200, "a=2"), span("h", 200, 1000, "a=1")]
        );
        assert_eq!(spans(rows, 200, 300), [span("h", 200, 300, "a=1")]);
    }

    #[test]
    fn a_labels_values_of_the_stretches_chosen_sorted_once() {
        let all = vec![
            span("db1", 0, 10, "role=db,kernel=6.8.0-1-amd64"),
            span("db2", 0, 10, "kernel=6.1.0-13-amd64, role=db"),
            span("db3", 0, 10, "kernel=6.8.0-1-amd64,kernelx=1"),
            span("web1", 0, 10, ""),
        ];
        let db = matching(&all, &[], |h| h.starts_with("db"));
        assert_eq!(values(db.iter().copied(), "kernel"), ["6.1.0-13-amd64", "6.8.0-1-amd64"]);
        assert!(values(matching(&all, &[], |h| h == "web1"), "kernel").is_empty());
        assert_eq!(values(&all, "role"), ["db"]);
        assert_eq!(matching(&all, &["role=db".to_string()], |_| true).len(), 2);
    }

    #[test]
    fn stretches_are_chosen_by_labels_and_hosts_and_name_their_values() {
        let all = vec![
            span("web1", 0, 10, "role=web,kernel=6.1"),
            span("web1", 10, 20, "role=web,kernel=6.8"),
            span("db1", 0, 20, "role=db,kernel=6.1"),
        ];
        let old = matching(&all, &["kernel=6.1".to_string()], |_| true);
        assert_eq!(
            old.iter().map(|s| (s.host.as_str(), s.from_ns)).collect::<Vec<_>>(),
            [("web1", 0), ("db1", 0)]
        );
        let web_new = matching(&all, &["kernel=6.8".to_string()], |h| h.starts_with("web"));
        assert_eq!(web_new.len(), 1);
        assert_eq!(values(old.iter().copied(), "kernel"), ["6.1"]);
        assert_eq!(values(&all, "role"), ["db", "web"]);
        assert!(overlap(&old, &web_new).is_none());
        let everything = matching(&all, &[], |_| true);
        assert_eq!(overlap(&old, &everything).map(|(a, _)| a.host.as_str()), Some("web1"));
        assert!(all[2].covers(0, 20) && !all[0].covers(0, 20));
    }
}
