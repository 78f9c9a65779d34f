//! The opt-in `str_replace_editor` tool: one tool with `view`, `create`, `str_replace` and
//! `insert` commands, in the shape some models were trained on. Texts match the reference.
//!
//! It shares the session's observations and write fence with `read`, `write` and `edit`:
//! viewing a file counts as reading it, and `str_replace`/`insert` need the file to have been
//! seen, at the version on disk. Unlike `edit` it works on the raw text (no line-ending
//! normalisation), and its errors carry no remedy suffix, as in the reference.

use std::path::Path;

use crate::schema::{Param, ParamType, Parameters};
use crate::write::write_checked;
use crate::{
    Arguments, Observation, Target, Tool, ToolContext, ToolError, ToolFuture, ToolOutput,
    ToolSession, Version, fs_code, resolve,
};

/// The longest output, in UTF-16 code units as the reference counts.
const MAX_OUTPUT_UNITS: usize = 16_000;
const CLIPPED: &str = "<response clipped><NOTE>To save on context only part of this file has \
been shown to you. You should retry this tool after you have searched inside the file with \
`grep -n` in order to find the line numbers of what you are looking for.</NOTE>";
const COMMANDS: [&str; 4] = ["view", "create", "str_replace", "insert"];
/// The optional parameters each command uses; a `null` for any other counts as left out.
const USES: &[(&str, &[&str])] = &[
    ("view", &["view_range"]),
    ("create", &["file_text"]),
    ("str_replace", &["old_str", "new_str"]),
    ("insert", &["insert_line", "new_str"]),
];

/// The `str_replace_editor` tool.
pub struct StrReplaceEditor {
    parameters: Parameters,
}

impl Default for StrReplaceEditor {
    fn default() -> Self {
        StrReplaceEditor {
            parameters: Parameters::new(vec![
                Param::required(
                    "command",
                    ParamType::String,
                    "What to do: view, create, str_replace or insert.",
                )
                .one_of(&COMMANDS),
                Param::required(
                    "path",
                    ParamType::String,
                    "Absolute path of the file (or, for view, folder).",
                ),
                Param::optional(
                    "file_text",
                    ParamType::String,
                    "For create: the content of the new file.",
                ),
                Param::optional(
                    "insert_line",
                    ParamType::Integer,
                    "For insert: the line after which new_str goes (0 puts it first).",
                ),
                Param::optional(
                    "new_str",
                    ParamType::String,
                    "For str_replace: the replacement (omitted: old_str is deleted). For insert: \
                     the text to insert.",
                ),
                Param::optional(
                    "old_str",
                    ParamType::String,
                    "For str_replace: the exact text to replace; it must occur exactly once.",
                ),
                Param::optional(
                    "view_range",
                    ParamType::Array(Box::new(ParamType::Integer)),
                    "For view of a file: [first, last] line, 1-based; last -1 means to the end.",
                ),
            ])
            .unused_null_omitted("command", USES),
        }
    }
}

impl Tool for StrReplaceEditor {
    fn name(&self) -> &str {
        "str_replace_editor"
    }

    fn facts(&self) -> crate::ToolFacts {
        crate::ToolFacts::new(crate::ToolKind::Edit, "Edit")
            .file("path")
            .line("insert_line")
            .summary(editor_summary)
            .change(editor_change)
    }

