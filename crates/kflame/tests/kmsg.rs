//! `/dev/kmsg`: the record parser on real records, the report follower against the report
//! extractor reading the same reports as dmesg text, the quiet period that ends a report
//! without an end marker, and (live) the device itself.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use kflame::record::kmsg::{Follower, Kmsg, Start};
use kflame::report::kmsg::{KmsgReports, Record, parse_record, records};
use kflame::report::{Report, ReportExtractor};

fn data(path: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/kernel-log").join(path);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn parse_all(text: &[u8]) -> Vec<Record> {
    records(text).map(|r| parse_record(r).unwrap_or_else(|e| panic!("{e}"))).collect()
}

/// Reports of records fed in one go, then ended as at the end of a stream.
fn follow(recs: &[Record]) -> Vec<Report> {
    let mut x = KmsgReports::new(KmsgReports::QUIET);
    let now = Instant::now();
    let mut out = Vec::new();
    for r in recs {
        x.push(r, now);
        out.extend(std::iter::from_fn(|| x.pop()));
    }
    x.finish();
    out.extend(std::iter::from_fn(|| x.pop()));
    out
}

/// Reports compared without their line numbers (lines of different logs).
fn unnumbered(reports: Vec<Report>) -> Vec<Report> {
    reports.into_iter().map(|r| Report { line: 0, ..r }).collect()
}

/// Real records of a boot: each header's numbers, escapes decoded, the device dictionary of
/// the records that have one, and nothing else.
#[test]
fn real_records_with_escapes_and_dictionaries() {
    let text = data("kmsg/vm-boot-dict.kmsg.txt");
    let recs = parse_all(&text);
    let headers: Vec<&[u8]> = text.split(|&b| b == b'\n').filter(|l| !l.is_empty() && l[0] != b' ').collect();
    assert_eq!(recs.len(), headers.len());
    for (r, h) in recs.iter().zip(&headers) {
        let h = String::from_utf8_lossy(h);
        let fields: Vec<&str> = h.split(';').next().expect("header").split(',').collect();
        assert_eq!(u64::from(r.facility) << 3 | u64::from(r.level), fields[0].parse::<u64>().expect("pri"));
        assert_eq!(r.seq.to_string(), fields[1]);
        assert_eq!(r.ts_usec.to_string(), fields[2]);
        assert!(!r.continuation);
        let escaped = h.contains("\\x09");
        assert_eq!(r.message.contains(&b'\t'), escaped, "{h}");
        assert!(!r.message.windows(2).any(|w| w == b"\\x"), "{h}");
    }
    let tabbed = recs.iter().find(|r| r.seq == 92).expect("record 92");
    assert_eq!(tabbed.message, b"\tTrampoline variant of Tasks RCU enabled.");
    // The device messages carry SUBSYSTEM and DEVICE; the others nothing.
    for r in &recs {
        let device = r.message.starts_with(b"virtio");
        let keys: Vec<&str> = r.dict.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, if device { vec!["SUBSYSTEM", "DEVICE"] } else { vec![] }, "record {}", r.seq);
    }
    let blk = recs.iter().find(|r| r.seq == 280).expect("record 280");
    assert_eq!(blk.level, 5);
    assert_eq!(blk.dict[1], ("DEVICE".to_string(), b"+virtio:virtio1".to_vec()));
}

/// A real hung-task report read raw from /dev/kmsg gives, through the follower, the report
/// the extractor finds in the same report printed by dmesg (same title, frames, task, time).
#[test]
fn hung_task_from_kmsg_equals_the_dmesg_report() {
    let recs = parse_all(&data("captures/kmsg-raw-hung-task.txt"));
    let from_kmsg = unnumbered(follow(&recs));
    let from_dmesg =
        unnumbered(ReportExtractor::extract_all(&data("captures/dmesg-hung-task-calltrace.txt")));
    assert_eq!(from_kmsg.len(), 1);
    assert!(from_kmsg[0].title.starts_with("INFO: task hung"), "{}", from_kmsg[0].title);
    assert!(!from_kmsg[0].frames.is_empty());
    assert_eq!(from_kmsg, from_dmesg);
}

