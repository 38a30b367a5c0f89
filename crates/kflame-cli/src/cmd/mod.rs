//! One module per subcommand.

pub(crate) mod analyze;
pub(crate) mod collapse;
pub(crate) mod collapse_args;
pub(crate) mod collapse_options;
pub(crate) mod completions;
pub(crate) mod diff;
pub(crate) mod explain;
pub(crate) mod export;
pub(crate) mod fixes;
pub(crate) mod flamegraph;
pub(crate) mod history;
pub(crate) mod html;
pub(crate) mod manpages;
pub(crate) mod mcp;
pub(crate) mod outliers;
pub(crate) mod query;
pub(crate) mod record;
pub(crate) mod reports;
pub(crate) mod scatter;
pub(crate) mod serve;
pub(crate) mod store;
pub(crate) mod trace_args;
pub(crate) mod watch;
pub(crate) mod watch_store;

/// Ends the program with this exit status, its reason already said on stderr (`kflame record
/// -- false` exits as the command did, as `perf record` does).
#[derive(Debug)]
pub(crate) struct Exit(pub(crate) u8);

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit status {}", self.0)
    }
}

impl std::error::Error for Exit {}

/// A positive number of seconds, fractions allowed (`0.5`, `120`): the value of `--duration`,
/// `--timeout` and the like.
pub(crate) fn parse_seconds(s: &str) -> Result<std::time::Duration, String> {
    let v: f64 = s.parse().map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !(v > 0.0 && v < 1e9) {
        return Err(format!("`{s}`: expected a positive number of seconds"));
    }
    Ok(std::time::Duration::from_secs_f64(v))
}
