//! Profiles (folded stacks of any input `kflame collapse` reads): the hottest functions, self
//! and total, the hottest paths, and the kernel's share, in the profile's own unit.

use std::collections::HashMap;

use kflame::fold::tree::StackTree;
use kflame::fold::{Unit, Weight};
use serde::Serialize;

/// A weight with its share of the profile.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Share {
    /// Exact weight in the profile's unit (decimal text, as in folded files).
    pub weight: String,
    /// Human form in the unit (`12.3 ms`, `4.0 MiB`, `1234 samples`).
    pub display: String,
    /// Percent of the profile's total.
    pub percent: f64,
}

/// One function of the profile.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FunctionHeat {
    /// Frame name as folded (annotations such as `_[k]` removed).
    pub function: String,
    /// Kernel code (by annotation or by its place below a kernel entry point).
    pub kernel: bool,
    /// Weight of the stacks where it is the leaf.
    #[serde(rename = "self")]
    pub self_: Share,
    /// Weight of the stacks it appears in (once per stack, recursion not counted twice).
    pub total: Share,
}

/// One hot path: a whole stack.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PathHeat {
    /// Frames, root first (annotations removed).
    pub frames: Vec<String>,
    /// Its weight.
    pub share: Share,
}

/// The analysis of one profile.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProfileAnalysis {
    /// The input(s) it was read from.
    pub input: String,
    /// Unit of the weights (`samples`, `period`, `bytes`, `ns`, `events`...).
    pub unit: String,
    /// Distinct stacks.
    pub stacks: usize,
    /// The total weight.
    pub total: Share,
    /// Weight of the stacks whose leaf runs in the kernel.
    pub kernel: Share,
    /// The hottest functions by self weight.
    pub by_self: Vec<FunctionHeat>,
    /// The hottest functions by total weight.
    pub by_total: Vec<FunctionHeat>,
    /// The heaviest stacks.
    pub paths: Vec<PathHeat>,
    /// The heaviest root frames (the syscall, task or event a latency or memory profile
    /// groups by; the process of a CPU profile).
    pub by_root: Vec<PathHeat>,
    /// Plain sentences.
    pub summary: Vec<String>,
}

/// Kernel entry points: frames at and below one of these (towards the leaf) are kernel
/// code even without a `_[k]` annotation.
const KERNEL_ENTRIES: &[&str] = &[
    "entry_SYSCALL",
    "entry_SYSENTER",
    "entry_INT80",
    "do_syscall_64",
    "__x64_sys_",
    "__arm64_sys_",
    "el0_svc",
    "el0t_64_",
    "el1h_64_",
    "asm_exc_",
    "asm_sysvec_",
    "asm_common_interrupt",
    "ret_from_fork",
    "secondary_startup_64",
    "common_startup_64",
    "start_kernel",
    "x86_64_start_kernel",
    "cpu_startup_entry",
    "kthread",
    "worker_thread",
    "smpboot_thread_fn",
    "do_idle",
    "exc_page_fault",
    "page_fault",
    "sysvec_",
    "__do_softirq",
    "handle_softirqs",
    "irq_exit",
];

/// Task names of kernel threads (the root frame of per-task profiles).
const KERNEL_TASKS: &[&str] =
    &["swapper", "kworker/", "ksoftirqd/", "rcu_", "migration/", "kthreadd", "idle_inject/", "cpuhp/"];

/// A frame's name without kflame's and perf's annotations, and whether one said kernel.
fn clean(frame: &str) -> (&str, bool) {
    for (suffix, kernel) in
        [("_[k]", true), ("_[j]", false), ("_[i]", false), ("_[u]", false), ("_[w]", false)]
    {
        if let Some(s) = frame.strip_suffix(suffix) {
            return (s, kernel);
        }
    }
    if let Some(s) = frame.strip_suffix(" [kernel.kallsyms]") {
        return (s, true);
    }
    // An unnamed kernel address keeps the kernel's mapping name.
    if frame.contains("[kernel.kallsyms]") {
        return (frame, true);
    }
    (frame, false)
}

