//! The `kflame` command. Each subcommand lives in `cmd/<name>.rs`; this file parses the
//! command line, dispatches, and turns errors into exit codes:
//! 0 ok, 1 failure (a failed write too, `--help` and completions included), 2 usage error.
//! A closed pipe (`kflame ... | head`) is success. `record` exits with the status of the
//! command it recorded when that failed.

use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod cmd;
mod input;
mod output;
mod units;

const EXAMPLES: &str = "\
Examples:
  # Record the whole system for 10 s with perf, then fold and render:
  perf record -F 99 -a -g -- sleep 10 &&
      perf script | kflame collapse | kflame flamegraph > out.svg

  # Fold a saved perf script, keeping pids and marking kernel frames with _[k]:
  kflame collapse --pid --kernel perf.script.txt -o out.folded

  # Merge folded files from several hosts into one:
  kflame collapse --format folded host1.folded host2.folded > fleet.folded

  # Shell completions:
  kflame completions bash > /etc/bash_completion.d/kflame";

/// `kflame --version`: the version, the commit built from and the build date (build.rs).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("KFLAME_COMMIT"),
    ", built ",
    env!("KFLAME_BUILD_DATE"),
    ")"
);

/// Flame graphs from what the Linux kernel tells you: perf samples, trace events, oopses,
/// crash dumps.
#[derive(Parser, Debug)]
#[command(name = "kflame", version = VERSION, about, long_about = None, after_help = EXAMPLES)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Explain kernel reports (culprit, source, summary) or a profile's hot spots.
    Analyze(cmd::analyze::Args),
    /// Look a function up in a kernel source tree: its definition, or its callers.
    Source(cmd::analyze::SourceArgs),
    /// Fold stacks from perf script, trace, log or folded input into `frame;frame;... weight`.
    Collapse(cmd::collapse::Args),
    /// Print shell completions.
    Completions(cmd::completions::Args),
    /// Write the man pages of kflame and of each command into a directory.
    Manpages(cmd::manpages::Args),
    /// Draw folded stacks as an interactive SVG flame graph (flamegraph.pl options).
    Flamegraph(cmd::flamegraph::Args),
    /// Compare two folded profiles: `stack BEFORE AFTER` lines for a differential graph.
    Diff(cmd::diff::Args),
    /// Record live (CPU samples, allocations, off-CPU time, syscalls, blocked tasks); as root.
    Record(cmd::record::Args),
    /// Watch continuously: metrics, an always-on CPU profile and triggered captures into a
    /// history database; as root (or CAP_PERFMON and CAP_SYSLOG).
    Watch(cmd::watch::Args),
    /// Read a history database (`kflame watch --db`): the profile of a time range, metrics,
    /// events, or the difference of two ranges.
    Query(cmd::query::Args),
    /// Serve a web page over a history database: metric charts, range brush, flame graphs.
    Serve(cmd::serve::Args),
    /// Make and look after a ClickHouse store for a fleet (init, prune, stats).
    Store(cmd::store::Args),
    /// Draw per-event latency (`record -o X.json`, `collapse --events-json`) as a scatter
    /// plot linked to flame graphs: one self-contained HTML page.
    Scatter(cmd::scatter::Args),
    /// Search a kernel git history for the commits that fix a function (Fixes: trailers,
    /// hunk headers, touched files), ranked with BM25.
    Fixes(cmd::fixes::Args),
    /// Serve the analyzer, kernel source, fix search, profiles and history to AI assistants
    /// (Model Context Protocol, over stdio or HTTP).
    Mcp(cmd::mcp::Args),
}

/// `KFLAME_MASK_FEATURES` in force: which kernel features kflame acts without, and the
/// names it gave that are none (a typo would otherwise mask nothing, silently).
#[allow(clippy::print_stderr)]
fn say_masked_features() {
    use kflame::record::features::{FEATURES, info, mask_in_force};
    let (masked, unknown) = mask_in_force();
    if !masked.is_empty() {
        let keys: Vec<&str> = masked.iter().map(|&f| info(f).key).collect();
        eprintln!("kflame: acting as a kernel without {} (KFLAME_MASK_FEATURES)", keys.join(", "));
    }
    if !unknown.is_empty() {
        let known: Vec<&str> = FEATURES.iter().map(|i| i.key).collect();
        eprintln!(
            "kflame: warning: KFLAME_MASK_FEATURES names no feature {} (known: {})",
            unknown.join(", "),
            known.join(", ")
        );
    }
}

