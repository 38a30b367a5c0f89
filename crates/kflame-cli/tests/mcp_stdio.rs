//! `kflame mcp` over stdio, as a client starts it: a child process, one JSON-RPC message a
//! line. Every line gets an answer: a malformed one a Parse error with `"id": null`, an
//! overlong one an error, and the server goes on serving.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

struct Child {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: mpsc::Receiver<String>,
    log: mpsc::Receiver<String>,
}

/// Sends each line `from` reads to the receiver returned.
fn line_channel(from: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

impl Child {
    fn start(allow: &std::path::Path, extra: &[&str]) -> Child {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kflame"))
            .args(["mcp", "--allow"])
            .arg(allow)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start kflame mcp");
        let stdin = child.stdin.take();
        let lines = line_channel(child.stdout.take().unwrap());
        let log = line_channel(child.stderr.take().unwrap());
        Child { child, stdin, lines, log }
    }

    /// Sends `initialize` and `notifications/initialized`.
    fn initialize(&mut self) {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}});
        self.send(init.to_string().as_bytes());
        let a = self.answer();
        assert_eq!(a["id"], 1, "{a}");
        assert!(a["result"]["serverInfo"].is_object(), "{a}");
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string().as_bytes());
    }

    /// Waits, bounded, for a line of the server's log (stderr) that contains `text`.
    fn log_line(&self, text: &str) -> String {
        let start = std::time::Instant::now();
        loop {
            let left = Duration::from_secs(60).saturating_sub(start.elapsed());
            match self.log.recv_timeout(left) {
                Ok(line) if line.contains(text) => return line,
                Ok(_) => {}
                Err(e) => panic!("no log line with {text:?} within 60 s ({e})"),
            }
        }
    }

    fn send(&mut self, line: &[u8]) {
        let w = self.stdin.as_mut().unwrap();
        w.write_all(line).unwrap();
        w.write_all(b"\n").unwrap();
        w.flush().unwrap();
    }

    /// The next line the server writes, within a bounded wait.
    fn answer(&self) -> Value {
        let line = self.lines.recv_timeout(Duration::from_secs(30)).expect("no answer within 30 s");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }
}

#[test]
fn malformed_and_overlong_lines_are_answered_and_serving_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Child::start(dir.path(), &[]);
    c.initialize();

    // Not JSON: a Parse error, id null (JSON-RPC 2.0, section 5.1).
    c.send(b"{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": ");
    let a = c.answer();
    assert_eq!(a["jsonrpc"], "2.0");
    assert!(a.get("id").is_some_and(Value::is_null), "{a}");
    assert_eq!(a["error"]["code"], -32700, "{a}");
    assert!(a["error"]["message"].as_str().unwrap().starts_with("Parse error"), "{a}");

    // JSON that is no message: an Invalid Request, with the id it carried.
    c.send(json!({"jsonrpc": "2.0", "id": 3, "method": 42}).to_string().as_bytes());
    let a = c.answer();
    assert_eq!(a["id"], 3, "{a}");
    assert_eq!(a["error"]["code"], -32600, "{a}");

    // A 50 MB line: skipped without being kept, answered, and the next line is served.
    let mut big =
        br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","arguments":{"p":""#.to_vec();
    big.resize(50 << 20, b'a');
    big.extend_from_slice(br#""}}}"#);
    c.send(&big);
    let a = c.answer();
    assert!(a.get("id").is_some_and(Value::is_null), "{a}");
    assert_eq!(a["error"]["code"], -32600, "{a}");
    let msg = a["error"]["message"].as_str().unwrap();
    assert!(msg.contains(&format!("a line of {} bytes", big.len())), "{msg}");

    c.send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}).to_string().as_bytes());
    let a = c.answer();
    assert_eq!(a["id"], 5, "{a}");
    assert!(!a["result"]["tools"].as_array().unwrap().is_empty(), "{a}");

    // Closing stdin ends the server, cleanly.
    drop(c.stdin.take());
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = c.child.try_wait().unwrap() {
            break s;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "kflame mcp did not end after stdin closed");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
}

/// A tool call abandoned at the server's time limit stops its work too: the readers (another
/// tool's profile, text read block by block) look at the same deadline, and the server says
/// on stderr when the work ended and how. (When the reading meets the deadline first, its own
/// error is the answer.) Each profile (100,000 distinct deep stacks, as folded
/// text and as a gzipped pprof) takes far longer to read than the 50 ms limit, so each call is
/// abandoned whatever the machine's speed.
#[test]
fn an_abandoned_call_stops_its_work_and_serving_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let folded = dir.path().join("many.folded");
    let mut text = String::new();
    for i in 0..100_000u32 {
        for d in 0..24u32 {
            text.push_str(&format!("function_{d}_{}_of_a_deep_stack;", (i >> (d % 17)) ^ d));
        }
        text.push_str(&format!("leaf_{i} {}\n", i % 13 + 1));
    }
    std::fs::write(&folded, text).unwrap();
    let pprof = dir.path().join("many.pb.gz");
    let out = Command::new(env!("CARGO_BIN_EXE_kflame"))
        .arg("collapse")
        .arg(&folded)
        .arg("-o")
        .arg(&pprof)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let mut c = Child::start(dir.path(), &["--timeout", "0.05"]);
    c.initialize();
    for (id, path) in [(2, &pprof), (3, &folded)] {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "summarize_profile", "arguments": {"path": path}}});
        c.send(call.to_string().as_bytes());
        let a = c.answer();
        assert_eq!(a["id"], id, "{a}");
        assert_eq!(a["result"]["isError"], true, "{a}");
        let msg = a["result"]["content"][0]["text"].as_str().unwrap();
        if msg.contains("reading stopped at its time limit") {
            // The reading met the deadline just before the server's timer did (both are at
            // 50 ms): the work stopped there all the same, and nothing was abandoned.
            continue;
        }
        assert!(msg.contains("limit of 0.05 s (--timeout) and was abandoned"), "{msg}");

        // The work ends by itself at the deadline, not when the whole file has been read.
        let line = c.log_line("summarize_profile, abandoned at the time limit");
        assert!(line.contains("reading stopped at its time limit"), "{}: {line}", path.display());
    }

    c.send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}).to_string().as_bytes());
    let a = c.answer();
    assert_eq!(a["id"], 4, "{a}");
    drop(c.stdin.take());
    let start = std::time::Instant::now();
    while c.child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < Duration::from_secs(30), "kflame mcp did not end after stdin closed");
        std::thread::sleep(Duration::from_millis(50));
    }
}
