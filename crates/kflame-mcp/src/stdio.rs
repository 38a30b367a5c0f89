//! MCP over stdin/stdout: one JSON-RPC message a line. The SDK's own stdio transport drops
//! a line it cannot parse, and one over its length limit, without a word, so a client
//! waits for an answer forever; this one answers as JSON-RPC 2.0 says: a line that is not
//! JSON gets a Parse error (-32700) and JSON that is no message an Invalid Request
//! (-32600), both with `"id": null` unless the request's id could be read; a line longer
//! than [`MAX_LINE`] is skipped without being kept, answered with an Invalid Request that
//! gives its length, and the next lines are served.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The longest line read (a message; the same limit as a request body over HTTP): tool
/// arguments are paths, names and times.
pub const MAX_LINE: usize = 1 << 20;

/// JSON-RPC's Parse error.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's Invalid Request.
pub const INVALID_REQUEST: i64 = -32600;

/// What one line read gave.
enum Line {
    /// A whole line is in the buffer.
    Whole,
    /// A line longer than [`MAX_LINE`] ended (or the input did) after this many bytes.
    TooLong(u64),
    /// The input ended.
    Eof,
}

/// A line-delimited JSON-RPC transport over a reader and a writer (stdin and stdout).
pub struct LineTransport<R, W> {
    read: BufReader<R>,
    /// The line being read; kept across cancelled reads (`receive` is polled in a
    /// `select!`: a read dropped halfway resumes where it stopped).
    line: Vec<u8>,
    /// Bytes of a line over the limit skipped so far (0: not skipping).
    skipped: u64,
    /// Lines go out whole, one writer at a time.
    write: Arc<Mutex<W>>,
}

impl<R, W> LineTransport<R, W>
where
    R: tokio::io::AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// A transport reading messages from `read` and writing them to `write`.
    pub fn new(read: R, write: W) -> Self {
        LineTransport {
            read: BufReader::new(read),
            line: Vec::new(),
            skipped: 0,
            write: Arc::new(Mutex::new(write)),
        }
    }

    /// Reads up to the next `\n` into `self.line`, never keeping more than [`MAX_LINE`]
    /// bytes. Cancellation safe: nothing is consumed from the reader but what was copied
    /// or counted.
    async fn read_line(&mut self) -> std::io::Result<Line> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                if self.skipped > 0 {
                    let n = std::mem::take(&mut self.skipped);
                    return Ok(Line::TooLong(n));
                }
                return Ok(Line::Eof);
            }
            let newline = memchr_newline(available);
            let take = newline.map_or(available.len(), |i| i + 1);
            if self.skipped == 0 && self.line.len() + take <= MAX_LINE + 1 {
                self.line.extend_from_slice(&available[..take]);
                self.read.consume(take);
                if newline.is_some() {
                    return Ok(Line::Whole);
                }
                continue;
            }
            // Over the limit: what was kept is counted and dropped, the rest is skipped.
            self.skipped += (self.line.len() + take) as u64;
            self.line = Vec::new();
            self.read.consume(take);
            if newline.is_some() {
                // Its length without the newline.
                let n = std::mem::take(&mut self.skipped) - 1;
                return Ok(Line::TooLong(n));
            }
        }
    }

    /// Writes one answer of the transport's own (an error), on a task of its own so that
    /// a `receive` dropped halfway never leaves half a line written.
    fn answer(&self, message: Value) {
        let write = self.write.clone();
        tokio::spawn(async move {
            let _ = write_line(&write, message.to_string().into_bytes()).await;
        });
    }
}

fn memchr_newline(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

async fn write_line<W: AsyncWrite + Unpin>(write: &Mutex<W>, mut line: Vec<u8>) -> std::io::Result<()> {
    line.push(b'\n');
    let mut w = write.lock().await;
    w.write_all(&line).await?;
    w.flush().await
}

/// A JSON-RPC error answer.
pub fn error_answer(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

/// What to do with a line that is not a message the server takes: the error to answer,
/// or `None` for a notification (no answer is ever sent to one).
pub fn judge(line: &[u8]) -> Option<Value> {
    let line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            return Some(error_answer(Value::Null, PARSE_ERROR, &format!("Parse error: not JSON ({e})")));
        }
    };
    let id = value.get("id").filter(|id| id.is_string() || id.is_number()).cloned();
    if value.get("method").is_some_and(Value::is_string) && value.get("id").is_none() {
        // A notification of a method this server does not take, or with bad parameters.
        return None;
    }
    let what = match &value {
        Value::Object(_) => "not a JSON-RPC 2.0 request, notification or response this server takes",
        Value::Array(_) => "a batch (an array): send one message a line",
        _ => "not a JSON-RPC 2.0 message (expected an object)",
    };
    Some(error_answer(id.unwrap_or(Value::Null), INVALID_REQUEST, &format!("Invalid Request: {what}")))
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: tokio::io::AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move {
            let line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            write_line(&write, line).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                Ok(Line::Whole) => {}
                Ok(Line::TooLong(n)) => {
                    self.answer(error_answer(
                        Value::Null,
                        INVALID_REQUEST,
                        &format!("Invalid Request: a line of {n} bytes, longer than the {MAX_LINE} bytes a message may have; it was skipped"),
                    ));
                    continue;
                }
                Ok(Line::Eof) | Err(_) => return None,
            }
            let line = std::mem::take(&mut self.line);
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(
                text.strip_prefix(b"\xef\xbb\xbf").unwrap_or(text),
            ) {
                Ok(msg) => return Some(msg),
                Err(_) => {
                    if let Some(answer) = judge(text) {
                        self.answer(answer);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.lock().await.flush().await
    }
}

/// The transport on this process's stdin and stdout.
pub fn stdio() -> LineTransport<tokio::io::Stdin, tokio::io::Stdout> {
    LineTransport::new(tokio::io::stdin(), tokio::io::stdout())
}
