//! Closed spans to folded stacks, the same for every front end (ftrace and trace-cmd text,
//! perf script text, and perf.data through the perf script front end): each span weighs its
//! duration (ns) under `LABEL;[TASK];[cpu-N];STACK` (`[no stack]` when the stack was not
//! recorded), and goes to the `--events-json` log. With `top`, only the N longest spans are
//! kept, each as its own tower under its rank frame `[#01 2.345ms @512.100000]` (see
//! [`crate::collapse::outliers`]); every span still goes to the events log.

use super::Span;
use crate::collapse::Output;
use crate::collapse::events_json::EventLog;
use crate::collapse::outliers::{Outlier, OutlierLog, TopN, rank_frame};
use crate::fold::Weight;

/// The task root frames of an event or span.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskFrames {
    /// The task name.
    pub comm: bool,
    /// `comm-PID` (implies `comm`).
    pub pid: bool,
    /// `cpu-N`.
    pub cpu: bool,
}

impl TaskFrames {
    /// The frames for task `comm`/`pid` on `cpu` (`;` in a comm becomes `:`).
    pub(crate) fn names(self, comm: &str, pid: u32, cpu: u32) -> Vec<String> {
        let mut v = Vec::new();
        let comm = comm.replace(';', ":");
        if self.pid {
            v.push(format!("{comm}-{pid}"));
        } else if self.comm {
            v.push(comm);
        }
        if self.cpu {
            v.push(format!("cpu-{cpu}"));
        }
        v
    }
}

/// Turns spans into folded stacks (all of them, or the N longest).
#[derive(Debug)]
pub(crate) struct SpanOutput {
    task: TaskFrames,
    top: Option<TopN<Span>>,
    events: Option<EventLog>,
    outliers: Option<OutlierLog>,
    stack: Vec<u8>,
}

impl SpanOutput {
    /// Spans with `task` frames; `top`: keep only the N longest; `events` receives every
    /// span.
    pub(crate) fn new(task: TaskFrames, top: Option<usize>, events: Option<EventLog>) -> SpanOutput {
        SpanOutput { task, top: top.map(TopN::new), events, outliers: None, stack: Vec::new() }
    }

    /// With `top`, each kept span also goes to `log`.
    pub(crate) fn set_outliers(&mut self, log: OutlierLog) {
        self.outliers = Some(log);
    }

    /// One closed span.
    pub(crate) fn span(&mut self, s: Span, out: &mut Output) {
        if let Some(log) = &self.events {
            log.write(&s.record());
        }
        if s.duration_ns == 0 {
            return;
        }
        match &mut self.top {
            Some(top) => top.offer(s.duration_ns, s),
            None => {
                self.build(None, &s);
                out.stacks.add(&self.stack, Weight::from_u64(s.duration_ns));
            }
        }
    }

    /// End of input: the kept longest spans, ranked.
    pub(crate) fn finish(&mut self, out: &mut Output) {
        let Some(top) = &mut self.top else { return };
        let n = top.n();
        for (i, (duration, s)) in top.take_ranked().into_iter().enumerate() {
            let rank = rank_frame(i + 1, n, duration, Some(s.start_ns), s.line);
            self.build(Some(&rank), &s);
            let weight = Weight::from_u64(duration);
            out.stacks.add(&self.stack, weight);
            if let Some(log) = &self.outliers {
                log.push(Outlier {
                    rank: i + 1,
                    duration_ns: duration,
                    start_ns: Some(s.start_ns),
                    line: s.line,
                    cpu: s.cpu,
                    pid: Some(s.pid),
                    comm: Some(s.comm.clone()),
                    what: s.label.clone(),
                    stacks: vec![(self.stack.clone(), weight)],
                });
            }
        }
    }

    /// `[RANK;]LABEL;[TASK;][cpu-N;]STACK` into `self.stack`.
    fn build(&mut self, rank: Option<&str>, s: &Span) {
        let stack = &mut self.stack;
        stack.clear();
        let mut push = |f: &str| {
            if !stack.is_empty() {
                stack.push(b';');
            }
            stack.extend_from_slice(f.as_bytes());
        };
        if let Some(r) = rank {
            push(r);
        }
        push(&s.label);
        for f in self.task.names(&s.comm, s.pid, s.cpu) {
            push(&f);
        }
        if s.stack.is_empty() {
            push("[no stack]");
        }
        for f in &s.stack {
            push(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collapse::Order;

    fn span(start: u64, duration: u64, pid: u32, stack: &[&str]) -> Span {
        Span {
            start_ns: start,
            duration_ns: duration,
            cpu: 1,
            pid,
            comm: format!("t;{pid}"),
            label: "syscall:read".into(),
            stack: stack.iter().map(|f| f.to_string()).collect(),
            line: start,
        }
    }

    fn folded(out: &Output) -> Vec<(String, u64)> {
        let v = out.stacks.in_output_order();
        v.into_iter().map(|(s, w)| (String::from_utf8_lossy(s).into_owned(), w.whole())).collect()
    }

    #[test]
    fn all_spans_with_task_frames() {
        let mut o = SpanOutput::new(TaskFrames { pid: true, cpu: true, ..TaskFrames::default() }, None, None);
        let mut out = Output::new(Order::Sorted);
        o.span(span(1_000, 50, 7, &["main", "read"]), &mut out);
        o.span(span(2_000, 0, 7, &["main"]), &mut out);
        o.span(span(3_000, 20, 8, &[]), &mut out);
        o.finish(&mut out);
        assert_eq!(
            folded(&out),
            [
                ("syscall:read;t:7-7;cpu-1;main;read".to_string(), 50),
                ("syscall:read;t:8-8;cpu-1;[no stack]".to_string(), 20)
            ]
        );
    }

    #[test]
    fn top_keeps_the_longest_ranked_and_logs_them() {
        let log = OutlierLog::new();
        let mut o = SpanOutput::new(TaskFrames::default(), Some(2), None);
        o.set_outliers(log.clone());
        let mut out = Output::new(Order::Time);
        o.span(span(1_000_000_000, 5_000, 1, &["a"]), &mut out);
        o.span(span(2_000_000_000, 9_000, 2, &["b"]), &mut out);
        o.span(span(3_000_000_000, 7_000, 3, &["a"]), &mut out);
        assert!(out.stacks.is_empty(), "nothing before the end");
        o.finish(&mut out);
        assert_eq!(
            folded(&out),
            [
                ("[#1 9.000us @2.000000];syscall:read;b".to_string(), 9_000),
                ("[#2 7.000us @3.000000];syscall:read;a".to_string(), 7_000)
            ]
        );
        let kept = log.take();
        assert_eq!(kept.len(), 2);
        assert_eq!((kept[0].rank, kept[0].pid, kept[0].comm.as_deref()), (1, Some(2), Some("t;2")));
        assert_eq!(
            kept[1].stacks,
            [(b"[#2 7.000us @3.000000];syscall:read;a".to_vec(), Weight::from_u64(7_000))]
        );
    }
}
