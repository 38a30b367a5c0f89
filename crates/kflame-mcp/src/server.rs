//! The MCP handler: the tool table, tool calls on blocking threads under the time limit,
//! the prompt, and the flame graph view resource.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, Implementation, ListPromptsResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::tools::{self, *};
use crate::{Answer, Context, ToolError, prompts};

/// The flame graph view (MCP Apps).
pub const VIEW_URI: &str = "ui://kflame/flamegraph";
/// Its MIME type, as MCP Apps hosts require.
pub const VIEW_MIME: &str = "text/html;profile=mcp-app";
/// Where a result carries the view's data (hosts pass `_meta` to the view, not the model).
pub const VIEW_META_KEY: &str = "kflame/view";

type Handler = fn(&Context, Value) -> Result<Answer, ToolError>;

/// One tool: name, title, description, input schema, whether it has the view, handler.
pub struct ToolDef {
    /// Tool name.
    pub name: &'static str,
    /// Human title.
    pub title: &'static str,
    /// What it does and when to use it (for the model).
    pub description: &'static str,
    schema: fn() -> Value,
    /// The result can be drawn as a flame graph.
    pub view: bool,
    handler: Handler,
}

fn schema<T: JsonSchema>() -> Value {
    let mut v = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_else(|_| json!({"type": "object"}));
    if let Some(o) = v.as_object_mut() {
        o.remove("$schema");
        o.remove("title");
    }
    not_nullable(&mut v);
    v
}