    fn description(&self) -> &str {
        "View, create and edit files.\n\
         * view shows a file with line numbers (like `cat -n`), or lists a folder two levels \
         deep without hidden entries\n\
         * create makes a new file and never overwrites an existing one\n\
         * str_replace replaces old_str, which must match exactly one place in the file, \
         whitespace included, with new_str\n\
         * insert adds new_str after line insert_line\n\
         * long output is cut and marked with `<response clipped>`\n\
         * a parameter the command does not use may be left out or given as null; one it uses \
         may not be null (leave new_str out to delete old_str)\n\
         Paths must be absolute. View a file before changing it."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    /// Only `view`: the other commands write files themselves.
    fn plan_safe(&self, args: &Arguments) -> bool {
        args.str("command") == Some("view")
    }

    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let command = args.str("command").unwrap_or_default().to_owned();
            let raw = args.str("path").unwrap_or_default().to_owned();
            if raw.trim().is_empty() {
                return Err(ToolError::plain("path must be a non-empty string"));
            }
            if !raw.starts_with('/') {
                return Err(ToolError::plain(format!(
                    "The path {raw} is not an absolute path, it should start with `/`. Maybe you \
                     meant /{raw}?"
                )));
            }
            for new_text in [args.str("file_text"), args.str("new_str")]
                .into_iter()
                .flatten()
            {
                crate::redact::refuse_placeholder(&ctx.session, new_text)?;
            }
            let request = Request {
                command,
                file_text: args.str("file_text").map(str::to_owned),
                insert_line: args.get("insert_line").and_then(serde_json::Value::as_i64),
                new_str: args.str("new_str").map(str::to_owned),
                old_str: args.str("old_str").map(str::to_owned),
                view_range: args.get("view_range").map(|v| {
                    v.as_array()
                        .map(|items| items.iter().filter_map(serde_json::Value::as_i64).collect())
                        .unwrap_or_default()
                }),
            };
            let session = ctx.session.clone();
            crate::registry::blocking("str_replace_editor", move || {
                let target = resolve(Path::new("/"), &raw)?;
                request.run(&target, &session).map(ToolOutput::text)
            })
            .await
        })
    }
}

struct Request {
    command: String,
    file_text: Option<String>,
    insert_line: Option<i64>,
    new_str: Option<String>,
    old_str: Option<String>,
    view_range: Option<Vec<i64>>,
}

impl Request {
    fn run(self, target: &Target, session: &ToolSession) -> Result<String, ToolError> {
        let shown = target.shown().to_string();
        match self.command.as_str() {
            "view" => view(target, &shown, self.view_range.as_deref(), session),
            "create" => {
                let content = required(self.file_text, "file_text", "create")?;
                create(target, &shown, &content, session)
            }
            "str_replace" => {
                let seen = edit_basis(target, &shown, session)?;
                let old = required(self.old_str, "old_str", "str_replace")?;
                if old.is_empty() {
                    return Err(ToolError::plain(
                        "Parameter `old_str` is empty for command: str_replace",
                    ));
                }
                existing_file(target, &shown, session)?;
                let text = read_text(target, &shown)?;
                let starts: Vec<usize> = text.match_indices(&old).map(|(at, _)| at).collect();
                match starts[..] {
                    [] => Err(ToolError::fs(
                        fs_code::EDIT_NOT_FOUND,
                        format!(
                            "No replacement was performed, old_str `{old}` did not appear verbatim in {shown}."
                        ),
                    )),
                    [at] => {
                        let new = self.new_str.unwrap_or_default();
                        let after = format!("{}{new}{}", &text[..at], &text[at + old.len()..]);
                        replace(target, &shown, &after, seen, session)
                    }
                    _ => {
                        let lines: Vec<String> = starts
                            .iter()
                            .map(|&at| (text[..at].matches('\n').count() + 1).to_string())
                            .collect();
                        Err(ToolError::fs(
                            fs_code::AMBIGUOUS_EDIT,
                            format!(
                                "No replacement was performed. Multiple occurrences of old_str `{old}` in lines [{}]. Please ensure it is unique",
                                lines.join(", ")
                            ),
                        ))
                    }
                }
            }
            "insert" => {
                let Some(line) = self.insert_line else {
                    return Err(ToolError::plain(
                        "Parameter `insert_line` is required for command: insert",
                    ));
                };
                let value = required(self.new_str, "new_str", "insert")?;
                let seen = edit_basis(target, &shown, session)?;
                existing_file(target, &shown, session)?;
                let text = read_text(target, &shown)?;
                let mut lines: Vec<&str> = text.split('\n').collect();
                let at = usize::try_from(line).ok().filter(|&at| at <= lines.len());
                let Some(at) = at else {
                    return Err(ToolError::plain(format!(
                        "Invalid `insert_line` parameter: {line}. It should be within the range of lines of the file: [0, {}]",
                        lines.len()
                    )));
                };
                lines.splice(at..at, value.split('\n'));
                replace(target, &shown, &lines.join("\n"), seen, session)
            }
            // The schema's enum has already refused anything else.
            other => Err(ToolError::plain(format!(
                "unknown command {other:?}; use one of view, create, str_replace, insert"
            ))),
        }
    }
}

fn required(value: Option<String>, name: &str, command: &str) -> Result<String, ToolError> {
    value.ok_or_else(|| {
        ToolError::plain(format!(
            "Parameter `{name}` is required for command: {command}"
        ))
    })
}

