//! `kflame completions SHELL`: shell completion scripts.

use anyhow::Result;
use clap::CommandFactory;
use clap_complete::Shell;

/// Arguments of `kflame completions`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The shell to generate completions for.
    #[arg(value_enum)]
    shell: Shell,
}

pub(crate) fn run(args: Args) -> Result<()> {
    let mut cmd = crate::Cli::command();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(args.shell, &mut cmd, "kflame", &mut out);
    Ok(())
}
