//! The HTTP interface of ClickHouse, spoken directly: one POST per statement on its own
//! connection (`Connection: close`), the statement in the `query` parameter or the body,
//! settings as URL parameters, HTTP basic authentication. Every ClickHouse since 2016 speaks
//! it the same way; nothing else is needed from an HTTP library. `clickhouse+https://` puts
//! the same exchange inside TLS (rustls, `tls.rs`), the server's certificate verified.
//!
//! A password never goes in clear text off the machine: over plain HTTP, a request that
//! carries one is sent only to loopback addresses (checked on the resolved addresses, before
//! connecting); anything else is refused with the way out.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::location::Location;

/// Why a statement failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// No answer: refused, reset, timed out, name not resolved. The statement may be sent
    /// again later.
    #[error("unreachable: {0}")]
    Unreachable(String),
    /// The request was sent whole, and its answer never came whole (the connection closed,
    /// was reset or timed out): the server may have carried it out. Sent again later, as
    /// [`HttpError::Unreachable`]; an insert may then be stored twice.
    #[error("unreachable: {0} (the request was sent whole: it may have been carried out)")]
    Unanswered(String),
    /// The server answered with an error (ClickHouse's exception text).
    #[error("the server refused it (HTTP {status}): {message}")]
    Server {
        /// HTTP status.
        status: u16,
        /// The exception text, first line.
        message: String,
        /// ClickHouse's exception code (`Code: 60`), 0 when the text has none.
        code: u32,
    },
    /// TLS refused the server (its certificate, its name, or no TLS at all), or the CA
    /// given cannot be used. A writer refuses to open on it (it needs someone to change
    /// something); one already running spools and retries, as on any failure (a certificate
    /// being rotated).
    #[error("{0}")]
    Tls(String),
    /// Not sent: a password over plain HTTP to an address that is not loopback.
    #[error("{0}")]
    Insecure(String),
}

impl HttpError {
    /// True when the server never answered.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, HttpError::Unreachable(_) | HttpError::Unanswered(_))
    }

    /// True when the request was sent whole and may have been carried out unanswered.
    pub fn is_unanswered(&self) -> bool {
        matches!(self, HttpError::Unanswered(_))
    }
}

/// A client of one server.
#[derive(Clone, Debug)]
pub struct Client {
    loc: Location,
    auth: String,
    /// Time to connect.
    pub connect_timeout: Duration,
    /// Time to wait for each read or write.
    pub io_timeout: Duration,
}

