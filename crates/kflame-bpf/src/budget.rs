//! A budget of CPU for the watcher's always-on programs. Each program runs at every event of
//! its tracepoints: on a machine making a million system calls and context switches a second
//! (a pipe ping-pong) they would take a quarter of a CPU, whatever each costs. Under a budget
//! they are attached for part of each period and detached for the rest, when they cost
//! nothing:
//!
//! - time goes in periods of [`PERIOD`]; in the first second of each, every program is attached
//!   and its run time measured with the kernel's statistics (`BPF_ENABLE_STATS`, on while a
//!   measurement runs: the descriptor's close turns them off, even when the process is killed);
//! - the budget of the period less those seconds is shared out among the programs, the
//!   cheapest first (water filling: a program needing less than its share leaves the rest to
//!   the others); each is attached for as many seconds from the period's start as its share
//!   pays for, at the cost measured, and detached for the rest;
//! - between measurements, a program's rate of events (the counts of its histograms at each
//!   drain) times its run time per event measured says what it costs now: a program that
//!   costs half as much again as measured (a pipe ping-pong that began after the measurement)
//!   has its cost raised to that at once, and its share shrinks, so that the budget holds
//!   within seconds rather than at the next period;
//! - a start noted before a program is attached again is not used (`common.h`'s `resumed`);
//!   the seconds detached are counted, and their histograms are simply missing (a gap, not a
//!   zero).
//!
//! Where the statistics cannot be turned on (before Linux 5.8) nothing is measured and the
//! programs stay attached.

use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::BpfError;
use crate::drain::Loaded;

/// A period: the first second measures, the budget is shared over the rest. At the longest
/// period a program is attached one second in 60, and a program costing a quarter of a CPU
/// when attached costs 0.4% of one over time.
pub const PERIOD: Duration = Duration::from_secs(60);

/// The share of one CPU the always-on programs may take, together, and how it was spent.
#[derive(Clone, Debug)]
pub struct CpuBudget {
    inner: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    /// ns of run time a second allowed, all programs together.
    budget_ns: f64,
    start: Instant,
    programs: Vec<Program>,
    /// The statistics, on while a measurement runs, and the period they were turned on for.
    stats: Option<(OwnedFd, u64)>,
    /// The statistics could not be turned on: nothing is measured.
    unmeasured: Option<String>,
}

#[derive(Debug, Default)]
struct Program {
    /// ns of run time per second attached, as last measured.
    cost_ns: Option<f64>,
    /// The period it last began.
    period: Option<u64>,
    /// The measurement under way: when, and the run time then.
    measuring: Option<(Instant, Duration)>,
    /// Events counted (histograms drained) since the measurement began.
    measured_events: u64,
    /// ns of run time per event counted, as last measured.
    per_event_ns: Option<f64>,
    /// The last tick.
    last_tick: Option<Instant>,
    /// Seconds detached since the start.
    detached: Duration,
    /// When it was last seen detached, to add to `detached`.
    detached_since: Option<Instant>,
}

impl CpuBudget {
    /// A budget of `share` of one CPU (0.006: 0.6%) for the programs to be governed.
    pub fn new(share: f64) -> CpuBudget {
        CpuBudget {
            inner: Arc::new(Mutex::new(State {
                budget_ns: share.max(0.0) * 1e9,
                start: Instant::now(),
                programs: Vec::new(),
                stats: None,
                unmeasured: None,
            })),
        }
    }

    /// A handle for one more program.
    pub(crate) fn governed(&self) -> Governed {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        s.programs.push(Program::default());
        Governed { budget: Arc::clone(&self.inner), id: s.programs.len() - 1 }
    }
}

/// One program's place in a [`CpuBudget`].
#[derive(Debug)]
pub(crate) struct Governed {
    budget: Arc<Mutex<State>>,
    id: usize,
}

