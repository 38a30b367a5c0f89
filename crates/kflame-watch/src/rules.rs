//! Trigger rules and their evaluation.
//!
//! A rule is `METRIC OP VALUE [for DURATION] [=> KIND [DURATION]]`:
//!
//! - `METRIC` is a name of [`METRICS`](crate::metrics::METRICS), optionally with a label in
//!   brackets (`cpu[cpu1]`, `io.util[sda]`). Without a label the rule reads the total when the
//!   metric has one (`cpu`), else the extreme over the labels in the rule's direction: the
//!   busiest device for `io.util > 90`, the least for `<`; so "any device" crosses it.
//! - `OP` is `>`, `>=`, `<` or `<=`.
//! - `VALUE` is a number, with `%` for a metric in percent, `K`/`M`/`G`/`T` (powers of 1024)
//!   for one in bytes, or `N*ncpu` (the number of online CPUs, for `load1 > 2*ncpu`).
//! - `for DURATION` (`500ms`, `5s`, `10m`, `1h`): the condition must hold at every read for
//!   that long before the rule fires; without it, the first read that crosses fires.
//! - `=> KIND [DURATION]`: what to capture, `cpu` (99 Hz), `mem` (page allocations by
//!   bytes), `offcpu`, `syscalls` or `blocked` (one snapshot of D-state tasks; a duration is
//!   refused), for DURATION (default 30 s). Without it, the kind follows the metric: `mem.*`,
//!   `swap.*` and `psi.mem.*` capture `mem`; `io.*`, `cpu.iowait` and `psi.io.*` `offcpu`;
//!   `procs.blocked` `blocked`; every other metric `cpu`.
//!
//! Kernel reports are a trigger source too: `report` fires on every report read from
//! `/dev/kmsg`, `report.KIND` on one kind (`report.oops`, `report.hung_task`,
//! `report.rcu_stall`, ...: the names of `kflame::report::Kind`); they take no OP/VALUE/for,
//! and capture `blocked` unless told otherwise.
//!
//! The [`Evaluator`] keeps each rule's `for` window, a cooldown per rule after it fired and
//! a budget of triggers per hour shared by all rules.

use std::collections::VecDeque;
use std::time::Duration;

use crate::metrics::{self, Value};

/// What a trigger captures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CaptureKind {
    /// CPU samples at 99 Hz.
    Cpu,
    /// Off-CPU time.
    OffCpu,
    /// Page allocations, weighted by bytes (duty-cycled).
    Mem,
    /// System-call latency, every call kept.
    Syscalls,
    /// One snapshot of blocked tasks' stacks.
    Blocked,
}

impl CaptureKind {
    /// `cpu`, `offcpu`, `mem`, `syscalls`, `blocked`.
    pub fn name(self) -> &'static str {
        match self {
            CaptureKind::Cpu => "cpu",
            CaptureKind::OffCpu => "offcpu",
            CaptureKind::Mem => "mem",
            CaptureKind::Syscalls => "syscalls",
            CaptureKind::Blocked => "blocked",
        }
    }

    /// Every kind.
    pub const ALL: [CaptureKind; 5] = [
        CaptureKind::Cpu,
        CaptureKind::OffCpu,
        CaptureKind::Mem,
        CaptureKind::Syscalls,
        CaptureKind::Blocked,
    ];

    fn parse(s: &str) -> Option<CaptureKind> {
        CaptureKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
}

impl Op {
    fn holds(self, v: f64, t: f64) -> bool {
        match self {
            Op::Gt => v > t,
            Op::Ge => v >= t,
            Op::Lt => v < t,
            Op::Le => v <= t,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Lt => "<",
            Op::Le => "<=",
        }
    }
}

/// A threshold as written.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Threshold {
    /// A plain value in the metric's unit.
    Value(f64),
    /// This many times the number of online CPUs.
    PerCpu(f64),
}

impl Threshold {
    /// The value for a machine of `ncpu` CPUs.
    pub fn resolve(self, ncpu: u32) -> f64 {
        match self {
            Threshold::Value(v) => v,
            Threshold::PerCpu(v) => v * f64::from(ncpu),
        }
    }
}