/// Optional arguments are written as absent, never as `null`: `Option<T>`'s `"type": [T,
/// "null"]` and `anyOf: [T, {"type": "null"}]` become plain `T`, which every client's schema
/// dialect reads (some map tool schemas onto a single-`type` subset).
fn not_nullable(v: &mut Value) {
    match v {
        Value::Object(o) => {
            if let Some(Value::Array(types)) = o.get("type") {
                let rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                if rest.len() == 1 {
                    o.insert("type".into(), rest[0].clone());
                }
            }
            if let Some(Value::Array(any)) = o.get("anyOf") {
                let rest: Vec<Value> =
                    any.iter().filter(|s| s.get("type") != Some(&json!("null"))).cloned().collect();
                if rest.len() == 1 && any.len() == 2 {
                    o.remove("anyOf");
                    if let Value::Object(inner) = &rest[0] {
                        for (k, val) in inner {
                            o.entry(k.clone()).or_insert_with(|| val.clone());
                        }
                    }
                }
            }
            for (_, child) in o.iter_mut() {
                not_nullable(child);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(not_nullable),
        _ => {}
    }
}

fn call<T: DeserializeOwned>(
    f: fn(&Context, T) -> Result<Answer, ToolError>,
    ctx: &Context,
    args: Value,
) -> Result<Answer, ToolError> {
    let args: T =
        serde_json::from_value(args).map_err(|e| ToolError::Input(format!("invalid arguments: {e}")))?;
    f(ctx, args)
}

macro_rules! tool {
    ($name:literal, $title:literal, $args:ty, $f:path, $view:expr, $desc:expr) => {
        ToolDef {
            name: $name,
            title: $title,
            description: $desc,
            schema: schema::<$args>,
            view: $view,
            handler: |ctx, v| call::<$args>($f, ctx, v),
        }
    };
}

/// Every tool of the server.
pub const TOOLS: [ToolDef; 10] = [
    tool!(
        "analyze_kernel_log",
        "Analyze a kernel log",
        KernelLogArgs,
        tools::analyze_kernel_log,
        false,
        "Finds the kernel reports (oops, BUG, WARNING, KASAN/KMSAN/UBSAN, lockdep, RCU stalls, hung tasks, \
         soft/hard lockups, panics) in a kernel log and groups them by signature (the title in syzkaller's form, KIND in FUNCTION), \
         most frequent first. Each group has Error (kind, title, kernel version, taint, CPU/pid/comm, \
         `culprit` {function, offset, module, confidence} = the first frame that is not reporting, locking, \
         allocation, sanitizer or printing machinery), Resolution (the culprit's kernel source and candidate \
         fix commits when the server has a kernel tree and git history) and Summary. Use it first on any \
         kernel error log."
    ),
    tool!(
        "analyze_crash",
        "Analyze crash(8) backtraces",
        CrashArgs,
        tools::analyze_crash,
        false,
        "Groups the task backtraces of `crash` utility output (bt, bt -a, foreach bt) of a kernel dump by \
         their culprit frame, with Error / Resolution / Summary as analyze_kernel_log gives."
    ),
    tool!(
        "summarize_profile",
        "Summarize a profile",
        ProfileArgs,
        tools::summarize_profile,
        true,
        "The hottest functions (self and total, with percentages), the hottest stacks and the kernel's share \
         of a profile, in its unit (samples, ns of off-CPU or latency, bytes of allocations). Reads any file \
         kflame reads (perf.data, perf script, folded stacks, ftrace, bpftrace, bcc, pprof, speedscope) or a \
         time range of the server's kflame watch history. Clients with MCP Apps also show the flame graph."
    ),
    tool!(
        "diff_profiles",
        "Compare two profiles",
        DiffArgs,
        tools::diff_profiles,
        true,
        "Which functions grew or shrank between two profiles (files or history ranges), as shares of each \
         profile's total so that profiles of different lengths compare; the kernel's share before and after. \
         Clients with MCP Apps show the differential flame graph (red grew, blue shrank)."
    ),
    tool!(
        "kernel_source",
        "Kernel source of a function",
        SourceArgs,
        tools::kernel_source,
        false,
        "The definition of a kernel function, macro or syscall (SYSCALL_DEFINEn, static and inline functions \
         included) in the server's kernel tree: file, line range and text. Give the name as a stack shows it."
    ),
    tool!(
        "find_callers",
        "Callers of a kernel function",
        CallersArgs,
        tools::find_callers,
        false,
        "The functions of the server's kernel tree whose bodies call the given function, with file and line."
    ),
    tool!(
        "search_fixes",
        "Search the kernel git log for fixes",
        FixArgs,
        tools::search_fixes,
        false,
        "Ranks commits of the server's kernel git history (BM25 over subject, body, Fixes: trailers, touched \
         files and the functions of their diffs) for the given functions, files and words; with `after`, \
         commits after the reports' kernel rank first. Each hit: full id, date, subject, what matched, and \
         whether it carries a Fixes: trailer."
    ),
    tool!(
        "list_reports",
        "Kernel reports in the history",
        ReportsArgs,
        tools::list_reports,
        false,
        "The kernel reports that kflame watch stored in the server's history database over a time range, \
         grouped by signature as analyze_kernel_log groups them, with counts, first and last time and hosts."
    ),
    tool!(
        "get_report",
        "One stored kernel report, explained",
        ReportArgs,
        tools::get_report,
        true,
        "One kernel report of the server's history (its time from list_reports' `latest`): its text and \
         stack; its analysis as analyze_kernel_log gives it (culprit, resolution with the culprit's source \
         and fix candidates when the server has --kernel-src and --kernel-git, summary); its signature; \
         `similar`, the reports with that signature in the whole history (count, first and last seen, \
         hosts, kernels, latest); and `before`, what its host spent CPU and off-CPU time on in the \
         seconds before it (top functions and paths), drawn as a flame graph."
    ),
    tool!(
        "query_history",
        "Query the watch history",
        HistoryArgs,
        tools::query_history,
        false,
        "Reads the server's kflame watch history database: `overview` (hosts, time span, metric names), \
         `metrics` (CPU, memory, IO, pressure series, resampled, with min/avg/max), or `events` (threshold \
         triggers, detailed captures, kernel reports). For the profile of a range use summarize_profile."
    ),
];

/// The MCP server over one [`Context`].
#[derive(Clone)]
pub struct Server {
    ctx: Arc<Context>,
}

impl Server {
    /// A server of `ctx`.
    pub fn new(ctx: Arc<Context>) -> Server {
        Server { ctx }
    }

    /// The tool list as MCP describes it.
    pub fn tools() -> Vec<Tool> {
        TOOLS
            .iter()
            .filter_map(|t| {
                let mut v = json!({
                    "name": t.name,
                    "title": t.title,
                    "description": t.description,
                    "inputSchema": (t.schema)(),
                    "annotations": {"title": t.title, "readOnlyHint": true, "destructiveHint": false,
                                    "idempotentHint": true, "openWorldHint": false},
                });
                if t.view {
                    v["_meta"] = json!({"ui": {"resourceUri": VIEW_URI}, "ui/resourceUri": VIEW_URI});
                }
                serde_json::from_value(v).ok()
            })
            .collect()
    }

    /// Runs tool `name` with `args` on a blocking thread under the time limit.
    pub async fn run_tool(&self, name: &str, args: Value) -> CallToolResult {
        let Some(def) = TOOLS.iter().find(|t| t.name == name) else {
            return error_result(format!("unknown tool {name:?}"));
        };
        let (ctx, handler, view) = (self.ctx.clone(), def.handler, def.view);
        let limit = ctx.config().timeout;
        let mut job = tokio::task::spawn_blocking(move || handler(&ctx, args));
        match tokio::time::timeout(limit, &mut job).await {
            Err(_) => {
                // The work cannot be killed, only told to stop: the readers look at the same
                // deadline. Say on stderr (the client's log over stdio) when it has ended, so
                // that a call that goes on burning a core is seen.
                let (tool, abandoned) = (name.to_string(), std::time::Instant::now());
                tokio::spawn(async move {
                    let outcome = match job.await {
                        Ok(Ok(_)) => "an answer nobody waits for".to_string(),
                        Ok(Err(e)) => format!("error: {e}"),
                        Err(e) => format!("failure: {e}"),
                    };
                    #[allow(clippy::print_stderr)]
                    {
                        eprintln!(
                            "kflame mcp: {tool}, abandoned at the time limit, ended {:.2} s later with {outcome}",
                            abandoned.elapsed().as_secs_f64()
                        );
                    }
                });
                error_result(format!(
                    "{name} took longer than this server's limit of {} s (--timeout) and was abandoned",
                    limit.as_secs_f64()
                ))
            }
            Ok(Err(join)) => error_result(format!("{name} failed: {join}")),
            Ok(Ok(Err(e))) => error_result(e.to_string()),
            Ok(Ok(Ok(answer))) => success(answer, view),
        }
    }
}

fn error_result(msg: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(msg)])
}