/// The version a change is checked against: the one the session saw.
fn edit_basis(target: &Target, shown: &str, session: &ToolSession) -> Result<Version, ToolError> {
    match session.observations.get(&target.key) {
        None => Err(ToolError::fs(
            fs_code::NOT_OBSERVED,
            format!("edit requires reading \"{shown}\" first"),
        )),
        Some(Observation::Absent) => Err(ToolError::fs(
            fs_code::NOT_FOUND,
            format!("cannot edit \"{shown}\": not found"),
        )),
        Some(Observation::Present(version)) => Ok(version),
    }
}

/// The path must exist and, for a change, be a file.
fn existing_file(
    target: &Target,
    shown: &str,
    session: &ToolSession,
) -> Result<std::fs::Metadata, ToolError> {
    let meta = stat(target, shown, session)?;
    if meta.is_dir() {
        return Err(ToolError::fs(
            fs_code::NOT_REGULAR_FILE,
            format!(
                "The path {shown} is a directory and only the `view` command can be used on directories"
            ),
        ));
    }
    if !meta.is_file() {
        return Err(ToolError::fs(
            fs_code::NOT_REGULAR_FILE,
            format!("cannot edit \"{shown}\": not a regular file"),
        ));
    }
    Ok(meta)
}

fn stat(
    target: &Target,
    shown: &str,
    session: &ToolSession,
) -> Result<std::fs::Metadata, ToolError> {
    std::fs::metadata(&target.key).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            session.observations.absent(&target.key);
            ToolError::fs(
                fs_code::NOT_FOUND,
                format!("The path {shown} does not exist. Please provide a valid path."),
            )
        } else {
            crate::read::read_error(shown, &e)
        }
    })
}

/// The file's text, decoded as `read` decodes it.
fn read_text(target: &Target, shown: &str) -> Result<String, ToolError> {
    let bytes = std::fs::read(&target.key).map_err(|e| crate::read::read_error(shown, &e))?;
    if bytes[..bytes.len().min(8192)].contains(&0) {
        return Err(ToolError::fs(
            fs_code::NOT_TEXT,
            format!("cannot read \"{shown}\": binary file"),
        ));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        ToolError::fs(
            fs_code::NOT_TEXT,
            format!("cannot read \"{shown}\": invalid UTF-8 text"),
        )
    })?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_owned(),
        None => text,
    })
}

fn view(
    target: &Target,
    shown: &str,
    range: Option<&[i64]>,
    session: &ToolSession,
) -> Result<String, ToolError> {
    let meta = stat(target, shown, session)?;
    if meta.is_dir() {
        if range.is_some() {
            return Err(ToolError::plain(
                "The `view_range` parameter is not allowed when `path` points to a directory.",
            ));
        }
        return Ok(list_dir(target, shown));
    }
    if !meta.is_file() {
        return Err(ToolError::fs(
            fs_code::NOT_REGULAR_FILE,
            format!("cannot view \"{shown}\": not a regular file or directory"),
        ));
    }
    let text = read_text(target, shown)?;
    session
        .observations
        .present(&target.key, Version::of(&meta));
    let lines: Vec<&str> = text.split('\n').collect();
    let total = lines.len();
    let mut header = format!(
        "Here's the content of {shown} with line numbers (which has a total of {total} lines)"
    );
    let (first, selected) = match range {
        None => (1, &lines[..]),
        Some(range) => {
            let &[from, to] = range else {
                return Err(ToolError::plain(
                    "Invalid `view_range`. It should be a list of two integers.",
                ));
            };
            let shown_range = format!("[{from}, {to}]");
            let n = total as i64;
            if from < 1 || from > n {
                return Err(ToolError::plain(format!(
                    "Invalid `view_range`: {shown_range}. Its first element `{from}` should be within the range of lines of the file: [1, {total}]"
                )));
            }
            if to > n {
                return Err(ToolError::plain(format!(
                    "Invalid `view_range`: {shown_range}. Its second element `{to}` should be smaller than the number of lines in the file: `{total}`"
                )));
            }
            if to != -1 && to < from {
                return Err(ToolError::plain(format!(
                    "Invalid `view_range`: {shown_range}. Its second element `{to}` should be larger or equal than its first `{from}`"
                )));
            }
            header.push_str(&format!(" with view_range={shown_range}"));
            // Both are within 1..=total here, or `to` is -1 (to the end).
            let start = (from - 1) as usize;
            let end = if to == -1 { total } else { to as usize };
            (from as usize, &lines[start..end.max(start)])
        }
    };
    let numbered: Vec<String> = selected
        .iter()
        .enumerate()
        .map(|(i, line)| format!("{:>6}  {line}", first + i))
        .collect();
    Ok(clip(
        format!("{header}:\n{}\n", numbered.join("\n")),
        session.redactor.as_ref(),
    ))
}

