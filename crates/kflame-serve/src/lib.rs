//! `kflame serve`: a web page over a kflame history database (what `kflame watch` writes):
//! metric charts on one time axis, a range brush, the flame graph of the selected range
//! drawn by the same viewer modules as `kflame flamegraph --format html`, events, a
//! comparison of two ranges and a sub-second heat map. The page uses only the JSON API
//! under `/api/` (see README.md "kflame serve").
//!
//! Layout:
//! - [`security`]: the token (URL → HttpOnly cookie), `Host`/`Origin`/`Sec-Fetch-Site`
//!   checks and the security headers, as one middleware in front of every route.
//! - [`api`]: the `/api/` handlers; each runs its store query on a blocking thread.
//! - `db`: a small pool of read-only [`kflame_store::Sqlite`] connections, or a
//!   [`RemoteStore`] (ClickHouse) read through `kflame_store::Query`; a database that is
//!   gone or corrupt becomes a 5xx answer with a message, never a crash.
//! - `page`: the page, its own ES modules (`assets/`) and the viewer's modules under
//!   `/viewer/`, served from [`kflame::render::html::ASSETS`] (shared, not copied).
//!
//! The library never prints: [`run`] returns when the server has shut down (SIGINT/SIGTERM
//! or the given future), and errors are values.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower_http::compression::{CompressionLayer, CompressionLevel};

pub mod api;
mod db;
#[doc(hidden)]
pub mod fuzzing;
mod page;
mod scatter;
pub mod security;

pub use security::{Token, TokenError};

/// The default listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7420";

pub use kflame_store::RemoteStore;

/// What to serve and how.
#[derive(Clone, Debug)]
pub struct Config {
    /// The history database (opened read-only); not read when `remote` is given.
    pub db: PathBuf,
    /// A remote store to serve instead of the file.
    pub remote: Option<RemoteStore>,
    /// Where to listen.
    pub listen: SocketAddr,
    /// Accept a listen address that is not loopback.
    pub allow_remote: bool,
    /// The token every request needs.
    pub token: Token,
    /// Push the newest time to the page every second (server-sent events).
    pub live: bool,
    /// Explains the kernel reports served (`/api/report`'s analysis, signature and similar
    /// reports); without one, reports are served with their text and stack only.
    pub explain: Option<Arc<dyn Explain>>,
}

/// What the server asks of a report analyzer, given by the program (the server depends on
/// none): the key a report groups under, and its analysis.
pub trait Explain: Send + Sync + std::fmt::Debug {
    /// The signature and kernel release of the report whose text is `text`, if the text
    /// holds a report.
    fn sign(&self, text: &str) -> Option<Signed>;
    /// The analysis of that report (`kflame analyze --json`'s group: error with culprit,
    /// resolution, summary, signature).
    fn explain(&self, text: &str) -> Option<serde_json::Value>;
    /// What changed most in a comparison tree (`StackTree::add_baseline`: BEFORE the
    /// baseline, AFTER its own weights): `kflame_analyze::profile::diff`'s answer (each
    /// function's share of each side, the `limit` most grown and most shrunk). `None` where
    /// the program gives no such analysis.
    fn compare(
        &self,
        tree: &kflame::fold::tree::StackTree,
        unit: &kflame::fold::Unit,
        limit: usize,
    ) -> Option<serde_json::Value> {
        let _ = (tree, unit, limit);
        None
    }
    /// The commits between two kernel releases (`6.1.0-13-amd64` to `6.8.12-1-amd64`) that
    /// changed each of `functions`, as `kflame query --base-label --kernel-git` lists them:
    /// one `{from, to, total, commits: [{id, date, subject}]}` (at most `limit`) per function,
    /// in their order, or the error that stopped the search. `None` where the server has no
    /// git history.
    fn commits(
        &self,
        functions: &[&str],
        before: &str,
        after: &str,
        limit: usize,
    ) -> Option<Result<Vec<serde_json::Value>, String>> {
        let _ = (functions, before, after, limit);
        None
    }
}