/// What a rule watches.
#[derive(Clone, Debug, PartialEq)]
pub enum Condition {
    /// A metric crossing a threshold.
    Metric {
        /// A name of the metric table.
        name: &'static str,
        /// A label, or every label.
        label: Option<String>,
        /// The comparison.
        op: Op,
        /// The threshold.
        threshold: Threshold,
        /// How long it must hold.
        hold: Duration,
    },
    /// A kernel report, of one kind (`report.oops`) or any.
    Report {
        /// The kind's name, or any.
        kind: Option<String>,
    },
}

/// A parsed rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// The rule as written.
    pub text: String,
    /// What it watches.
    pub condition: Condition,
    /// What it captures.
    pub capture: CaptureKind,
    /// For how long (zero for `blocked`: one snapshot).
    pub length: Duration,
}

/// Capture length when a rule gives none.
pub const DEFAULT_LENGTH: Duration = Duration::from_secs(30);

/// A rule that cannot be parsed: the rule, the column (1-based, in characters) and what was
/// expected there.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("trigger rule `{rule}`, column {column}: {message}")]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// Where (1-based).
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

/// The report kinds a `report.KIND` rule may name.
pub const REPORT_KINDS: &[&str] = &[
    "oops",
    "page_fault",
    "general_protection_fault",
    "bug",
    "warning",
    "panic",
    "hung_task",
    "soft_lockup",
    "hard_lockup",
    "rcu_stall",
    "oom",
    "kasan",
    "kmsan",
    "kfence",
    "kcsan",
    "ubsan",
    "lockdep",
    "memory_leak",
    "atomic_sleep",
    "other",
];

/// Tokens of a rule with their byte offsets.
fn tokens(s: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let op = |c: u8| matches!(c, b'<' | b'>' | b'=');
        if op(b[i]) {
            while i < b.len() && op(b[i]) {
                i += 1;
            }
        } else {
            while i < b.len() && !b[i].is_ascii_whitespace() && !op(b[i]) {
                i += 1;
            }
        }
        out.push((start, &s[start..i]));
    }
    out
}

/// Parses a duration with the grammar of every kflame duration
/// ([`kflame_store::time::parse_span`]: `500ms`, `5s`, `10m`, `1h`, `2d`, `2w`, fractions
/// allowed, the unit required).
pub fn parse_duration(s: &str) -> Option<Duration> {
    kflame_store::time::parse_span(s).ok()
}

