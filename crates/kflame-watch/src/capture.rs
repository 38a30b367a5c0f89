//! A triggered capture: a second `record::Recorder` of the trigger's kind, on a thread of
//! its own for the capture's length, handing a window a second back to the watcher's loop
//! (which writes them), so the always-on profile and the metrics go on meanwhile.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::thread::JoinHandle;
use std::time::Duration;

use kflame::record::{Config, DutyCycle, End, Mode, Naming, Recorder, StackParts, Status, Target, Window};

use crate::rules::CaptureKind;
use crate::store::CaptureId;

/// Page allocations are frequent on a busy machine: a `mem` capture records 2 s of every
/// 10 s, as `kflame record --mem --every 10 --for 2` would.
pub const MEM_DUTY: DutyCycle = DutyCycle { every: Duration::from_secs(10), active: Duration::from_secs(2) };

/// What a capture thread sends.
#[derive(Debug)]
pub enum Message {
    /// A window of the capture.
    Window {
        /// The capture.
        id: CaptureId,
        /// Its kind.
        kind: CaptureKind,
        /// The window.
        window: Box<Window>,
    },
    /// The capture ended (by its length, the stop flag or an error: the note says).
    Done {
        /// The capture.
        id: CaptureId,
        /// Its kind.
        kind: CaptureKind,
        /// Why it ended, remarks of the recorder.
        note: String,
    },
}

/// The recorder configuration of a capture kind.
pub fn config(kind: CaptureKind, length: Duration) -> Config {
    let (mode, duty) = match kind {
        CaptureKind::Cpu => (Mode::Cpu { frequency: 99 }, None),
        CaptureKind::Mem => {
            (Mode::Mem { kmalloc: false }, Some(MEM_DUTY).filter(|_| length > MEM_DUTY.every))
        }
        CaptureKind::OffCpu => (Mode::OffCpu(Default::default()), None),
        CaptureKind::Syscalls => (Mode::Syscalls, None),
        CaptureKind::Blocked => (Mode::Blocked { every: None }, None),
    };
    Config {
        modes: vec![mode],
        target: Target::All,
        duration: (kind != CaptureKind::Blocked).then_some(length),
        parts: StackParts::Both,
        duty,
        naming: Naming::default(),
        keep_events: kind == CaptureKind::Syscalls,
        keep_samples: kind != CaptureKind::Blocked,
        // A second recorder beside the always-on one, with caches of its own: the symbol
        // tables of files both use, and the kernel's, are in memory once (shared by the
        // recorders of the process).
        caches: Default::default(),
        // DWARF user stacks for CPU samples, frame pointers for tracepoint events.
        call_graph: None,
    }
}

/// A running capture.
#[derive(Debug)]
pub struct Capture {
    /// Its id in the store.
    pub id: CaptureId,
    /// Its kind.
    pub kind: CaptureKind,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Capture {
    /// Starts recording at once (errors opening the events are returned here, so the trigger
    /// can say why no capture followed it).
    pub fn start(
        id: CaptureId,
        kind: CaptureKind,
        length: Duration,
        tx: Sender<Message>,
    ) -> Result<Capture, kflame::record::RecordError> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let config = config(kind, length);
        // A recorder stays on the thread that started it (it is not `Send`): it is started
        // there, and whether that worked comes back before this returns.
        let (started_tx, started_rx) = std::sync::mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name(format!("kflame-capture-{}", kind.name()))
            .spawn(move || {
                let mut recorder = match Recorder::start(&config, flag) {
                    Ok(r) => {
                        let _ = started_tx.send(Ok(()));
                        r
                    }
                    Err(e) => {
                        let _ = started_tx.send(Err(e));
                        return;
                    }
                };
                let note = run(&mut recorder, id, kind, &tx);
                let note = match recorder.finish() {
                    Ok(rest) => {
                        let w = Window {
                            start: Duration::ZERO,
                            end: rest.elapsed,
                            kinds: rest.kinds,
                            ring: rest.ring,
                            clock: kflame::record::WallClock::now(),
                        };
                        let _ = tx.send(Message::Window { id, kind, window: Box::new(w) });
                        let mut n = note;
                        for x in rest.notes {
                            n.push_str(if n.is_empty() { "" } else { "; " });
                            n.push_str(&x);
                        }
                        n
                    }
                    Err(e) => {
                        format!("{note}{}recording failed: {e}", if note.is_empty() { "" } else { "; " })
                    }
                };
                let _ = tx.send(Message::Done { id, kind, note });
            })
            .map_err(|e| kflame::record::RecordError::Io {
                what: "cannot start a capture thread".into(),
                source: e,
            })?;
        match started_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => {
                let _ = thread.join();
                return Err(kflame::record::RecordError::Unsupported(
                    "the capture thread ended at start".into(),
                ));
            }
        }
        Ok(Capture { id, kind, stop, thread: Some(thread) })
    }

    /// Asks the capture to end now (it sends what it has, then `Done`).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Lets the thread finish on its own (it is told to stop; it ends once its last window
    /// is named, sending into a channel nobody reads): for a watcher that must stop now.
    pub fn detach(mut self) {
        self.stop();
        drop(self.thread.take());
    }

    /// Waits for the thread.
    pub fn join(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Polls until the recording ends, sending a window every second. Returns how it ended:
/// `done` (its length), `stopped` (the watcher stopped) or why recording failed.
fn run(recorder: &mut Recorder, id: CaptureId, kind: CaptureKind, tx: &Sender<Message>) -> String {
    let mut next = Duration::from_secs(1);
    loop {
        match recorder.poll(Duration::from_millis(100)) {
            Ok(Status::Running) => {}
            Ok(Status::Ended(End::Stopped)) => return "stopped".into(),
            Ok(Status::Ended(_)) => return "done".into(),
            Err(e) => return format!("recording failed: {e}"),
        }
        let elapsed = recorder.progress().elapsed;
        if elapsed >= next && kind != CaptureKind::Blocked {
            let w = recorder.take_window();
            if tx.send(Message::Window { id, kind, window: Box::new(w) }).is_err() {
                return "the watcher went away".into();
            }
            while next <= elapsed {
                next += Duration::from_secs(1);
            }
        }
    }
}
