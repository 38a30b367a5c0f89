//! `kflame watch`: continuous profiling into a history database. Maps flags and the config
//! file onto `kflame_watch::Watcher`, installs the signal handlers (SIGINT/SIGTERM stop,
//! SIGHUP reloads), prints logs with levels and, on a terminal, a status line.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result, bail};
use clap::Args as ClapArgs;
use kflame_watch::config::{self, ConfigError, File, Level, Settings};
use kflame_watch::{Control, Environment, Status, Watcher};

use crate::{Usage, output};

const EXAMPLES: &str = "\
Examples:
  kflame watch --check                          # what this kernel allows
  kflame watch --trigger 'cpu > 80% for 5s => cpu 30s' \\
      --trigger 'mem.available < 10% => mem 60s'
  kflame watch --config /etc/kflame/watch.toml  # rules in a file
  systemctl kill -s HUP kflame-watch            # reload rules and thresholds

Trigger rules: METRIC OP VALUE [for DURATION] [=> KIND [DURATION]]
OP: > >= < <=; VALUE: 80, 80%, 512M (bytes), 2*ncpu; METRIC[LABEL] picks a CPU or \
device (without a label: the total, or the busiest device); KIND: cpu (99 Hz), mem \
(page allocations by bytes, 2 s of every 10 s), offcpu, syscalls, blocked (one \
snapshot); DURATION default 30s. `report` or `report.KIND` (oops, warning, hung_task, \
soft_lockup, rcu_stall, oom, kasan, ...) fire on kernel reports from /dev/kmsg.";