impl Rule {
    /// Parses one rule.
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let err = |at: usize, message: String| RuleError {
            rule: text.to_string(),
            column: text[..at.min(text.len())].chars().count() + 1,
            message,
        };
        let toks = tokens(text);
        let mut it = toks.iter().copied().peekable();
        let Some((at, first)) = it.next() else {
            return Err(err(
                0,
                "empty rule: expected `METRIC OP VALUE [for DURATION] [=> KIND [DURATION]]`".into(),
            ));
        };
        let (metric, label) = match first.split_once('[') {
            Some((m, rest)) => match rest.strip_suffix(']') {
                Some(l) if !l.is_empty() => (m, Some(l.to_string())),
                _ => return Err(err(at + m.len(), "expected `[LABEL]` (e.g. `io.util[sda]`)".into())),
            },
            None => (first, None),
        };
        let (condition, default_kind) = if metric == "report" || metric.starts_with("report.") {
            let kind = metric.strip_prefix("report.").map(str::to_string);
            if let Some(k) = &kind
                && !REPORT_KINDS.contains(&k.as_str())
            {
                return Err(err(
                    at,
                    format!("unknown report kind `{k}`: expected one of {}", REPORT_KINDS.join(", ")),
                ));
            }
            if let Some(&(a, t)) = it.peek()
                && t != "=>"
            {
                return Err(err(
                    a,
                    format!(
                        "`{metric}` fires on every such kernel report and takes no condition: expected `=>` or the end, found `{t}`"
                    ),
                ));
            }
            (Condition::Report { kind }, CaptureKind::Blocked)
        } else {
            let Some(info) = metrics::info(metric) else {
                return Err(err(at, format!("unknown metric `{metric}` (`kflame watch --help` lists them)")));
            };
            let Some((at_op, op)) = it.next() else {
                return Err(err(
                    text.len(),
                    "expected a comparison (`>`, `>=`, `<`, `<=`) after the metric".into(),
                ));
            };
            let op = match op {
                ">" => Op::Gt,
                ">=" => Op::Ge,
                "<" => Op::Lt,
                "<=" => Op::Le,
                o => return Err(err(at_op, format!("expected `>`, `>=`, `<` or `<=`, found `{o}`"))),
            };
            let Some((at_v, v)) = it.next() else {
                return Err(err(text.len(), "expected a value after the comparison".into()));
            };
            let threshold = threshold(v, info).map_err(|m| err(at_v, m))?;
            let mut hold = Duration::ZERO;
            if let Some(&(_, "for")) = it.peek() {
                it.next();
                let Some((at_d, d)) = it.next() else {
                    return Err(err(text.len(), "expected a duration after `for` (`5s`, `2m`)".into()));
                };
                hold = parse_duration(d).ok_or_else(|| {
                    err(at_d, format!("expected a duration (`500ms`, `5s`, `2m`, `1h`), found `{d}`"))
                })?;
            }
            let kind = default_kind(metric);
            (Condition::Metric { name: info.name, label, op, threshold, hold }, kind)
        };
        let mut capture = default_kind;
        let mut length = None;
        match it.next() {
            None => {}
            Some((_, "=>")) => {
                let Some((at_k, k)) = it.next() else {
                    return Err(err(
                        text.len(),
                        "expected a capture kind after `=>` (cpu, offcpu, mem, syscalls, blocked)".into(),
                    ));
                };
                capture = CaptureKind::parse(k).ok_or_else(|| {
                    err(
                        at_k,
                        format!("unknown capture kind `{k}`: expected cpu, offcpu, mem, syscalls or blocked"),
                    )
                })?;
                if let Some((at_d, d)) = it.next() {
                    let d = parse_duration(d).filter(|d| !d.is_zero()).ok_or_else(|| {
                        err(at_d, format!("expected a capture length (`20s`, `1m`), found `{d}`"))
                    })?;
                    if capture == CaptureKind::Blocked {
                        return Err(err(at_d, "`blocked` takes one snapshot: it has no length".into()));
                    }
                    length = Some(d);
                }
            }
            Some((a, t)) => return Err(err(a, format!("expected `for DURATION` or `=> KIND`, found `{t}`"))),
        }
        if let Some((a, t)) = it.next() {
            return Err(err(a, format!("unexpected `{t}` after the end of the rule")));
        }
        let length = match capture {
            CaptureKind::Blocked => Duration::ZERO,
            _ => length.unwrap_or(DEFAULT_LENGTH),
        };
        Ok(Rule { text: text.trim().to_string(), condition, capture, length })
    }

    /// The metric a value must come from, for messages: `io.util[sda]`, `report.oops`.
    pub fn metric(&self) -> String {
        match &self.condition {
            Condition::Metric { name, label: Some(l), .. } => format!("{name}[{l}]"),
            Condition::Metric { name, .. } => (*name).to_string(),
            Condition::Report { kind: Some(k) } => format!("report.{k}"),
            Condition::Report { kind: None } => "report".into(),
        }
    }
}