/// `%`-encoding of a URL parameter value.
fn encode(s: &str, out: &mut String) {
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

fn base64(input: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for c in input.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn unreachable(what: &str, e: io::Error) -> HttpError {
    match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        // TLS refused something after the handshake (an alert from the server).
        Some(t) => HttpError::Tls(format!("TLS, {what}: {t}")),
        None => HttpError::Unreachable(format!("{what}: {e}")),
    }
}

/// A connection: a TCP stream, or TLS over one.
trait Transport: Read + Write {}
impl<T: Read + Write> Transport for T {}

impl Client {
    /// A client of the server of `loc`.
    pub fn new(loc: &Location) -> Client {
        Client {
            auth: base64(format!("{}:{}", loc.user, loc.password).as_bytes()),
            loc: loc.clone(),
            connect_timeout: Duration::from_secs(3),
            io_timeout: Duration::from_secs(60),
        }
    }

    /// Runs `sql` (its text in the body) and returns the answer's body.
    pub fn query(&self, sql: &str, settings: &[(&str, &str)]) -> Result<Vec<u8>, HttpError> {
        let out = self.post(None, settings, sql.as_bytes());
        if out.is_ok() {
            crate::sqllog::record_select(sql, None, |tsv| self.post(None, settings, tsv.as_bytes()).ok());
        }
        out
    }

    /// Runs `INSERT INTO table (columns) FORMAT format` with `rows` as its data (`Native`
    /// blocks, or `RowBinary` rows).
    pub fn insert(
        &self,
        table: &str,
        columns: &str,
        format: &str,
        rows: &[u8],
        settings: &[(&str, &str)],
    ) -> Result<(), HttpError> {
        let sql = format!("INSERT INTO {table} ({columns}) FORMAT {format}");
        self.post(Some(&sql), settings, rows)?;
        crate::sqllog::record(&sql, Some(("insert", rows)), None);
        Ok(())
    }

    /// Runs `sql` (in the URL) with an external table `name` of `structure`
    /// (`stack_id UInt64`) whose rows are `rows` in `RowBinary`: a set of any size without
    /// putting it in the SQL text (and sent on to every shard a distributed query reads).
    pub fn query_with_table(
        &self,
        sql: &str,
        settings: &[(&str, &str)],
        name: &str,
        structure: &str,
        rows: &[u8],
    ) -> Result<Vec<u8>, HttpError> {
        const BOUNDARY: &str = "kflame-external-table-7f3c1e";
        let structure_key = format!("{name}_structure");
        let format_key = format!("{name}_format");
        let mut params: Vec<(&str, &str)> = settings.to_vec();
        params.push((&structure_key, structure));
        params.push((&format_key, "RowBinary"));
        let mut body = format!(
            "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{name}\"\r\n\
             Content-Type: application/octet-stream\r\n\r\n"
        )
        .into_bytes();
        body.extend_from_slice(rows);
        body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
        let ct = format!("multipart/form-data; boundary={BOUNDARY}");
        let out = self.send(Some(sql), &params, &body, Some(&ct));
        if out.is_ok() {
            crate::sqllog::record_select(sql, Some((&format!("{name}:{structure}"), rows)), |tsv| {
                self.send(Some(tsv), &params, &body, Some(&ct)).ok()
            });
        }
        out
    }

    fn post(
        &self,
        query: Option<&str>,
        settings: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Vec<u8>, HttpError> {
        self.send(query, settings, body, None)
    }

    fn send(
        &self,
        query: Option<&str>,
        settings: &[(&str, &str)],
        body: &[u8],
        content_type: Option<&str>,
    ) -> Result<Vec<u8>, HttpError> {
        let mut target = String::from("/?");
        let mut params: Vec<(&str, &str)> = settings.to_vec();
        if let Some(q) = query {
            params.push(("query", q));
        }
        for (i, (k, v)) in params.iter().enumerate() {
            if i > 0 {
                target.push('&');
            }
            target.push_str(k);
            target.push('=');
            encode(v, &mut target);
        }
        let host =
            if self.loc.host.contains(':') { format!("[{}]", self.loc.host) } else { self.loc.host.clone() };
        let head = format!(
            "POST {target} HTTP/1.1\r\nHost: {host}:{}\r\nAuthorization: Basic {}\r\n\
             Content-Length: {}\r\nConnection: close\r\nUser-Agent: kflame/{}\r\n{}\r\n",
            self.loc.port,
            self.auth,
            body.len(),
            env!("CARGO_PKG_VERSION"),
            content_type.map_or(String::new(), |t| format!("Content-Type: {t}\r\n")),
        );
        let addrs: Vec<_> = (self.loc.host.as_str(), self.loc.port)
            .to_socket_addrs()
            .map_err(|e| unreachable(&format!("cannot resolve {}", self.loc.host), e))?
            .collect();
        if !self.loc.tls && !self.loc.password.is_empty() && !addrs.iter().all(|a| a.ip().is_loopback()) {
            let https = Location { tls: true, port: 8443, ..self.loc.clone() };
            return Err(HttpError::Insecure(format!(
                "refusing to send the password in clear text to {} (not loopback): use {https} \
                 (ClickHouse's https_port), or reach the server through a tunnel on loopback \
                 (ssh -L {port}:localhost:{port} {host}, then clickhouse+http://localhost:{port}/...)",
                addrs.first().map_or(self.loc.host.clone(), |a| a.ip().to_string()),
                port = self.loc.port,
                host = self.loc.host,
            )));
        }
        let mut last = None;
        let mut stream = None;
        for a in &addrs {
            match TcpStream::connect_timeout(a, self.connect_timeout) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let stream = stream.ok_or_else(|| {
            unreachable(
                &format!("cannot connect to {}:{}", self.loc.host, self.loc.port),
                last.unwrap_or_else(|| io::Error::other("no address")),
            )
        })?;
        let _ = stream.set_nodelay(true);
        stream.set_read_timeout(Some(self.io_timeout)).map_err(|e| unreachable("socket", e))?;
        stream.set_write_timeout(Some(self.io_timeout)).map_err(|e| unreachable("socket", e))?;
        if self.loc.tls {
            let config = crate::tls::config(self.loc.ca_file.as_deref()).map_err(HttpError::Tls)?;
            let name = crate::tls::server_name(&self.loc.host).map_err(HttpError::Tls)?;
            let conn = rustls::ClientConnection::new(config, name)
                .map_err(|e| HttpError::Tls(format!("TLS: {e}")))?;
            let mut tls = rustls::StreamOwned::new(conn, stream);
            self.handshake(&mut tls)?;
            tls.sock.set_read_timeout(Some(self.io_timeout)).map_err(|e| unreachable("socket", e))?;
            tls.sock.set_write_timeout(Some(self.io_timeout)).map_err(|e| unreachable("socket", e))?;
            self.exchange(tls, &head, body)
        } else {
            let peer = stream.peer_addr().ok();
            match self.exchange(stream, &head, body) {
                Err(e @ (HttpError::Unreachable(_) | HttpError::Unanswered(_)))
                    if e.to_string().contains(NO_ANSWER) =>
                {
                    // ClickHouse's https_port drops a plain request so: say what to use.
                    let timeout = self.connect_timeout.min(Duration::from_secs(3));
                    if peer.is_some_and(|a| crate::tls::speaks_tls(&a, &self.loc.host, timeout)) {
                        let https = Location { tls: true, ..self.loc.clone() };
                        return Err(HttpError::Tls(format!(
                            "{}:{} speaks TLS (it dropped a plain HTTP request unanswered, and \
                             answers a TLS handshake): use {https}",
                            self.loc.host, self.loc.port
                        )));
                    }
                    Err(e)
                }
                out => out,
            }
        }
    }

    /// Makes the TLS handshake, waiting [`HANDSHAKE_TIMEOUT`] at most for each answer. A
    /// plain HTTP server may answer a client's hello with an HTTP error, or wait for the rest
    /// of what it reads as a request: when the port then answers plain HTTP, that is said,
    /// with the port to use.
    fn handshake(
        &self,
        tls: &mut rustls::StreamOwned<rustls::ClientConnection, TcpStream>,
    ) -> Result<(), HttpError> {
        let sock = &tls.sock;
        sock.set_read_timeout(Some(HANDSHAKE_TIMEOUT)).map_err(|e| unreachable("socket", e))?;
        sock.set_write_timeout(Some(HANDSHAKE_TIMEOUT)).map_err(|e| unreachable("socket", e))?;
        let peer = sock.peer_addr().ok();
        let mut done = Ok(());
        while tls.conn.is_handshaking() {
            match tls.conn.complete_io(&mut tls.sock) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    done = Err(e);
                    break;
                }
                Ok(_) => {}
            }
        }
        let Err(e) = done else { return Ok(()) };
        if !crate::tls::heard_tls(&e) && peer.is_some_and(|a| speaks_plain_http(&a, self.connect_timeout)) {
            return Err(HttpError::Tls(format!(
                "{}:{} speaks plain HTTP, not TLS (it answers an HTTP request, and not a TLS \
                 handshake): give the server's https_port (8443 by default), or use \
                 clickhouse+http:// for this port",
                self.loc.host, self.loc.port
            )));
        }
        Err(self.io_error("no answer to the TLS handshake", e))
    }

    /// Sends a request on a connection and reads its answer.
    fn exchange(&self, mut stream: impl Transport, head: &str, body: &[u8]) -> Result<Vec<u8>, HttpError> {
        let sending = |e: io::Error| match e.kind() {
            io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe if e.get_ref().is_none() => {
                HttpError::Unreachable(format!("{NO_ANSWER}: dropped while sending it: {e}"))
            }
            _ => self.io_error("sending", e),
        };
        stream.write_all(head.as_bytes()).map_err(sending)?;
        stream.write_all(body).map_err(sending)?;
        stream.flush().map_err(sending)?;
        // Sent whole: from here on, a failure leaves it unknown whether it was carried out.
        let unanswered = |e: HttpError| match e {
            HttpError::Unreachable(why) => HttpError::Unanswered(why),
            e => e,
        };
        let mut r = BufReader::with_capacity(1 << 16, stream);
        // A signal (the watcher's SIGINT) interrupts the wait: it goes on, as `read_line` does.
        let first = loop {
            match r.fill_buf() {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other.map(|b| b.is_empty()),
            }
        };
        match first {
            Ok(true) => return Err(HttpError::Unanswered(format!("{NO_ANSWER}: the connection closed"))),
            Err(e)
                if matches!(e.kind(), io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted)
                    && e.get_ref().is_none() =>
            {
                return Err(HttpError::Unanswered(format!("{NO_ANSWER}: {e}")));
            }
            Err(e) => return Err(unanswered(self.io_error("reading the answer", e))),
            Ok(false) => {}
        }
        read_response(r).map_err(unanswered)
    }

    /// An I/O error, or TLS's refusal explained.
    fn io_error(&self, what: &str, e: io::Error) -> HttpError {
        match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
            Some(t) => HttpError::Tls(crate::tls::explain(t, &self.loc.host, self.loc.ca_file.as_deref())),
            None => unreachable(what, e),
        }
    }
}