/// For each frame of a stack (root first): is it kernel code?
fn kernel_frames(frames: &[&str]) -> Vec<bool> {
    let mut out = Vec::with_capacity(frames.len());
    let mut inside = frames.first().is_some_and(|r| KERNEL_TASKS.iter().any(|t| r.starts_with(t)));
    for (i, f) in frames.iter().enumerate() {
        let (name, annotated) = clean(f);
        if annotated || KERNEL_ENTRIES.iter().any(|e| name.starts_with(e)) {
            inside = true;
        }
        // The root of a kernel thread's stack is its task name, not code.
        out.push(inside && !(i == 0 && KERNEL_TASKS.iter().any(|t| name.starts_with(t))) || annotated);
    }
    out
}

fn human(w: f64, unit: &Unit) -> String {
    match unit {
        Unit::Nanoseconds => {
            if w >= 1e9 {
                format!("{:.2} s", w / 1e9)
            } else if w >= 1e6 {
                format!("{:.2} ms", w / 1e6)
            } else if w >= 1e3 {
                format!("{:.1} µs", w / 1e3)
            } else {
                format!("{w:.0} ns")
            }
        }
        Unit::Bytes => {
            if w >= (1u64 << 30) as f64 {
                format!("{:.2} GiB", w / (1u64 << 30) as f64)
            } else if w >= (1u64 << 20) as f64 {
                format!("{:.2} MiB", w / (1u64 << 20) as f64)
            } else if w >= 1024.0 {
                format!("{:.1} KiB", w / 1024.0)
            } else {
                format!("{w:.0} B")
            }
        }
        other => {
            // Counts and periods past a million are read by their magnitude (a cpu-clock
            // period sum of 1777777760 is "1.78 G"); below it, as they are.
            let n = match w.abs() {
                a if a >= 1e12 => format!("{:.2} T", w / 1e12),
                a if a >= 1e9 => format!("{:.2} G", w / 1e9),
                a if a >= 1e6 => format!("{:.2} M", w / 1e6),
                _ if w.fract() == 0.0 => format!("{w:.0}"),
                _ => format!("{w:.3}"),
            };
            format!("{n} {}", other.name())
        }
    }
}

/// Builds the analysis of the stacks `stacks` (folded text of each stack, its weight),
/// in unit `unit`, keeping the `limit` hottest of each list.
pub fn analyze<'a>(
    input: &str,
    stacks: impl IntoIterator<Item = (&'a [u8], Weight)>,
    unit: &Unit,
    limit: usize,
) -> ProfileAnalysis {
    let Weights { total, kernel, selfw, totalw, mut paths, roots, count } = Weights::of(stacks, true);
    let t = total.as_f64();
    let share = |w: Weight| Share {
        weight: w.to_string(),
        display: human(w.as_f64(), unit),
        percent: if t > 0.0 { (w.as_f64() / t * 10000.0).round() / 100.0 } else { 0.0 },
    };
    let heat = |name: &str, k: bool| FunctionHeat {
        function: name.to_string(),
        kernel: k,
        self_: share(selfw.get(name).map_or(Weight::ZERO, |e| e.0)),
        total: share(totalw.get(name).map_or(Weight::ZERO, |e| e.0)),
    };
    let mut by_self: Vec<(&String, &(Weight, bool))> = selfw.iter().collect();
    by_self.sort_by(|a, b| b.1.0.cmp(&a.1.0).then_with(|| a.0.cmp(b.0)));
    let by_self: Vec<FunctionHeat> = by_self.into_iter().take(limit).map(|(n, (_, k))| heat(n, *k)).collect();
    let mut by_total: Vec<(&String, &(Weight, bool))> = totalw.iter().collect();
    by_total.sort_by(|a, b| b.1.0.cmp(&a.1.0).then_with(|| a.0.cmp(b.0)));
    let by_total: Vec<FunctionHeat> =
        by_total.into_iter().take(limit).map(|(n, (_, k))| heat(n, *k)).collect();
    paths.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let paths: Vec<PathHeat> =
        paths.into_iter().take(limit).map(|(frames, w)| PathHeat { frames, share: share(w) }).collect();
    let mut roots: Vec<(String, Weight)> = roots.into_iter().collect();
    roots.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let by_root: Vec<PathHeat> =
        roots.into_iter().take(limit).map(|(r, w)| PathHeat { frames: vec![r], share: share(w) }).collect();
    let mut a = ProfileAnalysis {
        input: input.to_string(),
        unit: unit.name().to_string(),
        stacks: count,
        total: share(total),
        kernel: share(kernel),
        by_self,
        by_total,
        paths,
        by_root,
        summary: Vec::new(),
    };
    a.summary = profile_summary(&a, unit);
    a
}

