//! `kflame mcp`: the analyzer, kernel source, fix search, profiles and history for AI
//! assistants over the Model Context Protocol (crate `kflame-mcp`).

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow};
use kflame_mcp::{Config, Context};

/// Arguments of `kflame mcp`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Over stdio by default: an MCP client starts `kflame mcp ...` and talks on its stdin and
stdout (logs go to stderr). With --http, streamable HTTP at http://ADDR:PORT/mcp; every
request needs `Authorization: Bearer TOKEN` (printed at start, or --token-file).

Tools only read: files under the --allow directories (symlinks resolved first), the
history database, the kernel tree and git history given here. The source and fix indexes
are built on first use in the cache directory.

Examples:
  kflame mcp --allow /var/log --allow ~/captures \\
      --kernel-src ~/linux --kernel-git ~/linux
  kflame mcp --http 127.0.0.1:7421 --token-file ~/.config/kflame/token \\
      --db /var/lib/kflame/kflame.db

Client configuration (Claude Desktop, VS Code and others take the same shape):
  {\"mcpServers\": {\"kflame\": {\"command\": \"kflame\",
     \"args\": [\"mcp\", \"--allow\", \"/var/log\", \"--kernel-src\", \"/src/linux\"]}}}")]
pub(crate) struct Args {
    /// A directory whose files the tools may read (repeatable).
    #[arg(long = "allow", value_name = "DIR")]
    allow: Vec<PathBuf>,
    /// The history database of `kflame watch` (list_reports, query_history, ranges).
    #[arg(long, value_name = "FILE", conflicts_with = "store")]
    db: Option<PathBuf>,
    /// A fleet's ClickHouse store instead (`clickhouse+http://HOST:8123/DB[?cluster=NAME]`,
    /// or `clickhouse+https://HOST:8443/DB`, its CA in KFLAME_CLICKHOUSE_CA_FILE).
    #[arg(long, value_name = "URL")]
    store: Option<String>,
    /// A kernel source tree (kernel_source, find_callers, the culprit's source).
    #[arg(long, value_name = "DIR")]
    kernel_src: Option<PathBuf>,
    /// The kernel image with DWARF matching the reports (exact source lines).
    #[arg(long, value_name = "FILE", requires = "kernel_src")]
    vmlinux: Option<PathBuf>,
    /// A kernel git history (search_fixes, fixes in the analyses).
    #[arg(long, value_name = "DIR")]
    kernel_git: Option<PathBuf>,
    /// The revision the reports' kernel was built from: fixes after it rank first.
    #[arg(long, value_name = "REV", requires = "kernel_git")]
    after: Option<String>,
    /// Where the source and fix indexes are kept (default: ~/.cache/kflame).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Refuse input files larger than this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 30)]
    max_input_bytes: u64,
    /// Time limit of one tool call, seconds (fractions allowed): the call is answered with an
    /// error then, and the work it started stops soon after.
    #[arg(long, value_name = "SECONDS", default_value = "120", value_parser = super::parse_seconds)]
    timeout: Duration,
    /// Serve streamable HTTP on ADDR:PORT instead of stdio.
    #[arg(long, value_name = "ADDR:PORT")]
    http: Option<SocketAddr>,
    /// With --http: allow a listen address that is not loopback (the token is still required).
    #[arg(long, requires = "http")]
    allow_remote: bool,
    /// With --http: read the token from FILE instead of a random one.
    #[arg(long, value_name = "FILE", requires = "http")]
    token_file: Option<PathBuf>,
    /// With --http: also accept requests from a browser page of this origin
    /// (`http://localhost:6274`); other origins get 403.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    allow_origin: Vec<String>,
}

fn cache_dir(given: Option<PathBuf>) -> Result<PathBuf> {
    given
        .or_else(kflame_analyze::source::cache_dir)
        .ok_or_else(|| anyhow!("no cache directory (HOME and XDG_CACHE_HOME unset): give --cache-dir"))
}

pub(crate) fn run(args: Args) -> Result<()> {
    let store = match &args.store {
        None => None,
        Some(url) => {
            let h = crate::cmd::history::open_remote(url)?;
            Some(h)
        }
    };
    let config = Config {
        store,
        allow: args.allow,
        max_input_bytes: args.max_input_bytes,
        timeout: args.timeout,
        db: args.db,
        kernel_src: args.kernel_src,
        vmlinux: args.vmlinux,
        kernel_git: args.kernel_git,
        after: args.after,
        cache_dir: cache_dir(args.cache_dir)?,
    };
    if config.allow.is_empty() && config.db.is_none() && config.store.is_none() {
        crate::output::message(
            "kflame mcp: no --allow directory and no --db: only kernel_source, find_callers and search_fixes can answer",
        );
    }
    let ctx = Arc::new(Context::new(config).map_err(|e| anyhow!(e))?);
    // The source and fix indexes are opened (built the first time) while the client connects,
    // so that its first question does not wait for them; a call that needs one meanwhile waits.
    let warming = ctx.clone();
    std::thread::spawn(move || {
        for e in warming.warm() {
            crate::output::message(format!("kflame mcp: {e}"));
        }
    });
    let runtime = kflame_serve::runtime().context("starting the server's threads")?;
    match args.http {
        None => runtime.block_on(kflame_mcp::http::serve_stdio(ctx)).map_err(|e| anyhow!(e)),
        Some(listen) => {
            let token = super::serve::token(args.token_file.as_deref())?;
            let printed = args.token_file.is_none().then(|| token.as_str().to_string());
            runtime.block_on(async move {
                let bound = kflame_mcp::http::bind(ctx, listen, args.allow_remote, token, &args.allow_origin)
                    .await
                    .map_err(|e| anyhow!(e))?;
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "kflame mcp: streamable HTTP at {}", bound.url());
                if let Some(t) = printed {
                    let _ = writeln!(out, "kflame mcp: token {t} (send Authorization: Bearer TOKEN)");
                }
                let _ = out.flush();
                drop(out);
                bound.serve(kflame_serve::shutdown_signal()).await.map_err(|e| anyhow!(e))
            })
        }
    }
}
