//! The watcher's configuration: a TOML file (`--config`), command-line flags over it, and
//! the checks that make a bad setting an error at start (and at a reload) rather than a
//! surprise hours later.
//!
//! ```toml
//! db = "/var/lib/kflame/kflame.db"   # not changed by a reload
//! host = "web-3"                     # default: the host name
//! rate = 19                          # always-on CPU profile, Hz per CPU
//! call_graph = "dwarf"               # its user stacks: fp, dwarf or dwarf,SIZE
//! bucket = "10s"                     # profile bucket length
//! retain = "7d"                      # keep history this long
//! disk_budget = "2G"                 # most the database may use (0: no limit)
//! budget = 6                         # triggers per hour, all rules together
//! cooldown = "5m"                    # a rule does not fire again sooner
//! kmsg = true                        # follow /dev/kmsg for kernel reports
//! latency = true                     # latency metrics (BPF): syscall.*, bio.*, runq.*, ...
//! blocked_profiles = true            # always-on off-CPU and lock-wait profiles (BPF)
//! slow_syscall = "10ms"              # calls slower than this count in syscall.slow
//! slow_bio = "50ms"                  # block IOs: bio.slow
//! slow_runq = "10ms"                 # run-queue waits: runq.slow
//! slow_offcpu = "1s"                 # off-CPU blocks: offcpu.slow
//! slow_lock = "10ms"                 # kernel lock waits: lock.slow
//! slow_calls = { write = "2ms" }     # system calls with thresholds of their own
//! slow_labels = { "bio:vda" = "5ms" } # labels of the other families with their own
//! outliers = 10                      # slowest calls and waits kept, per family and bucket
//! program_budget = 0.6               # % of one CPU the BPF programs may take (0: no bound)
//! all_devices = false                # also partitions, loop and ram devices
//! log_level = "info"                 # error, warn, info, debug
//! triggers = [
//!   "cpu > 80% for 5s => cpu 30s",
//!   "mem.available < 10% => mem 60s",
//! ]
//! ```
//!
//! A flag given on the command line replaces the file's value; `--trigger` rules replace the
//! file's list. A reload (SIGHUP) reads the file again and keeps the flags over it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use kflame::record::CallGraph;
use serde::Deserialize;

use crate::rules::{self, Limits, Rule, RuleError};

/// The file's contents: every field optional.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct File {
    /// Database path.
    pub db: Option<PathBuf>,
    /// Host name stored with every row.
    pub host: Option<String>,
    /// CPU profile rate (Hz).
    pub rate: Option<u32>,
    /// How the CPU profile finds user stacks (`fp`, `dwarf`, `dwarf,SIZE`).
    pub call_graph: Option<String>,
    /// Bucket length.
    pub bucket: Option<String>,
    /// Retention.
    pub retain: Option<String>,
    /// Disk budget of the database.
    pub disk_budget: Option<String>,
    /// Triggers per hour.
    pub budget: Option<u32>,
    /// Cooldown per rule.
    pub cooldown: Option<String>,
    /// Follow `/dev/kmsg`.
    pub kmsg: Option<bool>,
    /// Record the latency metrics.
    pub latency: Option<bool>,
    /// The outlier threshold of system calls.
    pub slow_syscall: Option<String>,
    /// The always-on off-CPU and lock-wait profiles.
    pub blocked_profiles: Option<bool>,
    /// The outlier threshold of block IOs.
    pub slow_bio: Option<String>,
    /// The outlier threshold of run-queue waits.
    pub slow_runq: Option<String>,
    /// The outlier threshold of off-CPU blocks.
    pub slow_offcpu: Option<String>,
    /// The outlier threshold of kernel lock waits.
    pub slow_lock: Option<String>,
    /// System calls with outlier thresholds of their own, by name.
    pub slow_calls: Option<std::collections::BTreeMap<String, String>>,
    /// Labels of the other families with outlier thresholds of their own (`lock:rwsem:W`,
    /// `bio:vda`, `runq:cpu0`, `offcpu:D`).
    pub slow_labels: Option<std::collections::BTreeMap<String, String>>,
    /// The slowest calls and waits kept with their stacks, per family and bucket.
    pub outliers: Option<u32>,
    /// Percent of one CPU the always-on BPF programs may take together.
    pub program_budget: Option<f64>,
    /// Report every block device.
    pub all_devices: Option<bool>,
    /// Log level.
    pub log_level: Option<String>,
    /// Trigger rules.
    pub triggers: Option<Vec<String>>,
}