fn threshold(v: &str, info: &metrics::MetricInfo) -> Result<Threshold, String> {
    if let Some(n) = v.strip_suffix("*ncpu").or_else(|| v.strip_prefix("ncpu*")) {
        return n.parse().map(Threshold::PerCpu).map_err(|_| format!("expected `N*ncpu`, found `{v}`"));
    }
    if v == "ncpu" {
        return Ok(Threshold::PerCpu(1.0));
    }
    if info.unit == "ms" && v.ends_with(|c: char| c.is_ascii_alphabetic()) {
        // A duration (`2ms`, `500us`, `1.5s`) for a metric in ms.
        return match kflame_store::time::parse_span(v) {
            Ok(d) => Ok(Threshold::Value(d.as_secs_f64() * 1e3)),
            Err(e) => {
                Err(format!("`{}` is in ms: expected a duration such as `2ms` or `500us` ({e})", info.name))
            }
        };
    }
    let (num, mult) = match v.char_indices().last() {
        Some((i, '%')) => {
            if info.unit != "%" {
                return Err(format!("`{}` is in {}, not a percentage", info.name, info.unit));
            }
            (&v[..i], 1.0)
        }
        Some((i, c @ ('K' | 'M' | 'G' | 'T'))) => {
            if !info.unit.starts_with("bytes") {
                return Err(format!("`{}` is in {}: a {c} suffix is for bytes", info.name, info.unit));
            }
            let p = match c {
                'K' => 1,
                'M' => 2,
                'G' => 3,
                _ => 4,
            };
            (&v[..i], 1024f64.powi(p))
        }
        _ => (v, 1.0),
    };
    match num.parse::<f64>() {
        Ok(n) if n.is_finite() => Ok(Threshold::Value(n * mult)),
        _ => Err(format!("expected a number (`80`, `80%`, `512M`, `2*ncpu`), found `{v}`")),
    }
}

fn default_kind(metric: &str) -> CaptureKind {
    if metric.starts_with("mem.") || metric.starts_with("swap.") || metric.starts_with("psi.mem.") {
        CaptureKind::Mem
    } else if metric.starts_with("io.") || metric == "cpu.iowait" || metric.starts_with("psi.io.") {
        CaptureKind::OffCpu
    } else if metric.starts_with("syscall.") {
        CaptureKind::Syscalls
    } else if metric == "procs.blocked" {
        CaptureKind::Blocked
    } else {
        CaptureKind::Cpu
    }
}

/// A rule that fired.
#[derive(Clone, Debug, PartialEq)]
pub struct Fired {
    /// Index of the rule.
    pub rule: usize,
    /// The metric (`io.util[sda]`: the label whose value crossed) or `report.KIND`.
    pub metric: String,
    /// The value that crossed (for a report: 1).
    pub value: f64,
    /// The threshold (for a report: 0).
    pub threshold: f64,
}

/// Why a rule that held did not fire.
#[derive(Clone, Debug, PartialEq)]
pub enum Held {
    /// Within its cooldown.
    Cooldown {
        /// Index of the rule.
        rule: usize,
    },
    /// The budget of triggers per hour is spent.
    Budget {
        /// Index of the rule.
        rule: usize,
    },
}

/// Evaluation limits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// After a rule fired, it does not fire again for this long.
    pub cooldown: Duration,
    /// At most this many triggers (all rules) in any hour.
    pub per_hour: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { cooldown: Duration::from_secs(300), per_hour: 6 }
    }
}

#[derive(Clone, Debug, Default)]
struct State {
    /// Since when (ns) the condition has held without a break.
    since: Option<i64>,
    last_fired: Option<i64>,
}

/// Evaluates rules over successive readings. Times are nanoseconds (any epoch, increasing).
#[derive(Clone, Debug)]
pub struct Evaluator {
    rules: Vec<Rule>,
    state: Vec<State>,
    limits: Limits,
    ncpu: u32,
    fired: VecDeque<i64>,
}

impl Evaluator {
    /// An evaluator of `rules` on a machine of `ncpu` CPUs.
    pub fn new(rules: Vec<Rule>, limits: Limits, ncpu: u32) -> Evaluator {
        let state = vec![State::default(); rules.len()];
        Evaluator { rules, state, limits, ncpu, fired: VecDeque::new() }
    }