impl Governed {
    /// At each drain (about every second): measures `loaded` in the first second of a
    /// period, then attaches or detaches it as its share of the budget says.
    pub(crate) fn tick(&self, loaded: &mut Loaded) -> Result<(), BpfError> {
        let now = Instant::now();
        let events = loaded.take_events();
        let mut guard = self.budget.lock().unwrap_or_else(|e| e.into_inner());
        let s = &mut *guard;
        let since = now.duration_since(s.start);
        let period = since.as_secs() / PERIOD.as_secs();
        let phase = since - PERIOD * period as u32;
        let last_tick = s.programs[self.id].last_tick.replace(now);
        if s.programs[self.id].period != Some(period) {
            s.programs[self.id].period = Some(period);
            if !s.measure(period) {
                return loaded.set_attached(true);
            }
            self.attach(s, loaded, true, now)?;
            let p = &mut s.programs[self.id];
            p.measuring = Some((now, loaded.run_time()));
            p.measured_events = 0;
            return Ok(());
        }
        if let Some((t0, r0)) = s.programs[self.id].measuring {
            let p = &mut s.programs[self.id];
            p.measured_events += events;
            let took = now.duration_since(t0);
            if took < Duration::from_millis(900) {
                return Ok(());
            }
            let ran = loaded.run_time().saturating_sub(r0).as_nanos() as f64;
            p.cost_ns = Some(ran / took.as_secs_f64());
            p.per_event_ns = (p.measured_events > 0).then(|| ran / p.measured_events as f64);
            p.measuring = None;
            if s.programs.iter().all(|p| p.measuring.is_none()) {
                s.stats = None; // the statistics off again
            }
        } else if let Some(last) = last_tick {
            // Attached since the last tick: its rate of events says what it costs now.
            let p = &mut s.programs[self.id];
            let dt = now.duration_since(last).as_secs_f64();
            if p.detached_since.is_none() && dt > 0.0 {
                p.cost_ns = raised_cost(p.cost_ns, p.per_event_ns, events as f64 / dt);
            }
        }
        let on = phase.as_secs_f64() < s.attached_secs(self.id);
        self.attach(s, loaded, on, now)
    }

    /// Seconds detached since the start.
    pub(crate) fn detached(&self) -> Duration {
        let s = self.budget.lock().unwrap_or_else(|e| e.into_inner());
        let p = &s.programs[self.id];
        p.detached + p.detached_since.map_or(Duration::ZERO, |t| t.elapsed())
    }

    /// Why nothing is measured, if so.
    pub(crate) fn unmeasured(&self) -> Option<String> {
        self.budget.lock().unwrap_or_else(|e| e.into_inner()).unmeasured.clone()
    }

    fn attach(&self, s: &mut State, loaded: &mut Loaded, on: bool, now: Instant) -> Result<(), BpfError> {
        let p = &mut s.programs[self.id];
        match (on, p.detached_since) {
            (true, Some(t)) => {
                p.detached += now.duration_since(t);
                p.detached_since = None;
            }
            (false, None) => p.detached_since = Some(now),
            _ => {}
        }
        loaded.set_attached(on)
    }
}

/// A program's cost per second attached, given its cost as measured, its run time per event
/// and its rate of events now: raised to what the rate says when that is half as much again
/// (never lowered: the next measurement does), so that a workload that began after the
/// measurement is within the budget in seconds.
fn raised_cost(measured: Option<f64>, per_event_ns: Option<f64>, events_per_sec: f64) -> Option<f64> {
    let (Some(cost), Some(per_event)) = (measured, per_event_ns) else { return measured };
    let now = per_event * events_per_sec;
    Some(if now > cost * 1.5 { now } else { cost })
}

impl State {
    /// Turns the statistics on for the measurement of `period`; false when they cannot be.
    fn measure(&mut self, period: u64) -> bool {
        if self.unmeasured.is_some() {
            return false;
        }
        if self.stats.as_ref().is_some_and(|(_, p)| *p == period) {
            return true;
        }
        match aya::sys::enable_stats(aya::sys::Stats::RunTime) {
            Ok(fd) => {
                self.stats = Some((fd, period));
                true
            }
            Err(e) => {
                self.unmeasured = Some(format!("the kernel's run-time statistics of BPF programs: {e}"));
                false
            }
        }
    }

