//! One module per subcommand.

pub(crate) mod collapse;
pub(crate) mod completions;
pub(crate) mod record;
