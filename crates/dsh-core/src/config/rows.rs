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
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// What a translation needs to know of the run.
#[derive(Debug, Clone)]
pub struct RowContext {
    pub home: PathBuf,
    pub cwd: PathBuf,
}

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
    "subagent",
    "subagent-spawn-in-process",
    "subagent-fork-in-process",
    "tool-subagent-control",
    "tool-subagent-list-agents",
    "tool-subagent",
    "tool-subagent-fork",
    "tool-subagent-report",
    "workflow-worker-thread",
    "tool-workflow",
    "web",
    "web-search-deepseek",
    "tool-web",
    "hmr",
    "goal",
    "goal-round-driver",
    "command-goal",
    "tool-goal",
    "plan-mode",
    "tool-todo",
    "tool-ralph",
    "repeat-tool-reminder",
    "skill-badge",
    "commands",
    "command-feedback",
    "command-compact",
    "user-questions",
    "code-runtime",
    "session-query-sqlite",
    "session-projection",
    "authorization",
    "deepseek-account",
    "typert",
    "typert-loader",
    "typert-gateway",
    "timer",
    "tool-pwsh",
    "pwsh-sandbox",
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
    "tool-bash",
    "bash-sandbox",
    "tool-fs",
    "tool-fs-search",
    "tool-jobs",
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
    "credentials",
    "settings",
    "token-meter",
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
            ("session-telemetry-otel" | "tool-web", Some(true)) => {
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
                if fields.bool("search")? != Some(false) || fields.bool("fetch")? != Some(false) {
                    return Err(self.at(
                        "row tool-web: dsh has no web tools; set search and fetch to false or \
                         switch the row off"
                            .into(),
                    ));
                }
                fields.map.clear();
                self.note("row tool-web: web search and fetch off; dsh has none".into());
                Ok(())
            }
            "skill" | "tool-skill" | "tool-str-replace-editor" => Ok(()),
            _ => Ok(()),
        };
        result.and_then(|()| fields.done()).map_err(|e| self.at(e))
    }

    fn default_model(&mut self, fields: &mut Fields) -> Result<(), String> {
        let provider = fields.required_string("provider")?;
        let model = fields.required_string("model")?;
        // The reference's own DeepSeek route is dsh's built-in one, named by the bare model.
        let reference = if provider == "deepseek-official" {
            model
        } else {
            format!("{provider}/{model}")
        };
        self.set(&["model"], reference.into());
        if let Some(effort) = fields.effort("reasoningEffort")? {
            self.set(&["effort"], effort.into());
        }
        Ok(())
    }

    fn pi_ai(&mut self, fields: &mut Fields) -> Result<(), String> {
        let Some(providers) = fields.take("providers") else {
            return Ok(());
        };
        let Value::Object(providers) = providers else {
            return Err("providers must be a mapping of routes".into());
        };
        for (route, profile) in providers {
            let Value::Object(profile) = profile else {
                return Err(format!("providers.{route} must be a mapping"));
            };
            let mut profile = Fields {
                kind: "llm-pi-ai",
                map: profile,
            };
            let prefix = |key: &str| format!("providers.{route}.{key}");
            let api = profile.string("api")?.ok_or_else(|| {
                format!(
                    "providers.{route} names no api: dsh has no model catalog, so give api \
                     (openai-completions, openai-responses or anthropic-messages) and baseURL"
                )
            })?;
            if !matches!(
                api.as_str(),
                "openai-completions" | "openai-responses" | "anthropic-messages"
            ) {
                return Err(format!(
                    "{}: api \"{api}\" is not one dsh speaks (openai-completions, \
                     openai-responses, anthropic-messages)",
                    prefix("api")
                ));
            }
            let base_url = profile
                .string("baseURL")?
                .ok_or_else(|| format!("providers.{route} names no baseURL"))?;
            let path = ["providers", route.as_str()];
            self.set(&[path[0], path[1], "kind"], api.into());
            self.set(&[path[0], path[1], "base_url"], base_url.into());
            if let Some(env) = profile.string("apiKeyEnv")? {
                self.set(&[path[0], path[1], "api_key_env"], env.into());
            }
            if let Some(headers) = profile.string_map("headers")? {
                self.set(&[path[0], path[1], "headers"], headers);
            }
            profile.ignore("displayName");
            let window = profile.integer("defaultContextWindow")?;
            let max_tokens = profile.integer("defaultMaxTokens")?;
            let default_image = profile
                .string_list("defaultInput")?
                .map(|input| input.iter().any(|m| m == "image"));
            let compat = profile.take("compat");
            let models = profile.take("models").unwrap_or(Value::Array(Vec::new()));
            profile
                .done()
                .map_err(|e| format!("providers.{route}: {e}"))?;
            let Value::Array(models) = models else {
                return Err(format!("{} must be a list", prefix("models")));
            };
            for model in models {
                let Value::Object(model) = model else {
                    return Err(format!("each of {} must be a mapping", prefix("models")));
                };
                let mut model = Fields {
                    kind: "llm-pi-ai",
                    map: model,
                };
                let id = model.required_string("id")?;
                let key = ["providers", route.as_str(), "models", id.as_str()];
                model.ignore("name");
                if let Some(n) = model.integer("contextWindow")?.or(window) {
                    self.set(
                        &[key[0], key[1], key[2], key[3], "context_window"],
                        n.into(),
                    );
                }
                if let Some(n) = model.integer("maxTokens")?.or(max_tokens) {
                    self.set(
                        &[key[0], key[1], key[2], key[3], "max_output_tokens"],
                        n.into(),
                    );
                }
                let image = model
                    .string_list("input")?
                    .filter(|input| !input.is_empty())
                    .map(|input| input.iter().any(|m| m == "image"))
                    .or(default_image);
                if let Some(image) = image {
                    self.set(
                        &[key[0], key[1], key[2], key[3], "image_input"],
                        image.into(),
                    );
                }
                match model.take("reasoningEfforts") {
                    None => {}
                    Some(Value::Bool(false)) => self.set(
                        &[key[0], key[1], key[2], key[3], "reasoning_effort"],
                        false.into(),
                    ),
                    Some(Value::Object(levels)) => self.set(
                        &[key[0], key[1], key[2], key[3], "reasoning_effort"],
                        (!levels.is_empty()).into(),
                    ),
                    Some(_) => {
                        return Err(format!(
                            "{}: reasoningEfforts must be false or a mapping of levels",
                            prefix(&format!("models.{id}"))
                        ));
                    }
                }
                let model_compat = model.take("compat");
                model
                    .done()
                    .map_err(|e| format!("providers.{route}.models.{id}: {e}"))?;
                for compat in [&compat, &model_compat].into_iter().flatten() {
                    self.compat(compat, &key)
                        .map_err(|e| format!("providers.{route} compat: {e}"))?;
                }
            }
        }
        Ok(())
    }

    /// The wire switches dsh has: the developer role and `reasoning_effort`.
    fn compat(&mut self, compat: &Value, model: &[&str; 4]) -> Result<(), String> {
        let Value::Object(map) = compat else {
            return Err("compat must be a mapping".into());
        };
        let mut fields = Fields {
            kind: "llm-pi-ai",
            map: map.clone(),
        };
        let [a, b, c, d] = *model;
        if let Some(developer) = fields.bool("supportsDeveloperRole")? {
            let role = if developer { "developer" } else { "system" };
            self.set(&[a, b, c, d, "system_role"], role.into());
        }
        if let Some(effort) = fields.bool("supportsReasoningEffort")? {
            self.set(&[a, b, c, d, "reasoning_effort"], effort.into());
        }
        // Streaming usage is always asked for; a server that ignores the option is read as
        // reporting no usage.
        fields.ignore("supportsUsageInStreaming");
        fields.done()
    }

    fn deepseek(&mut self, fields: &mut Fields) -> Result<(), String> {
        if let Some(env) = fields.string("apiKeyEnv")? {
            self.set(&["providers", "deepseek", "api_key_env"], env.into());
        }
        if let Some(url) = fields.string("baseURL")? {
            self.set(&["providers", "deepseek", "base_url"], url.into());
        }
        if let Some(effort) = fields.effort("reasoningEffort")? {
            self.set(&["effort"], effort.into());
        }
        if fields.string("thinking")?.as_deref() == Some("disabled") {
            self.set(&["effort"], "off".into());
        }
        if let Some(ms) = fields.integer("streamIdleTimeoutMs")? {
            self.set(&["requests", "idle_timeout_ms"], ms.into());
        }
        if let Some(Value::Array(models)) = fields.take("models") {
            for model in models {
                let Value::Object(model) = model else {
                    return Err("each of models must be a mapping".into());
                };
                let mut model = Fields {
                    kind: "llm-deepseek",
                    map: model,
                };
                let id = model.required_string("id")?;
                model.ignore("name");
                model.ignore("description");
                let key = ["providers", "deepseek", "models", id.as_str()];
                if let Some(n) = model.integer("contextWindow")? {
                    self.set(
                        &[key[0], key[1], key[2], key[3], "context_window"],
                        n.into(),
                    );
                }
                if let Some(n) = model.integer("maxTokens")? {
                    self.set(
                        &[key[0], key[1], key[2], key[3], "max_output_tokens"],
                        n.into(),
                    );
                }
                if let Some(input) = model.string_list("inputModalities")? {
                    let image = input.iter().any(|m| m == "image");
                    self.set(
                        &[key[0], key[1], key[2], key[3], "image_input"],
                        image.into(),
                    );
                }
                model.done().map_err(|e| format!("models.{id}: {e}"))?;
            }
        }
        Ok(())
    }

    fn mcp_row(
        &mut self,
        server: &str,
        config: Option<&Value>,
        disabled: Option<bool>,
    ) -> Result<(), String> {
        if let Some(disabled) = disabled {
            self.set(&["mcp", "servers", server, "enabled"], (!disabled).into());
        }
        let Some(config) = config else {
            return Ok(());
        };
        let Value::Object(map) = config else {
            return Err(self.at("the MCP row's `config` must be a mapping".into()));
        };
        if let Some(named) = map.get("serverName")
            && named.as_str() != Some(server)
        {
            return Err(self.at(format!(
                "the row's serverName {named} differs from the server \"{server}\" it \
                     targets; a server keeps its name (insert a new row for another server)"
            )));
        }
        // The row's config is the server's whole configuration: an earlier file's command,
        // url, env or headers do not survive it (a stdio server can become an HTTP one).
        for field in MCP_SERVER_FIELDS {
            self.replace(&["mcp", "servers", server, field]);
        }
        let mut fields = Fields {
            kind: "mcp-client",
            map: map.clone(),
        };
        let result = (|| {
            fields.ignore("serverName");
            let Some(transport) = fields.string("transport")? else {
                return Err(
                    "needs `transport`: stdio (with command) or streamable-http (with url)".into(),
                );
            };
            let mut put = |field: &str, value: toml::Value| {
                self.set(&["mcp", "servers", server, field], value);
            };
            match transport.as_str() {
                "stdio" => {
                    put("command", fields.required_string("command")?.into());
                    if let Some(args) = fields.string_list("args")? {
                        put("args", args.into());
                    }
                    if let Some(env) = fields.string_map("env")? {
                        put("env", env);
                    }
                    if let Some(cwd) = fields.string("cwd")?.filter(|c| !c.is_empty()) {
                        put("cwd", cwd.into());
                    }
                }
                "streamable-http" => {
                    put("url", fields.required_string("url")?.into());
                    if let Some(headers) = fields.string_map("headers")? {
                        put("headers", headers);
                    }
                }
                other => {
                    return Err(format!(
                        "transport \"{other}\" is not one dsh speaks (stdio or streamable-http)"
                    ));
                }
            }
            if let Some(ms) = fields.integer("toolCallTimeoutMs")? {
                put("call_timeout_ms", ms.into());
            }
            if let Some(fail) = fields.bool("failOnStartupError")? {
                put("fail_on_startup_error", fail.into());
            }
            // dsh restarts a lost server when a call needs it, rather than on a timer.
            fields.ignore("reconnect");
            fields.done()
        })();
        result.map_err(|e| self.at(format!("MCP server {server}: {e}")))
    }

    fn skills(&mut self, fields: &mut Fields) -> Result<(), String> {
        if let Some(defaults) = fields.bool("includeDefaultRoots")? {
            self.set(&["skills", "default_roots"], defaults.into());
        }
        if let Some(dirs) = fields.string_list("customSkillDirs")? {
            self.set(&["skills", "dirs"], dirs.into());
        }
        fields.ignore("providerName");
        for watch in [
            "watch",
            "watchUsePolling",
            "watchStabilityThresholdMs",
            "watchPollIntervalMs",
            "watchMaxProjects",
            "watchFollowSymlinks",
        ] {
            if fields.take(watch).is_some() {
                self.note(format!(
                    "row skill-filesystem: {watch} has no effect; dsh reads skills once per run"
                ));
            }
        }
        Ok(())
    }

    fn instructions(&mut self, fields: &mut Fields) -> Result<(), String> {
        if let Some(max) = fields.integer_signed("maxBytes")? {
            // No budget is no instructions; `instructions.enabled` stays the row's `disabled`.
            self.set(&["instructions", "max_bytes"], max.max(0).into());
        }
        if let Some(markers) = fields.string_list("projectRootMarkers")? {
            self.set(&["instructions", "root_markers"], markers.into());
        }
        for (name, ours) in [
            ("instructionFileCandidates", crate::instructions::CANDIDATES),
            (
                "localInstructionFileCandidates",
                crate::instructions::LOCAL_CANDIDATES,
            ),
        ] {
            if let Some(list) = fields.string_list(name)?
                && list != ours
            {
                return Err(format!(
                    "{name} {list:?} differs from the files dsh reads ({ours:?})"
                ));
            }
        }
        Ok(())
    }

    fn persistence(&mut self, fields: &mut Fields) -> Result<(), String> {
        if let Some(root) = fields.string("root")? {
            let ours = self.context.home.join("sessions");
            if Path::new(&root) != ours {
                return Err(format!(
                    "root \"{root}\": dsh keeps sessions in $DSH_HOME/sessions ({}); set DSH_HOME \
                     to move them",
                    ours.display()
                ));
            }
        }
        if let Some(compression) = fields.string("compression")? {
            self.set(&["sessions", "compression"], compression.into());
        }
        for ignored in [
            "packChunks",
            "preparedSessionCacheSize",
            "writeBatchMaxDelayMs",
        ] {
            if fields.take(ignored).is_some() {
                self.note(format!(
                    "row session-persistence-jsonl: {ignored} has no effect; dsh writes one \
                     record per line as it happens"
                ));
            }
        }
        Ok(())
    }

    fn sandbox_policy(&mut self, fields: &mut Fields) -> Result<(), String> {
        if let Some(mode) = fields.string("mode")? {
            self.set(&["sandbox", "mode"], mode.into());
        }
        if let Some(root) = fields.string("workspaceRoot")?
            && Path::new(&root) != self.context.cwd
        {
            return Err(format!(
                "workspaceRoot \"{root}\": dsh's workspace is the working directory ({}); run \
                 dsh there, and grant other folders with --add-dir",
                self.context.cwd.display()
            ));
        }
        Ok(())
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

/// The keys of `[mcp.servers.<name>]` an MCP row's `config` sets (all but `enabled`, which is
/// the row's `disabled`).
const MCP_SERVER_FIELDS: [&str; 9] = [
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "call_timeout_ms",
    "startup_timeout_ms",
    "fail_on_startup_error",
];

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

/// What kind of YAML value `value` is, for an error that must not quote it.
fn value_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "true or false",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
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

/// A row's config fields, taken one by one; what is left at the end is unsupported.
struct Fields {
    kind: &'static str,
    map: Map<String, Value>,
}

impl Fields {
    fn take(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key).filter(|v| !v.is_null())
    }

    fn ignore(&mut self, key: &str) {
        self.map.remove(key);
    }

    fn string(&mut self, key: &str) -> Result<Option<String>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(format!("{key} must be a string, got {other}")),
        }
    }

    fn required_string(&mut self, key: &str) -> Result<String, String> {
        self.string(key)?
            .ok_or_else(|| format!("row {} needs {key}", self.kind))
    }

    fn bool(&mut self, key: &str) -> Result<Option<bool>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(other) => Err(format!("{key} must be true or false, got {other}")),
        }
    }

    fn integer(&mut self, key: &str) -> Result<Option<i64>, String> {
        match self.integer_signed(key)? {
            Some(n) if n <= 0 => Err(format!("{key} must be more than 0")),
            n => Ok(n),
        }
    }

    fn integer_signed(&mut self, key: &str) -> Result<Option<i64>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_i64()
                .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
                .map(Some)
                .ok_or_else(|| format!("{key} must be a whole number, got {n}")),
            Some(other) => Err(format!("{key} must be a number, got {other}")),
        }
    }

    fn string_list(&mut self, key: &str) -> Result<Option<Vec<String>>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .into_iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s),
                    Value::Number(n) => Ok(n.to_string()),
                    other => Err(format!("{key} must be a list of strings, got {other}")),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(format!("{key} must be a list, got {other}")),
        }
    }

    /// A mapping of names to strings (a server's `env` or `headers`). Its values often carry
    /// secrets, so an error names what kind of value was wrong, never the value.
    fn string_map(&mut self, key: &str) -> Result<Option<toml::Value>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Object(map)) => {
                let mut table = toml::Table::new();
                for (name, value) in map {
                    let value = match value {
                        Value::String(s) => s,
                        Value::Number(n) => n.to_string(),
                        Value::Bool(b) => b.to_string(),
                        other => {
                            return Err(format!(
                                "{key}.{name} must be a string, got {}",
                                value_kind(&other)
                            ));
                        }
                    };
                    table.insert(name, value.into());
                }
                Ok(Some(toml::Value::Table(table)))
            }
            Some(other) => Err(format!(
                "{key} must be a mapping of names to strings, got {}",
                value_kind(&other)
            )),
        }
    }

    /// An effort level; YAML 1.1's bare `off` (a boolean false) is `off`.
    fn effort(&mut self, key: &str) -> Result<Option<String>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Bool(false)) => Ok(Some("off".into())),
            Some(Value::String(level))
                if matches!(level.as_str(), "off" | "low" | "high" | "max") =>
            {
                Ok(Some(level))
            }
            Some(other) => Err(format!(
                "{key} {other} is not an effort dsh has (off, low, high, max)"
            )),
        }
    }

    /// Fails on any field not taken.
    fn done(self) -> Result<(), String> {
        match self.map.keys().next() {
            None => Ok(()),
            Some(key) => Err(format!(
                "the field {key} of row {} has no translation onto dsh's keys; remove it, or \
                 see docs/config.md for what dsh reads",
                self.kind
            )),
        }
    }
}

