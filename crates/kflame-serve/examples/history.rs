//! Writes a kflame history database of real stacks (see `tests/common/history.rs`) for the
//! browser tests and the benchmark:
//!
//! ```text
//! cargo run -p kflame-serve --example history -- OUT.db SECONDS
//! cargo run -p kflame-serve --example history -- --follow OUT.db FROM TO PACE_MS
//! cargo run -p kflame-serve --example history -- --fleet OUT.db SECONDS
//! cargo run -p kflame-serve --example history -- --reports OUT.db SECONDS
//! cargo run -p kflame-serve --example history -- --add-corpus DB CORPUS_DIR ROUNDS
//! ```
//!
//! `--follow` goes on writing a history written by the first form, from second FROM to TO,
//! one second every PACE_MS milliseconds, as a running watcher does (the `--live` test).
//! `--fleet` writes three hosts (`db-1`, `db-2`, `web-1`), each its own mix and amount of
//! the stacks (the host selection test). `--reports` adds a real kernel WARNING stored on two
//! hosts to the first form's history (the report panel test). `--add-corpus` stores the reports
//! of syzkaller's corpus (`crates/kflame/tests/data/kernel-log/syzkaller/report`) ROUNDS times
//! over, spread over an existing history's span and hosts (the report benchmark).

// A program, not the library: it tells its user what went wrong.
#![allow(clippy::print_stderr)]

#[path = "../tests/common/history.rs"]
mod history;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, db, from, to, pace] = &args[..]
        && flag == "--follow"
    {
        let num = |s: &str| s.parse::<i64>().ok();
        let (Some(from), Some(to), Some(pace)) = (num(from), num(to), num(pace)) else {
            eprintln!("usage: history --follow OUT.db FROM TO PACE_MS (numbers)");
            return ExitCode::from(2);
        };
        let pace = std::time::Duration::from_millis(pace.max(0) as u64);
        return match history::follow(std::path::Path::new(db), from, to, pace) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("history: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if let [flag, db, dir, rounds] = &args[..]
        && flag == "--add-corpus"
    {
        let Ok(rounds) = rounds.parse::<usize>() else {
            eprintln!("usage: history --add-corpus DB CORPUS_DIR ROUNDS (a number)");
            return ExitCode::from(2);
        };
        return match history::add_corpus_reports(std::path::Path::new(db), std::path::Path::new(dir), rounds)
        {
            Ok(n) => {
                eprintln!("history: {n} reports stored");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("history: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let (mode, args) = match args.split_first() {
        Some((flag, rest)) if flag == "--fleet" || flag == "--reports" => (flag.as_str(), rest),
        _ => ("", &args[..]),
    };
    let [out, seconds] = args else {
        eprintln!(
            "usage: history [--fleet|--reports] OUT.db SECONDS | history --follow OUT.db FROM TO PACE_MS"
        );
        return ExitCode::from(2);
    };
    let Ok(seconds) = seconds.parse::<i64>() else {
        eprintln!("history: {seconds:?}: expected a number of seconds");
        return ExitCode::from(2);
    };
    if std::path::Path::new(out).exists() {
        eprintln!("history: {out} exists; give a new file");
        return ExitCode::FAILURE;
    }
    let path = std::path::Path::new(out);
    let written = match mode {
        "--fleet" => history::write_fleet(path, seconds).map(drop),
        "--reports" => {
            history::write(path, seconds, false).and_then(|_| history::add_similar_reports(path)).map(drop)
        }
        _ => history::write(path, seconds, false).map(drop),
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("history: {e}");
            ExitCode::FAILURE
        }
    }
}
