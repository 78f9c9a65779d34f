//! Configuration files: TOML layers merged key by key, later layers winning.
//!
//! The layers, lowest first: `$DSH_HOME/config.toml`, `.dsh/config.toml` in the workspace, then
//! each `--patch FILE` in the order given. A missing home or workspace file is simply absent; a
//! missing patch file, a syntax error or an unknown key is an error naming the file, so a typo
//! never silently does nothing. Environment and flags are applied over the result by the binary.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The settings files can give.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The model to use when `--model` is not given.
    pub model: Option<String>,
    /// The reasoning effort when `--effort` is not given: off, low, high or max.
    pub effort: Option<String>,
    pub tools: ToolsConfig,
    pub shell: ShellConfig,
    pub jobs: JobsConfig,
    pub sandbox: SandboxConfig,
    pub approval: ApprovalConfig,
    pub sessions: SessionsConfig,
    pub requests: RequestsConfig,
    pub instructions: InstructionsConfig,
    pub skills: SkillsConfig,
    pub mcp: McpConfig,
    /// What is known about models by name, over the built-in table.
    pub models: BTreeMap<String, ModelConfig>,
    /// Model routes by name, used as `--model <provider>/<model>`.
    pub providers: BTreeMap<String, ProviderConfig>,
}

/// One model route.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderConfig {
    /// `deepseek` or `openai-completions`.
    pub kind: String,
    /// The API root (`/chat/completions` is appended).
    pub base_url: Option<String>,
    /// The name of the variable holding the key (never the key); none for a server that
    /// needs none.
    pub api_key_env: Option<String>,
    /// Extra headers sent with every request.
    pub headers: BTreeMap<String, String>,
    /// What is known about the route's models.
    pub models: BTreeMap<String, ModelConfig>,
}

/// Which optional tools are offered.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsConfig {
    /// Offer `str_replace_editor` next to `read`, `write` and `edit`.
    pub str_replace_editor: bool,
}

/// How commands run.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShellConfig {
    /// Name fragments (any case, anywhere in the name) of inherited variables not passed to
    /// commands; replaces the default list when given.
    pub scrub: Option<Vec<String>>,
}

/// Background jobs.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JobsConfig {
    /// After the model's answer, how long to wait for running jobs so it can answer again
    /// with their results (milliseconds; default 60000, 0 to not wait).
    pub wait_ms: Option<u64>,
}

/// The sandbox of commands and file tools.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// The permission mode: read-only, workspace-write or danger-full-access.
    pub mode: Option<String>,
    /// Whether confined commands may use the network (default true).
    pub network: Option<bool>,
    /// auto (bubblewrap, else Landlock), bubblewrap, or landlock.
    pub backend: Option<String>,
    /// The bwrap binary to use.
    pub bwrap: Option<PathBuf>,
}

/// The session logs.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionsConfig {
    /// fsync every record (default false: each record is one write, which survives the
    /// process dying but not the machine losing power).
    pub fsync: bool,
    /// "none" (plain JSON lines, the default) or "zstd".
    pub compression: Option<String>,
}

/// Model requests: retries and timeouts.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RequestsConfig {
    /// Attempts after the first for an outage (default 5).
    pub retries: Option<u32>,
    /// The first backoff in milliseconds (default 500), doubling up to `retry_max_ms`.
    pub retry_base_ms: Option<u64>,
    /// The longest backoff in milliseconds (default 10000).
    pub retry_max_ms: Option<u64>,
    /// The longest `Retry-After` honoured, in milliseconds (default 60000).
    pub retry_after_max_ms: Option<u64>,
    /// How long a server may stay silent, before its first byte or mid-stream, in
    /// milliseconds (default 300000).
    pub idle_timeout_ms: Option<u64>,
}

/// Workspace instructions (AGENTS.md).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InstructionsConfig {
    /// Send them (default true).
    pub enabled: Option<bool>,
    /// The most bytes the instructions message may take, frame included (default 65536).
    pub max_bytes: Option<usize>,
    /// Names that mark the project root (default [".git"]; [] makes the working directory the
    /// root).
    pub root_markers: Option<Vec<String>>,
}

/// Skills.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SkillsConfig {
    /// More folders of skills, after the project's and before the user's.
    pub dirs: Vec<PathBuf>,
    /// Whether the project's and the user's folders are read around `dirs` (default true).
    pub default_roots: Option<bool>,
    /// Whether skills are offered at all (default true).
    pub enabled: Option<bool>,
}

/// MCP servers whose tools the model is offered.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// How long the first request waits for servers that may start late, in milliseconds
    /// (default 3000); their tools join a later request when they are ready.
    pub startup_grace_ms: Option<u64>,
    /// The servers by name; the name is the middle of their tools' names
    /// (`mcp__<name>__<tool>`).
    pub servers: BTreeMap<String, McpServerConfig>,
}

