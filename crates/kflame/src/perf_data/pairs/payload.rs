//! Tracepoint payloads of the paired events printed as `perf script` prints them, from the
//! sample's raw data and the field offsets of the file's tracing-data formats.

use std::fmt::Write as _;

use crate::collapse::perf::pairs::PairMode;
use crate::tracefmt::{Field, Format};

/// How one recorded event's payload is printed, when a pairing mode uses it.
#[derive(Clone, Debug)]
pub(super) enum Kind {
    /// `raw_syscalls:sys_enter`: `NR %ld (%lx, %lx, %lx, %lx, %lx, %lx)`.
    RawEnter { id: Field, args: Field },
    /// `raw_syscalls:sys_exit`: `NR %ld = %ld`.
    RawExit { id: Field, ret: Field },
    /// `syscalls:sys_enter_X`: `ARG: 0x%08lx, ...` for each argument field.
    Enter(Vec<(String, Field)>),
    /// `syscalls:sys_exit_X`: `0x%lx`.
    Exit(Field),
    /// `sched:sched_switch`.
    Switch(Box<Switch>),
    /// A uprobe/kprobe entry: `(%lx)`.
    ProbeEntry(Field),
    /// A return probe: `(%lx <- %lx)`, function then return site.
    ProbeReturn { func: Field, ret_ip: Field },
    /// An event the modes pair, whose format the file's tracing data lacks: named.
    NoFormat(&'static str),
    /// Not a paired event.
    Other,
}

/// The `sched_switch` fields and how its `prev_state` prints.
#[derive(Clone, Debug)]
pub(super) struct Switch {
    prev_comm: Field,
    prev_pid: Field,
    prev_prio: Field,
    prev_state: Field,
    next_comm: Field,
    next_pid: Field,
    next_prio: Field,
    states: StateLetters,
}

impl Kind {
    /// The kind of event `name` (`system:event`) with tracepoint format `format`.
    pub(super) fn of(name: &str, format: Option<&Format>) -> Kind {
        let (system, event) = name.split_once(':').unwrap_or(("", name));
        let what = match (system, event) {
            ("raw_syscalls", "sys_enter" | "sys_exit") => "raw_syscalls",
            ("syscalls", e) if e.starts_with("sys_enter_") || e.starts_with("sys_exit_") => "syscalls",
            ("sched", "sched_switch") => "sched_switch",
            _ => "",
        };
        let Some(format) = format else {
            return if what.is_empty() { Kind::Other } else { Kind::NoFormat(what) };
        };
        let f = |n: &str| format.fields.get(n).cloned();
        let kind = match (what, event) {
            ("raw_syscalls", "sys_enter") => {
                f("id").zip(f("args")).map(|(id, args)| Kind::RawEnter { id, args })
            }
            ("raw_syscalls", _) => f("id").zip(f("ret")).map(|(id, ret)| Kind::RawExit { id, ret }),
            ("syscalls", e) if e.starts_with("sys_exit_") => f("ret").map(Kind::Exit),
            ("syscalls", _) => Some(Kind::Enter(arguments(format))),
            ("sched_switch", _) => switch(format).map(|s| Kind::Switch(Box::new(s))),
            _ => {
                return match (f("__probe_ip"), f("__probe_func"), f("__probe_ret_ip")) {
                    (Some(ip), _, _) => Kind::ProbeEntry(ip),
                    (None, Some(func), Some(ret_ip)) => Kind::ProbeReturn { func, ret_ip },
                    _ => Kind::Other,
                };
            }
        };
        kind.unwrap_or(Kind::NoFormat(what))
    }

    /// Whether `mode` pairs events of this kind.
    pub(super) fn used_by(&self, mode: PairMode) -> bool {
        match self {
            Kind::RawEnter { .. } | Kind::RawExit { .. } | Kind::Enter(_) | Kind::Exit(_) => {
                mode == PairMode::Syscalls
            }
            Kind::Switch(_) => mode == PairMode::OffCpu,
            Kind::ProbeEntry(_) | Kind::ProbeReturn { .. } => mode == PairMode::Probes,
            Kind::NoFormat(what) => match *what {
                "sched_switch" => mode == PairMode::OffCpu,
                _ => mode == PairMode::Syscalls,
            },
            Kind::Other => false,
        }
    }

