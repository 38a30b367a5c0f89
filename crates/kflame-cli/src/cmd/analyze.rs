//! `kflame analyze` and `kflame source`: flags onto the `kflame-analyze` crate. Kernel logs
//! and crash output become report groups (Error / Resolution / Summary), any other input a
//! profile summary; `source` looks a function up in a kernel tree.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use kflame_analyze::fixes::GitFixes;
use kflame_analyze::run::Run;
use kflame_analyze::source::{KernelSource, SourceIndex, SourceLookup, Vmlinux};
use kflame_analyze::{FixSearch, output};

use crate::input::{self, Input};
use crate::output as out;

/// Output format of `analyze`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OutFormat {
    /// Plain text.
    Text,
    /// Markdown.
    Md,
}

/// Arguments of `kflame analyze`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Kernel logs (dmesg, journal, console, syslog) and crash `bt` output give one section per
group of reports with the same title (syzkaller's form), most frequent first: Error (kind,
title, kernel, taint, task, culprit frame with a confidence, file to blame), Resolution
(the culprit's source and the file's MAINTAINERS sections with --kernel-src, its exact
line with --vmlinux) and Summary. Any other input
`kflame collapse` reads gives its hottest functions and paths and the kernel's share.

Examples:
  kflame analyze /var/log/kern.log
  kflame analyze --kernel-src ~/linux --vmlinux ~/linux/vmlinux --format md \\
      console.log
  kflame analyze --json dmesg.txt > report.json
  kflame analyze perf.data")]
