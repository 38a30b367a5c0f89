//! Output of the `crash` utility's `bt` family (`bt`, `bt -a`, `bt -t`, `foreach bt`,
//! `foreach UN bt`) to folded stacks: one count per task, under root frames chosen by
//! [`CrashKey`]s. The default is the task state alone, so that tasks merge by their stack:
//! hundreds of blocked tasks of dozens of commands condense into their few distinct waits.
//! The command (`comm`) and CPU are root frames on request (`state,comm` splits each wait
//! by command).
//!
//! Recognized lines:
//! - task headers `PID: 428  TASK: ffff880036b6c560  CPU: 1  COMMAND: "jbd2/dm-1-8"`;
//! - frames `#3 [ffff880035779b38] sleep_on_page at ffffffff81119a4e [module]` (any symbol
//!   characters, `(nfsd module)` placeholders) and `bt -t` lines `[c1aa1f28] dput at c0157dbc`,
//!   `START: schedule at c01190e0`;
//! - `[exception RIP: mwait_idle+119]` (the interrupted PC, a frame);
//! - `--- <IRQ stack> ---`, `--- <NMI exception stack> ---` (the frames above belong to that
//!   stack);
//! - the task state, from a `foreach UN bt` command line, a `bt -a` command line (active,
//!   `RU`), or rows of `ps` output seen earlier (matched by task address);
//! - register dumps, argument lines and `-f` stack data, skipped without complaint.

use std::collections::HashMap;
use std::str::FromStr;

use serde::Serialize;

use super::{Collapse, Output, lines};
use crate::fold::{Meta, Unit, Weight};
use crate::report::Section;

/// Most task states remembered from `ps` output.
const MAX_PS_ROWS: usize = 1 << 20;
/// Most frames kept per task.
const MAX_FRAMES: usize = 512;

/// The default root frames: the task state only, so that tasks merge by their stack.
pub const DEFAULT_KEYS: [CrashKey; 1] = [CrashKey::State];

/// A root frame of a task's stack.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CrashKey {
    /// Task state (`UN`, `RU`, `unknown-state`).
    State,
    /// Command name.
    Comm,
    /// CPU (`cpu-3`).
    Cpu,
}

impl FromStr for CrashKey {
    type Err = String;
    fn from_str(s: &str) -> Result<CrashKey, String> {
        match s.trim() {
            "state" => Ok(CrashKey::State),
            "comm" => Ok(CrashKey::Comm),
            "cpu" => Ok(CrashKey::Cpu),
            o => Err(format!("unknown group key `{o}` for crash output; expected state, comm, cpu")),
        }
    }
}

/// Parses `state,comm,cpu`.
pub fn parse_crash_keys(s: &str) -> Result<Vec<CrashKey>, String> {
    s.split(',').filter(|k| !k.trim().is_empty()).map(str::parse).collect()
}

/// One frame of a crash backtrace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CrashFrame {
    /// Function name (`sleep_on_page`, `(nfsd module)`).
    pub function: String,
    /// Module in brackets, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// Stack the frame ran on.
    pub section: Section,
    /// An `[exception RIP: ...]` line (the interrupted PC).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub exception: bool,
}

/// One task's backtrace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CrashTask {
    /// PID.
    pub pid: u64,
    /// `task_struct` address as printed.
    pub task: String,
    /// CPU.
    pub cpu: Option<u32>,
    /// Command name.
    pub comm: String,
    /// Task state (`UN`, `RU`...), when known.
    pub state: Option<String>,
    /// Frames, leaf first (as printed).
    pub frames: Vec<CrashFrame>,
    /// 1-based line of the task header.
    pub line: u64,
}

impl CrashTask {
    /// The task as one JSON line, frames root first.
    pub fn to_json(&self) -> String {
        let mut t = self.clone();
        t.frames.reverse();
        serde_json::to_string(&t).unwrap_or_default()
    }
}

/// Streaming parser of crash `bt` output.
#[derive(Debug, Default)]
pub struct CrashParser {
    current: Option<CrashTask>,
    since_marker: usize,
    default_state: Option<String>,
    ps_state: HashMap<String, String>,
    done: Vec<CrashTask>,
}

impl CrashParser {
    /// A new parser.
    pub fn new() -> CrashParser {
        CrashParser::default()
    }

    /// Finished tasks so far (taken).
    pub fn take(&mut self) -> Vec<CrashTask> {
        std::mem::take(&mut self.done)
    }

    /// End of input.
    pub fn finish(&mut self) {
        self.close();
    }