    /// The rules.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Replaces rules and limits (a reloaded configuration). The state of a rule whose text
    /// is unchanged is kept (its `for` window and cooldown), and the budget's history too.
    pub fn reload(&mut self, rules: Vec<Rule>, limits: Limits) {
        let state = rules
            .iter()
            .map(|r| {
                self.rules
                    .iter()
                    .position(|o| o.text == r.text)
                    .map(|i| self.state[i].clone())
                    .unwrap_or_default()
            })
            .collect();
        self.rules = rules;
        self.state = state;
        self.limits = limits;
    }

    /// Whether the budget and the rule's cooldown allow it to fire at `now`.
    fn allow(&mut self, i: usize, now: i64, held: &mut Vec<Held>) -> bool {
        let hour = 3_600_000_000_000i64;
        while self.fired.front().is_some_and(|&t| t <= now - hour) {
            self.fired.pop_front();
        }
        let cooldown = i64::try_from(self.limits.cooldown.as_nanos()).unwrap_or(i64::MAX);
        if self.state[i].last_fired.is_some_and(|t| now - t < cooldown) {
            held.push(Held::Cooldown { rule: i });
            return false;
        }
        if self.fired.len() >= self.limits.per_hour as usize {
            held.push(Held::Budget { rule: i });
            return false;
        }
        self.fired.push_back(now);
        self.state[i].last_fired = Some(now);
        true
    }

    /// Evaluates the metric rules on one reading taken at `now`: the rules that fire, and
    /// those that held but were kept from firing.
    pub fn push(&mut self, now: i64, values: &[Value]) -> (Vec<Fired>, Vec<Held>) {
        let (mut fired, mut held) = (Vec::new(), Vec::new());
        for i in 0..self.rules.len() {
            let Condition::Metric { name, label, op, threshold, hold } = &self.rules[i].condition else {
                continue;
            };
            let t = threshold.resolve(self.ncpu);
            let pick = pick(values, name, label.as_deref(), *op);
            let holds = pick.as_ref().is_some_and(|(_, v)| op.holds(*v, t));
            if !holds {
                self.state[i].since = None;
                continue;
            }
            let since = *self.state[i].since.get_or_insert(now);
            let hold_ns = i64::try_from(hold.as_nanos()).unwrap_or(i64::MAX);
            if now - since < hold_ns {
                continue;
            }
            let Some((l, v)) = pick else { continue };
            let metric = match l.is_empty() {
                true => (*name).to_string(),
                false => format!("{name}[{l}]"),
            };
            if self.allow(i, now, &mut held) {
                fired.push(Fired { rule: i, metric, value: v, threshold: t });
                self.state[i].since = None; // a new window starts for the next firing
            }
        }
        (fired, held)
    }

    /// Evaluates the report rules on a kernel report of `kind` (`kflame::report::Kind::name`)
    /// seen at `now`.
    pub fn report(&mut self, now: i64, kind: &str) -> (Vec<Fired>, Vec<Held>) {
        let (mut fired, mut held) = (Vec::new(), Vec::new());
        for i in 0..self.rules.len() {
            let Condition::Report { kind: want } = &self.rules[i].condition else { continue };
            if want.as_deref().is_some_and(|w| w != kind) {
                continue;
            }
            if self.allow(i, now, &mut held) {
                fired.push(Fired { rule: i, metric: format!("report.{kind}"), value: 1.0, threshold: 0.0 });
            }
        }
        (fired, held)
    }
}

/// The value a rule reads: its label's, the total, or the extreme over labels in the
/// direction of the comparison.
fn pick<'a>(values: &'a [Value], name: &str, label: Option<&str>, op: Op) -> Option<(&'a str, f64)> {
    let mut of_name = values.iter().filter(|v| v.name == name);
    if let Some(l) = label {
        return of_name.find(|v| v.label == l).map(|v| (v.label.as_str(), v.value));
    }
    let all: Vec<&Value> = of_name.collect();
    if let Some(total) = all.iter().find(|v| v.label.is_empty()) {
        return Some(("", total.value));
    }
    let better = |a: f64, b: f64| match op {
        Op::Gt | Op::Ge => a > b,
        Op::Lt | Op::Le => a < b,
    };
    all.iter()
        .fold(None, |best: Option<&&Value>, v| match best {
            Some(b) if !better(v.value, b.value) => Some(b),
            _ => Some(v),
        })
        .map(|v| (v.label.as_str(), v.value))
}