pub(crate) struct Args {
    /// Inputs (kernel logs, crash output, or profiles); stdin when none.
    #[arg(value_name = "INPUT")]
    files: Vec<String>,
    /// Text (default) or Markdown.
    #[arg(long, value_enum, default_value = "text", conflicts_with = "json")]
    format: OutFormat,
    /// JSON (schema `kflame-analyze`, version 1; see the kflame-analyze crate documentation).
    #[arg(long)]
    json: bool,
    /// At most this many report groups, and functions and paths per profile.
    #[arg(long, value_name = "N", default_value_t = 10)]
    limit: usize,
    #[command(flatten)]
    kernel: KernelArgs,
    /// Write here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// A kernel tree and git history that explain reports: `kflame analyze`'s and `kflame
/// serve`'s flags.
#[derive(clap::Args, Debug)]
pub(crate) struct KernelArgs {
    /// A kernel source tree: the culprit's definition, its callers, and the MAINTAINERS
    /// sections of the file to blame.
    #[arg(long, value_name = "DIR")]
    kernel_src: Option<PathBuf>,
    /// The index of --kernel-src (default: in the user's cache directory).
    #[arg(long, value_name = "FILE", requires = "kernel_src")]
    index: Option<PathBuf>,
    /// The kernel image with DWARF matching the reports: `func+0x1a/0x80` → source line.
    #[arg(long, value_name = "FILE", requires = "kernel_src")]
    vmlinux: Option<PathBuf>,
    /// A kernel git history to search for fixes of each group's culprit (indexed on first
    /// use, as `kflame fixes` does; the Resolution lists the query and the ranked commits).
    #[arg(long, value_name = "DIR")]
    kernel_git: Option<PathBuf>,
    /// With --kernel-git: the revision the reports' kernel was built from; commits after it
    /// rank first.
    #[arg(long, value_name = "REV", requires = "kernel_git")]
    after: Option<String>,
    /// With --kernel-git: where its fix index lives (default: inside the repository's git dir).
    #[arg(long, value_name = "DIR", requires = "kernel_git")]
    fix_index: Option<PathBuf>,
}

impl KernelArgs {
    /// The tree's index and the history's fix index, opened (built or updated the first time).
    pub(crate) fn open(&self) -> Result<(Option<KernelSource>, Option<GitFixes>)> {
        let fixes = match &self.kernel_git {
            Some(git) => Some(GitFixes {
                index: super::fixes::open_index(git, self.fix_index.as_deref())?,
                after: self.after.clone(),
            }),
            None => None,
        };
        let source = match &self.kernel_src {
            Some(tree) => {
                let index = open_tree(tree, self.index.as_deref())?;
                let vmlinux = self.vmlinux.as_deref().map(Vmlinux::open).transpose()?;
                Some(KernelSource { index, vmlinux })
            }
            None => None,
        };
        Ok((source, fixes))
    }
}

/// Arguments of `kflame source`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
The tree is indexed on first use (all .c and .h files: definitions, calls) and the index is
updated for files whose size or mtime changed.

Examples:
  kflame source vfs_read --kernel-src ~/linux
  kflame source __x64_sys_openat --kernel-src ~/linux --callers")]
pub(crate) struct SourceArgs {
    /// Function (or macro) name; compiler suffixes such as `.isra.0` are ignored.
    #[arg(value_name = "FUNC")]
    function: String,
    /// The kernel source tree.
    #[arg(long, value_name = "DIR")]
    kernel_src: PathBuf,
    /// The index file (default: in the user's cache directory).
    #[arg(long, value_name = "FILE")]
    index: Option<PathBuf>,
    /// List the functions that call it instead of its definition.
    #[arg(long)]
    callers: bool,
    /// JSON output.
    #[arg(long)]
    json: bool,
}

/// Where the index of `tree` lives unless `--index` says.
fn default_index(tree: &Path) -> Result<PathBuf> {
    let Some(cache) = kflame_analyze::source::cache_dir() else {
        bail!("no cache directory (HOME and XDG_CACHE_HOME unset): give the index file with --index");
    };
    Ok(kflame_analyze::source::index_file(&cache, tree))
}

fn open_tree(tree: &Path, index: Option<&Path>) -> Result<SourceIndex> {
    let index = match index {
        Some(i) => i.to_path_buf(),
        None => default_index(tree)?,
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (idx, status) = SourceIndex::open(tree, &index, threads)?;
    if let Some(why) = &status.rebuilt {
        out::message(format!(
            "indexed {} source files of {} ({why}); index {}",
            status.files,
            tree.display(),
            index.display()
        ));
    } else if status.scanned > 0 || status.removed > 0 {
        out::message(format!(
            "index of {}: {} changed files rescanned, {} removed",
            tree.display(),
            status.scanned,
            status.removed
        ));
    }
    Ok(idx)
}

pub(crate) fn run(args: Args) -> Result<()> {
    let (source, fixes) = args.kernel.open()?;
    let mut run = Run::new(args.limit);
    for path in input::paths_or_stdin(&args.files)? {
        let input = Input::open(&path)?;
        if input.is_empty() {
            out::message(format!("warning: {} is empty", input.name));
            continue;
        }
        run.add(input, None)?;
    }
    let lookup = source.as_ref().map(|s| s as &dyn SourceLookup);
    let analysis = run.finish(lookup, fixes.as_ref().map(|f| f as &dyn FixSearch))?;
    let text = if args.json {
        output::json(&analysis)
    } else {
        output::text(&analysis, args.format == OutFormat::Md)
    };
    let mut w = out::create(args.output.as_deref())?;
    w.write_all(text.as_bytes()).context("writing the analysis")?;
    w.finish().context("writing the analysis")?;
    Ok(())
}

pub(crate) fn run_source(args: SourceArgs) -> Result<()> {
    let index = open_tree(&args.kernel_src, args.index.as_deref())?;
    let src = KernelSource { index, vmlinux: None };
    let mut text = String::new();
    if args.callers {
        let callers = src.callers(&args.function);
        if args.json {
            text = serde_json::to_string_pretty(&callers)? + "\n";
        } else {
            for c in &callers {
                text.push_str(&format!("{}:{}: {}\n", c.file, c.line, c.function));
            }
        }
        if callers.is_empty() {
            out::message(format!("no function of {} calls {}", args.kernel_src.display(), args.function));
        }
    } else {
        let defs = src.definitions(&args.function);
        if defs.is_empty() {
            bail!("{} is not defined in {}", args.function, args.kernel_src.display());
        }
        if args.json {
            let mut v = Vec::new();
            for d in &defs {
                let body = src.text(&d.file, d.start, d.end)?;
                v.push(serde_json::json!({
                    "name": d.name, "file": d.file, "start": d.start, "end": d.end, "kind": d.kind, "text": body,
                }));
            }
            text = serde_json::to_string_pretty(&v)? + "\n";
        } else {
            for d in &defs {
                text.push_str(&format!("{}:{}-{} ({})\n", d.file, d.start, d.end, d.kind));
                text.push_str(&src.text(&d.file, d.start, d.end)?);
                text.push('\n');
            }
        }
    }
    let mut w = out::create(None)?;
    w.write_all(text.as_bytes()).context("writing the output")?;
    w.finish().context("writing the output")?;
    Ok(())
}
