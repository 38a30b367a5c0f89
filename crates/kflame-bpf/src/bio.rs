//! The block IO program: time from issue to completion, summed in the kernel by disk and by
//! the task and stacks that submitted the IO.

use std::collections::{HashSet, VecDeque};
use std::time::{Duration, Instant};

use crate::BpfError;
use crate::drain::{LabelHistogram, Loaded, WaitLost, WaitOptions, Waited, forget_stale};

/// The compiled block IO program.
static BIO_OBJ: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/bio.bpf.o"));

/// Bytes of the program's `io_key`, `submitter_t` and `issue_t`.
const IO_KEY_LEN: usize = 16;
const SUBMITTER_LEN: usize = 48;
const ISSUE_LEN: usize = 16;

/// A submission or an issue not completed after this long is forgotten (and counted in
/// [`WaitLost::unmatched`]).
const STALE_AFTER: Duration = Duration::from_secs(60);

/// The major and minor numbers of a disk as [`Waited::on`] of [`Bio`] holds it
/// (`major << 20 | minor`, the kernel's `dev_t`).
pub fn device_numbers(on: u32) -> (u32, u32) {
    (on >> 20, on & 0xf_ffff)
}

/// The name of the disk `on` (`vda`, `nvme0n1`, ...), from
/// `/sys/dev/block/MAJOR:MINOR/uevent`; `None` when this host has no such device.
pub fn device_name(on: u32) -> Option<String> {
    let (major, minor) = device_numbers(on);
    let text = std::fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/uevent")).ok()?;
    devname_in_uevent(&text)
}

/// The `DEVNAME=` of a sysfs `uevent` file.
fn devname_in_uevent(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("DEVNAME="))
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
}

/// The smallest age in generations (current minus an entry's) at which an entry is surely
/// older than `after`: entries written before the flip to a generation are older than that
/// flip. `flips` holds `(generation, when it began)`, oldest first.
fn stale_age(flips: &VecDeque<(u32, Instant)>, current: u32, now: Instant, after: Duration) -> Option<u32> {
    flips
        .iter()
        .rev()
        .find(|(_, t)| now.saturating_duration_since(*t) >= after)
        .map(|(g, _)| current.wrapping_sub(*g).wrapping_add(1))
}

/// The block IO program, loaded and attached to the `block_bio_queue`,
/// `block_bio_backmerge`, `block_bio_frontmerge`, `block_rq_issue` and `block_rq_complete` raw
/// tracepoints.
#[derive(Debug)]
pub struct Bio {
    loaded: Loaded,
    /// When each generation of the last minute or so began, oldest first.
    flips: VecDeque<(u32, Instant)>,
    /// Submissions and issues forgotten as stale.
    forgotten: u64,
}

impl Bio {
    /// Its programs, for a [`crate::budget::Governed`] to attach and detach.
    pub(crate) fn loaded_mut(&mut self) -> &mut Loaded {
        &mut self.loaded
    }

    /// Loads the program with `opts` and attaches it.
    pub fn start(opts: &WaitOptions) -> Result<Bio, BpfError> {
        // Completions first, submissions last: an IO whose start is seen has its end seen.
        let attach = [
            ("on_rq_complete", "block_rq_complete"),
            ("on_rq_issue", "block_rq_issue"),
            ("on_bio_backmerge", "block_bio_backmerge"),
            ("on_bio_frontmerge", "block_bio_frontmerge"),
            ("on_bio_queue", "block_bio_queue"),
        ];
        let loaded = Loaded::start(BIO_OBJ, opts, Vec::new(), &attach)?;
        Ok(Bio { loaded, flips: VecDeque::from([(0, Instant::now())]), forgotten: 0 })
    }

