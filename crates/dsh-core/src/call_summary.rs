//! A tool call in a few words, as every front end shows it: the terminal UI's transcript, the
//! ACP client's tool call titles, the MCP server's progress messages.

use serde_json::Value;

/// What a call is about, in a few words: the command, the file, the pattern.
pub fn call_summary(name: &str, args: &Value) -> String {
    let s = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
    let summary = match name {
        "bash" => s("command"),
        "read" | "read_image" | "write" | "edit" => s("file_path"),
        "str_replace_editor" => {
            s("path").map(|p| format!("{} {p}", s("command").unwrap_or_default()))
        }
        "glob" | "grep" => s("pattern"),
        "web_fetch" => s("url"),
        "web_search" => s("query"),
        "subagent" | "subagent_fork" => s("description").or_else(|| s("prompt")),
        "job_output" | "job_kill" => s("job_id"),
        _ => None,
    };
    let summary = summary.unwrap_or_else(|| match args {
        Value::Object(map) if map.is_empty() => String::new(),
        Value::Null => String::new(),
        other => other.to_string(),
    });
    let one_line = summary.lines().next().unwrap_or("").to_owned();
    let more = summary.lines().count() > 1;
    let mut short: String = one_line.chars().take(200).collect();
    if more || one_line.chars().count() > 200 {
        short.push_str(" …");
    }
    short
}
