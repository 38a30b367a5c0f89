//! Entry points of the ClickHouse fuzz targets (`fuzz/fuzz_targets/<name>.rs` call them;
//! `tests/fuzz_replay.rs` replays them over `fuzz/corpus/<name>/` and
//! `fuzz/regressions/<name>/`): what a server (or anything listening where one was
//! expected) answers.

use crate::rowbinary::Reader;

/// A fuzz target: panics when a property does not hold.
pub type Target = fn(&[u8]);

/// Every target, by name.
pub const TARGETS: &[(&str, Target)] = &[("clickhouse_answer", clickhouse_answer)];

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
