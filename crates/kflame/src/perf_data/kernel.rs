//! Kernel symbols for a recording: `--kallsyms`, else the build-id cache, else
//! `/proc/kallsyms` of the running kernel when it is the recorded one. The file (several MB)
//! is found and parsed on a helper thread from the start of the reading; the relocation
//! (KASLR of another boot) is applied once the recorded kernel map is known.

use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

use super::Options;
use super::resolve::KernelSymbols;
use crate::collapse::Output;
use crate::symbols::Kallsyms;

/// What the search found, and a note to report when it found nothing usable.
struct Found {
    syms: Option<Kallsyms>,
    note: Option<(&'static str, String)>,
}

/// Kernel symbols being loaded.
pub(crate) struct KernelLoad {
    pending: Option<JoinHandle<Found>>,
    /// Result when no thread could be started.
    ready: Option<Found>,
}

impl KernelLoad {
    /// Starts looking for the kernel symbols of the recorded kernel (`build_id`).
    pub(crate) fn start(opts: &Options, build_id: Option<Vec<u8>>) -> KernelLoad {
        let kallsyms = opts.kallsyms.clone();
        let host = opts.host.allowed();
        let job = move || find(kallsyms, build_id.as_deref(), host);
        match std::thread::Builder::new().name("kflame-kallsyms".into()).spawn(job.clone()) {
            Ok(h) => KernelLoad { pending: Some(h), ready: None },
            Err(_) => KernelLoad { pending: None, ready: Some(job()) },
        }
    }

    /// Waits for the symbols and relocates them to the kernel recorded at `_text` address
    /// `recorded_text`; notes a missing or unreadable file in `out`.
    pub(crate) fn finish(mut self, recorded_text: Option<u64>, out: &mut Output) -> KernelSymbols {
        let found = match (self.ready.take(), self.pending.take()) {
            (Some(f), _) => f,
            (None, Some(h)) => h.join().unwrap_or_else(|_| Found {
                syms: None,
                note: Some((
                    "no kernel symbols",
                    "reading kallsyms failed: kernel frames are [unknown]".into(),
                )),
            }),
            (None, None) => Found { syms: None, note: None },
        };
        if let Some((kind, msg)) = found.note {
            out.diag.note(kind, 0, || msg);
        }
        let delta = match (&found.syms, recorded_text) {
            (Some(k), Some(rec)) => k.text_address().map_or(0, |t| t.wrapping_sub(rec)),
            _ => 0,
        };
        KernelSymbols { syms: found.syms, delta }
    }
}

fn find(kallsyms: Option<PathBuf>, build_id: Option<&[u8]>, host: bool) -> Found {
    match kallsyms {
        Some(path) => match Kallsyms::open(&path) {
            Ok(k) => Found { syms: Some(k), note: None },
            Err(e) => Found {
                syms: None,
                note: Some(("kallsyms unreadable", format!("{e}: kernel frames are [unknown]"))),
            },
        },
        None => default_kallsyms(build_id, host),
    }
}

fn default_kallsyms(build_id: Option<&[u8]>, host: bool) -> Found {
    let hex: Option<String> = build_id.map(|b| b.iter().map(|x| format!("{x:02x}")).collect());
    if !host {
        let msg = format!(
            "no kallsyms for the recorded kernel (build-id {}): kernel frames are [unknown]; host lookups are \
             off, pass --kallsyms FILE (the /proc/kallsyms of the boot that recorded)",
            hex.as_deref().unwrap_or("not recorded")
        );
        return Found { syms: None, note: Some(("no kernel symbols", msg)) };
    }
    if let (Some(hex), Some(home)) = (&hex, std::env::var_os("HOME")) {
        let cached = Path::new(&home).join(".debug/[kernel.kallsyms]").join(hex).join("kallsyms");
        if let Ok(k) = Kallsyms::open(&cached) {
            return Found { syms: Some(k), note: None };
        }
    }
    let running = std::fs::read("/sys/kernel/notes").ok().and_then(|n| note_build_id(&n));
    if build_id.is_some()
        && running.as_deref() == build_id
        && let Ok(k) = Kallsyms::open(Path::new("/proc/kallsyms"))
    {
        return Found { syms: Some(k), note: None };
    }
    let msg = format!(
        "no kallsyms for the recorded kernel (build-id {}): kernel frames are [unknown]; pass --kallsyms FILE \
         (the /proc/kallsyms of the boot that recorded)",
        hex.as_deref().unwrap_or("not recorded")
    );
    Found { syms: None, note: Some(("no kernel symbols", msg)) }
}

/// The GNU build-id in an ELF notes blob (`/sys/kernel/notes`).
fn note_build_id(mut n: &[u8]) -> Option<Vec<u8>> {
    let word = |b: &[u8]| u32::from_le_bytes(b.try_into().unwrap_or_default()) as usize;
    while n.len() >= 12 {
        let (namesz, descsz, ty) = (word(&n[0..4]), word(&n[4..8]), word(&n[8..12]));
        let name_end = 12 + namesz.div_ceil(4) * 4;
        let desc_end = name_end.checked_add(descsz.div_ceil(4) * 4)?;
        if desc_end > n.len() {
            return None;
        }
        if ty == 3 && n[12..12 + namesz].starts_with(b"GNU") {
            return Some(n[name_end..name_end + descsz].to_vec());
        }
        n = &n[desc_end..];
    }
    None
}