/// YAML to JSON, `!!js` values evaluated.
fn to_json(value: yaml_serde::Value, context: &RowContext) -> Result<Value, String> {
    use yaml_serde::Value as Y;
    Ok(match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                Value::from(n.as_f64().unwrap_or(0.0))
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(
            items
                .into_iter()
                .map(|v| to_json(v, context))
                .collect::<Result<_, _>>()?,
        ),
        Y::Mapping(map) => {
            let mut out = Map::new();
            for (key, value) in map {
                let key = match key {
                    Y::String(s) => s,
                    Y::Number(n) => n.to_string(),
                    Y::Bool(b) => b.to_string(),
                    other => return Err(format!("has a key that is not a string: {other:?}")),
                };
                out.insert(key, to_json(value, context)?);
            }
            Value::Object(out)
        }
        Y::Tagged(tagged) => {
            let tag = tagged.tag.to_string();
            if !(tag == "!!js" || tag == "!js" || tag.ends_with(":js")) {
                return Err(format!("uses the tag {tag}, which dsh does not know"));
            }
            let Y::String(expression) = tagged.value else {
                return Err("has a !!js value that is not a string".into());
            };
            evaluate(&expression, context)?
        }
    })
}

/// The `!!js` forms supervisors use; anything else is refused rather than guessed.
fn evaluate(expression: &str, context: &RowContext) -> Result<Value, String> {
    let expression = expression.trim();
    for operator in ["??", "||"] {
        if let Some((left, right)) = split_top(expression, operator) {
            let left = evaluate(left, context)?;
            let keep = match operator {
                "??" => !left.is_null(),
                _ => !(left.is_null() || left == Value::String(String::new())),
            };
            return if keep {
                Ok(left)
            } else {
                evaluate(right, context)
            };
        }
    }
    if let Some(literal) = string_literal(expression) {
        return Ok(Value::String(literal));
    }
    if let Ok(number) = expression.parse::<i64>() {
        return Ok(Value::from(number));
    }
    match expression {
        "true" => return Ok(Value::Bool(true)),
        "false" => return Ok(Value::Bool(false)),
        "null" | "undefined" => return Ok(Value::Null),
        "process.cwd()" => return Ok(Value::String(context.cwd.display().to_string())),
        _ => {}
    }
    if let Some(name) = expression
        .strip_prefix("process.env.")
        .filter(|n| n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .map(str::to_owned)
        .or_else(|| {
            expression
                .strip_prefix("process.env[")
                .and_then(|rest| rest.strip_suffix(']'))
                .and_then(string_literal)
        })
    {
        return Ok(std::env::var(&name).map_or(Value::Null, Value::String));
    }
    if let Some(args) = expression
        .strip_prefix("dshHomePath(")
        .and_then(|rest| rest.strip_suffix(')'))
    {
        let mut path = context.home.clone();
        for part in args.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let part = string_literal(part)
                .ok_or_else(|| format!("!!js {expression}: dshHomePath takes string literals"))?;
            path.push(part);
        }
        return Ok(Value::String(path.display().to_string()));
    }
    Err(format!(
        "has the value !!js {expression}, which dsh cannot evaluate (it runs no JavaScript); \
         write the value itself, or use process.env.NAME, process.cwd() or dshHomePath('...')"
    ))
}

/// `'text'` or `"text"`, without escapes.
fn string_literal(text: &str) -> Option<String> {
    let text = text.trim();
    let quote = text.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let inner = text.strip_prefix(quote)?.strip_suffix(quote)?;
    (!inner.contains(quote) && !inner.contains('\\')).then(|| inner.to_owned())
}

/// Splits at the first `operator` outside quotes.
fn split_top<'a>(text: &'a str, operator: &str) -> Option<(&'a str, &'a str)> {
    let mut quote = None;
    for (i, c) in text.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if text[i..].starts_with(operator) => {
                return Some((&text[..i], &text[i + operator.len()..]));
            }
            None => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
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