    /// Feeds line `n`; returns false when the line was not understood.
    pub fn push_line(&mut self, n: u64, line: &[u8]) -> bool {
        let text = String::from_utf8_lossy(line);
        let t = text.trim();
        if t.is_empty() || t == "..." || t.starts_with(">8-") {
            return true;
        }
        if let Some(cmd) = command(t) {
            self.close();
            self.default_state = state_of_command(cmd);
            return true;
        }
        if let Some(task) = header(t, n) {
            self.close();
            self.open(task);
            return true;
        }
        if self.ps_row(t) {
            return true;
        }
        match self.current.as_mut() {
            Some(task) => body_line(task, t, &mut self.since_marker),
            None => is_ignorable(t),
        }
    }

    fn open(&mut self, mut task: CrashTask) {
        task.state = self.ps_state.get(&task.task).cloned().or_else(|| self.default_state.clone());
        self.since_marker = 0;
        self.current = Some(task);
    }

    fn close(&mut self) {
        if let Some(t) = self.current.take() {
            self.done.push(t);
        }
    }

    /// `>  1234  1  0  ffff8800  UN  0.0  0  0  comm` (ps row): remembers the state.
    fn ps_row(&mut self, t: &str) -> bool {
        let t = t.strip_prefix('>').unwrap_or(t);
        let w: Vec<&str> = t.split_whitespace().collect();
        let ok = w.len() >= 6
            && w[..3].iter().all(|x| x.bytes().all(|b| b.is_ascii_digit()))
            && w[3].bytes().all(|b| b.is_ascii_hexdigit())
            && w[4].len() == 2
            && w[4].bytes().all(|b| b.is_ascii_uppercase());
        if ok && self.ps_state.len() < MAX_PS_ROWS {
            self.ps_state.insert(w[3].to_string(), w[4].to_string());
        }
        ok || (t.contains("PID") && t.contains("PPID") && t.contains("ST"))
    }
}

/// `crash> foreach UN bt` (any prompt): the command after the prompt.
fn command(t: &str) -> Option<&str> {
    if t.len() > 1 && t.ends_with('>') && !t.contains(' ') {
        return Some(""); // a bare prompt
    }
    let (prompt, cmd) = t.split_once("> ")?;
    let is_prompt = !prompt.is_empty() && !prompt.contains(' ');
    let cmd = cmd.trim();
    (is_prompt && (cmd.starts_with("bt") || cmd.starts_with("foreach") || cmd.starts_with("ps")))
        .then_some(cmd)
}

/// The state implied by a command: `foreach UN bt` → UN, `bt -a` → RU (active on a CPU).
fn state_of_command(cmd: &str) -> Option<String> {
    const STATES: [&str; 12] = ["RU", "IN", "UN", "ST", "ZO", "TR", "SW", "DE", "WA", "PA", "ID", "NE"];
    let words: Vec<&str> = cmd.split_whitespace().collect();
    if words.first() == Some(&"foreach") {
        return words.iter().find(|w| STATES.contains(w)).map(|s| s.to_string());
    }
    let active = words.first() == Some(&"bt") && words.iter().any(|w| *w == "-a" || *w == "-c" || *w == "-p");
    active.then(|| "RU".to_string())
}

/// `PID: 428  TASK: ffff880036b6c560  CPU: 1  COMMAND: "jbd2/dm-1-8"`.
fn header(t: &str, n: u64) -> Option<CrashTask> {
    let rest = t.strip_prefix("PID: ")?;
    let (pid, rest) = rest.trim_start().split_once(' ')?;
    let (_, rest) = rest.split_once("TASK: ")?;
    let (task, rest) = rest.trim_start().split_once(' ')?;
    let (_, rest) = rest.split_once("CPU: ")?;
    let (cpu, rest) = rest.trim_start().split_once(' ')?;
    let (_, comm) = rest.split_once("COMMAND: ")?;
    let comm = comm.trim();
    let comm = comm.strip_prefix('"').and_then(|c| c.rfind('"').map(|i| &c[..i])).unwrap_or(comm);
    Some(CrashTask {
        pid: pid.parse().ok()?,
        task: task.to_string(),
        cpu: cpu.parse().ok(),
        comm: comm.to_string(),
        line: n,
        ..CrashTask::default()
    })
}

/// A line inside a task's output.
fn body_line(task: &mut CrashTask, t: &str, since_marker: &mut usize) -> bool {
    if let Some(section) = stack_marker(t) {
        let n = task.frames.len();
        // The interrupted PC (`[exception RIP: ...]`) belongs to the stack below the marker.
        for f in task.frames[n - (*since_marker).min(n)..].iter_mut().filter(|f| !f.exception) {
            f.section = section;
        }
        *since_marker = 0;
        return true;
    }
    if let Some(f) = exception_rip(t).or_else(|| frame(t)) {
        let dup = task.frames.last().is_some_and(|l| l.exception && l.function == f.function && !f.exception);
        if !dup && task.frames.len() < MAX_FRAMES {
            task.frames.push(f);
            *since_marker += 1;
        }
        return true;
    }
    is_ignorable(t)
}