/// The longest wait for each answer of a TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether the server at `addr` answers a plain HTTP request (`GET /ping`, ClickHouse's
/// health check) with an HTTP status line, within `timeout` for each step.
fn speaks_plain_http(addr: &std::net::SocketAddr, timeout: Duration) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(addr, timeout) else { return false };
    if s.set_read_timeout(Some(timeout)).is_err() || s.set_write_timeout(Some(timeout)).is_err() {
        return false;
    }
    if s.write_all(b"GET /ping HTTP/1.0\r\n\r\n").is_err() {
        return false;
    }
    let mut head = [0u8; 7];
    s.read_exact(&mut head).is_ok() && &head == b"HTTP/1."
}

/// How an error starts when not a byte came back: the connection closed or was reset, while
/// or after the request was sent.
const NO_ANSWER: &str = "no answer to the request";

/// Longest status or header line of an answer, and of a chunk's size line.
const MAX_HEAD_LINE: u64 = 64 << 10;

/// Reads one line of an answer's head, at most [`MAX_HEAD_LINE`] bytes (0: the answer ended).
fn head_line(r: &mut impl BufRead, line: &mut String) -> Result<usize, HttpError> {
    line.clear();
    let n =
        r.by_ref().take(MAX_HEAD_LINE).read_line(line).map_err(|e| unreachable("reading the answer", e))?;
    if n as u64 == MAX_HEAD_LINE && !line.ends_with('\n') {
        return Err(HttpError::Unreachable(format!(
            "a line of the answer's head is longer than {MAX_HEAD_LINE} bytes"
        )));
    }
    Ok(n)
}