/// One MCP server: `command` (a child process on stdio) or `url` (streamable HTTP).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program to start, looked up on PATH.
    pub command: Option<String>,
    pub args: Vec<String>,
    /// Variables set for it, over the inherited environment (which loses secrets and `DSH_*`).
    pub env: BTreeMap<String, String>,
    /// Where it starts, relative to the working directory (default: the working directory).
    pub cwd: Option<PathBuf>,
    /// The endpoint of a streamable-HTTP server.
    pub url: Option<String>,
    /// Headers sent with every HTTP request.
    pub headers: BTreeMap<String, String>,
    /// How long one tool call may take, in milliseconds (default 60000).
    pub call_timeout_ms: Option<u64>,
    /// How long starting and listing tools may take, in milliseconds (default 60000).
    pub startup_timeout_ms: Option<u64>,
    /// Stop the run before its task when the server cannot start (default false: run
    /// without its tools, with a warning).
    pub fail_on_startup_error: Option<bool>,
    /// false leaves a server of a lower layer out.
    pub enabled: Option<bool>,
}

/// Escalation approvals.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalConfig {
    /// ask or never.
    pub policy: Option<String>,
}

/// What dsh should assume about one model.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelConfig {
    /// Whether it accepts images (for `read_image`).
    pub image_input: Option<bool>,
    /// Its context window in tokens, which compaction keeps the history inside.
    pub context_window: Option<u64>,
    /// The most output tokens to ask for in one answer.
    pub max_output_tokens: Option<u32>,
    /// Whether `reasoning_effort` is sent (OpenAI-compatible routes; default false).
    pub reasoning_effort: Option<bool>,
    /// `system` (default) or `developer`: the role the system prompt is sent with.
    pub system_role: Option<String>,
    /// US dollars per million tokens, for `costUsd` in the stream.
    pub prices: Option<dsh_protocol::Prices>,
}

/// A configuration file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("config file {}: {message}", path.display())]
pub struct ConfigError {
    pub path: PathBuf,
    pub message: String,
}

/// One configuration layer: a file, what it sets (`None` when an optional file is absent),
/// and notes on what it asked for that dsh has no part for (reference row lists only).
#[derive(Debug, Clone)]
pub struct Layer {
    pub path: PathBuf,
    pub table: Option<toml::Table>,
    /// Whether it was a reference row list (else TOML).
    pub rows: bool,
    pub notes: Vec<String>,
    /// Keys whose values from earlier layers it discards before its own apply (a reference
    /// row's `config` replaces the row's whole configuration).
    pub replaces: Vec<Vec<String>>,
}

impl Config {
    /// The layers for a run in `cwd`, lowest first. A `--patch` file is TOML, or the
    /// reference's YAML row list ([`crate::rows`]), translated onto the same keys.
    pub fn layers(home: &Path, cwd: &Path, patches: &[PathBuf]) -> Result<Vec<Layer>, ConfigError> {
        let mut layers = Vec::new();
        for optional in [
            home.join("config.toml"),
            cwd.join(".dsh").join("config.toml"),
        ] {
            let table = read_layer(&optional, false)?;
            layers.push(Layer {
                path: optional,
                table,
                rows: false,
                notes: Vec::new(),
                replaces: Vec::new(),
            });
        }
        let context = crate::rows::RowContext {
            home: home.to_path_buf(),
            cwd: cwd.to_path_buf(),
        };
        let mut index = crate::rows::RowIndex::default();
        for patch in patches {
            let fail = |message: String| ConfigError {
                path: patch.clone(),
                message,
            };
            let text =
                std::fs::read_to_string(patch).map_err(|e| fail(format!("cannot be read: {e}")))?;
            if crate::rows::is_row_list(patch, &text) {
                let rows = crate::rows::translate(&text, &context, &mut index).map_err(fail)?;
                // What the rows became is checked as a TOML file would be.
                Config::deserialize(rows.table.clone())
                    .map_err(|e| fail(format!("translates to a bad setting: {}", e.message())))?;
                layers.push(Layer {
                    path: patch.clone(),
                    table: Some(rows.table),
                    rows: true,
                    notes: rows.notes,
                    replaces: rows.replaces,
                });
            } else {
                layers.push(Layer {
                    path: patch.clone(),
                    table: read_layer(patch, true)?,
                    rows: false,
                    notes: Vec::new(),
                    replaces: Vec::new(),
                });
            }
        }
        Ok(layers)
    }

