//! Writes a small static site that shows a folded profile with the served viewer: the page
//! fetches its data as JSON and loads the viewer's ES modules, the same modules the
//! self-contained page (`kflame flamegraph --format html`) inlines. A web server (or the
//! future `kflame serve`) does the same with its own URLs.
//!
//! ```text
//! cargo run -p kflame --example viewer_site -- profile.folded site/
//! cd site && python3 -m http.server    # then open http://localhost:8000/
//! ```
//!
//! Writes `site/index.html`, `site/profile.json` and the assets under `site/viewer/`.

// A program, not the library: it tells its user what went wrong.
#![allow(clippy::print_stderr)]

use std::fs::{self, File};
use std::io::BufReader;
use std::path::PathBuf;
use std::process::ExitCode;

use kflame::diag::Diagnostics;
use kflame::fold::read::read_folded;
use kflame::fold::{Meta, StackCounts, Stacks};
use kflame::render::html::{ASSETS, HtmlOptions, HtmlProfile, encode, served_page};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, dir] = &args[..] else {
        eprintln!("usage: viewer_site FOLDED OUTDIR");
        return ExitCode::from(2);
    };
    match run(input, &PathBuf::from(dir)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("viewer_site: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(input: &str, dir: &std::path::Path) -> Result<(), String> {
    let file = File::open(input).map_err(|e| format!("{input}: {e}"))?;
    let (mut meta, mut diag, mut counts) = (Meta::default(), Diagnostics::new(), StackCounts::new());
    read_folded(BufReader::new(file), &mut meta, &mut diag, |line| counts.add(line.stack, line.weight))
        .map_err(|e| format!("{input}: {e}"))?;
    if diag.skipped() > 0 {
        eprintln!("viewer_site: {input}: {} malformed lines skipped", diag.skipped());
    }
    let stacks = Stacks::Counts(counts);
    let opts = HtmlOptions::default();
    let data = encode(&HtmlProfile::new(&stacks, &meta), &opts);

    let write =
        |path: PathBuf, bytes: &[u8]| fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()));
    fs::create_dir_all(dir.join("viewer")).map_err(|e| format!("{}: {e}", dir.display()))?;
    for asset in ASSETS {
        write(dir.join("viewer").join(asset.path), asset.text.as_bytes())?;
    }
    write(dir.join("profile.json"), data.to_json().as_bytes())?;
    let mut page = Vec::new();
    served_page(&mut page, opts.title_or_default(), "profile.json", "viewer/").map_err(|e| e.to_string())?;
    write(dir.join("index.html"), &page)
}
