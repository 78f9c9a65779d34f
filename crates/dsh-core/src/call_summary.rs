//! What a tool call is about, as every front end shows it: in a few words (the terminal UI's
//! transcript, the ACP client's tool call titles, the MCP server's progress messages), and for
//! a call that changes a file, the change it asks for (the UI's diffs, the ACP client's).

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

/// The change a file-changing call asks for, read from its own arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallChange<'a> {
    /// The file, as the call names it.
    pub path: &'a str,
    /// The text replaced; `None` when text is only added.
    pub old: Option<&'a str>,
    pub new: &'a str,
    /// Whether `new` is the whole file (a `write`, a `create`), not a piece of it.
    pub whole_file: bool,
}

/// The change of an `edit`, a `write`, or `str_replace_editor`'s `create`, `str_replace` and
/// `insert`; `None` for any other call, or one whose arguments do not say.
pub fn call_change<'a>(name: &str, args: &'a Value) -> Option<CallChange<'a>> {
    let s = |key: &str| args.get(key).and_then(Value::as_str);
    let change = |path, old, new, whole_file| CallChange {
        path,
        old,
        new,
        whole_file,
    };
    match name {
        "edit" => Some(change(
            s("file_path")?,
            Some(s("old_string")?),
            s("new_string")?,
            false,
        )),
        "write" => Some(change(s("file_path")?, None, s("content")?, true)),
        "str_replace_editor" => {
            let path = s("path")?;
            match s("command")? {
                "create" => Some(change(path, None, s("file_text")?, true)),
                "str_replace" => Some(change(
                    path,
                    Some(s("old_str")?),
                    s("new_str").unwrap_or(""),
                    false,
                )),
                "insert" => Some(change(path, None, s("new_str")?, false)),
                _ => None,
            }
        }
        _ => None,
    }
}