/// The server's explainer and the signatures it gave, by stored report (host, time and the
/// text's length): the reports of a history are signed once, not on every request that
/// groups them (`/api/reports`, a report's similar ones), as a stored report never changes.
#[derive(Debug)]
pub(crate) struct Signer {
    pub(crate) explain: Arc<dyn Explain>,
    signs: std::sync::Mutex<std::collections::HashMap<(String, i64, usize), Option<Signed>>>,
}

impl Signer {
    /// Signatures kept at most (the map is emptied when full: a history's reports are few).
    const KEPT: usize = 1 << 18;

    pub(crate) fn new(explain: Arc<dyn Explain>) -> Arc<Signer> {
        Arc::new(Signer { explain, signs: Default::default() })
    }

    /// The signature of a stored report (`None` for other events, or a text without one).
    pub(crate) fn sign(&self, e: &kflame_store::Event) -> Option<Signed> {
        match e {
            kflame_store::Event::Report { host, time_ns, text, .. } => self.sign_text(host, *time_ns, text),
            _ => None,
        }
    }

    /// The signature of the report `host` logged at `time` with `text`.
    pub(crate) fn sign_text(&self, host: &str, time: i64, text: &str) -> Option<Signed> {
        let key = (host.to_string(), time, text.len());
        if let Some(v) = self.signs.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return v;
        }
        let v = self.explain.sign(text);
        if let Ok(mut m) = self.signs.lock() {
            if m.len() >= Self::KEPT {
                m.clear();
            }
            m.insert(key, v.clone());
        }
        v
    }
}

/// A report's grouping key, and the kernel it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signed {
    /// The analyzer's signature (the title in syzkaller's form: `WARNING in f`).
    pub signature: String,
    /// The kernel release the report names, if any.
    pub kernel: Option<String>,
}

/// Why the server cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A non-loopback address without `--allow-remote`.
    #[error(
        "{0} is not a loopback address: anyone who can reach it could try the token; \
         add --allow-remote to listen there anyway"
    )]
    NotLoopback(SocketAddr),
    /// The database cannot be opened.
    #[error(transparent)]
    Store(#[from] kflame_store::StoreError),
    /// Binding or serving failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}

/// Shared by every request.
#[derive(Debug)]
pub struct App {
    pub(crate) db: Arc<db::Db>,
    pub(crate) token: Token,
    /// The address the server listens on (the port actually bound).
    pub(crate) addr: SocketAddr,
    pub(crate) live: bool,
    /// Explains kernel reports (see [`Config::explain`]), keeping the signatures it gave.
    pub(crate) explain: Option<Arc<Signer>>,
    /// Becomes true at shutdown: open event streams end.
    pub(crate) shutdown: watch::Receiver<bool>,
    /// Answers of closed ranges (see `api::profile`).
    pub(crate) cache: Cache,
    /// The sender of `shutdown` when nothing else keeps it (the router without a socket):
    /// a dropped sender would end every event stream at once.
    _keep: Option<watch::Sender<bool>>,
}

/// The bodies of the last answers for closed ranges, newest first, bounded in number and
/// bytes.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    entries: std::sync::Mutex<std::collections::VecDeque<(String, axum::body::Bytes)>>,
}

impl Cache {
    const ENTRIES: usize = 32;
    const BYTES: usize = 64 << 20;

    pub(crate) fn get(&self, key: &str) -> Option<axum::body::Bytes> {
        let mut e = self.entries.lock().ok()?;
        let i = e.iter().position(|(k, _)| k == key)?;
        let hit = e.remove(i)?;
        let body = hit.1.clone();
        e.push_front(hit);
        Some(body)
    }