fn profile_summary(a: &ProfileAnalysis, unit: &Unit) -> Vec<String> {
    let mut s = Vec::new();
    let what = match unit {
        Unit::Nanoseconds => "of time (latency or off-CPU)",
        Unit::Bytes => "allocated",
        _ => "",
    };
    s.push(
        format!(
            "{} {what} in {} distinct stacks; {:.1}% of it in the kernel.",
            a.total.display, a.stacks, a.kernel.percent
        )
        .replace("  ", " "),
    );
    if let Some(f) = a.by_self.first() {
        s.push(format!(
            "The hottest function is `{}` with {:.1}% self ({}){}.",
            f.function,
            f.self_.percent,
            f.self_.display,
            if f.kernel { ", in the kernel" } else { "" }
        ));
    }
    if let Some(p) = a.paths.first() {
        let tail: Vec<&str> = p.frames.iter().rev().take(4).map(String::as_str).collect();
        s.push(format!("The heaviest path ends in {} ({:.1}%).", tail.join(" ← "), p.share.percent));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_by_entry_point_and_annotation() {
        assert_eq!(
            kernel_frames(&["bash", "main", "write", "entry_SYSCALL_64", "vfs_write"]),
            [false, false, false, true, true]
        );
        assert_eq!(kernel_frames(&["swapper", "secondary_startup_64", "do_idle"]), [false, true, true]);
        assert_eq!(kernel_frames(&["x", "a_[k]"]), [false, true]);
    }
}

/// One function's change between two profiles, in shares of each profile's own total (so
/// that profiles of different lengths compare).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FunctionChange {
    /// Frame name as folded (annotations removed).
    pub function: String,
    /// Kernel code in either profile.
    pub kernel: bool,
    /// Self share before, percent.
    pub self_before: f64,
    /// Self share after, percent.
    pub self_after: f64,
    /// Total (inclusive) share before, percent.
    pub total_before: f64,
    /// Total share after, percent.
    pub total_after: f64,
    /// `total_after - total_before`, percentage points.
    pub delta: f64,
}

/// What changed from one profile to another.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProfileDiff {
    /// Unit of both profiles.
    pub unit: String,
    /// BEFORE's total weight.
    pub total_before: Share,
    /// AFTER's total weight.
    pub total_after: Share,
    /// The kernel's share before and after, percent.
    pub kernel_before: f64,
    /// The kernel's share after, percent.
    pub kernel_after: f64,
    /// Functions whose total share grew most, largest first.
    pub grew: Vec<FunctionChange>,
    /// Functions whose total share shrank most, largest first.
    pub shrank: Vec<FunctionChange>,
    /// Plain sentences.
    pub summary: Vec<String>,
}

/// Per-function weights of one profile, and with `keep_paths` its whole stacks and roots.
#[derive(Default)]
struct Weights {
    total: Weight,
    kernel: Weight,
    selfw: HashMap<String, (Weight, bool)>,
    totalw: HashMap<String, (Weight, bool)>,
    paths: Vec<(Vec<String>, Weight)>,
    roots: HashMap<String, Weight>,
    count: usize,
}