    /// The seconds of a period program `id` is attached for: one to measure, then its share
    /// of the rest of the budget at the cost measured (programs not measured yet: all).
    fn attached_secs(&self, id: usize) -> f64 {
        let period = PERIOD.as_secs_f64();
        let Some(cost) = self.programs[id].cost_ns else { return period };
        if self.budget_ns <= 0.0 {
            return 1.0; // a budget of nothing: the measurement second alone
        }
        if cost <= 0.0 {
            return period;
        }
        let costs: Vec<f64> = self.programs.iter().map(|p| p.cost_ns.unwrap_or(0.0).max(0.0)).collect();
        // The measurement seconds are spent; the rest is shared, the cheapest first.
        let mut left = (self.budget_ns * period - costs.iter().sum::<f64>()).max(0.0);
        let mut order: Vec<usize> = (0..costs.len()).collect();
        order.sort_by(|&a, &b| costs[a].total_cmp(&costs[b]));
        let mut remaining = order.len();
        for i in order {
            let share = left / remaining as f64;
            let need = costs[i] * (period - 1.0);
            let given = need.min(share);
            if i == id {
                return 1.0 + if costs[i] > 0.0 { given / costs[i] } else { period - 1.0 };
            }
            left -= given;
            remaining -= 1;
        }
        period
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(budget: f64, costs: &[Option<f64>]) -> State {
        State {
            budget_ns: budget,
            start: Instant::now(),
            programs: costs.iter().map(|&c| Program { cost_ns: c, ..Program::default() }).collect(),
            stats: None,
            unmeasured: None,
        }
    }

    /// Cheap programs stay attached; the budget left goes to the costly one, whose time
    /// attached is what it pays for; together they keep within the budget.
    #[test]
    fn the_budget_goes_to_the_cheapest_first() {
        // 6 ms a second; one program at 1 ms/s, one at 100 ms/s.
        let s = state(6e6, &[Some(1e6), Some(100e6)]);
        let period = PERIOD.as_secs_f64();
        assert_eq!(s.attached_secs(0), period, "the cheap one attached throughout");
        let costly = s.attached_secs(1);
        let spent = 1e6 * period + 100e6 * costly;
        assert!((spent - 6e6 * period).abs() < 1.0, "{spent} ns of {} a period", 6e6 * period);
        assert!(
            (costly - 3.0).abs() < 1e-9,
            "{costly} s: its second, then 200 ms of budget at 100 ms a second"
        );
    }

    /// Over budget from the measurements alone: one second each, the least there is; a
    /// program not measured yet is attached.
    #[test]
    fn measurement_seconds_are_the_floor() {
        let s = state(1e6, &[Some(100e6), Some(200e6), None]);
        assert_eq!(s.attached_secs(0), 1.0);
        assert_eq!(s.attached_secs(1), 1.0);
        assert_eq!(s.attached_secs(2), PERIOD.as_secs_f64());
    }

    /// A program measured cheap (a quiet second) whose events then come a hundred times as
    /// fast costs what its rate says, and is detached once past its share; small changes of
    /// rate leave the measurement as it was.
    #[test]
    fn a_rate_that_grows_raises_the_cost_at_once() {
        // 1 ms of run time a second at 1,000 events a second: 1 us an event.
        let measured = Some(1e6);
        let per_event = Some(1_000.0);
        assert_eq!(raised_cost(measured, per_event, 1_200.0), measured, "within half as much again");
        assert_eq!(raised_cost(measured, per_event, 100_000.0), Some(100e6));
        assert_eq!(raised_cost(measured, None, 100_000.0), measured, "no events in its measurement");
        let s = state(6e6, &[Some(1e6), raised_cost(measured, per_event, 100_000.0)]);
        let period = PERIOD.as_secs_f64();
        assert_eq!(s.attached_secs(0), period);
        assert!((s.attached_secs(1) - 3.0).abs() < 1e-9, "{}", s.attached_secs(1));
    }

    /// Within the budget, everything stays attached.
    #[test]
    fn within_the_budget_nothing_is_detached() {
        let s = state(6e6, &[Some(1e6), Some(2e6), Some(0.0)]);
        for id in 0..3 {
            assert_eq!(s.attached_secs(id), PERIOD.as_secs_f64(), "{id}");
        }
    }
}
