//! `kflame scatter`: per-event JSON lines → one self-contained latency scatter page.

use std::io::BufReader;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use kflame::diag::Diagnostics;
use kflame::render::html::scatter::{ScatterBuilder, ScatterOptions, write_scatter_page};

use crate::input;
use crate::output;

/// Arguments of `kflame scatter`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Each input is JSON lines, one event each, as written by `kflame record -o FILE.json` and
`kflame collapse --events-json FILE` (system calls, off-CPU waits, probe pairs,
function_graph calls); gzip, zstd and xz inputs are decompressed. Events without a
duration are skipped and counted; events without a stack are kept under `[no stack]`.

Examples:
  kflame record --syscalls -d 10 -o sys.json &&
      kflame scatter sys.json -o scatter.html
  kflame collapse --mode syscalls --events-json ev.json trace.txt > /dev/null
  kflame scatter ev.json -o scatter.html --title 'dd latency'")]
pub(crate) struct Args {
    /// Event files (JSON lines; `-` or none for stdin).
    #[arg(value_name = "EVENTS")]
    files: Vec<String>,
    /// Write the page here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Page title.
    #[arg(long)]
    title: Option<String>,
}

/// Runs `kflame scatter`.
pub(crate) fn run(args: Args) -> Result<()> {
    let files = input::paths_or_stdin(&args.files)?;
    let mut builder = ScatterBuilder::new();
    let mut notes = Vec::new();
    for path in &files {
        let input = input::Input::open(path)?;
        let name = input.name.clone();
        let before = builder.len();
        let mut diag = Diagnostics::new();
        let reader = BufReader::with_capacity(1 << 16, input.reader());
        builder.read_json_lines(reader, &mut diag).with_context(|| format!("reading {name}"))?;
        let report = diag.report(&name).to_string();
        output::message(&report);
        notes.extend(report.lines().map(String::from));
        if builder.len() == before && diag.skipped() > 0 {
            bail!(
                "{name}: no event could be read (every line was skipped, see above); expected JSON event lines from `kflame record -o FILE.json` or `kflame collapse --events-json`"
            );
        }
        if builder.len() == before {
            output::message(format!("{name}: no events"));
        }
    }
    if builder.without_stack() > 0 {
        let n = builder.without_stack();
        notes.push(format!("{n} events without a stack are kept under the frame [no stack]"));
    }
    if builder.untimed_left_out() > 0 {
        let n = builder.untimed_left_out();
        let line = format!("{n} events without a time stamp are left out (other events have one)");
        output::message(&line);
        notes.push(line);
    }
    let opts = ScatterOptions {
        title: args.title.clone(),
        subtitle: Some(format!(
            "{} events from {}",
            builder.len() - builder.untimed_left_out(),
            files.join(", ")
        )),
        notes: (!notes.is_empty()).then(|| notes.join("\n")),
    };
    let data = builder.encode(&opts);
    let mut out = output::create(args.output.as_deref())?;
    write_scatter_page(&mut out, &data, &opts).context("writing the scatter page")?;
    out.finish().context("writing the scatter page")
}
