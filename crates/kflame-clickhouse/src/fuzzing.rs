//! Entry points of the ClickHouse fuzz targets (`fuzz/fuzz_targets/<name>.rs` call them;
//! `tests/fuzz_replay.rs` replays them over `fuzz/corpus/<name>/` and
//! `fuzz/regressions/<name>/`): what a server (or anything listening where one was
//! expected) answers, and what a spool file holds.

use crate::rowbinary::Reader;

/// A fuzz target: panics when a property does not hold.
pub type Target = fn(&[u8]);

/// Every target, by name.
pub const TARGETS: &[(&str, Target)] =
    &[("clickhouse_answer", clickhouse_answer), ("clickhouse_spool", clickhouse_spool)];

/// An HTTP answer of the server, then its body (or, when it is no HTTP answer, the bytes
/// themselves) read as `RowBinary` rows of the column types the reader's queries use:
/// errors, never a panic; no body longer than the answer; no value read past the end.
pub fn clickhouse_answer(data: &[u8]) {
    if let Ok(body) = crate::http::read_response(data) {
        assert!(body.len() <= data.len(), "a body of {} bytes from {} bytes", body.len(), data.len());
        rows(&body);
    }
    rows(data);
}

/// The column types of a row, one letter each.
const LAYOUTS: &[&str] = &[
    "Ub",    // stack texts: stack_id, stack
    "SSWUU", // profile rows: host, unit, weight, samples, stack_id
    "iUuuW", // samples: time, stack, cpu, cgroup, weight
    "SSSif", // metric values: host, name, label, time, value
    "Sb",    // hosts and labels
    "ddw",   // sums
];

fn rows(data: &[u8]) {
    for layout in LAYOUTS {
        let mut r = Reader::new(data);
        let mut last = 0;
        'rows: while !r.done() {
            for c in layout.chars() {
                let ok = match c {
                    'U' => r.u64().is_ok(),
                    'u' => r.u32().is_ok(),
                    'd' => r.u16().is_ok(),
                    'i' => r.i64().is_ok(),
                    'f' => r.f64().is_ok(),
                    'b' => r.bytes().is_ok(),
                    'S' => r.string().is_ok(),
                    'W' => r.weight().is_ok(),
                    _ => r.weight_sum().is_ok(),
                };
                assert!(r.offset() <= data.len(), "read past the end");
                if !ok {
                    break 'rows;
                }
            }
            assert!(r.offset() > last, "a row read nothing");
            last = r.offset();
        }
    }
}

/// A scratch folder, removed when dropped (a failed check included).
struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Bytes as a spool file (`crate::spool`): opening it gives an error naming the file, or a
/// spool no bigger than the bytes whose batches read back in increasing order, as many and
/// as big as it says; a batch pushed after reopening comes last; all sent, the file is its
/// header alone.
pub fn clickhouse_spool(data: &[u8]) {
    use crate::spool::Spool;
    use std::sync::atomic::{AtomicU64, Ordering};
    static RUN: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "kflame-fuzz-spool-{}-{}",
        std::process::id(),
        RUN.fetch_add(1, Ordering::Relaxed)
    ));
    let scratch = Scratch(dir);
    let path = scratch.0.join("spool");
    if std::fs::create_dir_all(&scratch.0).and_then(|()| std::fs::write(&path, data)).is_err() {
        return;
    }
    let mut s = match Spool::open(&path, u64::MAX) {
        Ok(s) => s,
        Err(e) => {
            let text = e.to_string();
            assert!(text.contains(&path.display().to_string()), "an error not naming the file: {text}");
            return;
        }
    };
    assert!(s.file_bytes() <= (data.len() as u64).max(16), "{} bytes from {}", s.file_bytes(), data.len());
    let (len, bytes) = (s.len(), s.bytes());
    assert!(bytes <= data.len() as u64, "{bytes} bytes of batches in a file of {}", data.len());
    s.push(&[("samples", 7, b"fuzz")]).expect("a push after opening");
    let _ = s.notes();
    drop(s);
    let mut s = Spool::open(&path, u64::MAX).expect("a spool reopens");
    assert_eq!((s.len(), s.bytes()), (len + 1, bytes + 4));
    let (mut n, mut total, mut last_seq, mut last) = (0, 0, i64::MIN, None);
    while let Some(b) = s.front().expect("a batch reads") {
        assert!(b.seq > last_seq, "batch {} after {last_seq}", b.seq);
        last_seq = b.seq;
        n += 1;
        total += b.body.len() as u64;
        s.remove(&b).expect("a sent batch leaves");
        last = Some(b);
    }
    assert_eq!((n, total), (len + 1, bytes + 4));
    let last = last.expect("the batch pushed");
    assert_eq!(
        (last.table.as_str(), last.rows, &last.body[..], last.format.as_str()),
        ("samples", 7, &b"fuzz"[..], "Native")
    );
    assert_eq!(std::fs::metadata(&path).map(|m| m.len()).ok(), Some(16), "all sent: the header alone");
}
