//! The report extractor finds the same reports whatever form the console gave the log.
//!
//! Method: every file of syzkaller's report corpus that is not held out (see
//! `tests/data/kernel-log/README.md`) is rewritten in the forms kernel logs reach a user
//! in: without timestamps (a console without printk.time), with printk caller ids, with
//! syslog priorities (`<4>`), with CRLF line ends, with another program's line between
//! the kernel's, as syslog lines (`Dec  4 15:56:12 host kern.warn kernel: `), with
//! trailing blanks, with `** N printk messages dropped **` before some lines, and after
//! syz-manager's own time (`2018/01/09 14:28:48 `). In each form a file must give a bug
//! report exactly when the original does, and of the same kind.

#![allow(clippy::print_stdout)]

use std::fs;
use std::path::Path;

mod common;
use common::syzkaller::{crash_reports, held_out_name, split};

/// A kernel timestamp, with the caller id that may follow it.
fn stamp() -> regex::Regex {
    regex::Regex::new(r"^\[ *[0-9]+\.[0-9]+\](?:\[ *[CT][0-9]+\])? ?").expect("pattern")
}

const FORMS: [&str; 9] = [
    "no timestamps",
    "caller ids",
    "syslog priority",
    "CRLF",
    "another program's lines",
    "syslog lines",
    "trailing blanks",
    "dropped-messages notes",
    "syz-manager time",
];

fn rewrite(log: &str, form: usize, stamp: &regex::Regex) -> String {
    let mut out = String::with_capacity(log.len() * 2);
    for (i, line) in log.lines().enumerate() {
        match form {
            0 => out.push_str(&stamp.replace(line, "")),
            1 => match stamp.find(line) {
                Some(m) if !m.as_str().contains("][") => {
                    out.push_str(&format!("{}[ T1234] {}", m.as_str().trim_end(), &line[m.end()..]))
                }
                _ => out.push_str(line),
            },
            2 => out.push_str(&format!("<4>{line}")),
            3 => out.push_str(&format!("{line}\r")),
            4 => {
                if i % 7 == 3 {
                    out.push_str("[  999.000000] audit: type=1400 audit(1.2:3): avc:  denied  { read }\n");
                }
                out.push_str(line);
            }
            5 => out.push_str(&format!("Dec  4 15:56:12 syzkaller kern.warn kernel: {line}")),
            6 => out.push_str(&format!("{line}  ")),
            7 if i % 4 == 2 => out.push_str(&format!("** 3 printk messages dropped ** {line}")),
            8 => out.push_str(&format!("2018/01/09 14:28:48 {line}")),
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[test]
fn reports_do_not_depend_on_the_consoles_form() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kernel-log/syzkaller/report");
    let mut names: Vec<String> = fs::read_dir(&dir)
        .expect("corpus folder")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !held_out_name(n))
        .collect();
    names.sort();
    let stamp = stamp();
    let (mut checked, mut failures) = (0, Vec::new());
    for n in &names {
        let data = fs::read(dir.join(n)).unwrap();
        let (_, log) = split(&data);
        let log = String::from_utf8_lossy(log);
        let kind = crash_reports(log.as_bytes()).first().map(kflame::report::Report::kind);
        for (f, form) in FORMS.iter().enumerate() {
            let got =
                crash_reports(rewrite(&log, f, &stamp).as_bytes()).first().map(kflame::report::Report::kind);
            checked += 1;
            if got != kind {
                failures.push(format!("{n} ({form}): {kind:?} became {got:?}"));
            }
        }
    }
    println!(
        "{} corpus files in {} forms: {checked} checked, {} differ",
        names.len(),
        FORMS.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
}
