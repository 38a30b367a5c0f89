//! Content detection for `perf script` text.

use super::bytes::{is_blank, trim_start};
use super::{event, frame};
use crate::collapse::lines;

/// The fewest hex digits of a frame address printed without a `(dso)` column that detection
/// takes as evidence (perf prints user and kernel addresses in full: `7f3a...`, `ffffffff8...`).
const MIN_BARE_ADDRESS: usize = 6;

/// Confidence (0-100) that `head` is `perf script` output: sample headers
/// (`comm tid ... event:`) followed by frame lines (`address symbol (dso)`), or at least
/// many headers. ftrace/trace-cmd text (`comm-pid [cpu] ...`), bpftrace maps, kernel logs
/// and folded stacks have no `comm TID ... event:` header followed by a frame.
///
/// One header and frame among other text is not enough: a kmemleak hex dump row whose
/// ASCII column ends in `:` reads as a header (`00 41 ... ..user:`), and the next row as a
/// bare frame. So a pair counts only when its frame is plausible (a `(dso)` column, or an
/// address of at least [`MIN_BARE_ADDRESS`] hex digits), and the high score needs two
/// pairs, or one pair and nothing else (a one-sample capture).
pub fn detect(head: &[u8]) -> u8 {
    let whole = memchr::memrchr(b'\n', head).map_or(head.len(), |i| i + 1);
    let (mut pairs, mut headers, mut other) = (0u32, 0u32, 0u32);
    let mut after_header = false;
    for (_, line) in lines(&head[..whole], 1).take(400) {
        let t = trim_start(line);
        if t.is_empty() || t[0] == b'#' {
            after_header = false;
            continue;
        }
        if after_header && let Some(f) = frame::parse(line, line.first().is_some_and(|&b| is_blank(b))) {
            if f.module.is_some() || f.pc.len() >= MIN_BARE_ADDRESS {
                pairs += 1;
            } else {
                other += 1;
            }
            after_header = false;
            continue;
        }
        after_header = false;
        if event::parse(line).is_some_and(|e| e.event.is_some()) {
            headers += 1;
            after_header = true;
        } else if frame::parse(line, true).is_none() {
            other += 1;
        }
    }
    if (pairs >= 2 && other <= 2 * pairs + 8) || (pairs == 1 && other == 0) {
        90
    } else if headers >= 3 && other * 4 <= headers {
        55
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_perf_script() {
        let s =
            b"dd 29776 666709.771979:   10101010 cpu-clock: \n\t ffffffff81 sys_read ([kernel.kallsyms])\n\n";
        assert_eq!(detect(s), 90);
    }

    #[test]
    fn rejects_other_text_formats() {
        let ftrace = b"# tracer: nop\n#\n            bash-1234  [001] d..2.  123.456789: sched_switch: prev_comm=bash prev_pid=1234\n            bash-1234  [001] d..2.  123.456790: <stack trace>\n => __schedule\n => schedule\n";
        assert_eq!(detect(ftrace), 0);
        let folded = b"a;b;c 12\na;b 3\n";
        assert_eq!(detect(folded), 0);
        let bpftrace = b"Attaching 1 probe...\n@[\n    native_safe_halt+14\n    default_idle+9\n]: 5\n";
        assert_eq!(detect(bpftrace), 0);
        let dmesg = b"[    0.000000] Linux version 6.1.0 (gcc 12)\n[   12.345678] Call Trace:\n[   12.345679]  <TASK>\n";
        assert_eq!(detect(dmesg), 0);
    }
}
