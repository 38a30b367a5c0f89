//! Informational lines of a report: `CPU: PID: Comm:`, taint, `Hardware name:`, the PC line.

/// What an informational line told.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Fields {
    pub(crate) cpu: Option<u32>,
    pub(crate) pid: Option<u32>,
    pub(crate) comm: Option<String>,
    pub(crate) taint: Option<String>,
    pub(crate) kernel: Option<String>,
    pub(crate) hardware: Option<String>,
}

/// `CPU: 0 [UID: 0] PID: 1 Comm: sh Not tainted 6.1.0 #1`, `Hardware name: ...`, the
/// hung-task `Not tainted 6.1.0 #1` and `task:sh state:D ... pid:9657` lines.
pub(crate) fn parse_fields(t: &str) -> Option<Fields> {
    let t = t.trim();
    if let Some(hw) = t.strip_prefix("Hardware name: ") {
        return Some(Fields { hardware: Some(hw.trim().to_string()), ..Fields::default() });
    }
    if let Some(r) = t.strip_prefix("CPU: ") {
        return cpu_line(r);
    }
    if t.starts_with("Not tainted ") || t.starts_with("Tainted: ") {
        let mut f = Fields::default();
        taint_and_release(t, &mut f);
        return Some(f);
    }
    if let Some(r) = t.strip_prefix("task:") {
        let comm = r.split(" state:").next()?.trim();
        let pid = r.split_once(" pid:").and_then(|(_, p)| p.split_whitespace().next()?.parse().ok());
        return Some(Fields { comm: Some(comm.to_string()), pid, ..Fields::default() });
    }
    None
}

fn cpu_line(r: &str) -> Option<Fields> {
    let mut f = Fields { cpu: r.split_whitespace().next()?.parse().ok(), ..Fields::default() };
    f.pid = r.split_once("PID: ").and_then(|(_, p)| p.split_whitespace().next()?.parse().ok());
    let Some((_, after)) = r.split_once(" Comm: ") else { return Some(f) };
    let cut = ["Not tainted", "Tainted:"].iter().filter_map(|m| after.find(m)).min();
    match cut {
        Some(i) => {
            f.comm = Some(after[..i].trim_end().to_string());
            taint_and_release(&after[i..], &mut f);
        }
        None => f.comm = Some(after.trim_end().to_string()),
    }
    Some(f)
}

/// `Not tainted 6.1.0 #1` / `Tainted: G        W  6.1.0 #1`.
fn taint_and_release(s: &str, f: &mut Fields) {
    let (flags, rest) = if let Some(r) = s.strip_prefix("Not tainted") {
        (String::new(), r)
    } else if let Some(r) = s.strip_prefix("Tainted:") {
        let mut words = r.split_whitespace().peekable();
        let mut flags = Vec::new();
        while let Some(w) = words.next_if(|w| w.bytes().all(|b| b.is_ascii_uppercase())) {
            flags.push(w);
        }
        let flags = flags.join(" ");
        let rest = r.trim_start();
        let rest =
            rest.split_whitespace().skip(flags.split_whitespace().count()).collect::<Vec<_>>().join(" ");
        f.taint = Some(flags);
        f.kernel = rest.split_whitespace().next().filter(|v| !v.starts_with('#')).map(str::to_string);
        return;
    } else {
        return;
    };
    f.taint = Some(flags);
    f.kernel = rest.split_whitespace().next().filter(|v| !v.starts_with('#')).map(str::to_string);
}

/// `Linux version 6.1.0-13-amd64 (...)` → the release.
pub(crate) fn banner_release(t: &str) -> Option<String> {
    t.trim().strip_prefix("Linux version ")?.split_whitespace().next().map(str::to_string)
}

/// The PC of a register dump: `RIP: 0010:func+0x1/0x2`, `RIP: 0010:[<addr>]  [<addr>]
/// func+...`, `IP: [<addr>] func+...`, `EIP is at func+...`, `PC is at func+...`,
/// `pc : func+...`, `NIP [addr] func+...`, `epc : func+...`. Returns the symbol text after
/// the address columns (`func+0x1/0x2 file.c:1`), or the raw address when unsymbolized.
pub(crate) fn pc_line(t: &str) -> Option<&str> {
    let t = t.trim();
    let prefixes =
        ["RIP: ", "EIP: ", "IP: ", "PC is at ", "EIP is at ", "pc : ", "NIP [", "NIP:  ", "epc : ", "ip: "];
    let p = prefixes.iter().find(|p| t.starts_with(*p))?;
    let mut r = &t[p.len()..];
    if *p == "NIP [" {
        r = r.split_once("] ")?.1;
    }
    if let Some((seg, rest)) = r.split_once(':')
        && seg.len() == 4
        && seg.bytes().all(|b| b.is_ascii_hexdigit())
    {
        r = rest; // `0010:` code segment
    }
    loop {
        let s = r.trim_start();
        let Some(after) = s.strip_prefix("[<").and_then(|x| x.split_once(">]")) else { break };
        r = after.1;
    }
    let r = r.trim();
    let r = r.split("  ").next().unwrap_or(r); // `func+0x1/0x2  SS:ESP ...`
    let r = r.strip_suffix("()").unwrap_or(r);
    (!r.is_empty()).then_some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lines() {
        let f =
            parse_fields("CPU: 0 PID: 2970 Comm: syz-executor.1 Not tainted 5.8.0-rc3-syzkaller #0").unwrap();
        assert_eq!((f.cpu, f.pid, f.comm.as_deref()), (Some(0), Some(2970), Some("syz-executor.1")));
        assert_eq!((f.taint.as_deref(), f.kernel.as_deref()), (Some(""), Some("5.8.0-rc3-syzkaller")));
        let f = parse_fields("CPU: 3 UID: 0 PID: 9 Comm: kworker/3:1 Tainted: G        W  O      6.10.0 #2")
            .unwrap();
        assert_eq!((f.comm.as_deref(), f.taint.as_deref()), (Some("kworker/3:1"), Some("G W O")));
        assert_eq!(f.kernel.as_deref(), Some("6.10.0"));
        let f = parse_fields("      Tainted: G             L      syzkaller #0").unwrap();
        assert_eq!((f.taint.as_deref(), f.kernel.as_deref()), (Some("G L"), Some("syzkaller")));
        let f = parse_fields("task:sh              state:D stack:0     pid:9657  tgid:9657").unwrap();
        assert_eq!((f.comm.as_deref(), f.pid), (Some("sh"), Some(9657)));
    }

    #[test]
    fn pc_lines() {
        assert_eq!(
            pc_line("RIP: 0010:smp_call_function_single+0x192/0x4f0"),
            Some("smp_call_function_single+0x192/0x4f0")
        );
        assert_eq!(pc_line("RIP: 0010:[<ffffffff8188>]  [<ffffffff8188>] foo+0x1/0x2"), Some("foo+0x1/0x2"));
        assert_eq!(pc_line("RIP: 0033:0x7fe41fa81011"), Some("0x7fe41fa81011"));
        assert_eq!(pc_line("pc : foo+0x1/0x2"), Some("foo+0x1/0x2"));
        assert_eq!(pc_line("PC is at foo+0x1/0x2"), Some("foo+0x1/0x2"));
        assert_eq!(pc_line("NIP [c000000000123456] foo+0x1/0x2"), Some("foo+0x1/0x2"));
        assert_eq!(
            pc_line("EIP: [<c0123456>] foo+0x1/0x2 SS:ESP 0068:f00"),
            Some("foo+0x1/0x2 SS:ESP 0068:f00")
        );
        assert_eq!(pc_line("RSP: 0018:ffff"), None);
    }
}