    /// The payload text of one sample, or what is wrong with its raw data.
    pub(super) fn print(&self, raw: &[u8]) -> Result<String, String> {
        let int = |f: &Field| f.read(raw).ok_or_else(|| short(f, raw));
        let mut s = String::new();
        match self {
            Kind::RawEnter { id, args } => {
                let _ = write!(s, "NR {} (", int(id)?);
                for i in 0..6 {
                    let arg = Field { offset: args.offset + 8 * i, size: 8, signed: false };
                    let sep = if i == 0 { "" } else { ", " };
                    let _ = write!(s, "{sep}{:x}", int(&arg)? as u64);
                }
                s.push(')');
            }
            Kind::RawExit { id, ret } => {
                let _ = write!(s, "NR {} = {}", int(id)?, int(ret)?);
            }
            Kind::Enter(args) => {
                for (i, (name, f)) in args.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    let _ = write!(s, "{sep}{name}: 0x{:08x}", int(f)? as u64);
                }
            }
            Kind::Exit(ret) => {
                let _ = write!(s, "0x{:x}", int(ret)? as u64);
            }
            Kind::Switch(sw) => sw.print(raw, &mut s)?,
            Kind::ProbeEntry(ip) => {
                let _ = write!(s, "({:x})", int(ip)? as u64);
            }
            Kind::ProbeReturn { func, ret_ip } => {
                let _ = write!(s, "({:x} <- {:x})", int(func)? as u64, int(ret_ip)? as u64);
            }
            Kind::NoFormat(what) => {
                return Err(format!("the file's tracing data has no usable format for the {what} event"));
            }
            Kind::Other => return Err("a paired event".into()),
        }
        Ok(s)
    }
}

fn short(f: &Field, raw: &[u8]) -> String {
    format!("a raw payload with a field at offset {} size {}, found {} bytes", f.offset, f.size, raw.len())
}

/// The argument fields of a `syscalls:sys_enter_X` format in payload order (after the
/// common fields and `__syscall_nr`).
fn arguments(format: &Format) -> Vec<(String, Field)> {
    let mut args: Vec<(String, Field)> = format
        .fields
        .iter()
        .filter(|(n, _)| !n.starts_with("common_") && *n != "__syscall_nr")
        .map(|(n, f)| (n.clone(), f.clone()))
        .collect();
    args.sort_by_key(|(_, f)| f.offset);
    args
}

fn switch(format: &Format) -> Option<Switch> {
    let f = |n: &str| format.fields.get(n).cloned();
    Some(Switch {
        prev_comm: f("prev_comm")?,
        prev_pid: f("prev_pid")?,
        prev_prio: f("prev_prio")?,
        prev_state: f("prev_state")?,
        next_comm: f("next_comm")?,
        next_pid: f("next_pid")?,
        next_prio: f("next_prio")?,
        states: StateLetters::from_print_fmt(format.print_fmt.as_deref()),
    })
}

impl Switch {
    /// `prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d
    /// next_prio=%d`, the kernel's print format.
    fn print(&self, raw: &[u8], s: &mut String) -> Result<(), String> {
        let int = |f: &Field| f.read(raw).ok_or_else(|| short(f, raw));
        let state = self.states.letters(int(&self.prev_state)? as u64);
        let _ = write!(
            s,
            "prev_comm={} prev_pid={} prev_prio={} prev_state={state} ==> next_comm={} next_pid={} next_prio={}",
            text(&self.prev_comm, raw)?,
            int(&self.prev_pid)?,
            int(&self.prev_prio)?,
            text(&self.next_comm, raw)?,
            int(&self.next_pid)?,
            int(&self.next_prio)?,
        );
        Ok(())
    }
}

/// A `char[N]` field up to its first NUL.
fn text(f: &Field, raw: &[u8]) -> Result<String, String> {
    let b = raw.get(f.offset..f.offset.saturating_add(f.size)).ok_or_else(|| short(f, raw))?;
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    Ok(String::from_utf8_lossy(&b[..end]).into_owned())
}

/// The `prev_state` letters of a kernel: its `__print_flags` table (`{ 0x01, "S" }`...), the
/// bits it masks (every bit below the preemption bit) and the preemption bit (`+`), one
/// above the highest state in the table (`TASK_REPORT_MAX`, `TASK_STATE_MAX` on old kernels).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct StateLetters {
    flags: Vec<(u64, String)>,
    preempt: u64,
}

