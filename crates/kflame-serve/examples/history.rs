//! Writes a kflame history database of real stacks (see `tests/common/history.rs`) for the
//! browser tests and the benchmark:
//!
//! ```text
//! cargo run -p kflame-serve --example history -- OUT.db SECONDS
//! ```

// A program, not the library: it tells its user what went wrong.
#![allow(clippy::print_stderr)]

#[path = "../tests/common/history.rs"]
mod history;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [out, seconds] = &args[..] else {
        eprintln!("usage: history OUT.db SECONDS");
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
    match history::write(std::path::Path::new(out), seconds, false) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("history: {e}");
            ExitCode::FAILURE
        }
    }
}
