//! The report extractor finds the same reports whatever form the console gave the log.
//!
//! Method: every file of syzkaller's report corpus that is not held out (see
//! `tests/data/kernel-log/README.md`) is rewritten in the forms kernel logs reach a user
//! in: without timestamps (a console without printk.time), with printk caller ids, with
//! syslog priorities (`<4>`), with CRLF line ends, with another program's line between
//! the kernel's, as syslog lines (`Dec  4 15:56:12 host kern.warn kernel: `), with
//! trailing blanks, and with `** N printk messages dropped **` before some lines. In each
//! form a file must give a bug report exactly when the original does, its first of the
//! same kind; where the form keeps every line's context (all but the one without
//! timestamps, which also loses the caller ids that untangle two CPUs' lines, and the one
//! whose notes say lines were lost), all its bug reports, with the same titles.

#![allow(clippy::print_stdout)]

use std::fs;
use std::path::Path;

mod common;
use common::syzkaller::{crash_reports, held_out_name, split};
use kflame::report::Kind;

/// A kernel timestamp, with the caller id that may follow it.
fn stamp() -> regex::Regex {
    regex::Regex::new(r"^\[ *[0-9]+\.[0-9]+\](?:\[ *[CT][0-9]+\])? ?").expect("pattern")
}

const FORMS: [&str; 8] = [
    "no timestamps",
    "caller ids",
    "syslog priority",
    "CRLF",
    "another program's lines",
    "syslog lines",
    "trailing blanks",
    "dropped-messages notes",
];

fn rewrite(log: &str, form: usize, stamp: &regex::Regex) -> String {
    let anywhere = regex::Regex::new(r"\[ *[0-9]+\.[0-9]+\](?:\[ *[CT][0-9]+\])? ?").expect("pattern");
    let mut out = String::with_capacity(log.len() * 2);
    for (i, line) in log.lines().enumerate() {
        match form {
            0 => out.push_str(&stamp.replace(line, "")),
            // The caller id after the first timestamp, wherever it is (`login: [ 1.2] `).
            1 => match anywhere.find(line) {
                Some(m) if !m.as_str().contains("][") => out.push_str(&format!(
                    "{}{}[ T1234] {}",
                    &line[..m.start()],
                    m.as_str().trim_end(),
                    &line[m.end()..]
                )),
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
        let all = |log: &str| -> Vec<(Kind, String)> {
            crash_reports(log.as_bytes()).into_iter().map(|r| (r.kind(), r.title)).collect()
        };
        let want = all(&log);
        for (f, form) in FORMS.iter().enumerate() {
            let got = all(&rewrite(&log, f, &stamp));
            checked += 1;
            // Without timestamps or with lost lines, the first report and its kind.
            let same = if f == 0 || f == 7 {
                got.first().map(|r| r.0) == want.first().map(|r| r.0)
            } else {
                got == want
            };
            if !same {
                failures.push(format!("{n} ({form}): {want:?} became {got:?}"));
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