/// Records made from a real console log (a WARNING with its end marker, then a BUG) give
/// the reports of the console log's own lines, in order, each as soon as it ended.
#[test]
fn console_log_records_give_the_logs_reports() {
    let recs = parse_all(&data("kmsg/kernelci-boot-005.kmsg.txt"));
    let log = data("kernelci/linux_boot/linux_boot_005.log");
    // The lines the records were made from (see the README).
    let lines: Vec<&[u8]> = log.split(|&b| b == b'\n').skip(1689).take(2260 - 1689).collect();
    let from_log = unnumbered(ReportExtractor::extract_all(&lines.join(&b'\n')));
    let from_kmsg = unnumbered(follow(&recs));
    assert!(from_log.len() >= 2, "{from_log:#?}");
    assert!(from_kmsg[0].title.starts_with("WARNING"), "{}", from_kmsg[0].title);
    assert!(from_kmsg.iter().any(|r| r.title.starts_with("BUG")));
    assert_eq!(from_kmsg, from_log);
    // The WARNING ends at its end marker: it is handed out before the records after it.
    let end = recs.iter().position(|r| r.message.starts_with(b"---[ end trace")).expect("end marker");
    let mut x = KmsgReports::new(KmsgReports::QUIET);
    for r in &recs[..=end] {
        x.push(r, Instant::now());
    }
    assert_eq!(x.pop().map(|r| r.title), Some(from_kmsg[0].title.clone()));
}

/// A report without an end marker (a hung task) ends once the log has been quiet for the
/// quiet period, not before.
#[test]
fn a_quiet_log_ends_the_open_report() {
    let recs = parse_all(&data("captures/kmsg-raw-hung-task.txt"));
    let quiet = Duration::from_secs(5);
    let mut x = KmsgReports::new(quiet);
    let t0 = Instant::now();
    // The last record is an unrelated message much later: leave it out.
    for r in &recs[..recs.len() - 1] {
        x.push(r, t0);
    }
    assert!(x.pop().is_none(), "the report is still open");
    x.idle(t0 + quiet / 2);
    assert!(x.pop().is_none(), "ended before the quiet period");
    x.idle(t0 + quiet);
    let r = x.pop().expect("ended by the quiet period");
    assert!(r.title.starts_with("INFO: task hung"), "{}", r.title);
    assert_eq!(r.time.as_deref(), Some("3626.182076"));
    assert!(x.pop().is_none());
}

/// Live: a line written to /dev/kmsg (as root) is read back by a follower opened at the
/// end, with the level it was written with and the facility of programs (user, 1).
#[test]
#[allow(clippy::print_stderr)]
fn live_a_line_written_to_dev_kmsg_is_read_back() {
    let mut k = match Kmsg::open(Start::Now) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("skipping: {e}");
            return;
        }
    };
    let text = format!("kflame test {} {:?}", std::process::id(), Instant::now());
    if let Err(e) = std::fs::write("/dev/kmsg", format!("<4>{text}\n")) {
        // live: writes a line to the kernel log
        eprintln!("skipping: cannot write to /dev/kmsg ({e})");
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let found = loop {
        assert!(Instant::now() < deadline, "the line never came back");
        match k.read(Duration::from_millis(500)).expect("read") {
            Some(r) if r.message == text.as_bytes() => break r,
            _ => {}
        }
    };
    assert_eq!((found.level, found.facility), (4, 1));
    assert_eq!(k.counters.malformed, 0);
    // The follower reads such a line and returns within its timeout, with no report.
    let mut f = Follower::new(Kmsg::open(Start::Now).expect("open"), KmsgReports::QUIET);
    std::fs::write("/dev/kmsg", format!("<4>{text} again\n")).expect("write"); // live: the kernel log
    let started = Instant::now();
    let reports = f.poll(Duration::from_secs(2)).expect("poll");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(f.kmsg.counters.records >= 1);
    assert!(reports.iter().all(|r| !r.report.header.contains("kflame test")), "{reports:?}");
    // From the beginning: the oldest record the kernel holds comes first, and nothing
    // waits when everything has been read.
    let mut k = Kmsg::open(Start::Beginning).expect("open");
    let first = k.read(Duration::from_secs(1)).expect("read").expect("a record");
    assert!(first.seq < found.seq);
    let started = Instant::now();
    while k.read(Duration::from_millis(200)).expect("read").is_some() {}
    assert!(started.elapsed() < Duration::from_secs(30));
}
