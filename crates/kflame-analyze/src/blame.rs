//! The source file a report is blamed on, the one whose maintainers should hear of it: the
//! first file the report names (header, then stacks in the order the kernel printed them)
//! that is not generic code (`blame-ignore.txt`), refined to a deeper file of the same
//! directory further down (`drivers/net/` → `drivers/net/wireless/x/y.c`).
//!
//! This is a maintainers' notion, not the culprit's: a use-after-free found in `lib/` is
//! blamed on the caller's driver, while the culprit frame may be a `net/core` helper.

use std::sync::LazyLock;

use kflame::report::{Frame, Kind, LOCK_SITE, Report};
use regex::{Regex, RegexSet};
use serde::Serialize;

/// The file a report is blamed on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Blame {
    /// Path from the tree's root (`net/ipv4/ip_tunnel.c`).
    pub file: String,
    /// The function of the frame that named it, when a frame did (not the header).
    pub function: Option<String>,
}

const IGNORE_DATA: &str = include_str!("blame-ignore.txt");

static IGNORE: LazyLock<RegexSet> = LazyLock::new(|| {
    let patterns = IGNORE_DATA.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'));
    RegexSet::new(patterns).expect("blame-ignore.txt holds valid regular expressions")
});

/// `path/file.c:123` in a line (a C source or header with a line number).
static FILE_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"([a-zA-Z0-9_\-\./]*[a-zA-Z0-9_\-]+\.[ch]):[0-9]+").expect("valid"));

/// Lines that name a file without being where the problem is: lockdep's lock sites
/// (`..., at: func+0x1/0x2 file.c:12`) and held-lock lists (`#0: ...`).
static NOT_A_SITE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(hardirqs|softirqs)\s+last\s+(enabled|disabled)|,\s+at:\s+|^\s*#\d+:").expect("valid")
});

/// Whether `file` is generic code a report is not blamed on.
pub fn is_ignored(file: &str) -> bool {
    IGNORE.is_match(file)
}

/// The file `report` is blamed on, `None` when no line of it names a source file.
pub fn blame(report: &Report) -> Option<Blame> {
    let mut sites: Vec<(String, Option<&str>)> = Vec::new();
    if let Some(f) = file_of(&report.header) {
        sites.push((f, None));
    }
    for f in ordered_frames(report) {
        if NOT_A_SITE.is_match(&f.raw) {
            continue;
        }
        let file = f.source.as_deref().map(|s| s.split(':').next().unwrap_or(s).to_string());
        if let Some(file) =
            file.filter(|x| x.ends_with(".c") || x.ends_with(".h")).or_else(|| file_of(&f.raw))
        {
            sites.push((clean(&file), Some(f.function.as_str())));
        }
    }
    let first = sites.iter().position(|(f, _)| !is_ignored(f));
    let (at, (file, function)) = match first {
        Some(i) => (i, sites[i].clone()),
        // Never no file at all: the first one named, generic or not, lock sites included
        // (lockdep prints them first).
        None => {
            let lock_site =
                report.extra_stacks.iter().filter(|s| s.label == LOCK_SITE).flat_map(|s| &s.frames);
            let named = lock_site.filter_map(|f| file_of(&f.raw).map(|x| (x, Some(f.function.as_str()))));
            (sites.len(), named.chain(sites.first().cloned()).next()?)
        }
    };
    let mut blamed = Blame { file, function: function.map(str::to_string) };
    // A deeper file under the same directory further down the report is more precise.
    let mut dir = parent(&blamed.file).to_string();
    for (f, func) in sites.iter().skip(at + 1) {
        if is_ignored(f) {
            continue;
        }
        if let Some(rest) = f.strip_prefix(dir.as_str())
            && rest.starts_with('/')
            && rest[1..].contains('/')
        {
            blamed = Blame { file: f.clone(), function: func.map(str::to_string) };
            dir = parent(f).to_string();
        }
    }
    Some(blamed)
}

