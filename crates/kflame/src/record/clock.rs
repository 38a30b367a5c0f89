//! From the recorder's time stamps to wall-clock time.
//!
//! Every perf event of a session is opened with `use_clockid` and `clockid =
//! CLOCK_MONOTONIC`, so sample times are `CLOCK_MONOTONIC` nanoseconds: the same clock as
//! `clock_gettime(CLOCK_MONOTONIC)` in any process, and never stepped. `CLOCK_REALTIME` is
//! not used for the events themselves because it jumps (NTP steps, `date -s`), which would
//! break the time order the recorder relies on across CPUs. Wall-clock time is derived by
//! an offset measured when a window is taken ([`WallClock::now`], in
//! [`Window::clock`](super::Window)): a step of the wall clock moves later windows, never
//! the order inside one.

use super::sys;

/// `CLOCK_MONOTONIC` now, in nanoseconds: the clock events are stamped with, and the one BPF
/// programs read (`bpf_ktime_get_ns`).
pub fn monotonic_now_ns() -> u64 {
    super::sys::monotonic_ns()
}

/// The offset between `CLOCK_REALTIME` and `CLOCK_MONOTONIC` at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WallClock {
    /// `CLOCK_REALTIME - CLOCK_MONOTONIC`, nanoseconds.
    offset_ns: i64,
}

impl Default for WallClock {
    /// The offset now ([`WallClock::now`]).
    fn default() -> WallClock {
        WallClock::now()
    }
}

impl WallClock {
    /// Reads both clocks now: the realtime reading is bracketed by two monotonic readings,
    /// and the tightest of a few brackets is kept (its error is half its width, well under a
    /// microsecond unless the thread is preempted in all of them).
    pub fn now() -> WallClock {
        let mut best: Option<(u64, i64)> = None;
        for _ in 0..3 {
            let before = sys::monotonic_ns();
            let real = sys::realtime_ns();
            let after = sys::monotonic_ns();
            let width = after.saturating_sub(before);
            let mid = before + width / 2;
            let offset = real.saturating_sub(i64::try_from(mid).unwrap_or(i64::MAX));
            if best.is_none_or(|(w, _)| width < w) {
                best = Some((width, offset));
            }
        }
        WallClock { offset_ns: best.map_or(0, |(_, o)| o) }
    }

    /// A clock with a known offset (`CLOCK_REALTIME - CLOCK_MONOTONIC`, ns): for tests and
    /// for replaying recorded windows.
    pub fn from_offset(offset_ns: i64) -> WallClock {
        WallClock { offset_ns }
    }

    /// `CLOCK_REALTIME - CLOCK_MONOTONIC` in nanoseconds.
    pub fn offset_ns(&self) -> i64 {
        self.offset_ns
    }

    /// A `CLOCK_MONOTONIC` time stamp (a sample's `ts`) as nanoseconds since the Unix epoch
    /// (UTC), saturating at the ends of `i64`.
    pub fn to_realtime_ns(&self, monotonic_ns: u64) -> i64 {
        let mono = i64::try_from(monotonic_ns).unwrap_or(i64::MAX);
        mono.saturating_add(self.offset_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_converts_both_ways_exactly() {
        let c = WallClock::from_offset(1_700_000_000_000_000_000);
        assert_eq!(c.to_realtime_ns(5), 1_700_000_000_000_000_005);
        assert_eq!(c.offset_ns(), 1_700_000_000_000_000_000);
        assert_eq!(WallClock::from_offset(i64::MAX).to_realtime_ns(u64::MAX), i64::MAX);
    }

    /// Live: the clock read now converts the monotonic time of now into the wall-clock time
    /// `std::time::SystemTime` reports, to within a few milliseconds.
    #[test]
    fn live_now_matches_the_system_time() {
        let c = WallClock::now();
        let mono = sys::monotonic_ns();
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_nanos() as i64;
        let ours = c.to_realtime_ns(mono);
        assert!((ours - wall).abs() < 5_000_000, "{ours} vs {wall}");
    }
}
