//! Checks of `--top N` outputs against the `--events-json` records of the same spans.

use kflame::collapse::Output;
use kflame::collapse::outliers::{Outlier, rank_frame};

/// One span of the events log: start, duration, label, pid, comm, stack.
#[derive(Clone, Debug)]
pub struct LoggedSpan {
    pub ts_ns: u64,
    pub duration_ns: u64,
    pub event: String,
    pub pid: u32,
    pub comm: String,
    pub stack: Vec<String>,
}

/// The spans of an events log, in the order written (the order they closed).
pub fn logged_spans(json: &str) -> Vec<LoggedSpan> {
    json.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            // `ts` read from the text: a JSON number parsed as f64 would lose nanoseconds.
            let at = l.find("\"ts\":").unwrap() + 5;
            let ts = l[at..].split(',').next().unwrap();
            let (s, f) = ts.split_once('.').unwrap();
            LoggedSpan {
                ts_ns: s.parse::<u64>().unwrap() * 1_000_000_000 + format!("{f:0<9}").parse::<u64>().unwrap(),
                duration_ns: v["duration_ns"].as_u64().unwrap(),
                event: v["event"].as_str().unwrap().to_string(),
                pid: v["pid"].as_u64().unwrap() as u32,
                comm: v["comm"].as_str().unwrap().to_string(),
                stack: v["stack"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f.as_str().unwrap().to_string())
                    .collect(),
            }
        })
        .collect()
}

/// Asserts that `top` (a run with `--top n`, no task or CPU frames) holds exactly the `n`
/// longest spans of `all` (longest first, the earlier first among equals), each once under
/// its rank frame, weighing its duration; and that `outliers` (if given) describe the same.
pub fn assert_top_spans(all: &[LoggedSpan], top: &Output, n: usize, outliers: Option<&[Outlier]>) {
    let mut want: Vec<&LoggedSpan> = all.iter().filter(|s| s.duration_ns > 0).collect();
    want.sort_by_key(|s| std::cmp::Reverse(s.duration_ns)); // stable: earlier first on ties
    want.truncate(n);
    let mut expected: Vec<(String, u64)> = want
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut frames = vec![rank_frame(i + 1, n, s.duration_ns, Some(s.ts_ns), 0), s.event.clone()];
            if s.stack.is_empty() {
                frames.push("[no stack]".into());
            }
            frames.extend(s.stack.iter().cloned());
            (frames.join(";"), s.duration_ns)
        })
        .collect();
    let mut got: Vec<(String, u64)> = top
        .stacks
        .in_output_order()
        .into_iter()
        .map(|(s, w)| (String::from_utf8_lossy(s).into_owned(), w.whole()))
        .collect();
    expected.sort();
    got.sort();
    assert_eq!(got, expected);
    if let Some(outliers) = outliers {
        assert_eq!(outliers.len(), want.len());
        for (o, s) in outliers.iter().zip(&want) {
            assert_eq!(
                (o.duration_ns, o.start_ns, o.pid, o.comm.as_deref(), o.what.as_str()),
                (s.duration_ns, Some(s.ts_ns), Some(s.pid), Some(s.comm.as_str()), s.event.as_str())
            );
            assert_eq!(o.stacks.len(), 1);
            assert!(got.iter().any(|(st, w)| st.as_bytes() == o.stacks[0].0 && *w == o.duration_ns));
        }
    }
}