/// A folder's non-hidden entries two levels deep, `d`/`f`/`?`, a tab and the absolute path.
fn list_dir(target: &Target, shown: &str) -> String {
    fn visit(dir: &Path, shown: &Path, depth: usize, rows: &mut Vec<(String, char)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "node_modules" || name == "__pycache__" {
                continue;
            }
            // Followed like the reference's stat: a link to a folder lists as a folder.
            let kind = match std::fs::metadata(entry.path()) {
                Ok(m) if m.is_dir() => 'd',
                Ok(m) if m.is_file() => 'f',
                _ => '?',
            };
            let child = shown.join(&name);
            rows.push((child.display().to_string(), kind));
            if kind == 'd' && depth < 2 {
                visit(&entry.path(), &child, depth + 1, rows);
            }
        }
    }
    let mut rows = vec![(shown.to_owned(), 'd')];
    visit(&target.key, &target.display, 1, &mut rows);
    rows.sort_by(|a, b| a.0.chars().cmp(b.0.chars()));
    let listing: Vec<String> = rows.iter().map(|(p, k)| format!("{k}\t{p}")).collect();
    format!(
        "Here're the files and directories up to 2 levels deep in {shown}, excluding hidden items, node_modules, and Python cache directories:\n{}\n",
        clip(listing.join("\n") + "\n", None)
    )
}

/// Cuts text longer than [`MAX_OUTPUT_UNITS`] and says so (never leaving the start of a
/// secret at the cut).
fn clip(text: String, redactor: Option<&crate::Redactor>) -> String {
    let mut units = 0;
    for (at, c) in text.char_indices() {
        units += c.len_utf16();
        if units > MAX_OUTPUT_UNITS {
            let kept = &text[..at];
            let kept = redactor.map_or(kept, |redactor| redactor.before_cut(kept));
            return format!("{kept}{CLIPPED}");
        }
    }
    text
}

fn create(
    target: &Target,
    shown: &str,
    content: &str,
    session: &ToolSession,
) -> Result<String, ToolError> {
    if std::fs::symlink_metadata(&target.display).is_ok() || target.key.exists() {
        return Err(ToolError::plain(format!(
            "File already exists at: {shown}. Cannot overwrite files using command `create`."
        )));
    }
    let fenced = fenced(target, session, true)?;
    write_checked(&fenced.site, content, None, shown)?;
    record(&fenced.target, session);
    Ok(format!("New file created successfully at: {shown}"))
}

fn replace(
    target: &Target,
    shown: &str,
    content: &str,
    seen: Version,
    session: &ToolSession,
) -> Result<String, ToolError> {
    let fenced = fenced(target, session, false)?;
    write_checked(
        &fenced.site,
        content,
        Some(Observation::Present(seen)),
        shown,
    )?;
    record(&fenced.target, session);
    Ok(format!("The file {shown} has been edited successfully."))
}

/// The write fence; a denial shows only the sandbox marker, as in the reference (this tool
/// takes no escalation arguments).
fn fenced(
    target: &Target,
    session: &ToolSession,
    make_missing: bool,
) -> Result<crate::mutate::Fenced, ToolError> {
    crate::mutate::fence(target, &session.policy, false, make_missing)
}

fn record(target: &Target, session: &ToolSession) {
    if let Ok(meta) = std::fs::metadata(&target.key) {
        session
            .observations
            .present(&target.key, Version::of(&meta));
    }
}

/// The command and its path: `view src/a.rs`.
fn editor_summary(args: &serde_json::Value) -> Option<String> {
    let text = |key: &str| crate::text_arg(args, key);
    text("path").map(|path| format!("{} {path}", text("command").unwrap_or_default()))
}

