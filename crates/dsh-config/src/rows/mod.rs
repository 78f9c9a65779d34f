//! The reference's patch files: YAML lists of plugin-tree rows, translated onto dsh's keys.
//!
//! A supervisor written for the reference passes `--patch layer.yml` with rows such as
//! `- id: agent-default-model` + `config: {provider, model}` or `- insert: [{name:
//! '@deepseek-ai/dsh-mcp-client', config: {...}}]`. dsh has no plugin tree, so each row it
//! understands becomes the TOML keys that mean the same (docs/config.md has the table). Rows
//! that only switch off a part dsh does not have (titles, telemetry, sub-agents, workflows,
//! web tools) are accepted and noted; every other row dsh cannot honour is an error naming
//! the row and the file, so a supervisor never believes a setting applied that did not.
//!
//! `!!js` values are evaluated for the forms supervisors use: `process.env.NAME` (optionally
//! `?? 'default'` or `|| 'default'`), `process.cwd()`, `dshHomePath('a', ...)` and literals.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

mod fields;
mod js;
mod models;
mod parts;

use fields::Fields;
pub use js::RowContext;
use js::to_json;

/// Rows inserted by earlier patch files, by id, so a later file can target them.
#[derive(Debug, Clone, Default)]
pub struct RowIndex {
    inserted: BTreeMap<String, Inserted>,
}

#[derive(Debug, Clone)]
enum Inserted {
    /// An MCP server row and its server name.
    Mcp(String),
    /// Another row, by its kind.
    Other(&'static str),
}

/// One translated patch file.
#[derive(Debug, Clone, Default)]
pub struct RowPatch {
    /// The keys it sets, as a TOML layer.
    pub table: toml::Table,
    /// What it asked for that dsh has no part for, for `--dump-config`.
    pub notes: Vec<String>,
    /// Keys whose values from earlier layers this file discards before its own apply: a row's
    /// `config` is the row's whole configuration in the reference, so what it leaves out goes
    /// back to the default rather than keeping an earlier file's value.
    pub replaces: Vec<Vec<String>>,
}

/// Whether `text` at `path` is a row list rather than TOML: a `.yml`/`.yaml` name, or a first
/// meaningful line that starts a YAML list.
pub fn is_row_list(path: &Path, text: &str) -> bool {
    match path.extension().and_then(|e| e.to_str()) {
        Some("yml" | "yaml") => true,
        Some("toml") => false,
        _ => text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .is_some_and(|l| l == "-" || l.starts_with("- ") || l == "[]"),
    }
}

/// Translates one row list. Errors say which row (and its line) and what to do.
pub fn translate(
    text: &str,
    context: &RowContext,
    index: &mut RowIndex,
) -> Result<RowPatch, String> {
    // The YAML parser drops the `!!` (secondary handle) tags it does not know; as a local
    // tag, `!js` reaches us.
    let local = text.replace("!!js ", "!js ");
    let yaml: yaml_serde::Value = yaml_serde::from_str(&local).map_err(|e| {
        let at = e
            .location()
            .map(|l| format!("line {}: ", l.line()))
            .unwrap_or_default();
        format!("{at}not valid YAML: {e}")
    })?;
    let rows = match yaml {
        yaml_serde::Value::Sequence(rows) => rows,
        yaml_serde::Value::Null => {
            return Err(
                "is empty: a patch file is a YAML list of rows; write [] for an empty layer".into(),
            );
        }
        _ => return Err("is not a YAML list of rows (each starting with `- `)".into()),
    };
    let mut out = Translation {
        patch: RowPatch::default(),
        text,
        context,
        next: 0,
        current: None,
    };
    for row in rows {
        let row = to_json(row, context).map_err(|e| format!("a row {e}"))?;
        let Value::Object(row) = row else {
            return Err("every row must be a mapping (`- id: ...` or `- insert: [...]`)".into());
        };
        out.row(&row, index)?;
    }
    Ok(out.patch)
}

struct Translation<'a> {
    patch: RowPatch,
    text: &'a str,
    context: &'a RowContext,
    /// The 0-based line where the next row is looked for: rows come in file order, so two
    /// rows naming the same id are told apart.
    next: usize,
    /// The line of the row being translated, when it could be found.
    current: Option<usize>,
}

