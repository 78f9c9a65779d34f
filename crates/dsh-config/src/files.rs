//! What the configuration files can say, as types: a value of the wrong type or an unknown
//! name (a mode, a kind, an effort) is refused when the file is read, with its file and line.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use dsh_llm::Effort;
use dsh_sandbox::escalation::ApprovalPolicy;
use dsh_sandbox::{BackendChoice, SandboxMode};

use serde::{Deserialize, Deserializer};

/// The settings files can give.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The model to use when `--model` is not given.
    pub model: Option<String>,
    /// The reasoning effort when `--effort` is not given: off, low, high or max.
    #[serde(deserialize_with = "parsed")]
    pub effort: Option<Effort>,
    /// Text added at the end of the system prompt when `--system-prompt-append` is not given.
    pub system_prompt_append: Option<String>,
    /// The tool set when `--preset` is not given: standard or minimal.
    #[serde(deserialize_with = "parsed")]
    pub preset: Option<AgentPreset>,
    pub tools: ToolsConfig,
    pub shell: ShellConfig,
    pub jobs: JobsConfig,
    pub sandbox: SandboxConfig,
    pub approval: ApprovalConfig,
    pub sessions: SessionsConfig,
    pub requests: RequestsConfig,
    pub instructions: InstructionsConfig,
    pub skills: SkillsConfig,
    pub web: WebConfig,
    pub subagents: SubagentsConfig,
    pub goals: GoalsConfig,
    pub workflows: WorkflowsConfig,
    pub auto_review: AutoReviewConfig,
    pub checkpoints: CheckpointsConfig,
    pub mcp: McpConfig,
    pub secrets: SecretsConfig,
    /// What is known about models by name, over the built-in table.
    pub models: BTreeMap<String, ModelConfig>,
    /// Model routes by name, used as `--model <provider>/<model>`.
    pub providers: BTreeMap<String, ProviderConfig>,
}

/// One model route.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderConfig {
    /// The wire format; `deepseek` when the route is named `deepseek` and gives none.
    #[serde(deserialize_with = "parsed")]
    pub kind: Option<ProviderKind>,
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
    pub str_replace_editor: Option<bool>,
    /// Offer only the tools these names cover (`mcp__<server>__*` covers a server's tools).
    pub allow: Option<Vec<String>>,
    /// Never offer the tools these names cover; the lists of every layer add up.
    pub deny: Option<Vec<String>>,
}

/// How commands run.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShellConfig {
    /// Name fragments (any case, anywhere in the name) of inherited variables not passed to
    /// commands; replaces the default list when given.
    pub scrub: Option<Vec<String>>,
}

/// Secrets in what tools return.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SecretsConfig {
    /// Replace the values of the keys, tokens, headers and URL credentials dsh knows with
    /// `[REDACTED]` in tool results, before the log, the stream and the model see them
    /// (default true).
    pub redact: Option<bool>,
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
    /// The permission mode: read-only, workspace-write, danger-full-access, plan or auto.
    #[serde(deserialize_with = "parsed")]
    pub mode: Option<PermissionMode>,
    /// Whether confined commands may use the network (default true).
    pub network: Option<bool>,
    /// auto (bubblewrap, else Landlock), bubblewrap, or landlock.
    #[serde(deserialize_with = "parsed")]
    pub backend: Option<BackendChoice>,
    /// The bwrap binary to use.
    pub bwrap: Option<PathBuf>,
    /// Whether bubblewrap's commands run through one sandbox helper per run (default true).
    pub helper: Option<bool>,
    /// MiB of data one process of a command may hold (default: no limit; 0 is refused).
    #[serde(deserialize_with = "limit")]
    pub max_memory_mb: Option<u64>,
    /// Processes the command's user may have at once (default: no limit; 0 is refused).
    #[serde(deserialize_with = "limit")]
    pub max_processes: Option<u64>,
}

/// The session logs.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionsConfig {
    /// fsync every record (default false: each record is one write, which survives the
    /// process dying but not the machine losing power).
    pub fsync: Option<bool>,
    /// "none" (plain JSON lines, the default) or "zstd".
    #[serde(deserialize_with = "parsed")]
    pub compression: Option<Compression>,
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

/// Goals: the automatic rounds toward a session's goal.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GoalsConfig {
    /// The round limit of a goal the model sets without one (default 256).
    #[serde(deserialize_with = "at_least_one")]
    pub default_max_rounds: Option<u64>,
    /// The rounds a goal must have had before a round may report it blocked (default 3).
    #[serde(deserialize_with = "at_least_one")]
    pub blocked_after_rounds: Option<u64>,
}

/// Workflows: the bounds of one `workflow` run (its script and its agents).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkflowsConfig {
    /// How long one run may take, agents included, in milliseconds (default 3600000).
    #[serde(deserialize_with = "at_least_one")]
    pub timeout_ms: Option<u64>,
    /// MiB the script's heap may take (default 64).
    #[serde(deserialize_with = "at_least_one")]
    pub max_memory_mb: Option<u64>,
    /// `agent()` calls one run may make (default 1000).
    #[serde(deserialize_with = "at_least_one")]
    pub max_agents: Option<u64>,
}

