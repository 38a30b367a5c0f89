//! `kflame manpages DIR`: the man pages of `kflame` and of each of its commands, from the
//! same clap definitions as `--help` (clap_mangen), as `scripts/package` installs them.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::CommandFactory;

/// Arguments of `kflame manpages`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The directory to write `kflame.1`, `kflame-record.1`, ... into (made when missing).
    #[arg(value_name = "DIR")]
    dir: PathBuf,
}

pub(crate) fn run(args: Args) -> Result<()> {
    if args.dir.exists() && !args.dir.is_dir() {
        bail!("{} is not a directory", args.dir.display());
    }
    std::fs::create_dir_all(&args.dir).with_context(|| format!("making {}", args.dir.display()))?;
    clap_mangen::generate_to(crate::Cli::command(), &args.dir)
        .with_context(|| format!("writing the man pages into {}", args.dir.display()))?;
    Ok(())
}