    /// Reads and clears the IO times summed since the last call (`on`: the disk), forgets
    /// submissions and issues not completed for a minute, and frees the stacks no submission
    /// in flight refers to. Takes an RCU grace period at least (milliseconds).
    pub fn drain(&mut self) -> Result<Vec<Waited>, BpfError> {
        self.loaded.flip()?;
        let now = Instant::now();
        self.flips.push_back((self.loaded.generation, now));
        let current = self.loaded.generation;
        if let Some(age) = stale_age(&self.flips, current, now, STALE_AFTER) {
            let stale = |g: u32| current.wrapping_sub(g) >= age;
            self.forgotten +=
                forget_stale::<IO_KEY_LEN, SUBMITTER_LEN>(&mut self.loaded.ebpf, "submitters", 24, stale)?;
            self.forgotten +=
                forget_stale::<IO_KEY_LEN, ISSUE_LEN>(&mut self.loaded.ebpf, "issued", 8, stale)?;
            // The flips before the one that made them stale are of no use any more.
            let oldest_kept = current.wrapping_sub(age).wrapping_add(1);
            while self.flips.len() > 1 && self.flips.front().is_some_and(|(g, _)| *g != oldest_kept) {
                self.flips.pop_front();
            }
        }
        let mut held = HashSet::new();
        let found = self.loaded.take_waited(&mut held)?;
        // A `submitter_t` holds its stack ids at bytes 16 and 20.
        self.loaded.held_by::<IO_KEY_LEN, SUBMITTER_LEN>("submitters", 16, &mut held)?;
        self.loaded.finish(&found, &held)
    }

    /// The slow waits kept as outliers (with [`WaitOptions::max_outliers`]) read at the
    /// drains since the last call, in the order they were written.
    pub fn outliers(&mut self) -> Vec<crate::WaitOutlier> {
        self.loaded.take_outliers()
    }

    /// The latency histograms (label: the disk, see [`device_name`]) taken at the drains since the last call.
    pub fn histograms(&mut self) -> Vec<LabelHistogram> {
        self.loaded.take_histograms()
    }

    /// What the kernel side could not keep since the start, summed over the CPUs, with the
    /// submissions and issues forgotten as stale in [`WaitLost::unmatched`].
    pub fn lost(&self) -> Result<WaitLost, BpfError> {
        self.loaded.lost(self.forgotten)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_name_is_the_devname_line_of_the_uevent_file() {
        let uevent = "MAJOR=254\nMINOR=0\nDEVNAME=vda\nDEVTYPE=disk\nDISKSEQ=1\n";
        assert_eq!(devname_in_uevent(uevent).as_deref(), Some("vda"));
        let nvme = "MAJOR=259\nMINOR=1\nDEVNAME=nvme0n1p1\nDEVTYPE=partition\nPARTN=1\n";
        assert_eq!(devname_in_uevent(nvme).as_deref(), Some("nvme0n1p1"));
        assert_eq!(devname_in_uevent("MAJOR=8\nMINOR=0\n"), None);
        assert_eq!(devname_in_uevent("DEVNAME=\n"), None);
        assert_eq!(devname_in_uevent(""), None);
    }

    #[test]
    fn device_numbers_are_the_kernels_dev_t_split() {
        assert_eq!(device_numbers(254 << 20), (254, 0));
        assert_eq!(device_numbers((259 << 20) | 3), (259, 3));
        assert_eq!(device_numbers((8 << 20) | 16), (8, 16));
    }

    #[test]
    fn entries_are_stale_once_written_before_a_flip_older_than_the_limit() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        // Generation 0 began at 0 s, 1 at 30 s, 2 at 70 s, 3 at 100 s.
        let flips = VecDeque::from([(0, at(0)), (1, at(30)), (2, at(70)), (3, at(100))]);
        let limit = Duration::from_secs(60);
        // At 100 s: the flip to 1 (30 s) is 70 s old: entries of generation 0 are stale.
        assert_eq!(stale_age(&flips, 3, at(100), limit), Some(3));
        // At 135 s: the flip to 2 (70 s) is 65 s old: entries of 0 and 1 are.
        assert_eq!(stale_age(&flips, 3, at(135), limit), Some(2));
        // At 50 s nothing is a minute old.
        assert_eq!(stale_age(&flips, 3, at(50), limit), None);
    }
}