/// The table of Linux 4.14 and later (used when the format has no readable print fmt).
const DEFAULT_STATES: &[(u64, &str)] =
    &[(0x01, "S"), (0x02, "D"), (0x04, "T"), (0x08, "t"), (0x10, "X"), (0x20, "Z"), (0x40, "P"), (0x80, "I")];

impl StateLetters {
    /// Reads the table from a `sched_switch` print fmt.
    pub(super) fn from_print_fmt(fmt: Option<&str>) -> StateLetters {
        let mut flags = Vec::new();
        if let Some(at) = fmt.and_then(|f| f.find("__print_flags(").map(|i| &f[i..])) {
            let mut rest = at;
            while let Some(open) = rest.find("{ ") {
                let item = &rest[open + 2..];
                let Some(close) = item.find('}') else { break };
                if let Some(flag) = flag_entry(&item[..close]) {
                    flags.push(flag);
                }
                rest = &item[close..];
            }
        }
        if flags.is_empty() {
            flags = DEFAULT_STATES.iter().map(|&(v, s)| (v, s.to_string())).collect();
        }
        let top = flags.iter().map(|&(v, _)| v).max().unwrap_or(0x80);
        StateLetters { flags, preempt: top << 1 }
    }

    /// `S`, `D|K`, `R`, `R+`...: libtraceevent's `__print_flags` of the masked state (`R` when
    /// no state bit is set), then `+` when the preemption bit is set.
    pub(super) fn letters(&self, state: u64) -> String {
        let mut v = state & (self.preempt - 1);
        let mut s = String::new();
        if v == 0 {
            s.push('R');
        }
        for (bit, name) in &self.flags {
            if *bit != 0 && v & bit == *bit {
                if !s.is_empty() {
                    s.push('|');
                }
                s.push_str(name);
                v &= !bit;
            }
        }
        if v != 0 {
            let sep = if s.is_empty() { "" } else { "|" };
            let _ = write!(s, "{sep}0x{v:x}");
        }
        if state & self.preempt != 0 {
            s.push('+');
        }
        s
    }
}

/// `0x00000001, "S" ` → (1, "S").
fn flag_entry(item: &str) -> Option<(u64, String)> {
    let (num, name) = item.split_once(',')?;
    let num = num.trim();
    let value = match num.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok()?,
        None => num.parse().ok()?,
    };
    let name = name.trim().strip_prefix('"')?.strip_suffix('"')?;
    Some((value, name.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The print fmt of Linux 6.18's `sched_switch` (tracefs `events/sched/sched_switch/format`).
    const FMT_6_18: &str = r#""prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d", REC->prev_comm, REC->prev_pid, REC->prev_prio, (REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? __print_flags(REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1), "|", { 0x00000001, "S" }, { 0x00000002, "D" }, { 0x00000004, "T" }, { 0x00000008, "t" }, { 0x00000010, "X" }, { 0x00000020, "Z" }, { 0x00000040, "P" }, { 0x00000080, "I" }) : "R", REC->prev_state & (((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) ? "+" : "", REC->next_comm, REC->next_pid, REC->next_prio"#;

    #[test]
    fn state_letters_follow_the_print_fmt() {
        let t = StateLetters::from_print_fmt(Some(FMT_6_18));
        assert_eq!(t, StateLetters::from_print_fmt(None));
        assert_eq!(t.preempt, 0x100);
        assert_eq!(t.letters(0), "R");
        assert_eq!(t.letters(0x100), "R+");
        assert_eq!(t.letters(1), "S");
        assert_eq!(t.letters(2), "D");
        assert_eq!(t.letters(0x80), "I");
        assert_eq!(t.letters(0x21), "S|Z");
        assert_eq!(t.letters(0x101), "S+");
    }

    #[test]
    fn an_older_table_sets_its_own_preemption_bit() {
        let fmt =
            r#"__print_flags(REC->prev_state & (2048-1), "|", { 1, "S" }, { 2, "D" }, { 1024, "N" }) : "R""#;
        let t = StateLetters::from_print_fmt(Some(fmt));
        assert_eq!(t.preempt, 2048);
        assert_eq!(t.letters(2048), "R+");
        assert_eq!(t.letters(1024 | 2), "D|N");
    }
}
