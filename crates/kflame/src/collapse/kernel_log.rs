//! Kernel logs (`dmesg`, `/dev/kmsg`, `journalctl -k`, syslog, serial consoles) to folded
//! stacks: one count per kernel report (oops, warning, hung task, lockup, RCU stall,
//! sanitizer report...), under synthetic root frames chosen by [`GroupKey`]s.
//!
//! The parsing is [`crate::report::ReportExtractor`]'s; this file turns its reports into
//! stacks: `6.1.0;warning;WARNING in foo;entry_SYSCALL_64;...;foo 1`.

use std::str::FromStr;

use super::{Collapse, Output, lines};
use crate::fold::{Meta, Unit, Weight};
use crate::report::{Frame, Report, ReportExtractor, prefix};

/// A synthetic root frame of a report's stack.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GroupKey {
    /// Kernel release (`6.1.0-13-amd64`, `unknown-kernel` when the log never says).
    Version,
    /// Report kind (`warning`, `hung_task`...).
    Kind,
    /// Report title (`WARNING in foo`).
    Title,
    /// CPU (`cpu-3`).
    Cpu,
    /// Task command name.
    Comm,
    /// `Hardware name:`.
    Hardware,
    /// Taint flags (`taint-G W`, `not-tainted`).
    Taint,
}

impl FromStr for GroupKey {
    type Err = String;
    fn from_str(s: &str) -> Result<GroupKey, String> {
        Ok(match s.trim() {
            "version" | "kernel" => GroupKey::Version,
            "kind" => GroupKey::Kind,
            "title" => GroupKey::Title,
            "cpu" => GroupKey::Cpu,
            "comm" => GroupKey::Comm,
            "hardware" => GroupKey::Hardware,
            "taint" => GroupKey::Taint,
            other => {
                return Err(format!(
                    "unknown group key `{other}` for kernel logs; expected version, kind, title, cpu, comm, hardware, taint"
                ));
            }
        })
    }
}

/// Parses a comma-separated list of group keys (`version,kind,title`).
pub fn parse_group_keys(s: &str) -> Result<Vec<GroupKey>, String> {
    s.split(',').filter(|k| !k.trim().is_empty()).map(str::parse).collect()
}

/// Options of the kernel-log collapser.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Root frames, outermost first (default: version, kind, title).
    pub group_by: Vec<GroupKey>,
    /// Keep `+0x12/0x34` offsets on frames (default: stripped).
    pub offsets: bool,
    /// Keep `? ` frames the unwinder could not vouch for, marked with a `? ` prefix
    /// (default: dropped).
    pub unreliable: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            group_by: vec![GroupKey::Version, GroupKey::Kind, GroupKey::Title],
            offsets: false,
            unreliable: false,
        }
    }
}

/// Collapser for kernel logs.
#[derive(Debug, Default)]
pub struct KernelLog {
    opts: Options,
    x: ReportExtractor,
}

impl KernelLog {
    /// A kernel-log collapser with `opts`.
    pub fn new(opts: Options) -> KernelLog {
        KernelLog { opts, x: ReportExtractor::new() }
    }

    fn drain(&mut self, out: &mut Output) {
        while let Some(r) = self.x.pop() {
            if r.truncated {
                out.diag.note("truncated report", r.line, || {
                    format!("the log ends inside report `{}` (cut before the report was complete?)", r.title)
                });
            }
            if r.frames.is_empty() {
                out.diag.note("report without call trace", r.line, || {
                    format!("report `{}` has no call trace; counted under its root frames only", r.title)
                });
            }
            out.stacks.add(stack_of(&r, &self.opts).as_bytes(), Weight::from_u64(1));
        }
    }
}

/// The folded stack of one report: root frames, then the call trace root first.
pub fn stack_of(r: &Report, opts: &Options) -> String {
    let mut parts: Vec<String> = opts.group_by.iter().map(|k| root_frame(r, *k)).collect();
    parts.extend(
        r.frames.iter().rev().filter(|f| opts.unreliable || !f.unreliable).map(|f| frame_name(f, opts)),
    );
    let sanitized: Vec<String> = parts.iter().map(|p| sanitize(p)).collect();
    sanitized.join(";")
}

fn root_frame(r: &Report, k: GroupKey) -> String {
    match k {
        GroupKey::Version => r.kernel.clone().unwrap_or_else(|| "unknown-kernel".into()),
        GroupKey::Kind => r.kind().name().to_string(),
        GroupKey::Title => r.title.clone(),
        GroupKey::Cpu => r.cpu.map_or_else(|| "cpu-unknown".into(), |c| format!("cpu-{c}")),
        GroupKey::Comm => r.comm.clone().unwrap_or_else(|| "unknown-comm".into()),
        GroupKey::Hardware => r.hardware.clone().unwrap_or_else(|| "unknown-hardware".into()),
        GroupKey::Taint => match r.taint.as_deref() {
            Some("") => "not-tainted".into(),
            Some(t) => format!("taint-{t}"),
            None => "taint-unknown".into(),
        },
    }
}

fn frame_name(f: &Frame, opts: &Options) -> String {
    let name = if opts.offsets { f.with_offset() } else { f.function.clone() };
    if f.unreliable { format!("? {name}") } else { name }
}

