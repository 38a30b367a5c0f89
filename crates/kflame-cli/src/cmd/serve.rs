//! `kflame serve --db FILE`: the web page over a history database (crate `kflame-serve`).

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result};
use kflame_serve::{Config, DEFAULT_LISTEN, Token};

/// Arguments of `kflame serve`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Every request needs the token: open the printed URL once (the page keeps the token in a \
cookie and drops it from the address), or send `Authorization: Bearer TOKEN`.

Examples:
  kflame serve             # /var/lib/kflame/kflame.db, what `watch` writes
  kflame serve --db other.db
  kflame serve --kernel-src ~/linux --kernel-git ~/linux  # with source, fixes
  KFLAME_CLICKHOUSE_PASSWORD_FILE=/etc/kflame/ch.pw \\
      kflame serve --store clickhouse+https://ch1:8443/kflame
  curl -H \"Authorization: Bearer $(cat tok)\" 'http://127.0.0.1:7420/api/info'")]
pub(crate) struct Args {
    /// The history database (`kflame watch --db`), opened read-only [default:
    /// /var/lib/kflame/kflame.db, where `kflame watch` writes].
    #[arg(long, value_name = "FILE", conflicts_with = "store")]
    db: Option<PathBuf>,
    /// A ClickHouse store instead (`clickhouse+http://HOST:8123/DB[?cluster=NAME]`, what
    /// `kflame watch --store` writes): the page shows every host, one at a time or merged.
    /// `clickhouse+https://HOST:8443/DB` for TLS (its CA in KFLAME_CLICKHOUSE_CA_FILE).
    #[arg(long, value_name = "URL")]
    store: Option<String>,
    /// Address and port to listen on.
    #[arg(long, value_name = "ADDR:PORT", default_value = DEFAULT_LISTEN)]
    listen: SocketAddr,
    /// Allow a listen address that is not loopback (the token is still required).
    #[arg(long)]
    allow_remote: bool,
    /// Read the token from FILE (surrounding whitespace ignored) instead of a random one.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Make the page follow the present: the newest time is pushed every second.
    #[arg(long)]
    live: bool,
    // A kernel tree and git history: a report's panel shows the culprit's source, callers
    // and maintainers, and fix candidates, as `kflame analyze` gives them (the indexes are
    // opened before the server listens).
    #[command(flatten)]
    kernel: crate::cmd::analyze::KernelArgs,
}

pub(crate) fn run(args: Args) -> Result<()> {
    let token = token(args.token_file.as_deref())?;
    let (db, remote) = match (args.db, args.store) {
        (Some(db), None) => (db, None),
        (None, None) => (PathBuf::from(kflame_watch::config::DEFAULT_DB), None),
        (None, Some(url)) => {
            let remote = crate::cmd::history::open_remote(&url)?;
            (PathBuf::from(&remote.name), Some(remote))
        }
        _ => anyhow::bail!("give --db FILE or --store URL"),
    };
    // The indexes are opened (built the first time) before the server listens, so that the
    // first report opened does not wait for them.
    let (source, fixes) = args.kernel.open()?;
    let analyzer = crate::cmd::explain::Analyzer::new(source, fixes);
    let config = Config {
        db,
        remote,
        listen: args.listen,
        allow_remote: args.allow_remote,
        token,
        live: args.live,
        explain: Some(std::sync::Arc::new(analyzer)),
    };
    let runtime = tokio_runtime()?;
    runtime.block_on(kflame_serve::run(config, |bound| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "kflame serve: open {}", bound.url());
        let _ = writeln!(out, "kflame serve: Ctrl-C to stop");
        let _ = out.flush();
    }))?;
    Ok(())
}

fn tokio_runtime() -> Result<kflame_serve::Runtime> {
    kflame_serve::runtime().context("starting the server's threads")
}

/// The token of `--token-file` (surrounding whitespace ignored), or a random one.
pub(crate) fn token(file: Option<&std::path::Path>) -> Result<Token> {
    Ok(match file {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
            Token::new(&text).with_context(|| format!("{}", path.display()))?
        }
        None => Token::random()?,
    })
}
