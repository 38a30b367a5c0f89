//! Call nesting of one task (or one CPU when the task is unknown): open frames, and the
//! calls completed inside the current top-level call until it returns.

use super::line::Call;

/// A frame still open (entered, not yet exited).
#[derive(Debug, Clone)]
struct Frame {
    /// Index into [`Track::names`].
    id: u32,
    /// Summed total time of the children that completed.
    child_ns: u64,
    /// Entry time, when the line had one.
    start_ns: Option<u64>,
}

/// A completed call: its path of frame ids (root first), self and total time.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    pub(crate) path: Vec<u32>,
    pub(crate) self_ns: u64,
    pub(crate) total_ns: u64,
}

/// A top-level call that returned (or the remains of one at the end of the trace).
#[derive(Debug, Clone)]
pub(crate) struct TopCall {
    /// Frame names by id (`None`: a frame entered before the trace began or whose entry was
    /// lost, never named by a `} /* func */` tail).
    pub(crate) names: Vec<Option<Box<[u8]>>>,
    /// Calls completed inside it, in completion order.
    pub(crate) records: Vec<Record>,
    /// Path of the top-level frame itself.
    pub(crate) root: Vec<u32>,
    /// Duration, when it returned.
    pub(crate) duration_ns: Option<u64>,
    /// Start time, when known.
    pub(crate) start_ns: Option<u64>,
    /// 1-based line where it started (or first showed up).
    pub(crate) first_line: u64,
}

/// What happened to frames while aligning to a line's depth.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fixups {
    /// Frames closed without their exit line (lost events).
    pub(crate) unterminated: u64,
    /// Placeholder frames pushed for callers entered before the trace (or lost).
    pub(crate) placeholders: u64,
}

/// Nesting state of one task or CPU.
#[derive(Debug, Default)]
pub(crate) struct Track {
    open: Vec<Frame>,
    names: Vec<Option<Box<[u8]>>>,
    records: Vec<Record>,
    start_ns: Option<u64>,
    first_line: u64,
}

impl Track {
    /// Applies one call line at `depth`; returns the top-level call it completed, if any.
    pub(crate) fn apply(
        &mut self,
        depth: usize,
        call: &Call<'_>,
        ts: Option<u64>,
        line: u64,
        fix: &mut Fixups,
    ) -> Option<TopCall> {
        let target = if matches!(call, Call::Exit(..)) { depth + 1 } else { depth };
        let mut done = self.align(target, line, fix);
        if self.open.is_empty() && self.records.is_empty() {
            self.first_line = line;
        }
        let finished = match *call {
            Call::Entry(name) => {
                if self.open.is_empty() {
                    self.start_ns = ts;
                }
                let id = self.name(Some(name));
                self.open.push(Frame { id, child_ns: 0, start_ns: ts });
                None
            }
            Call::Leaf(name, dur) => {
                if self.open.is_empty() {
                    self.start_ns = ts;
                }
                let id = self.name(Some(name));
                self.complete(id, dur, dur)
            }
            Call::Exit(tail, dur) => self.exit(tail, dur, ts),
        };
        if finished.is_some() {
            done = finished;
        }
        done
    }

    /// Closes the innermost frame with the `}` line's duration.
    fn exit(&mut self, tail: Option<&[u8]>, dur: u64, ts: Option<u64>) -> Option<TopCall> {
        let f = self.open.pop()?;
        let slot = &mut self.names[f.id as usize];
        if slot.is_none() {
            *slot = tail.map(Box::from);
        }
        if self.open.is_empty() {
            self.start_ns = f.start_ns.or_else(|| ts.map(|t| t.saturating_sub(dur)));
        }
        self.complete(f.id, dur.saturating_sub(f.child_ns), dur)
    }

    /// Records a completed call whose frame is `id` (not on the open stack).
    fn complete(&mut self, id: u32, self_ns: u64, total_ns: u64) -> Option<TopCall> {
        let mut path: Vec<u32> = self.open.iter().map(|f| f.id).collect();
        path.push(id);
        self.records.push(Record { path: path.clone(), self_ns, total_ns });
        match self.open.last_mut() {
            Some(parent) => {
                parent.child_ns = parent.child_ns.saturating_add(total_ns);
                None
            }
            None => Some(self.take(path, Some(total_ns))),
        }
    }