    pub(crate) fn put(&self, key: String, body: axum::body::Bytes) {
        let Ok(mut e) = self.entries.lock() else { return };
        e.retain(|(k, _)| *k != key);
        if body.len() > Self::BYTES / 4 {
            return;
        }
        e.push_front((key, body));
        let mut bytes = 0;
        let mut keep = 0;
        for (_, b) in e.iter() {
            if keep == Self::ENTRIES || bytes + b.len() > Self::BYTES {
                break;
            }
            bytes += b.len();
            keep += 1;
        }
        e.truncate(keep);
    }
}

/// How long a connection may take to send a whole request head, counted from when it is
/// opened or from the end of its previous answer (so it is also the idle time a kept-alive
/// connection is given): a connection that sends nothing, half a head, or a byte now and
/// then is closed after it. A page asks again on a new connection.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(15);

/// How many connections are served at once. The next ones wait in the listen queue (the
/// kernel's) until one closes: a client that opens thousands of connections takes no more
/// memory than this many, and each idle one is closed after [`HEADER_TIMEOUT`]. A page opens
/// a handful (its requests and one event stream).
pub const MAX_CONNECTIONS: usize = 256;

/// A bound server, not yet serving: [`Bound::url`] is what to print.
#[derive(Debug)]
pub struct Bound {
    listener: TcpListener,
    app: Arc<App>,
    stop: watch::Sender<bool>,
    header_timeout: Duration,
    max_connections: usize,
}

impl Bound {
    /// The address actually bound (port 0 becomes the chosen port).
    pub fn addr(&self) -> SocketAddr {
        self.app.addr
    }

    /// The URL that opens the page, token included.
    pub fn url(&self) -> String {
        format!("http://{}/?token={}", self.app.addr, self.app.token.as_str())
    }

    /// Another [`HEADER_TIMEOUT`] (tests; at least 1 ms).
    pub fn set_header_timeout(&mut self, timeout: Duration) {
        self.header_timeout = timeout.max(Duration::from_millis(1));
    }

    /// Another [`MAX_CONNECTIONS`] (tests; at least 1).
    pub fn set_max_connections(&mut self, n: usize) {
        self.max_connections = n.max(1);
    }

    /// Serves until `stop` completes, then finishes the requests under way (event streams
    /// are ended) and returns once every connection is closed.
    pub async fn serve(self, stop: impl Future<Output = ()> + Send + 'static) -> Result<(), ServeError> {
        let Bound { listener, app, stop: tx, header_timeout, max_connections } = self;
        let router = router(app);
        // Every connection holds a receiver of `open`; `closed()` completes when all are gone.
        let (open, open_rx) = watch::channel(());
        // And a permit: none is accepted while all are held.
        let slots = Arc::new(tokio::sync::Semaphore::new(max_connections));
        let mut stop = std::pin::pin!(stop);
        loop {
            let (sock, permit) = tokio::select! {
                r = async {
                    let permit = slots.clone().acquire_owned().await;
                    (listener.accept().await, permit)
                } => match r {
                    (Ok((sock, _)), Ok(permit)) => (sock, permit),
                    // Out of file descriptors, a connection reset before it was accepted:
                    // the listener stays good; wait a little rather than spin. (The
                    // semaphore is never closed.)
                    _ => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                () = &mut stop => break,
            };
            let service = hyper_util::service::TowerToHyperService::new(router.clone());
            let mut shutdown = tx.subscribe();
            let held = open_rx.clone();
            tokio::spawn(async move {
                let mut builder = hyper::server::conn::http1::Builder::new();
                builder.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(header_timeout);
                let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(sock), service);
                let mut conn = std::pin::pin!(conn);
                let mut ending = false;
                loop {
                    tokio::select! {
                        // A connection's error (a timeout, a reset) ends only that connection.
                        _ = conn.as_mut() => break,
                        _ = shutdown.wait_for(|s| *s), if !ending => {
                            ending = true;
                            conn.as_mut().graceful_shutdown();
                        }
                    }
                }
                drop(held);
                drop(permit);
            });
        }
        let _ = tx.send(true);
        drop(listener);
        drop(open_rx);
        open.closed().await;
        Ok(())
    }
}

