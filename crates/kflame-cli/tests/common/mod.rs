//! Helpers of the live recording tests.

#![allow(dead_code, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const WORKLOAD_C: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../kflame/tests/data/record/workload.c");
const NOFP_C: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../kflame/tests/data/record/nofp.c");

/// What a live test needs: the binary, the compiled workload, a scratch directory.
pub(crate) struct Env {
    pub(crate) kflame: &'static str,
    pub(crate) workload: PathBuf,
    pub(crate) dir: PathBuf,
}

static SETUP: OnceLock<Result<(PathBuf, PathBuf), String>> = OnceLock::new();

impl Env {
    /// The environment, or `None` after printing why `test` is skipped.
    pub(crate) fn get(test: &str) -> Option<Env> {
        match SETUP.get_or_init(setup) {
            Ok((dir, workload)) => Some(Env {
                kflame: env!("CARGO_BIN_EXE_kflame"),
                workload: workload.clone(),
                dir: dir.clone(),
            }),
            Err(why) => {
                eprintln!("skipping {test}: {why}");
                None
            }
        }
    }

    pub(crate) fn workload_str(&self) -> &str {
        self.workload.to_str().expect("utf-8 temp path")
    }

    /// `nofp.c` built without frame pointers (`main;kfbar_outer;kfbar_inner`).
    pub(crate) fn nofp(&self) -> String {
        let exe = self.dir.join("nofp");
        if !exe.exists() {
            let tmp = self.dir.join(format!("nofp.{}.tmp", std::process::id()));
            let cc = Command::new("cc")
                .args(["-O2", "-fomit-frame-pointer", "-fno-optimize-sibling-calls", "-o"])
                .arg(&tmp)
                .arg(NOFP_C)
                .status()
                .expect("cc");
            assert!(cc.success(), "cc failed on {NOFP_C}");
            std::fs::rename(&tmp, &exe).expect("rename");
        }
        exe.to_str().expect("utf-8 temp path").to_string()
    }

    /// Runs `kflame record -o DIR/NAME ARGS` and returns the output file's text.
    pub(crate) fn record(&self, args: &[&str], name: &str) -> String {
        self.record_with_stdout(args, name).0
    }

    /// Like [`Env::record`], also returning what the recorded command printed on stdout.
    pub(crate) fn record_with_stdout(&self, args: &[&str], name: &str) -> (String, String) {
        let (text, stdout, _) = self.record_output(args, name);
        (text, stdout)
    }

    /// Like [`Env::record`], also returning kflame's stderr (its notes).
    pub(crate) fn record_with_stderr(&self, args: &[&str], name: &str) -> (String, String) {
        let (text, _, stderr) = self.record_output(args, name);
        (text, stderr)
    }

    /// The output file's text, the recorded command's stdout and kflame's stderr. It runs in
    /// the scratch directory, so that what a recorded program writes beside itself (node's
    /// logs) stays out of the source tree.
    fn record_output(&self, args: &[&str], name: &str) -> (String, String, String) {
        let path = self.dir.join(format!("{}-{name}", std::process::id()));
        let out = Command::new(self.kflame)
            .current_dir(&self.dir)
            .arg("record")
            .arg("-o")
            .arg(&path)
            .args(args)
            .output()
            .expect("run kflame");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "kflame record {args:?} failed: {stderr}");
        eprintln!("kflame record {args:?}: {stderr}");
        let text = std::fs::read_to_string(&path).expect("output file");
        (text, String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
    }
}