/// `d` in seconds, exactly (`1.5s`, `0.000000001s`): it parses back to the same duration.
fn seconds(d: Duration) -> String {
    let mut s = format!("{}.{:09}", d.as_secs(), d.subsec_nanos());
    while s.ends_with('0') {
        s.pop();
    }
    if s.ends_with('.') {
        s.pop();
    }
    s + "s"
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.condition {
            Condition::Metric { op, threshold, hold, .. } => {
                let t = match threshold {
                    Threshold::Value(v) => format!("{v}"),
                    Threshold::PerCpu(v) => format!("{v}*ncpu"),
                };
                write!(f, "{} {} {t}", self.metric(), op.as_str())?;
                if !hold.is_zero() {
                    write!(f, " for {}", seconds(*hold))?;
                }
            }
            Condition::Report { .. } => write!(f, "{}", self.metric())?,
        }
        write!(f, " => {}", self.capture.name())?;
        if !self.length.is_zero() {
            write!(f, " {}", seconds(self.length))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn v(name: &'static str, label: &str, value: f64) -> Value {
        Value { name, label: label.into(), value }
    }

    /// Durations read as every kflame duration does (the unit required, weeks and
    /// fractions too), and print back exactly.
    #[test]
    fn durations_have_one_grammar() {
        let r = Rule::parse("cpu > 80% for 1.5m => cpu 0.000000001s").unwrap();
        assert!(matches!(r.condition, Condition::Metric { hold, .. } if hold == Duration::from_secs(90)));
        assert_eq!(r.length, Duration::from_nanos(1));
        assert_eq!(r.to_string(), "cpu > 80 for 90s => cpu 0.000000001s");
        let again = Rule::parse(&r.to_string()).unwrap();
        assert_eq!((again.condition, again.length), (r.condition, r.length));
        assert_eq!(parse_duration("2w"), Some(Duration::from_secs(14 * 86400)));
        assert_eq!(parse_duration("250us"), Some(Duration::from_micros(250)));
        let e = Rule::parse("cpu > 80% for 5 => cpu").unwrap_err().to_string();
        assert!(e.contains("expected a duration") && e.contains("found `5`"), "{e}");
    }

    #[test]
    fn the_issue_examples_parse() {
        let r = Rule::parse("cpu > 80% for 5s => cpu 30s").unwrap();
        assert_eq!(
            r.condition,
            Condition::Metric {
                name: "cpu",
                label: None,
                op: Op::Gt,
                threshold: Threshold::Value(80.0),
                hold: Duration::from_secs(5)
            }
        );
        assert_eq!((r.capture, r.length), (CaptureKind::Cpu, Duration::from_secs(30)));
        let r = Rule::parse("mem.available < 10% => mem 60s").unwrap();
        assert_eq!((r.capture, r.length), (CaptureKind::Mem, Duration::from_secs(60)));
        let r = Rule::parse("cpu.iowait > 20% for 10s => offcpu 20s").unwrap();
        assert_eq!((r.capture, r.length), (CaptureKind::OffCpu, Duration::from_secs(20)));
        let r = Rule::parse("psi.io.some > 30").unwrap();
        assert_eq!((r.capture, r.length), (CaptureKind::OffCpu, DEFAULT_LENGTH));
        let r = Rule::parse("load1 > 2*ncpu").unwrap();
        assert!(matches!(r.condition, Condition::Metric { threshold: Threshold::PerCpu(2.0), .. }));
        let r = Rule::parse("io.util > 90% => blocked").unwrap();
        assert_eq!((r.capture, r.length), (CaptureKind::Blocked, Duration::ZERO));
        let r = Rule::parse("io.util[vda]>=90").unwrap();
        assert_eq!(r.metric(), "io.util[vda]");
        let r = Rule::parse("mem.dirty > 512M").unwrap();
        assert!(
            matches!(r.condition, Condition::Metric { threshold: Threshold::Value(v), .. } if v == 512.0 * 1048576.0)
        );
        let r = Rule::parse("report.hung_task => offcpu 10s").unwrap();
        assert_eq!(r.condition, Condition::Report { kind: Some("hung_task".into()) });
        // The latency issue's example: a duration for a metric in ms, a system call as label.
        let r = Rule::parse("syscall.lat.p99[write] > 2ms for 2s => syscalls 8s").unwrap();
        assert_eq!(r.metric(), "syscall.lat.p99[write]");
        assert!(matches!(r.condition, Condition::Metric { threshold: Threshold::Value(v), .. } if v == 2.0));
        assert_eq!((r.capture, r.length), (CaptureKind::Syscalls, Duration::from_secs(8)));
        let r = Rule::parse("syscall.lat.max > 500us").unwrap();
        assert!(matches!(r.condition, Condition::Metric { threshold: Threshold::Value(v), .. } if v == 0.5));
        assert_eq!(r.capture, CaptureKind::Syscalls);
        let e = Rule::parse("cpu > 2ms").unwrap_err().to_string();
        assert!(e.contains("expected a number"), "{e}");
        assert_eq!(Rule::parse("report").unwrap().capture, CaptureKind::Blocked);
    }

    #[test]
    fn errors_name_the_rule_and_the_column() {
        let e = |s: &str| Rule::parse(s).unwrap_err().to_string();
        assert_eq!(
            e("cpux > 80"),
            "trigger rule `cpux > 80`, column 1: unknown metric `cpux` (`kflame watch --help` lists them)"
        );
        assert_eq!(
            e("cpu => 80"),
            "trigger rule `cpu => 80`, column 5: expected `>`, `>=`, `<` or `<=`, found `=>`"
        );
        assert_eq!(
            e("cpu > 80% for 5x"),
            "trigger rule `cpu > 80% for 5x`, column 15: expected a duration (`500ms`, `5s`, `2m`, `1h`), found `5x`"
        );
        assert_eq!(
            e("load1 > 2%"),
            "trigger rule `load1 > 2%`, column 9: `load1` is in tasks, not a percentage"
        );
        assert_eq!(
            e("cpu > 80 => gpu"),
            "trigger rule `cpu > 80 => gpu`, column 13: unknown capture kind `gpu`: expected cpu, offcpu, mem, syscalls or blocked"
        );
        assert_eq!(
            e("cpu > 80 => blocked 5s"),
            "trigger rule `cpu > 80 => blocked 5s`, column 21: `blocked` takes one snapshot: it has no length"
        );
        assert_eq!(
            e("cpu > 80 now"),
            "trigger rule `cpu > 80 now`, column 10: expected `for DURATION` or `=> KIND`, found `now`"
        );
        assert!(e("report.oopsie").contains("column 1: unknown report kind `oopsie`"));
        assert!(e("report > 1").contains("column 8: `report` fires on every such kernel report"));
        assert!(e("").contains("empty rule"));
        assert!(e("cpu >").contains("column 6: expected a value"));
    }

    #[test]
    fn for_windows_need_every_read_to_hold() {
        let rule = Rule::parse("cpu > 80% for 3s").unwrap();
        let mut ev = Evaluator::new(vec![rule], Limits { cooldown: Duration::ZERO, per_hour: 100 }, 2);
        let seq = [90.0, 95.0, 50.0, 85.0, 86.0, 87.0, 88.0, 70.0];
        let fired: Vec<usize> = seq
            .iter()
            .enumerate()
            .filter(|(t, c)| !ev.push(*t as i64 * S, &[v("cpu", "", **c)]).0.is_empty())
            .map(|(t, _)| t)
            .collect();
        // held from t=3 on: fires at t=6 (3 s later); the break at t=2 reset the first window
        assert_eq!(fired, [6]);
    }

    #[test]
    fn cooldown_and_budget_keep_a_rule_from_firing() {
        let rules = vec![Rule::parse("cpu > 50").unwrap(), Rule::parse("load1 > 1*ncpu").unwrap()];
        let mut ev = Evaluator::new(rules, Limits { cooldown: Duration::from_secs(10), per_hour: 3 }, 2);
        let mut log = Vec::new();
        for t in 0..40 {
            let (f, h) = ev.push(t * S, &[v("cpu", "", 60.0), v("load1", "", 2.5)]);
            for x in f {
                log.push(format!("{t} fired {}", x.rule));
            }
            for x in h {
                if let Held::Budget { rule } = x {
                    log.push(format!("{t} budget {rule}"));
                }
            }
        }
        // both fire at 0; rule 0 again at 10 (cooldown over), then the budget of 3 is spent
        assert_eq!(log[..3], ["0 fired 0", "0 fired 1", "10 fired 0"]);
        assert_eq!(log[3], "10 budget 1");
        assert!(log.iter().filter(|l| l.contains("fired")).count() == 3);
        // an hour after the first triggers, the budget has room again
        let (f, _) = ev.push(3600 * S + 5, &[v("cpu", "", 60.0), v("load1", "", 2.5)]);
        assert_eq!(f.len(), 2);
    }

    #[test]
    fn rules_without_label_read_the_total_or_the_extreme_label() {
        let values = [
            v("io.util", "sda", 20.0),
            v("io.util", "vdb", 95.0),
            v("cpu", "", 10.0),
            v("cpu", "cpu1", 99.0),
        ];
        let limits = Limits { cooldown: Duration::ZERO, per_hour: 100 };
        let mut ev = Evaluator::new(
            [
                "io.util > 90",
                "io.util < 30",
                "cpu > 50",
                "cpu[cpu1] > 50",
                "io.util[sda] > 90",
                "psi.io.some > 1",
            ]
            .iter()
            .map(|r| Rule::parse(r).unwrap())
            .collect(),
            limits,
            2,
        );
        let (f, _) = ev.push(0, &values);
        let got: Vec<(usize, &str, f64)> = f.iter().map(|x| (x.rule, x.metric.as_str(), x.value)).collect();
        assert_eq!(got, [(0, "io.util[vdb]", 95.0), (1, "io.util[sda]", 20.0), (3, "cpu[cpu1]", 99.0)]);
    }

    #[test]
    fn report_rules_fire_on_their_kind() {
        let rules = vec![Rule::parse("report.oops").unwrap(), Rule::parse("report => cpu 5s").unwrap()];
        let mut ev = Evaluator::new(rules, Limits { cooldown: Duration::ZERO, per_hour: 100 }, 2);
        let rules: Vec<usize> = ev.report(0, "warning").0.iter().map(|f| f.rule).collect();
        assert_eq!(rules, [1]);
        let rules: Vec<usize> = ev.report(S, "oops").0.iter().map(|f| f.rule).collect();
        assert_eq!(rules, [0, 1]);
    }

    #[test]
    fn reload_keeps_the_state_of_unchanged_rules() {
        let limits = Limits { cooldown: Duration::from_secs(60), per_hour: 100 };
        let mut ev = Evaluator::new(vec![Rule::parse("cpu > 50").unwrap()], limits, 2);
        assert_eq!(ev.push(0, &[v("cpu", "", 60.0)]).0.len(), 1);
        ev.reload(vec![Rule::parse("load1 > 1").unwrap(), Rule::parse("cpu > 50").unwrap()], limits);
        let (f, h) = ev.push(S, &[v("cpu", "", 60.0), v("load1", "", 3.0)]);
        assert_eq!(f.iter().map(|x| x.rule).collect::<Vec<_>>(), [0]);
        assert_eq!(h, [Held::Cooldown { rule: 1 }]);
    }

    #[test]
    fn report_kinds_are_the_extractors() {
        use kflame::report::Kind;
        for k in [Kind::Oops, Kind::HungTask, Kind::RcuStall, Kind::Oom, Kind::Other, Kind::AtomicSleep] {
            assert!(REPORT_KINDS.contains(&k.name()), "{}", k.name());
        }
    }
}