/// Checkpoints of the workspace's files at each turn's start and end, for rewinds.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CheckpointsConfig {
    /// Whether turns are checkpointed (default true).
    pub enabled: Option<bool>,
    /// Files larger than this many MiB are left out (default 16).
    #[serde(deserialize_with = "at_least_one")]
    pub max_file_mb: Option<u64>,
    /// Whether files .gitignore and .ignore leave out are covered too (default false).
    pub include_ignored: Option<bool>,
    /// Checkpoints of sessions not used for this many days are pruned (default 30).
    #[serde(deserialize_with = "at_least_one")]
    pub keep_days: Option<u64>,
}

/// Auto review (`--permission-mode auto`): who reviews calls, with what instructions, how long
/// it may take and what it sees.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AutoReviewConfig {
    /// The reviewer's model, as `--model` takes it (default: the session's model).
    pub model: Option<String>,
    /// The reviewer's instructions, replacing dsh's own.
    pub prompt: Option<String>,
    /// How long one review may take, in milliseconds (default 60000).
    #[serde(deserialize_with = "at_least_one")]
    pub timeout_ms: Option<u64>,
    /// Whether the reviewer reads the turn's task (default true).
    pub task: Option<bool>,
    /// How many of the latest messages before the call the reviewer reads (default 6; 0:
    /// none).
    pub transcript_messages: Option<u32>,
}

/// Subagents: how many, how deep, how costly.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SubagentsConfig {
    /// How deep subagents may nest: 1 lets only the top agent start them (default 2).
    pub max_depth: Option<u32>,
    /// How many may run at once in a run (default 4).
    pub max_concurrent: Option<u32>,
    /// How many a run may start in all (default 16).
    pub max_total: Option<u32>,
    /// The most tokens one subagent's run may bill (default 2000000).
    pub max_tokens: Option<u64>,
}

/// The web tools.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebConfig {
    /// Fetch private, loopback and link-local addresses too (default false).
    pub allow_private_addresses: Option<bool>,
    /// How long one `web_fetch` may take, in milliseconds (default 30000).
    pub fetch_timeout_ms: Option<u64>,
    pub search: WebSearchConfig,
}

/// Where `web_search` searches.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebSearchConfig {
    /// `native` (the model provider's hosted search: the default on a DeepSeek or Anthropic
    /// route with a key), `searxng` or `brave`; with none, `web_search` is not offered.
    #[serde(deserialize_with = "parsed")]
    pub provider: Option<SearchProvider>,
    /// The backend's API root (required for SearXNG; Brave's public API by default; for
    /// `native`, the provider's Messages API root, derived from the route's base URL).
    pub base_url: Option<String>,
    /// The model that runs a `native` search (DeepSeek: `deepseek-v4-flash`; Anthropic: the
    /// route's model).
    pub model: Option<String>,
    /// The variable holding the key (Brave: `BRAVE_API_KEY` by default).
    pub api_key_env: Option<String>,
    /// How long one `web_search` may take, in milliseconds (default 60000).
    pub timeout_ms: Option<u64>,
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
    /// How dsh signs in to a url server that uses OAuth (`dsh mcp login`).
    pub oauth: Option<McpOAuthConfig>,
}

/// An MCP server's OAuth client settings; all optional: without them dsh registers itself.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpOAuthConfig {
    /// A client id registered with the server's authorization server beforehand.
    pub client_id: Option<String>,
    /// Its secret, for a confidential client.
    pub client_secret: Option<String>,
    /// The HTTPS address of a client ID metadata document describing dsh.
    pub client_metadata_url: Option<String>,
    /// Scopes to ask for besides those the server asks for.
    pub scopes: Vec<String>,
    /// The loopback port the browser returns to (default: any free port).
    pub callback_port: Option<u16>,
}

/// Escalation approvals.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalConfig {
    /// ask or never.
    #[serde(deserialize_with = "parsed")]
    pub policy: Option<ApprovalPolicy>,
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
    #[serde(deserialize_with = "parsed")]
    pub system_role: Option<SystemRole>,
    /// US dollars per million tokens, for `costUsd` in the stream.
    pub prices: Option<dsh_protocol::Prices>,
}

/// Reads an enum-like value through its `FromStr`, whose error (which names the choices) is
/// the file's error.
fn parsed<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
    T::Err: fmt::Display,
{
    let text = String::deserialize(deserializer)?;
    text.parse().map(Some).map_err(serde::de::Error::custom)
}

/// A resource limit: a whole number of at least 1 (0 would stop every command).
fn limit<'de, D>(deserializer: D) -> Result<Option<u64>, D::Error>
where
    D: Deserializer<'de>,
{
    match u64::deserialize(deserializer)? {
        0 => Err(serde::de::Error::custom(
            "a limit of 0 would stop every command; give at least 1, or leave the key out for \
             no limit",
        )),
        n => Ok(Some(n)),
    }
}

