//! `kflame mcp`: kflame's analyzer, kernel source index, fix search, profiles and history
//! served to AI assistants over the Model Context Protocol (the official Rust SDK, `rmcp`),
//! on stdio or on streamable HTTP.
//!
//! - **Tools** ([`tools`]): `analyze_kernel_log`, `analyze_crash`, `summarize_profile`,
//!   `diff_profiles`, `kernel_source`, `find_callers`, `search_fixes`, `list_reports`,
//!   `get_report`, `query_history`. Each answers with structured JSON (`structuredContent`; the report
//!   tools give the objects of `kflame analyze --json`, culprit included) and a short text,
//!   cut to a model's context (`limit`s, frame and source lines capped).
//! - **Flame graphs in the assistant**: the profile tools name the `ui://kflame/flamegraph`
//!   resource (MCP Apps: `_meta.ui.resourceUri`); it is kflame's own HTML viewer, the same
//!   module tree as the offline page, which draws the profile carried in the result's
//!   `_meta` (so the model's context does not hold it).
//! - **Prompts** ([`prompts`]): `explain_kernel_report`, Error / Resolution / Summary for a
//!   report.
//! - **Safety**: no tool records or writes anything but the indexes in the cache directory;
//!   files are read only under the `--allow` directories, symlinks resolved first
//!   ([`paths`]); inputs over the size limit are refused; every call has a time limit. Over
//!   HTTP: loopback by default, a token (`Authorization: Bearer`), Host and Origin checked.

#[doc(hidden)]
pub mod fuzzing;
pub mod http;
pub mod paths;
pub mod prompts;
pub mod server;
pub mod stdio;
pub mod tools;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use kflame_analyze::fixes::GitFixes;
use kflame_analyze::source::{KernelSource, SourceIndex, Vmlinux};
use serde_json::Value;

pub use paths::Roots;
pub use server::Server;

/// What the server may read and where its indexes live.
#[derive(Clone, Debug)]
pub struct Config {
    /// Directories whose files the tools may read.
    pub allow: Vec<PathBuf>,
    /// Largest input file, bytes.
    pub max_input_bytes: u64,
    /// Time limit of one tool call.
    pub timeout: Duration,
    /// The history database of `kflame watch` (`list_reports`, `query_history`, ranges).
    pub db: Option<PathBuf>,
    /// A remote history (a fleet's ClickHouse store) instead of `db`.
    pub store: Option<kflame_store::RemoteStore>,
    /// A kernel source tree (`kernel_source`, `find_callers`, the culprit's source).
    pub kernel_src: Option<PathBuf>,
    /// A vmlinux with DWARF matching the reports.
    pub vmlinux: Option<PathBuf>,
    /// A kernel git history (`search_fixes`, the Resolution's fixes).
    pub kernel_git: Option<PathBuf>,
    /// The revision the reports' kernel was built from (fixes after it rank first).
    pub after: Option<String>,
    /// Where the source and fix indexes are kept.
    pub cache_dir: PathBuf,
}

/// A tool's answer: structured JSON and a short text for the model, and the flame graph
/// view's data when the tool has one.
#[derive(Debug, Clone)]
pub struct Answer {
    /// `structuredContent`.
    pub structured: Value,
    /// The text content.
    pub text: String,
    /// Data for `ui://kflame/flamegraph` (the viewer's `{profile, nodes}`).
    pub view: Option<Value>,
}

impl Answer {
    /// An answer without a view.
    pub fn new(structured: Value, text: String) -> Answer {
        Answer { structured, text, view: None }
    }

    /// With the flame graph view's data.
    pub fn with_view(mut self, view: Value) -> Answer {
        self.view = Some(view);
        self
    }
}

