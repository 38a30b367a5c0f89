//! `/proc/diskstats`: per whole device, as `iostat -x` computes it. Partitions (a name that
//! is another listed device's name followed by digits, or `p` and digits), `loop*` and
//! `ram*` devices and devices that never completed an IO are skipped unless all devices are
//! asked for.
//!
//! Fields after major, minor and name (Documentation/admin-guide/iostats.rst): reads
//! completed, merged, sectors, ms; writes completed, merged, sectors, ms; in flight; io_ticks
//! (ms with IO in flight); time_in_queue (weighted ms); discards completed, merged, sectors,
//! ms (4.18+); flushes completed, ms (5.5+). Sectors are 512 bytes whatever the device's.

use std::path::Path;

use super::{Problem, Value, bad};

/// The counters of one device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiskStats {
    /// Device name.
    pub name: String,
    /// The counters, 11, 15 or 17 of them (missing ones 0).
    pub fields: [u64; 17],
}

const RD_IOS: usize = 0;
const RD_SECTORS: usize = 2;
const RD_TICKS: usize = 3;
const WR_IOS: usize = 4;
const WR_SECTORS: usize = 6;
const WR_TICKS: usize = 7;
const IO_TICKS: usize = 9;
const TIME_IN_QUEUE: usize = 10;
const DC_IOS: usize = 11;
const DC_TICKS: usize = 14;
const FL_IOS: usize = 15;

pub(super) fn parse(text: &str, file: &Path, problems: &mut Vec<Problem>) -> Option<Vec<DiskStats>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.is_empty() {
            continue;
        }
        let nums: Option<Vec<u64>> = f.get(3..).and_then(|r| r.iter().map(|x| x.parse().ok()).collect());
        match (f.get(2), nums) {
            (Some(name), Some(n)) if n.len() >= 11 && n.len() <= 17 => {
                let mut fields = [0; 17];
                fields[..n.len()].copy_from_slice(&n);
                out.push(DiskStats { name: (*name).to_string(), fields });
            }
            _ => problems.push(bad(file, i + 1, "expected `MAJOR MINOR NAME` and 11 to 17 counters")),
        }
    }
    Some(out)
}

/// Whether `name` is a partition of another device of the list.
fn is_partition(name: &str, all: &[DiskStats]) -> bool {
    all.iter().any(|d| {
        let Some(rest) = name.strip_prefix(d.name.as_str()) else { return false };
        let digits =
            rest.strip_prefix('p').filter(|_| d.name.ends_with(|c: char| c.is_ascii_digit())).unwrap_or(rest);
        !rest.is_empty() && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    })
}

fn shown(d: &DiskStats, all: &[DiskStats], all_devices: bool) -> bool {
    if all_devices {
        return true;
    }
    let ram = d.name.strip_prefix("ram").is_some_and(|r| r.bytes().all(|b| b.is_ascii_digit()));
    !(d.name.starts_with("loop") || ram || is_partition(&d.name, all) || d.fields.iter().all(|&v| v == 0))
}

pub(super) fn values(
    prev: &[DiskStats],
    cur: &[DiskStats],
    secs: f64,
    all_devices: bool,
    out: &mut Vec<Value>,
) {
    for b in cur.iter().filter(|d| shown(d, cur, all_devices)) {
        let Some(a) = prev.iter().find(|p| p.name == b.name) else { continue };
        let d = |k: usize| b.fields[k].saturating_sub(a.fields[k]) as f64;
        let label = &b.name;
        let mut push = |name: &'static str, value: f64| out.push(Value { name, label: label.clone(), value });
        let ms = secs * 1000.0;
        let await_of = |ticks: f64, ios: f64| if ios > 0.0 { ticks / ios } else { 0.0 };
        push("io.read_bytes", d(RD_SECTORS) * 512.0 / secs);
        push("io.write_bytes", d(WR_SECTORS) * 512.0 / secs);
        push("io.reads", d(RD_IOS) / secs);
        push("io.writes", d(WR_IOS) / secs);
        push("io.iops", (d(RD_IOS) + d(WR_IOS) + d(DC_IOS) + d(FL_IOS)) / secs);
        push("io.util", (100.0 * d(IO_TICKS) / ms).min(100.0));
        push(
            "io.await",
            await_of(d(RD_TICKS) + d(WR_TICKS) + d(DC_TICKS), d(RD_IOS) + d(WR_IOS) + d(DC_IOS)),
        );
        push("io.r_await", await_of(d(RD_TICKS), d(RD_IOS)));
        push("io.w_await", await_of(d(WR_TICKS), d(WR_IOS)));
        push("io.queue", d(TIME_IN_QUEUE) / ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(name: &str) -> DiskStats {
        DiskStats { name: name.into(), fields: [1; 17] }
    }

    #[test]
    fn partitions_are_told_from_whole_devices() {
        let all =
            [dev("sda"), dev("sda1"), dev("nvme0n1"), dev("nvme0n1p2"), dev("vda"), dev("dm-0"), dev("md0")];
        let parts: Vec<&str> =
            all.iter().filter(|d| is_partition(&d.name, &all)).map(|d| d.name.as_str()).collect();
        assert_eq!(parts, ["sda1", "nvme0n1p2"]);
        assert!(!shown(&dev("loop0"), &all, false));
        assert!(!shown(&dev("ram0"), &all, false));
        assert!(shown(&dev("loop0"), &all, true));
    }
}
