//! The duty cycle (`--every 60 --for 5`): a small thread enables the events at the start of
//! every period and disables them after the active part, on time, however long the reading
//! thread spends interpreting a burst of records.

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::DutyCycle;
use super::sys;

/// The running duty-cycle thread; stopped (events left as they are) when dropped.
pub(crate) struct DutyThread {
    stop: Arc<AtomicBool>,
    active: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl DutyThread {
    /// Starts toggling `fds` (enabled now) by `duty`, counting periods from `started`.
    pub(crate) fn start(fds: Vec<OwnedFd>, duty: DutyCycle, started: Instant) -> DutyThread {
        let stop = Arc::new(AtomicBool::new(false));
        let active = Arc::new(AtomicBool::new(true));
        let (s, a) = (stop.clone(), active.clone());
        let handle = std::thread::spawn(move || toggle_loop(&fds, duty, started, &s, &a));
        DutyThread { stop, active, handle: Some(handle) }
    }

    /// True while the events are enabled.
    pub(crate) fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }
}

impl Drop for DutyThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn toggle_loop(fds: &[OwnedFd], duty: DutyCycle, started: Instant, stop: &AtomicBool, active: &AtomicBool) {
    let mut on = true;
    while !stop.load(Ordering::Relaxed) {
        let want = duty_active(duty, started.elapsed());
        if want != on {
            for fd in fds {
                let _ = if want { sys::enable(fd) } else { sys::disable(fd) };
            }
            on = want;
            active.store(on, Ordering::Relaxed);
        }
        std::thread::sleep(until_next_edge(duty, started.elapsed()).min(Duration::from_millis(50)));
    }
}

/// True during the first `active` of every `every` period.
pub(crate) fn duty_active(duty: DutyCycle, elapsed: Duration) -> bool {
    let every = duty.every.as_nanos().max(1);
    elapsed.as_nanos() % every < duty.active.as_nanos()
}

/// Time until the next enable or disable.
fn until_next_edge(duty: DutyCycle, elapsed: Duration) -> Duration {
    let every = duty.every.as_nanos().max(1);
    let pos = elapsed.as_nanos() % every;
    let active = duty.active.as_nanos();
    let left = if pos < active { active - pos } else { every - pos };
    Duration::from_nanos(left.min(u64::MAX as u128) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duty_cycle_windows() {
        let d = DutyCycle { every: Duration::from_secs(60), active: Duration::from_secs(5) };
        assert!(duty_active(d, Duration::from_secs(0)));
        assert!(duty_active(d, Duration::from_millis(4999)));
        assert!(!duty_active(d, Duration::from_secs(5)));
        assert!(!duty_active(d, Duration::from_secs(59)));
        assert!(duty_active(d, Duration::from_secs(61)));
        assert_eq!(until_next_edge(d, Duration::from_secs(1)), Duration::from_secs(4));
        assert_eq!(until_next_edge(d, Duration::from_secs(6)), Duration::from_secs(54));
    }
}