/// Arguments of `kflame watch`.
#[derive(ClapArgs, Debug)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Args {
    /// History database, created if missing [default: /var/lib/kflame/kflame.db].
    #[arg(long, value_name = "FILE", conflicts_with = "store")]
    db: Option<PathBuf>,
    /// Write to a ClickHouse store instead (`clickhouse+http://HOST:8123/DB[?cluster=NAME]`,
    /// made by `kflame store init`); user from the URL or KFLAME_CLICKHOUSE_USER, password
    /// from the file named by KFLAME_CLICKHOUSE_PASSWORD_FILE or from
    /// KFLAME_CLICKHOUSE_PASSWORD. What it cannot take waits in --spool.
    /// `clickhouse+https://HOST:8443/DB` verifies the server against the system's CAs or
    /// those of KFLAME_CLICKHOUSE_CA_FILE; a password goes over plain HTTP to loopback only.
    #[arg(long, value_name = "URL")]
    store: Option<String>,
    /// With --store: the local file where batches wait while ClickHouse is unreachable,
    /// bounded by --disk-budget (default 1G) [default: /var/lib/kflame/clickhouse-spool.db].
    #[arg(long, value_name = "FILE", requires = "store")]
    spool: Option<PathBuf>,
    /// With --store: a label of this host (`role=db`; repeatable), for `--label` in query,
    /// serve and mcp. `kernel=RELEASE` (`uname -r`) is added unless a `kernel=` is given.
    #[arg(long = "label", value_name = "KEY=VALUE", requires = "store")]
    labels: Vec<String>,
    /// TOML configuration; flags given here override it. SIGHUP reads it again.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// A trigger rule (repeatable; replaces the configuration's `triggers`).
    #[arg(long = "trigger", value_name = "RULE")]
    triggers: Vec<String>,
    /// Keep history this long [default: 7d].
    #[arg(long, value_name = "DURATION")]
    retain: Option<String>,
    /// Most triggers per hour, all rules together [default: 6].
    #[arg(long, value_name = "N")]
    budget: Option<u32>,
    /// After a rule fired, it does not fire again for this long [default: 5m].
    #[arg(long, value_name = "DURATION")]
    cooldown: Option<String>,
    /// Most space the database may take (500M, 2G) [default: no limit].
    #[arg(long, value_name = "SIZE")]
    disk_budget: Option<String>,
    /// Always-on CPU profile rate, samples per second per CPU [default: 19].
    #[arg(long, value_name = "HZ")]
    rate: Option<u32>,
    /// How the always-on profile finds user stacks, as perf's --call-graph: `dwarf` copies
    /// 8 KiB of user stack per sample (`dwarf,SIZE`: SIZE bytes) and unwinds it with the
    /// binaries' unwind tables, right for binaries built without frame pointers; `fp` walks
    /// frame pointers (cheaper; programs built without them lose their callers). The
    /// always-on off-CPU and lock profiles (BPF) walk frame pointers [default: dwarf].
    #[arg(long, value_name = "fp|dwarf[,SIZE]", value_parser = parse_call_graph)]
    call_graph: Option<String>,
    /// Length of a profile bucket [default: 10s].
    #[arg(long, value_name = "DURATION")]
    bucket: Option<String>,
    /// Host name stored with every row [default: this machine's].
    #[arg(long, value_name = "NAME")]
    host: Option<String>,
    /// Do not follow /dev/kmsg for kernel reports.
    #[arg(long)]
    no_kmsg: bool,
    /// Also report partitions, loop and ram devices.
    #[arg(long)]
    all_devices: bool,
    /// error, warn, info or debug [default: info].
    #[arg(long, value_name = "LEVEL")]
    log_level: Option<String>,
    /// Say what this kernel and these privileges allow, and what will be missing; then exit.
    #[arg(long)]
    check: bool,
    /// Do not record the latency metrics (syscall.*, bio.*, runq.*, offcpu.*, lock.*:
    /// latency histograms summed in the kernel by BPF, read every second).
    #[arg(long)]
    no_latency: bool,
    /// Do not record the always-on off-CPU and lock-wait profiles (BPF).
    #[arg(long)]
    no_blocked_profiles: bool,
    /// System calls slower than this count as slow (`syscall.slow`) [default: 10ms].
    #[arg(long, value_name = "DURATION")]
    slow_syscall: Option<String>,
    /// Block IOs slower than this count as slow (`bio.slow`) [default: 50ms].
    #[arg(long, value_name = "DURATION")]
    slow_bio: Option<String>,
    /// Run-queue waits longer than this count as slow (`runq.slow`) [default: 10ms].
    #[arg(long, value_name = "DURATION")]
    slow_runq: Option<String>,
    /// Off-CPU blocks longer than this count as slow (`offcpu.slow`) [default: 1s].
    #[arg(long, value_name = "DURATION")]
    slow_offcpu: Option<String>,
    /// Kernel lock waits longer than this count as slow (`lock.slow`) [default: 10ms].
    #[arg(long, value_name = "DURATION")]
    slow_lock: Option<String>,
    /// A system call with a threshold of its own (`write=2ms`); repeat for more.
    #[arg(long, value_name = "CALL=DURATION")]
    slow_call: Vec<String>,
    /// A label of another family with a threshold of its own (`lock:rwsem:W=1ms`,
    /// `bio:vda=5ms`, `runq:cpu0=2ms`, `offcpu:D=100ms`); repeat for more.
    #[arg(long, value_name = "FAMILY:LABEL=DURATION")]
    slow_label: Vec<String>,
    /// The slowest system calls, lock waits, blocks in D, run-queue waits and block IOs of
    /// each bucket kept with their stacks, per family (0: none; every slow one counts in its
    /// family's `.slow`) [default: 10].
    #[arg(long, value_name = "N")]
    outliers: Option<u32>,
    /// Percent of one CPU the always-on BPF programs may take together: measured a second a
    /// minute, and over it each is detached for part of the minute, the costliest first
    /// (their histograms missing then; said at the end); 0: no bound [default: 0.6].
    #[arg(long, value_name = "PCT")]
    program_budget: Option<f64>,
}

/// Checks a `--call-graph` value where clap can say so, keeping its text for the settings.
fn parse_call_graph(s: &str) -> Result<String, String> {
    kflame::record::CallGraph::parse(s).map(|_| s.to_string())
}

impl Args {
    /// `--spool`, or its default.
    fn spool_path(&self) -> PathBuf {
        self.spool.clone().unwrap_or_else(|| PathBuf::from("/var/lib/kflame/clickhouse-spool.db"))
    }