/// `--- <NMI exception stack> ---`: the stack the frames above ran on.
fn stack_marker(t: &str) -> Option<Section> {
    let inner = t.strip_prefix("--- <")?.strip_suffix("> ---")?;
    let lower = inner.to_ascii_lowercase();
    Some(if lower.contains("nmi") {
        Section::Nmi
    } else if lower.contains("soft") {
        Section::Softirq
    } else if lower.contains("irq") {
        Section::Irq
    } else {
        Section::Exception
    })
}

/// `[exception RIP: mwait_idle+119]`.
fn exception_rip(t: &str) -> Option<CrashFrame> {
    let inner = t.strip_prefix("[exception RIP: ")?.strip_suffix(']')?;
    let func = inner.split('+').next()?.trim();
    (!func.is_empty()).then(|| CrashFrame {
        function: func.to_string(),
        exception: true,
        ..CrashFrame::default()
    })
}

/// `#3 [sp] func at addr [module]`, `[sp] func at addr` (bt -t), `START: func at addr`.
fn frame(t: &str) -> Option<CrashFrame> {
    let rest = if let Some(r) = t.strip_prefix('#') {
        let (num, r) = r.split_once(' ')?;
        num.parse::<u32>().ok()?;
        r.trim_start()
    } else if let Some(r) = t.strip_prefix("START: ") {
        r
    } else {
        t
    };
    let rest = match rest.strip_prefix('[') {
        Some(r) => r.split_once("] ")?.1,
        None if t.starts_with("START: ") => rest,
        None => return None,
    };
    let at = rest.rfind(" at ")?;
    let func = rest[..at].trim();
    let after: Vec<&str> = rest[at + 4..].split_whitespace().collect();
    let addr_ok = after.first().is_some_and(|a| a.bytes().all(|b| b.is_ascii_hexdigit()));
    if func.is_empty() || !addr_ok || after.len() > 2 {
        return None;
    }
    let module = after.get(1).and_then(|m| m.strip_prefix('[')?.strip_suffix(']')).map(str::to_string);
    // `bt -s` prints `func+46`; the offset is not part of the function.
    let func = if func.starts_with('(') { func } else { func.split('+').next().unwrap_or(func) };
    Some(CrashFrame { function: func.to_string(), module, ..CrashFrame::default() })
}

/// Register dumps, argument lists, raw stack data and other lines `bt` prints that carry no
/// frame.
fn is_ignorable(t: &str) -> bool {
    let first = t.split_whitespace().next().unwrap_or("");
    let reg = first.ends_with(':')
        && first.len() <= 10
        && first[..first.len() - 1].bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    let args = t.starts_with('(') && t.ends_with(')');
    let data = t.split_whitespace().all(|w| {
        let w = w.trim_end_matches(':');
        w.bytes().all(|b| b.is_ascii_hexdigit()) || (w.starts_with('[') && w.ends_with(']'))
    });
    // `bt -l`: the source line of the frame above (`/usr/src/.../core.c: 3478`)
    let source = [".c:", ".h:", ".S:", ".rs:"].iter().any(|e| first.ends_with(e));
    reg || args || data || source || t.contains("EXCEPTION FRAME")
}

/// Collapser for crash `bt` output.
#[derive(Debug)]
pub struct Crash {
    keys: Vec<CrashKey>,
    p: CrashParser,
}

impl Crash {
    /// A collapser grouping by `keys` (default: `state`, tasks merged by stack).
    pub fn new(keys: Vec<CrashKey>) -> Crash {
        Crash { keys, p: CrashParser::new() }
    }

    fn drain(&mut self, out: &mut Output) {
        for t in self.p.take() {
            out.stacks.add(stack_of(&t, &self.keys).as_bytes(), Weight::from_u64(1));
        }
    }
}

impl Default for Crash {
    fn default() -> Crash {
        Crash::new(DEFAULT_KEYS.to_vec())
    }
}