/// Makes a frame safe for the folded format: no `;`, no line breaks, no control bytes.
fn sanitize(s: &str) -> String {
    let s: String = s
        .chars()
        .map(|c| {
            if c == ';' {
                ':'
            } else if c.is_control() {
                ' '
            } else {
                c
            }
        })
        .collect();
    let t = s.trim();
    if t.is_empty() { "[empty]".into() } else { t.to_string() }
}

impl Collapse for KernelLog {
    fn collapse(&mut self, chunk: &[u8], first_line: u64, out: &mut Output) {
        for (n, line) in lines(chunk, first_line) {
            self.x.push_line(n, line);
        }
        self.drain(out);
    }

    fn finish(&mut self, out: &mut Output) {
        self.x.finish();
        self.drain(out);
    }

    fn meta(&self) -> Meta {
        Meta { unit: Unit::Other("reports".into()), event: None }
    }
}

/// Confidence (0-100) that `head` is a kernel log: 85 when it holds the first line of a
/// kernel report, 40 when most lines carry kernel log prefixes (a clean dmesg) or when a
/// timestamped `Linux version` banner stands among a good share of them (a serial console
/// with bootloader output), or when the text opens with the kernel's banner (`dmesg -t`,
/// a boot log without timestamps: `Linux version 6.1.0-...`), else 0.
pub fn detect(head: &[u8]) -> u8 {
    let (mut total, mut stamped, mut banner) = (0u32, 0u32, false);
    let mut opened_with_banner = false;
    for (_, line) in lines(head, 1) {
        if line.is_empty() {
            continue;
        }
        opened_with_banner |= total == 0 && opens_with_banner(line);
        total += 1;
        let s = prefix::strip(line);
        stamped += (s.stamped && s.kernel && looks_like_kernel_prefix(line)) as u32;
        banner |= s.stamped && s.text.starts_with(b"Linux version ");
        if s.kernel && crate::report::is_report_start(s.text) {
            return 85;
        }
    }
    let mostly_stamped = total > 0 && stamped * 10 >= total * 8;
    let booted_here = banner && stamped * 10 >= total * 3;
    if mostly_stamped || booted_here || opened_with_banner { 40 } else { 0 }
}

/// The first line the kernel prints, `linux_banner` of init/version.c:
/// `Linux version UTS_RELEASE (USER@HOST) (COMPILER) #N ...`, without a log prefix.
fn opens_with_banner(line: &[u8]) -> bool {
    line.strip_prefix(b"Linux version ").is_some_and(|r| {
        r.first().is_some_and(u8::is_ascii_digit) && memchr::memmem::find(r, b") #").is_some()
    })
}

/// A line that begins with a kernel log prefix (not just somewhere inside it).
fn looks_like_kernel_prefix(line: &[u8]) -> bool {
    let first = line.first().copied().unwrap_or(0);
    first == b'[' || first == b'<' || first.is_ascii_digit() || first.is_ascii_uppercase() || first == b'k'
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collapse::Engine;

    const LOG: &[u8] = b"[    0.000000] Linux version 6.1.0-test (x@y) #1 SMP\n\
[   10.000000] WARNING: CPU: 1 PID: 42 at fs/foo.c:10 foo_write+0x10/0x20 [foo]\n\
[   10.000001] CPU: 1 PID: 42 Comm: w;r Tainted: G        W  O 6.1.0-test #1\n\
[   10.000002] RIP: 0010:foo_write+0x10/0x20 [foo]\n\
[   10.000003] Call Trace:\n\
[   10.000004]  <TASK>\n\
[   10.000005]  ? __warn+0x80/0x100\n\
[   10.000006]  vfs_write+0xb0/0x3a0\n\
[   10.000007]  ksys_write+0x5f/0xe0\n\
[   10.000008]  </TASK>\n\
[   10.000009] ---[ end trace 0000000000000000 ]---\n";

    fn run(opts: Options, log: &[u8]) -> Output {
        Engine::single_threaded().run(Box::new(KernelLog::new(opts)), log).unwrap()
    }

    #[test]
    fn default_and_options() {
        let out = run(Options::default(), LOG);
        let stacks: Vec<_> =
            out.stacks.in_output_order().into_iter().map(|(s, w)| (s.to_vec(), w.whole())).collect();
        let want = b"6.1.0-test;warning;WARNING in foo_write;ksys_write;vfs_write;foo_write".to_vec();
        assert_eq!(stacks, vec![(want, 1)]);
        let opts = Options {
            group_by: parse_group_keys("comm,taint,cpu").unwrap(),
            offsets: true,
            unreliable: true,
        };
        let out = run(opts, LOG);
        let (s, _) = out.stacks.in_output_order()[0];
        assert_eq!(
            String::from_utf8_lossy(s),
            "w:r;taint-G W O;cpu-1;ksys_write+0x5f/0xe0;vfs_write+0xb0/0x3a0;? __warn+0x80/0x100;foo_write+0x10/0x20"
        );
        assert!(parse_group_keys("version,bogus").is_err());
    }

    #[test]
    fn detection() {
        assert_eq!(detect(LOG), 85);
        let clean = b"[    0.000000] Linux version 6.1.0\n[    0.100000] Command line: quiet\n";
        assert_eq!(detect(clean), 40);
        assert_eq!(detect(b"a;b 1\nc;d 2\n"), 0);
        assert_eq!(detect(b"swapper     0 [000]  1234.567:     250000 cpu-clock:\n\tffffffff81 f+0x1 ([kernel.kallsyms])\n"), 0);
    }
}