/// The report's frames in the order the kernel printed them: lockdep prints its stacks
/// (dependency chain, `state was registered at:`) before the backtrace of the current task,
/// other reports their main trace first (`Allocated by task`, `Freed by task` after it).
/// An RCU stall starts at the interrupt that found the stall: the frames before it are the
/// detector's.
fn ordered_frames(report: &Report) -> Vec<&Frame> {
    let extra = report.extra_stacks.iter().filter(|s| s.label != LOCK_SITE).flat_map(|s| s.frames.iter());
    let main = report.frames.iter();
    let all: Vec<&Frame> = if report.kind() == Kind::Lockdep {
        extra.chain(main).collect()
    } else {
        main.chain(extra).collect()
    };
    if report.kind() == Kind::RcuStall
        && let Some(i) = all.iter().position(|f| kflame::report::is_stall_interrupt_entry(&f.function))
    {
        return all[i..].to_vec();
    }
    all
}

fn file_of(line: &str) -> Option<String> {
    FILE_LINE.captures(line).map(|c| clean(&c[1]))
}

/// The top-level directories of a kernel tree: an absolute path (a kernel built elsewhere,
/// `/build/linux/fs/x.c`) is named from the first of them.
const TREE_DIRS: &[&str] = &[
    "arch", "block", "certs", "crypto", "drivers", "fs", "include", "init", "io_uring", "ipc", "kernel",
    "lib", "mm", "net", "rust", "samples", "security", "sound", "tools", "usr", "virt",
];

/// `a/./b/../c.c` → `a/c.c`; `/build/linux/fs/x.c` → `fs/x.c`.
fn clean(path: &str) -> String {
    let path = match path.strip_prefix('/') {
        Some(abs) => {
            let parts: Vec<&str> = abs.split('/').collect();
            match parts.iter().position(|p| TREE_DIRS.contains(p)) {
                Some(i) => return clean(&parts[i..].join("/")),
                None => abs,
            }
        }
        None => path,
    };
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            _ => parts.push(p),
        }
    }
    parts.join("/")
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kflame::report::ReportExtractor;

    fn blamed(log: &str) -> Option<(String, Option<String>)> {
        let r = ReportExtractor::extract_all(log.as_bytes());
        blame(r.first()?).map(|b| (b.file, b.function))
    }

    #[test]
    fn generic_files_are_passed_over() {
        let log = "\
BUG: KASAN: use-after-free in memcpy+0x1/0x2 lib/string.c:10
Call Trace:
 dump_stack+0x1/0x2 lib/dump_stack.c:12
 kasan_report+0x1/0x2 mm/kasan/report.c:12
 memcpy+0x1/0x2 lib/string.c:10
 skb_copy_bits+0x1/0x2 net/core/skbuff.c:20
 foo_rx+0x1/0x2 drivers/net/foo/rx.c:30
";
        assert_eq!(blamed(log), Some(("drivers/net/foo/rx.c".into(), Some("foo_rx".into()))));
    }

    #[test]
    fn a_deeper_file_of_the_same_directory_wins_and_lock_sites_do_not_count() {
        let log = "\
WARNING: CPU: 0 PID: 1 at net/wireless/core.c:12 wiphy_x+0x1/0x2
Call Trace:
 cfg80211_y+0x1/0x2 net/wireless/core.c:40
 driver_z+0x1/0x2 net/wireless/drv/z.c:50
";
        assert_eq!(blamed(log), Some(("net/wireless/drv/z.c".into(), Some("driver_z".into()))));
        assert!(is_ignored("include/linux/skbuff.h") && is_ignored("kernel/sched/core.c"));
        assert!(!is_ignored("net/ipv4/tcp.c"));
        assert_eq!(clean("fs/ext4/../ext4/./inode.c"), "fs/ext4/inode.c");
        assert_eq!(clean("/build/linux-6.1/fs/ext4/inode.c"), "fs/ext4/inode.c");
    }

    #[test]
    fn only_generic_files_give_the_first_one() {
        let log = "kernel BUG at lib/list_debug.c:53!\nCall Trace:\n foo+0x1/0x2 mm/slub.c:3\n";
        assert_eq!(blamed(log).map(|b| b.0), Some("lib/list_debug.c".into()));
        assert_eq!(blamed("kernel BUG at foo!\nCall Trace:\n foo+0x1/0x2\n"), None);
    }
}