    /// Every value the layers set, as `(dotted key, TOML value, file)`, each from the last
    /// layer that set it.
    pub fn provenance(layers: &[Layer]) -> Vec<(String, String, PathBuf)> {
        fn leaves(prefix: &str, table: &toml::Table, out: &mut Vec<(String, toml::Value)>) {
            for (key, value) in table {
                let path = if prefix.is_empty() {
                    quote_key(key)
                } else {
                    format!("{prefix}.{}", quote_key(key))
                };
                match value {
                    toml::Value::Table(inner) => leaves(&path, inner, out),
                    other => out.push((path, other.clone())),
                }
            }
        }
        let mut set: Vec<(String, String, PathBuf)> = Vec::new();
        for Layer {
            path,
            table,
            replaces,
            ..
        } in layers
        {
            for replaced in replaces {
                let key = replaced
                    .iter()
                    .map(|k| quote_key(k))
                    .collect::<Vec<_>>()
                    .join(".");
                let below = format!("{key}.");
                set.retain(|(k, _, _)| *k != key && !k.starts_with(&below));
            }
            let Some(table) = table else { continue };
            let mut found = Vec::new();
            leaves("", table, &mut found);
            for (key, value) in found {
                set.retain(|(k, _, _)| *k != key);
                set.push((key, render_value(&value), path.clone()));
            }
        }
        set.sort_by(|a, b| a.0.cmp(&b.0));
        set
    }

    /// Loads and merges the layers for a run in `cwd`.
    pub fn load(home: &Path, cwd: &Path, patches: &[PathBuf]) -> Result<Config, ConfigError> {
        let mut merged = toml::Table::new();
        for Layer {
            table, replaces, ..
        } in Config::layers(home, cwd, patches)?
        {
            for replaced in &replaces {
                crate::rows::remove_path(&mut merged, replaced);
            }
            if let Some(table) = table {
                merge(&mut merged, table);
            }
        }
        Config::deserialize(merged).map_err(|e| ConfigError {
            // The last layer is where a bad key most likely came from; name every layer read.
            path: patches
                .last()
                .cloned()
                .unwrap_or_else(|| home.join("config.toml")),
            message: format!(
                "{}; check the key names and types in docs/config.md",
                e.message()
            ),
        })
    }
}

/// A value as TOML writes it (strings quoted, arrays and tables inline).
fn render_value(value: &toml::Value) -> String {
    match value {
        toml::Value::String(text) => format!("{text:?}"),
        toml::Value::Integer(n) => n.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Datetime(d) => d.to_string(),
        toml::Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(render_value)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        toml::Value::Table(table) => format!(
            "{{ {} }}",
            table
                .iter()
                .map(|(k, v)| format!("{} = {}", quote_key(k), render_value(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A key as TOML writes it in a dotted path: bare when it can be.
fn quote_key(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        key.to_owned()
    } else {
        format!("{key:?}")
    }
}

fn read_layer(path: &Path, required: bool) -> Result<Option<toml::Table>, ConfigError> {
    let fail = |message: String| ConfigError {
        path: path.to_path_buf(),
        message,
    };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => return Ok(None),
        Err(e) => return Err(fail(format!("cannot be read: {e}"))),
    };
    let table: toml::Table = toml::from_str(&text).map_err(|e| fail(e.to_string()))?;
    // Checked per layer too, from the text, so the error names the file, the line and the key.
    if let Err(e) = toml::from_str::<Config>(&text) {
        let at = e
            .span()
            .map(|span| {
                let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                format!("line {line}: ")
            })
            .unwrap_or_default();
        return Err(fail(format!("{at}{}", e.message())));
    }
    Ok(Some(table))
}

/// Merges `over` into `base`: tables key by key, anything else replaced.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(inner)), toml::Value::Table(over)) => merge(inner, over),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_layers_win_key_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(ws.join(".dsh")).unwrap();
        std::fs::write(
            home.join("config.toml"),
            "model = \"a\"\n[models.v]\nimage_input = true\n",
        )
        .unwrap();
        std::fs::write(ws.join(".dsh/config.toml"), "model = \"b\"\n").unwrap();
        let patch = dir.path().join("p.toml");
        std::fs::write(&patch, "[tools]\nstr_replace_editor = true\n").unwrap();
        let config = Config::load(&home, &ws, &[patch]).unwrap();
        assert_eq!(config.model.as_deref(), Some("b"));
        assert!(config.tools.str_replace_editor);
        assert_eq!(config.models["v"].image_input, Some(true));
    }

    #[test]
    fn no_files_is_the_default() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            Config::load(dir.path(), dir.path(), &[]).unwrap(),
            Config::default()
        );
    }

    #[test]
    fn bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let patch = dir.path().join("p.toml");
        std::fs::write(&patch, "[tools]\nstr_replace_edtor = true\n").unwrap();
        let error = Config::load(dir.path(), dir.path(), std::slice::from_ref(&patch)).unwrap_err();
        assert_eq!(error.path, patch);
        assert!(
            error
                .to_string()
                .contains("line 2: unknown field `str_replace_edtor`"),
            "{error}"
        );
        let missing = dir.path().join("missing.toml");
        let error = Config::load(dir.path(), dir.path(), &[missing]).unwrap_err();
        assert!(error.to_string().contains("cannot be read"), "{error}");
    }
}
