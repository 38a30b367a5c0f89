//! `kflame watch --check`: what this kernel and these privileges let the watcher do, and
//! what will be missing. Every line is probed for real (events opened and closed, files
//! opened), nothing is changed.

use std::path::Path;

/// One line of the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// What was probed.
    pub name: String,
    /// Whether it works.
    pub available: bool,
    /// The answer, and what is missing without it.
    pub detail: String,
}

fn item(name: &str, available: bool, detail: impl Into<String>) -> Item {
    Item { name: name.into(), available, detail: detail.into() }
}

/// Effective capabilities of this process (`CapEff` of `/proc/self/status`).
fn cap_eff(root: &Path) -> Option<u64> {
    let s = std::fs::read_to_string(root.join("proc/self/status")).ok()?;
    let v = s.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(v.trim(), 16).ok()
}

const CAP_SYS_ADMIN: u32 = 21;
const CAP_SYSLOG: u32 = 34;
const CAP_PERFMON: u32 = 38;

/// Probes everything the watcher uses. `root` is `/` (the files read), `kmsg` the kernel
/// log device.
pub fn check(root: &Path, kmsg: &Path) -> Vec<Item> {
    let mut out = Vec::new();
    let caps = cap_eff(root);
    let has = |c: u32| caps.is_some_and(|v| v & (1u64 << c) != 0);
    let names: Vec<&str> =
        [(CAP_SYS_ADMIN, "CAP_SYS_ADMIN"), (CAP_PERFMON, "CAP_PERFMON"), (CAP_SYSLOG, "CAP_SYSLOG")]
            .iter()
            .filter(|(c, _)| has(*c))
            .map(|(_, n)| *n)
            .collect();
    out.push(item(
        "capabilities",
        has(CAP_PERFMON) || has(CAP_SYS_ADMIN),
        match (names.is_empty(), has(CAP_PERFMON) || has(CAP_SYS_ADMIN)) {
            (true, _) => "none of CAP_PERFMON, CAP_SYS_ADMIN, CAP_SYSLOG: system-wide profiling needs \
                          kernel.perf_event_paranoid <= -1 and kernel reports need dmesg_restrict=0"
                .to_string(),
            (false, true) => format!("effective: {}", names.join(", ")),
            (false, false) => format!(
                "effective: {} (without CAP_PERFMON or CAP_SYS_ADMIN system-wide profiling depends on \
                 kernel.perf_event_paranoid)",
                names.join(", ")
            ),
        },
    ));
    match std::fs::read_to_string(root.join("proc/sys/kernel/perf_event_paranoid")) {
        Ok(v) => {
            let v = v.trim().to_string();
            let n: i32 = v.parse().unwrap_or(2);
            let privileged = has(CAP_PERFMON) || has(CAP_SYS_ADMIN);
            out.push(item(
                "kernel.perf_event_paranoid",
                privileged || n <= 0,
                match (privileged, n) {
                    (true, _) => format!("{v} (does not apply: CAP_PERFMON or CAP_SYS_ADMIN)"),
                    (false, n) if n <= 0 => format!("{v}: CPU events of every task allowed"),
                    _ => format!("{v}: system-wide events need CAP_PERFMON or a value <= 0"),
                },
            ))
        }
        Err(e) => out.push(item("kernel.perf_event_paranoid", false, format!("cannot read: {e}"))),
    }
    for c in kflame::record::check() {
        let what = c
            .name
            .replace("--mem --kmalloc", "mem captures (kmalloc)")
            .replace("--mem", "mem captures")
            .replace("--off-cpu", "offcpu captures")
            .replace("--syscalls", "syscalls captures");
        out.push(item(&what, c.available, c.detail));
    }
    use kflame::record::features::{Feature, masked, masked_error, masked_why};
    let psi = crate::metrics::has_pressure(root);
    out.push(item(
        "PSI (/proc/pressure)",
        psi,
        match (psi, masked(Feature::Psi)) {
            (true, _) => "psi.* metrics recorded".to_string(),
            (false, true) => format!("{}: psi.* metrics and rules on them missing", masked_why(Feature::Psi)),
            (false, false) => {
                "absent (kernel without CONFIG_PSI or booted with psi=0): psi.* metrics and rules on \
                               them missing"
                    .to_string()
            }
        },
    ));
    // The cgroup2 hierarchy, unified at /sys/fs/cgroup or beside v1 controllers (hybrid,
    // at /sys/fs/cgroup/unified): the ids of PERF_SAMPLE_CGROUP are of it either way.
    let mountinfo = std::fs::read_to_string(root.join("proc/self/mountinfo")).unwrap_or_default();
    let v2 = kflame::record::usable_cgroup2(&mountinfo);
    out.push(item(
        "cgroup v2",
        v2.is_some(),
        match &v2 {
            Some((point, _)) if point == Path::new("/sys/fs/cgroup") => {
                "unified hierarchy: samples can be labelled with their cgroup (PERF_SAMPLE_CGROUP, Linux 5.7+)"
                    .to_string()
            }
            Some((point, _)) => format!(
                "hybrid hierarchy, cgroup2 at {}: samples can be labelled with their cgroup in it \
                 (PERF_SAMPLE_CGROUP, Linux 5.7+)",
                point.display()
            ),
            None if masked(Feature::CgroupV2) => {
                format!("{}: samples carry no cgroup", masked_why(Feature::CgroupV2))
            }
            None => "no cgroup2 mount in /proc/self/mountinfo: samples carry no cgroup".to_string(),
        },
    ));
    let restrict = std::fs::read_to_string(root.join("proc/sys/kernel/dmesg_restrict"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    let opened = match masked(Feature::Kmsg) {
        true => Err(masked_error(Feature::Kmsg)),
        false => std::fs::File::open(kmsg),
    };
    match opened {
        Ok(_) => out.push(item(
            &kmsg.display().to_string(),
            true,
            format!("readable (kernel.dmesg_restrict={restrict}): kernel reports stored"),
        )),
        Err(e) => out.push(item(
            &kmsg.display().to_string(),
            false,
            format!(
                "{e} (kernel.dmesg_restrict={restrict}; needs CAP_SYSLOG when 1): kernel reports and report rules missing"
            ),
        )),
    }
    out
}
