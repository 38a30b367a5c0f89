//! One module per subcommand.

pub(crate) mod collapse;
pub(crate) mod collapse_options;
pub(crate) mod collapse_perf;
pub(crate) mod completions;
pub(crate) mod diff;
pub(crate) mod flamegraph;
pub(crate) mod html;
pub(crate) mod outliers;
pub(crate) mod perf_data;
pub(crate) mod perf_pairs;
pub(crate) mod producers;
pub(crate) mod record;
pub(crate) mod reports;
pub(crate) mod trace_args;