    fn flags(&self) -> File {
        File {
            db: self.db.clone(),
            host: self.host.clone(),
            rate: self.rate,
            call_graph: self.call_graph.clone(),
            bucket: self.bucket.clone(),
            retain: self.retain.clone(),
            disk_budget: self.disk_budget.clone(),
            budget: self.budget,
            cooldown: self.cooldown.clone(),
            kmsg: self.no_kmsg.then_some(false),
            latency: self.no_latency.then_some(false),
            slow_syscall: self.slow_syscall.clone(),
            blocked_profiles: self.no_blocked_profiles.then_some(false),
            slow_bio: self.slow_bio.clone(),
            slow_runq: self.slow_runq.clone(),
            slow_offcpu: self.slow_offcpu.clone(),
            slow_lock: self.slow_lock.clone(),
            slow_calls: (!self.slow_call.is_empty()).then(|| {
                self.slow_call
                    .iter()
                    .map(|c| match c.split_once('=') {
                        Some((name, d)) => (name.trim().to_string(), d.trim().to_string()),
                        None => (c.trim().to_string(), String::new()),
                    })
                    .collect()
            }),
            slow_labels: (!self.slow_label.is_empty()).then(|| {
                self.slow_label
                    .iter()
                    .map(|c| match c.rsplit_once('=') {
                        Some((name, d)) => (name.trim().to_string(), d.trim().to_string()),
                        None => (c.trim().to_string(), String::new()),
                    })
                    .collect()
            }),
            outliers: self.outliers,
            program_budget: self.program_budget,
            all_devices: self.all_devices.then_some(true),
            log_level: self.log_level.clone(),
            triggers: (!self.triggers.is_empty()).then(|| self.triggers.clone()),
        }
    }
}

/// The `--help` text of `watch` with the metric table appended.
pub(crate) fn help_with_metrics(cmd: clap::Command) -> clap::Command {
    cmd.mut_subcommand("watch", |c| {
        c.after_long_help(format!(
            "{EXAMPLES}\n\nMetrics (name, unit, labels, meaning):\n{}",
            kflame_watch::metrics::table().trim_end()
        ))
    })
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

fn resolve_settings(args: &Args) -> Result<Settings, ConfigError> {
    let flags = args.flags();
    let file = match &args.config {
        Some(p) => Some((p.as_path(), File::read(p)?)),
        None => None,
    };
    config::resolve(file, &flags, &hostname())
}

/// What the watcher prints: logs at or above the level on stderr (with the journal's
/// priority prefixes under systemd), and a status line on a terminal.
struct Cli {
    level: Level,
    journal: bool,
    tty: bool,
    status_shown: bool,
    reload: Box<dyn FnMut() -> Result<Settings, ConfigError>>,
}

impl Cli {
    #[allow(clippy::print_stderr)]
    fn line(&mut self, text: &str) {
        let mut err = std::io::stderr().lock();
        if self.status_shown {
            let _ = write!(err, "\r\x1b[K");
            self.status_shown = false;
        }
        let _ = writeln!(err, "{text}");
    }
}

impl Control for Cli {
    fn log(&mut self, level: Level, message: &str) {
        if level > self.level {
            return;
        }
        let text = match self.journal {
            true => {
                let prio = match level {
                    Level::Error => 3,
                    Level::Warn => 4,
                    Level::Info => 6,
                    Level::Debug => 7,
                };
                format!("<{prio}>{message}")
            }
            false => format!("kflame watch: {}: {message}", level.name()),
        };
        self.line(&text);
    }

    fn status(&mut self, s: &Status) {
        if !self.tty {
            return;
        }
        let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}%"));
        let capturing = match s.capturing.is_empty() {
            true => String::new(),
            false => format!(", capturing {}", s.capturing.join("+")),
        };
        let waiting = match s.waiting_buckets {
            0 => String::new(),
            n => format!(", {} waiting for disk space", output::count(n as u64, "bucket")),
        };
        let text = format!(
            "[{:>6.0} s] cpu {} mem.available {}; {} in {}, {}, {}{capturing}{waiting}",
            s.elapsed.as_secs_f64(),
            pct(s.cpu),
            pct(s.mem_available),
            output::count(s.samples, "sample"),
            output::count(s.buckets, "bucket"),
            output::count(s.triggers, "trigger"),
            output::count(s.reports, "report"),
        );
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K{text}");
        let _ = err.flush();
        self.status_shown = true;
    }

    fn reload(&mut self) -> Option<Result<Settings, ConfigError>> {
        let new = (self.reload)();
        if let Ok(s) = &new {
            self.level = s.log_level;
        }
        Some(new)
    }
}