/// Appends exactly `n` bytes of `r` to `body`, growing it with the bytes that come, never
/// by the size an answer claims.
fn read_body(r: &mut impl BufRead, n: u64, body: &mut Vec<u8>) -> Result<(), HttpError> {
    let got = r.by_ref().take(n).read_to_end(body).map_err(|e| unreachable("reading the answer", e))?;
    if (got as u64) < n {
        return Err(HttpError::Unreachable(format!(
            "the answer ended after {got} of the {n} bytes it announced"
        )));
    }
    Ok(())
}

/// Reads an HTTP/1.1 response to the end (the connection closes after it). Sizes the
/// answer announces are not trusted with memory: the body grows with the bytes that come.
pub(crate) fn read_response(mut r: impl BufRead) -> Result<Vec<u8>, HttpError> {
    let mut line = String::new();
    head_line(&mut r, &mut line)?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| HttpError::Unreachable(format!("not an HTTP answer: {:?}", line.trim_end())))?;
    let (mut chunked, mut length) = (false, None::<u64>);
    let mut exception = None;
    loop {
        if head_line(&mut r, &mut line)? == 0 {
            return Err(HttpError::Unreachable("the answer ended in its headers".into()));
        }
        let h = line.trim_end();
        if h.is_empty() {
            break;
        }
        let Some((name, value)) = h.split_once(':') else { continue };
        let value = value.trim();
        match name.to_ascii_lowercase().as_str() {
            "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
            "content-length" => length = value.parse().ok(),
            "x-clickhouse-exception-code" => exception = value.parse::<u32>().ok(),
            _ => {}
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            head_line(&mut r, &mut line)?;
            let size = u64::from_str_radix(line.trim_end().split(';').next().unwrap_or(""), 16)
                .map_err(|_| HttpError::Unreachable(format!("bad chunk size {:?}", line.trim_end())))?;
            if size == 0 {
                break;
            }
            read_body(&mut r, size, &mut body)?;
            let mut crlf = [0u8; 2];
            r.read_exact(&mut crlf).map_err(|e| unreachable("reading the answer", e))?;
        }
    } else if let Some(n) = length {
        read_body(&mut r, n, &mut body)?;
    } else {
        r.read_to_end(&mut body).map_err(|e| unreachable("reading the answer", e))?;
    }
    // An exception met while the answer streams is appended to a 200 body; the header or
    // the status says so beforehand in every other case.
    if status != 200 || exception.is_some() {
        let text = String::from_utf8_lossy(&body);
        let message = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string();
        let code = exception.or_else(|| {
            message
                .strip_prefix("Code: ")
                .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        });
        let message = message.chars().take(2000).collect();
        return Err(HttpError::Server { status, message, code: code.unwrap_or(0) });
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_never_sent_in_clear_text_off_loopback() {
        // Documentation addresses (RFC 5737, RFC 3849): refused before any connection.
        for host in ["192.0.2.7", "[2001:db8::7]"] {
            let loc = Location::parse_with(&format!("clickhouse+http://{host}:8123/fleet"), &|k| {
                (k == "KFLAME_CLICKHOUSE_PASSWORD").then(|| "s3cret".to_string())
            })
            .unwrap();
            let e = Client::new(&loc).query("SELECT 1", &[]).unwrap_err();
            assert!(matches!(e, HttpError::Insecure(_)), "{e:?}");
            let e = e.to_string();
            assert!(
                e.contains("in clear text")
                    && e.contains(&format!("clickhouse+https://default@{host}:8443/fleet")),
                "{e}"
            );
            assert!(e.contains("ssh -L 8123:localhost:8123"), "{e}");
            assert!(!e.contains("s3cret"), "{e}");
        }
    }

    #[test]
    fn base64_matches_the_rfc_examples() {
        for (i, o) in [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foobar", "Zm9vYmFy")] {
            assert_eq!(base64(i.as_bytes()), o);
        }
    }

    #[test]
    fn responses_chunked_sized_and_failed() {
        let ok = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        assert_eq!(read_response(&ok[..]).unwrap(), b"abcde");
        let ok = b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhiXX";
        assert_eq!(read_response(&ok[..]).unwrap(), b"hi");
        let text = "Code: 60, e.displayText() = DB::Exception: Table x doesn't exist\n";
        let bad =
            format!("HTTP/1.1 500 Internal Server Error\r\nContent-Length: {}\r\n\r\n{text}", text.len());
        match read_response(bad.as_bytes()).unwrap_err() {
            HttpError::Server { status: 500, code: 60, message } => {
                assert!(message.contains("doesn't exist"))
            }
            e => panic!("{e:?}"),
        }
        assert!(read_response(&b"garbage"[..]).unwrap_err().is_unreachable());
        assert!(
            read_response(&b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc"[..])
                .unwrap_err()
                .is_unreachable()
        );
        // Sizes far beyond what came are not allocated: an error, at once.
        let huge = b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999\r\n\r\nabc";
        assert!(
            read_response(&huge[..]).unwrap_err().to_string().contains("after 3 of the 99999999999999 bytes")
        );
        let huge = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nabc";
        assert!(read_response(&huge[..]).unwrap_err().is_unreachable());
        let long = format!("HTTP/1.1 200 OK\r\nX: {}", "a".repeat(100 << 10));
        assert!(read_response(long.as_bytes()).unwrap_err().to_string().contains("longer than"));
    }
}
