//! Who may talk to the server.
//!
//! - **Token.** Every request needs the token: as the `kflame_token` cookie (HttpOnly,
//!   SameSite=Strict, set when the page is opened with `/?token=...`, which then redirects
//!   to the same URL without it) or as `Authorization: Bearer TOKEN` (curl, scripts).
//!   Without it: 401, on the page and every API path. The token is compared in constant
//!   time and is never logged.
//! - **Host.** The `Host` header must be the listen address, or `localhost`, `127.0.0.1` or
//!   `[::1]` with the listen port: a DNS-rebinding page (evil.example resolving to
//!   127.0.0.1) sends its own name and gets 403.
//! - **Cross-origin.** An `Origin` header other than the server's own, or `Sec-Fetch-Site`
//!   `cross-site`/`same-site`, gets 403: another site's page cannot make the browser send
//!   requests with the cookie (SameSite=Strict already keeps it out of them).
//! - **Headers.** Every answer carries a Content-Security-Policy without inline script,
//!   `frame-ancestors 'none'`, `X-Content-Type-Options: nosniff`, `Referrer-Policy:
//!   no-referrer` and `Cache-Control: no-store` (unless the handler set its own: a closed
//!   range's profile is `private, no-cache`, revalidated by its ETag).

use std::fmt;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::App;

/// The cookie that carries the token.
pub const COOKIE: &str = "kflame_token";

/// The page and everything it loads come from this server; no inline script.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                       connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; \
                       base-uri 'none'; form-action 'none'";

/// A secret that opens the server.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(..)")
    }
}

/// Why a token is refused.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// An empty token (file).
    #[error("the token is empty")]
    Empty,
    /// Characters that cannot go in a URL or cookie as they are.
    #[error(
        "the token may only hold letters, digits and - . _ ~ (it goes into a URL and a cookie); \
         found {0:?}"
    )]
    BadChar(char),
    /// The random source failed.
    #[error("cannot read random bytes for a token: {0}")]
    Random(String),
}

impl Token {
    /// A new random token: 32 bytes from the kernel, as 64 hex digits.
    pub fn random() -> Result<Token, TokenError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
        Ok(Token(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    /// A given token (a token file's contents); surrounding whitespace is ignored.
    pub fn new(text: &str) -> Result<Token, TokenError> {
        let t = text.trim();
        if t.is_empty() {
            return Err(TokenError::Empty);
        }
        if let Some(c) = t.chars().find(|c| !(c.is_ascii_alphanumeric() || "-._~".contains(*c))) {
            return Err(TokenError::BadChar(c));
        }
        Ok(Token(t.to_string()))
    }

    /// The token text (to print the URL once at start; never in a log line).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Constant-time comparison with a token given by a client.
    pub fn matches(&self, given: &[u8]) -> bool {
        let want = self.0.as_bytes();
        if want.len() != given.len() {
            return false;
        }
        want.iter().zip(given).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }
}

fn plain(status: StatusCode, msg: &str) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], format!("{msg}\n")).into_response()
}

/// The middleware in front of every route.
pub(crate) async fn guard(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let mut resp = check(&app, req, next).await;
    let h = resp.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    // Nothing is stored by the browser, but for answers that say otherwise (a closed
    // range's profile: kept, revalidated with its ETag each time).
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    resp
}

async fn check(app: &App, req: Request, next: Next) -> Response {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "405: this server only answers GET");
    }
    let headers = req.headers();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    if !host_allowed(app, host) {
        return plain(
            StatusCode::FORBIDDEN,
            "403: unknown Host header; open the page by the address kflame serve printed",
        );
    }
    if let Some(why) = cross_origin(headers, host) {
        return plain(StatusCode::FORBIDDEN, &format!("403: cross-origin request refused ({why})"));
    }
    if has_token(app, headers) {
        return next.run(req).await;
    }
    // The page opened with ?token=: set the cookie and take the token out of the address.
    if req.uri().path() == "/"
        && let Some(rest) = query_without_token(app, req.uri().query().unwrap_or(""))
    {
        let location = if rest.is_empty() { "/".to_string() } else { format!("/?{rest}") };
        let cookie = format!("{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/", app.token.as_str());
        let mut resp = Response::new(axum::body::Body::empty());
        *resp.status_mut() = StatusCode::SEE_OTHER;
        if let (Ok(loc), Ok(c)) = (HeaderValue::from_str(&location), HeaderValue::from_str(&cookie)) {
            resp.headers_mut().insert(header::LOCATION, loc);
            resp.headers_mut().insert(header::SET_COOKIE, c);
        }
        return resp;
    }
    plain(
        StatusCode::UNAUTHORIZED,
        "401: this kflame serve needs its token: open the URL it printed at start \
         (http://ADDRESS/?token=...), or send Authorization: Bearer TOKEN",
    )
}

/// The listen address itself, or a loopback name with the listen port.
fn host_allowed(app: &App, host: &str) -> bool {
    let port = app.addr.port();
    if host == app.addr.to_string() {
        return true;
    }
    ["localhost", "127.0.0.1", "[::1]"].iter().any(|name| host == format!("{name}:{port}"))
        || (port == 80 && ["localhost", "127.0.0.1", "[::1]"].contains(&host))
}

/// Why a request comes from another origin, if it does.
fn cross_origin(headers: &HeaderMap, host: &str) -> Option<String> {
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok())
        && site != "same-origin"
        && site != "none"
    {
        return Some(format!("Sec-Fetch-Site: {site}"));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if origin != format!("http://{host}") {
            return Some(format!("Origin {origin:?} is not http://{host}"));
        }
    }
    None
}

fn has_token(app: &App, headers: &HeaderMap) -> bool {
    for v in headers.get_all(header::COOKIE) {
        let Ok(v) = v.to_str() else { continue };
        for part in v.split(';') {
            if let Some((name, value)) = part.trim().split_once('=')
                && name == COOKIE
                && app.token.matches(value.as_bytes())
            {
                return true;
            }
        }
    }
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| app.token.matches(t.trim().as_bytes()))
}

/// When the query holds the right `token=`: the rest of the query.
fn query_without_token(app: &App, query: &str) -> Option<String> {
    let mut found = false;
    let mut rest = Vec::new();
    for part in query.split('&').filter(|p| !p.is_empty()) {
        match part.strip_prefix("token=") {
            Some(t) if app.token.matches(t.as_bytes()) => found = true,
            Some(_) => return None,
            None => rest.push(part),
        }
    }
    found.then(|| rest.join("&"))
}
