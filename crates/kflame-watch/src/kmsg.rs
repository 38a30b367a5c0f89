//! Follows `/dev/kmsg` on a thread of its own (through the core's
//! `record::kmsg::Follower`) and hands each kernel report (oops, WARNING, hung task,
//! lockup, RCU stall, OOM kill, sanitizer report) to the watcher's loop over a channel. Only
//! records written after the follower started are read (the boot log is history, not news).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::thread::JoinHandle;
use std::time::Duration;

use kflame::record::kmsg::{Follower as CoreFollower, Kmsg, Start};
pub use kflame::report::kmsg::KmsgError;

/// One kernel report, owned.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelReport {
    /// When the watcher read it (UTC ns).
    pub time_ns: i64,
    /// `kflame::report::Kind::name` (`oops`, `hung_task`, ...).
    pub kind: &'static str,
    /// The one-line title (`WARNING in foo`).
    pub title: String,
    /// The main stack, folded (root first, `?` frames left out).
    pub stack: String,
    /// The report's lines as printed (`text` given to [`KernelReport::from_report`]: the
    /// task, kernel release, registers and every trace), else its first line and its trace
    /// lines.
    pub text: String,
}

impl KernelReport {
    /// From an extracted report and its lines as printed (empty when unknown).
    pub fn from_report(r: &kflame::report::Report, text: &str, time_ns: i64) -> KernelReport {
        let text = match text.is_empty() {
            false => text.to_string(),
            true => {
                let mut t = r.header.clone();
                for f in r.frames.iter() {
                    t.push('\n');
                    t.push_str(&f.raw);
                }
                t
            }
        };
        KernelReport {
            time_ns,
            kind: r.kind().name(),
            title: r.title.clone(),
            stack: r.function_names(false).join(";"),
            text,
        }
    }
}

/// The follower thread.
#[derive(Debug)]
pub struct Follower {
    thread: Option<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
    lost: Arc<AtomicU64>,
    /// Reports as they end, or why following stopped.
    pub reports: Receiver<Result<KernelReport, String>>,
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// A report ends at its end marker or after this long without records.
const QUIET: Duration = Duration::from_secs(2);

impl Follower {
    /// Opens `path` (`/dev/kmsg`) at its end and starts following it.
    pub fn start(path: &Path) -> Result<Follower, KmsgError> {
        let kmsg = Kmsg::open_path(path, Start::Now)?;
        let stop = Arc::new(AtomicBool::new(false));
        let lost = Arc::new(AtomicU64::new(0));
        let (tx, rx) = channel();
        let (flag, lost_count) = (stop.clone(), lost.clone());
        let thread = std::thread::Builder::new()
            .name("kflame-kmsg".into())
            .spawn(move || {
                let mut f = CoreFollower::new(kmsg, QUIET);
                while !flag.load(Ordering::Relaxed) {
                    match f.poll(Duration::from_millis(200)) {
                        Ok(reports) => {
                            for r in &reports {
                                let report = KernelReport::from_report(&r.report, &r.text, now_ns());
                                if tx.send(Ok(report)).is_err() {
                                    return;
                                }
                            }
                        }
                        Err(e) => {
                            let _ = tx.send(Err(e.to_string()));
                            return;
                        }
                    }
                    let c = f.kmsg.counters;
                    lost_count.store(c.missed.max(c.overwritten), Ordering::Relaxed);
                }
            })
            .map_err(|source| KmsgError::Io {
                path: path.to_path_buf(),
                what: "cannot start a thread",
                source,
            })?;
        Ok(Follower { thread: Some(thread), stop, lost, reports: rx })
    }

    /// Records the kernel overwrote before they were read (a burst of messages).
    pub fn lost(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Raw /dev/kmsg records of a WARNING (as the kernel writes them) become one report
    /// with its stack.
    #[test]
    fn kmsg_records_become_reports() {
        let log = "4,100,5000000,-;------------[ cut here ]------------\n\
                   4,101,5000001,-;WARNING: CPU: 1 PID: 42 at fs/foo.c:12 foo_write+0x10/0x20\n\
                   4,102,5000002,-;CPU: 1 PID: 42 Comm: bash Not tainted 6.1.0 #1\n\
                   4,103,5000003,-;Call Trace:\n\
                   4,104,5000004,-; <TASK>\n\
                   4,105,5000005,-; foo_write+0x10/0x20\n\
                   4,106,5000006,-; vfs_write+0xb0/0x2a0\n\
                   4,107,5000007,-; ksys_write+0x60/0xe0\n\
                   4,108,5000008,-; </TASK>\n\
                   4,109,5000009,-;---[ end trace 0000000000000000 ]---\n";
        use kflame::report::kmsg::{KmsgReports, parse_record, records};
        let mut x = KmsgReports::new(std::time::Duration::from_secs(5));
        let log = format!("6,99,4999999,-;eth0: link up\n{log}6,110,6000000,-;eth0: link down\n");
        for rec in records(log.as_bytes()) {
            x.push(&parse_record(rec).unwrap(), std::time::Instant::now());
        }
        x.finish();
        let reports: Vec<KernelReport> = std::iter::from_fn(|| x.pop_with_text())
            .map(|r| KernelReport::from_report(&r.report, &r.text, 7))
            .collect();
        assert_eq!(reports.len(), 1, "{reports:?}");
        let r = &reports[0];
        assert_eq!(r.kind, "warning");
        assert_eq!(r.stack, "ksys_write;vfs_write;foo_write");
        assert!(r.title.contains("foo_write"), "{}", r.title);
        // The text as printed: the task and kernel line too, through the end of the trace,
        // nothing of the messages around it.
        assert!(
            r.text.contains("vfs_write+0xb0/0x2a0") && r.text.contains("Not tainted 6.1.0"),
            "{}",
            r.text
        );
        assert!(r.text.ends_with("---[ end trace 0000000000000000 ]---"), "{}", r.text);
        assert!(!r.text.contains("link up") && !r.text.contains("link down"), "{}", r.text);
        // Without the text, the first line and the trace.
        let bare = KernelReport::from_report(
            &kflame::report::reports(log.as_bytes()).next().unwrap().unwrap(),
            "",
            7,
        );
        assert!(
            bare.text.starts_with("WARNING: CPU: 1") && bare.text.contains("vfs_write+0xb0/0x2a0"),
            "{}",
            bare.text
        );
    }
}
