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
}

impl Child {
    fn start(allow: &std::path::Path) -> Child {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kflame"))
            .args(["mcp", "--allow"])
            .arg(allow)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start kflame mcp");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Child { child, stdin, lines }
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
    let mut c = Child::start(dir.path());
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}});
    c.send(init.to_string().as_bytes());
    let a = c.answer();
    assert_eq!(a["id"], 1, "{a}");
    assert!(a["result"]["serverInfo"].is_object(), "{a}");
    c.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string().as_bytes());

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