/// Reference rows for parts dsh does not have: switching them off changes nothing.
const ABSENT_PARTS: &[&str] = &[
    "session-title",
    "session-title-llm",
    "session-telemetry-otel",
    "tool-subagent-report",
    "web",
    "hmr",
    "command-goal",
    "repeat-tool-reminder",
    "skill-badge",
    "commands",
    "command-feedback",
    "command-compact",
    "code-runtime",
    "session-query-sqlite",
    "session-projection",
    "typert",
    "typert-loader",
    "typert-gateway",
    "timer",
    "tool-pwsh",
    "pwsh-sandbox",
];

/// Reference rows that add tools, and the tools they add: switching one off withholds its
/// tools (`tools.deny`), as the reference's disabled row never registers them.
const TOOL_PARTS: &[(&str, &[&str])] = &[
    ("tool-bash", &["bash"]),
    ("tool-fs", &["read", "write", "edit", "read_image"]),
    ("tool-fs-search", &["glob", "grep"]),
    ("tool-jobs", &["job_output", "job_list", "job_kill"]),
    ("tool-todo", &["todo_write"]),
    ("goal", &["create_goal", "get_goal", "update_goal"]),
    ("tool-goal", &["create_goal", "get_goal", "update_goal"]),
    ("tool-workflow", &["workflow"]),
    ("tool-ralph", &["ralph"]),
    ("workflow-worker-thread", &["workflow", "ralph"]),
    ("web-search-deepseek", &["web_search"]),
    ("plan-mode", &["exit_plan_mode"]),
    ("subagent", &["subagent", "subagent_fork"]),
    ("subagent-spawn-in-process", &["subagent"]),
    ("subagent-fork-in-process", &["subagent_fork"]),
    ("tool-subagent", &["subagent"]),
    ("tool-subagent-fork", &["subagent_fork"]),
    (
        "tool-subagent-control",
        &["list_agents", "send_message", "interrupt_agent"],
    ),
    ("tool-subagent-list-agents", &["list_agents"]),
    ("user-questions", &["ask_user_question"]),
];

/// Reference rows for stored authentication, and the `[stored_auth]` key each decides: under
/// `--profile headless` saved keys and sign-ins are ignored until these rows restore them.
const STORED_AUTH_PARTS: &[(&str, Option<&str>, &str)] = &[
    (
        "credentials",
        Some("saved_keys"),
        "the keys `dsh login` saved",
    ),
    (
        "authorization",
        Some("mcp_sign_ins"),
        "the MCP sign-ins `dsh mcp login` stored",
    ),
    // dsh keeps no DeepSeek account sign-in apart from the key `dsh login` saves.
    (
        "deepseek-account",
        None,
        "the DeepSeek key `dsh login` saved (row credentials)",
    ),
];

/// Reference rows for parts dsh always has: they cannot be switched off.
const FIXED_PARTS: &[&str] = &[
    "agent",
    "agent-loop",
    "llm",
    "llm-retry",
    "session",
    "session-checkpoint-policy",
    "tools",
    "bash-sandbox",
    "jobs",
    "sandbox",
    "subprocess",
    "fs-sandbox",
    "fs-observation-policy",
    "system-prompt",
    "headless-startup",
    "headless-runner",
    "approval",
    "permission",
    "settings",
    "token-meter",
    "goal-round-driver",
    "compaction-basic",
    "tool-result-pruner",
    "shell-env",
    "spill-local",
    "spill-policy",
    "attachment-local",
    "timeout-policy",
];

/// The kind of a package dsh translates, from its name in an inserted row.
fn kind_of_package(name: &str) -> Option<&'static str> {
    Some(match name.strip_prefix("@deepseek-ai/dsh-")? {
        "mcp-client" => "mcp-client",
        "llm-pi-ai" => "llm-pi-ai",
        "llm-deepseek" => "llm-deepseek",
        "agent-default-model" => "agent-default-model",
        "skill-filesystem" => "skill-filesystem",
        "agent-instructions" => "agent-instructions",
        "session-persistence-jsonl" => "session-persistence-jsonl",
        "sandbox-policy" => "sandbox-policy",
        _ => return None,
    })
}

/// The kinds whose base-bundle row id is their kind.
const BASE_KINDS: &[&str] = &[
    "llm-pi-ai",
    "llm-deepseek",
    "agent-default-model",
    "skill-filesystem",
    "agent-instructions",
    "session-persistence-jsonl",
    "sandbox-policy",
    "skill",
    "tool-skill",
    "tool-str-replace-editor",
];