/// The folded stack of one task: root frames, then frames root first.
pub fn stack_of(t: &CrashTask, keys: &[CrashKey]) -> String {
    let roots = keys.iter().map(|k| match k {
        CrashKey::State => t.state.clone().unwrap_or_else(|| "unknown-state".into()),
        CrashKey::Comm => t.comm.clone(),
        CrashKey::Cpu => t.cpu.map_or_else(|| "cpu-unknown".into(), |c| format!("cpu-{c}")),
    });
    let frames = t.frames.iter().rev().map(|f| f.function.clone());
    let parts: Vec<String> = roots
        .chain(frames)
        .map(|p| p.replace(';', ":").chars().map(|c| if c.is_control() { ' ' } else { c }).collect())
        .collect();
    parts.join(";")
}

impl Collapse for Crash {
    fn collapse(&mut self, chunk: &[u8], first_line: u64, out: &mut Output) {
        for (n, line) in lines(chunk, first_line) {
            if !self.p.push_line(n, line) {
                out.diag.skip("unrecognized crash line", n, || {
                    format!(
                        "expected a task header, a `#N [sp] func at addr` frame or a register line, found `{}`",
                        crate::fold::read::show(line)
                    )
                });
            }
        }
        self.drain(out);
    }

    fn finish(&mut self, out: &mut Output) {
        self.p.finish();
        self.drain(out);
    }

    fn meta(&self) -> Meta {
        Meta { unit: Unit::Other("tasks".into()), event: None }
    }
}

/// Confidence (0-100) that `head` is crash `bt` output: a task header line followed by
/// frame lines.
pub fn detect(head: &[u8]) -> u8 {
    let mut headers = 0;
    let mut frames = 0;
    for (n, line) in lines(head, 1) {
        let text = String::from_utf8_lossy(line);
        let t = text.trim();
        headers += header(t, n).is_some() as u32;
        frames += (t.starts_with('#') && frame(t).is_some()) as u32;
    }
    match (headers, frames) {
        (0, _) => 0,
        (_, 0) => 50,
        _ => 90,
    }
}

/// The task backtraces of the `crash` output `input`, in order, each as soon as its
/// backtrace ends; a line longer than [`MAX_LINE`](crate::text::MAX_LINE) is skipped and
/// counted in [`Tasks::diagnostics`]. A read error ends the iteration after it is returned.
pub fn tasks<R: std::io::BufRead>(input: R) -> Tasks<R> {
    Tasks {
        lines: crate::text::LineReader::new(input),
        parser: CrashParser::new(),
        ready: std::collections::VecDeque::new(),
        diag: crate::diag::Diagnostics::new(),
        ended: false,
    }
}

/// The iterator of [`tasks`].
pub struct Tasks<R> {
    lines: crate::text::LineReader<R>,
    parser: CrashParser,
    ready: std::collections::VecDeque<CrashTask>,
    diag: crate::diag::Diagnostics,
    ended: bool,
}

impl<R> Tasks<R> {
    /// Lines skipped so far (too long to parse), with the first one's number.
    pub fn diagnostics(&self) -> &crate::diag::Diagnostics {
        &self.diag
    }
}

impl<R: std::io::BufRead> Iterator for Tasks<R> {
    type Item = std::io::Result<CrashTask>;

    fn next(&mut self) -> Option<std::io::Result<CrashTask>> {
        use crate::text::{LINE_TOO_LONG, Line, line_too_long_message};
        loop {
            if let Some(t) = self.ready.pop_front() {
                return Some(Ok(t));
            }
            if self.ended {
                return None;
            }
            match self.lines.next_line() {
                Ok(Some(Line::Text(n, line))) => {
                    self.parser.push_line(n, line.strip_suffix(b"\r").unwrap_or(line));
                }
                Ok(Some(Line::TooLong(n, len))) => {
                    self.diag.skip(LINE_TOO_LONG, n, || line_too_long_message(len));
                }
                Ok(None) => {
                    self.parser.finish();
                    self.ended = true;
                }
                Err(e) => {
                    self.ended = true;
                    return Some(Err(e));
                }
            }
            self.ready.extend(self.parser.take());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bt_s_offsets_and_bt_l_source_lines() {
        let f = frame("#3 [ffff880035779b38] sleep_on_page+14 at ffffffff81119a4e [ext4]").unwrap();
        assert_eq!((f.function.as_str(), f.module.as_deref()), ("sleep_on_page", Some("ext4")));
        assert_eq!(frame("#3 [c5601fec] (nfsd module) at c806e303").unwrap().function, "(nfsd module)");
        assert!(is_ignorable("/usr/src/debug/kernel-5.14/kernel/sched/core.c: 3478"));
        assert!(is_ignorable("RIP: 00007f3b2d6e1a37  RSP: 00007ffd4c1e0a28  RFLAGS: 00000246"));
        assert!(!is_ignorable("this line is not crash output"));
    }
}