/// The thresholds of the always-on programs, in ns; a label no program counts is an error
/// (`--slow-label lock:rwsem=1ms`: expected a lock kind).
fn slow_thresholds(settings: &Settings) -> Result<kflame_bpf::record::SlowThresholds> {
    let ns = |d: std::time::Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let mut labels = Vec::new();
    for (kind, label, d) in &settings.slow_labels {
        let numbers = kflame_bpf::record::label_numbers(*kind, label)
            .map_err(|e| anyhow::anyhow!("--slow-label or slow_labels: {e}"))?;
        labels.extend(numbers.into_iter().map(|n| (*kind, n, ns(*d))));
    }
    Ok(kflame_bpf::record::SlowThresholds {
        labels,
        syscall: ns(settings.slow_syscall),
        syscall_labels: settings.slow_calls.iter().map(|(n, d)| (n.clone(), ns(*d))).collect(),
        // What the kernel hands over per CPU and second, of which the watcher keeps the
        // slowest `outliers` per bucket.
        max_outliers: if settings.outliers == 0 { 0 } else { 32 },
        bio: ns(settings.slow_bio),
        runq: ns(settings.slow_runq),
        offcpu: ns(settings.slow_offcpu),
        lock: ns(settings.slow_lock),
        cpu_budget: settings.program_budget / 100.0,
    })
}

#[allow(clippy::print_stdout)]
fn print_check(args: &Args, settings: &Settings) -> Result<()> {
    let mut items = kflame_watch::check::check(Path::new("/"), Path::new("/dev/kmsg"));
    if settings.latency {
        let (started, failed) =
            kflame_bpf::record::always_on(settings.blocked_profiles, &slow_thresholds(settings)?);
        let names: Vec<&str> = started.iter().map(|(m, _)| m.name()).collect();
        drop(started);
        let (available, detail) = match failed.is_empty() {
            true => (
                true,
                format!(
                    "{} load and attach{}",
                    names.join(", "),
                    if settings.blocked_profiles { " (off-CPU and lock waits with stacks)" } else { "" }
                ),
            ),
            false => {
                let why: Vec<String> = failed.iter().map(|(m, e)| format!("{}: {e}", m.name())).collect();
                (false, format!("not recorded: {}", why.join("; ")))
            }
        };
        items.push(kflame_watch::check::Item {
            name: "latency metrics, outliers and blocked-time profiles (BPF)".into(),
            available,
            detail,
        });
    }
    let mut out = std::io::stdout().lock();
    match &args.config {
        Some(p) => writeln!(out, "configuration {}: valid", p.display())?,
        None => writeln!(out, "configuration: none (defaults and flags)")?,
    }
    let target = match &args.store {
        Some(url) => match crate::cmd::history::location(url) {
            Ok(loc) => format!("store {loc} (spool {})", args.spool_path().display()),
            Err(e) => format!("store: {e}"),
        },
        None => format!("database {}", settings.db.display()),
    };
    writeln!(
        out,
        "{target}, host {}, profile {} Hz in buckets of {} s, retain {} s, disk budget {}",
        settings.host,
        settings.rate,
        settings.bucket.as_secs_f64(),
        settings.retain.as_secs(),
        match settings.disk_budget {
            0 => "none".to_string(),
            n => format!("{n} bytes"),
        }
    )?;
    for r in &settings.rules {
        writeln!(out, "trigger: {} (read as: {r})", r.text)?;
    }
    writeln!(out)?;
    for i in &items {
        writeln!(out, "{:<4} {:<40} {}", if i.available { "yes" } else { "no" }, i.name, i.detail)?;
    }
    let missing = items.iter().filter(|i| !i.available).count();
    match missing {
        0 => writeln!(out, "\neverything the watcher uses is available")?,
        n => {
            writeln!(out, "\n{n} of {} missing: the watcher runs without them (see each line)", items.len())?
        }
    }
    out.flush()?;
    Ok(())
}