impl Translation<'_> {
    fn row(&mut self, row: &Map<String, Value>, index: &mut RowIndex) -> Result<(), String> {
        self.locate(row);
        for key in row.keys() {
            if !matches!(
                key.as_str(),
                "id" | "name" | "config" | "disabled" | "insert"
            ) {
                return Err(self.at(format!(
                    "the row field `{key}` is not supported: dsh composes no plugin tree, so \
                         only `config`, `disabled` and `insert` rows are translated"
                )));
            }
        }
        if let Some(insert) = row.get("insert") {
            let Value::Array(entries) = insert else {
                return Err(self.at("`insert` must be a list of rows".into()));
            };
            for entry in entries {
                let Value::Object(entry) = entry else {
                    return Err(self.at("each inserted row must be a mapping".into()));
                };
                self.inserted(entry, index)?;
            }
            return Ok(());
        }
        let Some(id) = row.get("id").and_then(Value::as_str) else {
            return Err(
                self.at("a row needs an `id` (the row it changes) or an `insert` list".into())
            );
        };
        let disabled = self.disabled(row)?;
        let config = row.get("config");
        if let Some(target) = index.inserted.get(id).cloned() {
            return match target {
                Inserted::Mcp(server) => self.mcp_row(&server, config, disabled),
                Inserted::Other(kind) => self.kind(row, kind, config, disabled),
            };
        }
        if BASE_KINDS.contains(&id) || matches!(id, "session-telemetry-otel" | "tool-web") {
            return self.kind(row, kind_static(id), config, disabled);
        }
        if let Some((_, tools)) = TOOL_PARTS.iter().find(|(part, _)| *part == id) {
            return match (disabled, config) {
                (Some(true), None) => {
                    self.deny_tools(tools);
                    self.note(format!(
                        "row {id}: switched off; {} not offered",
                        tools.join(", ")
                    ));
                    Ok(())
                }
                (Some(false), None) => {
                    self.note(format!(
                        "row {id}: on, unless a tool list withholds {}",
                        tools.join(", ")
                    ));
                    Ok(())
                }
                _ => Err(self.at(format!(
                    "row {id}: its config has no translation onto dsh's keys; only \
                     `disabled` is read for it (docs/config.md)"
                ))),
            };
        }
        if let Some(&(_, key, what)) = STORED_AUTH_PARTS.iter().find(|(part, ..)| *part == id) {
            let (Some(off), None) = (disabled, config) else {
                return Err(self.at(format!(
                    "row {id}: only `disabled` is read for it (whether {what} are used)"
                )));
            };
            if let Some(key) = key {
                self.set(&["stored_auth", key], (!off).into());
            }
            let verb = if off { "not used" } else { "used" };
            self.note(format!("row {id}: {what}: {verb}"));
            return Ok(());
        }
        if ABSENT_PARTS.contains(&id) {
            return match (disabled, config) {
                (Some(true), None) => {
                    self.note(format!("row {id}: switched off; dsh has no such part"));
                    Ok(())
                }
                _ => Err(self.at(format!(
                    "row {id} is a part dsh does not have; only `disabled: true` is accepted \
                         for it"
                ))),
            };
        }
        if FIXED_PARTS.contains(&id) {
            return match (disabled, config) {
                (Some(false), None) => {
                    self.note(format!("row {id}: on, as it always is in dsh"));
                    Ok(())
                }
                (Some(true), _) => Err(self.at(format!(
                    "row {id} cannot be switched off: dsh always has this part"
                ))),
                _ => Err(self.at(format!(
                    "row {id} has no translation onto dsh's keys; set the matching key in a \
                         TOML layer instead (docs/config.md lists them)"
                ))),
            };
        }
        match (disabled, config) {
            (Some(true), None) => {
                self.note(format!("row {id}: switched off; dsh has no such row"));
                Ok(())
            }
            _ => Err(self.at(format!(
                "row {id} is unknown to dsh; docs/config.md lists the reference rows dsh \
                     translates"
            ))),
        }
    }

    fn inserted(&mut self, entry: &Map<String, Value>, index: &mut RowIndex) -> Result<(), String> {
        self.locate(entry);
        let package = entry.get("name").and_then(Value::as_str).unwrap_or("");
        let Some(kind) = kind_of_package(package) else {
            return Err(self.at(format!(
                "inserted row of package \"{package}\" has no translation onto dsh; dsh \
                     translates MCP servers (@deepseek-ai/dsh-mcp-client) and the rows in \
                     docs/config.md"
            )));
        };
        for key in entry.keys() {
            if !matches!(key.as_str(), "id" | "name" | "config" | "disabled") {
                return Err(self.at(format!(
                    "the row field `{key}` is not supported in an inserted row"
                )));
            }
        }
        let disabled = self.disabled(entry)?;
        let config = entry.get("config");
        if kind == "mcp-client" {
            let server = config
                .and_then(|c| c.get("serverName"))
                .and_then(Value::as_str)
                .ok_or_else(|| self.at("an MCP row needs config.serverName".into()))?
                .to_owned();
            if let Some(id) = entry.get("id").and_then(Value::as_str) {
                index
                    .inserted
                    .insert(id.to_owned(), Inserted::Mcp(server.clone()));
            }
            return self.mcp_row(&server, config, disabled);
        }
        if let Some(id) = entry.get("id").and_then(Value::as_str) {
            index.inserted.insert(id.to_owned(), Inserted::Other(kind));
        }
        self.kind(entry, kind, config, disabled)
    }

    fn kind(
        &mut self,
        row: &Map<String, Value>,
        kind: &'static str,
        config: Option<&Value>,
        disabled: Option<bool>,
    ) -> Result<(), String> {
        let empty = Value::Object(Map::new());
        let config = config.unwrap_or(&empty);
        let Value::Object(fields) = config else {
            return Err(self.at(format!("row {kind}: `config` must be a mapping")));
        };
        match (kind, disabled) {
            ("agent-instructions", Some(off)) => {
                self.set(&["instructions", "enabled"], (!off).into());
                if off {
                    return Ok(());
                }
            }
            ("skill-filesystem" | "skill" | "tool-skill", Some(off)) => {
                self.set(&["skills", "enabled"], (!off).into());
                if off {
                    self.note(format!("row {kind}: switched off; no skills are offered"));
                    return Ok(());
                }
            }
            ("tool-str-replace-editor", Some(off)) => {
                self.set(&["tools", "str_replace_editor"], (!off).into());
                return Ok(());
            }
            ("tool-web", Some(true)) => {
                self.deny_tools(&["web_search", "web_fetch"]);
                self.note("row tool-web: switched off; web_search, web_fetch not offered".into());
                return Ok(());
            }
            ("session-telemetry-otel", Some(true)) => {
                self.note(format!("row {kind}: switched off; dsh has no such part"));
                return Ok(());
            }
            (_, Some(true)) => {
                return Err(self.at(format!(
                    "row {kind} cannot be switched off: dsh always has this part"
                )));
            }
            _ => {}
        }
        if row.contains_key("config") {
            let owned: &[&[&str]] = match kind {
                "agent-default-model" => &[&["model"]],
                "skill-filesystem" => &[&["skills", "default_roots"], &["skills", "dirs"]],
                "agent-instructions" => &[
                    &["instructions", "max_bytes"],
                    &["instructions", "root_markers"],
                ],
                "session-persistence-jsonl" => &[&["sessions", "compression"]],
                "sandbox-policy" => &[&["sandbox", "mode"]],
                // The model routes merge route by route and model by model (each names its
                // own keys), as the reference's settings layers do; `effort` is shared by
                // two rows, so neither takes it from the other.
                _ => &[],
            };
            for key in owned {
                self.replace(key);
            }
        }
        let mut fields = Fields {
            kind,
            map: fields.clone(),
        };
        let result = match kind {
            "agent-default-model" => self.default_model(&mut fields),
            "llm-pi-ai" => self.pi_ai(&mut fields),
            "llm-deepseek" => self.deepseek(&mut fields),
            "skill-filesystem" => self.skills(&mut fields),
            "agent-instructions" => self.instructions(&mut fields),
            "session-persistence-jsonl" => self.persistence(&mut fields),
            "sandbox-policy" => self.sandbox_policy(&mut fields),
            "session-telemetry-otel" => {
                match fields.string("mode")?.as_deref() {
                    None | Some("DISABLED") => {
                        self.note("row session-telemetry-otel: off; dsh sends no telemetry".into());
                    }
                    Some(mode) => {
                        return Err(self.at(format!("row session-telemetry-otel: mode {mode} is not possible: dsh sends no telemetry"),
                        ));
                    }
                }
                fields.map.clear();
                Ok(())
            }
            "tool-web" => {
                let mut off = Vec::new();
                if fields.bool("search")? == Some(false) {
                    off.push("web_search");
                }
                if fields.bool("fetch")? == Some(false) {
                    off.push("web_fetch");
                }
                if !off.is_empty() {
                    self.deny_tools(&off);
                    self.note(format!("row tool-web: {} not offered", off.join(", ")));
                }
                if let Some(ms) = fields.integer("searchTimeoutMs")? {
                    self.set(&["web", "search", "timeout_ms"], ms.into());
                }
                if let Some(ms) = fields.integer("fetchTimeoutMs")? {
                    self.set(&["web", "fetch_timeout_ms"], ms.into());
                }
                Ok(())
            }
            "skill" | "tool-skill" | "tool-str-replace-editor" => Ok(()),
            _ => Ok(()),
        };
        result.and_then(|()| fields.done()).map_err(|e| self.at(e))
    }

    fn disabled(&self, row: &Map<String, Value>) -> Result<Option<bool>, String> {
        match row.get("disabled") {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(self.at("`disabled` must be true or false".into())),
        }
    }

    fn set(&mut self, path: &[&str], value: toml::Value) {
        let mut table = &mut self.patch.table;
        let Some((last, parents)) = path.split_last() else {
            return;
        };
        for key in parents {
            let entry = table
                .entry((*key).to_owned())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            if !entry.is_table() {
                *entry = toml::Value::Table(toml::Table::new());
            }
            let toml::Value::Table(inner) = entry else {
                unreachable!("made a table just above")
            };
            table = inner;
        }
        table.insert((*last).to_owned(), value);
    }

    /// Adds `tools` to this layer's `tools.deny`.
    fn deny_tools(&mut self, tools: &[&str]) {
        let mut deny: Vec<toml::Value> = self
            .patch
            .table
            .get("tools")
            .and_then(|t| t.get("deny"))
            .and_then(toml::Value::as_array)
            .cloned()
            .unwrap_or_default();
        for tool in tools {
            let tool = toml::Value::from(*tool);
            if !deny.contains(&tool) {
                deny.push(tool);
            }
        }
        self.set(&["tools", "deny"], toml::Value::Array(deny));
    }

    /// Finds the line of `row` (by its id or its serverName) from `next` on; it is the
    /// current row from now.
    fn locate(&mut self, row: &Map<String, Value>) {
        self.current = self.line_of(row);
        if let Some(line) = self.current {
            self.next = line + 1;
        }
    }

    fn line_of(&self, row: &Map<String, Value>) -> Option<usize> {
        let needle = row
            .get("id")
            .and_then(Value::as_str)
            .map(|id| format!("id: {id}"))
            .or_else(|| {
                row.get("config")
                    .and_then(|c| c.get("serverName"))
                    .and_then(Value::as_str)
                    .map(|s| format!("serverName: {s}"))
            })?;
        self.text
            .lines()
            .enumerate()
            .skip(self.next)
            .find(|(_, l)| {
                let l = l.trim().trim_start_matches("- ").trim();
                l == needle
                    || l.trim_matches(|c| c == '\'' || c == '"') == needle
                    || l.replace(['\'', '"'], "") == needle
            })
            .map(|(i, _)| i)
    }

    /// Discards `path`'s value from earlier layers, and from earlier rows of this file.
    fn replace(&mut self, path: &[&str]) {
        let owned: Vec<String> = path.iter().map(|p| (*p).to_owned()).collect();
        remove_path(&mut self.patch.table, &owned);
        if !self.patch.replaces.contains(&owned) {
            self.patch.replaces.push(owned);
        }
    }

    fn note(&mut self, note: String) {
        if !self.patch.notes.contains(&note) {
            self.patch.notes.push(note);
        }
    }

    /// `message`, prefixed with the line of the current row when it was found.
    fn at(&self, message: String) -> String {
        match self.current.map(|i| i + 1) {
            Some(line) => format!("line {line}: {message}"),
            None => message,
        }
    }
}

