//! `kflame completions SHELL`: shell completion scripts.

use std::io::Write;

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;

use crate::output;

/// Arguments of `kflame completions`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The shell to generate completions for.
    #[arg(value_enum)]
    shell: Shell,
}

pub(crate) fn run(args: Args) -> Result<()> {
    let mut cmd = crate::Cli::command();
    // clap_complete panics when its writer fails: generate into memory, write it here.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "kflame", &mut script);
    let mut out = output::open(None)?;
    out.write_all(&script).context("writing the completion script")?;
    out.flush().context("writing the completion script")
}