fn success(a: Answer, view: bool) -> CallToolResult {
    let mut r = CallToolResult::success(vec![ContentBlock::text(a.text)]);
    r.structured_content = Some(a.structured);
    if view && let Some(v) = a.view {
        let mut meta = Map::new();
        meta.insert(VIEW_META_KEY.into(), v);
        r.meta = serde_json::from_value(Value::Object(meta)).ok();
    }
    r
}

fn internal(e: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(e.to_string(), None)
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let caps = ServerCapabilities::builder().enable_tools().enable_prompts().enable_resources().build();
        let mut info = ServerConfig::new(caps);
        info.server_info = Implementation::new("kflame", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "kflame explains Linux kernel reports and profiles. For a kernel error log call \
             analyze_kernel_log (culprit frame, source, fixes), then kernel_source, find_callers and \
             search_fixes on its culprit; the explain_kernel_report prompt walks through Error / \
             Resolution / Summary. For profiles call summarize_profile or diff_profiles. File paths must \
             be absolute and under the directories the server allows."
                .into(),
        );
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        serde_json::from_value(json!({"resultType": "complete", "tools": Server::tools()})).map_err(internal)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        Server::tools().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !TOOLS.iter().any(|t| t.name == request.name) {
            return Err(ErrorData::invalid_params(format!("unknown tool {:?}", request.name), None));
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        Ok(self.run_tool(&request.name, args).await.into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        serde_json::from_value(json!({"resultType": "complete", "prompts": prompts::list()}))
            .map_err(internal)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let args: Map<String, Value> = request.arguments.unwrap_or_default().into_iter().collect();
        let v = prompts::get(&request.name, &args).map_err(|e| ErrorData::invalid_params(e, None))?;
        let r: rmcp::model::GetPromptResult = serde_json::from_value(v).map_err(internal)?;
        Ok(r.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        serde_json::from_value(json!({"resultType": "complete", "resources": [{
            "uri": VIEW_URI, "name": "kflame flame graph", "mimeType": VIEW_MIME,
            "description": "kflame's interactive flame graph viewer (MCP Apps view of summarize_profile and diff_profiles)"
        }]}))
        .map_err(internal)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != VIEW_URI {
            return Err(ErrorData::resource_not_found(format!("no resource {:?}", request.uri), None));
        }
        let mut page = Vec::new();
        kflame::render::html::write_app_page(&mut page, "kflame").map_err(internal)?;
        let r: rmcp::model::ReadResourceResult =
            serde_json::from_value(json!({"resultType": "complete", "contents": [{
                "uri": VIEW_URI, "mimeType": VIEW_MIME, "text": String::from_utf8_lossy(&page),
            }]}))
            .map_err(internal)?;
        Ok(r.into())
    }
}