impl Weights {
    fn of<'a>(stacks: impl IntoIterator<Item = (&'a [u8], Weight)>, keep_paths: bool) -> Weights {
        let mut w = Weights::default();
        for (stack, weight) in stacks {
            let text = String::from_utf8_lossy(stack);
            let frames: Vec<&str> = text.split(';').filter(|f| !f.is_empty()).collect();
            w.add(&frames, weight, keep_paths);
        }
        w
    }

    /// The stacks of a tree: its own weights, or with `baseline` those of the comparison's
    /// BEFORE (stacks of zero weight on that side are not counted).
    fn of_tree(tree: &StackTree, baseline: bool) -> Weights {
        let mut w = Weights::default();
        for (id, node) in tree.nodes().iter().enumerate() {
            let weight = if baseline { node.self_before } else { node.self_weight };
            if !node.ends || weight.is_zero() {
                continue;
            }
            let path: Vec<std::borrow::Cow<'_, str>> =
                tree.path(id as u32).into_iter().map(String::from_utf8_lossy).collect();
            let frames: Vec<&str> = path.iter().map(|f| f.as_ref()).filter(|f| !f.is_empty()).collect();
            w.add(&frames, weight, false);
        }
        w
    }

    /// Counts one stack.
    fn add(&mut self, frames: &[&str], weight: Weight, keep_paths: bool) {
        let w = self;
        {
            w.count += 1;
            w.total += weight;
            let kern = kernel_frames(frames);
            if kern.last() == Some(&true) {
                w.kernel += weight;
            }
            let names: Vec<String> = frames.iter().map(|f| clean(f).0.to_string()).collect();
            if let Some(leaf) = names.last() {
                let e = w.selfw.entry(leaf.clone()).or_insert((Weight::ZERO, false));
                e.0 += weight;
                e.1 |= kern.last() == Some(&true);
            }
            let mut seen: Vec<&str> = Vec::with_capacity(names.len());
            for (n, k) in names.iter().zip(&kern) {
                if seen.contains(&n.as_str()) {
                    continue;
                }
                seen.push(n);
                let e = w.totalw.entry(n.clone()).or_insert((Weight::ZERO, false));
                e.0 += weight;
                e.1 |= *k;
            }
            if keep_paths {
                if let Some(root) = names.first() {
                    *w.roots.entry(root.clone()).or_insert(Weight::ZERO) += weight;
                }
                w.paths.push((names, weight));
            }
        }
    }

    fn percent(&self, w: Weight) -> f64 {
        let t = self.total.as_f64();
        if t > 0.0 { (w.as_f64() / t * 10000.0).round() / 100.0 } else { 0.0 }
    }

    fn share(&self, w: Weight, unit: &Unit) -> Share {
        Share { weight: w.to_string(), display: human(w.as_f64(), unit), percent: self.percent(w) }
    }
}