pub(crate) fn run(args: Args) -> Result<()> {
    // Before any thread starts: captures run on threads of their own.
    kflame::record::one_malloc_arena();
    // The configuration and flags are checked first, with --check too: a file that --check
    // accepts is one the watcher starts with.
    let settings = resolve_settings(&args).map_err(|e| match &e {
        ConfigError::Value { origin, .. } | ConfigError::Rule { origin, .. } if origin == "command line" => {
            anyhow::Error::new(Usage(e.to_string()))
        }
        _ => anyhow::Error::new(e),
    })?;
    if args.check {
        return print_check(&args, &settings);
    }
    let bucket_ns = i64::try_from(settings.bucket.as_nanos()).unwrap_or(i64::MAX);
    let (store, target): (Box<dyn kflame_store::Store>, String) = match &args.store {
        None => (
            Box::new(crate::cmd::watch_store::open(&settings.db, bucket_ns)?),
            settings.db.display().to_string(),
        ),
        Some(url) => {
            let spool =
                args.spool.clone().unwrap_or_else(|| PathBuf::from("/var/lib/kflame/clickhouse-spool.db"));
            let budget = if settings.disk_budget > 0 { settings.disk_budget } else { 1 << 30 };
            let w = crate::cmd::watch_store::open_clickhouse(url, &spool, budget, &args.labels)?;
            let name = w.to_string();
            (w.into_store(), name)
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let reload = Arc::new(AtomicBool::new(false));
    {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        for sig in [SIGINT, SIGTERM] {
            // A second SIGINT/SIGTERM terminates at once (the default action, armed by the
            // first); the first stops the watcher, which writes the last bucket.
            signal_hook::flag::register_conditional_default(sig, stop.clone())
                .and_then(|_| signal_hook::flag::register(sig, stop.clone()))
                .context("installing signal handlers")?;
        }
        signal_hook::flag::register(SIGHUP, reload.clone()).context("installing the SIGHUP handler")?;
    }
    let journal = std::env::var_os("INVOCATION_ID").is_some();
    let tty = !journal && std::io::stderr().is_terminal();
    let again = Args { check: false, ..args };
    let mut cli = Cli {
        level: settings.log_level,
        journal,
        tty,
        status_shown: false,
        reload: Box::new(move || resolve_settings(&again)),
    };
    cli.log(
        Level::Info,
        &format!(
            "watching {} into {} ({} Hz profile in {} s buckets, {})",
            settings.host,
            target,
            settings.rate,
            settings.bucket.as_secs(),
            settings.rules_summary()
        ),
    );
    let latency = settings.latency;
    let (blocked_profiles, thresholds) = (settings.blocked_profiles, slow_thresholds(&settings)?);
    let program_budget = settings.program_budget;
    let mut watcher = Watcher::new(settings, store, Environment::default());
    if latency {
        let (started, failed) = kflame_bpf::record::always_on(blocked_profiles, &thresholds);
        for (mode, e) in failed {
            cli.log(
                Level::Warn,
                &format!(
                    "{} latency is not recorded: {e} (BPF takes root, or CAP_BPF with CAP_PERFMON, and a \
                     kernel with BTF)",
                    mode.name()
                ),
            );
        }
        watcher.set_blocked(started);
    }
    let status = watcher.run(stop, reload, &mut cli).with_context(|| format!("watching into {target}"))?;
    cli.log(
        Level::Info,
        &format!(
            "stopped after {:.0} s: {} in {}, {}, {} stored",
            status.elapsed.as_secs_f64(),
            output::count(status.samples, "sample"),
            output::count(status.buckets, "bucket"),
            output::count(status.triggers, "trigger"),
            output::count(status.reports, "kernel report"),
        ),
    );
    if !status.detached.is_empty() {
        let each: Vec<String> = status.detached.iter().map(|(m, s)| format!("{m} {s} s")).collect();
        cli.log(
            Level::Info,
            &format!(
                "always-on programs detached to keep within their CPU budget (--program-budget {}%): {}",
                program_budget,
                each.join(", ")
            ),
        );
    }
    if status.waiting_buckets > 0 {
        bail!("{} profile buckets could not be stored (disk or spool full)", status.waiting_buckets);
    }
    Ok(())
}
