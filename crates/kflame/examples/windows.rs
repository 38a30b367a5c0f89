//! Records every CPU for 10 s (or the number of seconds given) in windows of 1 s through the
//! library alone, and prints each window's heaviest stack as soon as the window ends: the
//! loop a continuous profiler runs. Needs root (or CAP_PERFMON and CAP_SYSLOG):
//!
//! ```text
//! cargo run --release -p kflame --example windows -- 10
//! ```
//!
//! The library installs no signal handler: this example stops at the end of its duration;
//! a program that wants Ctrl-C to stop it sets the stop flag from its own handler.

#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use kflame::record::{Config, Mode, Naming, Recorder, StackParts, Status, Target, Window};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seconds: u64 = match std::env::args().nth(1) {
        Some(s) => s.parse().map_err(|_| format!("`{s}`: expected a number of seconds"))?,
        None => 10,
    };
    let config = Config {
        modes: vec![Mode::Cpu { frequency: 99 }],
        target: Target::All,
        duration: Some(Duration::from_secs(seconds)),
        parts: StackParts::Both,
        duty: None,
        naming: Naming::default(),
        keep_events: false,
        keep_samples: false,
        caches: Default::default(),
        call_graph: None,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let mut recorder = Recorder::start(&config, stop)?;
    let window = Duration::from_secs(1);
    let mut next = window;
    loop {
        let ended = matches!(recorder.poll(Duration::from_millis(100))?, Status::Ended(_));
        if ended {
            recorder.stop()?; // closes the events; what they still held joins the last window
        }
        let elapsed = recorder.progress().elapsed;
        if ended || elapsed >= next {
            let naming = Instant::now();
            let w = recorder.take_window();
            print_window(&w, naming.elapsed());
            while next <= elapsed {
                next += window; // a window that came late does not make the next ones shorter
            }
        }
        if ended {
            break;
        }
    }
    for note in recorder.notes() {
        println!("note: {note}");
    }
    let all = recorder.finish()?;
    let lost = all.ring.lost;
    println!(
        "recorded for {:.1} s, {} samples, {lost} records lost",
        all.elapsed.as_secs_f64(),
        all.kinds[0].stats.samples
    );
    Ok(())
}

/// `[ 3.0- 4.0 s] 198 samples, 0 lost, named in 2 ms; top 41 (20.7%): swapper;...`
fn print_window(w: &Window, naming: Duration) {
    let r = &w.kinds[0];
    let total = r.stacks.total();
    let span = format!("[{:4.1}-{:4.1} s]", w.start.as_secs_f64(), w.end.as_secs_f64());
    let top = r.stacks.iter().max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)));
    let Some((stack, weight)) = top else {
        println!("{span} no samples, {} lost", w.ring.lost);
        return;
    };
    let share = 100.0 * weight.as_f64() / total.as_f64();
    println!(
        "{span} {total} {}, {} lost, named in {} ms; top {weight} ({share:.1}%): {}",
        r.meta.unit,
        w.ring.lost,
        naming.as_millis(),
        String::from_utf8_lossy(stack)
    );
}