fn setup() -> Result<(PathBuf, PathBuf), String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default(); // live: setup of live tests
    if !status.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0")) {
        return Err("needs root (perf_event_open system-wide, tracefs, /proc stacks)".into());
    }
    let check = Command::new(env!("CARGO_BIN_EXE_kflame")).args(["record", "--check"]).output();
    let check = check.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    if !check.lines().any(|l| l.starts_with("yes") && l.contains("cpu-clock")) {
        return Err(format!("perf_event_open is not available here:\n{check}"));
    }
    let dir = std::env::temp_dir().join(format!("kflame-record-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let exe = dir.join("kfwork");
    let cc = Command::new("cc")
        .args(["-O1", "-fno-omit-frame-pointer", "-pthread", "-o"])
        .arg(&exe)
        .arg(WORKLOAD_C)
        .status()
        .map_err(|e| format!("no C compiler (cc): {e}"))?;
    if !cc.success() {
        return Err(format!("cc failed on {WORKLOAD_C}"));
    }
    Ok((dir, exe))
}

/// Folded lines (comments skipped) as (stack, weight).
pub(crate) fn folded(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (s, w) = l.rsplit_once(' ').expect("stack weight");
            (s.to_string(), w.parse().expect("integer weight"))
        })
        .collect()
}

/// The state letter of a process (`/proc/PID/stat`).
pub(crate) fn task_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?; // live: a workload's state
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

/// Waits (at most 10 s) until the task `pid` sleeps in `read(2)` (`/proc/PID/syscall`
/// starting with x86-64's number for it, 0); true when it does.
pub(crate) fn wait_reading(pid: u32) -> bool {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let call = std::fs::read_to_string(format!("/proc/{pid}/syscall")).unwrap_or_default(); // live: its call
        if task_state(pid) == Some('S') && call.split(' ').next() == Some("0") {
            return true;
        }
        if Instant::now() > end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn wait_timeout(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if let Ok(Some(s)) = child.try_wait() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    None
}

/// A child process killed (and reaped) when this goes out of scope, a failed assertion too.
pub(crate) struct Reaped(pub(crate) Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd).args(args).status().is_ok_and(|s| s.success())
}

/// The tracing state that recording must not change: global switches, the events kflame
/// uses (enable, filter, trigger), stack options, probe lists and the instances list.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TracingState(Vec<(String, String)>);

const STATE_FILES: &[&str] = &[
    "tracing_on",
    "current_tracer",
    "set_event",
    "set_event_pid",
    "trace_clock",
    "buffer_size_kb",
    "options/stacktrace",
    "options/userstacktrace",
    "kprobe_events",
    "uprobe_events",
    "events/enable",
    "events/kmem/enable",
    "events/sched/enable",
    "events/raw_syscalls/enable",
];

const EVENTS: &[&str] = &[
    "kmem/mm_page_alloc",
    "kmem/kmalloc",
    "sched/sched_switch",
    "raw_syscalls/sys_enter",
    "raw_syscalls/sys_exit",
];

impl TracingState {
    /// Reads the state through the mounted tracefs, or a private mount made for the test.
    pub(crate) fn read() -> TracingState {
        let mounted = Path::new("/sys/kernel/tracing/events").is_dir(); // live: tracing state
        let root = if mounted {
            PathBuf::from("/sys/kernel/tracing") // live: tracing state
        } else {
            let d = std::env::temp_dir().join(format!("kflame-test-tracefs-{}", std::process::id()));
            std::fs::create_dir_all(&d).expect("mount point");
            assert!(run("mount", &["-t", "tracefs", "nodev", d.to_str().expect("utf-8")]), "mount tracefs");
            d
        };
        let mut files: Vec<String> = STATE_FILES.iter().map(|s| s.to_string()).collect();
        for e in EVENTS {
            for f in ["enable", "filter", "trigger"] {
                files.push(format!("events/{e}/{f}"));
            }
        }
        let mut state: Vec<(String, String)> = files
            .into_iter()
            .map(|f| {
                let v = std::fs::read_to_string(root.join(&f)).unwrap_or_else(|e| format!("<{e}>"));
                (f, v)
            })
            .collect();
        let mut instances: Vec<String> = std::fs::read_dir(root.join("instances"))
            .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        instances.sort();
        state.push(("instances/".into(), instances.join(",")));
        if !mounted {
            assert!(run("umount", &[root.to_str().expect("utf-8")]), "umount tracefs");
            let _ = std::fs::remove_dir(&root);
        }
        TracingState(state)
    }
}