/// Why a tool failed: returned to the client as a tool result with `isError` (the model
/// reads it), except `Internal`.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ToolError {
    /// Bad arguments or input: what was wrong and what to do.
    #[error("{0}")]
    Input(String),
    /// The server was not started with what this tool needs.
    #[error("{what} is not available: start kflame mcp with {flag}")]
    Unavailable {
        /// What is missing.
        what: &'static str,
        /// The flag that gives it.
        flag: &'static str,
    },
    /// A bug.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ToolError {
    pub(crate) fn input(msg: String) -> ToolError {
        ToolError::Input(msg)
    }
    pub(crate) fn unavailable(what: &'static str, flag: &'static str) -> ToolError {
        ToolError::Unavailable { what, flag }
    }
    pub(crate) fn internal(e: impl std::fmt::Display) -> ToolError {
        ToolError::Internal(e.to_string())
    }
}

/// What every tool call sees: the roots, and the indexes, opened on first use (the first
/// call that needs one builds or updates it, in the cache directory).
pub struct Context {
    /// Readable directories.
    pub roots: Roots,
    config: Config,
    source: OnceLock<Result<Arc<KernelSource>, String>>,
    fixes: OnceLock<Result<Arc<GitFixes>, String>>,
    opening: Mutex<()>,
}

impl Context {
    /// A context from `config`; fails when an `--allow` directory is not one.
    pub fn new(config: Config) -> Result<Context, String> {
        let roots = Roots::new(&config.allow, config.max_input_bytes)?;
        Ok(Context {
            roots,
            config,
            source: OnceLock::new(),
            fixes: OnceLock::new(),
            opening: Mutex::new(()),
        })
    }

    /// The server's configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The kernel source index, if the server has a tree (opened or built on first use).
    pub fn source(&self) -> Result<Option<Arc<KernelSource>>, ToolError> {
        let Some(tree) = &self.config.kernel_src else { return Ok(None) };
        let _g = self.opening.lock().unwrap_or_else(|p| p.into_inner());
        let r = self.source.get_or_init(|| {
            let index = kflame_analyze::source::index_file(&self.config.cache_dir, tree);
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
            let (idx, _) = SourceIndex::open(tree, &index, threads).map_err(|e| e.to_string())?;
            let vmlinux =
                self.config.vmlinux.as_deref().map(Vmlinux::open).transpose().map_err(|e| e.to_string())?;
            Ok(Arc::new(KernelSource { index: idx, vmlinux }))
        });
        r.clone().map(Some).map_err(|e| ToolError::Input(format!("kernel source: {e}")))
    }

    /// The fix index, if the server has a kernel git history (built or updated on first use).
    pub fn fixes(&self) -> Result<Option<Arc<GitFixes>>, ToolError> {
        let Some(git) = &self.config.kernel_git else { return Ok(None) };
        let _g = self.opening.lock().unwrap_or_else(|p| p.into_inner());
        let r = self.fixes.get_or_init(|| {
            let dir = self.config.cache_dir.join(format!("fixes-{}", kflame_analyze::source::path_key(git)));
            let index = kflame_fixes::Index::open_or_build(git, Some(&dir)).map_err(|e| e.to_string())?;
            Ok(Arc::new(GitFixes { index, after: self.config.after.clone() }))
        });
        r.clone().map(Some).map_err(|e| ToolError::Input(format!("fix search: {e}")))
    }

    /// The history: the remote store, or a new read-only connection to the database file.
    pub fn db(&self) -> Result<Box<dyn kflame_store::Query>, ToolError> {
        if let Some(r) = &self.config.store {
            return Ok(Box::new(r.store.clone()));
        }
        let path = self
            .config
            .db
            .as_ref()
            .ok_or_else(|| ToolError::unavailable("the history", "--db FILE or --store URL"))?;
        Ok(Box::new(tools::open_db(path)?))
    }

    /// Opens every index now (so that the first tool call does not pay for it).
    pub fn warm(&self) -> Vec<String> {
        let mut errors = Vec::new();
        if let Err(e) = self.source() {
            errors.push(e.to_string());
        }
        if let Err(e) = self.fixes() {
            errors.push(e.to_string());
        }
        errors
    }
}