/// Compares two profiles of the same unit: each function's self and total share before and
/// after, the `limit` that grew most and the `limit` that shrank most.
pub fn diff<'a, 'b>(
    before: impl IntoIterator<Item = (&'a [u8], Weight)>,
    after: impl IntoIterator<Item = (&'b [u8], Weight)>,
    unit: &Unit,
    limit: usize,
) -> ProfileDiff {
    diff_weights(Weights::of(before, false), Weights::of(after, false), unit, limit)
}

/// [`diff`] of a comparison tree (`StackTree::add_baseline`): its baseline is BEFORE, its
/// own weights AFTER. What a server that keeps stacks as trees answers with.
pub fn diff_tree(tree: &StackTree, unit: &Unit, limit: usize) -> ProfileDiff {
    diff_weights(Weights::of_tree(tree, true), Weights::of_tree(tree, false), unit, limit)
}

fn diff_weights(b: Weights, a: Weights, unit: &Unit, limit: usize) -> ProfileDiff {
    let mut names: Vec<&String> = b.totalw.keys().chain(a.totalw.keys()).collect();
    names.sort();
    names.dedup();
    let get = |w: &Weights, m: &HashMap<String, (Weight, bool)>, n: &str| {
        m.get(n).map_or((0.0, false), |e| (w.percent(e.0), e.1))
    };
    let mut changes: Vec<FunctionChange> = names
        .into_iter()
        .map(|n| {
            let (tb, kb) = get(&b, &b.totalw, n);
            let (ta, ka) = get(&a, &a.totalw, n);
            FunctionChange {
                function: n.clone(),
                kernel: kb || ka,
                self_before: get(&b, &b.selfw, n).0,
                self_after: get(&a, &a.selfw, n).0,
                total_before: tb,
                total_after: ta,
                delta: ((ta - tb) * 100.0).round() / 100.0,
            }
        })
        .filter(|c| c.delta != 0.0)
        .collect();
    changes.sort_by(|x, y| y.delta.total_cmp(&x.delta).then_with(|| x.function.cmp(&y.function)));
    let grew: Vec<FunctionChange> = changes.iter().filter(|c| c.delta > 0.0).take(limit).cloned().collect();
    let shrank: Vec<FunctionChange> =
        changes.iter().rev().filter(|c| c.delta < 0.0).take(limit).cloned().collect();
    let mut summary = vec![format!(
        "BEFORE totals {}, AFTER {}; the kernel's share went from {:.1}% to {:.1}%.",
        human(b.total.as_f64(), unit),
        human(a.total.as_f64(), unit),
        b.percent(b.kernel),
        a.percent(a.kernel)
    )];
    if let Some(g) = grew.first() {
        summary.push(format!(
            "{} grew most: {:.1}% of the profile before, {:.1}% after (+{:.1} points).",
            g.function, g.total_before, g.total_after, g.delta
        ));
    }
    if let Some(s) = shrank.first() {
        summary.push(format!(
            "{} shrank most: {:.1}% before, {:.1}% after ({:.1} points).",
            s.function, s.total_before, s.total_after, s.delta
        ));
    }
    ProfileDiff {
        unit: unit.name().to_string(),
        total_before: b.share(b.total, unit),
        total_after: a.share(a.total, unit),
        kernel_before: b.percent(b.kernel),
        kernel_after: a.percent(a.kernel),
        grew,
        shrank,
        summary,
    }
}

#[cfg(test)]
mod diff_tests {
    use super::*;

    #[test]
    fn shares_compare_profiles_of_different_lengths() {
        let w = Weight::from_u64;
        let before: Vec<(&[u8], Weight)> =
            vec![(b"main;read_file;vfs_read_[k]", w(50)), (b"main;compute", w(50))];
        let after: Vec<(&[u8], Weight)> =
            vec![(b"main;read_file;vfs_read_[k]", w(300)), (b"main;compute", w(100))];
        let d = diff(before, after, &Unit::Samples, 5);
        assert_eq!(d.grew[0].function, "read_file");
        assert_eq!((d.grew[0].total_before, d.grew[0].total_after, d.grew[0].delta), (50.0, 75.0, 25.0));
        assert!(d.grew[0..2].iter().any(|c| c.function == "vfs_read" && c.kernel));
        assert_eq!(d.shrank[0].function, "compute");
        assert_eq!(d.shrank[0].delta, -25.0);
        assert!(d.grew.iter().all(|c| c.function != "main"), "main is 100% in both");
        assert_eq!((d.kernel_before, d.kernel_after), (50.0, 75.0));
    }

    /// A comparison tree gives the answer of its two stack lists: FlameGraph's own pair of
    /// differential inputs, and a real capture against its half.
    #[test]
    fn a_comparison_tree_compares_as_its_stacks_do() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../kflame/tests/data/render/");
        let read = |f: &str| std::fs::read(format!("{dir}{f}")).unwrap();
        let parse = |b: &[u8]| -> Vec<(Vec<u8>, Weight)> {
            String::from_utf8_lossy(b)
                .lines()
                .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
                .filter_map(|l| {
                    let (s, n) = l.rsplit_once(' ')?;
                    Some((s.as_bytes().to_vec(), Weight::parse(n.as_bytes()).ok()?))
                })
                .collect()
        };
        let capture = parse(&read("perf-sys-cpuclock.folded"));
        let half: Vec<(Vec<u8>, Weight)> = capture.iter().step_by(2).cloned().collect();
        let pairs = [
            (parse(&read("diff/before.txt")), parse(&read("diff/after.txt"))),
            (half.clone(), capture.clone()),
            (capture.clone(), half),
        ];
        for (before, after) in pairs {
            let mut tree = StackTree::new();
            for (s, w) in &after {
                let frames: Vec<&[u8]> = s.split(|&b| b == b';').collect();
                tree.add(&frames, *w, Weight::ZERO);
            }
            let mut base = StackTree::new();
            for (s, w) in &before {
                let frames: Vec<&[u8]> = s.split(|&b| b == b';').collect();
                base.add(&frames, *w, Weight::ZERO);
            }
            tree.add_baseline(&base);
            let from_tree = diff_tree(&tree, &Unit::Samples, 5);
            let from_stacks = diff(
                before.iter().map(|(s, w)| (s.as_slice(), *w)),
                after.iter().map(|(s, w)| (s.as_slice(), *w)),
                &Unit::Samples,
                5,
            );
            assert!(!from_stacks.grew.is_empty() && !from_stacks.shrank.is_empty());
            assert_eq!(from_tree, from_stacks);
        }
    }
}