/// Log levels, most severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Errors.
    Error,
    /// Warnings.
    Warn,
    /// What the watcher does (captures, reloads).
    Info,
    /// Everything.
    Debug,
}

impl Level {
    /// `error`, `warn`, `info`, `debug`.
    pub fn name(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Info => "info",
            Level::Debug => "debug",
        }
    }

    /// Parses a level name.
    pub fn parse(s: &str) -> Option<Level> {
        [Level::Error, Level::Warn, Level::Info, Level::Debug].into_iter().find(|l| l.name() == s)
    }
}

/// The resolved settings of a watcher.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// Database path.
    pub db: PathBuf,
    /// Host name.
    pub host: String,
    /// CPU profile rate (Hz per CPU).
    pub rate: u32,
    /// How the CPU profile finds user stacks.
    pub call_graph: CallGraph,
    /// Bucket length.
    pub bucket: Duration,
    /// Retention.
    pub retain: Duration,
    /// Disk budget in bytes (0: none).
    pub disk_budget: u64,
    /// Cooldown and budget of triggers.
    pub limits: Limits,
    /// Follow `/dev/kmsg`.
    pub kmsg: bool,
    /// Record the latency metrics (`syscall.*`, `bio.*`, `runq.*`, `offcpu.*`, `lock.*`,
    /// summed in the kernel by BPF).
    pub latency: bool,
    /// Record the always-on off-CPU and lock-wait profiles (with `latency`: the same
    /// programs, then with stacks).
    pub blocked_profiles: bool,
    /// System calls at least this long count in `syscall.slow`.
    pub slow_syscall: Duration,
    /// Block IOs at least this long count in `bio.slow`.
    pub slow_bio: Duration,
    /// Run-queue waits at least this long count in `runq.slow`.
    pub slow_runq: Duration,
    /// Off-CPU blocks at least this long count in `offcpu.slow`.
    pub slow_offcpu: Duration,
    /// Kernel lock waits at least this long count in `lock.slow`.
    pub slow_lock: Duration,
    /// System calls with thresholds of their own (name, threshold).
    pub slow_calls: Vec<(String, Duration)>,
    /// Labels of the waiting-time families with thresholds of their own (family, label,
    /// threshold): `lock:rwsem:W`, `bio:vda`, `runq:cpu0`, `offcpu:D`.
    pub slow_labels: Vec<(kflame::latency::LatencyKind, String, Duration)>,
    /// The slowest system calls and waits (locks, blocks in D, run queue, block IO) kept as
    /// outliers with their stacks, per family and bucket (the others count in `FAMILY.slow`).
    pub outliers: u32,
    /// Percent of one CPU the always-on BPF programs may take together: over it they are
    /// detached for part of each minute (`kflame_bpf::budget`); 0: no bound.
    pub program_budget: f64,
    /// Report every block device.
    pub all_devices: bool,
    /// Log level.
    pub log_level: Level,
    /// Trigger rules.
    pub rules: Vec<Rule>,
}

/// The default database.
pub const DEFAULT_DB: &str = "/var/lib/kflame/kflame.db";

/// A bad configuration: which setting, from where, and why.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("cannot read the configuration {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML or has unknown or mistyped keys.
    #[error("configuration {}: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's message (line, column, key).
        message: String,
    },
    /// A value is out of range or malformed.
    #[error("{origin}: `{key}`: {message}")]
    Value {
        /// `configuration FILE` or `command line`.
        origin: String,
        /// The setting.
        key: &'static str,
        /// Why.
        message: String,
    },
    /// A trigger rule does not parse.
    #[error("{origin}: {source}")]
    Rule {
        /// `configuration FILE` or `command line`.
        origin: String,
        /// The parse error.
        source: RuleError,
    },
}

impl Settings {
    /// How many trigger rules, in words for a log line: `no trigger rules`, `1 trigger
    /// rule`, `3 trigger rules`.
    pub fn rules_summary(&self) -> String {
        match self.rules.len() {
            0 => "no trigger rules".to_string(),
            1 => "1 trigger rule".to_string(),
            n => format!("{n} trigger rules"),
        }
    }
}