/// An ext4 image mounted on a loop device and frozen; thawed and removed on drop.
pub(crate) struct FrozenFs {
    pub(crate) mnt: PathBuf,
    img: PathBuf,
    frozen: std::cell::Cell<bool>,
}

impl FrozenFs {
    /// Freezes a fresh filesystem, or prints why it cannot and returns `None`.
    pub(crate) fn new(env: &Env) -> Option<FrozenFs> {
        let img = env.dir.join("frozen.img");
        let mnt = env.dir.join("frozen-mnt");
        let _ = std::fs::create_dir_all(&mnt);
        let (i, m) = (img.to_str()?, mnt.to_str()?);
        let fs = FrozenFs { mnt: mnt.clone(), img: img.clone(), frozen: false.into() };
        let steps: [(&str, Vec<&str>); 3] = [
            ("truncate", vec!["-s", "16M", i]),
            ("mkfs.ext4", vec!["-q", "-F", i]),
            ("mount", vec!["-o", "loop", i, m]),
        ];
        for (cmd, args) in steps {
            if !run(cmd, &args) {
                eprintln!("skipping the D-state test: `{cmd} {}` failed on this machine", args.join(" "));
                return None;
            }
        }
        if !run("fsfreeze", &["-f", m]) {
            eprintln!("skipping the D-state test: fsfreeze is refused here");
            return None;
        }
        fs.frozen.set(true);
        Some(fs)
    }

    pub(crate) fn thaw(&self) {
        if self.frozen.replace(false) {
            run("fsfreeze", &["-u", self.mnt.to_str().unwrap_or_default()]);
        }
    }
}

impl Drop for FrozenFs {
    fn drop(&mut self) {
        self.thaw();
        run("umount", &[self.mnt.to_str().unwrap_or_default()]);
        let _ = std::fs::remove_file(&self.img);
        let _ = std::fs::remove_dir(&self.mnt);
    }
}

/// A `kflame serve` started by a test (on a free loopback port), killed when dropped.
pub(crate) struct Served {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub(crate) addr: String,
    token: String,
}

impl Served {
    /// Starts `kflame serve ARGS --listen 127.0.0.1:0` with `token` (written to
    /// `dir/serve-token`) and reads the address it prints.
    pub(crate) fn start(dir: &Path, args: &[&std::ffi::OsStr], token: &str) -> Served {
        use std::io::BufRead;
        let file = dir.join(format!("serve-token-{}", std::process::id()));
        std::fs::write(&file, format!("{token}\n")).expect("write the token");
        let mut child = Command::new(env!("CARGO_BIN_EXE_kflame"))
            .arg("serve")
            .args(args)
            .args(["--listen", "127.0.0.1:0", "--token-file"])
            .arg(&file)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start kflame serve");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("piped stdout"))
            .read_line(&mut line)
            .expect("read");
        let addr = line.split("http://").nth(1).and_then(|r| r.split('/').next()).map(str::to_string);
        let Some(addr) = addr else {
            let _ = child.kill();
            let out = child.wait_with_output().expect("wait");
            panic!("kflame serve printed no address: {line:?} {}", String::from_utf8_lossy(&out.stderr));
        };
        Served { child, addr, token: token.to_string() }
    }

    /// `GET path` with the token: the status line and the body.
    pub(crate) fn get(&self, path: &str) -> (String, String) {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(&self.addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
            self.addr, self.token
        )
        .expect("send");
        let mut r = String::new();
        s.read_to_string(&mut r).expect("read");
        let (head, body) = r.split_once("\r\n\r\n").unwrap_or((&r, ""));
        (head.lines().next().unwrap_or("").to_string(), body.to_string())
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
