//! The prompt: `explain_kernel_report`, which walks an assistant through Error / Resolution
//! / Summary for one kernel report, with the tools that give each part.

use serde_json::{Map, Value, json};

/// Longest pasted report taken into the prompt, bytes.
const MAX_REPORT: usize = 64 * 1024;

/// The prompts, as `prompts/list` describes them.
pub fn list() -> Value {
    json!([{
        "name": "explain_kernel_report",
        "title": "Explain a kernel report",
        "description": "Error / Resolution / Summary for a kernel error: the culprit frame, its source, \
                        its callers and candidate fixes from the git log, through kflame's tools.",
        "arguments": [
            {"name": "path", "description": "Absolute path of the kernel log holding the report (under an allowed directory)", "required": false},
            {"name": "report", "description": "The report's text, pasted (used when there is no file)", "required": false},
            {"name": "kernel", "description": "The kernel revision it came from (tag or commit), for the fix search", "required": false}
        ]
    }])
}

/// The messages of prompt `name` with `args`.
pub fn get(name: &str, args: &Map<String, Value>) -> Result<Value, String> {
    if name != "explain_kernel_report" {
        return Err(format!("unknown prompt {name:?}"));
    }
    let arg = |k: &str| args.get(k).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
    let (path, report, kernel) = (arg("path"), arg("report"), arg("kernel"));
    let source = match (path, report) {
        (Some(p), _) => format!("Call analyze_kernel_log with path {p:?}."),
        (None, Some(r)) => {
            let r = if r.len() > MAX_REPORT {
                let mut end = MAX_REPORT;
                while !r.is_char_boundary(end) {
                    end -= 1;
                }
                &r[..end]
            } else {
                r
            };
            format!(
                "The report is below. Save nothing; read it directly, and if the user can give its log \
                 file, call analyze_kernel_log on it for the culprit.\n\n```\n{r}\n```"
            )
        }
        (None, None) => return Err("give `path` (a kernel log) or `report` (its text)".into()),
    };
    let after = kernel.map_or(String::new(), |k| format!(" with after = {k:?}"));
    let text = format!(
        "Explain this Linux kernel report to a kernel engineer. {source}\n\n\
         Then, for the culprit frame (the first frame that is not reporting, locking, allocation, \
         sanitizer or printing machinery; analyze_kernel_log gives it as `culprit` with a confidence):\n\
         1. kernel_source on the culprit function, and on the caller below it when the culprit's \
         confidence is low;\n\
         2. find_callers when the bug may be in how the culprit is called;\n\
         3. search_fixes with the culprit and nearby frames, the culprit's file and the title's words{after}.\n\n\
         Answer in three sections:\n\
         **Error**: the kind, the title, the kernel version and taint, the task, and the culprit frame \
         with its file and line, in one short paragraph.\n\
         **Resolution**: what the source shows went wrong (quote the lines), and the candidate fix \
         commits (full id, subject, why each matches); say plainly when no fix was found.\n\
         **Summary**: two or three plain sentences a maintainer can act on.\n\
         Cite only what the tools returned; do not invent commit ids or line numbers."
    );
    Ok(json!({
        "resultType": "complete",
        "description": "Error / Resolution / Summary for a kernel report",
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}]
    }))
}