/// Removes the value at `path` from `table`, if it is there.
pub fn remove_path(table: &mut toml::Table, path: &[String]) {
    match path {
        [] => {}
        [last] => {
            table.remove(last);
        }
        [first, rest @ ..] => {
            if let Some(toml::Value::Table(inner)) = table.get_mut(first) {
                remove_path(inner, rest);
            }
        }
    }
}

fn kind_static(id: &str) -> &'static str {
    BASE_KINDS
        .iter()
        .chain(["session-telemetry-otel", "tool-web"].iter())
        .find(|k| **k == id)
        .copied()
        .unwrap_or("unknown")
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::js::evaluate;
    use super::*;

    fn context() -> RowContext {
        RowContext {
            home: PathBuf::from("/h"),
            cwd: PathBuf::from("/w"),
        }
    }

    #[test]
    fn the_js_forms_supervisors_use_are_evaluated() {
        let c = context();
        assert_eq!(
            evaluate("dshHomePath('sessions')", &c).unwrap(),
            "/h/sessions"
        );
        assert_eq!(evaluate("process.cwd()", &c).unwrap(), "/w");
        assert_eq!(
            evaluate("process.env.DSH_ROWS_TEST_UNSET ?? 'workspace-write'", &c).unwrap(),
            "workspace-write"
        );
        assert_eq!(
            evaluate("process.env['DSH_ROWS_TEST_UNSET'] || \"DISABLED\"", &c).unwrap(),
            "DISABLED"
        );
        assert!(
            evaluate("process.env.DSH_ROWS_TEST_UNSET", &c)
                .unwrap()
                .is_null()
        );
        assert!(
            evaluate("require('fs')", &c)
                .unwrap_err()
                .contains("dsh cannot evaluate")
        );
    }

    #[test]
    fn the_stored_authentication_rows_become_stored_auth_keys() {
        let mut index = RowIndex::default();
        let rows = "- id: credentials\n  disabled: false\n- id: authorization\n  disabled: false\n\
                    - id: deepseek-account\n  disabled: false\n- id: user-questions\n  disabled: true\n";
        let patch = translate(rows, &context(), &mut index).unwrap();
        let auth = &patch.table["stored_auth"];
        assert_eq!(auth["saved_keys"].as_bool(), Some(true));
        assert_eq!(auth["mcp_sign_ins"].as_bool(), Some(true));
        assert_eq!(
            patch.table["tools"]["deny"][0].as_str(),
            Some("ask_user_question")
        );
        assert!(
            (patch.notes.iter()).any(|n| n.starts_with("row deepseek-account:")),
            "{:?}",
            patch.notes
        );
        let off = translate(
            "- id: credentials\n  disabled: true\n",
            &context(),
            &mut index,
        );
        assert_eq!(
            off.unwrap().table["stored_auth"]["saved_keys"].as_bool(),
            Some(false)
        );
        let bad = "- id: authorization\n  config: {x: 1}\n";
        assert!(
            translate(bad, &context(), &mut index)
                .unwrap_err()
                .contains("only `disabled`")
        );
    }

    /// docs/config.md's table of rows names each id where the code puts it: a row the table
    /// calls absent is one dsh does not have, and so on.
    #[test]
    fn the_documented_rows_are_the_rows_the_code_knows() {
        let docs = include_str!("../../../../docs/config.md");
        let ids_of = |starts: &str| -> Vec<String> {
            let line = (docs.lines())
                .find(|l| l.starts_with(starts))
                .unwrap_or_else(|| panic!("no row starting {starts}"));
            let cell = line.split(" | ").next().unwrap();
            (cell.split('`').skip(1).step_by(2))
                .map(str::to_owned)
                .collect()
        };
        let tools: Vec<&str> = TOOL_PARTS.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids_of("| `tool-bash`"), tools);
        let auth: Vec<&str> = STORED_AUTH_PARTS.iter().map(|(id, ..)| *id).collect();
        assert_eq!(ids_of("| `credentials`, `authorization`"), auth);
        for id in ids_of("| parts dsh does not have") {
            assert!(ABSENT_PARTS.contains(&id.as_str()), "{id} is not absent");
        }
        for id in ids_of("| parts dsh always has") {
            assert!(FIXED_PARTS.contains(&id.as_str()), "{id} is not fixed");
        }
    }

    #[test]
    fn row_lists_are_told_from_toml() {
        assert!(is_row_list(Path::new("a.yml"), "x = 1"));
        assert!(!is_row_list(Path::new("a.toml"), "- id: x"));
        assert!(is_row_list(Path::new("layer"), "# rows\n\n- id: hmr\n"));
        assert!(is_row_list(Path::new("layer"), "[]\n"));
        assert!(!is_row_list(Path::new("layer"), "[tools]\nx = 1\n"));
    }

    #[test]
    fn an_empty_list_is_an_empty_layer_and_yaml_off_is_the_effort_off() {
        let mut index = RowIndex::default();
        let empty = translate("[]\n", &context(), &mut index).unwrap();
        assert!(empty.table.is_empty());
        let rows = "- id: agent-default-model\n  config: {provider: deepseek-official, model: deepseek-v4-pro, reasoningEffort: off}\n";
        let patch = translate(rows, &context(), &mut index).unwrap();
        assert_eq!(patch.table["model"].as_str(), Some("deepseek-v4-pro"));
        assert_eq!(patch.table["effort"].as_str(), Some("off"));
    }
}
