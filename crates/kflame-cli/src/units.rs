//! Units of several inputs merged into one output: the same unit, or an input without a
//! header next to samples or periods, add up; anything else is an error naming both inputs
//! and both units, unless `--mixed-units` asks to add them anyway (with a warning).

use anyhow::{Result, bail};
use kflame::fold::{Meta, MetaMerge};

use crate::output;

/// `--mixed-units`, shared by the commands that merge inputs.
#[derive(clap::Args, Debug, Default, Clone, Copy)]
pub(crate) struct MixedUnits {
    /// Add up (or for diff, compare) inputs whose `# unit=` headers differ (samples and
    /// bytes, bytes and ns...), as plain numbers; an input without a header is counted in the
    /// other's unit. Without it such inputs are refused. Files without a header (FlameGraph's
    /// tools write none) go with samples and periods anyway.
    #[arg(long)]
    pub(crate) mixed_units: bool,
}

impl MixedUnits {
    /// A merger of the inputs' metadata.
    pub(crate) fn merger(self) -> MetaMerge {
        MetaMerge::new(self.mixed_units)
    }
}

/// Adds the metadata of input `name` to `merge`; `has_stacks` is false for an empty input.
pub(crate) fn add(merge: &mut MetaMerge, name: &str, meta: &Meta, has_stacks: bool) -> Result<()> {
    check(merge, name, meta, has_stacks, ("added", "adds"))
}

/// [`add`] for inputs that are compared rather than added (`kflame diff`).
pub(crate) fn compare(merge: &mut MetaMerge, name: &str, meta: &Meta, has_stacks: bool) -> Result<()> {
    check(merge, name, meta, has_stacks, ("compared", "compares"))
}

/// `verb`: how the weights are combined, as (past participle, third person).
fn check(merge: &mut MetaMerge, name: &str, meta: &Meta, has_stacks: bool, verb: (&str, &str)) -> Result<()> {
    match merge.add(name, meta, has_stacks) {
        Ok(None) => Ok(()),
        Ok(Some(warning)) => {
            output::message(format!("warning: {warning} (--mixed-units)"));
            Ok(())
        }
        Err(c) => {
            bail!("{}: their weights cannot be {} (--mixed-units {} them anyway)", c.inputs(), verb.0, verb.1)
        }
    }
}