fn main() -> ExitCode {
    let parsed = cmd::watch::help_with_metrics(Cli::command())
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    if matches!(cli.command, Command::Record(_) | Command::Watch(_)) {
        say_masked_features();
    }
    let result = match cli.command {
        Command::Analyze(args) => cmd::analyze::run(args),
        Command::Source(args) => cmd::analyze::run_source(args),
        Command::Collapse(args) => cmd::collapse::run(args),
        Command::Completions(args) => cmd::completions::run(args),
        Command::Manpages(args) => cmd::manpages::run(args),
        Command::Flamegraph(args) => cmd::flamegraph::run(args),
        Command::Diff(args) => cmd::diff::run(args),
        Command::Record(args) => cmd::record::run(args),
        Command::Watch(args) => cmd::watch::run(args),
        Command::Query(args) => cmd::query::run(args),
        Command::Serve(args) => cmd::serve::run(args),
        Command::Store(args) => cmd::store::run(args),
        Command::Scatter(args) => cmd::scatter::run(args),
        Command::Fixes(args) => cmd::fixes::run(args),
        Command::Mcp(args) => cmd::mcp::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) if e.downcast_ref::<cmd::Exit>().is_some() => {
            ExitCode::from(e.downcast_ref::<cmd::Exit>().map_or(1, |x| x.0))
        }
        Err(e) if e.downcast_ref::<Usage>().is_some() => {
            report_error(&e);
            ExitCode::from(2)
        }
        Err(e) => {
            report_error(&e);
            ExitCode::FAILURE
        }
    }
}

/// What clap's own `exit()` does (usage errors on stderr, exit 2; `--help` and `--version`
/// on stdout, exit 0), except that failing to write the help or version text is an error.
fn clap_exit(e: &clap::Error) -> ExitCode {
    let printed = e.print().and_then(|()| std::io::stdout().flush());
    if e.use_stderr() {
        // A usage error, already reported as well as stderr allows.
        return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
    }
    match printed {
        Ok(()) => ExitCode::SUCCESS,
        Err(io) if io.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(io) => {
            let what =
                if e.kind() == clap::error::ErrorKind::DisplayVersion { "version" } else { "help text" };
            report_error(&anyhow::Error::new(io).context(format!("cannot write the {what} to stdout")));
            ExitCode::FAILURE
        }
    }
}

/// A usage error found after parsing (options that contradict each other): exit 2.
#[derive(Debug)]
pub(crate) struct Usage(pub(crate) String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// True when the error comes from writing into a closed pipe.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[allow(clippy::print_stderr)]
fn report_error(e: &anyhow::Error) {
    let mut msg = format!("kflame: error: {e}");
    for cause in e.chain().skip(1) {
        msg.push_str(&format!(": {cause}"));
    }
    eprintln!("{msg}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }
}

#[cfg(test)]
mod help_tests {
    use super::*;

    /// Every command of the tree, the root included.
    fn all(cmd: &clap::Command, out: &mut Vec<clap::Command>) {
        out.push(cmd.clone());
        for sub in cmd.get_subcommands() {
            all(sub, out);
        }
    }

    /// Example lines (indented lines of the text after the options) fit in 80 columns, so
    /// that clap never breaks a command in the middle: what `--help` shows can be pasted.
    #[test]
    fn examples_are_never_wrapped() {
        let mut cmds = Vec::new();
        all(&Cli::command(), &mut cmds);
        let mut long = Vec::new();
        for c in &cmds {
            for text in [c.get_after_help(), c.get_after_long_help()].into_iter().flatten() {
                for line in text.to_string().lines() {
                    if line.starts_with(' ') && line.chars().count() > 79 {
                        long.push(format!("{}: {line}", c.get_name()));
                    }
                }
            }
        }
        assert!(long.is_empty(), "example lines over 79 columns:\n{}", long.join("\n"));
    }
}