    /// Pops frames deeper than `target` and pushes placeholders up to it.
    fn align(&mut self, target: usize, line: u64, fix: &mut Fixups) -> Option<TopCall> {
        let mut done = None;
        while self.open.len() > target {
            self.open.pop();
            fix.unterminated += 1;
            if self.open.is_empty() {
                done = self.flush_partial();
            }
        }
        while self.open.len() < target {
            if self.open.is_empty() && self.records.is_empty() {
                self.first_line = line;
            }
            let id = self.name(None);
            self.open.push(Frame { id, child_ns: 0, start_ns: None });
            fix.placeholders += 1;
        }
        done
    }

    fn name(&mut self, name: Option<&[u8]>) -> u32 {
        self.names.push(name.map(Box::from));
        (self.names.len() - 1) as u32
    }

    /// Hands over the current top-level call and resets.
    fn take(&mut self, root: Vec<u32>, duration_ns: Option<u64>) -> TopCall {
        TopCall {
            names: std::mem::take(&mut self.names),
            records: std::mem::take(&mut self.records),
            root,
            duration_ns,
            start_ns: self.start_ns.take(),
            first_line: self.first_line,
        }
    }

    /// The completed parts of an unfinished top-level call (end of trace, lost exits), if
    /// any; the open frames are dropped.
    pub(crate) fn flush_partial(&mut self) -> Option<TopCall> {
        let root = self.open.first().map(|f| vec![f.id]).unwrap_or_default();
        self.open.clear();
        if self.records.is_empty() {
            self.names.clear();
            self.start_ns = None;
            return None;
        }
        Some(self.take(root, None))
    }

    /// Number of completed calls held for the current top-level call.
    pub(crate) fn pending(&self) -> usize {
        self.records.len()
    }

    /// Hands over the completed calls held so far, keeping the open frames (renumbered) so
    /// that nesting goes on: bounds memory inside very long top-level calls. Placeholder
    /// frames not yet named stay `[unknown]` in what is handed over.
    pub(crate) fn drain(&mut self) -> TopCall {
        let open_names: Vec<Option<Box<[u8]>>> =
            self.open.iter().map(|f| self.names.get(f.id as usize).cloned().flatten()).collect();
        let call = TopCall {
            names: std::mem::replace(&mut self.names, open_names),
            records: std::mem::take(&mut self.records),
            root: Vec::new(),
            duration_ns: None,
            start_ns: self.start_ns,
            first_line: self.first_line,
        };
        for (i, f) in self.open.iter_mut().enumerate() {
            f.id = i as u32;
        }
        call
    }

    /// Number of frames still open.
    pub(crate) fn depth(&self) -> usize {
        self.open.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(lines: &[(usize, Call<'static>)]) -> (Vec<TopCall>, Fixups, Track) {
        let mut t = Track::default();
        let mut fix = Fixups::default();
        let mut out = Vec::new();
        for (i, (d, c)) in lines.iter().enumerate() {
            out.extend(t.apply(*d, c, None, i as u64 + 1, &mut fix));
        }
        (out, fix, t)
    }

    #[test]
    fn self_time_is_total_minus_children() {
        let (calls, fix, _) = run(&[
            (0, Call::Entry(b"a")),
            (1, Call::Leaf(b"b", 300)),
            (1, Call::Entry(b"c")),
            (2, Call::Leaf(b"d", 100)),
            (1, Call::Exit(None, 250)),
            (0, Call::Exit(None, 1000)),
        ]);
        assert_eq!(fix, Fixups::default());
        assert_eq!(calls.len(), 1);
        let c = &calls[0];
        let selfs: Vec<u64> = c.records.iter().map(|r| r.self_ns).collect();
        assert_eq!(selfs, vec![300, 100, 150, 450]);
        assert_eq!(c.duration_ns, Some(1000));
    }

    #[test]
    fn orphan_exit_gets_placeholder_named_by_tail() {
        let (calls, fix, _) =
            run(&[(1, Call::Leaf(b"x", 10)), (0, Call::Exit(Some(b"outer"), 50)), (0, Call::Leaf(b"y", 5))]);
        assert_eq!(fix.placeholders, 1);
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].names[0].as_deref(), Some(&b"outer"[..]));
        assert_eq!(calls[0].records.last().map(|r| r.self_ns), Some(40));
    }
}