/// Opens the database (read-only, checked now so that a bad file fails at start) and binds.
pub async fn bind(config: Config) -> Result<Bound, ServeError> {
    if !config.listen.ip().is_loopback() && !config.allow_remote {
        return Err(ServeError::NotLoopback(config.listen));
    }
    let db = Arc::new(match &config.remote {
        Some(r) => db::Db::remote(r.store.clone(), r.name.clone()),
        None => db::Db::open(config.db.clone())?,
    });
    db.warm();
    let listener = TcpListener::bind(config.listen)
        .await
        .map_err(|source| ServeError::Io { what: format!("cannot listen on {}", config.listen), source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| ServeError::Io { what: format!("listening on {}", config.listen), source })?;
    let (stop, shutdown) = watch::channel(false);
    let app = Arc::new(App {
        db,
        token: config.token,
        addr,
        live: config.live,
        explain: config.explain.map(Signer::new),
        shutdown,
        cache: Cache::default(),
        _keep: None,
    });
    Ok(Bound { listener, app, stop, header_timeout: HEADER_TIMEOUT, max_connections: MAX_CONNECTIONS })
}

/// The application for an address, without a socket (tests call it with `oneshot`).
pub fn app(db: PathBuf, token: Token, addr: SocketAddr, live: bool) -> Result<Router, ServeError> {
    app_explained(db, token, addr, live, None)
}

/// [`app`], with reports explained by `explain`.
pub fn app_explained(
    db: PathBuf,
    token: Token,
    addr: SocketAddr,
    live: bool,
    explain: Option<Arc<dyn Explain>>,
) -> Result<Router, ServeError> {
    let db = Arc::new(db::Db::open(db)?);
    let (keep, shutdown) = watch::channel(false);
    let cache = Cache::default();
    let explain = explain.map(Signer::new);
    Ok(router(Arc::new(App { db, token, addr, live, explain, shutdown, cache, _keep: Some(keep) })))
}

/// The application over a store read through `kflame_store::Query` alone (as a ClickHouse
/// store is read), without a socket: tests give it a store of their own.
pub fn app_with_store(store: RemoteStore, token: Token, addr: SocketAddr, live: bool) -> Router {
    let db = Arc::new(db::Db::remote(store.store, store.name));
    let (keep, shutdown) = watch::channel(false);
    let cache = Cache::default();
    router(Arc::new(App { db, token, addr, live, explain: None, shutdown, cache, _keep: Some(keep) }))
}

/// Every route, behind the security middleware.
fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(page::index))
        .route("/favicon.ico", get(|| async { axum::http::StatusCode::NO_CONTENT }))
        .route("/assets/{file}", get(page::asset))
        .route("/viewer/{file}", get(page::viewer_asset))
        .merge(scatter::routes())
        .nest("/api", api::routes())
        .fallback(page::not_found)
        .layer(axum::middleware::from_fn_with_state(app.clone(), security::guard))
        // gzip or br, as the browser asks (`Accept-Encoding`); a middle level: the large
        // answers are made per request, and level 4 compresses them about as well as the
        // default at a fraction of the time. Event streams are not compressed.
        .layer(CompressionLayer::new().quality(CompressionLevel::Precise(4)))
        .with_state(app)
}

/// Serves `config` until SIGINT or SIGTERM; `started` is called with the URL once bound.
pub async fn run(config: Config, started: impl FnOnce(&Bound)) -> Result<(), ServeError> {
    let bound = bind(config).await?;
    started(&bound);
    bound.serve(shutdown_signal()).await
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
}

/// The runtime `kflame serve` runs on (the CLI needs no tokio of its own).
pub type Runtime = tokio::runtime::Runtime;

/// A multi-threaded runtime with two worker threads (the queries run on blocking threads).
pub fn runtime() -> std::io::Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()
}