/// A count that must be at least 1.
fn at_least_one<'de, D>(deserializer: D) -> Result<Option<u64>, D::Error>
where
    D: Deserializer<'de>,
{
    match u64::deserialize(deserializer)? {
        0 => Err(serde::de::Error::custom(
            "give a whole number of at least 1",
        )),
        n => Ok(Some(n)),
    }
}

/// Declares an enum read from and shown as fixed names, with the error that lists them.
macro_rules! named_enum {
    ($(#[$doc:meta])* $name:ident, $what:literal { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// Every value it takes, as an error message lists them.
            pub const CHOICES: &'static str = named_enum!(@list $($text),+);

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = String;

            fn from_str(text: &str) -> Result<Self, String> {
                match text {
                    $($text => Ok($name::$variant),)+
                    other => Err(format!(
                        concat!("unknown ", $what, " \"{}\": use ", named_enum!(@list $($text),+)),
                        other
                    )),
                }
            }
        }
    };
    (@list $only:literal) => { $only };
    (@list $first:literal, $last:literal) => { concat!($first, " or ", $last) };
    (@list $first:literal, $($rest:literal),+) => { concat!($first, ", ", named_enum!(@list $($rest),+)) };
}

named_enum! {
    /// The wire format of a model route (`providers.<name>.kind`).
    ProviderKind, "provider kind" {
        /// The DeepSeek API (chat completions with its reasoning switch).
        DeepSeek = "deepseek",
        OpenAiCompletions = "openai-completions",
        OpenAiResponses = "openai-responses",
        AnthropicMessages = "anthropic-messages",
    }
}

named_enum! {
    /// Which tools an agent starts from (`preset`, `--preset`).
    AgentPreset, "preset" {
        /// Every tool dsh has.
        Standard = "standard",
        /// `bash` and `str_replace_editor` only: the smallest prompt, for small models and
        /// supervisors (the reference's `minimal` preset).
        Minimal = "minimal",
    }
}

named_enum! {
    /// How session logs are written (`sessions.compression`).
    Compression, "compression" {
        /// Plain JSON lines, `session.jsonl`.
        None = "none",
        /// One Zstandard frame per line, `session.jsonl.zst`.
        Zstd = "zstd",
    }
}

named_enum! {
    /// The role the system prompt is sent with on an OpenAI-compatible route.
    SystemRole, "system role" {
        System = "system",
        /// OpenAI's reasoning models.
        Developer = "developer",
    }
}

named_enum! {
    /// What a run's tools may change (`--permission-mode`, `DSH_PERMISSION_MODE`,
    /// `sandbox.mode`): a sandbox mode, or plan mode.
    PermissionMode, "permission mode" {
        ReadOnly = "read-only",
        WorkspaceWrite = "workspace-write",
        DangerFullAccess = "danger-full-access",
        /// Explore and plan: only tools that change nothing run, commands under a read-only
        /// sandbox, and `exit_plan_mode` submits the plan.
        Plan = "plan",
        /// Auto review: full access, but a reviewer model allows or denies every call that
        /// could change something before it runs (`[auto_review]`).
        Auto = "auto",
    }
}

impl PermissionMode {
    /// The sandbox mode that confines commands and file tools.
    pub fn sandbox(self) -> SandboxMode {
        match self {
            PermissionMode::ReadOnly | PermissionMode::Plan => SandboxMode::ReadOnly,
            PermissionMode::WorkspaceWrite => SandboxMode::WorkspaceWrite,
            // No file sandbox: the review is the guard (docs/sandbox.md says what it can and
            // cannot catch).
            PermissionMode::DangerFullAccess | PermissionMode::Auto => {
                SandboxMode::DangerFullAccess
            }
        }
    }

    pub fn is_auto(self) -> bool {
        self == PermissionMode::Auto
    }

    /// Whether it lets calls do more than `other` does: Auto review runs unconfined, but
    /// with every changing call reviewed, so it sits between workspace-write and
    /// danger-full-access (a caller that may narrow a mode must not trade a review away).
    pub fn is_wider_than(self, other: PermissionMode) -> bool {
        fn reach(mode: PermissionMode) -> u8 {
            match mode {
                PermissionMode::ReadOnly | PermissionMode::Plan => 0,
                PermissionMode::WorkspaceWrite => 1,
                PermissionMode::Auto => 2,
                PermissionMode::DangerFullAccess => 3,
            }
        }
        reach(self) > reach(other)
    }

    pub fn is_plan(self) -> bool {
        self == PermissionMode::Plan
    }
}

named_enum! {
    /// A `web_search` backend (`web.search.provider`).
    SearchProvider, "search provider" {
        Native = "native",
        Searxng = "searxng",
        Brave = "brave",
    }
}