/// `create` writes a whole file; `str_replace` and `insert` a piece of one.
fn editor_change<'a>(args: &'a serde_json::Value) -> Option<crate::CallChange<'a>> {
    let text = |key: &str| crate::text_arg(args, key);
    let path = text("path")?;
    let change = |old, new, whole_file| crate::CallChange {
        path,
        old,
        new,
        whole_file,
    };
    match text("command")? {
        "create" => Some(change(None, text("file_text")?, true)),
        "str_replace" => Some(change(
            Some(text("old_str")?),
            text("new_str").unwrap_or(""),
            false,
        )),
        "insert" => Some(change(None, text("new_str")?, false)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::{ToolOutcome, ToolRegistry};

    struct Editor {
        _dir: tempfile::TempDir,
        ctx: ToolContext,
        registry: ToolRegistry,
    }

    impl Editor {
        fn new() -> Editor {
            let dir = tempfile::tempdir().unwrap();
            let ws = std::fs::canonicalize(dir.path()).unwrap();
            let mut registry = ToolRegistry::new();
            registry.register(Box::new(StrReplaceEditor::default()));
            Editor {
                ctx: crate::testing::context(&ws),
                _dir: dir,
                registry,
            }
        }

        fn path(&self, name: &str) -> String {
            self.ctx.cwd.join(name).display().to_string()
        }

        async fn call(&self, args: Value) -> ToolOutcome {
            self.registry
                .execute("str_replace_editor", &args.to_string(), &self.ctx)
                .await
        }

        async fn text(&self, args: Value) -> String {
            self.call(args).await.text()
        }
    }

    #[tokio::test]
    async fn changes_need_a_view_first_and_keep_raw_line_ends() {
        let ed = Editor::new();
        let file = ed.path("a.txt");
        std::fs::write(&file, "one\r\ntwo\r\n").unwrap();
        let outcome = ed
            .call(json!({"command": "str_replace", "path": file, "old_str": "one", "new_str": "1"}))
            .await;
        assert_eq!(
            outcome.text(),
            format!("Error: edit requires reading \"{file}\" first")
        );
        assert_eq!(outcome.error.unwrap().code, "FS_NOT_OBSERVED");
        ed.call(json!({"command": "view", "path": file})).await;
        assert_eq!(
            ed.text(json!({"command": "str_replace", "path": file, "old_str": "one\r\n"}))
                .await,
            format!("The file {file} has been edited successfully.")
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "two\r\n");
        assert_eq!(
            ed.text(json!({"command": "insert", "path": file, "insert_line": 9, "new_str": "x"}))
                .await,
            "Error: Invalid `insert_line` parameter: 9. It should be within the range of lines of \
             the file: [0, 2]"
        );
        assert_eq!(
            ed.text(
                json!({"command": "insert", "path": file, "insert_line": 0, "new_str": "zero"})
            )
            .await,
            format!("The file {file} has been edited successfully.")
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "zero\ntwo\r\n");
        // Changed behind the session's back: refused as stale.
        std::fs::write(&file, "other content\n").unwrap();
        let outcome = ed
            .call(json!({"command": "str_replace", "path": file, "old_str": "other"}))
            .await;
        assert_eq!(outcome.error.unwrap().code, "FS_STALE_VERSION");
    }

    /// Models fill every parameter, null where the command has no use for it.
    #[tokio::test]
    async fn a_null_for_a_parameter_the_command_does_not_use_is_left_out() {
        let ed = Editor::new();
        let file = ed.path("n.txt");
        let created = ed
            .call(
                json!({"command": "create", "path": file, "file_text": "a\nb\n",
                "old_str": null, "new_str": null, "insert_line": null, "view_range": null}),
            )
            .await;
        assert!(created.error.is_none(), "{}", created.text());
        let viewed = ed
            .call(json!({"command": "view", "path": file, "file_text": null, "old_str": null}))
            .await;
        assert!(viewed.error.is_none(), "{}", viewed.text());
        let replaced = ed
            .call(
                json!({"command": "str_replace", "path": file, "old_str": "a", "new_str": "A",
                "file_text": null, "insert_line": null, "view_range": null}),
            )
            .await;
        assert!(replaced.error.is_none(), "{}", replaced.text());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "A\nb\n");
        // A null the command would use is still refused, and so is a null command or path.
        for args in [
            json!({"command": "str_replace", "path": file, "old_str": "b", "new_str": null}),
            json!({"command": "view", "path": file, "view_range": null}),
            json!({"command": "view", "path": null}),
        ] {
            let outcome = ed.call(args.clone()).await;
            assert_eq!(outcome.error.unwrap().code, "INVALID_ARGS", "{args}");
        }
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "A\nb\n");
    }

    #[tokio::test]
    async fn view_ranges_are_checked_with_the_reference_texts() {
        let ed = Editor::new();
        let file = ed.path("r.txt");
        std::fs::write(&file, "a\nb\nc").unwrap();
        let view =
            |range: Value| ed.text(json!({"command": "view", "path": file, "view_range": range}));
        assert_eq!(
            view(json!([2, 3])).await,
            format!(
                "Here's the content of {file} with line numbers (which has a total of 3 lines) \
                 with view_range=[2, 3]:\n     2  b\n     3  c\n"
            )
        );
        assert_eq!(
            view(json!([1])).await,
            "Error: Invalid `view_range`. It should be a list of two integers."
        );
        assert_eq!(
            view(json!([0, 2])).await,
            "Error: Invalid `view_range`: [0, 2]. Its first element `0` should be within the range \
             of lines of the file: [1, 3]"
        );
        assert_eq!(
            view(json!([1, 4])).await,
            "Error: Invalid `view_range`: [1, 4]. Its second element `4` should be smaller than the \
             number of lines in the file: `3`"
        );
        assert_eq!(
            view(json!([3, 2])).await,
            "Error: Invalid `view_range`: [3, 2]. Its second element `2` should be larger or equal \
             than its first `3`"
        );
    }

    #[tokio::test]
    async fn folders_are_listed_two_levels_deep_without_hidden_entries() {
        let ed = Editor::new();
        for dir in ["src/deep/deeper", ".git", "node_modules/x"] {
            std::fs::create_dir_all(ed.ctx.cwd.join(dir)).unwrap();
        }
        std::fs::write(ed.ctx.cwd.join("src/main.rs"), "").unwrap();
        std::fs::write(ed.ctx.cwd.join("src/deep/deeper/far.rs"), "").unwrap();
        // The test context spills into .spill, which is hidden.
        let root = ed.ctx.cwd.display().to_string();
        assert_eq!(
            ed.text(json!({"command": "view", "path": root})).await,
            format!(
                "Here're the files and directories up to 2 levels deep in {root}, excluding hidden \
                 items, node_modules, and Python cache directories:\nd\t{root}\nd\t{root}/src\n\
                 d\t{root}/src/deep\nf\t{root}/src/main.rs\n\n"
            )
        );
    }

    #[tokio::test]
    async fn create_refuses_existing_files_and_long_views_are_clipped() {
        let ed = Editor::new();
        let file = ed.path("big.txt");
        let content: String = (0..3000).map(|i| format!("line {i}\n")).collect();
        assert_eq!(
            ed.text(json!({"command": "create", "path": file, "file_text": content}))
                .await,
            format!("New file created successfully at: {file}")
        );
        assert_eq!(
            ed.text(json!({"command": "create", "path": file, "file_text": "x"}))
                .await,
            format!(
                "Error: File already exists at: {file}. Cannot overwrite files using command \
                 `create`."
            )
        );
        let view = ed.text(json!({"command": "view", "path": file})).await;
        assert!(view.ends_with(CLIPPED));
        assert_eq!(
            view.chars().count(),
            MAX_OUTPUT_UNITS + CLIPPED.chars().count()
        );
        assert_eq!(
            ed.text(json!({"command": "create", "path": ed.path("n.txt")}))
                .await,
            "Error: Parameter `file_text` is required for command: create"
        );
    }

    #[tokio::test]
    async fn writes_outside_the_workspace_show_only_the_sandbox_marker() {
        let ed = Editor::new();
        // Outside every writable root (the test workspace, /tmp, wherever the checkout is):
        // never created if the fence holds.
        let outside = Path::new("/dsh-sre-outside-never-written.txt");
        let _ = std::fs::remove_file(outside);
        let outcome = ed
            .call(json!({"command": "create", "path": outside, "file_text": "x"}))
            .await;
        assert_eq!(
            outcome.text(),
            "Error: [sandbox: file access denied under workspace-write mode]"
        );
        assert!(!outside.exists());
    }
}
