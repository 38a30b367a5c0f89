//! Follows `/dev/kmsg` on a thread of its own and hands each kernel report (oops, WARNING,
//! hung task, lockup, RCU stall, OOM kill, sanitizer report: `kflame::report`'s extractor,
//! which reads raw kmsg records) to the watcher's loop over a channel. Only records written
//! after the follower started are read (the boot log is history, not news).
//!
//! To be replaced by `kflame::report::kmsg` once the core library has it.

use std::fs::File;
use std::io::{BufReader, ErrorKind, Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;
use std::time::Duration;

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
    /// The report's first line and its trace lines as printed.
    pub text: String,
}

impl KernelReport {
    /// From an extracted report.
    pub fn from_report(r: &kflame::report::Report, time_ns: i64) -> KernelReport {
        let mut text = r.header.clone();
        for f in r.frames.iter() {
            text.push('\n');
            text.push_str(&f.raw);
        }
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
    /// Reports as they complete.
    pub reports: Receiver<KernelReport>,
}

/// Reads `/dev/kmsg` records without blocking, ending (EOF) when told to stop.
struct KmsgReader {
    file: File,
    stop: Arc<AtomicBool>,
    lost: Arc<AtomicU64>,
    buf: Vec<u8>,
    pos: usize,
}

impl Read for KmsgReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.pos >= self.buf.len() {
            if self.stop.load(Ordering::Relaxed) {
                return Ok(0);
            }
            self.buf.resize(16 * 1024, 0);
            self.pos = 0;
            match self.file.read(&mut self.buf) {
                Ok(0) => {
                    // /dev/kmsg says EAGAIN when it has nothing new; a plain file (tests,
                    // a log being appended to) says end of file: wait the same way.
                    self.buf.clear();
                    std::thread::sleep(Duration::from_millis(200));
                }
                Ok(n) => self.buf.truncate(n),
                Err(e) => {
                    self.buf.clear();
                    match e.kind() {
                        ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(200)),
                        // EPIPE: records were overwritten before we read them; go on.
                        _ if e.raw_os_error() == Some(libc::EPIPE) => {
                            self.lost.fetch_add(1, Ordering::Relaxed);
                        }
                        ErrorKind::Interrupted => {}
                        _ => return Err(e),
                    }
                }
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Why the follower could not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {}: {source}{}", path.display(), hint(source))]
pub struct KmsgError {
    /// The device.
    pub path: PathBuf,
    /// Why.
    pub source: std::io::Error,
}

fn hint(e: &std::io::Error) -> &'static str {
    match e.kind() {
        ErrorKind::PermissionDenied => {
            " (needs root or CAP_SYSLOG with kernel.dmesg_restrict=1; kernel reports will not be stored)"
        }
        _ => "",
    }
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

impl Follower {
    /// Opens `path` (`/dev/kmsg`), skips what it already holds and starts following it.
    pub fn start(path: &Path) -> Result<Follower, KmsgError> {
        let err = |source| KmsgError { path: path.to_path_buf(), source };
        let mut file =
            std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(err)?;
        // SEEK_END on /dev/kmsg: the next read returns the first record written after now.
        file.seek(SeekFrom::End(0)).map_err(err)?;
        let stop = Arc::new(AtomicBool::new(false));
        let lost = Arc::new(AtomicU64::new(0));
        let (tx, rx): (Sender<KernelReport>, _) = channel();
        let reader = KmsgReader { file, stop: stop.clone(), lost: lost.clone(), buf: Vec::new(), pos: 0 };
        let thread = std::thread::Builder::new()
            .name("kflame-kmsg".into())
            .spawn(move || {
                for r in kflame::report::reports(BufReader::new(reader)) {
                    let Ok(r) = r else { break };
                    if tx.send(KernelReport::from_report(&r, now_ns())).is_err() {
                        break;
                    }
                }
            })
            .map_err(err)?;
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

    /// The follower reads only what is written after it started, and stops when dropped.
    #[test]
    fn follows_what_is_appended() {
        use std::io::Write;
        let path = std::env::temp_dir().join(format!("kflame-kmsg-test-{}", std::process::id()));
        let old = "4,1,1000,-;------------[ cut here ]------------\n4,2,1001,-;WARNING: CPU: 0 PID: 1 at a.c:1 old_fn+0x1/0x2\n4,3,1002,-;Call Trace:\n4,4,1003,-; old_fn+0x1/0x2\n4,5,1004,-;---[ end trace 0000000000000000 ]---\n";
        std::fs::write(&path, old).unwrap();
        let f = Follower::start(&path).unwrap();
        let new = old.replace("old_fn", "new_fn");
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(new.as_bytes()).unwrap();
        let r = f.reports.recv_timeout(Duration::from_secs(5)).expect("a report");
        assert_eq!(r.stack, "new_fn");
        assert!(f.reports.recv_timeout(Duration::from_millis(500)).is_err(), "the old report is not news");
        let started = std::time::Instant::now();
        drop(f);
        assert!(started.elapsed() < Duration::from_secs(2));
        std::fs::remove_file(&path).unwrap();
    }

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
        let reports: Vec<KernelReport> = kflame::report::reports(log.as_bytes())
            .map(|r| KernelReport::from_report(&r.unwrap(), 7))
            .collect();
        assert_eq!(reports.len(), 1, "{reports:?}");
        let r = &reports[0];
        assert_eq!(r.kind, "warning");
        assert_eq!(r.stack, "ksys_write;vfs_write;foo_write");
        assert!(r.title.contains("foo_write"), "{}", r.title);
        assert!(r.text.contains("vfs_write+0xb0/0x2a0"));
    }
}