impl File {
    /// Reads and parses a configuration file.
    pub fn read(path: &Path) -> Result<File, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
        File::parse(&text, path)
    }

    /// Parses a configuration's text (`path` names it in errors).
    pub fn parse(text: &str, path: &Path) -> Result<File, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Syntax {
            path: path.to_path_buf(),
            message: e.to_string().trim_end().to_string(),
        })
    }

    /// `self` with every field `over` sets replaced.
    pub fn overridden_by(self, over: &File) -> File {
        let o = over.clone();
        File {
            db: o.db.or(self.db),
            host: o.host.or(self.host),
            rate: o.rate.or(self.rate),
            call_graph: o.call_graph.or(self.call_graph),
            bucket: o.bucket.or(self.bucket),
            retain: o.retain.or(self.retain),
            disk_budget: o.disk_budget.or(self.disk_budget),
            budget: o.budget.or(self.budget),
            cooldown: o.cooldown.or(self.cooldown),
            kmsg: o.kmsg.or(self.kmsg),
            latency: o.latency.or(self.latency),
            slow_syscall: o.slow_syscall.or(self.slow_syscall),
            blocked_profiles: o.blocked_profiles.or(self.blocked_profiles),
            slow_bio: o.slow_bio.or(self.slow_bio),
            slow_runq: o.slow_runq.or(self.slow_runq),
            slow_offcpu: o.slow_offcpu.or(self.slow_offcpu),
            slow_lock: o.slow_lock.or(self.slow_lock),
            slow_calls: o.slow_calls.or(self.slow_calls),
            slow_labels: o.slow_labels.or(self.slow_labels),
            outliers: o.outliers.or(self.outliers),
            program_budget: o.program_budget.or(self.program_budget),
            all_devices: o.all_devices.or(self.all_devices),
            log_level: o.log_level.or(self.log_level),
            triggers: o.triggers.or(self.triggers),
        }
    }
}

/// Parses `512K`, `64M`, `2G`, `1T` (powers of 1024) or a plain byte count.
pub fn parse_size(s: &str) -> Option<u64> {
    let (n, mult) = match s.char_indices().last()? {
        (i, 'K' | 'k') => (&s[..i], 1u64 << 10),
        (i, 'M') => (&s[..i], 1 << 20),
        (i, 'G') => (&s[..i], 1 << 30),
        (i, 'T') => (&s[..i], 1 << 40),
        _ => (s, 1),
    };
    n.parse::<u64>().ok()?.checked_mul(mult)
}

