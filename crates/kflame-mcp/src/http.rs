//! The transports: stdio (what a client that starts `kflame mcp` uses), and streamable HTTP
//! at `/mcp` behind the token, with the SDK's Host and Origin checks set to this server's
//! own addresses. The token is `Authorization: Bearer TOKEN`, or `?token=TOKEN` in the
//! endpoint's URL for clients that cannot set a header.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use kflame_serve::Token;
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::{Context, Server};

/// Largest JSON-RPC request body over HTTP.
const MAX_BODY: usize = 1 << 20;

/// Serves MCP on stdin/stdout until the client closes it (see `stdio.rs`: every line gets
/// an answer, a malformed or overlong one an error).
pub async fn serve_stdio(ctx: Arc<Context>) -> Result<(), String> {
    let service =
        Server::new(ctx).serve(crate::stdio::stdio()).await.map_err(|e| format!("MCP on stdio: {e}"))?;
    service.waiting().await.map_err(|e| format!("MCP on stdio: {e}"))?;
    Ok(())
}

/// The HTTP side of a server, bound.
pub struct Bound {
    listener: tokio::net::TcpListener,
    router: axum::Router,
    addr: SocketAddr,
    stop: CancellationToken,
}

impl Bound {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Serves until `stop` completes.
    pub async fn serve(self, stop: impl Future<Output = ()> + Send + 'static) -> Result<(), String> {
        let token = self.stop.clone();
        axum::serve(self.listener, self.router)
            .with_graceful_shutdown(async move {
                stop.await;
                token.cancel();
            })
            .await
            .map_err(|e| format!("MCP over HTTP: {e}"))
    }
}

#[derive(Clone)]
struct Guard {
    token: Token,
}

/// Binds `listen` (loopback unless `allow_remote`) and prepares `/mcp`.
pub async fn bind(
    ctx: Arc<Context>,
    listen: SocketAddr,
    allow_remote: bool,
    token: Token,
    extra_origins: &[String],
) -> Result<Bound, String> {
    if !listen.ip().is_loopback() && !allow_remote {
        return Err(format!(
            "{listen} is not a loopback address: the MCP server answers anyone who can reach it \
             (with the token); pass --allow-remote to mean it"
        ));
    }
    let listener =
        tokio::net::TcpListener::bind(listen).await.map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let port = addr.port();
    let mut hosts = vec![
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
        addr.to_string(),
    ];
    hosts.dedup();
    let mut origins: Vec<String> =
        ["localhost", "127.0.0.1", "[::1]"].iter().map(|h| format!("http://{h}:{port}")).collect();
    origins.push(format!("http://{addr}"));
    origins.extend(extra_origins.iter().cloned());
    let stop = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_max_request_body_bytes(MAX_BODY)
        .with_cancellation_token(stop.child_token());
    let server = Server::new(ctx);
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(Guard { token }, guard));
    Ok(Bound { listener, router, addr, stop })
}

async fn guard(State(g): State<Guard>, req: Request, next: Next) -> Response {
    let bearer = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| g.token.matches(t.trim().as_bytes()));
    // For clients that cannot set a header (test runners): `?token=` in the endpoint's URL.
    let query = req
        .uri()
        .query()
        .unwrap_or("")
        .split('&')
        .any(|p| p.strip_prefix("token=").is_some_and(|t| g.token.matches(t.as_bytes())));
    let ok = bearer || query;
    if ok {
        return next.run(req).await;
    }
    let mut resp = (
        StatusCode::UNAUTHORIZED,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "401: kflame mcp needs its token: send Authorization: Bearer TOKEN (printed at start, or the \
         contents of --token-file)\n",
    )
        .into_response();
    resp.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
    resp
}
