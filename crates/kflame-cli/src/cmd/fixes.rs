//! `kflame fixes`: which commits of a kernel git history fix a function (the culprit of a
//! crash), ranked by the `kflame-fixes` index.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use kflame_fixes::{Hit, Index, Query};

use crate::output;

/// Arguments of `kflame fixes`.
#[derive(clap::Args, Debug)]
#[command(
    group = clap::ArgGroup::new("what").required(true).multiple(true).args(["function", "file", "words"]),
    after_help = "\
Ranking: BM25 over the functions, files and words each commit touches or says; a function
named in a hunk header (the function a commit changes) weighs more than one it calls; a
commit with a Fixes: trailer weighs more. With --after, commits after REV come first, and
among them those whose Fixes: trailer names REV.

The index is built on first use (all commits reachable from HEAD) in DIR's git directory
(`.git/kflame-fixes/`, or --index) and brought up to date with the new commits each run.

Examples:
  # Who fixed bpf_object__load after v1.2.0 broke it?
  kflame fixes --git ~/linux --function bpf_object__load --after v1.2.0

  # A crash's culprit and a nearby frame, its file and title words, as JSON:
  kflame fixes --git ~/linux --function __bpf_get_stack bpf_get_task_stack \\
      --file kernel/bpf/stackmap.c --words \"null pointer\" --json"
)]
pub(crate) struct Args {
    /// The git repository (work tree or git directory) to search.
    #[arg(long = "git", value_name = "DIR")]
    git: PathBuf,
    /// Function names, exact: the culprit frame first, then nearby frames.
    #[arg(long, value_name = "F", num_args = 1.., action = clap::ArgAction::Append)]
    function: Vec<String>,
    /// Source files, as paths in the repository (`kernel/bpf/stackmap.c`) or base names.
    #[arg(long, value_name = "PATH", num_args = 1.., action = clap::ArgAction::Append)]
    file: Vec<String>,
    /// Words to find in commit messages (a report's title), case-insensitive.
    #[arg(long, value_name = "WORD", num_args = 1.., action = clap::ArgAction::Append)]
    words: Vec<String>,
    /// Rank the commits after this revision (hash, tag, branch) first: the commit that
    /// introduced the bug, or the release it was first seen in.
    #[arg(long, value_name = "REV")]
    after: Option<String>,
    /// How many commits to print.
    #[arg(short = 'n', long, value_name = "N", default_value_t = 10)]
    limit: usize,
    /// Print a JSON array of {id, date, subject, score, matched, fixes_trailer, fixes, after}.
    #[arg(long)]
    json: bool,
    /// Keep the index here instead of in the repository's git directory.
    #[arg(long, value_name = "DIR")]
    index: Option<PathBuf>,
}

/// Opens (indexing new commits) the fix index of the history `git`, saying what was indexed.
pub(crate) fn open_index(git: &Path, index: Option<&Path>) -> Result<Index> {
    let index = Index::open_or_build(git, index)?;
    let st = index.stats();
    if st.added > 0 {
        let how = match &st.rebuilt {
            Some(why) if why != "no index yet" => format!(" (index rebuilt: {why})"),
            _ => String::new(),
        };
        output::message(format!(
            "indexed {} commit{} of {} in {:.1} s{how}; index in {}",
            st.added,
            if st.added == 1 { "" } else { "s" },
            git.display(),
            st.elapsed.as_secs_f64(),
            index.dir().display()
        ));
    }
    Ok(index)
}

/// Runs `kflame fixes`.
pub(crate) fn run(args: Args) -> Result<()> {
    let index = open_index(&args.git, args.index.as_deref())?;
    let q = Query {
        functions: args.function,
        files: args.file,
        words: args.words,
        after: args.after.clone(),
        limit: args.limit.max(1),
    };
    let hits = index.search(&q)?;
    let mut out = output::create(None)?;
    if args.json {
        serde_json::to_writer_pretty(&mut out, &hits).context("writing JSON")?;
        out.write_all(b"\n")?;
    } else {
        if hits.is_empty() {
            output::message(format!("no commit of {} matches", args.git.display()));
        }
        write_text(&mut out, &hits, args.after.as_deref())?;
    }
    out.finish().context("writing the results")
}

fn write_text(out: &mut impl Write, hits: &[Hit], after: Option<&str>) -> std::io::Result<()> {
    for (i, h) in hits.iter().enumerate() {
        let date = h.date.get(..10).unwrap_or(&h.date);
        let place = match after {
            Some(rev) if h.after => format!("  after {rev}"),
            Some(rev) => format!("  not after {rev}"),
            None => String::new(),
        };
        writeln!(out, "{:>2}. {}  {date}  score {:.2}{place}", i + 1, h.id, h.score)?;
        writeln!(out, "    {}", h.subject)?;
        for t in &h.fixes {
            writeln!(out, "    Fixes: {t}")?;
        }
        let why: Vec<String> = h.matched.iter().map(|m| m.replacen(':', " ", 1)).collect();
        writeln!(out, "    matched: {}", if why.is_empty() { "-".to_string() } else { why.join(", ") })?;
    }
    Ok(())
}