/// Resolves `file` (its name for messages, if it came from one) with the command line over
/// it, checking every value. `host_default` is used when neither names a host.
pub fn resolve(
    file: Option<(&Path, File)>,
    flags: &File,
    host_default: &str,
) -> Result<Settings, ConfigError> {
    let origin_file = file.as_ref().map(|(p, _)| format!("configuration {}", p.display()));
    let base = file.map(|(_, f)| f).unwrap_or_default();
    // Where a value came from: the command line when a flag set it.
    let origin = |flag_set: bool| match (flag_set, &origin_file) {
        (false, Some(o)) => o.clone(),
        _ => "command line".to_string(),
    };
    let merged = base.overridden_by(flags);
    let value = |key: &'static str, set: bool, message: String| ConfigError::Value {
        origin: origin(set),
        key,
        message,
    };
    let duration = |key: &'static str, set: bool, v: &Option<String>, default: Duration| match v {
        None => Ok(default),
        Some(s) => rules::parse_duration(s)
            .ok_or_else(|| value(key, set, format!("expected a duration (`10s`, `5m`, `7d`), found `{s}`"))),
    };
    let rate = merged.rate.unwrap_or(19);
    if !(1..=1000).contains(&rate) {
        return Err(value(
            "rate",
            flags.rate.is_some(),
            format!("{rate} Hz: expected 1 to 1000 samples per second per CPU"),
        ));
    }
    let call_graph = match &merged.call_graph {
        None => CallGraph::DWARF,
        Some(s) => CallGraph::parse(s).map_err(|e| value("call_graph", flags.call_graph.is_some(), e))?,
    };
    let bucket = duration("bucket", flags.bucket.is_some(), &merged.bucket, Duration::from_secs(10))?;
    if bucket < Duration::from_secs(1) || bucket > Duration::from_secs(3600) || bucket.subsec_nanos() != 0 {
        return Err(value("bucket", flags.bucket.is_some(), "expected whole seconds from 1s to 1h".into()));
    }
    let retain = duration("retain", flags.retain.is_some(), &merged.retain, Duration::from_secs(7 * 86400))?;
    if retain < bucket {
        return Err(value(
            "retain",
            flags.retain.is_some(),
            "shorter than one bucket: nothing would be kept".into(),
        ));
    }
    let cooldown =
        duration("cooldown", flags.cooldown.is_some(), &merged.cooldown, Limits::default().cooldown)?;
    let ms = Duration::from_millis;
    let slow_syscall = duration("slow_syscall", flags.slow_syscall.is_some(), &merged.slow_syscall, ms(10))?;
    let slow_bio = duration("slow_bio", flags.slow_bio.is_some(), &merged.slow_bio, ms(50))?;
    let slow_runq = duration("slow_runq", flags.slow_runq.is_some(), &merged.slow_runq, ms(10))?;
    let slow_offcpu = duration("slow_offcpu", flags.slow_offcpu.is_some(), &merged.slow_offcpu, ms(1000))?;
    let slow_lock = duration("slow_lock", flags.slow_lock.is_some(), &merged.slow_lock, ms(10))?;
    let mut slow_calls = Vec::new();
    for (name, v) in merged.slow_calls.iter().flatten() {
        let set = flags.slow_calls.is_some();
        let d = rules::parse_duration(v).ok_or_else(|| {
            value("slow_calls", set, format!("{name}: expected a duration (`2ms`, `500us`), found `{v}`"))
        })?;
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(value("slow_calls", set, format!("`{name}`: expected a system call's name")));
        }
        slow_calls.push((name.clone(), d));
    }
    let mut slow_labels = Vec::new();
    for (name, v) in merged.slow_labels.iter().flatten() {
        let set = flags.slow_labels.is_some();
        let d = rules::parse_duration(v).ok_or_else(|| {
            value("slow_labels", set, format!("{name}: expected a duration (`2ms`, `500us`), found `{v}`"))
        })?;
        let family = name.split_once(':').and_then(|(f, l)| {
            let kind = kflame::latency::LatencyKind::from_name(f)?;
            (kind != kflame::latency::LatencyKind::Syscall && !l.is_empty()).then(|| (kind, l.to_string()))
        });
        let Some((kind, label)) = family else {
            return Err(value(
                "slow_labels",
                set,
                format!(
                    "`{name}`: expected FAMILY:LABEL, FAMILY one of bio, runq, offcpu, lock (lock:rwsem:W, bio:vda)"
                ),
            ));
        };
        slow_labels.push((kind, label, d));
    }
    let disk_budget = match &merged.disk_budget {
        None => 0,
        Some(s) => parse_size(s).ok_or_else(|| {
            value(
                "disk_budget",
                flags.disk_budget.is_some(),
                format!("expected a size (`500M`, `2G`), found `{s}`"),
            )
        })?,
    };
    let program_budget = merged.program_budget.unwrap_or(0.6);
    if !(0.0..=100.0).contains(&program_budget) {
        return Err(value(
            "program_budget",
            flags.program_budget.is_some(),
            format!("{program_budget}: expected a percent of one CPU from 0 (no bound) to 100"),
        ));
    }
    let per_hour = merged.budget.unwrap_or(Limits::default().per_hour);
    let log_level = match &merged.log_level {
        None => Level::Info,
        Some(s) => Level::parse(s).ok_or_else(|| {
            value(
                "log_level",
                flags.log_level.is_some(),
                format!("expected error, warn, info or debug, found `{s}`"),
            )
        })?,
    };
    let host = merged.host.clone().unwrap_or_else(|| host_default.to_string());
    if host.is_empty() || host.chars().any(char::is_control) {
        return Err(value(
            "host",
            flags.host.is_some(),
            "expected a non-empty name without control characters".into(),
        ));
    }
    let mut rules = Vec::new();
    for text in merged.triggers.iter().flatten() {
        let rule = Rule::parse(text)
            .map_err(|source| ConfigError::Rule { origin: origin(flags.triggers.is_some()), source })?;
        rules.push(rule);
    }
    Ok(Settings {
        db: merged.db.unwrap_or_else(|| PathBuf::from(DEFAULT_DB)),
        host,
        rate,
        call_graph,
        bucket,
        retain,
        disk_budget,
        limits: Limits { cooldown, per_hour },
        kmsg: merged.kmsg.unwrap_or(true),
        latency: merged.latency.unwrap_or(true),
        blocked_profiles: merged.blocked_profiles.unwrap_or(true),
        slow_syscall,
        slow_bio,
        slow_runq,
        slow_offcpu,
        slow_lock,
        slow_calls,
        slow_labels,
        outliers: merged.outliers.unwrap_or(10),
        program_budget,
        all_devices: merged.all_devices.unwrap_or(false),
        log_level,
        rules,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> &'static Path {
        Path::new("watch.toml")
    }

    #[test]
    fn file_then_flags() {
        let file = File::parse(
            "rate = 49\nbucket = \"5s\"\nbudget = 2\ntriggers = [\"cpu > 80% for 5s => cpu 30s\"]\nhost = \"a\"\n",
            p(),
        )
        .unwrap();
        let flags = File { rate: Some(29), triggers: Some(vec!["load1 > 2*ncpu".into()]), ..File::default() };
        let s = resolve(Some((p(), file)), &flags, "fallback").unwrap();
        assert_eq!(s.rate, 29);
        assert_eq!(s.bucket, Duration::from_secs(5));
        assert_eq!(s.limits.per_hour, 2);
        assert_eq!(s.host, "a");
        assert_eq!(s.rules.len(), 1);
        assert_eq!(s.rules[0].text, "load1 > 2*ncpu");
        assert_eq!(s.db, Path::new(DEFAULT_DB));
        let s = resolve(None, &File::default(), "box").unwrap();
        assert_eq!((s.host.as_str(), s.rate, s.bucket, s.kmsg), ("box", 19, Duration::from_secs(10), true));
        assert_eq!(s.call_graph, CallGraph::DWARF);
        let file = File::parse("call_graph = \"dwarf,16000\"\n", p()).unwrap();
        let s = resolve(Some((p(), file.clone())), &File::default(), "box").unwrap();
        assert_eq!(s.call_graph, CallGraph::Dwarf { stack_bytes: 16000 });
        let flags = File { call_graph: Some("fp".into()), ..File::default() };
        assert_eq!(resolve(Some((p(), file)), &flags, "box").unwrap().call_graph, CallGraph::FramePointers);
        let bad = File::parse("call_graph = \"lbr\"\n", p()).unwrap();
        let e = resolve(Some((p(), bad)), &File::default(), "box").unwrap_err().to_string();
        assert!(e.contains("call_graph") && e.contains("expected fp, dwarf or dwarf,SIZE"), "{e}");
        assert_eq!((s.latency, s.slow_syscall), (true, Duration::from_millis(10)));
        assert!(s.blocked_profiles);
        let ms = Duration::from_millis;
        assert_eq!((s.slow_bio, s.slow_runq, s.slow_offcpu, s.slow_lock), (ms(50), ms(10), ms(1000), ms(10)));
        let file =
            File::parse("blocked_profiles = false\nslow_bio = \"20ms\"\nslow_lock = \"1ms\"\n", p()).unwrap();
        let s = resolve(Some((p(), file)), &File::default(), "box").unwrap();
        assert_eq!((s.blocked_profiles, s.slow_bio, s.slow_lock), (false, ms(20), ms(1)));
        let file =
            File::parse("slow_calls = { write = \"2ms\", fsync = \"50ms\" }\noutliers = 4\n", p()).unwrap();
        let s = resolve(Some((p(), file)), &File::default(), "box").unwrap();
        assert_eq!(s.slow_calls, [("fsync".to_string(), ms(50)), ("write".to_string(), ms(2))]);
        assert_eq!(s.outliers, 4);
        assert_eq!(s.program_budget, 0.6, "the default budget");
        let file = File::parse("program_budget = 0\n", p()).unwrap();
        assert_eq!(resolve(Some((p(), file)), &File::default(), "box").unwrap().program_budget, 0.0);
        let file = File::parse("program_budget = 150\n", p()).unwrap();
        let e = resolve(Some((p(), file)), &File::default(), "box").unwrap_err().to_string();
        assert!(e.contains("program_budget") && e.contains("expected a percent of one CPU"), "{e}");
        let file = File::parse("slow_labels = { \"lock:rwsem:W\" = \"1ms\", \"bio:vda\" = \"5ms\" }\n", p())
            .unwrap();
        let s = resolve(Some((p(), file)), &File::default(), "box").unwrap();
        assert_eq!(
            s.slow_labels,
            [
                (kflame::latency::LatencyKind::Bio, "vda".to_string(), ms(5)),
                (kflame::latency::LatencyKind::Lock, "rwsem:W".to_string(), ms(1))
            ]
        );
        for bad in ["\"syscall:write\"", "\"lock\"", "\"disk:vda\"", "\"lock:\""] {
            let file = File::parse(&format!("slow_labels = {{ {bad} = \"1ms\" }}\n"), p()).unwrap();
            let e = resolve(Some((p(), file)), &File::default(), "box").unwrap_err().to_string();
            assert!(e.contains("`slow_labels`") && e.contains("expected FAMILY:LABEL"), "{e}");
        }
        let file = File::parse("slow_calls = { write = \"soon\" }\n", p()).unwrap();
        let e = resolve(Some((p(), file)), &File::default(), "box").unwrap_err().to_string();
        assert!(e.contains("`slow_calls`: write: expected a duration"), "{e}");
        let file = File::parse("slow_runq = \"now\"\n", p()).unwrap();
        let e = resolve(Some((p(), file)), &File::default(), "box").unwrap_err().to_string();
        assert!(e.contains("`slow_runq`: expected a duration"), "{e}");
        // The latency keys, and the flags over them.
        let file = File::parse("latency = false\nslow_syscall = \"250us\"\n", p()).unwrap();
        let s = resolve(Some((p(), file.clone())), &File::default(), "box").unwrap();
        assert_eq!((s.latency, s.slow_syscall), (false, Duration::from_micros(250)));
        let flags = File { latency: Some(true), slow_syscall: Some("2ms".into()), ..File::default() };
        let s = resolve(Some((p(), file)), &flags, "box").unwrap();
        assert_eq!((s.latency, s.slow_syscall), (true, Duration::from_millis(2)));
        let file = File::parse("slow_syscall = \"soon\"\n", p()).unwrap();
        let e = resolve(Some((p(), file)), &File::default(), "box").unwrap_err().to_string();
        assert!(e.starts_with("configuration watch.toml: `slow_syscall`: expected a duration"), "{e}");
    }

    #[test]
    fn the_rule_count_reads_as_words() {
        let count = |rules: &[&str]| {
            let flags =
                File { triggers: Some(rules.iter().map(|r| r.to_string()).collect()), ..File::default() };
            resolve(None, &flags, "box").unwrap().rules_summary()
        };
        assert_eq!(count(&[]), "no trigger rules");
        assert_eq!(count(&["load1 > 2*ncpu"]), "1 trigger rule");
        assert_eq!(count(&["load1 > 2*ncpu", "cpu > 80% for 5s => cpu 30s"]), "2 trigger rules");
    }

    #[test]
    fn errors_say_where_the_value_came_from() {
        let e = File::parse("rate = 19\nratee = 3\n", p()).unwrap_err().to_string();
        assert!(e.starts_with("configuration watch.toml: "), "{e}");
        assert!(e.contains("line 2") && e.contains("ratee"), "{e}");
        let e = File::parse("rate = \"fast\"\n", p()).unwrap_err().to_string();
        assert!(e.contains("line 1"), "{e}");
        let file = File::parse("triggers = [\"cpu > 80 for ever\"]\nbucket = \"10s\"\n", p()).unwrap();
        let e = resolve(Some((p(), file.clone())), &File::default(), "h").unwrap_err().to_string();
        assert_eq!(
            e,
            "configuration watch.toml: trigger rule `cpu > 80 for ever`, column 14: expected a duration \
             (`500ms`, `5s`, `2m`, `1h`), found `ever`"
        );
        let flags = File { bucket: Some("0.5s".into()), triggers: Some(vec![]), ..File::default() };
        let e = resolve(Some((p(), file)), &flags, "h").unwrap_err().to_string();
        assert_eq!(e, "command line: `bucket`: expected whole seconds from 1s to 1h");
        let e = resolve(None, &File { rate: Some(0), ..File::default() }, "h").unwrap_err().to_string();
        assert_eq!(e, "command line: `rate`: 0 Hz: expected 1 to 1000 samples per second per CPU");
        let file = File::parse("disk_budget = \"lots\"\n", p()).unwrap();
        let e = resolve(Some((p(), file)), &File::default(), "h").unwrap_err().to_string();
        assert_eq!(
            e,
            "configuration watch.toml: `disk_budget`: expected a size (`500M`, `2G`), found `lots`"
        );
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("2G"), Some(2 << 30));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("x"), None);
    }
}
